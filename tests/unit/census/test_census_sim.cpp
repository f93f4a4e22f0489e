// `pmulab info` and `pmulab msr` through the app layer (app_run) on simulated
// machines: exact table lines, JSON fields, exit statuses, and what the commands
// did to the hardware (the simulator's access log).
#include <gtest/gtest.h>

#include "support/test_platform.h"

using namespace pmutest;
using namespace sim;

namespace {

std::string join(const std::vector<std::string>& v, size_t from, size_t n) {
    std::string s;
    for (size_t i = from; i < from + n && i < v.size(); ++i) s += v[i] + "\n";
    return s;
}

// `info` only reads: CPUID everywhere, IA32_PERF_CAPABILITIES where PDCM is set.
void expect_census_accesses(const SimMachine& m) {
    for (u32 i = 0; i < m.size(); ++i) {
        const SimCpu& c = m.cpu(i);
        bool pdcm = (c.snapshot().get(1).ecx >> 15) & 1;
        bool reached = c.topology().enabled && !c.unreachable();
        if (!reached || !pdcm) {
            EXPECT_TRUE(c.log().empty()) << "CPU " << i << ": " << describe(c.log()[0]);
            continue;
        }
        ASSERT_EQ(c.log().size(), 1u) << "CPU " << i;
        EXPECT_EQ(c.log()[0].kind, Access::rdmsr);
        EXPECT_EQ(c.log()[0].addr, reg::PERF_CAPABILITIES);
    }
}

// pmulab's idea of the usable counters (decoded from CPUID) must agree with the
// counters the simulated hardware has.
void expect_census_matches_model(const SimMachine& m, const std::vector<Json>& recs) {
    ASSERT_EQ(recs.size(), m.size());
    for (u32 i = 0; i < m.size(); ++i) {
        const PmuLayout& L = m.cpu(i).pmu();
        std::vector<u64> gp, fixed;
        for (u32 k = 0; k < 32; ++k) {
            if (L.gp(k)) gp.push_back(k);
            if (L.fixed(k)) fixed.push_back(k);
        }
        const Json& pmu = recs[i]["pmu"];
        EXPECT_EQ(pmu["gp_counters_usable"].u_list(), gp) << "CPU " << i;
        EXPECT_EQ(pmu["fixed_counters_usable"].u_list(), fixed) << "CPU " << i;
        EXPECT_EQ(pmu["present"].b, L.kind != PmuLayout::Kind::none) << "CPU " << i;
    }
}

}  // namespace

// ---------------------------------------------------------------- info

TEST(CensusSim, QemuTcgFourCpusWithoutPmu) {
    SimMachine m = qemu_tcg(4);
    TestPlatform p(m);
    RunResult r = run(p, {"info"});
    EXPECT_EQ(r.status, 0);
    EXPECT_EQ(r.out,
              "pmulab census: 4 logical processors\n"
              "CPU: AuthenticAMD \"QEMU Virtual CPU version 2.5+\", family 0xf model 0x6b stepping 0x1 (0F_6BH), "
              "signature 0x00060fb1, hypervisor present\n"
              "\n"
              "  CPU   APIC  BSP  PKG  CORE  THR  TYPE  PMU   GP      FIXED\n"
              "    0      0  yes    0     0    0  -     none\n"
              "    1      1         0     1    0  -     none\n"
              "    2      2         0     2    0  -     none\n"
              "    3      3         0     3    0  -     none\n"
              "\n"
              "PMU of CPU 0-3 (4 CPUs):\n"
              "  PMU              : none enumerated (no PerfCtrExtCore/PerfMonV2 under a hypervisor; the 4 legacy "
              "counters are not assumed in a virtual machine)\n"
              "\n"
              "vector extensions (run --code): sse sse2 sse3\n"
              "\n"
              "Next: 'run --bench nop --events tsc' works without a PMU; for counters boot on hardware, or under "
              "KVM with -cpu host,pmu=on\n");
    expect_census_accesses(m);  // no PDCM: no MSR access at all
    EXPECT_EQ(m.run_on_cpu_calls(), 4u);

    RunResult j = run(p, {"info", "--json"});
    EXPECT_EQ(j.status, 0);
    std::vector<Json> recs = parse_json_lines(j.out);
    ASSERT_EQ(recs.size(), 4u);
    for (u32 i = 0; i < 4; ++i) {
        const Json& c = recs[i];
        EXPECT_EQ(c["type"].s(), "cpu");
        EXPECT_EQ(c["index"].u(), i);
        EXPECT_EQ(c["apic_id"].u(), i);
        EXPECT_EQ(c["bsp"].b, i == 0);
        EXPECT_EQ(c["core"].u(), i);
        EXPECT_TRUE(c["collected"].b);
        EXPECT_EQ(c["vendor"].s(), "AuthenticAMD");
        EXPECT_EQ(c["signature"].s(), "0x60fb1");
        EXPECT_EQ(c["family"].u(), 15u);
        EXPECT_EQ(c["model"].u(), 107u);
        EXPECT_TRUE(c["hypervisor"].b);
        EXPECT_FALSE(c["pdcm"].b);
        EXPECT_EQ(c["max_leaf"].s(), "0xd");
        EXPECT_EQ(c["max_ext_leaf"].s(), "0x8000000a");
        const Json& pmu = c["pmu"];
        EXPECT_FALSE(pmu["present"].b);
        EXPECT_EQ(pmu["perfmon_version"].u(), 0u);
        EXPECT_EQ(pmu["amd"]["core_counters"].u(), 0u);
        EXPECT_FALSE(pmu["amd"]["perfctr_ext_core"].b);
        EXPECT_TRUE(pmu["perf_capabilities"].is_null());
        EXPECT_FALSE(pmu["perf_capabilities_fault"].b);
    }
    expect_census_matches_model(m, recs);
}

TEST(CensusSim, QemuTcgIntelModelReportsVersion0) {
    SimMachine m = qemu_tcg_intel(2);
    RunResult r = run(m, {"info"});
    EXPECT_EQ(r.status, 0);
    EXPECT_TRUE(r.has_line("    1      1         0     1    0  -     none")) << r.out;
    EXPECT_TRUE(r.has_line("  PMU              : none: CPUID.0AH reports version 0, no architectural performance "
                           "monitoring (normal under a hypervisor without PMU passthrough, e.g. QEMU TCG)"))
        << r.out;
    EXPECT_TRUE(r.has_line("Next: 'run --bench nop --events tsc' works without a PMU; for counters boot on hardware, "
                           "or under KVM with -cpu host,pmu=on"))
        << r.out;
}

// The "Next:" hint only where nothing can be counted under a hypervisor.
TEST(CensusSim, NextStepOnlyWithoutAPmu) {
    SimMachine m = intel_v4_goldmont_plus(2);
    RunResult r = run(m, {"info"});
    EXPECT_EQ(r.status, 0);
    EXPECT_EQ(r.out.find("Next:"), std::string::npos) << r.out;
}

TEST(CensusSim, Version4GoldmontPlus) {
    SimMachine m = intel_v4_goldmont_plus(4);
    TestPlatform p(m);
    RunResult r = run(p, {"info"});
    EXPECT_EQ(r.status, 0);
    std::vector<std::string> l = r.lines();
    ASSERT_GE(l.size(), 29u) << r.out;
    EXPECT_EQ(join(l, 0, 8),
              "pmulab census: 4 logical processors\n"
              "CPU: GenuineIntel \"Intel(R) Pentium(R) Silver N5030 CPU @ 1.10GHz\", family 0x6 model 0x7a "
              "stepping 0x8 (06_7AH), signature 0x000706a8\n"
              "\n"
              "  CPU   APIC  BSP  PKG  CORE  THR  TYPE  PMU   GP      FIXED\n"
              "    0      0  yes    0     0    0  -     v4    4x48    3x48\n"
              "    1      1         0     1    0  -     v4    4x48    3x48\n"
              "    2      2         0     2    0  -     v4    4x48    3x48\n"
              "    3      3         0     3    0  -     v4    4x48    3x48\n");
    EXPECT_EQ(join(l, 8, 7), "\n"
                             "PMU of CPU 0-3 (4 CPUs):\n"
                             "  perfmon version  : 4\n"
                             "  GP counters      : 4 x 48 bits\n"
                             "  fixed counters   : 3 x 48 bits (EDX[4:0]=3; effective: 0-2)\n"
                             "  AnyThread        : deprecated\n"
                             "  arch events      : EBX length 7, EBX 0x0\n");
    EXPECT_EQ(l[15], "    UnHalted Core Cycles         available");
    EXPECT_EQ(l[21], "    Branch Mispredicts Retired   available");
    EXPECT_EQ(l[22], "    Topdown Slots                not enumerated");
    // The PMU block ends 2 lines before the end: then the vector extensions user code can use.
    EXPECT_EQ(l[l.size() - 3], "  PERF_CAPABILITIES: 0x33c5 (full-width writes yes)");
    EXPECT_EQ(l[l.size() - 2], "");
    EXPECT_EQ(l.back(), "vector extensions (run --code): sse sse2 sse3 ssse3");
    EXPECT_EQ(l.size(), 31u);
    expect_census_accesses(m);

    RunResult j = run(p, {"--json", "info"});
    EXPECT_EQ(j.status, 0);
    std::vector<Json> recs = parse_json_lines(j.out);
    ASSERT_EQ(recs.size(), 4u);
    const Json& c = recs[2];
    EXPECT_EQ(c["signature"].s(), "0x706a8");
    EXPECT_EQ(c["model"].u(), 0x7Au);
    EXPECT_TRUE(c["pdcm"].b);
    EXPECT_FALSE(c["hybrid"].b);
    const Json& pmu = c["pmu"];
    EXPECT_TRUE(pmu["present"].b);
    EXPECT_EQ(pmu["perfmon_version"].u(), 4u);
    EXPECT_EQ(pmu["gp_counters"].u(), 4u);
    EXPECT_EQ(pmu["gp_width"].u(), 48u);
    EXPECT_EQ(pmu["fixed_counters"].u(), 3u);
    EXPECT_EQ(pmu["fixed_width"].u(), 48u);
    EXPECT_TRUE(pmu["anythread_deprecated"].b);
    EXPECT_EQ(pmu["ebx_vector_length"].u(), 7u);
    EXPECT_EQ(pmu["events_available"].s_list(),
              (std::vector<std::string>{"core_cycles", "instructions_retired", "reference_cycles", "llc_references",
                                        "llc_misses", "branch_instructions_retired", "branch_mispredicts_retired"}));
    EXPECT_EQ(pmu["fixed_counters_effective"].u_list(), (std::vector<u64>{0, 1, 2}));
    EXPECT_FALSE(pmu["leaf_23"].b);
    EXPECT_EQ(pmu["perf_capabilities"].s(), "0x33c5");
    EXPECT_FALSE(pmu.has("amd"));
    expect_census_matches_model(m, recs);
}

TEST(CensusSim, GoldmontPlusFromItsCpuidDump) {
    SimMachine m = dump_machine("GenuineIntel00706A8_GoldmontPlus_CPUID.txt", kGoldmontPlusPerfCaps);
    ASSERT_EQ(m.size(), 4u);
    EXPECT_EQ(m.cpu(1).pmu().gp_mask, 0xFu);
    EXPECT_EQ(m.cpu(1).pmu().fixed_mask, 0x7u);
    EXPECT_TRUE(m.cpu(1).pmu().full_width_writes);
    RunResult r = run(m, {"info"});
    EXPECT_EQ(r.status, 0);
    EXPECT_TRUE(r.has_line("    0      0  yes    0     0    0  -     v4    4x48    3x48")) << r.out;
    EXPECT_TRUE(r.has_line("    3      6         0     3    0  -     v4    4x48    3x48")) << r.out;
    EXPECT_TRUE(r.has_line("  PERF_CAPABILITIES: 0x33c5 (full-width writes yes)")) << r.out;
    std::vector<Json> recs = parse_json_lines(run(m, {"info", "--json"}).out);
    expect_census_matches_model(m, recs);
}

TEST(CensusSim, HybridMachineHasTwoPmuGroups) {
    SimMachine m = intel_hybrid();
    TestPlatform p(m);
    RunResult r = run(p, {"info"});
    EXPECT_EQ(r.status, 0);
    std::vector<std::string> l = r.lines();
    ASSERT_GE(l.size(), 12u);
    EXPECT_EQ(l[1], "CPU: GenuineIntel \"12th Gen Intel(R) Core(TM) i5-12600K\", family 0x6 model 0x97 stepping 0x2 "
                    "(06_97H), signature 0x00090672, hybrid");
    EXPECT_EQ(join(l, 3, 9), "  CPU   APIC  BSP  PKG  CORE  THR  TYPE  PMU   GP      FIXED\n"
                             "    0      0  yes    0     0    0  P     v5    8x48    4x48\n"
                             "    1      1         0     0    1  P     v5    8x48    4x48\n"
                             "    2      2         0     1    0  P     v5    8x48    4x48\n"
                             "    3      3         0     1    1  P     v5    8x48    4x48\n"
                             "    4      8         0     4    0  E     v5    6x48    3x48\n"
                             "    5     10         0     5    0  E     v5    6x48    3x48\n"
                             "    6     12         0     6    0  E     v5    6x48    3x48\n"
                             "    7     14         0     7    0  E     v5    6x48    3x48\n");
    EXPECT_TRUE(r.has_line("PMU of CPU 0-3 (4 CPUs):"));
    EXPECT_TRUE(r.has_line("  core type        : core (0x40), native model id 0x000001"));
    EXPECT_TRUE(r.has_line("  fixed counters   : 4 x 48 bits (EDX[4:0]=4, ECX mask 0xf; effective: 0-3)"));
    EXPECT_TRUE(r.has_line("PMU of CPU 4-7 (4 CPUs):"));
    EXPECT_TRUE(r.has_line("  core type        : atom (0x20), native model id 0x000001"));
    EXPECT_TRUE(r.has_line("  GP counters      : 6 x 48 bits"));
    EXPECT_TRUE(r.has_line("  fixed counters   : 3 x 48 bits (EDX[4:0]=3, ECX mask 0x7; effective: 0-2)"));
    EXPECT_EQ(l[l.size() - 3],
              "note: 2 different PMU configurations across CPUs (hybrid part or asymmetric firmware setup)");
    EXPECT_EQ(l.back(), "vector extensions (run --code): sse sse2 sse3 ssse3");
    expect_census_accesses(m);

    std::vector<Json> recs = parse_json_lines(run(p, {"info", "--json"}).out);
    ASSERT_EQ(recs.size(), 8u);
    EXPECT_TRUE(recs[0]["hybrid"].b);
    EXPECT_EQ(recs[0]["core_type"].s(), "core");
    EXPECT_EQ(recs[0]["core_type_id"].u(), 0x40u);
    EXPECT_EQ(recs[7]["core_type"].s(), "atom");
    EXPECT_EQ(recs[7]["core_type_id"].u(), 0x20u);
    EXPECT_EQ(recs[7]["apic_id"].u(), 14u);
    EXPECT_EQ(recs[0]["pmu"]["gp_counters"].u(), 8u);
    EXPECT_EQ(recs[7]["pmu"]["gp_counters"].u(), 6u);
    EXPECT_EQ(recs[0]["pmu"]["fixed_counter_mask"].s(), "0xf");
    EXPECT_EQ(recs[7]["pmu"]["fixed_counter_mask"].s(), "0x7");
    expect_census_matches_model(m, recs);
}

TEST(CensusSim, Leaf23BitmapsAndNonContiguousFixedCounters) {
    SimMachine v6 = intel_v6();
    RunResult r = run(v6, {"info"});
    EXPECT_EQ(r.status, 0);
    EXPECT_TRUE(r.has_line("    1      1         0     1    0  -     v6    10x48   6x48")) << r.out;
    EXPECT_TRUE(r.has_line("  GP counters      : 8 x 48 bits (leaf 23H bitmap: 0-9)"));
    EXPECT_TRUE(r.has_line("  fixed counters   : 3 x 48 bits (EDX[4:0]=3, ECX mask 0x7; effective: 0-2; "
                           "leaf 23H bitmap: 0-2,4-6)"));
    EXPECT_TRUE(r.has_line("  leaf 23H         : sub-leaves 0x3, UMASK2 yes, EQ yes"));
    expect_census_matches_model(v6, parse_json_lines(run(v6, {"info", "--json"}).out));

    SimMachine v5 = intel_v5(0b1001, 0);
    RunResult r5 = run(v5, {"info"});
    EXPECT_TRUE(r5.has_line("  fixed counters   : 2 x 48 bits (EDX[4:0]=0, ECX mask 0x9; effective: 0,3)")) << r5.out;
    expect_census_matches_model(v5, parse_json_lines(run(v5, {"info", "--json"}).out));
}

TEST(CensusSim, EveryBuilderAgreesWithTheDecoder) {
    std::vector<SimMachine> machines;
    machines.push_back(intel_v1());
    machines.push_back(intel_v2());
    machines.push_back(intel_v2_conroe());
    machines.push_back(intel_v3());
    machines.push_back(amd_zen(2, true));
    machines.push_back(amd_zen(2, false));
    for (SimMachine& m : machines) {
        RunResult j = run(m, {"info", "--json"});
        EXPECT_EQ(j.status, 0);
        expect_census_matches_model(m, parse_json_lines(j.out));
        // The census's own accesses (text mode: no meta record, whose probe of the BSP
        // comes before the census's with --json).
        for (u32 i = 0; i < m.size(); ++i) m.cpu(i).clear_log();
        EXPECT_EQ(run(m, {"info"}).status, 0);
        expect_census_accesses(m);
    }
}

TEST(CensusSim, UnreachableCpuIsReportedWithItsReason) {
    SimMachine m = intel_v3(4);
    m.cpu(2).set_unreachable();
    TestPlatform p(m);
    RunResult r = run(p, {"info"});
    EXPECT_EQ(r.status, 1);
    std::vector<std::string> l = r.lines();
    EXPECT_EQ(l[0], "pmulab census: 4 logical processors (1 not reachable)");
    EXPECT_EQ(join(l, 3, 5),
              "  CPU   APIC  BSP  PKG  CORE  THR  TYPE  PMU   GP      FIXED\n"
              "    0      0  yes    0     0    0  -     v3    4x48    3x48\n"
              "    1      1         0     0    1  -     v3    4x48    3x48\n"
              "    2      2         0     1    0  error: MP Services StartupThisAP(CPU 2) failed: EFI_TIMEOUT\n"
              "    3      3         0     1    1  -     v3    4x48    3x48\n");
    EXPECT_TRUE(r.has_line("PMU of CPU 0-1,3 (3 CPUs):")) << r.out;
    EXPECT_TRUE(r.has_line("PMU of CPU 2 (1 CPU):"));
    EXPECT_TRUE(r.has_line("  not collected: MP Services StartupThisAP(CPU 2) failed: EFI_TIMEOUT"));
    expect_census_accesses(m);

    std::vector<Json> recs = parse_json_lines(run(p, {"info", "--json"}).out);
    ASSERT_EQ(recs.size(), 4u);
    const Json& c = recs[2];
    EXPECT_EQ(c.keys(), (std::vector<std::string>{"type", "index", "apic_id", "bsp", "package", "core", "thread",
                                                  "collected", "error"}));
    EXPECT_FALSE(c["collected"].b);
    EXPECT_EQ(c["error"].s(), "MP Services StartupThisAP(CPU 2) failed: EFI_TIMEOUT");
    EXPECT_EQ(c["apic_id"].u(), 2u);
    EXPECT_EQ(c["core"].u(), 1u);
    EXPECT_TRUE(recs[3]["collected"].b);
}

TEST(CensusSim, DisabledAndUnreachableCpusKeepTheirOwnReasons) {
    SimMachine m = intel_v3(4);
    m.cpu(2).set_unreachable("EFI_NOT_READY");
    m.cpu(3).set_enabled(false);
    RunResult r = run(m, {"info"});
    EXPECT_EQ(r.status, 1);
    EXPECT_EQ(r.lines()[0], "pmulab census: 4 logical processors (2 not reachable)");
    EXPECT_TRUE(r.has_line("    2      2         0     1    0  error: MP Services StartupThisAP(CPU 2) failed: "
                           "EFI_NOT_READY"));
    EXPECT_TRUE(r.has_line("    3      3         0     1    1  error: processor is disabled by the firmware"));
    // Each failure keeps its own block: one CPU's reason never stands for another's.
    EXPECT_TRUE(r.has_line("PMU of CPU 2 (1 CPU):")) << r.out;
    EXPECT_TRUE(r.has_line("  not collected: MP Services StartupThisAP(CPU 2) failed: EFI_NOT_READY"));
    EXPECT_TRUE(r.has_line("PMU of CPU 3 (1 CPU):"));
    EXPECT_TRUE(r.has_line("  not collected: processor is disabled by the firmware"));
    // census_collect does not even try a disabled CPU.
    EXPECT_EQ(m.run_on_cpu_calls(), 3u);
}

TEST(CensusSim, PerfCapabilitiesFaultIsReported) {
    SimMachine m = intel_v4_goldmont_plus(2);
    m.cpu(1).fail_rdmsr_to(reg::PERF_CAPABILITIES);
    TestPlatform p(m);
    RunResult r = run(p, {"info"});
    EXPECT_EQ(r.status, 0);
    EXPECT_TRUE(r.has_line("  PERF_CAPABILITIES: 0x33c5 (full-width writes yes)"));
    EXPECT_TRUE(r.has_line("  PERF_CAPABILITIES: PDCM set but RDMSR 0x345 faulted")) << r.out;
    std::vector<Json> recs = parse_json_lines(run(p, {"info", "--json"}).out);
    ASSERT_EQ(recs.size(), 2u);
    EXPECT_TRUE(recs[1]["pmu"]["perf_capabilities"].is_null());
    EXPECT_TRUE(recs[1]["pmu"]["perf_capabilities_fault"].b);
    EXPECT_EQ(recs[0]["pmu"]["perf_capabilities"].s(), "0x33c5");
}

// ---------------------------------------------------------------- msr

TEST(MsrSim, ReadOnBspOneCpuAllCpus) {
    SimMachine m = intel_v4_goldmont_plus(4);
    m.cpu(2).poke(reg::GLOBAL_CTRL, 0x3);
    TestPlatform p(m);
    RunResult r = run(p, {"msr", "read", "0x38f"});
    EXPECT_EQ(r.status, 0);
    EXPECT_EQ(r.out, "CPU 0 (APIC 0): MSR 0x38f = 0x000000000000000f\n");
    r = run(p, {"msr", "read", "0x38f", "--cpu", "2"});
    EXPECT_EQ(r.status, 0);
    EXPECT_EQ(r.out, "CPU 2 (APIC 2): MSR 0x38f = 0x0000000000000003\n");
    r = run(p, {"msr", "read", "911", "--cpu=all"});
    EXPECT_EQ(r.status, 0);
    EXPECT_EQ(r.out, "CPU 0 (APIC 0): MSR 0x38f = 0x000000000000000f\n"
                     "CPU 1 (APIC 1): MSR 0x38f = 0x000000000000000f\n"
                     "CPU 2 (APIC 2): MSR 0x38f = 0x0000000000000003\n"
                     "CPU 3 (APIC 3): MSR 0x38f = 0x000000000000000f\n");
    for (u32 i = 0; i < 4; ++i) {
        ASSERT_EQ(m.cpu(i).log().size(), i == 0 || i == 2 ? 2u : 1u);
        EXPECT_EQ(m.cpu(i).log().back().kind, Access::rdmsr);
    }
    r = run(p, {"--json", "msr", "read", "0x38f", "--cpu", "all"});
    std::vector<Json> recs = parse_json_lines(r.out);
    ASSERT_EQ(recs.size(), 4u);
    EXPECT_EQ(recs[2].keys(), (std::vector<std::string>{"type", "op", "cpu", "apic_id", "msr", "value"}));
    EXPECT_EQ(recs[2]["type"].s(), "msr");
    EXPECT_EQ(recs[2]["op"].s(), "read");
    EXPECT_EQ(recs[2]["cpu"].u(), 2u);
    EXPECT_EQ(recs[2]["msr"].s(), "0x38f");
    EXPECT_EQ(recs[2]["value"].s(), "0x3");
}

TEST(MsrSim, BspSelectionFollowsTheFirmwareFlag) {
    SimMachine m = intel_v3(4);
    m.set_bsp(2);
    m.cpu(2).poke(0x186, 0x4200c0);
    RunResult r = run(m, {"msr", "read", "0x186", "--cpu", "bsp"});
    EXPECT_EQ(r.status, 0);
    EXPECT_EQ(r.out, "CPU 2 (APIC 2): MSR 0x186 = 0x00000000004200c0\n");
}

TEST(MsrSim, WriteAllCpusReachesEveryCpu) {
    SimMachine m = intel_v3(4);
    RunResult r = run(m, {"msr", "write", "0x186", "0x4200c0", "--cpu", "all"});
    EXPECT_EQ(r.status, 0);
    EXPECT_EQ(r.lines().size(), 4u);
    EXPECT_EQ(r.lines()[3], "CPU 3 (APIC 3): MSR 0x186 <- 0x00000000004200c0");
    for (u32 i = 0; i < 4; ++i) {
        EXPECT_EQ(m.cpu(i).peek(0x186), 0x4200c0u);
        ASSERT_EQ(m.cpu(i).writes().size(), 1u);
    }
    m.cpu(1).instructions(5);
    EXPECT_EQ(m.cpu(1).peek(0xC1), 5u);
}

TEST(MsrSim, NonPmuWriteNeedsUnsafe) {
    SimMachine m = qemu_tcg(4);
    TestPlatform p(m);
    RunResult r = run(p, {"msr", "write", "0x6e1", "0x100000000"});
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(r.out, "pmulab: error: msr write: 0x6e1 is not a PMU MSR; writing it could harm the machine. "
                     "Add --unsafe if you mean it\n");
    EXPECT_TRUE(m.log_all().empty());  // refused before touching any CPU
}

TEST(MsrSim, FaultingWriteNamesTheMsrAndTheFault) {
    SimMachine m = qemu_tcg(4);
    TestPlatform p(m);
    RunResult r = run(p, {"msr", "write", "0x6e1", "0x100000000", "--unsafe"});
    EXPECT_EQ(r.status, 1);
    EXPECT_EQ(r.out, "pmulab: error: CPU 0: WRMSR 0x6e1 <- 0x100000000 raised #GP (general protection): "
                     "the CPU rejects this MSR or value\n");
    ASSERT_EQ(m.cpu(0).log().size(), 1u);
    EXPECT_EQ(m.cpu(0).log()[0].vector, pmulab::kVectorGP);
    EXPECT_EQ(m.cpu(0).peek(reg::PKRS), 0u);
    r = run(p, {"msr", "write", "0x6e1", "0x100000000", "--unsafe", "--json"});
    EXPECT_EQ(r.status, 1);
    std::vector<Json> recs = parse_json_lines(r.out);
    ASSERT_EQ(recs.size(), 1u);
    EXPECT_EQ(recs[0]["type"].s(), "error");
    EXPECT_EQ(recs[0]["code"].s(), "fault");
    EXPECT_EQ(recs[0]["vector"].u(), 13u);
    EXPECT_EQ(recs[0]["message"].s(), "CPU 0: WRMSR 0x6e1 <- 0x100000000 raised #GP (general protection): "
                                      "the CPU rejects this MSR or value");
    // The same value with EDX = 0 is fine.
    r = run(p, {"msr", "write", "0x6e1", "0x5", "--unsafe", "--cpu", "3"});
    EXPECT_EQ(r.status, 0);
    EXPECT_EQ(r.out, "CPU 3 (APIC 3): MSR 0x6e1 <- 0x0000000000000005\n");
    EXPECT_EQ(m.cpu(3).peek(reg::PKRS), 5u);
}

TEST(MsrSim, ReadOfAnAbsentMsrFaults) {
    SimMachine m = intel_v4_goldmont_plus(2);
    RunResult r = run(m, {"msr", "read", "0xc5"});
    EXPECT_EQ(r.status, 1);
    EXPECT_EQ(r.out, "pmulab: error: CPU 0: RDMSR 0xc5 raised #GP (general protection): the CPU does not "
                     "implement this MSR\n");
}

TEST(MsrSim, BadCpuIndexIsAUsageError) {
    SimMachine m = intel_v4_goldmont_plus(4);
    RunResult r = run(m, {"msr", "read", "0x38f", "--cpu", "9"});
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(r.out, "pmulab: error: --cpu 9: there are only 4 logical processors (0..3)\n");
    r = run(m, {"msr", "read", "0x38f", "--cpu", "4"});
    EXPECT_EQ(r.status, 2);
    r = run(m, {"msr", "read", "0x38f", "--cpu", "seven"});
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(r.out,
              "pmulab: error: --cpu: 'seven' is not a CPU index, list or range (0,2 or 1-3), 'all', 'bsp', 'core' "
              "or 'atom'\n");
    EXPECT_TRUE(m.log_all().empty());
}

TEST(MsrSim, UnreachableCpuFailsTheCommandButNotTheOthers) {
    SimMachine m = intel_v4_goldmont_plus(4);
    m.cpu(3).set_unreachable();
    RunResult r = run(m, {"msr", "read", "0x38f", "--cpu", "all"});
    EXPECT_EQ(r.status, 1);
    EXPECT_EQ(r.lines().size(), 4u);
    EXPECT_EQ(r.lines()[2], "CPU 2 (APIC 2): MSR 0x38f = 0x000000000000000f");
    EXPECT_EQ(r.lines()[3], "pmulab: error: CPU 3: MP Services StartupThisAP(CPU 3) failed: EFI_TIMEOUT");
    EXPECT_TRUE(m.cpu(3).log().empty());
}
