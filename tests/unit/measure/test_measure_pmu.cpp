// The measurement engine with PMU events, end to end on the simulated machine:
// `pmulab run --events ...` plans groups per PMU, programs them on the measuring CPU
// (setup hook), starts/stops counting with WRMSRs inside the generated region, reads
// the counters with the probed method, restores the PMU after each group. The regions
// are "executed" by SimMeasure (sim_measure.h), which performs their RDPMC/RDMSR/
// WRMSR/RDTSC on the simulated CPU and retires the kernel's instructions.
#include <gtest/gtest.h>

#include "measure/pmu_plan.h"
#include "support/sim_cmd.h"
#include "support/sim_measure.h"
#include "support/test_platform.h"

using namespace pmulab;
using namespace sim;
using simm::SimPlatform;

using simm::Cmd;
using simm::results;
using simm::run_line;

namespace {

struct Snap {
    std::vector<PmuState> st;
};
Snap snap(const SimMachine& m) {
    Snap s;
    for (u32 i = 0; i < m.size(); ++i) s.st.push_back(m.cpu(i).pmu_state());
    return s;
}
void expect_restored(const SimMachine& m, const Snap& before) {
    for (u32 i = 0; i < m.size(); ++i) {
        EXPECT_EQ(diff_state(before.st[i], m.cpu(i).pmu_state()), "") << "CPU " << i;
        EXPECT_TRUE(m.cpu(i).violations().empty()) << "CPU " << i << ": " << m.cpu(i).violations()[0];
    }
}

const char kFast[] = " --reps 3 --warmup 1 --unroll 10";

}  // namespace

TEST(RunPmu, FixedAndGpCountersOnV4) {
    SimMachine m = intel_v4_goldmont_plus(2);
    Snap before = snap(m);
    SimPlatform p(m);
    Cmd c = run_line(p, std::string("run --json --bench add_indep --events "
                                    "instructions,cycles,INST_RETIRED.ANY_P,ref-cycles,tsc") +
                            kFast);
    ASSERT_EQ(c.status, 0) << c.out;
    std::vector<pmutest::Json> r = results(c);
    ASSERT_EQ(r.size(), 5u);
    const char* names[] = {"instructions", "cycles", "INST_RETIRED.ANY_P", "ref-cycles", "tsc"};
    const char* counters[] = {"FIXED_CTR0", "FIXED_CTR1", "PMC0", "FIXED_CTR2", "TSC"};
    for (size_t i = 0; i < 5; ++i) {
        EXPECT_EQ(r[i]["event"].s(), names[i]);
        EXPECT_EQ(r[i]["counter"].s(), counters[i]);
        EXPECT_EQ(r[i]["run"].u(), 0u);
        EXPECT_EQ(r[i]["runs"].u(), 1u);
        EXPECT_EQ(r[i]["per_iteration"].text, "8.00") << names[i];  // add_indep: 8 instructions
        EXPECT_EQ(r[i]["min"].text, "8.00") << names[i];
        EXPECT_EQ(r[i]["max"].text, "8.00") << names[i];
        if (i < 4) EXPECT_EQ(r[i]["counter_method"].s(), "rdpmc");
        else EXPECT_FALSE(r[i].has("counter_method"));
    }
    expect_restored(m, before);
    // The generated code started and stopped counting with GLOBAL_CTRL (v4).
    bool enable = false;
    for (const LogEntry& e : m.cpu(0).writes()) enable |= e.addr == 0x38F && e.value == 0x700000001ull;
    EXPECT_TRUE(enable);
    EXPECT_TRUE(m.cpu(1).writes().empty()) << "only the BSP measures by default";
}

TEST(RunPmu, TextModeShowsThePlan) {
    SimMachine m = intel_v4_goldmont_plus(1);
    SimPlatform p(m);
    Cmd c = run_line(p, std::string("run --bench nop --events instructions,branches") + kFast);
    ASSERT_EQ(c.status, 0) << c.out;
    std::vector<std::string> lines;
    for (size_t pos = 0; pos < c.out.size();) {
        size_t nl = c.out.find('\n', pos);
        lines.push_back(c.out.substr(pos, nl - pos));
        pos = nl + 1;
    }
    ASSERT_GE(lines.size(), 7u);
    EXPECT_EQ(lines[0],
              "pmulab run: CPU 0: 2 events in 1 run per benchmark on Intel architectural PMU version 4: PMC0-3 (48 "
              "bits), FIXED_CTR0-2 (48 bits), full-width writes, reads with RDPMC");
    EXPECT_EQ(lines[1], "  group 1/1: FIXED_CTR0 instructions");
    EXPECT_EQ(lines[2], "  group 1/1: PMC0       branches (C4.00)");
    EXPECT_EQ(lines[3].substr(0, 34), "pmulab run: 10 and 20 copies (U/2U");
}

TEST(RunPmu, MultiplexedGroupsAreSuccessiveRuns) {
    SimMachine m = intel_v3(2);
    Snap before = snap(m);
    SimPlatform p(m);
    Cmd c = run_line(p, std::string("run --json --bench nop --events "
                                    "\"INST_RETIRED.ANY_P,core_cycles,reference_cycles,C0.00 I2,3C.00 C2,C0.00 I3\"") +
                            kFast);
    ASSERT_EQ(c.status, 0) << c.out;
    std::vector<pmutest::Json> r = results(c);
    ASSERT_EQ(r.size(), 6u);
    const char* names[] = {"INST_RETIRED.ANY_P", "core_cycles", "reference_cycles", "I2", "C2", "I3"};
    const char* counters[] = {"PMC0", "PMC1", "PMC2", "PMC3", "PMC0", "PMC1"};
    const u64 runs[] = {0, 0, 0, 0, 1, 1};
    for (size_t i = 0; i < 6; ++i) {
        EXPECT_EQ(r[i]["event"].s(), names[i]);
        EXPECT_EQ(r[i]["counter"].s(), counters[i]);
        EXPECT_EQ(r[i]["run"].u(), runs[i]);
        EXPECT_EQ(r[i]["runs"].u(), 2u);
        EXPECT_EQ(r[i]["per_iteration"].text, "1.00") << names[i];
    }
    expect_restored(m, before);
}

TEST(RunPmu, V1StartsWithEnBits) {
    SimMachine m = intel_v1(1);
    Snap before = snap(m);
    SimPlatform p(m);
    Cmd c = run_line(p, std::string("run --json --bench add_indep --events instructions,cycles") + kFast);
    ASSERT_EQ(c.status, 0) << c.out;
    std::vector<pmutest::Json> r = results(c);
    ASSERT_EQ(r.size(), 2u);
    EXPECT_EQ(r[0]["counter"].s(), "PMC0");
    EXPECT_EQ(r[1]["counter"].s(), "PMC1");
    EXPECT_EQ(r[0]["per_iteration"].text, "8.00");
    EXPECT_EQ(r[1]["per_iteration"].text, "8.00");
    // No GLOBAL_CTRL on v1: the region sets and clears EN.
    size_t en_on = 0;
    for (const LogEntry& e : m.cpu(0).writes()) {
        EXPECT_NE(e.addr, 0x38Fu);
        en_on += e.addr == 0x186 && e.value == 0x4300C0;
    }
    EXPECT_GE(en_on, 2u * (3 + 1));
    expect_restored(m, before);
}

TEST(RunPmu, RdmsrWhereRdpmcFaults) {
    SimMachine m = intel_v3(2);
    m.cpu(1).set_rdpmc_ud(true);
    Snap before = snap(m);
    SimPlatform p(m);
    Cmd c = run_line(p, std::string("run --json --bench nop --cpu all --events instructions,branches") + kFast);
    ASSERT_EQ(c.status, 0) << c.out;
    std::vector<pmutest::Json> r = results(c);
    ASSERT_EQ(r.size(), 4u);
    for (const pmutest::Json& j : r) {
        EXPECT_EQ(j["counter_method"].s(), j["cpu"].u() == 1 ? "rdmsr" : "rdpmc");
        EXPECT_EQ(j["per_iteration"].text, j["event"].s() == "instructions" ? "1.00" : "0.00");
    }
    // CPU 1's region reads IA32_FIXED_CTR0 and IA32_PMC0 with RDMSR.
    size_t rdmsr = 0;
    for (const LogEntry& e : m.cpu(1).log()) {
        EXPECT_FALSE(e.kind == Access::rdpmc && e.vector == 0) << describe(e);
        rdmsr += e.kind == Access::rdmsr && (e.addr == 0x309 || e.addr == 0xC1);
    }
    EXPECT_GT(rdmsr, 0u);
    expect_restored(m, before);
}

TEST(RunPmu, HybridPlansPerCoreType) {
    SimMachine m = intel_hybrid();
    Snap before = snap(m);
    SimPlatform p(m);
    Cmd c = run_line(p, "run --json --bench nop --cpu all --reps 1 --warmup 0 --unroll 2 --events "
                        "\"instructions,C0.00 A,C0.00 B,C0.00 C,C0.00 D,C0.00 E,C0.00 F,C0.00 G\"");
    ASSERT_EQ(c.status, 0) << c.out;
    std::vector<pmutest::Json> r = results(c);
    ASSERT_EQ(r.size(), 8u * 8);
    for (const pmutest::Json& j : r) {
        u64 cpu = j["cpu"].u();
        EXPECT_EQ(j["runs"].u(), cpu < 4 ? 1u : 2u);
        EXPECT_EQ(j["per_iteration"].text, "1.00");
        if (j["event"].s() == "G") {
            EXPECT_EQ(j["run"].u(), cpu < 4 ? 0u : 1u);
            EXPECT_EQ(j["counter"].s(), cpu < 4 ? "PMC6" : "PMC0");
        }
    }
    expect_restored(m, before);
}

TEST(RunPmu, NoPmuSaysSoAndTscStillWorks) {
    SimMachine m = qemu_tcg(2);
    SimPlatform p(m);
    Cmd c = run_line(p, "run --bench nop --events instructions");
    EXPECT_EQ(c.status, 3);
    EXPECT_EQ(c.out,
              "pmulab: error: CPU 0: cannot count 'instructions': no performance-monitoring counters: no AMD core "
              "counters enumerated (CPUID 8000_0001H:ECX[23] = 0, no PerfMonV2) and CPUID.0AH:EAX[7:0] = 0 (a "
              "hypervisor without PMU passthrough)\n");
    c = run_line(p, std::string("run --json --bench add_indep --events tsc") + kFast);
    ASSERT_EQ(c.status, 0) << c.out;
    std::vector<pmutest::Json> r = results(c);
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0]["event"].s(), "tsc");
    EXPECT_EQ(r[0]["per_iteration"].text, "8.00");
}

TEST(RunPmu, SpecErrors) {
    SimMachine m = intel_v3(2);
    SimPlatform p(m);
    Cmd c = run_line(p, "run --bench nop --events cycles,0E.1G");
    EXPECT_EQ(c.status, 2);
    EXPECT_EQ(c.out, "pmulab: error: --events: event list item 2: event spec '0E.1G': UMASK '1G' is not hex "
                     "(at offset 3)\n");
    c = run_line(p, "run --bench nop --events cycles,CYCLES");
    EXPECT_EQ(c.status, 2);
    EXPECT_EQ(c.out, "pmulab: error: --events: 'CYCLES' is listed twice\n");
    c = run_line(p, "run --bench nop --events C0.00.CTR=7");
    EXPECT_EQ(c.status, 3);
    EXPECT_EQ(c.out, "pmulab: error: CPU 0: event 'C0.00.CTR=7' is pinned to PMC7 (.CTR=7), but this CPU has PMC0-3\n");
    // perf syntax with commas inside one event.
    c = run_line(p, std::string("run --json --bench nop --events event=0xc0,umask=0,name=insn;tsc") + kFast);
    ASSERT_EQ(c.status, 0) << c.out;
    std::vector<pmutest::Json> r = results(c);
    ASSERT_EQ(r.size(), 2u);
    EXPECT_EQ(r[0]["event"].s(), "insn");
    EXPECT_EQ(r[0]["per_iteration"].text, "1.00");
}

TEST(RunPmu, AFaultInSetupFailsThatCpuOnlyAndRestores) {
    SimMachine m = intel_v3(2);
    m.cpu(1).fail_wrmsr_to(0x38D);  // IA32_FIXED_CTR_CTRL
    Snap before = snap(m);
    SimPlatform p(m);
    Cmd c = run_line(p, std::string("run --json --bench nop --cpu all --events instructions,branches") + kFast);
    EXPECT_EQ(c.status, 1);
    std::vector<pmutest::Json> r = results(c);
    ASSERT_EQ(r.size(), 2u);
    EXPECT_EQ(r[0]["cpu"].u(), 0u);
    std::vector<std::string> errors;
    for (const pmutest::Json& j : c.recs)
        if (j["type"].s() == "error") errors.push_back(j["message"].s());
    ASSERT_EQ(errors.size(), 1u);
    EXPECT_EQ(errors[0],
              "nop on CPU 1 (run 0): WRMSR 0x38d <- 0x3 raised #GP (general protection): the CPU rejects this MSR or "
              "value");
    expect_restored(m, before);
}

namespace {

struct Capture final : MeasureSink {
    std::vector<std::string> events;
    std::vector<std::string> per_iter;
    std::vector<std::string> failures;
    void result(const MeasureConfig&, const MeasureResult& r) override {
        events.push_back(r.read->event);
        StrBuf b;
        put_frac(b, frac_reduce(r.per_iter[unsigned(Agg::median)]), 2);
        per_iter.push_back(b.c_str());
    }
    void failure(const Error& e) override { failures.push_back(e.msg); }
    void skipped(const Error& e) override { failures.push_back(e.msg); }
};

MeasureConfig small(KernelId k, u32 cpu) {
    MeasureConfig cfg;
    BenchInstance& b = cfg.benches.emplace();
    b.kernel = &kernel_info(k);
    cfg.cpus.push(cpu);
    cfg.unroll = 10;
    cfg.reps = 3;
    cfg.warmup = 1;
    return cfg;
}

// Probes `cpus` once (as the commands do), then plans from the probes.
Status plan_runs(SimMachine& m, const Vec<Event>& ev, const Vec<u32>& cpus, const PmuRunOptions& o,
                 Vec<Box<PmuPlan>>* plans) {
    Vec<ProbedCpu> probed;
    probe_cpus(m, cpus, &probed);
    return plan_pmu_runs(probed, ev, o, plans);
}

}  // namespace

TEST(RunPmu, PresetsNearTheTopWrapAndSetOverflowFlags) {
    for (int fw = 0; fw < 2; ++fw) {
        SimMachine m = fw ? intel_v4_goldmont_plus(1) : intel_v3(2, 0);
        Snap before = snap(m);
        simm::SimMeasure mp(m);
        Vec<Event> ev;
        ASSERT_TRUE(parse_event_list(StrView("INST_RETIRED.ANY,INST_RETIRED.ANY_P"), &ev).ok());
        Vec<u32> cpus;
        cpus.push(0);
        PmuRunOptions o;
        o.preset_below_top = 100;  // the first runs wrap every counter
        Vec<Box<PmuPlan>> plans;
        ASSERT_TRUE(plan_runs(m, ev, cpus, o, &plans).ok());
        ASSERT_EQ(plans.size(), 1u);
        Capture cap;
        EXPECT_EQ(measure_run(m, mp, small(KernelId::add_indep, 0), plans[0]->groups, cap), Errc::ok);
        EXPECT_EQ(cap.per_iter, (std::vector<std::string>{"8.00", "8.00"})) << "fw " << fw;
        const PmuGroupState& st = *plans[0]->state[0];
        EXPECT_TRUE(st.overflow_read);
        EXPECT_TRUE(st.overflow.known);
        EXPECT_EQ(st.overflow.fixed, 1u);
        EXPECT_EQ(st.overflow.gp, 1u);
        expect_restored(m, before);
    }
}

TEST(RunPmu, GateOffCountsNothing) {
    SimMachine m = intel_v4_goldmont_plus(1);
    simm::SimMeasure mp(m);
    Vec<Event> ev;
    ASSERT_TRUE(parse_event_list(StrView("INST_RETIRED.ANY,INST_RETIRED.ANY_P,tsc"), &ev).ok());
    Vec<u32> cpus;
    cpus.push(0);
    PmuRunOptions o;
    o.gate_off = true;
    Vec<Box<PmuPlan>> plans;
    ASSERT_TRUE(plan_runs(m, ev, cpus, o, &plans).ok());
    ASSERT_EQ(plans[0]->groups[0].start_writes.size(), 1u);
    EXPECT_EQ(plans[0]->groups[0].start_writes[0].msr, 0x38Fu);
    EXPECT_EQ(plans[0]->groups[0].start_writes[0].value, 0u);
    Capture cap;
    EXPECT_EQ(measure_run(m, mp, small(KernelId::add_indep, 0), plans[0]->groups, cap), Errc::ok);
    EXPECT_EQ(cap.per_iter, (std::vector<std::string>{"0.00", "0.00", "8.00"}));
}

TEST(RunPmu, PlanningDoesNotTouchTheHardwareBeyondDetection) {
    SimMachine m = intel_v4_goldmont_plus(2);
    Vec<Event> ev;
    ASSERT_TRUE(parse_event_list(StrView("instructions,branches"), &ev).ok());
    Vec<u32> cpus;
    cpus.push(0);
    cpus.push(1);
    Vec<Box<PmuPlan>> plans;
    ASSERT_TRUE(plan_runs(m, ev, cpus, PmuRunOptions(), &plans).ok());
    ASSERT_EQ(plans.size(), 1u);
    EXPECT_EQ(plans[0]->cpus.size(), 2u);
    for (u32 i = 0; i < 2; ++i) {
        EXPECT_TRUE(m.cpu(i).writes().empty());
        // Detection: PERF_CAPABILITIES and one RDPMC probe.
        ASSERT_EQ(m.cpu(i).log().size(), 2u);
        EXPECT_EQ(m.cpu(i).log()[0].addr, 0x345u);
        EXPECT_EQ(m.cpu(i).log()[1].kind, Access::rdpmc);
    }
    const ReadGroup& g = plans[0]->groups[0];
    ASSERT_EQ(g.reads.size(), 2u);
    EXPECT_EQ(g.reads[0].kind, CounterAccess::rdpmc);
    EXPECT_EQ(g.reads[0].index, 0x40000000u);
    EXPECT_EQ(g.reads[0].width, 48);
    EXPECT_STREQ(g.reads[0].counter, "FIXED_CTR0");
    EXPECT_EQ(g.reads[1].kind, CounterAccess::rdpmc);
    EXPECT_EQ(g.reads[1].index, 0u);
    EXPECT_STREQ(g.reads[1].event, "branches");
    ASSERT_EQ(g.start_writes.size(), 1u);
    EXPECT_EQ(g.start_writes[0].value, 0x100000001u);
    ASSERT_EQ(g.stop_writes.size(), 1u);
    EXPECT_EQ(g.stop_writes[0].value, 0u);
    EXPECT_NE(g.hooks.setup, nullptr);
    EXPECT_NE(g.hooks.teardown, nullptr);
}

// ---------------------------------------------------------------- selftest

namespace {
void tick(SimMachine& m) {
    for (u32 i = 0; i < m.size(); ++i) m.cpu(i).set_rdtsc_step(3);
}
}  // namespace

bool has_line(const std::string& out, const std::string& line) {
    return ("\n" + out).find("\n" + line + "\n") != std::string::npos;
}

TEST(SelftestPmu, EveryPmuCheckPassesOnV4) {
    SimMachine m = intel_v4_goldmont_plus(2);
    tick(m);
    Snap before = snap(m);
    SimPlatform p(m);
    Cmd c = run_line(p, "selftest");
    EXPECT_EQ(c.status, 0) << c.out;
    const char* expect[] = {
        "PASS: instructions retired: fixed counter 0 vs GP event C0H.00H (INST_RETIRED.ANY_P) [CPU 0]: FIXED_CTR0 "
        "8.00, GP 8.00 per iteration of add_indep (expected 8, tolerance 1%)",
        "PASS: core cycles: fixed counter 1 vs GP event 3CH.00H (CPU_CLK_UNHALTED.THREAD_P) [CPU 0]: FIXED_CTR1 1.00 "
        "vs GP 1.00 cycles per iteration of add_chain",
        "PASS: reference cycles: fixed counter 2 vs the TSC [CPU 0]: FIXED_CTR2 1.00 vs TSC 1.00 ticks per iteration "
        "of add_chain",
        "PASS: counter overflow wraps at the enumerated width and sets GLOBAL_STATUS [CPU 0]: preset 2^48-4000 (GP), "
        "2^48-4000 (fixed): FIXED_CTR0 8.00 per iteration, wrapping run 8015 vs 8015..8015; GP 8.00 per iteration, "
        "wrapping run 8015 vs 8015..8015; GLOBAL_STATUS overflow flags set",
        "PASS: IA32_PERF_GLOBAL_CTRL gates every counter [CPU 0]: with GLOBAL_CTRL = 0 the largest count of any run "
        "is 0",
        "PASS: each counter counts individually (instructions retired on every GP counter): PMC3 (C0.00.CTR=3) [CPU "
        "0]: 8.00 per iteration of add_indep (expected 8)",
        "PASS: each counter counts individually (instructions retired on every GP counter): FIXED_CTR2 [CPU 0]: "
        "CPU_CLK_UNHALTED.REF_TSC: 8.00 per iteration of add_indep (must be > 0)",
        // The interrupt checks (selftest_pmi.cpp): the PMI through the simulated LVT entry,
        // the v4 freeze, the writes and the wraps.
        "PASS: an overflow sets its GLOBAL_STATUS bit and delivers exactly one PMI: PMC0 [CPU 0]: period 3000 of "
        "4000 instructions: 1 PMI; GLOBAL_STATUS bit 0 set at it, clear after the handler; counter 0 at it; RIP in "
        "the body at copy 373 + 20; LVT 0x10400 at it (masked by the delivery), re-armed 0x400; LVT restored 0x10000 "
        "(was 0x10000)",
        "PASS: an overflow sets its GLOBAL_STATUS bit and delivers exactly one PMI: FIXED_CTR0 [CPU 0]: period 3000 "
        "of 4000 instructions: 1 PMI; GLOBAL_STATUS bit 32 set at it, clear after the handler; counter 0 at it; RIP "
        "in the body at copy 373 + 20; LVT 0x10400 at it (masked by the delivery), re-armed 0x400; LVT restored "
        "0x10000 (was 0x10000)",
        "PASS: freeze-on-PMI stops every counter [CPU 0]: 1 PMI; GLOBAL_STATUS.CTR_FRZ set at the PMI; no counter "
        "moved after it: PMC0 3000, PMC1 3000, PMC2 3000, PMC3 3000, FIXED_CTR0 0, FIXED_CTR1 3000, FIXED_CTR2 3000; "
        "DEBUGCTL restored 0x0, LVT 0x10000",
        "PASS: counters wrap at their enumerated width: IA32_A_PMCx full-width writes [CPU 0]: width 48 "
        "(CPUID.0AH:EAX[23:16]): 0xff0123456789 reads back, 0xffffff0123456789 (beyond the width) raises #GP on "
        "every PMC",
        "PASS: counters wrap at their enumerated width: GP counters count past 2^width - 1 to 0 [CPU 0]: from "
        "2^48-16 over 4000 instructions: PMC0 4053, PMC1 4053, PMC2 4053, PMC3 4053",
        "SUMMARY: 33 tests, 0 failures, 0 skipped",
    };
    for (const char* l : expect) EXPECT_TRUE(has_line(c.out, l)) << l << "\n---\n" << c.out;
    expect_restored(m, before);
}

TEST(SelftestPmu, V1SkipsWhatItLacks) {
    SimMachine m = intel_v1(1);
    tick(m);
    SimPlatform p(m);
    Cmd c = run_line(p, "selftest");
    EXPECT_EQ(c.status, 0) << c.out;
    const char* expect[] = {
        "PASS: instructions retired: fixed counter 0 vs GP event C0H.00H (INST_RETIRED.ANY_P) [CPU 0]: GP 8.00 per "
        "iteration of add_indep (expected 8, tolerance 1%); no fixed counter 0: GP only",
        "SKIP: core cycles: fixed counter 1 vs GP event 3CH.00H (CPU_CLK_UNHALTED.THREAD_P) [CPU 0] (needs fixed "
        "counter 1 and the architectural event 3CH.00H)",
        "SKIP: reference cycles: fixed counter 2 vs the TSC [CPU 0] (no fixed counter 2)",
        "PASS: counter overflow wraps at the enumerated width and sets GLOBAL_STATUS [CPU 0]: preset 2^40-4000: GP "
        "8.00 per iteration, wrapping run 8011 vs 8011..8011; version 1 has no GLOBAL_STATUS: checked by the counts",
        "SKIP: IA32_PERF_GLOBAL_CTRL gates every counter [CPU 0] (architectural PMU version 1 has no "
        "IA32_PERF_GLOBAL_CTRL)",
        "SKIP: counters wrap at their enumerated width: fixed counters count past 2^width - 1 to 0 [CPU 0] (no fixed "
        "counters (CPUID.0AH:EDX[4:0] = 0))",
        // No GLOBAL_STATUS: the PMI's overflow is judged by the counter's sign; no freeze on v1.
        "PASS: an overflow sets its GLOBAL_STATUS bit and delivers exactly one PMI: PMC0 [CPU 0]: period 3000 of "
        "4000 instructions: 1 PMI; counter wrapped past 0 at it (no global status: its sign); counter 0 at it; RIP "
        "in the body at copy 373 + 20; LVT 0x10400 at it (masked by the delivery), re-armed 0x400; LVT restored "
        "0x10000 (was 0x10000)",
        "SKIP: freeze-on-PMI stops every counter [CPU 0] (freezing the counters on a PMI needs architectural "
        "performance monitoring version 2 or later (IA32_DEBUGCTL.FREEZE_PERFMON_ON_PMI with IA32_PERF_GLOBAL_CTRL; "
        "this CPU has version 1))",
        "SUMMARY: 27 tests, 0 failures, 7 skipped",
    };
    for (const char* l : expect) EXPECT_TRUE(has_line(c.out, l)) << l << "\n---\n" << c.out;
}

TEST(SelftestPmu, NoPmuSkipsEveryPmuCheckOnce) {
    SimMachine m = qemu_tcg(2);
    tick(m);
    SimPlatform p(m);
    Cmd c = run_line(p, "selftest --cpu all --json");
    EXPECT_EQ(c.status, 0) << c.out;
    size_t skips = 0, lbr_skips = 0;
    for (const pmutest::Json& j : c.recs) {
        if (j["type"].s() != "check" || j["status"].s() != "SKIP") continue;
        if (j["name"].s() == "lbr: an LBR records a known taken jump") {  // per CPU (pmu/lbr.h says why)
            ++lbr_skips;
            continue;
        }
        ++skips;
        EXPECT_FALSE(j.has("cpu"));
        EXPECT_EQ(j["detail"].s(),
                  "CPU 0: no performance-monitoring counters: no AMD core counters "
                  "enumerated (CPUID 8000_0001H:ECX[23] = 0, no PerfMonV2) and CPUID.0AH:EAX[7:0] = 0 (a hypervisor "
                  "without PMU passthrough)");
    }
    EXPECT_EQ(skips, 9u);  // 6 PMU checks, 3 interrupt checks
    EXPECT_EQ(lbr_skips, 2u);
    for (u32 i = 0; i < m.size(); ++i) EXPECT_TRUE(m.cpu(i).writes().empty());
}

TEST(SelftestPmu, ABrokenCounterFailsAndIsRestored) {
    SimMachine m = intel_v4_goldmont_plus(1);
    tick(m);
    m.cpu(0).fail_wrmsr_to(0x4C3);  // IA32_A_PMC2 rejects writes
    Snap before = snap(m);
    SimPlatform p(m);
    Cmd c = run_line(p, "selftest");
    EXPECT_EQ(c.status, 1);
    EXPECT_TRUE(has_line(c.out,
                         "FAIL: each counter counts individually (instructions retired on every GP counter): PMC2 "
                         "(C0.00.CTR=2) [CPU 0]: add_indep on CPU 0 (run 0): programming 'PMC2' on PMC2: WRMSR 0x4c3 "
                         "<- 0x0 raised #GP (general protection): the CPU rejects this MSR or value"))
        << c.out;
    // The interrupt checks that use PMC2 FAIL too: the freeze check programs every counter.
    EXPECT_TRUE(has_line(c.out,
                         "FAIL: freeze-on-PMI stops every counter [CPU 0]: programming 'PMC2' on PMC2: WRMSR 0x4c3 <- "
                         "0x0 raised #GP (general protection): the CPU rejects this MSR or value"))
        << c.out;
    EXPECT_TRUE(has_line(c.out,
                         "FAIL: counters wrap at their enumerated width: IA32_A_PMCx full-width writes [CPU 0]: width "
                         "48 (CPUID.0AH:EAX[23:16]): PMC2: wrote 0xff0123456789 to MSR 0x4c3, read 0x0 (expected "
                         "0xff0123456789): WRMSR 0x4c3 <- 0xff0123456789 raised #GP (general protection): the CPU "
                         "rejects this MSR or value"))
        << c.out;
    EXPECT_TRUE(has_line(c.out, "SUMMARY: 33 tests, 5 failures, 0 skipped")) << c.out;
    expect_restored(m, before);
}
