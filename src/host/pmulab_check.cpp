// pmulab-check: checks a campaign (pmulab.cfg) on the host exactly as pmulab does
// before running it (check_campaign, commands.h), so that a typo never costs a reboot.
// `make image` runs it on CONFIG.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "base/json.h"
#include "commands/commands.h"

using namespace pmulab;

namespace {

constexpr const char kUsage[] = "usage: pmulab-check CONFIG\n"
                                "       pmulab-check --help-json\n"
                                "\n"
                                "Checks a pmulab campaign file (one pmulab command line per line, '#' comments,\n"
                                "'--shutdown' to power off) as pmulab checks \\pmulab\\pmulab.cfg before running\n"
                                "any of it: every line splits into words, names a command, uses only options its\n"
                                "help names, its --events lists parse, and run's option values (counts, sizes,\n"
                                "kernel names, hex code, --timeout) are in range. Problems are printed as\n"
                                "CONFIG:LINE: reason on stderr.\n"
                                "\n"
                                "--help-json prints what 'pmulab help --json' prints: one JSON record per\n"
                                "command with its options (kinds, ranges, repeatable or not), without booting.\n"
                                "\n"
                                "Exit status: 0 the campaign is fine, 2 problems found, bad usage, or a file that\n"
                                "cannot be read (README \"Exit status of the tools\").\n";

constexpr size_t kMaxBytes = 16u << 20;  // pmulab reads at most 16 MiB

}  // namespace

int main(int argc, char** argv) {
    if (argc == 2 && (!std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h"))) {
        std::fputs(kUsage, stdout);
        return 0;
    }
    if (argc == 2 && !std::strcmp(argv[1], "--help-json")) {
        for (u32 i = 0; const CommandOptions* c = command_options_at(i); ++i) {
            Value rec;
            command_json(rec, *c);
            StrBuf line;
            json_write_line(line, rec);
            std::fwrite(line.c_str(), 1, line.size(), stdout);
        }
        return 0;
    }
    if (argc == 2 && argv[1][0] == '-' && argv[1][1]) {
        std::fprintf(stderr, "pmulab-check: error: unknown option '%s' (see pmulab-check --help)\n", argv[1]);
        return 2;
    }
    if (argc != 2) {
        std::fprintf(stderr, "pmulab-check: error: expected one campaign file (see pmulab-check --help)\n");
        return 2;
    }
    const char* path = argv[1];
    std::FILE* f = std::fopen(path, "rb");
    if (!f) {
        std::fprintf(stderr, "pmulab-check: error: cannot open '%s': %s\n", path, std::strerror(errno));
        return 2;
    }
    std::string text;
    char buf[65536];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0 && text.size() <= kMaxBytes) text.append(buf, n);
    bool bad = std::ferror(f);
    std::fclose(f);
    if (bad) {
        std::fprintf(stderr, "pmulab-check: error: cannot read '%s'\n", path);
        return 2;
    }
    if (text.size() > kMaxBytes) {
        std::fprintf(stderr, "pmulab-check: error: %s is larger than 16 MiB (pmulab would not read it)\n", path);
        return 2;
    }
    CampaignCheck check;
    check_campaign(StrView(text.data(), text.size()), path, &check);
    for (const CampaignProblem& p : check.problems) std::fprintf(stderr, "%s\n", p.msg);
    return check.problems.empty() ? 0 : 2;
}
