// pmulab-sim: runs pmulab's own command code (info, events, msr, run, selftest, campaign
// files) on a simulated machine built from a CPUID dump or a named synthetic model
// (src/sim), with the simulator's executor for measurements (host/lib/sim_exec.h).
// Everything it prints is marked simulated; see docs/sim.md.
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "app/config.h"
#include "commands/commands.h"
#include "sim_asm.h"
#include "sim_host.h"

using namespace pmulab;

namespace {

constexpr const char kUsage[] =
    "usage: pmulab-sim (--dump FILE [--format auto|cpuid-r|aida64] | --model NAME) [--cpus LIST]\n"
    "                  [--perf-capabilities VALUE] [--misc-enable VALUE] [--cache SPEC] [--seed N]\n"
    "                  [--results DIR] [--break BEHAVIOUR] [--sibling busy|halted] [--trace-msr] [--json]\n"
    "                  (-- PMULAB COMMAND LINE | --config CAMPAIGN)\n"
    "       pmulab-sim --list-models\n"
    "\n"
    "Runs a pmulab command (info, events, events --check, msr, run, selftest, ...) on a\n"
    "simulated machine: one simulated logical processor per CPU of a CPUID dump (the formats\n"
    "pmulab-cpuid reads), with the PMU its CPUID describes, or a synthetic model (--model).\n"
    "The command runs through the same code as on the EFI binary; measurements run the real\n"
    "code generator on the simulator's executor (instructions retired exact, the rest a\n"
    "documented model: docs/sim.md). Output is marked simulated.\n"
    "\n"
    "The command line after -- may use --asm TEXT, --asm-init, --asm-late-init,\n"
    "--asm-one-time-init (--att), assembled on the host as run-qemu.sh does\n"
    "(tools/pmulab-asm). `-- serve` speaks the agent protocol (docs/agent.md) on stdin/\n"
    "stdout until a stop request or the end of stdin; its console lines go to stderr.\n"
    "\n"
    "  --cpus LIST               keep only these CPUs of the dump/model (0,2,4-7; the first is the BSP)\n"
    "  --perf-capabilities VALUE IA32_PERF_CAPABILITIES of every CPU (a dump cannot carry it)\n"
    "  --misc-enable VALUE       IA32_MISC_ENABLE of every Intel CPU\n"
    "  --cache SPEC              cache model: docs/sim.md (e.g. L1D:32K:8:LRU,L2:256K:4:PLRU)\n"
    "  --seed N                  seed of the RANDOM replacement policy (cache model: docs/sim.md)\n"
    "                            and of IBS's randomisation (IbsRandEn, IbsOpCurCnt; docs/sim.md)\n"
    "  --break BEHAVIOUR         a broken simulated PMU, for testing selftest (repeatable):\n"
    "                            pmi (overflows raise no PMI), freeze (freeze on PMI freezes nothing),\n"
    "                            lbr (the LBR stack records nothing), instructions, branches (every\n"
    "                            256th one counted twice)\n"
    "  --sibling busy|halted     what the SMT siblings of the measuring CPU do (default halted, as\n"
    "                            pmulab keeps them on hardware; docs/sim.md \"SMT siblings\")\n"
    "  --trace-msr, --json       passed to pmulab (every RDMSR/WRMSR/RDPMC; JSON Lines)\n"
    "  --config CAMPAIGN         run a campaign file (checked first, as pmulab does)\n"
    "  --results DIR             write results files NNNN-<command>.jsonl/.csv into DIR, as pmulab\n"
    "                            writes \\pmulab\\results (default: none)\n"
    "\n"
    "Exit status: pmulab's (0 ok, 1 failed, 2 usage, 3 unsupported, 4 internal); 2 also for\n"
    "bad options and a dump or campaign that cannot be read or is malformed.\n";

int usage_error(const std::string& msg) {
    std::fprintf(stderr, "pmulab-sim: error: %s (see pmulab-sim --help)\n", msg.c_str());
    return 2;
}

bool parse_u64(const char* s, u64* out) {
    if (!s || !*s || *s == '-') return false;
    char* end = nullptr;
    errno = 0;
    unsigned long long v = std::strtoull(s, &end, 0);
    if (errno || *end) return false;
    *out = v;
    return true;
}

void print_note(void*, const char* msg) {
    std::fflush(stdout);
    std::fprintf(stderr, "pmulab-sim: note: %s\n", msg);
}

void print_problem(void*, const char* msg) {
    std::fflush(stdout);
    std::fprintf(stderr, "pmulab-sim: error: %s\n", msg);
}

// --break BEHAVIOUR: a broken PMU on every simulated CPU, so that selftest's checks can
// be shown to tell it from a working one (docs/sim.md "Broken PMUs").
struct BreakOption {
    const char* name;
    void (*apply)(sim::SimCpu& cpu);
};
const BreakOption kBreakOptions[] = {
    {"pmi", [](sim::SimCpu& c) { c.break_pmi(true); }},        // overflows raise no PMI
    {"freeze", [](sim::SimCpu& c) { c.break_freeze(true); }},  // DEBUGCTL freeze freezes nothing
    {"lbr", [](sim::SimCpu& c) { c.break_lbr(true); }},        // the LBR stack records nothing
    // Every 256th instruction / branch retired counted twice (the report's exact-count checks).
    {"instructions", [](sim::SimCpu& c) { c.break_instructions(true); }},
    {"branches", [](sim::SimCpu& c) { c.break_branches(true); }},
};

const BreakOption* find_break(const char* name) {
    for (const BreakOption& b : kBreakOptions)
        if (std::strcmp(b.name, name) == 0) return &b;
    return nullptr;
}

// pmulab-sim's own options and the pmulab command line after them.
struct SimArgs {
    SimMachineOptions o;
    bool json = false, trace = false;
    const char* config = nullptr;
    const char* results = nullptr;  // --results DIR
    std::vector<const BreakOption*> breaks;
    std::vector<std::string> cmd;
};

// An option with a value: 0, or the exit status of a usage error.
int set_option(const std::string& a, const char* v, SimArgs* args) {
    SimMachineOptions& o = args->o;
    if (a == "--dump") o.dump = v;
    else if (a == "--model") o.model = v;
    else if (a == "--cpus") o.cpus = v;
    else if (a == "--config") args->config = v;
    else if (a == "--break") {
        const BreakOption* b = find_break(v);
        if (!b) {
            std::string names;
            for (const BreakOption& k : kBreakOptions) names += (names.empty() ? "" : ", ") + std::string(k.name);
            return usage_error(std::string("--break: unknown behaviour '") + v + "' (expected " + names + ")");
        }
        args->breaks.push_back(b);
    } else if (a == "--sibling") {
        if (std::strcmp(v, "busy") != 0 && std::strcmp(v, "halted") != 0)
            return usage_error(std::string("--sibling: '") + v + "' is not busy or halted");
        o.sibling_busy = std::strcmp(v, "busy") == 0;
    } else if (a == "--results") {
        if (!*v) return usage_error("--results needs a folder");
        args->results = v;
    } else if (a == "--cache") {
        if (!*v) return usage_error("--cache needs a cache model, e.g. L1D:32K:8:LRU (docs/sim.md)");
        o.cache = v;
    } else if (a == "--seed") {
        if (!parse_u64(v, &o.seed)) return usage_error(std::string("--seed: '") + v + "' is not a number (e.g. 1)");
        o.seed_set = true;
    } else if (a == "--format") {
        if (!parse_dump_format(StrView(v), &o.format))
            return usage_error(std::string("unknown dump format '") + v + "' (expected auto, cpuid-r or aida64)");
    } else if (a == "--perf-capabilities") {
        if (!parse_u64(v, &o.perf_caps))
            return usage_error(std::string("--perf-capabilities: '") + v + "' is not a number (e.g. 0x33c5)");
        o.have_perf_caps = true;
    } else {
        if (!parse_u64(v, &o.misc_enable))
            return usage_error(std::string("--misc-enable: '") + v + "' is not a number (e.g. 0x850089)");
        o.have_misc_enable = true;
    }
    return 0;
}

bool takes_value(const std::string& a) {
    for (const char* o : {"--dump", "--model", "--cpus", "--format", "--config", "--perf-capabilities", "--misc-enable",
                          "--cache", "--seed", "--results", "--break", "--sibling"})
        if (a == o) return true;
    return false;
}

// -1 to go on, else the exit status (--help, --list-models, usage errors).
int parse_args(int argc, char** argv, SimArgs* args) {
    int i = 1;
    for (; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "--") {
            ++i;
            break;
        }
        if (a == "--help" || a == "-h") {
            std::fputs(kUsage, stdout);
            return 0;
        }
        if (a == "--list-models") {
            for (const sim::NamedModel& m : sim::named_models()) std::printf("%-16s %s\n", m.name, m.what);
            return 0;
        }
        if (a == "--json") {
            args->json = true;
        } else if (a == "--trace-msr") {
            args->trace = true;
        } else if (takes_value(a)) {
            if (i + 1 >= argc) return usage_error(a + " needs a value");
            if (int rc = set_option(a, argv[++i], args)) return rc;
        } else if (a.size() > 1 && a[0] == '-') {
            return usage_error("unknown option '" + a + "'");
        } else {
            break;  // the pmulab command line starts here
        }
    }
    for (; i < argc; ++i) args->cmd.push_back(argv[i]);
    const SimMachineOptions& o = args->o;
    if (o.dump.empty() && o.model.empty()) return usage_error("no machine: give --dump FILE or --model NAME");
    if (!o.dump.empty() && !o.model.empty()) return usage_error("give either --dump or --model, not both");
    if (args->config && !args->cmd.empty())
        return usage_error("give either --config CAMPAIGN or a command line, not both");
    return -1;
}

// Runs one pmulab command line on the simulated machine.
int run_words(SimHostPlatform& p, const SimArgs& args, std::vector<std::string> words, const char* origin) {
    // pmulab-sim's own --json and --trace-msr go after the command's words (as the agent
    // appends --json), so that the meta record names the command line as it was given.
    const int given = int(words.size());
    if (args.json) words.push_back("--json");
    if (args.trace) words.push_back("--trace-msr");
    std::vector<const char*> av;
    for (const std::string& w : words) av.push_back(w.c_str());
    GlobalOptions g;
    int rc = app_run(p, int(av.size()), av.data(), &g, origin, given);
    std::fflush(stdout);
    return rc;
}

bool read_whole(const char* path, std::string* text) {
    std::FILE* f = std::fopen(path, "rb");
    if (!f) {
        std::fprintf(stderr, "pmulab-sim: error: cannot open '%s': %s\n", path, std::strerror(errno));
        return false;
    }
    char buf[65536];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) text->append(buf, n);
    std::fclose(f);
    return true;
}

// The campaign's text with its --asm lines assembled (sim_asm.h; line for line, so
// that messages keep their line numbers): 0, or the exit status.
int read_campaign(const char* config, std::string* text) {
    if (!read_whole(config, text)) return 2;
    std::string assembled;
    if (int rc = assemble_campaign(config, *text, &assembled)) return rc;
    if (assembled.empty()) return 0;
    text->clear();
    bool ok = read_whole(assembled.c_str(), text);
    ::unlink(assembled.c_str());
    return ok ? 0 : 2;
}

// A campaign: checked completely first, then every line in order (as pmulab boots it).
int run_campaign(SimHostPlatform& p, const SimArgs& args) {
    const char* config = args.config;
    std::string text;
    if (int rc = read_campaign(config, &text)) return rc;
    CampaignCheck check;
    check_campaign(StrView(text.data(), text.size()), config, &check);
    if (!check.problems.empty()) {
        for (const CampaignProblem& pr : check.problems) std::fprintf(stderr, "pmulab-sim: error: %s\n", pr.msg);
        return 2;
    }
    Vec<ConfigLine> lines;
    (void)parse_config(StrView(text.data(), text.size()), config, &lines);
    int worst = 0;
    for (const ConfigLine& cl : lines) {
        std::vector<std::string> words;
        bool directive = true;
        for (char* w : cl.args.argv) {
            directive &= std::strcmp(w, "--shutdown") == 0;
            words.push_back(w);
        }
        if (words.empty() || directive) continue;
        std::string origin = std::string(config) + ":" + std::to_string(cl.line_no);
        int rc = run_words(p, args, words, origin.c_str());
        if (rc && !worst) worst = rc;
    }
    return worst;
}

// Whether the command line runs `serve` (its first word that is not an option).
bool is_serve(const std::vector<std::string>& words) {
    for (const std::string& w : words)
        if (w.empty() || w[0] != '-') return w == "serve";
    return false;
}

}  // namespace

int main(int argc, char** argv) {
    SimArgs args;
    if (int rc = parse_args(argc, argv, &args); rc >= 0) return rc;
    // A host that goes away while we write is an error to report, not a signal to die of.
    ::signal(SIGPIPE, SIG_IGN);
    if (int rc = assemble_words(&args.cmd)) return rc;

    std::unique_ptr<sim::SimMachine> machine;
    std::string what;
    Status bs = build_sim_machine(args.o, &machine, &what);
    if (!bs.ok()) {
        std::fprintf(stderr, "pmulab-sim: error: %s\n", bs.error().msg);
        return 2;
    }
    for (const BreakOption* b : args.breaks) {
        for (u32 i = 0; i < machine->size(); ++i) b->apply(machine->cpu(i));
        what += std::string(", PMU broken: ") + b->name;
    }
    what += " (" + std::to_string(machine->size()) + (machine->size() == 1 ? " CPU)" : " CPUs)");
    SimHostPlatform p(*machine, what);
    p.exec().set_problem_hook(print_problem, nullptr);
    p.exec().set_note_hook(print_note);
    if (Status cs = p.exec().set_cache(args.o.cache, args.o.seed); !cs.ok()) {
        std::fprintf(stderr, "pmulab-sim: error: %s\n", cs.error().msg);
        return 2;
    }
    if (args.results) p.set_results_dir(args.results);

    // Marked simulated: a banner in text mode, each command's meta record first in JSON mode
    // (app_run writes it, as on the target). `serve`
    // keeps stdout for the protocol (the hello record first, as the target's agent sends
    // it, with the simulated machine in its "link"): the banner goes to stderr.
    if (is_serve(args.cmd)) {
        std::fprintf(stderr, "pmulab-sim: SIMULATED %s: counts come from the simulator's model, not from hardware\n",
                     what.c_str());
    } else if (!args.json) {  // JSON mode: each command's meta record comes first (app_run)
        std::printf("pmulab-sim: SIMULATED %s: counts come from the simulator's model, not from hardware\n",
                    what.c_str());
    }
    if (!args.config) return run_words(p, args, args.cmd, nullptr);
    return run_campaign(p, args);
}
