// Options of the measurement commands `pmulab run` and `pmulab selftest`
// (src/commands/cmd_run.cpp, cmd_selftest.cpp).
#pragma once

#include "app/out.h"
#include "app/args.h"
#include "commands/commands.h"
#include "measure/measure.h"

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
    // User code (`--code HEX` / `--code-file PATH` and the init blocks): hex is parsed
    // into `user` by parse_run_options, files are read by the command (boot volume).
    UserCode user;
    bool has_user = false;
    const char* code_file[4] = {};  // body, init, late-init, one-time-init
};

// Parses machine code given as hex ("4801d8", "48 01 d8", "0x4801d8"); the message
// names the option. Empty code, odd digits, non-hex characters and more than
// kUserCodeMax bytes are Errc::invalid_argument.
Status parse_code_hex(const char* opt, const char* hex, Vec<u8>* out);
// Reads the --*-file blocks from the boot volume, hashes the body and prints the
// code's header line (text mode).
Status load_user_code(Out& out, RunOptions& o);
// "4K", "1M", "3G" or the plain number of bytes.
void put_size_suffix(StrBuf& b, u64 bytes);
// The block of UserCode that option index i (0 body, 1 init, 2 late-init, 3 one-time-init) fills.
Vec<u8>& user_block(UserCode& u, unsigned i);

// Parses the options of `pmulab run`; every error is Errc::invalid_argument with a
// message naming the option and what is allowed.
Status parse_run_options(Args& args, RunOptions* out);

// One result as a JSON line ({"type":"result",...}, newline-terminated).
void result_json(const RunOptions& o, const MeasureResult& r, StrBuf* line);
// The human table: result_table_fit for every set of groups that will be measured (the
// columns widen to the longest benchmark, event and counter names), the header once,
// then one row per result. Columns: the per-iteration value (the chosen aggregate), the
// quartiles of the per-run differences (the spread), the estimates from the min and the
// max, and the unit.
void result_table_fit(RunOptions& o, const Vec<ReadGroup>& groups);
void result_table_header(const RunOptions& o, StrBuf* out);
void result_table_row(const RunOptions& o, const MeasureResult& r, StrBuf* out);

// One kernel of the catalogue as a JSON line ({"type":"kernel",...}).
void kernel_json(const KernelInfo& k, StrBuf* line);

}  // namespace pmulab
