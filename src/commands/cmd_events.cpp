// `pmulab events [--cpu N|all|bsp] [--check SPEC[,SPEC...]]`
#include "commands/commands.h"
#include "events/event_files.h"
#include "commands/events_listing.h"
#include "base/json.h"
#include "pmu/session.h"

namespace pmulab {

namespace {

struct EventsArgs {
    CpuSelection sel;
    const char* spec = nullptr;  // --check
};

// clang-format off
const OptionSpec kEventsOptionTable[] = {
    {.name = "--cpu", .metavar = "N|all|bsp", .value = OptValue::cpu, .brief = "the CPUs to list (default bsp)",
     .apply = apply_cpu_option<EventsArgs>},
    {.name = "--check", .metavar = "SPEC[,SPEC...]", .value = OptValue::events,
     .brief = "where a set of events goes on each CPU: counters, runs",
     .apply = [](void* t, const OptionHit& h) { static_cast<EventsArgs*>(t)->spec = h.value; return ok_status(); }},
};
// clang-format on

}  // namespace

const CommandOptions kEventsCommand = {
    .command = "events",
    .options = kEventsOptionTable,
    .count = count_of(kEventsOptionTable),
    .help = "usage: pmulab events [--cpu N|all|bsp]\n"
            "       pmulab events --check SPEC[,SPEC...] [--cpu N|all|bsp]\n"
            "\n"
            "Lists what each CPU can count (default: the BSP): the fixed-counter events with their\n"
            "counters (or the general-purpose fallback where a fixed counter is absent), the\n"
            "architectural events with their availability (CPUID.0AH:EBX, CPUID.23H), 'tsc', how\n"
            "counters are read (RDPMC, or RDMSR where RDPMC faults), and the event syntax.\n"
            "CPUs with the same PMU share one table; hybrid parts show one per core type.\n"
            "On an AMD PMU the list is the named events of its dialect (12-bit codes, the counters,\n"
            "IRPerfCount/APERF/MPERF where present); on a NetBurst PMU the NetBurst events with\n"
            "their event-mask bits and ESCR/counter pairs.\n"
            "The model-specific events of each CPU's event file in \\pmulab\\events (docs/events.md)\n"
            "follow; their names work in --check and 'pmulab run --events' like the others.\n"
            "\n"
            "--check parses the event specs (the syntax of 'pmulab run --events') and allocates\n"
            "them on each CPU: which counter counts which event, and in which run (group) when\n"
            "there are more events than counters.\n"
            "\n"
            "With --json: {\"type\":\"pmu\",...} per CPU, then {\"type\":\"event\",...} per event and CPU\n"
            "(with --check: {\"type\":\"allocation\",...} per CPU).\n"
            "Exit status: 0 ok; 2 bad option or event spec (the parser's message with the offset);\n"
            "3 an event of --check cannot be counted on a CPU.\n",
};

namespace events_cmd {

// Indices of `all` grouped by identical PMU (first-seen order); unreachable CPUs alone.
Vec<Vec<u32>> classes(const Vec<CpuPmu>& all) { return group_by_pmu(all); }

Vec<u32> class_cpus(const Vec<CpuPmu>& all, const Vec<u32>& cls) {
    Vec<u32> cpus;
    for (u32 k : cls) cpus.push(all[k].cpu);
    return cpus;
}

}  // namespace events_cmd

namespace {

using namespace events_cmd;

// Collects the PMU of every selected CPU; CPUs that cannot be reached keep their error.
Status collect(Hw& hw, const CpuSelection& sel, Vec<CpuPmu>* out) {
    Vec<u32> cpus;
    PMULAB_TRY(expand_cpu_selection(hw, sel, &cpus));
    out->clear();
    out->resize(cpus.size());
    for (usize i = 0; i < cpus.size(); ++i) {
        CpuPmu& c = (*out)[i];
        c.cpu = cpus[i];
        Result<CpuTopology> t = hw.topology(c.cpu);
        if (t.ok()) c.apic_id = t.value().apic_id;
        c.status = run_on(hw, c.cpu, [&] { pmu_probe(hw, &c.probe); });
        if (c.status.ok()) pmu_decode(c.probe, &c.info);
    }
    return ok_status();
}

// ---- model-specific events: each CPU class's event file (events/event_files.h) ----
//
// Text: a block per class with an event file ("Model-specific events of CPUs 0-3 (06_5EH,
// \pmulab\events\skylake_core.evt, 39 events):" and one "NAME  TOKEN" line each), or a
// line saying that no file is for it. JSON: one {"type":"event_file",...} record per
// class with the CPUs, the file (null when none) and its events as {name, code}.
void model_events(Out& out, Hw& hw, EventTables& tables, const Vec<CpuPmu>& all, StrBuf* text, Vec<Value>* records) {
    Vec<Vec<u32>> cls = classes(all);
    for (const Vec<u32>& k : cls) {
        const CpuPmu& c0 = all[k[0]];
        if (!c0.status.ok()) continue;
        Vec<u32> cpus = class_cpus(all, k);
        StrBuf where;
        put_cpu_list(where, cpus);
        CpuDecoded id = decode_cpuid(c0.probe.cpuid);
        Result<const EventTable*> t = tables.for_cpu(id.id);
        if (!t.ok()) {
            out.error(t.error().with_context("%s", where.c_str()));
            continue;
        }
        StrBuf model;
        put_table_cpu(model, id.id);
        const EventTable* table = t.value();
        Value line;
        JsonWriter w(line);
        w.begin_object().field("type", "event_file").key("cpus").begin_array();
        for (u32 c : cpus) w.num(c);
        w.end_array().field("cpu_model", model.view()).key("path");
        if (table) w.str(StrView(table->path));
        else w.null();
        w.key("events").begin_array();
        for (usize i = 0; table && i < table->events.size(); ++i)
            w.begin_object().field("name", table->events[i].name).field("code", table->token(i)).end_object();
        w.end_array().end_object();
        records->push(move(line));
        if (!table) {
            text->printf("%s (%s): no event file in %s is for this CPU; model-specific names need one "
                         "(docs/events.md)\n\n",
                         where.c_str(), model.c_str(), tables.dir());
            continue;
        }
        text->printf("Model-specific events of %s (%s, %s, %u events):\n", where.c_str(), model.c_str(), table->path,
                     unsigned(table->events.size()));
        list_table_events(*text, *table);
        text->put('\n');
    }
}

// Every error is reported and the next class of CPUs goes on.
void check(Out& out, Hw& hw, EventTables& tables, const Vec<CpuPmu>& all, const char* spec) {
    Vec<Event> events;
    Vec<Vec<u32>> cls = classes(all);
    for (const Vec<u32>& k : cls) {
        const CpuPmu& c0 = all[k[0]];
        Vec<u32> cpus = class_cpus(all, k);
        StrBuf where;
        put_cpu_list(where, cpus);
        if (!c0.status.ok()) {
            out.error(c0.status.error().with_context("%s", where.c_str()));
            out.fail(Errc::fault);  // a CPU that cannot be reached is a failure, whatever the cause
            continue;
        }
        // Names resolve through this CPU's event file (P- and E-cores differ).
        events.clear();
        CpuDecoded id = decode_cpuid(c0.probe.cpuid);
        Status rs = tables.resolve_list(StrView(spec), id.id, &events, event_dialect_for(id.id, id.pmu));
        if (!rs.ok()) {
            out.error(rs.error().with_context("%s", where.c_str()));
            continue;
        }
        Allocation a;
        Status s = pmu_allocate(c0.info, events.data(), events.size(), &a);
        if (!s.ok()) {
            out.error(s.error().with_context("%s", where.c_str()));
            continue;
        }
        for (u32 idx : k) {
            const CpuPmu& c = all[idx];
            Value line;
            JsonWriter w(line);
            w.begin_object().field("type", "allocation").field_u("cpu", c.cpu).field_u("apic_id", c.apic_id);
            w.field("pmu", pmu_kind_name(c.info.kind));
            w.field("counter_method", counter_method_name(c.info.method));
            write_allocation_json(w, events.data(), events.size(), a);
            w.end_object();
            out.record(line);
        }
        StrBuf b;
        b.printf("%s: %u event%s in %u run%s (", where.c_str(), unsigned(events.size()), events.size() == 1 ? "" : "s",
                 unsigned(a.groups.size()), a.groups.size() == 1 ? "" : "s");
        put_pmu_summary(b, c0.info);
        b.put(")\n");
        StrBuf r;
        render_allocation_text(r, events.data(), events.size(), a);
        // Indent the allocation lines.
        StrView v = r.view();
        usize pos = 0;
        while (pos < v.len) {
            usize nl = v.find('\n', pos);
            b.put(StrView("  "));
            b.put(v.sub(pos, nl - pos));
            b.put('\n');
            pos = nl + 1;
        }
        out.text_buf(b);
    }
}

}  // namespace

Status cmd_events(Out& out, Args& args) {
    const EventsArgs a = PMULAB_TRY(read_options_as<EventsArgs>(kEventsCommand, args));
    const CpuSelection& sel = a.sel;
    const char* spec = a.spec;
    // A bad spec is reported before any CPU is touched (names are resolved per CPU).
    if (spec) PMULAB_TRY(check_event_list_syntax_any(StrView(spec)));
    Vec<CpuPmu> all;
    Hw& hw = out.platform().hw();
    PMULAB_TRY(collect(hw, sel, &all));
    // Event files: read once for this command, only where the platform has files.
    EventTables tables(out.platform().files());
    if (spec) {
        check(out, hw, tables, all, spec);
        return ok_status();
    }
    StrBuf model_text;
    Vec<Value> model_records;
    if (out.platform().files()) model_events(out, hw, tables, all, &model_text, &model_records);
    list(out, all, model_text);
    for (const Value& r : model_records) out.record(r);
    return ok_status();
}

}  // namespace pmulab
