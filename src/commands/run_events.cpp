// `pmulab run`: resolving event names per class of CPUs (split from cmd_run.cpp), with
// the events --topdown and --metrics add (run_metrics.cpp).
#include "commands/measure_cmd.h"
#include "events/event_files.h"

namespace pmulab {

// ---- event names: each CPU's event file (events/event_files.h) ----
//
// --events and --events-file are resolved once per group of CPUs whose identity picks
// the same event file (hybrid P- and E-cores get their own encodings); names a file
// does not have fall back to the architectural names. Syntax errors come before any
// CPU is touched. With one group the messages carry no CPU prefix.
Status resolve_run_events(Out& out, const RunOptions& o, Vec<EventsForCpus>* sets) {
    Platform& p = out.platform();
    if (o.events_arg) {
        PMULAB_TRY_CTX(check_event_list_syntax_any(StrView(o.events_arg)), "--events");
    }
    // Every CPU is visited once, here: its identity picks the event file, its PMU the plan.
    Vec<ProbedCpu> probed;
    probe_cpus(p.hw(), o.cfg.cpus, &probed);
    EventTables tables(p.files());
    struct Key {
        const EventTable* table;
        CpuIdentity id;
        EventDialect dialect;
    };
    Vec<Key> keys;
    for (const ProbedCpu& pc : probed) {
        const u32 cpu = pc.cpu;
        const Status& s = pc.status;
        CpuDecoded d = s.ok() ? decode_cpuid(pc.probe.cpuid) : CpuDecoded();
        Result<const EventTable*> t = s.ok() ? tables.for_cpu(d.id) : Result<const EventTable*>(s.error());
        if (!s.ok()) {
            return s.error().with_context("CPU %u", cpu);
        }
        if (!t.ok()) return t.error();
        usize k = 0;
        for (; k < keys.size(); ++k)
            if (keys[k].table == t.value() && keys[k].id.signature == d.id.signature &&
                keys[k].id.core_type == d.id.core_type && keys[k].id.native_model_id == d.id.native_model_id &&
                str_eq(keys[k].id.vendor_string, d.id.vendor_string))
                break;
        if (k == keys.size()) {
            keys.push(Key{t.value(), d.id, event_dialect_for(d.id, d.pmu)});
            sets->emplace();
        }
        (*sets)[k].cpus.push(cpu);
        (*sets)[k].probed.push(pc);
    }
    for (usize k = 0; k < sets->size(); ++k) {
        EventsForCpus& set = (*sets)[k];
        StrBuf where;
        if (sets->size() > 1) {
            put_cpu_list(where, set.cpus);
            where.put(": ");
        }
        // Each CPU's own event dialect: AMD 12-bit selects and Zen names, NetBurst names.
        EventDialect dialect = keys[k].dialect;
        Status s = o.events_arg ? tables.resolve_list(StrView(o.events_arg), keys[k].id, &set.events, dialect)
                                : ok_status();
        if (!s.ok()) return Error::make(s.error().code, "--events: %s%s", where.c_str(), s.error().msg);
        if (o.events_file) s = tables.resolve_file(o.events_file, keys[k].id, &set.events, dialect);
        if (!s.ok()) return Error::make(s.error().code, "--events-file: %s%s", where.c_str(), s.error().msg);
        if (wants_metrics(o)) {
            // What --topdown/--metrics need on this class of CPUs (topdown.h picks the method).
            StrBuf specs, why;
            // An SMT sibling that runs (not halted) needs the SMT forms (docs/measure.md "SMT siblings").
            bool smt = false;
            for (u32 cpu : set.cpus) {
                SiblingState st = p.measure() ? p.measure()->prepare_siblings(p.hw(), cpu) : SiblingState::none;
                smt = smt || st == SiblingState::busy || st == SiblingState::idle;
            }
            metric_event_specs(o, set.probed[0].info, keys[k].id, &set.topdown, &specs, &why, smt);
            format_to(set.topdown_why, sizeof set.topdown_why, "%s", why.c_str());
            Vec<Event> extra;
            s = specs.size() ? tables.resolve_list(specs.view(), keys[k].id, &extra, dialect) : ok_status();
            if (!s.ok()) return Error::make(s.error().code, "--metrics: %s%s", where.c_str(), s.error().msg);
            for (const Event& e : extra) {
                bool dup = false;
                for (const Event& have : set.events) dup |= StrView(have.name).eq_nocase(StrView(e.name));
                if (!dup) set.events.push(e);
            }
        }
        const Vec<Event>& ev = set.events;
        for (usize i = 0; i < ev.size(); ++i)
            for (usize j = 0; j < i; ++j)
                if (StrView(ev[i].name).eq_nocase(StrView(ev[j].name)))
                    return Error::make(Errc::invalid_argument, "--events: '%s' is listed twice", ev[i].name);
    }
    return ok_status();
}

}  // namespace pmulab
