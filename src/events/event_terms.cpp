// The term table of the event syntax and its application to an Event; see event_terms.h.
#include "events/event_terms.h"

#include "x86/amd_regs.h"

namespace pmulab::spec {

// Event-file modifiers are nanoBench's minus the privilege and AMD ones (the files are
// written from Intel's perfmon data, where the counting mode is the user's choice).
const TermDef kTerms[] = {
    // field                   nanoBench     perf         value  on        files  fixed  msr
    {EventField::event, nullptr, "event", true, kOnBoth, false, false, 0},
    {EventField::umask, nullptr, "umask", true, kOnBoth, false, false, 0},
    {EventField::cmask, "CMSK", "cmask", true, kOnBoth, true, false, 0},
    {EventField::umask2, "UMASK2", "umask2", true, kOnIntel, true, false, 0},  // v6
    {EventField::inv, "INV", "inv", false, kOnBoth, true, false, 0},
    {EventField::edge, "EDG", "edge", false, kOnBoth, true, false, 0},
    {EventField::any, "AnyT", "any", false, kOnIntel, true, true, 0},
    {EventField::eq, "EQ", "eq", false, kOnIntel, true, false, 0},  // v6
    {EventField::usr, "USR", "usr", false, kOnBoth, false, false, 0},
    {EventField::os, "OS", "os", false, kOnBoth, false, false, 0},
    {EventField::host_only, "HostOnly", "hostonly", false, kOnAmd, false, false, 0},  // HG_ONLY
    {EventField::guest_only, "GuestOnly", "guestonly", false, kOnAmd, false, false, 0},
    {EventField::name, nullptr, "name", true, kOnBoth, false, false, 0},
    {EventField::counter, "CTR", nullptr, true, kOnBoth, true, false, 0},
    {EventField::taken_alone, "TakenAlone", nullptr, false, kOnBoth, true, true, 0},
    {EventField::aux_msr, "MSR_RSP0", nullptr, true, kOnIntel, true, false, regs::MSR_OFFCORE_RSP_0},
    {EventField::aux_msr, "MSR_RSP1", nullptr, true, kOnIntel, true, false, regs::MSR_OFFCORE_RSP_1},
    {EventField::aux_msr, "MSR_3F6H", nullptr, true, kOnIntel, true, false, regs::MSR_PEBS_LD_LAT_THRESHOLD},
    {EventField::aux_msr, "MSR_PF", nullptr, true, kOnIntel, true, false, regs::MSR_PEBS_FRONTEND},
};
const usize kTermCount = sizeof kTerms / sizeof kTerms[0];
static_assert(sizeof kTerms / sizeof kTerms[0] <= 32, "TermState::seen has a bit per row");

namespace {

constexpr DialectFormat kIntelFormat =
    {kOnIntel, 0xFF, "Intel event selects are 00-FF", "Intel event selects are 0x00-0xff",
     "known: CMSK=n, CTR=n, AnyT, EDG, INV, TakenAlone, USR, OS, EQ, UMASK2=n, MSR_RSP0=v, MSR_RSP1=v, "
     "MSR_3F6H=v, MSR_PF=v"};
constexpr DialectFormat kAmdFormat =
    {kOnAmd, u16(regs::amd::PerfEvtSel::event_lo_field::mask | (regs::amd::PerfEvtSel::event_hi_field::mask >> 24)),
     "AMD event selects are 000-FFF", "AMD event selects are 0x000-0xfff",
     "known on AMD: CMSK=n, CTR=n, EDG, INV, TakenAlone, USR, OS, HostOnly, GuestOnly"};
static_assert(kAmdFormat.event_max == 0xFFF && regs::amd::PerfEvtSel::event_fits(kAmdFormat.event_max));

const char kFileKnown[] = "known: CMSK=n, INV, EDG, AnyT, EQ, UMASK2=n, CTR=n|a-b|0xMASK, TakenAlone, MSR_RSP0=v, "
                          "MSR_RSP1=v, MSR_3F6H=v, MSR_PF=v";
const char kPerfKnown[] = "known: event, umask, cmask, umask2, inv, edge, any, eq, usr, os, name";

bool is_perf(TermSyntax s) { return s == TermSyntax::perf; }
bool is_file(TermSyntax s) { return s == TermSyntax::event_file || s == TermSyntax::event_file_fixed; }

// A value: specs take decimal or 0x hex in 0..max with a message for each way it can be
// wrong; event files say it in one ("is not a number in 0-255").
Status parse_value(const SpecSite& site, TermSyntax syn, const char* what, Part v, u64 max, u64* out) {
    Quote q(v.s);
    if (is_file(syn)) {
        if (parse_u64(v.s, out) && *out <= max) return ok_status();
        if (max == ~u64(0)) return site.fail(v.off, "%s value '%s' is not a number", what, q.s);
        return site.fail(v.off, "%s value '%s' is not a number in 0-%llu", what, q.s, (unsigned long long)max);
    }
    if (v.s.empty()) return site.fail(v.off, "%s needs a value", what);
    if (!parse_u64(v.s, out)) return site.fail(v.off, "%s value '%s' is not a number", what, q.s);
    if (*out > max) return site.fail(v.off, "%s value %s is out of range (0-%llu)", what, q.s, (unsigned long long)max);
    return ok_status();
}

// Event files: CTR=n, CTR=a-b (decimal, 0-31) or CTR=0xMASK (nonzero, 32 bits).
bool parse_ctr_mask(StrView v, u32* mask) {
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

// Sets the field of one item; `flag` is a flag's value (perf's =0 turns it off).
Status apply(const SpecSite& site, TermSyntax syn, const TermDef& d, const char* key, Part p, Part val, bool flag,
             TermState* st, Event* e) {
    u64 v = 0;
    switch (d.field) {
        case EventField::event: {
            Quote q(val.s);
            if (val.s.empty()) return site.fail(val.off, "event needs a value");
            if (!parse_u64(val.s, &v)) return site.fail(val.off, "event value '%s' is not a number", q.s);
            const DialectFormat& f = dialect_format(site.dialect);
            if (v > f.event_max) return site.fail(val.off, "event value '%s' is out of range (%s)", q.s, f.perf_range);
            e->event_select = u16(v);
            return ok_status();
        }
        case EventField::umask:
        case EventField::cmask:
        case EventField::umask2:
            PMULAB_TRY(parse_value(site, syn, key, val, 0xFF, &v));
            (d.field == EventField::umask   ? e->umask
             : d.field == EventField::cmask ? e->cmask
                                            : e->intel.umask2) = u8(v);
            return ok_status();
        case EventField::inv: e->inv = flag; return ok_status();
        case EventField::edge: e->edge = flag; return ok_status();
        case EventField::any: e->intel.any = flag; return ok_status();
        case EventField::eq: e->intel.eq = flag; return ok_status();
        case EventField::host_only: e->amd.host_only = flag; return ok_status();
        case EventField::guest_only: e->amd.guest_only = flag; return ok_status();
        case EventField::usr: st->want_usr = flag; return ok_status();
        case EventField::os: st->want_os = flag; return ok_status();
        case EventField::taken_alone: e->taken_alone = true; return ok_status();
        case EventField::name:
            if (val.s.empty()) return site.fail(val.off, "name needs a value");
            if (val.s.len >= Event::kNameMax)
                return site.fail(val.off, "name is too long (%zu characters; at most %zu)", val.s.len,
                                 Event::kNameMax - 1);
            PMULAB_TRY(check_name(site, val.s, val.off));
            clip(val.s, e->name, sizeof e->name, Event::kNameMax - 1);
            return ok_status();
        case EventField::counter:
            if (is_file(syn)) {
                u32 mask = 0;
                if (!parse_ctr_mask(val.s, &mask)) {
                    Quote q(val.s);
                    return site.fail(val.off, "CTR value '%s' is not a counter (0-31), a range a-b or a mask 0xMASK",
                                     q.s);
                }
                e->allowed_gp = mask;
                return ok_status();
            }
            PMULAB_TRY(parse_value(site, syn, key, val, 31, &v));
            e->pinned_counter = int8_t(v);
            return ok_status();
        case EventField::aux_msr:
            PMULAB_TRY(parse_value(site, syn, key, val, ~u64(0), &v));
            if (e->intel.aux_count >= Event::kMaxAux)
                return site.fail(p.off, "at most %u MSR_* modifiers per event", Event::kMaxAux);
            e->intel.aux[e->intel.aux_count].msr = d.msr;
            e->intel.aux[e->intel.aux_count].value = v;
            ++e->intel.aux_count;
            // Events that need an extra MSR share it with every other event: alone.
            e->taken_alone = true;
            return ok_status();
    }
    return ok_status();
}

}  // namespace

const DialectFormat& dialect_format(EventDialect d) {
    return d == EventDialect::amd || d == EventDialect::amd_zen ? kAmdFormat : kIntelFormat;
}

const TermDef* find_term(TermSyntax syn, StrView key) {
    for (const TermDef& d : kTerms) {
        const char* k = is_perf(syn) ? d.perf : d.nb;
        if (k && key.eq_nocase(StrView(k)) && (!is_file(syn) || d.in_files)) return &d;
    }
    return nullptr;
}

Status parse_terms(const SpecSite& site, TermSyntax syn, StrView text, usize base, TermState* st, Event* e) {
    const char* word = is_perf(syn) ? "term" : "modifier";
    return split_parts(text, base, is_perf(syn) ? ',' : '.', [&](Part p) -> Status {
        if (p.s.empty())
            return site.fail(p.off, is_perf(syn) ? "empty term (two commas in a row, or a trailing comma)"
                                                 : "empty modifier (two dots in a row, or a trailing dot)");
        usize eq = p.s.find('=');
        StrView key = p.s.sub(0, eq);
        const TermDef* d = find_term(syn, key);
        if (!d) {
            Quote q(key);
            const char* known = is_perf(syn)   ? kPerfKnown
                                : is_file(syn) ? kFileKnown
                                               : dialect_format(site.dialect).nb_known;
            return site.fail(p.off, "unknown %s '%s' (%s)", word, q.s, known);
        }
        const char* k = is_perf(syn) ? d->perf : d->nb;
        const DialectFormat& f = dialect_format(site.dialect);
        if (!(d->on & f.on)) {
            const char* what = is_perf(syn) ? "field" : "modifier";
            if (f.on == kOnAmd)
                return site.fail(p.off, "%s '%s' is an Intel %s; AMD PerfEvtSel has no such field", word, k, what);
            return site.fail(p.off, "%s '%s' is an AMD %s (PerfEvtSel HG_ONLY); this is an Intel CPU", word, k, what);
        }
        if (syn == TermSyntax::event_file_fixed && !d->on_fixed)
            return site.fail(p.off, "modifier '%s' cannot be used on a fixed counter (only AnyT, TakenAlone)", k);
        u32 bit = u32(1) << (d - kTerms);
        if (st->seen & bit) return site.fail(p.off, "%s '%s' given twice", word, k);
        st->seen |= bit;
        st->fields |= u32(1) << unsigned(d->field);
        Part val{eq < p.s.len ? p.s.sub(eq + 1) : StrView(), p.off + eq + 1};
        bool flag = true;
        if (d->value) {
            if (eq >= p.s.len) return site.fail(p.off, "%s '%s' needs a value (%s=...)", word, k, k);
        } else if (eq < p.s.len) {
            if (!is_perf(syn)) return site.fail(p.off, "modifier '%s' takes no value", k);
            if (val.s.eq("0")) flag = false;
            else if (!val.s.eq("1")) {
                Quote q(val.s);
                return site.fail(val.off, "flag '%s' takes 0 or 1, not '%s'", k, q.s);
            }
        }
        return apply(site, syn, *d, k, p, val, flag, st, e);
    });
}

Status finish_terms(const SpecSite& site, usize base, const TermState& st, Event* e) {
    if (!st.has(EventField::usr) && !st.has(EventField::os)) return ok_status();
    if (!st.want_usr && !st.want_os) return site.fail(base, "usr and os are both off: the event would never count");
    e->usr = st.want_usr;
    e->os = st.want_os;
    return ok_status();
}

}  // namespace pmulab::spec
