#include "app/out.h"

#include "app/args.h"
#include "app/options.h"
#include "app/trace_platform.h"
#include "census/census.h"
#include "measure/memory.h"
#include "commands/commands.h"
#include "app/lava.h"
#include "base/json.h"
#include "commands/measure_cmd.h"
#include "base/version.h"
#include "events/event_syntax.h"

namespace pmulab {

namespace {

const char kHelpTemplate[] =
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
    "  run --code HEX       measure your own machine code [--init HEX] [--name TEXT] ...; on the\n"
    "                       host run-qemu.sh takes --asm TEXT (assembled; docs/nanobench.md)\n"
    "  bench list           the built-in kernels and their instructions per iteration\n"
    "  events               the events each CPU can count [--cpu N|all|bsp]; --check SPEC,...\n"
    "                       shows where a set of events goes (counters, runs)\n"
    "  selftest             PASS/FAIL/SKIP checks of the measurement harness [--cpu N|all|bsp]\n"
    "  report               the first run on a new machine: census, selftest, exact counts,\n"
    "                       one summary to send (docs/report.md) [--cpu N|all|bsp]\n"
    "  serve                answer requests from a host over the serial port (docs/agent.md)\n"
    "  serve --tcp PORT     the same over TCP (no authentication: a lab network only)\n"
    "  version              print the version\n"
    "  help [COMMAND]       this text, or a command's help; with --json: every command's\n"
    "                       options as data, one record per command (docs/options.md)\n"
    "\n"
    "global options:\n"
    "\x01"
    "\n"
    "exit status: 0 ok, 1 command failed, 2 usage error, 3 unsupported here, 4 internal error\n";

const CommandOptions kMainCommand = {.command = "pmulab",
                                     .options = kGlobalOptions,
                                     .count = kGlobalOptionCount,
                                     .help = kHelpTemplate,
                                     .column = 21};

const CommandOptions kInfoCommand = {
    .command = "info",
    .help = "usage: pmulab info [--json]\n"
            "\n"
            "Reads CPUID leaves 0, 1, 7, 0AH, 1AH, 23H, 8000_0000H/0001H/0022H on every logical\n"
            "processor (through EFI MP Services) and IA32_PERF_CAPABILITIES where PDCM is set,\n"
            "then prints one row per CPU and one detailed block per distinct PMU.\n"
            "With --json: one {\"type\":\"cpu\",...} record per CPU.\n",
};
const CommandOptions kVersionCommand = {.command = "version", .help = "usage: pmulab version\n"};
const CommandOptions kHelpCommand = {.command = "help", .help = "usage: pmulab help [COMMAND]\n", .positionals = 1};

}  // namespace

Status cmd_info(Out& out, Args& args) {
    ParsedOptions parsed;
    PMULAB_TRY(parse_options(kInfoCommand, args, &parsed));
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
    put_memory_map(b, out.platform().measure());  // docs/cache.md "The memory of an experiment"
    census_next_step(cpus, b);
    out.text_buf(b);
    // A CPU that could not be read says why in its row (and its record).
    for (const CpuRecord& r : cpus)
        if (!r.collected) out.fail(Errc::fault);
    return ok_status();
}

namespace {

Status cmd_version(Out& out, Args& args) {
    ParsedOptions parsed;
    PMULAB_TRY(parse_options(kVersionCommand, args, &parsed));
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
    CommandFn run;
    const CommandOptions* options;  // its name, options and help
    // Writes results files (commands that read or measure hardware).
    bool writes_results;
};

Status cmd_help(Out& out, Args& args);

const Command kCommands[] = {
    {cmd_info, &kInfoCommand, true},     {cmd_msr, &kMsrCommand, true},        {cmd_run, &kRunCommand, true},
    {cmd_bench, &kBenchCommand, false},  {cmd_events, &kEventsCommand, false}, {cmd_selftest, &kSelftestCommand, true},
    {cmd_report, &kReportCommand, true}, {cmd_serve, &kServeCommand, false},   {cmd_version, &kVersionCommand, false},
    {cmd_help, &kHelpCommand, false},
};

const Command* find_command(const char* name) {
    for (const Command& c : kCommands)
        if (str_eq(c.options->command, name)) return &c;
    return nullptr;
}

void print_help(Out& out, const CommandOptions& c) {
    StrBuf b;
    put_command_help(b, c);
    out.text_buf(b);
}

// The help of the commands that take event specs ends with this CPU's event syntax
// (AMD's 12-bit selects and terms on AMD, NetBurst names on NetBurst), as 'events' shows it.
void help_text(Out& out, const Command* c) {
    print_help(out, *c->options);
    if (c->options != &kRunCommand && c->options != &kEventsCommand) return;
    CpuidSnapshot snap;
    capture_cpuid(out.platform().hw(), &snap);
    CpuDecoded d = decode_cpuid(snap);
    out.text("\n%s", event_syntax_help(event_dialect_for(d.id, d.pmu)));
}

// `help --json [COMMAND]`: the options of every command (or one) as records.
void help_json(Out& out, const Command* only) {
    for (u32 i = 0; const CommandOptions* c = command_options_at(i); ++i) {
        if (only && c != only->options) continue;
        Value rec;
        command_json(rec, *c);
        out.record(rec);
    }
}

Status cmd_help(Out& out, Args& args) {
    ParsedOptions parsed;
    PMULAB_TRY(parse_options(kHelpCommand, args, &parsed));
    const char* name = parsed.positionals.empty() ? nullptr : parsed.positionals[0];
    const Command* c = name ? find_command(name) : nullptr;
    if (name && !c) return Error::make(Errc::invalid_argument, "help: unknown command '%s'", name);
    if (out.json()) help_json(out, c);
    else if (c) help_text(out, c);
    else print_help(out, kMainCommand);
    return ok_status();
}

}  // namespace

const CommandOptions* command_options_at(u32 i) {
    const u32 n = sizeof kCommands / sizeof kCommands[0];
    if (i < n) return kCommands[i].options;
    return i == n ? &kMainCommand : nullptr;
}

const CommandOptions* command_options(const char* name) {
    const Command* c = find_command(name);
    return c ? c->options : nullptr;
}

Status set_cpu_option(CpuSelection* sel, const char* value) {
    Result<CpuSelection> s = parse_cpu_selection(value);
    if (!s.ok()) return s.error();
    *sel = s.value();
    return ok_status();
}

Status app_check(int argc, const char* const* argv) {
    for (int i = 0; i < argc; ++i) {
        const char* a = argv[i];
        if (is_global_option(a) || str_eq(a, "--")) continue;
        if (!find_command(a)) return Error::make(Errc::invalid_argument, "unknown command '%s' (try 'pmulab help')", a);
        return ok_status();
    }
    return ok_status();
}

namespace {
int run_command(Platform& p, TracePlatform* trace, const Vec<const char*>& rest, const GlobalOptions& g, int argc,
                const char* const* argv, const char* origin, bool meta_stdout);
}  // namespace

int app_run(Platform& p, int argc, const char* const* argv, GlobalOptions* opts, const char* origin, int meta_argc,
            bool meta_stdout) {
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
        if (dashdash || !is_global_option(a)) rest.push(a);
        else if (str_eq(a, "--json")) g.json = true;
        else if (str_eq(a, "--lava")) g.lava = true;
        else if (str_eq(a, "--shutdown")) g.shutdown = true;
        else if (str_eq(a, "--trace-msr")) g.trace_msr = true;
        else g.help = true;  // --help, -h
    }
    if (opts) *opts = g;
    if (g.trace_msr) {
        TracePlatform tp(p);
        return run_command(tp, &tp, rest, g, meta_argc < 0 ? argc : meta_argc, argv, origin, meta_stdout);
    }
    return run_command(p, nullptr, rest, g, meta_argc < 0 ? argc : meta_argc, argv, origin, meta_stdout);
}

namespace {

int run_command(Platform& p, TracePlatform* trace, const Vec<const char*>& rest, const GlobalOptions& g, int argc,
                const char* const* argv, const char* origin, bool meta_stdout) {
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
        if (c->options == &kHelpCommand) print_help(out, kMainCommand);
        else help_text(out, c);
        return kExitOk;
    }
    Args args(int(rest.size()) - (rest.empty() ? 0 : 1), rest.empty() ? nullptr : rest.data() + 1);
    RecordSink* sink = c->writes_results ? p.record_sink() : nullptr;
    // --json: the meta record (where the numbers come from: hardware, a virtual machine,
    // TCG and -icount, simulated) is the first line on stdout of every command that reads
    // or measures hardware (the commands with results files); the agent's answers hold the
    // command's records only (meta_stdout false: its hello carries the same provenance).
    const bool meta_out = g.json && meta_stdout && c->writes_results;
    if (sink || meta_out) {
        StrBuf cmdline;
        for (int i = 0; i < argc; ++i) {
            if (i) cmdline.put(' ');
            cmdline.put(StrView(argv[i]));
        }
        // With --json --trace-msr the meta record's own probes stay out of the trace, so that
        // it is the first line; in text mode they are traced as before (the BSP's probe).
        Value meta = build_meta_record(trace && meta_out ? trace->untraced() : p, cmdline.c_str());
        if (meta_out) p.write_record(meta);
        if (sink && sink->begin(c->options->command, out)) {
            sink->record(meta);
            out.set_sink(sink);
        }
    }
    if (g.lava) {
        StrBuf b;
        lava_begin_line(c->options->command, &b);
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
        lava_end_lines(c->options->command, status, &b);
        p.write(b.view());
    }
    return status;
}

}  // namespace

}  // namespace pmulab
