// Sampling in the measurement engine (sampling.h).
#include "measure/sampling.h"

#include "x86/intel_regs.h"
#include "x86/msr_addr.h"

namespace pmulab {

namespace {

void zero(Vec<u64>& v) {
    for (u64& x : v) x = 0;
}

void sized(Vec<u64>& v, usize n) {
    v.resize(n);
    zero(v);
}

// ---- hooks: on the measuring CPU, allocation-free ----

Status setup_hook(Hw& hw, void* ctx) { return static_cast<SampleGroup*>(ctx)->on_setup(hw); }
Status teardown_hook(Hw& hw, void* ctx) { return static_cast<SampleGroup*>(ctx)->on_teardown(hw); }
void region_hook(const Region& r, void* ctx) { static_cast<SampleGroup*>(ctx)->set_region(&r); }

Status rearm_lvt(void* ctx, u32 value) { return static_cast<MeasurePlatform*>(ctx)->set_lvt_perf(value); }

}  // namespace

void SampleCounts::size(usize body_len, usize init_len, usize late_init_len) {
    sized(body, body_len);
    sized(init, init_len);
    sized(late_init, late_init_len);
    log.resize(kPreciseLog);
    harness = samples = 0;
    log_n = 0;
    log_dropped = 0;
}

void SampleCounts::clear() {
    zero(body);
    zero(init);
    zero(late_init);
    harness = samples = 0;
    log_n = 0;
    log_dropped = 0;
}

FaultPlace sample_place(const Region& r, u64 rip) {
    const u64 code = u64(reinterpret_cast<uintptr_t>(r.code));
    // Below the region, past its code (the return address after its last instruction):
    // the harness.
    if (rip < code || rip - code >= r.code_size) return FaultPlace();
    FaultPlace p = locate_fault(r, usize(rip - code));
    // The one-time-init region is not sampled (its runs count nothing).
    if (p.block == CodeBlock::one_time_init) p.block = CodeBlock::harness;
    return p;
}

namespace {

// Counts rip in its bucket; the place it was counted at (harness when outside the blocks).
FaultPlace count_rip(SampleCounts& c, const Region* r, u64 rip) {
    ++c.samples;
    FaultPlace p = r ? sample_place(*r, rip) : FaultPlace();
    Vec<u64>* v = p.block == CodeBlock::body        ? &c.body
                  : p.block == CodeBlock::init      ? &c.init
                  : p.block == CodeBlock::late_init ? &c.late_init
                                                    : nullptr;
    if (v && p.offset < v->size()) {
        ++(*v)[p.offset];
        return p;
    }
    ++c.harness;
    return FaultPlace();
}

}  // namespace

void SampleCounts::add(const Region* r, u64 rip) { (void)count_rip(*this, r, rip); }

void SampleCounts::add_precise(const Region* r, const PreciseSample& s) {
    FaultPlace p = count_rip(*this, r, s.rip);
    if (log_n >= log.size()) {
        ++log_dropped;
        return;
    }
    PreciseEntry& e = log[log_n++];
    e.block = p.block;
    e.offset = u32(p.offset);
    e.data_addr = s.data_addr;
    e.latency = s.latency;
    e.has_data = s.has_data;
    e.has_latency = s.has_latency;
    e.source = s.source;
}

void SampleGroup::trace_rip(u64 rip) {
    if (trace && trace_n < trace_cap) {
        const u64 code = region_ ? u64(reinterpret_cast<uintptr_t>(region_->code)) : 0;
        trace[trace_n] = region_ && rip >= code && rip - code < region_->code_size ? rip - code : kOutside;
    }
    ++trace_n;
}

void SampleGroup::sample(u32 slot, u64 rip) {
    if (slot >= nslots) return;
    counts[slot].add(region_, rip);
    trace_rip(rip);
}

void SampleGroup::precise(u32 slot, const PreciseSample& s) {
    if (slot >= nslots) return;
    counts[slot].add_precise(region_, s);
    trace_rip(s.rip);
}

Status SampleGroup::on_setup(Hw& hw) {
    for (u32 s = 0; s < nslots; ++s) counts[s].clear();
    region_ = nullptr;
    lvt_ok_ = debugctl_ok_ = attached_ = false;
    // The plan's setup: the PMU saved and the group programmed with the presets.
    if (inner.setup) PMULAB_TRY(inner.setup(hw, inner.ctx));
    Result<u32> lvt = mp->lvt_perf();
    if (!lvt.ok()) return lvt.error().with_context("cannot sample: the LVT performance-counter entry");
    lvt_saved_ = lvt.value();
    lvt_ok_ = true;
    if (setup.freeze) {
        // SDM Vol. 3B §18.4.7: the counters freeze when the PMI is raised, so the
        // handler's own instructions are never counted.
        Result<u64> d = hw.rdmsr(msr::IA32_DEBUGCTL);
        if (!d.ok()) return d.error().with_context("cannot sample: IA32_DEBUGCTL");
        debugctl_saved_ = d.value();
        debugctl_ok_ = true;
        PMULAB_TRY(hw.wrmsr(msr::IA32_DEBUGCTL, regs::DebugCtl(debugctl_saved_).set_freeze_perfmon_on_pmi().raw()));
    }
    handler.arm(hw, setup, this, rearm_lvt, mp, precise_source);
    PMULAB_TRY(mp->pmi_attach(&handler));
    attached_ = true;
    return mp->set_lvt_perf(kLvtPerfNmi);
}

Status SampleGroup::on_teardown(Hw& hw) {
    Status s = ok_status();
    auto keep = [&](Status t) {
        if (s.ok() && !t.ok()) s = t;
    };
    // The LVT entry first: no PMI can be delivered after it.
    if (lvt_ok_) keep(mp->set_lvt_perf(lvt_saved_));
    if (attached_) mp->pmi_detach();
    handler.disarm();
    if (debugctl_ok_) keep(hw.wrmsr(msr::IA32_DEBUGCTL, debugctl_saved_));
    lvt_ok_ = debugctl_ok_ = attached_ = false;
    region_ = nullptr;
    if (!handler.error().ok()) keep(handler.error().error().with_context("the PMI handler's MSR access failed"));
    if (inner.teardown) keep(inner.teardown(hw, inner.ctx));
    return s;
}

Status sampling_prepare(MeasurePlatform& mp, PmuPlan& plan, const u64* periods, Vec<Box<SampleGroup>>* out) {
    StrBuf where;
    put_cpu_list(where, plan.cpus);
    const bool freeze = !*freeze_unsupported(plan.info);
    for (usize gi = 0; gi < plan.groups.size(); ++gi) {
        const CounterGroup& cg = plan.alloc.groups[gi];
        u64 per[PmiSetup::kMax] = {};
        u32 slots[PmiSetup::kMax] = {};
        u32 n = 0;
        bool any = false;
        for (usize k = 0; k < cg.events.size() && k < PmiSetup::kMax; ++k) {
            per[k] = periods[cg.events[k].event];
            any |= per[k] != 0;
            if (per[k]) slots[k] = n++;
        }
        if (!any) continue;
        SampleGroup* sg = out->push(make_box<SampleGroup>()).get();
        Status s = pmi_setup(plan.info, cg, per, slots, freeze, &sg->setup);
        PMULAB_TRY_CTX(s, "%s: cannot sample", where.c_str());
        PmuGroupState* st = plan.state[gi].get();
        for (usize k = 0; k < cg.events.size() && k < PmiSetup::kMax; ++k) {
            if (!per[k]) continue;
            sg->read_of_slot[slots[k]] = u32(k);
            sg->period_of_slot[slots[k]] = per[k];
            sg->event_of_slot[slots[k]] = u32(cg.events[k].event);
        }
        for (unsigned i = 0; i < sg->setup.count; ++i) {
            const PmiCounter& c = sg->setup.counters[i];
            st->presets[sg->read_of_slot[c.slot]] = c.reload;
        }
        st->use_presets = true;
        sg->nslots = n;
        sampling_hook(mp, plan.groups[gi], sg);
    }
    return ok_status();
}

void sampling_hook(MeasurePlatform& mp, ReadGroup& g, SampleGroup* sg) {
    sg->mp = &mp;
    sg->group = &g;
    sg->inner = g.hooks;
    g.hooks.setup = setup_hook;
    g.hooks.teardown = teardown_hook;
    g.hooks.region = region_hook;
    g.hooks.ctx = sg;
}

}  // namespace pmulab
