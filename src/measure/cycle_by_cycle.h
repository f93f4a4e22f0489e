// Cycle-by-cycle measurements (`pmulab run --cycle-by-cycle`): what the code's events
// are in each core cycle, nanoBench's method (Abel & Reineke; kernel/nb_km.c
// run_nanoBench_cycle_by_cycle, kernelNanoBench.py runNanoBenchCycleByCycle).
//
// A core-cycles counter is armed (Event::pmi: Intel FIXED_CTR1, AMD a PERF_CTR counting
// PMCx076) and preloaded 2^width - 1 - c, so that it overflows at the end of cycle c
// after counting was enabled; IA32_DEBUGCTL.FREEZE_PERFMON_ON_PMI (bit 12; AMD
// LbrAndPmcFreeze, CPUID 8000_0022H EAX[2]) freezes every counter there (SDM Vol. 3B
// §18.4.7; v4 and AMD: GLOBAL_STATUS.CTR_FRZ, cleared through STATUS_RESET /
// PerfCntrGlobalStatusClr before each run; v2/v3: GLOBAL_CTRL cleared), so the counters
// the region reads at its end hold their values at cycle c. The LVT performance-counter
// entry is masked during the runs (no interrupt is needed: the freeze happens at the PMU)
// and restored exactly afterwards, as DEBUGCTL is. One run set (the engine's warm-up and
// measured runs, aggregated by --agg) per cycle c and per group of events; the increment
// of an event in cycle c is value(c) - value(c - 1).
//
// Every group also reads the instructions-retired counter (Intel FIXED_CTR0, AMD
// PMCx0C0), which finds the window: nanoBench's empty benchmark (the version with 0
// copies: --basic) says how many instructions the harness retires before the code (its
// instructions at the end read, less those after the copies: the jump to the tail, the
// serialising instruction and the MOV that selects the counter, and with --loop the
// empty loop's DEC/JNZ); the window runs from the cycle after the one in which the
// harness's last instruction retires to the cycle in which the code's last instruction
// retires (found by bisection over c, the counts are monotonic in c). --end-to-end keeps
// every cycle from counting's start (nanoBench's -end_to_end).
//
// Quirks (nanoBench perform_measurements_for_cycle): counters that do not freeze together
// with the others are left out by model (Alder Lake 06_97H: PMC0; Ivy Bridge and later
// with perfmon v3/v4: PMC1), and only PMC0-3 are used.
#pragma once

#include "measure/pmu_plan.h"

namespace pmulab {

// The plan of one class of CPUs with the same PMU.
struct CbcGroupCtx;
struct CbcPlan {
    CbcPlan();
    ~CbcPlan();  // cycle_by_cycle.cpp (CbcGroupCtx is complete there)
    CbcPlan(const CbcPlan&) = delete;
    CbcPlan& operator=(const CbcPlan&) = delete;
    Vec<u32> cpus;
    PmuInfo info;
    Vec<Box<PmuPlan>> runs;     // one per group of events: each plans exactly one ReadGroup
    Vec<Box<CbcGroupCtx>> ctx;  // the hooks' state of each run
    // Per user event (input order): the run measuring it and the read within it.
    Vec<u32> run_of, read_of;
    u32 inst_read = 0;     // the instructions read in every run (read 0)
    u32 avoided_gp = 0;    // PMCs left out by the model quirks
    char quirk[120] = {};  // why, "" when none
};

// Why this PMU cannot measure cycle by cycle ("" when it can): no PMU, no freeze on PMI
// (AMD without LbrAndPmcFreeze, Intel v1), no fixed counters 0 and 1 (Intel).
const char* cbc_unsupported(const PmuInfo& info);

// Plans the user's events on one class of CPUs (`model`: CPUID display model, for the
// quirks). Errors: Errc::unsupported with the reason (nothing runs), or the allocation's.
Status cbc_plan(const PmuInfo& info, u32 family, u32 model, const Vec<Event>& events, const Vec<u32>& cpus,
                CbcPlan* out);

struct CbcOptions {
    bool end_to_end = false;
};

// One (benchmark, CPU): the window [first, last] in cycles since counting was enabled,
// and inc[(c - first) * events + e], the increment of user event e in cycle c;
// valid[c - first] is false where a run set failed (its error was reported).
struct CbcResult {
    u32 cpu = 0;
    const BenchInstance* bench = nullptr;
    u64 first = 0, last = 0;
    u64 code_instructions = 0;  // instructions of the code (the version with copies less the empty one)
    usize events = 0;
    Vec<i64> inc;
    Vec<u8> valid;
};

// Measures `bench` on `cpu` cycle by cycle (cfg: unroll, loop, reps, warm-up, agg,
// serialize, timeout, ...; benches and cpus are ignored). Every failure is reported
// through sink.failure: a run set's (the watchdog's stop, a fault), after which the sweep
// goes on with the next cycle, or the window's (nothing is measured then). Returns the
// worst class of failure (Errc::ok: every cycle was measured).
Errc cbc_measure(Hw& hw, MeasurePlatform& mp, const MeasureConfig& cfg, const CbcOptions& opts, CbcPlan& plan,
                 const BenchInstance& bench, u32 cpu, MeasureSink& sink, CbcResult* out);

}  // namespace pmulab
