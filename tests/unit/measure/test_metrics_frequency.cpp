// `frequency` and `frequency_ratio` over CPU_CLK_UNHALTED.REF_TSC on simulated CPUs whose
// reference clock steps like the hardware's (issue 26 item 3): fixed counter 2 advances by
// CPUID.15H's TSC/crystal ratio at a time, so a short window is quantised by whole steps
// and the metric carries its bound; REF_TSC's GP fallback 3C.01 (REF_XCLK) counts crystal
// ticks, and a ratio over it is undefined with the reason.
#include <gtest/gtest.h>

#include "sim/sim_builders.h"
#include "support/sim_cmd.h"
#include "support/sim_measure.h"
#include "support/test_platform.h"

using namespace pmulab;
using namespace sim;
using simm::SimPlatform;

using simm::Cmd;
using simm::find;
using simm::of_type;
using simm::run_line;

TEST(FrequencyRefTsc, ShortWindowsAreFlaggedWithTheQuantisationBound) {
    SimMachine m = with_tsc_leaf15(intel_icelake(1), {2, 156, 19200000, 0});
    SimPlatform p(m);
    Cmd c = run_line(p, "run --json --bench add_indep --metrics frequency_ratio --reps 3 --warmup 1 --unroll 10");
    ASSERT_EQ(c.status, 0) << c.out;
    std::vector<pmutest::Json> met = of_type(c, "metric");
    ASSERT_EQ(met.size(), 1u) << c.out;
    EXPECT_EQ(met[0]["ref_tsc_step"].u(), 78u) << c.out;
    EXPECT_FALSE(met[0]["valid"].b) << c.out;
    EXPECT_EQ(met[0]["violation"].s().rfind("REF_TSC advances in steps of 78 TSC ticks (CPUID.15H): over ", 0), 0u)
        << c.out;
    // The text table prints the bound beside the value.
    c = run_line(p, "run --bench add_indep --metrics frequency_ratio --reps 3 --warmup 1 --unroll 10");
    ASSERT_EQ(c.status, 0) << c.out;
    EXPECT_NE(c.out.find("(+-200.00%: REF_TSC steps of 78 ticks)"), std::string::npos) << c.out;
}

TEST(FrequencyRefTsc, LongWindowsAreValidWithinTheirBound) {
    SimMachine m = with_tsc_leaf15(intel_icelake(1), {2, 156, 19200000, 0});
    SimPlatform p(m);
    Cmd c = run_line(p, "run --json --bench add_indep --metrics frequency_ratio --reps 3 --warmup 1 --unroll 100 "
                        "--loop 1000");
    ASSERT_EQ(c.status, 0) << c.out;
    std::vector<pmutest::Json> met = of_type(c, "metric");
    ASSERT_EQ(met.size(), 1u) << c.out;
    EXPECT_TRUE(met[0]["valid"].b) << c.out;
    std::vector<u64> f = met[0]["fraction"].u_list();
    ASSERT_EQ(f.size(), 2u);
    double ratio = double(f[0]) / double(f[1]), bound = std::stod(met[0]["quantisation"].s());
    EXPECT_LT(bound, 0.01) << c.out;
    EXPECT_NEAR(ratio, 1.0, bound) << c.out;  // the simulated core runs at the TSC rate
}

TEST(FrequencyRefTsc, RefXclkFallbackIsUndefinedWithTheReason) {
    // Fixed counters 0-1 only (v5, CPUID.0AH:ECX bitmap 3): REF_TSC falls back to 3C.01 on a
    // GP counter, which counts crystal ticks, 1 per 100 TSC ticks here.
    IntelCpuidSpec sp;
    sp.max_leaf = 0x16;
    sp.brand = "pmulab simulated core without fixed counter 2";
    sp.leaf_0a = {0x08300805, 0, 0x3, 0x00008602};
    sp.leaf_15 = {2, 200, 24000000, 0};
    SimMachine m = intel_machine(sp, {1, 1, 1});
    SimPlatform p(m);
    Cmd c = run_line(p, "run --json --bench add_indep --metrics frequency_ratio --reps 3 --warmup 1 --unroll 100 "
                        "--loop 100");
    ASSERT_EQ(c.status, 0) << c.out;
    std::vector<pmutest::Json> met = of_type(c, "metric");
    ASSERT_EQ(met.size(), 1u) << c.out;
    EXPECT_TRUE(met[0]["value"].is_null()) << c.out;
    EXPECT_FALSE(met[0]["valid"].b);
    EXPECT_EQ(met[0]["undefined"].s().rfind("CPU_CLK_UNHALTED.REF_TSC was counted by 3C.01 (REF_XCLK) on PMC", 0), 0u)
        << c.out;
    std::vector<pmutest::Json> res = of_type(c, "result");
    const pmutest::Json* ref = find(res, "event", "CPU_CLK_UNHALTED.REF_TSC");
    ASSERT_NE(ref, nullptr) << c.out;
    EXPECT_EQ((*ref)["counter"].s().rfind("PMC", 0), 0u) << c.out;
}
