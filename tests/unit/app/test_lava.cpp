// LAVA output mode (app/lava.h): the test-case lines a LAVA monitors pattern records.
#include <gtest/gtest.h>

#include <string>

#include "app/lava.h"
#include "base/json.h"
#include "support/measure_test_util.h"

using namespace pmulab;

namespace {

std::string line_for(const char* json) {
    StrBuf b;
    Value rec;
    if (!json_parse(StrView(json), &rec).ok()) return "(unreadable)";
    if (!lava_line_for_record(rec, &b)) return "(none)";
    return b.c_str();
}

struct Rig {
    mtest::FakeHw hw{2};
    mtest::FakeMeasure mp;
    mtest::FakePlatform p{hw, &mp};
};

}  // namespace

TEST(Lava, ResultAndCheckLines) {
    EXPECT_EQ(line_for("{\"type\":\"result\",\"cpu\":1,\"apic_id\":2,\"bench\":\"pointer_chase\",\"size\":4096,"
                       "\"event\":\"tsc\",\"counter\":\"TSC\",\"per_iteration\":128.00,\"unit\":\"TSC ticks / "
                       "iteration\"}\n"),
              "<LAVA_SIGNAL_TESTCASE TEST_CASE_ID=run/pointer_chase/4096/tsc/cpu1 RESULT=pass MEASUREMENT=128.00 "
              "UNITS=ticks/iteration>\n");
    EXPECT_EQ(line_for("{\"type\":\"result\",\"cpu\":0,\"bench\":\"nop\",\"event\":\"cpu/event=0x3c, umask=0/\","
                       "\"per_iteration\":0.004,\"unit\":\"counts / iteration\"}\n"),
              "<LAVA_SIGNAL_TESTCASE TEST_CASE_ID=run/nop/-/cpu/event_0x3c,_umask_0//cpu0 RESULT=pass "
              "MEASUREMENT=0.004 UNITS=counts/iteration>\n");
    EXPECT_EQ(line_for("{\"type\":\"check\",\"name\":\"U vs 2U linearity for nop (U = 1000 and 2000)\",\"cpu\":1,"
                       "\"status\":\"PASS\",\"detail\":\"128.00 vs 128.00\"}\n"),
              "<LAVA_SIGNAL_TESTCASE TEST_CASE_ID=selftest/U_vs_2U_linearity_for_nop_(U_1000_and_2000)/cpu1 "
              "RESULT=pass>\n");
    EXPECT_EQ(line_for("{\"type\":\"check\",\"name\":\"a\",\"status\":\"FAIL\",\"detail\":\"\"}"),
              "<LAVA_SIGNAL_TESTCASE TEST_CASE_ID=selftest/a RESULT=fail>\n");
    EXPECT_EQ(line_for("{\"type\":\"check\",\"name\":\"a\",\"status\":\"SKIP\",\"detail\":\"\"}"),
              "<LAVA_SIGNAL_TESTCASE TEST_CASE_ID=selftest/a RESULT=skip>\n");
    EXPECT_EQ(line_for("{\"type\":\"check\",\"name\":\"a\",\"status\":\"NOT VERIFIED\",\"detail\":\"\"}"),
              "<LAVA_SIGNAL_TESTCASE TEST_CASE_ID=selftest/a RESULT=unknown>\n");
    EXPECT_EQ(line_for("{\"type\":\"cpu\",\"index\":0}"), "(none)");
    EXPECT_EQ(line_for("{\"type\":\"result\""), "(unreadable)");
}

TEST(Lava, RunCommandAddsLinesAroundTheNormalOutput) {
    Rig r;
    ASSERT_EQ(mtest::run_cmd(r.p, "--lava run --bench nop --reps 3"), 0) << r.p.out;
    const std::string& o = r.p.out;
    EXPECT_EQ(o.find("pmulab-lava: begin run\npmulab run: 100 and 200 copies"), 0u) << o;
    EXPECT_NE(o.find("nop                 - tsc        TSC         0"), std::string::npos) << o;
    // The record's line comes right before its table row.
    EXPECT_NE(o.find("unit\n<LAVA_SIGNAL_TESTCASE TEST_CASE_ID=run/nop/-/tsc/cpu0 RESULT=pass "
                     "MEASUREMENT=128.00 UNITS=ticks/iteration>\nnop  "),
              std::string::npos)
        << o;
    const std::string end =
        "<LAVA_SIGNAL_TESTCASE TEST_CASE_ID=run/exit-status RESULT=pass MEASUREMENT=0 UNITS=status>\n"
        "pmulab-lava: end run status 0\n";
    ASSERT_GT(o.size(), end.size());
    EXPECT_EQ(o.substr(o.size() - end.size()), end);
    r.p.out.clear();
    ASSERT_EQ(mtest::run_cmd(r.p, "--lava run --bench nop --reps 0"), 2) << r.p.out;
    EXPECT_NE(r.p.out.find("<LAVA_SIGNAL_TESTCASE TEST_CASE_ID=run/exit-status RESULT=fail MEASUREMENT=2 "
                           "UNITS=status>\npmulab-lava: end run status 2\n"),
              std::string::npos)
        << r.p.out;
}
