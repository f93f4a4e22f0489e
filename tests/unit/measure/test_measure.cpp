// The measurement engine's group/run loop, statistics and error paths, against a
// platform that synthesises counts (measure_test_util.h).
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "support/measure_test_util.h"
#include "measure/kernels.h"

using namespace pmulab;
using mtest::FakeHw;
using mtest::FakeMeasure;

namespace {

struct Got {
    u32 cpu;
    u64 apic;
    std::string bench, event, counter;
    u64 size;
    u32 run, runs;
    u64 short_copies, long_copies, iterations;
    Frac per[kAggCount];
    std::vector<i64> short_raw, long_raw;
};

class Sink final : public MeasureSink {
public:
    void result(const MeasureConfig& cfg, const MeasureResult& r) override {
        Got g;
        g.cpu = r.cpu;
        g.apic = r.apic_id;
        g.bench = r.bench->kernel->name;
        g.size = r.bench->size;
        g.event = r.read->event;
        g.counter = r.read->counter;
        g.run = r.run;
        g.runs = r.runs;
        g.short_copies = r.short_copies;
        g.long_copies = r.long_copies;
        g.iterations = r.iterations;
        for (unsigned a = 0; a < kAggCount; ++a) g.per[a] = r.per_iter[a];
        g.short_raw.assign(r.short_raw, r.short_raw + cfg.reps);
        g.long_raw.assign(r.long_raw, r.long_raw + cfg.reps);
        results.push_back(g);
    }
    void failure(const Error& e) override {
        failures.push_back(e.msg);
        codes.push_back(e.code);
    }
    void skipped(const Error& e) override { skips.push_back(e.msg); }
    void progress(u32 done, u32 total, const BenchInstance&, u32 cpu, u32 run) override {
        progress_calls.push_back({done, total});
    }
    std::vector<Got> results;
    std::vector<std::string> failures, skips;
    std::vector<Errc> codes;
    std::vector<std::pair<u32, u32>> progress_calls;
};

MeasureConfig config(KernelId k, std::vector<u32> cpus = {0}, u64 size = 0) {
    MeasureConfig c;
    BenchInstance& b = c.benches.emplace();
    b.kernel = &kernel_info(k);
    b.size = size;
    for (u32 cpu : cpus) c.cpus.push(cpu);
    return c;
}

Vec<ReadGroup> tsc_groups() {
    Vec<StrView> specs;
    specs.push(StrView("tsc"));
    Vec<ReadGroup> g;
    EXPECT_TRUE(plan_event_groups(specs, &g).ok());
    return g;
}

CounterRead make_read(CounterAccess::Kind kind, u32 index, u8 width, const char* ev, const char* ctr) {
    CounterRead r;
    r.kind = kind;
    r.index = index;
    r.width = width;
    str_copy(r.event, sizeof r.event, ev);
    str_copy(r.counter, sizeof r.counter, ctr);
    return r;
}

bool is(Frac f, i64 num, u64 den = 1) { return frac_eq(f, Frac{num, den}); }

std::string fx(Frac f) {
    StrBuf b;
    put_frac(b, f, 4);
    return b.c_str();
}

}  // namespace

TEST(MeasurePlan, TscIsOneGroupWithOneRead) {
    Vec<StrView> specs;
    specs.push(StrView("TSC"));
    Vec<ReadGroup> g;
    ASSERT_TRUE(plan_event_groups(specs, &g).ok());
    ASSERT_EQ(g.size(), 1u);
    ASSERT_EQ(g[0].reads.size(), 1u);
    EXPECT_EQ(g[0].reads[0].kind, CounterAccess::rdtsc);
    EXPECT_EQ(g[0].reads[0].width, 64);
    EXPECT_STREQ(g[0].reads[0].event, "tsc");
    EXPECT_STREQ(g[0].reads[0].counter, "TSC");
}

TEST(MeasurePlan, PmuEventsAreUnsupportedForNow) {
    Vec<StrView> specs;
    specs.push(StrView("tsc"));
    specs.push(StrView("INST_RETIRED.ANY"));
    Vec<ReadGroup> g;
    Status s = plan_event_groups(specs, &g);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.error().code, Errc::unsupported);
    EXPECT_STREQ(s.error().msg, "event 'INST_RETIRED.ANY': PMU events are not supported yet (only 'tsc')");
}

TEST(MeasurePlan, DuplicatesAndEmptyAreUsageErrors) {
    Vec<StrView> specs;
    specs.push(StrView("tsc"));
    specs.push(StrView("tsc"));
    Vec<ReadGroup> g;
    Status s = plan_event_groups(specs, &g);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.error().code, Errc::invalid_argument);
    EXPECT_STREQ(s.error().msg, "--events: 'tsc' is listed twice");
    specs.clear();
    specs.push(StrView(""));
    s = plan_event_groups(specs, &g);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.error().code, Errc::invalid_argument);
}

TEST(MeasureEngine, OverheadCancelsExactly) {
    FakeHw hw;
    FakeMeasure mp;
    Sink sink;
    MeasureConfig cfg = config(KernelId::nop);
    Vec<ReadGroup> groups = tsc_groups();
    EXPECT_EQ(measure_run(hw, mp, cfg, groups, sink), Errc::ok);
    ASSERT_TRUE(sink.failures.empty()) << sink.failures[0];
    ASSERT_EQ(sink.results.size(), 1u);
    const Got& g = sink.results[0];
    EXPECT_EQ(g.short_copies, 100u);
    EXPECT_EQ(g.long_copies, 200u);
    EXPECT_EQ(g.iterations, 100u);
    for (unsigned a = 0; a < kAggCount; ++a) EXPECT_TRUE(is(g.per[a], 128)) << agg_name(Agg(a)) << fx(g.per[a]);
    // 3 warm-up + 11 measured runs of each version, each with interrupts masked.
    EXPECT_EQ(mp.executions, 28u);
    EXPECT_EQ(mp.masks, 28);
    EXPECT_EQ(mp.restores, 28);
    EXPECT_EQ(mp.serializes, 1);
    EXPECT_EQ(mp.code_allocs, 2);
    EXPECT_EQ(mp.data_allocs, 0);
    EXPECT_TRUE(mp.live.empty()) << "pages leaked";
    // All short runs first (warm-up, then measured), then the long ones.
    std::vector<u64> expect(14, 100);
    expect.resize(28, 200);
    EXPECT_EQ(mp.copies_seen, expect);
    ASSERT_EQ(g.short_raw.size(), 11u);
    EXPECT_EQ(g.short_raw[0], 500 + 100 * 128);
    EXPECT_EQ(g.long_raw[0], 500 + 200 * 128);
}

TEST(MeasureEngine, EmptyKernelIsZero) {
    FakeHw hw;
    FakeMeasure mp;
    Sink sink;
    Vec<ReadGroup> groups = tsc_groups();
    EXPECT_EQ(measure_run(hw, mp, config(KernelId::empty), groups, sink), Errc::ok);
    ASSERT_EQ(sink.results.size(), 1u);
    for (unsigned a = 0; a < kAggCount; ++a) EXPECT_TRUE(is(sink.results[0].per[a], 0));
}

TEST(MeasureEngine, BasicModeUsesZeroAndU) {
    FakeHw hw;
    FakeMeasure mp;
    Sink sink;
    MeasureConfig cfg = config(KernelId::add_indep);
    cfg.basic = true;
    cfg.unroll = 50;
    Vec<ReadGroup> groups = tsc_groups();
    EXPECT_EQ(measure_run(hw, mp, cfg, groups, sink), Errc::ok);
    ASSERT_EQ(sink.results.size(), 1u);
    EXPECT_EQ(sink.results[0].short_copies, 0u);
    EXPECT_EQ(sink.results[0].long_copies, 50u);
    EXPECT_EQ(sink.results[0].iterations, 50u);
    EXPECT_TRUE(is(sink.results[0].per[unsigned(Agg::median)], 8 * 128));
}

TEST(MeasureEngine, LoopMultipliesIterations) {
    FakeHw hw;
    FakeMeasure mp;
    Sink sink;
    MeasureConfig cfg = config(KernelId::cpuid);
    cfg.loop = 1000;
    cfg.unroll = 10;
    Vec<ReadGroup> groups = tsc_groups();
    EXPECT_EQ(measure_run(hw, mp, cfg, groups, sink), Errc::ok);
    ASSERT_EQ(sink.results.size(), 1u);
    EXPECT_EQ(sink.results[0].iterations, 10000u);
    EXPECT_TRUE(is(sink.results[0].per[unsigned(Agg::min)], 2 * 128));
}

TEST(MeasureEngine, WarmupRunsAreDiscarded) {
    FakeHw hw;
    FakeMeasure mp;
    Sink sink;
    MeasureConfig cfg = config(KernelId::nop);
    cfg.warmup = 2;
    cfg.reps = 3;
    // executions: short w w m m m, long w w m m m
    mp.noise = {1000000, 1000000, 0, 0, 0, 1000000, 1000000, 0, 0, 0};
    Vec<ReadGroup> groups = tsc_groups();
    EXPECT_EQ(measure_run(hw, mp, cfg, groups, sink), Errc::ok);
    ASSERT_EQ(sink.results.size(), 1u);
    for (unsigned a = 0; a < kAggCount; ++a) EXPECT_TRUE(is(sink.results[0].per[a], 128)) << agg_name(Agg(a));
}

TEST(MeasureEngine, EveryAggregateIsExact) {
    FakeHw hw;
    FakeMeasure mp;
    Sink sink;
    MeasureConfig cfg = config(KernelId::nop);
    cfg.warmup = 0;
    cfg.reps = 5;
    // Short runs noiseless; long runs + {0, 100, 200, 300, 10000} ticks.
    mp.noise = {0, 0, 0, 0, 0, 300, 0, 10000, 100, 200};
    Vec<ReadGroup> groups = tsc_groups();
    EXPECT_EQ(measure_run(hw, mp, cfg, groups, sink), Errc::ok);
    ASSERT_EQ(sink.results.size(), 1u);
    const Got& g = sink.results[0];
    EXPECT_TRUE(is(g.per[unsigned(Agg::min)], 128)) << fx(g.per[0]);
    EXPECT_TRUE(is(g.per[unsigned(Agg::median)], 130));
    // avg: 128 + (10600 / 5) / 100 = 149.2
    EXPECT_TRUE(is(g.per[unsigned(Agg::avg)], 746, 5)) << fx(g.per[unsigned(Agg::avg)]);
    // trimmed: drop 0 and 10000, mean of 100, 200, 300 = 200 -> 130
    EXPECT_TRUE(is(g.per[unsigned(Agg::trimmed)], 130));
    EXPECT_TRUE(is(g.per[unsigned(Agg::max)], 228));
    EXPECT_EQ(g.long_raw, (std::vector<i64>{500 + 25600 + 300, 500 + 25600, 500 + 25600 + 10000, 500 + 25600 + 100,
                                            500 + 25600 + 200}));
}

TEST(MeasureEngine, NegativeDifferencesAreReported) {
    FakeHw hw;
    FakeMeasure mp;
    Sink sink;
    MeasureConfig cfg = config(KernelId::empty);
    cfg.warmup = 0;
    cfg.reps = 1;
    mp.noise = {300, 0};  // the short run was disturbed
    Vec<ReadGroup> groups = tsc_groups();
    EXPECT_EQ(measure_run(hw, mp, cfg, groups, sink), Errc::ok);
    ASSERT_EQ(sink.results.size(), 1u);
    EXPECT_TRUE(is(sink.results[0].per[unsigned(Agg::median)], -3));
}

TEST(MeasureEngine, DifferencesWrapAtTheCounterWidth) {
    FakeHw hw;
    hw.pmc_works = true;
    FakeMeasure mp;
    mp.widths = {48, 64};
    mp.base = (u64(1) << 48) - 100;  // start just below 2^48: the end wraps past 0
    mp.cost = {3, 128};
    Sink sink;
    Vec<ReadGroup> groups;
    ReadGroup& g = groups.emplace();
    g.reads.push(make_read(CounterAccess::rdpmc, 0, 48, "INST_RETIRED.ANY_P", "PMC0"));
    g.reads.push(make_read(CounterAccess::rdtsc, 0, 64, "tsc", "TSC"));
    EXPECT_EQ(measure_run(hw, mp, config(KernelId::nop), groups, sink), Errc::ok);
    ASSERT_EQ(sink.results.size(), 2u);
    EXPECT_EQ(sink.results[0].event, "INST_RETIRED.ANY_P");
    EXPECT_EQ(sink.results[0].counter, "PMC0");
    EXPECT_TRUE(is(sink.results[0].per[unsigned(Agg::median)], 3)) << fx(sink.results[0].per[1]);
    EXPECT_TRUE(is(sink.results[1].per[unsigned(Agg::median)], 128));
    EXPECT_EQ(hw.rdpmc_calls, 1) << "the RDPMC read is probed once per CPU and group";
}

TEST(MeasureEngine, MoreGroupsMeanMoreRunsAndRecordsSayWhich) {
    FakeHw hw;
    hw.pmc_works = true;
    FakeMeasure mp;
    mp.cost = {1, 2, 3, 4, 5, 6};
    Sink sink;
    Vec<ReadGroup> groups;
    const char* names[3][3] = {{"A", "B", nullptr}, {"C", nullptr, nullptr}, {"D", "E", "F"}};
    for (auto& row : names) {
        ReadGroup& g = groups.emplace();
        for (int i = 0; i < 3 && row[i]; ++i) {
            char ctr[8];
            format_to(ctr, sizeof ctr, "PMC%d", i);
            g.reads.push(make_read(CounterAccess::rdpmc, u32(i), 48, row[i], ctr));
        }
    }
    MeasureConfig cfg = config(KernelId::nop, {0, 1});
    EXPECT_EQ(measure_run(hw, mp, cfg, groups, sink), Errc::ok);
    ASSERT_TRUE(sink.failures.empty());
    ASSERT_EQ(sink.results.size(), 12u);  // (2 + 1 + 3 events) x 2 CPUs
    std::vector<std::string> order;
    for (const Got& g : sink.results) {
        order.push_back(std::to_string(g.cpu) + ":" + std::to_string(g.run) + ":" + g.event);
        EXPECT_EQ(g.runs, 3u);
        EXPECT_EQ(g.apic, g.cpu * 2);
    }
    EXPECT_EQ(order, (std::vector<std::string>{"0:0:A", "0:0:B", "0:1:C", "0:2:D", "0:2:E", "0:2:F", "1:0:A", "1:0:B",
                                               "1:1:C", "1:2:D", "1:2:E", "1:2:F"}));
    // Read i of every group costs cost[i] per instruction.
    EXPECT_TRUE(is(sink.results[1].per[1], 2));
    EXPECT_TRUE(is(sink.results[5].per[1], 3));
    // Each group ran separately on each CPU: 3 groups x 2 CPUs x 2 versions x 14 runs.
    EXPECT_EQ(mp.executions, 3u * 2 * 2 * 14);
    EXPECT_EQ(mp.code_allocs, 6);  // two versions per group, generated once for both CPUs
    // Each CPU's noise probe first (measure/noise.h), then one call per (CPU, group).
    EXPECT_EQ(hw.ran_on, (std::vector<u32>{0, 1, 0, 0, 0, 1, 1, 1}));
    ASSERT_EQ(sink.progress_calls.size(), 6u);
    EXPECT_EQ(sink.progress_calls[5], (std::pair<u32, u32>{5, 6}));
    EXPECT_TRUE(mp.live.empty());
}

TEST(MeasureEngine, RdpmcKernelIsProbedAndReportedUnsupported) {
    FakeHw hw;
    FakeMeasure mp;
    Sink sink;
    Vec<ReadGroup> groups = tsc_groups();
    EXPECT_EQ(measure_run(hw, mp, config(KernelId::rdpmc, {0, 1}), groups, sink), Errc::unsupported);
    ASSERT_EQ(sink.failures.size(), 2u);
    EXPECT_EQ(sink.failures[0], "kernel 'rdpmc' is not supported on CPU 0: RDPMC 0x0 raised #UD (invalid opcode)");
    EXPECT_EQ(sink.codes[0], Errc::unsupported);
    EXPECT_EQ(mp.executions, 0u) << "no generated code may run after a failed probe";
    EXPECT_TRUE(sink.results.empty());
    EXPECT_TRUE(mp.live.empty());
}

TEST(MeasureEngine, OptionalBenchmarksAreSkippedNotFailed) {
    FakeHw hw;
    FakeMeasure mp;
    Sink sink;
    MeasureConfig cfg = config(KernelId::rdpmc);
    cfg.benches[0].optional = true;
    BenchInstance& b = cfg.benches.emplace();
    b.kernel = &kernel_info(KernelId::rdmsr);
    b.optional = true;
    Vec<ReadGroup> groups = tsc_groups();
    EXPECT_EQ(measure_run(hw, mp, cfg, groups, sink), Errc::ok);
    EXPECT_TRUE(sink.failures.empty());
    ASSERT_EQ(sink.skips.size(), 1u);
    ASSERT_EQ(sink.results.size(), 1u);
    EXPECT_EQ(sink.results[0].bench, "rdmsr");
    EXPECT_TRUE(is(sink.results[0].per[1], 128));
}

TEST(MeasureEngine, FaultingCounterReadIsCaughtBeforeCodeRuns) {
    FakeHw hw;
    FakeMeasure mp;
    Sink sink;
    Vec<ReadGroup> groups;
    groups.emplace().reads.push(make_read(CounterAccess::rdpmc, 0x40000000, 48, "INST_RETIRED.ANY", "FIXED0"));
    groups.emplace().reads.push(make_read(CounterAccess::rdmsr, 0x309, 48, "INST_RETIRED.ANY", "FIXED0"));
    EXPECT_EQ(measure_run(hw, mp, config(KernelId::nop), groups, sink), Errc::fault);
    ASSERT_EQ(sink.failures.size(), 2u);
    EXPECT_EQ(sink.failures[0],
              "nop on CPU 0 (run 0): event 'INST_RETIRED.ANY' on FIXED0: RDPMC 0x40000000 raised #UD (invalid opcode)");
    EXPECT_EQ(sink.failures[1],
              "nop on CPU 0 (run 1): event 'INST_RETIRED.ANY' on FIXED0: RDMSR 0x309 raised #GP (general protection): "
              "the CPU does not implement this MSR");
    EXPECT_EQ(mp.executions, 0u);
}

TEST(MeasureEngine, EmittedWritesAreProbed) {
    FakeHw hw;
    FakeMeasure mp;
    Sink sink;
    Vec<ReadGroup> groups = tsc_groups();
    groups[0].start_writes.push(MsrValue{0x38F, 0x70000000F});
    groups[0].stop_writes.push(MsrValue{0x38F, 0});
    EXPECT_EQ(measure_run(hw, mp, config(KernelId::nop), groups, sink), Errc::ok);
    EXPECT_EQ(hw.writes, (std::vector<std::pair<u32, u64>>{{0x38F, 0x70000000F}, {0x38F, 0}}));
    hw.reject_writes = true;
    hw.writes.clear();
    mp.executions = 0;
    EXPECT_EQ(measure_run(hw, mp, config(KernelId::nop), groups, sink), Errc::fault);
    EXPECT_EQ(mp.executions, 0u);
}

namespace {
struct HookLog {
    std::string log;
    int fail_start_at = -1;
    int starts = 0;
};
Status hook_setup(Hw&, void* c) {
    static_cast<HookLog*>(c)->log += "S";
    return ok_status();
}
Status hook_start(Hw&, void* c) {
    auto* h = static_cast<HookLog*>(c);
    h->log += "[";
    if (h->starts++ == h->fail_start_at) return Error::make(Errc::fault, "GLOBAL_CTRL write failed");
    return ok_status();
}
Status hook_stop(Hw&, void* c) {
    static_cast<HookLog*>(c)->log += "]";
    return ok_status();
}
Status hook_teardown(Hw&, void* c) {
    static_cast<HookLog*>(c)->log += "T";
    return ok_status();
}
}  // namespace

TEST(MeasureEngine, HooksRunAroundEveryRun) {
    FakeHw hw;
    FakeMeasure mp;
    Sink sink;
    HookLog h;
    Vec<ReadGroup> groups = tsc_groups();
    groups[0].hooks = GroupHooks{hook_setup, hook_start, hook_stop, hook_teardown, &h};
    MeasureConfig cfg = config(KernelId::nop);
    cfg.warmup = 1;
    cfg.reps = 2;
    EXPECT_EQ(measure_run(hw, mp, cfg, groups, sink), Errc::ok);
    EXPECT_EQ(h.log, "S[][][][][][]T");
    // A failing start hook stops the runs; interrupts are restored; teardown still runs.
    h = HookLog{};
    h.fail_start_at = 2;
    mp.masks = mp.restores = 0;
    EXPECT_EQ(measure_run(hw, mp, cfg, groups, sink), Errc::fault);
    EXPECT_EQ(h.log, "S[][][T");
    EXPECT_EQ(mp.masks, mp.restores);
    EXPECT_EQ(sink.failures.back(), "nop on CPU 0 (run 0): GLOBAL_CTRL write failed");
}

namespace {
struct OrderLog {
    std::string log;
    size_t writes_at_setup = 99;
};
Status order_setup(Hw& hw, void* c) {
    auto* o = static_cast<OrderLog*>(c);
    o->writes_at_setup = static_cast<FakeHw&>(hw).writes.size();
    o->log += "S";
    return ok_status();
}
Status order_teardown(Hw&, void* c) {
    static_cast<OrderLog*>(c)->log += "T";
    return ok_status();
}
}  // namespace

TEST(MeasureEngine, SetupRunsBeforeTheProbesAndTeardownAfterAFailedProbe) {
    // Setup saves the state pmulab will restore (the PMU layer saves its MSRs there):
    // the probes' WRMSRs must come after it. A failing probe still gets teardown.
    FakeHw hw;
    FakeMeasure mp;
    Sink sink;
    OrderLog o;
    Vec<ReadGroup> groups = tsc_groups();
    groups[0].start_writes.push(MsrValue{0x38F, 1});
    groups[0].hooks.setup = order_setup;
    groups[0].hooks.teardown = order_teardown;
    groups[0].hooks.ctx = &o;
    EXPECT_EQ(measure_run(hw, mp, config(KernelId::nop), groups, sink), Errc::ok);
    EXPECT_EQ(o.writes_at_setup, 0u);
    EXPECT_EQ(hw.writes.size(), 1u);
    EXPECT_EQ(o.log, "ST");
    hw.reject_writes = true;
    o = OrderLog{};
    mp.executions = 0;
    EXPECT_EQ(measure_run(hw, mp, config(KernelId::nop), groups, sink), Errc::fault);
    EXPECT_EQ(o.log, "ST");
    EXPECT_EQ(mp.executions, 0u);
}

TEST(MeasureEngine, LvtModeIsPassedToThePlatform) {
    FakeHw hw;
    FakeMeasure mp;
    Sink sink;
    MeasureConfig cfg = config(KernelId::nop);
    cfg.irq = IrqMode::lvt;
    Vec<ReadGroup> groups = tsc_groups();
    EXPECT_EQ(measure_run(hw, mp, cfg, groups, sink), Errc::ok);
    EXPECT_EQ(mp.last_mode, IrqMode::lvt);
    mp.lvt_unsupported = true;
    EXPECT_EQ(measure_run(hw, mp, cfg, groups, sink), Errc::unsupported);
    EXPECT_EQ(sink.failures.back(), "nop on CPU 0 (run 0): --irq lvt: the local APIC is disabled");
}

TEST(MeasureEngine, AllocationFailureIsReportedAndNothingLeaks) {
    FakeHw hw;
    FakeMeasure mp;
    mp.fail_alloc = true;
    Sink sink;
    Vec<ReadGroup> groups = tsc_groups();
    EXPECT_EQ(measure_run(hw, mp, config(KernelId::pointer_chase, {0}, 1 << 20), groups, sink), Errc::io);
    ASSERT_EQ(sink.failures.size(), 1u);
    EXPECT_EQ(sink.failures[0],
              "cannot allocate 1048576 bytes for pointer_chase: AllocatePages failed: EFI_OUT_OF_RESOURCES");
    EXPECT_TRUE(mp.live.empty());
}

TEST(MeasureEngine, BuffersAndKernelRegisters) {
    FakeHw hw;
    FakeMeasure mp;
    Sink sink;
    Vec<ReadGroup> groups = tsc_groups();
    EXPECT_EQ(measure_run(hw, mp, config(KernelId::pointer_chase, {0}, 8192), groups, sink), Errc::ok);
    EXPECT_EQ(mp.data_allocs, 1);
    ASSERT_EQ(mp.frame_gprs.size(), size_t(kGprCount));
    EXPECT_NE(mp.frame_gprs[kRsi], 0u);
    EXPECT_EQ(mp.frame_gprs[kRsi] % 4096, 0u) << "chase starts at node 0 of the page-aligned buffer";
    EXPECT_EQ(measure_run(hw, mp, config(KernelId::load_stream, {0}, 65536), groups, sink), Errc::ok);
    EXPECT_NE(mp.frame_gprs[kRbx], 0u);
    EXPECT_EQ(mp.frame_gprs[kRsi], 0u);
    EXPECT_EQ(mp.frame_gprs[kRdi], 65535u);
    MeasureConfig cfg = config(KernelId::branch_random);
    cfg.seed = 12345;
    EXPECT_EQ(measure_run(hw, mp, cfg, groups, sink), Errc::ok);
    EXPECT_EQ(mp.frame_gprs[kR8], 12345u);
    EXPECT_EQ(mp.frame_gprs[kR9], kLcgMul);
    EXPECT_EQ(mp.frame_gprs[kR10], kLcgAdd);
    EXPECT_TRUE(mp.live.empty());
    EXPECT_TRUE(sink.failures.empty());
}

TEST(MeasureEngine, BadSizeInConfigIsAUsageError) {
    FakeHw hw;
    FakeMeasure mp;
    Sink sink;
    Vec<ReadGroup> groups = tsc_groups();
    EXPECT_EQ(measure_run(hw, mp, config(KernelId::store_stream, {0}, 12288), groups, sink), Errc::invalid_argument);
    EXPECT_EQ(sink.failures[0],
              "--size 12288: store_stream needs a power of two (its offset wraps with a mask), e.g. 4K, 64K, 1M");
}

TEST(MeasureEngine, CodeSizeLimit) {
    FakeHw hw;
    FakeMeasure mp;
    Sink sink;
    mp.big_body.assign(16, 0x90);
    MeasureConfig cfg = config(KernelId::nop);
    cfg.unroll = 600000;  // 1,200,000 copies x 16 bytes > 16 MiB
    Vec<ReadGroup> groups = tsc_groups();
    EXPECT_EQ(measure_run(hw, mp, cfg, groups, sink), Errc::invalid_argument);
    ASSERT_EQ(sink.failures.size(), 1u);
    EXPECT_EQ(sink.failures[0],
              "nop: 1200000 copies of a 16-byte body exceed the 16 MiB limit for generated code (lower "
              "--unroll, raise --loop)");
    EXPECT_TRUE(mp.live.empty());
}

TEST(MeasureEngine, CpuOutOfRangeFailsThatCpuOnly) {
    FakeHw hw(2);
    FakeMeasure mp;
    Sink sink;
    Vec<ReadGroup> groups = tsc_groups();
    EXPECT_NE(measure_run(hw, mp, config(KernelId::nop, {0, 7}), groups, sink), Errc::ok);
    EXPECT_EQ(sink.results.size(), 1u);
    ASSERT_EQ(sink.failures.size(), 1u);
    EXPECT_EQ(sink.failures[0], "nop on CPU 7 (run 0): no logical processor 7");
}

// ---- kernels catalogue and buffers

TEST(Kernels, CatalogueIsConsistent) {
    EXPECT_EQ(kKernelCount, 17u);
    for (unsigned i = 0; i < kKernelCount; ++i) {
        EXPECT_EQ(unsigned(kKernels[i].id), i);
        EXPECT_EQ(find_kernel(StrView(kKernels[i].name)), &kKernels[i]);
    }
    EXPECT_EQ(find_kernel(StrView("NOP")), nullptr);
    EXPECT_EQ(kernel_info(KernelId::empty).instructions, 0u);
    EXPECT_EQ(kernel_info(KernelId::add_indep).instructions, 8u);
    EXPECT_EQ(kernel_info(KernelId::branch_random).instructions, 6u);
    EXPECT_EQ(kernel_info(KernelId::store_stream).instructions, 3u);
    EXPECT_EQ(kernel_info(KernelId::cpuid).instructions, 2u);
    // The documented body has one instruction per ';'-separated statement that is not a label.
    for (const KernelInfo& k : kKernels) {
        std::string body = k.body;
        unsigned n = 0;
        size_t pos = 0;
        while (pos <= body.size() && !body.empty()) {
            size_t e = body.find(';', pos);
            std::string stmt = body.substr(pos, e == std::string::npos ? std::string::npos : e - pos);
            // Strip "1:" style labels.
            size_t colon = stmt.find(':');
            if (colon != std::string::npos) stmt = stmt.substr(colon + 1);
            if (stmt.find_first_not_of(' ') != std::string::npos) ++n;
            if (e == std::string::npos) break;
            pos = e + 1;
        }
        if (k.id == KernelId::branch_pred || k.id == KernelId::branch_random)
            EXPECT_EQ(n, 8u) << "both paths of the branch body: 8 statements, 6 executed";
        else EXPECT_EQ(n, k.instructions) << k.name;
    }
}

TEST(Kernels, BufferSizes) {
    const KernelInfo& chase = kernel_info(KernelId::pointer_chase);
    const KernelInfo& stream = kernel_info(KernelId::load_stream);
    EXPECT_TRUE(check_buffer_size(chase, 4096).ok());
    EXPECT_TRUE(check_buffer_size(chase, 48 * 1024).ok());
    EXPECT_TRUE(check_buffer_size(chase, 256u << 20).ok());
    EXPECT_FALSE(check_buffer_size(chase, 0).ok());
    EXPECT_FALSE(check_buffer_size(chase, 2048).ok());
    EXPECT_FALSE(check_buffer_size(chase, 5000).ok());
    EXPECT_FALSE(check_buffer_size(chase, (256u << 20) + 4096).ok());
    EXPECT_TRUE(check_buffer_size(stream, 65536).ok());
    EXPECT_FALSE(check_buffer_size(stream, 48 * 1024).ok());
    EXPECT_TRUE(check_buffer_size(kernel_info(KernelId::nop), 12345).ok()) << "no buffer: size ignored";
    EXPECT_STREQ(check_buffer_size(chase, 5000).error().msg,
                 "--size 5000: pointer_chase needs a multiple of 4K between 4K and 256M bytes");
}

TEST(Kernels, PointerChaseIsOneDeterministicCycle) {
    for (u64 size : {u64(128), u64(4096), u64(65536), u64(1) << 20}) {
        std::vector<u8> a(size), b(size);
        u64 base = 0x100000000ull;  // addresses need not be the buffer's own
        build_pointer_chase(a.data(), size, base, 42);
        build_pointer_chase(b.data(), size, base, 42);
        EXPECT_EQ(a, b);
        EXPECT_EQ(walk_pointer_chase(a.data(), size, base), size / 64) << size;
        build_pointer_chase(b.data(), size, base, 43);
        EXPECT_EQ(walk_pointer_chase(b.data(), size, base), size / 64);
        if (size > 128) EXPECT_NE(a, b) << "another seed gives another order";
    }
    // A broken chain is detected.
    std::vector<u8> c(4096);
    build_pointer_chase(c.data(), 4096, 0, 1);
    u64 self = 64 * 5;
    std::memcpy(&c[64 * 5], &self, 8);  // node 5 -> itself
    EXPECT_EQ(walk_pointer_chase(c.data(), 4096, 0), 0u);
}

TEST(Kernels, XorShiftIsTheReferenceSequence) {
    // xorshift64* from Vigna, "An experimental exploration of Marsaglia's xorshift
    // generators, scrambled" (2016), with seed 1.
    XorShift64Star r(1);
    u64 x = 1;
    for (int i = 0; i < 5; ++i) {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        EXPECT_EQ(r.next(), x * 0x2545F4914F6CDD1Dull);
    }
    XorShift64Star z(0);  // zero seed would be stuck at 0: replaced by the default
    EXPECT_NE(z.next(), 0u);
}
