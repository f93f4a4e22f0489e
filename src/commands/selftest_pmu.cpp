// `pmulab selftest`: the PMU checks (see cmd_selftest.cpp for the harness checks).
#include "commands/selftest.h"
#include "measure/pmu_plan.h"

namespace pmulab {

namespace {

// ---------------------------------------------------------------- PMU checks
//
// They measure built-in kernels with PMU events through the same path as
// `pmulab run --events` (measure/pmu_plan.h) and need an Intel architectural PMU; elsewhere
// (QEMU TCG, AMD, NetBurst) they SKIP with the reason. Tolerance for instruction
// counts: within 1% of the kernel's documented count per iteration (U/2U cancels the
// harness exactly, interrupts are masked; on hardware the counts are normally exact).

const char kPmuInstr[] = "instructions retired: fixed counter 0 vs GP event C0H.00H (INST_RETIRED.ANY_P)";
const char kPmuCycles[] = "core cycles: fixed counter 1 vs GP event 3CH.00H (CPU_CLK_UNHALTED.THREAD_P)";
const char kPmuRef[] = "reference cycles: fixed counter 2 vs the TSC";
const char kPmuWrap[] = "counter overflow wraps at the enumerated width and sets GLOBAL_STATUS";
const char kPmuGate[] = "IA32_PERF_GLOBAL_CTRL gates every counter";
const char kPmuEach[] = "each counter counts individually (instructions retired on every GP counter)";

// Everything one PMU measurement gives, per event in input order.
struct PmuEventResult {
    Frac median, min, max;
    Vec<i64> short_raw, long_raw;
    bool seen = false;
};
struct PmuMeasurement {
    Vec<PmuEventResult> ev;
    bool overflow_read = false;
    OverflowState overflow;
};

class PmuCapture final : public MeasureSink {
public:
    PmuCapture(const Vec<Event>& events, u32 reps, PmuMeasurement* m) : events_(events), reps_(reps), m_(m) {
        m_->ev.resize(events.size());
    }
    void result(const MeasureConfig&, const MeasureResult& r) override {
        for (usize i = 0; i < events_.size(); ++i) {
            StrView name(events_[i].name);
            if (!name.sub(0, sizeof r.read->event - 1).eq(StrView(r.read->event))) continue;
            PmuEventResult& e = m_->ev[i];
            e.seen = true;
            e.median = r.per_iter[unsigned(Agg::median)];
            e.min = r.per_iter[unsigned(Agg::min)];
            e.max = r.per_iter[unsigned(Agg::max)];
            e.short_raw.clear();
            e.long_raw.clear();
            for (u32 k = 0; k < reps_; ++k) {
                e.short_raw.push(r.short_raw[k]);
                e.long_raw.push(r.long_raw[k]);
            }
            return;
        }
    }
    void failure(const Error& e) override {
        if (err.code == Errc::internal && !err.msg[0]) err = e;
    }
    void skipped(const Error& e) override { failure(e); }
    Error err;

private:
    const Vec<Event>& events_;
    u32 reps_;
    PmuMeasurement* m_;
};

struct PmuArgs {
    KernelId kernel = KernelId::add_indep;
    u64 unroll = 100;
    u64 loop = 1;
    u32 warmup = 3;
    PmuRunOptions opts;
};

// `info`: the PMU of `cpu`, as check_pmu probed it.
Result<PmuMeasurement> measure_pmu(Hw& hw, MeasurePlatform& mp, u32 cpu, const PmuInfo& info, const char* spec,
                                   const PmuArgs& a) {
    Vec<Event> events;
    PMULAB_TRY(parse_event_list(StrView(spec), &events, info.dialect));
    Vec<u32> cpus;
    cpus.push(cpu);
    PmuPlan plan;
    PMULAB_TRY(plan_pmu_groups(info, events, cpus, a.opts, &plan));
    MeasureConfig cfg;
    BenchInstance& b = cfg.benches.emplace();
    b.kernel = &kernel_info(a.kernel);
    cfg.cpus.push(cpu);
    cfg.unroll = a.unroll;
    cfg.loop = a.loop;
    cfg.warmup = a.warmup;
    PmuMeasurement m;
    PmuCapture cap(events, cfg.reps, &m);
    Errc e = measure_run(hw, mp, cfg, plan.groups, cap);
    for (const Box<PmuGroupState>& st : plan.state)
        if (st->overflow_read) {
            m.overflow_read = true;
            m.overflow.known = true;
            m.overflow.gp |= st->overflow.gp;
            m.overflow.fixed |= st->overflow.fixed;
        }
    if (e != Errc::ok) {
        if (cap.err.msg[0]) return cap.err;
        return Error::make(e, "measurement failed");
    }
    for (usize i = 0; i < m.ev.size(); ++i)
        if (!m.ev[i].seen) return Error::make(Errc::internal, "no result for event '%s'", events[i].name);
    return m;
}

// |f - n| <= n / 100.
// The largest |count| of any run (short and long versions) of the first n events: what
// a gated-off counter must keep at 0.
i64 largest_count(const PmuMeasurement& m, usize n) {
    i64 worst = 0;
    for (usize i = 0; i < n; ++i)
        for (int which = 0; which < 2; ++which)
            for (i64 x : which ? m.ev[i].long_raw : m.ev[i].short_raw) worst = max_of(worst, x < 0 ? -x : x);
    return worst;
}

bool within_1pct(Frac f, u64 n) {
    Result<Frac> d = frac_sub_div(f, Frac{i64(n), 1}, 1);
    return d.ok() && frac_cmp(frac_abs(d.value()), Frac{i64(n), 100}) <= 0;
}
bool positive(Frac f) { return frac_cmp(f, Frac{0, 1}) > 0; }

// CPU_CLK_UNHALTED.REF_TSC is updated at the reference (crystal or bus) clock, not per TSC
// tick: each reading is quantised by the TSC ticks of one reference tick (100 MHz bus or
// 24/25/38.4 MHz crystal: tens to about two hundred ticks). Reference-cycle checks
// therefore measure windows of kRefIterations iterations (unroll x loop) and allow
// kRefSteps steps of up to kRefStepTicks ticks per window on top of agrees().
constexpr u64 kRefUnroll = 1000, kRefLoop = 1000, kRefIterations = kRefUnroll * kRefLoop;
constexpr u64 kRefSteps = 4, kRefStepTicks = 256;
bool ref_agrees(Frac f, Frac t) {
    if (agrees(f, t)) return true;
    Result<Frac> d = frac_sub_div(f, t, 1);
    return d.ok() && frac_cmp(frac_abs(d.value()), Frac{i64(kRefSteps * kRefStepTicks), kRefIterations}) <= 0;
}
PmuArgs ref_args(KernelId k) {
    PmuArgs a;
    a.kernel = k;
    a.unroll = kRefUnroll;
    a.loop = kRefLoop;
    return a;
}

// Whether a single named event can be counted here (and on which kind of counter).
bool countable(const PmuInfo& info, const char* spec, CounterKind want) {
    Vec<Event> ev;
    if (!parse_event_list(StrView(spec), &ev, info.dialect).ok()) return false;
    Allocation a;
    if (!pmu_allocate(info, ev.data(), ev.size(), &a).ok()) return false;
    const Assignment* as = a.find(0);
    return as && as->kind == want;
}

// The runs of the wrap check, judged robustly: one SMI (or another disturbance) adds
// counts to a run, so instead of all runs within 1% of each other, the wrapping run (the
// first) must be within 1% of the median of the runs, and at most a minority of the other
// runs may differ from it by more (outliers, reported).
struct WrapRuns {
    i64 first = 0, median = 0, lo = 0, hi = 0;
    u32 outliers = 0, runs = 0;
    bool ok = false;
};
WrapRuns judge_wrap_runs(const Vec<i64>& raw) {
    WrapRuns w;
    w.runs = u32(raw.size());
    if (raw.empty()) return w;
    Vec<i64> sorted;
    for (i64 v : raw) sorted.push(v);
    for (usize i = 1; i < sorted.size(); ++i)
        for (usize j = i; j > 0 && sorted[j - 1] > sorted[j]; --j) {
            i64 t = sorted[j];
            sorted[j] = sorted[j - 1];
            sorted[j - 1] = t;
        }
    w.median = sorted[sorted.size() / 2];
    w.first = raw[0];
    w.lo = sorted[0];
    w.hi = sorted[sorted.size() - 1];
    i64 tol = (w.median < 0 ? 0 : w.median / 100) + 1;
    auto near = [&](i64 v) { return (v > w.median ? v - w.median : w.median - v) <= tol; };
    for (usize i = 1; i < raw.size(); ++i)
        if (!near(raw[i])) ++w.outliers;
    w.ok = w.first > 0 && near(w.first) && w.outliers * 2 < w.runs;
    return w;
}
void put_wrap_runs(StrBuf& d, const WrapRuns& w) {
    d.printf("wrapping run %lld vs %lld..%lld", (long long)w.first, (long long)w.lo, (long long)w.hi);
    if (w.outliers)
        d.printf(" (median %lld; %u of %u runs disturbed, beyond 1%% of it)", (long long)w.median, w.outliers, w.runs);
}

void check_pmu_cpu(Checks& ck, Hw& hw, MeasurePlatform& mp, u32 cpu, const PmuInfo& info) {
    const u64 n = kernel_info(KernelId::add_indep).instructions;
    bool fx0 = countable(info, "INST_RETIRED.ANY", CounterKind::fixed);
    bool gp_ins = countable(info, "INST_RETIRED.ANY_P", CounterKind::gp);
    const char* ins_spec = fx0 && gp_ins ? "INST_RETIRED.ANY,INST_RETIRED.ANY_P"
                           : fx0         ? "INST_RETIRED.ANY"
                                         : "INST_RETIRED.ANY_P";
    const char* ins_names[2] = {fx0 ? "FIXED_CTR0" : "GP", "GP"};
    usize ins_count = fx0 && gp_ins ? 2 : 1;

    // 1. Instructions retired.
    if (!fx0 && !gp_ins) {
        ck.report(Verdict::skip, kPmuInstr, cpu,
                  "neither fixed counter 0 nor the architectural event C0H.00H is available");
    } else {
        Result<PmuMeasurement> m = measure_pmu(hw, mp, cpu, info, ins_spec, PmuArgs());
        if (!m.ok()) {
            ck.report(Verdict::fail, kPmuInstr, cpu, m.error().msg);
        } else {
            bool ok = true;
            StrBuf d;
            for (usize i = 0; i < ins_count; ++i) {
                Frac f = m.value().ev[i].median;
                ok &= within_1pct(f, n);
                if (i) d.put(", ");
                d.printf("%s ", ins_names[i]);
                put_frac(d, f, 2);
            }
            d.printf(" per iteration of add_indep (expected %llu, tolerance 1%%)%s", (unsigned long long)n,
                     fx0 ? "" : "; no fixed counter 0: GP only");
            ck.report(ok ? Verdict::pass : Verdict::fail, kPmuInstr, cpu, d.c_str());
        }
    }

    // 2. Core cycles: fixed counter 1 vs 3C.00 in the same run.
    if (!countable(info, "CPU_CLK_UNHALTED.THREAD", CounterKind::fixed) ||
        !countable(info, "CPU_CLK_UNHALTED.THREAD_P", CounterKind::gp)) {
        ck.report(Verdict::skip, kPmuCycles, cpu, "needs fixed counter 1 and the architectural event 3CH.00H");
    } else {
        PmuArgs a;
        a.kernel = KernelId::add_chain;
        Result<PmuMeasurement> m = measure_pmu(hw, mp, cpu, info, "CPU_CLK_UNHALTED.THREAD,CPU_CLK_UNHALTED.THREAD_P",
                                               a);
        if (!m.ok()) {
            ck.report(Verdict::fail, kPmuCycles, cpu, m.error().msg);
        } else {
            Frac f = m.value().ev[0].median, g = m.value().ev[1].median;
            bool ok = positive(f) && positive(g) && agrees(f, g);
            ck.reportf(ok ? Verdict::pass : Verdict::fail, kPmuCycles, cpu,
                       "FIXED_CTR1 %s vs GP %s cycles per iteration of add_chain", fixed2(f).c_str(),
                       fixed2(g).c_str());
        }
    }

    // 3. Reference cycles (fixed counter 2, at the TSC rate but updated at the reference
    //    clock) vs the TSC, same run, over 10^6 iterations.
    if (!countable(info, "CPU_CLK_UNHALTED.REF_TSC", CounterKind::fixed)) {
        ck.report(Verdict::skip, kPmuRef, cpu, "no fixed counter 2");
    } else {
        Result<PmuMeasurement> m = measure_pmu(hw, mp, cpu, info, "CPU_CLK_UNHALTED.REF_TSC,tsc",
                                               ref_args(KernelId::add_chain));
        if (!m.ok()) {
            ck.report(Verdict::fail, kPmuRef, cpu, m.error().msg);
        } else {
            Frac f = m.value().ev[0].median, t = m.value().ev[1].median;
            bool ok = positive(f) && ref_agrees(f, t);
            ck.reportf(ok ? Verdict::pass : Verdict::fail, kPmuRef, cpu,
                       "FIXED_CTR2 %s vs TSC %s ticks per iteration of add_chain", fixed2(f).c_str(),
                       fixed2(t).c_str());
        }
    }

    // 4. Wrap and overflow: every counter starts 4000 below 2^width; the first measured
    //    run (no warm-up, 8000 instructions in the U version) wraps it. Counts must stay
    //    exact modulo the width, the wrapping run must count like the others, and
    //    (v2+) GLOBAL_STATUS must flag each counter.
    if (!fx0 && !gp_ins) {
        ck.report(Verdict::skip, kPmuWrap, cpu, "no counter can count instructions retired");
    } else {
        PmuArgs a;
        a.unroll = 1000;
        a.warmup = 0;
        a.opts.preset_below_top = 4000;
        Result<PmuMeasurement> m = measure_pmu(hw, mp, cpu, info, ins_spec, a);
        if (!m.ok()) {
            ck.report(Verdict::fail, kPmuWrap, cpu, m.error().msg);
        } else {
            const PmuMeasurement& r = m.value();
            bool ok = true;
            StrBuf d;
            d.printf("preset 2^%u-4000", info.gp_width);
            if (fx0) d.printf(" (GP), 2^%u-4000 (fixed)", info.fixed_width);
            d.put(": ");
            for (usize i = 0; i < ins_count; ++i) {
                const PmuEventResult& e = r.ev[i];
                ok &= within_1pct(e.median, n);
                // The wrapping run (the first) against the median of the short version.
                WrapRuns w = judge_wrap_runs(e.short_raw);
                ok &= w.ok;
                if (i) d.put("; ");
                d.printf("%s ", ins_names[i]);
                put_frac(d, e.median, 2);
                d.put(" per iteration, ");
                put_wrap_runs(d, w);
            }
            if (info.global_ctrl) {
                bool flags = r.overflow_read;
                if (fx0) flags &= (r.overflow.fixed & 1) != 0;
                if (gp_ins) flags &= r.overflow.gp != 0;
                ok &= flags;
                d.printf("; GLOBAL_STATUS overflow flags %s", flags ? "set" : "MISSING");
            } else {
                d.put("; version 1 has no GLOBAL_STATUS: checked by the counts");
            }
            ck.report(ok ? Verdict::pass : Verdict::fail, kPmuWrap, cpu, d.c_str());
        }
    }

    // 5. GLOBAL_CTRL gating: the same counters, programmed and enabled in PERFEVTSELx /
    //    FIXED_CTR_CTRL, with GLOBAL_CTRL left 0 by the start write: nothing may count.
    if (!info.global_ctrl) {
        ck.reportf(Verdict::skip, kPmuGate, cpu, "architectural PMU version %u has no IA32_PERF_GLOBAL_CTRL",
                   info.version);
    } else if (!fx0 && !gp_ins) {
        ck.report(Verdict::skip, kPmuGate, cpu, "no counter can count instructions retired");
    } else {
        PmuArgs a;
        a.opts.gate_off = true;
        Result<PmuMeasurement> m = measure_pmu(hw, mp, cpu, info, ins_spec, a);
        if (!m.ok()) {
            ck.report(Verdict::fail, kPmuGate, cpu, m.error().msg);
        } else {
            i64 worst = largest_count(m.value(), ins_count);
            ck.reportf(worst == 0 ? Verdict::pass : Verdict::fail, kPmuGate, cpu,
                       "with GLOBAL_CTRL = 0 the largest count of any run is %lld", (long long)worst);
        }
    }

    // 6. Each counter on its own: instructions retired pinned to one GP counter per run,
    //    then each fixed counter's architectural event.
    for (unsigned i = 0; i < 32; ++i) {
        if (!((info.gp_mask >> i) & 1)) continue;
        char name[120], spec[40];
        format_to(name, sizeof name, "%s: PMC%u (C0.00.CTR=%u)", kPmuEach, i, i);
        format_to(spec, sizeof spec, "C0.00.CTR=%u PMC%u", i, i);
        Result<PmuMeasurement> m = measure_pmu(hw, mp, cpu, info, spec, PmuArgs());
        if (!m.ok()) {
            ck.report(Verdict::fail, name, cpu, m.error().msg);
            continue;
        }
        Frac f = m.value().ev[0].median;
        ck.reportf(within_1pct(f, n) ? Verdict::pass : Verdict::fail, name, cpu,
                   "%s per iteration of add_indep (expected %llu)", fixed2(f).c_str(), (unsigned long long)n);
    }
    static const char* const fixed_events[] = {"INST_RETIRED.ANY", "CPU_CLK_UNHALTED.THREAD",
                                               "CPU_CLK_UNHALTED.REF_TSC", "TOPDOWN.SLOTS"};
    for (unsigned i = 0; i < 16; ++i) {
        if (!((info.fixed_mask >> i) & 1)) continue;
        char name[120];
        format_to(name, sizeof name, "%s: FIXED_CTR%u", kPmuEach, i);
        if (i >= 4 || !countable(info, fixed_events[i], CounterKind::fixed)) {
            ck.reportf(Verdict::skip, name, cpu, "no architectural event is defined for FIXED_CTR%u", i);
            continue;
        }
        // FIXED_CTR2 counts at the reference clock: a long window (see ref_agrees).
        Result<PmuMeasurement> m = measure_pmu(hw, mp, cpu, info, fixed_events[i],
                                               i == 2 ? ref_args(KernelId::add_indep) : PmuArgs());
        if (!m.ok()) {
            ck.report(Verdict::fail, name, cpu, m.error().msg);
            continue;
        }
        Frac f = m.value().ev[0].median;
        bool ok = i == 0 ? within_1pct(f, n) : positive(f);
        char want[40];
        if (i == 0) format_to(want, sizeof want, " (expected %llu)", (unsigned long long)n);
        else str_copy(want, sizeof want, " (must be > 0)");
        ck.reportf(ok ? Verdict::pass : Verdict::fail, name, cpu, "%s: %s per iteration of add_indep%s",
                   fixed_events[i], fixed2(f).c_str(), want);
    }
}

// ---------------------------------------------------------------- AMD and NetBurst
//
// The same questions on the other PMU kinds, with their own events: instructions retired
// on every counter against the kernel's count, the free-running counter against the
// programmable one (AMD IRPerfCount), enable gating (PERF_CTL.EN / PerfMonV2
// GLOBAL_CTL; CCCR.Enable), and wrap at the counter width (48 / 40 bits).

const char kVendInstr[] = "instructions retired on each counter vs the kernel's count";
const char kVendIr[] = "IRPerfCount vs PMCx0C0 (instructions retired)";
const char kVendWrap[] = "counter wraps at the enumerated width";
const char kVendGate[] = "counting is gated by the enable controls";
const char kVendOvf[] = "overflow flag after a wrap";

// One measurement of `spec`; every event within 1% of n. *ok_out: the verdict.
void check_counts(Checks& ck, Hw& hw, MeasurePlatform& mp, u32 cpu, const PmuInfo& info, const char* name,
                  const char* spec, const PmuArgs& a) {
    const u64 n = kernel_info(a.kernel).instructions;
    Result<PmuMeasurement> m = measure_pmu(hw, mp, cpu, info, spec, a);
    if (!m.ok()) {
        ck.report(Verdict::fail, name, cpu, m.error().msg);
        return;
    }
    bool ok = true;
    StrBuf d;
    d.printf("%s: ", spec);
    for (usize i = 0; i < m.value().ev.size(); ++i) {
        Frac f = m.value().ev[i].median;
        ok &= within_1pct(f, n);
        if (i) d.put(", ");
        put_frac(d, f, 2);
    }
    d.printf(" per iteration of %s (expected %llu, tolerance 1%%)", kernel_info(a.kernel).name, (unsigned long long)n);
    ck.report(ok ? Verdict::pass : Verdict::fail, name, cpu, d.c_str());
}

void check_wrap(Checks& ck, Hw& hw, MeasurePlatform& mp, u32 cpu, const PmuInfo& info, const char* spec) {
    const u64 n = kernel_info(KernelId::add_indep).instructions;
    PmuArgs a;
    a.unroll = 1000;
    a.warmup = 0;
    a.opts.preset_below_top = 4000;
    Result<PmuMeasurement> m = measure_pmu(hw, mp, cpu, info, spec, a);
    if (!m.ok()) {
        ck.report(Verdict::fail, kVendWrap, cpu, m.error().msg);
        return;
    }
    const PmuEventResult& e = m.value().ev[0];
    WrapRuns w = judge_wrap_runs(e.short_raw);
    bool ok = within_1pct(e.median, n) && w.ok;
    StrBuf d;
    d.printf("%s preset 2^%u-4000: ", spec, info.gp_width);
    put_frac(d, e.median, 2);
    d.put(" per iteration, ");
    put_wrap_runs(d, w);
    if (info.global_ctrl) {
        bool flags = m.value().overflow_read && m.value().overflow.gp != 0;
        ok &= flags;
        d.printf("; PerfMonV2 GLOBAL_STATUS overflow flag %s", flags ? "set" : "MISSING");
    }
    ck.report(ok ? Verdict::pass : Verdict::fail, kVendWrap, cpu, d.c_str());
}

void check_gate(Checks& ck, Hw& hw, MeasurePlatform& mp, u32 cpu, const PmuInfo& info, const char* spec,
                const char* what) {
    PmuArgs a;
    a.opts.gate_off = true;
    Result<PmuMeasurement> m = measure_pmu(hw, mp, cpu, info, spec, a);
    if (!m.ok()) {
        ck.report(Verdict::fail, kVendGate, cpu, m.error().msg);
        return;
    }
    i64 worst = largest_count(m.value(), m.value().ev.size());
    ck.reportf(worst == 0 ? Verdict::pass : Verdict::fail, kVendGate, cpu,
               "with %s the largest count of any run is %lld", what, (long long)worst);
}

void check_pmu_amd(Checks& ck, Hw& hw, MeasurePlatform& mp, u32 cpu, const PmuInfo& info) {
    for (unsigned i = 0; i < 32; ++i) {
        if (!((info.gp_mask >> i) & 1)) continue;
        char name[120], spec[40];
        format_to(name, sizeof name, "%s: PERF_CTR%u (PMCx0C0)", kVendInstr, i);
        format_to(spec, sizeof spec, "0C0.00.CTR=%u", i);
        check_counts(ck, hw, mp, cpu, info, name, spec, PmuArgs());
    }
    if (!((info.fixed_mask >> regs::amd::kFixedIrPerf) & 1))
        ck.report(Verdict::skip, kVendIr, cpu,
                  info.caps.amd_irperf_erratum1054 ? "IRPerfCount is not used: erratum 1054 (family 17h models 00h-2Fh)"
                                                   : "no IRPerfCount (CPUID 8000_0008H:EBX[1] = 0)");
    else check_counts(ck, hw, mp, cpu, info, kVendIr, "instructions,0C0.00", PmuArgs());
    check_wrap(ck, hw, mp, cpu, info, "0C0.00");
    check_gate(ck, hw, mp, cpu, info, "0C0.00",
               info.global_ctrl ? "PerfMonV2 GLOBAL_CTL = 0 (PERF_CTL.EN set)" : "PERF_CTL.EN clear");
}

void check_pmu_netburst(Checks& ck, Hw& hw, MeasurePlatform& mp, u32 cpu, const PmuInfo& info) {
    // instr_retired lives on CRU_ESCR0/1, which feed the IQ counters 12-17 (SDM Vol. 3B
    // §20.15): the allocation puts it there.
    char name[120];
    format_to(name, sizeof name, "%s: instr_retired on an IQ counter", kVendInstr);
    check_counts(ck, hw, mp, cpu, info, name, "instr_retired", PmuArgs());
    check_wrap(ck, hw, mp, cpu, info, "instr_retired");
    check_gate(ck, hw, mp, cpu, info, "instr_retired", "CCCR.Enable clear");
    // Generated code starts and stops with plain CCCR writes, which replace the sticky
    // CCCR.OVF: the flag cannot be checked through a measurement.
    ck.report(Verdict::unverified, kVendOvf, cpu,
              "CCCR.OVF is cleared by the stop write of generated code: overflow is reported unknown on NetBurst");
}

}  // namespace

void check_pmu(Checks& ck, Hw& hw, MeasurePlatform* mp, const Vec<u32>& cpus) {
    static const char* const names[] = {kPmuInstr, kPmuCycles, kPmuRef, kPmuWrap, kPmuGate, kPmuEach};
    // Every CPU probed once, through the measurement platform's dispatcher, as check_tsc
    // (a spinning BSP starves the AP under QEMU -icount); the plans are made from these.
    Vec<ProbedCpu> probed;
    probe_cpus(hw, cpus, &probed, [&](u32 cpu, auto&& fn) { return run_on_measuring(hw, mp, cpu, fn); });
    Vec<u32> with_pmu;
    char reason[240] = {};
    for (usize i = 0; i < cpus.size(); ++i) {
        const Status& s = probed[i].status;
        if (!s.ok()) {
            for (const char* n : names) ck.report(Verdict::fail, n, cpus[i], s.error().msg);
            continue;
        }
        PmuKind kind = probed[i].info.kind;
        if (kind == PmuKind::intel_arch || kind == PmuKind::amd || kind == PmuKind::netburst) with_pmu.push(u32(i));
        else if (!reason[0]) {
            if (probed[i].info.kind == PmuKind::none)
                format_to(reason, sizeof reason, "no Intel architectural PMU on CPU %u: %s", cpus[i],
                          probed[i].info.absent);
            else
                format_to(reason, sizeof reason, "the checks use Intel architectural events; CPU %u has a %s PMU",
                          cpus[i], pmu_kind_name(probed[i].info.kind));
        }
    }
    if (with_pmu.empty()) {
        for (const char* n : names) ck.report(Verdict::skip, n, -1, reason[0] ? reason : "no CPU selected");
        return;
    }
    if (!mp) {
        for (const char* n : names) ck.report(Verdict::skip, n, -1, "this platform cannot execute generated code");
        return;
    }
    for (u32 k : with_pmu) {
        const PmuInfo& info = probed[k].info;
        if (info.kind == PmuKind::amd) check_pmu_amd(ck, hw, *mp, cpus[k], info);
        else if (info.kind == PmuKind::netburst) check_pmu_netburst(ck, hw, *mp, cpus[k], info);
        else check_pmu_cpu(ck, hw, *mp, cpus[k], info);
    }
    if (with_pmu.size() != cpus.size())
        for (const char* n : names) ck.report(Verdict::skip, n, -1, reason);
}

}  // namespace pmulab
