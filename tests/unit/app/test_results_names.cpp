#include <gtest/gtest.h>

#include "app/results_names.h"

using namespace pmulab;

TEST(ResultsNames, NumberPrefix) {
    EXPECT_EQ(result_number("0042-info.jsonl"), 42);
    EXPECT_EQ(result_number("0001-run.csv"), 1);
    EXPECT_EQ(result_number("123456789012-run.csv"), 123456789012);
    EXPECT_EQ(result_number("merged.jsonl"), -1);
    EXPECT_EQ(result_number("0042.jsonl"), -1);
    EXPECT_EQ(result_number("-info.jsonl"), -1);
    EXPECT_EQ(result_number("0042"), -1);
    EXPECT_EQ(result_number(""), -1);
}

TEST(ResultsNames, NextIsAboveEveryNumberEvenPastEightDigits) {
    ResultNumbering empty;
    EXPECT_EQ(empty.next(), 1);
    // Past 99,999,999 the numbers used to be ignored, so a later command reused one.
    ResultNumbering n;
    for (const char* name :
         {"99999999-info.jsonl", "100000000-run.jsonl", "100000001-run.jsonl", "100000001-run.csv", "0007-info.csv"})
        n.see(name);
    EXPECT_EQ(n.next(), 100000002);
    ResultNumbering big;
    big.see("999999999999-info.jsonl");
    EXPECT_EQ(big.next(), 1000000000000);
}

TEST(ResultsNames, ExhaustedNumbersAreReportedNotWrapped) {
    ResultNumbering n;
    n.see("999999999999999999-info.jsonl");  // 18 digits: the largest number handed out
    EXPECT_EQ(n.next(), -1);
    ResultNumbering huge;
    huge.see("99999999999999999999999-info.jsonl");  // does not fit: no number is safe
    EXPECT_EQ(huge.next(), -1);
}

TEST(ResultsNames, BaseName) {
    char b[64];
    result_base_name(42, "info", b, sizeof b);
    EXPECT_STREQ(b, "0042-info");
    result_base_name(100000002, "run", b, sizeof b);
    EXPECT_STREQ(b, "100000002-run");
}
