// Command entry points, each in its own source file, dispatched by app.cpp.
#pragma once

#include "app/args.h"
#include "app/command_line.h"
#include "app/out.h"

namespace pmulab {

// Runs one command line (argv[0] is the first word after the program name, i.e.
// the command). Global options (--json, --shutdown, --help) may appear anywhere.
// Returns an ExitStatus; sets *opts to the global options seen.
// `origin` (e.g. "\pmulab\pmulab.cfg:3") prefixes every error and warning.
int app_run(Platform& p, int argc, const char* const* argv, GlobalOptions* opts,
            const char* origin = nullptr);

// Checks a command line without running it: the command exists (global options
// are skipped). Used to reject a bad campaign before any of it runs.
Status app_check(int argc, const char* const* argv);


// CPU selection shared by commands: "--cpu N", "--cpu all", "--cpu bsp".
struct CpuSelection {
    bool all = false;
    bool bsp = true;  // default
    u32 index = 0;
};
Result<CpuSelection> parse_cpu_selection(const char* value);
// If the current word is "--cpu" (with its value), consumes it into *sel and returns
// true; a missing or bad value sets *err (the caller reports it as a usage error).
bool take_cpu_option(Args& args, CpuSelection* sel, Status* err);
// Expands a selection to CPU indices; fails when N is out of range.
Status expand_cpu_selection(Hw& hw, const CpuSelection& sel, Vec<u32>* cpus);

int cmd_msr(Out& out, Args& args);
extern const char kMsrHelp[];

// Whether pmulab may write this MSR without --unsafe (the PMU ranges only).
bool msr_is_pmu(u32 msr);

}  // namespace pmulab
