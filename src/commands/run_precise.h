// `run --sample EVENT[:PERIOD] --precise` (docs/sampling.md "Precise sampling (PEBS)"):
// the option's checks and the PEBS of every sampled group (pmu/pebs.h), chained around
// the group's sampling hooks (measure/sampling.h).
#pragma once

#include "base/box.h"
#include "measure/measure.h"
#include "measure/sampling.h"
#include "pmu/pebs.h"
#include "pmu/pebs_pt.h"

namespace pmulab {

// One sampled group's PEBS: its source (armed with the group's PMI handler), the sampling
// hooks it wraps and the pages of the CPUs' DS areas and buffers (freed with it).
struct PreciseRun {
    PebsSource source;
    GroupHooks inner;
    MeasurePlatform* mp = nullptr;
    Vec<void*> pages;
    PebsPt pt;            // --pebs-output pt: the trace of each CPU (pmu/pebs_pt.h)
    Vec<void*> pt_pages;  // its output pages (PebsPt::kOutputBytes each)
    PreciseRun() = default;
    PreciseRun(const PreciseRun&) = delete;
    PreciseRun& operator=(const PreciseRun&) = delete;
    ~PreciseRun();
};

}  // namespace pmulab
