// `run --sample EVENT[:PERIOD] --precise` (run_precise.h; docs/sampling.md "Precise
// sampling (PEBS)"): the checks before anything runs and the PEBS of each sampled group.
#include "commands/run_precise.h"

#include "commands/measure_cmd.h"

namespace pmulab {

PreciseRun::~PreciseRun() {
    for (void* p : pages)
        if (mp && p) mp->free_pages(p, PebsSource::kBytesPerCpu);
    for (void* p : pt_pages)
        if (mp && p) mp->free_pages(p, PebsPt::kOutputBytes);
}

Status finish_precise(RunOptions* o) {
    if (o->pebs_pt && !o->precise)
        return Error::make(Errc::invalid_argument,
                           "--pebs-output pt says where --precise's PEBS records go: give --precise with it");
    if (!o->precise) return ok_status();
    if (o->samples.empty())
        return Error::make(Errc::invalid_argument,
                           "--precise samples the --sample events precisely: give one, e.g. --sample "
                           "MEM_INST_RETIRED.ALL_LOADS:1009 --precise (on Intel: D0.81)");
    for (SampleSpec& s : o->samples) s.precise = true, s.pebs_pt = o->pebs_pt;
    return ok_status();
}

Status precise_mark(const RunOptions& o, EventsForCpus& set) {
    if (!o.precise) return ok_status();
    PebsCaps first;
    for (usize k = 0; k < set.probed.size(); ++k) {
        PebsCaps caps;
        PMULAB_TRY(pebs_decode(set.probed[k], &caps));
        if (k == 0) first = caps;
    }
    if (set.probed.empty()) return ok_status();
    for (usize i = 0; i < o.samples.size() && i < set.events.size(); ++i)
        PMULAB_TRY(pebs_mark(first, set.probed[0].cpu, &set.events[i]));
    return ok_status();
}

namespace {

PreciseRun* run_of(void* ctx) { return static_cast<PreciseRun*>(ctx); }

Status setup_hook(Hw& hw, void* ctx) {
    PreciseRun* r = run_of(ctx);
    if (r->inner.setup) PMULAB_TRY(r->inner.setup(hw, r->inner.ctx));
    return r->source.on_setup(hw);
}

Status teardown_hook(Hw& hw, void* ctx) {
    PreciseRun* r = run_of(ctx);
    Status s = r->source.on_teardown(hw);  // PEBS off first, then the group's sampling and PMU
    if (r->inner.teardown) {
        Status t = r->inner.teardown(hw, r->inner.ctx);
        if (s.ok() && !t.ok()) s = t;
    }
    return s;
}

Status start_hook(Hw& hw, void* ctx) {
    PreciseRun* r = run_of(ctx);
    return r->inner.start ? r->inner.start(hw, r->inner.ctx) : ok_status();
}

Status stop_hook(Hw& hw, void* ctx) {
    PreciseRun* r = run_of(ctx);
    return r->inner.stop ? r->inner.stop(hw, r->inner.ctx) : ok_status();
}

void region_hook(const Region& reg, void* ctx) {
    PreciseRun* r = run_of(ctx);
    if (r->inner.region) r->inner.region(reg, r->inner.ctx);
}

// The plan whose groups hold `g`.
PmuPlan* plan_of(Vec<Box<PmuPlan>>& plans, const ReadGroup* g) {
    for (Box<PmuPlan>& pl : plans)
        for (const ReadGroup& x : pl->groups)
            if (&x == g) return pl.get();
    return nullptr;
}

// --pebs-output pt: a trace output page per measuring CPU (single-range output: aligned to
// its size, which a page is).
Status prepare_pt(MeasurePlatform& mp, const PmuPlan& pl, PreciseRun* run) {
    for (u32 cpu : pl.cpus) {
        Result<void*> mem = mp.alloc_pages(PebsPt::kOutputBytes, false);
        if (!mem.ok()) return mem.error().with_context("--pebs-output pt: the Intel PT output of CPU %u", cpu);
        run->pt_pages.push(mem.value());
        PMULAB_TRY(run->pt.add_cpu(cpu, mem.value()));
    }
    run->source.set_pt(&run->pt);
    return ok_status();
}

// One sampled group's PEBS: its counters marked precise, a DS area per measuring CPU.
Status prepare_group(const PebsCaps& caps, MeasurePlatform& mp, PmuPlan& pl, SampleGroup& sg, bool pt,
                     PreciseRun* run) {
    bool data_la[PmiSetup::kMax] = {}, latency[PmiSetup::kMax] = {};
    for (unsigned i = 0; i < sg.setup.count; ++i) {
        const Event& e = pl.events[sg.event_of_slot[sg.setup.counters[i].slot]];
        const PebsEvent* pe = pebs_event_of(caps, e);
        const CounterKind k = sg.setup.counters[i].kind;
        if (!pe || (k != CounterKind::gp && k != CounterKind::fixed))
            return Error::make(Errc::internal, "--precise: '%s' was not marked for PEBS", e.name);
        data_la[i] = pe->data_la, latency[i] = pe->latency;
    }
    run->source.init(caps, &sg.setup, data_la, latency);
    run->mp = &mp;
    for (u32 cpu : pl.cpus) {
        Result<void*> mem = mp.alloc_pages(PebsSource::kBytesPerCpu, false);
        if (!mem.ok()) return mem.error().with_context("--precise: the DS area and PEBS buffer of CPU %u", cpu);
        run->pages.push(mem.value());
        PMULAB_TRY(run->source.add_cpu(cpu, mem.value()));
    }
    if (pt) PMULAB_TRY(prepare_pt(mp, pl, run));
    sg.precise_source = &run->source;
    ReadGroup& g = *const_cast<ReadGroup*>(sg.group);
    run->inner = g.hooks;
    g.hooks = GroupHooks{setup_hook, start_hook, stop_hook, teardown_hook, run, region_hook};
    return ok_status();
}

}  // namespace

Status precise_prepare(const RunOptions& o, Hw& hw, MeasurePlatform& mp, Vec<Box<PmuPlan>>& plans, RunSampling* s) {
    s->precise.clear();
    if (!o.precise) return ok_status();
    // The model's table: CPUID of the CPU this runs on (every measured CPU has the same
    // family and model; the PMU of each plan is its own).
    ProbedCpu here;
    here.cpu = hw.current_cpu();
    capture_cpuid(hw, &here.probe.cpuid);
    for (Box<SampleGroup>& sg : s->groups) {
        PmuPlan* pl = plan_of(plans, sg->group);
        if (!pl) return Error::make(Errc::internal, "--precise: a sampled group without its plan");
        here.info = pl->info;
        PebsCaps caps;
        PMULAB_TRY(pebs_decode(here, &caps));
        if (o.pebs_pt) PMULAB_TRY(pebs_pt_check(hw, caps, pl->info, here.cpu));
        PMULAB_TRY(prepare_group(caps, mp, *pl, *sg, o.pebs_pt, s->precise.push(make_box<PreciseRun>()).get()));
    }
    return ok_status();
}

}  // namespace pmulab
