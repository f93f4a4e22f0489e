// Derived metrics from AMD's own events (branch-miss rate, L2 miss ratio, ops per
// instruction: Linux amdzen4 recommended.json / cache.json / core.json) and AMD's TopDown
// frontend split (PMCx1A0 unit mask 01h with CntMask = 6 or 8: amdzen4/amdzen5
// pipeline.json), end to end on simulated Zen 3/4/5 CPUs with exact values, and the rule
// that level-2 parts sum to their level-1 parent.
#include <gtest/gtest.h>

#include <map>

#include "measure/metrics.h"
#include "sim/sim_topdown.h"
#include "support/sim_cmd.h"
#include "support/sim_measure.h"
#include "support/test_platform.h"

using namespace pmulab;
using namespace sim;
using simm::SimPlatform;

using simm::Cmd;
using simm::run_line;

namespace {

std::vector<pmutest::Json> metrics_of(const Cmd& c) {
    std::vector<pmutest::Json> r;
    for (const pmutest::Json& j : c.recs)
        if (j["type"].s() == "metric") r.push_back(j);
    return r;
}

const pmutest::Json* find(const std::vector<pmutest::Json>& v, const char* name) {
    for (const pmutest::Json& j : v)
        if (j["metric"].s() == name) return &j;
    return nullptr;
}

const char kFast[] = " --reps 3 --warmup 1 --unroll 10";

// The test's event mix of every cycle: 5 retired branches of which 1 mispredicted, and
// L2 demand requests: 1 miss, 2 hits.
const std::vector<Occurrence> kMix = {{0x0C2, 0x00, 5}, {0x0C3, 0x00, 1}, {0x064, 0x09, 1}, {0x064, 0xF6, 2}};

void expect_metric(const std::vector<pmutest::Json>& met, const char* name, const char* formula,
                   std::vector<u64> fraction) {
    const pmutest::Json* j = find(met, name);
    ASSERT_NE(j, nullptr) << name;
    EXPECT_EQ((*j)["formula"].s(), formula) << name;
    EXPECT_EQ((*j)["fraction"].u_list(), fraction) << name;
    EXPECT_TRUE((*j)["valid"].b) << name;
}

}  // namespace

TEST(MetricsAmd, Zen4BranchL2AndOpsFromAmdEvents) {
    SimMachine m = amd_zen4(1);
    apply_default_topdown(m);  // 3 retiring ops per cycle (PMCx0C1), no mispredicts of its own
    m.cpu(0).set_each_cycle(kMix);
    SimPlatform p(m);
    Cmd c = run_line(p, std::string("run --json --bench add_indep --metrics branch_miss_rate,l2_miss_ratio,"
                                    "uops_per_instruction,IPC") +
                            kFast);
    ASSERT_EQ(c.status, 0) << c.out;
    std::vector<pmutest::Json> met = metrics_of(c);
    ASSERT_EQ(met.size(), 4u) << c.out;
    // add_indep: 8 cycles per iteration, one instruction per cycle.
    expect_metric(met, "branch_miss_rate", "ex_ret_brn_misp / ex_ret_brn", {1, 5});
    EXPECT_EQ((*find(met, "branch_miss_rate"))["inputs"]["ex_ret_brn"].s(), "40.00");
    EXPECT_EQ((*find(met, "branch_miss_rate"))["inputs"]["ex_ret_brn_misp"].s(), "8.00");
    expect_metric(met, "l2_miss_ratio",
                  "l2_cache_req_stat.ic_dc_miss_in_l2 / (l2_cache_req_stat.ic_dc_miss_in_l2 + "
                  "l2_cache_req_stat.ic_dc_hit_in_l2)",
                  {1, 3});
    EXPECT_EQ((*find(met, "l2_miss_ratio"))["inputs"]["l2_cache_req_stat.ic_dc_hit_in_l2"].s(), "16.00");
    expect_metric(met, "uops_per_instruction", "ex_ret_ops / instructions", {3, 1});
    EXPECT_EQ((*find(met, "uops_per_instruction"))["unit"].s(), "macro-ops/instruction");
    expect_metric(met, "IPC", "instructions / cycles", {1, 1});
}

TEST(MetricsAmd, Zen3AndTheZen5DumpToo) {
    SimMachine z3 = amd_zen3(1);
    z3.cpu(0).set_each_cycle(kMix);
    SimPlatform p3(z3);
    Cmd c = run_line(p3, std::string("run --json --bench add_indep --metrics Branches,Cache") + kFast);
    ASSERT_EQ(c.status, 0) << c.out;
    std::vector<pmutest::Json> met = metrics_of(c);
    expect_metric(met, "branch_miss_rate", "ex_ret_brn_misp / ex_ret_brn", {1, 5});
    expect_metric(met, "l2_miss_ratio",
                  "l2_cache_req_stat.ic_dc_miss_in_l2 / (l2_cache_req_stat.ic_dc_miss_in_l2 + "
                  "l2_cache_req_stat.ic_dc_hit_in_l2)",
                  {1, 3});
    // The LLC (AMD's L3) is counted by the L3 PMU, not the core's: the Intel names stay
    // undefined there, with the reason.
    const pmutest::Json* llc = find(met, "llc_miss_ratio");
    ASSERT_NE(llc, nullptr) << c.out;
    EXPECT_TRUE((*llc)["value"].is_null()) << c.out;
    EXPECT_EQ((*llc)["undefined"].s(),
              "no definition over this CPU's events ('LONGEST_LAT_CACHE.MISS' is an event of other CPUs)");

    SimMachine z5 = pmutest::dump_machine("AuthenticAMD0B40F40_K20_GraniteRidge_02_CPUID.txt");
    z5.cpu(0).set_each_cycle(kMix);
    SimPlatform p5(z5);
    c = run_line(p5,
                 std::string("run --json --bench add_indep --cpu 0 --metrics branch_miss_rate,l2_miss_ratio") + kFast);
    ASSERT_EQ(c.status, 0) << c.out;
    met = metrics_of(c);
    ASSERT_EQ(met.size(), 2u) << c.out;
    expect_metric(met, "branch_miss_rate", "ex_ret_brn_misp / ex_ret_brn", {1, 5});
    expect_metric(met, "l2_miss_ratio",
                  "l2_cache_req_stat.ic_dc_miss_in_l2 / (l2_cache_req_stat.ic_dc_miss_in_l2 + "
                  "l2_cache_req_stat.ic_dc_hit_in_l2)",
                  {1, 3});
}

TEST(MetricsAmd, IntelKeepsItsOwnDefinitions) {
    SimMachine m = intel_icelake(1);
    SimPlatform p(m);
    Cmd c = run_line(p, std::string("run --json --bench add_indep --metrics branch_miss_rate") + kFast);
    ASSERT_EQ(c.status, 0) << c.out;
    std::vector<pmutest::Json> met = metrics_of(c);
    ASSERT_EQ(met.size(), 1u) << c.out;
    EXPECT_EQ(met[0]["formula"].s(), "BR_MISP_RETIRED.ALL_BRANCHES / BR_INST_RETIRED.ALL_BRANCHES");
    // AMD's L2 events are not measured on Intel: the run goes on, the metric says why.
    c = run_line(p, std::string("run --json --bench add_indep --metrics Cache") + kFast);
    ASSERT_EQ(c.status, 0) << c.out;
    met = metrics_of(c);
    const pmutest::Json* l2 = find(met, "l2_miss_ratio");
    ASSERT_NE(l2, nullptr) << c.out;
    EXPECT_EQ((*l2)["undefined"].s(),
              "no definition over this CPU's events ('l2_cache_req_stat.ic_dc_miss_in_l2' is an event of other CPUs)");
}

TEST(MetricsAmd, Zen4FrontendSplitWithCntMask) {
    // The harness: the default budget (6 slots: 3 retiring, 1 bad speculation, 1 frontend,
    // 1 backend): one empty frontend slot per cycle is bandwidth, never >= CntMask 6. The
    // kernel: every slot of every cycle empty for want of frontend ops: latency.
    SimMachine m = amd_zen4(1);
    apply_default_topdown(m);
    TopdownBudget body;
    body.slots_per_cycle = 6;
    body.fe_bound = 6;
    m.cpu(0).set_topdown_body(body);
    SimPlatform p(m);
    Cmd c = run_line(p, std::string("run --json --bench add_indep --topdown 2") + kFast);
    ASSERT_EQ(c.status, 0) << c.out;
    std::vector<pmutest::Json> met = metrics_of(c);
    expect_metric(met, "tma_frontend_bound", "de_no_dispatch_per_slot.no_ops_from_frontend / (6 * ls_not_halted_cyc)",
                  {1, 1});
    expect_metric(met, "tma_fetch_latency", "6 * [1A0.01.CMSK=6] / (6 * ls_not_halted_cyc)", {1, 1});
    expect_metric(met, "tma_fetch_bandwidth",
                  "(de_no_dispatch_per_slot.no_ops_from_frontend - 6 * [1A0.01.CMSK=6]) / (6 * ls_not_halted_cyc)",
                  {0, 1});
    const pmutest::Json* lat = find(met, "tma_fetch_latency");
    EXPECT_EQ((*lat)["inputs"]["1A0.01.CMSK=6"].s(), "8.00") << c.out;  // 8 cycles
    EXPECT_EQ((*lat)["parent"].s(), "tma_frontend_bound");
    EXPECT_EQ((*lat)["method"].s(), "zen4_pipeline");

    // Without the body budget: the kernel's cycles have 1 empty frontend slot each.
    SimMachine m2 = amd_zen4(1);
    apply_default_topdown(m2);
    SimPlatform p2(m2);
    c = run_line(p2, std::string("run --json --bench add_indep --topdown 2") + kFast);
    ASSERT_EQ(c.status, 0) << c.out;
    met = metrics_of(c);
    expect_metric(met, "tma_fetch_latency", "6 * [1A0.01.CMSK=6] / (6 * ls_not_halted_cyc)", {0, 1});
    expect_metric(met, "tma_fetch_bandwidth",
                  "(de_no_dispatch_per_slot.no_ops_from_frontend - 6 * [1A0.01.CMSK=6]) / (6 * ls_not_halted_cyc)",
                  {1, 6});
}

TEST(MetricsAmd, Zen5FrontendSplitUsesCntMask8) {
    // 7 of 8 slots empty from the frontend: below CntMask 8, all bandwidth.
    SimMachine m = pmutest::dump_machine("AuthenticAMD0B40F40_K20_GraniteRidge_02_CPUID.txt");
    apply_default_topdown(m);
    TopdownBudget body;
    body.slots_per_cycle = 8;
    body.retiring = 1;
    body.fe_bound = 7;
    m.cpu(0).set_topdown_body(body);
    SimPlatform p(m);
    Cmd c = run_line(p, std::string("run --json --bench add_indep --topdown 2 --cpu 0") + kFast);
    ASSERT_EQ(c.status, 0) << c.out;
    std::vector<pmutest::Json> met = metrics_of(c);
    expect_metric(met, "tma_frontend_bound", "de_no_dispatch_per_slot.no_ops_from_frontend / (8 * ls_not_halted_cyc)",
                  {7, 8});
    expect_metric(met, "tma_fetch_latency", "8 * [1A0.01.CMSK=8] / (8 * ls_not_halted_cyc)", {0, 1});
    expect_metric(met, "tma_fetch_bandwidth",
                  "(de_no_dispatch_per_slot.no_ops_from_frontend - 8 * [1A0.01.CMSK=8]) / (8 * ls_not_halted_cyc)",
                  {7, 8});
    EXPECT_EQ((*find(met, "tma_fetch_latency"))["method"].s(), "zen5_pipeline");
}

TEST(MetricsAmd, LevelTwoPartsSumToTheirParent) {
    MetricSet set;
    const char kText[] = "name=fe; groups=T; level=1; range=0..1; formula=a / s\n"
                         "name=lat; groups=T; level=2; parent=fe; range=0..1; formula=b / s\n"
                         "name=bw; groups=T; level=2; parent=fe; range=0..1; formula=c / s\n";
    ASSERT_TRUE(parse_metric_text(StrView(kText), "t.mtr", &set).ok());
    struct In final : MetricInputs {
        std::map<std::string, i64> v;
        bool get(StrView l, Frac* out) const override {
            auto it = v.find(std::string(l.ptr, l.len));
            if (it == v.end()) return false;
            *out = Frac{it->second, 1};
            return true;
        }
    } in;
    in.v = {{"s", 100}, {"a", 30}, {"b", 10}, {"c", 20}};
    Vec<StrView> names;
    ASSERT_TRUE(select_metrics(set, StrView("T"), &names).ok());
    Vec<MetricValue> v;
    evaluate_metrics(set, names, TopdownMethod::none, in, &v);
    ASSERT_EQ(v.size(), 3u);
    for (const MetricValue& mv : v) EXPECT_STREQ(mv.violation, "") << mv.def->name;
    // 0.1 + 0.25 = 0.35, not 0.30: both parts flagged, the parent not.
    in.v["c"] = 25;
    v.clear();
    evaluate_metrics(set, names, TopdownMethod::none, in, &v);
    EXPECT_STREQ(v[0].violation, "");
    EXPECT_STREQ(v[1].violation, "the level-2 parts of fe sum to 0.3500, not its 0.3000 (tolerance 0.01)");
    EXPECT_STREQ(v[2].violation, "the level-2 parts of fe sum to 0.3500, not its 0.3000 (tolerance 0.01)");
    // Within the tolerance: 0.305.
    in.v["s"] = 1000;
    in.v["a"] = 300;
    in.v["b"] = 100;
    in.v["c"] = 205;
    v.clear();
    evaluate_metrics(set, names, TopdownMethod::none, in, &v);
    for (const MetricValue& mv : v) EXPECT_STREQ(mv.violation, "") << mv.def->name;
    // One part alone is not checked against the whole.
    Vec<StrView> some;
    ASSERT_TRUE(select_metrics(set, StrView("fe,lat"), &some).ok());
    in.v = {{"s", 100}, {"a", 30}, {"b", 10}, {"c", 20}};
    v.clear();
    evaluate_metrics(set, some, TopdownMethod::none, in, &v);
    for (const MetricValue& mv : v) EXPECT_STREQ(mv.violation, "") << mv.def->name;
}
