// `pmulab selftest` PMU checks against behaviours of real silicon (issue 11): a coarse
// reference clock behind CPU_CLK_UNHALTED.REF_TSC, and PMU kinds without checks.
#include <gtest/gtest.h>

#include "measure/pmu_plan.h"
#include "support/sim_cmd.h"
#include "support/sim_measure.h"
#include "support/test_platform.h"

using namespace pmulab;
using namespace sim;
using simm::SimPlatform;

using simm::Cmd;
using simm::run_line;

namespace {

bool has_prefix_line(const std::string& out, const std::string& prefix) {
    return ("\n" + out).find("\n" + prefix) != std::string::npos;
}

}  // namespace

// REF_TSC counts in steps of the reference clock: 100 TSC ticks per 24 MHz crystal tick at
// 2.4 GHz, at an arbitrary phase. A window of a few hundred ticks is then off by a whole
// step: the check must use a long window and allow a few steps, never FAIL a healthy part.
TEST(SelftestSilicon, CoarseReferenceClockDoesNotFailTheRefCyclesCheck) {
    for (u64 step : {25u, 100u, 208u}) {
        SimMachine m = intel_v4_goldmont_plus(1);
        m.cpu(0).set_rdtsc_step(3);
        m.cpu(0).set_ref_clock(step, step / 3);
        SimPlatform p(m);
        Cmd c = run_line(p, "selftest");
        EXPECT_TRUE(has_prefix_line(c.out, "PASS: reference cycles: fixed counter 2 vs the TSC [CPU 0]")) << c.out;
        EXPECT_TRUE(has_prefix_line(c.out, "PASS: each counter counts individually (instructions retired on every GP "
                                           "counter): FIXED_CTR2 [CPU 0]"))
            << c.out;
        EXPECT_EQ(c.status, 0) << "step " << step << "\n" << c.out;
    }
}

namespace {
std::string pmu_lines(const std::string& out) {
    std::string r, line;
    for (char ch : out) {
        if (ch != '\n') {
            line += ch;
            continue;
        }
        if (line.find("retired") != std::string::npos || line.find("wraps") != std::string::npos ||
            line.find("gated") != std::string::npos || line.find("overflow") != std::string::npos ||
            line.find("IRPerf") != std::string::npos || line.rfind("SUMMARY", 0) == 0)
            r += line + "\n";
        line.clear();
    }
    return r;
}
}  // namespace

// AMD: checks equivalent to the Intel ones, and they FAIL on a broken PMU.
TEST(SelftestSilicon, AmdPmuIsChecked) {
    SimMachine m = amd_zen4(1);
    m.cpu(0).set_rdtsc_step(3);
    SimPlatform p(m);
    Cmd c = run_line(p, "selftest");
    EXPECT_EQ(c.status, 0) << c.out;
    std::string want;
    for (int i = 0; i < 6; ++i)
        want += "PASS: instructions retired on each counter vs the kernel's count: PERF_CTR" + std::to_string(i) +
                " (PMCx0C0) [CPU 0]: 0C0.00.CTR=" + std::to_string(i) +
                ": 8.00 per iteration of add_indep (expected 8, tolerance 1%)\n";
    want += "PASS: IRPerfCount vs PMCx0C0 (instructions retired) [CPU 0]: instructions,0C0.00: 8.00, 8.00 per "
            "iteration of add_indep (expected 8, tolerance 1%)\n"
            "PASS: counter wraps at the enumerated width [CPU 0]: 0C0.00 preset 2^48-4000: 8.00 per iteration, "
            "wrapping run 8011 vs 8011..8011; PerfMonV2 GLOBAL_STATUS overflow flag set\n"
            "PASS: counting is gated by the enable controls [CPU 0]: with PerfMonV2 GLOBAL_CTL = 0 (PERF_CTL.EN set) "
            "the largest count of any run is 0\n"
            // The interrupt checks (selftest_pmi.cpp): the PMI through the simulated LVT entry.
            "PASS: an overflow sets its GLOBAL_STATUS bit and delivers exactly one PMI: PERF_CTR0 [CPU 0]: period "
            "3000 of 4000 instructions: 1 PMI; GLOBAL_STATUS bit 0 set at it, clear after the handler; counter 0 at "
            "it; RIP in the body at copy 373 + 20; LVT 0x10400 at it (masked by the delivery), re-armed 0x400; LVT "
            "restored 0x10000 (was 0x10000)\n"
            "SUMMARY: 26 tests, 0 failures, 0 skipped\n";
    EXPECT_EQ(pmu_lines(c.out), want) << c.out;
}

TEST(SelftestSilicon, ABrokenAmdPmuFails) {
    // PERF_CTR3 (C001_0207) rejects writes: that counter's check FAILs and the command fails
    // (before issue 11 the selftest skipped every PMU check on AMD and exited 0).
    SimMachine m = amd_zen3(1);
    m.cpu(0).set_rdtsc_step(3);
    m.cpu(0).fail_wrmsr_to(0xC0010207);
    SimPlatform p(m);
    Cmd c = run_line(p, "selftest");
    EXPECT_EQ(c.status, 1) << c.out;
    EXPECT_TRUE(has_prefix_line(c.out, "FAIL: instructions retired on each counter vs the kernel's count: PERF_CTR3 "
                                       "(PMCx0C0) [CPU 0]: "))
        << c.out;
    // ... and so does the interrupt checks' wrap of every GP counter (Zen 3 cannot freeze and has no LBR: 2 SKIPs).
    EXPECT_TRUE(has_prefix_line(c.out, "FAIL: counters wrap at their enumerated width: GP counters count past 2^width "
                                       "- 1 to 0 [CPU 0]: WRMSR 0xc0010207 <- 0xfffffffffff0 raised #GP"))
        << c.out;
    EXPECT_TRUE(has_prefix_line(c.out, "SUMMARY: 26 tests, 2 failures, 2 skipped")) << c.out;
}

TEST(SelftestSilicon, NetBurstPmuIsChecked) {
    SimMachine m = netburst_p4(1);
    m.cpu(0).set_rdtsc_step(3);
    SimPlatform p(m);
    Cmd c = run_line(p, "selftest");
    EXPECT_EQ(c.status, 0) << c.out;
    EXPECT_EQ(pmu_lines(c.out),
              "PASS: instructions retired on each counter vs the kernel's count: instr_retired on an IQ counter [CPU "
              "0]: instr_retired: 8.00 per iteration of add_indep (expected 8, tolerance 1%)\n"
              "PASS: counter wraps at the enumerated width [CPU 0]: instr_retired preset 2^40-4000: 8.00 per "
              "iteration, wrapping run 8011 vs 8011..8011\n"
              "PASS: counting is gated by the enable controls [CPU 0]: with CCCR.Enable clear the largest count of "
              "any run is 0\n"
              "NOT VERIFIED: overflow flag after a wrap [CPU 0]: CCCR.OVF is cleared by the stop write of generated "
              "code: overflow is reported unknown on NetBurst\n"
              "SKIP: an overflow sets its GLOBAL_STATUS bit and delivers exactly one PMI [CPU 0] (the NetBurst "
              "ESCR/CCCR PMU's overflow interrupt (CCCR.OVF_PMI) is not implemented in pmulab)\n"
              "SKIP: freeze-on-PMI stops every counter [CPU 0] (the NetBurst ESCR/CCCR PMU's overflow interrupt "
              "(CCCR.OVF_PMI) is not implemented in pmulab)\n"
              "SKIP: counters wrap at their enumerated width [CPU 0] (the NetBurst counters' 40-bit wrap is the check "
              "'counter wraps at the enumerated width')\n"
              "SUMMARY: 21 tests, 0 failures, 4 skipped, 1 not verified\n")
        << c.out;
}

TEST(SelftestSilicon, ABrokenNetBurstPmuFails) {
    SimMachine m = netburst_p4(1);
    m.cpu(0).set_rdtsc_step(3);
    m.cpu(0).fail_wrmsr_to(0x3B8);  // CRU_ESCR0, which instr_retired needs
    SimPlatform p(m);
    Cmd c = run_line(p, "selftest");
    EXPECT_EQ(c.status, 1) << c.out;
    EXPECT_TRUE(has_prefix_line(c.out, "FAIL: instructions retired on each counter vs the kernel's count: "
                                       "instr_retired on an IQ counter [CPU 0]: "))
        << c.out;
}

// A processor the firmware reports disabled cannot run code: check_every_cpu skips it
// (issue 11, item 8) instead of failing the selftest on a healthy machine.
TEST(SelftestSilicon, EveryCpuSkipsFirmwareDisabledProcessors) {
    SimMachine m = intel_v4_goldmont_plus(3);
    for (u32 i = 0; i < m.size(); ++i) m.cpu(i).set_rdtsc_step(3);
    m.cpu(2).set_enabled(false);
    SimPlatform p(m);
    Cmd c = run_line(p, "selftest");
    EXPECT_TRUE(has_prefix_line(c.out, "PASS: every CPU measures the nop kernel: 2 of 2 CPUs (1 disabled by the "
                                       "firmware, skipped)\n"))
        << c.out;
    EXPECT_EQ(c.status, 0) << c.out;
}

// An SMI in a few of the 11 runs adds the handler's instructions to that run: the wrap
// check must judge the runs robustly (median, a minority of outliers reported) instead of
// requiring all 11 within 1% (issue 11, item 8).
TEST(SelftestSilicon, OneDisturbedRunDoesNotFailTheWrapCheck) {
    SimMachine m = intel_v4_goldmont_plus(1);
    m.cpu(0).set_rdtsc_step(3);
    // A part without FREEZE_WHILE_SMM (IA32_PERF_CAPABILITIES[12] clear): the SMIs count.
    m.cpu(0).set_perf_capabilities(kGoldmontPlusPerfCaps & ~(u64(1) << 12));
    SimPlatform p(m);
    m.cpu(0).set_smi(0, 0);
    // The wrap check's runs come after the earlier checks; an SMI every 46th run() (the executor's batches,
    // SimCpu::set_smi) hits some of its runs but not most.
    m.cpu(0).set_smi(46, 500);
    Cmd c = run_line(p, "selftest");
    EXPECT_TRUE(has_prefix_line(c.out, "PASS: counter overflow wraps at the enumerated width and sets GLOBAL_STATUS "
                                       "[CPU 0]: preset 2^48-4000 (GP), 2^48-4000 (fixed): FIXED_CTR0 8.00 per "
                                       "iteration, wrapping run 8015 vs 8015..8515 (median 8015; 2 of 11 runs "
                                       "disturbed, beyond 1% of it)"))
        << c.out;
}

// Item 8: where IA32_PERF_CAPABILITIES[12] enumerates it, pmulab sets
// IA32_DEBUGCTL.FREEZE_WHILE_SMM for every measurement, so the same SMIs do not reach the
// counters at all (every run of the wrap check is identical), and puts DEBUGCTL back.
TEST(SelftestSilicon, FreezeWhileSmmKeepsSmisOutOfTheCounts) {
    SimMachine m = intel_v4_goldmont_plus(1);
    m.cpu(0).set_rdtsc_step(3);
    // A firmware bit of DEBUGCTL (TR, bit 6), kept. (Not LBR, bit 0: the simulated LBR stack
    // would then record every branch, instruction by instruction, far slower.)
    m.cpu(0).poke(sim::reg::DEBUGCTL, 0x40);
    SimPlatform p(m);
    m.cpu(0).set_smi(23, 500);
    Cmd c = run_line(p, "selftest");
    EXPECT_TRUE(has_prefix_line(
        c.out, "PASS: counter overflow wraps at the enumerated width and sets GLOBAL_STATUS "
               "[CPU 0]: preset 2^48-4000 (GP), 2^48-4000 (fixed): FIXED_CTR0 8.00 per "
               "iteration, wrapping run 8015 vs 8015..8015; GP 8.00 per iteration, wrapping run 8015 vs 8015..8015"))
        << c.out;
    EXPECT_GT(m.cpu(0).peek(sim::reg::SMI_COUNT), 0u);
    EXPECT_EQ(m.cpu(0).peek(sim::reg::DEBUGCTL), 0x40u);
    EXPECT_EQ(c.status, 0) << c.out;
}

namespace {
// A KVM guest of intel_v4_goldmont_plus: CPUID.01H:ECX[31] and leaf 4000_0000H "KVMKVMKVM".
SimMachine kvm_guest(bool hypervisor) {
    SimMachine base = intel_v4_goldmont_plus(1);
    CpuSpec s = base.cpu(0).spec();
    if (hypervisor) {
        CpuidRegs l1 = s.cpuid.get(1);
        l1.ecx |= 1u << 31;
        s.cpuid.set(1, 0, l1);
        s.cpuid.set(0x40000000, 0, {0x40000001, 0x4b4d564b, 0x564b4d56, 0x0000004d});
    }
    return SimMachine({s});
}
}  // namespace

// KVM with TSC scaling: the guest's TSC runs at 2/3 of the host's, fixed counter 2 counts
// the host's ticks (3/2 per guest tick). A healthy PMU: the check SKIPs with the reason
// under a hypervisor, and still FAILs on bare metal, where the mismatch is a fault.
TEST(SelftestSilicon, KvmTscScalingSkipsTheRefCyclesCheckWithTheReason) {
    SimMachine m = kvm_guest(true);
    m.cpu(0).set_rdtsc_step(3);
    m.cpu(0).set_host_tsc_scale(3, 2);
    SimPlatform p(m);
    Cmd c = run_line(p, "selftest");
    EXPECT_TRUE(
        has_prefix_line(c.out,
                        "SKIP: reference cycles: fixed counter 2 vs the TSC [CPU 0] (FIXED_CTR2 1.50 vs TSC 1.00 ticks "
                        "per iteration of add_chain: under a hypervisor"))
        << c.out;
    EXPECT_NE(c.out.find("under a hypervisor (CPUID.01H:ECX[31], 'KVMKVMKVM') fixed counter 2 counts at the host's TSC "
                         "rate"),
              std::string::npos)
        << c.out;
    EXPECT_EQ(c.out.find("FAIL: reference cycles"), std::string::npos) << c.out;

    SimMachine bare = kvm_guest(false);
    bare.cpu(0).set_rdtsc_step(3);
    bare.cpu(0).set_host_tsc_scale(3, 2);
    SimPlatform pb(bare);
    c = run_line(pb, "selftest");
    EXPECT_TRUE(has_prefix_line(c.out, "FAIL: reference cycles: fixed counter 2 vs the TSC [CPU 0]")) << c.out;
    EXPECT_NE(c.status, 0);
}
