// Checks shared by the libFuzzer target fuzz_inputs (make fuzz) and the unit test
// that replays its corpus: pmulab.cfg campaigns, JSON records (results files) and
// CPUID dumps must never crash, hang or break their contracts on any input.
// The first byte of the input picks the parser; the rest is the text.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

#include "commands/commands.h"
#include "app/config.h"
#include "census/cpuid_dump.h"
#include "app/records.h"

namespace fuzz_inputs {

// Empty string: fine; otherwise a description of the broken contract.
inline std::string check_input(const uint8_t* data, size_t size) {
    using namespace pmulab;
    if (size == 0) return "";
    unsigned which = data[0] % 3;
    StrView text(reinterpret_cast<const char*>(data + 1), size - 1);
    if (which == 0) {
        Vec<ConfigLine> lines;
        Status s = parse_config(text, "fuzz.cfg", &lines);
        if (!s.ok()) {
            if (std::strncmp(s.error().msg, "fuzz.cfg:", 9) != 0) return "config error without file:line";
            return "";
        }
        u32 last = 0;
        for (const ConfigLine& l : lines) {
            if (l.line_no <= last) return "config line numbers not increasing";
            last = l.line_no;
            if (l.bad) {
                if (l.error[0] == 0) return "bad config line without a reason";
                continue;
            }
            if (l.args.argc() == 0) return "empty config line kept";
            for (char* w : l.args.argv)
                if (!w) return "null word";
            (void)app_check(l.args.argc(), l.args.argv.data());
        }
    } else if (which == 1) {
        Vec<FlatField> f;
        Status s = json_flatten(text, &f);
        if (!s.ok() && std::strncmp(s.error().msg, "JSON record: ", 13) != 0) return "JSON error without prefix";
        Vec<StrBuf> lines;
        lines.emplace().put(text);
        StrBuf csv;
        Status c = records_to_csv(lines, &csv);
        if (c.ok() != s.ok()) return "CSV and flattening disagree on validity";
    } else {
        Vec<CpuRecord> cpus;
        Status s = parse_cpuid_dump(text, "fuzz.txt", &cpus);
        if (s.ok() && cpus.empty()) return "dump accepted with no CPU";
        if (!s.ok() && std::strncmp(s.error().msg, "fuzz.txt", 8) != 0) return "dump error without the file name";
    }
    return "";
}

}  // namespace fuzz_inputs
