// Census and msr command details found in review: the "different PMU
// configurations" note counts PMUs, not unreachable CPUs; the first failing CPU
// decides the msr exit status.
#include <gtest/gtest.h>

#include "sim/sim_cpu.h"
#include "support/test_platform.h"

using namespace pmulab;
using namespace sim;
using namespace pmutest;

TEST(CensusNotes, UnreachableCpuIsNotAnotherPmuConfiguration) {
    SimMachine m = intel_v3(4);
    m.cpu(2).set_unreachable();
    RunResult r = run(m, {"info"});
    EXPECT_EQ(r.status, kExitFailure);
    EXPECT_EQ(r.out.find("different PMU configurations"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("PMU of CPU 0-1,3 (3 CPUs):"), std::string::npos) << r.out;
}

TEST(CensusNotes, HybridStillGetsTheNote) {
    SimMachine m = intel_hybrid();
    RunResult r = run(m, {"info"});
    EXPECT_EQ(r.status, kExitOk);
    EXPECT_NE(r.out.find("note: 2 different PMU configurations across CPUs"), std::string::npos) << r.out;
}

TEST(CensusNotes, MsrFirstFailureDecidesTheExitStatus) {
    SimMachine m = qemu_tcg(3);
    m.cpu(2).set_enabled(false);
    // CPU 0 and 1 fault (#GP, status 1); CPU 2 is disabled (unsupported, 3): 1 wins.
    RunResult r = run(m, {"msr", "write", "0x6E1", "0x100000000", "--unsafe", "--cpu", "all"});
    EXPECT_EQ(r.status, kExitFailure) << r.out;
}
