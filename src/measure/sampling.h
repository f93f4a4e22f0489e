// Sampling (`run --sample EVENT[:PERIOD]`, docs/sampling.md "Sampling"): where the
// events happen inside the measured code.
//
// A sampled event is counted on a counter armed to interrupt (Event::pmi) and preset to
// 2^width - period (PmuBackend::program presets), so that it overflows every PERIOD
// events. On the measuring CPU, around the job (GroupHooks setup/teardown):
//   setup     the plan's own setup (save the PMU, program the group with the presets),
//             the LVT performance-counter entry saved and set to an unmasked NMI
//             (kLvtPerfNmi), IA32_DEBUGCTL saved and FREEZE_PERFMON_ON_PMI set where the
//             PMU can freeze (freeze_unsupported), the PmiHandler armed and attached;
//   region    before every run: which region runs, so that the sink can fold RIPs;
//   teardown  the LVT entry and DEBUGCTL put back exactly, the handler detached, then the
//             plan's teardown (the PMU restored exactly).
// Each PMI hands the interrupted RIP to SampleGroup::sample (in the NMI: no allocation),
// which folds it with locate_fault into (block, offset in the user's code), over the
// copies, or counts it as harness. The counts accumulate over every run of the job
// (warm-up and measured runs of both versions) and are read on the BSP afterwards.
#pragma once

#include "base/box.h"
#include "measure/pmu_plan.h"
#include "pmu/pmi.h"

namespace pmulab {

// One precise sample kept for its bucket's data addresses and latencies (PreciseSample,
// folded like its RIP).
struct PreciseEntry {
    u64 data_addr = 0;
    u32 latency = 0;
    u32 offset = 0;  // in its block
    CodeBlock block = CodeBlock::harness;
    bool has_data = false, has_latency = false;
    MemSourceInfo source;  // PreciseSample::source
};

// The sample counts of one sampled event over one (CPU, benchmark) job. The arrays are
// sized on the BSP (the benchmarks' block lengths); add(), add_precise() and clear()
// never allocate.
struct SampleCounts {
    static constexpr usize kPreciseLog = 16384;  // precise samples kept per job (the rest: counted only)
    Vec<u64> body, init, late_init;              // per byte offset of the block
    u64 harness = 0;                             // RIPs outside the user's blocks (the generated code, the return)
    u64 samples = 0;                             // every sample, harness included
    Vec<PreciseEntry> log;                       // kPreciseLog entries; the first log_n hold precise samples
    usize log_n = 0;
    u64 log_dropped = 0;  // precise samples past kPreciseLog (counted in the buckets, not logged)
    void size(usize body_len, usize init_len, usize late_init_len);
    void clear();
    // Folds one RIP of region r (null: no region running, harness).
    void add(const Region* r, u64 rip);
    // Folds a precise sample's RIP (the eventing instruction) and logs its data address and
    // latency.
    void add_precise(const Region* r, const PreciseSample& s);
};

// Where a RIP of region r lies for sampling: the block (body, init, late_init or
// harness) and the offset in it, folded over the copies.
FaultPlace sample_place(const Region& r, u64 rip);

// One group's sampling: the hooks' context (the plan's own hooks are called from it).
class SampleGroup final : public PmiSink {
public:
    MeasurePlatform* mp = nullptr;
    const ReadGroup* group = nullptr;  // its group (the records find their reads in it)
    GroupHooks inner;                  // the plan's hooks (PMU save/program/restore)
    PmiSetup setup;                    // made on the BSP by sampling_prepare
    PmiHandler handler;
    u32 nslots = 0;
    u32 read_of_slot[PmiSetup::kMax] = {};  // the group's read (= its event position) of each slot
    u64 period_of_slot[PmiSetup::kMax] = {};
    u32 event_of_slot[PmiSetup::kMax] = {};  // its index in the plan's events
    SampleCounts counts[PmiSetup::kMax];

    // Optional (tests, debugging): every sample in order, up to trace_cap (a buffer
    // prepared on the BSP; trace_n counts them, also past the cap), as the RIP's offset
    // from the running region's code, or kOutside (~0) outside the region's code.
    static constexpr u64 kOutside = ~u64(0);
    u64* trace = nullptr;
    usize trace_cap = 0, trace_n = 0;

    void sample(u32 slot, u64 rip) override;
    void precise(u32 slot, const PreciseSample& s) override;
    // The precise records' source armed with the handler (PEBS, IBS; null: none). Set by
    // whoever prepares it on the BSP, before the runs.
    PreciseSource* precise_source = nullptr;
    void set_region(const Region* r) { region_ = r; }
    Status on_setup(Hw& hw);
    Status on_teardown(Hw& hw);

private:
    void trace_rip(u64 rip);
    const Region* region_ = nullptr;
    u32 lvt_saved_ = 0;
    u64 debugctl_saved_ = 0;
    bool lvt_ok_ = false, debugctl_ok_ = false, attached_ = false;
};

// Arms a plan's groups for sampling: periods[i] for plan.events[i] (0: counted, not
// sampled; those with a period must have Event::pmi set before planning). Replaces each
// group's hooks with the sampling hooks (which call the plan's), presets the sampled
// counters, and checks everything that can be checked without the hardware: a PMU that
// cannot interrupt (Errc::unsupported), a period that does not fit the counter
// (Errc::invalid_argument), an AMD fixed-like counter (Errc::unsupported). Each group
// with a sampled event gets a SampleGroup in *out (empty counts: SampleCounts::size).
Status sampling_prepare(MeasurePlatform& mp, PmuPlan& plan, const u64* periods, Vec<Box<SampleGroup>>* out);
// Makes sg group g's sampling: its hooks replace g's (which it calls). sampling_prepare
// does it for its groups; a group sampled only by a PreciseSource without a counter (AMD
// IBS, commands/run_ibs.cpp) gets it with setup.count == 0.
void sampling_hook(MeasurePlatform& mp, ReadGroup& g, SampleGroup* sg);

}  // namespace pmulab
