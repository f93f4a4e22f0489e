// The common part of the CPUID dump reader (cpuid_dump.h): format names and detection,
// the one line loop both formats share, the CPU sections (truncation and duplicate
// checks) and the final decode. The per-format lines are read in cpuid_dump_cpuid_r.cpp
// and cpuid_dump_aida64.cpp (cpuid_dump_parser.h ties them together).
#include "census/cpuid_dump_parser.h"

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

namespace cpuid_dump {

namespace {

bool is_space(char c) { return c == ' ' || c == '\t'; }

}  // namespace

// Exactly 1..8 hex digits.
bool hex_u32(StrView s, u32* out) {
    u64 v = 0;
    if (s.len > 8 || !parse_hex_u64(s, &v)) return false;
    *out = u32(v);
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
        if (hex_digit(s[i]) < 0) return s[i];
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

namespace {

// Iterates the lines of a dump (LF or CRLF), numbering from 1, and yields them trimmed;
// blank lines and '#' comments (in both formats) are skipped.
struct DumpLines {
    StrView text;
    usize pos = 0;
    u32 no = 0;
    bool next(StrView* line) {
        while (pos < text.len) {
            usize e = text.find('\n', pos);
            StrView l = text.sub(pos, e - pos);
            if (l.len && l[l.len - 1] == '\r') l.len--;
            pos = e + 1;
            ++no;
            StrView t = l.trim();
            if (t.empty() || t[0] == '#') continue;
            *line = t;
            return true;
        }
        return false;
    }
};

// Records the first leaf capture_cpuid would read that a dumped CPU lacks. Leaf
// 8000_0000H may be absent (very old CPUs and dumps list no extended leaves: then there
// are none), so may 4000_0000H (informational), 0BH sub-leaf 1 (location only) and the
// cache leaves 04H / 8000_001DH (sim_cache.h falls back to a per-family geometry).
struct MissingQuery {
    const CpuidSnapshot* s;
    u32 leaf, sub;
    bool found;
};

CpuidRegs missing_query(void* ctx, u32 leaf, u32 sub) {
    auto* q = static_cast<MissingQuery*>(ctx);
    CpuidRegs r;
    bool optional = leaf == 0x80000000 || leaf == 0x40000000 || (leaf == 0xB && sub == 1) || leaf == 0x4 ||
                    leaf == 0x8000001D ||  // the cache leaves: the simulator has per-family defaults
                    // topology (x86/topology.h): a missing 1FH reads as absent (0BH is used), a
                    // missing sub-leaf as its end (AIDA64 omits the invalid last level)
                    leaf == 0x1F || leaf == 0x8000001E;
    if (!q->s->find(leaf, sub, &r) && !optional && !q->found) {
        q->found = true;
        q->leaf = leaf;
        q->sub = sub;
    }
    return r;
}

}  // namespace

Error DumpParser::err(u32 line, const char* fmt, ...) {
    char msg[Error::kMsgMax];
    va_list ap;
    va_start(ap, fmt);
    vformat_to(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (line) return Error::make(Errc::invalid_argument, "%s:%u: %s", name_, line, msg);
    return Error::make(Errc::invalid_argument, "%s: %s", name_, msg);
}

Status DumpParser::check_binary() {
    // Windows tools may save reports as UTF-16: say so instead of "binary data".
    if (text_.len >= 2 &&
        ((u8(text_[0]) == 0xFF && u8(text_[1]) == 0xFE) || (u8(text_[0]) == 0xFE && u8(text_[1]) == 0xFF)))
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
            return err(line,
                       "binary data (byte 0x%02x at column %u); expected a text CPUID dump "
                       "(`cpuid -r` or AIDA64 report)",
                       c, col);
        ++col;
    }
    return ok_status();
}

Status DumpParser::begin_cpu(u32 index, u32 line, const char* label) {
    PMULAB_TRY(end_cpu());
    if (out_->size() >= kMaxDumpCpus)
        return err(line, "more than %u logical CPUs in the dump; not a real machine's dump?", kMaxDumpCpus);
    for (usize i = 0; i < out_->size(); ++i)
        if ((*out_)[i].index == index) return err(line, "%s appears twice (first at line %u)", label, header_lines_[i]);
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
    if (!cur_.raw.find(0, 0, &l0)) return err(cur_line_, "%s has no CPUID leaf 0 line (truncated dump?)", cur_label_);
    if (l0.eax >= 1 && !cur_.raw.has(1))
        return err(cur_line_,
                   "%s has no CPUID leaf 1 line although leaf 0 reports maximum leaf 0x%x "
                   "(truncated dump?)",
                   cur_label_, l0.eax);
    // Every leaf the decoder reads on this CPU must be in its section, or the decoded PMU
    // would silently be zeros: a section cut short is the usual cause.
    MissingQuery q{&cur_.raw, 0, 0, false};
    CpuidSnapshot again;
    capture_cpuid(missing_query, &q, &again);
    if (q.found)
        return err(cur_line_,
                   "%s has no CPUID leaf 0x%08X sub-leaf %u line although its leaves 0/1/7 "
                   "enumerate it (truncated dump?)",
                   cur_label_, q.leaf, q.sub);
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

Status DumpParser::add(u32 leaf, bool explicit_sub, u32 sub, const u32 (&v)[4], u32 line, StrView what) {
    LeafCount* lc = nullptr;
    for (LeafCount& c : counts_)
        if (c.leaf == leaf) lc = &c;
    if (!lc) lc = &counts_.push(LeafCount{leaf, 0});
    if (!explicit_sub) sub = lc->count;
    lc->count++;
    if (!cpuid_subleaf_is_captured(leaf, sub)) return ok_status();
    for (u32 i = 0; i < cur_.raw.count; ++i)
        if (cur_.raw.entries[i].leaf == leaf && cur_.raw.entries[i].subleaf == sub)
            return err(line, "'%.*s' repeats leaf 0x%08X sub-leaf %u of %s (first at line %u)", qn(what), what.ptr,
                       leaf, sub, cur_label_, entry_line_[i]);
    CpuidRegs r;
    r.eax = v[0];
    r.ebx = v[1];
    r.ecx = v[2];
    r.edx = v[3];
    u32 slot = cur_.raw.count;
    if (!cur_.raw.set(leaf, sub, r))
        return err(line, "too many leaves for %s (at most %u kept)", cur_label_, CpuidSnapshot::kMaxEntries);
    entry_line_[slot] = line;
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
            bool enumerated = e.leaf < 0x40000000    ? e.leaf <= max
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

// The line loop of both formats: each line goes to the format's reader, which opens
// CPU sections (begin_cpu) and adds their leaves.
Status DumpParser::read(DumpFormat fmt) {
    DumpLines lines{text_};
    StrView t;
    while (lines.next(&t)) {
        Status s = fmt == DumpFormat::cpuid_r ? cpuid_r_line(t, lines.no) : aida64_line(t, lines.no);
        if (!s.ok() && lines.pos > text_.len)  // the last line, without its newline
            return Error::make(s.error().code, "%s; the file ends in the middle of this line (truncated dump?)",
                               s.error().msg);
        PMULAB_TRY(s);
    }
    // A full AIDA64 report (it starts with a "Versions" or "CPU Info" section) goes on
    // after its CPU sections ("All CPUs", "MSR Registers", ...): ending inside one is a cut.
    if (fmt == DumpFormat::aida64 && aida_report_ && aida_section_ == AidaSection::cpu && in_cpu_)
        return err(lines.no,
                   "the report ends inside the section of %s; an AIDA64 report goes on after its CPU "
                   "sections (truncated dump?)",
                   cur_label_);
    PMULAB_TRY(end_cpu());
    if (fmt == DumpFormat::aida64 && aida_all_cpus_line_ && apic_.size() != out_->size())
        return err(aida_all_cpus_line_,
                   "the 'All CPUs' section lists %u CPUs but the report has %u CPU sections "
                   "(truncated dump?)",
                   unsigned(apic_.size()), unsigned(out_->size()));
    if (out_->empty()) return err(0, "%s", fmt == DumpFormat::cpuid_r ? kCpuidRNoCpu : kAida64NoCpu);
    return ok_status();
}

Status DumpParser::run(DumpFormat fmt) {
    out_->clear();
    // A UTF-8 byte-order mark is not part of the first line.
    if (text_.starts_with("\xEF\xBB\xBF")) text_ = text_.sub(3);
    PMULAB_TRY(check_binary());
    if (fmt == DumpFormat::automatic) fmt = detect_cpuid_dump_format(text_);
    Status s;
    switch (fmt) {
        case DumpFormat::cpuid_r:
        case DumpFormat::aida64: s = read(fmt); break;
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

}  // namespace cpuid_dump

DumpFormat detect_cpuid_dump_format(StrView text) {
    cpuid_dump::DumpLines lines{text};
    StrView t;
    while (lines.next(&t)) {
        if (cpuid_dump::is_aida64_line(t)) return DumpFormat::aida64;
        if (cpuid_dump::is_cpuid_r_line(t)) return DumpFormat::cpuid_r;
    }
    return DumpFormat::automatic;
}

Status parse_cpuid_dump(StrView text, const char* name, DumpFormat format, Vec<CpuRecord>* out) {
    cpuid_dump::DumpParser p(text, name ? name : "<dump>", out);
    return p.run(format);
}

}  // namespace pmulab
