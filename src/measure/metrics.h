// Derived metrics: formulas over the per-iteration values of measured events, kept as
// data (perf stat -M, likwid performance groups, Intel's metrics JSON), with perf-style
// validation. docs/metrics.md describes the file format and the method.
//
// A metric file is text, one definition per line, '#' starts a comment; a definition is
// ';'-separated key=value fields:
//     name=IPC; groups=Basic; unit=instructions/cycle; range=0..;
//         formula=INST_RETIRED.ANY / CPU_CLK_UNHALTED.THREAD
// (on one line). Keys: name (required, [A-Za-z0-9_.]+), formula (required), groups
// (','-separated), unit, range (LO..HI, either side may be empty), level (1 or 2: TopDown
// levels), parent (the level-1 metric a level-2 one belongs to), method (a TopDown method
// of topdown.h, e.g. perf_metrics or zen4_pipeline: the variant is used only on CPUs of
// that method), desc. Formulas: numbers (decimal, with an optional fraction), event labels
// as the records name them (letters, digits, '_', '.', ':'; anything else in [brackets]),
// + - * / and parentheses. A name may have several definitions: the first whose method
// fits and whose inputs were all measured is used.
//
// Arithmetic is exact (Frac, stats.h): no floating point; a step that overflows 64 bits
// or divides by zero makes the metric undefined, with the reason.
#pragma once

#include "base/base.h"
#include "measure/stats.h"
#include "measure/topdown.h"

namespace pmulab {

struct MetricDef {
    char name[48] = {};
    char groups[96] = {};
    char unit[32] = {};
    char formula[320] = {};
    char parent[48] = {};
    char desc[96] = {};
    bool has_lo = false, has_hi = false;
    Frac lo, hi;
    u8 level = 0;
    TopdownMethod method = TopdownMethod::none;  // none: every CPU
};

struct MetricSet {
    Vec<MetricDef> defs;
};

// Parses metric definitions; errors name `origin` and the line ("FILE:3: ..."),
// Errc::invalid_argument. Formulas are checked for syntax here.
Status parse_metric_text(StrView text, const char* origin, MetricSet* out);
// The built-in definitions (IPC, CPI, branch-miss rate, uops per instruction, cache miss
// ratios, frequency ratios, TopDown levels 1 and 2): the same format, compiled in.
extern const char kBuiltinMetrics[];
// Whether `name` is a metric or a group of `set` (case-insensitive).
bool metric_or_group_known(const MetricSet& set, StrView name);

// The event labels a formula reads, appended to *out without duplicates.
Status formula_inputs(StrView formula, Vec<StrView>* out);

// Per-iteration values of the events measured for one (benchmark, CPU).
class MetricInputs {
public:
    virtual bool get(StrView label, Frac* value) const = 0;

protected:
    ~MetricInputs() = default;
};
// Evaluates a formula; Errc::invalid_argument for syntax, Errc::not_found for a missing
// input, Errc::unsupported for a division by zero or an overflow (the value is undefined).
Result<Frac> eval_formula(StrView formula, const MetricInputs& in);

// The metric names a --metrics list selects, in order, without duplicates: each item is
// a metric name or a group name ("TopdownL1"). Unknown names are Errc::invalid_argument.
Status select_metrics(const MetricSet& set, StrView list, Vec<StrView>* names);

// One evaluated metric.
struct MetricValue {
    const MetricDef* def = nullptr;
    bool ok = false;  // evaluated; else `why`
    Frac value;
    char why[160] = {};
    bool no_variant = false;  // no definition for this CPU's TopDown method
    // Validation (perf's rules): range, level-1 sum, level-2 <= parent. Flagged, never hidden.
    char violation[200] = {};
};
// Tolerance of the validation rules: 1/100 (ranges widened by 0.01 on each side,
// |sum of level 1 - 1| <= 0.01, level 2 <= parent + 0.01) at least; with PERF_METRICS
// inputs, perf_metrics_tolerance; see docs/metrics.md.
inline constexpr Frac kMetricTolerance{1, 100};

// The tolerance for metrics over PERF_METRICS reads, from the SLOTS of a short (U) and a
// long (2U) run. A byte is a 1/255 step of the slots since the reset, so each read of a
// category is off by up to slots/255 plus 1 for the floor; after the U/2U difference a
// category is off by up to ((S_U + S_2U)/255 + 4) slots of the S_2U - S_U the iterations
// own, and a metric that is a difference of two categories by twice that:
// max(kMetricTolerance, 2 * ((S_U + S_2U)/255 + 4) / (S_2U - S_U)). kMetricTolerance when
// S_2U <= S_U (no slots to speak of).
Frac perf_metrics_tolerance(u64 slots_short, u64 slots_long);

// Evaluates `names` for one (benchmark, CPU): for each, the first definition whose method
// fits `method` and whose inputs all exist. Then validates the whole set.
void evaluate_metrics(const MetricSet& set, const Vec<StrView>& names, TopdownMethod method, const MetricInputs& in,
                      Vec<MetricValue>* out, Frac tolerance = kMetricTolerance);
// The validation pass alone (evaluate_metrics calls it): the level-1 sum is checked when
// all `level1_parts` level-1 metrics were evaluated (topdown_level1_parts: 4, AMD 5).
void validate_metrics(Vec<MetricValue>* values, unsigned level1_parts = 4, Frac tolerance = kMetricTolerance);
// The level-2 parts of a level-1 metric sum to it (within kMetricTolerance), checked where
// every level-2 metric `set` defines under that parent for `method` was evaluated (e.g. AMD's
// tma_fetch_latency + tma_fetch_bandwidth = tma_frontend_bound); evaluate_metrics calls it.
void validate_level2_sums(const MetricSet& set, TopdownMethod method, Vec<MetricValue>* values,
                          Frac tolerance = kMetricTolerance);

// The formula input that is not an event: the TSC frequency in Hz (census/tsc_freq.h),
// given by the platform; a formula reading it is undefined where the frequency is unknown.
inline constexpr const char kTscFrequencyInput[] = "TSC_FREQUENCY";

}  // namespace pmulab
