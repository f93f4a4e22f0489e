#include <gtest/gtest.h>

#include <string>

#include "app/out.h"
#include "app/config.h"
#include "app/records.h"
#include "base/json.h"

using namespace pmulab;

static std::string S(const StrBuf& b) { return std::string(b.c_str(), b.size()); }

static Value J(const char* text) {
    Value v;
    Status s = json_parse(StrView(text), &v);
    EXPECT_TRUE(s.ok()) << s.error().msg;
    return v;
}

TEST(Records, FlattenNestedObjectsAndArrays) {
    Vec<FlatField> f;
    ASSERT_TRUE(record_flatten(J(R"({"type":"cpu","n":3,"pmu":{"gp":[0,1,2],"x":null,"s":"a\"b"},"e":[]})"), &f).ok());
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

TEST(Records, FlattenRejectsWhatACsvCannotHold) {
    Vec<FlatField> f;
    EXPECT_FALSE(record_flatten(J("[1]"), &f).ok());
    Status s = record_flatten(J(R"({"type":"x","a":{"b":[1,{"c":2}]}})"), &f);
    ASSERT_FALSE(s.ok());
    EXPECT_STREQ(s.error().msg, "record field \"a.b\": arrays of objects are not flattened");
    // The summary reports the first such record and writes nothing.
    CsvSummary sum;
    sum.add(J(R"({"type":"x","a":1})"));
    sum.add(J(R"({"type":"x","a":[[1]]})"));
    StrBuf csv;
    EXPECT_FALSE(sum.write(&csv).ok());
    EXPECT_EQ(csv.size(), 0u);
}

TEST(Records, CsvTakesTheFirstRecordTypeAndQuotes) {
    CsvSummary sum;
    sum.add(J(R"({"type":"meta","pmulab_version":"x"})"));
    sum.add(J(R"({"type":"result","bench":"nop","v":1})"));
    sum.add(J(R"({"type":"warning","message":"m"})"));
    sum.add(J(R"({"type":"result","bench":"a,b","v":2,"extra":"say \"hi\""})"));
    StrBuf csv;
    ASSERT_TRUE(sum.write(&csv).ok());
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
