// The simulator's cost model (docs/sim.md "Cost model"): what a batch of retired
// instructions costs in core cycles. One cycle per instruction, plus, for every load the
// memory hierarchy did not serve from L1D, the fixed latency of the level that served it.
// The executor computes Retired::stall_cycles with memory_stall_cycles() below; the PMU
// families count Retired::cycles() = instructions + stall_cycles as core cycles, reference
// cycles and TSC ticks (sim_pmu.h).
//
// The latencies are load-to-use latencies of one unloaded access, rounded, from public
// sources; the model is serial (no overlap of misses, no memory-level parallelism), so a
// pointer chase costs what the table says and independent loads cost as much.
//   L2 hit:  12 cycles   Intel 64 and IA-32 Architectures Optimization Reference Manual,
//                        Skylake client cache parameters (L2: 12 cycles); AMD Software
//                        Optimization Guide for Family 17h Models 30h+ (Zen 2: L2 12 cycles)
//   L3 hit:  40 cycles   between Skylake client's about 42 (7-cpu.com "Intel Skylake") and
//                        Zen 2's about 39 (same AMD guide)
//   memory: 200 cycles   about 50 ns at 4 GHz (7-cpu.com "Intel Skylake": 42 cycles + 51 ns)
// One table for every vendor and model: a documented model, not a measurement.
// An L1D hit adds nothing: its latency (4-5 cycles) hides in the one cycle per instruction
// of a model that has no pipeline. Stores add nothing (store buffer).
#pragma once

#include "sim/sim_pmu.h"

namespace sim {

// Extra core cycles per load served by each level beyond L1D.
struct MemoryLatency {
    u32 l2_hit = 12;
    u32 l3_hit = 40;
    u32 memory = 200;
};

// The stall cycles of loads served by L1D, L2, L3 and memory (Retired::load_served).
inline u64 memory_stall_cycles(const u64 load_served[4], const MemoryLatency& lat = MemoryLatency{}) {
    return load_served[1] * lat.l2_hit + load_served[2] * lat.l3_hit + load_served[3] * lat.memory;
}

}  // namespace sim
