// The measurement engine on the measuring CPU (engine_worker.h): probes, the runs of
// both versions with their start/stop hooks, faults turned into errors, --trace-msr.
#include "measure/engine_worker.h"

#include "base/fmt.h"
#include "measure/topdown.h"
#include "x86/msr_trace.h"

namespace pmulab {

namespace {

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
        n += format_to(extra + n, sizeof extra - n, ", CR2 0x%llx%s", (unsigned long long)f.fault_cr2,
                       f.fault_cr2 < 4096 ? " (page 0, not present while code runs: a null pointer?)" : "");
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
    if (h.region) h.region(region, h.ctx);
    IrqSaved saved;
    PMULAB_TRY(c->mp->irq_mask(c->cfg->irq, &saved));
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
    if (c->frame->faulted) return fault_error(region, *c->frame, c->cfg->timeout_s);
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
    for (u32 i = 0; i < c->cfg->initial_warmup; ++i) PMULAB_TRY(run_once(c, c->regions[0]));
    for (int which = 0; which < 2; ++which) {
        for (u32 i = 0; i < c->cfg->warmup + c->cfg->reps; ++i) {
            PMULAB_TRY(run_once(c, c->regions[which]));
            if (i < c->cfg->warmup) continue;
            i64* out = c->raw[which] + usize(i - c->cfg->warmup) * n;
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

}  // namespace

void worker_on_cpu(WorkerState* c) {
    const ReadGroup& g = *c->group;
    Hw& hw = *c->hw;
    const GroupHooks& h = g.hooks;
    c->mp->serialize();
    // The noise guard brackets everything: FREEZE_WHILE_SMM and DE_CFG[1] hold for every
    // run, and the SMI/APERF/MPERF window covers the whole job.
    NoiseGuard guard;
    Status s = c->caps ? guard.begin(hw, *c->caps, c->mode, c->noise, g.gp_mask) : ok_status();
    if (!s.ok()) {
        c->status = s;
        return;
    }
    PrefetchGuard prefetch;  // --prefetchers off: inside the noise guard, restored before it
    s = prefetch.begin(hw, *c->cfg, &c->prefetch_plan);
    if (!s.ok()) {
        if (c->caps) (void)guard.end(c->noise);
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
    Status pf = prefetch.end();
    if (s.ok()) s = pf;
    if (c->caps) {
        Status n = guard.end(c->noise);
        if (s.ok()) s = n;
    }
    c->status = s;
}

}  // namespace pmulab
