// `pmulab selftest`: the PMU checks (see cmd_selftest.cpp for the harness checks).
#include "commands/selftest.h"
#include "commands/selftest_measure.h"
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

}  // namespace

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
    b.kernel = a.user ? nullptr : &kernel_info(a.kernel);
    b.user = a.user;
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

namespace {

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

}  // namespace

bool countable(const PmuInfo& info, const char* spec, CounterKind want) {
    Vec<Event> ev;
    if (!parse_event_list(StrView(spec), &ev, info.dialect).ok()) return false;
    Allocation a;
    if (!pmu_allocate(info, ev.data(), ev.size(), &a).ok()) return false;
    const Assignment* as = a.find(0);
    return as && as->kind == want;
}

namespace {

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

// The checks of one CPU: where they report and what they measure with.
struct CpuChecks {
    Checks& ck;
    Hw& hw;
    MeasurePlatform& mp;
    u32 cpu;
    const PmuInfo& info;
    Result<PmuMeasurement> measure(const char* spec, const PmuArgs& a) const {
        return measure_pmu(hw, mp, cpu, info, spec, a);
    }
};

// The Intel checks' instructions-retired events: fixed counter 0 and/or C0H.00H.
struct InstrEvents {
    bool fx0 = false, gp = false;
    const char* spec = nullptr;
    const char* names[2] = {};
    usize count = 0;
    bool any() const { return fx0 || gp; }
};
InstrEvents instr_events(const PmuInfo& info) {
    InstrEvents ie;
    ie.fx0 = countable(info, "INST_RETIRED.ANY", CounterKind::fixed);
    ie.gp = countable(info, "INST_RETIRED.ANY_P", CounterKind::gp);
    ie.spec = ie.fx0 && ie.gp ? "INST_RETIRED.ANY,INST_RETIRED.ANY_P"
              : ie.fx0        ? "INST_RETIRED.ANY"
                              : "INST_RETIRED.ANY_P";
    ie.names[0] = ie.fx0 ? "FIXED_CTR0" : "GP";
    ie.names[1] = "GP";
    ie.count = ie.fx0 && ie.gp ? 2 : 1;
    return ie;
}

// The wrap checks' runs: every counter starts 4000 below 2^width; the first measured
// run (no warm-up, 8000 instructions in the U version) wraps it.
PmuArgs wrap_args() {
    PmuArgs a;
    a.unroll = 1000;
    a.warmup = 0;
    a.opts.preset_below_top = 4000;
    return a;
}

// Gating: the counters programmed and enabled, the enable control `what` left off by
// the start write: nothing may count.
void check_gate(const CpuChecks& c, const char* name, const char* spec, const char* what) {
    PmuArgs a;
    a.opts.gate_off = true;
    Result<PmuMeasurement> m = c.measure(spec, a);
    if (!m.ok()) {
        c.ck.report(Verdict::fail, name, c.cpu, m.error().msg);
        return;
    }
    i64 worst = largest_count(m.value(), m.value().ev.size());
    c.ck.reportf(worst == 0 ? Verdict::pass : Verdict::fail, name, c.cpu,
                 "with %s the largest count of any run is %lld", what, (long long)worst);
}

// 1. Instructions retired.
void check_instructions(const CpuChecks& c, const InstrEvents& ie, u64 n) {
    if (!ie.any()) {
        c.ck.report(Verdict::skip, kPmuInstr, c.cpu,
                    "neither fixed counter 0 nor the architectural event C0H.00H is available");
        return;
    }
    Result<PmuMeasurement> m = c.measure(ie.spec, PmuArgs());
    if (!m.ok()) {
        c.ck.report(Verdict::fail, kPmuInstr, c.cpu, m.error().msg);
        return;
    }
    bool ok = true;
    StrBuf d;
    for (usize i = 0; i < ie.count; ++i) {
        Frac f = m.value().ev[i].median;
        ok &= within_1pct(f, n);
        if (i) d.put(", ");
        d.printf("%s ", ie.names[i]);
        put_frac(d, f, 2);
    }
    d.printf(" per iteration of add_indep (expected %llu, tolerance 1%%)%s", (unsigned long long)n,
             ie.fx0 ? "" : "; no fixed counter 0: GP only");
    c.ck.report(ok ? Verdict::pass : Verdict::fail, kPmuInstr, c.cpu, d.c_str());
}

// 2. Core cycles: fixed counter 1 vs 3C.00 in the same run.
void check_core_cycles(const CpuChecks& c) {
    if (!countable(c.info, "CPU_CLK_UNHALTED.THREAD", CounterKind::fixed) ||
        !countable(c.info, "CPU_CLK_UNHALTED.THREAD_P", CounterKind::gp)) {
        c.ck.report(Verdict::skip, kPmuCycles, c.cpu, "needs fixed counter 1 and the architectural event 3CH.00H");
        return;
    }
    PmuArgs a;
    a.kernel = KernelId::add_chain;
    Result<PmuMeasurement> m = c.measure("CPU_CLK_UNHALTED.THREAD,CPU_CLK_UNHALTED.THREAD_P", a);
    if (!m.ok()) {
        c.ck.report(Verdict::fail, kPmuCycles, c.cpu, m.error().msg);
        return;
    }
    Frac f = m.value().ev[0].median, g = m.value().ev[1].median;
    bool ok = positive(f) && positive(g) && agrees(f, g);
    c.ck.reportf(ok ? Verdict::pass : Verdict::fail, kPmuCycles, c.cpu,
                 "FIXED_CTR1 %s vs GP %s cycles per iteration of add_chain", fixed2(f).c_str(), fixed2(g).c_str());
}

// 3. Reference cycles (fixed counter 2, at the TSC rate but updated at the reference
//    clock) vs the TSC, same run, over 10^6 iterations.
void check_ref_cycles(const CpuChecks& c) {
    if (!countable(c.info, "CPU_CLK_UNHALTED.REF_TSC", CounterKind::fixed)) {
        c.ck.report(Verdict::skip, kPmuRef, c.cpu, "no fixed counter 2");
        return;
    }
    Result<PmuMeasurement> m = c.measure("CPU_CLK_UNHALTED.REF_TSC,tsc", ref_args(KernelId::add_chain));
    if (!m.ok()) {
        c.ck.report(Verdict::fail, kPmuRef, c.cpu, m.error().msg);
        return;
    }
    Frac f = m.value().ev[0].median, t = m.value().ev[1].median;
    bool ok = positive(f) && ref_agrees(f, t);
    if (!ok && positive(f) && c.info.hypervisor) {
        // KVM with TSC scaling (a guest TSC rate other than the host's): fixed counter 2
        // counts at the host's TSC rate, the guest's RDTSC at the scaled one, so the two
        // differ by the scaling ratio on a healthy PMU. Not judged there, with the reason.
        char sig[13];
        hypervisor_signature(c.hw.cpuid(0x40000000u, 0), sig);
        c.ck.reportf(Verdict::skip, kPmuRef, c.cpu,
                     "FIXED_CTR2 %s vs TSC %s ticks per iteration of add_chain: under a hypervisor (CPUID.01H:ECX[31], "
                     "'%s') fixed counter 2 counts at the host's TSC rate while the guest's TSC may be scaled (KVM TSC "
                     "scaling); not judged",
                     fixed2(f).c_str(), fixed2(t).c_str(), sig);
        return;
    }
    c.ck.reportf(ok ? Verdict::pass : Verdict::fail, kPmuRef, c.cpu,
                 "FIXED_CTR2 %s vs TSC %s ticks per iteration of add_chain", fixed2(f).c_str(), fixed2(t).c_str());
}

// 4. Wrap and overflow (wrap_args): counts must stay exact modulo the width, the
//    wrapping run must count like the others, and (v2+) GLOBAL_STATUS must flag each
//    counter.
void check_wrap_intel(const CpuChecks& c, const InstrEvents& ie, u64 n) {
    if (!ie.any()) {
        c.ck.report(Verdict::skip, kPmuWrap, c.cpu, "no counter can count instructions retired");
        return;
    }
    Result<PmuMeasurement> m = c.measure(ie.spec, wrap_args());
    if (!m.ok()) {
        c.ck.report(Verdict::fail, kPmuWrap, c.cpu, m.error().msg);
        return;
    }
    const PmuMeasurement& r = m.value();
    bool ok = true;
    StrBuf d;
    d.printf("preset 2^%u-4000", c.info.gp_width);
    if (ie.fx0) d.printf(" (GP), 2^%u-4000 (fixed)", c.info.fixed_width);
    d.put(": ");
    for (usize i = 0; i < ie.count; ++i) {
        const PmuEventResult& e = r.ev[i];
        ok &= within_1pct(e.median, n);
        // The wrapping run (the first) against the median of the short version.
        WrapRuns w = judge_wrap_runs(e.short_raw);
        ok &= w.ok;
        if (i) d.put("; ");
        d.printf("%s ", ie.names[i]);
        put_frac(d, e.median, 2);
        d.put(" per iteration, ");
        put_wrap_runs(d, w);
    }
    if (c.info.global_ctrl) {
        bool flags = r.overflow_read;
        if (ie.fx0) flags &= (r.overflow.fixed & 1) != 0;
        if (ie.gp) flags &= r.overflow.gp != 0;
        ok &= flags;
        d.printf("; GLOBAL_STATUS overflow flags %s", flags ? "set" : "MISSING");
    } else {
        d.put("; version 1 has no GLOBAL_STATUS: checked by the counts");
    }
    c.ck.report(ok ? Verdict::pass : Verdict::fail, kPmuWrap, c.cpu, d.c_str());
}

// 6a. Instructions retired pinned to one GP counter per run.
void check_each_gp(const CpuChecks& c, u64 n) {
    for (unsigned i = 0; i < 32; ++i) {
        if (!((c.info.gp_mask >> i) & 1)) continue;
        char name[120], spec[40];
        format_to(name, sizeof name, "%s: PMC%u (C0.00.CTR=%u)", kPmuEach, i, i);
        format_to(spec, sizeof spec, "C0.00.CTR=%u PMC%u", i, i);
        Result<PmuMeasurement> m = c.measure(spec, PmuArgs());
        if (!m.ok()) {
            c.ck.report(Verdict::fail, name, c.cpu, m.error().msg);
            continue;
        }
        Frac f = m.value().ev[0].median;
        c.ck.reportf(within_1pct(f, n) ? Verdict::pass : Verdict::fail, name, c.cpu,
                     "%s per iteration of add_indep (expected %llu)", fixed2(f).c_str(), (unsigned long long)n);
    }
}

// 6b. Each fixed counter's architectural event.
void check_each_fixed(const CpuChecks& c, u64 n) {
    static const char* const fixed_events[] = {"INST_RETIRED.ANY", "CPU_CLK_UNHALTED.THREAD",
                                               "CPU_CLK_UNHALTED.REF_TSC", "TOPDOWN.SLOTS"};
    for (unsigned i = 0; i < 16; ++i) {
        if (!((c.info.fixed_mask >> i) & 1)) continue;
        char name[120];
        format_to(name, sizeof name, "%s: FIXED_CTR%u", kPmuEach, i);
        if (i >= 4 || !countable(c.info, fixed_events[i], CounterKind::fixed)) {
            c.ck.reportf(Verdict::skip, name, c.cpu, "no architectural event is defined for FIXED_CTR%u", i);
            continue;
        }
        // FIXED_CTR2 counts at the reference clock: a long window (see ref_agrees).
        Result<PmuMeasurement> m = c.measure(fixed_events[i], i == 2 ? ref_args(KernelId::add_indep) : PmuArgs());
        if (!m.ok()) {
            c.ck.report(Verdict::fail, name, c.cpu, m.error().msg);
            continue;
        }
        Frac f = m.value().ev[0].median;
        bool ok = i == 0 ? within_1pct(f, n) : positive(f);
        char want[40];
        if (i == 0) format_to(want, sizeof want, " (expected %llu)", (unsigned long long)n);
        else str_copy(want, sizeof want, " (must be > 0)");
        c.ck.reportf(ok ? Verdict::pass : Verdict::fail, name, c.cpu, "%s: %s per iteration of add_indep%s",
                     fixed_events[i], fixed2(f).c_str(), want);
    }
}

void check_pmu_cpu(const CpuChecks& c) {
    const u64 n = kernel_info(KernelId::add_indep).instructions;
    InstrEvents ie = instr_events(c.info);
    check_instructions(c, ie, n);
    check_core_cycles(c);
    check_ref_cycles(c);
    check_wrap_intel(c, ie, n);
    // 5. GLOBAL_CTRL gating: the same counters, programmed and enabled in PERFEVTSELx /
    //    FIXED_CTR_CTRL, with GLOBAL_CTRL left 0 by the start write: nothing may count.
    if (!c.info.global_ctrl)
        c.ck.reportf(Verdict::skip, kPmuGate, c.cpu, "architectural PMU version %u has no IA32_PERF_GLOBAL_CTRL",
                     c.info.version);
    else if (!ie.any()) c.ck.report(Verdict::skip, kPmuGate, c.cpu, "no counter can count instructions retired");
    else check_gate(c, kPmuGate, ie.spec, "GLOBAL_CTRL = 0");
    // 6. Each counter on its own.
    check_each_gp(c, n);
    check_each_fixed(c, n);
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

// One measurement of `spec`; every event within 1% of n.
void check_counts(const CpuChecks& c, const char* name, const char* spec, const PmuArgs& a) {
    const u64 n = kernel_info(a.kernel).instructions;
    Result<PmuMeasurement> m = c.measure(spec, a);
    if (!m.ok()) {
        c.ck.report(Verdict::fail, name, c.cpu, m.error().msg);
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
    c.ck.report(ok ? Verdict::pass : Verdict::fail, name, c.cpu, d.c_str());
}

void check_wrap(const CpuChecks& c, const char* spec) {
    const u64 n = kernel_info(KernelId::add_indep).instructions;
    Result<PmuMeasurement> m = c.measure(spec, wrap_args());
    if (!m.ok()) {
        c.ck.report(Verdict::fail, kVendWrap, c.cpu, m.error().msg);
        return;
    }
    const PmuEventResult& e = m.value().ev[0];
    WrapRuns w = judge_wrap_runs(e.short_raw);
    bool ok = within_1pct(e.median, n) && w.ok;
    StrBuf d;
    d.printf("%s preset 2^%u-4000: ", spec, c.info.gp_width);
    put_frac(d, e.median, 2);
    d.put(" per iteration, ");
    put_wrap_runs(d, w);
    if (c.info.global_ctrl) {
        bool flags = m.value().overflow_read && m.value().overflow.gp != 0;
        ok &= flags;
        d.printf("; PerfMonV2 GLOBAL_STATUS overflow flag %s", flags ? "set" : "MISSING");
    }
    c.ck.report(ok ? Verdict::pass : Verdict::fail, kVendWrap, c.cpu, d.c_str());
}

void check_pmu_amd(const CpuChecks& c) {
    const PmuInfo& info = c.info;
    for (unsigned i = 0; i < 32; ++i) {
        if (!((info.gp_mask >> i) & 1)) continue;
        char name[120], spec[40];
        format_to(name, sizeof name, "%s: PERF_CTR%u (PMCx0C0)", kVendInstr, i);
        format_to(spec, sizeof spec, "0C0.00.CTR=%u", i);
        check_counts(c, name, spec, PmuArgs());
    }
    if (!((info.fixed_mask >> regs::amd::kFixedIrPerf) & 1))
        c.ck.report(Verdict::skip, kVendIr, c.cpu,
                    info.caps.amd_irperf_erratum1054
                        ? "IRPerfCount is not used: erratum 1054 (family 17h models 00h-2Fh)"
                        : "no IRPerfCount (CPUID 8000_0008H:EBX[1] = 0)");
    else check_counts(c, kVendIr, "instructions,0C0.00", PmuArgs());
    check_wrap(c, "0C0.00");
    check_gate(c, kVendGate, "0C0.00",
               info.global_ctrl ? "PerfMonV2 GLOBAL_CTL = 0 (PERF_CTL.EN set)" : "PERF_CTL.EN clear");
}

void check_pmu_netburst(const CpuChecks& c) {
    // instr_retired lives on CRU_ESCR0/1, which feed the IQ counters 12-17 (SDM Vol. 3B
    // §20.15): the allocation puts it there.
    char name[120];
    format_to(name, sizeof name, "%s: instr_retired on an IQ counter", kVendInstr);
    check_counts(c, name, "instr_retired", PmuArgs());
    check_wrap(c, "instr_retired");
    check_gate(c, kVendGate, "instr_retired", "CCCR.Enable clear");
    // Generated code starts and stops with plain CCCR writes, which replace the sticky
    // CCCR.OVF: the flag cannot be checked through a measurement.
    c.ck.report(Verdict::unverified, kVendOvf, c.cpu,
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
            if (probed[i].info.kind == PmuKind::none)  // absent: the vendor's words (PmuFamily::explain_absent)
                format_to(reason, sizeof reason, "CPU %u: %s", cpus[i], probed[i].info.absent);
            else
                format_to(reason, sizeof reason, "the checks use Intel architectural events; CPU %u has a %s PMU",
                          cpus[i], pmu_kind_name(probed[i].info.kind));
        }
    }
    if (with_pmu.empty()) {
        for (const char* n : names) ck.report(Verdict::skip, n, -1, reason[0] ? reason : "no CPU selected");
        skip_pmi_checks(ck, -1, reason[0] ? reason : "no CPU selected");
        return;
    }
    if (!mp) {
        for (const char* n : names) ck.report(Verdict::skip, n, -1, "this platform cannot execute generated code");
        skip_pmi_checks(ck, -1, "this platform cannot execute generated code");
        return;
    }
    for (u32 k : with_pmu) {
        const CpuChecks c{ck, hw, *mp, cpus[k], probed[k].info};
        if (c.info.kind == PmuKind::amd) check_pmu_amd(c);
        else if (c.info.kind == PmuKind::netburst) check_pmu_netburst(c);
        else check_pmu_cpu(c);
        check_pmi(ck, hw, *mp, cpus[k], probed[k].info);
    }
    if (with_pmu.size() != cpus.size()) {
        for (const char* n : names) ck.report(Verdict::skip, n, -1, reason);
        skip_pmi_checks(ck, -1, reason);
    }
}

}  // namespace pmulab
