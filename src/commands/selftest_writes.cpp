// `pmulab selftest`: the interrupt checks' counter-write half (see selftest_pmi.cpp):
// kvm-unit-tests x86/pmu.c check_gp_counters_write_width. IA32_PMCx takes 32 bits
// sign-extended to the width (SDM Vol. 3B §20.2.6); IA32_A_PMCx, where
// IA32_PERF_CAPABILITIES.FW_WRITE[13] enumerates it, the full width, and #GP beyond it.
#include "commands/selftest.h"
#include "x86/intel_regs.h"

namespace pmulab {

namespace {

constexpr u64 kWriteWide = 0xffffff0123456789ull;  // kvm-unit-tests' pattern: bits beyond any width
constexpr u64 kWriteSigned = 0x89abcdefull;        // bit 31 set: a legacy write sign-extends it

struct WriteCtx {
    Checks& ck;
    Hw& hw;
    MeasurePlatform& mp;
    u32 cpu;
    const PmuInfo& info;
};

// IA32_PMCx / IA32_A_PMCx write semantics (kvm-unit-tests check_gp_counters_write_width),
// on every GP counter with its PERFEVTSELx cleared, all of it restored by the session.
struct WriteCase {
    u32 (*msr)(unsigned);
    u64 write;
    u64 expect;  // what reads back; kFault: the write must #GP
};
constexpr u64 kFault = ~u64(0);

// One counter's cases; the first mismatch goes to bad (on the measuring CPU: a fixed buffer).
void write_counter(const WriteCtx& c, unsigned i, const WriteCase* cases, usize n, char* bad, usize cap) {
    for (usize k = 0; k < n && !bad[0]; ++k) {
        const u32 msr = cases[k].msr(i);
        Status w = c.hw.wrmsr(msr, cases[k].write);
        Result<u64> v = c.hw.rdmsr(msr);
        if (cases[k].expect == kFault) {
            if (w.ok())
                format_to(bad, cap, "PMC%u: writing 0x%llx to MSR 0x%x did not #GP", i,
                          (unsigned long long)cases[k].write, msr);
        } else if (!w.ok() || !v.ok() || v.value() != cases[k].expect) {
            format_to(bad, cap, "PMC%u: wrote 0x%llx to MSR 0x%x, read 0x%llx (expected 0x%llx)%s%s", i,
                      (unsigned long long)cases[k].write, msr, (unsigned long long)(v.ok() ? v.value() : 0),
                      (unsigned long long)cases[k].expect, w.ok() ? "" : ": ", w.ok() ? "" : w.error().msg);
        }
    }
}

// Every GP counter with its PERFEVTSELx cleared, then both put back exactly (the counter
// through IA32_A_PMCx where it can be written, else IA32_PMCx).
Status write_cases(const WriteCtx& c, const WriteCase* cases, usize n, char* bad, usize cap) {
    for (unsigned i = 0; i < 32 && !bad[0]; ++i) {
        if (!((c.info.gp_mask >> i) & 1)) continue;
        const u32 sel = regs::perfevtsel_msr(i), ctr = regs::pmc_msr(i);
        const u64 sel0 = PMULAB_TRY(c.hw.rdmsr(sel));
        const u64 ctr0 = PMULAB_TRY(c.hw.rdmsr(ctr));
        Status s = c.hw.wrmsr(sel, 0);
        if (s.ok()) write_counter(c, i, cases, n, bad, cap);
        Status r = c.info.full_width_writes ? c.hw.wrmsr(regs::a_pmc_msr(i), ctr0) : Status(Error());
        if (!r.ok()) r = c.hw.wrmsr(ctr, ctr0);
        Result<u64> back = c.hw.rdmsr(ctr);
        if ((!back.ok() || back.value() != ctr0) && !bad[0])
            format_to(bad, cap, "PMC%u could not be put back to 0x%llx", i, (unsigned long long)ctr0);
        Status e = c.hw.wrmsr(sel, sel0);
        PMULAB_TRY(s);
        PMULAB_TRY(e);
    }
    return ok_status();
}

void check_writes(const WriteCtx& c, const char* what, const WriteCase* cases, usize n, const char* good) {
    char name[160];
    format_to(name, sizeof name, "%s: %s", kPmiWidth, what);
    char bad[200] = {};
    Status st = ok_status();
    Status s = run_on_measuring(c.hw, &c.mp, c.cpu, [&] { st = write_cases(c, cases, n, bad, sizeof bad); });
    if (s.ok()) s = st;
    if (!s.ok())
        return c.ck.report(s.error().code == Errc::unsupported ? Verdict::skip : Verdict::fail, name, c.cpu,
                           s.error().msg);
    c.ck.reportf(bad[0] ? Verdict::fail : Verdict::pass, name, c.cpu, "width %u (CPUID.0AH:EAX[23:16]): %s",
                 c.info.gp_width, bad[0] ? bad : good);
}

}  // namespace

void check_pmc_writes(Checks& ck, Hw& hw, MeasurePlatform& mp, u32 cpu, const PmuInfo& info) {
    const WriteCtx c{ck, hw, mp, cpu, info};
    const unsigned w = c.info.gp_width;
    const u64 mask = regs::counter_mask(w);
    const u64 sext = (u64(0xffffffff) << 32 | kWriteSigned) & mask;
    const WriteCase legacy[] = {{regs::pmc_msr, kWriteWide, kWriteWide & 0xffffffffull},
                                {regs::pmc_msr, kWriteSigned, sext}};
    char good[200];
    format_to(good, sizeof good, "0x%llx reads 0x%llx, 0x%llx reads 0x%llx on every PMC",
              (unsigned long long)kWriteWide, (unsigned long long)(kWriteWide & 0xffffffffull),
              (unsigned long long)kWriteSigned, (unsigned long long)sext);
    check_writes(c, "IA32_PMCx legacy writes (32 bits, sign-extended)", legacy, 2, good);
    const char* fw = "IA32_A_PMCx full-width writes";
    if (!c.info.full_width_writes) {
        char name[160];
        format_to(name, sizeof name, "%s: %s", kPmiWidth, fw);
        return c.ck.report(Verdict::skip, name, c.cpu,
                           "no full-width writes (IA32_PERF_CAPABILITIES.FW_WRITE[13] = 0)");
    }
    const WriteCase full[] = {{regs::a_pmc_msr, kWriteWide & mask, kWriteWide & mask},
                              {regs::a_pmc_msr, kWriteWide, kFault}};
    format_to(good, sizeof good, "0x%llx reads back, 0x%llx (beyond the width) raises #GP on every PMC",
              (unsigned long long)(kWriteWide & mask), (unsigned long long)kWriteWide);
    check_writes(c, fw, full, 2, good);
}

}  // namespace pmulab
