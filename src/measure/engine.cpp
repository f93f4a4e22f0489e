// The measurement engine: buffers, code generation, the job loop over benchmarks, CPUs
// and groups, and the statistics (see measure.h for the method; the work on the
// measuring CPU is engine_worker.cpp).
#include "measure/measure.h"

#include "base/box.h"
#include "base/fmt.h"
#include "measure/engine_worker.h"
#include "measure/noise.h"
#include "x86/msr_addr.h"

namespace pmulab {

namespace {

// Pages from the platform, returned on every path.
class Pages {
public:
    Pages(MeasurePlatform& mp) : mp_(mp) {}
    Pages(const Pages&) = delete;
    Pages& operator=(const Pages&) = delete;
    ~Pages() { release(); }
    Status alloc(usize bytes, bool exec, const char* what) {
        release();
        Result<void*> r = mp_.alloc_pages(bytes, exec);
        if (!r.ok()) {
            Error e = r.error();
            Error out = Error::make(e.code, "cannot allocate %llu bytes for %s: %s", (unsigned long long)bytes, what,
                                    e.msg);
            return out;
        }
        p_ = r.value();
        n_ = bytes;
        return ok_status();
    }
    // Physically contiguous, with data() + offset aligned to `align` (R14's area).
    Status alloc_aligned(usize bytes, u64 align, u64 offset, const char* what) {
        release();
        Result<void*> r = mp_.alloc_aligned(bytes, align, offset);
        if (!r.ok())
            return Error::make(r.error().code, "cannot allocate %llu bytes at alignment %llu for %s: %s",
                               (unsigned long long)bytes, (unsigned long long)align, what, r.error().msg);
        p_ = r.value();
        n_ = bytes;
        return ok_status();
    }
    void release() {
        if (p_) mp_.free_pages(p_, n_);
        p_ = nullptr;
        n_ = 0;
    }
    u8* data() const { return static_cast<u8*>(p_); }
    usize size() const { return n_; }

private:
    MeasurePlatform& mp_;
    void* p_ = nullptr;
    usize n_ = 0;
};

usize round_pages(usize n) { return (n + 4095) & ~usize(4095); }

// What the engine measures, whatever its origin: a body and the blocks around it,
// with the registers it starts from. Built-in kernels and user code both become one.
struct BenchCode {
    CodeSpan body, init, late_init, one_time_init;
    u64 regs[kGprCount] = {};
    u16 carry = 0;  // registers that continue from run to run (the walking kernels)
};

struct GroupCode {
    Pages pages[3];
    Region regions[2];
    Region once;  // the one-time-init region (once.code null when there is none)
    explicit GroupCode(MeasurePlatform& mp) : pages{Pages(mp), Pages(mp), Pages(mp)} {}
};

// The region's code at `offset` bytes into its pages (--code-offset: nanoBench's codeOffset,
// which keeps the code's lines out of the cache sets an experiment measures).
Status place(Pages& pages, const Vec<u8>& code, Region* r, const RegionLayout& lay, u32 offset) {
    PMULAB_TRY(pages.alloc(round_pages(offset + code.size()), true, "generated code"));
    u8* dst = pages.data() + offset;
    for (usize i = 0; i < code.size(); ++i) dst[i] = code[i];
    r->code = dst;
    r->size = code.size();
    r->code_size = lay.code_size;
    r->exit_offset = lay.exit_offset;
    r->body_offset = lay.body_offset;
    r->init_offset = lay.init_offset;
    r->late_init_offset = lay.late_init_offset;
    return ok_status();
}

Status generate_group(const MeasureConfig& cfg, SerializeMode mode, const BenchCode& bc, const ReadGroup& g,
                      GroupCode* out) {
    u64 copies[2] = {cfg.basic ? 0 : cfg.unroll, cfg.basic ? cfg.unroll : 2 * cfg.unroll};
    for (int w = 0; w < 2; ++w) {
        RegionSpec spec;
        spec.body = bc.body.data;
        spec.body_len = bc.body.len;
        spec.copies = copies[w];
        spec.loop = cfg.loop > 1;
        spec.serialize = mode;
        spec.group = &g;
        spec.init = bc.init;
        spec.late_init = bc.late_init;
        spec.align_offset = cfg.align_offset;
        spec.drain_frontend = cfg.drain_frontend;
        spec.carry = bc.carry;
        spec.no_mem = cfg.no_mem;
        spec.no_mem_loop = cfg.loop;
        spec.marker_pad_copies = w == 0 ? copies[1] - copies[0] : 0;
        Vec<u8> code;
        Result<RegionLayout> lay = emit_region(spec, &code);
        if (!lay.ok()) return lay.error();
        Region& r = out->regions[w];
        PMULAB_TRY(place(out->pages[w], code, &r, lay.value(), cfg.code_offset));
        r.body_len = lay.value().copy_len;  // markers expanded
        r.copies = copies[w];
        r.loop = cfg.loop;
        r.init_len = bc.init.len;
        r.late_init_len = bc.late_init.len;
    }
    if (bc.one_time_init.len) {
        RegionSpec spec;
        spec.init = bc.one_time_init;
        Vec<u8> code;
        Result<RegionLayout> lay = emit_region(spec, &code);
        if (!lay.ok()) return lay.error();
        PMULAB_TRY(place(out->pages[2], code, &out->once, lay.value(), cfg.code_offset));
        out->once.block = CodeBlock::one_time_init;
        out->once.init_len = bc.one_time_init.len;
    }
    return ok_status();
}

static_assert(kDataAreaRegs[0] == kRsp && kDataAreaRegs[1] == kRdi && kDataAreaRegs[2] == kRsi &&
                  kDataAreaRegs[3] == kRbp && kDataAreaRegs[4] == kR14,
              "MeasureResult::area_reg follows kDataAreaRegs");

// User code's scratch areas (docs/measure.md): RSP, RDI, RSI, RBP (1 MiB each) and
// R14 (cfg.r14_size), each register pointing into the middle of its area, and each area
// between two guard pages that are not present while the code runs (a run past either
// end raises #PF instead of writing the neighbour's memory).
struct Scratch {
    static constexpr usize kGuard = kScratchGuard;
    MeasurePlatform& mp;
    Pages areas[5];
    explicit Scratch(MeasurePlatform& m) : mp(m), areas{Pages(m), Pages(m), Pages(m), Pages(m), Pages(m)} {}
    Scratch(const Scratch&) = delete;
    Scratch& operator=(const Scratch&) = delete;
    ~Scratch() {
        for (Pages& a : areas)
            if (a.data()) (void)guard(a, false);
    }
    Status guard(const Pages& a, bool on) {
        PMULAB_TRY(mp.guard_pages(a.data(), kGuard, on));
        return mp.guard_pages(a.data() + a.size() - kGuard, kGuard, on);
    }
    Status alloc(const MeasureConfig& cfg, u64 regs[kGprCount], u64* r14) {
        static constexpr u8 kRegs[5] = {kRsp, kRdi, kRsi, kRbp, kR14};
        static const char* const kWhat[5] = {"the code's stack (RSP)", "RDI's scratch area", "RSI's scratch area",
                                             "RBP's scratch area", "R14's scratch area (--r14-size)"};
        // R14's first: the largest area takes its place in the memory map before the small ones.
        static constexpr u8 kOrder[5] = {4, 0, 1, 2, 3};
        for (unsigned i : kOrder) {
            u64 bytes = kRegs[i] == kR14 ? cfg.r14_size : kScratchBytes;
            if (!areas[i].data()) {
                if (kRegs[i] == kR14)
                    PMULAB_TRY(areas[i].alloc_aligned(usize(bytes) + 2 * kGuard, cfg.r14_align, kGuard, kWhat[i]));
                else PMULAB_TRY(areas[i].alloc(usize(bytes) + 2 * kGuard, false, kWhat[i]));
                PMULAB_TRY(guard(areas[i], true));
            }
            u64 at = u64(reinterpret_cast<uintptr_t>(areas[i].data() + kGuard));
            regs[kRegs[i]] = at + bytes / 2;
            if (kRegs[i] == kR14) *r14 = at;
        }
        return ok_status();
    }
};

Errc worse(Errc a, Errc b) {
    // Unsupported (3) outranks nothing else; any failure outranks unsupported.
    if (a == Errc::ok) return b;
    if (b == Errc::ok) return a;
    if (a == Errc::unsupported) return b;
    return a;
}

// One measure_run: its inputs, the per-run scratch sized once on the BSP (APs cannot
// allocate), each CPU's probed noise sources, and the progress and worst error so far.
struct Job {
    Hw& hw;
    MeasurePlatform& mp;
    const MeasureConfig& cfg;
    const Vec<ReadGroup>& groups;
    MeasureSink& sink;
    Errc worst = Errc::ok;
    u32 total = 0, done = 0, announced = ~u32(0);
    Vec<i64> raw[2];     // [rep * nreads + read], the worker's output
    Vec<i64> column[2];  // one read's values, per version
    Vec<i64> scratch;
    Box<RegionFrame> frame;
    Box<NoiseRecord> noise;
    Vec<NoiseCaps> caps;  // by index into cfg.cpus

    Job(Hw& h, MeasurePlatform& m, const MeasureConfig& c, const Vec<ReadGroup>& g, MeasureSink& s)
        : hw(h), mp(m), cfg(c), groups(g), sink(s) {}
    void fail(const Error& e) {
        sink.failure(e);
        worst = worse(worst, e.code);
    }
    // Before each (benchmark, CPU, group) job, once.
    void announce(const BenchInstance& b, u32 cpu, u32 run) {
        if (announced == done) return;
        announced = done;
        sink.progress(done, total, b, cpu, run);
    }
    // Counts a benchmark's jobs (all CPUs) as done when it cannot run at all.
    void fail_bench(const Error& e) {
        fail(e);
        done += u32(cfg.cpus.size() * groups.size());
    }
};

// One benchmark of the job: its code and registers, its buffer, and the code of every
// group, generated once for all CPUs that serialise alike (LFENCE, or CPUID where
// LFENCE cannot be made dispatch-serialising).
struct BenchRun {
    const BenchInstance& b;
    const char* name;
    BenchCode bc;
    Pages buffer;
    u64 r14 = 0;
    Vec<Box<GroupCode>> code_by_mode[2];
    bool code_ok = true;
    BenchRun(const BenchInstance& bench, MeasurePlatform& mp) : b(bench), name(bench_name(bench)), buffer(mp) {}
    ~BenchRun() {
        // The groups' pages go first, in the order they were allocated, then the buffer.
        for (Vec<Box<GroupCode>>& code : code_by_mode)
            for (Box<GroupCode>& gc : code) gc.reset();
    }
};

// Step 1: the scratch, the platform, and each CPU's noise sources and serialisation
// (probed on it once, noise.h).
Status prepare_job(Job& j) {
    usize max_reads = 0;
    for (const ReadGroup& g : j.groups) max_reads = max_of(max_reads, g.reads.size());
    for (Vec<i64>& r : j.raw) r.resize(usize(j.cfg.reps) * max_reads);
    for (Vec<i64>& c : j.column) c.resize(j.cfg.reps);
    j.scratch.resize(j.cfg.reps);
    j.frame = make_box<RegionFrame>();
    PMULAB_TRY(j.mp.prepare());
    j.mp.set_job_timeout(j.cfg.timeout_s);
    j.caps.resize(j.cfg.cpus.size());
    for (usize ci = 0; ci < j.cfg.cpus.size(); ++ci) {
        NoiseCaps* nc = &j.caps[ci];
        auto probe = [&] { noise_probe(j.hw, nc); };
        CpuCall pc = cpu_call(probe);
        (void)j.mp.run_on_cpu(j.hw, j.cfg.cpus[ci], pc.fn, pc.ctx);  // unreachable: the job says so later
    }
    j.noise = make_box<NoiseRecord>();
    return ok_status();
}

// A built-in kernel's code and registers; its buffer, on the BSP, is shared by every
// CPU and group.
Status prepare_kernel(Job& j, BenchRun& br) {
    const KernelInfo& k = *br.b.kernel;
    br.bc.body = j.mp.kernel_body(k.id);
    if (!br.bc.body.data && k.instructions)
        return Error::make(Errc::internal, "kernel '%s' has no code in this build", k.name);
    KernelParams params;
    params.seed = j.cfg.seed;
    if (k.buffer != KernelBuffer::none) {
        PMULAB_TRY(check_buffer_size(k, br.b.size));
        PMULAB_TRY(br.buffer.alloc(usize(br.b.size), false, k.name));
        params.buffer = u64(reinterpret_cast<uintptr_t>(br.buffer.data()));
        params.size = br.b.size;
        // Stream buffers keep whatever the pages hold: the values never matter.
        if (k.buffer == KernelBuffer::chase)
            build_pointer_chase(br.buffer.data(), br.b.size, params.buffer, j.cfg.seed);
    }
    kernel_init_registers(k, params, br.bc.regs);
    br.bc.carry = kernel_carried_registers(k);
    return ok_status();
}

// Step 2: what the benchmark measures (user code with its scratch areas, or a kernel).
Status prepare_bench(Job& j, Scratch& scratch_areas, BenchRun& br) {
    if (br.b.user) {
        const UserCode& u = *br.b.user;
        br.bc.body = CodeSpan{u.body.data(), u.body.size()};
        br.bc.init = CodeSpan{u.init.data(), u.init.size()};
        br.bc.late_init = CodeSpan{u.late_init.data(), u.late_init.size()};
        br.bc.one_time_init = CodeSpan{u.one_time_init.data(), u.one_time_init.size()};
        PMULAB_TRY(scratch_areas.alloc(j.cfg, br.bc.regs, &br.r14));
    } else {
        PMULAB_TRY(prepare_kernel(j, br));
    }
    for (unsigned r = 0; r < kGprCount; ++r) j.frame->gpr[r] = br.bc.regs[r];
    j.frame->loop = j.cfg.loop;
    return ok_status();
}

// Step 3: the code of every group for one serialisation, generated on first use;
// null once generating failed (reported).
Vec<Box<GroupCode>>* code_for(Job& j, BenchRun& br, SerializeMode mode) {
    Vec<Box<GroupCode>>& code = br.code_by_mode[mode == SerializeMode::cpuid ? 1 : 0];
    if (!code.empty() || !br.code_ok) return br.code_ok ? &code : nullptr;
    for (const ReadGroup& g : j.groups) {
        GroupCode& gc = *code.push(make_box<GroupCode>(j.mp));
        Status s = generate_group(j.cfg, mode, br.bc, g, &gc);
        if (!s.ok()) {
            j.fail(s.error().with_context("%s", br.name));
            br.code_ok = false;
            return nullptr;
        }
    }
    return &code;
}

// The kernel's own instructions, once through the fault-safe Hw layer.
Status probe_kernel(Job& j, const KernelInfo& k, u32 cpu) {
    Status probed = ok_status();
    auto probe = [&] {
        Result<u64> r = u64(0);
        if (k.needs == KernelNeeds::rdmsr_tsc) r = j.hw.rdmsr(msr::IA32_TIME_STAMP_COUNTER);
        else if (k.needs == KernelNeeds::rdpmc0) r = j.hw.rdpmc(0);
        if (!r.ok()) probed = r.error();
    };
    CpuCall pc = cpu_call(probe);
    Status rs = j.mp.run_on_cpu(j.hw, cpu, pc.fn, pc.ctx);
    if (rs.ok()) rs = probed;
    if (!rs.ok())
        return Error::make(Errc::unsupported, "kernel '%s' is not supported on CPU %u: %s", k.name, cpu,
                           rs.error().msg);
    return ok_status();
}

// One (CPU, group) job: where it ran and with which code.
struct GroupJob {
    usize ci = 0;  // index into cfg.cpus
    u32 cpu = 0;
    u64 apic = 0;
    CpuTopology topo;
    SiblingState sibling = SiblingState::none;
    usize gi = 0;  // index into groups
    const GroupCode* code = nullptr;
    bool noise = false;    // the CPU's noise sources were probed (the record has provenance)
    u8 prefetch_plan = 0;  // --prefetchers off: the plan the worker took (WorkerState)
};

// Both versions' statistics of one read, and the per-iteration difference.
Status summarise_read(Job& j, const GroupJob& gj, usize r, MeasureResult* res) {
    usize n = j.groups[gj.gi].reads.size();
    for (int which = 0; which < 2; ++which) {
        for (u32 i = 0; i < j.cfg.reps; ++i) j.column[which][i] = j.raw[which][usize(i) * n + r];
        Result<Summary> sum = summarize(j.column[which].data(), j.cfg.reps, j.scratch.data());
        if (!sum.ok()) return sum.error();
        (which ? res->long_sum : res->short_sum) = sum.value();
    }
    for (unsigned a = 0; a < kAggCount; ++a) {
        Result<Frac> f = frac_sub_div(res->long_sum.get(Agg(a)), res->short_sum.get(Agg(a)), res->iterations);
        if (!f.ok()) return f.error();
        res->per_iter[a] = f.value();
    }
    return ok_status();
}

// Step 5: one result per read of a measured group.
void summarise_group(Job& j, const BenchRun& br, const GroupJob& gj) {
    const ReadGroup& g = j.groups[gj.gi];
    for (usize r = 0; r < g.reads.size(); ++r) {
        MeasureResult res;
        res.cpu = gj.cpu;
        res.apic_id = gj.apic;
        res.package = gj.topo.package;
        res.core = gj.topo.core;
        res.thread = gj.topo.thread;
        res.sibling = gj.sibling;
        res.bench = &br.b;
        res.run = u32(gj.gi);
        res.runs = u32(j.groups.size());
        res.read = &g.reads[r];
        res.short_copies = gj.code->regions[0].copies;
        res.long_copies = gj.code->regions[1].copies;
        res.iterations = (res.long_copies - res.short_copies) * j.cfg.loop;
        Status st = summarise_read(j, gj, r, &res);
        if (!st.ok()) {
            j.fail(st.error().with_context("%s on CPU %u, event '%s'", br.name, gj.cpu, g.reads[r].event));
            continue;
        }
        res.r14 = br.r14;
        for (unsigned a = 0; br.r14 && a < 5; ++a) {
            res.area_reg[a] = br.bc.regs[kDataAreaRegs[a]];
            res.area_size[a] = kDataAreaRegs[a] == kR14 ? j.cfg.r14_size : kScratchBytes;
        }
        res.noise = gj.noise ? j.noise.get() : nullptr;
        res.prefetch_plan = gj.prefetch_plan;
        res.region = &gj.code->regions[1];
        res.short_raw = j.column[0].data();
        res.long_raw = j.column[1].data();
        j.sink.result(j.cfg, res);
    }
}

// Step 4: one group on one CPU (the worker runs there), then its results.
void run_group_on_cpu(Job& j, const BenchRun& br, const GroupJob& gj, SerializeMode mode) {
    const GroupCode& code = *gj.code;
    WorkerState w{.hw = &j.hw,
                  .mp = &j.mp,
                  .cfg = &j.cfg,
                  .group = &j.groups[gj.gi],
                  .regions = {code.regions[0], code.regions[1]},
                  .once = (code.once.code && gj.gi == 0) ? &code.once : nullptr,
                  .frame = j.frame.get(),
                  .regs = br.bc.regs,
                  .carry = br.bc.carry,
                  .raw = {j.raw[0].data(), j.raw[1].data()},
                  .caps = gj.noise ? &j.caps[gj.ci] : nullptr,
                  .mode = mode,
                  .noise = j.noise.get()};
    auto work = [&] { worker_on_cpu(&w); };
    CpuCall wc = cpu_call(work);
    Status rs = j.mp.run_on_cpu(j.hw, gj.cpu, wc.fn, wc.ctx);
    if (rs.ok()) rs = w.status;
    if (!rs.ok()) {
        j.fail(rs.error().with_context("%s on CPU %u (run %u)", br.name, gj.cpu, unsigned(gj.gi)));
        return;
    }
    GroupJob done = gj;
    done.prefetch_plan = w.prefetch_plan;
    summarise_group(j, br, done);
}

// Every group of a benchmark on one CPU; false when its code could not be generated
// (the benchmark stops there).
bool run_bench_on_cpu(Job& j, BenchRun& br, usize ci) {
    const NoiseCaps& caps = j.caps[ci];
    SerializeMode mode = caps.probed ? effective_serialize(j.cfg.serialize, caps) : j.cfg.serialize;
    Vec<Box<GroupCode>>* code = code_for(j, br, mode);
    if (!code) return false;
    GroupJob gj;
    gj.ci = ci;
    gj.cpu = j.cfg.cpus[ci];
    Result<CpuTopology> topo = j.hw.topology(gj.cpu);
    gj.apic = topo.ok() ? topo.value().apic_id : 0;
    if (topo.ok()) gj.topo = topo.value();
    gj.sibling = j.mp.prepare_siblings(j.hw, gj.cpu);
    gj.noise = caps.probed;
    if (br.b.kernel && br.b.kernel->needs != KernelNeeds::nothing) {
        Status s = probe_kernel(j, *br.b.kernel, gj.cpu);
        if (!s.ok()) {
            if (br.b.optional) j.sink.skipped(s.error());
            else j.fail(s.error());
            j.done += u32(j.groups.size());
            return true;
        }
    }
    if (br.b.user) {  // code that may never end: only where the watchdog can stop it
        Status s = j.mp.can_stop(j.hw, gj.cpu);
        if (!s.ok()) {
            j.fail(s.error().with_context("%s on CPU %u", br.name, gj.cpu));
            j.done += u32(j.groups.size());
            return true;
        }
    }
    for (gj.gi = 0; gj.gi < j.groups.size(); ++gj.gi) {
        j.announce(br.b, gj.cpu, u32(gj.gi));
        ++j.done;
        gj.code = (*code)[gj.gi].get();
        run_group_on_cpu(j, br, gj, mode);
    }
    return true;
}

}  // namespace

Errc measure_run(Hw& hw, MeasurePlatform& mp, const MeasureConfig& cfg, const Vec<ReadGroup>& groups,
                 MeasureSink& sink) {
    Job j(hw, mp, cfg, groups, sink);
    if (groups.empty() || cfg.benches.empty() || cfg.cpus.empty() || cfg.reps == 0 || cfg.unroll == 0 ||
        cfg.loop == 0) {
        j.fail(Error::make(Errc::internal, "measure_run: empty configuration"));
        return j.worst;
    }
    j.total = u32(cfg.benches.size() * cfg.cpus.size() * groups.size());
    Scratch scratch_areas(mp);
    Status prep = prepare_job(j);
    if (!prep.ok()) {
        j.fail(prep.error());
        mp.finish();
        return j.worst;
    }
    for (const BenchInstance& b : cfg.benches) {
        BenchRun br(b, mp);
        // Announce the first job before building a (possibly large) buffer.
        j.announce(b, cfg.cpus[0], 0);
        Status s = prepare_bench(j, scratch_areas, br);
        if (!s.ok()) {
            j.fail_bench(s.error());
            continue;
        }
        for (usize ci = 0; ci < cfg.cpus.size(); ++ci)
            if (!run_bench_on_cpu(j, br, ci)) break;
    }
    mp.set_job_timeout(0);
    mp.finish();
    return j.worst;
}

}  // namespace pmulab
