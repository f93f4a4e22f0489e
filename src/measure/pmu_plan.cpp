// PMU event groups for the measurement engine (see pmu_plan.h).
#include "measure/pmu_plan.h"

#include "measure/noise.h"
#include "x86/amd_regs.h"

namespace pmulab {

namespace {

// ---- hooks: on the measuring CPU, allocation-free ----

Status setup_hook(Hw& hw, void* ctx) {
    auto* st = static_cast<PmuGroupState*>(ctx);
    st->overflow_read = false;
    st->overflow = OverflowState();
    // The plan's info came from detecting this CPU (CPUs are planned by identical PMU).
    st->session.open(hw, st->info);
    PMULAB_TRY(st->session.save(st->touch));
    return st->session.program(st->events, *st->group,
                               (st->opts.preset_below_top || st->use_presets) ? st->presets : nullptr);
}

Status teardown_hook(Hw& hw, void* ctx) {
    auto* st = static_cast<PmuGroupState*>(ctx);
    (void)hw;
    if (st->session.saved() && st->info.global_ctrl) {
        Result<OverflowState> o = st->session.overflow();
        if (o.ok()) {
            st->overflow = o.value();
            st->overflow_read = true;
        }
    }
    RestoreReport rep;
    Status s = st->session.close(&rep);
    st->restore.gp_counters_inexact |= rep.gp_counters_inexact;
    st->restore.status_bits_lost |= rep.status_bits_lost;
    return s;
}

// AMD PerfMonV2: the group's start write of PerfCntrGlobalCtl also enables the counter the
// noise guard counts SMIs on (PMCx02B, noise.h smi_counter_for), so that it counts in each
// run's counting window; the stop write still clears the register (0), as the PMU session
// expects between runs.
void keep_smi_counter(const PmuInfo& info, ReadGroup* g) {
    int i = smi_counter_for(info.gp_mask, g->gp_mask);
    if (!info.caps.amd_perfmon_v2 || i < 0) return;
    for (MsrValue& w : g->start_writes)
        if (w.msr == msr::AMD_PERF_CNTR_GLOBAL_CTL)
            w.value = regs::amd::GlobalCtl(w.value).set_counter(unsigned(i)).raw();
}

void label(char* dst, usize cap, StrView s) {
    usize n = min_of<usize>(s.len, cap - 1);
    for (usize i = 0; i < n; ++i) dst[i] = s[i];
    dst[n] = 0;
}

}  // namespace

bool events_are_tsc_only(const Vec<Event>& events) {
    for (const Event& e : events)
        if (e.needs_counter()) return false;
    return true;
}

Status plan_pmu_groups(const PmuInfo& info, const Vec<Event>& events, const Vec<u32>& cpus, const PmuRunOptions& opts,
                       PmuPlan* out) {
    StrBuf where;
    put_cpu_list(where, cpus);
    out->cpus.clear();
    for (u32 c : cpus) out->cpus.push(c);
    out->info = info;
    out->events.clear();
    for (const Event& e : events) out->events.push(e);
    if (info.kind == PmuKind::none) {
        for (const Event& e : events)
            if (e.needs_counter())
                return Error::make(Errc::unsupported, "%s: cannot count '%s': %s", where.c_str(), e.name, info.absent);
    }
    Status s = pmu_allocate(info, out->events.data(), out->events.size(), &out->alloc);
    PMULAB_TRY_CTX(s, "%s", where.c_str());

    // The access methods and control writes come from the backend: pure functions of
    // the info (a session bound for planning refuses every hardware access).
    PmuSession planner;
    planner.plan(info);
    const bool b = planner.backend() != nullptr;
    for (usize gi = 0; gi < out->alloc.groups.size(); ++gi) {
        const CounterGroup& cg = out->alloc.groups[gi];
        if (cg.events.size() > kMaxReads)
            return Error::make(Errc::invalid_argument,
                               "%s: run %u of the event set reads %u counters; at most %u fit in one run (list fewer "
                               "events)",
                               where.c_str(), unsigned(gi), unsigned(cg.events.size()), unsigned(kMaxReads));
        ReadGroup& g = out->groups.emplace();
        PmuGroupState* st = out->state.push(make_box<PmuGroupState>()).get();
        st->events = out->events.data();
        st->n = out->events.size();
        st->group = &cg;
        st->info = info;
        st->opts = opts;
        Result<PmuTouch> t = touch_set(out->events.data(), out->events.size(), cg);
        if (!t.ok()) return t.error();
        st->touch = t.value();
        bool counters = false;
        for (usize k = 0; k < cg.events.size(); ++k) {
            const Assignment& as = cg.events[k];
            const Event& e = out->events[as.event];
            CounterRead& r = g.reads.emplace();
            label(r.event, sizeof r.event, StrView(e.name));
            StrBuf cn;
            put_counter_name(cn, as.kind, as.index, out->alloc.fixed_name);
            label(r.counter, sizeof r.counter, cn.view());
            if (as.kind == CounterKind::none || !b) {
                r.kind = CounterAccess::rdtsc;
                r.width = 64;
                continue;
            }
            counters = true;
            CounterAccess a = planner.access(as.kind, as.index);
            static_cast<CounterAccess&>(r) = a;  // the backend's read, labels kept
            if (opts.preset_below_top && k < sizeof st->presets / sizeof st->presets[0])
                st->presets[k] = (u64(0) - opts.preset_below_top) & regs::counter_mask(a.width);
        }
        g.gp_mask = cg.gp_mask;
        if (!counters || !b) continue;  // a TSC-only group needs no PMU access
        PmuWriteList on, off;
        planner.control_writes(out->events.data(), cg, &on, &off);
        for (unsigned i = 0; i < on.count; ++i) {
            u64 v = on.w[i].value;
            if (opts.gate_off) {
                // The same WRMSR with counting left off: GLOBAL_CTRL 0, or EN clear.
                v = i < off.count ? off.w[i].value : 0;
            }
            g.start_writes.push(MsrValue{on.w[i].msr, v});
        }
        for (unsigned i = 0; i < off.count; ++i) g.stop_writes.push(MsrValue{off.w[i].msr, off.w[i].value});
        keep_smi_counter(info, &g);
        g.hooks.setup = setup_hook;
        g.hooks.teardown = teardown_hook;
        g.hooks.ctx = st;
    }
    return ok_status();
}

Status plan_pmu_runs(const Vec<ProbedCpu>& cpus, const Vec<Event>& events, const PmuRunOptions& opts,
                     Vec<Box<PmuPlan>>* plans) {
    plans->clear();
    for (const ProbedCpu& c : cpus) PMULAB_TRY_CTX(c.status, "CPU %u", c.cpu);
    for (const Vec<u32>& g : group_by_pmu(cpus)) {
        Vec<u32> cls;
        for (u32 k : g) cls.push(cpus[k].cpu);
        PmuPlan* p = plans->push(make_box<PmuPlan>()).get();
        Status s = plan_pmu_groups(cpus[g[0]].info, events, cls, opts, p);
        if (!s.ok()) {
            plans->clear();
            return s;
        }
    }
    return ok_status();
}

}  // namespace pmulab
