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
#include "base/json.h"

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
        // The one JSON reader, then the CSV summary of what it read.
        Value rec;
        Status s = json_parse(text, &rec);
        if (!s.ok()) {
            if (std::strncmp(s.error().msg, "JSON: ", 6) != 0) return "JSON error without prefix";
            if (!std::strstr(s.error().msg, " at offset ")) return "JSON error without its offset";
            return "";
        }
        // What was read prints back as JSON that reads to the same text (the writer
        // escapes each byte from 0x7f as \u00XX, so a string with bytes from 0x80
        // reads back as other characters: those are left out of the comparison).
        StrBuf once, twice;
        json_write(once, rec);
        Value again;
        if (!json_parse(once.view(), &again).ok()) return "written JSON does not read back";
        json_write(twice, again);
        bool high = false;
        for (usize k = 0; k + 5 <= once.size(); ++k)
            high |= once.view().sub(k, 4).eq("\\u00") && once.view()[k + 4] >= '8';
        if (!high && !once.view().eq(twice.view())) return "JSON write/read/write is not stable";
        Vec<FlatField> f;
        Status fl = record_flatten(rec, &f);
        CsvSummary sum;
        sum.add(rec);
        StrBuf csv;
        Status c = sum.write(&csv);
        if (c.ok() != fl.ok()) return "CSV and flattening disagree on validity";
    } else {
        Vec<CpuRecord> cpus;
        Status s = parse_cpuid_dump(text, "fuzz.txt", &cpus);
        if (s.ok() && cpus.empty()) return "dump accepted with no CPU";
        if (!s.ok() && std::strncmp(s.error().msg, "fuzz.txt", 8) != 0) return "dump error without the file name";
    }
    return "";
}

}  // namespace fuzz_inputs
