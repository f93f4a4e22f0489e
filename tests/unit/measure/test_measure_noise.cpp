// Noise provenance and serialisation of `pmulab run` (issue 11, items 5 and 8 and "noise
// provenance"), end to end on the simulated machine: what each result record says, and
// that DEBUGCTL and DE_CFG are set for the measurement and put back exactly.
#include <gtest/gtest.h>

#include <algorithm>

#include "support/sim_cmd.h"
#include "support/sim_measure.h"
#include "support/test_platform.h"

using namespace pmulab;
using namespace sim;
using simm::SimPlatform;

using simm::Cmd;
using simm::results;
using simm::run_line;
using simm::writes_to;

namespace {

constexpr u32 kDeCfg = 0xC0011029;
constexpr u64 kFreeze = u64(1) << 14;
const char kRun[] = "run --json --bench add_indep --events instructions,tsc --reps 11 --warmup 1 --unroll 10";

// An Intel v4 part with APERF/MPERF (CPUID.06H:ECX[0]) and PERF_CAPABILITIES[12].
SimMachine intel_with_aperf(u64 caps = kGoldmontPlusPerfCaps) {
    IntelCpuidSpec sp;
    sp.signature = 0x000706A8;
    sp.leaf_0a = {0x07300404, 0, 0, 0x00008603};
    sp.leaf_06_ecx = 1;
    return intel_machine(sp, {1, 1, 1}, caps);
}

}  // namespace

// Item 5: firmware left DE_CFG[1] clear. The measurement sets it (LFENCE is then
// dispatch-serialising), says so, and writes the firmware's value back afterwards.
TEST(RunNoise, AmdDeCfgBitSetForTheMeasurementAndRestored) {
    SimMachine m = amd_zen4(1);
    m.cpu(0).poke(kDeCfg, 0x1000);
    SimPlatform p(m);
    Cmd c = run_line(p, "run --json --bench nop --reps 3 --warmup 1");
    ASSERT_EQ(c.status, 0) << c.out;
    std::vector<pmutest::Json> r = results(c);
    ASSERT_EQ(r.size(), 1u) << c.out;
    EXPECT_EQ(r[0]["serialize"].s(), "lfence_after_de_cfg");
    EXPECT_NE(r[0]["serialize_note"].s().find("DE_CFG (C001_1029H)[1] was clear (0x1000)"), std::string::npos);
    // The probe's trial (set, put back), then the measurement's (set, restore).
    EXPECT_EQ(writes_to(m.cpu(0), kDeCfg), (std::vector<u64>{0x1002, 0x1000, 0x1002, 0x1000}));
    EXPECT_EQ(m.cpu(0).peek(kDeCfg), 0x1000u);
}

TEST(RunNoise, AmdDeCfgAlreadySetIsLeftAlone) {
    SimMachine m = amd_zen4(1);
    m.cpu(0).poke(kDeCfg, 0x1002);  // as Linux leaves it
    SimPlatform p(m);
    Cmd c = run_line(p, "run --json --bench nop --reps 3 --warmup 1");
    ASSERT_EQ(c.status, 0) << c.out;
    EXPECT_EQ(results(c)[0]["serialize"].s(), "lfence");
    EXPECT_FALSE(results(c)[0].has("serialize_note"));
    EXPECT_TRUE(writes_to(m.cpu(0), kDeCfg).empty());
}

// DE_CFG unreadable, or a write that does not stick: CPUID serialises, and the record
// says why; DE_CFG is left as it was.
TEST(RunNoise, AmdDeCfgUnusableMeansCpuid) {
    SimMachine m = amd_zen4(1);
    m.cpu(0).fail_rdmsr_to(kDeCfg);
    SimPlatform p(m);
    Cmd c = run_line(p, "run --json --bench nop --reps 3 --warmup 1");
    ASSERT_EQ(c.status, 0) << c.out;
    EXPECT_EQ(results(c)[0]["serialize"].s(), "cpuid");
    EXPECT_NE(results(c)[0]["serialize_note"].s().find("DE_CFG (C001_1029H) unreadable"), std::string::npos);

    SimMachine n = amd_zen4(1);
    n.cpu(0).fail_wrmsr_to(kDeCfg);
    SimPlatform q(n);
    c = run_line(q, "run --json --bench nop --reps 3 --warmup 1");
    ASSERT_EQ(c.status, 0) << c.out;
    EXPECT_EQ(results(c)[0]["serialize"].s(), "cpuid");
    EXPECT_NE(results(c)[0]["serialize_note"].s().find("is clear and cannot be set"), std::string::npos);
    EXPECT_EQ(n.cpu(0).peek(kDeCfg), 0u);
    // The user's --serialize cpuid needs no DE_CFG at all.
    c = run_line(q, "run --json --bench nop --reps 3 --warmup 1 --serialize cpuid");
    EXPECT_EQ(results(c)[0]["serialize"].s(), "cpuid");
}

// Item 8 and the SMI count: with FREEZE_WHILE_SMM every run counts exactly the kernel,
// the SMIs still happen (MSR_SMI_COUNT moves), the result is flagged in JSON and text,
// and DEBUGCTL is restored bit for bit.
TEST(RunNoise, FreezeWhileSmmMakesCountsImmuneAndTheSmiIsFlagged) {
    SimMachine m = intel_with_aperf();
    m.cpu(0).poke(reg::DEBUGCTL, 0x1);
    m.cpu(0).set_smi(40, 700);
    SimPlatform p(m);
    Cmd c = run_line(p, kRun);
    ASSERT_EQ(c.status, 0) << c.out;
    std::vector<pmutest::Json> r = results(c);
    ASSERT_EQ(r.size(), 2u) << c.out;
    const pmutest::Json& n = r[0]["noise"];
    EXPECT_EQ(n["freeze_while_smm"].s(), "set");
    EXPECT_GT(n["smi_delta"].u(), 0u);
    EXPECT_TRUE(r[0]["smi_moved"].b);
    EXPECT_EQ(r[0]["event"].s(), "instructions");
    EXPECT_EQ(r[0]["min"].text, "8.00");
    EXPECT_EQ(r[0]["max"].text, "8.00") << "an SMI reached the counter";
    EXPECT_EQ(m.cpu(0).peek(reg::DEBUGCTL), 0x1u);
    std::vector<u64> w = writes_to(m.cpu(0), reg::DEBUGCTL);
    ASSERT_FALSE(w.empty());
    EXPECT_EQ(w.front(), 0x1u | kFreeze);
    EXPECT_EQ(w.back(), 0x1u);
    // Text: the row carries the flag.
    c = run_line(p, "run --bench add_indep --events instructions --reps 11 --warmup 1 --unroll 10");
    EXPECT_NE(c.out.find("  SMI+"), std::string::npos) << c.out;
}

// Without FREEZE_WHILE_SMM the same SMIs reach the counter: the record says the bit is
// unsupported and why, and flags the result.
TEST(RunNoise, WithoutFreezeTheSmiCountsAndIsFlagged) {
    SimMachine m = intel_with_aperf(kGoldmontPlusPerfCaps & ~(u64(1) << 12));
    m.cpu(0).set_smi(40, 700);
    SimPlatform p(m);
    Cmd c = run_line(p, std::string(kRun) + " --raw");
    ASSERT_EQ(c.status, 0) << c.out;
    std::vector<pmutest::Json> r = results(c);
    ASSERT_EQ(r.size(), 2u) << c.out;
    EXPECT_EQ(r[0]["noise"]["freeze_while_smm"].s(), "unsupported");
    EXPECT_EQ(r[0]["noise"]["freeze_absent"].s(), "IA32_PERF_CAPABILITIES[12] = 0: FREEZE_WHILE_SMM not supported");
    EXPECT_TRUE(r[0]["smi_moved"].b);
    // Some runs include the SMM handler's instructions.
    std::vector<u64> counts = r[0]["short"]["counts"].u_list();
    for (u64 v : r[0]["long"]["counts"].u_list()) counts.push_back(v);
    std::sort(counts.begin(), counts.end());
    EXPECT_GE(counts.back() - counts.front(), 700u) << c.out;
    EXPECT_TRUE(writes_to(m.cpu(0), reg::DEBUGCTL).empty());
}

// APERF/MPERF deltas over the job (the simulator advances both by the cycles run) and the
// TSC delta of the same window; a quiet run reports smi_delta 0 and smi_moved false.
TEST(RunNoise, AperfMperfAndTscDeltasOfTheJob) {
    SimMachine m = intel_with_aperf();
    SimPlatform p(m);
    Cmd c = run_line(p, kRun);
    ASSERT_EQ(c.status, 0) << c.out;
    std::vector<pmutest::Json> rs = results(c);
    ASSERT_EQ(rs.size(), 2u) << c.out;
    const pmutest::Json& n = rs[0]["noise"];
    EXPECT_EQ(n["smi_delta"].u(), 0u);
    EXPECT_FALSE(rs[0]["smi_moved"].b);
    EXPECT_GT(n["aperf_delta"].u(), 2u * 12 * 10 * 8);  // at least the kernel's cycles
    EXPECT_EQ(n["aperf_delta"].u(), n["mperf_delta"].u());
    EXPECT_GT(n["tsc_delta"].u(), 0u);
    EXPECT_FALSE(n.has("aperf_absent"));
    // No TSC frequency on this machine (no leaf 15H/16H, a timer that does not move):
    // the effective frequency is unknown, and says why.
    EXPECT_TRUE(n["effective_hz"].is_null());
    EXPECT_EQ(n["effective_absent"].s(), "TSC frequency unknown");
}

// With the TSC frequency from CPUID.15H (24 MHz crystal x 125 / 2 = 1.5 GHz) the effective
// frequency is TSC Hz x APERF / MPERF; the simulator advances both alike, so it is 1.5 GHz.
TEST(RunNoise, EffectiveFrequencyFromAperfMperfAndTheTsc) {
    IntelCpuidSpec sp;
    sp.signature = 0x000706A8;
    sp.leaf_0a = {0x07300404, 0, 0, 0x00008603};
    sp.leaf_06_ecx = 1;
    sp.leaf_15 = {2, 125, 24000000, 0};
    SimMachine m = intel_machine(sp, {1, 1, 1}, kGoldmontPlusPerfCaps);
    SimPlatform p(m);
    Cmd c = run_line(p, kRun);
    ASSERT_EQ(c.status, 0) << c.out;
    std::vector<pmutest::Json> rs = results(c);
    ASSERT_EQ(rs.size(), 2u) << c.out;
    EXPECT_EQ(rs[0]["noise"]["effective_hz"].u(), 1500000000u) << c.out;
    EXPECT_FALSE(rs[0]["noise"].has("effective_absent"));
}

// Absent sources are explicit: null with the reason (QEMU TCG-like Intel: a hypervisor,
// no leaf 06H bit, no PERF_CAPABILITIES).
TEST(RunNoise, AbsentFieldsSayWhy) {
    SimMachine m = qemu_tcg_intel(1);
    SimPlatform p(m);
    Cmd c = run_line(p, "run --json --bench nop --reps 3 --warmup 1");
    ASSERT_EQ(c.status, 0) << c.out;
    std::vector<pmutest::Json> rs = results(c);
    ASSERT_EQ(rs.size(), 1u) << c.out;
    const pmutest::Json& r = rs[0];
    EXPECT_TRUE(r["noise"]["smi_delta"].is_null());
    EXPECT_NE(r["noise"]["smi_absent"].s().find("a hypervisor is present"), std::string::npos);
    EXPECT_TRUE(r["noise"]["aperf_delta"].is_null());
    EXPECT_FALSE(r["noise"]["aperf_absent"].s().empty());
    EXPECT_EQ(r["noise"]["freeze_while_smm"].s(), "unsupported");
    EXPECT_TRUE(r["smi_moved"].is_null());
    EXPECT_EQ(r["serialize"].s(), "lfence");
}

// AMD has no MSR_SMI_COUNT: on Zen the noise guard counts PMCx02B (ls_smi_rx) on the highest
// GP counter the group leaves free (issue 26 item 7). Simulated Zen 4 (PerfMonV2, 6 counters)
// with an SMI every 40th run: the group takes PMC0 (ex_ret_ops), so PMC5 counts the SMIs,
// every one of the job's (the simulator's own count is the oracle), enabled in each run by
// the region's own PerfCntrGlobalCtl start write (bit 5 with the group's bit 0: 21H), and PERF_CTL5,
// PERF_CTR5 and GLOBAL_CTL are put back exactly.
TEST(RunNoise, AmdZen4CountsSmisWithPmcx02bOnAFreeCounter) {
    constexpr u32 kCtl5 = 0xC001020A, kCtr5 = 0xC001020B, kGlobalCtl = 0xC0000301;
    SimMachine m = amd_zen4(1);
    m.cpu(0).poke(kCtl5, 0x4300C2);  // the firmware's (or an OS's) own use of PMC5: kept
    m.cpu(0).poke(kCtr5, 1234);
    m.cpu(0).set_smi(40, 700);
    SimPlatform p(m);
    u64 before = m.cpu(0).smis(), global = m.cpu(0).peek(kGlobalCtl);
    Cmd c = run_line(p, "run --json --bench add_indep --events ex_ret_ops --reps 11 --warmup 1 --unroll 10");
    ASSERT_EQ(c.status, 0) << c.out;
    std::vector<pmutest::Json> r = results(c);
    ASSERT_EQ(r.size(), 1u) << c.out;
    const pmutest::Json& n = r[0]["noise"];
    EXPECT_EQ(r[0]["counter"].s(), "PMC0");
    EXPECT_EQ(n["smi_counter"].s(), "PMC5") << c.out;
    EXPECT_EQ(n["smi_counter_cost"].s(), "PMCx02B (ls_smi_rx) on a GP counter this group's events leave free: no "
                                         "event moved to another run, no instruction added to the measured code");
    EXPECT_FALSE(n.has("smi_absent"));
    EXPECT_EQ(n["smi_delta"].u(), m.cpu(0).smis() - before) << c.out;
    EXPECT_EQ(n["smi_delta"].u(), 4u) << c.out;
    EXPECT_TRUE(r[0]["smi_moved"].b);
    // Stopped, zeroed, PMCx02B with USR, OS and EN (43002BH); at the end EN cleared first
    // (the ledger's disable pass), then the firmware's value back.
    EXPECT_EQ(writes_to(m.cpu(0), kCtl5), (std::vector<u64>{0, 0x43002B, 0x03002B, 0x4300C2})) << c.out;
    EXPECT_EQ(m.cpu(0).peek(kCtl5), 0x4300C2u);
    EXPECT_EQ(m.cpu(0).peek(kCtr5), 1234u);
    EXPECT_EQ(m.cpu(0).peek(kGlobalCtl), global);  // 3FH, its reset value
    std::vector<u64> g = writes_to(m.cpu(0), kGlobalCtl);
    EXPECT_NE(std::find(g.begin(), g.end(), 0x21u), g.end()) << "the region's start write keeps PMC5 on";
    // 20H only from the guard (its begin) and the session's restore of what it found: each
    // run's stop write clears the register, as the session expects between runs.
    EXPECT_EQ(std::count(g.begin(), g.end(), 0x20u), 2) << c.out;
}

// A group that takes all six counters leaves none for PMCx02B: the record says so (null,
// with the reason) and nothing is written to a counter for it.
TEST(RunNoise, AmdZen4SmiCountAbsentWhenTheGroupTakesEveryCounter) {
    SimMachine m = amd_zen4(1);
    SimPlatform p(m);
    Cmd c = run_line(
        p, "run --json --bench nop --events ex_no_retire.not_complete,ex_ret_ops,ex_ret_ucode_ops,de_src_op_disp.all,"
           "resyncs_or_nc_redirects,ls_smi_rx --reps 3 --warmup 1");
    ASSERT_EQ(c.status, 0) << c.out;
    std::vector<pmutest::Json> r = results(c);
    ASSERT_EQ(r.size(), 6u) << c.out;
    const pmutest::Json& n = r[0]["noise"];
    EXPECT_TRUE(n["smi_delta"].is_null());
    EXPECT_EQ(n["smi_absent"].s(), "the group's events take all 6 GP counters: none is free for PMCx02B (ls_smi_rx); "
                                   "measure fewer events for the SMI count");
    EXPECT_FALSE(n.has("smi_counter"));
    EXPECT_TRUE(r[0]["smi_moved"].is_null());
}
