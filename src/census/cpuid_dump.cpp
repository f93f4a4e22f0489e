#include "census/cpuid_dump.h"

namespace pmulab {

const char* dump_format_name(DumpFormat f) {
    switch (f) {
        case DumpFormat::automatic: return "auto";
        case DumpFormat::cpuid_r: return "cpuid-r";
        case DumpFormat::aida64: return "aida64";
    }
    return "auto";
}

bool parse_dump_format(StrView s, DumpFormat* out) {
    if (s.eq("auto")) *out = DumpFormat::automatic;
    else if (s.eq("cpuid-r")) *out = DumpFormat::cpuid_r;
    else if (s.eq("aida64")) *out = DumpFormat::aida64;
    else return false;
    return true;
}

namespace {

// Longest excerpt of a dump line quoted in an error message (Error::msg is 240 bytes).
constexpr int kQuote = 40;

// Precision argument for quoting s with "%.*s": never past the view, at most kQuote.
int qn(StrView s) { return int(s.len < usize(kQuote) ? s.len : usize(kQuote)); }

bool is_space(char c) { return c == ' ' || c == '\t'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
int hex_val(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// Exactly 1..8 hex digits.
bool hex_u32(StrView s, u32* out) {
    if (s.empty() || s.len > 8) return false;
    u32 v = 0;
    for (usize i = 0; i < s.len; ++i) {
        int d = hex_val(s[i]);
        if (d < 0) return false;
        v = v << 4 | u32(d);
    }
    *out = v;
    return true;
}

// Decimal digits without overflow of u32.
bool dec_u32(StrView s, u32* out) {
    if (s.empty() || s.len > 10) return false;
    u64 v = 0;
    for (usize i = 0; i < s.len; ++i) {
        if (!is_digit(s[i])) return false;
        v = v * 10 + u64(s[i] - '0');
    }
    if (v > 0xffffffffu) return false;
    *out = u32(v);
    return true;
}

// First non-hex character of s, for "bad hex digit" messages.
char first_non_hex(StrView s) {
    for (usize i = 0; i < s.len; ++i)
        if (hex_val(s[i]) < 0) return s[i];
    return 0;
}

StrView skip_spaces(StrView s) {
    usize i = 0;
    while (i < s.len && is_space(s[i])) ++i;
    return s.sub(i);
}

// Splits off the leading run of characters up to a space (or the end).
StrView take_word(StrView* s) {
    usize i = 0;
    while (i < s->len && !is_space((*s)[i])) ++i;
    StrView w = s->sub(0, i);
    *s = skip_spaces(s->sub(i));
    return w;
}

// Iterates lines (LF or CRLF), numbering from 1.
struct LineReader {
    StrView text;
    usize pos = 0;
    u32 no = 0;
    bool next(StrView* line) {
        if (pos >= text.len) return false;
        usize e = text.find('\n', pos);
        StrView l = text.sub(pos, e - pos);
        if (l.len && l[l.len - 1] == '\r') l.len--;
        pos = e + 1;
        ++no;
        *line = l;
        return true;
    }
};

// "------[ Title ]------" -> Title.
bool aida_section_title(StrView t, StrView* title) {
    if (!t.starts_with("------[")) return false;
    usize e = t.len;
    while (e > 0 && t[e - 1] == '-') --e;
    if (e == 0 || t[e - 1] != ']' || e <= 7) return false;
    *title = t.sub(7, e - 1 - 7).trim();
    return true;
}

bool is_cpuid_r_register_line(StrView t) {
    return t.len >= 10 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X');
}

// "CPU:" or "CPU <decimal>:".
bool is_cpuid_r_header(StrView t, bool* has_index, u32* index, bool* bad_index) {
    *bad_index = false;
    if (t.eq("CPU:")) {
        *has_index = false;
        *index = 0;
        return true;
    }
    if (!t.starts_with("CPU ") || t.len < 6 || t[t.len - 1] != ':') return false;
    StrView num = t.sub(4, t.len - 5).trim();
    for (usize i = 0; i < num.len; ++i)
        if (!is_digit(num[i])) return false;
    *has_index = true;
    if (!dec_u32(num, index)) *bad_index = true;
    return true;
}

bool is_aida_register_line(StrView t) { return t.starts_with("CPUID "); }

// A third AIDA64 layout starts each CPU with "CPU#000 AffMask: 0x0000000000000001".
bool is_aida_affmask_header(StrView t, StrView* num) {
    if (!t.starts_with("CPU#")) return false;
    usize n = 4;
    while (n < t.len && is_digit(t[n])) ++n;
    if (n == 4 || !t.sub(n).starts_with(" AffMask:")) return false;
    *num = t.sub(4, n - 4);
    return true;
}

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

// Records the first leaf capture_cpuid would read that a dumped CPU lacks. Leaf
// 8000_0000H may be absent (very old CPUs and dumps list no extended leaves: then there
// are none), so may 4000_0000H (informational) and 0BH sub-leaf 1 (location only).
struct MissingQuery {
    const CpuidSnapshot* s;
    u32 leaf, sub;
    bool found;
};

CpuidRegs missing_query(void* ctx, u32 leaf, u32 sub) {
    auto* q = static_cast<MissingQuery*>(ctx);
    CpuidRegs r;
    bool optional = leaf == 0x80000000 || leaf == 0x40000000 || (leaf == 0xB && sub == 1);
    if (!q->s->find(leaf, sub, &r) && !optional && !q->found) {
        q->found = true;
        q->leaf = leaf;
        q->sub = sub;
    }
    return r;
}

class DumpParser {
public:
    DumpParser(StrView text, const char* name, Vec<CpuRecord>* out) : text_(text), name_(name), out_(out) {}

    Status run(DumpFormat fmt);

private:
    Error err(u32 line, const char* fmt, ...) __attribute__((format(printf, 3, 4)));
    Status check_binary();
    Status begin_cpu(u32 index, u32 line, const char* label);
    Status end_cpu();
    Status add(u32 leaf, bool explicit_sub, u32 sub, const CpuidRegs& r, u32 line, StrView what);
    Status parse_cpuid_r();
    Status parse_aida64();
    Status aida_register_line(StrView t, u32 line);
    void aida_location(StrView t);
    Status aida_all_cpus_line(StrView t, u32 line);
    Status cpuid_r_register_line(StrView t, u32 line);
    Status check_against_first();
    void finish();

    StrView text_;
    const char* name_;
    Vec<CpuRecord>* out_;
    DumpFormat fmt_ = DumpFormat::automatic;

    // The CPU section being read.
    bool in_cpu_ = false;
    CpuRecord cur_;
    char cur_label_[32] = {};
    u32 cur_line_ = 0;
    bool cur_has_loc_ = false;
    u32 cur_pkg_ = 0, cur_core_ = 0, cur_thread_ = 0;
    Vec<LeafCount> counts_;
    u32 entry_line_[CpuidSnapshot::kMaxEntries] = {};

    // Per finished CPU (parallel to *out_): header line and dump-given location.
    Vec<u32> header_lines_;
    Vec<Label> labels_;
    Vec<u8> has_loc_;
    Vec<u32> loc_;  // 3 per CPU
    Vec<ApicEntry> apic_;
};

Error DumpParser::err(u32 line, const char* fmt, ...) {
    char msg[200];
    va_list ap;
    va_start(ap, fmt);
    vformat_to(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (line) return Error::make(Errc::invalid_argument, "%s:%u: %s", name_, line, msg);
    return Error::make(Errc::invalid_argument, "%s: %s", name_, msg);
}

Status DumpParser::check_binary() {
    // Windows tools may save reports as UTF-16: say so instead of "binary data".
    if (text_.len >= 2 && ((u8(text_[0]) == 0xFF && u8(text_[1]) == 0xFE) ||
                           (u8(text_[0]) == 0xFE && u8(text_[1]) == 0xFF)))
        return err(1, "UTF-16 text; convert the dump to ASCII/UTF-8 first (e.g. iconv -f UTF-16 -t UTF-8)");
    u32 line = 1, col = 1;
    for (usize i = 0; i < text_.len; ++i) {
        unsigned char c = static_cast<unsigned char>(text_[i]);
        if (c == '\n') {
            ++line;
            col = 1;
            continue;
        }
        bool ok = c >= 0x20 ? c != 0x7f : (c == '\t' || c == '\r' || c == '\f' || c == '\v');
        if (!ok)
            return err(line, "binary data (byte 0x%02x at column %u); expected a text CPUID dump "
                             "(`cpuid -r` or AIDA64 report)", c, col);
        ++col;
    }
    return ok_status();
}

Status DumpParser::begin_cpu(u32 index, u32 line, const char* label) {
    PMULAB_TRY(end_cpu());
    if (out_->size() >= kMaxDumpCpus)
        return err(line, "more than %u logical CPUs in the dump; not a real machine's dump?", kMaxDumpCpus);
    for (usize i = 0; i < out_->size(); ++i)
        if ((*out_)[i].index == index)
            return err(line, "%s appears twice (first at line %u)", label, header_lines_[i]);
    in_cpu_ = true;
    cur_ = CpuRecord();
    cur_.index = index;
    cur_.collected = true;
    str_copy(cur_label_, sizeof cur_label_, label);
    cur_line_ = line;
    cur_has_loc_ = false;
    counts_.clear();
    return ok_status();
}

Status DumpParser::end_cpu() {
    if (!in_cpu_) return ok_status();
    in_cpu_ = false;
    CpuidRegs l0;
    if (!cur_.raw.find(0, 0, &l0))
        return err(cur_line_, "%s has no CPUID leaf 0 line (truncated dump?)", cur_label_);
    if (l0.eax >= 1 && !cur_.raw.has(1))
        return err(cur_line_, "%s has no CPUID leaf 1 line although leaf 0 reports maximum leaf 0x%x "
                              "(truncated dump?)", cur_label_, l0.eax);
    // Every leaf the decoder reads on this CPU must be in its section, or the decoded PMU
    // would silently be zeros: a section cut short is the usual cause.
    MissingQuery q{&cur_.raw, 0, 0, false};
    CpuidSnapshot again;
    capture_cpuid(missing_query, &q, &again);
    if (q.found)
        return err(cur_line_, "%s has no CPUID leaf 0x%08X sub-leaf %u line although its leaves 0/1/7 "
                              "enumerate it (truncated dump?)", cur_label_, q.leaf, q.sub);
    out_->push(cur_);
    header_lines_.push(cur_line_);
    Label& l = labels_.emplace();
    str_copy(l.s, sizeof l.s, cur_label_);
    has_loc_.push(cur_has_loc_ ? 1 : 0);
    loc_.push(cur_pkg_);
    loc_.push(cur_core_);
    loc_.push(cur_thread_);
    return ok_status();
}

Status DumpParser::add(u32 leaf, bool explicit_sub, u32 sub, const CpuidRegs& r, u32 line, StrView what) {
    LeafCount* lc = nullptr;
    for (LeafCount& c : counts_)
        if (c.leaf == leaf) lc = &c;
    if (!lc) lc = &counts_.push(LeafCount{leaf, 0});
    if (!explicit_sub) sub = lc->count;
    lc->count++;
    if (!cpuid_subleaf_is_captured(leaf, sub)) return ok_status();
    for (u32 i = 0; i < cur_.raw.count; ++i)
        if (cur_.raw.entries[i].leaf == leaf && cur_.raw.entries[i].subleaf == sub)
            return err(line, "'%.*s' repeats leaf 0x%08X sub-leaf %u of %s (first at line %u)", qn(what),
                       what.ptr, leaf, sub, cur_label_,
                       entry_line_[i]);
    u32 slot = cur_.raw.count;
    if (!cur_.raw.set(leaf, sub, r))
        return err(line, "too many leaves for %s (at most %u kept)", cur_label_, CpuidSnapshot::kMaxEntries);
    entry_line_[slot] = line;
    return ok_status();
}

// ---- cpuid -r ----

Status DumpParser::cpuid_r_register_line(StrView t, u32 line) {
    // 0xLLLLLLLL 0xSS: eax=0x........ ebx=0x........ ecx=0x........ edx=0x........
    // (old versions: 0xLLLLLLLL: eax=...)
    StrView rest = t;
    StrView w = take_word(&rest);
    bool has_sub = true;
    StrView leaf_tok = w, sub_tok;
    if (w.len && w[w.len - 1] == ':') {
        has_sub = false;
        leaf_tok = w.sub(0, w.len - 1);
    } else {
        sub_tok = take_word(&rest);
        if (!sub_tok.len || sub_tok[sub_tok.len - 1] != ':')
            return err(line, "expected '0xLEAF 0xSUB:' at the start of '%.*s'", qn(t), t.ptr);
        sub_tok = sub_tok.sub(0, sub_tok.len - 1);
    }
    StrView head = t.sub(0, usize(rest.ptr - t.ptr)).trim();
    u32 leaf = 0, sub = 0;
    if (!leaf_tok.starts_with("0x") || !hex_u32(leaf_tok.sub(2), &leaf))
        return err(line, "bad leaf number '%.*s' (expected 0x and up to 8 hex digits)", qn(leaf_tok), leaf_tok.ptr);
    if (has_sub && (!(sub_tok.starts_with("0x") || sub_tok.starts_with("0X")) || !hex_u32(sub_tok.sub(2), &sub)))
        return err(line, "bad sub-leaf number '%.*s' after leaf 0x%08x (expected 0x and up to 8 hex digits)",
                   qn(sub_tok), sub_tok.ptr, leaf);
    static const char* const kRegs[4] = {"eax=", "ebx=", "ecx=", "edx="};
    u32 v[4] = {};
    for (int i = 0; i < 4; ++i) {
        StrView r = take_word(&rest);
        if (!r.starts_with(kRegs[i]))
            return err(line, "expected 4 registers 'eax=0x... ebx=0x... ecx=0x... edx=0x...' after '%.*s'",
                       qn(head), head.ptr);
        StrView hex = r.sub(4);
        if (hex.starts_with("0x") || hex.starts_with("0X")) hex = hex.sub(2);
        if (!hex_u32(hex, &v[i])) {
            char c = first_non_hex(hex);
            if (c)
                return err(line, "bad hex digit '%c' in %.3s value '%.*s' after '%.*s'", c, kRegs[i],
                           qn(r), r.ptr,
                           qn(head), head.ptr);
            return err(line, "%.3s value '%.*s' after '%.*s' is not 1 to 8 hex digits", kRegs[i],
                       qn(r), r.ptr,
                       qn(head), head.ptr);
        }
    }
    if (!rest.empty())
        return err(line, "unexpected text '%.*s' after the edx value", qn(rest), rest.ptr);
    CpuidRegs regs;
    regs.eax = v[0];
    regs.ebx = v[1];
    regs.ecx = v[2];
    regs.edx = v[3];
    return add(leaf, has_sub, sub, regs, line, head);
}

Status DumpParser::parse_cpuid_r() {
    LineReader lr{text_};
    StrView raw;
    while (lr.next(&raw)) {
        StrView t = raw.trim();
        if (t.empty() || t[0] == '#') continue;
        bool has_index = false, bad_index = false;
        u32 index = 0;
        if (is_cpuid_r_header(t, &has_index, &index, &bad_index)) {
            if (bad_index) return err(lr.no, "bad CPU number in '%.*s'", qn(t), t.ptr);
            char label[32];
            if (has_index) format_to(label, sizeof label, "CPU %u", index);
            else str_copy(label, sizeof label, "CPU");
            PMULAB_TRY(begin_cpu(index, lr.no, label));
            continue;
        }
        if (is_cpuid_r_register_line(t)) {
            // `cpuid -r -1` without its "CPU:" line: one implicit CPU.
            if (!in_cpu_) PMULAB_TRY(begin_cpu(0, lr.no, "CPU"));
            PMULAB_TRY(cpuid_r_register_line(t, lr.no));
            continue;
        }
        if (in_cpu_)
            return err(lr.no, "'%.*s' is not a raw register line ('0x00000000 0x00: eax=0x... ebx=0x... "
                              "ecx=0x... edx=0x...'); decoded `cpuid` output is not supported, use `cpuid -r`",
                       qn(t), t.ptr);
        // Text before the first CPU header is ignored.
    }
    PMULAB_TRY(end_cpu());
    if (out_->empty())
        return err(0, "no CPU section found: expected `cpuid -r` output ('CPU 0:' followed by lines "
                      "'0x00000000 0x00: eax=0x... ebx=0x... ecx=0x... edx=0x...')");
    return ok_status();
}

// ---- AIDA64 / EVEREST ----

Status DumpParser::aida_register_line(StrView t, u32 line) {
    // CPUID 0000000A: 07300404-00000000-00000000-00008603 [SL 01] [comment]
    StrView rest = skip_spaces(t.sub(6));
    usize colon = rest.find(':');
    StrView leaf_tok = rest.sub(0, colon);
    u32 leaf = 0;
    if (colon == rest.len || !hex_u32(leaf_tok, &leaf))
        return err(line, "bad leaf number in '%.*s' (expected 'CPUID' and 8 hex digits, then ':')", qn(t), t.ptr);
    StrView head = t.sub(0, usize(leaf_tok.ptr - t.ptr) + colon + 1);
    int hl = qn(head);
    rest = skip_spaces(rest.sub(colon + 1));
    StrView regs_tok = take_word(&rest);
    u32 v[4] = {};
    static const char* const kNames[4] = {"EAX", "EBX", "ECX", "EDX"};
    unsigned n = 0;
    usize p = 0;
    StrView part[4];
    while (true) {
        usize dash = regs_tok.find('-', p);
        if (n < 4) part[n] = regs_tok.sub(p, dash - p);
        ++n;
        if (dash >= regs_tok.len) break;
        p = dash + 1;
    }
    if (regs_tok.empty() || n != 4)
        return err(line, "expected 4 hex registers after '%.*s' (EAX-EBX-ECX-EDX, found %u)", hl, head.ptr,
                   regs_tok.empty() ? 0u : n);
    for (int i = 0; i < 4; ++i) {
        if (part[i].len != 8 || !hex_u32(part[i], &v[i])) {
            char c = first_non_hex(part[i]);
            if (c)
                return err(line, "bad hex digit '%c' in %s value '%.*s' after '%.*s'", c, kNames[i],
                           qn(part[i]), part[i].ptr, hl, head.ptr);
            return err(line, "%s value '%.*s' after '%.*s' is not 8 hex digits", kNames[i],
                       qn(part[i]), part[i].ptr, hl, head.ptr);
        }
    }
    // Optional "[SL xx]" among the bracketed comments.
    bool has_sub = false;
    u32 sub = 0;
    for (usize i = rest.find('['); i < rest.len; i = rest.find('[', i + 1)) {
        StrView tag = rest.sub(i + 1);
        if (!tag.starts_with("SL ")) continue;
        usize close = tag.find(']');
        if (close == tag.len || !hex_u32(tag.sub(3, close - 3).trim(), &sub))
            return err(line, "bad sub-leaf tag '%.*s' (expected '[SL' and hex digits, then ']')",
                       qn(StrView(tag.ptr - 1, tag.len + 1)), tag.ptr - 1);
        has_sub = true;
        break;
    }
    CpuidRegs regs;
    regs.eax = v[0];
    regs.ebx = v[1];
    regs.ecx = v[2];
    regs.edx = v[3];
    return add(leaf, has_sub, sub, regs, line, head);
}

// Finds "<key> N" in t; returns false when absent or not a number.
bool find_number_after(StrView t, StrView key, u32* out) {
    for (usize i = 0; i + key.len <= t.len; ++i) {
        if (!t.sub(i, key.len).eq(key)) continue;
        StrView r = skip_spaces(t.sub(i + key.len));
        usize n = 0;
        while (n < r.len && is_digit(r[n])) ++n;
        return dec_u32(r.sub(0, n), out);
    }
    return false;
}

// "allcpu: Package 0 / Core 1 / Thread 0: Valid"
void DumpParser::aida_location(StrView t) {
    u32 p, c, th;
    if (find_number_after(t, "Package", &p) && find_number_after(t, "Core", &c) &&
        find_number_after(t, "Thread", &th)) {
        cur_has_loc_ = true;
        cur_pkg_ = p;
        cur_core_ = c;
        cur_thread_ = th;
    }
}

// "CPU   3: APICID   18 / Package 0 / Core   3 / Thread 0: Valid"
Status DumpParser::aida_all_cpus_line(StrView t, u32 line) {
    if (!t.starts_with("CPU ")) return ok_status();
    u32 cpu, apic;
    if (!find_number_after(t, "CPU", &cpu) || !find_number_after(t, "APICID", &apic)) return ok_status();
    for (const ApicEntry& e : apic_)
        if (e.cpu == cpu) return err(line, "CPU %u is listed twice in the 'All CPUs' section", cpu);
    if (apic_.size() >= kMaxDumpCpus)
        return err(line, "more than %u CPUs in the 'All CPUs' section", kMaxDumpCpus);
    apic_.push(ApicEntry{cpu, apic});
    return ok_status();
}

Status DumpParser::parse_aida64() {
    LineReader lr{text_};
    StrView raw;
    enum { kOther, kCpu, kAllCpus } section = kOther;
    while (lr.next(&raw)) {
        StrView t = raw.trim();
        if (t.empty() || t[0] == '#') continue;
        StrView title;
        if (aida_section_title(t, &title)) {
            PMULAB_TRY(end_cpu());
            section = kOther;
            StrView num;
            if (title.starts_with("CPUID Registers / Logical CPU #")) num = title.sub(31);
            else if (title.starts_with("Logical CPU #")) num = title.sub(13);
            else if (title.eq("All CPUs")) section = kAllCpus;
            if (num.ptr) {
                u32 index = 0;
                if (!dec_u32(num, &index))
                    return err(lr.no, "bad CPU number '%.*s' in section header '%.*s'", qn(num), num.ptr,
                               qn(t), t.ptr);
                char label[32];
                format_to(label, sizeof label, "logical CPU #%u", index);
                PMULAB_TRY(begin_cpu(index, lr.no, label));
                section = kCpu;
            }
            continue;
        }
        StrView affnum;
        if (is_aida_affmask_header(t, &affnum)) {
            u32 index = 0;
            if (!dec_u32(affnum, &index)) return err(lr.no, "bad CPU number in '%.*s'", qn(t), t.ptr);
            char label[32];
            format_to(label, sizeof label, "logical CPU #%u", index);
            PMULAB_TRY(begin_cpu(index, lr.no, label));
            section = kCpu;
            continue;
        }
        if (section == kCpu) {
            if (is_aida_register_line(t)) PMULAB_TRY(aida_register_line(t, lr.no));
            else if (t.starts_with("allcpu:")) aida_location(t);
            // Cache descriptions and other text inside the section are not CPUID data.
        } else if (section == kAllCpus) {
            PMULAB_TRY(aida_all_cpus_line(t, lr.no));
        }
    }
    PMULAB_TRY(end_cpu());
    if (out_->empty())
        return err(0, "no logical-CPU section found: expected an AIDA64 report with sections "
                      "'------[ CPUID Registers / Logical CPU #0 ]------' (or '------[ Logical CPU #0 ]------') "
                      "holding 'CPUID 00000000: ...' lines");
    return ok_status();
}

// A dump cut inside a later CPU's section still has that CPU's leaves 0 and 1; what it
// lacks are the leaves after the cut. All logical CPUs of one machine list the same
// leaves, so a leaf the first CPU has, and that this CPU's own maximum leaves
// enumerate, must be there too.
Status DumpParser::check_against_first() {
    if (out_->size() < 2) return ok_status();
    const CpuRecord& first = (*out_)[0];
    for (usize i = 1; i < out_->size(); ++i) {
        const CpuRecord& r = (*out_)[i];
        u32 max = r.raw.get(0).eax;
        u32 emax = r.raw.get(0x80000000).eax;
        for (u32 k = 0; k < first.raw.count; ++k) {
            const CpuidEntry& e = first.raw.entries[k];
            if (e.subleaf != 0 || r.raw.has(e.leaf, 0)) continue;
            bool enumerated = e.leaf < 0x40000000 ? e.leaf <= max
                              : e.leaf >= 0x80000000 ? (e.leaf == 0x80000000 || e.leaf <= emax)
                                                     : true;
            if (!enumerated) continue;
            return err(header_lines_[i], "%s has no CPUID leaf 0x%08X line although %s has one (truncated dump?)",
                       labels_[i].s, e.leaf, labels_[0].s);
        }
    }
    return ok_status();
}

void DumpParser::finish() {
    for (usize i = 0; i < out_->size(); ++i) {
        CpuRecord& r = (*out_)[i];
        // Decode first with the location unknown so that the APIC ID (and the location
        // fields the dump does not give) come from CPUID, then apply what the dump says.
        r.topology_known = false;
        census_decode(r);
        if (has_loc_[i]) {
            r.topo.package = loc_[3 * i];
            r.topo.core = loc_[3 * i + 1];
            r.topo.thread = loc_[3 * i + 2];
            r.topology_known = true;
        }
        for (const ApicEntry& e : apic_)
            if (e.cpu == r.index) r.topo.apic_id = e.apic;
    }
}

Status DumpParser::run(DumpFormat fmt) {
    out_->clear();
    // A UTF-8 byte-order mark is not part of the first line.
    if (text_.starts_with("\xEF\xBB\xBF")) text_ = text_.sub(3);
    PMULAB_TRY(check_binary());
    if (fmt == DumpFormat::automatic) fmt = detect_cpuid_dump_format(text_);
    fmt_ = fmt;
    Status s;
    switch (fmt) {
        case DumpFormat::cpuid_r: s = parse_cpuid_r(); break;
        case DumpFormat::aida64: s = parse_aida64(); break;
        case DumpFormat::automatic:
            s = err(0, "not a CPUID dump: found neither `cpuid -r` output ('CPU 0:' and lines "
                       "'0x00000000 0x00: eax=0x...') nor an AIDA64 report ('------[ CPUID Registers / "
                       "Logical CPU #0 ]------' and lines 'CPUID 00000000: ...')");
            break;
    }
    if (s.ok()) s = check_against_first();
    if (!s.ok()) {
        out_->clear();
        return s;
    }
    finish();
    return ok_status();
}

}  // namespace

DumpFormat detect_cpuid_dump_format(StrView text) {
    LineReader lr{text};
    StrView raw;
    while (lr.next(&raw)) {
        StrView t = raw.trim();
        if (t.empty() || t[0] == '#') continue;
        StrView title;
        bool has_index, bad;
        u32 index;
        StrView num;
        if (aida_section_title(t, &title) || is_aida_register_line(t) || is_aida_affmask_header(t, &num))
            return DumpFormat::aida64;
        if (is_cpuid_r_header(t, &has_index, &index, &bad) || is_cpuid_r_register_line(t))
            return DumpFormat::cpuid_r;
    }
    return DumpFormat::automatic;
}

Status parse_cpuid_dump(StrView text, const char* name, DumpFormat format, Vec<CpuRecord>* out) {
    DumpParser p(text, name ? name : "<dump>", out);
    return p.run(format);
}

}  // namespace pmulab
