// `run --cbox-lookups` (run_cbox.cpp, pmu/cbox.h) on the simulated Skylake client: the C-Box
// of a line's slice counts exactly the lookups of the code (CLFLUSH, then a load that
// misses every level), the others none; the uncore MSRs are put back exactly; and the
// refusal (exit 3, nothing run) where there are no C-Boxes.
#include <gtest/gtest.h>

#include "sim/sim_slice.h"
#include "support/sim_cmd.h"
#include "support/sim_measure.h"
#include "support/slice_lookups.h"
#include "support/test_platform.h"

using namespace pmulab;
using simm::Cmd;
using simm::kSliceAt40;
using simm::run_line;
using simm::SimPlatform;

TEST(RunCbox, TheLinesSliceCountsEveryLookupAndTheRegistersComeBack) {
    sim::SimMachine m = pmutest::dump_machine("GenuineIntel00506E3_Skylake_CPUID.txt");
    // What pmulab must put back: a disabled select with a count, a global control value.
    ASSERT_TRUE(m.wrmsr(0x710, 0x1834).ok());
    ASSERT_TRUE(m.wrmsr(0x716, 77).ok());
    ASSERT_TRUE(m.wrmsr(0xE01, 0x1).ok());
    SimPlatform p(m);
    Cmd c = simm::run_two_lines(p);
    ASSERT_EQ(c.status, 0) << c.out;
    simm::expect_lookups_in_hash_slice(c, "UNC_CBO_CACHE_LOOKUP.ANY", 4);
    for (const pmutest::Json& r : simm::of_type(c, "cbox_lookups")) EXPECT_EQ(r["unit"].s(), "cbox");
    EXPECT_EQ(m.rdmsr(0x710).value(), 0x1834u);
    EXPECT_EQ(m.rdmsr(0x716).value(), 77u);
    EXPECT_EQ(m.rdmsr(0xE01).value(), 0x1u);
    EXPECT_EQ(m.rdmsr(0x700).value(), 0u);
    EXPECT_EQ(m.rdmsr(0x736).value(), 0u);
}

TEST(RunCbox, TextNamesTheSlice) {
    sim::SimMachine m = pmutest::dump_machine("GenuineIntel00506E3_Skylake_CPUID.txt");
    SimPlatform p(m);
    Cmd c = run_line(p, std::string("run --cpu 0 --code ") + kSliceAt40 +
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
        Cmd c = run_line(p, std::string("--json run --cpu 0 --code ") + kSliceAt40 + " --events tsc --cbox-lookups");
        EXPECT_EQ(c.status, 3) << d << c.out;
        EXPECT_TRUE(simm::results(c).empty()) << d;
        EXPECT_NE(c.out.find("find slices by eviction sets instead (tools/pmulab-cache evset)"), std::string::npos)
            << c.out;
    }
}
