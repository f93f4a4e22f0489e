// pmulab-cachesim: the simulator's memory hierarchy (src/sim/sim_cache.h) on its own.
// Reads accesses from standard input and prints, per access, the level that served it;
// for experiments with the replacement policies and as the tests' window onto the model.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "sim/sim_amd_l3.h"
#include "sim/sim_cache.h"
#include "sim_host.h"

using namespace pmulab;

namespace {

constexpr const char kUsage[] =
    "usage: pmulab-cachesim [--dump FILE | --model NAME] [--cpu N] [--cache SPEC] [--seed N] [--describe]\n"
    "\n"
    "Runs the simulator's cache hierarchy on accesses read from standard input, one per line:\n"
    "  R ADDR   load of the line holding ADDR (hex with 0x, or decimal)\n"
    "  W ADDR   store (write-allocate: the same as a load to the model)\n"
    "  F ADDR   CLFLUSH/CLFLUSHOPT of the line: invalidated in every level\n"
    "  I        WBINVD/INVD: every level emptied, replacement state back to its initial state\n"
    "  S ADDR   prints the L3 slice of ADDR (the complex-addressing hash; 0 when not sliced)\n"
    "Empty lines and lines starting with '#' are skipped. Each R or W prints the level that\n"
    "served it: L1D, L2, L3 or MEM.\n"
    "\n"
    "The default geometry comes from CPUID leaf 4 / 8000_001DH of CPU N (default 0) of the\n"
    "dump or model (or a documented per-family geometry); without --dump/--model it is the\n"
    "generic one (Skylake client, LRU). --cache changes levels: \"off\" or\n"
    "LEVEL:SIZE[:WAYS[:POLICY]],... e.g. L1D:32K:8:LRU,L2:256K:4:PLRU,L3:8M:16:QLRU_H11_M1_R0_U0;\n"
    "L3 takes a fifth field, its slices (1, 2, 4, 8; 9 to 64 by the server stand-in hash): L3:6M:12:LRU:4.\n"
    "--seed N seeds the randomized policies (RANDOM, PLRURand, RandPLRU, QLRU_.._MR..).\n"
    "--describe prints the configuration (one line) before anything else.\n"
    "docs/sim.md, \"The memory hierarchy\", describes the model and the policies.\n"
    "\n"
    "Exit status: 0 ok, 1 the output cannot be written, 2 bad usage, a dump that cannot be read\n"
    "or a malformed input line (README \"Exit status of the tools\").\n";

int usage_error(const std::string& msg) {
    std::fprintf(stderr, "pmulab-cachesim: error: %s (see pmulab-cachesim --help)\n", msg.c_str());
    return 2;
}

bool parse_u64(const char* s, u64* out) {
    if (!*s) return false;
    char* end = nullptr;
    bool hex = s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
    if (s[0] == '-' || s[0] == '+') return false;
    unsigned long long v = std::strtoull(s, &end, hex ? 16 : 10);
    if (*end || (hex && !s[2])) return false;
    *out = v;
    return true;
}

struct Args {
    SimMachineOptions machine;
    std::string cache;
    u64 seed = 0;
    u64 cpu = 0;
    bool cpu_given = false;
    bool describe = false;
};

// 0: ok; 2: bad usage (printed); -1: --help printed.
int parse_args(int argc, char** argv, Args* a) {
    for (int i = 1; i < argc; ++i) {
        std::string o = argv[i];
        if (o == "--help" || o == "-h") {
            std::fputs(kUsage, stdout);
            return -1;
        }
        if (o == "--describe") {
            a->describe = true;
            continue;
        }
        if (o != "--dump" && o != "--model" && o != "--cache" && o != "--seed" && o != "--cpu")
            return usage_error("unknown option '" + o + "'");
        if (i + 1 >= argc) return usage_error(o + " needs a value");
        const char* v = argv[++i];
        if (o == "--dump") a->machine.dump = v;
        if (o == "--model") a->machine.model = v;
        if (o == "--cache") a->cache = v;
        if (o == "--seed" && !parse_u64(v, &a->seed))
            return usage_error(std::string("--seed '") + v + "' is not a number");
        if (o == "--cpu" && !parse_u64(v, &a->cpu))
            return usage_error(std::string("--cpu '") + v + "' is not a number");
        a->cpu_given |= o == "--cpu";
    }
    bool machine = !a->machine.dump.empty() || !a->machine.model.empty();
    if (!a->machine.dump.empty() && !a->machine.model.empty()) return usage_error("give --dump or --model, not both");
    if (a->cpu_given && !machine) return usage_error("--cpu needs --dump FILE or --model NAME");
    return 0;
}

// The configuration: defaults from the machine (if any), then --cache and --seed.
int build_config(const Args& a, sim::CacheConfig* out) {
    CpuidSnapshot snap;                 // empty: the generic default
    std::unique_ptr<sim::SimAmdL3> l3;  // an AMD model's L3 PMU: its L3 is the complex's
    if (!a.machine.dump.empty() || !a.machine.model.empty()) {
        std::unique_ptr<sim::SimMachine> m;
        std::string what;
        Status s = build_sim_machine(a.machine, &m, &what);
        if (!s.ok()) {
            std::fprintf(stderr, "pmulab-cachesim: error: %s\n", s.error().msg);
            return 2;  // a dump that cannot be read is a usage error (README "Exit status of the tools")
        }
        if (a.cpu >= m->size())
            return usage_error("--cpu " + std::to_string(a.cpu) + ": the machine has CPUs 0-" +
                               std::to_string(m->size() - 1));
        snap = m->cpu(u32(a.cpu)).snapshot();
        if (m->amd_l3()) l3 = std::make_unique<sim::SimAmdL3>(m->amd_l3()->f17());
    }
    sim::CacheConfig c = sim::default_cache_config(snap);
    if (l3) sim::amd_l3_defaults(&c, *l3);
    if (!a.cache.empty()) {
        Result<sim::CacheConfig> r = sim::parse_cache_spec(a.cache, c);
        if (r.ok() && l3) {
            Status s = sim::amd_l3_check(&r.value(), *l3);
            if (!s.ok()) return usage_error(s.error().msg);
        }
        if (!r.ok()) return usage_error(r.error().msg);
        c = *r;
    }
    c.seed = a.seed;
    *out = c;
    return 0;
}

const char* level_name(const sim::CacheHierarchy& h, unsigned l) {
    return l < h.config().levels.size() ? h.config().levels[l].name.c_str() : "MEM";
}

// One input line; false (with a message) when malformed.
bool run_line(sim::CacheHierarchy& h, const std::string& line, unsigned no) {
    std::vector<std::string> tok;
    for (size_t i = 0; (i = line.find_first_not_of(" \t\r", i)) != std::string::npos;) {
        size_t e = line.find_first_of(" \t\r", i);
        tok.push_back(line.substr(i, e == std::string::npos ? e : e - i));
        i = e;
    }
    if (tok.empty() || tok[0][0] == '#') return true;
    const std::string& op = tok[0];
    u64 addr = 0;
    if (op == "I" && tok.size() == 1) {
        h.reset();
        return true;
    }
    if ((op == "R" || op == "W" || op == "F" || op == "S") && tok.size() == 2 && parse_u64(tok[1].c_str(), &addr)) {
        if (op == "F") h.flush_line(addr);
        else if (op == "S") std::printf("%u\n", unsigned(h.slice_of(addr)));
        else std::printf("%s\n", level_name(h, h.access(addr, op == "W")));
        return true;
    }
    std::fprintf(stderr,
                 "pmulab-cachesim: error: stdin:%u: '%.60s' is not 'R ADDR', 'W ADDR', 'F ADDR', 'S ADDR' or 'I'\n", no,
                 line.c_str());
    return false;
}

}  // namespace

int main(int argc, char** argv) {
    Args a;
    int rc = parse_args(argc, argv, &a);
    if (rc) return rc < 0 ? 0 : rc;
    sim::CacheConfig c;
    if ((rc = build_config(a, &c))) return rc;
    if (a.describe) std::printf("# %s\n", sim::describe(c).c_str());
    sim::CacheHierarchy h(c);
    char buf[4096];
    std::string line;
    unsigned no = 0;
    while (std::fgets(buf, sizeof buf, stdin)) {
        line += buf;
        if (!line.empty() && line.back() != '\n' && !std::feof(stdin)) continue;
        if (!line.empty() && line.back() == '\n') line.pop_back();
        if (!run_line(h, line, ++no)) return 2;
        line.clear();
    }
    return std::fflush(stdout) == 0 ? 0 : 1;
}
