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
#include "app/options.h"
#include "app/out.h"
#include "x86/cpuid.h"

namespace pmulab {

// Runs one command line (argv[0] is the first word after the program name, i.e.
// the command). Global options (--json, --shutdown, --help) may appear anywhere.
// Returns an ExitStatus; sets *opts to the global options seen.
// `origin` (e.g. "\pmulab\pmulab.cfg:3") prefixes every error and warning.
// meta_argc: how many words of argv the results files' meta record names as the command
// line (all of them when negative); the agent appends --json to a request's words, and
// pmulab-sim its own --json and --trace-msr.
// meta_stdout: with --json the meta record is the first line on stdout (false: the agent,
// whose hello carries the same provenance and whose answers hold the command's records).
int app_run(Platform& p, int argc, const char* const* argv, GlobalOptions* opts, const char* origin = nullptr,
            int meta_argc = -1, bool meta_stdout = true);

// Checks a command line without running it: the command exists (global options
// are skipped). Used to reject a bad campaign before any of it runs.
Status app_check(int argc, const char* const* argv);
// A command's declaration (its options and help text, app/options.h); null when there
// is no such command.
const CommandOptions* command_options(const char* name);
// Every command's declaration in turn (i = 0, 1, ...), then the global options' (named
// "pmulab"); null past the end. `help --json` prints one record per declaration.
const CommandOptions* command_options_at(u32 i);
// --cpu's value (cpu_select.h) into *sel; the error names the option.
Status set_cpu_option(CpuSelection* sel, const char* value);
// An OptionSpec::apply for --cpu into member M (default `sel`) of the command's options T.
template <typename T, CpuSelection T::*M = &T::sel> Status apply_cpu_option(void* target, const OptionHit& h) {
    return set_cpu_option(&(static_cast<T*>(target)->*M), h.value);
}

// A campaign (pmulab.cfg) checked completely before any of it runs (campaign.cpp):
// every line splits into words, names a command, uses only options it declares, with
// values of the declared kind and range, and its --events lists parse in some dialect (names are resolved later, per
// CPU). Used by the EFI entry point and by the host tool pmulab-check (`make image`).
struct CampaignProblem {
    u32 line = 0;                   // 0: the file as a whole
    char msg[Error::kMsgMax] = {};  // "NAME:LINE: reason", ready to print
};
struct CampaignCheck {
    Vec<CampaignProblem> problems;
    u32 commands = 0;       // lines that run a command
    bool shutdown = false;  // a --shutdown anywhere, honoured even when problems were found
};
void check_campaign(StrView text, const char* name, CampaignCheck* out);

using CommandFn = Status (*)(Out& out, Args& args);

// `pmulab msr read|write` (cmd_msr.cpp).
Status cmd_msr(Out& out, Args& args);
extern const CommandOptions kMsrCommand;
// Whether pmulab may write this MSR without --unsafe (the PMU ranges only).
bool msr_is_pmu(u32 msr);
// Whether `msr write MSR VALUE` may go ahead on this CPU (cmd_msr.cpp): --unsafe outside
// the PMU ranges and for IA32_PEBS_ENABLE (the CPU then writes memory); no reserved
// bits in the registers pmulab knows (architectural Intel PMU MSRs on this PMU
// version, AMD PerfEvtSel/PerfCtl). Errc::invalid_argument or unsupported when not.
Status msr_write_check(const CpuDecoded& cpu, u32 msr, u64 value, bool unsafe);
// Whether reading `read` back right after writing `written` to PMU MSR `msr` means the
// CPU took the write: control registers exactly, counters up to 2^32 further (they may
// be counting; legacy IA32_PMCx writes sign-extend bit 31), status-clear/set and
// read-only registers are not compared.
bool msr_readback_matches(const CpuDecoded& cpu, u32 msr, u64 written, u64 read);

// `pmulab events` (cmd_events.cpp): the events each CPU can count, and
// `events --check SPEC,...`: where a set of events goes (counters, groups/runs).
Status cmd_events(Out& out, Args& args);
extern const CommandOptions kEventsCommand;

// The measurement commands (cmd_run.cpp, cmd_bench.cpp, cmd_selftest.cpp); their
// options are in measure_cmd.h.
Status cmd_run(Out& out, Args& args);
Status cmd_bench(Out& out, Args& args);
Status cmd_selftest(Out& out, Args& args);
extern const CommandOptions kRunCommand;  // run_options.cpp
extern const CommandOptions kBenchCommand;
extern const CommandOptions kSelftestCommand;
// `pmulab info` (dispatch.cpp): the census. `pmulab report` (cmd_report.cpp): census,
// selftest and the exact-count checks in one run, with a summary file (docs/report.md).
Status cmd_info(Out& out, Args& args);
Status cmd_report(Out& out, Args& args);
extern const CommandOptions kReportCommand;

// `pmulab serve` (cmd_serve.cpp): the agent a host drives (app/serve_session.h).
Status cmd_serve(Out& out, Args& args);
extern const CommandOptions kServeCommand;

}  // namespace pmulab
