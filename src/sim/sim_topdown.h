// The simulated CPU's TopDown model (sim_topdown.cpp) and the TopDown-era parts.
//
// With a slot budget (set_topdown) every cycle of run()
//    on AMD Zen 4/5 issues the pipeline-utilisation events instead (PMCx1A0 unit masks
//    01h frontend, 1Eh backend; PMCx0AA unit mask 07h = retiring + bad speculation ops
//    dispatched; PMCx0C1 = retiring ops; no SMT contention; level 2: PMCx1C2 = heavy ops,
//    PMCx0C3 = branch mispredicts, PMCx096 (Zen 4; Zen 5: PMCx09F unit mask 01h) = the rest
//    of bad speculation, PMCx0D6 unit masks
//    02h = backend and A2h = memory bound; the frontend split needs no event of its own:
//    a counter of PMCx1A0 unit mask 01h with CntMask = N counts the cycles whose fe_bound
//    slots are >= N (APM Vol. 2 13.2.1, SimCpu::run), so fetch latency is every cycle of a
//    budget with fe_bound = slots_per_cycle and none otherwise; the budget's fetch_lat is
//    not read on AMD), and on Intel
//    also issues TOPDOWN.SLOTS (A4H/01H, fixed counter 3) and the level-1 category
//    events (architectural A4H/02H, 73H/00H, 9CH/01H, C2H/02H: fixed counters 4-6 where
//    they exist; UOPS_ISSUED.ANY 0EH/01H = retiring + bad speculation slots, Skylake's
//    formula inputs; on Gracemont E cores also 71H/00H frontend, 74H/00H backend, C2H/00H
//    retiring, on Crestmont 71H/00H, 74H/00H, 72H/00H retiring). IA32_PERF_METRICS (0x329, SDM Vol. 3B "Performance
//    Metrics"; exists with PERF_CAPABILITIES[15] and fixed counter 3) accumulates the budget's categories while
//    FIXED_CTR3 counts and GLOBAL_CTRL[48] (EN_PERF_METRICS) is set, and reads as 8-bit fractions of their sum: level 1
//    (bytes 0-3) by largest remainder so that they sum to 0xFF; level 2 (bytes 4-7: heavy operations, branch
//    mispredicts, fetch latency, memory bound; Golden Cove and later, or
//    PmuOverrides::topdown_l2) rounded and never above their level-1 parent. A WRMSR of
//    0 to PERF_METRICS or to FIXED_CTR3 resets the internal counts; a nonzero write
//    sets them to its bytes (a restore reads back what was written). RDPMC ECX =
//    2000_0000H (ECX[29]) reads PERF_METRICS. GLOBAL_STATUS[48] (PERF_METRICS_OVF) is
//    set when FIXED_CTR3 overflows while metrics count; STATUS_RESET[48] clears it.
//
// SimCpu::set_each_cycle adds a test's events to every cycle besides the budget's (the AMD
// derived-metric tests: PMCx0C2 ex_ret_brn, PMCx0C3 ex_ret_brn_misp, PMCx064 unit masks
// 09h/F6h L2 misses/hits); pmulab-sim gives none.
#pragma once

#include "sim/sim_cpu.h"

namespace sim {

// The TopDown-era parts (intel_icelake, intel_sapphire_rapids, intel_skylake,
// intel_alder_lake, with_tsc_leaf15) are in sim_builders.h.

// E cores by microarchitecture, from CPUID.01H and 1AH (hybrid E cores, core type 20H, and
// Atom-only SoCs): their TopDown events and slots per cycle differ (Intel perfmon JSON).
enum class SimAtom : u8 { none, gracemont, crestmont, skymont };
SimAtom sim_atom_core(const CpuidSnapshot& s);

// The default slot budget pmulab-sim gives every CPU that has TopDown events (a documented
// model, docs/metrics.md): W slots per cycle with W = 5/6/8 on Gracemont/Crestmont/Skymont
// E cores, 6 on Zen 4, 8 on Zen 5, CPUID.23H.0:ECX[7:0] or else 4 on other Intel cores
// (version 2 and later); W/2 retiring, 1 bad speculation, 1 frontend bound, the rest
// backend bound; level 2: 1 heavy operation, 1 branch mispredict, 1 fetch latency, half the
// backend (rounded up) memory bound; on AMD no branch mispredicts (bad speculation is
// pipeline restarts). 0 (no budget) for other CPUs.
u64 default_topdown_width(const SimCpu& c);
TopdownBudget default_topdown_budget(u64 slots_per_cycle);
void apply_default_topdown(SimMachine& m);

}  // namespace sim
