// The measurement engine: buffers, code generation, the group/run loop on each
// CPU, and the statistics (see measure.h for the method).
#include "measure/measure.h"

#include "base/fmt.h"
#include "measure/topdown.h"
#include "measure/noise.h"
#include "x86/msr_addr.h"
#include "x86/msr_trace.h"

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
    void release() {
        if (p_) mp_.free_pages(p_, n_);
        p_ = nullptr;
        n_ = 0;
    }
    u8* data() const { return static_cast<u8*>(p_); }

private:
    MeasurePlatform& mp_;
    void* p_ = nullptr;
    usize n_ = 0;
};

usize round_pages(usize n) { return (n + 4095) & ~usize(4095); }

struct WorkerState {
    Hw* hw = nullptr;
    MeasurePlatform* mp = nullptr;
    const ReadGroup* group = nullptr;
    Region regions[2];
    const Region* once = nullptr;  // the one-time-init region, or null
    RegionFrame* frame = nullptr;
    const u64* regs = nullptr;  // initial registers (frame->gpr is reset from them)
    u32 reps = 0, warmup = 0, initial_warmup = 0, timeout_s = 0;
    IrqMode irq = IrqMode::cli;
    i64* raw[2] = {nullptr, nullptr};  // [rep * nreads + read]
    u16 carry = 0;
    const NoiseCaps* caps = nullptr;  // null: not probed (no provenance, no guard)
    SerializeMode mode = SerializeMode::lfence;
    NoiseRecord* noise = nullptr;
    Status status;
};

// Probes every emitted RDPMC/RDMSR/WRMSR once through the fault-safe Hw layer:
// only that layer catches #GP/#UD, a fault inside generated code would not be.
Status probe_group(Hw& hw, const ReadGroup& g) {
    for (const CounterRead& r : g.reads) {
        Result<u64> v = u64(0);
        if (r.kind == CounterAccess::rdpmc) v = hw.rdpmc(r.index);
        else if (r.kind == CounterAccess::rdmsr) v = hw.rdmsr(r.index);
        if (!v.ok()) return v.error().with_context("event '%s' on %s", r.event, r.counter);
    }
    const Vec<MsrValue>* writes[2] = {&g.start_writes, &g.stop_writes};
    for (const Vec<MsrValue>* ws : writes)
        for (const MsrValue& w : *ws) PMULAB_TRY(hw.wrmsr(w.msr, w.value));
    return ok_status();
}

const char* vector_name(u64 v) {
    switch (v) {
        case 0: return "#DE (divide error)";
        case 1: return "#DB (debug)";
        case 3: return "#BP (breakpoint)";
        case 4: return "#OF (overflow)";
        case 5: return "#BR (bound range)";
        case 6: return "#UD (invalid opcode)";
        case 7: return "#NM (device not available)";
        case 10: return "#TS (invalid TSS)";
        case 11: return "#NP (segment not present)";
        case 12: return "#SS (stack fault)";
        case 13: return "#GP (general protection)";
        case 14: return "#PF (page fault)";
        case 16: return "#MF (x87 floating-point)";
        case 17: return "#AC (alignment check)";
        case 19: return "#XM (SIMD floating-point)";
        default: return "an exception";
    }
}

// The error for a region that faulted (frame->faulted). It is built on the measuring
// CPU, often an AP, so it formats into fixed buffers: allocating there would call the
// firmware's pool allocator from an AP, which changes the BSP's TPL behind its back.
Error fault_error(const Region& r, const RegionFrame& f, u32 timeout_s) {
    u64 code = u64(reinterpret_cast<uintptr_t>(r.code));
    usize off = usize(f.fault_rip - code);
    FaultPlace p = locate_fault(r, off);
    char where[96];
    if (p.block == CodeBlock::body)
        format_to(where, sizeof where, "offset %llu of the body (copy %llu of %llu)", (unsigned long long)p.offset,
                  (unsigned long long)(p.copy + 1), (unsigned long long)r.copies);
    else if (p.block == CodeBlock::harness)
        format_to(where, sizeof where, "offset %llu of the generated harness", (unsigned long long)off);
    else
        format_to(where, sizeof where, "offset %llu of the %s block", (unsigned long long)p.offset,
                  code_block_name(p.block));
    char extra[160];
    usize n = 0;
    extra[0] = 0;
    // Traps (SDM Vol. 3A §6.5): the saved RIP is the instruction after the one that trapped.
    if (f.fault_vector == 1 || f.fault_vector == 3 || f.fault_vector == 4)
        n += format_to(extra + n, sizeof extra - n,
                       ", a trap: the place is the instruction after the one that raised it");
    if (f.fault_vector == 14)
        n += format_to(extra + n, sizeof extra - n, ", CR2 0x%llx", (unsigned long long)f.fault_cr2);
    if (f.fault_vector == 10 || f.fault_vector == 11 || f.fault_vector == 12 || f.fault_vector == 13 ||
        f.fault_vector == 14 || f.fault_vector == 17)
        n += format_to(extra + n, sizeof extra - n, ", error code 0x%llx", (unsigned long long)f.fault_error);
    Error e;
    if (f.fault_vector == kWatchdogVector)
        e = Error::make(Errc::invalid_argument,
                        "code did not finish within %u s (--timeout): pmulab's watchdog stopped it (NMI) at %s, "
                        "RIP 0x%llx",
                        timeout_s, where, (unsigned long long)f.fault_rip);
    else
        e = Error::make(Errc::invalid_argument, "code raised %s (vector %llu) at %s, RIP 0x%llx%s",
                        vector_name(f.fault_vector), (unsigned long long)f.fault_vector, where,
                        (unsigned long long)f.fault_rip, extra);
    e.vector = u8(f.fault_vector);  // the record's "vector" (a usage error: the code is the user's)
    e.has_vector = true;
    return e;
}

// --trace-msr: the accesses the region performs itself, in its order (codegen.cpp):
// the start writes and the start reads, or the end reads and the stop writes.
void trace_region(MsrTrace* t, const ReadGroup& g, bool end) {
    if (!end)
        for (const MsrValue& w : g.start_writes) t->code(TraceOp::wrmsr, w.msr, w.value);
    for (const CounterRead& r : g.reads) {
        if (r.kind == CounterAccess::rdpmc) t->code(TraceOp::rdpmc, r.index, 0);
        else if (r.kind == CounterAccess::rdmsr) t->code(TraceOp::rdmsr, r.index, 0);
    }
    if (end)
        for (const MsrValue& w : g.stop_writes) t->code(TraceOp::wrmsr, w.msr, w.value);
}

// One run of a region with interrupts masked and the group's start/stop hooks.
Status run_once_traced(WorkerState* c, const Region& region, MsrTrace* trace) {
    const GroupHooks& h = c->group->hooks;
    Hw& hw = *c->hw;
    for (unsigned r = 0; r < kGprCount; ++r)
        if (!(c->carry & (1u << r))) c->frame->gpr[r] = c->regs[r];
    c->frame->faulted = 0;
    IrqSaved saved;
    PMULAB_TRY(c->mp->irq_mask(c->irq, &saved));
    // The vector state is changed only while interrupts are masked, so that no
    // firmware interrupt handler ever runs with pmulab's CR4/XCR0.
    VectorSaved vs;
    Status s = c->mp->vector_enter(&vs);
    bool vec = s.ok();
    if (s.ok() && h.start) s = h.start(hw, h.ctx);
    if (s.ok()) {
        bool reads = trace && region.block != CodeBlock::one_time_init;
        if (reads) trace_region(trace, *c->group, false);
        c->mp->execute(region, c->frame);
        if (reads) trace_region(trace, *c->group, true);
    }
    if (s.ok() && h.stop) s = h.stop(hw, h.ctx);
    if (vec) c->mp->vector_leave(vs);
    c->mp->irq_restore(saved);
    PMULAB_TRY(s);
    if (c->frame->faulted) return fault_error(region, *c->frame, c->timeout_s);
    return ok_status();
}

// One run, bracketed for --trace-msr (identical runs are shown once, with their count).
Status run_once(WorkerState* c, const Region& region) {
    MsrTrace* trace = c->hw->msr_trace();
    if (trace) trace->run_begin();
    Status s = run_once_traced(c, region, trace);
    if (trace) trace->run_end();
    return s;
}

// The warm-up and measured runs of both versions.
Status run_group(WorkerState* c) {
    const ReadGroup& g = *c->group;
    usize n = g.reads.size();
    if (c->once) PMULAB_TRY(run_once(c, *c->once));
    for (u32 i = 0; i < c->initial_warmup; ++i) PMULAB_TRY(run_once(c, c->regions[0]));
    for (int which = 0; which < 2; ++which) {
        for (u32 i = 0; i < c->warmup + c->reps; ++i) {
            PMULAB_TRY(run_once(c, c->regions[which]));
            if (i < c->warmup) continue;
            i64* out = c->raw[which] + usize(i - c->warmup) * n;
            for (usize r = 0; r < n; ++r) {
                // Modulo the counter width. A difference of 2^63 or more cannot be a
                // count (a counter that went backwards): it stays visible as negative.
                u64 d = (c->frame->end[r] - c->frame->start[r]) & low_mask(g.reads[r].width);
                if (g.reads[r].metric) d = topdown_read_delta(g, r, c->frame->start, c->frame->end);
                out[r] = i64(d);
            }
        }
    }
    return ok_status();
}

// Runs on the measuring CPU: setup (e.g. save and program the PMU), probes, the
// runs, teardown (after setup, whatever happened). Setup comes first so that it
// saves the state from before pmulab touched anything, the probes' WRMSRs included.
void worker_on_cpu(WorkerState* c) {
    const ReadGroup& g = *c->group;
    Hw& hw = *c->hw;
    const GroupHooks& h = g.hooks;
    c->mp->serialize();
    // The noise guard brackets everything: FREEZE_WHILE_SMM and DE_CFG[1] hold for every
    // run, and the SMI/APERF/MPERF window covers the whole job.
    NoiseGuard guard;
    Status s = c->caps ? guard.begin(hw, *c->caps, c->mode, c->noise) : ok_status();
    if (!s.ok()) {
        c->status = s;
        return;
    }
    if (h.setup) s = h.setup(hw, h.ctx);
    if (s.ok()) s = probe_group(hw, g);
    if (s.ok()) s = run_group(c);
    if (h.teardown) {
        Status t = h.teardown(hw, h.ctx);
        if (s.ok()) s = t;
    }
    if (c->caps) {
        Status n = guard.end(c->noise);
        if (s.ok()) s = n;
    }
    c->status = s;
}

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

Status place(Pages& pages, const Vec<u8>& code, Region* r, const RegionLayout& lay) {
    PMULAB_TRY(pages.alloc(round_pages(code.size()), true, "generated code"));
    u8* dst = pages.data();
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
        PMULAB_TRY(place(out->pages[w], code, &r, lay.value()));
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
        PMULAB_TRY(place(out->pages[2], code, &out->once, lay.value()));
        out->once.block = CodeBlock::one_time_init;
        out->once.init_len = bc.one_time_init.len;
    }
    return ok_status();
}

// User code's scratch areas (docs/measure.md): RSP, RDI, RSI, RBP (1 MiB each) and
// R14 (cfg.r14_size), each register pointing into the middle of its area.
struct Scratch {
    Pages areas[5];
    explicit Scratch(MeasurePlatform& mp) : areas{Pages(mp), Pages(mp), Pages(mp), Pages(mp), Pages(mp)} {}
    Status alloc(const MeasureConfig& cfg, u64 regs[kGprCount], u64* r14) {
        static constexpr u8 kRegs[5] = {kRsp, kRdi, kRsi, kRbp, kR14};
        static const char* const kWhat[5] = {"the code's stack (RSP)", "RDI's scratch area", "RSI's scratch area",
                                             "RBP's scratch area", "R14's scratch area (--r14-size)"};
        for (unsigned i = 0; i < 5; ++i) {
            u64 bytes = kRegs[i] == kR14 ? cfg.r14_size : kScratchBytes;
            if (!areas[i].data()) PMULAB_TRY(areas[i].alloc(usize(bytes), false, kWhat[i]));
            u64 at = u64(reinterpret_cast<uintptr_t>(areas[i].data()));
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

}  // namespace

Errc measure_run(Hw& hw, MeasurePlatform& mp, const MeasureConfig& cfg, const Vec<ReadGroup>& groups,
                 MeasureSink& sink) {
    Errc worst = Errc::ok;
    auto fail = [&](const Error& e) {
        sink.failure(e);
        worst = worse(worst, e.code);
    };
    if (groups.empty() || cfg.benches.empty() || cfg.cpus.empty() || cfg.reps == 0 || cfg.unroll == 0 ||
        cfg.loop == 0) {
        fail(Error::make(Errc::internal, "measure_run: empty configuration"));
        return worst;
    }
    u32 total = u32(cfg.benches.size() * cfg.cpus.size() * groups.size());
    u32 done = 0;
    u32 announced = ~u32(0);
    auto announce = [&](const BenchInstance& b, u32 cpu, u32 run) {
        if (announced == done) return;
        announced = done;
        sink.progress(done, total, b, cpu, run);
    };
    // Per-run scratch, sized once on the BSP (APs cannot allocate).
    usize max_reads = 0;
    for (const ReadGroup& g : groups) max_reads = max_of(max_reads, g.reads.size());
    Vec<i64> raw[2];
    raw[0].resize(usize(cfg.reps) * max_reads);
    raw[1].resize(usize(cfg.reps) * max_reads);
    Vec<i64> column[2], scratch;
    column[0].resize(cfg.reps);
    column[1].resize(cfg.reps);
    scratch.resize(cfg.reps);
    RegionFrame* frame = new RegionFrame();

    Status prep = mp.prepare();
    if (!prep.ok()) {
        fail(prep.error());
        delete frame;
        return worst;
    }
    mp.set_job_timeout(cfg.timeout_s);
    Scratch scratch_areas(mp);
    // Each CPU's noise sources and serialisation, probed on it once (noise.h).
    Vec<NoiseCaps> caps;
    caps.resize(cfg.cpus.size());
    for (usize ci = 0; ci < cfg.cpus.size(); ++ci) {
        NoiseCaps* nc = &caps[ci];
        auto probe = [&] { noise_probe(hw, nc); };
        CpuCall pc = cpu_call(probe);
        (void)mp.run_on_cpu(hw, cfg.cpus[ci], pc.fn, pc.ctx);  // unreachable: the job says so later
    }
    NoiseRecord* noise = new NoiseRecord();

    for (const BenchInstance& b : cfg.benches) {
        const char* name = bench_name(b);
        BenchCode bc;
        Pages buffer(mp);
        u64 r14 = 0;
        // Announce the first job before building a (possibly large) buffer.
        announce(b, cfg.cpus[0], 0);
        if (b.user) {
            const UserCode& u = *b.user;
            bc.body = CodeSpan{u.body.data(), u.body.size()};
            bc.init = CodeSpan{u.init.data(), u.init.size()};
            bc.late_init = CodeSpan{u.late_init.data(), u.late_init.size()};
            bc.one_time_init = CodeSpan{u.one_time_init.data(), u.one_time_init.size()};
            Status s = scratch_areas.alloc(cfg, bc.regs, &r14);
            if (!s.ok()) {
                fail(s.error());
                done += u32(cfg.cpus.size() * groups.size());
                continue;
            }
        } else {
            const KernelInfo& k = *b.kernel;
            bc.body = mp.kernel_body(k.id);
            if (!bc.body.data && k.instructions) {
                fail(Error::make(Errc::internal, "kernel '%s' has no code in this build", k.name));
                done += u32(cfg.cpus.size() * groups.size());
                continue;
            }
            // The buffer, on the BSP, shared by every CPU and group.
            KernelParams params;
            params.seed = cfg.seed;
            if (k.buffer != KernelBuffer::none) {
                Status s = check_buffer_size(k, b.size);
                if (s.ok()) s = buffer.alloc(usize(b.size), false, k.name);
                if (!s.ok()) {
                    fail(s.error());
                    done += u32(cfg.cpus.size() * groups.size());
                    continue;
                }
                params.buffer = u64(reinterpret_cast<uintptr_t>(buffer.data()));
                params.size = b.size;
                // Stream buffers keep whatever the pages hold: the values never matter.
                if (k.buffer == KernelBuffer::chase)
                    build_pointer_chase(buffer.data(), b.size, params.buffer, cfg.seed);
            }
            kernel_init_registers(k, params, bc.regs);
            bc.carry = kernel_carried_registers(k);
        }
        for (unsigned r = 0; r < kGprCount; ++r) frame->gpr[r] = bc.regs[r];
        frame->loop = cfg.loop;

        // The code for every group, generated once for all CPUs that serialise alike
        // (LFENCE, or CPUID where LFENCE cannot be made dispatch-serialising).
        Vec<GroupCode*> code_by_mode[2];
        bool code_ok = true;
        auto code_for = [&](SerializeMode mode) -> Vec<GroupCode*>* {
            Vec<GroupCode*>& code = code_by_mode[mode == SerializeMode::cpuid ? 1 : 0];
            if (!code.empty() || !code_ok) return code_ok ? &code : nullptr;
            for (const ReadGroup& g : groups) {
                GroupCode* gc = new GroupCode(mp);
                code.push(gc);
                Status s = generate_group(cfg, mode, bc, g, gc);
                if (!s.ok()) {
                    fail(s.error().with_context("%s", name));
                    code_ok = false;
                    return nullptr;
                }
            }
            return &code;
        };
        for (usize ci = 0; code_ok && ci < cfg.cpus.size(); ++ci) {
            u32 cpu = cfg.cpus[ci];
            SerializeMode mode = caps[ci].probed ? effective_serialize(cfg.serialize, caps[ci]) : cfg.serialize;
            Vec<GroupCode*>* codep = code_for(mode);
            if (!codep) break;
            Vec<GroupCode*>& code = *codep;
            Result<CpuTopology> topo = hw.topology(cpu);
            u64 apic = topo.ok() ? topo.value().apic_id : 0;
            if (b.kernel && b.kernel->needs != KernelNeeds::nothing) {
                const KernelInfo& k = *b.kernel;
                // The kernel's own instructions, once through the fault-safe Hw layer.
                Status probed = ok_status();
                auto probe = [&] {
                    Result<u64> r = u64(0);
                    if (k.needs == KernelNeeds::rdmsr_tsc) r = hw.rdmsr(msr::IA32_TIME_STAMP_COUNTER);
                    else if (k.needs == KernelNeeds::rdpmc0) r = hw.rdpmc(0);
                    if (!r.ok()) probed = r.error();
                };
                CpuCall pc = cpu_call(probe);
                Status rs = mp.run_on_cpu(hw, cpu, pc.fn, pc.ctx);
                if (rs.ok()) rs = probed;
                if (!rs.ok()) {
                    Error e = Error::make(Errc::unsupported, "kernel '%s' is not supported on CPU %u: %s", k.name, cpu,
                                          rs.error().msg);
                    if (b.optional) sink.skipped(e);
                    else fail(e);
                    done += u32(groups.size());
                    continue;
                }
            }
            for (usize gi = 0; gi < groups.size(); ++gi) {
                const ReadGroup& g = groups[gi];
                announce(b, cpu, u32(gi));
                ++done;
                WorkerState w;
                w.hw = &hw;
                w.mp = &mp;
                w.group = &g;
                w.regions[0] = code[gi]->regions[0];
                w.regions[1] = code[gi]->regions[1];
                w.once = (code[gi]->once.code && gi == 0) ? &code[gi]->once : nullptr;
                w.frame = frame;
                w.regs = bc.regs;
                w.carry = bc.carry;
                w.initial_warmup = cfg.initial_warmup;
                w.timeout_s = cfg.timeout_s;
                w.reps = cfg.reps;
                w.warmup = cfg.warmup;
                w.irq = cfg.irq;
                w.raw[0] = raw[0].data();
                w.raw[1] = raw[1].data();
                w.caps = caps[ci].probed ? &caps[ci] : nullptr;
                w.mode = mode;
                w.noise = noise;
                auto work = [&] { worker_on_cpu(&w); };
                CpuCall wc = cpu_call(work);
                Status rs = mp.run_on_cpu(hw, cpu, wc.fn, wc.ctx);
                if (rs.ok()) rs = w.status;
                if (!rs.ok()) {
                    fail(rs.error().with_context("%s on CPU %u (run %u)", name, cpu, unsigned(gi)));
                    continue;
                }
                usize n = g.reads.size();
                for (usize r = 0; r < n; ++r) {
                    MeasureResult res;
                    res.cpu = cpu;
                    res.apic_id = apic;
                    res.bench = &b;
                    res.run = u32(gi);
                    res.runs = u32(groups.size());
                    res.read = &g.reads[r];
                    res.short_copies = code[gi]->regions[0].copies;
                    res.long_copies = code[gi]->regions[1].copies;
                    res.iterations = (res.long_copies - res.short_copies) * cfg.loop;
                    Status st = ok_status();
                    for (int which = 0; which < 2; ++which) {
                        for (u32 i = 0; i < cfg.reps; ++i) column[which][i] = raw[which][usize(i) * n + r];
                        Result<Summary> sum = summarize(column[which].data(), cfg.reps, scratch.data());
                        if (!sum.ok()) {
                            st = sum.error();
                            break;
                        }
                        (which ? res.long_sum : res.short_sum) = sum.value();
                    }
                    for (unsigned a = 0; st.ok() && a < kAggCount; ++a) {
                        Result<Frac> f = frac_sub_div(res.long_sum.get(Agg(a)), res.short_sum.get(Agg(a)),
                                                      res.iterations);
                        if (!f.ok()) st = f.error();
                        else res.per_iter[a] = f.value();
                    }
                    if (!st.ok()) {
                        fail(st.error().with_context("%s on CPU %u, event '%s'", name, cpu, g.reads[r].event));
                        continue;
                    }
                    res.r14 = r14;
                    res.noise = w.caps ? noise : nullptr;
                    res.short_raw = column[0].data();
                    res.long_raw = column[1].data();
                    sink.result(cfg, res);
                }
            }
        }
        for (Vec<GroupCode*>& code : code_by_mode)
            for (GroupCode* gc : code) delete gc;
    }
    mp.set_job_timeout(0);
    delete noise;
    delete frame;
    return worst;
}

}  // namespace pmulab
