#include "app/out.h"

#include "app/args.h"
#include "app/trace_platform.h"
#include "census/census.h"
#include "commands/commands.h"
#include "app/lava.h"
#include "base/json.h"
#include "commands/measure_cmd.h"
#include "base/version.h"
#include "events/event_syntax.h"

namespace pmulab {

namespace {

const char kHelpText[] =
    "pmulab " PMULAB_VERSION " - CPU performance-monitoring lab (UEFI)\n"
    "\n"
    "usage: pmulab [--json] [--lava] [--shutdown] COMMAND [options]\n"
    "\n"
    "commands:\n"
    "  info                 census of every logical processor's PMU (default)\n"
    "  msr read ADDR        read an MSR    [--cpu N|all|bsp]\n"
    "  msr write ADDR VAL   write an MSR   [--cpu N|all|bsp] [--unsafe]\n"
    "  run --bench K,...    measure built-in kernels (U/2U overhead cancellation)\n"
    "                       [--events tsc] [--cpu N|all|bsp] [--unroll U] [--loop L] [--reps R] ...\n"
    "  bench list           the built-in kernels and their instructions per iteration\n"
    "  events               the events each CPU can count [--cpu N|all|bsp]; --check SPEC,...\n"
    "                       shows where a set of events goes (counters, runs)\n"
    "  selftest             PASS/FAIL/SKIP checks of the measurement harness [--cpu N|all|bsp]\n"
    "  serve                answer requests from a host over the serial port (docs/agent.md)\n"
    "  version              print the version\n"
    "  help [COMMAND]       this text, or a command's help\n"
    "\n"
    "global options:\n"
    "  --json               JSON Lines output: one object per line, nothing else\n"
    "  --lava               also LAVA test-case lines (<LAVA_SIGNAL_TESTCASE ...>) for checks and results\n"
    "  --shutdown           power off when done (what run-qemu.sh passes)\n"
    "  --trace-msr          print every RDMSR/WRMSR/RDPMC pmulab performs, in order, decoded\n"
    "  --help, -h           help for the command\n"
    "\n"
    "exit status: 0 ok, 1 command failed, 2 usage error, 3 unsupported here, 4 internal error\n";

const char kInfoHelp[] = "usage: pmulab info [--json]\n"
                         "\n"
                         "Reads CPUID leaves 0, 1, 7, 0AH, 1AH, 23H, 8000_0000H/0001H/0022H on every logical\n"
                         "processor (through EFI MP Services) and IA32_PERF_CAPABILITIES where PDCM is set,\n"
                         "then prints one row per CPU and one detailed block per distinct PMU.\n"
                         "With --json: one {\"type\":\"cpu\",...} record per CPU.\n";

Status cmd_info(Out& out, Args& args) {
    if (!args.done())
        return Error::make(Errc::invalid_argument, "info: unexpected argument '%s' (see 'pmulab help info')",
                           args.peek());
    Vec<CpuRecord> cpus;
    PMULAB_TRY(census_collect(out.platform().hw(), cpus));
    // The TSC frequency (once per boot): ticks to nanoseconds (docs/measure.md).
    const TscFreq& tsc = out.platform().tsc_frequency();
    for (const CpuRecord& r : cpus) {
        out.record(census_record(r, &tsc));
    }
    StrBuf b;
    census_table(cpus, b);
    if (tsc.hz) {  // unknown: the records say why (no timer: host tests only)
        b.put(StrView("\nTSC frequency: "));
        put_tsc_freq(b, tsc);
        b.put('\n');
    }
    out.text_buf(b);
    // A CPU that could not be read says why in its row (and its record).
    for (const CpuRecord& r : cpus)
        if (!r.collected) out.fail(Errc::fault);
    return ok_status();
}

Status cmd_version(Out& out, Args& args) {
    if (!args.done()) return Error::make(Errc::invalid_argument, "version: unexpected argument '%s'", args.peek());
    if (out.json()) {
        Value rec;
        JsonWriter w(rec);
        w.begin_object().field("type", "version").field("version", PMULAB_VERSION).end_object();
        out.record(rec);
    } else {
        out.text("pmulab %s\n", PMULAB_VERSION);
    }
    return ok_status();
}

struct Command {
    const char* name;
    CommandFn run;
    const char* help;
    // Writes results files (commands that read or measure hardware).
    bool writes_results;
};

Status cmd_help(Out& out, Args& args);

const Command kCommands[] = {
    {"info", cmd_info, kInfoHelp, true},
    {"msr", cmd_msr, kMsrHelp, true},
    {"run", cmd_run, kRunHelp, true},
    {"bench", cmd_bench, kBenchHelp, false},
    {"events", cmd_events, kEventsHelp, false},
    {"selftest", cmd_selftest, kSelftestHelp, true},
    {"serve", cmd_serve, kServeHelp, false},
    {"version", cmd_version, "usage: pmulab version\n", false},
    {"help", cmd_help, "usage: pmulab help [COMMAND]\n", false},
};

const Command* find_command(const char* name) {
    for (const Command& c : kCommands)
        if (str_eq(c.name, name)) return &c;
    return nullptr;
}

// The help of the commands that take event specs ends with this CPU's event syntax
// (AMD's 12-bit selects and terms on AMD, NetBurst names on NetBurst), as 'events' shows it.
void help_text(Out& out, const Command* c) {
    out.text("%s", c->help);
    if (!str_eq(c->name, "run") && !str_eq(c->name, "events")) return;
    CpuidSnapshot snap;
    capture_cpuid(out.platform().hw(), &snap);
    CpuDecoded d = decode_cpuid(snap);
    out.text("\n%s", event_syntax_help(event_dialect_for(d.id, d.pmu)));
}

Status cmd_help(Out& out, Args& args) {
    if (args.done()) {
        out.text("%s", kHelpText);
        return ok_status();
    }
    const char* name = args.take();
    const Command* c = find_command(name);
    if (!c) return Error::make(Errc::invalid_argument, "help: unknown command '%s'", name);
    help_text(out, c);
    return ok_status();
}

}  // namespace

const char* command_help(const char* name) {
    const Command* c = find_command(name);
    return c ? c->help : nullptr;
}

Status app_check(int argc, const char* const* argv) {
    for (int i = 0; i < argc; ++i) {
        const char* a = argv[i];
        if (str_eq(a, "--json") || str_eq(a, "--lava") || str_eq(a, "--shutdown") || str_eq(a, "--trace-msr") ||
            str_eq(a, "--help") || str_eq(a, "-h"))
            continue;
        if (str_eq(a, "--")) continue;
        if (!find_command(a)) return Error::make(Errc::invalid_argument, "unknown command '%s' (try 'pmulab help')", a);
        return ok_status();
    }
    return ok_status();
}

namespace {
int run_command(Platform& p, TracePlatform* trace, const Vec<const char*>& rest, const GlobalOptions& g, int argc,
                const char* const* argv, const char* origin);
}  // namespace

int app_run(Platform& p, int argc, const char* const* argv, GlobalOptions* opts, const char* origin, int meta_argc) {
    // Pull the global options out wherever they stand.
    Vec<const char*> rest;
    GlobalOptions g;
    bool dashdash = false;
    for (int i = 0; i < argc; ++i) {
        const char* a = argv[i];
        if (!dashdash && str_eq(a, "--")) {
            dashdash = true;
            continue;
        }
        if (!dashdash && str_eq(a, "--json")) g.json = true;
        else if (!dashdash && str_eq(a, "--lava")) g.lava = true;
        else if (!dashdash && str_eq(a, "--shutdown")) g.shutdown = true;
        else if (!dashdash && str_eq(a, "--trace-msr")) g.trace_msr = true;
        else if (!dashdash && (str_eq(a, "--help") || str_eq(a, "-h"))) g.help = true;
        else rest.push(a);
    }
    if (opts) *opts = g;
    if (g.trace_msr) {
        TracePlatform tp(p);
        return run_command(tp, &tp, rest, g, meta_argc < 0 ? argc : meta_argc, argv, origin);
    }
    return run_command(p, nullptr, rest, g, meta_argc < 0 ? argc : meta_argc, argv, origin);
}

namespace {

int run_command(Platform& p, TracePlatform* trace, const Vec<const char*>& rest, const GlobalOptions& g, int argc,
                const char* const* argv, const char* origin) {
    Out out(p, g.json);
    out.set_lava(g.lava);
    if (trace) trace->set_out(&out);
    out.set_context(origin);
    const char* name = rest.empty() ? "info" : rest[0];
    const Command* c = find_command(name);
    if (!c) {
        out.error_msg(Errc::invalid_argument, "unknown command '%s' (try 'pmulab help')", name);
        return kExitUsage;
    }
    if (g.help) {
        if (c == find_command("help")) out.text("%s", kHelpText);
        else help_text(out, c);
        return kExitOk;
    }
    Args args(int(rest.size()) - (rest.empty() ? 0 : 1), rest.empty() ? nullptr : rest.data() + 1);
    RecordSink* sink = c->writes_results ? p.record_sink() : nullptr;
    if (sink) {
        StrBuf cmdline;
        for (int i = 0; i < argc; ++i) {
            if (i) cmdline.put(' ');
            cmdline.put(StrView(argv[i]));
        }
        if (sink->begin(c->name, out)) {
            sink->record(build_meta_record(p, cmdline.c_str()));
            out.set_sink(sink);
        }
    }
    if (g.lava) {
        StrBuf b;
        lava_begin_line(c->name, &b);
        p.write(b.view());
    }
    // The exit status is computed here, once, from everything the command reported.
    Status s = c->run(out, args);
    if (trace) trace->flush();
    if (!s.ok()) out.error(s.error());
    if (sink) {
        out.set_sink(nullptr);
        sink->end();
    }
    int status = out.outcome().exit_status();
    if (g.lava) {
        StrBuf b;
        lava_end_lines(c->name, status, &b);
        p.write(b.view());
    }
    return status;
}

}  // namespace

}  // namespace pmulab
