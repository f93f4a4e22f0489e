#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "measure/stats.h"

using namespace pmulab;

namespace {

std::string F(Frac f, unsigned dec = 4) {
    StrBuf b;
    put_frac(b, f, dec);
    return std::string(b.c_str(), b.size());
}

Summary sum(std::vector<i64> v) {
    std::vector<i64> scratch(v.size());
    Result<Summary> r = summarize(v.data(), u32(v.size()), scratch.data());
    EXPECT_TRUE(r.ok()) << r.error().msg;
    return r.value();
}

}  // namespace

TEST(Stats, OddCount) {
    Summary s = sum({5, 1, 4, 2, 3});
    EXPECT_EQ(s.n, 5u);
    EXPECT_TRUE(frac_eq(s.min, Frac{1, 1}));
    EXPECT_TRUE(frac_eq(s.max, Frac{5, 1}));
    EXPECT_TRUE(frac_eq(s.median, Frac{3, 1}));
    EXPECT_TRUE(frac_eq(s.avg, Frac{3, 1}));
    // n = 5 drops floor(5/5) = 1 at each end: mean of 2, 3, 4.
    EXPECT_TRUE(frac_eq(s.trimmed, Frac{3, 1}));
}

TEST(Stats, EvenCountMedianIsMeanOfMiddlePair) {
    Summary s = sum({10, 1, 4, 7});
    EXPECT_TRUE(frac_eq(s.median, Frac{11, 2}));
    EXPECT_EQ(F(s.median, 1), "5.5");
    EXPECT_TRUE(frac_eq(s.avg, Frac{22, 4}));
    // n = 4 < 5: nothing dropped, trimmed == avg.
    EXPECT_TRUE(frac_eq(s.trimmed, s.avg));
}

TEST(Stats, TrimmedMeanDropsOneFifthAtEachEnd) {
    EXPECT_EQ(trimmed_drop(1), 0u);
    EXPECT_EQ(trimmed_drop(4), 0u);
    EXPECT_EQ(trimmed_drop(5), 1u);
    EXPECT_EQ(trimmed_drop(11), 2u);
    EXPECT_EQ(trimmed_drop(100), 20u);
    // 11 values: drop 2 smallest (-1000, 0) and 2 largest (99, 5000): mean of 1..7 = 4.
    Summary s = sum({7, 5000, 1, 2, -1000, 3, 99, 4, 5, 6, 0});
    EXPECT_TRUE(frac_eq(s.trimmed, Frac{4, 1})) << F(s.trimmed);
    EXPECT_TRUE(frac_eq(s.median, Frac{4, 1}));
    EXPECT_TRUE(frac_eq(s.min, Frac{-1000, 1}));
    EXPECT_TRUE(frac_eq(s.avg, Frac{4127, 11}));
    EXPECT_EQ(F(s.avg, 3), "375.182");
}

TEST(Stats, SingleValue) {
    Summary s = sum({42});
    for (unsigned a = 0; a < kAggCount; ++a) EXPECT_TRUE(frac_eq(s.get(Agg(a)), Frac{42, 1}));
}

TEST(Stats, EmptyIsAnError) {
    i64 x = 0;
    Result<Summary> r = summarize(&x, 0, &x);
    EXPECT_FALSE(r.ok());
}

TEST(Stats, SumOverflowIsAnErrorNotWrongResult) {
    std::vector<i64> v = {INT64_MAX, INT64_MAX, 1};
    std::vector<i64> scratch(3);
    Result<Summary> r = summarize(v.data(), 3, scratch.data());
    ASSERT_FALSE(r.ok());
    EXPECT_NE(std::string(r.error().msg).find("too large"), std::string::npos);
}

TEST(Stats, SummarizeDoesNotModifyInput) {
    std::vector<i64> v = {3, 1, 2};
    std::vector<i64> scratch(3);
    ASSERT_TRUE(summarize(v.data(), 3, scratch.data()).ok());
    EXPECT_EQ(v, (std::vector<i64>{3, 1, 2}));
    EXPECT_EQ(scratch, (std::vector<i64>{1, 2, 3}));
}

TEST(Stats, HeapSortMatchesStdSort) {
    std::mt19937_64 rng(7);
    for (int n : {0, 1, 2, 3, 10, 11, 100, 1001, 5000}) {
        std::vector<i64> v(n);
        for (auto& x : v) x = i64(rng() % 2001) - 1000;  // many duplicates
        std::vector<i64> w = v;
        sort_i64(v.data(), v.size());
        std::sort(w.begin(), w.end());
        EXPECT_EQ(v, w) << "n=" << n;
    }
}

TEST(Stats, FracArithmetic) {
    EXPECT_TRUE(frac_eq(frac_reduce(Frac{6, 4}), Frac{3, 2}));
    EXPECT_EQ(frac_reduce(Frac{6, 4}).den, 2u);
    EXPECT_EQ(frac_reduce(Frac{0, 7}).den, 1u);
    EXPECT_EQ(frac_reduce(Frac{-6, 4}).num, -3);
    EXPECT_LT(frac_cmp(Frac{1, 3}, Frac{1, 2}), 0);
    EXPECT_GT(frac_cmp(Frac{-1, 3}, Frac{-1, 2}), 0);
    EXPECT_TRUE(frac_is_integer(Frac{12, 4}));
    EXPECT_FALSE(frac_is_integer(Frac{13, 4}));
    // (25600 - 12800) / 100 = 128
    Result<Frac> d = frac_sub_div(Frac{25600, 1}, Frac{12800, 1}, 100);
    ASSERT_TRUE(d.ok());
    EXPECT_TRUE(frac_eq(d.value(), Frac{128, 1}));
    EXPECT_EQ(d.value().den, 1u);
    // Medians of even counts: (51/2 - 25/2) / 13 = 1
    d = frac_sub_div(Frac{51, 2}, Frac{25, 2}, 13);
    ASSERT_TRUE(d.ok());
    EXPECT_TRUE(frac_eq(d.value(), Frac{1, 1}));
    // Negative differences are kept (noisy counters): (10 - 13) / 4 = -0.75
    d = frac_sub_div(Frac{10, 1}, Frac{13, 1}, 4);
    ASSERT_TRUE(d.ok());
    EXPECT_EQ(F(d.value(), 2), "-0.75");
    // Mixed denominators: (1/3 - 1/4) / 2 = 1/24
    d = frac_sub_div(Frac{1, 3}, Frac{1, 4}, 2);
    ASSERT_TRUE(d.ok());
    EXPECT_TRUE(frac_eq(d.value(), Frac{1, 24}));
    EXPECT_EQ(d.value().den, 24u);
    // Overflow is reported, not wrapped.
    EXPECT_FALSE(frac_sub_div(Frac{INT64_MAX, 1}, Frac{-2, 1}, 1).ok());
    EXPECT_FALSE(frac_sub_div(Frac{1, 1}, Frac{0, 1}, 0).ok());
}

TEST(Stats, AggNames) {
    Agg a;
    for (const char* n : {"min", "median", "avg", "trimmed", "max"}) {
        ASSERT_TRUE(parse_agg(StrView(n), &a)) << n;
        EXPECT_STREQ(agg_name(a), n);
    }
    ASSERT_TRUE(parse_agg(StrView("mean"), &a));
    EXPECT_EQ(a, Agg::avg);
    EXPECT_FALSE(parse_agg(StrView("Median"), &a));
    EXPECT_FALSE(parse_agg(StrView(""), &a));
    EXPECT_FALSE(parse_agg(StrView("avg20"), &a));
}
