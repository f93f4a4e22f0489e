// `pmulab events` and `pmulab events --check` on simulated machines: exact text,
// JSON records, exit statuses, and that the command only reads the hardware.
#include <gtest/gtest.h>

#include "events/event_syntax.h"
#include "support/test_platform.h"

using namespace pmutest;
using namespace sim;

namespace {

std::vector<Json> of_type(const std::vector<Json>& recs, const std::string& type) {
    std::vector<Json> out;
    for (const Json& r : recs)
        if (r["type"].s() == type) out.push_back(r);
    return out;
}

const Json* find_event(const std::vector<Json>& evs, pmulab::u64 cpu, const std::string& name) {
    for (const Json& e : evs)
        if (e["cpu"].u() == cpu && e["name"].s() == name) return &e;
    return nullptr;
}

void expect_no_writes(const SimMachine& m) {
    for (pmulab::u32 i = 0; i < m.size(); ++i) EXPECT_TRUE(m.cpu(i).writes().empty()) << "CPU " << i;
}

const char kSyntax[] =
    "Event syntax (run --events, events --check; events separated by ',' or ';'):\n"
    "  NAME[:u|:k]            a named event above, by its Intel, perf or pmulab name: instructions,\n"
    "                         cycles:u, INST_RETIRED.ANY, branch-misses (u: CPL > 0 only, k: CPL 0 only)\n"
    "  EE.UU[.MOD...] [NAME]  nanoBench: event select and unit mask in hex, e.g. 0E.01, D1.01.CMSK=1.INV,\n"
    "                         C0.00.CTR=2; MOD: CMSK=n INV EDG AnyT CTR=n TakenAlone USR OS EQ UMASK2=n\n"
    "                         MSR_RSP0=v MSR_RSP1=v MSR_3F6H=v MSR_PF=v\n"
    "  event=0x3c,umask=0x01  perf terms: umask= cmask= umask2= name= and the flags inv edge any eq usr os\n"
    "  rHHHH[:u|:k]           perf raw config (IA32_PERFEVTSELx bits), e.g. r01c2\n"
    "  cpu/TERMS/ cpu_core/TERMS/ cpu_atom/TERMS/   perf PMU prefix (hybrid: P or E cores only)\n"
    "  tsc                    the time-stamp counter (RDTSC; needs no PMU counter)\n"
    "Events count in both USR and OS mode unless a modifier says otherwise (pmulab runs at ring 0).\n";

}  // namespace

TEST(EventsCmd, QemuTcgOnlyTsc) {
    SimMachine m = qemu_tcg(4);
    TestPlatform p(m);
    RunResult r = run(p, {"events", "--cpu", "all"});
    EXPECT_EQ(r.status, 0);
    EXPECT_EQ(r.out,
              std::string("CPUs 0-3: no PMU counters: no performance-monitoring counters: no AMD core counters "
                          "enumerated (CPUID 8000_0001H:ECX[23] = 0, no PerfMonV2) and CPUID.0AH:EAX[7:0] = 0 (a "
                          "hypervisor without PMU passthrough)\n"
                          "  counter reads: RDMSR (RDPMC 0x0 raised #UD (invalid opcode))\n"
                          "  Only 'tsc' (the time-stamp counter, read with RDTSC) can be measured here.\n"
                          "\n") +
                  pmulab::event_syntax_help(pmulab::EventDialect::amd));  // QEMU's default CPU is an AMD: its dialect
    expect_no_writes(m);

    RunResult j = run(p, {"events", "--cpu", "all", "--json"});
    EXPECT_EQ(j.status, 0);
    std::vector<Json> recs = parse_json_lines(j.out);
    std::vector<Json> pmus = of_type(recs, "pmu"), evs = of_type(recs, "event");
    ASSERT_EQ(pmus.size(), 4u);
    ASSERT_EQ(evs.size(), 4u * 18);
    for (pmulab::u64 cpu = 0; cpu < 4; ++cpu) {
        EXPECT_EQ(pmus[cpu]["cpu"].u(), cpu);
        EXPECT_EQ(pmus[cpu]["pmu"].s(), "none");
        EXPECT_EQ(pmus[cpu]["counter_method"].s(), "rdmsr");
        EXPECT_EQ(pmus[cpu]["counter_method_note"].s(), "RDPMC 0x0 raised #UD (invalid opcode)");
        const Json* tsc = find_event(evs, cpu, "tsc");
        ASSERT_NE(tsc, nullptr);
        EXPECT_TRUE((*tsc)["available"].b);
        EXPECT_EQ((*tsc)["counter"].s(), "TSC");
        EXPECT_EQ((*tsc)["counter_method"].s(), "rdmsr");
        const Json* ins = find_event(evs, cpu, "INST_RETIRED.ANY");
        ASSERT_NE(ins, nullptr);
        EXPECT_FALSE((*ins)["available"].b);
        EXPECT_TRUE((*ins)["counter"].is_null());
        EXPECT_EQ((*ins)["code"].s(), "C0.00");
        EXPECT_EQ((*ins)["fixed_counter"].u(), 0u);
        EXPECT_EQ((*ins)["reason"].s(), pmus[cpu]["reason"].s());
    }
    size_t available = 0;
    for (const Json& e : evs) available += e["available"].b;
    EXPECT_EQ(available, 4u);  // tsc on each CPU, nothing else
}

TEST(EventsCmd, IntelModelWithoutPmu) {
    SimMachine m = qemu_tcg_intel(2);
    TestPlatform p(m);
    RunResult r = run(p, {"events"});
    EXPECT_EQ(r.status, 0);
    EXPECT_EQ(r.lines()[0],
              "CPU 0: no PMU counters: no architectural performance monitoring: CPUID.0AH:EAX[7:0] = 0 (a hypervisor "
              "without PMU passthrough)");
    EXPECT_EQ(r.lines()[2], "  Only 'tsc' (the time-stamp counter, read with RDTSC) can be measured here.");
}

TEST(EventsCmd, GoldmontPlusTable) {
    SimMachine m = intel_v4_goldmont_plus(4);
    TestPlatform p(m);
    RunResult r = run(p, {"events", "--cpu", "2"});
    EXPECT_EQ(r.status, 0);
    EXPECT_EQ(
        r.out,
        std::string(
            "CPU 2: Intel architectural PMU version 4: PMC0-3 (48 bits), FIXED_CTR0-2 (48 bits), full-width writes, "
            "reads with RDPMC\n"
            "  counter reads: RDPMC\n"
            "\n"
            "  EVENT                         ALIAS                   CODE   COUNTER        AVAILABLE\n"
            "  INST_RETIRED.ANY              instructions            C0.00  FIXED_CTR0     yes\n"
            "  CPU_CLK_UNHALTED.THREAD       cycles                  3C.00  FIXED_CTR1     yes\n"
            "  CPU_CLK_UNHALTED.REF_TSC      ref-cycles              3C.01  FIXED_CTR2     yes\n"
            "  TOPDOWN.SLOTS                 slots                   A4.01  -              no: event 'TOPDOWN.SLOTS' "
            "cannot be counted: fixed counter 3 is absent (this CPU has FIXED_CTR0-2) and its GP equivalent A4.01 is "
            "unavailable: CPUID.0AH:EAX[31:24] = 7 enumerates architectural events 0-6 only (this is event 7)\n"
            "  CPU_CLK_UNHALTED.THREAD_P     core_cycles             3C.00  PMC0-3         yes\n"
            "  INST_RETIRED.ANY_P            instructions_retired    C0.00  PMC0-3         yes\n"
            "  CPU_CLK_UNHALTED.REF_XCLK     reference_cycles        3C.01  PMC0-3         yes\n"
            "  LONGEST_LAT_CACHE.REFERENCE   cache-references        2E.4F  PMC0-3         yes\n"
            "  LONGEST_LAT_CACHE.MISS        cache-misses            2E.41  PMC0-3         yes\n"
            "  BR_INST_RETIRED.ALL_BRANCHES  branches                C4.00  PMC0-3         yes\n"
            "  BR_MISP_RETIRED.ALL_BRANCHES  branch-misses           C5.00  PMC0-3         yes\n"
            "  TOPDOWN.SLOTS_P               topdown_slots           A4.01  -              no: event "
            "'TOPDOWN.SLOTS_P' (Topdown Slots, A4.01) is not available on this CPU: CPUID.0AH:EAX[31:24] = 7 "
            "enumerates architectural events 0-6 only (this is event 7)\n"
            "  TOPDOWN.BACKEND_BOUND_SLOTS   topdown_backend_bound   A4.02  -              no: event "
            "'TOPDOWN.BACKEND_BOUND_SLOTS' (Topdown Backend Bound, A4.02) is not available on this CPU: "
            "CPUID.0AH:EAX[31:24] = 7 enumerates architectural events 0-6 only (this is event 8)\n"
            "  topdown_bad_speculation                               73.00  -              no: event "
            "'topdown_bad_speculation' (Topdown Bad Speculation, 73.00) is not available on this CPU: "
            "CPUID.0AH:EAX[31:24] = 7 enumerates architectural events 0-6 only (this is event 9)\n"
            "  topdown_frontend_bound                                9C.01  -              no: event "
            "'topdown_frontend_bound' (Topdown Frontend Bound, 9C.01) is not available on this CPU: "
            "CPUID.0AH:EAX[31:24] = 7 enumerates architectural events 0-6 only (this is event 10)\n"
            "  topdown_retiring                                      C2.02  -              no: event "
            "'topdown_retiring' (Topdown Retiring, C2.02) is not available on this CPU: CPUID.0AH:EAX[31:24] = 7 "
            "enumerates architectural events 0-6 only (this is event 11)\n"
            "  LBR_INSERTS.ANY               lbr_inserts             E4.01  -              no: event "
            "'LBR_INSERTS.ANY' (LBR Inserts, E4.01) is not available on this CPU: CPUID.0AH:EAX[31:24] = 7 "
            "enumerates architectural events 0-6 only (this is event 12)\n"
            "  tsc                                                   -      TSC            yes\n"
            "\n") +
            kSyntax);
    expect_no_writes(m);
    // Only CPU 2 was asked.
    EXPECT_EQ(m.run_on_cpu_calls(), 1u);
}

TEST(EventsCmd, UnavailableArchitecturalEventFromEbx) {
    // CPUID.0AH:EBX bit 5 set: branch instructions retired reported unavailable.
    IntelCpuidSpec sp;
    sp.max_leaf = 0xD;
    sp.leaf_0a = {0x07300403, 0x20, 0, 0x00000603};
    SimMachine m = intel_machine(sp, {1, 1, 1});
    TestPlatform p(m);
    RunResult j = run(p, {"events", "--json"});
    EXPECT_EQ(j.status, 0);
    std::vector<Json> evs = of_type(parse_json_lines(j.out), "event");
    const Json* br = find_event(evs, 0, "BR_INST_RETIRED.ALL_BRANCHES");
    ASSERT_NE(br, nullptr);
    EXPECT_FALSE((*br)["available"].b);
    EXPECT_EQ((*br)["arch_bit"].u(), 5u);
    EXPECT_EQ((*br)["reason"].s(),
              "event 'BR_INST_RETIRED.ALL_BRANCHES' (Branch Instructions Retired, C4.00) is not available on this "
              "CPU: CPUID.0AH:EBX[5] = 1");
    const Json* ins = find_event(evs, 0, "INST_RETIRED.ANY");
    ASSERT_NE(ins, nullptr);
    EXPECT_TRUE((*ins)["available"].b);
    EXPECT_EQ((*ins)["route"].s(), "fixed");
    EXPECT_EQ((*ins)["counter"].s(), "FIXED_CTR0");
    EXPECT_EQ((*ins)["counter_method"].s(), "rdpmc");
}

TEST(EventsCmd, V1FallbacksAndRdmsrMethod) {
    SimMachine m = intel_v1(2);
    m.cpu(1).set_rdpmc_ud(true);
    TestPlatform p(m);
    RunResult r = run(p, {"events", "--cpu", "all", "--json"});
    EXPECT_EQ(r.status, 0);
    std::vector<Json> recs = parse_json_lines(r.out);
    std::vector<Json> pmus = of_type(recs, "pmu"), evs = of_type(recs, "event");
    ASSERT_EQ(pmus.size(), 2u);
    EXPECT_EQ(pmus[0]["counter_method"].s(), "rdpmc");
    EXPECT_EQ(pmus[1]["counter_method"].s(), "rdmsr");
    EXPECT_EQ(pmus[0]["version"].u(), 1u);
    EXPECT_EQ(pmus[0]["gp_counters"].u_list(), (std::vector<pmulab::u64>{0, 1}));
    EXPECT_TRUE(pmus[0]["fixed_counters"].u_list().empty());
    EXPECT_FALSE(pmus[0]["global_ctrl"].b);
    const Json* ref = find_event(evs, 1, "CPU_CLK_UNHALTED.REF_TSC");
    ASSERT_NE(ref, nullptr);
    EXPECT_TRUE((*ref)["available"].b);
    EXPECT_EQ((*ref)["route"].s(), "gp_fallback");
    EXPECT_EQ((*ref)["counter"].s(), "PMC0,1");
    EXPECT_EQ((*ref)["reason"].s(),
              "fixed counter 2 is absent: counted on a general-purpose counter with 3C.01 (at the reference clock, not "
              "at the TSC rate)");
    EXPECT_EQ((*ref)["counter_method"].s(), "rdmsr");
    // Text: two tables (the read method differs).
    RunResult t = run(p, {"events", "--cpu", "all"});
    EXPECT_TRUE(t.has_line("CPU 0: Intel architectural PMU version 1: PMC0,1 (40 bits), no fixed counters, 32-bit "
                           "counter writes, reads with RDPMC"))
        << t.out;
    EXPECT_TRUE(t.has_line("CPU 1: Intel architectural PMU version 1: PMC0,1 (40 bits), no fixed counters, 32-bit "
                           "counter writes, reads with RDMSR"))
        << t.out;
    EXPECT_TRUE(t.has_line("  counter reads: RDMSR (RDPMC 0x0 raised #UD (invalid opcode))")) << t.out;
}

TEST(EventsCmd, CheckPlacesEventsPerCoreType) {
    SimMachine m = intel_hybrid();
    TestPlatform p(m);
    RunResult r = run(p, {"events", "--cpu", "all", "--check",
                          "instructions,cycles,C4.00,C5.00,2E.4F,2E.41,D0.81,D0.82,D1.01,tsc"});
    EXPECT_EQ(r.status, 0);
    EXPECT_EQ(r.out,
              "CPUs 0-3: 10 events in 1 run (Intel architectural PMU version 5: PMC0-7 (48 bits), FIXED_CTR0-3 (48 "
              "bits), P (cpu_core) core, full-width writes, reads with RDPMC)\n"
              "  group 1/1: FIXED_CTR0 instructions\n"
              "  group 1/1: FIXED_CTR1 cycles\n"
              "  group 1/1: PMC0       C4.00 (C4.00)\n"
              "  group 1/1: PMC1       C5.00 (C5.00)\n"
              "  group 1/1: PMC2       2E.4F (2E.4F)\n"
              "  group 1/1: PMC3       2E.41 (2E.41)\n"
              "  group 1/1: PMC4       D0.81 (D0.81)\n"
              "  group 1/1: PMC5       D0.82 (D0.82)\n"
              "  group 1/1: PMC6       D1.01 (D1.01)\n"
              "  group 1/1: TSC        tsc\n"
              "CPUs 4-7: 10 events in 2 runs (Intel architectural PMU version 5: PMC0-5 (48 bits), FIXED_CTR0-2 (48 "
              "bits), E (cpu_atom) core, full-width writes, reads with RDPMC)\n"
              "  group 1/2: FIXED_CTR0 instructions\n"
              "  group 1/2: FIXED_CTR1 cycles\n"
              "  group 1/2: PMC0       C4.00 (C4.00)\n"
              "  group 1/2: PMC1       C5.00 (C5.00)\n"
              "  group 1/2: PMC2       2E.4F (2E.4F)\n"
              "  group 1/2: PMC3       2E.41 (2E.41)\n"
              "  group 1/2: PMC4       D0.81 (D0.81)\n"
              "  group 1/2: PMC5       D0.82 (D0.82)\n"
              "  group 1/2: TSC        tsc\n"
              "  group 2/2: PMC0       D1.01 (D1.01)\n");
    expect_no_writes(m);

    RunResult j = run(p, {"events", "--cpu", "all", "--json", "--check",
                          "instructions,D1.01,D1.02,D1.04,D1.08,D1.10,"
                          "D1.20,D1.40"});
    EXPECT_EQ(j.status, 0);
    std::vector<Json> al = of_type(parse_json_lines(j.out), "allocation");
    ASSERT_EQ(al.size(), 8u);
    for (pmulab::u64 cpu = 0; cpu < 8; ++cpu) {
        EXPECT_EQ(al[cpu]["cpu"].u(), cpu);
        EXPECT_EQ(al[cpu]["groups"].u(), cpu < 4 ? 1u : 2u);
        const Json& a = al[cpu]["allocation"];
        ASSERT_EQ(a.items.size(), 8u);
        EXPECT_EQ(a[0]["event"].s(), "instructions");
        EXPECT_EQ(a[0]["counter"].s(), "FIXED_CTR0");
        EXPECT_EQ(a[7]["event"].s(), "D1.40");
        EXPECT_EQ(a[7]["group"].u(), cpu < 4 ? 0u : 1u);
        EXPECT_EQ(a[7]["counter"].s(), cpu < 4 ? "PMC6" : "PMC0");
    }
}

TEST(EventsCmd, CheckErrors) {
    SimMachine m = intel_v3(2);
    TestPlatform p(m);
    // A malformed spec: exit 2, the parser's message with the offset; no CPU is touched.
    RunResult r = run(p, {"events", "--check", "cycles,0E.1G"});
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(r.out, "pmulab: error: event list item 2: event spec '0E.1G': UMASK '1G' is not hex (at offset "
                     "3)\n");
    EXPECT_EQ(m.run_on_cpu_calls(), 0u);
    RunResult j = run(p, {"events", "--check", "cycles,0E.1G", "--json"});
    EXPECT_EQ(j.status, 2);
    std::vector<Json> recs = parse_json_lines(j.out);
    ASSERT_EQ(recs.size(), 1u);
    EXPECT_EQ(recs[0]["type"].s(), "error");
    EXPECT_EQ(recs[0]["code"].s(), "invalid argument");

    // An event this CPU cannot count: exit 3.
    r = run(p, {"events", "--check", "C0.00.CTR=5"});
    EXPECT_EQ(r.status, 3);
    EXPECT_EQ(r.out, "pmulab: error: CPU 0: event 'C0.00.CTR=5' is pinned to PMC5 (.CTR=5), but this CPU has PMC0-3\n");

    // Usage errors.
    EXPECT_EQ(run(p, {"events", "--check"}).status, 2);
    r = run(p, {"events", "--frob"});
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(r.out, "pmulab: error: events: unknown option '--frob' (see 'pmulab help events')\n");
    r = run(p, {"events", "--cpu", "9"});
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(r.out, "pmulab: error: --cpu 9: there are only 2 logical processors (0..1)\n");
    expect_no_writes(m);
}

TEST(EventsCmd, NoPmuCheckAllowsTscOnly) {
    SimMachine m = qemu_tcg(2);
    TestPlatform p(m);
    RunResult r = run(p, {"events", "--check", "tsc"});
    EXPECT_EQ(r.status, 0);
    EXPECT_EQ(r.out,
              "CPU 0: 1 event in 1 run (no PMU counters: no performance-monitoring counters: no AMD core counters "
              "enumerated (CPUID 8000_0001H:ECX[23] = 0, no PerfMonV2) and CPUID.0AH:EAX[7:0] = 0 (a hypervisor "
              "without PMU passthrough))\n"
              "  group 1/1: TSC        tsc\n");
    r = run(p, {"events", "--check", "instructions"});
    EXPECT_EQ(r.status, 3);
    EXPECT_EQ(r.out, "pmulab: error: CPU 0: event 'instructions' cannot be counted: no AMD core counters enumerated "
                     "(CPUID 8000_0001H:ECX[23] = 0, no PerfMonV2; a hypervisor without PMU passthrough)\n");
    // An Intel CPU without a PMU says it in Intel terms.
    SimMachine mi = qemu_tcg_intel(1);
    TestPlatform pi(mi);
    r = run(pi, {"events", "--check", "instructions"});
    EXPECT_EQ(r.status, 3);
    EXPECT_EQ(r.out,
              "pmulab: error: CPU 0: event 'instructions' cannot be counted: no architectural performance monitoring "
              "(CPUID.0AH:EAX[7:0] = 0)\n");
    // AMD 12-bit selects pass the syntax check and reach the CPU's own dialect.
    r = run(p, {"events", "--check", "0C1.00"});
    EXPECT_EQ(r.status, 3) << r.out;
}

TEST(EventsCmd, HelpIsListed) {
    SimMachine m = qemu_tcg(1);
    TestPlatform p(m);
    RunResult r = run(p, {"help"});
    EXPECT_TRUE(r.has_line("  events               the events each CPU can count [--cpu N|all|bsp]; --check SPEC,..."))
        << r.out;
    r = run(p, {"help", "events"});
    EXPECT_EQ(r.status, 0);
    EXPECT_EQ(r.lines()[0], "usage: pmulab events [--cpu N|all|bsp]");
}
