// `run --sample EVENT --precise` in process on the simulated Ice Lake and Skylake
// (commands/run_precise.cpp, pmu/pebs.h): the samples at the loads, and every PEBS MSR
// back to what firmware left there, non-zero values included.
#include <gtest/gtest.h>

#include "support/sim_cmd.h"

using namespace pmulab;
using namespace sim;

namespace {

// mov rax, [r14]; add rbx, rcx; mov rdx, [r14+64]: loads at offsets 0 and 6.
const char kLoads[] = "498b064801cb498b5640";

void check_run(SimMachine& m, bool adaptive) {
    SimCpu& c = m.cpu(0);
    c.poke(0x600, 0xfeed000);          // IA32_DS_AREA: firmware's
    c.poke(0x3F1, 0x4);                // IA32_PEBS_ENABLE: PMC2 (not counting)
    c.poke(0x3F6, 0x7);                // MSR_PEBS_LD_LAT_THRESHOLD
    if (adaptive) c.poke(0x3F2, 0x2);  // MSR_PEBS_DATA_CFG: GPRs
    const PmuState before = c.pmu_state();
    ASSERT_EQ(before.count(0x3F2), adaptive ? 1u : 0u);
    simm::SimPlatform p(m);
    simm::Cmd r = simm::run_line(p, std::string("--json run --cpu 0 --code ") + kLoads +
                                        " --sample D0.81:1 --precise --unroll 4 --reps 1 --warmup 0");
    ASSERT_EQ(r.status, 0) << r.out;
    std::vector<pmutest::Json> s = simm::of_type(r, "samples");
    ASSERT_EQ(s.size(), 1u) << r.out;
    const pmutest::Json& b = s[0]["buckets"];
    ASSERT_EQ(b.items.size(), 2u) << r.out;
    // 2 runs (4 and 8 copies): 12 copies, each load once per copy.
    EXPECT_EQ(b[0]["offset"].u(), 0u);
    EXPECT_EQ(b[0]["count"].u(), 12u);
    EXPECT_EQ(b[1]["offset"].u(), 6u);
    EXPECT_EQ(b[1]["count"].u(), 12u);
    EXPECT_EQ(b[1]["data"][0]["reg"].s(), "r14");
    EXPECT_EQ(b[1]["data"][0]["offset"].u(), 64u);
    EXPECT_EQ(diff_state(before, c.pmu_state()), "") << "every PEBS MSR restored exactly";
    EXPECT_TRUE(c.violations().empty());
}

}  // namespace

TEST(RunPrecise, IceLakeAdaptivePebsSamplesTheLoadsAndRestoresEverything) {
    SimMachine m = intel_icelake(1);
    check_run(m, true);
}

TEST(RunPrecise, SkylakeFormat3SamplesTheLoadsAndRestoresEverything) {
    SimMachine m = intel_skylake(1);
    check_run(m, false);
}
