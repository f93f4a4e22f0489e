// The uncore of a simulated Intel client part: the C-Box performance counters, one C-Box
// per L3 slice, counting the LLC_LOOKUP event of the lookups the memory hierarchy makes
// in its slice (sim_cache.h, sim_slice.h). Written from the SDM (Vol. 4, the MSR tables
// of the 2nd .. 8th generation Core processors; Vol. 3B, "Uncore Performance Monitoring"
// of the 2nd generation Core) and Linux arch/x86/events/intel/uncore_snb.c:
//
//   MSR_UNC_PERF_GLOBAL_CTRL  391H (Sandy Bridge .. Broadwell), E01H (Skylake .. Coffee
//                             Lake): bits 4:0 PMI core select (3:0 before Skylake),
//                             29 EN (every uncore counter counts only while set), 30 WakePMI,
//                             31 FREEZE; other bits reserved (#GP).
//   MSR_UNC_CBO_CONFIG        396H, read-only: bits 3:0 the number of C-Boxes plus one
//                             (nanoBench's cacheLib.getNCBoxUnits subtracts the one).
//   MSR_UNC_CBO_n_PERFEVTSEL0/1  700H + 10H*n, +1: event 7:0, unit mask 15:8, edge 18,
//                             EN 22, invert 23, threshold 28:24; other bits reserved (#GP).
//   MSR_UNC_CBO_n_PERFCTR0/1  706H + 10H*n, +1: 44-bit counters.
//
// Counted: event 34H (UNC_CBO_CACHE_LOOKUP) whose unit mask holds the lookup's state
// (01H M, 02H E, 04H S, 08H I: a hit is E, the model has no dirty lines; a miss is I) and
// its request (10H read: a load; 20H write: a store; 80H any request). Only loads and
// stores that reach the L3 (missed L1D and L2) look it up; CLFLUSH, WBINVD and code
// fetches do not. Edge, invert and threshold are kept and not modelled.
#pragma once

#include "x86/cpuid.h"

namespace sim {

using pmulab::u32;
using pmulab::u64;
using pmulab::u8;

class SimUncore {
public:
    static constexpr u32 kMaxBoxes = 8, kCounters = 2;
    static constexpr u32 kCboConfig = 0x396, kGlobalSnb = 0x391, kGlobalSkl = 0xE01;
    static constexpr u32 kCbo0EvtSel = 0x700, kCbo0Ctr = 0x706, kCboStride = 0x10;
    static constexpr u8 kLlcLookup = 0x34;
    static constexpr u64 kCounterMask = (u64(1) << 44) - 1;

    // `boxes` C-Boxes (2, 4 or 8); the global control at E01H (Skylake on) or 391H.
    SimUncore(u32 boxes, bool global_e01);
    u32 boxes() const { return boxes_; }
    // The C-Boxes follow the L3's slices when --cache changes them (1: no C-Box counts).
    void set_boxes(u32 boxes) { boxes_ = boxes < kMaxBoxes ? boxes : kMaxBoxes; }

    bool claims(u32 msr) const;
    // Returns 0 or the fault vector.
    u8 rdmsr(u32 msr, u64* value) const;
    u8 wrmsr(u32 msr, u64 value);

    // One lookup in slice `slice` by a load (write false) or a store that hit or missed.
    void llc_lookup(u32 slice, bool hit, bool write);

private:
    u32 global_msr() const { return global_e01_ ? kGlobalSkl : kGlobalSnb; }
    u32 boxes_;
    bool global_e01_;
    u64 global_ = 0;
    u64 evtsel_[kMaxBoxes][kCounters] = {};
    u64 ctr_[kMaxBoxes][kCounters] = {};
};

}  // namespace sim
