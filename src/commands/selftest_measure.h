// One PMU measurement of a built-in kernel (or a small user body) on one CPU, with every
// count it gives: what selftest's PMU checks (selftest_pmu.cpp) and the report's
// exact-count checks (report_checks.cpp) judge.
#pragma once

#include "commands/measure_cmd.h"

namespace pmulab {

// Everything one PMU measurement gives, per event in input order.
struct PmuEventResult {
    Frac median, min, max;
    Vec<i64> short_raw, long_raw;  // per repetition: the U (or 0) and the 2U (or U) version
    bool seen = false;
};
struct PmuMeasurement {
    Vec<PmuEventResult> ev;
    bool overflow_read = false;
    OverflowState overflow;
};

struct PmuArgs {
    KernelId kernel = KernelId::add_indep;
    const UserCode* user = nullptr;  // measured instead of `kernel` when set
    u64 unroll = 100;
    u64 loop = 1;
    u32 warmup = 3;
    PmuRunOptions opts;
};

// `spec` (one event list in info's dialect) measured on `cpu`, whose PMU is `info`.
Result<PmuMeasurement> measure_pmu(Hw& hw, MeasurePlatform& mp, u32 cpu, const PmuInfo& info, const char* spec,
                                   const PmuArgs& a);
// Whether a single named event can be counted here, on a counter of kind `want`.
bool countable(const PmuInfo& info, const char* spec, CounterKind want);

}  // namespace pmulab
