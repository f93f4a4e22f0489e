// The interrupt half of the simulated PMU (sim_cpu.h "Interrupts") and pmulab's portable
// PMI handler (pmu/pmi.h) run by the executor at the exact instruction boundary.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "pmu/pmi.h"
#include "sim/sim_cpu.h"
#include "sim_exec.h"

using namespace sim;

namespace {

u8 wr(SimCpu& c, u32 msr, u64 v) {
    Status s = c.wrmsr(msr, v);
    return s.ok() ? 0 : s.error().vector;
}
constexpr u64 kTop48 = (u64(1) << 48);

// Fixed counter 0 (instructions) armed with PMI, `period` below overflow, counting on.
void arm_fixed0(SimCpu& c, u64 period) {
    ASSERT_EQ(wr(c, reg::FIXED_CTR0, kTop48 - period), 0);
    ASSERT_EQ(wr(c, reg::FIXED_CTR_CTRL, 0x1 | 0x8), 0);  // OS, PMI
    ASSERT_EQ(wr(c, reg::GLOBAL_CTRL, u64(1) << 32), 0);
}

}  // namespace

TEST(SimPmi, OverflowRaisesOnePmiThroughTheLvtAndMasksIt) {
    SimMachine m = intel_skylake(1);
    SimCpu& c = m.cpu(0);
    arm_fixed0(c, 10);
    c.set_lvt_perf(SimCpu::kLvtDeliveryNmi);
    c.retire(Retired{.instructions = 9});
    EXPECT_FALSE(c.take_nmi());
    c.retire(Retired{.instructions = 1});
    EXPECT_TRUE(c.take_nmi());
    EXPECT_FALSE(c.take_nmi());  // taken once
    EXPECT_EQ(c.lvt_perf() & SimCpu::kLvtMasked, SimCpu::kLvtMasked);
    EXPECT_EQ(c.peek(reg::GLOBAL_STATUS) & (u64(1) << 32), u64(1) << 32);
    EXPECT_EQ(c.pmi_count(), 1u);
    // Masked: the next overflow is counted, not delivered.
    ASSERT_EQ(wr(c, reg::FIXED_CTR0, kTop48 - 1), 0);
    c.retire(Retired{.instructions = 1});
    EXPECT_FALSE(c.take_nmi());
    EXPECT_EQ(c.pmi_count(), 2u);
}

TEST(SimPmi, FreezeOnPmiStopsEveryCounterAtTheOverflowCycle) {
    for (bool v4 : {false, true}) {
        SCOPED_TRACE(v4 ? "v4 (CTR_FRZ)" : "v3 (GLOBAL_CTRL cleared)");
        SimMachine m = v4 ? intel_icelake(1) : intel_v3(1);
        SimCpu& c = m.cpu(0);
        // Fixed counter 1 (cycles) overflows after 5 cycles; PMC0 counts instructions.
        ASSERT_EQ(wr(c, reg::FIXED_CTR0 + 1, kTop48 - 5), 0);
        ASSERT_EQ(wr(c, reg::FIXED_CTR_CTRL, 0x10 | 0x80), 0);  // counter 1: OS, PMI
        ASSERT_EQ(wr(c, reg::PERFEVTSEL0, evtsel::make(0xC0, 0, evtsel::OS | evtsel::EN)), 0);
        ASSERT_EQ(wr(c, reg::DEBUGCTL, u64(1) << 12), 0);
        ASSERT_EQ(wr(c, reg::GLOBAL_CTRL, (u64(1) << 33) | 1), 0);
        c.retire(Retired{.instructions = 3, .stall_cycles = 7});  // 10 cycles: frozen after 5
        EXPECT_EQ(c.peek(reg::PMC0), 0u) << "the stall cycles come first: no instruction retired by cycle 5";
        EXPECT_EQ(c.peek(reg::FIXED_CTR0 + 1), 0u);
        if (v4) EXPECT_NE(c.peek(reg::GLOBAL_STATUS) & (u64(1) << 59), 0u);
        else EXPECT_EQ(c.peek(reg::GLOBAL_CTRL), 0u);
    }
}

TEST(SimPmi, FreezeKeepsTheOverflowingInstructionsEvents) {
    SimMachine m = intel_icelake(1);
    SimCpu& c = m.cpu(0);
    ASSERT_EQ(wr(c, reg::FIXED_CTR0, kTop48 - 4), 0);
    ASSERT_EQ(wr(c, reg::FIXED_CTR_CTRL, 0x1 | 0x8), 0);
    ASSERT_EQ(wr(c, reg::PERFEVTSEL0, evtsel::make(0xC4, 0, evtsel::OS | evtsel::EN)), 0);  // branches
    ASSERT_EQ(wr(c, reg::DEBUGCTL, u64(1) << 12), 0);
    ASSERT_EQ(wr(c, reg::GLOBAL_CTRL, (u64(1) << 32) | 1), 0);
    for (int i = 0; i < 6; ++i) c.retire(Retired{.instructions = 1, .branches = 1});
    EXPECT_EQ(c.peek(reg::PMC0), 4u) << "the 4th instruction's branch counts, the 5th's does not";
    // STATUS_RESET of CTR_FRZ unfreezes.
    ASSERT_EQ(wr(c, reg::GLOBAL_OVF_CTRL, (u64(1) << 59) | (u64(1) << 32)), 0);
    c.retire(Retired{.instructions = 1, .branches = 1});
    EXPECT_EQ(c.peek(reg::PMC0), 5u);
}

TEST(SimPmi, BrokenPmuRaisesNothingAndFreezesNothing) {
    SimMachine m = intel_icelake(1);
    SimCpu& c = m.cpu(0);
    c.break_pmi(true);
    arm_fixed0(c, 2);
    c.set_lvt_perf(SimCpu::kLvtDeliveryNmi);
    c.retire(Retired{.instructions = 3});
    EXPECT_FALSE(c.take_nmi());
}

// Where PERFEVTSELx.EN is the only enable (v1; AMD without PerfMonV2) the region's own
// start write sets it: INT alone must make the executor retire instruction by instruction.
TEST(SimPmi, IntWithoutEnAlreadyNeedsEachInstruction) {
    for (bool amd : {false, true}) {
        SCOPED_TRACE(amd ? "zen3" : "intel_v1");
        SimMachine m = amd ? amd_zen3(1) : intel_v1(1);
        SimCpu& c = m.cpu(0);
        const u32 ctl = amd ? reg::AMD_EXT_CTL0 : reg::PERFEVTSEL0;
        ASSERT_EQ(wr(c, ctl, evtsel::make(0xC0, 0, evtsel::OS | evtsel::INT)), 0);
        EXPECT_TRUE(c.needs_each_instruction());
    }
}

namespace {

struct Rips final : pmulab::PmiSink {
    std::vector<pmulab::u64> rips;
    void sample(pmulab::u32, pmulab::u64 rip) override { rips.push_back(rip); }
    void precise(pmulab::u32, const pmulab::PreciseSample& s) override { rips.push_back(s.rip); }
};

}  // namespace

// The executor takes the NMI at the instruction after the one whose retirement overflowed
// the counter, and pmulab's handler records that RIP, reloads, acknowledges and re-arms.
TEST(SimPmi, HandlerSamplesEveryPeriodAtTheNextInstruction) {
    using namespace pmulab;
    SimMachine m = intel_icelake(1);
    SimExec ex(m);
    // 1 + 3 * 100 + 1 instructions: mov ecx,100; L: nop; dec ecx; jnz L; ret.
    const u8 code[] = {0xB9, 100, 0, 0, 0, 0x90, 0xFF, 0xC9, 0x75, 0xFB, 0xC3};
    Result<void*> page = ex.alloc_pages(4096, true);
    ASSERT_TRUE(page.ok());
    std::memcpy(page.value(), code, sizeof code);
    Region r;
    r.code = page.value();
    r.size = r.code_size = sizeof code;
    r.exit_offset = sizeof code - 1;
    r.block = CodeBlock::one_time_init;
    SimCpu& c = m.cpu(0);
    PmuInfo info;
    pmu_detect(m, &info);
    CounterGroup g;
    g.events.push(Assignment{0, CounterKind::fixed, 0});
    g.fixed_mask = 1;
    const u64 period = 7;
    PmiSetup setup;
    ASSERT_TRUE(pmi_setup(info, g, &period, nullptr, false, &setup).ok());
    arm_fixed0(c, period);
    ASSERT_TRUE(ex.set_lvt_perf(kLvtPerfNmi).ok());
    Rips sink;
    PmiHandler h;
    h.arm(
        m, setup, &sink, [](void* ctx, u32 v) { return static_cast<SimExec*>(ctx)->set_lvt_perf(v); }, &ex);
    ASSERT_TRUE(ex.pmi_attach(&h).ok());
    IrqSaved saved;
    ASSERT_TRUE(ex.irq_mask(IrqMode::cli, &saved).ok());
    RegionFrame f;
    ex.execute(r, &f);
    ex.irq_restore(saved);
    ex.pmi_detach();
    EXPECT_TRUE(ex.problems().empty()) << ex.problems()[0];
    ASSERT_TRUE(h.error().ok()) << h.error().error().msg;
    // 302 instructions, one sample per 7: 43, each at the instruction after every 7th.
    ASSERT_EQ(sink.rips.size(), 302u / 7);
    EXPECT_EQ(h.pmis(), 302u / 7);
    const u64 base = u64(reinterpret_cast<uintptr_t>(page.value()));
    // Instruction k (1-based) starts at: 1 -> 0, then the loop (5, 6, 8) repeating, then ret (10).
    auto start_of = [](u64 k) -> u64 {
        if (k == 1) return 0;
        if (k == 302) return 10;
        const u64 offs[3] = {5, 6, 8};
        return offs[(k - 2) % 3];
    };
    for (usize i = 0; i < sink.rips.size(); ++i) {
        u64 next = 7 * (i + 1) + 1;  // the instruction after the 7(i+1)-th
        EXPECT_EQ(sink.rips[i] - base, next > 302 ? sizeof code : start_of(next)) << "sample " << i;
    }
    EXPECT_EQ(c.lvt_perf(), kLvtPerfNmi) << "re-armed";
    EXPECT_EQ(c.peek(reg::GLOBAL_STATUS), 0u) << "acknowledged";
    ex.free_pages(page.value(), 4096);
}

// pmi_detach gives the LVT entry back as pmi_attach found it (EfiMeasure does the same).
TEST(SimPmi, DetachRestoresTheLvtEntry) {
    using namespace pmulab;
    SimMachine m = intel_icelake(1);
    SimExec ex(m);
    ASSERT_EQ(ex.lvt_perf().value(), SimCpu::kLvtMasked);
    PmiHandler h;
    ASSERT_TRUE(ex.pmi_attach(&h).ok());
    ASSERT_TRUE(ex.set_lvt_perf(kLvtPerfNmi).ok());
    EXPECT_EQ(ex.lvt_perf().value(), kLvtPerfNmi);
    ex.pmi_detach();
    EXPECT_EQ(ex.lvt_perf().value(), SimCpu::kLvtMasked);
}
