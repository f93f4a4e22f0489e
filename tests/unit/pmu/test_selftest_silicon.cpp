// `pmulab selftest` PMU checks against behaviours of real silicon (issue 11): a coarse
// reference clock behind CPU_CLK_UNHALTED.REF_TSC, and PMU kinds without checks.
#include <gtest/gtest.h>

#include "measure/pmu_plan.h"
#include "support/sim_measure.h"
#include "support/test_platform.h"

using namespace pmulab;
using namespace sim;
using simm::SimPlatform;

namespace {

struct Cmd {
    int status = -1;
    std::string out;
};

Cmd run_line(SimPlatform& p, const std::string& line) {
    p.out.clear();
    ArgVec av;
    Status s = split_command_line(StrView(line.c_str()), &av);
    EXPECT_TRUE(s.ok());
    GlobalOptions g;
    Cmd c;
    c.status = app_run(p, av.argc(), av.argv.data(), &g);
    c.out = p.out;
    return c;
}

bool has_prefix_line(const std::string& out, const std::string& prefix) {
    return ("\n" + out).find("\n" + prefix) != std::string::npos;
}

}  // namespace

// REF_TSC counts in steps of the reference clock: 100 TSC ticks per 24 MHz crystal tick at
// 2.4 GHz, at an arbitrary phase. A window of a few hundred ticks is then off by a whole
// step: the check must use a long window and allow a few steps, never FAIL a healthy part.
TEST(SelftestSilicon, CoarseReferenceClockDoesNotFailTheRefCyclesCheck) {
    for (u64 step : {25u, 100u, 208u}) {
        SimMachine m = intel_v4_goldmont_plus(1);
        m.cpu(0).set_rdtsc_step(3);
        m.cpu(0).set_ref_clock(step, step / 3);
        SimPlatform p(m);
        Cmd c = run_line(p, "selftest");
        EXPECT_TRUE(has_prefix_line(c.out, "PASS: reference cycles: fixed counter 2 vs the TSC [CPU 0]")) << c.out;
        EXPECT_TRUE(has_prefix_line(c.out,
                                    "PASS: each counter counts individually (instructions retired on every GP "
                                    "counter): FIXED_CTR2 [CPU 0]"))
            << c.out;
        EXPECT_EQ(c.status, 0) << "step " << step << "\n" << c.out;
    }
}
