// `pmulab help run`, `run --help`, `help events`, `events --help` end with the event
// syntax of the CPU they run on (AMD's 12-bit selects on AMD, NetBurst names on a P4).
#include <gtest/gtest.h>

#include <string>

#include "events/event_syntax.h"
#include "sim/sim_cpu.h"
#include "sim/sim_netburst.h"
#include "support/test_platform.h"

using namespace pmulab;

TEST(HelpSyntax, RunAndEventsHelpShowTheCpusDialect) {
    struct Case {
        sim::SimMachine m;
        EventDialect d;
    };
    Case cases[] = {{sim::intel_v4_goldmont_plus(1), EventDialect::intel},
                    {sim::amd_zen(1), EventDialect::amd_zen},
                    {sim::qemu_tcg(1), EventDialect::amd},
                    {sim::netburst_p4(1), EventDialect::netburst}};
    for (Case& c : cases) {
        std::string syntax = event_syntax_help(c.d);
        for (auto args : {std::vector<std::string>{"help", "run"}, std::vector<std::string>{"run", "--help"},
                          std::vector<std::string>{"help", "events"}, std::vector<std::string>{"events", "--help"}}) {
            pmutest::TestPlatform p(c.m);
            pmutest::RunResult r = pmutest::run(p, args);
            EXPECT_EQ(r.status, 0) << r.out;
            ASSERT_GE(r.out.size(), syntax.size()) << args[0] << " " << args[1];
            EXPECT_EQ(r.out.substr(r.out.size() - syntax.size()), syntax) << args[0] << " " << args[1];
            EXPECT_EQ(r.out.find("Event syntax"), r.out.size() - syntax.size()) << "one syntax block";
        }
    }
    // Commands without event specs: their help alone.
    sim::SimMachine m = sim::amd_zen(1);
    pmutest::RunResult r = pmutest::run(m, {"help", "msr"});
    EXPECT_EQ(r.out.find("Event syntax"), std::string::npos);
}

// The main help names the user-code path and the TCP agent (issue 26 item 21).
TEST(HelpSyntax, MainHelpNamesRunCodeAsmAndServeTcp) {
    sim::SimMachine m = sim::qemu_tcg(1);
    pmutest::RunResult r = pmutest::run(m, {"help"});
    EXPECT_EQ(r.status, 0) << r.out;
    EXPECT_TRUE(
        r.has_line("  run --code HEX       measure your own machine code [--init HEX] [--name TEXT] ...; on the"))
        << r.out;
    EXPECT_TRUE(r.has_line("                       host run-qemu.sh takes --asm TEXT (assembled; docs/nanobench.md)"))
        << r.out;
    EXPECT_TRUE(r.has_line("  serve --tcp PORT     the same over TCP (no authentication: a lab network only)"))
        << r.out;
}
