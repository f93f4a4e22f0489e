// The AMD core PMU family (family 10h and later: K10, Bulldozer, Zen 1-5; also Hygon):
// the kAmdFamily description (pmu_family.h).
//
// Counters (APM Vol. 2 §13.2): the legacy PerfEvtSel0-3/PerfCtr0-3 (C001_0000H/
// C001_0004H), or with PerfCtrExtCore (CPUID Fn8000_0001_ECX[23]) 6 counters at
// PERF_CTL/PERF_CTR C001_0200H + 2i / C001_0201H + 2i (the legacy addresses alias 0-3),
// or with PerfMonV2 (Fn8000_0022_EAX[0]) Fn8000_0022_EBX[3:0] counters at the same
// addresses plus PerfCntrGlobalCtl/Status/StatusClr/StatusSet (C000_0300H-0303H). All
// 48 bits wide. RDPMC ECX = i reads PERF_CTR i.
//
// "Fixed-like" counters, CounterKind::fixed indices (x86/amd_regs.h FixedLike): 0 IRPerfCount
// (C000_00E9H; enabled by HWCR[30] IRPerfEn; counts every privilege level), 1 APERF,
// 2 MPERF (read through the read-only aliases C000_00E8H/E7H). They are free-running:
// program() enables IRPerfCount, start()/stop() do not gate them; measure by difference.
//
// Programming sequence
//   program:  PerfMonV2: GLOBAL_CTL = 0. Each counter of the group: EN cleared in its
//             PERF_CTL if it was set (a counter is written only while disabled), the
//             preset written to PERF_CTR (48 bits), then PERF_CTL = the event (with EN on
//             PerfMonV2, where GLOBAL_CTL gates counting; without EN otherwise). Counters
//             of earlier groups are released (PERF_CTL = 0). IRPerfCount: HWCR.IRPerfEn
//             set. PerfMonV2: the group's GLOBAL_STATUS bits cleared via STATUS_CLR.
//   start:    PerfMonV2: GLOBAL_CTL = the group's counters; else EN set counter by counter.
//   stop:     GLOBAL_CTL = 0; else EN cleared.
//   overflow: PerfMonV2: GLOBAL_STATUS; else a counter overflowed when it wrapped below
//             its preset (the 48-bit counter's carry out of bit 47 is not latched).
//   restore:  GLOBAL_CTL = 0 and EN cleared first; counters; PERF_CTLs; HWCR; GLOBAL_STATUS
//             bits back as they were (STATUS_CLR/STATUS_SET: exact); GLOBAL_CTL last.
#pragma once

#include "pmu/pmu.h"
#include "x86/amd_regs.h"

namespace pmulab {

// The AMD family's own state in a PmuCore.
struct AmdPmuState {
    static constexpr unsigned kMax = regs::amd::kMaxCounters;
    // Ledger capacity: GLOBAL_CTL, GLOBAL_STATUS, PERF_CTL + PERF_CTR per counter, HWCR.
    static constexpr unsigned kLedger = 2 + 2 * kMax + 1;
    u64 group_ctl[kMax] = {};  // the programmed group's PERF_CTL values without EN
    u64 preset[kMax] = {};     // its presets (overflow without PerfMonV2)
};

}  // namespace pmulab
