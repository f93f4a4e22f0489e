// The parser behind parse_cpuid_dump (cpuid_dump.h), shared by its three sources:
//   cpuid_dump.cpp         format names and detection, the line loop, the CPU sections
//                          (begin/end, leaves, truncation checks) and the final decode;
//   cpuid_dump_cpuid_r.cpp the `cpuid -r` lines;
//   cpuid_dump_aida64.cpp  the AIDA64 / EVEREST lines.
// Not an API: only these three files include it.
#pragma once

#include "census/cpuid_dump.h"

namespace pmulab::cpuid_dump {

// ---- Text helpers (both formats) ----

// Longest excerpt of a dump line quoted in an error message (Error::msg is 240 bytes).
constexpr int kQuote = 40;

// Precision argument for quoting s with "%.*s": never past the view, at most kQuote.
inline int qn(StrView s) { return int(s.len < usize(kQuote) ? s.len : usize(kQuote)); }

inline bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Exactly 1..8 hex digits.
bool hex_u32(StrView s, u32* out);
// Decimal digits without overflow of u32.
bool dec_u32(StrView s, u32* out);
// First non-hex character of s, for "bad hex digit" messages.
char first_non_hex(StrView s);
StrView skip_spaces(StrView s);
// Splits off the leading run of characters up to a space (or the end).
StrView take_word(StrView* s);

// ---- Per-format recognisers (for detect_cpuid_dump_format) ----

// A `cpuid -r` CPU header or register line (cpuid_dump_cpuid_r.cpp).
bool is_cpuid_r_line(StrView t);
// An AIDA64 section title, register line or "CPU#000 AffMask:" header (cpuid_dump_aida64.cpp).
bool is_aida64_line(StrView t);

// ---- The parser ----

struct LeafCount {
    u32 leaf;
    u32 count;
};

struct Label {
    char s[32];
};

struct ApicEntry {
    u32 cpu;
    u32 apic;
};

class DumpParser {
public:
    DumpParser(StrView text, const char* name, Vec<CpuRecord>* out) : text_(text), name_(name), out_(out) {}

    Status run(DumpFormat fmt);

private:
    Error err(u32 line, const char* fmt, ...) __attribute__((format(printf, 3, 4)));
    Status check_binary();
    Status read(DumpFormat fmt);
    Status begin_cpu(u32 index, u32 line, const char* label);
    Status end_cpu();
    // v: EAX, EBX, ECX, EDX of leaf/sub (sub counted per leaf when !explicit_sub).
    Status add(u32 leaf, bool explicit_sub, u32 sub, const u32 (&v)[4], u32 line, StrView what);
    Status check_against_first();
    void finish();

    // `cpuid -r` (cpuid_dump_cpuid_r.cpp): one trimmed, non-comment line.
    Status cpuid_r_line(StrView t, u32 line);
    Status cpuid_r_register_line(StrView t, u32 line);
    static const char kCpuidRNoCpu[];

    // AIDA64 (cpuid_dump_aida64.cpp): one trimmed, non-comment line.
    Status aida64_line(StrView t, u32 line);
    Status aida_register_line(StrView t, u32 line);
    void aida_location(StrView t);
    Status aida_all_cpus_line(StrView t, u32 line);
    static const char kAida64NoCpu[];

    StrView text_;
    const char* name_;
    Vec<CpuRecord>* out_;

    // The CPU section being read.
    bool in_cpu_ = false;
    CpuRecord cur_;
    char cur_label_[32] = {};
    u32 cur_line_ = 0;
    bool cur_has_loc_ = false;
    u32 cur_pkg_ = 0, cur_core_ = 0, cur_thread_ = 0;
    Vec<LeafCount> counts_;
    u32 entry_line_[CpuidSnapshot::kMaxEntries] = {};

    // The AIDA64 section being read.
    enum class AidaSection : u8 { other, cpu, all_cpus };
    AidaSection aida_section_ = AidaSection::other;
    bool aida_report_ = false;    // a "Versions" or "CPU Info" section: a full report
    u32 aida_all_cpus_line_ = 0;  // the "All CPUs" title's line (0: none)

    // Per finished CPU (parallel to *out_): header line and dump-given location.
    Vec<u32> header_lines_;
    Vec<Label> labels_;
    Vec<u8> has_loc_;
    Vec<u32> loc_;  // 3 per CPU
    Vec<ApicEntry> apic_;
};

}  // namespace pmulab::cpuid_dump
