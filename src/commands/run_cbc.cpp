// `pmulab run --cycle-by-cycle`: the events of the code in each core cycle (measure/
// cycle_by_cycle.h), as {"type":"cycle_by_cycle"} records and a table.
#include "base/json.h"
#include "commands/measure_cmd.h"
#include "measure/cycle_by_cycle.h"

namespace pmulab {

namespace {

class CbcSink final : public MeasureSink {
public:
    explicit CbcSink(Out& out) : out_(out) {}
    void result(const MeasureConfig&, const MeasureResult&) override {}
    void failure(const Error& e) override { out_.error(e); }
    void skipped(const Error& e) override { out_.warn("%s (skipped)", e.msg); }

private:
    Out& out_;
};

Status check_cbc_options(RunOptions& o) {
    if (wants_metrics(o))
        return Error::make(Errc::invalid_argument, "--cycle-by-cycle cannot be combined with --topdown or --metrics");
    if (!o.events_joined.size() && !o.events_file)
        return Error::make(Errc::invalid_argument,
                           "--cycle-by-cycle needs the events to follow: --events LIST (e.g. instructions,D1.08)");
    for (const UserCode& u : o.codes) {
        UserCodeBlocks b;
        b.body = CodeSpan{u.body.data(), u.body.size()};
        Result<u32> pairs = check_markers(b, false);
        if (pairs.ok() && pairs.value())
            return Error::make(Errc::invalid_argument,
                               "--cycle-by-cycle: '%s' has pause/resume markers; they read the counters inside the "
                               "code, which a cycle-by-cycle window cannot tell from the code: drop them",
                               u.name);
    }
    if (!o.unroll_given) o.cfg.unroll = 1;  // nanoBench's cycleByCycle.py default
    return ok_status();
}

// Each event's key in the records: its --events item as written, else its name (files).
void event_labels(const RunOptions& o, const Vec<Event>& events, Vec<StrBuf>* labels) {
    Vec<EventListItem> items;
    StrView text(o.events_arg ? o.events_arg : "");
    if (!o.events_arg || !split_event_list(text, &items).ok()) items.clear();
    labels->clear();
    for (usize i = 0; i < events.size(); ++i) {
        StrBuf& l = labels->emplace();
        if (i < items.size()) l.put(text.sub(items[i].begin, items[i].end - items[i].begin).trim());
        else l.put(StrView(events[i].name));
    }
}

struct CbcClass {
    Box<CbcPlan> plan;
    Vec<StrBuf> labels;
};

// Plans every class of CPUs (event file and PMU) before anything runs.
Status plan_classes(Out& out, const RunOptions& o, Vec<CbcClass>* classes) {
    Vec<EventsForCpus> sets;
    PMULAB_TRY(resolve_run_events(out, o, &sets));
    for (EventsForCpus& set : sets)
        for (const Vec<u32>& g : group_by_pmu(set.probed)) {
            Vec<u32> cpus;
            for (u32 k : g) cpus.push(set.probed[k].cpu);
            const ProbedCpu& pc = set.probed[g[0]];
            CpuDecoded d = decode_cpuid(pc.probe.cpuid);
            CbcClass& c = classes->emplace();
            c.plan = make_box<CbcPlan>();
            PMULAB_TRY(cbc_plan(pc.info, d.id.family, d.id.model, set.events, cpus, c.plan.get()));
            event_labels(o, set.events, &c.labels);
        }
    return ok_status();
}

void put_head(const CbcClass& c, StrBuf* head) {
    const CbcPlan& p = *c.plan;
    head->put("pmulab run: cycle by cycle on ");
    put_cpu_list(*head, p.cpus);
    head->put(": ");
    put_pmu_summary(*head, p.info);
    head->printf("\n  %u run%s per cycle, each with the armed cycles counter and the instructions counter\n",
                 unsigned(p.runs.size()), p.runs.size() == 1 ? "" : "s");
    for (usize r = 0; r < p.runs.size(); ++r) {
        StrBuf a;
        const PmuPlan& pl = *p.runs[r];
        render_allocation_text(a, pl.events.data(), pl.events.size(), pl.alloc);
        StrView v = a.view();
        for (usize pos = 0; pos < v.len;) {
            usize nl = v.find('\n', pos);
            head->printf("  run %u: ", unsigned(r + 1));
            head->put(v.sub(pos, nl - pos).trim());
            head->put('\n');
            pos = nl + 1;
        }
    }
    if (p.quirk[0]) head->printf("  %s (nanoBench's quirk)\n", p.quirk);
}

void emit_record(Out& out, const CbcClass& c, const CbcResult& r) {
    Value rec;
    JsonWriter w(rec);
    w.begin_object().field("type", "cycle_by_cycle").field_u("cpu", r.cpu).field("bench", bench_name(*r.bench));
    w.key("events").begin_array();
    for (const StrBuf& l : c.labels) w.str(l.view());
    w.end_array().key("cycles").begin_array();
    for (u64 cy = r.first; cy <= r.last; ++cy) {
        const usize i = usize(cy - r.first);
        w.begin_object().field_u("cycle", i).key("values").begin_object();
        for (usize e = 0; e < r.events; ++e) {
            w.key(c.labels[e].c_str());
            if (r.valid[i]) w.inum(r.inc[i * r.events + e]);
            else w.null();
        }
        w.end_object().end_object();
    }
    w.end_array().end_object();
    out.record(rec);
}

void emit_table(Out& out, const CbcClass& c, const CbcResult& r, bool end_to_end) {
    StrBuf t;
    t.printf("%s on CPU %u: cycles %llu-%llu after counting started (%llu cycles; %s), %llu instructions\n",
             bench_name(*r.bench), r.cpu, (unsigned long long)r.first, (unsigned long long)r.last,
             (unsigned long long)(r.last - r.first + 1),
             end_to_end ? "end to end, the harness included" : "the code's window",
             (unsigned long long)r.code_instructions);
    t.put("cycle");
    for (const StrBuf& l : c.labels) t.printf("  %12s", l.c_str());
    t.put('\n');
    for (u64 cy = r.first; cy <= r.last; ++cy) {
        const usize i = usize(cy - r.first);
        t.printf("%5llu", (unsigned long long)i);
        for (usize e = 0; e < r.events; ++e) {
            if (r.valid[i]) t.printf("  %12lld", (long long)r.inc[i * r.events + e]);
            else t.printf("  %12s", "-");
        }
        t.put('\n');
    }
    out.text_buf(t);
}

}  // namespace

Status run_cycle_by_cycle(Out& out, RunOptions& o, MeasurePlatform& mp) {
    PMULAB_TRY(check_cbc_options(o));
    Vec<CbcClass> classes;
    PMULAB_TRY(plan_classes(out, o, &classes));
    StrBuf head;
    for (const CbcClass& c : classes) put_head(c, &head);
    head.printf("pmulab run: %llu cop%s (basic mode: the empty benchmark has 0), loop %llu, %u reps + %u warm-up "
                "per cycle, aggregate %s\n",
                (unsigned long long)o.cfg.unroll, o.cfg.unroll == 1 ? "y" : "ies", (unsigned long long)o.cfg.loop,
                o.cfg.reps, o.cfg.warmup, agg_name(o.cfg.agg));
    out.text_buf(head);
    CbcSink sink(out);
    CbcOptions opts;
    opts.end_to_end = o.end_to_end;
    CbcResult r;
    for (const BenchInstance& b : o.cfg.benches)
        for (CbcClass& c : classes)
            for (u32 cpu : c.plan->cpus) {
                Errc e = cbc_measure(out.platform().hw(), mp, o.cfg, opts, *c.plan, b, cpu, sink, &r);
                out.fail(e);
                if (r.valid.empty()) continue;  // no window: reported
                emit_record(out, c, r);
                emit_table(out, c, r, o.end_to_end);
            }
    out.simulated_mark();
    return ok_status();
}

}  // namespace pmulab
