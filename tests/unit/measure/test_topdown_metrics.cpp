// Metric definitions as data (measure/metrics.h): the file format, exact evaluation,
// and perf-style validation (ranges, level-1 sum, level 2 <= parent), flagged never hidden.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "measure/metrics.h"

using namespace pmulab;

namespace {

struct MapInputs final : MetricInputs {
    std::map<std::string, Frac> v;
    bool get(StrView label, Frac* out) const override {
        auto it = v.find(std::string(label.ptr, label.len));
        if (it == v.end()) return false;
        *out = it->second;
        return true;
    }
};

std::string err_of(const Status& s) { return s.ok() ? "" : s.error().msg; }

MetricSet parse(const char* text) {
    MetricSet s;
    Status st = parse_metric_text(StrView(text), "t.mtr", &s);
    EXPECT_TRUE(st.ok()) << err_of(st);
    return s;
}

}  // namespace

TEST(MetricFormula, ExactArithmeticAndPrecedence) {
    MapInputs in;
    in.v["A"] = Frac{7, 1};
    in.v["B"] = Frac{3, 2};
    in.v["topdown-x"] = Frac{1, 3};
    Result<Frac> r = eval_formula(StrView("A - B * 2 / (1 + 2)"), in);  // 7 - 1 = 6
    ASSERT_TRUE(r.ok());
    EXPECT_TRUE(frac_eq(r.value(), Frac{6, 1}));
    r = eval_formula(StrView("[topdown-x] * 3 + -A + 0.5"), in);  // 1 - 7 + 0.5
    ASSERT_TRUE(r.ok());
    EXPECT_TRUE(frac_eq(r.value(), Frac{-11, 2}));
    r = eval_formula(StrView("A / (B - 1.5)"), in);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, Errc::unsupported);
    EXPECT_STREQ(r.error().msg, "division by zero");
    r = eval_formula(StrView("A / C"), in);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, Errc::not_found);
    EXPECT_STREQ(r.error().msg, "input 'C' was not measured");
    Vec<StrView> names;
    ASSERT_TRUE(formula_inputs(StrView("(a + [b-c]) / a * 4"), &names).ok());
    ASSERT_EQ(names.size(), 2u);
    EXPECT_TRUE(names[1].eq(StrView("b-c")));
}

TEST(MetricFile, ErrorsNameTheFileAndLine) {
    MetricSet s;
    Status st = parse_metric_text(StrView("# ok\nname=a; formula=x / y\nname=b; formula=x / (y\n"), "m.mtr", &s);
    EXPECT_EQ(err_of(st), "m.mtr:3: formula 'x / (y': ')' is missing at column 7");
    EXPECT_EQ(err_of(parse_metric_text(StrView("name=a\n"), "m.mtr", &s)), "m.mtr:1: metric 'a' needs formula=");
    EXPECT_EQ(err_of(parse_metric_text(StrView("name=a; formula=x; colour=red\n"), "m.mtr", &s)),
              "m.mtr:1: unknown key 'colour' (name, formula, groups, unit, range, level, parent, method, desc)");
    EXPECT_EQ(err_of(parse_metric_text(StrView("name=a; formula=x; level=2\n"), "m.mtr", &s)),
              "m.mtr:1: metric 'a': level 2 needs parent=");
    EXPECT_EQ(err_of(parse_metric_text(StrView("name=a b; formula=x\n"), "m.mtr", &s)),
              "m.mtr:1: name 'a b': letters, digits, '_' and '.' only");
    // The built-in definitions parse.
    MetricSet b;
    ASSERT_TRUE(parse_metric_text(StrView(kBuiltinMetrics), "built-in", &b).ok());
    EXPECT_GE(b.defs.size(), 20u);
}

TEST(MetricSelect, GroupsExpandAndUnknownNamesFail) {
    MetricSet b;
    ASSERT_TRUE(parse_metric_text(StrView(kBuiltinMetrics), "built-in", &b).ok());
    Vec<StrView> n;
    ASSERT_TRUE(select_metrics(b, StrView("IPC,TopdownL1,ipc"), &n).ok());
    ASSERT_EQ(n.size(), 6u);  // IPC once, four level-1 names once each (many variants), AMD's tma_smt_contention
    EXPECT_TRUE(n[0].eq(StrView("IPC")));
    EXPECT_TRUE(n[1].eq(StrView("tma_retiring")));
    EXPECT_TRUE(n[5].eq(StrView("tma_smt_contention")));
    Vec<StrView> m;
    Status st = select_metrics(b, StrView("nope"), &m);
    EXPECT_EQ(st.error().code, Errc::invalid_argument);
}

TEST(MetricValidate, RangeSumAndParentViolationsAreFlagged) {
    MetricSet s = parse("name=r; level=1; range=0..1; formula=R / S\n"
                        "name=b; level=1; range=0..1; formula=B / S\n"
                        "name=f; level=1; range=0..1; formula=F / S\n"
                        "name=k; level=1; range=0..1; formula=K / S\n"
                        "name=h; level=2; parent=r; range=0..1; formula=H / S\n"
                        "name=ipc; range=0..; formula=I / S\n");
    Vec<StrView> names;
    ASSERT_TRUE(select_metrics(s, StrView("r,b,f,k,h,ipc"), &names).ok());
    MapInputs in;
    in.v = {{"R", {40, 1}}, {"B", {20, 1}},  {"F", {20, 1}}, {"K", {20, 1}},
            {"H", {10, 1}}, {"S", {100, 1}}, {"I", {-3, 1}}};
    Vec<MetricValue> v;
    evaluate_metrics(s, names, TopdownMethod::none, in, &v);
    ASSERT_EQ(v.size(), 6u);
    for (int i = 0; i < 5; ++i) EXPECT_STREQ(v[i].violation, "") << i;
    EXPECT_STREQ(v[5].violation, "-0.0300 is below its range (minimum 0.0000, tolerance 0.01)");
    // Level 1 off by 2/100 (beyond the 1/100 tolerance); level 2 above its parent.
    in.v["K"] = {22, 1};
    in.v["H"] = {42, 1};
    v.clear();
    evaluate_metrics(s, names, TopdownMethod::none, in, &v);
    EXPECT_STREQ(v[0].violation, "the level-1 parts sum to 1.0200, not 1 (tolerance 0.01)");
    EXPECT_STREQ(v[3].violation, "the level-1 parts sum to 1.0200, not 1 (tolerance 0.01)");
    EXPECT_STREQ(v[4].violation, "0.4200 exceeds its parent r (0.4000)");
    // Within the tolerance: 1/100 exactly passes.
    in.v["K"] = {21, 1};
    in.v["H"] = {41, 1};
    v.clear();
    evaluate_metrics(s, names, TopdownMethod::none, in, &v);
    EXPECT_STREQ(v[0].violation, "");
    EXPECT_STREQ(v[4].violation, "");
    // Undefined (division by zero) is reported, not a value.
    in.v["S"] = {0, 1};
    v.clear();
    evaluate_metrics(s, names, TopdownMethod::none, in, &v);
    EXPECT_FALSE(v[0].ok);
    EXPECT_STREQ(v[0].why, "division by zero");
}

TEST(MetricValidate, VariantsByMethodAndInputs) {
    MetricSet s = parse("name=x; method=perf_metrics; formula=P / S\n"
                        "name=x; method=skylake_events; formula=Q / S\n"
                        "name=y; formula=A / S\n"
                        "name=y; formula=B / S\n");
    Vec<StrView> names;
    ASSERT_TRUE(select_metrics(s, StrView("x,y"), &names).ok());
    MapInputs in;
    in.v = {{"P", {1, 1}}, {"Q", {3, 1}}, {"B", {2, 1}}, {"S", {4, 1}}};
    Vec<MetricValue> v;
    evaluate_metrics(s, names, TopdownMethod::skylake_events, in, &v);
    ASSERT_EQ(v.size(), 2u);
    EXPECT_TRUE(frac_eq(v[0].value, Frac{3, 4}));
    EXPECT_TRUE(frac_eq(v[1].value, Frac{1, 2}));  // A missing: the second variant
    v.clear();
    evaluate_metrics(s, names, TopdownMethod::none, in, &v);
    EXPECT_FALSE(v[0].ok);
    EXPECT_STREQ(v[0].why, "no definition for this CPU (TopDown method none)");
}

TEST(MetricFile, WhatPmulabEventsGeneratesParses) {
    // Two lines tools/pmulab-events writes from Intel's metrics JSON (tests/py/test_pmulab_events.py).
    MetricSet s = parse(
        "# pmulab metric file, generated by tools/pmulab-events from intel/perfmon; see docs/metrics.md\n"
        "name=CPI; groups=General; unit=per instruction; desc=Cycles per instruction, lower is better; "
        "formula=[CPU_CLK_UNHALTED.THREAD] / [INST_RETIRED.ANY]\n"
        "name=TMA_Retiring; groups=TopdownL1,tma_L1_group; formula=100 * ([PERF_METRICS.RETIRING] / "
        "[TOPDOWN.SLOTS])\n");
    ASSERT_EQ(s.defs.size(), 2u);
    MapInputs in;
    in.v = {{"PERF_METRICS.RETIRING", {16, 1}}, {"TOPDOWN.SLOTS", {40, 1}}};
    Result<Frac> r = eval_formula(StrView(s.defs[1].formula), in);
    ASSERT_TRUE(r.ok());
    EXPECT_TRUE(frac_eq(r.value(), Frac{40, 1}));
}

TEST(MetricFormula, MaxAndMinAsIntelWritesThem) {
    MapInputs in;
    in.v["A"] = Frac{1, 4};
    in.v["B"] = Frac{3, 4};
    Result<Frac> r = eval_formula(StrView("max(1 - (A + B + B), 0)"), in);
    ASSERT_TRUE(r.ok()) << r.error().msg;
    EXPECT_TRUE(frac_eq(r.value(), Frac{0, 1}));
    r = eval_formula(StrView("MAX(0, A - B) + min(A, B) * 2"), in);
    ASSERT_TRUE(r.ok()) << r.error().msg;
    EXPECT_TRUE(frac_eq(r.value(), Frac{1, 2}));
    r = eval_formula(StrView("max(A)"), in);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(std::string(r.error().msg).find("',' is missing"), std::string::npos) << r.error().msg;
    // An event called max (no parenthesis) stays an input.
    in.v["max"] = Frac{2, 1};
    r = eval_formula(StrView("max * 2"), in);
    ASSERT_TRUE(r.ok());
    EXPECT_TRUE(frac_eq(r.value(), Frac{4, 1}));
    Vec<StrView> names;
    ASSERT_TRUE(formula_inputs(StrView("max(a, [b.c]) / min(a, 1)"), &names).ok());
    ASSERT_EQ(names.size(), 2u);
    EXPECT_TRUE(names[0].eq(StrView("a")));
    EXPECT_TRUE(names[1].eq(StrView("b.c")));
}

// Intel's TopDown over PERF_METRICS on Golden Cove and later (Linux sapphirerapids/
// spr-metrics.json, alderlake/adl-metrics.json cpu_core): INT_MISC.UOP_DROPPING (AD.10) off
// the frontend and fetch latency, bad speculation max(1 - (FE + BE + RET), 0), machine
// clears max(0, bad speculation - branch mispredicts). Each PERF_METRICS input is already
// its share of SLOTS (byte * SLOTS / 255), so Intel's byte / (sum of bytes) is input / SLOTS.
TEST(MetricBuiltin, GoldenCovePerfMetricsAsIntelDefinesThem) {
    MetricSet b;
    ASSERT_TRUE(parse_metric_text(StrView(kBuiltinMetrics), "built-in", &b).ok());
    Vec<StrView> names;
    ASSERT_TRUE(select_metrics(b, StrView("TopdownL1,TopdownL2"), &names).ok());
    MapInputs in;
    // Slot counts per iteration as the engine gives them (floor(byte * SLOTS / 255)): the
    // level-1 ones sum to 96 of the 100 slots; 5 slots of dropped uops.
    in.v = {{"TOPDOWN.SLOTS", {100, 1}},
            {"PERF_METRICS.RETIRING", {40, 1}},
            {"PERF_METRICS.BAD_SPECULATION", {6, 1}},
            {"PERF_METRICS.FRONTEND_BOUND", {30, 1}},
            {"PERF_METRICS.BACKEND_BOUND", {20, 1}},
            {"PERF_METRICS.HEAVY_OPERATIONS", {10, 1}},
            {"PERF_METRICS.BRANCH_MISPREDICTS", {2, 1}},
            {"PERF_METRICS.FETCH_LATENCY", {18, 1}},
            {"PERF_METRICS.MEMORY_BOUND", {12, 1}},
            {"AD.10", {5, 1}}};
    Vec<MetricValue> v;
    evaluate_metrics(b, names, TopdownMethod::perf_metrics, in, &v, Frac{1, 100});
    std::map<std::string, Frac> got;
    for (const MetricValue& mv : v) {
        if (mv.no_variant) continue;  // AMD's tma_smt_contention
        ASSERT_TRUE(mv.ok) << mv.def->name << ": " << mv.why;
        EXPECT_STREQ(mv.violation, "") << mv.def->name;  // level 1 sums to 1 exactly
        got[mv.def->name] = mv.value;
    }
    auto pct = [](i64 n) { return Frac{n, 100}; };
    EXPECT_TRUE(frac_eq(got["tma_retiring"], pct(40)));
    EXPECT_TRUE(frac_eq(got["tma_backend_bound"], pct(20)));
    EXPECT_TRUE(frac_eq(got["tma_frontend_bound"], pct(25)));   // 30 - 5 dropped
    EXPECT_TRUE(frac_eq(got["tma_bad_speculation"], pct(15)));  // 1 - (25 + 20 + 40)/100, not 6
    EXPECT_TRUE(frac_eq(got["tma_fetch_latency"], pct(13)));    // 18 - 5
    EXPECT_TRUE(frac_eq(got["tma_fetch_bandwidth"], pct(12)));
    EXPECT_TRUE(frac_eq(got["tma_branch_mispredicts"], pct(2)));
    EXPECT_TRUE(frac_eq(got["tma_machine_clears"], pct(13)));  // 15 - 2
    EXPECT_TRUE(frac_eq(got["tma_heavy_operations"], pct(10)));
    EXPECT_TRUE(frac_eq(got["tma_light_operations"], pct(30)));
    EXPECT_TRUE(frac_eq(got["tma_memory_bound"], pct(12)));
    EXPECT_TRUE(frac_eq(got["tma_core_bound"], pct(8)));
    // Bad speculation is never below 0: FE + BE + RET beyond the slots.
    in.v["PERF_METRICS.BACKEND_BOUND"] = {60, 1};
    v.clear();
    evaluate_metrics(b, names, TopdownMethod::perf_metrics, in, &v, Frac{1, 100});
    for (const MetricValue& mv : v)
        if (mv.ok) got[mv.def->name] = mv.value;
    EXPECT_TRUE(frac_eq(got["tma_bad_speculation"], Frac{0, 1}));
    EXPECT_TRUE(frac_eq(got["tma_machine_clears"], Frac{0, 1}));
    // Without AD.10 (Ice Lake class): each byte's share, bad speculation its own byte.
    in.v["PERF_METRICS.BACKEND_BOUND"] = {20, 1};
    in.v.erase("AD.10");
    v.clear();
    evaluate_metrics(b, names, TopdownMethod::perf_metrics, in, &v, Frac{1, 100});
    for (const MetricValue& mv : v)
        if (mv.ok) got[mv.def->name] = mv.value;
    EXPECT_TRUE(frac_eq(got["tma_frontend_bound"], pct(30)));
    EXPECT_TRUE(frac_eq(got["tma_bad_speculation"], pct(6)));
    EXPECT_TRUE(frac_eq(got["tma_fetch_latency"], pct(18)));
    EXPECT_TRUE(frac_eq(got["tma_machine_clears"], pct(4)));
}

// The validation tolerance with PERF_METRICS inputs comes from the slots of the runs:
// per category ((S_U + S_2U)/255 + 4) slots of the S_2U - S_U the iterations own, twice
// that for a difference of two categories.
TEST(MetricValidate, PerfMetricsToleranceFromTheSlots) {
    // 2 * (1000 + 2000 + 1020) / (255 * 1000) = 8040 / 255000
    EXPECT_TRUE(frac_eq(perf_metrics_tolerance(1000, 2000), Frac{8040, 255000}));
    // Never below 0.01; 0.01 where the long run has no more slots than the short one.
    EXPECT_TRUE(frac_eq(perf_metrics_tolerance(0, 1000000000), Frac{1, 100}));
    EXPECT_TRUE(frac_eq(perf_metrics_tolerance(2000, 2000), Frac{1, 100}));
    EXPECT_TRUE(frac_eq(perf_metrics_tolerance(2000, 1000), Frac{1, 100}));
    // A category 0.03 below 0: a violation with 0.01, within the quantisation of these runs.
    MetricSet s = parse("name=fe; level=1; range=0..1; formula=F / S\n");
    Vec<StrView> names;
    ASSERT_TRUE(select_metrics(s, StrView("fe"), &names).ok());
    MapInputs in;
    in.v = {{"F", {-3, 1}}, {"S", {100, 1}}};
    Vec<MetricValue> v;
    evaluate_metrics(s, names, TopdownMethod::none, in, &v);
    EXPECT_STREQ(v[0].violation, "-0.0300 is below its range (minimum 0.0000, tolerance 0.01)");
    v.clear();
    evaluate_metrics(s, names, TopdownMethod::none, in, &v, perf_metrics_tolerance(1000, 2000));
    EXPECT_STREQ(v[0].violation, "");
    in.v["F"] = {-4, 1};
    v.clear();
    evaluate_metrics(s, names, TopdownMethod::none, in, &v, perf_metrics_tolerance(1000, 2000));
    EXPECT_STREQ(v[0].violation, "-0.0400 is below its range (minimum 0.0000, tolerance 0.0315)");
}
