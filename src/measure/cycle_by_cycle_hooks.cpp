// Cycle-by-cycle: the runs of a plan and their hooks on the measuring CPU (allocation-free).
#include "measure/cycle_by_cycle_ctx.h"

#include "x86/amd_regs.h"
#include "x86/intel_regs.h"
#include "x86/msr_addr.h"

namespace pmulab {

namespace {

// PERFEVTSELx.EN / PERF_CTL.En (SDM Figure 20-1, APM §13.2.1).
constexpr u64 kCtlEnable = u64(1) << 22;

// Once per CPU: the session saves and programs the PMU; then the LVT entry is masked and
// DEBUGCTL.FREEZE_PERFMON_ON_PMI set, each saved first and checked.
Status cbc_setup(Hw& hw, void* p) {
    auto* c = static_cast<CbcGroupCtx*>(p);
    c->debugctl_saved = c->lvt_saved = false;
    if (c->inner.setup) PMULAB_TRY(c->inner.setup(hw, c->inner.ctx));
    Result<u32> lvt = c->mp->lvt_perf();
    if (!lvt.ok())
        return Error::make(Errc::unsupported,
                           "cannot measure cycle by cycle: the local APIC's performance-counter LVT entry, masked "
                           "during the runs, cannot be reached: %s",
                           lvt.error().msg);
    c->lvt = lvt.value();
    c->lvt_saved = true;
    PMULAB_TRY(c->mp->set_lvt_perf(c->lvt | kLvtMask));
    Result<u64> d = hw.rdmsr(msr::IA32_DEBUGCTL);
    if (!d.ok())
        return Error::make(Errc::unsupported, "cannot measure cycle by cycle: IA32_DEBUGCTL cannot be read: %s",
                           d.error().msg);
    c->debugctl = d.value();
    c->debugctl_saved = true;
    const u64 want = regs::DebugCtl(c->debugctl).set_freeze_perfmon_on_pmi(true).raw();
    Status w = hw.wrmsr(msr::IA32_DEBUGCTL, want);
    Result<u64> back = hw.rdmsr(msr::IA32_DEBUGCTL);
    if (!w.ok() || !back.ok() || !regs::DebugCtl(back.value()).freeze_perfmon_on_pmi())
        return Error::make(Errc::unsupported,
                           "cannot measure cycle by cycle: IA32_DEBUGCTL.FREEZE_PERFMON_ON_PMI (bit 12) does not "
                           "stick: written 0x%llx, read back 0x%llx%s (a hypervisor that does not let the guest "
                           "freeze its counters on a PMI)",
                           (unsigned long long)want, (unsigned long long)(back.ok() ? back.value() : 0),
                           w.ok() ? "" : ", the write faulted");
    return ok_status();
}

// Before every run: the overflow and freeze bits reset, the armed counter preloaded
// (AMD/GP: with its enable off while it is written).
Status cbc_start(Hw& hw, void* p) {
    auto* c = static_cast<CbcGroupCtx*>(p);
    const PmiSetup& s = c->pmi;
    if (s.status_msr && s.ack_msr) {
        Result<u64> st = hw.rdmsr(s.status_msr);
        if (!st.ok()) return st.error();
        if (st.value() & c->ack_mask) PMULAB_TRY(hw.wrmsr(s.ack_msr, st.value() & c->ack_mask));
    }
    const PmiCounter& a = s.counters[0];
    if (!a.ctl_msr) return hw.wrmsr(a.write_msr, c->preload);
    Result<u64> ctl = hw.rdmsr(a.ctl_msr);
    if (!ctl.ok()) return ctl.error();
    PMULAB_TRY(hw.wrmsr(a.ctl_msr, ctl.value() & ~kCtlEnable));
    PMULAB_TRY(hw.wrmsr(a.write_msr, c->preload));
    return hw.wrmsr(a.ctl_msr, ctl.value());
}

// Once per CPU, also after errors: DEBUGCTL and the LVT entry as they were, then the
// session restores the counters and the global registers (the freeze bits included).
Status cbc_teardown(Hw& hw, void* p) {
    auto* c = static_cast<CbcGroupCtx*>(p);
    Status s = ok_status();
    if (c->debugctl_saved) s = hw.wrmsr(msr::IA32_DEBUGCTL, c->debugctl);
    if (c->lvt_saved) {
        Status l = c->mp->set_lvt_perf(c->lvt);
        if (s.ok()) s = l;
    }
    c->debugctl_saved = c->lvt_saved = false;
    if (c->inner.teardown) {
        Status t = c->inner.teardown(hw, c->inner.ctx);
        if (s.ok()) s = t;
    }
    return s;
}

// The position of event `event` in the run's reads (they follow the group's order).
Result<u32> read_of(const CounterGroup& cg, u32 event) {
    for (usize k = 0; k < cg.events.size(); ++k)
        if (cg.events[k].event == event) return u32(k);
    return Error::make(Errc::internal, "cycle-by-cycle: event %u is not in its run", unsigned(event));
}

// The hooks of one run, around the session's own.
Status arm_run(const PmuInfo& info, PmuPlan& p, CbcGroupCtx* c) {
    const CounterGroup& cg = p.alloc.groups[0];
    u64 periods[kMaxReads] = {};
    Result<u32> armed = read_of(cg, 1);
    if (!armed.ok()) return armed.error();
    periods[armed.value()] = 1;
    PMULAB_TRY(pmi_setup(info, cg, periods, nullptr, true, &c->pmi));
    if (c->pmi.count != 1) return Error::make(Errc::internal, "cycle-by-cycle: %u armed counters", c->pmi.count);
    c->ack_mask = c->pmi.ack_extra | u64(info.gp_mask);
    if (info.kind == PmuKind::intel_arch) c->ack_mask |= u64(info.fixed_mask) << 32;
    ReadGroup& g = p.groups[0];
    c->inner = g.hooks;
    g.hooks = GroupHooks{.setup = cbc_setup, .start = cbc_start, .stop = nullptr, .teardown = cbc_teardown, .ctx = c};
    return ok_status();
}

}  // namespace

Status cbc_plan_runs(const PmuInfo& info, const Event internal[2], const Vec<Event>& users, const Vec<i32>& shared,
                     const Vec<Vec<u32>>& runs, CbcPlan* out) {
    out->run_of.clear(), out->read_of.clear();
    out->run_of.resize(users.size()), out->read_of.resize(users.size());
    for (usize r = 0; r < runs.size(); ++r) {
        Vec<Event> evs;
        evs.push(internal[0]), evs.push(internal[1]);
        for (u32 k : runs[r]) evs.push(users[k]);
        PmuPlan* p = out->runs.push(make_box<PmuPlan>()).get();
        PMULAB_TRY(plan_pmu_groups(info, evs, out->cpus, PmuRunOptions(), p));
        if (p->groups.size() != 1 || !p->groups[0].hooks.setup)
            return Error::make(Errc::internal, "cycle-by-cycle: run %u was planned as %u runs", unsigned(r),
                               unsigned(p->groups.size()));
        const CounterGroup& cg = p->alloc.groups[0];
        Result<u32> inst = read_of(cg, 0);
        if (!inst.ok() || inst.value() != 0)
            return Error::make(Errc::internal, "cycle-by-cycle: the instructions counter is not read first");
        for (usize k = 0; k < runs[r].size(); ++k) {
            Result<u32> at = read_of(cg, u32(2 + k));
            if (!at.ok()) return at.error();
            out->run_of[runs[r][k]] = u32(r);
            out->read_of[runs[r][k]] = at.value();
        }
        CbcGroupCtx* c = out->ctx.push(make_box<CbcGroupCtx>()).get();
        PMULAB_TRY(arm_run(info, *p, c));
        if (r == 0)
            for (usize i = 0; i < users.size(); ++i) {
                if (shared[i] < 0) continue;
                Result<u32> at = read_of(cg, u32(shared[i]));
                if (!at.ok()) return at.error();
                out->run_of[i] = 0;
                out->read_of[i] = at.value();
            }
    }
    return ok_status();
}

Result<u64> cbc_preload(const PmuInfo& info, const CbcGroupCtx& ctx, u64 cycle) {
    return pmi_reload(info, ctx.pmi.counters[0].kind, cycle + 1);
}

}  // namespace pmulab
