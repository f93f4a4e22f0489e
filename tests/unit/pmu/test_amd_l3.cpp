// AMD's L3 PMU (src/pmu/amd_l3.h, x86/amd_l3_regs.h): the configuration fields per family,
// where it is usable (amd_l3_support), detect on the simulated models, the rounds over the
// slices, and the exact restore of every register it writes.
#include <gtest/gtest.h>

#include "pmu/amd_l3.h"
#include "sim/sim_builders.h"
#include "x86/msr_trace.h"

using namespace pmulab;

TEST(AmdL3Regs, FieldsPerFamily) {
    regs::AmdL3CfgF17 a(0xFF0400000040FF04ull);
    EXPECT_EQ(a.event(), 4u);
    EXPECT_EQ(a.umask(), 0xFFu);
    EXPECT_TRUE(a.en());
    EXPECT_EQ(a.slice_mask(), 4u);
    EXPECT_EQ(a.thread_mask(), 0xFFu);
    regs::AmdL3CfgF19 b(0x0306CC000040FF04ull);
    EXPECT_EQ(b.slice_id(), 6u);
    EXPECT_EQ(b.thread_mask(), 3u);
    EXPECT_TRUE(b.en_all_cores());
    EXPECT_TRUE(b.en_all_slices());
    EXPECT_EQ(b.core_id(), 3u);
    EXPECT_EQ(regs::kAmdL3CfgF17Bits, 0xFF0F00000040FFFFull);
    EXPECT_EQ(regs::kAmdL3CfgF19Bits, 0x0307DC000040FFFFull);
}

namespace {
CpuIdentity amd(u32 family, bool hypervisor = false) {
    CpuIdentity id;
    id.vendor = Vendor::amd;
    id.family = family;
    id.hypervisor = hypervisor;
    return id;
}
}  // namespace

TEST(AmdL3Support, FamiliesGuestsAndTheCpuidBit) {
    AmdL3Support s = amd_l3_support(amd(0x17), true);
    EXPECT_EQ(s.slices, 4u);
    EXPECT_TRUE(s.f17);
    for (u32 f : {0x19u, 0x1Au}) {
        s = amd_l3_support(amd(f), true);
        EXPECT_EQ(s.slices, 8u);
        EXPECT_FALSE(s.f17);
    }
    EXPECT_EQ(amd_l3_support(amd(0x19), false).slices, 0u);
    EXPECT_STREQ(amd_l3_support(amd(0x19), false).why_not,
                 "CPUID Fn8000_0001_ECX[28] (PerfCtrExtLLC) is clear: no L3 performance counters");
    EXPECT_STREQ(amd_l3_support(amd(0x19, true), true).why_not,
                 "a hypervisor's guest: the L3 PMU's MSRs (ChL3PmcCfg, C001_0230H) are not virtualized");
    EXPECT_EQ(amd_l3_support(amd(0x15), true).slices, 0u);
    CpuIdentity intel;
    intel.vendor = Vendor::intel;
    EXPECT_EQ(amd_l3_support(intel, true).slices, 0u);
}

namespace {
CpuIdentity identity(sim::SimMachine& m) {
    CpuidSnapshot snap;
    capture_cpuid(m, &snap);
    return decode_cpuid(snap).id;
}
}  // namespace

TEST(AmdL3Pmu, DetectOnTheModels) {
    sim::SimMachine z1 = sim::amd_zen1(), z3 = sim::amd_zen3();
    AmdL3Pmu a, b;
    ASSERT_TRUE(a.detect(z1, identity(z1)).ok());
    EXPECT_EQ(a.boxes(), 4u);
    EXPECT_EQ(a.rounds(), 1u);
    EXPECT_EQ(a.complex_shift(), 3u);
    EXPECT_EQ(a.config_for(2), 0xFF0400000000FF04ull);
    ASSERT_TRUE(b.detect(z3, identity(z3)).ok());
    EXPECT_EQ(b.boxes(), 8u);
    EXPECT_EQ(b.rounds(), 2u);
    EXPECT_EQ(b.complex_shift(), 4u);
    EXPECT_STREQ(b.complex_from(), "the family's: 8 cores x 2 threads per CCD (no CPUID 8000_001DH)");
    EXPECT_EQ(b.config_for(6), 0x030680000000FF04ull);  // SliceId 6, EnAllCores, ThreadMask 3
}

TEST(AmdL3Pmu, RoundsAndAnExactRestore) {
    sim::SimMachine m = sim::amd_zen3(1);
    u64 before[12];
    for (u32 i = 0; i < 6; ++i) {
        ASSERT_TRUE(m.wrmsr(0xC0010230 + 2 * i, i % 2 ? 0x4001 | (u64(i) << 48) : 0).ok());
        ASSERT_TRUE(m.wrmsr(0xC0010231 + 2 * i, 100 + i).ok());
    }
    for (u32 k = 0; k < 12; ++k) before[k] = m.rdmsr(0xC0010230 + k).value();
    AmdL3Pmu p;
    ASSERT_TRUE(p.detect(m, identity(m)).ok());
    ASSERT_TRUE(p.begin(m).ok());
    EXPECT_EQ(p.round(), 0u);
    EXPECT_TRUE(p.counted(3) && !p.counted(4));
    EXPECT_EQ(m.rdmsr(0xC0010236).value(), p.config_for(3) | (u64(1) << 22));
    ASSERT_TRUE(p.select_round(m, 1).ok());
    EXPECT_TRUE(p.counted(7) && !p.counted(0));
    EXPECT_EQ(m.rdmsr(0xC0010230).value(), p.config_for(4) | (u64(1) << 22));
    u64 out[8] = {};
    ASSERT_TRUE(p.read(m, out).ok());
    ASSERT_TRUE(p.end().ok());
    ASSERT_TRUE(p.end().ok());  // idempotent
    for (u32 k = 0; k < 12; ++k) EXPECT_EQ(m.rdmsr(0xC0010230 + k).value(), before[k]) << k;
}

TEST(AmdL3Pmu, TraceNames) {
    TraceNames n;
    n.vendor = Vendor::amd;
    StrBuf a, b, c;
    trace_reg_name(n, TraceOp::wrmsr, 0xC0010230, a);
    trace_reg_name(n, TraceOp::rdmsr, 0xC001023B, b);
    EXPECT_STREQ(a.c_str(), "ChL3PmcCfg0");
    EXPECT_STREQ(b.c_str(), "ChL3Pmc5");
    n.vendor = Vendor::intel;
    trace_reg_name(n, TraceOp::wrmsr, 0xC0010230, c);
    EXPECT_STREQ(c.c_str(), "MSR 0xc0010230");
}
