// The NetBurst (Pentium 4 / NetBurst Xeon) PMU family: the kNetBurstFamily description
// (pmu_family.h). Model and tables: x86/netburst_regs.h.
//
// Allocation: each event needs a counter AND an ESCR that can select it and is wired to
// that counter; no two events of a group share either. Groups are filled in input order
// (TakenAlone events alone), each checked by exhaustive placement (netburst.h).
//
// Programming sequence (SDM Vol. 3B §20.15): program: for each counter of the group the
// CCCR's ENABLE is cleared if set, the preset written to the counter (40 bits), the ESCR
// written (event select, event mask, OS/USR: T0 bits, or T1 bits on the second logical
// processor of a Hyper-Threading core), then the CCCR (ESCR select, active thread 11b,
// ENABLE clear). Counters of earlier groups are released (CCCR = 0). start: CCCR.ENABLE
// set per counter; stop: cleared; both read the CCCR first and keep its OVF flag (the
// constant control_writes for generated code do not, and clear it). overflow: CCCR.OVF
// (bit 31). save() reads every ESCR of the model, the CCCRs and counters it may touch;
// restore() disables the touched CCCRs first, then puts back counters, ESCRs and CCCRs
// exactly.
#pragma once

#include "pmu/pmu.h"
#include "x86/netburst_regs.h"

namespace pmulab {

// The NetBurst family's own state in a PmuCore.
struct NetBurstPmuState {
    static constexpr unsigned kN = netburst::kCounters;
    // Ledger capacity: CCCR + counter per counter, every ESCR of the model.
    static constexpr unsigned kLedger = 2 * kN + netburst::kEscrCount;
    unsigned thread = 0;        // logical processor of a Hyper-Threading core (T0/T1 fields)
    bool started_here = false;  // start() ran since program(): CCCR.OVF was kept (overflow)
    u64 group_cccr[kN] = {};    // the programmed group's CCCR values without ENABLE
};

}  // namespace pmulab
