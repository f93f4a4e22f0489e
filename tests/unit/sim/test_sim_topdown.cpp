// The simulated CPU's TopDown model (sim_topdown.cpp): SLOTS and IA32_PERF_METRICS as
// the SDM describes them, stated as exact register values.
#include <gtest/gtest.h>

#include "sim/sim_topdown.h"

using namespace sim;
using pmulab::kVectorGP;

namespace {

u8 vec_of(const Status& s) { return s.ok() ? 0 : s.error().vector; }
u8 wr(SimCpu& c, u32 msr, u64 v) { return vec_of(c.wrmsr(msr, v)); }
u64 rd(SimCpu& c, u32 msr) {
    Result<u64> r = c.rdmsr(msr);
    EXPECT_TRUE(r.ok()) << r.error().msg;
    return r.ok() ? r.value() : 0;
}

constexpr u32 kFixedCtr3 = reg::FIXED_CTR0 + 3;
constexpr u64 kEnMetrics = 1ull << 48;

// FIXED_CTR3 counting at ring 0, and (with metrics) GLOBAL_CTRL[48].
void start_slots(SimCpu& c, bool metrics = true) {
    ASSERT_EQ(wr(c, reg::FIXED_CTR_CTRL, 0x1ull << 12), 0);
    ASSERT_EQ(wr(c, reg::GLOBAL_CTRL, (1ull << 35) | (metrics ? kEnMetrics : 0)), 0);
}

// Ice Lake-like: 5 slots per cycle, 2 retiring, 1 bad speculation, 1 FE, 1 BE.
TopdownBudget icl_budget() {
    TopdownBudget b;
    b.slots_per_cycle = 5;
    b.retiring = 2;
    b.bad_spec = 1;
    b.fe_bound = 1;
    b.be_bound = 1;
    return b;
}

u64 byte(u64 v, unsigned i) { return (v >> (8 * i)) & 0xff; }

}  // namespace

TEST(SimTopdown, PerfMetricsExistsOnlyWithPerfCapabilities15AndFixedCounter3) {
    SimMachine icl = intel_icelake(1);
    EXPECT_TRUE(icl.cpu(0).pmu().perf_metrics);
    EXPECT_FALSE(icl.cpu(0).pmu().perf_metrics_l2);
    EXPECT_TRUE(icl.cpu(0).msr_exists(reg::PERF_METRICS));
    SimMachine skl = intel_skylake(1);
    EXPECT_FALSE(skl.cpu(0).pmu().perf_metrics);
    EXPECT_FALSE(skl.cpu(0).msr_exists(reg::PERF_METRICS));
    Result<u64> absent = skl.cpu(0).rdmsr(reg::PERF_METRICS);
    ASSERT_FALSE(absent.ok());
    EXPECT_EQ(absent.error().vector, kVectorGP);
    SimMachine spr = intel_sapphire_rapids(1);
    EXPECT_TRUE(spr.cpu(0).pmu().perf_metrics_l2);
    // Alder Lake: PERF_METRICS on the P cores only.
    SimMachine adl = intel_alder_lake();
    EXPECT_TRUE(adl.cpu(0).pmu().perf_metrics);
    EXPECT_TRUE(adl.cpu(0).pmu().perf_metrics_l2);
    EXPECT_FALSE(adl.cpu(4).pmu().perf_metrics);
    // GLOBAL_CTRL[48] is writable only where PERF_METRICS exists.
    EXPECT_EQ(wr(icl.cpu(0), reg::GLOBAL_CTRL, kEnMetrics), 0);
    EXPECT_EQ(wr(skl.cpu(0), reg::GLOBAL_CTRL, kEnMetrics), kVectorGP);
}

TEST(SimTopdown, FractionsOfSlotsSumTo0xFF) {
    SimMachine m = intel_icelake(1);
    SimCpu& c = m.cpu(0);
    c.set_topdown(icl_budget());
    start_slots(c);
    c.run(1000);
    EXPECT_EQ(rd(c, kFixedCtr3), 5000u);
    u64 v = rd(c, reg::PERF_METRICS);
    // 2/5, 1/5, 1/5, 1/5 of 255: exact.
    EXPECT_EQ(v, 0x333333'66u);
    EXPECT_EQ(byte(v, 0) + byte(v, 1) + byte(v, 2) + byte(v, 3), 0xffu);
    // Uneven fractions: 1/3 each of three parts -> 85 each; 0 for the fourth.
    SimMachine m2 = intel_icelake(1);
    TopdownBudget b;
    b.slots_per_cycle = 6;
    b.retiring = 1;
    b.bad_spec = 0;
    b.fe_bound = 2;
    b.be_bound = 3;
    m2.cpu(0).set_topdown(b);
    start_slots(m2.cpu(0));
    m2.cpu(0).run(7);
    u64 w = rd(m2.cpu(0), reg::PERF_METRICS);
    // 255/6 = 42.5, 85, 127.5: floors 42, 85, 127 (254), the last unit to the largest
    // remainder (0.5 ties: the lowest byte, retiring).
    EXPECT_EQ(byte(w, 0), 43u);
    EXPECT_EQ(byte(w, 1), 0u);
    EXPECT_EQ(byte(w, 2), 85u);
    EXPECT_EQ(byte(w, 3), 127u);
}

TEST(SimTopdown, CountsOnlyWhileFixedCounter3AndEnPerfMetricsAreOn) {
    SimMachine m = intel_icelake(1);
    SimCpu& c = m.cpu(0);
    c.set_topdown(icl_budget());
    start_slots(c, /*metrics=*/false);
    c.run(100);
    EXPECT_EQ(rd(c, kFixedCtr3), 500u);
    EXPECT_EQ(rd(c, reg::PERF_METRICS), 0u);
    EXPECT_EQ(c.topdown_count(0), 0u);
    ASSERT_EQ(wr(c, reg::GLOBAL_CTRL, kEnMetrics), 0);  // metrics without FIXED_CTR3
    c.run(100);
    EXPECT_EQ(rd(c, reg::PERF_METRICS), 0u);
    start_slots(c);
    c.run(100);
    EXPECT_EQ(c.topdown_count(0), 200u);
    EXPECT_EQ(c.topdown_count(3), 100u);
}

TEST(SimTopdown, WriteOfZeroToPerfMetricsOrFixedCtr3Resets) {
    SimMachine m = intel_icelake(1);
    SimCpu& c = m.cpu(0);
    c.set_topdown(icl_budget());
    start_slots(c);
    c.run(10);
    EXPECT_NE(rd(c, reg::PERF_METRICS), 0u);
    ASSERT_EQ(wr(c, reg::PERF_METRICS, 0), 0);
    EXPECT_EQ(rd(c, reg::PERF_METRICS), 0u);
    EXPECT_EQ(rd(c, kFixedCtr3), 50u);  // SLOTS itself is not reset by PERF_METRICS
    c.run(10);
    EXPECT_NE(c.topdown_count(0), 0u);
    ASSERT_EQ(wr(c, kFixedCtr3, 0), 0);
    EXPECT_EQ(c.topdown_count(0), 0u);
    EXPECT_EQ(rd(c, reg::PERF_METRICS), 0u);
    // A nonzero write is a restore: it reads back as written.
    ASSERT_EQ(wr(c, reg::PERF_METRICS, 0x33333366), 0);
    EXPECT_EQ(rd(c, reg::PERF_METRICS), 0x33333366u);
    // Bytes 4-7 are reserved without level 2.
    EXPECT_EQ(wr(c, reg::PERF_METRICS, 1ull << 32), kVectorGP);
}

TEST(SimTopdown, Level2BytesOnSapphireRapidsNeverExceedTheirParent) {
    SimMachine m = intel_sapphire_rapids(1);
    SimCpu& c = m.cpu(0);
    TopdownBudget b;
    b.slots_per_cycle = 5;
    b.retiring = 2;
    b.heavy_ops = 1;
    b.bad_spec = 1;
    b.br_mispredict = 1;
    b.fe_bound = 1;
    b.fetch_lat = 0;
    b.be_bound = 1;
    b.mem_bound = 1;
    c.set_topdown(b);
    start_slots(c);
    c.run(40);
    u64 v = rd(c, reg::PERF_METRICS);
    EXPECT_EQ(v, 0x33'00'33'33'33333366ull);
    for (unsigned i = 0; i < 4; ++i) EXPECT_LE(byte(v, 4 + i), byte(v, i));
}

TEST(SimTopdown, RdpmcEcx29ReadsPerfMetrics) {
    SimMachine m = intel_icelake(1);
    SimCpu& c = m.cpu(0);
    c.set_topdown(icl_budget());
    start_slots(c);
    c.run(3);
    Result<u64> r = c.rdpmc(1u << 29);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r.value(), 0x33333366u);
    EXPECT_FALSE(c.rdpmc((1u << 29) | 1).ok());
    Result<u64> s = c.rdpmc(0x40000003);
    ASSERT_TRUE(s.ok());
    EXPECT_EQ(s.value(), 15u);
    SimMachine skl = intel_skylake(1);
    EXPECT_FALSE(skl.cpu(0).rdpmc(1u << 29).ok());
}

TEST(SimTopdown, OverflowOfSlotsSetsStatus48AndStatusResetClearsIt) {
    SimMachine m = intel_icelake(1);
    SimCpu& c = m.cpu(0);
    c.set_topdown(icl_budget());
    c.poke(kFixedCtr3, (1ull << 48) - 2);
    start_slots(c);
    c.run(1);
    EXPECT_EQ(rd(c, reg::GLOBAL_STATUS), (1ull << 35) | (1ull << 48));
    ASSERT_EQ(wr(c, reg::GLOBAL_OVF_CTRL, 1ull << 48), 0);
    EXPECT_EQ(rd(c, reg::GLOBAL_STATUS), 1ull << 35);
}

TEST(SimTopdown, CategoryEventsOnGpCountersAndSkylakeInputs) {
    // Skylake: no PERF_METRICS; the GP events Intel's formulas use count the budget.
    SimMachine m = intel_skylake(1);
    SimCpu& c = m.cpu(0);
    TopdownBudget b;
    b.slots_per_cycle = 4;
    b.retiring = 2;
    b.bad_spec = 1;
    b.fe_bound = 1;
    b.be_bound = 0;
    c.set_topdown(b);
    constexpr u64 en = evtsel::OS | evtsel::EN;
    ASSERT_EQ(wr(c, reg::PERFEVTSEL0, evtsel::make(0x9C, 0x01, en)), 0);
    ASSERT_EQ(wr(c, reg::PERFEVTSEL0 + 1, evtsel::make(0xC2, 0x02, en)), 0);
    ASSERT_EQ(wr(c, reg::PERFEVTSEL0 + 2, evtsel::make(0x0E, 0x01, en)), 0);
    ASSERT_EQ(wr(c, reg::PERFEVTSEL0 + 3, evtsel::make(0x3C, 0x00, en)), 0);
    c.run(100);
    EXPECT_EQ(rd(c, reg::PMC0), 100u);      // IDQ_UOPS_NOT_DELIVERED.CORE
    EXPECT_EQ(rd(c, reg::PMC0 + 1), 200u);  // UOPS_RETIRED.RETIRE_SLOTS
    EXPECT_EQ(rd(c, reg::PMC0 + 2), 300u);  // UOPS_ISSUED.ANY
    EXPECT_EQ(rd(c, reg::PMC0 + 3), 100u);  // cycles
}

TEST(SimTopdown, BodyBudgetReplacesTheBaseWhileInBody) {
    SimMachine m = intel_icelake(1);
    SimCpu& c = m.cpu(0);
    c.set_topdown(icl_budget());
    TopdownBudget body;
    body.slots_per_cycle = 5;
    body.retiring = 5;
    c.set_topdown_body(body);
    start_slots(c);
    c.run(10);
    c.set_in_body(true);
    c.run(10);
    c.set_in_body(false);
    EXPECT_EQ(c.topdown_count(0), 20u + 50u);
    EXPECT_EQ(c.topdown_count(1), 10u);
}

TEST(SimTopdown, FixedCounters4To6CountBadSpeculationFrontendRetiring) {
    // SDM Vol. 3B "Fixed-Function Performance Counters": fixed counters 4-6 count
    // TOPDOWN_BAD_SPECULATION, TOPDOWN_FE_BOUND, TOPDOWN_RETIRING where CPUID.23H enumerates
    // them (intel_v6: fixed 0-2,4-6).
    SimMachine m = intel_v6();
    SimCpu& c = m.cpu(0);
    TopdownBudget b;
    b.slots_per_cycle = 8;
    b.retiring = 4;
    b.bad_spec = 1;
    b.fe_bound = 1;
    b.be_bound = 2;
    c.set_topdown(b);
    ASSERT_EQ(wr(c, reg::FIXED_CTR_CTRL, (0x1ull << 16) | (0x1ull << 20) | (0x1ull << 24)), 0);
    ASSERT_EQ(wr(c, reg::GLOBAL_CTRL, (1ull << 36) | (1ull << 37) | (1ull << 38)), 0);
    c.run(100);
    EXPECT_EQ(rd(c, reg::FIXED_CTR0 + 4), 100u);  // bad speculation
    EXPECT_EQ(rd(c, reg::FIXED_CTR0 + 5), 100u);  // frontend bound
    EXPECT_EQ(rd(c, reg::FIXED_CTR0 + 6), 400u);  // retiring
}

TEST(SimTopdown, GracemontEcoreCountsItsOwnEncodings) {
    // Alder Lake E core (core type 20H, 06_97H): Intel perfmon's Gracemont events 71.00
    // FE bound, 73.00 bad speculation, 74.00 BE bound, C2.00 retiring.
    SimMachine m = intel_alder_lake();
    SimCpu& c = m.cpu(4);
    EXPECT_EQ(sim_atom_core(c.snapshot()), SimAtom::gracemont);
    EXPECT_EQ(sim_atom_core(m.cpu(0).snapshot()), SimAtom::none);
    EXPECT_EQ(default_topdown_width(c), 5u);
    TopdownBudget b;
    b.slots_per_cycle = 5;
    b.retiring = 2;
    b.bad_spec = 1;
    b.fe_bound = 1;
    b.be_bound = 1;
    c.set_topdown(b);
    constexpr u64 en = evtsel::OS | evtsel::EN;
    ASSERT_EQ(wr(c, reg::PERFEVTSEL0, evtsel::make(0x71, 0x00, en)), 0);
    ASSERT_EQ(wr(c, reg::PERFEVTSEL0 + 1, evtsel::make(0x73, 0x00, en)), 0);
    ASSERT_EQ(wr(c, reg::PERFEVTSEL0 + 2, evtsel::make(0x74, 0x00, en)), 0);
    ASSERT_EQ(wr(c, reg::PERFEVTSEL0 + 3, evtsel::make(0xC2, 0x00, en)), 0);
    ASSERT_EQ(wr(c, reg::GLOBAL_CTRL, 0xF), 0);
    c.run(100);
    EXPECT_EQ(rd(c, reg::PMC0), 100u);
    EXPECT_EQ(rd(c, reg::PMC0 + 1), 100u);
    EXPECT_EQ(rd(c, reg::PMC0 + 2), 100u);
    EXPECT_EQ(rd(c, reg::PMC0 + 3), 200u);
}

TEST(SimTopdown, Zen4PipelineUtilisationEvents) {
    // PMCx1A0 (unit masks 01h frontend, 1Eh backend, 60h SMT contention), PMCx0AA unit
    // mask 07h (ops dispatched: retiring + bad speculation), PMCx0C1 (ops retired).
    SimMachine m = amd_zen4(1);
    SimCpu& c = m.cpu(0);
    EXPECT_EQ(default_topdown_width(c), 6u);
    c.set_topdown(default_topdown_budget(6));  // 3 retiring, 1 bad, 1 FE, 1 BE
    auto ctl = [](u32 event, u32 umask) {
        return u64(event & 0xFF) | (u64(umask) << 8) | (1ull << 17) | (1ull << 22) | (u64(event >> 8) << 32);
    };
    const u32 ev[6][2] = {{0x1A0, 0x01}, {0x1A0, 0x1E}, {0x1A0, 0x60}, {0x0AA, 0x07}, {0x0C1, 0x00}, {0x076, 0x00}};
    for (u32 i = 0; i < 6; ++i) ASSERT_EQ(wr(c, reg::AMD_EXT_CTL0 + 2 * i, ctl(ev[i][0], ev[i][1])), 0);
    ASSERT_EQ(wr(c, reg::AMD_GLOBAL_CTL, 0x3F), 0);
    c.run(100, {{0x76, 0x00, 1}});
    const u64 want[6] = {100, 100, 0, 400, 300, 100};
    for (u32 i = 0; i < 6; ++i) EXPECT_EQ(rd(c, reg::AMD_EXT_CTL0 + 2 * i + 1), want[i]) << i;
}

TEST(SimTopdown, DefaultBudgetsPerCoreType) {
    TopdownBudget b = default_topdown_budget(8);
    EXPECT_EQ(b.retiring + b.bad_spec + b.fe_bound + b.be_bound, 8u);
    EXPECT_EQ(b.retiring, 4u);
    EXPECT_EQ(b.be_bound, 2u);
    EXPECT_EQ(default_topdown_budget(5).be_bound, 1u);
    EXPECT_EQ(default_topdown_budget(3).slots_per_cycle, 0u);  // too narrow: no budget
    EXPECT_EQ(default_topdown_width(qemu_tcg_intel(1).cpu(0)), 0u);
    EXPECT_EQ(default_topdown_width(amd_zen3(1).cpu(0)), 0u);  // no PMCx1A0 before Zen 4
}
