// The measurement engine's work on the measuring CPU (engine_worker.cpp): the state
// a job hands to that CPU, and the worker that runs there.
#pragma once

#include "measure/measure.h"
#include "measure/noise.h"

namespace pmulab {

// One (CPU, group) job on the measuring CPU: everything is prepared on the BSP (the
// worker allocates nothing); status is the job's result.
struct WorkerState {
    Hw* hw = nullptr;
    MeasurePlatform* mp = nullptr;
    const MeasureConfig* cfg = nullptr;  // reps, warm-up, timeout, interrupt mode
    const ReadGroup* group = nullptr;
    Region regions[2];
    const Region* once = nullptr;  // the one-time-init region, or null
    RegionFrame* frame = nullptr;
    const u64* regs = nullptr;  // initial registers (frame->gpr is reset from them)
    u16 carry = 0;
    i64* raw[2] = {nullptr, nullptr};  // [rep * nreads + read]
    const NoiseCaps* caps = nullptr;   // null: not probed (no provenance, no guard)
    SerializeMode mode = SerializeMode::lfence;
    NoiseRecord* noise = nullptr;
    u8 prefetch_plan = 0;  // out: the MeasureConfig::prefetch this CPU took (PrefetchGuard)
    Status status;
};

// Runs on the measuring CPU: setup (e.g. save and program the PMU), probes, the
// runs, teardown (after setup, whatever happened). Setup comes first so that it
// saves the state from before pmulab touched anything, the probes' WRMSRs included.
void worker_on_cpu(WorkerState* c);

}  // namespace pmulab
