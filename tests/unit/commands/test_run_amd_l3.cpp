// `run --cbox-lookups` on AMD (run_cbox.cpp, pmu/amd_l3.h) on the simulated zen1/zen3/zen4:
// the counter of a line's slice (by the simulator's stand-in hash) counts exactly the
// lookups of the code, the others none; the slices in rounds where they outnumber the
// counters; the L3 PMU's MSRs put back exactly; the refusals (exit 3, nothing run).
#include <gtest/gtest.h>

#include "sim/sim_builders.h"
#include "sim/sim_slice.h"
#include "support/sim_cmd.h"
#include "support/sim_measure.h"
#include "support/test_platform.h"

using namespace pmulab;
using simm::Cmd;
using simm::run_line;
using simm::SimPlatform;

namespace {

// clflush [r14+0x400]; mfence; mov rcx, [r14+0x400]  /  the same at r14+0x1000400. Line 16 of
// a page: the harness's data page touches lines 0-3, 8 and 9 of its page, whose L1/L2 sets
// the repeated CLFLUSH and load would cycle through (an LRU set), making it look up the L3.
const char kAt400[] = "410faebe000400000faef0498b8e00040000";
const char kAt1000400[] = "410faebe000400010faef0498b8e00040001";

void check_lookups(sim::SimMachine& m, u32 slices, const std::vector<u64>& per_slice_lookups,
                   const std::vector<u64>& slice_runs) {
    SimPlatform p(m);
    Cmd c = run_line(p, std::string("--json run --cpu 0 --code ") + kAt400 + " --name at400 --code " + kAt1000400 +
                            " --name at1000400 --events tsc --cbox-lookups --basic --unroll 8 --reps 3 --warmup 1" +
                            " --r14-size 64M");
    ASSERT_EQ(c.status, 0) << c.out;
    std::vector<pmutest::Json> res = simm::results(c), cb = simm::of_type(c, "cbox_lookups");
    ASSERT_EQ(cb.size(), 2u) << c.out;
    const u64 offs[2] = {0x400, 0x1000400};
    for (int i = 0; i < 2; ++i) {
        const pmutest::Json& r = cb[size_t(i)];
        EXPECT_EQ(r["unit"].s(), "l3");
        EXPECT_EQ(r["event"].s(), "L3PMCx04.FF (L3 Lookup State, all)");
        EXPECT_EQ(r["boxes"].u(), slices);
        EXPECT_EQ(r["complex"].u(), 0u);
        EXPECT_EQ(r["rounds"].u(), slices > 6 ? 2u : 1u);
        EXPECT_EQ(r["runs"].u(), 6u);
        u32 want = sim::amd_standin_slice(res[size_t(i)]["r14"].u() + (32u << 20) + offs[i], slices);
        EXPECT_EQ(r["slice"].u(), want) << r["bench"].s();
        for (u32 b = 0; b < slices; ++b) {
            EXPECT_EQ(r["lookups"][b].u(), b == want ? per_slice_lookups[b] : 0u) << b;
            EXPECT_EQ(r["slice_runs"][b].u(), slice_runs[b]) << b;
        }
    }
}

}  // namespace

TEST(RunAmdL3, Zen3CountsEightSlicesInTwoRounds) {
    // 3 counted runs of the 8 copies: rounds 0, 1, 0 (slices 0-3, 4-7, 0-3).
    sim::SimMachine m = sim::amd_zen3();
    check_lookups(m, 8, {16, 16, 16, 16, 8, 8, 8, 8}, {4, 4, 4, 4, 2, 2, 2, 2});
}

TEST(RunAmdL3, Zen4CountsEightSlicesInTwoRounds) {
    sim::SimMachine m = sim::amd_zen4();
    check_lookups(m, 8, {16, 16, 16, 16, 8, 8, 8, 8}, {4, 4, 4, 4, 2, 2, 2, 2});
}

TEST(RunAmdL3, Zen1CountsFourSlicesAtOnce) {
    sim::SimMachine m = sim::amd_zen1();
    check_lookups(m, 4, {24, 24, 24, 24}, {6, 6, 6, 6});
}

TEST(RunAmdL3, TheRegistersComeBackExactly) {
    sim::SimMachine m = sim::amd_zen3();
    // A disabled configuration with a count, and one that counts (slice 0, every core).
    const u64 cfg0 = 0x04 | (0x01ull << 8) | (2ull << 48), cfg5 = 0x40FF04 | (1ull << 47) | (3ull << 56);
    ASSERT_TRUE(m.wrmsr(0xC0010230, cfg0).ok());
    ASSERT_TRUE(m.wrmsr(0xC0010231, 77).ok());
    ASSERT_TRUE(m.wrmsr(0xC001023A, cfg5).ok());
    SimPlatform p(m);
    Cmd c = run_line(p, std::string("--json run --cpu 0 --code ") + kAt400 +
                            " --events tsc --cbox-lookups --unroll 4 --reps 2 --warmup 1");
    ASSERT_EQ(c.status, 0) << c.out;
    EXPECT_EQ(m.rdmsr(0xC0010230).value(), cfg0);
    EXPECT_EQ(m.rdmsr(0xC0010231).value(), 77u);
    EXPECT_EQ(m.rdmsr(0xC001023A).value(), cfg5);
    for (u32 i = 1; i < 5; ++i) {
        EXPECT_EQ(m.rdmsr(0xC0010230 + 2 * i).value(), 0u) << i;
        EXPECT_EQ(m.rdmsr(0xC0010231 + 2 * i).value(), 0u) << i;
    }
}

TEST(RunAmdL3, TextNamesTheComplexAndSlice) {
    sim::SimMachine m = sim::amd_zen3();
    SimPlatform p(m);
    Cmd c = run_line(p, std::string("run --cpu 0 --code ") + kAt400 +
                            " --name at400 --events tsc --cbox-lookups --unroll 4 --reps 2 --warmup 1");
    ASSERT_EQ(c.status, 0) << c.out;
    EXPECT_NE(c.out.find("L3 PMU lookups of at400 on CPU 0 (L3 complex 0):"), std::string::npos) << c.out;
    EXPECT_NE(c.out.find("-> slice "), std::string::npos) << c.out;
}

TEST(RunAmdL3, NoL3PmuIsExit3WithTheReason) {
    struct Case {
        sim::SimMachine m;
        const char* why;
    } cases[] = {
        {sim::amd_k10(), "CPUID Fn8000_0001_ECX[28] (PerfCtrExtLLC) is clear: no L3 performance counters"},
        {pmutest::dump_machine("cpuid-r_KVM_AMD_EPYC_2cpu.txt"),
         "a hypervisor's guest: the L3 PMU's MSRs (ChL3PmcCfg, C001_0230H) are not virtualized"},
        {pmutest::dump_machine("AuthenticAMD0B40F40_K20_GraniteRidge_02_CPUID.txt"),
         "ChL3PmcCfg0 (C001_0230H) cannot be read"},
    };
    for (Case& k : cases) {
        SimPlatform p(k.m);
        Cmd c = run_line(p, std::string("--json run --cpu 0 --code ") + kAt400 + " --events tsc --cbox-lookups");
        EXPECT_EQ(c.status, 3) << c.out;
        EXPECT_TRUE(simm::results(c).empty());
        EXPECT_NE(c.out.find(k.why), std::string::npos) << c.out;
        EXPECT_NE(c.out.find("find slices by eviction sets instead (tools/pmulab-cache evset)"), std::string::npos);
    }
}
