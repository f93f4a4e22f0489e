// The one JSON reader and writer (base/json.h) and the record value (base/value.h).
#include <gtest/gtest.h>

#include <string>

#include "base/json.h"

using namespace pmulab;

namespace {

std::string S(StrView v) { return std::string(v.ptr, v.len); }

Value read_ok(const std::string& text) {
    Value v;
    JsonError e;
    EXPECT_TRUE(json_read(StrView(text.data(), text.size()), &v, &e)) << text << ": " << e.what << " at " << e.offset;
    return v;
}

// "what@offset" of a text the reader refuses.
std::string read_err(const std::string& text) {
    Value v;
    JsonError e;
    if (json_read(StrView(text.data(), text.size()), &v, &e)) return "OK";
    return std::string(e.what) + "@" + std::to_string(e.offset);
}

std::string write(const Value& v) {
    StrBuf b;
    json_write(b, v);
    return S(b.view());
}

}  // namespace

TEST(JsonRead, ScalarsKeepTheirText) {
    EXPECT_EQ(read_ok("null").kind(), Value::Kind::null);
    EXPECT_TRUE(read_ok("true").as_bool());
    EXPECT_FALSE(read_ok("false").as_bool());
    for (const char* n : {"0", "-0", "12", "-3.25", "1e9", "1E+09", "2.50e-3", "18446744073709551615"}) {
        Value v = read_ok(n);
        EXPECT_TRUE(v.is_number()) << n;
        EXPECT_EQ(S(v.text()), n);
        EXPECT_EQ(write(v), n);
    }
    u64 x = 0;
    EXPECT_TRUE(read_ok("18446744073709551615").to_u64(&x));
    EXPECT_EQ(x, ~u64(0));
    EXPECT_FALSE(read_ok("18446744073709551616").to_u64(&x));
    EXPECT_FALSE(read_ok("1.5").to_u64(&x));
    EXPECT_FALSE(read_ok("-1").to_u64(&x));
}

TEST(JsonRead, Escapes) {
    EXPECT_EQ(S(read_ok(R"("a\"b\\c\/d\b\f\n\r\t")").text()), "a\"b\\c/d\b\f\n\r\t");
    EXPECT_EQ(S(read_ok(R"("\u0041\u00e9\u20AC")").text()), "A\xc3\xa9\xe2\x82\xac");
    EXPECT_EQ(S(read_ok(R"("\ud83d\ude00")").text()), "\xf0\x9f\x98\x80");  // a surrogate pair
    EXPECT_EQ(S(read_ok("\"caf\xc3\xa9\"").text()), "caf\xc3\xa9");         // raw UTF-8
    EXPECT_EQ(read_err(R"("\x")"), "bad escape '\\x'@2");
    EXPECT_EQ(read_err(R"("\u12G4")"), "expected 4 hex digits after \\u@3");
    EXPECT_EQ(read_err(R"("\u+123")"), "expected 4 hex digits after \\u@3");
    EXPECT_EQ(read_err(R"("\ud83d")"), "a high surrogate \\ud83d without a low one@1");
    EXPECT_EQ(read_err(R"("\ud83d\u0041")"), "a high surrogate \\ud83d without a low one@1");
    EXPECT_EQ(read_err(R"("\ude00")"), "a low surrogate \\ude00 without a high one@1");
    EXPECT_EQ(read_err("\"a\tb\""), "control character 0x09 in a string (escape it)@2");
    EXPECT_EQ(read_err("\"\xc3\""), "byte 0xc3 is not UTF-8@1");
    EXPECT_EQ(read_err("\"\xc0\x80\""), "byte 0xc0 is not UTF-8@1");      // overlong
    EXPECT_EQ(read_err("\"\xed\xa0\x80\""), "byte 0xed is not UTF-8@1");  // a surrogate in UTF-8
    EXPECT_EQ(read_err("\"abc"), "unterminated string@0");
}

TEST(JsonRead, NestingOrderAndOffsets) {
    Value v = read_ok(R"( {"b":[1,{"c":null},"x"],"a":{"z":true,"y":[]}} )");
    ASSERT_TRUE(v.is_object());
    ASSERT_EQ(v.size(), 2u);
    EXPECT_EQ(S(v.key(0)), "b");  // the order of the text, not sorted
    EXPECT_EQ(S(v.key(1)), "a");
    const Value* b = v.get("b");
    ASSERT_NE(b, nullptr);
    ASSERT_EQ(b->size(), 3u);
    EXPECT_TRUE((*b)[1].get("c")->is_null());
    EXPECT_EQ(v.get("a")->get("y")->size(), 0u);
    EXPECT_EQ(v.get("missing"), nullptr);
    EXPECT_EQ(v.offset, 1u);
    EXPECT_EQ(v.end_offset, 47u);
    EXPECT_EQ(b->offset, 6u);
    EXPECT_EQ((*b)[2].offset, 20u);
    EXPECT_EQ((*b)[2].end_offset, 23u);
}

TEST(JsonRead, Whitespace) {
    Value v = read_ok(" \t\r\n{ \"a\" :\n[ 1 , 2 ]\r\n} \n");
    EXPECT_EQ(write(v), "{\"a\":[1,2]}");
    // Only the four RFC 8259 whitespace characters.
    EXPECT_EQ(read_err("\f1"), "expected a value@0");
    EXPECT_EQ(read_err("{\"a\":1}\v"), "text after the value@7");
}

TEST(JsonRead, Errors) {
    EXPECT_EQ(read_err(""), "expected a value, found the end@0");
    EXPECT_EQ(read_err("   "), "expected a value, found the end@3");
    EXPECT_EQ(read_err("{\"a\":1,"), "expected a string@7");
    EXPECT_EQ(read_err("{\"a\" 1}"), "expected ':' after a key@5");
    EXPECT_EQ(read_err("{\"a\":1 \"b\":2}"), "expected ',' or '}'@7");
    EXPECT_EQ(read_err("[1 2]"), "expected ',' or ']'@3");
    EXPECT_EQ(read_err("[1,]"), "expected a value@3");
    EXPECT_EQ(read_err("{\"a\":tru}"), "expected a value@5");
    EXPECT_EQ(read_err("{\"a\":1} x"), "text after the value@8");
    EXPECT_EQ(read_err("01"), "a number has no leading zero@0");
    EXPECT_EQ(read_err("-"), "expected a digit@1");
    EXPECT_EQ(read_err("1."), "expected a digit after '.'@2");
    EXPECT_EQ(read_err("1e"), "expected a digit in the exponent@2");
    EXPECT_EQ(read_err("+1"), "expected a value@0");
    EXPECT_EQ(read_err(".5"), "expected a value@0");
    EXPECT_EQ(read_err("NaN"), "expected a value@0");
    std::string deep(kJsonDepthMax, '[');
    deep += std::string(kJsonDepthMax, ']');
    EXPECT_EQ(read_err(deep), "OK");
    EXPECT_EQ(read_err("[" + deep + "]"), "nested deeper than 64@64");
    Value v;
    Status s = json_parse(StrView("[1,]"), &v);
    ASSERT_FALSE(s.ok());
    EXPECT_STREQ(s.error().msg, "JSON: expected a value at offset 3");
}

TEST(JsonWrite, ExactFormatting) {
    Value v;
    JsonWriter w(v);
    w.begin_object().field("s", "x\"y\\\n\r\t\x01\x7f\xc3").field_u("u", ~u64(0)).field_i("i", -5);
    w.key("f1").fixed(1, 3, 4).key("f2").fixed(-7, 2, 2).key("f0").fixed(5, 1, 0).key("r").raw_number("1e3");
    w.field_hex("h", 0xdeadbeef).field_b("t", true).field_b("f", false).key("n").null();
    w.key("a").begin_array().num(1).begin_object().end_object().begin_array().end_array().end_array();
    w.key("o").begin_object().field("k", "v").end_object().end_object();
    EXPECT_EQ(write(v), "{\"s\":\"x\\\"y\\\\\\n\\r\\t\\u0001\\u007f\\u00c3\",\"u\":18446744073709551615,\"i\":-5,"
                        "\"f1\":0.3333,\"f2\":-3.50,\"f0\":5,\"r\":1e3,\"h\":\"0xdeadbeef\",\"t\":true,\"f\":false,"
                        "\"n\":null,\"a\":[1,{},[]],\"o\":{\"k\":\"v\"}}");
    // The text builder prints the same bytes when its outermost value closes.
    StrBuf b;
    JsonWriter t(b);
    t.begin_object().field_u("u", 1);
    EXPECT_EQ(b.size(), 0u);
    t.end_object();
    t.begin_array().num(2).end_array();
    EXPECT_EQ(S(b.view()), "{\"u\":1}[2]");
}

TEST(JsonWrite, RoundTrip) {
    const char* texts[] = {
        R"({"type":"result","cpu":0,"per_iteration":128.00,"fraction":[128,1],"x":null,"ok":true})",
        R"({"a":{"b":{"c":[[],[{}],"\"\\\n\r\t\u0001"]}},"n":-0.5e-7})",
        R"([])",
        R"("s")",
    };
    for (const char* t : texts) {
        Value v = read_ok(t);
        EXPECT_EQ(write(v), t);
        Value c = v.clone();
        EXPECT_EQ(write(c), t);
    }
    // Any UTF-8 text reads and writes back as the same string (non-ASCII bytes escaped).
    Value u = read_ok("\"\xe2\x82\xac\"");
    EXPECT_EQ(write(u), "\"\\u00e2\\u0082\\u00ac\"");
}

TEST(Value, SetFirstAndGet) {
    Value o = Value::object();
    o.set("type", Value::string("x"));
    o.set("n", Value::uint(3));
    o.set_first("id", Value::sint(-1));
    EXPECT_EQ(write(o), "{\"id\":-1,\"type\":\"x\",\"n\":3}");
    EXPECT_EQ(S(o.get("type")->text()), "x");
    u64 n = 0;
    EXPECT_TRUE(o.get("n")->to_u64(&n));
    EXPECT_EQ(n, 3u);
    Value e = Value::object();
    e.set_first("id", Value());
    EXPECT_EQ(write(e), "{\"id\":null}");
}
