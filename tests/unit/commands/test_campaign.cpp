// check_campaign (commands.h): a campaign checked completely before anything runs.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "commands/commands.h"

using namespace pmulab;

namespace {

struct Checked {
    std::vector<std::string> problems;
    unsigned commands = 0;
    bool shutdown = false;
};

Checked check(const std::string& text) {
    CampaignCheck c;
    check_campaign(StrView(text.data(), text.size()), "x.cfg", &c);
    Checked r;
    for (const CampaignProblem& p : c.problems) r.problems.push_back(p.msg);
    r.commands = c.commands;
    r.shutdown = c.shutdown;
    return r;
}

}  // namespace

TEST(Campaign, GoodCampaignHasNoProblems) {
    Checked c = check("# lab\ninfo\ninfo --json\nmsr read 0x1b --cpu all\n"
                      "run --bench nop,pointer_chase --size 4K,1M --events tsc,cycles,0E.01 --reps 5 --cpu 1\n"
                      "events --check INST_RETIRED.ANY,cycles\nselftest --cpu bsp\nbench list\nversion\n--shutdown\n");
    EXPECT_EQ(c.problems, std::vector<std::string>{});
    EXPECT_EQ(c.commands, 8u);
    EXPECT_TRUE(c.shutdown);
}

TEST(Campaign, EveryOptionTheParsersTakeIsAccepted) {
    // The options cmd_run, cmd_events, cmd_msr and cmd_selftest parse, each on its command.
    Checked c = check(
        "run --bench nop,pointer_chase --events tsc --events-file \\pmulab\\x.cfg --unroll 10 --loop 2 --reps 3 "
        "--warmup 1 --agg median --basic --progress --raw --decimals 3 --irq cli --seed 1 "
        "--serialize lfence --size 4K --cpu all\n"
        "events --cpu 0 --check cycles\nmsr write 0x186 0 --unsafe --cpu bsp\nselftest --cpu all\n");
    EXPECT_EQ(c.problems, std::vector<std::string>{});
}

// run's option values are checked by run's own parser, as the target would: a bad
// count, an unknown kernel or bad hex costs no reboot.
TEST(Campaign, RunOptionValuesAreCheckedToo) {
    Checked c = check("run --code 90 --timeout 0\nrun --bench nop --reps 0\n--json run --bench nope\n"
                      "run --code 9G\nrun --code 90 --timeout 5 --json\n");
    EXPECT_EQ(c.problems, (std::vector<std::string>{
                              "x.cfg:1: run: --timeout: 0 is out of range 1..86400",
                              "x.cfg:2: run: --reps: 0 is out of range 1..100000",
                              "x.cfg:3: run: --bench: unknown kernel 'nope'; kernels: empty, nop, add_chain, "
                              "add_indep, imul_chain, div_chain, pointer_chase, store_stream, load_stream, "
                              "branch_pred, branch_random, lfence, mfence, cpuid, rdtsc, rdmsr, rdpmc",
                              "x.cfg:4: run: --code: 'G' at position 2 is not a hex digit (machine code as hex "
                              "bytes, e.g. 4801d8 for add rax, rbx)",
                          }));
}

TEST(Campaign, EveryProblemWithItsLineBeforeAnythingRuns) {
    Checked c = check("info\n\nfrobnicate --now\ninfo --bogus\nrun --bench nop --events 0E.1G\n"
                      "msr read \"0x10\nrun --bench nop --size-x 4\n--shutdown\n");
    EXPECT_EQ(c.problems, (std::vector<std::string>{
                              "x.cfg:3: unknown command 'frobnicate' (try 'pmulab help')",
                              "x.cfg:4: info: unknown option '--bogus' (see 'pmulab help info')",
                              "x.cfg:5: run --events: event list item 1: event spec '0E.1G': UMASK "
                              "'1G' is not hex (at offset 3)",
                              "x.cfg:6: unterminated quote in command line",
                              "x.cfg:7: run: unknown option '--size-x' (see 'pmulab help run')",
                          }));
    EXPECT_TRUE(c.shutdown);  // honoured although nothing runs
}

TEST(Campaign, EmptyCampaignIsAProblem) {
    for (const char* text : {"", "# only comments\n\n", "--shutdown\n"}) {
        Checked c = check(text);
        ASSERT_EQ(c.problems.size(), 1u) << text;
        EXPECT_EQ(c.problems[0].rfind("x.cfg: no commands", 0), 0u) << c.problems[0];
    }
    EXPECT_TRUE(check("--shutdown\n").shutdown);
}

TEST(Campaign, ShutdownCountsInAFileThatIsNotText) {
    Checked c = check(std::string("info\n--shutdown\nbad \xff byte\n"));
    ASSERT_EQ(c.problems.size(), 1u);
    EXPECT_NE(c.problems[0].find("x.cfg:3: non-ASCII byte 0xff"), std::string::npos) << c.problems[0];
    EXPECT_TRUE(c.shutdown);
    EXPECT_FALSE(check("info --shutdown-x\n").shutdown);
    EXPECT_TRUE(check("info --shutdown\n").shutdown);
}

// Every command's option values are checked against its declaration (app/options.h):
// kinds, ranges and repetitions; several --code, each with its --name, are fine.
TEST(Campaign, EveryCommandsValuesAndRepeatsAreCheckedFromItsDeclaration) {
    Checked c = check("run --bench nop --reps 3 --reps 4\nmsr read 0x10 --cpu 0 --cpu 1\nserve --tcp 0\n"
                      "serve --idle x\nrun --code 90 --name a --code 91 --name b\nrun --bench nop --topdown --raw\n"
                      "events --check cycles --check instructions\n");
    EXPECT_EQ(c.problems, (std::vector<std::string>{
                              "x.cfg:1: run: --reps is given more than once (it is not repeatable)",
                              "x.cfg:2: msr: --cpu is given more than once (it is not repeatable)",
                              "x.cfg:3: serve: --tcp: 0 is out of range 1..65535",
                              "x.cfg:4: serve: --idle: 'x' is not a number",
                              "x.cfg:7: events: --check is given more than once (it is not repeatable)",
                          }));
}
