// Cycle-by-cycle internals shared by cycle_by_cycle.cpp (planning), cycle_by_cycle_hooks.cpp
// (the hooks on the measuring CPU) and cycle_by_cycle_run.cpp (the driver).
#pragma once

#include "measure/cycle_by_cycle.h"
#include "pmu/pmi.h"

namespace pmulab {

// One run's hooks state: the PMU session's own hooks (save + program, restore) wrapped
// with the freeze: DEBUGCTL and the LVT entry saved, set and restored exactly, and before
// every run the freeze and overflow bits reset and the cycles counter preloaded.
struct CbcGroupCtx {
    GroupHooks inner;  // pmu_plan's setup/teardown, with their context
    MeasurePlatform* mp = nullptr;
    PmiSetup pmi;      // counters[0]: the armed cycles counter
    u64 ack_mask = 0;  // the status bits the reset before each run clears
    u64 preload = 0;   // written to the armed counter before every run (BSP sets it)
    // Saved on the measuring CPU by setup, restored by teardown.
    bool debugctl_saved = false, lvt_saved = false;
    u64 debugctl = 0;
    u32 lvt = 0;
};

// The runs of a plan: one PmuPlan per group of user events (internal[0..1] first).
Status cbc_plan_runs(const PmuInfo& info, const Event internal[2], const Vec<Event>& users, const Vec<i32>& shared,
                     const Vec<Vec<u32>>& runs, CbcPlan* out);

// The preload that makes the armed counter overflow at the end of cycle c (0-based from
// counting's start): 2^width - 1 - c.
Result<u64> cbc_preload(const PmuInfo& info, const CbcGroupCtx& ctx, u64 cycle);

}  // namespace pmulab
