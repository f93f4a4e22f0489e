// Options of the measurement commands `pmulab run` and `pmulab selftest`
// (src/commands/cmd_run.cpp, cmd_selftest.cpp).
#pragma once

#include "app/out.h"
#include "app/args.h"
#include "commands/commands.h"
#include "measure/measure.h"
#include "measure/metrics.h"
#include "measure/pmu_plan.h"

namespace pmulab {

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
    // --cycle-by-cycle [--end-to-end] (run_cbc.cpp, measure/cycle_by_cycle.h); --unroll given
    // (cycle by cycle defaults to 1 copy, as nanoBench's cycleByCycle.py).
    bool cycle_by_cycle = false;
    bool end_to_end = false;
    bool unroll_given = false;
};

// ---- derived metrics (run_metrics.cpp) ----
// --metrics LIST (the option's value checked and kept).
Status apply_metrics(RunOptions& o, const char* value);
bool wants_metrics(const RunOptions& o);
// Loads the built-in definitions and --metrics-file (boot volume) and selects the names.
Status load_run_metrics(Out& out, RunOptions& o);
// The event specs a CPU class needs for the selected metrics (';'-separated, appended to
// *specs), and its TopDown method. *why is set when --topdown is not available there.
void metric_event_specs(const RunOptions& o, const PmuInfo& info, const CpuIdentity& id, TopdownSupport* td,
                        StrBuf* specs, StrBuf* why);
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

// `run --cycle-by-cycle` (run_cbc.cpp): o.cfg.cpus expanded by the caller.
Status run_cycle_by_cycle(Out& out, RunOptions& o, MeasurePlatform& mp);

// Parses the options of `pmulab run` (declared in kRunCommand, run_options.cpp); every
// error is Errc::invalid_argument with a message naming the option and what is allowed.
Status parse_run_options(Args& args, RunOptions* out);

// One result as a JSON line ({"type":"result",...}, newline-terminated).
void result_json(const RunOptions& o, const MeasureResult& r, Value* rec);
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
