// Options as data (app/options.h): the generic parser, help lists and JSON records
// made from one declaration, and every command's declaration against its help.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "commands/commands.h"

using namespace pmulab;

namespace {

struct Target {
    u64 count = 0;
    unsigned level = 0;
    std::vector<std::string> log;  // "name=value@group" of every hit, in order
};

Status record(void* t, const OptionHit& h) {
    Target& x = *static_cast<Target*>(t);
    x.log.push_back(std::string(h.spec->name) + "=" + (h.value ? h.value : "-") + "@" + std::to_string(h.group));
    if (h.spec->value == OptValue::count) x.count = h.num;
    if (h.spec->value == OptValue::level) x.level = unsigned(h.num);
    return ok_status();
}

// clang-format off
const OptionSpec kTable[] = {
    {.name = "--count", .metavar = "N", .value = OptValue::count, .min = 1, .max = 100,
     .help = "a count\nin two lines", .apply = record},
    {.name = "--flag", .help = "a flag", .apply = record},
    {.name = "--level", .metavar = "[1|2]", .value = OptValue::level, .flags = kOptOptionalValue, .min = 1, .max = 2,
     .help = "a level", .choices = "1", .apply = record},
    {.name = "--mode", .metavar = "M", .value = OptValue::choice, .help = "a mode", .choices = "a|b|c",
     .apply = record},
    {.name = "--item", .metavar = "X", .value = OptValue::list, .flags = kOptRepeatable, .help = "items",
     .apply = record},
    {.name = "--code", .metavar = "HEX", .value = OptValue::hex, .flags = kOptGroupStart, .help = "a code",
     .host_asm = "--asm", .section = 1, .apply = record},
    {.name = "--name", .metavar = "L", .value = OptValue::string, .flags = kOptInGroup, .brief = "the code's name",
     .section = 1, .apply = record},
};
// clang-format on
const CommandOptions kCmd = {.command = "demo",
                             .options = kTable,
                             .count = sizeof kTable / sizeof kTable[0],
                             .help = "usage: demo\n\x01--\n\x01",
                             .column = 12,
                             .group = "code"};

struct Parse {
    Status status;
    Target t;
};

Parse parse(std::vector<const char*> words) {
    Parse r;
    Args args(int(words.size()), words.data());
    ParsedOptions p;
    r.status = parse_options(kCmd, args, &p);
    if (r.status.ok()) r.status = apply_options(p, &r.t);
    return r;
}

std::string err(std::vector<const char*> words) {
    Parse r = parse(words);
    return r.status.ok() ? "OK" : r.status.error().msg;
}

}  // namespace

TEST(Options, ValuesAreCheckedByKind) {
    EXPECT_EQ(parse({"--count", "7"}).t.count, 7u);
    EXPECT_EQ(parse({"--count=0x10"}).t.count, 16u);
    EXPECT_EQ(err({"--count", "0"}), "--count: 0 is out of range 1..100");
    EXPECT_EQ(err({"--count", "x"}), "--count: 'x' is not a number");
    EXPECT_EQ(err({"--count", "99999999999999999999999"}),
              "--count: '99999999999999999999999' is too large (at most 100)");
    EXPECT_EQ(err({"--count"}), "option --count needs a value");
    EXPECT_EQ(err({"--mode", "d"}), "--mode: 'd' is not one of a, b, c");
    EXPECT_EQ(err({"--flag=1"}), "--flag takes no value");
    EXPECT_EQ(err({"--bogus"}), "demo: unknown option '--bogus' (see 'pmulab help demo')");
    EXPECT_EQ(err({"stray"}), "demo: unexpected argument 'stray' (see 'pmulab help demo')");
}

// A repeated option that is not repeatable is an error, never "the last one wins".
TEST(Options, RepeatingAnOptionThatIsNotRepeatableIsAnError) {
    EXPECT_EQ(err({"--count", "1", "--count", "2"}), "demo: --count is given more than once (it is not repeatable)");
    EXPECT_EQ(err({"--flag", "--flag"}), "demo: --flag is given more than once (it is not repeatable)");
    EXPECT_EQ(err({"--level", "--level", "2"}), "demo: --level is given more than once (it is not repeatable)");
    Parse r = parse({"--item", "a", "--item", "b"});
    ASSERT_TRUE(r.status.ok());
    EXPECT_EQ(r.t.log, (std::vector<std::string>{"--item=a@0", "--item=b@0"}));
}

// An optional value: taken when the next word is not an option, else the default.
TEST(Options, OptionalValueTakesTheDefaultBeforeAnotherOption) {
    EXPECT_EQ(parse({"--level"}).t.level, 1u);
    EXPECT_EQ(parse({"--level", "--flag"}).t.level, 1u);
    EXPECT_EQ(parse({"--level", "2", "--flag"}).t.level, 2u);
    EXPECT_EQ(parse({"--level=2"}).t.level, 2u);
    EXPECT_EQ(err({"--level", "3"}), "--level: '3' is not a level (1 or 2)");
    EXPECT_EQ(err({"--level", "x"}), "--level: 'x' is not a level (1 or 2)");
}

// Groups: each --code starts one, each --name belongs to the code before it (or, before
// any code, to the first); a second --name for one code is an error.
TEST(Options, RepeatedGroupsKeepEachMemberWithItsGroup) {
    Parse r = parse({"--code", "90", "--name", "A", "--code", "91", "--flag", "--name", "B", "--code", "92"});
    ASSERT_TRUE(r.status.ok()) << r.status.error().msg;
    EXPECT_EQ(r.t.log, (std::vector<std::string>{"--code=90@0", "--name=A@0", "--code=91@1", "--flag=-@1", "--name=B@1",
                                                 "--code=92@2"}));
    r = parse({"--name", "A", "--code", "90"});
    EXPECT_EQ(r.t.log, (std::vector<std::string>{"--name=A@0", "--code=90@0"}));
    EXPECT_EQ(err({"--code", "90", "--name", "A", "--name", "B"}),
              "demo: --name is given more than once for one code (one per code)");
    EXPECT_EQ(err({"--name", "A", "--code", "90", "--name", "B"}),
              "demo: --name is given more than once for one code (one per code)");
}

TEST(Options, HelpListsAreMadeFromTheDeclaration) {
    StrBuf b;
    put_command_help(b, kCmd);
    EXPECT_STREQ(b.c_str(),
                 "usage: demo\n"
                 "  --count N   a count\n"
                 "              in two lines\n"
                 "  --flag      a flag\n"
                 "  --level [1|2]  a level\n"
                 "  --mode M    a mode\n"
                 "  --item X    items\n"
                 "--\n"
                 "  --code HEX  a code\n");  // --name has no line of its own (brief only)
}

TEST(Options, JsonRecordSaysKindRangeAndRepetition) {
    Value rec;
    command_json(rec, kCmd);
    StrBuf b;
    json_write_line(b, rec);
    EXPECT_STREQ(
        b.c_str(),
        "{\"type\":\"command\",\"command\":\"demo\",\"options\":["
        "{\"name\":\"--count\",\"value\":\"count\",\"metavar\":\"N\",\"min\":1,\"max\":100,\"repeatable\":false,"
        "\"help\":\"a count in two lines\"},"
        "{\"name\":\"--flag\",\"value\":\"flag\",\"repeatable\":false,\"help\":\"a flag\"},"
        "{\"name\":\"--level\",\"value\":\"level\",\"metavar\":\"[1|2]\",\"min\":1,\"max\":2,\"optional\":true,"
        "\"default\":\"1\",\"repeatable\":false,\"help\":\"a level\"},"
        "{\"name\":\"--mode\",\"value\":\"choice\",\"metavar\":\"M\",\"choices\":[\"a\",\"b\",\"c\"],"
        "\"repeatable\":false,\"help\":\"a mode\"},"
        "{\"name\":\"--item\",\"value\":\"list\",\"metavar\":\"X\",\"repeatable\":true,\"help\":\"items\"},"
        "{\"name\":\"--code\",\"value\":\"hex\",\"metavar\":\"HEX\",\"repeatable\":true,\"group\":\"code\","
        "\"starts_group\":true,\"asm\":\"--asm\",\"help\":\"a code\"},"
        "{\"name\":\"--name\",\"value\":\"string\",\"metavar\":\"L\",\"repeatable\":false,\"group\":\"code\","
        "\"starts_group\":false,\"help\":\"the code's name\"}]}\n");
}

// Every option a command declares is named in its help text (the usage lines or the
// option list), and its help text names no option it does not declare in its usage.
TEST(Options, EveryCommandsDeclarationIsInItsHelp) {
    unsigned commands = 0;
    for (u32 i = 0; const CommandOptions* c = command_options_at(i); ++i, ++commands) {
        StrBuf help;
        put_command_help(help, *c);
        for (u32 k = 0; k < c->count; ++k) {
            const OptionSpec& s = c->options[k];
            EXPECT_NE(std::string(help.c_str()).find(s.name), std::string::npos) << c->command << " " << s.name;
            EXPECT_TRUE(s.help || s.brief) << c->command << " " << s.name << " has no help for JSON";
            if (s.value == OptValue::count || s.value == OptValue::size) EXPECT_LE(s.min, s.max) << s.name;
        }
        EXPECT_EQ(std::string(help.c_str()).find('\x01'), std::string::npos) << c->command;
    }
    EXPECT_EQ(commands, 11u);  // 10 commands and the global options
    ASSERT_NE(command_options("run"), nullptr);
    const OptionSpec* unroll = find_option(*command_options("run"), StrView("--unroll"));
    ASSERT_NE(unroll, nullptr);
    EXPECT_EQ(unroll->value, OptValue::count);
    EXPECT_EQ(unroll->min, 1u);
    EXPECT_EQ(unroll->max, 1000000u);
    EXPECT_TRUE(is_global_option("-h"));
    EXPECT_TRUE(is_global_option("--trace-msr"));
    EXPECT_FALSE(is_global_option("--cpu"));
}
