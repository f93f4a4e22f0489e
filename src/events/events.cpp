#include "events/events.h"

#include "x86/netburst_regs.h"
#include "x86/amd_regs.h"

#include <stdarg.h>

namespace pmulab {

namespace {

using regs::PerfEvtSel;

// ---- the named-event table (SDM Vol. 3B Table 20-1; perf and likwid names) ----

struct NamedDef {
    const char* name;
    u8 evsel;
    u8 umask;
    int8_t arch;   // ArchEventBit or -1
    int8_t fixed;  // fixed counter or -1
    bool exact;  // (fixed events) the GP equivalent counts at the same rate
};

// Fixed-counter events first (they prefer their fixed counter), then the
// general-purpose architectural events. Names are matched case-insensitively.
constexpr NamedDef kNamed[] = {
    // Fixed counter 0: instructions retired (GP equivalent C0.00).
    {"INST_RETIRED.ANY", 0xC0, 0x00, kArchInstructionsRetired, 0, true},
    {"instructions", 0xC0, 0x00, kArchInstructionsRetired, 0, true},
    {"INSTR_RETIRED_ANY", 0xC0, 0x00, kArchInstructionsRetired, 0, true},
    // Fixed counter 1: unhalted core cycles (GP equivalent 3C.00).
    {"CPU_CLK_UNHALTED.THREAD", 0x3C, 0x00, kArchCoreCycles, 1, true},
    {"CPU_CLK_UNHALTED.CORE", 0x3C, 0x00, kArchCoreCycles, 1, true},
    {"cycles", 0x3C, 0x00, kArchCoreCycles, 1, true},
    {"cpu-cycles", 0x3C, 0x00, kArchCoreCycles, 1, true},
    {"CPU_CLK_UNHALTED_CORE", 0x3C, 0x00, kArchCoreCycles, 1, true},
    // Fixed counter 2: reference cycles at the TSC rate. The GP event 3C.01 counts
    // reference cycles at the bus/crystal clock instead: a fallback, not an equivalent.
    {"CPU_CLK_UNHALTED.REF_TSC", 0x3C, 0x01, kArchReferenceCycles, 2, false},
    {"ref-cycles", 0x3C, 0x01, kArchReferenceCycles, 2, false},
    {"CPU_CLK_UNHALTED_REF", 0x3C, 0x01, kArchReferenceCycles, 2, false},
    // Fixed counter 3: topdown slots (GP equivalent A4.01).
    {"TOPDOWN.SLOTS", 0xA4, 0x01, kArchTopdownSlots, 3, true},
    {"slots", 0xA4, 0x01, kArchTopdownSlots, 3, true},
    {"topdown-slots", 0xA4, 0x01, kArchTopdownSlots, 3, true},
    // (likwid's TOPDOWN_SLOTS would collide with the key topdown_slots below.)

    // General-purpose architectural events (Table 20-1), by Intel event name, perf
    // generic name and pmulab's snake_case key (cpuid.h arch_event_key).
    {"CPU_CLK_UNHALTED.THREAD_P", 0x3C, 0x00, kArchCoreCycles, -1, true},
    {"CPU_CLK_UNHALTED.CORE_P", 0x3C, 0x00, kArchCoreCycles, -1, true},
    {"core_cycles", 0x3C, 0x00, kArchCoreCycles, -1, true},
    {"INST_RETIRED.ANY_P", 0xC0, 0x00, kArchInstructionsRetired, -1, true},
    {"instructions_retired", 0xC0, 0x00, kArchInstructionsRetired, -1, true},
    {"CPU_CLK_UNHALTED.REF_XCLK", 0x3C, 0x01, kArchReferenceCycles, -1, true},
    {"bus-cycles", 0x3C, 0x01, kArchReferenceCycles, -1, true},
    {"reference_cycles", 0x3C, 0x01, kArchReferenceCycles, -1, true},
    {"LONGEST_LAT_CACHE.REFERENCE", 0x2E, 0x4F, kArchLlcReferences, -1, true},
    {"cache-references", 0x2E, 0x4F, kArchLlcReferences, -1, true},
    {"llc_references", 0x2E, 0x4F, kArchLlcReferences, -1, true},
    {"LONGEST_LAT_CACHE.MISS", 0x2E, 0x41, kArchLlcMisses, -1, true},
    {"cache-misses", 0x2E, 0x41, kArchLlcMisses, -1, true},
    {"llc_misses", 0x2E, 0x41, kArchLlcMisses, -1, true},
    {"BR_INST_RETIRED.ALL_BRANCHES", 0xC4, 0x00, kArchBranchInstructionsRetired, -1, true},
    {"branches", 0xC4, 0x00, kArchBranchInstructionsRetired, -1, true},
    {"branch-instructions", 0xC4, 0x00, kArchBranchInstructionsRetired, -1, true},
    {"branch_instructions_retired", 0xC4, 0x00, kArchBranchInstructionsRetired, -1, true},
    {"BR_MISP_RETIRED.ALL_BRANCHES", 0xC5, 0x00, kArchBranchMispredictsRetired, -1, true},
    {"branch-misses", 0xC5, 0x00, kArchBranchMispredictsRetired, -1, true},
    {"branch_mispredicts_retired", 0xC5, 0x00, kArchBranchMispredictsRetired, -1, true},
    {"TOPDOWN.SLOTS_P", 0xA4, 0x01, kArchTopdownSlots, -1, true},
    {"topdown_slots", 0xA4, 0x01, kArchTopdownSlots, -1, true},
    {"TOPDOWN.BACKEND_BOUND_SLOTS", 0xA4, 0x02, kArchTopdownBackendBound, -1, true},
    {"topdown_backend_bound", 0xA4, 0x02, kArchTopdownBackendBound, -1, true},
    {"topdown_bad_speculation", 0x73, 0x00, kArchTopdownBadSpeculation, -1, true},
    {"topdown_frontend_bound", 0x9C, 0x01, kArchTopdownFrontendBound, -1, true},
    {"topdown_retiring", 0xC2, 0x02, kArchTopdownRetiring, -1, true},
    {"LBR_INSERTS.ANY", 0xE4, 0x01, kArchLbrInserts, -1, true},
    {"lbr_inserts", 0xE4, 0x01, kArchLbrInserts, -1, true},
};

const NamedDef* find_named(StrView name) {
    for (const NamedDef& d : kNamed)
        if (name.eq_nocase(StrView(d.name))) return &d;
    return nullptr;
}

// ---- AMD named events (APM Vol. 2 §13.2; family 10h BKDG, 17h/19h/1Ah PPRs) ----

struct AmdNamedDef {
    const char* name;
    u16 evsel;
    u8 umask;
    int8_t fixed;   // regs::amd::FixedLike counter, or -1
    bool gp_equiv;  // (fixed events) the GP encoding counts the same thing
    u8 when;        // 0 every family, 1 before Zen (10h-16h), 2 Zen (17h and later)
    const char* title;
};
constexpr AmdNamedDef kAmdNamed[] = {
    // Retired instructions: IRPerfCount when present, else PMCx0C0.
    {"instructions", 0xC0, 0x00, regs::amd::kFixedIrPerf, true, 0, "retired instructions"},
    {"ex_ret_instr", 0xC0, 0x00, regs::amd::kFixedIrPerf, true, 0, "retired instructions"},
    {"retired_instructions", 0xC0, 0x00, regs::amd::kFixedIrPerf, true, 0, "retired instructions"},
    {"aperf", 0, 0, regs::amd::kFixedAperf, false, 0, "APERF: actual clocks in C0 (MSR 0xC00000E8)"},
    {"mperf", 0, 0, regs::amd::kFixedMperf, false, 0, "MPERF: P0-frequency clocks in C0 (MSR 0xC00000E7)"},
    {"cycles", 0x76, 0x00, -1, false, 0, "cycles not in halt (PMCx076)"},
    {"cpu-cycles", 0x76, 0x00, -1, false, 0, "cycles not in halt (PMCx076)"},
    {"ls_not_halted_cyc", 0x76, 0x00, -1, false, 2, "cycles not in halt (PMCx076)"},
    {"cycles_not_in_halt", 0x76, 0x00, -1, false, 0, "cycles not in halt (PMCx076)"},
    {"instructions_retired", 0xC0, 0x00, -1, false, 0, "retired instructions (PMCx0C0)"},
    {"branches", 0xC2, 0x00, -1, false, 0, "retired branch instructions (PMCx0C2)"},
    {"branch-instructions", 0xC2, 0x00, -1, false, 0, "retired branch instructions (PMCx0C2)"},
    {"ex_ret_brn", 0xC2, 0x00, -1, false, 2, "retired branch instructions (PMCx0C2)"},
    {"branch-misses", 0xC3, 0x00, -1, false, 0, "retired mispredicted branch instructions (PMCx0C3)"},
    {"ex_ret_brn_misp", 0xC3, 0x00, -1, false, 2, "retired mispredicted branch instructions (PMCx0C3)"},
    {"l1d-accesses", 0x40, 0x00, -1, false, 0, "L1 data cache accesses (PMCx040)"},
    {"L1-dcache-loads", 0x40, 0x00, -1, false, 0, "L1 data cache accesses (PMCx040)"},
    {"ls_dc_accesses", 0x40, 0x00, -1, false, 2, "L1 data cache accesses (PMCx040)"},
    {"l1d-misses", 0x41, 0x01, -1, false, 1, "L1 data cache misses (PMCx041, unit mask 01h)"},
    {"L1-dcache-load-misses", 0x41, 0x01, -1, false, 1, "L1 data cache misses (PMCx041, unit mask 01h)"},
    {"l1d-misses", 0x60, 0xC8, -1, false, 2, "L2 cache accesses from L1 data cache misses (PMCx060, unit mask C8h)"},
    {"L1-dcache-load-misses", 0x60, 0xC8, -1, false, 2,
     "L2 cache accesses from L1 data cache misses (PMCx060, unit mask C8h)"},
};

bool amd_def_applies(const AmdNamedDef& d, EventDialect dl) {
    return d.when == 0 || (d.when == 1 && dl == EventDialect::amd) || (d.when == 2 && dl == EventDialect::amd_zen);
}

const AmdNamedDef* find_amd_named(StrView name, EventDialect dl) {
    for (const AmdNamedDef& d : kAmdNamed)
        if (amd_def_applies(d, dl) && name.eq_nocase(StrView(d.name))) return &d;
    return nullptr;
}

bool is_amd(EventDialect d) { return d == EventDialect::amd || d == EventDialect::amd_zen; }

// ---- small helpers ----

bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }
bool is_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
bool all_hex(StrView s) {
    if (s.empty()) return false;
    for (usize i = 0; i < s.len; ++i)
        if (!is_hex(s[i])) return false;
    return true;
}
bool printable(char c) { return u8(c) >= 0x20 && u8(c) < 0x7F; }

// Copies s for quoting in a message: at most `max` characters ("..." when cut);
// non-printable characters become '?'.
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

// Display names: letters, digits and _ . - : + @ ( ) [ ]. Separators of lists and
// specs (, ; / = # whitespace) are excluded so that a name cannot swallow other items.
bool name_char(char c) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
    switch (c) {
        case '_': case '.': case '-': case ':': case '+': case '@': case '(': case ')': case '[': case ']':
            return true;
        default: return false;
    }
}

// Copies s into a fixed name buffer (truncating with "..." when too long).
void set_name(Event& e, StrView s) {
    clip(s, e.name, sizeof e.name, Event::kNameMax - 1);
}

struct Ctx {
    StrView spec;  // the (trimmed) spec, as quoted in messages
    EventDialect dialect = EventDialect::intel;
    Error fail(usize off, const char* fmt, ...) const __attribute__((format(printf, 3, 4)));
};

Status check_name(const Ctx& cx, StrView name, usize off);

Error Ctx::fail(usize off, const char* fmt, ...) const {
    char msg[sizeof(Error::msg)];
    va_list ap;
    va_start(ap, fmt);
    vformat_to(msg, sizeof msg, fmt, ap);
    va_end(ap);
    char q[48];
    clip(spec, q, sizeof q);
    return Error::make(Errc::invalid_argument, "event spec '%s': %s (at offset %zu)", q, msg, off);
}

Status check_name(const Ctx& cx, StrView name, usize off) {
    for (usize i = 0; i < name.len; ++i) {
        if (name_char(name[i])) continue;
        char q[48];
        clip(name, q, sizeof q);
        return cx.fail(off + i, "event name '%s' contains '%c' (names use letters, digits and _ . - : + @ ( ) [ ])",
                       q, printable(name[i]) ? name[i] : '?');
    }
    return ok_status();
}

// A part of the spec with its offset.
struct Part {
    StrView s;
    usize off = 0;
};

// Splits `s` (at offset `base` in the spec) at `sep`; calls fn(Part) for each piece.
template <typename Fn> Status split_parts(StrView s, usize base, char sep, Fn fn) {
    usize start = 0;
    for (usize i = 0; i <= s.len; ++i) {
        if (i == s.len || s[i] == sep) {
            PMULAB_TRY(fn(Part{s.sub(start, i - start), base + start}));
            start = i + 1;
        }
    }
    return ok_status();
}

Status parse_number(const Ctx& cx, const char* what, Part v, u64 max, u64* out) {
    char q[48];
    clip(v.s, q, sizeof q);
    if (v.s.empty()) return cx.fail(v.off, "%s needs a value", what);
    if (!parse_u64(v.s, out)) return cx.fail(v.off, "%s value '%s' is not a number", what, q);
    if (*out > max)
        return cx.fail(v.off, "%s value %s is out of range (0-%llu)", what, q, (unsigned long long)max);
    return ok_status();
}

// ---- nanoBench: EE.UU[.MOD]... ----

enum NbMod : u32 {
    kNbCmsk = 1u << 0,
    kNbCtr = 1u << 1,
    kNbAnyT = 1u << 2,
    kNbEdg = 1u << 3,
    kNbInv = 1u << 4,
    kNbTakenAlone = 1u << 5,
    kNbUsr = 1u << 6,
    kNbOs = 1u << 7,
    kNbRsp0 = 1u << 8,
    kNbRsp1 = 1u << 9,
    kNb3F6 = 1u << 10,
    kNbPf = 1u << 11,
    kNbEq = 1u << 12,
    kNbUmask2 = 1u << 13,
    kNbHostOnly = 1u << 14,
    kNbGuestOnly = 1u << 15,
};

struct NbModDef {
    const char* key;
    u32 bit;
    bool value;  // takes =value
    u32 msr;     // aux MSR for MSR_* modifiers
};

constexpr NbModDef kNbMods[] = {
    {"CMSK", kNbCmsk, true, 0},
    {"CTR", kNbCtr, true, 0},
    {"AnyT", kNbAnyT, false, 0},
    {"EDG", kNbEdg, false, 0},
    {"INV", kNbInv, false, 0},
    {"TakenAlone", kNbTakenAlone, false, 0},
    {"USR", kNbUsr, false, 0},
    {"OS", kNbOs, false, 0},
    {"EQ", kNbEq, false, 0},
    {"UMASK2", kNbUmask2, true, 0},
    {"MSR_RSP0", kNbRsp0, true, regs::MSR_OFFCORE_RSP_0},
    {"MSR_RSP1", kNbRsp1, true, regs::MSR_OFFCORE_RSP_1},
    {"MSR_3F6H", kNb3F6, true, regs::MSR_PEBS_LD_LAT_THRESHOLD},
    {"MSR_PF", kNbPf, true, regs::MSR_PEBS_FRONTEND},
    {"HostOnly", kNbHostOnly, false, 0},
    {"GuestOnly", kNbGuestOnly, false, 0},
};
// Modifiers that only one vendor's PMU has.
constexpr u32 kNbIntelOnly = kNbAnyT | kNbEq | kNbUmask2 | kNbRsp0 | kNbRsp1 | kNb3F6 | kNbPf;
constexpr u32 kNbAmdOnly = kNbHostOnly | kNbGuestOnly;

Status parse_hex_byte(const Ctx& cx, const char* what, Part p, u64* out) {
    char q[48];
    clip(p.s, q, sizeof q);
    if (p.s.empty()) return cx.fail(p.off, "%s is missing (expected EE.UU, e.g. 0E.01)", what);
    if (!all_hex(p.s)) return cx.fail(p.off, "%s '%s' is not hex", what, q);
    if (p.s.len > 16 || !parse_hex_u64(p.s, out) || *out > 0xFF)
        return cx.fail(p.off, "%s '%s' is out of range (00-FF)", what, q);
    return ok_status();
}

Status parse_nanobench(const Ctx& cx, StrView tok, Event* e) {
    if (cx.dialect == EventDialect::netburst)
        return cx.fail(0, "raw EE.UU events do not exist on NetBurst (Pentium 4): name the event, e.g. "
                          "instr_retired or branch_retired.MMTM (see 'pmulab events')");
    e->syntax = EventSyntax::nanobench;
    e->kind = EventKind::programmable;
    unsigned idx = 0;
    u32 seen = 0;
    bool priv_given = false, want_usr = false, want_os = false;
    Status st = split_parts(tok, 0, '.', [&](Part p) -> Status {
        unsigned i = idx++;
        u64 v = 0;
        if (i == 0) {
            char q[48];
            clip(p.s, q, sizeof q);
            if (is_amd(cx.dialect)) {
                if (p.s.len > 16 || !parse_hex_u64(p.s, &v) || !regs::amd::PerfEvtSel::event_fits(v))
                    return cx.fail(p.off, "event select '%s' is out of range (AMD event selects are 000-FFF)", q);
            } else if (p.s.len > 16 || !parse_hex_u64(p.s, &v) || v > 0xFF) {
                return cx.fail(p.off, "event select '%s' is out of range (Intel event selects are 00-FF)", q);
            }
            e->event_select = u16(v);
            return ok_status();
        }
        if (i == 1) {
            PMULAB_TRY(parse_hex_byte(cx, "UMASK", p, &v));
            e->umask = u8(v);
            return ok_status();
        }
        if (p.s.empty()) return cx.fail(p.off, "empty modifier (two dots in a row, or a trailing dot)");
        usize eq = p.s.find('=');
        StrView key = p.s.sub(0, eq);
        const NbModDef* def = nullptr;
        for (const NbModDef& d : kNbMods)
            if (key.eq_nocase(StrView(d.key))) def = &d;
        char q[48];
        clip(key, q, sizeof q);
        if (!def)
            return cx.fail(p.off,
                           is_amd(cx.dialect)
                               ? "unknown modifier '%s' (known on AMD: CMSK=n, CTR=n, EDG, INV, TakenAlone, USR, "
                                 "OS, HostOnly, GuestOnly)"
                               : "unknown modifier '%s' (known: CMSK=n, CTR=n, AnyT, EDG, INV, TakenAlone, USR, OS, "
                                 "EQ, UMASK2=n, MSR_RSP0=v, MSR_RSP1=v, MSR_3F6H=v, MSR_PF=v)",
                           q);
        if (is_amd(cx.dialect) && (def->bit & kNbIntelOnly))
            return cx.fail(p.off, "modifier '%s' is an Intel modifier; AMD PerfEvtSel has no such field", def->key);
        if (!is_amd(cx.dialect) && (def->bit & kNbAmdOnly))
            return cx.fail(p.off, "modifier '%s' is an AMD modifier (PerfEvtSel HG_ONLY); this is an Intel CPU",
                           def->key);
        if (seen & def->bit) return cx.fail(p.off, "modifier '%s' given twice", def->key);
        seen |= def->bit;
        Part val{eq < p.s.len ? p.s.sub(eq + 1) : StrView(), p.off + eq + 1};
        if (!def->value) {
            if (eq < p.s.len) return cx.fail(p.off, "modifier '%s' takes no value", def->key);
        } else if (eq >= p.s.len) {
            return cx.fail(p.off, "modifier '%s' needs a value (%s=...)", def->key, def->key);
        }
        switch (def->bit) {
            case kNbCmsk:
                PMULAB_TRY(parse_number(cx, "CMSK", val, 0xFF, &v));
                e->cmask = u8(v);
                break;
            case kNbCtr:
                PMULAB_TRY(parse_number(cx, "CTR", val, 31, &v));
                e->pinned_counter = int8_t(v);
                break;
            case kNbAnyT: e->any = true; break;
            case kNbEdg: e->edge = true; break;
            case kNbInv: e->inv = true; break;
            case kNbTakenAlone: e->taken_alone = true; break;
            case kNbEq: e->eq = true; break;
            case kNbHostOnly: e->host_only = true; break;
            case kNbGuestOnly: e->guest_only = true; break;
            case kNbUmask2:
                PMULAB_TRY(parse_number(cx, "UMASK2", val, 0xFF, &v));
                e->umask2 = u8(v);
                break;
            case kNbUsr: priv_given = want_usr = true; break;
            case kNbOs: priv_given = want_os = true; break;
            default: {  // MSR_*
                PMULAB_TRY(parse_number(cx, def->key, val, ~u64(0), &v));
                if (e->aux_count >= Event::kMaxAux)
                    return cx.fail(p.off, "at most %u MSR_* modifiers per event", Event::kMaxAux);
                e->aux[e->aux_count].msr = def->msr;
                e->aux[e->aux_count].value = v;
                ++e->aux_count;
                // Events that need an extra MSR share it with every other event: alone.
                e->taken_alone = true;
                break;
            }
        }
        return ok_status();
    });
    PMULAB_TRY(st);
    if (idx < 2) return cx.fail(tok.len, "UMASK is missing (expected EE.UU, e.g. 0E.01)");
    if (priv_given) {
        e->usr = want_usr;
        e->os = want_os;
    }
    return ok_status();
}

// ---- perf: terms, raw config, PMU prefix, :mods ----

enum PerfTerm : u32 {
    kTEvent = 1u << 0,
    kTUmask = 1u << 1,
    kTCmask = 1u << 2,
    kTUmask2 = 1u << 3,
    kTInv = 1u << 4,
    kTEdge = 1u << 5,
    kTAny = 1u << 6,
    kTEq = 1u << 7,
    kTUsr = 1u << 8,
    kTOs = 1u << 9,
    kTName = 1u << 10,
    kTHostOnly = 1u << 11,
    kTGuestOnly = 1u << 12,
};

struct PerfTermDef {
    const char* key;
    u32 bit;
    bool flag;  // boolean flag (bare or =0/1); else takes a value
};

constexpr PerfTermDef kPerfTerms[] = {
    {"event", kTEvent, false}, {"umask", kTUmask, false}, {"cmask", kTCmask, false},
    {"umask2", kTUmask2, false}, {"inv", kTInv, true}, {"edge", kTEdge, true},
    {"any", kTAny, true}, {"eq", kTEq, true}, {"usr", kTUsr, true},
    {"os", kTOs, true}, {"name", kTName, false},
    {"hostonly", kTHostOnly, true}, {"guestonly", kTGuestOnly, true},
};

const PerfTermDef* find_perf_term(StrView key) {
    for (const PerfTermDef& d : kPerfTerms)
        if (key.eq_nocase(StrView(d.key))) return &d;
    return nullptr;
}

Status parse_perf_terms(const Ctx& cx, StrView text, usize base, Event* e) {
    if (cx.dialect == EventDialect::netburst)
        return cx.fail(base, "perf event=/umask= terms do not exist on NetBurst (Pentium 4): name the event, e.g. "
                             "instr_retired or branch_retired.MMTM (see 'pmulab events')");
    e->syntax = EventSyntax::perf_terms;
    e->kind = EventKind::programmable;
    if (text.empty()) return cx.fail(base, "no terms (expected event=...,umask=...)");
    u32 seen = 0;
    bool want_usr = false, want_os = false;
    Status st = split_parts(text, base, ',', [&](Part p) -> Status {
        if (p.s.empty()) return cx.fail(p.off, "empty term (two commas in a row, or a trailing comma)");
        usize eq = p.s.find('=');
        StrView key = p.s.sub(0, eq);
        const PerfTermDef* def = find_perf_term(key);
        char q[48];
        clip(key, q, sizeof q);
        if (!def)
            return cx.fail(p.off,
                           "unknown term '%s' (known: event, umask, cmask, umask2, inv, edge, any, eq, usr, os, "
                           "name)",
                           q);
        if (seen & def->bit) return cx.fail(p.off, "term '%s' given twice", def->key);
        seen |= def->bit;
        if (is_amd(cx.dialect) && (def->bit & (kTAny | kTEq | kTUmask2)))
            return cx.fail(p.off, "term '%s' is an Intel field; AMD PerfEvtSel has no such field", def->key);
        if (!is_amd(cx.dialect) && (def->bit & (kTHostOnly | kTGuestOnly)))
            return cx.fail(p.off, "term '%s' is an AMD field (PerfEvtSel HG_ONLY); this is an Intel CPU", def->key);
        Part val{eq < p.s.len ? p.s.sub(eq + 1) : StrView(), p.off + eq + 1};
        u64 v = 1;
        if (def->flag) {
            if (eq < p.s.len) {
                if (val.s.eq("0")) v = 0;
                else if (val.s.eq("1")) v = 1;
                else {
                    clip(val.s, q, sizeof q);
                    return cx.fail(val.off, "flag '%s' takes 0 or 1, not '%s'", def->key, q);
                }
            }
        } else if (eq >= p.s.len) {
            return cx.fail(p.off, "term '%s' needs a value (%s=...)", def->key, def->key);
        }
        switch (def->bit) {
            case kTEvent: {
                if (val.s.empty()) return cx.fail(val.off, "event needs a value");
                clip(val.s, q, sizeof q);
                if (!parse_u64(val.s, &v)) return cx.fail(val.off, "event value '%s' is not a number", q);
                if (is_amd(cx.dialect) && !regs::amd::PerfEvtSel::event_fits(v))
                    return cx.fail(val.off, "event value '%s' is out of range (AMD event selects are 0x000-0xfff)",
                                   q);
                if (!is_amd(cx.dialect) && v > 0xFF)
                    return cx.fail(val.off, "event value '%s' is out of range (Intel event selects are 0x00-0xff)",
                                   q);
                e->event_select = u16(v);
                break;
            }
            case kTUmask:
                PMULAB_TRY(parse_number(cx, "umask", val, 0xFF, &v));
                e->umask = u8(v);
                break;
            case kTCmask:
                PMULAB_TRY(parse_number(cx, "cmask", val, 0xFF, &v));
                e->cmask = u8(v);
                break;
            case kTUmask2:
                PMULAB_TRY(parse_number(cx, "umask2", val, 0xFF, &v));
                e->umask2 = u8(v);
                break;
            case kTInv: e->inv = v; break;
            case kTEdge: e->edge = v; break;
            case kTAny: e->any = v; break;
            case kTEq: e->eq = v; break;
            case kTHostOnly: e->host_only = v; break;
            case kTGuestOnly: e->guest_only = v; break;
            case kTUsr: want_usr = v; break;
            case kTOs: want_os = v; break;
            case kTName:
                if (val.s.empty()) return cx.fail(val.off, "name needs a value");
                if (val.s.len >= Event::kNameMax)
                    return cx.fail(val.off, "name is too long (%zu characters; at most %zu)", val.s.len,
                                   Event::kNameMax - 1);
                PMULAB_TRY(check_name(cx, val.s, val.off));
                set_name(*e, val.s);
                break;
            default: break;
        }
        return ok_status();
    });
    PMULAB_TRY(st);
    if (!(seen & kTEvent)) return cx.fail(base, "missing event= term");
    if (seen & (kTUsr | kTOs)) {
        if (!want_usr && !want_os) return cx.fail(base, "usr and os are both off: the event would never count");
        e->usr = want_usr;
        e->os = want_os;
    }
    return ok_status();
}

// perf privilege modifiers after ':' or a PMU's closing '/': 'u' and 'k'.
Status parse_perf_mods(const Ctx& cx, StrView mods, usize base, bool after_colon, Event* e) {
    if (mods.empty()) {
        if (after_colon) return cx.fail(base, "empty modifier list after ':' (expected u or k)");
        return ok_status();
    }
    bool u = false, k = false;
    for (usize i = 0; i < mods.len; ++i) {
        char c = mods[i];
        bool* slot = c == 'u' ? &u : c == 'k' ? &k : nullptr;
        if (!slot) {
            char q[2] = {printable(c) ? c : '?', 0};
            return cx.fail(base + i, "unsupported modifier '%s' (pmulab accepts u and k)", q);
        }
        if (*slot) return cx.fail(base + i, "modifier '%c' given twice", c);
        *slot = true;
    }
    e->usr = u;
    e->os = k;
    return ok_status();
}

Status parse_perf_raw_amd(const Ctx& cx, StrView tok, Event* e) {
    e->syntax = EventSyntax::perf_raw;
    e->kind = EventKind::programmable;
    usize colon = tok.find(':');
    StrView hex = tok.sub(1, colon - 1);
    u64 v = 0;
    char q[48];
    clip(hex, q, sizeof q);
    if (hex.len > 16 || !parse_hex_u64(hex, &v))
        return cx.fail(1, "raw config '%s' is longer than 16 hex digits", q);
    using regs::amd::PerfEvtSel;
    constexpr u64 allowed = PerfEvtSel::event_lo_field::mask | PerfEvtSel::umask_field::mask |
                            PerfEvtSel::edge_field::mask | PerfEvtSel::inv_field::mask |
                            PerfEvtSel::cmask_field::mask | PerfEvtSel::event_hi_field::mask |
                            PerfEvtSel::guest_only_field::mask | PerfEvtSel::host_only_field::mask;
    if (v & ~allowed)
        return cx.fail(1,
                       "raw config 0x%llx sets bits 0x%llx outside the AMD event fields (event 7:0 and 35:32, "
                       "umask 15:8, edge 18, inv 23, cmask 31:24, guestonly 40, hostonly 41; use :u/:k for "
                       "privilege)",
                       (unsigned long long)v, (unsigned long long)(v & ~allowed));
    PerfEvtSel s(v);
    e->event_select = u16(s.event_select());
    e->umask = u8(s.umask());
    e->edge = s.edge();
    e->inv = s.inv();
    e->cmask = u8(s.cmask());
    e->guest_only = s.guest_only();
    e->host_only = s.host_only();
    if (colon < tok.len) PMULAB_TRY(parse_perf_mods(cx, tok.sub(colon + 1), colon + 1, true, e));
    return ok_status();
}

Status parse_perf_raw(const Ctx& cx, StrView tok, Event* e) {
    if (is_amd(cx.dialect)) return parse_perf_raw_amd(cx, tok, e);
    if (cx.dialect == EventDialect::netburst)
        return cx.fail(0, "raw configs are not supported on NetBurst (Pentium 4): name the event, e.g. "
                          "instr_retired or branch_retired.MMTM (see 'pmulab events')");
    e->syntax = EventSyntax::perf_raw;
    e->kind = EventKind::programmable;
    usize colon = tok.find(':');
    StrView hex = tok.sub(1, colon - 1);
    u64 v = 0;
    char q[48];
    clip(hex, q, sizeof q);
    if (hex.len > 16 || !parse_hex_u64(hex, &v))
        return cx.fail(1, "raw config '%s' is longer than 16 hex digits", q);
    constexpr u64 allowed = PerfEvtSel::event_select_field::mask | PerfEvtSel::umask_field::mask |
                            PerfEvtSel::edge_field::mask | PerfEvtSel::any_thread_field::mask |
                            PerfEvtSel::inv_field::mask | PerfEvtSel::cmask_field::mask |
                            PerfEvtSel::eq_field::mask | PerfEvtSel::umask2_field::mask;
    if (v & ~allowed)
        return cx.fail(1,
                       "raw config 0x%llx sets bits 0x%llx outside the event fields (event 7:0, umask 15:8, "
                       "edge 18, any 21, inv 23, cmask 31:24, eq 36, umask2 47:40; use :u/:k for privilege)",
                       (unsigned long long)v, (unsigned long long)(v & ~allowed));
    PerfEvtSel s(v);
    e->event_select = u16(s.event_select());
    e->umask = u8(s.umask());
    e->edge = s.edge();
    e->any = s.any_thread();
    e->inv = s.inv();
    e->cmask = u8(s.cmask());
    e->eq = s.eq();
    e->umask2 = u8(s.umask2());
    if (colon < tok.len) PMULAB_TRY(parse_perf_mods(cx, tok.sub(colon + 1), colon + 1, true, e));
    return ok_status();
}

Status parse_perf_pmu(const Ctx& cx, StrView tok, Event* e) {
    usize slash = tok.find('/');
    StrView pmu = tok.sub(0, slash);
    char q[48];
    clip(pmu, q, sizeof q);
    if (pmu.empty()) return cx.fail(0, "PMU name before '/' is missing (expected cpu/.../)");
    if (pmu.eq("cpu")) e->core_type = kCoreTypeNone;
    else if (!is_amd(cx.dialect) && pmu.eq("cpu_core")) e->core_type = kCoreTypeCore;
    else if (!is_amd(cx.dialect) && pmu.eq("cpu_atom")) e->core_type = kCoreTypeAtom;
    else return cx.fail(0, "unknown PMU '%s' (pmulab knows cpu, cpu_core and cpu_atom)", q);
    usize close = tok.find('/', slash + 1);
    if (close >= tok.len) return cx.fail(tok.len, "missing closing '/' after the terms");
    PMULAB_TRY(parse_perf_terms(cx, tok.sub(slash + 1, close - slash - 1), slash + 1, e));
    return parse_perf_mods(cx, tok.sub(close + 1), close + 1, false, e);
}

// AMD: NAME[:MODS] from kAmdNamed.
Status parse_named_amd(const Ctx& cx, StrView tok, Event* e) {
    usize colon = tok.find(':');
    StrView name = tok.sub(0, colon);
    const AmdNamedDef* d = find_amd_named(name, cx.dialect);
    char q[48];
    clip(name, q, sizeof q);
    if (!d) {
        if (all_hex(name) && name.len <= 4)
            return cx.fail(0, "'%s' is not an event name; a raw event needs its unit mask too: EEE.UU, e.g. 0C0.00",
                           q);
        return cx.fail(0,
                       "unknown AMD event name '%s' (named events: instructions, cycles, branches, branch-misses, "
                       "l1d-accesses, l1d-misses, aperf, mperf, ...; raw events are EEE.UU, e.g. 0C0.00, or "
                       "event=0xc0,umask=0)",
                       q);
    }
    e->kind = d->fixed >= 0 ? EventKind::fixed : EventKind::programmable;
    e->event_select = d->evsel;
    e->umask = d->umask;
    e->fixed_counter = d->fixed;
    e->gp_equivalent = d->fixed >= 0 && d->gp_equiv;
    e->gp_equivalent_exact = true;
    if (colon < tok.len) PMULAB_TRY(parse_perf_mods(cx, tok.sub(colon + 1), colon + 1, true, e));
    return ok_status();
}

// NetBurst: NAME[.MASK[+MASK]...][:MODS] from netburst::kEvents, or a generic alias.
Status parse_named_netburst(const Ctx& cx, StrView tok, Event* e) {
    usize colon = tok.find(':');
    StrView full = tok.sub(0, colon);
    usize dot = full.find('.');
    StrView name = full.sub(0, dot);
    char q[48];
    clip(name, q, sizeof q);
    e->kind = EventKind::programmable;
    const netburst::EventDef* d = netburst::find_event(name);
    if (d) {
        e->nb_event = int8_t(d - netburst::kEvents);
        e->nb_mask = d->default_mask;
    } else {
        for (const netburst::AliasDef& a : netburst::kAliases)
            if (name.eq_nocase(StrView(a.name))) {
                e->nb_event = int8_t(a.event);
                e->nb_mask = a.mask;
            }
        if (e->nb_event < 0)
            return cx.fail(0,
                           "unknown NetBurst event '%s' (known: global_power_events, instr_retired, uops_retired, "
                           "branch_retired, mispred_branch_retired, and instructions, cycles, branches, "
                           "branch-misses, uops)",
                           q);
        if (dot < full.len) return cx.fail(dot, "'%s' is a generic name and takes no event-mask bits", q);
        d = &netburst::kEvents[e->nb_event];
    }
    if (dot < full.len) {
        u16 mask = 0;
        PMULAB_TRY(split_parts(full.sub(dot + 1), dot + 1, '+', [&](Part p) -> Status {
            char m[48];
            clip(p.s, m, sizeof m);
            if (p.s.empty()) return cx.fail(p.off, "empty event-mask name");
            for (unsigned k = 0; k < d->mask_count; ++k)
                if (p.s.eq_nocase(StrView(d->masks[k].name))) {
                    mask |= u16(1u << d->masks[k].bit);
                    return ok_status();
                }
            StrBuf known;
            for (unsigned k = 0; k < d->mask_count; ++k) known.printf("%s%s", k ? ", " : "", d->masks[k].name);
            return cx.fail(p.off, "'%s' is not an event-mask bit of %s (known: %s)", m, d->name, known.c_str());
        }));
        e->nb_mask = mask;
    }
    e->event_select = d->event_select;
    if (colon < tok.len) PMULAB_TRY(parse_perf_mods(cx, tok.sub(colon + 1), colon + 1, true, e));
    return ok_status();
}

Status parse_named(const Ctx& cx, StrView tok, Event* e) {
    e->syntax = EventSyntax::name;
    if (is_amd(cx.dialect)) return parse_named_amd(cx, tok, e);
    if (cx.dialect == EventDialect::netburst) return parse_named_netburst(cx, tok, e);
    usize colon = tok.find(':');
    StrView name = tok.sub(0, colon);
    const NamedDef* d = find_named(name);
    char q[48];
    clip(name, q, sizeof q);
    if (!d) {
        if (all_hex(name) && name.len <= 4)
            return cx.fail(0, "'%s' is not an event name; a raw event needs its UMASK too: EE.UU, e.g. 0E.01", q);
        return cx.fail(0,
                       "unknown event name '%s' (named events are the architectural ones, e.g. INST_RETIRED.ANY, "
                       "cycles; raw events are EE.UU, e.g. 0E.01, or event=0x0e,umask=0x01)",
                       q);
    }
    e->kind = d->fixed >= 0 ? EventKind::fixed : EventKind::programmable;
    e->event_select = d->evsel;
    e->umask = d->umask;
    e->arch_bit = d->arch;
    e->fixed_counter = d->fixed;
    e->gp_equivalent = d->fixed >= 0;
    e->gp_equivalent_exact = d->exact;
    if (colon < tok.len) PMULAB_TRY(parse_perf_mods(cx, tok.sub(colon + 1), colon + 1, true, e));
    return ok_status();
}

Status parse_token(const Ctx& cx, StrView tok, Event* e) {
    if (tok.eq_nocase("tsc")) {
        e->kind = EventKind::tsc;
        e->syntax = EventSyntax::tsc;
        set_name(*e, "tsc");
        return ok_status();
    }
    usize dot = tok.find('.');
    if (dot > 0 && dot < tok.len && all_hex(tok.sub(0, dot))) return parse_nanobench(cx, tok, e);
    if (tok.find('/') < tok.len) return parse_perf_pmu(cx, tok, e);
    if (tok.find('=') < tok.len || tok.find(',') < tok.len) return parse_perf_terms(cx, tok, 0, e);
    usize colon = tok.find(':');
    if (tok.len >= 2 && tok[0] == 'r' && colon > 1 && all_hex(tok.sub(1, colon - 1))) return parse_perf_raw(cx, tok, e);
    return parse_named(cx, tok, e);
}

// ---- lists ----

bool is_perf_key(StrView piece, bool* is_event) {
    StrView t = piece.trim();
    usize eq = t.find('=');
    const PerfTermDef* d = find_perf_term(t.sub(0, eq));
    if (!d) return false;
    if (eq >= t.len && !d->flag) return false;  // "umask" alone is not a term
    *is_event = d->bit == kTEvent;
    return true;
}

}  // namespace

// ---- Event ----

regs::PerfEvtSel Event::perfevtsel() const {
    PerfEvtSel v;
    v.set_event_select(event_select & 0xFF).set_umask(umask).set_usr(usr).set_os(os).set_edge(edge);
    v.set_any_thread(any).set_inv(inv).set_cmask(cmask).set_eq(eq).set_umask2(umask2);
    return v;
}

u64 Event::fixed_ctrl_group() const {
    regs::FixedCtrCtrl f;
    f.set_os(0, os).set_usr(0, usr).set_any_thread(0, any);
    return f.group(0);
}

Result<Event> parse_event_spec(StrView raw, EventDialect dialect) {
    StrView s = raw.trim();
    Ctx cx{s, dialect};
    if (s.empty()) return Error::make(Errc::invalid_argument, "empty event spec");
    for (usize i = 0; i < s.len; ++i)
        if (!printable(s[i]) && !is_ws(s[i]))
            return cx.fail(i, "non-printable character 0x%02X", unsigned(u8(s[i])));
    usize t = 0;
    while (t < s.len && !is_ws(s[t])) ++t;
    StrView tok = s.sub(0, t);
    usize n0 = t;
    while (n0 < s.len && is_ws(s[n0])) ++n0;
    StrView name;
    if (n0 < s.len && tok.len && tok[tok.len - 1] == ',')
        return cx.fail(t, "space after ',' in perf terms; write them without spaces (event=0x0e,umask=0x01)");
    if (n0 < s.len) {
        usize n1 = n0;
        while (n1 < s.len && !is_ws(s[n1])) ++n1;
        name = s.sub(n0, n1 - n0);
        usize r = n1;
        while (r < s.len && is_ws(s[r])) ++r;
        if (r < s.len) {
            char q1[48], q2[48];
            clip(s.sub(r), q1, sizeof q1);
            clip(name, q2, sizeof q2);
            return cx.fail(r, "unexpected '%s' after the event name '%s'", q1, q2);
        }
        if (name.len >= Event::kNameMax)
            return cx.fail(n0, "event name is too long (%zu characters; at most %zu)", name.len, Event::kNameMax - 1);
        PMULAB_TRY(check_name(cx, name, n0));
    }
    Event e;
    e.dialect = dialect;
    PMULAB_TRY(parse_token(cx, tok, &e));
    if (!name.empty()) set_name(e, name);
    else if (!e.name[0]) set_name(e, tok);
    return e;
}

Status split_event_list(StrView text, Vec<EventListItem>* items) {
    items->clear();
    Vec<bool> perf;  // per item: a perf term list that later pieces may continue
    usize start = 0;
    bool in_slash = false;
    char sep_before = 0;
    for (usize i = 0; i <= text.len; ++i) {
        char c = i < text.len ? text[i] : 0;
        if (c == '/') in_slash = !in_slash;
        bool sep = i == text.len || c == ';' || (c == ',' && !in_slash);
        if (!sep) continue;
        StrView piece = text.sub(start, i - start);
        usize lead = 0;
        while (lead < piece.len && is_ws(piece[lead])) ++lead;
        usize off = start + lead;
        if (piece.trim().empty()) {
            if (text.trim().empty()) return Error::make(Errc::invalid_argument, "empty event list");
            return Error::make(Errc::invalid_argument,
                               "event list item %zu is empty (at offset %zu): two separators in a row, or one at "
                               "the start or end",
                               items->size() + 1, off);
        }
        bool is_event = false;
        bool perf_term = is_perf_key(piece, &is_event);
        if (sep_before == ',' && !items->empty() && perf.back() && perf_term && !is_event) {
            items->back().end = i;  // a continuation term of the previous perf list
        } else {
            if (items->size() >= kMaxEventsPerList)
                return Error::make(Errc::invalid_argument, "too many events in the list (at most %zu)",
                                   kMaxEventsPerList);
            items->push(EventListItem{off, i});
            perf.push(perf_term);
        }
        sep_before = c;
        if (c == ';') in_slash = false;
        start = i + 1;
    }
    return ok_status();
}

Status parse_event_list(StrView text, Vec<Event>* out, EventDialect dialect) {
    Vec<EventListItem> items;
    PMULAB_TRY(split_event_list(text, &items));
    for (usize k = 0; k < items.size(); ++k) {
        Result<Event> r = parse_event_spec(text.sub(items[k].begin, items[k].end - items[k].begin), dialect);
        if (!r.ok())
            return Error::make(Errc::invalid_argument, "event list item %zu (at offset %zu): %s", k + 1,
                               items[k].begin, r.error().msg);
        out->push(r.value());
    }
    return ok_status();
}

Status parse_event_file(StrView text, const char* file_name, Vec<Event>* out, EventDialect dialect) {
    constexpr usize kMaxEventsPerFile = 4096;
    usize count = 0;
    u32 line_no = 0;
    usize pos = 0;
    while (pos <= text.len) {
        usize nl = text.find('\n', pos);
        StrView line = text.sub(pos, nl - pos);
        ++line_no;
        pos = nl + 1;
        line = line.sub(0, line.find('#')).trim();
        if (line.empty()) {
            if (nl >= text.len) break;
            continue;
        }
        Result<Event> r = parse_event_spec(line, dialect);
        if (!r.ok()) return Error::make(Errc::invalid_argument, "%s:%u: %s", file_name, line_no, r.error().msg);
        if (++count > kMaxEventsPerFile)
            return Error::make(Errc::invalid_argument, "%s:%u: too many events (at most %zu per file)", file_name,
                               line_no, kMaxEventsPerFile);
        out->push(r.value());
        if (nl >= text.len) break;
    }
    if (count == 0)
        return Error::make(Errc::invalid_argument, "%s: no events (only comments and blank lines)", file_name);
    return ok_status();
}

// ---- availability ----

const char* event_route_name(EventRoute r) {
    switch (r) {
        case EventRoute::fixed: return "fixed";
        case EventRoute::gp: return "gp";
        case EventRoute::gp_fallback: return "gp_fallback";
        case EventRoute::none: return "none";
    }
    return "none";
}

namespace {

// Whether architectural event `bit` is enumerated as available; else writes why not.
bool arch_available(const PmuCaps& c, int bit, StrBuf* why) {
    if (bit < 0) return true;
    if (unsigned(bit) >= c.ebx_length) {
        if (c.ebx_length == 0) why->printf("CPUID.0AH:EAX[31:24] = 0 enumerates no architectural events");
        else
            why->printf("CPUID.0AH:EAX[31:24] = %u enumerates architectural events 0-%u only (this is event %d)",
                        c.ebx_length, c.ebx_length - 1u, bit);
        return false;
    }
    if ((c.ebx >> bit) & 1) {
        why->printf("CPUID.0AH:EBX[%d] = 1", bit);
        return false;
    }
    return true;
}

Error unsupported(const Event& e, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
Error unsupported(const Event& e, const char* fmt, ...) {
    char msg[sizeof(Error::msg)];
    va_list ap;
    va_start(ap, fmt);
    vformat_to(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return Error::make(Errc::unsupported, "event '%s' %s", e.name, msg);
}

void put_gp_code(StrBuf& b, const Event& e) { b.printf("%02X.%02X", unsigned(e.event_select), unsigned(e.umask)); }

}  // namespace

Result<EventRoute> check_event(const Event& e, const PmuCaps& c, u8 core_type) {
    if (e.kind == EventKind::tsc) return EventRoute::none;
    // No counters at all: say so first, whatever dialect the event was written in.
    if (c.version == 0 && !c.amd_core_counters && is_amd(e.dialect))
        return unsupported(e, "cannot be counted: no AMD core counters enumerated (CPUID 8000_0001H:ECX[23] = 0, "
                              "no PerfMonV2; a hypervisor without PMU passthrough)");
    if (c.version == 0 && !c.amd_core_counters)
        return unsupported(e, "cannot be counted: no architectural performance monitoring (CPUID.0AH:EAX[7:0] = 0)");
    if (e.dialect != EventDialect::intel)
        return unsupported(e, "was written for a%s %s PMU; it cannot be counted on an Intel architectural PMU",
                           is_amd(e.dialect) ? "n" : "", is_amd(e.dialect) ? "AMD" : "NetBurst");
    if (c.version == 0) {
        if (c.amd_core_counters)
            return unsupported(e, "cannot be counted: pmulab programs Intel architectural counters and this CPU "
                                  "has an AMD PMU");
        return unsupported(e, "cannot be counted: no architectural performance monitoring (CPUID.0AH:EAX[7:0] = 0)");
    }
    if (e.core_type != kCoreTypeNone) {
        const char* want = e.core_type == kCoreTypeCore ? "cpu_core" : "cpu_atom";
        if (core_type == kCoreTypeNone)
            return unsupported(e, "is for PMU %s, but this CPU is not hybrid (use cpu/.../)", want);
        if (core_type != e.core_type)
            return unsupported(e, "is for PMU %s, but this logical processor is %s", want,
                               core_type == kCoreTypeCore   ? "a P-core (cpu_core)"
                               : core_type == kCoreTypeAtom ? "an E-core (cpu_atom)"
                                                            : "of an unknown core type");
    }
    if (e.event_select > 0xFF)
        return unsupported(e, "has event select 0x%X; Intel event selects are 8 bits", unsigned(e.event_select));
    u32 gp = regs::gp_counters(c);
    u32 fx = regs::fixed_counters(c);
    StrBuf why;
    if (e.any && !regs::has_anythread(c)) {
        if (c.version < 3) return unsupported(e, "uses AnyThread, which needs architectural PMU version 3 or later (this CPU has version %u)", c.version);
        return unsupported(e, "uses AnyThread, which this CPU deprecates (CPUID.0AH:EDX[15] = 1)");
    }
    if (e.eq && !(c.leaf_23 && c.eq_bit))
        return unsupported(e, "uses EQ, which this CPU does not enumerate (CPUID.23H.0:EBX[1] = 0)");
    if (e.umask2 && !(c.leaf_23 && c.umask2))
        return unsupported(e, "uses UMASK2, which this CPU does not enumerate (CPUID.23H.0:EBX[0] = 0)");

    if (e.kind == EventKind::fixed) {
        if (e.fixed_counter >= 0 && ((fx >> e.fixed_counter) & 1)) return EventRoute::fixed;
        StrBuf fixed_set;
        if (fx) {
            fixed_set.put("this CPU has ");
            regs::put_counter_set(fixed_set, fx, "FIXED_CTR");
        } else {
            fixed_set.put("this CPU has no fixed counters");
        }
        StrBuf code;
        put_gp_code(code, e);
        if (!e.gp_equivalent)
            return unsupported(e, "needs fixed counter %d, which is absent (%s)", e.fixed_counter, fixed_set.c_str());
        if (!gp)
            return unsupported(e, "cannot be counted: fixed counter %d is absent (%s) and there are no "
                                  "general-purpose counters",
                               e.fixed_counter, fixed_set.c_str());
        if (!arch_available(c, e.arch_bit, &why))
            return unsupported(e, "cannot be counted: fixed counter %d is absent (%s) and its GP equivalent %s is "
                                  "unavailable: %s",
                               e.fixed_counter, fixed_set.c_str(), code.c_str(), why.c_str());
        if (!(gp & e.allowed_gp))
            return unsupported(e, "cannot be counted: fixed counter %d is absent and its allowed general-purpose "
                                  "counters do not exist",
                               e.fixed_counter);
        return EventRoute::gp_fallback;
    }

    StrBuf gp_set;
    regs::put_counter_set(gp_set, gp, "PMC");
    if (!gp) return unsupported(e, "cannot be counted: this CPU has no general-purpose counters");
    if (e.arch_bit >= 0 && !arch_available(c, e.arch_bit, &why)) {
        StrBuf code;
        put_gp_code(code, e);
        return unsupported(e, "(%s, %s) is not available on this CPU: %s", arch_event_title(unsigned(e.arch_bit)),
                           code.c_str(), why.c_str());
    }
    if (e.pinned_counter >= 0 && !((gp >> e.pinned_counter) & 1))
        return unsupported(e, "is pinned to PMC%d (.CTR=%d), but this CPU has %s", e.pinned_counter, e.pinned_counter,
                           gp_set.c_str());
    if (!(gp & e.allowed_gp)) {
        StrBuf allowed;
        regs::put_counter_set(allowed, e.allowed_gp, "PMC");
        return unsupported(e, "may only use %s, but this CPU has %s", allowed.c_str(), gp_set.c_str());
    }
    if (e.pinned_counter >= 0 && !((e.allowed_gp >> e.pinned_counter) & 1)) {
        StrBuf allowed;
        regs::put_counter_set(allowed, e.allowed_gp, "PMC");
        return unsupported(e, "is pinned to PMC%d but may only use %s", e.pinned_counter, allowed.c_str());
    }
    return EventRoute::gp;
}

EventCounters event_counters(const Event& e, const PmuCaps& c) {
    EventCounters r;
    if (e.kind == EventKind::tsc || !c.version) return r;
    u32 gp = regs::gp_counters(c) & e.allowed_gp;
    if (e.pinned_counter >= 0) gp &= u32(1) << e.pinned_counter;
    if (e.kind == EventKind::fixed) {
        u32 fx = regs::fixed_counters(c);
        bool present = e.fixed_counter >= 0 && ((fx >> e.fixed_counter) & 1);
        if (present) r.fixed = u32(1) << e.fixed_counter;
        StrBuf why;
        bool gp_ok = e.gp_equivalent && (!present || e.gp_equivalent_exact) && arch_available(c, e.arch_bit, &why);
        if (gp_ok) r.gp = gp;
        return r;
    }
    r.gp = gp;
    return r;
}

void list_named_events(StrBuf& out) {
    for (const NamedDef& d : kNamed) {
        usize col = out.size();
        out.put(d.name);
        out.pad_to(col, 30);
        out.printf("%02X.%02X  ", d.evsel, d.umask);
        if (d.fixed >= 0) out.printf("fixed counter %d, else GP %s; ", d.fixed, d.exact ? "equivalent" : "fallback");
        out.printf("%s\n", d.arch >= 0 ? arch_event_title(unsigned(d.arch)) : "");
    }
    out.put("tsc                           time-stamp counter (RDTSC), no PMU counter\n");
}

const char* event_dialect_name(EventDialect d) {
    switch (d) {
        case EventDialect::intel: return "intel";
        case EventDialect::amd: return "amd";
        case EventDialect::amd_zen: return "amd_zen";
        case EventDialect::netburst: return "netburst";
    }
    return "intel";
}

EventDialect event_dialect_for(const CpuIdentity& id, const PmuCaps& caps) {
    if (id.vendor == Vendor::amd || id.vendor == Vendor::hygon)
        return id.family >= 0x17 ? EventDialect::amd_zen : EventDialect::amd;
    if (id.vendor == Vendor::intel && id.family == 0xF && caps.version == 0) return EventDialect::netburst;
    return EventDialect::intel;
}

void list_named_events(StrBuf& out, EventDialect dl) {
    if (dl == EventDialect::intel) {
        list_named_events(out);
        return;
    }
    if (dl == EventDialect::netburst) {
        for (const netburst::EventDef& d : netburst::kEvents) {
            usize col = out.size();
            out.put(d.name);
            out.pad_to(col, 30);
            out.printf("ESCR event %02X in %s/%s; masks", unsigned(d.event_select), netburst::kEscrs[d.escr[0]].name,
                       netburst::kEscrs[d.escr[1]].name);
            for (unsigned k = 0; k < d.mask_count; ++k) out.printf(" %s", d.masks[k].name);
            out.printf("; %s\n", d.title);
        }
        for (const netburst::AliasDef& a : netburst::kAliases) {
            usize col = out.size();
            out.put(a.name);
            out.pad_to(col, 30);
            netburst::put_event_name(out, a.event, a.mask);
            out.put('\n');
        }
        out.put("tsc                           time-stamp counter (RDTSC), no PMU counter\n");
        return;
    }
    static constexpr const char* kFixedLike[] = {"IRPerfCount", "APERF", "MPERF"};
    for (const AmdNamedDef& d : kAmdNamed) {
        if (!amd_def_applies(d, dl)) continue;
        usize col = out.size();
        out.put(d.name);
        out.pad_to(col, 30);
        if (d.fixed >= 0 && d.gp_equiv)
            out.printf("%03X.%02X  %s, else GP; %s\n", unsigned(d.evsel), unsigned(d.umask), kFixedLike[d.fixed],
                       d.title);
        else if (d.fixed >= 0)
            out.printf("%s  %s\n", kFixedLike[d.fixed], d.title);
        else
            out.printf("%03X.%02X  %s\n", unsigned(d.evsel), unsigned(d.umask), d.title);
    }
    out.put("tsc                           time-stamp counter (RDTSC), no PMU counter\n");
}

void put_event_encoding(StrBuf& out, const Event& e) {
    if (e.kind == EventKind::tsc) {
        out.put("tsc");
        return;
    }
    if (e.dialect == EventDialect::netburst) {
        netburst::put_event_name(out, unsigned(e.nb_event), e.nb_mask);
        if (e.usr != e.os) out.put(e.usr ? ":u" : ":k");
        return;
    }
    if (is_amd(e.dialect)) {
        static constexpr const char* kFixedLike[] = {"IRPerfCount", "APERF", "MPERF"};
        if (e.kind == EventKind::fixed) {
            out.put(e.fixed_counter >= 0 && e.fixed_counter < 3 ? kFixedLike[e.fixed_counter] : "?");
            if (!e.gp_equivalent) return;
            out.put('=');
        }
        out.printf("%03X.%02X", unsigned(e.event_select), unsigned(e.umask));
        if (e.cmask) out.printf(".CMSK=%u", unsigned(e.cmask));
        if (e.edge) out.put(".EDG");
        if (e.inv) out.put(".INV");
        if (e.host_only) out.put(".HostOnly");
        if (e.guest_only) out.put(".GuestOnly");
        if (e.pinned_counter >= 0) out.printf(".CTR=%d", e.pinned_counter);
        if (e.usr != e.os) out.put(e.usr ? ".USR" : ".OS");
        if (e.taken_alone) out.put(".TakenAlone");
        return;
    }
    if (e.kind == EventKind::fixed) out.printf("FIXED_CTR%d=", e.fixed_counter);
    out.printf("%02X.%02X", unsigned(e.event_select), unsigned(e.umask));
    if (e.cmask) out.printf(".CMSK=%u", unsigned(e.cmask));
    if (e.any) out.put(".AnyT");
    if (e.edge) out.put(".EDG");
    if (e.inv) out.put(".INV");
    if (e.eq) out.put(".EQ");
    if (e.umask2) out.printf(".UMASK2=0x%02X", unsigned(e.umask2));
    if (e.pinned_counter >= 0) out.printf(".CTR=%d", e.pinned_counter);
    if (e.usr != e.os) out.put(e.usr ? ".USR" : ".OS");
    for (unsigned i = 0; i < e.aux_count; ++i) {
        const char* k = e.aux[i].msr == regs::MSR_OFFCORE_RSP_0   ? "MSR_RSP0"
                        : e.aux[i].msr == regs::MSR_OFFCORE_RSP_1 ? "MSR_RSP1"
                        : e.aux[i].msr == regs::MSR_PEBS_LD_LAT_THRESHOLD ? "MSR_3F6H"
                                                                          : "MSR_PF";
        out.printf(".%s=0x%llX", k, (unsigned long long)e.aux[i].value);
    }
    if (e.taken_alone) out.put(".TakenAlone");
}

}  // namespace pmulab
