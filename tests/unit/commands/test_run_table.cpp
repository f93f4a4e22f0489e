// `pmulab run` output people read (issue #12 item 17): the text table says what its
// numbers are (the per-iteration value, the spread of the per-run differences, the
// estimates from the min and max), carries units, stays aligned with long names, and
// the JSON values keep their significant digits (0.004 never reads 0.00).
#include <gtest/gtest.h>

#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "support/measure_test_util.h"

using namespace pmulab;

namespace {

struct Rig {
    mtest::FakeHw hw{2};
    mtest::FakeMeasure mp;
    mtest::FakePlatform p{hw, &mp};
    int run(const std::string& line) {
        p.out.clear();
        return mtest::run_cmd(p, line);
    }
};

std::vector<std::string> lines_of(const std::string& s) {
    std::vector<std::string> v;
    std::istringstream in(s);
    for (std::string l; std::getline(in, l);) v.push_back(l);
    return v;
}

// Where `w` ends in line `l` (npos when absent).
size_t end_of(const std::string& l, const std::string& w) {
    size_t p = l.find(w);
    return p == std::string::npos ? p : p + w.size();
}

}  // namespace

TEST(RunTable, LabelsUnitsAndSpread) {
    Rig r;
    // Five short runs, then five long ones (200 - 100 copies = 100 iterations): the
    // long runs get 0, 100, 200, 300, 400 ticks more, so the per-run differences are
    // 128, 129, 130, 131, 132 per iteration: quartiles 129 and 131 (linear interpolation).
    r.mp.noise = {0, 0, 0, 0, 0, 0, 100, 200, 300, 400};
    ASSERT_EQ(r.run("run --bench nop --reps 5 --warmup 0"), 0) << r.p.out;
    std::vector<std::string> l = lines_of(r.p.out);
    ASSERT_EQ(l.size(), 5u) << r.p.out;
    EXPECT_EQ(l[0],
              "pmulab run: 100 and 200 copies (U/2U), loop 1, 5 reps + 0 warm-up, aggregate median, interrupts cli, "
              "serialise lfence");
    EXPECT_EQ(l[1], "per iteration: median = median(long runs) - median(short runs), over the iterations; q1..q3 = the "
                    "interquartile range of the 5 per-run differences (the spread);");
    EXPECT_EQ(l[2],
              "  est(min), est(max) = the same estimate from the min and from the max of each version (not a range)");
    EXPECT_EQ(l[3], "bench            size event      counter   cpu  apic  run       median           q1           q3"
                    "     est(min)     est(max)  unit");
    EXPECT_EQ(l[4], "nop                 - tsc        TSC         0     0    0       130.00       129.00       131.00"
                    "       128.00       132.00  TSC ticks / iteration");
}

TEST(RunTable, JsonCarriesSpreadAndUnit) {
    Rig r;
    r.mp.noise = {0, 0, 0, 0, 0, 0, 100, 200, 300, 400};
    ASSERT_EQ(r.run("run --bench nop --reps 5 --warmup 0 --json"), 0) << r.p.out;
    EXPECT_NE(r.p.out.find("\"per_iteration\":130.00,\"fraction\":[130,1],\"min\":128.00,\"median\":130.00,"
                           "\"avg\":130.00,\"trimmed\":130.00,\"max\":132.00,\"q1\":129.00,\"q3\":131.00,"
                           "\"unit\":\"TSC ticks / iteration\""),
              std::string::npos)
        << r.p.out;
}

TEST(RunTable, QuartilesInterpolateExactly) {
    Rig r;
    // Four runs: differences 128.00, 128.01, 128.02, 128.03 per iteration; the
    // quartiles (linear interpolation, h = (n - 1) q) are 128.0075 and 128.0225.
    r.mp.noise = {0, 0, 0, 0, 0, 1, 2, 3};
    ASSERT_EQ(r.run("run --bench nop --reps 4 --warmup 0 --decimals 4 --json"), 0) << r.p.out;
    EXPECT_NE(r.p.out.find("\"q1\":128.0075,\"q3\":128.0225,"), std::string::npos) << r.p.out;
}

TEST(RunTable, SmallValuesKeepTheirDigits) {
    Rig r;
    // 4 counts over 1000 iterations: 0.004 per iteration, not 0.00.
    r.mp.cost = {0};
    r.mp.noise = {0, 0, 0, 4, 4, 4};
    ASSERT_EQ(r.run("run --bench nop --reps 3 --warmup 0 --unroll 1000 --json"), 0) << r.p.out;
    EXPECT_NE(r.p.out.find("\"per_iteration\":0.004,\"fraction\":[1,250],"), std::string::npos) << r.p.out;
    ASSERT_EQ(r.run("run --bench nop --reps 3 --warmup 0 --unroll 1000"), 0) << r.p.out;
    std::vector<std::string> l = lines_of(r.p.out);
    ASSERT_EQ(l.size(), 5u) << r.p.out;
    EXPECT_EQ(l[4], "nop                 - tsc        TSC         0     0    0        0.004        0.004        0.004"
                    "        0.004        0.004  TSC ticks / iteration");
    // A third: 1/3 keeps six significant digits in JSON, three in the table.
    r.mp.noise = {0, 0, 0, 1, 1, 1};
    r.mp.cost = {128};
    ASSERT_EQ(r.run("run --bench nop --reps 3 --warmup 0 --unroll 3 --json"), 0) << r.p.out;
    EXPECT_NE(r.p.out.find("\"per_iteration\":128.333,\"fraction\":[385,3],"), std::string::npos) << r.p.out;
    r.mp.cost = {0};
    ASSERT_EQ(r.run("run --bench nop --reps 3 --warmup 0 --unroll 3 --json"), 0) << r.p.out;
    EXPECT_NE(r.p.out.find("\"per_iteration\":0.333333,\"fraction\":[1,3],"), std::string::npos) << r.p.out;
    // Exact values keep --decimals (at least) as before.
    r.mp.noise = {};
    r.mp.cost = {128};
    r.mp.executions = 0;
    ASSERT_EQ(r.run("run --bench nop --reps 3 --warmup 0 --decimals 4 --json"), 0) << r.p.out;
    EXPECT_NE(r.p.out.find("\"per_iteration\":128.0000,"), std::string::npos) << r.p.out;
}

TEST(RunTable, ColumnsStayAlignedWithLongNames) {
    Rig r;
    const std::string name = "a_rather_long_label_for_my_code_under_test";
    ASSERT_EQ(r.run("run --code 90 --name " + name + " --reps 3 --warmup 0 --cpu all"), 0) << r.p.out;
    std::vector<std::string> l = lines_of(r.p.out);
    size_t head = 0;
    while (head < l.size() && l[head].rfind("bench ", 0) != 0) ++head;
    ASSERT_LT(head + 2, l.size()) << r.p.out;
    const std::string& h = l[head];
    for (size_t i = head + 1; i < l.size(); ++i) {
        ASSERT_EQ(l[i].rfind(name + " ", 0), 0u) << l[i];
        // Every column of a row ends where its header ends.
        EXPECT_EQ(l[i].find(" tsc "), h.find(" event ")) << h << "\n" << l[i];
        EXPECT_EQ(l[i].find(" TSC "), h.find(" counter ")) << h << "\n" << l[i];
        EXPECT_EQ(end_of(l[i], " 128.00"), end_of(h, " median")) << h << "\n" << l[i];
        EXPECT_EQ(l[i].find("  TSC ticks / iteration"), h.find("  unit")) << h << "\n" << l[i];
    }
}

TEST(RunTable, LongEventNamesWidenTheirColumn) {
    RunOptions o;
    o.cfg.reps = 1;
    BenchInstance b;
    b.kernel = find_kernel(StrView("nop"));
    o.cfg.benches.push(b);
    Vec<ReadGroup> groups;
    groups.resize(1);
    CounterRead rd[2];
    std::snprintf(rd[0].event, sizeof rd[0].event, "%s", "UOPS_DISPATCHED.PORT_2_3_10");
    std::snprintf(rd[0].counter, sizeof rd[0].counter, "%s", "PMC3");
    rd[0].kind = CounterAccess::rdpmc;
    std::snprintf(rd[1].event, sizeof rd[1].event, "%s", "tsc");
    std::snprintf(rd[1].counter, sizeof rd[1].counter, "%s", "TSC");
    groups[0].reads.push(rd[0]);
    groups[0].reads.push(rd[1]);
    result_table_fit(o, groups);
    StrBuf out;
    result_table_header(o, &out);
    i64 s[1] = {1000}, l[1] = {1250};
    for (const CounterRead& x : rd) {
        MeasureResult r;
        r.bench = &o.cfg.benches[0];
        r.read = &x;
        r.iterations = 100;
        r.short_raw = s;
        r.long_raw = l;
        for (Frac& f : r.per_iter) f = Frac{5, 2};
        result_table_row(o, r, &out);
    }
    std::vector<std::string> v = lines_of(out.c_str());
    ASSERT_EQ(v.size(), 6u) << out.c_str();
    EXPECT_EQ(v[3],
              "bench            size event                       counter   cpu  apic  run       median           q1"
              "           q3     est(min)     est(max)  unit");
    EXPECT_EQ(v[4],
              "nop                 - UOPS_DISPATCHED.PORT_2_3_10 PMC3        0     0    0         2.50         2.50"
              "         2.50         2.50         2.50  counts / iteration");
    EXPECT_EQ(v[5],
              "nop                 - tsc                         TSC         0     0    0         2.50         2.50"
              "         2.50         2.50         2.50  TSC ticks / iteration");
}
