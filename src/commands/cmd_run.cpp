// `pmulab run`: measure built-in kernels with overhead cancellation.
#include "events/event_files.h"
#include "base/json.h"
#include "commands/measure_cmd.h"
#include "measure/noise.h"
#include "measure/pmu_plan.h"

namespace pmulab {

namespace {

class RunSink final : public MeasureSink {
public:
    RunSink(Out& out, const RunOptions& o, MetricCollector* m = nullptr) : out_(out), o_(o), metrics_(m) {}
    void result(const MeasureConfig&, const MeasureResult& r) override {
        if (sampling_ && sample_result(*sampling_, out_, o_, r)) return;
        if (metrics_) metrics_->add(o_, r);
        emit_result(out_, o_, r);
        if (lbr_) emit_run_lbr(out_, *lbr_, r);
        if (cbox_) emit_run_cbox(out_, *cbox_, r);
    }
    void set_lbr(const LbrRun* l) { lbr_ = l; }
    void set_cbox(const CboxRun* c) { cbox_ = c; }
    void failure(const Error& e) override { out_.error(e); }
    void skipped(const Error& e) override { out_.warn("%s (skipped)", e.msg); }
    void progress(u32 done, u32 total, const BenchInstance& b, u32 cpu, u32 run) override {
        bool big = b.size >= (u64(16) << 20);
        if (!o_.progress && !(big && !out_.json())) return;
        if (out_.json()) {
            // Progress is console chatter, not a result: straight to the console.
            Value line;
            JsonWriter w(line);
            w.begin_object().field("type", "progress").field_u("done", done).field_u("total", total);
            w.field("bench", bench_name(b));
            if (b.kernel && b.kernel->buffer != KernelBuffer::none) w.field_u("size", b.size);
            w.field_u("cpu", cpu).field_u("run", run).end_object();
            out_.platform().write_record(line);
        } else {
            StrBuf size;
            if (b.kernel && b.kernel->buffer != KernelBuffer::none) {
                size.put(StrView(" ("));
                put_size_suffix(size, b.size);
                size.put(')');
            }
            out_.text("pmulab: [%u/%u] measuring %s%s on CPU %u, run %u\n", done + 1, total, bench_name(b),
                      size.c_str(), cpu, run);
        }
    }

    RunSampling* sampling_ = nullptr;  // --sample: its reads become samples records

private:
    Out& out_;
    const RunOptions& o_;
    MetricCollector* metrics_;
    const LbrRun* lbr_ = nullptr;
    const CboxRun* cbox_ = nullptr;
};

}  // namespace

namespace {

bool needs_pmu(const RunOptions& o) {
    if (o.events_file || wants_metrics(o) || !o.samples.empty())
        return true;  // file events: only known once it is read
    for (StrView s : o.events)
        if (!s.eq_nocase(StrView("tsc"))) return true;
    return false;
}

// --events with PMU events: planned per class of CPUs with the same PMU, each class
// measured with its own groups (runs).
Status run_with_pmu(Out& out, RunOptions& o, MeasurePlatform& mp) {
    Platform& p = out.platform();
    Vec<EventsForCpus> sets;
    PMULAB_TRY(resolve_run_events(out, o, &sets));
    PMULAB_TRY(check_metric_support(out, o, sets));
    Vec<Box<PmuPlan>> plans;
    Vec<TopdownMethod> methods;  // of each plan (run_metrics.cpp)
    for (EventsForCpus& set : sets) {
        Vec<Box<PmuPlan>> part;
        PMULAB_TRY(precise_mark(o, set));
        PMULAB_TRY(sample_mark(o, set));
        Status s = plan_pmu_runs(set.probed, set.events, PmuRunOptions(), &part);
        if (s.ok()) s = prepare_metric_plans(o, set, &part);
        for (Box<PmuPlan>& pl : part) plans.push(move(pl)), methods.push(set.topdown.method);
        if (!s.ok()) return s.error();
    }
    RunSampling sampling;
    PMULAB_TRY(sample_prepare(o, mp, plans, &sampling));
    PMULAB_TRY(precise_prepare(o, p.hw(), mp, plans, &sampling));
    StrBuf head;
    for (const Box<PmuPlan>& pl : plans) {
        result_table_fit(o, pl->groups);
        head.put("pmulab run: ");
        put_cpu_list(head, pl->cpus);
        head.printf(": %u event%s in %u run%s per benchmark on ", unsigned(pl->events.size()),
                    pl->events.size() == 1 ? "" : "s", unsigned(pl->groups.size()), pl->groups.size() == 1 ? "" : "s");
        put_pmu_summary(head, pl->info);
        head.put('\n');
        StrBuf a;
        render_allocation_text(a, pl->events.data(), pl->events.size(), pl->alloc);
        StrView v = a.view();
        for (usize pos = 0; pos < v.len;) {
            usize nl = v.find('\n', pos);
            head.put(StrView("  "));
            head.put(v.sub(pos, nl - pos));
            head.put('\n');
            pos = nl + 1;
        }
    }
    if (!samples_only(o, plans)) result_table_header(o, &head);
    else sample_header(o, &head);
    out.text_buf(head);
    Vec<Box<LbrRun>> lbrs;  // --lbr: one per plan (its first group's hooks are chained)
    for (usize k = 0; k < plans.size() && o.lbr; ++k) {
        LbrRun* l = lbrs.push(make_box<LbrRun>()).get();
        PMULAB_TRY(prepare_run_lbr(p.hw(), plans[k]->cpus, l));
        attach_run_lbr(l, &plans[k]->groups[0]);
    }
    Vec<Box<CboxRun>> cboxes;  // --cbox-lookups: one per plan (its first group's hooks are chained)
    for (usize k = 0; k < plans.size() && o.cbox_lookups; ++k) {
        CboxRun* c = cboxes.push(make_box<CboxRun>()).get();
        PMULAB_TRY(prepare_run_cbox(p.hw(), c));
        attach_run_cbox(c, &plans[k]->groups[0]);
    }
    MetricCollector metrics;
    RunSink sink(out, o, &metrics);
    sink.sampling_ = &sampling;
    for (usize k = 0; k < plans.size(); ++k) {
        PmuPlan* pl = plans[k].get();
        if (o.lbr) sink.set_lbr(lbrs[k].get());
        if (o.cbox_lookups) sink.set_cbox(cboxes[k].get());
        o.cfg.cpus.clear();
        for (u32 c : pl->cpus) o.cfg.cpus.push(c);
        // Failures were reported through the sink; the outcome also takes the engine's word.
        out.fail(measure_run(p.hw(), mp, o.cfg, pl->groups, sink));
        out.simulated_mark();
        metrics.emit(out, o, methods[k]);
        for (const Box<PmuGroupState>& st : pl->state) {
            if (st->restore.gp_counters_inexact) {
                StrBuf c;
                regs::put_counter_set(c, st->restore.gp_counters_inexact, "PMC");
                out.warn("%s could not be restored exactly: without full-width writes only 32 bits (sign-extended) "
                         "can be written back",
                         c.c_str());
            }
            if (st->restore.status_bits_lost)
                out.warn("overflow flags 0x%llx of IA32_PERF_GLOBAL_STATUS were set before pmulab ran and cannot be "
                         "set again on this PMU version",
                         (unsigned long long)st->restore.status_bits_lost);
        }
    }
    return ok_status();
}

// The counts of --events (all but the energy events): PMU events or the TSC.
Status run_counts(Out& out, RunOptions& o) {
    if (needs_pmu(o)) {
        MeasurePlatform* mp = out.platform().measure();
        if (!mp) return Error::make(Errc::unsupported, "run: this platform cannot execute generated code");
        PMULAB_TRY(expand_cpu_selection(out.platform().hw(), o.cpu, &o.cfg.cpus));
        return run_with_pmu(out, o, *mp);
    }
    Vec<ReadGroup> groups;
    PMULAB_TRY(plan_event_groups(o.events, &groups));
    Platform& p = out.platform();
    MeasurePlatform* mp = p.measure();
    if (!mp) return Error::make(Errc::unsupported, "run: this platform cannot execute generated code");
    PMULAB_TRY(expand_cpu_selection(p.hw(), o.cpu, &o.cfg.cpus));
    LbrRun lbr;
    if (o.lbr) {
        PMULAB_TRY(prepare_run_lbr(p.hw(), o.cfg.cpus, &lbr));
        attach_run_lbr(&lbr, &groups[0]);
    }
    CboxRun cbox;
    if (o.cbox_lookups) {
        PMULAB_TRY(prepare_run_cbox(p.hw(), &cbox));
        attach_run_cbox(&cbox, &groups[0]);
    }
    StrBuf head;
    result_table_fit(o, groups);
    result_table_header(o, &head);
    out.text_buf(head);
    RunSink sink(out, o);
    if (o.lbr) sink.set_lbr(&lbr);
    if (o.cbox_lookups) sink.set_cbox(&cbox);
    out.fail(measure_run(p.hw(), *mp, o.cfg, groups, sink));
    out.simulated_mark();
    return ok_status();
}

}  // namespace

Status cmd_run(Out& out, Args& args) {
    RunOptions o;
    PMULAB_TRY(parse_run_options(args, &o));
    o.tsc_hz = out.platform().tsc_frequency().hz;
    if (o.has_user) PMULAB_TRY(load_user_code(out, o));
    // R14's area against the memory map before anything runs (docs/cache.md).
    if (o.has_user && out.platform().measure()) PMULAB_TRY(check_r14_area(*out.platform().measure(), o.cfg));
    if (o.cfg.prefetchers_off) PMULAB_TRY(choose_prefetch_control(out.platform().hw(), &o.cfg));
    if (wants_metrics(o)) PMULAB_TRY(load_run_metrics(out, o));
    // Energy events: every domain checked on every package before anything runs.
    EnergyRun energy;
    if (!o.energy.empty()) PMULAB_TRY(energy_prepare(out, o, &energy));
    if (o.cycle_by_cycle) {
        MeasurePlatform* mp = out.platform().measure();
        if (!mp) return Error::make(Errc::unsupported, "run: this platform cannot execute generated code");
        PMULAB_TRY(expand_cpu_selection(out.platform().hw(), o.cpu, &o.cfg.cpus));
        return run_cycle_by_cycle(out, o, *mp);
    }
    if (o.energy.empty()) return run_counts(out, o);
    if (!o.events.empty() || needs_pmu(o)) PMULAB_TRY(run_counts(out, o));
    return energy_measure(out, o, energy);
}

}  // namespace pmulab
