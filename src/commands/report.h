// `pmulab report` (cmd_report.cpp): the census, selftest and the exact-count checks
// (report_checks.cpp) in one unattended run, with a summary a person can send
// (docs/report.md).
#pragma once

#include "commands/selftest.h"

namespace pmulab {

// The exact-count checks on `cpus`, in the spirit of the KVM selftests'
// pmu_counters_test: instructions retired exactly the kernel's count (the fixed counter
// and a GP counter), branches exactly the body's count, counts that scale exactly with
// the unroll, and core cycles no fewer than instructions / kMaxRetireWidth. Each SKIPs
// with the reason where the event or the PMU does not exist.
void check_exact_counts(Checks& ck, Hw& hw, MeasurePlatform* mp, const Vec<u32>& cpus);

// No x86 core retires more than this many instructions per cycle (today's widest
// allocate 8 per cycle): the bound of the cycles check.
inline constexpr u64 kMaxRetireWidth = 16;

}  // namespace pmulab
