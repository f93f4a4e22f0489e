// `run --lbr` and selftest's LBR check on the simulated machines (pmu/lbr.h, run_lbr.cpp):
// legacy LBR with LBR_INFO (Skylake), architectural LBR (the Alder Lake dump), AMD
// LbrExtV2 (Zen 4 and the Granite Ridge dump), and the refusals.
#include <gtest/gtest.h>

#include "support/sim_cmd.h"
#include "support/sim_measure.h"
#include "support/test_platform.h"

using namespace pmulab;
using namespace sim;
using simm::Cmd;
using simm::run_line;
using simm::SimPlatform;

namespace {

// mov ecx, 3; 1: add rax, rax; dec ecx; jnz 1b; call 2f; jmp 3f; 2: ret; 3:
// offsets:  0          5             8        0xA       0xC      0x11    0x13 (end 0x14)
const char kLoopCall[] = "b9030000004801c0ffc975f9e802000000eb01c3";
constexpr u64 kLen = 0x14;

struct Want {
    i64 from, to;  // -1: null (outside the user's code)
    u64 cycles;
};
// The taken branches of `copies` copies (then the harness's: its JMP to the 64-byte aligned
// tail and the RET out of the region), with
// the cost model's cycles (one per instruction, the branch's own included): block 0..A is
// mov, add, dec, jnz (4); the loop 5..A (3); 5..C add, dec, jnz not taken, call (4); RET (1),
// JMP (1). The first record's cycles reach back into the harness (not compared).
std::vector<Want> expected(u64 copies) {
    std::vector<Want> w;
    for (u64 c = 0; c < copies; ++c) {
        w.push_back({0xA, 0x5, 4});
        w.push_back({0xA, 0x5, 3});
        w.push_back({0xC, 0x13, 4});
        w.push_back({0x13, 0x11, 1});
        w.push_back({0x11, c + 1 < copies ? 0 : -1, 1});
    }
    return w;
}

void check_entries(const pmutest::Json& rec, bool cycles, const char* what) {
    const pmutest::Json& e = rec["entries"];
    std::vector<Want> w = expected(4);  // --unroll 2: the long version has 4 copies
    ASSERT_EQ(e.items.size(), w.size() + 2) << what;
    for (size_t i = 0; i < w.size(); ++i) {
        const pmutest::Json& x = e[i];
        EXPECT_EQ(x["from"].u(), u64(w[i].from)) << what << " " << i;
        if (w[i].to < 0) EXPECT_TRUE(x["to"].is_null()) << what << " " << i;
        else EXPECT_EQ(x["to"].u(), u64(w[i].to)) << what << " " << i;
        EXPECT_EQ(x["from_block"].s(), "body");
        EXPECT_TRUE(x["mispredicted"].type == pmutest::Json::Type::boolean && !x["mispredicted"].b);
        EXPECT_EQ(x["to_addr"].u() - x["from_addr"].u(), u64(i64(w[i].to <= 0 ? kLen : w[i].to) - w[i].from))
            << what << " " << i;
        if (!cycles) EXPECT_TRUE(x["cycles"].is_null()) << what << " " << i;
        else if (i > 0) EXPECT_EQ(x["cycles"].u(), w[i].cycles) << what << " " << i;
    }
    for (size_t i = w.size(); i < w.size() + 2; ++i)  // the harness's JMP to its tail, its RET
        EXPECT_TRUE(e[i]["from"].is_null() && e[i]["to"].is_null()) << what;
}

Cmd run_lbr(SimMachine& m) {
    SimPlatform p(m);
    return run_line(p, std::string("--json run --cpu 0 --code ") + kLoopCall +
                           " --name loop_call --lbr --unroll 2 --reps 2 --warmup 1");
}

}  // namespace

TEST(RunLbr, SkylakeLegacyLbrInfoGivesTheBranchesAndTheirCycles) {
    SimMachine m = intel_skylake(1);
    Cmd c = run_lbr(m);
    ASSERT_EQ(c.status, 0) << c.out;
    std::vector<pmutest::Json> l = simm::of_type(c, "lbr");
    ASSERT_EQ(l.size(), 1u) << c.out;
    EXPECT_EQ(l[0]["lbr"].s(), "legacy");
    EXPECT_EQ(l[0]["depth"].u(), 32u);
    EXPECT_EQ(l[0]["format"].u(), 5u);
    EXPECT_EQ(l[0]["bench"].s(), "loop_call");
    check_entries(l[0], true, "skylake");
    // Everything --lbr touched is back: DEBUGCTL and LBR_SELECT as before.
    EXPECT_EQ(m.cpu(0).peek(0x1D9), 0u);
    EXPECT_EQ(m.cpu(0).peek(0x1C8), 0u);
}

TEST(RunLbr, AlderLakeArchitecturalLbr) {
    SimMachine all = pmutest::dump_machine("GenuineIntel0090672_AlderLake_02_CPUID.txt");
    SimMachine m = keep_cpus(all, {0}, true);
    Cmd c = run_lbr(m);
    ASSERT_EQ(c.status, 0) << c.out;
    std::vector<pmutest::Json> l = simm::of_type(c, "lbr");
    ASSERT_EQ(l.size(), 1u) << c.out;
    EXPECT_EQ(l[0]["lbr"].s(), "architectural");
    check_entries(l[0], true, "alder lake");
    EXPECT_EQ(m.cpu(0).peek(0x14CE), 0u);  // IA32_LBR_CTL and the depth restored
    EXPECT_EQ(m.cpu(0).peek(0x14CF), 32u);
}

TEST(RunLbr, Zen4LbrV2HasNoCycles) {
    SimMachine z4 = amd_zen4(1);
    SimMachine gr = keep_cpus(pmutest::dump_machine("AuthenticAMD0B40F40_K20_GraniteRidge_02_CPUID.txt"), {0}, true);
    for (SimMachine* m : {&z4, &gr}) {
        Cmd c = run_lbr(*m);
        ASSERT_EQ(c.status, 0) << c.out;
        std::vector<pmutest::Json> l = simm::of_type(c, "lbr");
        ASSERT_EQ(l.size(), 1u) << c.out;
        EXPECT_EQ(l[0]["lbr"].s(), "amd_lbr_v2");
        EXPECT_EQ(l[0]["depth"].u(), 16u);
        // 16 entries: the last 14 branches of the body and the harness's two.
        const pmutest::Json& e = l[0]["entries"];
        ASSERT_EQ(e.items.size(), 16u);
        std::vector<Want> w = expected(4);
        for (size_t i = 0; i < 14; ++i) {
            const Want& x = w[w.size() - 14 + i];
            EXPECT_EQ(e[i]["from"].u(), u64(x.from)) << i;
            if (x.to >= 0) EXPECT_EQ(e[i]["to"].u(), u64(x.to)) << i;
            EXPECT_TRUE(e[i]["cycles"].is_null());
        }
        EXPECT_EQ(m->cpu(0).peek(0xC000010F), 0u);  // DBG_EXTN_CFG restored
    }
}

TEST(RunLbr, TextShowsBasicBlockTimings) {
    SimMachine m = intel_skylake(1);
    SimPlatform p(m);
    Cmd c = run_line(p, std::string("run --cpu 0 --code ") + kLoopCall +
                            " --name loop_call --lbr --unroll 2 --reps 2 --warmup 1");
    ASSERT_EQ(c.status, 0) << c.out;
    EXPECT_NE(c.out.find("LBR loop_call on CPU 0 (legacy Skylake, format 5, 32 entries): 22 records of the last run\n"
                         "  basic block (body offsets)   times   cycles min      avg      max\n"
                         "  0x5..0xa                         4            3        3.00        3\n"
                         "  0x5..0xc                         4            4        4.00        4\n"
                         "  0x13..0x13                       4            1        1.00        1\n"
                         "  0x11..0x11                       4            1        1.00        1\n"
                         "  0x0..0xa                         3            4        4.00        4\n"),
              std::string::npos)
        << c.out;
}

TEST(RunLbr, NoLbrIsRefusedBeforeAnythingRuns) {
    for (int k = 0; k < 3; ++k) {
        SimMachine m = k == 0 ? qemu_tcg(1) : k == 1 ? amd_zen3(1) : intel_alder_lake();
        SimPlatform p(m);
        Cmd c = run_line(p, std::string("--json run --cpu 0 --code ") + kLoopCall + " --lbr");
        EXPECT_EQ(c.status, 3) << c.out;
        EXPECT_TRUE(simm::results(c).empty()) << c.out;
        EXPECT_NE(c.out.find("run --lbr: CPU 0 has no LBR: "), std::string::npos) << c.out;
    }
}

TEST(SelftestLbr, PassesWithLbrFailsWhenBrokenSkipsWithout) {
    auto line = [](SimMachine& m) {
        SimPlatform p(m);
        Cmd c = run_line(p, "selftest --cpu 0");
        size_t at = c.out.find("lbr: an LBR records a known taken jump [CPU 0]");
        return at == std::string::npos
                   ? std::string("(none)\n") + c.out
                   : c.out.substr(c.out.rfind('\n', at) + 1, c.out.find('\n', at) - c.out.rfind('\n', at) - 1);
    };
    SimMachine sk = intel_skylake(1);
    EXPECT_EQ(line(sk), "PASS: lbr: an LBR records a known taken jump [CPU 0]: legacy LBR (Skylake, format 5, 32 "
                        "entries): 4 records, one from the JMP to its target");
    SimMachine z4 = amd_zen4(1);
    EXPECT_EQ(line(z4).substr(0, 6), "PASS: ");
    SimMachine broken = intel_skylake(1);
    broken.cpu(0).break_lbr(true);
    EXPECT_EQ(line(broken), "FAIL: lbr: an LBR records a known taken jump [CPU 0]: legacy LBR (Skylake, format 5, 32 "
                            "entries): 0 records, none from the JMP (EB 01) to its target");
    SimMachine z3 = amd_zen3(1);
    EXPECT_EQ(line(z3).substr(0, 6), "SKIP: ");
}
