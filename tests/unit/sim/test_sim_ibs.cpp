// The simulated AMD Instruction-Based Sampling (sim_ibs.h): which CPUs have it, the op
// and fetch counters, what a tagged op leaves in the IBS MSRs, and the interrupt through
// the extended LVT entry IBS_CTL names. The executable specification of sim_ibs.h.
#include <gtest/gtest.h>

#include "sim/sim_cpu.h"
#include "support/test_platform.h"

using namespace sim;

namespace {

u8 wr(SimCpu& c, u32 msr, u64 v) {
    Status s = c.wrmsr(msr, v);
    return s.ok() ? 0 : s.error().vector;
}

// IbsOpCtl: MaxCnt = period >> 4, En (17), CntCtl (19) for ops.
constexpr u64 op_ctl(u64 period, bool ops) { return (period >> 4) | (u64(1) << 17) | (ops ? u64(1) << 19 : 0); }
constexpr u64 kOpVal = u64(1) << 18;

// One instruction retired through the executor's API: its op, then its batch.
void one(SimCpu& c, const OpInfo& op, u64 stall = 0) {
    c.op(op);
    c.retire(Retired{.instructions = 1, .stall_cycles = stall});
}

OpInfo alu(u64 rip) { return OpInfo{.rip = rip}; }

}  // namespace

TEST(SimIbs, OnlyCpusThatEnumerateItHaveIt) {
    SimMachine zen4 = amd_zen4(1);
    EXPECT_TRUE(zen4.cpu(0).ibs().present());
    EXPECT_EQ(zen4.cpu(0).ibs().features(), 0xBFFu);
    EXPECT_EQ(zen4.cpu(0).peek(reg::IBS_CTL), 0x101u);  // LVTOffsetVal, offset 1
    SimMachine gr = pmutest::dump_machine("AuthenticAMD0B40F40_K20_GraniteRidge_02_CPUID.txt");
    EXPECT_EQ(gr.cpu(0).ibs().features(), 0x81BFFu);
    // Zen 3's snapshot sets Fn8000_0001_ECX[10] but has no Fn8000_001B data; Intel has none.
    for (SimMachine (*make)(u32) : {amd_zen3, intel_skylake, qemu_tcg}) {
        SimMachine m = make(1);
        EXPECT_FALSE(m.cpu(0).ibs().present());
        EXPECT_FALSE(m.cpu(0).msr_exists(reg::IBS_OP_CTL));
    }
    EXPECT_EQ(amd_zen3(1).cpu(0).ext_lvt_count(), 4u);  // the extended APIC space is AMD's
    EXPECT_EQ(intel_skylake(1).cpu(0).ext_lvt_count(), 0u);
}

TEST(SimIbs, ReservedBitsAndTheReadOnlyIbsCtlFault) {
    SimMachine m = amd_zen4(1);
    SimCpu& c = m.cpu(0);
    EXPECT_EQ(wr(c, reg::IBS_CTL, 0x100), pmulab::kVectorGP);
    EXPECT_EQ(wr(c, reg::IBS_OP_CTL, u64(1) << 27), pmulab::kVectorGP);  // reserved 31:27
    EXPECT_EQ(wr(c, reg::IBS_OP_CTL, u64(1) << 60), pmulab::kVectorGP);
    EXPECT_EQ(wr(c, reg::IBS_OP_CTL, op_ctl(0x7FFFFF0, true) | (u64(0x7F) << 20)), 0);  // OpCntExt
    EXPECT_EQ(wr(c, reg::IBS_FETCH_CTL, u64(1) << 63), pmulab::kVectorGP);
}

TEST(SimIbs, TheOpCounterTagsEveryPeriodthOpAndInterruptsThroughTheExtendedLvt) {
    SimMachine m = amd_zen4(1);
    SimCpu& c = m.cpu(0);
    c.set_lvt_ext(1, SimCpu::kLvtDeliveryNmi);
    ASSERT_EQ(wr(c, reg::IBS_OP_CTL, op_ctl(16, true)), 0);
    EXPECT_TRUE(c.needs_each_instruction());
    for (u64 i = 1; i < 16; ++i) one(c, alu(0x1000 + i), 3);  // cycles do not matter: ops
    EXPECT_FALSE(c.take_nmi());
    EXPECT_EQ(c.peek(reg::IBS_OP_CTL) >> 32, 15u);  // IbsOpCurCnt reads the counter
    one(c, alu(0x2000), 3);
    EXPECT_TRUE(c.take_nmi());
    // IbsOpCurCnt[6:0] random after the rollover: splitmix64's first value of seed 0
    // (0xE220A8397B1DCDAF) & 0x7F.
    EXPECT_EQ(c.peek(reg::IBS_OP_CTL), op_ctl(16, true) | kOpVal | (u64(0x2F) << 32));
    EXPECT_EQ(c.peek(reg::IBS_OP_RIP), 0x2000u);
    EXPECT_EQ(c.peek(reg::IBS_OP_DATA), u64(4) << 16);  // TagToRetCtr: the op's 4 cycles
    EXPECT_EQ(c.peek(reg::IBS_OP_DATA3), 0u);           // no memory access
    // While IbsOpVal is set nothing counts or tags; not masked by the delivery.
    EXPECT_FALSE(c.needs_each_instruction());
    for (u64 i = 0; i < 40; ++i) one(c, alu(0x3000));
    EXPECT_FALSE(c.take_nmi());
    EXPECT_EQ(c.lvt_ext(1), SimCpu::kLvtDeliveryNmi);
    // Re-armed (Val clear, CurCnt 0): the 16th op from here.
    ASSERT_EQ(wr(c, reg::IBS_OP_CTL, op_ctl(16, true)), 0);
    for (u64 i = 0; i < 16; ++i) one(c, alu(0x4000 + i));
    EXPECT_TRUE(c.take_nmi());
    EXPECT_EQ(c.peek(reg::IBS_OP_RIP), 0x400Fu);
    EXPECT_EQ(c.ibs().samples(), 2u);
    EXPECT_EQ(c.nmis_delivered(), 2u);
}

TEST(SimIbs, CyclesModeCountsTheCostModelsCycles) {
    SimMachine m = amd_zen4(1);
    SimCpu& c = m.cpu(0);
    c.set_lvt_ext(1, SimCpu::kLvtDeliveryNmi);
    ASSERT_EQ(wr(c, reg::IBS_OP_CTL, op_ctl(32, false)), 0);
    one(c, alu(0x10), 9);  // 10 cycles
    one(c, alu(0x20), 9);  // 20
    EXPECT_FALSE(c.take_nmi());
    one(c, alu(0x30), 199);  // a 200-cycle op reaches 32: tagged
    EXPECT_TRUE(c.take_nmi());
    EXPECT_EQ(c.peek(reg::IBS_OP_RIP), 0x30u);
}

TEST(SimIbs, ALoadLeavesItsAddressMissAndLatency) {
    SimMachine m = amd_zen4(1);
    SimCpu& c = m.cpu(0);
    c.set_lvt_ext(1, SimCpu::kLvtDeliveryNmi);
    ASSERT_EQ(wr(c, reg::IBS_OP_CTL, op_ctl(16, true)), 0);
    for (int i = 0; i < 15; ++i) one(c, alu(0x100));
    one(c, OpInfo{.rip = 0x140, .load = true, .data_addr = 0xABC0, .served = 3, .miss_latency = 200}, 200);
    EXPECT_TRUE(c.take_nmi());
    // LdOp, DcMiss, DcLinAddrValid, DcPhyAddrValid, L2Miss; DcMissLat 200.
    EXPECT_EQ(c.peek(reg::IBS_OP_DATA3),
              0x1 | 0x80 | (u64(1) << 17) | (u64(1) << 18) | (u64(1) << 20) | (u64(200) << 32));
    EXPECT_EQ(c.peek(reg::IBS_DC_LINAD), 0xABC0u);
    EXPECT_EQ(c.peek(reg::IBS_DC_PHYSAD), 0xABC0u);
    // A store that hit: StOp and the address, no miss, no latency.
    ASSERT_EQ(wr(c, reg::IBS_OP_CTL, op_ctl(16, true)), 0);
    for (int i = 0; i < 15; ++i) one(c, alu(0x100));
    one(c, OpInfo{.rip = 0x150, .store = true, .data_addr = 0xDEF8});
    EXPECT_TRUE(c.take_nmi());
    EXPECT_EQ(c.peek(reg::IBS_OP_DATA3), 0x2 | (u64(1) << 17) | (u64(1) << 18));
    EXPECT_EQ(c.peek(reg::IBS_DC_LINAD), 0xDEF8u);
}

TEST(SimIbs, AMaskedEntryDeliversNothingAndTheSampleStaysValid) {
    SimMachine m = amd_zen4(1);
    SimCpu& c = m.cpu(0);
    ASSERT_EQ(c.lvt_ext(1), SimCpu::kLvtMasked);  // masked at reset
    ASSERT_EQ(wr(c, reg::IBS_OP_CTL, op_ctl(16, true)), 0);
    for (int i = 0; i < 16; ++i) one(c, alu(0x100));
    EXPECT_FALSE(c.take_nmi());
    EXPECT_EQ(c.peek(reg::IBS_OP_CTL) & kOpVal, kOpVal);
    // Another entry than IBS_CTL's does not deliver it either.
    c.set_lvt_ext(0, SimCpu::kLvtDeliveryNmi);
    ASSERT_EQ(wr(c, reg::IBS_OP_CTL, op_ctl(16, true)), 0);
    for (int i = 0; i < 16; ++i) one(c, alu(0x100));
    EXPECT_FALSE(c.take_nmi());
}

TEST(SimIbs, FetchSamplesGiveTheAddressHitOrMissAndLatency) {
    SimMachine m = amd_zen4(1);
    SimCpu& c = m.cpu(0);
    c.set_lvt_ext(1, SimCpu::kLvtDeliveryNmi);
    const u64 en = (u64(16) >> 4) | (u64(1) << 48);
    ASSERT_EQ(wr(c, reg::IBS_FETCH_CTL, en), 0);
    for (int i = 0; i < 15; ++i) one(c, alu(0x1000));
    one(c, alu(0x2008));  // the first fetch of line 0x2000: an instruction-cache miss
    EXPECT_TRUE(c.take_nmi());
    // Val, Comp, IcMiss, PhyAddrValid; IbsFetchLat 16.
    const u64 val = (u64(1) << 49) | (u64(1) << 50) | (u64(1) << 52);
    EXPECT_EQ(c.peek(reg::IBS_FETCH_CTL), en | val | (u64(1) << 51) | (u64(IbsUnit::kFetchMissLatency) << 32));
    EXPECT_EQ(c.peek(reg::IBS_FETCH_LINAD), 0x2008u);
    ASSERT_EQ(wr(c, reg::IBS_FETCH_CTL, en), 0);
    for (int i = 0; i < 16; ++i) one(c, alu(0x1000));  // line 0x1000 fetched before: a hit
    EXPECT_TRUE(c.take_nmi());
    EXPECT_EQ(c.peek(reg::IBS_FETCH_CTL), en | val | (u64(IbsUnit::kFetchHitLatency) << 32));
    EXPECT_EQ(c.peek(reg::IBS_FETCH_LINAD), 0x1000u);
}
