// Which logical processors a command acts on: the --cpu option shared by msr, run,
// events and selftest.
#pragma once

#include "app/args.h"
#include "x86/cpuid.h"
#include "x86/hw.h"

namespace pmulab {

// CPU selection shared by commands: "--cpu bsp" (the default), "--cpu all", "--cpu N",
// lists and ranges ("--cpu 0,2", "--cpu 1-3,6"), and on hybrid parts the core types
// ("--cpu core": P-cores, "--cpu atom": E-cores, CPUID.1AH:EAX[31:24]).
struct CpuSelection {
    static constexpr unsigned kMaxRanges = 16;
    struct Range {
        u32 lo = 0, hi = 0;
    };
    bool all = false;
    bool bsp = true;  // default
    u32 index = 0;    // the first CPU of a list
    Range ranges[kMaxRanges];
    u8 nranges = 0;    // 0: not a list
    u8 core_type = 0;  // kCoreTypeCore / kCoreTypeAtom: every CPU of that type
};
Result<CpuSelection> parse_cpu_selection(const char* value);
// Expands a selection to CPU indices; fails when N is out of range.
Status expand_cpu_selection(Hw& hw, const CpuSelection& sel, Vec<u32>* cpus);

}  // namespace pmulab
