// `pmulab report`: the exact-count checks. The KVM selftests' pmu_counters_test asks a
// guest's PMU the same questions (a loop of known instructions and branches must count
// exactly that many; cycles must count); here the U/2U regions of the measurement engine
// cancel the harness exactly, so on a healthy PMU every count below is exact, not
// within a tolerance (interrupts are masked during every run).
#include "commands/report.h"
#include "commands/selftest_measure.h"

namespace pmulab {

namespace {

const char kExInstrFixed[] = "exact count: instructions retired on the fixed counter";
const char kExInstrGp[] = "exact count: instructions retired on a GP counter";
const char kExBranches[] = "exact count: branches retired on a GP counter";
const char kExScale[] = "exact count: instructions scale with the unroll (U = 10, 100, 1000)";
const char kExCycles[] = "bound: core cycles >= instructions / 16";
const char* const kExNames[] = {kExInstrFixed, kExInstrGp, kExBranches, kExScale, kExCycles};

// Each vendor's names for the same questions (events.h dialects).
struct ExactEvents {
    const char* fixed_label;  // the fixed-like counter of instructions retired, or null
    const char* instr_fixed;
    const char* instr_gp;
    const char* branches;
    const char* cycles;
};
ExactEvents exact_events(const PmuInfo& info) {
    if (info.kind == PmuKind::amd) return {"IRPerfCount", "instructions", "0C0.00", "branches", "cycles"};
    if (info.kind == PmuKind::netburst) return {nullptr, nullptr, "instr_retired", "branches", "cycles"};
    return {"FIXED_CTR0", "INST_RETIRED.ANY", "INST_RETIRED.ANY_P", "BR_INST_RETIRED.ALL_BRANCHES", "cycles"};
}

// Why `spec` cannot be counted on a counter of that kind here.
const char* why_not(const PmuInfo& info, bool fixed) {
    if (info.kind == PmuKind::amd && !fixed) return "the event is not available on this PMU";
    if (info.kind == PmuKind::amd)
        return info.caps.amd_irperf_erratum1054 ? "IRPerfCount is not used: erratum 1054 (family 17h models 00h-2Fh)"
                                                : "no IRPerfCount (CPUID 8000_0008H:EBX[1] = 0)";
    if (info.kind == PmuKind::netburst) return "NetBurst has no fixed counters";
    return fixed ? "fixed counter 0 is not enumerated (CPUID.0AH:EDX[4:0], ECX)"
                 : "the architectural event is not available (CPUID.0AH:EBX)";
}

struct ExactCpu {
    Checks& ck;
    Hw& hw;
    MeasurePlatform& mp;
    u32 cpu;
    const PmuInfo& info;
    ExactEvents ev;
    Result<PmuMeasurement> measure(const char* spec, const PmuArgs& a) const {
        return measure_pmu(hw, mp, cpu, info, spec, a);
    }
};

bool exactly(Frac f, u64 n) { return frac_cmp(f, Frac{i64(n), 1}) == 0; }
const char* measured_what(const PmuArgs& a) { return a.user ? a.user->name : kernel_info(a.kernel).name; }

// The events `specs` measured together, each exactly want[i] per iteration (the median;
// est(min) and est(max) shown).
void report_exact(const ExactCpu& c, const char* name, const char* const* specs, usize n, const PmuArgs& a,
                  const u64* want) {
    StrBuf spec;
    for (usize i = 0; i < n; ++i) spec.printf("%s%s", i ? "," : "", specs[i]);
    Result<PmuMeasurement> m = c.measure(spec.c_str(), a);
    if (!m.ok()) {
        c.ck.report(Verdict::fail, name, c.cpu, m.error().msg);
        return;
    }
    bool ok = true;
    StrBuf d;
    for (usize i = 0; i < n; ++i) {
        const PmuEventResult& e = m.value().ev[i];
        ok &= exactly(e.median, want[i]);
        d.printf("%s%s ", i ? "; " : "", specs[i]);
        put_frac(d, e.median, 2);
        d.printf(" per iteration of %s (expected %llu; est(min) ", measured_what(a), (unsigned long long)want[i]);
        put_frac(d, e.min, 2);
        d.put(", est(max) ");
        put_frac(d, e.max, 2);
        d.put(')');
    }
    c.ck.report(ok ? Verdict::pass : Verdict::fail, name, c.cpu, d.c_str());
}

void check_instructions(const ExactCpu& c, bool fixed) {
    const char* name = fixed ? kExInstrFixed : kExInstrGp;
    const char* spec = fixed ? c.ev.instr_fixed : c.ev.instr_gp;
    if (!spec || !countable(c.info, spec, fixed ? CounterKind::fixed : CounterKind::gp)) {
        c.ck.report(Verdict::skip, name, c.cpu, why_not(c.info, fixed));
        return;
    }
    const u64 want[] = {kernel_info(KernelId::add_indep).instructions};
    report_exact(c, name, &spec, 1, PmuArgs(), want);
}

// A body of one instruction that is one taken branch: JMP rel8 to the next instruction
// (EB 00), so U copies retire exactly U instructions and U branches.
void jmp_next_body(UserCode* u) {
    str_copy(u->name, sizeof u->name, "jmp_next");
    u->body.push(0xEB);
    u->body.push(0x00);
    u->hash = fnv1a64(u->body.data(), u->body.size());
}

void check_branches(const ExactCpu& c) {
    if (!countable(c.info, c.ev.branches, CounterKind::gp)) {
        c.ck.report(Verdict::skip, kExBranches, c.cpu, why_not(c.info, false));
        return;
    }
    UserCode jmp;
    jmp_next_body(&jmp);
    PmuArgs a;
    a.user = &jmp;
    const char* specs[] = {c.ev.branches, c.ev.instr_gp};
    const bool both = countable(c.info, c.ev.instr_gp, CounterKind::gp);
    const u64 one[] = {1, 1};
    report_exact(c, kExBranches, specs, both ? 2 : 1, a, one);
    // Straight-line code retires no branch at all.
    const u64 none[] = {0};
    report_exact(c, kExBranches, specs, 1, PmuArgs(), none);
}

i64 raw_median(const Vec<i64>& raw) {
    Vec<i64> v;
    for (i64 x : raw) v.push(x);
    sort_i64(v.data(), v.size());
    return v.empty() ? 0 : v[v.size() / 2];
}

// The same count at U = 10, 100 and 1000: per U copies exactly U x the kernel's count, and
// the 2U versions' raw counts apart by exactly the copies between them.
void check_scale(const ExactCpu& c) {
    if (!countable(c.info, c.ev.instr_gp, CounterKind::gp)) {
        c.ck.report(Verdict::skip, kExScale, c.cpu, why_not(c.info, false));
        return;
    }
    static constexpr u64 kUnrolls[] = {10, 100, 1000};
    const u64 n = kernel_info(KernelId::add_indep).instructions;
    bool ok = true;
    i64 first_long = 0;
    StrBuf d;
    d.printf("%s on add_indep (%llu per copy):", c.ev.instr_gp, (unsigned long long)n);
    for (u64 u : kUnrolls) {
        PmuArgs a;
        a.unroll = u;
        Result<PmuMeasurement> m = c.measure(c.ev.instr_gp, a);
        if (!m.ok()) {
            c.ck.report(Verdict::fail, kExScale, c.cpu, m.error().msg);
            return;
        }
        const PmuEventResult& e = m.value().ev[0];
        i64 lo = raw_median(e.short_raw), hi = raw_median(e.long_raw);
        ok &= hi - lo == i64(u * n);
        if (u == kUnrolls[0]) first_long = hi;
        else ok &= hi - first_long == i64(2 * (u - kUnrolls[0]) * n);
        d.printf(" U=%llu: %lld - %lld = %lld;", (unsigned long long)u, (long long)hi, (long long)lo,
                 (long long)(hi - lo));
    }
    d.put(" expected U x the count per copy, and the 2U versions 2 x it apart per added copy");
    c.ck.report(ok ? Verdict::pass : Verdict::fail, kExScale, c.cpu, d.c_str());
}

void check_cycles(const ExactCpu& c) {
    if (!countable(c.info, c.ev.cycles, CounterKind::fixed) && !countable(c.info, c.ev.cycles, CounterKind::gp)) {
        c.ck.report(Verdict::skip, kExCycles, c.cpu, "no counter can count core cycles");
        return;
    }
    const u64 n = kernel_info(KernelId::add_indep).instructions;
    Result<PmuMeasurement> m = c.measure(c.ev.cycles, PmuArgs());
    if (!m.ok()) {
        c.ck.report(Verdict::fail, kExCycles, c.cpu, m.error().msg);
        return;
    }
    Frac f = m.value().ev[0].median;
    // cycles >= n / width  <=>  cycles x width >= n (f = num / den)
    bool ok = f.num > 0 && u64(f.num) * kMaxRetireWidth >= n * f.den;
    c.ck.reportf(ok ? Verdict::pass : Verdict::fail, kExCycles, c.cpu,
                 "cycles: %s per iteration of add_indep (%llu instructions: at least %llu/%llu)", fixed2(f).c_str(),
                 (unsigned long long)n, (unsigned long long)n, (unsigned long long)kMaxRetireWidth);
}

void check_cpu(const ExactCpu& c) {
    check_instructions(c, true);
    check_instructions(c, false);
    check_branches(c);
    check_scale(c);
    check_cycles(c);
}

}  // namespace

void check_exact_counts(Checks& ck, Hw& hw, MeasurePlatform* mp, const Vec<u32>& cpus) {
    Vec<ProbedCpu> probed;
    probe_cpus(hw, cpus, &probed, [&](u32 cpu, auto&& fn) { return run_on_measuring(hw, mp, cpu, fn); });
    char reason[240] = {};
    for (usize i = 0; i < cpus.size(); ++i) {
        const ProbedCpu& p = probed[i];
        if (!p.status.ok()) {
            for (const char* n : kExNames) ck.report(Verdict::fail, n, cpus[i], p.status.error().msg);
            continue;
        }
        if (p.info.kind == PmuKind::none) {  // absent: the vendor's words (PmuFamily::explain_absent)
            if (!reason[0]) format_to(reason, sizeof reason, "CPU %u: %s", cpus[i], p.info.absent);
            continue;
        }
        if (!mp) {
            if (!reason[0]) str_copy(reason, sizeof reason, "this platform cannot execute generated code");
            continue;
        }
        check_cpu(ExactCpu{ck, hw, *mp, cpus[i], p.info, exact_events(p.info)});
    }
    if (reason[0])
        for (const char* n : kExNames) ck.report(Verdict::skip, n, -1, reason);
}

}  // namespace pmulab
