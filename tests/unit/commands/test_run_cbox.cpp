// `run --cbox-lookups` (run_cbox.cpp, pmu/cbox.h) on the simulated Skylake client: the C-Box
// of a line's slice counts exactly the lookups of the code (CLFLUSH, then a load that
// misses every level), the others none; the uncore MSRs are put back exactly; and the
// refusal (exit 3, nothing run) where there are no C-Boxes.
#include <gtest/gtest.h>

#include "sim/sim_slice.h"
#include "support/sim_cmd.h"
#include "support/sim_measure.h"
#include "support/test_platform.h"

using namespace pmulab;
using simm::Cmd;
using simm::run_line;
using simm::SimPlatform;

namespace {

// clflush [r14+0x40]; mfence; mov rcx, [r14+0x40]  /  the same at r14+0x1000040.
const char kAt40[] = "410faebe400000000faef0498b8e40000000";
const char kAt1000040[] = "410faebe400000010faef0498b8e40000001";

}  // namespace

TEST(RunCbox, TheLinesSliceCountsEveryLookupAndTheRegistersComeBack) {
    sim::SimMachine m = pmutest::dump_machine("GenuineIntel00506E3_Skylake_CPUID.txt");
    // What pmulab must put back: a disabled select with a count, a global control value.
    ASSERT_TRUE(m.wrmsr(0x710, 0x1834).ok());
    ASSERT_TRUE(m.wrmsr(0x716, 77).ok());
    ASSERT_TRUE(m.wrmsr(0xE01, 0x1).ok());
    SimPlatform p(m);
    Cmd c = run_line(p, std::string("--json run --cpu 0 --code ") + kAt40 + " --name at40 --code " + kAt1000040 +
                            " --name at1000040 --events tsc --cbox-lookups --basic --unroll 8 --reps 3 --warmup 1" +
                            " --r14-size 64M");
    ASSERT_EQ(c.status, 0) << c.out;
    std::vector<pmutest::Json> res = simm::results(c), cb = simm::of_type(c, "cbox_lookups");
    ASSERT_EQ(res.size(), 2u) << c.out;
    ASSERT_EQ(cb.size(), 2u) << c.out;
    const u64 offs[2] = {0x40, 0x1000040};
    for (int i = 0; i < 2; ++i) {
        const pmutest::Json& r = cb[size_t(i)];
        EXPECT_EQ(r["event"].s(), "UNC_CBO_CACHE_LOOKUP.ANY");
        EXPECT_EQ(r["boxes"].u(), 4u);
        // 4 runs per version, each's first left out: 3 of the 8 copies' version and 3
        // of the version without copies (basic mode).
        EXPECT_EQ(r["runs"].u(), 6u);
        // R14 is the middle of the area whose start is the record's r14.
        u32 want = sim::llc_slice(res[size_t(i)]["r14"].u() + (32u << 20) + offs[i], 4);
        EXPECT_EQ(r["slice"].u(), want) << r["bench"].s();
        for (u32 b = 0; b < 4; ++b) EXPECT_EQ(r["lookups"][b].u(), b == want ? 24u : 0u) << b;
    }
    EXPECT_EQ(m.rdmsr(0x710).value(), 0x1834u);
    EXPECT_EQ(m.rdmsr(0x716).value(), 77u);
    EXPECT_EQ(m.rdmsr(0xE01).value(), 0x1u);
    EXPECT_EQ(m.rdmsr(0x700).value(), 0u);
    EXPECT_EQ(m.rdmsr(0x736).value(), 0u);
}

TEST(RunCbox, TextNamesTheSlice) {
    sim::SimMachine m = pmutest::dump_machine("GenuineIntel00506E3_Skylake_CPUID.txt");
    SimPlatform p(m);
    Cmd c = run_line(p, std::string("run --cpu 0 --code ") + kAt40 +
                            " --name at40 --events tsc --cbox-lookups --unroll 4 --reps 1 --warmup 1");
    ASSERT_EQ(c.status, 0) << c.out;
    EXPECT_NE(c.out.find("C-Box lookups of at40 on CPU 0:"), std::string::npos) << c.out;
    EXPECT_NE(c.out.find("-> slice "), std::string::npos) << c.out;
}

TEST(RunCbox, NoCboxesIsExit3AndNothingRuns) {
    for (const char* d :
         {"AuthenticAMD0B40F40_K20_GraniteRidge_02_CPUID.txt", "GenuineIntel00C0652_ArrowLakeH_04_CPUID.txt"}) {
        sim::SimMachine m = pmutest::dump_machine(d);
        SimPlatform p(m);
        Cmd c = run_line(p, std::string("--json run --cpu 0 --code ") + kAt40 + " --events tsc --cbox-lookups");
        EXPECT_EQ(c.status, 3) << d << c.out;
        EXPECT_TRUE(simm::results(c).empty()) << d;
        EXPECT_NE(c.out.find("find slices by eviction sets instead (tools/pmulab-cache evset)"), std::string::npos)
            << c.out;
    }
}
