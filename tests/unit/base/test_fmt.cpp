#include <gtest/gtest.h>

#include <string>

#include "base/fmt.h"
#include "base/json.h"

using namespace pmulab;

static std::string S(const StrBuf& b) { return std::string(b.c_str(), b.size()); }

TEST(Fmt, PrintfSubset) {
    StrBuf b;
    b.printf("%d|%u|%x|%X|%5s|%-4d|%04x|%llu|%c|%%", -12, 7u, 0xbeefu, 0xabu, "ab", 3, 0x2au,
             (unsigned long long)18446744073709551615ull, 'z');
    EXPECT_EQ(S(b), "-12|7|beef|AB|   ab|3   |002a|18446744073709551615|z|%");
}

TEST(Fmt, FormatToTruncates) {
    char buf[6];
    usize n = format_to(buf, sizeof buf, "%s", "abcdefgh");
    EXPECT_EQ(n, 5u);
    EXPECT_STREQ(buf, "abcde");
}

TEST(Fmt, FixedPointIsExact) {
    auto f = [](i64 n, u64 d, unsigned dec) {
        StrBuf b;
        put_fixed(b, n, d, dec);
        return S(b);
    };
    EXPECT_EQ(f(128, 1, 2), "128.00");
    EXPECT_EQ(f(1, 3, 4), "0.3333");
    EXPECT_EQ(f(2, 3, 4), "0.6667");
    EXPECT_EQ(f(-1, 2, 0), "-1");  // half away from zero
    EXPECT_EQ(f(999, 1000, 2), "1.00");
    EXPECT_EQ(f(-1, 1000, 2), "0.00");  // no "-0.00"
    EXPECT_EQ(f(0, 5, 3), "0.000");
    EXPECT_EQ(f(INT64_MAX, 1, 1), "9223372036854775807.0");
}

TEST(Fmt, ParseU64) {
    u64 v;
    EXPECT_TRUE(parse_u64("0x10", &v));
    EXPECT_EQ(v, 16u);
    EXPECT_TRUE(parse_u64("4K", &v, true));
    EXPECT_EQ(v, 4096u);
    EXPECT_TRUE(parse_u64("256M", &v, true));
    EXPECT_EQ(v, 256u << 20);
    EXPECT_FALSE(parse_u64("4K", &v, false));
    EXPECT_FALSE(parse_u64("", &v));
    EXPECT_FALSE(parse_u64("0x", &v));
    EXPECT_FALSE(parse_u64("12a", &v));
    EXPECT_FALSE(parse_u64("18446744073709551616", &v));
    EXPECT_TRUE(parse_u64("18446744073709551615", &v));
    EXPECT_FALSE(parse_u64("17179869184G", &v, true));
}

TEST(Json, WriterEscapesAndNests) {
    StrBuf b;
    JsonWriter w(b);
    w.begin_object().field("a", "x\"y\n").field_u("n", 5).key("l").begin_array().num(1).num(2).end_array();
    w.field_hex("h", 0x41).field_b("t", true).end_object();
    EXPECT_EQ(S(b), "{\"a\":\"x\\\"y\\n\",\"n\":5,\"l\":[1,2],\"h\":\"0x41\",\"t\":true}");
}

TEST(Fmt, PrecisionStringStopsBeforeReadingPastIt) {
    // "%.*s" over a view with no NUL after it must not read beyond the precision
    // (found by fuzz_inputs on a truncated CPUID dump).
    char* text = new char[3]{'a', 'b', 'c'};
    StrBuf b;
    b.printf("'%.*s'", 3, text);
    EXPECT_EQ(S(b), "'abc'");
    delete[] text;
}
