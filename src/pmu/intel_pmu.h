// Intel architectural performance monitoring (CPUID.0AH versions 1-6): the
// kIntelArchFamily description (pmu_family.h; SDM Vol. 3B §20.2, the programming
// sequence is at the top of pmu.h).
#pragma once

#include "pmu/pmu.h"

namespace pmulab {

// The Intel family's own state in a PmuCore.
struct IntelPmuState {
    static constexpr unsigned kMax = 16;  // regs::kMaxGpCounters / kMaxFixedCounters
    // Ledger capacity: GLOBAL_CTRL, GLOBAL_STATUS, FIXED_CTR_CTRL, PERFEVTSELx + PMCx,
    // FIXED_CTRx, IA32_PERF_METRICS (with SLOTS on FIXED_CTR3), aux MSRs.
    static constexpr unsigned kLedger = 3 + 2 * kMax + kMax + 1 + PmuTouch::kMaxAux;
    u64 group_evtsel[kMax] = {};  // the programmed group's PERFEVTSELx values without EN
    u64 group_global = 0;         // GLOBAL_CTRL enables of the group
};

}  // namespace pmulab
