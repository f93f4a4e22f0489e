// `pmulab selftest`: kvm-unit-tests-style checks of the measurement harness.
#include "x86/cpuid.h"
#include "base/json.h"
#include "commands/measure_cmd.h"
#include "measure/pmu_plan.h"

namespace pmulab {

const char kSelftestHelp[] =
    "usage: pmulab selftest [--cpu N|all|bsp]\n"
    "\n"
    "Checks the measurement harness and reports PASS, FAIL or SKIP per check:\n"
    "the TSC, the pointer-chase chain, overhead cancellation (empty kernel = 0, U vs 2U\n"
    "linearity, --basic, --loop, --irq lvt), fault-safe RDPMC probing, every CPU, and the\n"
    "PMU checks on an Intel architectural PMU: instructions retired on fixed counter 0 and\n"
    "GP C0H.00H within 1% of the kernel's count, core cycles fixed 1 vs GP 3CH.00H,\n"
    "reference cycles (fixed 2) vs the TSC, wrap and overflow flags at the enumerated\n"
    "width, IA32_PERF_GLOBAL_CTRL gating, and every GP and fixed counter on its own. They\n"
    "SKIP, with the reason, where there is no such PMU (e.g. QEMU without PMU passthrough).\n"
    "Per-CPU checks run on --cpu (default bsp).\n"
    "Exit status 0 when nothing FAILs, 1 otherwise. With --json: {\"type\":\"check\",...}\n"
    "records and one {\"type\":\"summary\",...}.\n";

namespace {

enum class Verdict : u8 { pass, fail, skip };

class Checks {
public:
    explicit Checks(Out& out) : out_(out) {}
    void report(Verdict v, const char* name, i64 cpu, const char* detail) {
        const char* tag = v == Verdict::pass ? "PASS" : (v == Verdict::fail ? "FAIL" : "SKIP");
        ++total_;
        if (v == Verdict::fail) ++failed_;
        if (v == Verdict::skip) ++skipped_;
        StrBuf line;
        JsonWriter w(line);
        w.begin_object().field("type", "check").field("name", name);
        if (cpu >= 0) w.field_u("cpu", u64(cpu));
        w.field("status", tag).field("detail", detail).end_object();
        line.put('\n');
        out_.record(line);
        StrBuf t;
        t.printf("%s: %s", tag, name);
        if (cpu >= 0) t.printf(" [CPU %lld]", (long long)cpu);
        if (detail && detail[0]) t.printf(v == Verdict::skip ? " (%s)" : ": %s", detail);
        t.put('\n');
        out_.text_buf(t);
    }
    void reportf(Verdict v, const char* name, i64 cpu, const char* fmt, ...) __attribute__((format(printf, 5, 6))) {
        char d[240];
        va_list ap;
        va_start(ap, fmt);
        vformat_to(d, sizeof d, fmt, ap);
        va_end(ap);
        report(v, name, cpu, d);
    }
    int finish() {
        StrBuf line;
        JsonWriter w(line);
        w.begin_object().field("type", "summary").field_u("tests", total_).field_u("passed", total_ - failed_ - skipped_);
        w.field_u("failed", failed_).field_u("skipped", skipped_).end_object();
        line.put('\n');
        out_.record(line);
        out_.text("SUMMARY: %u tests, %u failures, %u skipped\n", total_, failed_, skipped_);
        return failed_ ? kExitFailure : kExitOk;
    }

private:
    Out& out_;
    u32 total_ = 0, failed_ = 0, skipped_ = 0;
};

// Captures the per-iteration values of one measurement.
class Capture final : public MeasureSink {
public:
    void result(const MeasureConfig&, const MeasureResult& r) override {
        for (unsigned a = 0; a < kAggCount; ++a) per_iter[a] = r.per_iter[a];
        ++results;
    }
    void failure(const Error& e) override { err = e; }
    void skipped(const Error& e) override { err = e; }
    Frac per_iter[kAggCount];
    u32 results = 0;
    Error err;
};

struct MeasureArgs {
    KernelId kernel = KernelId::nop;
    u32 cpu = 0;
    u64 unroll = 100;
    u64 loop = 1;
    bool basic = false;
    IrqMode irq = IrqMode::cli;
    u64 size = 0;
};

// Median per iteration of one kernel on one CPU, counting the TSC.
Result<Frac> measure_tsc(Hw& hw, MeasurePlatform& mp, const MeasureArgs& a, Errc* code = nullptr) {
    MeasureConfig cfg;
    BenchInstance& b = cfg.benches.emplace();
    b.kernel = &kernel_info(a.kernel);
    b.size = a.size;
    cfg.cpus.push(a.cpu);
    cfg.unroll = a.unroll;
    cfg.loop = a.loop;
    cfg.basic = a.basic;
    cfg.irq = a.irq;
    Vec<StrView> specs;
    specs.push(StrView("tsc"));
    Vec<ReadGroup> groups;
    PMULAB_TRY(plan_event_groups(specs, &groups));
    Capture cap;
    Errc e = measure_run(hw, mp, cfg, groups, cap);
    if (code) *code = e;
    if (e != Errc::ok || cap.results != 1) {
        if (cap.err.msg[0]) return cap.err;
        return Error::make(Errc::internal, "no result");
    }
    return cap.per_iter[unsigned(Agg::median)];
}

StrBuf fixed2(Frac f) {
    StrBuf b;
    put_frac(b, f, 2);
    return b;
}

// |a - b| <= 1/4 + max(|a|, |b|) / 10 ticks per iteration: exact agreement under
// QEMU -icount (a == b); on hardware the median noise over U = 1000 copies is a few
// hundredths of a tick, far inside it, while a nop costs a fraction of a tick, so
// the absolute part stays small.
bool agrees(Frac a, Frac b) {
    Result<Frac> d = frac_sub_div(a, b, 1);
    if (!d.ok()) return false;
    Frac ad = frac_abs(d.value());
    Frac big = frac_cmp(frac_abs(a), frac_abs(b)) >= 0 ? frac_abs(a) : frac_abs(b);
    // tolerance = 1/4 + big/10 = (5*big.den + 2*big.num) / (20*big.den)
    i64 tn, t2;
    u64 td;
    if (__builtin_mul_overflow(i64(big.den), i64(5), &tn) || __builtin_mul_overflow(big.num, i64(2), &t2) ||
        __builtin_add_overflow(tn, t2, &tn) || __builtin_mul_overflow(big.den, u64(20), &td))
        return false;
    return frac_cmp(ad, Frac{tn, td}) <= 0;
}

struct TscCtx {
    Hw* hw;
    bool advanced = false;
    bool monotonic = true;
    u64 first = 0, last = 0;
};

void tsc_on_cpu(void* p) {
    auto* c = static_cast<TscCtx*>(p);
    u64 t0 = c->hw->rdtsc();
    u64 prev = t0;
    for (u32 i = 0; i < 10000; ++i) {
        u64 t = c->hw->rdtsc();
        if (t < prev) c->monotonic = false;
        prev = t;
    }
    c->first = t0;
    c->last = prev;
    c->advanced = prev > t0;
}

void check_tsc(Checks& ck, Hw& hw, MeasurePlatform* mp, u32 cpu) {
    TscCtx c{&hw};
    // Through the measurement platform where there is one: it waits for the AP
    // without competing with it (see MeasurePlatform::run_on_cpu).
    Status s = mp ? mp->run_on_cpu(hw, cpu, tsc_on_cpu, &c) : hw.run_on_cpu(cpu, tsc_on_cpu, &c);
    if (!s.ok()) {
        ck.report(Verdict::fail, "TSC advances", cpu, s.error().msg);
        return;
    }
    ck.reportf(c.advanced ? Verdict::pass : Verdict::fail, "TSC advances", cpu, "%llu ticks over 10000 reads",
               (unsigned long long)(c.last - c.first));
    ck.report(c.monotonic ? Verdict::pass : Verdict::fail, "TSC is monotonic over 10000 reads", cpu,
              c.monotonic ? "" : "a read returned less than the one before");
}

void check_chase(Checks& ck) {
    static constexpr u64 sizes[] = {4096, 65536, 1 << 20};
    for (u64 size : sizes) {
        Vec<u8> a, b;
        a.resize(size);
        b.resize(size);
        u64 base = u64(reinterpret_cast<uintptr_t>(a.data()));
        build_pointer_chase(a.data(), size, base, kDefaultSeed);
        build_pointer_chase(b.data(), size, base, kDefaultSeed);
        u64 steps = walk_pointer_chase(a.data(), size, base);
        bool same = true;
        for (u64 i = 0; i < size; ++i) same &= a[i] == b[i];
        u64 nodes = size / kChaseNodeBytes;
        char name[80];
        format_to(name, sizeof name, "pointer chase is one cycle over all %llu nodes (%llu KiB)",
                  (unsigned long long)nodes, (unsigned long long)(size >> 10));
        if (steps == nodes && same) ck.report(Verdict::pass, name, -1, "deterministic for the seed");
        else ck.reportf(Verdict::fail, name, -1, "cycle length %llu, same chain for the same seed: %s",
                        (unsigned long long)steps, same ? "yes" : "no");
    }
}

void check_measurements(Checks& ck, Hw& hw, MeasurePlatform& mp, u32 cpu) {
    MeasureArgs a;
    a.cpu = cpu;
    a.kernel = KernelId::empty;
    Result<Frac> e = measure_tsc(hw, mp, a);
    const char* n_empty = "empty kernel measures 0 per iteration";
    if (!e.ok()) ck.report(Verdict::fail, n_empty, cpu, e.error().msg);
    else {
        // Exactly 0 under QEMU -icount; within one tick per iteration on hardware.
        bool ok = frac_cmp(frac_abs(e.value()), Frac{1, 1}) < 0;
        ck.reportf(ok ? Verdict::pass : Verdict::fail, n_empty, cpu, "%s TSC ticks per iteration",
                   fixed2(e.value()).c_str());
    }

    a.kernel = KernelId::nop;
    a.unroll = 1000;
    Result<Frac> u1 = measure_tsc(hw, mp, a);
    a.unroll = 2000;
    Result<Frac> u2 = measure_tsc(hw, mp, a);
    const char* n_lin = "U vs 2U linearity for nop (U = 1000 and 2000)";
    if (!u1.ok() || !u2.ok()) ck.report(Verdict::fail, n_lin, cpu, (!u1.ok() ? u1 : u2).error().msg);
    else
        ck.reportf(agrees(u1.value(), u2.value()) ? Verdict::pass : Verdict::fail, n_lin, cpu,
                   "%s vs %s TSC ticks per iteration", fixed2(u1.value()).c_str(), fixed2(u2.value()).c_str());

    if (u1.ok()) {
        a.unroll = 1000;
        a.basic = true;
        Result<Frac> b = measure_tsc(hw, mp, a);
        a.basic = false;
        const char* n_basic = "basic mode (0 and U copies) agrees with U/2U for nop";
        if (!b.ok()) ck.report(Verdict::fail, n_basic, cpu, b.error().msg);
        else
            ck.reportf(agrees(b.value(), u1.value()) ? Verdict::pass : Verdict::fail, n_basic, cpu, "%s vs %s",
                       fixed2(b.value()).c_str(), fixed2(u1.value()).c_str());

        a.unroll = 100;
        a.loop = 10;
        Result<Frac> l = measure_tsc(hw, mp, a);
        a.loop = 1;
        const char* n_loop = "loop overhead cancels: nop with --loop 10 agrees with U/2U";
        if (!l.ok()) ck.report(Verdict::fail, n_loop, cpu, l.error().msg);
        else
            ck.reportf(agrees(l.value(), u1.value()) ? Verdict::pass : Verdict::fail, n_loop, cpu, "%s vs %s",
                       fixed2(l.value()).c_str(), fixed2(u1.value()).c_str());

        a.unroll = 1000;
        a.irq = IrqMode::lvt;
        Result<Frac> v = measure_tsc(hw, mp, a);
        a.irq = IrqMode::cli;
        const char* n_lvt = "interrupts masked via the local APIC LVT (--irq lvt) agree with cli for nop";
        if (!v.ok()) ck.report(v.error().code == Errc::unsupported ? Verdict::skip : Verdict::fail, n_lvt, cpu,
                               v.error().msg);
        else
            ck.reportf(agrees(v.value(), u1.value()) ? Verdict::pass : Verdict::fail, n_lvt, cpu, "%s vs %s",
                       fixed2(v.value()).c_str(), fixed2(u1.value()).c_str());
    }

    // RDPMC: either it works, or the probe catches the fault and the kernel is
    // reported unsupported (QEMU TCG raises #UD) - never a crash.
    a.kernel = KernelId::rdpmc;
    a.unroll = 100;
    Errc code = Errc::ok;
    Result<Frac> r = measure_tsc(hw, mp, a, &code);
    const char* n_pmc = "rdpmc kernel: RDPMC is probed before code generation";
    if (r.ok()) ck.reportf(Verdict::pass, n_pmc, cpu, "RDPMC works: %s TSC ticks per RDPMC", fixed2(r.value()).c_str());
    else if (code == Errc::unsupported) ck.reportf(Verdict::pass, n_pmc, cpu, "reported unsupported: %s", r.error().msg);
    else ck.report(Verdict::fail, n_pmc, cpu, r.error().msg);
}

void check_every_cpu(Checks& ck, Hw& hw, MeasurePlatform& mp) {
    u32 n = hw.cpu_count();
    u32 ok = 0;
    char first_err[200] = {};
    for (u32 cpu = 0; cpu < n; ++cpu) {
        MeasureArgs a;
        a.cpu = cpu;
        Result<Frac> r = measure_tsc(hw, mp, a);
        if (r.ok()) ++ok;
        else if (!first_err[0]) format_to(first_err, sizeof first_err, "CPU %u: %s", cpu, r.error().msg);
    }
    ck.reportf(ok == n ? Verdict::pass : Verdict::fail, "every CPU measures the nop kernel", -1, "%u of %u CPUs%s%s",
               ok, n, first_err[0] ? "; " : "", first_err);
}

// ---------------------------------------------------------------- PMU checks
//
// They measure built-in kernels with PMU events through the same path as
// `pmulab run --events` (measure_pmu.h) and need an Intel architectural PMU; elsewhere
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
    u32 warmup = 3;
    PmuRunOptions opts;
};

Result<PmuMeasurement> measure_pmu(Hw& hw, MeasurePlatform& mp, u32 cpu, const char* spec, const PmuArgs& a) {
    Vec<Event> events;
    PMULAB_TRY(parse_event_list(StrView(spec), &events));
    Vec<u32> cpus;
    cpus.push(cpu);
    Vec<PmuPlan*> plans;
    PMULAB_TRY(plan_pmu_runs(hw, events, cpus, a.opts, &plans));
    MeasureConfig cfg;
    BenchInstance& b = cfg.benches.emplace();
    b.kernel = &kernel_info(a.kernel);
    cfg.cpus.push(cpu);
    cfg.unroll = a.unroll;
    cfg.warmup = a.warmup;
    PmuMeasurement m;
    PmuCapture cap(events, cfg.reps, &m);
    Errc e = measure_run(hw, mp, cfg, plans[0]->groups, cap);
    for (const PmuGroupState* st : plans[0]->state)
        if (st->overflow_read) {
            m.overflow_read = true;
            m.overflow.known = true;
            m.overflow.gp |= st->overflow.gp;
            m.overflow.fixed |= st->overflow.fixed;
        }
    free_pmu_plans(&plans);
    if (e != Errc::ok) {
        if (cap.err.msg[0]) return cap.err;
        return Error::make(e, "measurement failed");
    }
    for (usize i = 0; i < m.ev.size(); ++i)
        if (!m.ev[i].seen) return Error::make(Errc::internal, "no result for event '%s'", events[i].name);
    return m;
}

// |f - n| <= n / 100.
bool within_1pct(Frac f, u64 n) {
    Result<Frac> d = frac_sub_div(f, Frac{i64(n), 1}, 1);
    return d.ok() && frac_cmp(frac_abs(d.value()), Frac{i64(n), 100}) <= 0;
}
bool positive(Frac f) { return frac_cmp(f, Frac{0, 1}) > 0; }

// Whether a single named event can be counted here (and on which kind of counter).
bool countable(const PmuInfo& info, const char* spec, CounterKind want) {
    Vec<Event> ev;
    if (!parse_event_list(StrView(spec), &ev).ok()) return false;
    Allocation a;
    if (!pmu_allocate(info, ev.data(), ev.size(), &a).ok()) return false;
    const Assignment* as = a.find(0);
    return as && as->kind == want;
}

struct DetectPmuCtx {
    Hw* hw;
    PmuInfo* info;
};
void detect_pmu_on_cpu(void* p) {
    auto* c = static_cast<DetectPmuCtx*>(p);
    pmu_detect(*c->hw, c->info);
}

void check_pmu_cpu(Checks& ck, Hw& hw, MeasurePlatform& mp, u32 cpu, const PmuInfo& info) {
    const u64 n = kernel_info(KernelId::add_indep).instructions;
    bool fx0 = countable(info, "INST_RETIRED.ANY", CounterKind::fixed);
    bool gp_ins = countable(info, "INST_RETIRED.ANY_P", CounterKind::gp);
    const char* ins_spec = fx0 && gp_ins ? "INST_RETIRED.ANY,INST_RETIRED.ANY_P" : fx0 ? "INST_RETIRED.ANY" : "INST_RETIRED.ANY_P";
    const char* ins_names[2] = {fx0 ? "FIXED_CTR0" : "GP", "GP"};
    usize ins_count = fx0 && gp_ins ? 2 : 1;

    // 1. Instructions retired.
    if (!fx0 && !gp_ins) {
        ck.report(Verdict::skip, kPmuInstr, cpu, "neither fixed counter 0 nor the architectural event C0H.00H is available");
    } else {
        Result<PmuMeasurement> m = measure_pmu(hw, mp, cpu, ins_spec, PmuArgs());
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
        Result<PmuMeasurement> m = measure_pmu(hw, mp, cpu, "CPU_CLK_UNHALTED.THREAD,CPU_CLK_UNHALTED.THREAD_P", a);
        if (!m.ok()) {
            ck.report(Verdict::fail, kPmuCycles, cpu, m.error().msg);
        } else {
            Frac f = m.value().ev[0].median, g = m.value().ev[1].median;
            bool ok = positive(f) && positive(g) && agrees(f, g);
            ck.reportf(ok ? Verdict::pass : Verdict::fail, kPmuCycles, cpu,
                       "FIXED_CTR1 %s vs GP %s cycles per iteration of add_chain", fixed2(f).c_str(), fixed2(g).c_str());
        }
    }

    // 3. Reference cycles (fixed counter 2, at the TSC rate) vs the TSC, same run.
    if (!countable(info, "CPU_CLK_UNHALTED.REF_TSC", CounterKind::fixed)) {
        ck.report(Verdict::skip, kPmuRef, cpu, "no fixed counter 2");
    } else {
        PmuArgs a;
        a.kernel = KernelId::add_chain;
        Result<PmuMeasurement> m = measure_pmu(hw, mp, cpu, "CPU_CLK_UNHALTED.REF_TSC,tsc", a);
        if (!m.ok()) {
            ck.report(Verdict::fail, kPmuRef, cpu, m.error().msg);
        } else {
            Frac f = m.value().ev[0].median, t = m.value().ev[1].median;
            bool ok = positive(f) && agrees(f, t);
            ck.reportf(ok ? Verdict::pass : Verdict::fail, kPmuRef, cpu,
                       "FIXED_CTR2 %s vs TSC %s ticks per iteration of add_chain", fixed2(f).c_str(), fixed2(t).c_str());
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
        Result<PmuMeasurement> m = measure_pmu(hw, mp, cpu, ins_spec, a);
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
                i64 first = e.short_raw.empty() ? 0 : e.short_raw[0];
                i64 lo = first, hi = first;
                for (i64 v : e.short_raw) {
                    lo = min_of(lo, v);
                    hi = max_of(hi, v);
                }
                bool steady = hi - lo <= (hi < 0 ? 0 : hi / 100) + 1;
                ok &= steady && first > 0;
                if (i) d.put("; ");
                d.printf("%s ", ins_names[i]);
                put_frac(d, e.median, 2);
                d.printf(" per iteration, wrapping run %lld vs %lld..%lld", (long long)first, (long long)lo,
                         (long long)hi);
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
        Result<PmuMeasurement> m = measure_pmu(hw, mp, cpu, ins_spec, a);
        if (!m.ok()) {
            ck.report(Verdict::fail, kPmuGate, cpu, m.error().msg);
        } else {
            i64 worst = 0;
            for (usize i = 0; i < ins_count; ++i)
                for (int which = 0; which < 2; ++which)
                    for (i64 x : which ? m.value().ev[i].long_raw : m.value().ev[i].short_raw)
                        worst = max_of(worst, x < 0 ? -x : x);
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
        Result<PmuMeasurement> m = measure_pmu(hw, mp, cpu, spec, PmuArgs());
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
        Result<PmuMeasurement> m = measure_pmu(hw, mp, cpu, fixed_events[i], PmuArgs());
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

void check_pmu(Checks& ck, Hw& hw, MeasurePlatform* mp, const Vec<u32>& cpus) {
    static const char* const names[] = {kPmuInstr, kPmuCycles, kPmuRef, kPmuWrap, kPmuGate, kPmuEach};
    Vec<PmuInfo> infos;
    infos.resize(cpus.size());
    Vec<u32> with_pmu;
    char reason[240] = {};
    for (usize i = 0; i < cpus.size(); ++i) {
        DetectPmuCtx c{&hw, &infos[i]};
        // Through the measurement platform's dispatcher, as check_tsc (a spinning BSP
        // starves the AP under QEMU -icount).
        Status s = mp ? mp->run_on_cpu(hw, cpus[i], detect_pmu_on_cpu, &c)
                      : hw.run_on_cpu(cpus[i], detect_pmu_on_cpu, &c);
        if (!s.ok()) {
            for (const char* n : names) ck.report(Verdict::fail, n, cpus[i], s.error().msg);
            continue;
        }
        if (infos[i].kind == PmuKind::intel_arch) with_pmu.push(u32(i));
        else if (!reason[0]) {
            if (infos[i].kind == PmuKind::none)
                format_to(reason, sizeof reason, "no Intel architectural PMU on CPU %u: %s", cpus[i], infos[i].absent);
            else
                format_to(reason, sizeof reason,
                          "the checks use Intel architectural events; CPU %u has a %s PMU", cpus[i],
                          pmu_kind_name(infos[i].kind));
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
    for (u32 k : with_pmu) check_pmu_cpu(ck, hw, *mp, cpus[k], infos[k]);
    if (with_pmu.size() != cpus.size())
        for (const char* n : names) ck.report(Verdict::skip, n, -1, reason);
}

}  // namespace

int cmd_selftest(Out& out, Args& args) {
    CpuSelection sel;
    while (!args.done()) {
        Status err;
        if (take_cpu_option(args, &sel, &err)) {
            if (!err.ok()) {
                out.error(err.error());
                return kExitUsage;
            }
        } else {
            out.error_msg(Errc::invalid_argument, "selftest: %s '%s' (see 'pmulab help selftest')",
                          args.at_option() ? "unknown option" : "unexpected argument", args.peek());
            return kExitUsage;
        }
    }
    Platform& p = out.platform();
    Hw& hw = p.hw();
    Vec<u32> cpus;
    Status cs = expand_cpu_selection(hw, sel, &cpus);
    if (!cs.ok()) {
        out.error(cs.error());
        return exit_status_for(cs.error().code);
    }
    MeasurePlatform* mp = p.measure();
    Checks ck(out);
    for (u32 cpu : cpus) check_tsc(ck, hw, mp, cpu);
    check_chase(ck);
    if (!mp) {
        ck.report(Verdict::skip, "measurement checks", -1, "this platform cannot execute generated code");
    } else {
        for (u32 cpu : cpus) check_measurements(ck, hw, *mp, cpu);
        check_every_cpu(ck, hw, *mp);
    }
    check_pmu(ck, hw, mp, cpus);
    return ck.finish();
}

}  // namespace pmulab
