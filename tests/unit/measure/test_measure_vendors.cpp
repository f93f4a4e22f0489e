// `pmulab run` with PMU events on the AMD and NetBurst backends, end to end on the
// simulated machine (the region executor of sim_measure.h retires the kernel's
// instructions as event C0.00 occurrences and cycles on the current CPU).
#include <gtest/gtest.h>

#include "support/sim_cmd.h"
#include "support/sim_measure.h"
#include "sim/sim_netburst.h"
#include "support/test_platform.h"

using namespace pmulab;
using namespace sim;
using simm::SimPlatform;

using simm::Cmd;
using simm::results;
using simm::run_line;

namespace {}  // namespace

TEST(RunVendors, AmdZenCountsRetiredInstructionsAndRestores) {
    SimMachine m = amd_zen3(1);
    PmuState before = m.cpu(0).pmu_state();
    SimPlatform p(m);
    Cmd c = run_line(p, "run --json --bench add_indep --events C0.00,tsc --reps 3 --warmup 1 --unroll 10");
    ASSERT_EQ(c.status, 0) << c.out;
    std::vector<pmutest::Json> r = results(c);
    ASSERT_EQ(r.size(), 2u) << c.out;
    EXPECT_EQ(r[0]["event"].s(), "C0.00");
    EXPECT_EQ(r[0]["per_iteration"].text, "8.00") << c.out;  // add_indep: 8 instructions
    EXPECT_EQ(r[1]["per_iteration"].text, "8.00") << c.out;
    EXPECT_EQ(diff_state(before, m.cpu(0).pmu_state()), "");
    EXPECT_TRUE(m.cpu(0).violations().empty());
}

TEST(RunVendors, NetBurstCountsInstrRetiredThroughEscrAndCccrAndRestores) {
    SimMachine m = netburst_p4(1, false);
    PmuState before = m.cpu(0).pmu_state();
    SimPlatform p(m);
    Cmd c = run_line(p, "run --json --bench add_indep --events instr_retired,uops_retired,tsc --reps 3 --warmup 1 "
                        "--unroll 10");
    ASSERT_EQ(c.status, 0) << c.out;
    std::vector<pmutest::Json> r = results(c);
    ASSERT_EQ(r.size(), 3u) << c.out;
    for (const pmutest::Json& x : r) EXPECT_EQ(x["per_iteration"].text, "8.00") << c.out;
    EXPECT_EQ(diff_state(before, m.cpu(0).pmu_state()), "");
    EXPECT_TRUE(m.cpu(0).violations().empty()) << m.cpu(0).violations()[0];
}
