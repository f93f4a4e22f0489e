// pmulab-cpuid: the offline CPUID decoder. Reads a `cpuid -r` or AIDA64 dump and
// prints the same census as `pmulab info` (table, or JSON Lines with --json).
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "census/cpuid_dump.h"

using namespace pmulab;

namespace {

constexpr const char kUsage[] = "usage: pmulab-cpuid [--json] [--format auto|cpuid-r|aida64] FILE|-\n"
                                "\n"
                                "Decodes a CPUID dump taken on another machine and prints the same PMU census as\n"
                                "`pmulab info`: one row per logical CPU and one block per distinct PMU, or with\n"
                                "--json one {\"type\":\"cpu\",...} record per CPU (JSON Lines).\n"
                                "\n"
                                "Formats (--format, default auto: detected from the first recognisable line):\n"
                                "  cpuid-r  output of `cpuid -r` or `cpuid -r -1` (Debian package cpuid)\n"
                                "  aida64   AIDA64/EVEREST CPUID report (as published by InstLatx64)\n"
                                "FILE '-' reads standard input.\n"
                                "\n"
                                "Exit status: 0 ok, 1 the output cannot be written, 2 bad usage, a file that cannot\n"
                                "be read or a malformed dump (README \"Exit status of the tools\").\n";

// Far larger than any real dump (a 4096-CPU AIDA64 report is ~40 MiB).
constexpr size_t kMaxDumpBytes = 256u << 20;

int usage_error(const char* fmt, const char* arg) {
    std::fprintf(stderr, "pmulab-cpuid: error: ");
    std::fprintf(stderr, fmt, arg);
    std::fprintf(stderr, " (see pmulab-cpuid --help)\n");
    return 2;
}

// Reads all of f; returns 0, 1 (read error, errno set) or 2 (too large).
int read_all(std::FILE* f, std::string* out) {
    char buf[65536];
    while (true) {
        size_t n = std::fread(buf, 1, sizeof buf, f);
        out->append(buf, n);
        if (out->size() > kMaxDumpBytes) return 2;
        if (n < sizeof buf) break;
    }
    return std::ferror(f) ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
    bool json = false;
    DumpFormat fmt = DumpFormat::automatic;
    const char* path = nullptr;
    bool end_of_options = false;
    for (int i = 1; i < argc; ++i) {
        const char* a = argv[i];
        if (!end_of_options && a[0] == '-' && a[1]) {
            if (!std::strcmp(a, "--")) {
                end_of_options = true;
            } else if (!std::strcmp(a, "--help") || !std::strcmp(a, "-h")) {
                std::fputs(kUsage, stdout);
                return 0;
            } else if (!std::strcmp(a, "--json")) {
                json = true;
            } else if (!std::strcmp(a, "--format") || !std::strncmp(a, "--format=", 9)) {
                const char* v = a[8] == '=' ? a + 9 : (i + 1 < argc ? argv[++i] : nullptr);
                if (!v) return usage_error("%s needs a value: auto, cpuid-r or aida64", "--format");
                if (!parse_dump_format(StrView(v), &fmt))
                    return usage_error("unknown dump format '%s' (expected auto, cpuid-r or aida64)", v);
            } else {
                return usage_error("unknown option '%s'", a);
            }
            continue;
        }
        if (path) return usage_error("more than one dump file given ('%s')", a);
        path = a;
    }
    if (!path) return usage_error("%s", "no dump file given (FILE, or - for standard input)");

    std::string text;
    const char* name = path;
    int rc;
    if (!std::strcmp(path, "-")) {
        name = "<stdin>";
        rc = read_all(stdin, &text);
    } else {
        std::FILE* f = std::fopen(path, "rb");
        if (!f) {
            std::fprintf(stderr, "pmulab-cpuid: error: cannot open '%s': %s\n", path, std::strerror(errno));
            return 2;
        }
        rc = read_all(f, &text);
        int e = errno;
        std::fclose(f);
        errno = e;
    }
    if (rc == 1) {
        std::fprintf(stderr, "pmulab-cpuid: error: cannot read '%s': %s\n", name, std::strerror(errno));
        return 2;
    }
    if (rc == 2) {
        std::fprintf(stderr, "pmulab-cpuid: error: %s: larger than %zu MiB; not a CPUID dump\n", name,
                     kMaxDumpBytes >> 20);
        return 2;
    }

    Vec<CpuRecord> cpus;
    Status s = parse_cpuid_dump(StrView(text.data(), text.size()), name, fmt, &cpus);
    if (!s.ok()) {
        std::fprintf(stderr, "pmulab-cpuid: error: %s\n", s.error().msg);
        return 2;
    }
    StrBuf out;
    if (json) {
        for (const CpuRecord& r : cpus) census_json(r, out);
    } else {
        if (fmt == DumpFormat::automatic) fmt = detect_cpuid_dump_format(StrView(text.data(), text.size()));
        out.printf("dump: %s (%s format)\n", name, dump_format_name(fmt));
        census_table(cpus, out);
    }
    std::fwrite(out.c_str(), 1, out.size(), stdout);
    if (std::fflush(stdout) != 0) {
        std::fprintf(stderr, "pmulab-cpuid: error: writing the output: %s\n", std::strerror(errno));
        return 1;
    }
    return 0;
}
