// Which logical processors a command acts on: the --cpu option shared by msr, run,
// events and selftest.
#pragma once

#include "app/args.h"
#include "x86/hw.h"

namespace pmulab {

// CPU selection shared by commands: "--cpu N", "--cpu all", "--cpu bsp".
struct CpuSelection {
    bool all = false;
    bool bsp = true;  // default
    u32 index = 0;
};
Result<CpuSelection> parse_cpu_selection(const char* value);
// If the current word is "--cpu" (with its value), consumes it into *sel and returns
// true; a missing or bad value sets *err (the caller reports it as a usage error).
bool take_cpu_option(Args& args, CpuSelection* sel, Status* err);
// Expands a selection to CPU indices; fails when N is out of range.
Status expand_cpu_selection(Hw& hw, const CpuSelection& sel, Vec<u32>* cpus);

}  // namespace pmulab
