// `run --cbox-lookups` (measure_cmd.h): the L3 slice of what the code accesses, from the
// client uncore's C-Box lookup counters (pmu/cbox.h). Hooks chained around the first
// group's own program the C-Boxes once per job on the measuring CPU, read them around
// every run (the first run of each region of a job, which brings the harness's own lines
// in, is not counted) and put them back exactly; then one {"type":"cbox_lookups"} record per (CPU,
// benchmark): the lookups per C-Box and the slice, the box with the most.
#include "base/json.h"
#include "commands/measure_cmd.h"

namespace pmulab {

namespace {

Status cbox_setup_hook(Hw& hw, void* ctx) {
    CboxRun* r = static_cast<CboxRun*>(ctx);
    if (r->inner.setup) PMULAB_TRY(r->inner.setup(hw, r->inner.ctx));
    r->runs = 0;
    r->have = false;
    r->seen_count = 0;
    for (u64& s : r->sum) s = 0;
    Status s = r->pmu.begin(hw);
    if (!s.ok()) (void)r->pmu.end();
    return s;
}

Status cbox_start_hook(Hw& hw, void* ctx) {
    CboxRun* r = static_cast<CboxRun*>(ctx);
    if (r->inner.start) PMULAB_TRY(r->inner.start(hw, r->inner.ctx));
    return r->pmu.read(hw, r->start);
}

// Before every run: whether its region ran before in this job (its first run is not counted).
void cbox_region_hook(const Region& rg, void* ctx) {
    CboxRun* r = static_cast<CboxRun*>(ctx);
    if (r->inner.region) r->inner.region(rg, r->inner.ctx);
    r->counting = false;
    for (u32 i = 0; i < r->seen_count; ++i) r->counting = r->counting || r->seen[i] == &rg;
    if (!r->counting && r->seen_count < CboxRun::kRegions) r->seen[r->seen_count++] = &rg;
}

// The counters first thing after the code.
Status cbox_stop_hook(Hw& hw, void* ctx) {
    CboxRun* r = static_cast<CboxRun*>(ctx);
    u64 now[msr::kMaxChas] = {};
    PMULAB_TRY(r->pmu.read(hw, now));
    if (r->counting) {
        for (u32 b = 0; b < r->pmu.boxes(); ++b) r->sum[b] += (now[b] - r->start[b]) & low_mask(r->pmu.counter_bits());
        ++r->runs;
        r->have = true;
    }
    if (r->inner.stop) PMULAB_TRY(r->inner.stop(hw, r->inner.ctx));
    return ok_status();
}

Status cbox_teardown_hook(Hw& hw, void* ctx) {
    CboxRun* r = static_cast<CboxRun*>(ctx);
    Status s = r->pmu.end();
    if (r->inner.teardown) {
        Status t = r->inner.teardown(hw, r->inner.ctx);
        if (s.ok()) s = t;
    }
    return s;
}

}  // namespace

Status prepare_run_cbox(Hw& hw, CboxRun* run) {
    // The uncore is the package's; client parts are of one model (no hybrid before
    // Alder Lake), so the BSP's word holds for every CPU.
    CpuidSnapshot snap;
    capture_cpuid(hw, &snap);
    Status s = run->pmu.detect(hw, decode_cpuid(snap).id);
    if (!s.ok()) return s.error().with_context("run --cbox-lookups");
    return ok_status();
}

void attach_run_cbox(CboxRun* run, ReadGroup* g) {
    GroupHooks h = {cbox_setup_hook, cbox_start_hook, cbox_stop_hook, cbox_teardown_hook, run, cbox_region_hook};
    chain_group_hooks(g, h, &run->inner, &run->first_read);
}

void emit_run_cbox(Out& out, const CboxRun& run, const MeasureResult& r) {
    if (r.read != run.first_read) return;
    u32 n = run.pmu.boxes(), best = 0;
    u64 total = 0;
    for (u32 b = 0; b < n; ++b) {
        total += run.sum[b];
        if (run.sum[b] > run.sum[best]) best = b;
    }
    bool found = run.have && run.sum[best] > 0;
    Value rec;
    JsonWriter w(rec);
    w.begin_object().field("type", "cbox_lookups").field_u("cpu", r.cpu).field("bench", bench_name(*r.bench));
    w.field("unit", run.pmu.unit()).field("event", run.pmu.event()).field_u("boxes", n).field_u("runs", run.runs);
    w.key("lookups").begin_array();
    for (u32 b = 0; b < n; ++b) w.num(run.sum[b]);
    w.end_array();
    if (found) w.field_u("slice", best);
    else w.key("slice").null();
    w.end_object();
    out.record(rec);
    if (out.json()) return;
    StrBuf t;
    t.printf("%s lookups of %s on CPU %u:", run.pmu.box_name(), bench_name(*r.bench), r.cpu);
    for (u32 b = 0; b < n; ++b) t.printf(" %llu", (unsigned long long)run.sum[b]);
    if (found)
        t.printf(" -> slice %u (%llu of %llu)\n", best, (unsigned long long)run.sum[best], (unsigned long long)total);
    else t.put(" -> no lookup\n");
    out.text_buf(t);
}

}  // namespace pmulab
