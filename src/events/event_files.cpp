// Event files (\pmulab\events\*.evt), their choice per CPU and name resolution;
// see event_files.h and docs/events.md.
#include "events/event_files.h"

#include <stdarg.h>

namespace pmulab {

namespace {

constexpr usize kMaxTableEvents = 8192;
constexpr usize kHeaderProbe = 4096;  // bytes read to see a file's header

bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }
bool is_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
bool all_hex(StrView s) {
    if (s.empty()) return false;
    for (usize i = 0; i < s.len; ++i)
        if (!is_hex(s[i])) return false;
    return true;
}
bool printable(char c) { return u8(c) >= 0x20 && u8(c) < 0x7F; }
bool all_digits(StrView s) {
    if (s.empty()) return false;
    for (usize i = 0; i < s.len; ++i)
        if (s[i] < '0' || s[i] > '9') return false;
    return true;
}

// Event names: as events.cpp (letters, digits and _ . - : + @ ( ) [ ]).
bool name_char(char c) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
    switch (c) {
        case '_': case '.': case '-': case ':': case '+': case '@': case '(': case ')': case '[': case ']':
            return true;
        default: return false;
    }
}

// Copies s for quoting in a message: at most `max` characters ("..." when cut).
void clip(StrView s, char* buf, usize cap, usize max = 40) {
    usize n = s.len;
    bool cut = n > max;
    if (cut) n = max - 3;
    usize o = 0;
    for (usize i = 0; i < n && o + 1 < cap; ++i) buf[o++] = printable(s[i]) ? s[i] : '?';
    if (cut)
        for (int k = 0; k < 3 && o + 1 < cap; ++k) buf[o++] = '.';
    buf[o] = 0;
}

Error line_error(const char* path, u32 line, const char* fmt, ...) __attribute__((format(printf, 3, 4)));
Error line_error(const char* path, u32 line, const char* fmt, ...) {
    char msg[sizeof(Error::msg)];
    va_list ap;
    va_start(ap, fmt);
    vformat_to(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return Error::make(Errc::invalid_argument, "%s:%u: %s", path, line, msg);
}

// Splits s at whitespace into words (at most `max`); returns the count, or max + 1
// when there are more.
usize split_words(StrView s, StrView* words, usize max) {
    usize n = 0, i = 0;
    while (i < s.len) {
        while (i < s.len && is_ws(s[i])) ++i;
        if (i >= s.len) break;
        usize b = i;
        while (i < s.len && !is_ws(s[i])) ++i;
        if (n == max) return max + 1;
        words[n++] = s.sub(b, i - b);
    }
    return n;
}

bool parse_hex_u32(StrView s, u32 max, u32* out) {
    if (s.len > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) s = s.sub(2);
    u64 v = 0;
    if (s.empty() || s.len > 16 || !parse_hex_u64(s, &v) || v > max) return false;
    *out = u32(v);
    return true;
}

// ---- @match ----

Status parse_match(StrView rest, const char* path, u32 line, EventTableMatch* m) {
    StrView w[8];
    usize n = split_words(rest, w, 6);
    if (n < 2)
        return line_error(path, line, "@match needs a vendor and FAMILY_MODEL, e.g. '@match GenuineIntel 06_5E'");
    if (n > 5) return line_error(path, line, "@match has too many words (vendor FAMILY_MODEL [stepping=] [core=] [native=])");
    char q[48];
    clip(w[0], q, sizeof q);
    if (w[0].len > 12) return line_error(path, line, "vendor '%s' is longer than 12 characters (CPUID.0 vendor string)", q);
    for (usize i = 0; i < w[0].len; ++i) m->vendor[i] = w[0][i];
    m->vendor[w[0].len] = 0;
    StrView fm = w[1];
    usize us = fm.find('_');
    clip(fm, q, sizeof q);
    if (us >= fm.len || us == 0 || us > 2 || fm.len - us - 1 == 0 || fm.len - us - 1 > 2 ||
        !all_hex(fm.sub(0, us)) || !all_hex(fm.sub(us + 1)))
        return line_error(path, line, "'%s' is not FAMILY_MODEL in hex, e.g. 06_5E", q);
    u32 fam = 0, mod = 0;
    parse_hex_u32(fm.sub(0, us), 0xFF, &fam);
    parse_hex_u32(fm.sub(us + 1), 0xFF, &mod);
    m->family = fam;
    m->model = mod;
    for (usize i = 2; i < n; ++i) {
        StrView kv = w[i];
        usize eq = kv.find('=');
        StrView key = kv.sub(0, eq);
        StrView val = eq < kv.len ? kv.sub(eq + 1) : StrView();
        char vq[48];
        clip(val, vq, sizeof vq);
        clip(key, q, sizeof q);
        if (eq >= kv.len) return line_error(path, line, "'%s' is not KEY=VALUE (stepping=, core=, native=)", q);
        if (key.eq("stepping")) {
            if (m->has_stepping) return line_error(path, line, "stepping= given twice");
            usize dash = val.find('-');
            u32 lo = 0, hi = 0;
            bool ok = dash < val.len ? all_hex(val.sub(0, dash)) && all_hex(val.sub(dash + 1)) &&
                                           parse_hex_u32(val.sub(0, dash), 0xF, &lo) &&
                                           parse_hex_u32(val.sub(dash + 1), 0xF, &hi)
                                     : all_hex(val) && parse_hex_u32(val, 0xF, &lo);
            if (dash >= val.len) hi = lo;
            if (!ok) return line_error(path, line, "stepping '%s' is not a stepping or range in hex (0-F), e.g. 5-F", vq);
            if (lo > hi) return line_error(path, line, "stepping range '%s' is empty (%X > %X)", vq, lo, hi);
            m->has_stepping = true;
            m->stepping_min = u8(lo);
            m->stepping_max = u8(hi);
        } else if (key.eq("core")) {
            if (m->has_core_type) return line_error(path, line, "core= given twice");
            u32 v = 0;
            if (!parse_hex_u32(val, 0xFF, &v) || v == 0)
                return line_error(path, line,
                                  "core '%s' is not a hybrid core type in hex (CPUID.1AH:EAX[31:24]: 0x40 P-core, "
                                  "0x20 E-core)",
                                  vq);
            m->has_core_type = true;
            m->core_type = u8(v);
        } else if (key.eq("native")) {
            if (m->has_native) return line_error(path, line, "native= given twice");
            u32 v = 0;
            if (!parse_hex_u32(val, 0xFFFFFF, &v))
                return line_error(path, line, "native '%s' is not a native model ID in hex (CPUID.1AH:EAX[23:0])", vq);
            m->has_native = true;
            m->native_model_id = v;
        } else {
            return line_error(path, line, "unknown @match key '%s' (known: stepping, core, native)", q);
        }
    }
    if (m->has_native && !m->has_core_type)
        return line_error(path, line, "native= needs core= (the native model ID is per core type)");
    m->line = line;
    return ok_status();
}

// ---- event lines ----

enum Mod : u32 {
    kCmsk = 1u << 0,
    kInv = 1u << 1,
    kEdg = 1u << 2,
    kAnyT = 1u << 3,
    kEq = 1u << 4,
    kUmask2 = 1u << 5,
    kCtr = 1u << 6,
    kAlone = 1u << 7,
    kRsp0 = 1u << 8,
    kRsp1 = 1u << 9,
    k3F6 = 1u << 10,
    kPf = 1u << 11,
};

struct ModDef {
    const char* key;
    u32 bit;
    bool value;
    u32 msr;
    bool fixed_ok;  // allowed on FIXED_CTRn
};

constexpr ModDef kMods[] = {
    {"CMSK", kCmsk, true, 0, false},
    {"INV", kInv, false, 0, false},
    {"EDG", kEdg, false, 0, false},
    {"AnyT", kAnyT, false, 0, true},
    {"EQ", kEq, false, 0, false},
    {"UMASK2", kUmask2, true, 0, false},
    {"CTR", kCtr, true, 0, false},
    {"TakenAlone", kAlone, false, 0, true},
    {"MSR_RSP0", kRsp0, true, regs::MSR_OFFCORE_RSP_0, false},
    {"MSR_RSP1", kRsp1, true, regs::MSR_OFFCORE_RSP_1, false},
    {"MSR_3F6H", k3F6, true, regs::MSR_PEBS_LD_LAT_THRESHOLD, false},
    {"MSR_PF", kPf, true, regs::MSR_PEBS_FRONTEND, false},
};

// The architectural fixed-counter events, whose general-purpose equivalents
// FIXED_CTR0-3 take (events.cpp's table: C0.00, 3C.00, 3C.01, A4.01).
const char* const kFixedNames[] = {"INST_RETIRED.ANY", "CPU_CLK_UNHALTED.THREAD", "CPU_CLK_UNHALTED.REF_TSC",
                                   "TOPDOWN.SLOTS"};

// CTR=n, CTR=a-b (decimal, 0-31) or CTR=0xMASK (nonzero, 32 bits).
bool parse_ctr(StrView v, u32* mask) {
    u64 a = 0, b = 0;
    usize dash = v.find('-');
    if (v.len > 2 && v[0] == '0' && (v[1] == 'x' || v[1] == 'X')) {
        if (!parse_u64(v, &a) || a == 0 || a > 0xFFFFFFFFull) return false;
        *mask = u32(a);
        return true;
    }
    if (dash < v.len) {
        if (!parse_u64(v.sub(0, dash), &a) || !parse_u64(v.sub(dash + 1), &b) || a > 31 || b > 31 || a > b)
            return false;
    } else {
        if (!parse_u64(v, &a) || a > 31) return false;
        b = a;
    }
    u32 m = 0;
    for (u64 i = a; i <= b; ++i) m |= u32(1) << i;
    *mask = m;
    return true;
}

Status parse_table_token(StrView tok, const char* path, u32 line, Event* e) {
    char q[48];
    e->syntax = EventSyntax::nanobench;
    usize dot = tok.find('.');
    StrView head = tok.sub(0, dot);
    bool fixed = head.len > 9 && head.sub(0, 9).eq_nocase("FIXED_CTR");
    usize first_mod;  // index of the first modifier part
    if (fixed) {
        u64 n = 0;
        clip(head, q, sizeof q);
        if (!all_digits(head.sub(9)) || !parse_u64(head.sub(9), &n) || n > 15 || (head.sub(9)[0] == '0' && head.len > 10))
            return line_error(path, line, "'%s' is not FIXED_CTRn with n in 0-15", q);
        if (n < sizeof kFixedNames / sizeof kFixedNames[0]) {
            Result<Event> arch = parse_event_spec(StrView(kFixedNames[n]));
            if (!arch.ok()) return line_error(path, line, "internal: %s", arch.error().msg);
            *e = arch.value();
        } else {
            e->kind = EventKind::fixed;
            e->fixed_counter = int8_t(n);
            e->gp_equivalent = false;
        }
        e->syntax = EventSyntax::nanobench;
        first_mod = 1;
    } else {
        usize dot2 = dot < tok.len ? tok.find('.', dot + 1) : tok.len;
        StrView um = dot < tok.len ? tok.sub(dot + 1, dot2 - dot - 1) : StrView();
        u64 v = 0;
        clip(head, q, sizeof q);
        if (dot >= tok.len)
            return line_error(path, line, "'%s' is not EE.UU[.MOD]... or FIXED_CTRn (e.g. 0E.01 or FIXED_CTR0)", q);
        if (!all_hex(head) || head.len > 2 || !parse_hex_u64(head, &v))
            return line_error(path, line, "event select '%s' is not 2 hex digits", q);
        e->kind = EventKind::programmable;
        e->event_select = u16(v);
        clip(um, q, sizeof q);
        if (!all_hex(um) || um.len > 2 || !parse_hex_u64(um, &v))
            return line_error(path, line, "UMASK '%s' is not 2 hex digits", q);
        e->umask = u8(v);
        first_mod = 2;
    }
    // Modifiers.
    u32 seen = 0;
    usize part = 0, start = 0;
    for (usize i = 0; i <= tok.len; ++i) {
        if (i < tok.len && tok[i] != '.') continue;
        StrView p = tok.sub(start, i - start);
        usize p_index = part++;
        start = i + 1;
        if (p_index < first_mod) continue;
        if (p.empty()) return line_error(path, line, "empty modifier (two dots in a row, or a trailing dot)");
        usize eq = p.find('=');
        StrView key = p.sub(0, eq);
        StrView val = eq < p.len ? p.sub(eq + 1) : StrView();
        const ModDef* d = nullptr;
        for (const ModDef& m : kMods)
            if (key.eq_nocase(StrView(m.key))) d = &m;
        clip(key, q, sizeof q);
        if (!d)
            return line_error(path, line,
                              "unknown modifier '%s' (known: CMSK=n, INV, EDG, AnyT, EQ, UMASK2=n, CTR=n|a-b|0xMASK, "
                              "TakenAlone, MSR_RSP0=v, MSR_RSP1=v, MSR_3F6H=v, MSR_PF=v)",
                              q);
        if (fixed && !d->fixed_ok)
            return line_error(path, line, "modifier '%s' cannot be used on a fixed counter (only AnyT, TakenAlone)",
                              d->key);
        if (seen & d->bit) return line_error(path, line, "modifier '%s' given twice", d->key);
        seen |= d->bit;
        if (!d->value && eq < p.len) return line_error(path, line, "modifier '%s' takes no value", d->key);
        if (d->value && eq >= p.len) return line_error(path, line, "modifier '%s' needs a value (%s=...)", d->key, d->key);
        char vq[48];
        clip(val, vq, sizeof vq);
        u64 v = 0;
        switch (d->bit) {
            case kCmsk:
            case kUmask2:
                if (!parse_u64(val, &v) || v > 0xFF)
                    return line_error(path, line, "%s value '%s' is not a number in 0-255", d->key, vq);
                if (d->bit == kCmsk) e->cmask = u8(v);
                else e->umask2 = u8(v);
                break;
            case kInv: e->inv = true; break;
            case kEdg: e->edge = true; break;
            case kAnyT: e->any = true; break;
            case kEq: e->eq = true; break;
            case kAlone: e->taken_alone = true; break;
            case kCtr: {
                u32 mask = 0;
                if (!parse_ctr(val, &mask))
                    return line_error(path, line,
                                      "CTR value '%s' is not a counter (0-31), a range a-b or a mask 0xMASK", vq);
                e->allowed_gp = mask;
                break;
            }
            default:  // MSR_*
                if (!parse_u64(val, &v)) return line_error(path, line, "%s value '%s' is not a number", d->key, vq);
                if (e->aux_count >= Event::kMaxAux)
                    return line_error(path, line, "at most %u MSR_* modifiers per event", Event::kMaxAux);
                e->aux[e->aux_count].msr = d->msr;
                e->aux[e->aux_count].value = v;
                ++e->aux_count;
                e->taken_alone = true;  // the MSR is shared by all counters
                break;
        }
    }
    return ok_status();
}

}  // namespace

// ---- EventTableMatch / EventTable ----

bool EventTableMatch::matches(const CpuIdentity& id) const {
    if (!str_eq(vendor, id.vendor_string) || family != id.family || model != id.model) return false;
    if (has_stepping && (id.stepping < stepping_min || id.stepping > stepping_max)) return false;
    if (has_core_type && id.core_type != core_type) return false;
    if (has_native && id.native_model_id != native_model_id) return false;
    return true;
}

int EventTable::match_score(const CpuIdentity& id) const {
    int best = -1;
    for (const EventTableMatch& m : matches)
        if (m.matches(id) && int(m.score()) > best) best = int(m.score());
    return best;
}

void EventTable::add(const Event& e, StrView tok) {
    if (token_at_.empty()) token_at_.push(0);
    events.push(e);
    for (usize i = 0; i < tok.len; ++i) token_pool_.push(tok[i]);
    token_at_.push(u32(token_pool_.size()));
}

void EventTable::clear() {
    matches.clear();
    events.clear();
    token_pool_.clear();
    token_at_.clear();
    first_event_line = 0;
}

const Event* EventTable::find(StrView name) const {
    for (const Event& e : events)
        if (name.eq_nocase(StrView(e.name))) return &e;
    return nullptr;
}

Status parse_event_table(StrView text, const char* path, EventTable* out, bool header_only) {
    out->clear();
    str_copy(out->path, sizeof out->path, path);
    u32 line_no = 0;
    usize pos = 0;
    bool in_header = true;
    while (pos < text.len) {
        usize nl = text.find('\n', pos);
        StrView line = text.sub(pos, nl - pos);
        ++line_no;
        pos = nl + 1;
        line = line.sub(0, line.find('#'));  // comments may hold any text
        for (usize i = 0; i < line.len; ++i)
            if (!printable(line[i]) && line[i] != '\t' && line[i] != '\r')
                return line_error(path, line_no, "not a text line (byte 0x%02X at column %zu)", unsigned(u8(line[i])),
                                  i + 1);
        line = line.trim();
        if (line.empty()) continue;
        if (line[0] == '@') {
            usize sp = 0;
            while (sp < line.len && !is_ws(line[sp])) ++sp;
            StrView dir = line.sub(0, sp);
            char q[48];
            clip(dir, q, sizeof q);
            if (!dir.eq("@match")) return line_error(path, line_no, "unknown directive '%s' (known: @match)", q);
            if (!in_header)
                return line_error(path, line_no, "@match after the first event (the @match lines come first)");
            EventTableMatch m;
            PMULAB_TRY(parse_match(line.sub(sp), path, line_no, &m));
            out->matches.push(m);
            continue;
        }
        if (in_header) {
            if (out->matches.empty())
                return line_error(path, line_no,
                                  "event before any @match line (an event file starts with the CPUs it is for, "
                                  "e.g. '@match GenuineIntel 06_5E')");
            in_header = false;
            out->first_event_line = line_no;
            if (header_only) return ok_status();
        }
        StrView w[3];
        usize n = split_words(line, w, 2);
        char q[48];
        clip(line, q, sizeof q);
        if (n == 1) return line_error(path, line_no, "'%s' has no event name (expected 'EE.UU[.MOD]... NAME')", q);
        if (n > 2) {
            clip(w[1], q, sizeof q);
            return line_error(path, line_no, "unexpected text after the event name '%s'", q);
        }
        StrView name = w[1];
        clip(name, q, sizeof q);
        if (name.len >= Event::kNameMax)
            return line_error(path, line_no, "event name '%s' is longer than %zu characters", q, Event::kNameMax - 1);
        for (usize i = 0; i < name.len; ++i)
            if (!name_char(name[i]))
                return line_error(path, line_no,
                                  "event name '%s' contains '%c' (names use letters, digits and _ . - : + @ ( ) [ ])",
                                  q, name[i]);
        for (usize k = 0; k < out->events.size(); ++k)
            if (name.eq_nocase(StrView(out->events[k].name)))
                return line_error(path, line_no, "event '%s' is defined twice in this file", q);
        if (out->events.size() >= kMaxTableEvents)
            return line_error(path, line_no, "too many events (at most %zu per file)", kMaxTableEvents);
        Event e;
        PMULAB_TRY(parse_table_token(w[0], path, line_no, &e));
        for (usize i = 0; i < name.len; ++i) e.name[i] = name[i];
        e.name[name.len] = 0;
        out->add(e, w[0]);
    }
    if (out->matches.empty())
        return Error::make(Errc::invalid_argument, "%s: no @match line (an event file starts with the CPUs it is for, "
                                                   "e.g. '@match GenuineIntel 06_5E')",
                           path);
    if (!header_only && out->events.empty()) return Error::make(Errc::invalid_argument, "%s: no events", path);
    return ok_status();
}

void put_table_cpu(StrBuf& out, const CpuIdentity& id) {
    put_signature(out, id);
    if (id.core_type == kCoreTypeCore) out.put(" P-cores");
    else if (id.core_type == kCoreTypeAtom) out.put(" E-cores");
    else if (id.core_type != kCoreTypeNone) out.printf(" core type 0x%02X", unsigned(id.core_type));
}

// ---- EventTables ----

Status EventTables::scan() {
    if (scanned_) return ok_status();
    scanned_ = true;
    files_found_.clear();
    if (!files_) return ok_status();
    Vec<FileName> names;
    Status ls = files_->list(dir_, kEventFileSuffix, &names);
    if (!ls.ok()) {
        if (ls.error().code == Errc::not_found) return ok_status();
        return Error::make(ls.error().code, "cannot list the event files in %s: %s", dir_, ls.error().msg);
    }
    // Deterministic order: by name, case-insensitively (FAT order is creation order).
    sort_small(names.data(), names.size(), [](const FileName& a, const FileName& b) {
        for (usize i = 0;; ++i) {
            char x = ascii_lower(a.name[i]), y = ascii_lower(b.name[i]);
            if (x != y) return x < y;
            if (!x) return false;
        }
    });
    for (const FileName& fn : names) {
        Found& f = files_found_.emplace();
        format_to(f.path, sizeof f.path, "%s\\%s", dir_, fn.name);
        Result<Vec<char>> head = files_->read(f.path, kHeaderProbe);
        if (!head.ok()) return Error::make(head.error().code, "cannot read %s: %s", f.path, head.error().msg);
        StrView text(head.value().data(), head.value().size());
        bool cut = text.len >= kHeaderProbe;
        if (cut) {  // drop a partial last line
            usize last = text.len;
            while (last > 0 && text[last - 1] != '\n') --last;
            text = text.sub(0, last);
        }
        PMULAB_TRY(parse_event_table(text, f.path, &f.header, true));
        if (cut && f.header.first_event_line == 0) {  // the header goes on past the probe
            Result<Vec<char>> all = files_->read(f.path);
            if (!all.ok()) return Error::make(all.error().code, "cannot read %s: %s", f.path, all.error().msg);
            PMULAB_TRY(parse_event_table(StrView(all.value().data(), all.value().size()), f.path, &f.header, true));
        }
    }
    return ok_status();
}

Result<const EventTable*> EventTables::for_cpu(const CpuIdentity& id) {
    PMULAB_TRY(scan());
    int best = -1;
    usize best_i = 0;
    bool tie = false;
    usize tie_i = 0;
    for (usize i = 0; i < files_found_.size(); ++i) {
        int s = files_found_[i].header.match_score(id);
        if (s < 0) continue;
        if (s > best) {
            best = s;
            best_i = i;
            tie = false;
        } else if (s == best && !tie) {
            tie = true;
            tie_i = i;
        }
    }
    if (best < 0) return static_cast<const EventTable*>(nullptr);
    if (tie) {
        StrBuf cpu;
        put_table_cpu(cpu, id);
        return Error::make(Errc::invalid_argument, "event files %s and %s are both for %s; keep one of them",
                           files_found_[best_i].path, files_found_[tie_i].path, cpu.c_str());
    }
    Found& f = files_found_[best_i];
    if (!f.parsed) {
        Result<Vec<char>> all = files_->read(f.path);
        if (!all.ok()) return Error::make(all.error().code, "cannot read %s: %s", f.path, all.error().msg);
        PMULAB_TRY(parse_event_table(StrView(all.value().data(), all.value().size()), f.path, &f.table));
        f.parsed = true;
    }
    return static_cast<const EventTable*>(&f.table);
}

namespace {

// Whether a spec token is an event name (Intel dialect): what parse_event_spec would
// hand to its named-event table, i.e. not tsc, nanoBench, perf terms, PMU or raw.
bool is_name_token(StrView tok) {
    if (tok.eq_nocase("tsc")) return false;
    usize dot = tok.find('.');
    if (dot > 0 && dot < tok.len && all_hex(tok.sub(0, dot))) return false;
    if (tok.find('/') < tok.len || tok.find('=') < tok.len || tok.find(',') < tok.len) return false;
    usize colon = tok.find(':');
    if (tok.len >= 2 && tok[0] == 'r' && colon > 1 && all_hex(tok.sub(1, colon - 1))) return false;
    return true;
}

// "FE.DSB_MISS": hex before the first dot (nanoBench's event select), then a part
// longer than a UMASK, and nothing a name cannot hold.
bool could_be_hex_name(StrView tok) {
    usize dot = tok.find('.');
    if (dot == 0 || dot >= tok.len || !all_hex(tok.sub(0, dot))) return false;
    usize dot2 = tok.find('.', dot + 1);
    if (dot2 - dot - 1 <= 2) return false;
    StrView name = tok.sub(0, tok.find(':'));
    for (usize i = 0; i < name.len; ++i)
        if (!name_char(name[i])) return false;
    return true;
}

Error spec_error(StrView spec, usize off, const char* fmt, ...) __attribute__((format(printf, 3, 4)));
Error spec_error(StrView spec, usize off, const char* fmt, ...) {
    char msg[sizeof(Error::msg)];
    va_list ap;
    va_start(ap, fmt);
    vformat_to(msg, sizeof msg, fmt, ap);
    va_end(ap);
    char q[48];
    clip(spec, q, sizeof q);
    return Error::make(Errc::invalid_argument, "event spec '%s': %s (at offset %zu)", q, msg, off);
}

}  // namespace

Error EventTables::unknown_name(StrView name, const CpuIdentity& id, const EventTable* t) const {
    char q[64];
    clip(name, q, sizeof q, 63);
    StrBuf cpu;
    put_table_cpu(cpu, id);
    if (t)
        return Error::make(Errc::invalid_argument, "event '%s' is not in the event file for %s (%s) nor an "
                                                   "architectural event",
                           q, cpu.c_str(), t->path);
    if (!files_)
        return Error::make(Errc::invalid_argument, "event '%s' is not an architectural event (no event files here)", q);
    if (files_found_.empty())
        return Error::make(Errc::invalid_argument,
                           "event '%s' is not an architectural event, and %s has no event files (for model-specific "
                           "names put the file for %s there; see docs/events.md)",
                           q, dir_, cpu.c_str());
    return Error::make(Errc::invalid_argument,
                       "event '%s' is not an architectural event, and none of the %zu event files in %s is for %s "
                       "(%s)",
                       q, files_found_.size(), dir_, cpu.c_str(), id.vendor_string);
}

Result<Event> EventTables::resolve(StrView spec, const CpuIdentity& id, EventDialect dialect) {
    bool table_error = false;
    return resolve_item(spec, id, dialect, &table_error);
}

Result<Event> EventTables::resolve_item(StrView spec, const CpuIdentity& id, EventDialect dialect,
                                        bool* table_error) {
    *table_error = false;
    StrView s = spec.trim();
    usize t = 0;
    while (t < s.len && !is_ws(s[t])) ++t;
    StrView tok = s.sub(0, t);
    if (dialect != EventDialect::intel || s.empty()) return parse_event_spec(s, dialect);
    // A name whose first part is hex ("FE.DSB_MISS") looks like nanoBench's EE.UU: it is
    // looked up only when it does not parse as one.
    bool hex_name = !is_name_token(tok) && could_be_hex_name(tok);
    if (!is_name_token(tok) && !hex_name) return parse_event_spec(s, dialect);
    for (usize i = 0; i < s.len; ++i)  // the same check parse_event_spec makes first
        if (!printable(s[i]) && !is_ws(s[i])) return parse_event_spec(s, dialect);
    Result<Event> raw = hex_name ? parse_event_spec(s, dialect) : Result<Event>(Error{});
    if (hex_name && raw.ok()) return raw;
    // The display name first, as parse_event_spec checks it (same messages).
    StrView display;
    usize n0 = t;
    while (n0 < s.len && is_ws(s[n0])) ++n0;
    if (n0 < s.len) {
        usize n1 = n0;
        while (n1 < s.len && !is_ws(s[n1])) ++n1;
        display = s.sub(n0, n1 - n0);
        char q[48];
        if (n1 < s.len) {
            usize r = n1;
            while (r < s.len && is_ws(s[r])) ++r;
            char q2[48];
            clip(s.sub(r), q2, sizeof q2);
            clip(display, q, sizeof q);
            return spec_error(s, r, "unexpected '%s' after the event name '%s'", q2, q);
        }
        if (display.len >= Event::kNameMax)
            return spec_error(s, n0, "event name is too long (%zu characters; at most %zu)", display.len,
                              Event::kNameMax - 1);
        for (usize i = 0; i < display.len; ++i)
            if (!name_char(display[i])) {
                clip(display, q, sizeof q);
                return spec_error(s, n0 + i,
                                  "event name '%s' contains '%c' (names use letters, digits and _ . - : + @ ( ) [ ])",
                                  q, display[i]);
            }
    }
    usize colon = tok.find(':');
    StrView name = tok.sub(0, colon);
    if (syntax_only_) {
        if (hex_name) return Event{};  // perhaps a name in a file: resolved per CPU later
        if (parse_event_spec(name, dialect).ok() || (all_hex(name) && name.len <= 4)) return parse_event_spec(s, dialect);
        return Event{};
    }
    Result<const EventTable*> table = for_cpu(id);
    if (!table.ok()) {
        *table_error = true;
        return table.error();
    }
    const Event* te = table.value() ? table.value()->find(name) : nullptr;
    if (!te && hex_name) return raw;  // not a name after all: the parser's message
    if (!te) {
        Result<Event> arch = parse_event_spec(s, dialect);
        if (arch.ok()) return arch;
        // A known architectural name with a bad modifier keeps the parser's message; an
        // unknown name gets ours (a short hex word keeps the parser's EE.UU hint).
        if (parse_event_spec(name, dialect).ok() || (all_hex(name) && name.len <= 4)) return arch;
        return unknown_name(name, id, table.value());
    }
    Event e = *te;
    if (colon < tok.len) {  // perf privilege modifiers, as on the architectural names
        StrView mods = tok.sub(colon + 1);
        if (mods.empty()) return spec_error(s, colon + 1, "empty modifier list after ':' (expected u or k)");
        bool u = false, k = false;
        for (usize i = 0; i < mods.len; ++i) {
            char c = mods[i];
            bool* slot = c == 'u' ? &u : c == 'k' ? &k : nullptr;
            if (!slot) {
                char q[2] = {printable(c) ? c : '?', 0};
                return spec_error(s, colon + 1 + i, "unsupported modifier '%s' (pmulab accepts u and k)", q);
            }
            if (*slot) return spec_error(s, colon + 1 + i, "modifier '%c' given twice", c);
            *slot = true;
        }
        e.usr = u;
        e.os = k;
    }
    if (!display.empty()) {
        for (usize i = 0; i < display.len; ++i) e.name[i] = display[i];
        e.name[display.len] = 0;
    }
    return e;
}

Status EventTables::resolve_list(StrView text, const CpuIdentity& id, Vec<Event>* out, EventDialect dialect) {
    // Items exactly as parse_event_list splits them (events.cpp).
    Vec<EventListItem> items;
    PMULAB_TRY(split_event_list(text, &items));
    for (usize k = 0; k < items.size(); ++k) {
        bool table_error = false;
        Result<Event> r = resolve_item(text.sub(items[k].begin, items[k].end - items[k].begin), id, dialect,
                                       &table_error);
        if (!r.ok()) {
            if (table_error) return r.error();  // about the event files, not the item
            return Error::make(r.error().code, "event list item %zu (at offset %zu): %s", k + 1, items[k].begin,
                               r.error().msg);
        }
        out->push(r.value());
    }
    return ok_status();
}

Status EventTables::resolve_file_text(StrView text, const char* path, const CpuIdentity& id, Vec<Event>* out,
                                      EventDialect dialect) {
    constexpr usize kMaxEventsPerFile = 4096;
    usize count = 0;
    u32 line_no = 0;
    usize pos = 0;
    while (pos < text.len) {
        usize nl = text.find('\n', pos);
        StrView line = text.sub(pos, nl - pos);
        ++line_no;
        pos = nl + 1;
        line = line.sub(0, line.find('#')).trim();
        if (line.empty()) continue;
        bool table_error = false;
        Result<Event> r = resolve_item(line, id, dialect, &table_error);
        if (!r.ok()) {
            if (table_error) return r.error();
            return Error::make(r.error().code, "%s:%u: %s", path, line_no, r.error().msg);
        }
        if (++count > kMaxEventsPerFile)
            return Error::make(Errc::invalid_argument, "%s:%u: too many events (at most %zu per file)", path, line_no,
                               kMaxEventsPerFile);
        out->push(r.value());
    }
    if (count == 0) return Error::make(Errc::invalid_argument, "%s: no events (only comments and blank lines)", path);
    return ok_status();
}

Status EventTables::resolve_file(const char* path, const CpuIdentity& id, Vec<Event>* out, EventDialect dialect) {
    if (!files_) return Error::make(Errc::unsupported, "%s: there are no files here to read event lists from", path);
    Result<Vec<char>> data = files_->read(path);
    if (!data.ok()) {
        if (data.error().code == Errc::not_found)
            return Error::make(Errc::invalid_argument, "event list file %s: no such file on the boot volume", path);
        return data.error();
    }
    return resolve_file_text(StrView(data.value().data(), data.value().size()), path, id, out, dialect);
}

Status check_event_list_syntax(StrView text, EventDialect dialect) {
    EventTables t(nullptr);
    t.syntax_only_ = true;
    Vec<Event> ignored;
    return t.resolve_list(text, CpuIdentity{}, &ignored, dialect);
}

// ---- helpers ----

void list_table_events(StrBuf& out, const EventTable& t) {
    for (usize i = 0; i < t.events.size(); ++i) {
        usize col = out.size();
        out.printf("  %s", t.events[i].name);
        out.pad_to(col, 66);
        out.put(t.token(i));
        out.put('\n');
    }
}

}  // namespace pmulab

namespace pmulab {

Status check_event_list_syntax_any(StrView text) {
    Status intel = check_event_list_syntax(text, EventDialect::intel);
    if (intel.ok()) return intel;
    const EventDialect others[] = {EventDialect::amd_zen, EventDialect::amd, EventDialect::netburst};
    for (EventDialect d : others)
        if (check_event_list_syntax(text, d).ok()) return ok_status();
    return intel;
}

}  // namespace pmulab
