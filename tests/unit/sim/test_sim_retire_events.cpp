// What a batch of retired instructions (SimCpu::retire, the executor's API) counts in
// each PMU family's own encodings: docs/sim.md "Events" stated as exact counts. One batch
// for all of them: a loop's worth of branches of every kind, loads served by every level
// of the memory hierarchy, and the stall cycles of the cost model (sim_costs.h).
#include <gtest/gtest.h>

#include <functional>

#include "sim/sim_costs.h"
#include "sim/sim_cpu.h"
#include "sim/sim_netburst.h"
#include "sim/sim_topdown.h"

using namespace sim;

namespace {

u8 vec_of(const Status& s) { return s.ok() ? 0 : s.error().vector; }
u8 wr(SimCpu& c, u32 msr, u64 v) { return vec_of(c.wrmsr(msr, v)); }
u64 rd(SimCpu& c, u32 msr) {
    Result<u64> r = c.rdmsr(msr);
    EXPECT_TRUE(r.ok()) << "RDMSR 0x" << std::hex << msr << ": " << r.error().msg;
    return r.ok() ? r.value() : 0;
}

constexpr u64 kOsEn = evtsel::OS | evtsel::EN;

// 100 instructions: 20 branches (12 conditional, 7 of them taken; 2 near calls, 2 near
// returns, 3 near jumps of which 1 indirect, 1 far), 30 loads (20 served by L1D, 5 by L2,
// 3 by L3, 2 by memory) and 10 stores.
Retired batch() {
    Retired r{.instructions = 100,
              .branches = 20,
              .cond = 12,
              .cond_taken = 7,
              .near_taken = 7 + 2 + 2 + 3,
              .near_calls = 2,
              .near_returns = 2,
              .indirect = 1,
              .far = 1,
              .loads = 30,
              .stores = 10,
              .load_served = {20, 5, 3, 2}};
    r.stall_cycles = memory_stall_cycles(r.load_served);
    return r;
}

constexpr u64 kStall = 5 * 12 + 3 * 40 + 2 * 200;  // the default MemoryLatency
constexpr u64 kCycles = 100 + kStall;

struct Expect {
    u16 event, umask;
    u64 count;
};

using Make = std::function<SimMachine()>;

// One GP counter (PERFEVTSEL0 / PERF_CTL0) programmed with `sel`, after one retire().
u64 gp_count(const Make& make, u64 sel, const Retired& r) {
    SimMachine m = make();
    SimCpu& c = m.cpu(0);
    const bool amd = c.pmu().kind == PmuLayout::Kind::amd;
    const u32 ctl = amd ? (c.pmu().amd_ext_core ? reg::AMD_EXT_CTL0 : reg::AMD_PERF_CTL0) : reg::PERFEVTSEL0;
    const u32 ctr = amd ? (c.pmu().amd_ext_core ? reg::AMD_EXT_CTL0 + 1 : reg::AMD_PERF_CTR0) : reg::PMC0;
    EXPECT_EQ(wr(c, ctl, sel), 0);
    c.retire(r);
    return rd(c, ctr);
}

// An event select of up to 12 bits (AMD PERF_CTL[35:32] = event[11:8]) with unit mask and flags.
u64 sel(u16 event, u16 umask, u64 flags = kOsEn) {
    return evtsel::make(event & 0xff, umask, flags) | (u64(event >> 8) << 32);
}

// Each event's count after batch(); and what SimCpu::event_source says of it agrees: the
// batch makes every event the model produces nonzero.
void expect_counts(const char* what, const Make& make, std::initializer_list<Expect> list) {
    const SimMachine m = make();
    for (const Expect& e : list) {
        EXPECT_EQ(gp_count(make, sel(e.event, e.umask), batch()), e.count)
            << what << ": event " << std::hex << e.event << "H unit mask " << e.umask << "H";
        EXPECT_EQ(m.cpu(0).event_source(e.event, e.umask) == EventSource::not_modelled, e.count == 0)
            << what << ": event " << std::hex << e.event << "H unit mask " << e.umask << "H is "
            << event_source_name(m.cpu(0).event_source(e.event, e.umask));
    }
}

}  // namespace

// ---------------------------------------------------------------- Intel

TEST(SimRetireEvents, SkylakeEncodings) {
    expect_counts("Skylake", [] { return intel_skylake(1); },
                  {
                      {0xC0, 0x00, 100},      // INST_RETIRED.ANY_P
                      {0x3C, 0x00, kCycles},  // CPU_CLK_UNHALTED.THREAD_P: stalls included
                      {0x3C, 0x01, kCycles},  // reference cycles: the TSC clock
                      {0xC4, 0x00, 20},       // BR_INST_RETIRED.ALL_BRANCHES
                      {0xC4, 0x01, 12},       // CONDITIONAL
                      {0xC4, 0x02, 2},        // NEAR_CALL
                      {0xC4, 0x08, 2},        // NEAR_RETURN
                      {0xC4, 0x10, 5},        // NOT_TAKEN
                      {0xC4, 0x20, 14},       // NEAR_TAKEN
                      {0xC4, 0x40, 1},        // FAR_BRANCH
                      {0xC4, 0x11, 0},        // Ice Lake's COND: not an event here
                      {0xC4, 0x80, 0},        // Golden Cove's INDIRECT: not an event here
                      {0xC5, 0x00, 0},        // BR_MISP_RETIRED: no predictor
                      {0xD0, 0x81, 30},       // MEM_INST_RETIRED.ALL_LOADS
                      {0xD0, 0x82, 10},       // ALL_STORES
                      {0xD1, 0x01, 20},       // MEM_LOAD_RETIRED.L1_HIT
                      {0xD1, 0x02, 5},        // L2_HIT
                      {0xD1, 0x04, 3},        // L3_HIT
                      {0xD1, 0x08, 10},       // L1_MISS
                      {0xD1, 0x10, 5},        // L2_MISS
                      {0xD1, 0x20, 2},        // L3_MISS
                      {0xD1, 0x40, 0},        // FB_HIT: not modelled
                      {0x2E, 0x4F, 5},        // LLC references (architectural)
                      {0x2E, 0x41, 2},        // LLC misses (architectural)
                  });
}

TEST(SimRetireEvents, IceLakeAndGoldenCoveBranchEncodings) {
    expect_counts("Ice Lake", [] { return intel_icelake(1); },
                  {{0xC4, 0x01, 7},
                   {0xC4, 0x10, 5},
                   {0xC4, 0x11, 12},
                   {0xC4, 0x80, 0},
                   {0xC4, 0x20, 14},
                   {0xD1, 0x08, 10},
                   {0xD0, 0x81, 30}});
    expect_counts("Sapphire Rapids", [] { return intel_sapphire_rapids(1); },
                  {{0xC4, 0x01, 7}, {0xC4, 0x11, 12}, {0xC4, 0x80, 1}, {0xC4, 0x02, 2}, {0xD1, 0x20, 2}});
    // Hybrid: the Golden Cove P core counts C4H/80H; the Gracemont E core only the
    // architectural events (its own encodings are not modelled).
    SimMachine adl = intel_alder_lake();
    ASSERT_EQ(intel_events(adl.cpu(0).snapshot()), IntelEvents::golden_cove);
    ASSERT_EQ(intel_events(adl.cpu(adl.size() - 1).snapshot()), IntelEvents::architectural);
}

TEST(SimRetireEvents, OtherIntelCoresCountTheArchitecturalEventsOnly) {
    expect_counts("Goldmont Plus", [] { return intel_v4_goldmont_plus(1); },
                  {{0xC0, 0x00, 100},
                   {0x3C, 0x00, kCycles},
                   {0xC4, 0x00, 20},
                   {0x2E, 0x4F, 5},
                   {0x2E, 0x41, 2},
                   {0xC4, 0x01, 0},
                   {0xD0, 0x81, 0},
                   {0xD1, 0x01, 0}});
    expect_counts("Core 2", [] { return intel_v2(1); }, {{0xC4, 0x00, 20}, {0xC4, 0x20, 0}});
    EXPECT_EQ(intel_events(intel_v3(1).cpu(0).snapshot()), IntelEvents::skylake);  // Sandy Bridge
}

TEST(SimRetireEvents, IntelFixedCountersAndTheTscRunWithTheCycles) {
    SimMachine m = intel_icelake(1);
    SimCpu& c = m.cpu(0);
    ASSERT_EQ(wr(c, reg::FIXED_CTR_CTRL, 0x1111), 0);  // fixed 0-3 at ring 0
    ASSERT_EQ(wr(c, reg::GLOBAL_CTRL, 0xFull << 32), 0);
    const u64 tsc = c.tsc();
    c.retire(batch());
    EXPECT_EQ(rd(c, reg::FIXED_CTR0), 100u);             // instructions: stalls retire nothing
    EXPECT_EQ(rd(c, reg::FIXED_CTR0 + 1), kCycles);      // core cycles
    EXPECT_EQ(rd(c, reg::FIXED_CTR0 + 2), kCycles);      // REF_TSC
    EXPECT_EQ(rd(c, reg::FIXED_CTR0 + 3), 4 * kCycles);  // TOPDOWN.SLOTS over every cycle
    EXPECT_EQ(c.tsc(), tsc + kCycles);
}

TEST(SimRetireEvents, CmaskInvAndEdgeSeeTheStallCycles) {
    const Make skl = [] { return intel_skylake(1); };
    // Cycles with at least one instruction retired, with none, and the stalls' starts.
    EXPECT_EQ(gp_count(skl, sel(0xC0, 0, kOsEn | evtsel::cmask(1)), batch()), 100u);
    EXPECT_EQ(gp_count(skl, sel(0xC0, 0, kOsEn | evtsel::cmask(1) | evtsel::INV), batch()), kStall);
    EXPECT_EQ(gp_count(skl, sel(0xC0, 0, kOsEn | evtsel::cmask(1) | evtsel::INV | evtsel::EDGE), batch()), 1u);
    // AMD likewise: ex_ret_instr with CntMask 1 and Inv.
    const Make zen4 = [] { return amd_zen4(1); };
    EXPECT_EQ(gp_count(zen4, sel(0xC0, 0, kOsEn | evtsel::cmask(1) | evtsel::INV), batch()), kStall);
}

TEST(SimRetireEvents, WithoutStallsCyclesAreInstructions) {
    // The old executor's batches: instructions and branches only, the cache model off.
    Retired r;
    r.instructions = 10;
    r.branches = 3;
    const Make skl = [] { return intel_skylake(1); };
    EXPECT_EQ(gp_count(skl, sel(0x3C, 0), r), 10u);
    EXPECT_EQ(gp_count(skl, sel(0xD1, 0x01), r), 0u);  // no cache model: no levels
    EXPECT_EQ(gp_count(skl, sel(0xC4, 0x01), r), 0u);
}

TEST(SimRetireEvents, TopdownBudgetStallCyclesAreBackendAndMemoryBound) {
    SimMachine m = intel_icelake(1);
    SimCpu& c = m.cpu(0);
    c.set_topdown(TopdownBudget{.slots_per_cycle = 5, .retiring = 2, .bad_spec = 1, .fe_bound = 1, .be_bound = 1});
    ASSERT_EQ(wr(c, reg::FIXED_CTR_CTRL, 0x1ull << 12), 0);
    ASSERT_EQ(wr(c, reg::GLOBAL_CTRL, (1ull << 35) | (1ull << 48)), 0);
    c.retire(batch());
    EXPECT_EQ(rd(c, reg::FIXED_CTR0 + 3), 5 * kCycles);
    EXPECT_EQ(c.topdown_count(0), 2u * 100);               // retiring: instruction cycles only
    EXPECT_EQ(c.topdown_count(1), 1u * 100);               // bad speculation
    EXPECT_EQ(c.topdown_count(2), 1u * 100);               // frontend bound
    EXPECT_EQ(c.topdown_count(3), 1u * 100 + 5 * kStall);  // backend bound
    EXPECT_EQ(c.topdown_count(7), 5 * kStall);             // memory bound
    // AMD Zen 4: PMCx1A0 unit mask 1EH (backend stalls) likewise.
    const Make zen4 = [] {
        SimMachine z = amd_zen4(1);
        z.cpu(0).set_topdown(default_topdown_budget(6));  // 3 retiring, 1, 1, 1 backend
        return z;
    };
    EXPECT_EQ(gp_count(zen4, sel(0x1A0, 0x1E), batch()), 1u * 100 + 6 * kStall);
    EXPECT_EQ(gp_count(zen4, sel(0x0C1, 0x00), batch()), 3u * 100);  // ex_ret_ops
}

TEST(SimRetireEvents, EventSourceSaysHowEachEventIsProduced) {
    const SimMachine skl = intel_skylake(1), icl = intel_icelake(1);
    EXPECT_EQ(skl.cpu(0).event_source(0xC0, 0x00), EventSource::exact);
    EXPECT_EQ(skl.cpu(0).event_source(0x3C, 0x00), EventSource::modelled);  // the cost model
    EXPECT_EQ(skl.cpu(0).event_source(0xC4, 0x01), EventSource::exact);
    EXPECT_EQ(skl.cpu(0).event_source(0xD1, 0x02), EventSource::modelled);  // the cache model
    EXPECT_EQ(skl.cpu(0).event_source(0xC5, 0x00), EventSource::not_modelled);
    EXPECT_EQ(skl.cpu(0).event_source(0x08, 0x01), EventSource::not_modelled);  // TLB
    EXPECT_EQ(skl.cpu(0).event_source(0xC4, 0x11), EventSource::not_modelled);
    EXPECT_EQ(icl.cpu(0).event_source(0xC4, 0x11), EventSource::exact);
    EXPECT_EQ(icl.cpu(0).event_source(0x73, 0x00), EventSource::not_modelled);
    // A TopDown budget's events are modelled.
    SimMachine z = amd_zen4(1);
    EXPECT_EQ(z.cpu(0).event_source(0x1A0, 0x1E), EventSource::not_modelled);
    z.cpu(0).set_topdown(default_topdown_budget(6));
    EXPECT_EQ(z.cpu(0).event_source(0x1A0, 0x1E), EventSource::modelled);
    EXPECT_STREQ(event_source_name(EventSource::not_modelled), "not modelled");
}

// ---------------------------------------------------------------- AMD

TEST(SimRetireEvents, ZenEncodings) {
    const std::initializer_list<Expect> common = {
        {0xC0, 0x00, 100},      // ex_ret_instr
        {0x76, 0x00, kCycles},  // ls_not_halted_cyc
        {0xC2, 0x00, 20},       // ex_ret_brn
        {0xC4, 0x00, 15},       // ex_ret_brn_tkn: near taken and far
        {0xC6, 0x00, 1},        // ex_ret_brn_far
        {0xC8, 0x00, 2},        // ex_ret_near_ret
        {0xC3, 0x00, 0},        // ex_ret_brn_misp: no predictor
        {0xD1, 0x00, 12},       // ex_ret_cond
        {0x29, 0x01, 30},       // ls_dispatch.ld_dispatch
        {0x29, 0x02, 10},       // ls_dispatch.store_dispatch
        {0x29, 0x07, 40},       // ls_dispatch.all
        {0x43, 0x01, 5},        // fills from local L2
        {0x43, 0x02, 3},        // ... from the CCX's L3
        {0x43, 0x08, 2},        // ... from DRAM
        {0x43, 0xFF, 10},       // all fills
        {0x64, 0x08, 5},        // l2_cache_req_stat.ls_rd_blk_c: L2 misses
        {0x64, 0x40, 5},        // ls_rd_blk_l_hit_x: L2 hits
        {0x64, 0x09, 5},        // ic_dc_miss_in_l2
        {0x64, 0xF6, 5},        // ic_dc_hit_in_l2
    };
    expect_counts(
        "Zen 4", [] { return amd_zen4(1); }, common);
    expect_counts("Zen 4", [] { return amd_zen4(1); }, {{0xCC, 0x00, 1}, {0x44, 0x01, 5}, {0x44, 0x08, 2}});
    expect_counts(
        "Zen 1", [] { return amd_zen1(1); }, common);
    expect_counts("Zen 1", [] { return amd_zen1(1); }, {{0xCC, 0x00, 0}, {0x44, 0x01, 0}});
    // K10: the branch events older than Zen, nothing of Zen's.
    expect_counts("K10", [] { return amd_k10(1); },
                  {{0xC0, 0x00, 100},
                   {0x76, 0x00, kCycles},
                   {0xC2, 0x00, 20},
                   {0xC4, 0x00, 15},
                   {0xD1, 0x00, 0},
                   {0x29, 0x01, 0},
                   {0x43, 0x01, 0}});
}

TEST(SimRetireEvents, AmdIrPerfCountAndEffFreq) {
    SimMachine m = amd_zen4(1);
    SimCpu& c = m.cpu(0);
    ASSERT_EQ(wr(c, reg::AMD_HWCR, 1ull << 30), 0);
    const u64 aperf = rd(c, reg::APERF), mperf = rd(c, reg::MPERF), tsc = c.tsc();
    c.retire(batch());
    EXPECT_EQ(rd(c, reg::AMD_IRPERF), 100u);
    EXPECT_EQ(rd(c, reg::APERF), aperf + kCycles);
    EXPECT_EQ(rd(c, reg::MPERF), mperf + kCycles);
    EXPECT_EQ(c.tsc(), tsc + kCycles);
}

// ---------------------------------------------------------------- NetBurst

TEST(SimRetireEvents, NetBurstRetiredTakenAndNotTakenBranchesAndRunningCycles) {
    SimMachine m = netburst_p4();
    SimCpu& c = m.cpu(0);
    auto counter = [&](u32 escr, u64 escr_value, u32 ctr, u32 select) {
        EXPECT_EQ(wr(c, escr, escr_value), 0);
        EXPECT_EQ(wr(c, nb::CCCR0 + ctr, nb::ENABLE | nb::escr_select(select) | nb::THREAD_ANY), 0);
    };
    counter(nb::CRU_ESCR0, nb::escr(0x02, nb::NBOGUSNTAG, nb::OS), nb::IQ0, 4);  // instr_retired
    counter(nb::CRU_ESCR2, nb::escr(0x06, nb::MMTP, nb::OS), nb::IQ1, 5);        // branch_retired taken
    counter(nb::FSB_ESCR0, nb::escr(0x13, nb::RUNNING, nb::OS), nb::BPU0, 6);    // global_power_events
    const u64 tsc = c.tsc();
    c.retire(batch());
    EXPECT_EQ(rd(c, nb::COUNTER0 + nb::IQ0), 100u);
    EXPECT_EQ(rd(c, nb::COUNTER0 + nb::IQ1), 15u);  // 20 branches, 5 conditional fell through
    EXPECT_EQ(rd(c, nb::COUNTER0 + nb::BPU0), kCycles);
    EXPECT_EQ(c.tsc(), tsc + kCycles);
    // Not taken (MMNP), and both; mispredicted (MMNM/MMTM) never: no predictor.
    const std::pair<u16, u64> masks[] = {{nb::MMNP, 5}, {nb::MMNP | nb::MMTP, 20}, {nb::MMNM | nb::MMTM, 0}};
    for (const auto& [mask, want] : masks) {
        ASSERT_EQ(wr(c, nb::CCCR0 + nb::IQ1, 0), 0);
        ASSERT_EQ(wr(c, nb::COUNTER0 + nb::IQ1, 0), 0);
        counter(nb::CRU_ESCR2, nb::escr(0x06, mask, nb::OS), nb::IQ1, 5);
        c.retire(batch());
        EXPECT_EQ(rd(c, nb::COUNTER0 + nb::IQ1), want) << "mask " << mask;
    }
}

TEST(SimRetireEvents, StallCyclesAreSerialLatencies) {
    u64 served[4] = {7, 1, 1, 1};
    EXPECT_EQ(memory_stall_cycles(served), 12u + 40 + 200);
    MemoryLatency slow;
    slow.memory = 300;
    EXPECT_EQ(memory_stall_cycles(served, slow), 12u + 40 + 300);
}
