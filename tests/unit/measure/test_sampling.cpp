// Sampling (`run --sample`, measure/sampling.h, commands/run_sample.cpp): the period
// syntax, the folding of RIPs into (block, offset), and the engine on simulated machines:
// with a period of 1 every counted instruction gives one sample at the next instruction,
// so each bucket of the body holds exactly its instruction's executions; with a period P
// the samples are exactly every P-th of that stream; everything the sampling touches
// (the PMU, the LVT entry, IA32_DEBUGCTL) is as it was afterwards.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "commands/measure_cmd.h"
#include "support/sim_cmd.h"
#include "support/sim_measure.h"

using namespace pmulab;
using namespace sim;

namespace {

SampleSpec parsed(const char* s) {
    SampleSpec sp;
    Status st = parse_sample_spec(StrView(s), &sp);
    EXPECT_TRUE(st.ok()) << s << ": " << (st.ok() ? "" : st.error().msg);
    return sp;
}

std::string event_of(const SampleSpec& sp) { return std::string(sp.event.ptr, sp.event.len); }

std::string parse_error(const char* s) {
    SampleSpec sp;
    Status st = parse_sample_spec(StrView(s), &sp);
    EXPECT_FALSE(st.ok()) << s;
    if (st.ok()) return "";
    EXPECT_EQ(st.error().code, Errc::invalid_argument) << s;
    return st.error().msg;
}

}  // namespace

TEST(SampleSpecParse, ThePeriodIsTheLastNumericField) {
    SampleSpec a = parsed("cycles:u:100003");
    EXPECT_EQ(event_of(a), "cycles:u");
    EXPECT_EQ(a.period, 100003u);
    EXPECT_TRUE(a.given);
    SampleSpec b = parsed("cycles:u");
    EXPECT_EQ(event_of(b), "cycles:u");
    EXPECT_EQ(b.period, 100019u) << "the default of cycles";
    EXPECT_FALSE(b.given);
    SampleSpec c = parsed("INST_RETIRED.ANY:7");
    EXPECT_EQ(event_of(c), "INST_RETIRED.ANY");
    EXPECT_EQ(c.period, 7u);
    SampleSpec d = parsed("cpu/event=0xc0,umask=0x00/:13");
    EXPECT_EQ(event_of(d), "cpu/event=0xc0,umask=0x00/");
    EXPECT_EQ(d.period, 13u);
    SampleSpec e = parsed("instructions:18446744073709551615");
    EXPECT_EQ(e.period, ~u64(0));
    // A field that is not a number stays part of the event.
    SampleSpec f = parsed("C0.00:k");
    EXPECT_EQ(event_of(f), "C0.00:k");
    EXPECT_EQ(f.period, 10007u);
}

TEST(SampleSpecParse, DefaultPeriodsArePrimesPerEvent) {
    EXPECT_EQ(sample_default_period(StrView("instructions")), 100003u);
    EXPECT_EQ(sample_default_period(StrView("INST_RETIRED.ANY")), 100003u);
    EXPECT_EQ(sample_default_period(StrView("cycles")), 100019u);
    EXPECT_EQ(sample_default_period(StrView("ref-cycles:k")), 100019u);
    EXPECT_EQ(sample_default_period(StrView("CPU_CLK_UNHALTED.THREAD")), 100019u);
    EXPECT_EQ(sample_default_period(StrView("branches")), 10007u);
    EXPECT_EQ(sample_default_period(StrView("branch-misses")), 1009u);
    EXPECT_EQ(sample_default_period(StrView("LONGEST_LAT_CACHE.MISS")), 1009u);
    EXPECT_EQ(sample_default_period(StrView("r01c2")), 10007u);
    for (u64 p : {100003u, 100019u, 10007u, 1009u})
        for (u64 d = 2; d * d <= p; ++d) EXPECT_NE(p % d, 0u) << p << " is not prime";
}

TEST(SampleSpecParse, BadPeriodsAndEmptyEventsAreUsageErrors) {
    const char* const kNoEvent = "--sample needs an event, e.g. --sample instructions or --sample cycles:100019";
    const std::pair<const char*, const char*> cases[] = {
        {"instructions:0",
         "--sample 'instructions:0': a period of 0; the period counts events between samples, at least 1"},
        {"instructions:18446744073709551616",
         "--sample 'instructions:18446744073709551616': the period 18446744073709551616 does not fit 64 bits"},
        {":7", kNoEvent},
        {"", kNoEvent},
    };
    for (auto [spec, msg] : cases) EXPECT_EQ(parse_error(spec), msg) << spec;
}

TEST(SampleFold, RipsFoldOverTheCopiesIntoBlockOffsets) {
    u8 code[1024] = {};
    Region r;
    r.code = code;
    r.size = r.code_size = 512;
    r.init_offset = 10, r.init_len = 5;
    r.late_init_offset = 100, r.late_init_len = 3;
    r.body_offset = 128, r.body_len = 4, r.copies = 10;
    const u64 base = u64(reinterpret_cast<uintptr_t>(code));
    SampleCounts c;
    c.size(4, 5, 3);
    c.add(&r, base + 128 + 4 * 7 + 2);  // copy 8, offset 2
    c.add(&r, base + 128 + 2);          // copy 1, offset 2
    c.add(&r, base + 128 + 4 * 9 + 3);  // the last copy's last byte
    c.add(&r, base + 12);               // init + 2
    c.add(&r, base + 102);              // late_init + 2
    c.add(&r, base + 127);              // the harness right before the copies
    c.add(&r, base + 128 + 40);         // right after them (the loop branch, the end reads)
    c.add(&r, base + 512);              // past the code: the return address
    c.add(&r, base - 1);                // below the region
    c.add(nullptr, base + 130);         // no region running
    EXPECT_EQ(c.samples, 10u);
    EXPECT_EQ(c.body[2], 2u);
    EXPECT_EQ(c.body[3], 1u);
    EXPECT_EQ(c.init[2], 1u);
    EXPECT_EQ(c.late_init[2], 1u);
    EXPECT_EQ(c.harness, 5u);
    FaultPlace p = sample_place(r, base + 128 + 4 * 5 + 1);
    EXPECT_EQ(p.block, CodeBlock::body);
    EXPECT_EQ(p.offset, 1u);
    EXPECT_EQ(p.copy, 5u);
    // The one-time-init region counts nothing: its RIPs are the harness's.
    r.block = CodeBlock::one_time_init;
    r.init_offset = 0;
    EXPECT_EQ(sample_place(r, base + 1).block, CodeBlock::harness);
    c.clear();
    EXPECT_EQ(c.samples + c.harness + c.body[2] + c.init[2], 0u);
    EXPECT_EQ(c.body.size(), 4u) << "clear keeps the sizes";
}

namespace {

// One sampled run on the engine: every sample's RIP in order and the folded counts.
struct Sampled {
    std::vector<u64> rips;    // offsets in the running region (SampleGroup::trace)
    std::map<u64, u64> body;  // offset -> count
    u64 harness = 0, samples = 0;
    Errc status = Errc::internal;
};

class NullSink final : public MeasureSink {
public:
    void result(const MeasureConfig&, const MeasureResult&) override {}
    void failure(const Error& e) override { ADD_FAILURE() << e.msg; }
    void skipped(const Error& e) override { ADD_FAILURE() << e.msg; }
};

struct Shape {
    std::vector<u8> body;
    u64 unroll = 10, loop = 1;
    u32 reps = 2, warmup = 1;
};

Sampled run_engine(SimMachine& m, u32 cpu, const char* spec, EventDialect d, u64 period, const Shape& sh) {
    Sampled out;
    simm::SimMeasure mp(m);
    RunOptions o;
    o.cfg.cpus.push(cpu);
    o.cfg.unroll = sh.unroll, o.cfg.loop = sh.loop, o.cfg.reps = sh.reps, o.cfg.warmup = sh.warmup;
    UserCode u;
    for (u8 b : sh.body) u.body.push(b);
    str_copy(u.name, sizeof u.name, "code");
    o.cfg.benches.emplace().user = &u;
    SampleSpec& sp = o.samples.emplace();
    sp.event = StrView(spec);
    sp.period = period;
    EventsForCpus set;
    probe_cpus(m, o.cfg.cpus, &set.probed);
    Result<Event> e = parse_event_spec(StrView(spec), d);
    EXPECT_TRUE(e.ok());
    if (!e.ok()) return out;
    set.events.push(e.value());
    EXPECT_TRUE(sample_mark(o, set).ok());
    Vec<Box<PmuPlan>> plans;
    Status s = plan_pmu_runs(set.probed, set.events, PmuRunOptions(), &plans);
    EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error().msg);
    if (!s.ok()) return out;
    RunSampling rs;
    s = sample_prepare(o, mp, plans, &rs);
    EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error().msg);
    if (!s.ok() || rs.groups.size() != 1) return out;
    SampleGroup& g = *rs.groups[0];
    std::vector<u64> trace(1 << 16);
    g.trace = trace.data();
    g.trace_cap = trace.size();
    NullSink sink;
    out.status = measure_run(m, mp, o.cfg, plans[0]->groups, sink);
    EXPECT_LE(g.trace_n, trace.size());
    out.rips.assign(trace.begin(), trace.begin() + g.trace_n);
    const SampleCounts& c = g.counts[0];
    for (usize i = 0; i < c.body.size(); ++i)
        if (c.body[i]) out.body[i] = c.body[i];
    out.harness = c.harness;
    out.samples = c.samples;
    return out;
}

// add rax, rbx; add rcx, rdx; add rsi, rdi; nop (offsets 0, 3, 6, 9).
const std::vector<u8> kStraight = {0x48, 0x01, 0xD8, 0x48, 0x01, 0xD1, 0x48, 0x01, 0xFE, 0x90};
// mov ecx, 5; L: add rax, rbx; dec ecx; jnz L (offsets 0, 5, 8, 10): 1 + 3 x 5 instructions.
const std::vector<u8> kLoop = {0xB9, 0x05, 0x00, 0x00, 0x00, 0x48, 0x01, 0xD8, 0xFF, 0xC9, 0x75, 0xF9};

struct MachineCase {
    const char* name;
    SimMachine (*make)();
    u32 cpu;
    EventDialect dialect;
};

SimMachine skylake1() { return intel_skylake(1); }
SimMachine icelake1() { return intel_icelake(1); }
SimMachine zen4_1() { return amd_zen4(1); }
SimMachine v1_1() { return intel_v1(1); }
SimMachine v3_1() { return intel_v3(1); }
SimMachine zen3_1() { return amd_zen3(1); }

const MachineCase kMachines[] = {
    {"skylake", skylake1, 0, EventDialect::intel},
    {"icelake", icelake1, 0, EventDialect::intel},
    {"alder_lake P core", intel_alder_lake, 0, EventDialect::intel},
    {"alder_lake E core", intel_alder_lake, 4, EventDialect::intel},
    {"zen4", zen4_1, 0, EventDialect::amd_zen},
    // No global control: the region's WRMSR sets EN, the handler stops and restarts each
    // counter (v1, Zen 3); v3's freeze clears GLOBAL_CTRL, which the handler sets again.
    {"intel_v1", v1_1, 0, EventDialect::intel},
    {"intel_v3", v3_1, 0, EventDialect::intel},
    {"zen3", zen3_1, 0, EventDialect::amd_zen},
};

// Runs: (warm-up + reps) x 2 versions; executions of a body instruction executed `per_copy`
// times per copy: (U + 2U) x loop x (warm-up + reps) x per_copy.
u64 executions(const Shape& sh, u64 per_copy) { return 3 * sh.unroll * sh.loop * (sh.warmup + sh.reps) * per_copy; }

}  // namespace

TEST(SampleEngine, PeriodOneSamplesEveryInstructionAtTheNextOne) {
    for (const MachineCase& mc : kMachines) {
        SCOPED_TRACE(mc.name);
        struct Body {
            const std::vector<u8>* code;
            u64 loop;
            std::map<u64, u64> per_copy;  // offset -> executions per copy
        };
        const Body bodies[] = {{&kStraight, 1, {{0, 1}, {3, 1}, {6, 1}, {9, 1}}},
                               {&kStraight, 3, {{0, 1}, {3, 1}, {6, 1}, {9, 1}}},
                               {&kLoop, 1, {{0, 1}, {5, 5}, {8, 5}, {10, 5}}}};
        u64 harness_per_run = 0;
        for (const Body& b : bodies) {
            SimMachine m = mc.make();
            Shape sh;
            sh.body = *b.code;
            sh.loop = b.loop;
            Sampled s = run_engine(m, mc.cpu, "instructions", mc.dialect, 1, sh);
            ASSERT_EQ(s.status, Errc::ok);
            std::map<u64, u64> want;
            u64 body = 0;
            for (auto [off, n] : b.per_copy) body += want[off] = executions(sh, n);
            EXPECT_EQ(s.body, want);
            EXPECT_EQ(s.samples, body + s.harness);
            EXPECT_EQ(s.rips.size(), s.samples);
            // The harness runs the same instructions in every run (6 runs), whatever the
            // body; the --loop adds its dec r15 / jnz per iteration.
            const u64 runs = 2 * (sh.warmup + sh.reps);
            ASSERT_EQ(s.harness % runs, 0u);
            if (b.loop == 1) {
                if (harness_per_run) EXPECT_EQ(s.harness / runs, harness_per_run);
                harness_per_run = s.harness / runs;
            } else {
                // R15 := loop (2 loads), then dec r15 / jnz once per iteration.
                EXPECT_EQ(s.harness, runs * (harness_per_run + 2 + 2 * sh.loop));
            }
        }
        EXPECT_EQ(harness_per_run, 21u) << "from the start WRMSR to the stop WRMSR, one read";
    }
}

TEST(SampleEngine, PeriodPTakesEveryPthInstructionOfTheStream) {
    for (const MachineCase& mc : kMachines) {
        SCOPED_TRACE(mc.name);
        for (const std::vector<u8>* code : {&kStraight, &kLoop}) {
            Shape sh;
            sh.body = *code;
            SimMachine m1 = mc.make();
            Sampled one = run_engine(m1, mc.cpu, "instructions", mc.dialect, 1, sh);
            for (u64 p : {7u, 13u, 101u}) {
                SCOPED_TRACE(p);
                SimMachine mp = mc.make();
                Sampled s = run_engine(mp, mc.cpu, "instructions", mc.dialect, p, sh);
                ASSERT_EQ(s.status, Errc::ok);
                ASSERT_EQ(s.rips.size(), one.rips.size() / p);
                for (usize k = 0; k < s.rips.size(); ++k)
                    ASSERT_EQ(s.rips[k], one.rips[(k + 1) * p - 1]) << "sample " << k;
                u64 body = 0;
                for (auto [off, n] : s.body) body += n;
                EXPECT_EQ(body + s.harness, s.samples);
            }
        }
    }
}

namespace {

struct Before {
    std::vector<PmuState> pmu;
    std::vector<u32> lvt;
    std::vector<u64> debugctl;
};
Before snapshot(SimMachine& m) {
    Before b;
    for (u32 i = 0; i < m.size(); ++i) {
        b.pmu.push_back(m.cpu(i).pmu_state());
        b.lvt.push_back(m.cpu(i).lvt_perf());
        b.debugctl.push_back(m.cpu(i).peek(0x1D9));
    }
    return b;
}
void expect_same(SimMachine& m, const Before& b) {
    for (u32 i = 0; i < m.size(); ++i) {
        EXPECT_EQ(diff_state(b.pmu[i], m.cpu(i).pmu_state()), "") << "CPU " << i;
        EXPECT_EQ(m.cpu(i).lvt_perf(), b.lvt[i]) << "CPU " << i;
        EXPECT_EQ(m.cpu(i).peek(0x1D9), b.debugctl[i]) << "CPU " << i;
        EXPECT_TRUE(m.cpu(i).violations().empty()) << "CPU " << i << ": " << m.cpu(i).violations()[0];
    }
}

}  // namespace

TEST(SampleCommand, RecordsPerCpuAndEventAndEverythingRestored) {
    SimMachine m = intel_alder_lake();
    m.cpu(0).set_lvt_perf(0x10000 | 0x2FE);  // masked, fixed delivery, vector 0xFE: put back as it was
    Before before = snapshot(m);
    simm::SimPlatform p(m);
    simm::Cmd c = simm::run_line(p, "run --json --code 4801d84801d14801fe90 --sample instructions:1 --sample "
                                    "branches:1 --events cycles --unroll 10 --reps 2 --warmup 0 --cpu 0");
    ASSERT_EQ(c.status, 0) << c.out;
    expect_same(m, before);
    std::vector<pmutest::Json> s = simm::of_type(c, "samples");
    ASSERT_EQ(s.size(), 2u) << c.out;
    EXPECT_EQ(s[0]["event"].s(), "instructions");
    EXPECT_EQ(s[0]["period"].u(), 1u);
    EXPECT_EQ(s[0]["bench"].s(), "code");
    EXPECT_EQ(s[0]["cpu"].u(), 0u);
    const pmutest::Json& b = s[0]["buckets"];
    ASSERT_EQ(b.items.size(), 4u);
    const u64 offsets[4] = {0, 3, 6, 9};
    for (usize i = 0; i < 4; ++i) {
        EXPECT_EQ(b[i]["block"].s(), "body");
        EXPECT_EQ(b[i]["offset"].u(), offsets[i]);
        EXPECT_EQ(b[i]["count"].u(), 60u) << "4 runs of 10 and 20 copies... 30 x 2 reps";
    }
    EXPECT_EQ(s[0]["samples"].u(), 240u + s[0]["harness"].u());
    EXPECT_EQ(s[1]["event"].s(), "branches");
    // The body has no branch; the harness jumps once per run to its 64-byte aligned tail.
    EXPECT_EQ(s[1]["samples"].u(), 4u);
    EXPECT_EQ(s[1]["harness"].u(), 4u);
    EXPECT_TRUE(s[1]["buckets"].items.empty());
    // The counted event is a result as before; the sampled ones are not.
    std::vector<pmutest::Json> r = simm::results(c);
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0]["event"].s(), "cycles");
}

TEST(SampleCommand, BadInputIsRefusedBeforeAnythingRuns) {
    struct Case {
        const char* line;
        int status;
        const char* message;
    };
    const Case cases[] = {
        {"--sample instructions:0", 2,
         "--sample 'instructions:0': a period of 0; the period counts events between samples, at least 1"},
        {"--sample instructions:281474976710656", 2,
         "CPU 0: cannot sample: period 281474976710656 does not fit the 48-bit counter (at most 281474976710655)"},
        {"--sample instructions --sample instructions:5", 2, "--sample: 'instructions' is sampled twice"},
    };
    for (const Case& k : cases) {
        SimMachine m = intel_skylake(1);
        Before before = snapshot(m);
        simm::SimPlatform p(m);
        simm::Cmd c = simm::run_line(p, std::string("run --json --code 90 ") + k.line);
        EXPECT_EQ(c.status, k.status) << k.line << "\n" << c.out;
        std::vector<pmutest::Json> e = simm::of_type(c, "error");
        ASSERT_EQ(e.size(), 1u) << c.out;
        EXPECT_EQ(e[0]["message"].s(), k.message);
        EXPECT_EQ(p.engine().executions, 0u) << k.line;
        expect_same(m, before);
    }
}
