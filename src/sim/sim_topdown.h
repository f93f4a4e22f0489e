// The simulated CPU's TopDown model (sim_topdown.cpp) and the TopDown-era parts.
//
// With a slot budget (set_topdown) every cycle of run()
//    also issues TOPDOWN.SLOTS (A4H/01H, fixed counter 3) and the level-1 category
//    events (architectural A4H/02H, 73H/00H, 9CH/01H, C2H/02H: fixed counters 4-6 where
//    they exist; UOPS_ISSUED.ANY 0EH/01H = retiring + bad speculation slots, Skylake's
//    formula inputs). IA32_PERF_METRICS (0x329, SDM Vol. 3B "Performance Metrics";
//    exists with PERF_CAPABILITIES[15] and fixed counter 3) accumulates the budget's
//    categories while FIXED_CTR3 counts and GLOBAL_CTRL[48] (EN_PERF_METRICS) is set,
//    and reads as 8-bit fractions of their sum: level 1 (bytes 0-3) by largest
//    remainder so that they sum to 0xFF; level 2 (bytes 4-7: heavy operations, branch
//    mispredicts, fetch latency, memory bound; Golden Cove and later, or
//    PmuOverrides::topdown_l2) rounded and never above their level-1 parent. A WRMSR of
//    0 to PERF_METRICS or to FIXED_CTR3 resets the internal counts; a nonzero write
//    sets them to its bytes (a restore reads back what was written). RDPMC ECX =
//    2000_0000H (ECX[29]) reads PERF_METRICS. GLOBAL_STATUS[48] (PERF_METRICS_OVF) is
//    set when FIXED_CTR3 overflows while metrics count; STATUS_RESET[48] clears it.
//
#pragma once

#include "sim/sim_cpu.h"

namespace sim {

// TopDown-era parts (CPUID values from the SDM/perfmon tables; PERF_CAPABILITIES[15] where
// the part has PERF_METRICS): Ice Lake client (06_7EH, v5, 8 GP, fixed 0-3, level 1),
// Sapphire Rapids (06_8FH, also level 2), Skylake client (06_5EH, v4, 4 GP, fixed 0-2,
// no PERF_METRICS), and Alder Lake as intel_hybrid() with PERF_METRICS on the P cores.
inline constexpr u64 kIceLakePerfCaps = 0x33c5 | (1ull << 15);
SimMachine intel_icelake(u32 ncpus = 2);
SimMachine intel_sapphire_rapids(u32 ncpus = 2);
SimMachine intel_skylake(u32 ncpus = 2);
SimMachine intel_alder_lake();

}  // namespace sim
