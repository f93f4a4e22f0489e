// The simulator's noise sources (issue 11, "noise provenance" and item 8): SMIs, the SMI
// counter, IA32_DEBUGCTL.FREEZE_WHILE_SMM and APERF/MPERF on Intel, each stated as
// exact register values.
#include <gtest/gtest.h>

#include "sim/sim_cpu.h"

using namespace sim;
using pmulab::kVectorGP;

namespace {

u8 wr(SimCpu& c, u32 msr, u64 v) {
    Status s = c.wrmsr(msr, v);
    return s.ok() ? 0 : s.error().vector;
}
u64 rd(SimCpu& c, u32 msr) {
    Result<u64> r = c.rdmsr(msr);
    EXPECT_TRUE(r.ok()) << "RDMSR 0x" << std::hex << msr << ": " << r.error().msg;
    return r.ok() ? r.value() : 0;
}
constexpr u64 kFreezeWhileSmm = u64(1) << 14;
constexpr u64 kSmmFrzCap = u64(1) << 12;

// INST_RETIRED.ANY on FIXED_CTR0 (OS), enabled globally.
void count_instructions(SimCpu& c) {
    ASSERT_EQ(wr(c, reg::FIXED_CTR_CTRL, 0x1), 0);
    ASSERT_EQ(wr(c, reg::GLOBAL_CTRL, u64(1) << 32), 0);
}

}  // namespace

TEST(SimNoise, DebugCtlFreezeWhileSmmOnlyWhereEnumerated) {
    SimMachine m = intel_v4_goldmont_plus(1);  // PERF_CAPABILITIES 0x33c5: bit 12 set
    SimCpu& c = m.cpu(0);
    ASSERT_TRUE(c.pmu().freeze_while_smm);
    EXPECT_EQ(rd(c, reg::DEBUGCTL), 0u);
    EXPECT_EQ(wr(c, reg::DEBUGCTL, kFreezeWhileSmm), 0);
    EXPECT_EQ(rd(c, reg::DEBUGCTL), kFreezeWhileSmm);
    EXPECT_EQ(wr(c, reg::DEBUGCTL, u64(1) << 2), kVectorGP);  // reserved
    c.set_perf_capabilities(kGoldmontPlusPerfCaps & ~kSmmFrzCap);
    EXPECT_FALSE(c.pmu().freeze_while_smm);
    EXPECT_EQ(wr(c, reg::DEBUGCTL, kFreezeWhileSmm), kVectorGP);
    EXPECT_EQ(wr(c, reg::DEBUGCTL, 1), 0);  // LBR stays writable
}

TEST(SimNoise, SmiCountsUnlessFrozenAndMsrSmiCountMoves) {
    SimMachine m = intel_v4_goldmont_plus(1);
    SimCpu& c = m.cpu(0);
    count_instructions(c);
    c.set_smi(2, 500);  // every second run()
    c.run(10, {{0xC0, 0x00, 1}});
    EXPECT_EQ(rd(c, reg::FIXED_CTR0), 10u);
    EXPECT_EQ(rd(c, reg::SMI_COUNT), 0u);
    c.run(10, {{0xC0, 0x00, 1}});  // the SMI: 500 instructions of SMM code counted
    EXPECT_EQ(rd(c, reg::FIXED_CTR0), 520u);
    EXPECT_EQ(rd(c, reg::SMI_COUNT), 1u);
    ASSERT_EQ(wr(c, reg::DEBUGCTL, kFreezeWhileSmm), 0);
    c.run(10, {{0xC0, 0x00, 1}});
    c.run(10, {{0xC0, 0x00, 1}});  // the SMI: counters frozen in SMM
    EXPECT_EQ(rd(c, reg::FIXED_CTR0), 540u);
    EXPECT_EQ(rd(c, reg::SMI_COUNT), 2u);
    EXPECT_EQ(wr(c, reg::SMI_COUNT, 0), kVectorGP);  // read-only
}

TEST(SimNoise, SmiCountAbsentBeforeV3AndUnderTcg) {
    SimMachine v2 = intel_v2(1);
    EXPECT_EQ(v2.cpu(0).rdmsr(reg::SMI_COUNT).error().vector, kVectorGP);
    SimMachine tcg = qemu_tcg_intel(1);  // unknown MSRs read 0
    EXPECT_EQ(rd(tcg.cpu(0), reg::SMI_COUNT), 0u);
}

TEST(SimNoise, IntelAperfMperfFollowLeaf06) {
    IntelCpuidSpec sp;
    sp.leaf_0a = {0x07300404, 0, 0, 0x00008603};
    sp.leaf_06_ecx = 1;
    SimMachine m = intel_machine(sp, {1, 1, 1}, kGoldmontPlusPerfCaps);
    SimCpu& c = m.cpu(0);
    c.run(100);
    EXPECT_EQ(rd(c, reg::APERF), 100u);
    EXPECT_EQ(rd(c, reg::MPERF), 100u);
    c.set_smi(1, 40);
    ASSERT_EQ(wr(c, reg::DEBUGCTL, kFreezeWhileSmm), 0);
    c.run(10);  // APERF/MPERF advance in SMM too (the core is in C0)
    EXPECT_EQ(rd(c, reg::APERF), 150u);
    sp.leaf_06_ecx = 0;
    SimMachine n = intel_machine(sp, {1, 1, 1}, kGoldmontPlusPerfCaps);
    EXPECT_EQ(n.cpu(0).rdmsr(reg::APERF).error().vector, kVectorGP);
}
