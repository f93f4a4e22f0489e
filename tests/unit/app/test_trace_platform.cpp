// `--trace-msr` runs a command against TracePlatform, a wrapper around the real Platform:
// everything it does not change must reach the inner platform, the firmware timer (and
// with it the TSC frequency of a CPU without CPUID.15H/16H) included.
#include <gtest/gtest.h>

#include "app/trace_platform.h"
#include "support/sim_measure.h"
#include "support/test_platform.h"

using namespace pmulab;

// AMD Zen 4 has no leaf 15H/16H: the frequency is measured against the inner platform's
// timer, once, and the wrapper reports the inner platform's value.
TEST(TracePlatform, TscFrequencyComesFromTheInnerPlatformsTimer) {
    sim::SimMachine m = sim::amd_zen4(1);
    simm::SimPlatform p(m);
    p.stall_ticks_per_us = 2500;
    TracePlatform tp(p);
    EXPECT_STREQ(tp.stall_source(), "sim_stall");
    EXPECT_STREQ(tp.stall_what(), "the simulated firmware timer");
    const TscFreq& f = tp.tsc_frequency();
    EXPECT_EQ(f.hz, 2500000000u) << f.detail;
    EXPECT_STREQ(f.source, "sim_stall");
    u64 tsc = m.cpu(0).tsc();
    EXPECT_EQ(p.tsc_frequency().hz, 2500000000u);
    TracePlatform again(p);
    EXPECT_EQ(again.tsc_frequency().hz, 2500000000u);
    EXPECT_EQ(m.cpu(0).tsc(), tsc) << "measured more than once per boot";
}

// The same through the command line: `--trace-msr --json info` carries tsc_hz.
TEST(TracePlatform, TraceMsrInfoRecordsTheMeasuredTscFrequency) {
    sim::SimMachine m = sim::amd_zen4(1);
    simm::SimPlatform p(m);
    p.stall_ticks_per_us = 2500;
    ArgVec av;
    ASSERT_TRUE(split_command_line(StrView("--trace-msr --json info"), &av).ok());
    GlobalOptions g;
    EXPECT_EQ(app_run(p, av.argc(), av.argv.data(), &g), 0) << p.out;
    std::vector<pmutest::Json> recs = pmutest::parse_json_lines(p.out);
    bool seen = false;
    for (const pmutest::Json& r : recs) {
        if (!r.has("tsc_hz")) continue;
        seen = true;
        EXPECT_EQ(r["tsc_hz"].u(), 2500000000u) << p.out;
        EXPECT_EQ(r["tsc_source"].s(), "sim_stall");
    }
    EXPECT_TRUE(seen) << p.out;
}
