#include <gtest/gtest.h>

#include <string>

#include "app/out.h"
#include "app/config.h"
#include "app/records.h"

using namespace pmulab;

static std::string S(const StrBuf& b) { return std::string(b.c_str(), b.size()); }

TEST(Records, FlattenNestedObjectsAndArrays) {
    Vec<FlatField> f;
    ASSERT_TRUE(json_flatten(R"({"type":"cpu","n":3,"pmu":{"gp":[0,1,2],"x":null,"s":"a\"b"},"e":[]})", &f).ok());
    ASSERT_EQ(f.size(), 6u);
    EXPECT_EQ(S(f[0].key), "type");
    EXPECT_EQ(S(f[0].value), "cpu");
    EXPECT_EQ(S(f[2].key), "pmu.gp");
    EXPECT_EQ(S(f[2].value), "0;1;2");
    EXPECT_EQ(S(f[3].key), "pmu.x");
    EXPECT_EQ(S(f[3].value), "");
    EXPECT_EQ(S(f[4].value), "a\"b");
    EXPECT_EQ(S(f[5].key), "e");
    EXPECT_EQ(S(f[5].value), "");
}

TEST(Records, FlattenRejectsMalformed) {
    Vec<FlatField> f;
    Status s = json_flatten("{\"a\":1,", &f);
    ASSERT_FALSE(s.ok());
    EXPECT_STREQ(s.error().msg, "JSON record: expected a string at offset 7");
    EXPECT_FALSE(json_flatten("[1]", &f).ok());
    EXPECT_FALSE(json_flatten("{\"a\":tru}", &f).ok());
    EXPECT_FALSE(json_flatten("{\"a\":1} x", &f).ok());
    EXPECT_FALSE(json_flatten("{\"a\":\"unterminated}", &f).ok());
}

TEST(Records, CsvTakesTheFirstRecordTypeAndQuotes) {
    Vec<StrBuf> lines;
    lines.emplace().put(R"({"type":"meta","pmulab_version":"x"})");
    lines.emplace().put(R"({"type":"result","bench":"nop","v":1})");
    lines.emplace().put(R"({"type":"warning","message":"m"})");
    lines.emplace().put(R"({"type":"result","bench":"a,b","v":2,"extra":"say \"hi\""})");
    StrBuf csv;
    ASSERT_TRUE(records_to_csv(lines, &csv).ok());
    EXPECT_EQ(S(csv), "type,bench,v,extra\r\n"
                      "result,nop,1,\r\n"
                      "result,\"a,b\",2,\"say \"\"hi\"\"\"\r\n");
}

TEST(Config, LinesCommentsQuotesAndBadLines) {
    const char text[] = "# campaign\n\ninfo --json   # census\nmsr read \"0x1b\" --cpu all\r\nrun \"x\n--shutdown\n";
    Vec<ConfigLine> lines;
    ASSERT_TRUE(parse_config(StrView(text), "t.cfg", &lines).ok());
    ASSERT_EQ(lines.size(), 4u);
    EXPECT_EQ(lines[0].line_no, 3u);
    ASSERT_EQ(lines[0].args.argc(), 2);
    EXPECT_STREQ(lines[0].args.argv[1], "--json");
    EXPECT_EQ(lines[1].line_no, 4u);
    ASSERT_EQ(lines[1].args.argc(), 5);
    EXPECT_STREQ(lines[1].args.argv[2], "0x1b");
    EXPECT_TRUE(lines[2].bad);
    EXPECT_STREQ(lines[2].error, "unterminated quote in command line");
    EXPECT_EQ(lines[2].line_no, 5u);
    EXPECT_EQ(lines[3].line_no, 6u);
}

TEST(Config, HashInsideQuotesIsNotAComment) {
    Vec<ConfigLine> lines;
    ASSERT_TRUE(parse_config(StrView("msr read \"#1\" # tail\n"), "t.cfg", &lines).ok());
    ASSERT_EQ(lines.size(), 1u);
    ASSERT_EQ(lines[0].args.argc(), 3);
    EXPECT_STREQ(lines[0].args.argv[2], "#1");
}

TEST(Config, BinaryAndNonAsciiAreRejectedWithTheLine) {
    Vec<ConfigLine> lines;
    Status s = parse_config(StrView("info\nver\0sion\n", 14), "t.cfg", &lines);
    ASSERT_FALSE(s.ok());
    EXPECT_STREQ(s.error().msg, "t.cfg:2: NUL byte in a text file");
    s = parse_config(StrView("info\n\xc3\xa9t\xc3\xa9\n"), "t.cfg", &lines);
    ASSERT_FALSE(s.ok());
    EXPECT_STREQ(s.error().msg, "t.cfg:2: non-ASCII byte 0xc3 (save the file as ASCII)");
    EXPECT_TRUE(parse_config(StrView("\xEF\xBB\xBFinfo\n"), "t.cfg", &lines).ok());  // BOM
    ASSERT_EQ(lines.size(), 1u);
}

TEST(Config, SplitCommandLine) {
    ArgVec av;
    ASSERT_TRUE(split_command_line(StrView("  a  \"b c\" d\\\"e \"\" "), &av).ok());
    ASSERT_EQ(av.argc(), 4);
    EXPECT_STREQ(av.argv[0], "a");
    EXPECT_STREQ(av.argv[1], "b c");
    EXPECT_STREQ(av.argv[2], "d\"e");
    EXPECT_STREQ(av.argv[3], "");
}
