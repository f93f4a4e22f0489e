// TopDown Microarchitecture Analysis (Yasin, ISPASS 2014; SDM Vol. 3B "Top-down
// Microarchitecture Analysis", "Performance Metrics"): where the issue slots go.
//
// Three ways to the level-1 breakdown (retiring, bad speculation, frontend bound,
// backend bound), chosen per CPU by topdown_support():
//   perf_metrics    Ice Lake and later P cores (IA32_PERF_CAPABILITIES[15] and fixed
//                   counter 3): TOPDOWN.SLOTS on FIXED_CTR3 and IA32_PERF_METRICS (0x329),
//                   whose bytes are 8-bit fractions of SLOTS (sum 0xFF); level 2 (heavy
//                   operations, branch mispredicts, fetch latency, memory bound) in bytes
//                   4-7 on Golden Cove and later. Both are reset together before every run
//                   (FIXED_CTR3 = 0, PERF_METRICS = 0, inside the generated code), read at
//                   the start and the end of the measured window, turned into slots at
//                   each read (floor(byte * SLOTS / 255)) and differenced like every
//                   counter, so the harness's own slots cancel between U and 2U.
//   skylake_events  Skylake-class P cores without PERF_METRICS: Intel's formulas over GP
//                   events (SLOTS = 4 * cycles, IDQ_UOPS_NOT_DELIVERED.CORE, UOPS_ISSUED.ANY,
//                   UOPS_RETIRED.RETIRE_SLOTS, INT_MISC.RECOVERY_CYCLES); more events than
//                   counters are measured in successive runs (multiplexing by rerun). Where
//                   the core's SMT sibling runs meanwhile, the SMT forms (TopdownSupport::smt).
//   arch_events     cores that enumerate the architectural TopDown events (CPUID.0AH:EBX
//                   bits 7-11: topdown slots, backend bound, bad speculation, frontend bound,
//                   retiring) on GP counters.
//   gracemont_events, crestmont_events, skymont_events
//                   E cores (Atom): Intel's E-core TMA formulas over each core's own GP
//                   events, slots = W * CPU_CLK_UNHALTED.CORE with W = 5 (Gracemont), 6
//                   (Crestmont), 8 (Skymont, Darkmont).
//   atom_fixed      E cores whose leaf 23H enumerates fixed counters 4-6 (Skymont/Darkmont:
//                   Lunar, Arrow, Panther Lake, Clearwater Forest): TOPDOWN_BAD_SPECULATION.ALL,
//                   TOPDOWN_FE_BOUND.ALL, TOPDOWN_RETIRING.ALL on FIXED_CTR4-6 (pseudo-
//                   encodings 0x0500/0x0600/0x0700), TOPDOWN_BE_BOUND.ALL_P (A4.02) on a GP
//                   counter, 8 slots per cycle.
//   zen4_pipeline, zen5_pipeline
//                   AMD Zen 4 / Zen 5: the pipeline-utilisation events (PMCx1A0
//                   de_no_dispatch_per_slot, PMCx0AA de_src_op_disp.all, PMCx0C1 ex_ret_ops,
//                   PMCx076 ls_not_halted_cyc), 6 (Zen 4) or 8 (Zen 5) dispatch slots per
//                   cycle, bad speculation = (dispatched - retired ops) / slots, and a fifth
//                   level-1 part, SMT contention (Linux tools/perf/pmu-events/arch/x86/amdzen4
//                   and amdzen5 pipeline.json). Level 2 from the same JSON: microcode and
//                   fastpath ops, mispredicts and pipeline restarts, memory and core bound,
//                   and the frontend split: fetch latency from PMCx1A0 unit mask 01h with
//                   CntMask = 6 (Zen 4) or 8 (Zen 5), the cycles no slot got an op.
// The metrics themselves (fractions of slots, validation) are formulas in metrics.h.
#pragma once

#include "measure/pmu_plan.h"
#include "x86/cpuid.h"

namespace pmulab {

enum class TopdownMethod : u8 {
    none,
    perf_metrics,
    skylake_events,
    arch_events,
    gracemont_events,
    crestmont_events,
    skymont_events,
    atom_fixed,
    zen4_pipeline,
    zen5_pipeline,
};
inline constexpr unsigned kTopdownMethods = 10;  // including none
const char* topdown_method_name(TopdownMethod m);
// The method named `name` (topdown_method_name's spelling); false when there is none.
bool topdown_method_from_name(StrView name, TopdownMethod* m);
// The level-1 parts of a method: 4, or 5 with AMD's SMT contention.
unsigned topdown_level1_parts(TopdownMethod m);

struct TopdownSupport {
    TopdownMethod method = TopdownMethod::none;
    unsigned max_level = 0;        // 0 (none), 1 or 2
    unsigned slots_per_cycle = 0;  // issue (dispatch) slots per cycle, where the method fixes it
    // skylake_events with SMT siblings that are not kept halted (docs/measure.md "SMT
    // siblings"): the SMT forms of Intel's formulas, per logical CPU (Linux skl-metrics.json
    // TopdownL1_SMT: slots = 4 * CPU_CLK_UNHALTED.THREAD / 2 * (1 + ONE_THREAD_ACTIVE /
    // REF_XCLK), recovery cycles INT_MISC.RECOVERY_CYCLES_ANY / 2), set by the caller;
    // anythread: the core has AnyThread (INT_MISC.RECOVERY_CYCLES_ANY can be counted).
    bool smt = false;
    bool anythread = false;
    char why[256] = {};  // method none: why, for the user (fits EventsForCpus::topdown_why)
};
// What this CPU offers (its PMU and its identity: the model decides level 2 and
// Skylake-class formulas).
TopdownSupport topdown_support(const PmuInfo& info, const CpuIdentity& id);

// The event specs TopDown `level` needs with this method, ';'-separated, e.g.
// "TOPDOWN.SLOTS" (perf_metrics: the metrics are reads added by add_topdown_reads; on
// Golden Cove and later also AD.10, INT_MISC.UOP_DROPPING, for Intel's definitions, unless
// `no_uop_dropping`: --no-mem has room for 6 reads only).
void topdown_event_specs(const TopdownSupport& s, unsigned level, StrBuf* specs, bool no_uop_dropping = false);

// The labels of the PERF_METRICS reads (Intel's metrics-JSON names), by byte.
inline constexpr const char* kPerfMetricsNames[8] = {"PERF_METRICS.RETIRING",         "PERF_METRICS.BAD_SPECULATION",
                                                     "PERF_METRICS.FRONTEND_BOUND",   "PERF_METRICS.BACKEND_BOUND",
                                                     "PERF_METRICS.HEAVY_OPERATIONS", "PERF_METRICS.BRANCH_MISPREDICTS",
                                                     "PERF_METRICS.FETCH_LATENCY",    "PERF_METRICS.MEMORY_BOUND"};

// perf_metrics: appends the PERF_METRICS reads of `level` (4 or 8, RDPMC ECX = 2000_0000H
// or RDMSR 0x329 as the plan reads counters) to the group that reads TOPDOWN.SLOTS on
// FIXED_CTR3, and the reset writes (FIXED_CTR3 = 0, PERF_METRICS = 0) before its start
// writes. Errc::internal when no group reads SLOTS on FIXED_CTR3; Errc::invalid_argument
// when the reads do not fit one run.
Status add_topdown_reads(PmuPlan* plan, unsigned level);

// Slots of one PERF_METRICS byte at one read: floor(byte * slots / 255).
u64 topdown_slots(u64 metrics, unsigned byte, u64 slots);
// The engine's difference for a metric read r of group g (CounterRead::metric).
u64 topdown_read_delta(const ReadGroup& g, usize r, const u64* start, const u64* end);

}  // namespace pmulab
