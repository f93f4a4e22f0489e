// `pmulab events` (cmd_events.cpp): the pieces shared by the command and its listing of
// what each CPU can count (events_listing.cpp). Internal to src/commands.
#pragma once

#include "app/out.h"
#include "pmu/pmu.h"

namespace pmulab::events_cmd {

// A selected CPU, probed once (its PMU and its identity for the event files).
struct CpuPmu : ProbedCpu {
    u64 apic_id = 0;
};

// Indices of `all` grouped by identical PMU (first-seen order); unreachable CPUs alone.
Vec<Vec<u32>> classes(const Vec<CpuPmu>& all);
// The CPU numbers of one class.
Vec<u32> class_cpus(const Vec<CpuPmu>& all, const Vec<u32>& cls);

// The listing: a {"type":"pmu"} record and {"type":"event"} records per CPU; in text, a
// table per class of CPUs with the same PMU, then `model_text` (the event files' blocks)
// and the event syntax of the dialects listed. CPUs that could not be reached are
// reported as errors (and fail the command).
void list(Out& out, const Vec<CpuPmu>& all, const StrBuf& model_text);

}  // namespace pmulab::events_cmd
