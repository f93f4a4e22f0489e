// PMU events in the measurement engine: turns event specs into counter groups
// (ReadGroup, measure.h) programmed through the PMU layer (pmu.h).
//
// Every CPU is probed once on that CPU (pmu.h probe_cpus); CPUs with the same PMU
// (PmuInfo::same_pmu: hybrid P and E cores differ, as do CPUs where RDPMC faults) share
// one plan, made without touching the hardware. A plan allocates the events into groups (alloc.h); each group is one
// run of the benchmark with:
//   reads         the counters of the group, read with the probed method (RDPMC, or
//                 RDMSR of the counter MSR), in event order; 'tsc' reads the TSC;
//   start/stop    the WRMSRs that start and stop counting inside the generated code,
//                 around the serialised reads: IA32_PERF_GLOBAL_CTRL on v2+,
//                 IA32_PERFEVTSELx.EN on v1 (PmuBackend::control_writes);
//   hooks         setup on the measuring CPU: save the PMU MSRs the group writes and
//                 program the group (counting off); teardown: restore them exactly.
// Hooks run inside Hw::run_on_cpu on preallocated per-group state (no allocation).
#pragma once

#include "base/box.h"
#include "measure/measure.h"
#include "pmu/session.h"

namespace pmulab {

struct PmuRunOptions {
    // Nonzero: every PMU counter of a group starts at 2^width - preset_below_top (its
    // own width), so that it wraps during the runs (selftest: overflow and wrap).
    u64 preset_below_top = 0;
    // The start writes leave counting disabled (selftest: GLOBAL_CTRL gating).
    bool gate_off = false;
};

// Per-group state the hooks use on the measuring CPU.
struct PmuGroupState {
    const Event* events = nullptr;
    usize n = 0;
    const CounterGroup* group = nullptr;
    PmuInfo info;  // of the plan
    PmuTouch touch;
    PmuRunOptions opts;
    u64 presets[2 * regs::kMaxGpCounters + 1] = {};
    bool use_presets = false;  // presets[] are programmed without preset_below_top (sampling.h)
    PmuSession session;
    // Filled by teardown: the overflow flags on the last CPU measured (v2+), and what
    // could not be restored exactly on any CPU (accumulated).
    bool overflow_read = false;
    OverflowState overflow;
    RestoreReport restore;
};

struct PmuPlan {
    Vec<u32> cpus;  // the CPUs (indices) this plan measures
    PmuInfo info;   // their PMU
    Vec<Event> events;
    Allocation alloc;
    Vec<ReadGroup> groups;          // alloc.groups[i] -> groups[i]
    Vec<Box<PmuGroupState>> state;  // per group: its hooks' context (groups[i].hooks.ctx)
};

// Whether every event is 'tsc' (the engine's plain path, no PMU access at all).
bool events_are_tsc_only(const Vec<Event>& events);

// Groups the probed CPUs by PMU (group_by_pmu) and plans each group's counters; no
// hardware access. Errors: a CPU that could not be probed (its MP Services error),
// an event this PMU cannot count (Errc::unsupported, prefixed with the CPUs, e.g.
// "CPUs 0-3: cannot count 'instructions': no architectural performance monitoring:
// CPUID.0AH:EAX[7:0] = 0 (...)"), more than kMaxReads counters in one group.
Status plan_pmu_runs(const Vec<ProbedCpu>& cpus, const Vec<Event>& events, const PmuRunOptions& opts,
                     Vec<Box<PmuPlan>>* plans);

// Plans for already detected PMUs (no hardware access): one plan for `cpus`, all of
// which have `info`.
Status plan_pmu_groups(const PmuInfo& info, const Vec<Event>& events, const Vec<u32>& cpus, const PmuRunOptions& opts,
                       PmuPlan* out);

}  // namespace pmulab
