// Issue #26 item 19: with --json the first line on stdout is the meta record, saying where
// the numbers come from (hardware, a virtual machine, simulated), in every command that
// reads or measures hardware; the agent's hello says the same.
#include <gtest/gtest.h>

#include "app/provenance.h"
#include "support/test_platform.h"

using namespace pmutest;

namespace {

// The first line of a command's --json output, parsed.
Json first_record(TestPlatform& p, std::initializer_list<const char*> args) {
    RunResult r = run(p, args);
    EXPECT_FALSE(r.out.empty());
    return parse_json(r.out.substr(0, r.out.find('\n')));
}

TEST(MetaStdout, EveryCommandStartsWithTheMetaRecord) {
    sim::SimMachine m = dump_machine("GenuineIntel00506E3_Skylake_CPUID.txt");
    TestPlatform p(m);
    for (auto args : {std::initializer_list<const char*>{"--json", "info"},
                      {"--json", "msr", "read", "0x38f"},
                      {"--json", "selftest"},
                      {"--json", "report", "--cpu", "0"},
                      {"--json", "--trace-msr", "msr", "read", "0x38f"},
                      {"--json", "run", "--bench", "nop"},
                      {"info", "--json"}}) {
        Json meta = first_record(p, args);
        ASSERT_EQ(meta["type"].s(), "meta") << *args.begin();
        EXPECT_EQ(meta["source"].s(), "hardware");
        EXPECT_EQ(meta["tcg"].type, Json::Type::boolean);
        EXPECT_FALSE(meta["tcg"].b);
        EXPECT_TRUE(meta["icount_shift"].is_null());
        EXPECT_EQ(meta["hypervisor"].type, Json::Type::boolean);
        EXPECT_FALSE(meta["hypervisor"].b);
        EXPECT_EQ(meta["simulated"].type, Json::Type::boolean);
        EXPECT_FALSE(meta["simulated"].b);
        EXPECT_FALSE(meta["pmulab_version"].s().empty());
    }
    // Text mode: no record at all; commands that only list or explain print no meta record.
    RunResult t = run(p, {"info"});
    EXPECT_EQ(t.out.find("\"type\""), std::string::npos) << t.out;
    EXPECT_EQ(first_record(p, {"--json", "version"})["type"].s(), "version");
    EXPECT_EQ(first_record(p, {"--json", "bench", "list"})["type"].s(), "kernel");
}

TEST(MetaStdout, AVirtualMachineIsNamedWithItsHypervisor) {
    sim::SimMachine m = dump_machine("cpuid-r_KVM_Intel_EmeraldRapids_16cpu.txt");
    TestPlatform p(m);
    Json meta = first_record(p, {"--json", "info"});
    ASSERT_EQ(meta["type"].s(), "meta");
    EXPECT_EQ(meta["source"].s(), "virtual_machine");
    EXPECT_TRUE(meta["hypervisor"].b);
    EXPECT_EQ(meta["hypervisor_vendor"].s(), "KVMKVMKVM");
    EXPECT_EQ(meta["tcg"].type, Json::Type::boolean);
    EXPECT_FALSE(meta["tcg"].b);  // KVM: no -icount to measure
    EXPECT_TRUE(meta["icount_shift"].is_null());
    pmulab::StrBuf b;
    pmulab::put_provenance(b, pmulab::provenance(p), nullptr);
    EXPECT_EQ(std::string(b.c_str()), "virtual machine (KVMKVMKVM)");
}

TEST(MetaStdout, TheMetaRecordNamesTheCommandLine) {
    sim::SimMachine m = dump_machine("GenuineIntel00506E3_Skylake_CPUID.txt");
    TestPlatform p(m);
    RunResult r = run(p, {"--json", "msr", "read", "0x38f"});
    std::vector<std::string> lines = r.lines();
    ASSERT_EQ(lines.size(), 2u) << r.out;
    EXPECT_EQ(parse_json(lines[1])["type"].s(), "msr");
    EXPECT_EQ(parse_json(lines[0])["command_line"].s(), "--json msr read 0x38f");
}

}  // namespace
