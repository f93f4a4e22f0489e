// parse_event_spec: one event spec in any of its syntaxes (events.h): nanoBench
// EE.UU[.MOD]..., perf terms, perf raw configs, PMU prefixes, names (named_events.cpp)
// and tsc. The modifiers and terms are event_terms.h's table.
#include "events/event_terms.h"
#include "events/named_events.h"

#include "x86/amd_regs.h"

namespace pmulab {

namespace {

using namespace spec;

// NetBurst selects events by name only (ESCR event and mask): the raw syntaxes refuse.
Error netburst_refuses(const SpecSite& cx, usize off, const char* what) {
    return cx.fail(off,
                   "%s on NetBurst (Pentium 4): name the event, e.g. instr_retired or branch_retired.MMTM "
                   "(see 'pmulab events')",
                   what);
}

// ---- nanoBench: EE.UU[.MOD]... ----

Status parse_nanobench(const SpecSite& cx, StrView tok, Event* e) {
    if (cx.dialect == EventDialect::netburst) return netburst_refuses(cx, 0, "raw EE.UU events do not exist");
    e->syntax = EventSyntax::nanobench;
    e->kind = EventKind::programmable;
    const DialectFormat& f = dialect_format(cx.dialect);
    usize dot = tok.find('.');  // present: classify_token saw it
    StrView ev = tok.sub(0, dot);
    u64 v = 0;
    Quote qe(ev);
    if (ev.len > 16 || !parse_hex_u64(ev, &v) || v > f.event_max)
        return cx.fail(0, "event select '%s' is out of range (%s)", qe.s, f.nb_range);
    e->event_select = u16(v);
    usize dot2 = tok.find('.', dot + 1);
    Part um{tok.sub(dot + 1, dot2 - dot - 1), dot + 1};
    Quote qu(um.s);
    if (um.s.empty()) return cx.fail(um.off, "UMASK is missing (expected EE.UU, e.g. 0E.01)");
    if (!all_hex(um.s)) return cx.fail(um.off, "UMASK '%s' is not hex", qu.s);
    if (um.s.len > 16 || !parse_hex_u64(um.s, &v) || v > 0xFF)
        return cx.fail(um.off, "UMASK '%s' is out of range (00-FF)", qu.s);
    e->umask = u8(v);
    if (dot2 >= tok.len) return ok_status();
    TermState st;
    PMULAB_TRY(parse_terms(cx, TermSyntax::nanobench, tok.sub(dot2 + 1), dot2 + 1, &st, e));
    return finish_terms(cx, 0, st, e);
}

// ---- perf: terms, raw config, PMU prefix ----

Status parse_perf_terms(const SpecSite& cx, StrView text, usize base, Event* e) {
    if (cx.dialect == EventDialect::netburst)
        return netburst_refuses(cx, base, "perf event=/umask= terms do not exist");
    e->syntax = EventSyntax::perf_terms;
    e->kind = EventKind::programmable;
    if (text.empty()) return cx.fail(base, "no terms (expected event=...,umask=...)");
    TermState st;
    PMULAB_TRY(parse_terms(cx, TermSyntax::perf, text, base, &st, e));
    if (!st.has(EventField::event)) return cx.fail(base, "missing event= term");
    return finish_terms(cx, base, st, e);
}

// The raw-config bits a dialect's PerfEvtSel has for events (privilege is :u/:k), and
// the message naming them.
struct RawLayout {
    u64 allowed;
    const char* fields;
};

RawLayout raw_layout(EventDialect d) {
    if (is_amd(d)) {
        using regs::amd::PerfEvtSel;
        return {PerfEvtSel::event_lo_field::mask | PerfEvtSel::umask_field::mask | PerfEvtSel::edge_field::mask |
                    PerfEvtSel::inv_field::mask | PerfEvtSel::cmask_field::mask | PerfEvtSel::event_hi_field::mask |
                    PerfEvtSel::guest_only_field::mask | PerfEvtSel::host_only_field::mask,
                "the AMD event fields (event 7:0 and 35:32, umask 15:8, edge 18, inv 23, cmask 31:24, guestonly 40, "
                "hostonly 41; use :u/:k for privilege)"};
    }
    using regs::PerfEvtSel;
    return {PerfEvtSel::event_select_field::mask | PerfEvtSel::umask_field::mask | PerfEvtSel::edge_field::mask |
                PerfEvtSel::any_thread_field::mask | PerfEvtSel::inv_field::mask | PerfEvtSel::cmask_field::mask |
                PerfEvtSel::eq_field::mask | PerfEvtSel::umask2_field::mask,
            "the event fields (event 7:0, umask 15:8, edge 18, any 21, inv 23, cmask 31:24, eq 36, umask2 47:40; use "
            ":u/:k for privilege)"};
}

Status parse_perf_raw(const SpecSite& cx, StrView tok, Event* e) {
    if (cx.dialect == EventDialect::netburst) return netburst_refuses(cx, 0, "raw configs are not supported");
    e->syntax = EventSyntax::perf_raw;
    e->kind = EventKind::programmable;
    usize colon = tok.find(':');
    StrView hex = tok.sub(1, colon - 1);
    u64 v = 0;
    Quote q(hex);
    if (hex.len > 16 || !parse_hex_u64(hex, &v)) return cx.fail(1, "raw config '%s' is longer than 16 hex digits", q.s);
    RawLayout l = raw_layout(cx.dialect);
    if (v & ~l.allowed)
        return cx.fail(1, "raw config 0x%llx sets bits 0x%llx outside %s", (unsigned long long)v,
                       (unsigned long long)(v & ~l.allowed), l.fields);
    if (is_amd(cx.dialect)) {
        regs::amd::PerfEvtSel s(v);
        e->event_select = u16(s.event_select());
        e->umask = u8(s.umask());
        e->edge = s.edge();
        e->inv = s.inv();
        e->cmask = u8(s.cmask());
        e->amd.guest_only = s.guest_only();
        e->amd.host_only = s.host_only();
    } else {
        regs::PerfEvtSel s(v);
        e->event_select = u16(s.event_select());
        e->umask = u8(s.umask());
        e->edge = s.edge();
        e->intel.any = s.any_thread();
        e->inv = s.inv();
        e->cmask = u8(s.cmask());
        e->intel.eq = s.eq();
        e->intel.umask2 = u8(s.umask2());
    }
    if (colon < tok.len) PMULAB_TRY(parse_priv_mods(cx, tok.sub(colon + 1), colon + 1, true, e));
    return ok_status();
}

Status parse_perf_pmu(const SpecSite& cx, StrView tok, Event* e) {
    usize slash = tok.find('/');
    StrView pmu = tok.sub(0, slash);
    Quote q(pmu);
    if (pmu.empty()) return cx.fail(0, "PMU name before '/' is missing (expected cpu/.../)");
    if (pmu.eq("cpu")) e->core_type = kCoreTypeNone;
    else if (!is_amd(cx.dialect) && pmu.eq("cpu_core")) e->core_type = kCoreTypeCore;
    else if (!is_amd(cx.dialect) && pmu.eq("cpu_atom")) e->core_type = kCoreTypeAtom;
    else return cx.fail(0, "unknown PMU '%s' (pmulab knows cpu, cpu_core and cpu_atom)", q.s);
    usize close = tok.find('/', slash + 1);
    if (close >= tok.len) return cx.fail(tok.len, "missing closing '/' after the terms");
    PMULAB_TRY(parse_perf_terms(cx, tok.sub(slash + 1, close - slash - 1), slash + 1, e));
    return parse_priv_mods(cx, tok.sub(close + 1), close + 1, false, e);
}

Status parse_token(const SpecSite& cx, StrView tok, Event* e) {
    switch (classify_token(tok)) {
        case TokenForm::tsc:
            e->kind = EventKind::tsc;
            e->syntax = EventSyntax::tsc;
            clip("tsc", e->name, sizeof e->name, Event::kNameMax - 1);
            return ok_status();
        case TokenForm::nanobench: return parse_nanobench(cx, tok, e);
        case TokenForm::pmu: return parse_perf_pmu(cx, tok, e);
        case TokenForm::perf_terms: return parse_perf_terms(cx, tok, 0, e);
        case TokenForm::perf_raw: return parse_perf_raw(cx, tok, e);
        case TokenForm::name: break;
    }
    return parse_named(cx, tok, e);
}

}  // namespace

Result<Event> parse_event_spec(StrView raw, EventDialect dialect) {
    StrView s = raw.trim();
    SpecSite cx = SpecSite::of_spec(s, dialect);
    if (s.empty()) return Error::make(Errc::invalid_argument, "empty event spec");
    for (usize i = 0; i < s.len; ++i)
        if (!printable(s[i]) && !is_ws(s[i])) return cx.fail(i, "non-printable character 0x%02X", unsigned(u8(s[i])));
    SpecWords w;
    PMULAB_TRY(split_spec_words(cx, s, &w));
    Event e;
    e.dialect = dialect;
    PMULAB_TRY(parse_token(cx, w.tok, &e));
    if (!w.name.empty()) clip(w.name, e.name, sizeof e.name, Event::kNameMax - 1);
    else if (!e.name[0]) clip(w.tok, e.name, sizeof e.name, Event::kNameMax - 1);
    return e;
}

}  // namespace pmulab
