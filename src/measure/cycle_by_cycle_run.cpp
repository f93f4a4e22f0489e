// Cycle-by-cycle measurements: the driver (cycle_by_cycle.h). Every run set is one
// measure_run of the engine in basic mode (the empty version, 0 copies, and the version
// with U copies), with the cycles counter preloaded for cycle c by the run's start hook.
#include "measure/cycle_by_cycle_ctx.h"
#include "measure/noise.h"

namespace pmulab {

namespace {

// A cycle no run reaches: the armed counter (at least 40 bits wide: v2 Core 2) does not
// overflow, the runs count freely.
constexpr u64 kNever = (u64(1) << 38) - 1;

i64 round_frac(Frac f) {
    const u64 half = f.den / 2;
    if (f.num >= 0) return i64((u64(f.num) + half) / f.den);
    return -i64((u64(0) - u64(f.num) + half) / f.den);
}

// The aggregated counts of one measure_run, per read, of both versions.
struct Probe {
    i64 empty[kMaxReads] = {};
    i64 code[kMaxReads] = {};
};

class ProbeSink final : public MeasureSink {
public:
    ProbeSink(MeasureSink& outer, const ReadGroup& g, Agg agg, Probe* p) : outer_(outer), g_(g), agg_(agg), p_(p) {}
    void result(const MeasureConfig&, const MeasureResult& r) override {
        usize i = usize(r.read - g_.reads.data());
        if (i >= kMaxReads) return;
        p_->empty[i] = round_frac(r.short_sum.get(agg_));
        p_->code[i] = round_frac(r.long_sum.get(agg_));
        ++results;
    }
    void failure(const Error& e) override {
        outer_.failure(e);
        failed = true;
    }
    void skipped(const Error& e) override {
        outer_.failure(e);
        failed = true;
    }
    bool failed = false;
    usize results = 0;

private:
    MeasureSink& outer_;
    const ReadGroup& g_;
    Agg agg_;
    Probe* p_;
};

// One measurement: what every run set of it shares.
struct Cbc {
    Hw& hw;
    MeasurePlatform& mp;
    const MeasureConfig& cfg;
    CbcPlan& plan;
    const BenchInstance& bench;
    u32 cpu;
    MeasureSink& sink;
    Errc worst = Errc::ok;
    void fail(const Error& e) {
        sink.failure(e);
        if (worst == Errc::ok || worst == Errc::unsupported) worst = e.code;
    }
};

void copy_config(const MeasureConfig& a, MeasureConfig* b) {
    b->unroll = a.unroll, b->loop = a.loop, b->reps = a.reps, b->warmup = a.warmup, b->agg = a.agg;
    b->irq = a.irq, b->serialize = a.serialize, b->seed = a.seed, b->align_offset = a.align_offset;
    b->initial_warmup = a.initial_warmup, b->drain_frontend = a.drain_frontend, b->r14_size = a.r14_size;
    b->no_mem = a.no_mem, b->timeout_s = a.timeout_s;
    b->basic = true;  // the empty benchmark (0 copies) and the code (U copies)
}

// The run set of run `run` frozen at the end of `cycle`; false when it failed (reported).
bool run_at(Cbc& x, u32 run, u64 cycle, Probe* out) {
    CbcGroupCtx& c = *x.plan.ctx[run];
    Result<u64> pre = cbc_preload(x.plan.info, c, cycle);
    if (!pre.ok()) {
        x.fail(pre.error());
        return false;
    }
    c.preload = pre.value();
    c.mp = &x.mp;
    MeasureConfig one;
    copy_config(x.cfg, &one);
    one.benches.push(x.bench);
    one.cpus.push(x.cpu);
    const Vec<ReadGroup>& groups = x.plan.runs[run]->groups;
    ProbeSink ps(x.sink, groups[0], x.cfg.agg, out);
    Errc e = measure_run(x.hw, x.mp, one, groups, ps);
    if (e != Errc::ok && (x.worst == Errc::ok || x.worst == Errc::unsupported)) x.worst = e;
    return !ps.failed && e == Errc::ok && ps.results == groups[0].reads.size();
}

// The first cycle whose instructions count (read 0 of the code version) reaches n, in
// [lo, hi] (bisection: the counts never decrease with c); hi when none does.
bool first_reaching(Cbc& x, u32 run, i64 n, u64 lo, u64 hi, u64* at) {
    while (lo < hi) {
        u64 mid = lo + (hi - lo) / 2;
        Probe p;
        if (!run_at(x, run, mid, &p)) return false;
        if (p.code[x.plan.inst_read] >= n) hi = mid;
        else lo = mid + 1;
    }
    *at = lo;
    return true;
}

// The harness's instructions between the copies and the end read of the instructions
// counter (codegen.cpp's tail: the JMP to it, the serialising instruction, the MOV of
// the counter's index into ECX before RDPMC/RDMSR): nanoBench's constant of the same kind.
i64 tail_instructions(Cbc& x) {
    NoiseCaps caps;
    auto probe = [&] { noise_probe(x.hw, &caps); };
    CpuCall pc = cpu_call(probe);
    (void)x.mp.run_on_cpu(x.hw, x.cpu, pc.fn, pc.ctx);
    SerializeMode m = caps.probed ? effective_serialize(x.cfg.serialize, caps) : x.cfg.serialize;
    return 1 + (m == SerializeMode::cpuid ? 2 : 1) + 1;
}

// The window of run `run` (each run has its own: its reads before the code), [first,
// last] in cycles since counting's start: nanoBench's empty benchmark says where the code
// starts; the freeze is checked on the way.
struct Window {
    u64 first = 0, last = 0, instructions = 0;
};
bool find_window(Cbc& x, u32 run, bool end_to_end, Window* out) {
    Probe live, zero;
    if (!run_at(x, run, kNever, &live) || !run_at(x, run, 0, &zero)) return false;
    const u32 ir = x.plan.inst_read;
    const i64 empty = live.empty[ir], code = live.code[ir];
    if (code - empty <= 0) {
        x.fail(Error::make(Errc::invalid_argument,
                           "%s on CPU %u: the code retired no instructions (%lld with it, %lld without): nothing to "
                           "measure cycle by cycle",
                           bench_name(x.bench), x.cpu, (long long)code, (long long)empty));
        return false;
    }
    if (zero.code[ir] >= code) {
        x.fail(Error::make(Errc::unsupported,
                           "cannot measure cycle by cycle on CPU %u: the counters kept counting after the armed cycles "
                           "counter overflowed (FREEZE_PERFMON_ON_PMI set, %lld instructions counted, as many as "
                           "without the overflow): this PMU does not freeze them (a hypervisor's virtual PMU?)",
                           x.cpu, (long long)zero.code[ir]));
        return false;
    }
    const i64 tail = tail_instructions(x);
    const i64 loop = x.cfg.loop > 1 ? 2 * i64(x.cfg.loop) : 0;  // the empty version's DEC/JNZ
    const i64 before = empty - tail - loop;                     // the harness's, from the start read
    const i64 through = code - tail;                            // ... and the code's
    if (before <= 0) {
        x.fail(Error::make(Errc::internal, "cycle-by-cycle: %lld harness instructions before the code",
                           (long long)before));
        return false;
    }
    u64 hi = 64;
    for (Probe p; hi < kNever; hi *= 2) {  // a cycle by which everything retired
        if (!run_at(x, run, hi, &p)) return false;
        if (p.code[ir] >= code) break;
    }
    u64 start = 0, end = 0;
    if (!end_to_end && !first_reaching(x, run, before, 0, hi, &start)) return false;
    if (!first_reaching(x, run, end_to_end ? code : through, start, hi, &end)) return false;
    out->first = end_to_end ? 0 : start + 1;
    out->last = end;
    out->instructions = u64(end_to_end ? code : through - before);
    return true;
}

// Every cycle of run `run`'s window (as long as run 0's): the increments of its events.
void sweep(Cbc& x, u32 run, u64 first, CbcResult* out) {
    const usize n = out->events, cycles = usize(out->last - out->first + 1);
    Probe prev, cur;
    bool prev_ok = first == 0 || run_at(x, run, first - 1, &prev);  // before cycle 0: nothing
    for (usize i = 0; i < cycles; ++i) {
        bool ok = run_at(x, run, first + i, &cur);
        for (usize e = 0; e < n; ++e) {
            if (x.plan.run_of[e] != run) continue;
            const u32 r = x.plan.read_of[e];
            out->inc[i * n + e] = cur.code[r] - prev.code[r];
        }
        if (!ok || !prev_ok) out->valid[i] = 0;
        prev = cur;
        prev_ok = ok;
    }
}

}  // namespace

Errc cbc_measure(Hw& hw, MeasurePlatform& mp, const MeasureConfig& cfg, const CbcOptions& opts, CbcPlan& plan,
                 const BenchInstance& bench, u32 cpu, MeasureSink& sink, CbcResult* out) {
    Cbc x{hw, mp, cfg, plan, bench, cpu, sink};
    out->cpu = cpu;
    out->bench = &bench;
    out->events = plan.run_of.size();
    out->inc.clear(), out->valid.clear();
    for (u32 run = 0; run < plan.runs.size(); ++run) {
        Window w;
        if (!find_window(x, run, opts.end_to_end, &w)) {  // reported: no record
            out->valid.clear();
            return x.worst == Errc::ok ? Errc::internal : x.worst;
        }
        if (run == 0) {
            out->first = w.first, out->last = w.last, out->code_instructions = w.instructions;
            const usize cycles = usize(w.last - w.first + 1);
            out->inc.resize(cycles * out->events);
            out->valid.resize(cycles);
            for (usize i = 0; i < cycles; ++i) out->valid[i] = 1;
        }
        sweep(x, run, w.first, out);
    }
    return x.worst;
}

}  // namespace pmulab
