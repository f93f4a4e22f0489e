// AMD IBS samples in `pmulab run --sample ibs_op[:P] | ibs_op_cycles[:P] | ibs_fetch[:P]`
// (docs/sampling.md "Precise sampling (IBS)"; the unit: pmu/ibs.h).
//
// IBS has no PMU counter, so its sample is planned as a counter-less placeholder event
// ("tsc ibs_op": a TSC read in the group, which carries the samples record), and its group
// is sampled by a SampleGroup whose handler may arm no counter at all (setup.count == 0)
// and drains the IbsSource instead. Around the group's sampling hooks, on the measuring
// CPU:
//   setup     IBS_CTL read (the extended LVT entry firmware assigned IBS, LVTOffsetVal),
//             that entry, IbsOpCtl and IbsFetchCtl saved, the entry set to an unmasked NMI;
//   start     before every run: IbsOpCtl / IbsFetchCtl written with the armed values;
//   stop      after every run: their enables cleared;
//   teardown  IbsOpCtl / IbsFetchCtl and the extended LVT entry put back exactly.
#include "commands/measure_cmd.h"
#include "x86/ibs_regs.h"

namespace pmulab {

Status ibs_sample_spec(SampleSpec* sp) {
    sp->ibs = ibs_kind(sp->event);
    if (sp->ibs == IbsKind::none) return ok_status();
    if (!sp->given) sp->period = kIbsDefaultPeriod;
    sp->precise = true;
    sp->source = ibs_source_name(sp->ibs);
    return ibs_check_period(sp->ibs, sp->period, sp->event);
}

Status ibs_finish_controls(const RunOptions& o) {
    if (!o.ibs.rand && !o.ibs.l3_miss_only) return ok_status();
    for (const SampleSpec& sp : o.samples)
        if (sp.ibs != IbsKind::none) return ok_status();
    return Error::make(Errc::invalid_argument,
                       "%s is an IBS control: it needs --sample ibs_op, ibs_op_cycles or ibs_fetch (AMD)",
                       o.ibs.rand ? "--ibs-rand" : "--ibs-l3-miss-only");
}

Status ibs_sample_mark(const RunOptions& o, const EventsForCpus& set) {
    bool op = false;
    for (const SampleSpec& sp : o.samples) {
        if (sp.ibs == IbsKind::none) continue;
        if (sp.ibs != IbsKind::fetch && op)
            return Error::make(Errc::invalid_argument,
                               "--sample: ibs_op and ibs_op_cycles use the one IBS op unit of a CPU: sample one of "
                               "them per run");
        op |= sp.ibs != IbsKind::fetch;
        for (const ProbedCpu& pc : set.probed) {
            IbsInfo info;
            ibs_decode(pc.probe.cpuid, &info);
            Status s = ibs_check(info, sp.ibs, sp.period, sp.event);
            if (s.ok()) s = ibs_check_controls(info, sp.ibs, o.ibs, sp.event);
            if (!s.ok()) return s.error().with_context("CPU %u", pc.cpu);
        }
    }
    return ok_status();
}

namespace {

// ---- hooks: on the measuring CPU, allocation-free ----

IbsRun& run_of(void* ctx) { return *static_cast<IbsRun*>(ctx); }

Status save_controls(Hw& hw, IbsRun& r) {
    if (r.source.op_ctl) {
        Result<u64> v = hw.rdmsr(msr::AMD_IBS_OP_CTL);
        if (!v.ok()) return v.error().with_context("cannot sample with IBS: IbsOpCtl");
        r.op_saved = v.value();
    }
    if (r.source.fetch_ctl) {
        Result<u64> v = hw.rdmsr(msr::AMD_IBS_FETCH_CTL);
        if (!v.ok()) return v.error().with_context("cannot sample with IBS: IbsFetchCtl");
        r.fetch_saved = v.value();
    }
    r.ctl_ok = true;
    return ok_status();
}

Status ibs_setup(Hw& hw, void* ctx) {
    IbsRun& r = run_of(ctx);
    r.lvt_ok = r.ctl_ok = false;
    if (r.inner.setup) PMULAB_TRY(r.inner.setup(hw, r.inner.ctx));
    // APM Vol. 2 §13.3.3: IBS_CTL names the extended LVT entry firmware gave IBS.
    Result<u64> c = hw.rdmsr(msr::AMD_IBS_CTL);
    if (!c.ok()) return c.error().with_context("cannot sample with IBS: IBS_CTL");
    regs::ibs::IbsCtl ctl(c.value());
    if (!ctl.lvt_offset_val())
        return Error::make(Errc::unsupported,
                           "cannot sample with IBS: the firmware assigned IBS no APIC extended LVT entry (IBS_CTL = "
                           "0x%llx: LVTOffsetVal is 0), so its interrupt cannot be delivered",
                           (unsigned long long)ctl.raw());
    r.lvt_offset = u32(ctl.lvt_offset());
    // IbsOpData2's DataSrc has 5 bits with the Zen 4 extensions (mem_source.h).
    const CpuidRegs f = hw.cpuid(0x80000000, 0).eax >= regs::ibs::kFeatureLeaf ? hw.cpuid(regs::ibs::kFeatureLeaf, 0)
                                                                               : CpuidRegs{};
    r.source.zen4 = regs::ibs::IbsFeatures(f.eax).zen4_ext();
    Result<u32> lvt = r.mp->lvt_ext(r.lvt_offset);
    if (!lvt.ok())
        return lvt.error().with_context("cannot sample with IBS: extended LVT entry %u (IBS_CTL.LVTOffset)",
                                        r.lvt_offset);
    r.lvt_saved = lvt.value();
    PMULAB_TRY(save_controls(hw, r));
    r.lvt_ok = true;
    return r.mp->set_lvt_ext(r.lvt_offset, kLvtPerfNmi);
}

Status ibs_start(Hw& hw, void* ctx) {
    IbsRun& r = run_of(ctx);
    if (r.inner.start) PMULAB_TRY(r.inner.start(hw, r.inner.ctx));
    return r.source.start(hw);
}

Status ibs_stop(Hw& hw, void* ctx) {
    IbsRun& r = run_of(ctx);
    Status s = r.source.stop(hw);
    if (r.inner.stop) {
        Status t = r.inner.stop(hw, r.inner.ctx);
        if (s.ok()) s = t;
    }
    return s;
}

Status ibs_teardown(Hw& hw, void* ctx) {
    IbsRun& r = run_of(ctx);
    Status s = ok_status();
    auto keep = [&](Status t) {
        if (s.ok() && !t.ok()) s = t;
    };
    // The controls first (no sample after them), then the entry, then the group's own.
    if (r.ctl_ok && r.source.op_ctl) keep(hw.wrmsr(msr::AMD_IBS_OP_CTL, r.op_saved));
    if (r.ctl_ok && r.source.fetch_ctl) keep(hw.wrmsr(msr::AMD_IBS_FETCH_CTL, r.fetch_saved));
    if (r.lvt_ok) keep(r.mp->set_lvt_ext(r.lvt_offset, r.lvt_saved));
    r.lvt_ok = r.ctl_ok = false;
    if (r.inner.teardown) keep(r.inner.teardown(hw, r.inner.ctx));
    return s;
}

void ibs_region(const Region& reg, void* ctx) {
    IbsRun& r = run_of(ctx);
    if (r.inner.region) r.inner.region(reg, r.inner.ctx);
}

// The group of plan event `ev` and its read position; false when no group holds it.
bool find_read(const PmuPlan& plan, usize ev, usize* gi, u32* k) {
    for (usize g = 0; g < plan.alloc.groups.size(); ++g)
        for (usize i = 0; i < plan.alloc.groups[g].events.size(); ++i)
            if (plan.alloc.groups[g].events[i].event == ev) {
                *gi = g;
                *k = u32(i);
                return true;
            }
    return false;
}

// The SampleGroup of group gi (made, counter-less, when none samples it yet) and its IBS.
IbsRun* ibs_of(MeasurePlatform& mp, PmuPlan& plan, usize gi, RunSampling* out, SampleGroup** sg_out) {
    ReadGroup& g = plan.groups[gi];
    SampleGroup* sg = nullptr;
    for (Box<SampleGroup>& s : out->groups)
        if (s->group == &g) sg = s.get();
    if (!sg) {
        sg = out->groups.push(make_box<SampleGroup>()).get();
        // The handler stops the group's counters while it runs where it can (no freeze:
        // an IBS interrupt freezes no counter); without a PMU it has nothing to stop.
        if (!pmi_setup(plan.info, plan.alloc.groups[gi], nullptr, nullptr, false, &sg->setup).ok())
            sg->setup = PmiSetup();
        sampling_hook(mp, g, sg);
    }
    *sg_out = sg;
    if (sg->precise_source) {
        for (Box<IbsRun>& r : out->ibs)
            if (&r->source == sg->precise_source) return r.get();
        return nullptr;  // another precise source (PEBS) holds the group
    }
    IbsRun* r = out->ibs.push(make_box<IbsRun>()).get();
    r->mp = &mp;
    r->inner = g.hooks;
    g.hooks = GroupHooks{.setup = ibs_setup,
                         .start = ibs_start,
                         .stop = ibs_stop,
                         .teardown = ibs_teardown,
                         .ctx = r,
                         .region = ibs_region};
    sg->precise_source = &r->source;
    return r;
}

}  // namespace

Status ibs_sample_prepare(const RunOptions& o, MeasurePlatform& mp, PmuPlan& plan, RunSampling* out) {
    for (usize i = 0; i < o.samples.size() && i < plan.events.size(); ++i) {
        const SampleSpec& sp = o.samples[i];
        if (sp.ibs == IbsKind::none) continue;
        usize gi = 0;
        u32 k = 0;
        if (!find_read(plan, i, &gi, &k))
            return Error::make(Errc::internal, "--sample %s: its placeholder event has no group", sp.source);
        SampleGroup* sg = nullptr;
        IbsRun* r = ibs_of(mp, plan, gi, out, &sg);
        if (!r)
            return Error::make(Errc::invalid_argument, "--sample %.*s: its group is sampled precisely already",
                               int(sp.event.len), sp.event.ptr);
        if (sg->nslots >= PmiSetup::kMax)
            return Error::make(Errc::invalid_argument, "--sample: too many sampled events in one group");
        const u32 slot = sg->nslots++;
        sg->read_of_slot[slot] = k;
        sg->period_of_slot[slot] = sp.period;
        sg->event_of_slot[slot] = u32(i);
        if (sp.ibs == IbsKind::fetch) {
            r->source.fetch_ctl = ibs_fetch_ctl(sp.period, o.ibs);
            r->source.fetch_slot = slot;
        } else {
            r->source.op_ctl = ibs_op_ctl(sp.ibs, sp.period, o.ibs);
            r->source.op_slot = slot;
            r->source.op_rand = o.ibs.rand;
        }
    }
    return ok_status();
}

}  // namespace pmulab
