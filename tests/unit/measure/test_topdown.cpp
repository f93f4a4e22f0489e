// `pmulab run --topdown` and `--metrics` end to end on simulated CPUs with known slot
// budgets (sim_cpu.h TopdownBudget): exact slot-scaled deltas per iteration, the
// validation rules, reset between runs, GP-event TopDown multiplexed by rerun, hybrid
// parts with TopDown on the P cores only.
#include <gtest/gtest.h>

#include <cstdlib>
#include <numeric>

#include "measure/metrics.h"
#include "sim/sim_topdown.h"
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

namespace {

TopdownBudget budget(u64 width, u64 ret, u64 bad, u64 fe, u64 be) {
    TopdownBudget b;
    b.slots_per_cycle = width;
    b.retiring = ret;
    b.bad_spec = bad;
    b.fe_bound = fe;
    b.be_bound = be;
    return b;
}

// With the level-2 parts: heavy operations, branch mispredicts, fetch latency, memory bound.
TopdownBudget budget2(TopdownBudget b, u64 heavy, u64 mispredicts, u64 fetch_lat, u64 mem) {
    b.heavy_ops = heavy;
    b.br_mispredict = mispredicts;
    b.fetch_lat = fetch_lat;
    b.mem_bound = mem;
    return b;
}

const char kFast[] = " --reps 3 --warmup 1 --unroll 10";

}  // namespace

// The per-iteration value of one result record, as a fraction num/den. The numerator may
// be negative: a PERF_METRICS category the kernel lacks comes out as its 1/255
// quantisation, either side of 0 (docs/metrics.md "Quantisation").
double per_iter(const pmutest::Json& r) {
    const pmutest::Json& f = r["fraction"];
    if (f.items.size() != 2) return -1e300;
    return std::strtod(f[0].s().c_str(), nullptr) / std::strtod(f[1].s().c_str(), nullptr);
}

struct Snap {
    std::vector<PmuState> st;
};
Snap snap(const SimMachine& m) {
    Snap s;
    for (u32 i = 0; i < m.size(); ++i) s.st.push_back(m.cpu(i).pmu_state());
    return s;
}

TEST(Topdown, IceLakeLevel1ExactFromPerfMetrics) {
    SimMachine m = intel_icelake(2);
    m.cpu(0).set_topdown(budget(5, 2, 1, 1, 1));
    // What firmware left in the PMU, PERF_METRICS included, must come back.
    m.cpu(0).poke(reg::PERF_METRICS, 0x11223399);
    m.cpu(0).poke(reg::FIXED_CTR0 + 3, 12345);
    Snap before = snap(m);
    SimPlatform p(m);
    Cmd c = run_line(p, std::string("run --json --bench add_indep --topdown 1") + kFast);
    ASSERT_EQ(c.status, 0) << c.out;
    std::vector<pmutest::Json> res = of_type(c, "result");
    // add_indep: 8 instructions per iteration, one per cycle, 5 slots per cycle.
    const pmutest::Json* slots = find(res, "event", "TOPDOWN.SLOTS");
    ASSERT_NE(slots, nullptr);
    EXPECT_EQ((*slots)["counter"].s(), "FIXED_CTR3");
    EXPECT_EQ((*slots)["fraction"].u_list(), (std::vector<u64>{40, 1}));
    const char* names[4] = {"PERF_METRICS.RETIRING", "PERF_METRICS.BAD_SPECULATION", "PERF_METRICS.FRONTEND_BOUND",
                            "PERF_METRICS.BACKEND_BOUND"};
    const u64 want[4] = {16, 8, 8, 8};
    for (int i = 0; i < 4; ++i) {
        const pmutest::Json* r = find(res, "event", names[i]);
        ASSERT_NE(r, nullptr) << names[i];
        EXPECT_EQ((*r)["counter"].s(), "METRICS");
        EXPECT_EQ((*r)["counter_method"].s(), "rdpmc");
        EXPECT_EQ((*r)["fraction"].u_list(), (std::vector<u64>{want[i], 1})) << names[i];
    }
    std::vector<pmutest::Json> met = of_type(c, "metric");
    ASSERT_EQ(met.size(), 4u);
    const char* mn[4] = {"tma_retiring", "tma_bad_speculation", "tma_frontend_bound", "tma_backend_bound"};
    const u64 num[4] = {2, 1, 1, 1};
    for (int i = 0; i < 4; ++i) {
        EXPECT_EQ(met[i]["metric"].s(), mn[i]);
        EXPECT_EQ(met[i]["fraction"].u_list(), (std::vector<u64>{num[i], 5})) << mn[i];
        EXPECT_EQ(met[i]["level"].u(), 1u);
        EXPECT_EQ(met[i]["method"].s(), "perf_metrics");
        EXPECT_TRUE(met[i]["valid"].b);
        EXPECT_FALSE(met[i].has("violation"));
        EXPECT_EQ(met[i]["inputs"]["TOPDOWN.SLOTS"].s(), "40.00");
    }
    EXPECT_EQ(met[0]["formula"].s(), "PERF_METRICS.RETIRING / TOPDOWN.SLOTS");
    EXPECT_EQ(met[0]["inputs"]["PERF_METRICS.RETIRING"].s(), "16.00");
    EXPECT_EQ(met[0]["value"].s(), "0.4000");
    // Restored exactly, PERF_METRICS and SLOTS included.
    for (u32 i = 0; i < m.size(); ++i) EXPECT_EQ(diff_state(before.st[i], m.cpu(i).pmu_state()), "") << i;
}

TEST(Topdown, ResetBeforeEveryRunInsideTheRegion) {
    SimMachine m = intel_icelake(1);
    m.cpu(0).set_topdown(budget(5, 2, 1, 1, 1));
    SimPlatform p(m);
    m.clear_logs();
    Cmd c = run_line(p, std::string("run --json --bench add_indep --topdown 1") + kFast);
    ASSERT_EQ(c.status, 0) << c.out;
    // Every run (3 reps + 1 warm-up, two versions) and the probe: FIXED_CTR3 = 0, then
    // PERF_METRICS = 0, then GLOBAL_CTRL with EN_PERF_METRICS (bit 48) and FIXED_CTR3 (35).
    std::vector<LogEntry> w = m.cpu(0).writes();
    unsigned resets = 0;
    for (size_t i = 0; i + 2 < w.size(); ++i)
        if (w[i].addr == reg::FIXED_CTR0 + 3 && w[i].value == 0 && w[i + 1].addr == reg::PERF_METRICS &&
            w[i + 1].value == 0 && w[i + 2].addr == reg::GLOBAL_CTRL) {
            EXPECT_EQ(w[i + 2].value & ((1ull << 48) | (1ull << 35)), (1ull << 48) | (1ull << 35));
            ++resets;
        }
    EXPECT_EQ(resets, 2u * (3 + 1) + 1);
}

// Issue #22: the SLOTS/PERF_METRICS reset comes after --init, right before the start reads,
// so a long init (frontend bound) does not swamp the fractions of the body (all
// retiring): with the reset before init, its slots sit in every read and their 1/255
// quantisation is larger than the body's slots. Needs an executor that runs init (the
// byte-pattern one skips it: the two runs are alike there too).
TEST(Topdown, LongInitDoesNotSwampTheFractions) {
    auto fractions = [](const std::string& extra) {
        SimMachine m = intel_icelake(1);
        m.cpu(0).set_topdown(budget(5, 1, 1, 2, 1));       // the harness and init
        m.cpu(0).set_topdown_body(budget(5, 5, 0, 0, 0));  // the body
        SimPlatform p(m);
        Cmd c = run_line(p, "run --json --code 4801c0 --topdown 1" + extra + kFast);
        EXPECT_EQ(c.status, 0) << c.out;
        std::vector<std::vector<u64>> f;
        for (const pmutest::Json& j : of_type(c, "metric")) {
            f.push_back(j["fraction"].u_list());
            EXPECT_TRUE(j["valid"].b) << c.out;
        }
        EXPECT_EQ(f.size(), 4u) << c.out;
        return f;
    };
    std::string init;
    for (int i = 0; i < 2000; ++i) init += "480fafc0";  // imul rax, rax: 10000 slots
    EXPECT_EQ(fractions(""), fractions(" --init " + init));
}

TEST(Topdown, HarnessSlotsCancelBetweenUAnd2U) {
    // The harness (reads, writes, serialisation) is frontend-heavy, the kernel all
    // retiring: the per-iteration slots are the kernel's, within PERF_METRICS's 1/255
    // quantisation, although every read's fractions mix both.
    SimMachine m = intel_icelake(1);
    m.cpu(0).set_topdown(budget(5, 1, 1, 2, 1));
    m.cpu(0).set_topdown_body(budget(5, 5, 0, 0, 0));
    SimPlatform p(m);
    Cmd c = run_line(p, "run --json --bench add_indep --topdown 1 --reps 3 --warmup 1 --unroll 100");
    ASSERT_EQ(c.status, 0) << c.out;
    std::vector<pmutest::Json> res = of_type(c, "result");
    EXPECT_EQ(per_iter(*find(res, "event", "TOPDOWN.SLOTS")), 40.0);
    EXPECT_NEAR(per_iter(*find(res, "event", "PERF_METRICS.RETIRING")), 40.0, 0.5);
    EXPECT_NEAR(per_iter(*find(res, "event", "PERF_METRICS.FRONTEND_BOUND")), 0.0, 0.5);
    std::vector<pmutest::Json> met = of_type(c, "metric");
    ASSERT_EQ(met.size(), 4u);
    for (const pmutest::Json& j : met) EXPECT_TRUE(j["valid"].b) << c.out;
}

TEST(Topdown, SapphireRapidsLevel2) {
    SimMachine m = intel_sapphire_rapids(1);
    m.cpu(0).set_topdown(budget2(budget(5, 2, 1, 1, 1), 1, 1, 0, 1));
    SimPlatform p(m);
    Cmd c = run_line(p, std::string("run --json --bench add_indep --topdown 2") + kFast);
    ASSERT_EQ(c.status, 0) << c.out;
    std::vector<pmutest::Json> met = of_type(c, "metric");
    ASSERT_EQ(met.size(), 12u);
    struct W {
        const char* name;
        u64 num, den;
    } want[] = {{"tma_retiring", 2, 5},           {"tma_heavy_operations", 1, 5}, {"tma_light_operations", 1, 5},
                {"tma_branch_mispredicts", 1, 5}, {"tma_machine_clears", 0, 1},   {"tma_fetch_latency", 0, 1},
                {"tma_fetch_bandwidth", 1, 5},    {"tma_memory_bound", 1, 5},     {"tma_core_bound", 0, 1}};
    for (const W& x : want) {
        const pmutest::Json* j = find(met, "metric", x.name);
        ASSERT_NE(j, nullptr) << x.name;
        EXPECT_EQ((*j)["fraction"].u_list(), (std::vector<u64>{x.num, x.den})) << x.name;
        EXPECT_TRUE((*j)["valid"].b) << x.name;
    }
    EXPECT_EQ((*find(met, "metric", "tma_heavy_operations"))["parent"].s(), "tma_retiring");
    EXPECT_EQ((*find(met, "metric", "tma_heavy_operations"))["level"].u(), 2u);
}

// Golden Cove and later: Intel's own definitions (Linux sapphirerapids/spr-metrics.json,
// alderlake/adl-metrics.json cpu_core): INT_MISC.UOP_DROPPING (AD.10) measured and taken off
// the frontend and fetch latency, bad speculation the rest of 1, machine clears the rest of
// that. Ice Lake (no AD.10 measured) keeps each byte's share.
TEST(Topdown, SapphireRapidsAsIntelDefinesIt) {
    SimMachine m = intel_sapphire_rapids(1);
    m.cpu(0).set_topdown(budget2(budget(7, 3, 2, 1, 1), 1, 1, 1, 1));  // sevenths: inexact bytes
    SimPlatform p(m);
    Cmd c = run_line(p, std::string("run --json --bench add_indep --topdown 2") + kFast);
    ASSERT_EQ(c.status, 0) << c.out;
    std::vector<pmutest::Json> res = of_type(c, "result");
    const pmutest::Json* drop = find(res, "event", "AD.10");
    ASSERT_NE(drop, nullptr) << c.out;
    EXPECT_EQ((*drop)["counter"].s().substr(0, 3), "PMC");
    std::vector<pmutest::Json> met = of_type(c, "metric");
    const pmutest::Json* fe = find(met, "metric", "tma_frontend_bound");
    const pmutest::Json* bad = find(met, "metric", "tma_bad_speculation");
    const pmutest::Json* lat = find(met, "metric", "tma_fetch_latency");
    const pmutest::Json* clears = find(met, "metric", "tma_machine_clears");
    ASSERT_TRUE(fe && bad && lat && clears) << c.out;
    EXPECT_EQ((*fe)["formula"].s(), "(PERF_METRICS.FRONTEND_BOUND - [AD.10]) / TOPDOWN.SLOTS");
    EXPECT_EQ((*bad)["formula"].s(),
              "max((TOPDOWN.SLOTS - PERF_METRICS.FRONTEND_BOUND - PERF_METRICS.BACKEND_BOUND - PERF_METRICS.RETIRING "
              "+ [AD.10]) / TOPDOWN.SLOTS, 0)");
    EXPECT_EQ((*lat)["formula"].s(), "(PERF_METRICS.FETCH_LATENCY - [AD.10]) / TOPDOWN.SLOTS");
    EXPECT_EQ((*clears)["inputs"]["AD.10"].s(), "0.00");  // not modelled by the simulator
    // Bad speculation is the rest of 1: the level-1 fractions sum to 1 exactly.
    u64 num = 0, den = 1;  // exact sum of the level-1 fractions
    for (const char* n : {"tma_retiring", "tma_bad_speculation", "tma_frontend_bound", "tma_backend_bound"}) {
        const pmutest::Json* j = find(met, "metric", n);
        ASSERT_NE(j, nullptr) << n;
        std::vector<u64> f = (*j)["fraction"].u_list();
        ASSERT_EQ(f.size(), 2u) << n;
        num = num * f[1] + f[0] * den;
        den *= f[1];
        u64 g = std::gcd(num, den);
        num /= g, den /= g;
        EXPECT_TRUE((*j)["valid"].b) << n << " " << c.out;
    }
    EXPECT_EQ(num, 1u);
    EXPECT_EQ(den, 1u);
    // Ice Lake: AD.10 is not measured, each category its byte's share.
    SimMachine icl = intel_icelake(1);
    icl.cpu(0).set_topdown(budget(7, 3, 2, 1, 1));
    SimPlatform pi(icl);
    Cmd ci = run_line(pi, std::string("run --json --bench add_indep --topdown 1") + kFast);
    ASSERT_EQ(ci.status, 0) << ci.out;
    EXPECT_EQ(find(of_type(ci, "result"), "event", "AD.10"), nullptr);
    EXPECT_EQ((*find(of_type(ci, "metric"), "metric", "tma_bad_speculation"))["formula"].s(),
              "PERF_METRICS.BAD_SPECULATION / TOPDOWN.SLOTS");
}

TEST(Topdown, IceLakeHasNoLevel2AndSaysSo) {
    SimMachine m = intel_icelake(1);
    m.cpu(0).set_topdown(budget(5, 2, 1, 1, 1));
    SimPlatform p(m);
    Cmd c = run_line(p, std::string("run --bench add_indep --topdown 2") + kFast);
    ASSERT_EQ(c.status, 0) << c.out;
    EXPECT_NE(c.out.find("this core has level 1 only"), std::string::npos) << c.out;
    EXPECT_NE(c.out.find("tma_retiring"), std::string::npos) << c.out;
    EXPECT_NE(c.out.find("tma_heavy_operations"), std::string::npos) << c.out;  // listed as undefined
    EXPECT_NE(c.out.find("undefined"), std::string::npos) << c.out;
}

TEST(Topdown, SkylakeFromGpEventsMultiplexedByRerun) {
    // Skylake: 4 GP counters; TopDown needs 4 GP events plus cycles, and two more
    // events make it 6: two runs of the benchmark.
    SimMachine m = intel_skylake(1);
    m.cpu(0).set_topdown(budget(4, 2, 1, 1, 0));
    SimPlatform p(m);
    Cmd c = run_line(p,
                     std::string("run --json --bench add_indep --topdown 1 --events branches,branch-misses") + kFast);
    ASSERT_EQ(c.status, 0) << c.out;
    std::vector<pmutest::Json> res = of_type(c, "result");
    ASSERT_FALSE(res.empty());
    EXPECT_EQ(res[0]["runs"].u(), 2u);
    std::vector<pmutest::Json> met = of_type(c, "metric");
    ASSERT_EQ(met.size(), 4u);
    const char* mn[4] = {"tma_retiring", "tma_bad_speculation", "tma_frontend_bound", "tma_backend_bound"};
    const std::vector<u64> want[4] = {{1, 2}, {1, 4}, {1, 4}, {0, 1}};
    for (int i = 0; i < 4; ++i) {
        const pmutest::Json* j = find(met, "metric", mn[i]);
        ASSERT_NE(j, nullptr) << mn[i];
        EXPECT_EQ((*j)["method"].s(), "skylake_events");
        EXPECT_EQ((*j)["fraction"].u_list(), want[i]) << mn[i];
        EXPECT_TRUE((*j)["valid"].b);
    }
    EXPECT_EQ((*find(met, "metric", "tma_frontend_bound"))["formula"].s(), "[9C.01] / (4 * CPU_CLK_UNHALTED.THREAD)");
}

TEST(Topdown, SkylakeLevel2FrontendSplitWithCmask) {
    // IDQ_UOPS_NOT_DELIVERED.CYCLES_0_UOPS_DELIV.CORE = 9C.01 with CMASK 4: the harness has 1
    // undelivered slot of 4 per cycle (never 4: no latency), the kernel all 4 (latency).
    SimMachine m = intel_skylake(1);
    m.cpu(0).set_topdown(budget(4, 2, 1, 1, 0));
    m.cpu(0).set_topdown_body(budget(4, 0, 0, 4, 0));
    SimPlatform p(m);
    Cmd c = run_line(p, std::string("run --json --bench add_indep --topdown 2") + kFast);
    ASSERT_EQ(c.status, 0) << c.out;
    EXPECT_NE(c.out.find("level 2 from GP events on Skylake-class cores is the frontend split only"), std::string::npos)
        << c.out;
    std::vector<pmutest::Json> met = of_type(c, "metric");
    ASSERT_EQ(met.size(), 6u) << c.out;  // 4 level 1, the frontend split
    const pmutest::Json* lat = find(met, "metric", "tma_fetch_latency");
    ASSERT_NE(lat, nullptr) << c.out;
    EXPECT_EQ((*lat)["formula"].s(), "4 * [9C.01.CMSK=4] / (4 * CPU_CLK_UNHALTED.THREAD)");
    EXPECT_EQ((*lat)["fraction"].u_list(), (std::vector<u64>{1, 1}));
    EXPECT_EQ((*lat)["inputs"]["9C.01.CMSK=4"].s(), "8.00");
    EXPECT_EQ((*lat)["method"].s(), "skylake_events");
    EXPECT_TRUE((*lat)["valid"].b);
    const pmutest::Json* bw = find(met, "metric", "tma_fetch_bandwidth");
    ASSERT_NE(bw, nullptr);
    EXPECT_EQ((*bw)["fraction"].u_list(), (std::vector<u64>{0, 1}));
    EXPECT_EQ((*find(met, "metric", "tma_frontend_bound"))["fraction"].u_list(), (std::vector<u64>{1, 1}));
    // The harness's budget in the kernel too: all of the frontend is bandwidth.
    SimMachine m2 = intel_skylake(1);
    m2.cpu(0).set_topdown(budget(4, 2, 1, 1, 0));
    SimPlatform p2(m2);
    c = run_line(p2, std::string("run --json --bench add_indep --topdown 2") + kFast);
    ASSERT_EQ(c.status, 0) << c.out;
    met = of_type(c, "metric");
    EXPECT_EQ((*find(met, "metric", "tma_fetch_latency"))["fraction"].u_list(), (std::vector<u64>{0, 1}));
    EXPECT_EQ((*find(met, "metric", "tma_fetch_bandwidth"))["fraction"].u_list(), (std::vector<u64>{1, 4}));
    for (const pmutest::Json& j : met) EXPECT_TRUE(j["valid"].b) << j["metric"].s();
}

TEST(Topdown, HybridTopdownOnBothCoreTypesEachWithItsMethod) {
    // Alder Lake: PERF_METRICS on the P cores, Gracemont's own events on the E cores
    // (5 slots per CPU_CLK_UNHALTED.CORE). (Before E-core TopDown, this test asserted
    // TopDown on the P cores only.)
    SimMachine m = intel_alder_lake();
    for (u32 i = 0; i < m.size(); ++i) m.cpu(i).set_topdown(budget(5, 2, 1, 1, 1));
    SimPlatform p(m);
    Cmd c = run_line(p, std::string("run --json --bench add_indep --topdown 1 --cpu 0,4") + kFast);
    ASSERT_EQ(c.status, 0) << c.out;
    std::vector<pmutest::Json> met = of_type(c, "metric");
    ASSERT_EQ(met.size(), 8u) << c.out;
    EXPECT_EQ(find(met, "metric", "tma_retiring")->operator[]("fraction").u_list(), (std::vector<u64>{2, 5}));
    const char* mn[4] = {"tma_retiring", "tma_bad_speculation", "tma_frontend_bound", "tma_backend_bound"};
    const std::vector<u64> want[4] = {{2, 5}, {1, 5}, {1, 5}, {1, 5}};
    const char* inputs[4] = {"C2.00", "73.00", "71.00", "74.00"};
    for (int i = 0; i < 4; ++i) {
        const pmutest::Json* p0 = find(met, "metric", mn[i], 0);
        const pmutest::Json* e4 = find(met, "metric", mn[i], 4);
        ASSERT_NE(p0, nullptr) << mn[i];
        ASSERT_NE(e4, nullptr) << mn[i];
        EXPECT_EQ((*p0)["method"].s(), "perf_metrics");
        EXPECT_EQ((*p0)["fraction"].u_list(), want[i]) << mn[i];
        EXPECT_EQ((*e4)["method"].s(), "gracemont_events");
        EXPECT_EQ((*e4)["fraction"].u_list(), want[i]) << mn[i];
        EXPECT_EQ((*e4)["formula"].s(), std::string("[") + inputs[i] + "] / (5 * CPU_CLK_UNHALTED.CORE)");
        EXPECT_EQ((*e4)["inputs"]["CPU_CLK_UNHALTED.CORE"].s(), "8.00");
        EXPECT_TRUE((*e4)["valid"].b);
    }
    // The E core's inputs are GP counts, exact: 16 retiring slots of 40 per iteration.
    std::vector<pmutest::Json> res = of_type(c, "result");
    EXPECT_NE(find(res, "event", "tsc", 4), nullptr);
    EXPECT_EQ(find(res, "event", "C2.00", 4)->operator[]("fraction").u_list(), (std::vector<u64>{16, 1}));
    EXPECT_EQ(find(res, "event", "71.00", 4)->operator[]("fraction").u_list(), (std::vector<u64>{8, 1}));
    EXPECT_EQ(c.out.find("TopDown is unavailable"), std::string::npos) << c.out;
}

TEST(Topdown, UnavailableUnderTcgWithTheReason) {
    SimMachine m = qemu_tcg_intel(2);
    SimPlatform p(m);
    Cmd c = run_line(p, "run --bench add_indep --topdown 1");
    EXPECT_EQ(c.status, 3) << c.out;
    EXPECT_NE(c.out.find("--topdown: CPU 0: TopDown is unavailable: no performance counters"), std::string::npos)
        << c.out;
}

TEST(Topdown, BadLevelIsAUsageError) {
    SimMachine m = intel_icelake(1);
    SimPlatform p(m);
    Cmd c = run_line(p, "run --bench add_indep --topdown 3");
    EXPECT_EQ(c.status, 2);
    EXPECT_NE(c.out.find("--topdown: '3' is not a level (1 or 2)"), std::string::npos) << c.out;
    c = run_line(p, "run --bench add_indep --metrics IPC,frobnicate");
    EXPECT_EQ(c.status, 2);
    EXPECT_NE(c.out.find("unknown metric or group 'frobnicate'"), std::string::npos) << c.out;
}

TEST(Metrics, IpcAndCpiExact) {
    SimMachine m = intel_icelake(1);
    SimPlatform p(m);
    Cmd c = run_line(p, std::string("run --json --bench add_indep --metrics IPC,CPI,frequency_ratio") + kFast);
    ASSERT_EQ(c.status, 0) << c.out;
    std::vector<pmutest::Json> met = of_type(c, "metric");
    ASSERT_EQ(met.size(), 3u) << c.out;
    EXPECT_EQ(met[0]["metric"].s(), "IPC");
    EXPECT_EQ(met[0]["fraction"].u_list(), (std::vector<u64>{1, 1}));
    EXPECT_EQ(met[0]["inputs"]["INST_RETIRED.ANY"].s(), "8.00");
    EXPECT_EQ(met[0]["inputs"]["CPU_CLK_UNHALTED.THREAD"].s(), "8.00");
    EXPECT_EQ(met[1]["metric"].s(), "CPI");
    EXPECT_EQ(met[1]["value"].s(), "1.0000");
    EXPECT_EQ(met[2]["metric"].s(), "frequency_ratio");
    EXPECT_EQ(met[2]["fraction"].u_list(), (std::vector<u64>{1, 1}));
}
