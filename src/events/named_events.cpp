// The named events of each dialect: Intel's architectural and fixed-counter events
// (SDM Vol. 3B Table 20-1, under their Intel, perf and likwid names), AMD's (APM Vol. 2
// §13.2 and the family BKDGs/PPRs) and NetBurst's (netburst_regs.h); parsing a name
// into an Event and listing the tables (events.h list_named_events).
#include "events/named_events.h"

#include "x86/amd_regs.h"
#include "x86/netburst_regs.h"

namespace pmulab {

namespace {

// ---- the named-event table (SDM Vol. 3B Table 20-1; perf and likwid names) ----

struct NamedDef {
    const char* name;
    u8 evsel;
    u8 umask;
    int8_t arch;   // ArchEventBit or -1
    int8_t fixed;  // fixed counter or -1
    bool exact;    // (fixed events) the GP equivalent counts at the same rate
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
    // Fixed counters 4-6 of E cores that enumerate them in CPUID.23H (Skymont, Darkmont):
    // TopDown bad speculation, frontend bound, retiring (SDM Vol. 3B "Fixed-Function
    // Performance Counters"; Intel perfmon lunarlake cpu_atom: "Fixed Counter", pseudo-
    // encodings UMask 0x5/0x6/0x7, GP forms .ALL_P 73.00, 9C.01, C2.02 = the architectural
    // TopDown events 9-11).
    {"TOPDOWN_BAD_SPECULATION.ALL", 0x73, 0x00, kArchTopdownBadSpeculation, 4, true},
    {"TOPDOWN_FE_BOUND.ALL", 0x9C, 0x01, kArchTopdownFrontendBound, 5, true},
    {"TOPDOWN_RETIRING.ALL", 0xC2, 0x02, kArchTopdownRetiring, 6, true},

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
    // Zen 4 / Zen 5 pipeline utilisation (PPR for family 19h model 11h / 1Ah; Linux
    // amdzen4/pipeline.json, amdzen5/pipeline.json): dispatch slots by cause.
    {"de_no_dispatch_per_slot.no_ops_from_frontend", 0x1A0, 0x01, -1, false, 2,
     "dispatch slots left empty: no ops from the frontend (PMCx1A0, unit mask 01h)"},
    {"de_no_dispatch_per_slot.backend_stalls", 0x1A0, 0x1E, -1, false, 2,
     "dispatch slots left empty: backend stalls (PMCx1A0, unit mask 1Eh)"},
    {"de_no_dispatch_per_slot.smt_contention", 0x1A0, 0x60, -1, false, 2,
     "dispatch slots left empty: the other thread was selected (PMCx1A0, unit mask 60h)"},
    {"de_src_op_disp.all", 0xAA, 0x07, -1, false, 2, "ops dispatched from any source (PMCx0AA, unit mask 07h)"},
    {"ex_ret_ops", 0xC1, 0x00, -1, false, 2, "retired macro-ops (PMCx0C1)"},
    // ... and their level 2 (Linux amdzen4/core.json, other.json; the same codes on Zen 5).
    {"ex_ret_ucode_ops", 0x1C2, 0x00, -1, false, 2, "retired microcode ops (PMCx1C2)"},
    {"resyncs_or_nc_redirects", 0x96, 0x00, -1, false, 2,
     "pipeline restarts not caused by branch mispredicts (PMCx096, Zen 4: Linux amdzen4/other.json)"},
    // Zen 5's pipeline restarts (Linux amdzen5/branch-prediction.json, pipeline.json
    // bad_speculation_from_pipeline_restarts): PMCx096 is not a Zen 5 event.
    {"bp_redirects.resync", 0x9F, 0x01, -1, false, 2,
     "branch predictor redirects caused by resyncs (PMCx09F, unit mask 01h, Zen 5)"},
    // SMIs received (Linux amdzen1-5 ls_smi_rx; PPR PMCx02B): AMD has no MSR_SMI_COUNT.
    {"ls_smi_rx", 0x2B, 0x00, -1, false, 2, "SMIs received (PMCx02B)"},
    {"ex_no_retire.not_complete", 0xD6, 0x02, -1, false, 2,
     "cycles with no retire while the oldest op is waiting to be executed (PMCx0D6, unit mask 02h)"},
    {"ex_no_retire.load_not_complete", 0xD6, 0xA2, -1, false, 2,
     "cycles with no retire while the oldest op is waiting for load data (PMCx0D6, unit mask A2h)"},
    // L2 demand requests (not L2 prefetches) by outcome (Linux amdzen2-5 cache.json
    // l2_cache_req_stat: unit mask 09h = instruction and data cache misses in L2, F6h = hits).
    {"l2_cache_req_stat.ic_dc_miss_in_l2", 0x64, 0x09, -1, false, 2,
     "L2 requests from instruction and data cache misses that miss in L2 (PMCx064, unit mask 09h)"},
    {"l2_cache_req_stat.ic_dc_hit_in_l2", 0x64, 0xF6, -1, false, 2,
     "L2 requests from instruction and data cache misses that hit in L2 (PMCx064, unit mask F6h)"},
};

bool amd_def_applies(const AmdNamedDef& d, EventDialect dl) {
    return d.when == 0 || (d.when == 1 && dl == EventDialect::amd) || (d.when == 2 && dl == EventDialect::amd_zen);
}

const AmdNamedDef* find_amd_named(StrView name, EventDialect dl) {
    for (const AmdNamedDef& d : kAmdNamed)
        if (amd_def_applies(d, dl) && name.eq_nocase(StrView(d.name))) return &d;
    return nullptr;
}

}  // namespace

const char* amd_fixed_like_name(int counter) {
    static constexpr const char* kFixedLike[] = {"IRPerfCount", "APERF", "MPERF"};
    return counter >= 0 && counter < 3 ? kFixedLike[counter] : "?";
}

namespace {

using spec::is_amd;
using spec::Quote;
using spec::SpecSite;

// "; did you mean 'NAME'?" for the name of `dl`'s table nearest to `name` (case ignored;
// at most 1 edit for names up to 4 characters, 2 up to 8, else 3), or "" when none is near.
struct Suggestion {
    char s[80] = {};
};

Suggestion did_you_mean(StrView name, EventDialect dl) {
    usize limit = name.len <= 4 ? 1 : name.len <= 8 ? 2 : 3, best = limit + 1;
    const char* pick = nullptr;
    auto consider = [&](const char* cand) {
        usize d = spec::edit_distance_nocase(name, StrView(cand), limit);
        if (d < best) best = d, pick = cand;
    };
    if (is_amd(dl)) {
        for (const AmdNamedDef& d : kAmdNamed)
            if (amd_def_applies(d, dl)) consider(d.name);
    } else if (dl == EventDialect::netburst) {
        for (const netburst::EventDef& d : netburst::kEvents) consider(d.name);
        for (const netburst::AliasDef& a : netburst::kAliases) consider(a.name);
    } else {
        for (const NamedDef& d : kNamed) consider(d.name);
        consider("tsc");
    }
    Suggestion out;
    if (pick) format_to(out.s, sizeof out.s, "; did you mean '%s'?", pick);
    return out;
}

// What a named Intel or AMD event sets: its encoding, ArchEventBit, fixed counter and
// general-purpose equivalent.
struct NamedEncoding {
    u16 evsel;
    u8 umask;
    int8_t arch;
    int8_t fixed;
    bool gp_equivalent;
    bool exact;
};

// Sets a named event's encoding, then the :u/:k modifiers after `colon` (if any).
Status set_named(const SpecSite& cx, StrView tok, usize colon, const NamedEncoding& n, Event* e) {
    e->kind = n.fixed >= 0 ? EventKind::fixed : EventKind::programmable;
    e->event_select = n.evsel;
    e->umask = n.umask;
    e->arch_bit = n.arch;
    e->fixed_counter = n.fixed;
    e->gp_equivalent = n.gp_equivalent;
    e->gp_equivalent_exact = n.exact;
    if (colon < tok.len) PMULAB_TRY(spec::parse_priv_mods(cx, tok.sub(colon + 1), colon + 1, true, e));
    return ok_status();
}

// AMD: NAME[:MODS] from kAmdNamed.
Status parse_named_amd(const SpecSite& cx, StrView tok, Event* e) {
    usize colon = tok.find(':');
    StrView name = tok.sub(0, colon);
    const AmdNamedDef* d = find_amd_named(name, cx.dialect);
    Quote qn(name);
    const char* q = qn.s;
    if (!d) {
        if (spec::all_hex(name) && name.len <= 4)
            return cx.fail(0, "'%s' is not an event name; a raw event needs its unit mask too: EEE.UU, e.g. 0C0.00", q);
        return cx.fail(0,
                       "unknown AMD event name '%s'%s (named events: instructions, cycles, branches, branch-misses, "
                       "l1d-accesses, l1d-misses, aperf, mperf, ...; raw events are EEE.UU, e.g. 0C0.00, or "
                       "event=0xc0,umask=0)",
                       q, did_you_mean(name, cx.dialect).s);
    }
    return set_named(cx, tok, colon, {d->evsel, d->umask, -1, d->fixed, d->fixed >= 0 && d->gp_equiv, true}, e);
}

// NetBurst: NAME[.MASK[+MASK]...][:MODS] from netburst::kEvents, or a generic alias.
Status parse_named_netburst(const SpecSite& cx, StrView tok, Event* e) {
    usize colon = tok.find(':');
    StrView full = tok.sub(0, colon);
    usize dot = full.find('.');
    StrView name = full.sub(0, dot);
    Quote qn(name);
    const char* q = qn.s;
    e->kind = EventKind::programmable;
    const netburst::EventDef* d = netburst::find_event(name);
    if (d) {
        e->netburst.event = int8_t(d - netburst::kEvents);
        e->netburst.mask = d->default_mask;
    } else {
        for (const netburst::AliasDef& a : netburst::kAliases)
            if (name.eq_nocase(StrView(a.name))) {
                e->netburst.event = int8_t(a.event);
                e->netburst.mask = a.mask;
            }
        if (e->netburst.event < 0)
            return cx.fail(0,
                           "unknown NetBurst event '%s'%s (known: global_power_events, instr_retired, uops_retired, "
                           "branch_retired, mispred_branch_retired, and instructions, cycles, branches, "
                           "branch-misses, uops)",
                           q, did_you_mean(name, cx.dialect).s);
        if (dot < full.len) return cx.fail(dot, "'%s' is a generic name and takes no event-mask bits", q);
        d = &netburst::kEvents[e->netburst.event];
    }
    if (dot < full.len) {
        u16 mask = 0;
        PMULAB_TRY(spec::split_parts(full.sub(dot + 1), dot + 1, '+', [&](spec::Part p) -> Status {
            Quote qm(p.s);
            const char* m = qm.s;
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
        e->netburst.mask = mask;
    }
    e->event_select = d->event_select;
    if (colon < tok.len) PMULAB_TRY(spec::parse_priv_mods(cx, tok.sub(colon + 1), colon + 1, true, e));
    return ok_status();
}

}  // namespace

Status parse_named(const spec::SpecSite& cx, StrView tok, Event* e) {
    e->syntax = EventSyntax::name;
    if (is_amd(cx.dialect)) return parse_named_amd(cx, tok, e);
    if (cx.dialect == EventDialect::netburst) return parse_named_netburst(cx, tok, e);
    usize colon = tok.find(':');
    StrView name = tok.sub(0, colon);
    const NamedDef* d = find_named(name);
    Quote qn(name);
    const char* q = qn.s;
    if (!d) {
        if (spec::all_hex(name) && name.len <= 4)
            return cx.fail(0, "'%s' is not an event name; a raw event needs its UMASK too: EE.UU, e.g. 0E.01", q);
        return cx.fail(0,
                       "unknown event name '%s'%s (named events are the architectural ones, e.g. INST_RETIRED.ANY, "
                       "cycles; raw events are EE.UU, e.g. 0E.01, or event=0x0e,umask=0x01)",
                       q, did_you_mean(name, cx.dialect).s);
    }
    return set_named(cx, tok, colon, {d->evsel, d->umask, d->arch, d->fixed, d->fixed >= 0, d->exact}, e);
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
    for (const AmdNamedDef& d : kAmdNamed) {
        if (!amd_def_applies(d, dl)) continue;
        usize col = out.size();
        out.put(d.name);
        out.pad_to(col, 30);
        if (out.size() == col + str_len(d.name)) out.put(' ');  // a name of 30 or more characters
        if (d.fixed >= 0 && d.gp_equiv)
            out.printf("%03X.%02X  %s, else GP; %s\n", unsigned(d.evsel), unsigned(d.umask),
                       amd_fixed_like_name(d.fixed), d.title);
        else if (d.fixed >= 0) out.printf("%s  %s\n", amd_fixed_like_name(d.fixed), d.title);
        else out.printf("%03X.%02X  %s\n", unsigned(d.evsel), unsigned(d.umask), d.title);
    }
    out.put("tsc                           time-stamp counter (RDTSC), no PMU counter\n");
}

}  // namespace pmulab
