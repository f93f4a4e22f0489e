// Options of the measurement commands `pmulab run` and `pmulab selftest`
// (src/commands/cmd_run.cpp, cmd_selftest.cpp).
#pragma once

#include "app/out.h"
#include "app/args.h"
#include "commands/commands.h"
#include "measure/measure.h"
#include "measure/metrics.h"
#include "measure/pmu_plan.h"
#include "measure/sampling.h"
#include "pmu/amd_l3.h"
#include "pmu/cbox.h"
#include "pmu/ibs.h"
#include "commands/run_precise.h"
#include "pmu/lbr.h"
#include "x86/rapl.h"

namespace pmulab {

// One `--sample EVENT[:PERIOD]` (run_sample.cpp): the event as written (modifiers kept)
// and its period (the default for the event when none is given).
struct SampleSpec {
    StrView event;
    u64 period = 0;
    bool given = false;  // the period was written
    // Sampled precisely (PEBS with --precise, IBS): the record says "precise": true and
    // gives each bucket's data addresses and latencies (run_sample_precise.h).
    bool precise = false;
    bool pebs_pt = false;  // --pebs-output pt: the record says "pebs_output": "pt" (pmu/pebs_pt.h)
    // AMD IBS (ibs_op, ibs_op_cycles, ibs_fetch; run_ibs.cpp): not a PMU event; the record's
    // "source" names it.
    IbsKind ibs = IbsKind::none;
    const char* source = nullptr;
};

// `pmulab run` options, parsed but not yet bound to a machine.
struct RunOptions {
    MeasureConfig cfg;               // benches, unroll, loop, reps, warmup, agg, basic, irq, serialize, seed
    CpuSelection cpu;                // expanded into cfg.cpus by the command
    Vec<StrView> events;             // the --events specs split at ',' (default: tsc)
    const char* events_arg = "tsc";  // the --events value as given (PMU specs: parse_event_list)
    // Repeated --bench, --events and --size accumulate (as perf's -e a -e b): the values
    // joined here (',' for kernels and sizes, ';' for events, whose perf terms use ',').
    StrBuf bench_joined, events_joined, sizes_joined;
    const char* events_file = nullptr;  // --events-file PATH (events/event_files.h), or null
    Vec<u64> sizes;                     // --size list (default: kBufferDefault)
    bool sizes_given = false;
    bool raw = false;       // --raw: per-repetition counts in the records
    bool progress = false;  // --progress: progress lines / records
    unsigned decimals = 2;  // --decimals: at least this many (run_records.cpp: more for small values)
    // Text-table column widths, widened by result_table_fit to the longest names.
    u32 bench_width = 14, event_width = 10, counter_width = 8;
    // User code: one UserCode per `--code HEX` / `--code-file PATH` (each a group with
    // its own --name), and the init blocks every code shares. Hex is parsed by
    // parse_run_options, files are read by the command (boot volume, load_user_code).
    Vec<UserCode> codes;
    Vec<const char*> body_files;  // of each code: its --code-file, or null (hex)
    Vec<const char*> code_names;  // --name of each group (null: not given)
    UserCode shared;              // init, late_init, one_time_init of --init HEX ...
    bool has_user = false;
    const char* code_file[4] = {};  // [1..3]: --init-file, --late-init-file, --one-time-init-file
    // --topdown [1|2], --metrics NAMES, --metrics-file PATH (run_metrics.cpp).
    unsigned topdown = 0;
    const char* metrics_arg = nullptr;
    const char* metrics_file = nullptr;
    MetricSet metric_set;         // built-in + --metrics-file, loaded by load_run_metrics
    Vec<StrView> metric_names;    // what --topdown/--metrics select
    bool topdown_wanted = false;  // --topdown, or a selected metric is a TopDown one
    StrBuf metric_list;           // the selection as one list (views point into it)
    // The TSC frequency (Platform::tsc_frequency) for the noise record's effective
    // frequency; 0 when unknown.
    u64 tsc_hz = 0;
    // --sample EVENT[:PERIOD], repeatable (joined with ';'); the sampled events come
    // first in the event list (run_sample.cpp).
    StrBuf samples_joined;
    Vec<SampleSpec> samples;
    bool precise = false;       // --precise: the sampled events through PEBS (run_precise.cpp)
    bool pebs_pt = false;       // --pebs-output pt: PEBS records through Intel PT (pmu/pebs_pt.h)
    IbsControls ibs;            // --ibs-rand, --ibs-l3-miss-only (run_ibs.cpp)
    bool lbr = false;           // --lbr (run_lbr.cpp)
    bool cbox_lookups = false;  // --cbox-lookups (run_cbox.cpp)
    // --cycle-by-cycle [--end-to-end] (run_cbc.cpp, measure/cycle_by_cycle.h); --unroll given
    // (cycle by cycle defaults to 1 copy, as nanoBench's cycleByCycle.py).
    bool cycle_by_cycle = false;
    bool end_to_end = false;
    bool unroll_given = false;
    // --events energy-pkg,... (run_energy.cpp): the RAPL domains, taken out of `events`
    // (the rest stay there and in events_rest); --loop given (energy: no automatic loop).
    Vec<RaplDomain> energy;
    StrBuf events_rest;
    bool loop_given = false;
};

// ---- sampling (run_sample.cpp, measure/sampling.h) ----
// One --sample value: the period is the last ':' field when it is a decimal number
// ("cycles:u:100003" is cycles:u every 100003); without one, the event's default
// (sample_default_period). Errors (Errc::invalid_argument): empty, a period of 0, a
// period beyond 64 bits.
Status parse_sample_spec(StrView spec, SampleSpec* out);
// The default period of an event (a prime, so that no loop body aliases with it):
// instructions 100003, cycles and reference cycles 100019, branches 10007, misses 1009,
// anything else 10007.
u64 sample_default_period(StrView event);
// Parses the --sample values and puts their events first in the event list.
Status finish_samples(RunOptions* o);
// Before planning a class of CPUs: refuses a PMU that cannot interrupt (Errc::unsupported,
// with the reason) and marks the sampled events (Event::pmi).
struct EventsForCpus;
Status sample_mark(const RunOptions& o, EventsForCpus& set);
// The sampled groups of every plan, and where their records go.
// One group's IBS (run_ibs.cpp): its source and hooks, chained around the group's
// sampling hooks, and what they saved on the measuring CPU.
struct IbsRun {
    IbsSource source;
    GroupHooks inner;  // the SampleGroup's hooks
    MeasurePlatform* mp = nullptr;
    u32 lvt_offset = 0;  // IBS_CTL.LVTOffset of the measuring CPU
    u32 lvt_saved = 0;
    u64 op_saved = 0, fetch_saved = 0;
    bool lvt_ok = false, ctl_ok = false;
};
struct RunSampling {
    Vec<Box<SampleGroup>> groups;
    Vec<Box<IbsRun>> ibs;          // --sample ibs_op/ibs_fetch: one per sampled group
    Vec<Box<PreciseRun>> precise;  // --precise: each sampled group's PEBS (run_precise.h)
};
Status sample_prepare(const RunOptions& o, MeasurePlatform& mp, Vec<Box<PmuPlan>>& plans, RunSampling* out);
// --precise (run_precise.cpp): without --sample, invalid_argument; else every SampleSpec
// is precise.
Status finish_precise(RunOptions* o);
// Before sample_mark: each CPU's PEBS (pebs_decode) and each sampled event checked against
// the model's PEBS events (pebs_mark); refusals are Errc::unsupported, nothing run.
Status precise_mark(const RunOptions& o, EventsForCpus& set);
// After sample_prepare: each sampled group's PebsSource, DS areas allocated per measuring
// CPU (MeasurePlatform::alloc_pages), hooks chained.
Status precise_prepare(const RunOptions& o, Hw& hw, MeasurePlatform& mp, Vec<Box<PmuPlan>>& plans, RunSampling* s);
// Whether every event of the plans is sampled (no table of counts then).
bool samples_only(const RunOptions& o, const Vec<Box<PmuPlan>>& plans);
// The runs that are sampled, in words (the text output's line when nothing is counted).
void sample_header(const RunOptions& o, StrBuf* out);
// A result of the engine: the sampled event's read becomes its samples record and table
// (true); any other result is the caller's (false).
bool sample_result(RunSampling& s, Out& out, const RunOptions& o, const MeasureResult& r);
// ---- AMD IBS (run_ibs.cpp; docs/sampling.md "Precise sampling (IBS)") ----
// An IBS --sample (the kind set, the period checked for its form): its event in the list
// is a counter-less placeholder ("tsc NAME") whose read carries the samples record.
Status ibs_sample_spec(SampleSpec* sp);
// After the samples are parsed: --ibs-rand / --ibs-l3-miss-only without an IBS --sample
// is invalid_argument.
Status ibs_finish_controls(const RunOptions& o);
// Each CPU of the set has IBS with the kind, and the period and the controls fit (before
// anything runs).
Status ibs_sample_mark(const RunOptions& o, const EventsForCpus& set);
// The IBS units of a plan's groups armed: each IBS sample a slot of its group's
// SampleGroup (made when the group has no sampled counter), its IbsSource the group's
// PreciseSource, and hooks that program the extended LVT entry and IbsOpCtl/IbsFetchCtl
// around the runs and restore them exactly.
Status ibs_sample_prepare(const RunOptions& o, MeasurePlatform& mp, PmuPlan& plan, RunSampling* out);

// Puts `mine` (hooks and their ctx) in place of the group's hooks, which go to *inner for
// mine to call, and the group's first read to *first_read (the read whose result a
// per-job record follows). A null mine.region keeps the group's.
inline void chain_group_hooks(ReadGroup* g, GroupHooks mine, GroupHooks* inner, const CounterRead** first_read) {
    *inner = g->hooks;
    *first_read = g->reads.empty() ? nullptr : &g->reads[0];
    if (!mine.region) mine.region = g->hooks.region;
    g->hooks = mine;
}

// ---- --lbr (run_lbr.cpp) ----
// The LBR of every measured CPU (prepared on the BSP) and what the hooks on the measuring
// CPU keep: the controls saved in setup, the stack of the last run.
struct LbrRun {
    Vec<u32> cpus;
    Vec<LbrInfo> infos;  // of cpus
    GroupHooks inner;    // the group's own hooks, chained
    const CounterRead* first_read = nullptr;
    const LbrInfo* here = nullptr;  // the measuring CPU's
    LbrSaved saved;
    bool saved_ok = false, have = false;
    LbrStackRead last;
    usize index_of(u32 cpu) const;
};
// Decodes the LBR of every CPU: Errc::unsupported with the reason where one has none.
Status prepare_run_lbr(Hw& hw, const Vec<u32>& cpus, LbrRun* run);
// Chains the LBR hooks around the group's (the first group of a run: one record per job).
void attach_run_lbr(LbrRun* run, ReadGroup* g);
// After the first result of a job: its {"type":"lbr"} record and the text timings.
void emit_run_lbr(Out& out, const LbrRun& run, const MeasureResult& r);

// ---- --cbox-lookups (run_cbox.cpp) ----
// The C-Boxes (pmu/cbox.h) and what the hooks on the measuring CPU keep: the counters at
// the start of the run, the lookups summed over a job's runs but each region's first.
struct CboxRun {
    CboxPmu pmu;
    GroupHooks inner;  // the group's own hooks, chained
    const CounterRead* first_read = nullptr;
    u64 start[msr::kMaxChas] = {}, sum[msr::kMaxChas] = {};
    u32 runs = 0;  // runs counted
    bool have = false, counting = false;
    static constexpr u32 kRegions = 4;
    const Region* seen[kRegions] = {};  // regions run before in this job
    u32 seen_count = 0;
    // On AMD the L3 PMU (pmu/amd_l3.h) instead: slices counted in rounds, each region's
    // counted runs going through them; slice_runs: the runs each slice was counted in.
    bool amd = false;
    AmdL3Pmu l3;
    u32 slice_runs[msr::kMaxChas] = {}, region = 0, region_runs[kRegions] = {};
    // The unit counting: the L3 PMU on AMD, else the C-Boxes/CHAs.
    SliceLookupPmu& unit() { return amd ? static_cast<SliceLookupPmu&>(l3) : pmu; }
    const SliceLookupPmu& unit() const { return amd ? static_cast<const SliceLookupPmu&>(l3) : pmu; }
};
static_assert(regs::kAmdL3MaxSlices <= msr::kMaxCboxes);
// The BSP's C-Boxes: Errc::unsupported with the reason where there are none (exit 3).
Status prepare_run_cbox(Hw& hw, CboxRun* run);
// Chains the C-Box hooks around the group's (the first group of a run).
void attach_run_cbox(CboxRun* run, ReadGroup* g);
// After the first result of a job: its {"type":"cbox_lookups"} record and text line.
void emit_run_cbox(Out& out, const CboxRun& run, const MeasureResult& r);

// ---- derived metrics (run_metrics.cpp) ----
// --metrics LIST (the option's value checked and kept).
Status apply_metrics(RunOptions& o, const char* value);
bool wants_metrics(const RunOptions& o);
// Loads the built-in definitions and --metrics-file (boot volume) and selects the names.
Status load_run_metrics(Out& out, RunOptions& o);
// The event specs a CPU class needs for the selected metrics (';'-separated, appended to
// *specs), and its TopDown method. *why is set when --topdown is not available there.
// smt_active: an SMT sibling of these CPUs runs while they measure (the SMT forms,
// topdown.h TopdownSupport::smt).
void metric_event_specs(const RunOptions& o, const PmuInfo& info, const CpuIdentity& id, TopdownSupport* td,
                        StrBuf* specs, StrBuf* why, bool smt_active = false);
// Event names resolved per class of CPUs whose identity picks the same event file
// (run_events.cpp), with the events --topdown/--metrics need there.
struct EventsForCpus {
    Vec<u32> cpus;
    Vec<ProbedCpu> probed;  // of cpus, in the same order: what planning decodes
    Vec<Event> events;
    TopdownSupport topdown;      // the TopDown method of these CPUs
    char topdown_why[320] = {};  // why --topdown is unavailable (or partly), "" when it is
};
Status resolve_run_events(Out& out, const RunOptions& o, Vec<EventsForCpus>* sets);

// --topdown where no CPU class offers it: Errc::unsupported with the reason; classes
// without it are warned about (the other events are still measured there).
Status check_metric_support(Out& out, const RunOptions& o, const Vec<EventsForCpus>& sets);
// The PERF_METRICS reads added to a class's plans (perf_metrics method).
Status prepare_metric_plans(const RunOptions& o, const EventsForCpus& set, Vec<Box<PmuPlan>>* plans);

// Per-iteration values of one plan's results, for the metrics.
class MetricCollector {
public:
    void add(const RunOptions& o, const MeasureResult& r);
    // Evaluates and emits ({"type":"metric"} records, a text table) every (bench, CPU)
    // collected, then forgets them. Violations are flagged in the records and warned.
    void emit(Out& out, const RunOptions& o, TopdownMethod method);

    struct Item {
        u32 cpu = 0;
        u64 apic_id = 0;
        SiblingState sibling = SiblingState::none;  // docs/measure.md "SMT siblings"
        const BenchInstance* bench = nullptr;
        char label[48] = {};
        char counter[16] = {};  // the counter that measured it ("FIXED_CTR2", "PMC1")
        u64 iterations = 0;     // per window difference: the per-iteration value's divisor
        Frac value;
        u64 short_max = 0, long_max = 0;  // the largest raw count of a short / long run
    };
    Vec<Item> items;
};

// Parses machine code given as hex ("4801d8", "48 01 d8", "0x4801d8"); the message
// names the option. Empty code, odd digits, non-hex characters and more than
// kUserCodeMax bytes are Errc::invalid_argument.
Status parse_code_hex(const char* opt, const char* hex, Vec<u8>* out);
// Reads the --*-file blocks from the boot volume, hashes each code's body and prints
// its header line (text mode).
Status load_user_code(Out& out, RunOptions& o);
// "4K", "1M", "3G" or the plain number of bytes.
void put_size_suffix(StrBuf& b, u64 bytes);
// The block of UserCode that option index i (0 body, 1 init, 2 late-init, 3 one-time-init) fills.
Vec<u8>& user_block(UserCode& u, unsigned i);
// *to becomes a copy of `from`.
void copy_block(const Vec<u8>& from, Vec<u8>* to);

// ---- energy (RAPL) events (run_energy.cpp; docs/measure.md "Energy (RAPL)") ----
// Takes energy-pkg, energy-cores/energy-core, energy-gpu, energy-dram/energy-ram and
// energy-psys out of o->events into o->energy. Errors (invalid_argument): a domain twice.
Status energy_split(RunOptions* o);
// One measuring CPU per package (the first selected CPU of each), with what was checked
// there before anything runs: the domains, their units, the counters' update interval.
struct EnergyPackage {
    u32 cpu = 0, package = 0;
    u64 apic_id = 0;
    Vec<u32> others;  // the package's other selected CPUs (not measured: energy is per package)
    RaplSupport support;
    u8 esu[kRaplDomains] = {};
    u64 interval_ticks = 0;  // TSC ticks between two updates of the package counter
};
struct EnergyRun {
    Vec<EnergyPackage> packages;
};
// Checks every requested domain on every package's measuring CPU: Errc::unsupported with
// the domain and the CPU where one is absent, RAPL reads 0 (QEMU TCG) or never moves.
Status energy_prepare(Out& out, const RunOptions& o, EnergyRun* run);
// Measures joules per iteration of every benchmark on every package (o.cfg's benches,
// loop, reps and warm-up are changed while it runs and restored).
Status energy_measure(Out& out, RunOptions& o, EnergyRun& run);

// `run --cycle-by-cycle` (run_cbc.cpp): o.cfg.cpus expanded by the caller.
Status run_cycle_by_cycle(Out& out, RunOptions& o, MeasurePlatform& mp);

// Parses the options of `pmulab run` (declared in kRunCommand, run_options.cpp); every
// error is Errc::invalid_argument with a message naming the option and what is allowed.
Status parse_run_options(Args& args, RunOptions* out);

// One result as a JSON line ({"type":"result",...}, newline-terminated).
void result_json(const RunOptions& o, const MeasureResult& r, Value* rec);
// Its record and its row of the text table, to `out`.
void emit_result(Out& out, const RunOptions& o, const MeasureResult& r);
// The human table: result_table_fit for every set of groups that will be measured (the
// columns widen to the longest benchmark, event and counter names), the header once,
// then one row per result. Columns: the per-iteration value (the chosen aggregate), the
// quartiles of the per-run differences (the spread), the estimates from the min and the
// max, and the unit.
void result_table_fit(RunOptions& o, const Vec<ReadGroup>& groups);
void result_table_header(const RunOptions& o, StrBuf* out);
void result_table_row(const RunOptions& o, const MeasureResult& r, StrBuf* out);

// One kernel of the catalogue as a JSON line ({"type":"kernel",...}).
void kernel_json(const KernelInfo& k, Value* rec);

}  // namespace pmulab
