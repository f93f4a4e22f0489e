// `run --cbox-lookups` (measure_cmd.h): the L3 slice of what the code accesses, from the
// client uncore's C-Box lookup counters (pmu/cbox.h). Hooks chained around the first
// group's own program the C-Boxes once per job on the measuring CPU, read them around
// every run (the first run of each region of a job, which brings the harness's own lines
// in, is not counted) and put them back exactly; then one {"type":"cbox_lookups"} record per (CPU,
// benchmark): the lookups per C-Box and the slice, the box with the most. On AMD the L3
// PMU (pmu/amd_l3.h) is the unit: one counter per slice of the measuring CPU's L3 complex,
// in rounds where the slices outnumber the counters (each region's counted runs go through
// the rounds); the same record with "unit":"l3", the complex, and the runs per slice.
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
    for (u32& n : r->slice_runs) n = 0;
    for (u32& n : r->region_runs) n = 0;
    Status s = r->unit().begin(hw);
    if (!s.ok()) (void)r->unit().end();
    return s;
}

Status cbox_start_hook(Hw& hw, void* ctx) {
    CboxRun* r = static_cast<CboxRun*>(ctx);
    SliceLookupPmu& u = r->unit();
    PMULAB_TRY(u.select_round(hw, r->region_runs[r->region] % u.rounds()));
    if (r->inner.start) PMULAB_TRY(r->inner.start(hw, r->inner.ctx));
    return u.read(hw, r->start);
}

// Before every run: whether its region ran before in this job (its first run is not counted).
void cbox_region_hook(const Region& rg, void* ctx) {
    CboxRun* r = static_cast<CboxRun*>(ctx);
    if (r->inner.region) r->inner.region(rg, r->inner.ctx);
    r->counting = false;
    r->region = 0;
    for (u32 i = 0; i < r->seen_count; ++i)
        if (r->seen[i] == &rg) {
            r->counting = true;
            r->region = i;
        }
    if (!r->counting && r->seen_count < CboxRun::kRegions) r->seen[r->seen_count++] = &rg;
}

// The counters first thing after the code.
Status cbox_stop_hook(Hw& hw, void* ctx) {
    CboxRun* r = static_cast<CboxRun*>(ctx);
    const SliceLookupPmu& u = r->unit();
    u64 now[msr::kMaxChas] = {};
    PMULAB_TRY(u.read(hw, now));
    if (r->counting) {
        for (u32 b = 0; b < u.boxes(); ++b) {
            if (!u.counted(b)) continue;
            r->sum[b] += (now[b] - r->start[b]) & low_mask(u.counter_bits());
            ++r->slice_runs[b];
        }
        ++r->region_runs[r->region];
        ++r->runs;
        r->have = true;
    }
    if (r->inner.stop) PMULAB_TRY(r->inner.stop(hw, r->inner.ctx));
    return ok_status();
}

Status cbox_teardown_hook(Hw& hw, void* ctx) {
    CboxRun* r = static_cast<CboxRun*>(ctx);
    Status s = r->unit().end();
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
    CpuIdentity id = decode_cpuid(snap).id;
    run->amd = id.vendor == Vendor::amd;
    Status s = run->amd ? run->l3.detect(hw, id) : run->pmu.detect(hw, id);
    if (!s.ok()) return s.error().with_context("run --cbox-lookups");
    return ok_status();
}

void attach_run_cbox(CboxRun* run, ReadGroup* g) {
    GroupHooks h = {cbox_setup_hook, cbox_start_hook, cbox_stop_hook, cbox_teardown_hook, run, cbox_region_hook};
    chain_group_hooks(g, h, &run->inner, &run->first_read);
}

namespace {

// The slice counted most per run (the rounds count slices in different numbers of runs);
// false when nothing was counted or a slice was never counted.
bool best_slice(const CboxRun& run, u32* best) {
    u32 n = run.unit().boxes();
    *best = 0;
    bool all = true;
    for (u32 b = 0; b < n; ++b) {
        all = all && run.slice_runs[b] > 0;
        if (run.sum[b] * run.slice_runs[*best] > run.sum[*best] * run.slice_runs[b]) *best = b;
    }
    return run.have && all && run.sum[*best] > 0;
}

// AMD's fields: the unit, the L3 complex and where its numbers come from, the runs per slice.
void amd_l3_fields(JsonWriter& w, const CboxRun& run) {
    w.field("unit", "l3").field_u("complex", run.l3.complex()).field("complex_from", run.l3.complex_from());
    w.field("slices_from", run.l3.slices_from()).field_u("rounds", run.l3.rounds());
    w.key("slice_runs").begin_array();
    for (u32 b = 0; b < run.l3.boxes(); ++b) w.num(u64(run.slice_runs[b]));
    w.end_array();
}

}  // namespace

void emit_run_cbox(Out& out, const CboxRun& run, const MeasureResult& r) {
    if (r.read != run.first_read) return;
    u32 n = run.unit().boxes(), best = 0;
    u64 total = 0;
    for (u32 b = 0; b < n; ++b) total += run.sum[b];
    bool found = best_slice(run, &best);
    Value rec;
    JsonWriter w(rec);
    w.begin_object().field("type", "cbox_lookups").field_u("cpu", r.cpu).field("bench", bench_name(*r.bench));
    if (!run.amd) w.field("unit", run.pmu.unit());  // AMD's: amd_l3_fields
    w.field("event", run.amd ? "L3PMCx04.FF (L3 Lookup State, all)" : run.pmu.event());
    w.field_u("boxes", n).field_u("runs", run.runs);
    if (run.amd) amd_l3_fields(w, run);
    w.key("lookups").begin_array();
    for (u32 b = 0; b < n; ++b) w.num(run.sum[b]);
    w.end_array();
    if (found) w.field_u("slice", best);
    else w.key("slice").null();
    w.end_object();
    out.record(rec);
    if (out.json()) return;
    StrBuf t;
    if (run.amd)
        t.printf("L3 PMU lookups of %s on CPU %u (L3 complex %u):", bench_name(*r.bench), r.cpu, run.l3.complex());
    else t.printf("%s lookups of %s on CPU %u:", run.pmu.box_name(), bench_name(*r.bench), r.cpu);
    for (u32 b = 0; b < n; ++b) t.printf(" %llu", (unsigned long long)run.sum[b]);
    if (found)
        t.printf(" -> slice %u (%llu of %llu)\n", best, (unsigned long long)run.sum[best], (unsigned long long)total);
    else t.put(" -> no lookup\n");
    out.text_buf(t);
}

}  // namespace pmulab
