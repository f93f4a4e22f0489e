// Event files (\pmulab\events\*.evt): the parser of their @match header and event lines,
// and EventTable; see event_files.h and docs/events.md. The EE.UU[.MOD]... lines are
// read with the lexer and term table of event specs (spec_lexer.h, event_terms.h).
#include "events/event_files.h"
#include "events/event_terms.h"

namespace pmulab {

namespace {

using namespace spec;

constexpr usize kMaxTableEvents = 8192;

// ---- @match ----

Status parse_match(StrView rest, const char* path, u32 line, EventTableMatch* m) {
    SpecSite at = SpecSite::of_line(path, line);
    StrView w[8];
    usize n = split_words(rest, w, 6);
    if (n < 2) return at.fail(0, "@match needs a vendor and FAMILY_MODEL, e.g. '@match GenuineIntel 06_5E'");
    if (n > 5) return at.fail(0, "@match has too many words (vendor FAMILY_MODEL [stepping=] [core=] [native=])");
    char q[48];
    clip(w[0], q, sizeof q);
    if (w[0].len > 12) return at.fail(0, "vendor '%s' is longer than 12 characters (CPUID.0 vendor string)", q);
    for (usize i = 0; i < w[0].len; ++i) m->vendor[i] = w[0][i];
    m->vendor[w[0].len] = 0;
    StrView fm = w[1];
    usize us = fm.find('_');
    clip(fm, q, sizeof q);
    if (us >= fm.len || us == 0 || us > 2 || fm.len - us - 1 == 0 || fm.len - us - 1 > 2 || !all_hex(fm.sub(0, us)) ||
        !all_hex(fm.sub(us + 1)))
        return at.fail(0, "'%s' is not FAMILY_MODEL in hex, e.g. 06_5E", q);
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
        if (eq >= kv.len) return at.fail(0, "'%s' is not KEY=VALUE (stepping=, core=, native=)", q);
        if (key.eq("stepping")) {
            if (m->has_stepping) return at.fail(0, "stepping= given twice");
            usize dash = val.find('-');
            u32 lo = 0, hi = 0;
            bool ok = dash < val.len
                          ? all_hex(val.sub(0, dash)) && all_hex(val.sub(dash + 1)) &&
                                parse_hex_u32(val.sub(0, dash), 0xF, &lo) && parse_hex_u32(val.sub(dash + 1), 0xF, &hi)
                          : all_hex(val) && parse_hex_u32(val, 0xF, &lo);
            if (dash >= val.len) hi = lo;
            if (!ok) return at.fail(0, "stepping '%s' is not a stepping or range in hex (0-F), e.g. 5-F", vq);
            if (lo > hi) return at.fail(0, "stepping range '%s' is empty (%X > %X)", vq, lo, hi);
            m->has_stepping = true;
            m->stepping_min = u8(lo);
            m->stepping_max = u8(hi);
        } else if (key.eq("core")) {
            if (m->has_core_type) return at.fail(0, "core= given twice");
            u32 v = 0;
            if (!parse_hex_u32(val, 0xFF, &v) || v == 0)
                return at.fail(0,
                               "core '%s' is not a hybrid core type in hex (CPUID.1AH:EAX[31:24]: 0x40 P-core, "
                               "0x20 E-core)",
                               vq);
            m->has_core_type = true;
            m->core_type = u8(v);
        } else if (key.eq("native")) {
            if (m->has_native) return at.fail(0, "native= given twice");
            u32 v = 0;
            if (!parse_hex_u32(val, 0xFFFFFF, &v))
                return at.fail(0, "native '%s' is not a native model ID in hex (CPUID.1AH:EAX[23:0])", vq);
            m->has_native = true;
            m->native_model_id = v;
        } else {
            return at.fail(0, "unknown @match key '%s' (known: stepping, core, native)", q);
        }
    }
    if (m->has_native && !m->has_core_type)
        return at.fail(0, "native= needs core= (the native model ID is per core type)");
    m->line = line;
    return ok_status();
}

// ---- event lines ----

// The architectural fixed-counter events, whose general-purpose equivalents
// FIXED_CTR0-3 take (named_events.cpp's table: C0.00, 3C.00, 3C.01, A4.01).
const char* const kFixedNames[] = {"INST_RETIRED.ANY", "CPU_CLK_UNHALTED.THREAD", "CPU_CLK_UNHALTED.REF_TSC",
                                   "TOPDOWN.SLOTS"};

// TOKEN of an event line: EE.UU[.MOD]... or FIXED_CTRn[.MOD]...
Status parse_table_token(StrView tok, const char* path, u32 line, Event* e) {
    SpecSite at = SpecSite::of_line(path, line);
    e->syntax = EventSyntax::nanobench;
    usize dot = tok.find('.');
    StrView head = tok.sub(0, dot);
    bool fixed = head.len > 9 && head.sub(0, 9).eq_nocase("FIXED_CTR");
    usize sep;  // the dot before the modifiers, or tok.len when there are none
    if (fixed) {
        u64 n = 0;
        Quote q(head);
        StrView num = head.sub(9);
        if (!all_digits(num) || !parse_u64(num, &n) || n > 15 || (num[0] == '0' && num.len > 1))
            return at.fail(0, "'%s' is not FIXED_CTRn with n in 0-15", q.s);
        if (n < sizeof kFixedNames / sizeof kFixedNames[0]) {
            Result<Event> arch = parse_event_spec(StrView(kFixedNames[n]));
            if (!arch.ok()) return at.fail(0, "internal: %s", arch.error().msg);
            *e = arch.value();
        } else {
            e->kind = EventKind::fixed;
            e->fixed_counter = int8_t(n);
            e->gp_equivalent = false;
        }
        e->syntax = EventSyntax::nanobench;
        sep = dot;
    } else {
        usize dot2 = dot < tok.len ? tok.find('.', dot + 1) : tok.len;
        StrView um = dot < tok.len ? tok.sub(dot + 1, dot2 - dot - 1) : StrView();
        u64 v = 0;
        Quote qh(head), qu(um);
        if (dot >= tok.len)
            return at.fail(0, "'%s' is not EE.UU[.MOD]... or FIXED_CTRn (e.g. 0E.01 or FIXED_CTR0)", qh.s);
        if (!all_hex(head) || head.len > 2 || !parse_hex_u64(head, &v))
            return at.fail(0, "event select '%s' is not 2 hex digits", qh.s);
        e->kind = EventKind::programmable;
        e->event_select = u16(v);
        if (!all_hex(um) || um.len > 2 || !parse_hex_u64(um, &v))
            return at.fail(0, "UMASK '%s' is not 2 hex digits", qu.s);
        e->umask = u8(v);
        sep = dot2;
    }
    if (sep >= tok.len) return ok_status();
    TermState st;  // (no privilege terms in event files: nothing to finish)
    return parse_terms(at, fixed ? TermSyntax::event_file_fixed : TermSyntax::event_file, tok.sub(sep + 1), sep + 1,
                       &st, e);
}

}  // namespace

// ---- EventTableMatch / EventTable ----

bool EventTableMatch::matches(const CpuIdentity& id) const {
    if (!str_eq(vendor, id.vendor_string) || family != id.family || model != id.model) return false;
    if (has_stepping && (id.stepping < stepping_min || id.stepping > stepping_max)) return false;
    // The raw CPUID.1AH core type: also on non-hybrid parts (an Atom-only SoC reports 0x20).
    u8 ct = id.core_type != kCoreTypeNone ? id.core_type : id.leaf_1a_core_type;
    if (has_core_type && ct != core_type) return false;
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
    usize pos = text.starts_with("\xEF\xBB\xBF") ? 3 : 0;  // a UTF-8 byte-order mark, as in pmulab.cfg
    bool in_header = true;
    while (pos < text.len) {
        usize nl = text.find('\n', pos);
        StrView line = text.sub(pos, nl - pos);
        ++line_no;
        pos = nl + 1;
        SpecSite at = SpecSite::of_line(path, line_no);
        line = line.sub(0, line.find('#'));  // comments may hold any text
        for (usize i = 0; i < line.len; ++i)
            if (!printable(line[i]) && line[i] != '\t' && line[i] != '\r')
                return at.fail(0, "not a text line (byte 0x%02X at column %zu)", unsigned(u8(line[i])), i + 1);
        line = line.trim();
        if (line.empty()) continue;
        if (line[0] == '@') {
            usize sp = 0;
            while (sp < line.len && !is_ws(line[sp])) ++sp;
            StrView dir = line.sub(0, sp);
            Quote q(dir);
            if (!dir.eq("@match")) return at.fail(0, "unknown directive '%s' (known: @match)", q.s);
            if (!in_header) return at.fail(0, "@match after the first event (the @match lines come first)");
            EventTableMatch m;
            PMULAB_TRY(parse_match(line.sub(sp), path, line_no, &m));
            out->matches.push(m);
            continue;
        }
        if (in_header) {
            if (out->matches.empty())
                return at.fail(0, "event before any @match line (an event file starts with the CPUs it is for, "
                                  "e.g. '@match GenuineIntel 06_5E')");
            in_header = false;
            out->first_event_line = line_no;
            if (header_only) return ok_status();
        }
        StrView w[3];
        usize n = split_words(line, w, 2);
        if (n == 1) return at.fail(0, "'%s' has no event name (expected 'EE.UU[.MOD]... NAME')", Quote(line).s);
        if (n > 2) return at.fail(0, "unexpected text after the event name '%s'", Quote(w[1]).s);
        StrView name = w[1];
        Quote q(name);
        if (name.len >= Event::kNameMax)
            return at.fail(0, "event name '%s' is longer than %zu characters", q.s, Event::kNameMax - 1);
        PMULAB_TRY(check_name(at, name, 0));
        for (usize k = 0; k < out->events.size(); ++k)
            if (name.eq_nocase(StrView(out->events[k].name)))
                return at.fail(0, "event '%s' is defined twice in this file", q.s);
        if (out->events.size() >= kMaxTableEvents)
            return at.fail(0, "too many events (at most %zu per file)", kMaxTableEvents);
        Event e;
        PMULAB_TRY(parse_table_token(w[0], path, line_no, &e));
        clip(name, e.name, sizeof e.name, Event::kNameMax - 1);
        out->add(e, w[0]);
    }
    if (out->matches.empty())
        return Error::make(Errc::invalid_argument,
                           "%s: no @match line (an event file starts with the CPUs it is for, "
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
