// The simulated LBR stacks (sim_lbr.h): which parts have which LBR, legacy LBR with its
// formats and LBR_SELECT, architectural LBR, AMD LbrExtV2, cycle counts, freeze on PMI.
#include <gtest/gtest.h>

#include "sim/sim_cpu.h"
#include "support/test_platform.h"

using namespace sim;

namespace {

u8 wr(SimCpu& c, u32 msr, u64 v) {
    Status s = c.wrmsr(msr, v);
    return s.ok() ? 0 : s.error().vector;
}
u64 rd(SimCpu& c, u32 msr) {
    Result<u64> v = c.rdmsr(msr);
    EXPECT_TRUE(v.ok()) << std::hex << msr;
    return v.ok() ? v.value() : 0;
}
// `n` one-cycle instructions, then a taken branch from..to of `kind` (recorded before it
// retires, as the executor does), then the branch itself.
void run_then_branch(SimCpu& c, u64 n, u64 from, u64 to, BranchKind kind = BranchKind::jcc) {
    if (n) c.retire(Retired{.instructions = n});
    c.taken_branch(from, to, u8(kind));
    c.retire(Retired{.instructions = 1, .branches = 1});
}
constexpr u64 kArchAll = 1 | 2 | 4 | (u64(0x7F) << 16);  // LBREn, OS, USR, every branch type

}  // namespace

TEST(SimLbr, WhichPartsHaveWhichLbr) {
    LbrLayout sk = intel_skylake(1).cpu(0).lbr();
    EXPECT_EQ(sk.kind, LbrLayout::Kind::legacy);
    EXPECT_EQ(sk.depth, 32u);
    EXPECT_EQ(sk.from, 0x680u);
    EXPECT_EQ(sk.to, 0x6C0u);
    EXPECT_EQ(sk.info, 0xDC0u);
    EXPECT_EQ(sk.format, 5u);  // IA32_PERF_CAPABILITIES 33C5H
    SimMachine adl = pmutest::dump_machine("GenuineIntel0090672_AlderLake_02_CPUID.txt");
    LbrLayout a = adl.cpu(0).lbr();
    EXPECT_EQ(a.kind, LbrLayout::Kind::arch);  // CPUID.(7,0):EDX[19], 1CH EAX 4000000BH
    EXPECT_EQ(a.depth, 32u);
    EXPECT_EQ(a.arch_depths, 0x0Bu);
    EXPECT_TRUE(a.arch_cpl && a.arch_filter && a.arch_call_stack && a.arch_mispred && a.arch_timed && a.arch_br_type);
    SimMachine gr = pmutest::dump_machine("AuthenticAMD0B40F40_K20_GraniteRidge_02_CPUID.txt");
    EXPECT_EQ(gr.cpu(0).lbr().kind, LbrLayout::Kind::amd);
    EXPECT_EQ(gr.cpu(0).lbr().depth, 16u);  // 8000_0022H EBX[9:4]
    EXPECT_EQ(amd_zen4(1).cpu(0).lbr().kind, LbrLayout::Kind::amd);
    EXPECT_EQ(amd_zen4(1).cpu(0).lbr().depth, 16u);
    EXPECT_EQ(amd_zen3(1).cpu(0).lbr().kind, LbrLayout::Kind::none);  // no LbrExtV2
    EXPECT_EQ(qemu_tcg(1).cpu(0).lbr().kind, LbrLayout::Kind::none);
    EXPECT_EQ(intel_alder_lake().cpu(0).lbr().kind, LbrLayout::Kind::none);  // 06_97H without leaf 1CH
    EXPECT_FALSE(intel_skylake(1).cpu(0).msr_exists(0x14CE));
    EXPECT_FALSE(adl.cpu(0).msr_exists(0x1C9));
}

TEST(SimLbr, LegacyRecordsWithTosInfoCyclesAndWraps) {
    SimMachine m = intel_skylake(1);
    SimCpu& c = m.cpu(0);
    run_then_branch(c, 5, 0x1000, 0x2000);
    EXPECT_EQ(rd(c, 0x1C9), 0u);  // not enabled: nothing recorded
    EXPECT_EQ(rd(c, 0x680), 0u);
    EXPECT_FALSE(c.lbr_recording());
    ASSERT_EQ(wr(c, 0x1D9, 1), 0);  // DEBUGCTL.LBR
    EXPECT_TRUE(c.lbr_recording());
    EXPECT_TRUE(c.needs_each_instruction());
    run_then_branch(c, 3, 0x1010, 0x1000);
    run_then_branch(c, 3, 0x1010, 0x1000);
    run_then_branch(c, 0, 0x1020, 0xFFFFFFFF80001000ull, BranchKind::call);
    EXPECT_EQ(rd(c, 0x1C9), 3u);
    EXPECT_EQ(rd(c, 0x681), 0x1010u);
    EXPECT_EQ(rd(c, 0x6C1), 0x1000u);
    EXPECT_EQ(rd(c, 0xDC2), 4u);  // 3 instructions + the branch itself: CYC_CNT, MISPRED clear
    EXPECT_EQ(rd(c, 0xDC3), 1u);
    EXPECT_EQ(rd(c, 0x683), 0x1020u);
    EXPECT_EQ(rd(c, 0x6C3), 0xFFFFFFFF80001000ull);
    for (int i = 0; i < 30; ++i) run_then_branch(c, 0, 0x3000 + i, 0x4000);
    EXPECT_EQ(rd(c, 0x1C9), 1u);  // 33 branches in 32 entries: wrapped
    EXPECT_EQ(rd(c, 0x681), 0x3000u + 29);
    c.retire(Retired{.instructions = 70000});
    run_then_branch(c, 0, 0x5000, 0x6000);
    EXPECT_EQ(rd(c, 0xDC2), 0xFFFFu);  // saturates
    c.taken_branch(0x5010, 0x6000, u8(BranchKind::ret));
    c.retire(Retired{.instructions = 1, .branches = 1, .loads = 1, .stall_cycles = 20});
    EXPECT_EQ(rd(c, 0xDC3), 21u);   // the branch's own stall cycles count (RET's load)
    ASSERT_EQ(wr(c, 0x1C9, 7), 0);  // TOS is writable (a saved stack is put back)
    EXPECT_EQ(wr(c, 0x1C9, 32), pmulab::kVectorGP);
}

TEST(SimLbr, LegacyLbrSelectSuppressesTypesAndCpl) {
    SimMachine m = intel_skylake(1);
    SimCpu& c = m.cpu(0);
    ASSERT_EQ(wr(c, 0x1D9, 1), 0);
    ASSERT_EQ(wr(c, 0x1C8, 1u << 2), 0);  // JCC suppressed
    run_then_branch(c, 1, 0x10, 0x20, BranchKind::jcc);
    EXPECT_EQ(rd(c, 0x1C9), 0u);
    run_then_branch(c, 1, 0x30, 0x40, BranchKind::jmp);
    EXPECT_EQ(rd(c, 0x1C9), 1u);
    EXPECT_EQ(rd(c, 0xDC1), 4u);    // the cycles since the last recorded branch (none: since reset)
    ASSERT_EQ(wr(c, 0x1C8, 1), 0);  // CPL_EQ_0: nothing at CPL 0
    run_then_branch(c, 1, 0x50, 0x60, BranchKind::ret);
    EXPECT_EQ(rd(c, 0x1C9), 1u);
    c.set_cpl(3);
    run_then_branch(c, 1, 0x50, 0x60, BranchKind::ret);
    EXPECT_EQ(rd(c, 0x1C9), 2u);
    EXPECT_EQ(wr(c, 0x1C8, 1u << 10), pmulab::kVectorGP);
}

TEST(SimLbr, LegacyFormatsEncodeAsTheFormatTableSays) {
    SimMachine m = intel_skylake(1);
    SimCpu& c = m.cpu(0);
    c.set_perf_capabilities(0x33c6);  // format 6 (Goldmont): cycles in TO[63:48], no LBR_INFO use
    ASSERT_EQ(wr(c, 0x1D9, 1), 0);
    run_then_branch(c, 9, 0x7000, 0x8000);
    EXPECT_EQ(rd(c, 0x681), 0x7000u);
    EXPECT_EQ(rd(c, 0x6C1), 0x8000u | (u64(10) << 48));  // 10 cycles since reset, the branch's included
    c.set_perf_capabilities(0x33c3);                     // format 3: 64-bit EIP, MISPRED in FROM[63]
    ASSERT_EQ(wr(c, 0x1D9, 1), 0);
    run_then_branch(c, 1, 0xFFFFFFFFFFFF0000ull, 0x10);
    EXPECT_EQ(rd(c, 0x681), 0x7FFFFFFFFFFF0000ull);
    EXPECT_EQ(rd(c, 0x6C1), 0x10u);
}

TEST(SimLbr, ArchitecturalLbrYoungestFirstWithInfo) {
    SimMachine m = pmutest::dump_machine("GenuineIntel0090672_AlderLake_02_CPUID.txt");
    SimCpu& c = m.cpu(0);
    EXPECT_EQ(rd(c, 0x14CF), 32u);                    // the largest enumerated depth
    EXPECT_EQ(wr(c, 0x14CF, 24), pmulab::kVectorGP);  // 24 is not in EAX[7:0] = 0BH
    EXPECT_EQ(wr(c, 0x14CE, u64(1) << 4), pmulab::kVectorGP);
    ASSERT_EQ(wr(c, 0x14CE, 1), 0);  // LBREn without OS/USR or types: nothing recorded
    run_then_branch(c, 1, 0x10, 0x20);
    EXPECT_EQ(rd(c, 0x1500), 0u);
    ASSERT_EQ(wr(c, 0x14CE, kArchAll), 0);
    run_then_branch(c, 2, 0x10, 0x20, BranchKind::jcc);
    run_then_branch(c, 4, 0x30, 0x40, BranchKind::call);
    EXPECT_EQ(rd(c, 0x1500), 0x30u);
    EXPECT_EQ(rd(c, 0x1600), 0x40u);
    EXPECT_EQ(rd(c, 0x1200), 5u | (u64(1) << 60) | (u64(4) << 56));  // CYC_CNT, VALID, BR_TYPE near call
    EXPECT_EQ(rd(c, 0x1501), 0x10u);
    EXPECT_EQ(rd(c, 0x1201) >> 56, 0x10u);                    // valid, type JCC (0)
    ASSERT_EQ(wr(c, 0x14CE, kArchAll & ~(u64(1) << 19)), 0);  // near relative calls off
    run_then_branch(c, 1, 0x50, 0x60, BranchKind::call);
    EXPECT_EQ(rd(c, 0x1500), 0x30u);
    ASSERT_EQ(wr(c, 0x14CF, 8), 0);  // a depth write clears the stack
    EXPECT_EQ(rd(c, 0x1500), 0u);
}

TEST(SimLbr, AmdLbrV2NewestFirstWithValidBit) {
    SimMachine m = amd_zen4(1);
    SimCpu& c = m.cpu(0);
    run_then_branch(c, 1, 0x10, 0x20);
    EXPECT_EQ(rd(c, 0xC0010300), 0u);
    ASSERT_EQ(wr(c, 0xC000010F, 1u << 6), 0);  // DBG_EXTN_CFG.LBRV2EN
    run_then_branch(c, 1, 0x10, 0x20);
    run_then_branch(c, 1, 0x30, 0x40, BranchKind::ret);
    EXPECT_EQ(rd(c, 0xC0010300), 0x30u);
    EXPECT_EQ(rd(c, 0xC0010301), 0x40u | (u64(1) << 63));
    EXPECT_EQ(rd(c, 0xC0010302), 0x10u);
    ASSERT_EQ(wr(c, 0xC000010E, 1u << 5), 0);  // returns suppressed
    run_then_branch(c, 1, 0x50, 0x60, BranchKind::ret);
    EXPECT_EQ(rd(c, 0xC0010300), 0x30u);
    EXPECT_FALSE(c.msr_exists(0xC0010320));  // 16 entries: FROM/TO 0..15
    EXPECT_TRUE(c.msr_exists(0xC001031F));
}

TEST(SimLbr, FreezeOnPmiStopsTheStack) {
    for (bool v4 : {true, false}) {
        SimMachine m = v4 ? intel_skylake(1) : intel_v3(1);
        SimCpu& c = m.cpu(0);
        ASSERT_EQ(wr(c, 0x309, (u64(1) << 48) - 3), 0);  // fixed counter 0, 3 below overflow
        ASSERT_EQ(wr(c, 0x38D, 0x1 | 0x8), 0);
        ASSERT_EQ(wr(c, 0x38F, u64(1) << 32), 0);
        ASSERT_EQ(wr(c, 0x1D9, 1 | (1u << 11)), 0);  // LBR, FREEZE_LBRS_ON_PMI
        run_then_branch(c, 1, 0x10, 0x20);           // 2 instructions: no PMI yet
        EXPECT_TRUE(c.lbr_recording());
        run_then_branch(c, 1, 0x30, 0x40);  // the 3rd overflows: frozen
        EXPECT_FALSE(c.lbr_recording()) << v4;
        u64 tos = rd(c, 0x1C9);
        run_then_branch(c, 1, 0x50, 0x60);
        EXPECT_EQ(rd(c, 0x1C9), tos);
        if (v4) {
            EXPECT_EQ(rd(c, 0x1D9) & 1, 1u);           // v4: LBR_FRZ, DEBUGCTL.LBR stays
            EXPECT_EQ(rd(c, 0x38E) >> 58 & 1, 1u);     // GLOBAL_STATUS.LBR_FRZ
            ASSERT_EQ(wr(c, 0x390, u64(1) << 58), 0);  // cleared through STATUS_RESET
            EXPECT_TRUE(c.lbr_recording());
        } else {
            EXPECT_EQ(rd(c, 0x1D9) & 1, 0u);  // v2/v3: DEBUGCTL.LBR cleared
        }
    }
}

TEST(SimLbr, BrokenLbrRecordsNothing) {
    SimMachine m = intel_skylake(1);
    SimCpu& c = m.cpu(0);
    c.break_lbr(true);
    ASSERT_EQ(wr(c, 0x1D9, 1), 0);
    EXPECT_FALSE(c.lbr_recording());
    run_then_branch(c, 1, 0x10, 0x20);
    EXPECT_EQ(rd(c, 0x680), 0u);
    EXPECT_EQ(rd(c, 0x681), 0u);
}
