// Cycle-by-cycle measurements (measure/cycle_by_cycle.h) on the simulator's executor: the
// exact increments the cost model gives (docs/sim.md "Cost model": one instruction per
// cycle, a load's stall cycles before it retires), the window, the refusals, and the
// DEBUGCTL and LVT state restored.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "measure/cycle_by_cycle.h"
#include "sim/sim_cpu.h"
#include "sim_exec.h"

using namespace pmulab;

namespace {

struct Errors final : MeasureSink {
    std::vector<std::string> msgs;
    void result(const MeasureConfig&, const MeasureResult&) override {}
    void failure(const Error& e) override { msgs.push_back(e.msg); }
    void skipped(const Error& e) override { msgs.push_back(e.msg); }
};

struct Case {
    const char* events = "instructions";
    std::vector<u8> body, init;
    u64 unroll = 1, loop = 1;
    bool end_to_end = false;
    const char* cache = "";
};

struct Outcome {
    Status planned;
    Errc rc = Errc::ok;
    CbcResult r;
    std::vector<std::string> errors;
    // instructions (event 0) per cycle
    std::vector<i64> column(usize e = 0) const {
        std::vector<i64> v;
        for (usize i = 0; i < r.valid.size(); ++i) v.push_back(r.inc[i * r.events + e]);
        return v;
    }
};

PmuInfo detect_on(sim::SimMachine& m, u32 cpu, CpuIdentity* id) {
    CpuProbe probe;
    EXPECT_TRUE(run_on(m, cpu, [&] { pmu_probe(m, &probe); }).ok());
    PmuInfo info;
    pmu_decode(probe, &info);
    *id = decode_cpuid(probe.cpuid).id;
    return info;
}

// A hypervisor that drops DEBUGCTL.FREEZE_PERFMON_ON_PMI (bit 12) from the guest's writes;
// and, with fail_preload set, refuses the preload of one cycle (a run set that fails).
class NoFreezeBitHw final : public Hw {
public:
    explicit NoFreezeBitHw(Hw& in, bool drop = true) : in_(in), drop_(drop) {}
    u64 fail_preload = 0;
    CpuidRegs cpuid(u32 leaf, u32 subleaf) override { return in_.cpuid(leaf, subleaf); }
    Result<u64> rdmsr(u32 msr) override { return in_.rdmsr(msr); }
    Status wrmsr(u32 msr, u64 v) override {
        if (msr == 0x30A && fail_preload && v == fail_preload) return msr_fault_error("WRMSR", msr, v, 13);
        return in_.wrmsr(msr, msr == 0x1D9 && drop_ ? v & ~(u64(1) << 12) : v);
    }
    Result<u64> rdpmc(u32 index) override { return in_.rdpmc(index); }
    u64 rdtsc() override { return in_.rdtsc(); }
    u32 cpu_count() override { return in_.cpu_count(); }
    u32 current_cpu() override { return in_.current_cpu(); }
    Result<CpuTopology> topology(u32 cpu) override { return in_.topology(cpu); }
    Status run_on_cpu(u32 cpu, CpuFn fn, void* ctx) override { return in_.run_on_cpu(cpu, fn, ctx); }

private:
    Hw& in_;
    bool drop_;
};

Outcome measure(sim::SimMachine& m, u32 cpu, const Case& c, bool drop_freeze_bit = false, u64 fail_cycle = 0) {
    Outcome o;
    SimExec ex(m);
    EXPECT_TRUE(ex.set_cache(c.cache, 1).ok());
    CpuIdentity id;
    PmuInfo info = detect_on(m, cpu, &id);
    Vec<Event> events;
    EXPECT_TRUE(parse_event_list(StrView(c.events), &events, info.dialect).ok());
    Vec<u32> cpus;
    cpus.push(cpu);
    CbcPlan plan;
    o.planned = cbc_plan(info, id.family, id.model, events, cpus, &plan);
    if (!o.planned.ok()) return o;
    UserCode code;
    for (u8 b : c.body) code.body.push(b);
    for (u8 b : c.init) code.init.push(b);
    str_copy(code.name, sizeof code.name, "code");
    BenchInstance bench;
    bench.user = &code;
    MeasureConfig cfg;
    cfg.unroll = c.unroll, cfg.loop = c.loop, cfg.reps = 1, cfg.warmup = 0;
    CbcOptions opts;
    opts.end_to_end = c.end_to_end;
    Errors sink;
    NoFreezeBitHw kvm(m, drop_freeze_bit);
    if (fail_cycle) kvm.fail_preload = (u64(1) << 48) - 1 - fail_cycle;
    Hw& hw = drop_freeze_bit || fail_cycle ? static_cast<Hw&>(kvm) : static_cast<Hw&>(m);
    o.rc = cbc_measure(hw, ex, cfg, opts, plan, bench, cpu, sink, &o.r);
    o.errors = sink.msgs;
    EXPECT_TRUE(ex.problems().empty()) << ex.problems()[0];
    return o;
}

const std::vector<u8> kAdd = {0x48, 0x01, 0xD8};             // add rax, rbx
const std::vector<u8> kLoad = {0x49, 0x8B, 0x0E};            // mov rcx, [r14]
const std::vector<u8> kFlushR14 = {0x41, 0x0F, 0xAE, 0x3E};  // clflush [r14]
std::vector<u8> times(const std::vector<u8>& b, int n) {
    std::vector<u8> v;
    for (int i = 0; i < n; ++i) v.insert(v.end(), b.begin(), b.end());
    return v;
}

// Straight-line code: one instruction in each cycle of the window, as many cycles as
// instructions, and the sum is the code's instructions.
void expect_straight_line(sim::SimMachine& m, u32 cpu, const char* what) {
    SCOPED_TRACE(what);
    Case c;
    c.events = "instructions,cycles,branches";
    c.body = times(kAdd, 5);
    c.unroll = 2;
    Outcome o = measure(m, cpu, c);
    ASSERT_TRUE(o.planned.ok()) << o.planned.error().msg;
    ASSERT_EQ(o.rc, Errc::ok) << (o.errors.empty() ? "" : o.errors[0]);
    EXPECT_EQ(o.r.code_instructions, 10u);
    EXPECT_EQ(o.column(0), std::vector<i64>(10, 1)) << "one instruction per cycle";
    EXPECT_EQ(o.column(1), std::vector<i64>(10, 1)) << "the armed cycles counter: one per cycle";
    EXPECT_EQ(o.column(2), std::vector<i64>(10, 0));
    EXPECT_EQ(o.r.last - o.r.first + 1, 10u);
}

}  // namespace

TEST(CycleByCycle, StraightLineOneInstructionPerCycleOnEveryPmu) {
    sim::SimMachine sky = sim::intel_skylake(1), icl = sim::intel_icelake(1), v3 = sim::intel_v3(1);
    sim::SimMachine zen4 = sim::amd_zen4(1), adl = sim::intel_alder_lake();
    expect_straight_line(sky, 0, "Skylake (v4: CTR_FRZ)");
    expect_straight_line(icl, 0, "Ice Lake (v5)");
    expect_straight_line(v3, 0, "v3 (the freeze clears GLOBAL_CTRL)");
    expect_straight_line(zen4, 0, "Zen 4 (LbrAndPmcFreeze, PMCx076 armed)");
    expect_straight_line(adl, 0, "Alder Lake P core");
    expect_straight_line(adl, 4, "Alder Lake E core");
}

TEST(CycleByCycle, ALoadThatMissesShowsItsStallCycles) {
    sim::SimMachine m = sim::intel_skylake(1);
    Case c;
    c.events = "instructions,D1.01,D1.08";
    c.body = kAdd;
    c.body.insert(c.body.end(), kLoad.begin(), kLoad.end());
    c.body.insert(c.body.end(), kAdd.begin(), kAdd.end());
    c.init = kFlushR14;  // the line is not cached when the code runs
    c.cache = "L1D:32K:8:LRU,L2:256K:4:LRU";
    Outcome o = measure(m, 0, c);
    ASSERT_EQ(o.rc, Errc::ok) << (o.errors.empty() ? "" : o.errors[0]);
    // add (cycle 0), 200 stall cycles of the load from memory, the load, the add.
    std::vector<i64> inst(203, 0), miss(203, 0);
    inst[0] = inst[201] = inst[202] = 1;
    miss[201] = 1;
    EXPECT_EQ(o.column(0), inst);
    EXPECT_EQ(o.column(1), std::vector<i64>(203, 0)) << "no L1 hit";
    EXPECT_EQ(o.column(2), miss) << "the L1 miss with the load's retirement";
}

TEST(CycleByCycle, LoopAndEndToEnd) {
    sim::SimMachine m = sim::intel_skylake(1);
    Case c;
    c.body = kAdd;
    c.unroll = 2;
    c.loop = 3;
    Outcome o = measure(m, 0, c);
    ASSERT_EQ(o.rc, Errc::ok);
    // 3 x (2 adds + DEC R15 + JNZ): the loop's own instructions count with the code.
    EXPECT_EQ(o.column(0), std::vector<i64>(12, 1));
    c.loop = 1;
    c.end_to_end = true;
    Outcome e = measure(m, 0, c);
    ASSERT_EQ(e.rc, Errc::ok);
    EXPECT_EQ(e.r.first, 0u);
    i64 sum = 0;
    for (i64 v : e.column(0)) sum += v;
    EXPECT_EQ(u64(sum), e.r.code_instructions) << "every instruction from the start read on";
    EXPECT_GT(e.r.code_instructions, 2u);
}

TEST(CycleByCycle, RestoresDebugctlAndTheLvtEntryExactly) {
    sim::SimMachine m = sim::intel_icelake(1);
    sim::SimCpu& cpu = m.cpu(0);
    const u32 lvt = sim::SimCpu::kLvtDeliveryNmi;  // unmasked NMI delivery, as Linux leaves it
    cpu.set_lvt_perf(lvt);
    ASSERT_TRUE(cpu.wrmsr(0x1D9, 1).ok());  // DEBUGCTL.LBR
    Case c;
    c.body = kAdd;
    Outcome o = measure(m, 0, c);
    ASSERT_EQ(o.rc, Errc::ok);
    EXPECT_EQ(cpu.lvt_perf(), lvt);
    EXPECT_EQ(cpu.peek(0x1D9), 1u);
    EXPECT_EQ(cpu.nmis_delivered(), 0u) << "the LVT entry was masked during the runs";
}

TEST(CycleByCycle, RefusesAPmuThatDoesNotFreeze) {
    sim::SimMachine m = sim::intel_skylake(1);
    m.cpu(0).break_freeze(true);
    Case c;
    c.body = kAdd;
    Outcome o = measure(m, 0, c);
    EXPECT_EQ(o.rc, Errc::unsupported);
    ASSERT_EQ(o.errors.size(), 1u);
    EXPECT_NE(o.errors[0].find("kept counting after the armed cycles counter overflowed"), std::string::npos)
        << o.errors[0];
    EXPECT_TRUE(o.r.valid.empty());
}

TEST(CycleByCycle, RefusesAGuestWhoseFreezeBitDoesNotStick) {
    sim::SimMachine m = sim::intel_icelake(1);
    m.cpu(0).set_lvt_perf(sim::SimCpu::kLvtDeliveryNmi);
    Case c;
    c.body = kAdd;
    Outcome o = measure(m, 0, c, true);
    EXPECT_EQ(o.rc, Errc::unsupported);
    ASSERT_EQ(o.errors.size(), 1u);
    EXPECT_NE(o.errors[0].find("IA32_DEBUGCTL.FREEZE_PERFMON_ON_PMI (bit 12) does not stick: written 0x5000, read "
                               "back 0x4000 (a hypervisor"),
              std::string::npos)
        << o.errors[0];
    EXPECT_TRUE(o.r.valid.empty());
    // (0x4000: the noise guard's FREEZE_WHILE_SMM, set around every job and restored too.)
    EXPECT_EQ(m.cpu(0).lvt_perf(), sim::SimCpu::kLvtDeliveryNmi) << "restored after the refusal";
    EXPECT_EQ(m.cpu(0).peek(0x1D9), 0u);
}

TEST(CycleByCycle, RefusesPmusWithoutFreezeOrFixedCounters) {
    struct {
        sim::SimMachine m;
        const char* why;
    } cases[] = {
        {sim::amd_zen3(1), "LbrAndPmcFreeze) is 0"},
        {sim::intel_v1(1), "version 2 or later"},
        {sim::intel_v5(), "fixed counter 1"},
        {sim::qemu_tcg(1), "no performance-monitoring counters"},
    };
    for (auto& k : cases) {
        Case c;
        c.body = kAdd;
        Outcome o = measure(k.m, 0, c);
        ASSERT_FALSE(o.planned.ok()) << k.why;
        EXPECT_EQ(o.planned.error().code, Errc::unsupported);
        EXPECT_NE(std::string(o.planned.error().msg).find(k.why), std::string::npos) << o.planned.error().msg;
    }
}

TEST(CycleByCycle, QuirksLeaveOutTheCountersThatDoNotFreezeTogether) {
    sim::SimMachine sky = sim::intel_skylake(1), adl = sim::intel_alder_lake();
    for (auto* mp : {&sky, &adl}) {
        CpuIdentity id;
        PmuInfo info = detect_on(*mp, 0, &id);
        Vec<Event> events;
        ASSERT_TRUE(parse_event_list(StrView("C4.00,C5.00,D1.01,D1.08"), &events, info.dialect).ok());
        Vec<u32> cpus;
        cpus.push(0);
        CbcPlan plan;
        ASSERT_TRUE(cbc_plan(info, id.family, id.model, events, cpus, &plan).ok());
        const u32 avoid = mp == &sky ? 2u : 1u;  // Skylake (v4): PMC1; Alder Lake: PMC0
        EXPECT_EQ(plan.avoided_gp & 0xF, avoid);
        for (const Box<PmuPlan>& p : plan.runs)
            EXPECT_EQ(p->alloc.groups[0].gp_mask & (avoid | ~0xFu), 0u) << "only PMC0-3, less the quirk's";
        EXPECT_EQ(plan.runs.size(), 2u) << "3 usable PMCs: 4 events in 2 runs";
    }
}

// Runs with different numbers of reads have different harnesses before the code: each
// run's window is its own, so every run sees the code in the same cycles.
TEST(CycleByCycle, EveryRunHasItsOwnWindow) {
    sim::SimMachine m = sim::intel_skylake(1);
    Case c;
    c.events = "instructions,C4.00,D1.01,D1.08,C0.00,C5.00";  // 3 usable PMCs: 2 runs
    c.body = times(kAdd, 4);
    Outcome o = measure(m, 0, c);
    ASSERT_EQ(o.rc, Errc::ok) << (o.errors.empty() ? "" : o.errors[0]);
    EXPECT_EQ(o.column(0), std::vector<i64>(4, 1));
    EXPECT_EQ(o.column(1), std::vector<i64>(4, 0));
    EXPECT_EQ(o.column(4), std::vector<i64>(4, 1)) << "C0.00 in the second run";
    EXPECT_EQ(o.column(5), std::vector<i64>(4, 0)) << "no branch of the harness in the window";
}

// A run set that fails (here its preload write faults; the watchdog's stop takes the same
// path) is reported, its cycle and the next have no value, and the sweep goes on.
TEST(CycleByCycle, AFailedRunSetIsReportedAndTheNextCycleGoesOn) {
    sim::SimMachine m = sim::intel_skylake(1);
    Case c;
    c.body = times(kAdd, 20);
    Outcome clean = measure(m, 0, c);
    ASSERT_EQ(clean.rc, Errc::ok);
    Outcome o = measure(m, 0, c, false, clean.r.first + 5);
    ASSERT_EQ(o.r.first, clean.r.first) << "the window was found without that cycle";
    ASSERT_EQ(o.errors.size(), 1u);
    EXPECT_NE(o.errors[0].find("WRMSR"), std::string::npos) << o.errors[0];
    EXPECT_NE(o.rc, Errc::ok);
    std::vector<u8> valid(o.r.valid.begin(), o.r.valid.end()), want(20, 1);
    want[5] = want[6] = 0;
    EXPECT_EQ(valid, want);
    for (usize i = 7; i < 20; ++i) EXPECT_EQ(o.column()[i], 1) << "cycle " << i;
}
