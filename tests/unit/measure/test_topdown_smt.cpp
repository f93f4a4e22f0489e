// SMT siblings (docs/measure.md "SMT siblings") on a simulated Skylake core with two
// threads: the records say what the sibling did, and Skylake-class TopDown takes the SMT
// forms of Intel's formulas (Linux skl-metrics.json TopdownL1_SMT) where the sibling runs.
// A busy simulated sibling takes every other cycle (sim_core.h set_sibling_busy): the same
// code takes twice the cycles with the same per-thread events, so the SMT forms give exactly
// the breakdown of the thread alone, and the plain forms would halve it.
#include <gtest/gtest.h>

#include "sim/sim_builders.h"
#include "support/sim_cmd.h"
#include "support/sim_measure.h"
#include "support/test_platform.h"

using namespace pmulab;
using namespace sim;
using simm::Cmd;
using simm::find;
using simm::of_type;
using simm::run_line;
using simm::SimPlatform;

namespace {

const char kFast[] = " --reps 3 --warmup 1 --unroll 10";

// i7-6700K-like (v4, 4 GP + 3 fixed, AnyThread), one core with two threads, each thread's
// budget 4 slots per cycle: 2 retiring, 1 bad speculation, 1 frontend bound.
SimMachine skylake_core_with_two_threads() {
    IntelCpuidSpec sp;
    sp.max_leaf = 0x20;
    sp.signature = 0x000506E3;
    sp.brand = "Intel(R) Core(TM) i7-6700K CPU @ 4.00GHz";
    sp.leaf_0a = {0x07300404, 0, 0, 0x00000603};
    SimMachine m = intel_machine(sp, {1, 1, 2}, 0x33c5);
    TopdownBudget b;
    b.slots_per_cycle = 4;
    b.retiring = 2;
    b.bad_spec = 1;
    b.fe_bound = 1;
    for (u32 i = 0; i < m.size(); ++i) m.cpu(i).set_topdown(b);
    return m;
}

const char* const kLevel1[4] = {"tma_retiring", "tma_bad_speculation", "tma_frontend_bound", "tma_backend_bound"};
const std::vector<u64> kAlone[4] = {{1, 2}, {1, 4}, {1, 4}, {0, 1}};

// The four level-1 metrics: the thread's own budget (2, 1, 1, 0 of 4), valid, and the
// sibling's state.
void expect_level1_alone(const std::vector<pmutest::Json>& met, const char* sibling) {
    ASSERT_EQ(met.size(), 4u);
    for (int i = 0; i < 4; ++i) {
        const pmutest::Json* j = find(met, "metric", kLevel1[i]);
        ASSERT_NE(j, nullptr) << kLevel1[i];
        EXPECT_EQ((*j)["fraction"].u_list(), kAlone[i]) << kLevel1[i];
        EXPECT_EQ((*j)["sibling"].s(), sibling) << kLevel1[i];
        EXPECT_TRUE((*j)["valid"].b) << kLevel1[i];
    }
}

const pmutest::Json* result_of(const std::vector<pmutest::Json>& res, const char* event) {
    return find(res, "event", event);
}

}  // namespace

TEST(TopdownSmt, HaltedSiblingPlainFormsAndRecordsSayHalted) {
    SimMachine m = skylake_core_with_two_threads();
    SimPlatform p(m);
    Cmd c = run_line(p, std::string("run --json --bench add_indep --topdown 1 --cpu 0") + kFast);
    ASSERT_EQ(c.status, 0) << c.out;
    std::vector<pmutest::Json> res = of_type(c, "result");
    ASSERT_FALSE(res.empty());
    for (const pmutest::Json& r : res) {
        EXPECT_EQ(r["sibling"].s(), "halted");
        EXPECT_EQ(r["package"].u(), 0u);
        EXPECT_EQ(r["core"].u(), 0u);
        EXPECT_EQ(r["thread"].u(), 0u);
    }
    EXPECT_EQ(res[0]["runs"].u(), 1u);  // the plain forms: cycles (fixed) and 4 GP events
    EXPECT_EQ(result_of(res, "3C.02"), nullptr);
    std::vector<pmutest::Json> met = of_type(c, "metric");
    expect_level1_alone(met, "halted");
    EXPECT_EQ((*find(met, "metric", "tma_frontend_bound"))["formula"].s(), "[9C.01] / (4 * CPU_CLK_UNHALTED.THREAD)");
}

TEST(TopdownSmt, BusySiblingSmtFormsGiveTheThreadAlone) {
    SimMachine alone = skylake_core_with_two_threads();
    SimPlatform pa(alone);
    Cmd ca = run_line(pa, std::string("run --json --bench add_indep --events CPU_CLK_UNHALTED.THREAD --cpu 0") + kFast);
    ASSERT_EQ(ca.status, 0) << ca.out;
    std::vector<pmutest::Json> res_alone = of_type(ca, "result");
    const pmutest::Json* cyc_alone = result_of(res_alone, "CPU_CLK_UNHALTED.THREAD");
    ASSERT_NE(cyc_alone, nullptr) << ca.out;

    SimMachine m = skylake_core_with_two_threads();
    ASSERT_EQ(m.set_siblings_busy(true), 2u);
    SimPlatform p(m);
    Cmd c = run_line(p, std::string("run --json --bench add_indep --topdown 1 --cpu 0") + kFast);
    ASSERT_EQ(c.status, 0) << c.out;
    std::vector<pmutest::Json> res = of_type(c, "result");
    ASSERT_FALSE(res.empty());
    EXPECT_EQ(res[0]["runs"].u(), 2u);  // 3 more GP events: REF_XCLK, 3C.02, 0D.01.AnyT
    for (const pmutest::Json& r : res) EXPECT_EQ(r["sibling"].s(), "busy");
    // The sibling's turns: twice the cycles, no cycle with this thread alone.
    const pmutest::Json* cyc = result_of(res, "CPU_CLK_UNHALTED.THREAD");
    ASSERT_NE(cyc, nullptr);
    const std::vector<u64> a = (*cyc_alone)["fraction"].u_list(), b = (*cyc)["fraction"].u_list();
    ASSERT_EQ(a.size(), 2u);
    ASSERT_EQ(b.size(), 2u);
    EXPECT_EQ(b[0] * a[1], 2 * a[0] * b[1]);
    const pmutest::Json* one = result_of(res, "3C.02");
    ASSERT_NE(one, nullptr) << c.out;
    EXPECT_EQ((*one)["fraction"].u_list(), (std::vector<u64>{0, 1}));
    ASSERT_NE(result_of(res, "0D.01.AnyT"), nullptr);
    std::vector<pmutest::Json> met = of_type(c, "metric");
    expect_level1_alone(met, "busy");
    EXPECT_EQ((*find(met, "metric", "tma_frontend_bound"))["formula"].s(),
              "[9C.01] / (2 * CPU_CLK_UNHALTED.THREAD * (1 + [3C.02] / CPU_CLK_UNHALTED.REF_XCLK))");
    EXPECT_EQ((*find(met, "metric", "tma_bad_speculation"))["formula"].s(),
              "([0E.01] - [C2.02] + 2 * [0D.01.AnyT]) / (2 * CPU_CLK_UNHALTED.THREAD * (1 + [3C.02] / "
              "CPU_CLK_UNHALTED.REF_XCLK))");
}

TEST(TopdownSmt, PlainFormWithBusySiblingHalvesRetiring) {
    // What the SMT forms fix: Skylake's plain retiring, 4 slots per cycle of this thread.
    SimMachine m = skylake_core_with_two_threads();
    m.set_siblings_busy(true);
    SimPlatform p(m);
    Cmd c = run_line(p, std::string("run --json --bench add_indep --cpu 0 --events CPU_CLK_UNHALTED.THREAD,C2.02") +
                            kFast);
    ASSERT_EQ(c.status, 0) << c.out;
    std::vector<pmutest::Json> res = of_type(c, "result");
    const pmutest::Json* cyc = result_of(res, "CPU_CLK_UNHALTED.THREAD");
    const pmutest::Json* ret = result_of(res, "C2.02");
    ASSERT_TRUE(cyc && ret) << c.out;
    // C2.02 = 2 per cycle of the thread's own turns, one turn in two: C2.02 = THREAD, so the
    // plain retiring C2.02 / (4 * THREAD) is 1/4 where the thread retires 1/2 of its slots.
    EXPECT_EQ((*ret)["fraction"].u_list(), (*cyc)["fraction"].u_list());
}

TEST(TopdownSmt, NoSiblingSaysNone) {
    SimMachine m = intel_skylake(2);  // two cores, one thread each
    SimPlatform p(m);
    Cmd c = run_line(p, std::string("run --json --bench nop --events tsc --cpu 1") + kFast);
    ASSERT_EQ(c.status, 0) << c.out;
    std::vector<pmutest::Json> res = of_type(c, "result");
    ASSERT_FALSE(res.empty());
    EXPECT_EQ(res[0]["sibling"].s(), "none");
    EXPECT_EQ(res[0]["core"].u(), 1u);
}
