// The commands: one entry point per command, each in its own source file, and the
// dispatcher (dispatch.cpp) that runs a command line.
//
// A command returns a Status: an error it has not reported yet (the dispatcher reports
// it). Errors a command reports itself while it goes on (one per CPU, per benchmark)
// go through Out::error, and failures shown in another form (a FAIL verdict) through
// Out::fail; the dispatcher computes the exit status once, from Out's outcome.
#pragma once

#include "app/args.h"
#include "app/command_line.h"
#include "app/cpu_select.h"
#include "app/out.h"

namespace pmulab {

// Runs one command line (argv[0] is the first word after the program name, i.e.
// the command). Global options (--json, --shutdown, --help) may appear anywhere.
// Returns an ExitStatus; sets *opts to the global options seen.
// `origin` (e.g. "\pmulab\pmulab.cfg:3") prefixes every error and warning.
int app_run(Platform& p, int argc, const char* const* argv, GlobalOptions* opts, const char* origin = nullptr);

// Checks a command line without running it: the command exists (global options
// are skipped). Used to reject a bad campaign before any of it runs.
Status app_check(int argc, const char* const* argv);

using CommandFn = Status (*)(Out& out, Args& args);

// `pmulab msr read|write` (cmd_msr.cpp).
Status cmd_msr(Out& out, Args& args);
extern const char kMsrHelp[];
// Whether pmulab may write this MSR without --unsafe (the PMU ranges only).
bool msr_is_pmu(u32 msr);

// `pmulab events` (cmd_events.cpp): the events each CPU can count, and
// `events --check SPEC,...`: where a set of events goes (counters, groups/runs).
Status cmd_events(Out& out, Args& args);
extern const char kEventsHelp[];

// The measurement commands (cmd_run.cpp, cmd_bench.cpp, cmd_selftest.cpp); their
// options are in measure_cmd.h.
Status cmd_run(Out& out, Args& args);
Status cmd_bench(Out& out, Args& args);
Status cmd_selftest(Out& out, Args& args);
extern const char kRunHelp[];
extern const char kBenchHelp[];
extern const char kSelftestHelp[];

}  // namespace pmulab
