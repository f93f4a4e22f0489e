// Event descriptions and their parsers.
//
// An Event says what to count and how: the event-select encoding for a
// general-purpose counter (IA32_PERFEVTSELx fields), or a fixed-function counter,
// or the TSC; plus placement constraints for the counter allocator (alloc.h).
//
// ---- Single event specs (parse_event_spec) ----
//
// A spec is one token, optionally followed by whitespace and a display name
// ("0E.01 UOPS_ISSUED.ANY"; names use letters, digits and _ . - : + @ ( ) [ ], at most
// 63 characters). The token is one of:
//
//   tsc                        the time-stamp counter (RDTSC); needs no PMU counter
//   NAME[:MODS]                a named architectural event (SDM Vol. 3B Table 20-1) or
//                              fixed-counter event, under its Intel, perf or likwid name:
//                              INST_RETIRED.ANY, instructions, cycles, ref-cycles,
//                              INST_RETIRED.ANY_P, branch-misses, ... (list_named_events).
//                              Names are case-insensitive. MODS: perf privilege
//                              modifiers 'u' (USR only) and 'k' (OS only), e.g. cycles:u.
//   EE.UU[.MOD]...             nanoBench syntax: event select EE and UMASK UU in hex, then
//                              modifiers (case-insensitive): CMSK=n, INV, EDG, AnyT, CTR=n
//                              (pin to general-purpose counter n), TakenAlone,
//                              MSR_RSP0=v, MSR_RSP1=v (MSR_OFFCORE_RSP_0/1),
//                              MSR_3F6H=v (MSR_PEBS_LD_LAT_THRESHOLD), MSR_PF=v
//                              (MSR_PEBS_FRONTEND); pmulab extensions USR and OS (see
//                              "privilege" below), EQ and UMASK2=n (v6). Specs with
//                              MSR_* are TakenAlone (the MSR is shared by all counters).
//   event=0x0e,umask=0x01,...  perf terms: event, umask, cmask, umask2 take a value
//                              (decimal or 0x hex); inv, edge, any, eq, usr, os are flags
//                              (or flag=0/1); name=STR sets the display name.
//   rHHHH[:MODS]               perf raw config: the hex value of IA32_PERFEVTSELx fields
//                              (event 7:0, umask 15:8, edge 18, any 21, inv 23, cmask
//                              31:24, eq 36, umask2 47:40); other bits are rejected.
//   PMU/TERMS/[MODS]           perf terms inside a PMU prefix: cpu, cpu_core (hybrid
//                              P-cores only) or cpu_atom (hybrid E-cores only).
//
// Privilege: pmulab runs at ring 0, so by default an event counts in both USR
// (CPL 1-3) and OS (CPL 0) mode. Any privilege modifier (u/k, usr/os, USR/OS) replaces
// the default with exactly the modes given.
//
// Ranges: Intel event selects, UMASK, UMASK2 and CMASK are 8 bits; CTR=n takes 0..31.
// Errors quote the spec and give the character offset (from 0, in the quoted spec) of
// the offending part:
//   event spec '0E.1G': UMASK '1G' is not hex (at offset 3)
//
// ---- Lists (parse_event_list: the --events option) ----
//
// Items are separated by ';' or ','. Because perf syntax uses commas itself, a comma
// does NOT separate items (a) inside a PMU prefix's slashes (cpu/event=0x3c,umask=0/), or
// (b) when the text after it is a perf term continuing a perf term list: "key=value" with
// a perf key other than event (umask=, cmask=, umask2=, name=, inv=1, ...) or a bare perf
// flag (inv, edge, any, eq, usr, os). Each "event=" starts a new item. So
//   "event=0x0e,umask=0x01,inv,cmask=1,cycles,0E.01"
// is three events; use ';' to be explicit: "event=0x0e,umask=0x01;cycles".
//
// ---- Event files (parse_event_file: nanoBench-style config) ----
//
// One spec per line (any syntax above, usually "EE.UU[.MOD]... NAME"); '#' starts a
// comment; blank lines are ignored. Errors are "FILE:LINE: ...".
//
// ---- Availability (check_event) ----
//
// A named architectural event is unavailable when CPUID.0AH:EBX has its bit set or the
// bit lies beyond the EBX vector length (CPUID.0AH:EAX[31:24]). A fixed-counter event
// whose counter is absent falls back to its general-purpose equivalent (e.g.
// INST_RETIRED.ANY -> C0.00) when that is available; the REF_TSC fallback (3C.01) counts
// at the bus/crystal clock rather than the TSC rate, which the route reports.
//
// ---- Dialects (the PMU the specs are written for) ----
//
// The same text means different things on different PMUs, so the parsers take the
// dialect of the CPU that will count (event_dialect_for: Intel by default):
//   intel      as above.
//   amd        AMD family 10h-16h (K10, Bulldozer, Jaguar): 12-bit event selects
//   amd_zen    AMD family 17h and later (Zen 1-5); as amd, with the Zen event table.
//              EEE.UU / 0EEE.UU nanoBench syntax with EEE up to FFF ("0C1.00", "1C1.02"),
//              event=0x1c1 perf terms, rHHHHHHHHH raw configs (event 7:0 and 35:32, umask
//              15:8, edge 18, inv 23, cmask 31:24, guestonly 40, hostonly 41); modifiers
//              CMSK=n, INV, EDG, CTR=n, USR, OS, HostOnly, GuestOnly (no AnyT, EQ, UMASK2
//              or MSR_*: AMD has none of them). Named events: cycles (76.00), instructions
//              (C0.00; on the IRPerfCount MSR when present), branches (C2.00), branch-misses
//              (C3.00), l1d-accesses (40.00), l1d-misses (41.01 before Zen, 60.C8 on Zen: L2
//              accesses from L1 data-cache misses, as Linux's family-17h table), aperf and
//              mperf (the MPERF/APERF MSRs), tsc. See docs/vendors.md.
//   netburst   Pentium 4 / Xeon (family 0FH without architectural perfmon): events by
//              name with optional event-mask bits, NAME[.MASK[+MASK]...][:u|:k], e.g.
//              branch_retired.MMTP+MMTM, instr_retired, or the generic names instructions,
//              cycles, branches, branch-misses, uops (x86/netburst_regs.h).
//
// Parsing allocates (Vec): call it on the BSP. Event's encoders (perfevtsel,
// fixed_ctrl_group) are allocation-free and safe on any processor.
#pragma once

#include "x86/cpuid.h"
#include "x86/intel_regs.h"

namespace pmulab {

enum class EventDialect : u8 { intel, amd, amd_zen, netburst };
const char* event_dialect_name(EventDialect d);  // "intel", "amd", "amd_zen", "netburst"

enum class EventKind : u8 {
    programmable,  // a general-purpose counter with the event-select fields below
    fixed,         // a fixed-function counter (fixed_counter); may fall back to a GP counter
    tsc,           // the time-stamp counter; needs no PMU counter
};

// How the spec was written (for messages and round-tripping).
enum class EventSyntax : u8 { tsc, name, nanobench, perf_terms, perf_raw };

struct Event {
    static constexpr usize kNameMax = 64;  // including the NUL
    static constexpr unsigned kMaxAux = 2;

    // Display name: the name given after the spec or by name=, else the table name of a
    // named event, else the spec token itself.
    char name[kNameMax] = {};
    EventKind kind = EventKind::programmable;
    EventSyntax syntax = EventSyntax::nanobench;

    // IA32_PERFEVTSELx fields (for kind == fixed: the general-purpose equivalent).
    u16 event_select = 0;  // 8 bits on Intel; 16 leave room for AMD's 12-bit selects
    u8 umask = 0;
    u8 cmask = 0;
    bool inv = false;
    bool edge = false;
    bool usr = true;  // count at CPL 1-3
    bool os = true;   // count at CPL 0

    // kind == fixed: the fixed counter, and whether (event_select, umask) is a usable
    // general-purpose equivalent (gp_equivalent) that counts the same thing at the same
    // rate (gp_equivalent_exact).
    int8_t fixed_counter = -1;
    bool gp_equivalent = false;
    bool gp_equivalent_exact = true;

    // Named architectural events: their ArchEventBit (CPUID.0AH:EBX bit), else -1. Raw
    // specs are never checked against EBX.
    int8_t arch_bit = -1;

    // Placement constraints.
    int8_t pinned_counter = -1;    // .CTR=n: only general-purpose counter n
    bool taken_alone = false;      // must be measured with no other counter event
    u32 allowed_gp = 0xFFFFFFFFu;  // general-purpose counters it may use (bit i = PMCi)
    u8 core_type = kCoreTypeNone;  // cpu_core/cpu_atom prefix: only on that hybrid core type

    // The dialect the spec was parsed in.
    EventDialect dialect = EventDialect::intel;

    // Fields only one vendor's PMU has (the term table, event_terms.h, says which
    // dialect accepts each).
    struct Intel {
        u8 umask2 = 0;     // IA32_PERFEVTSELx[47:40], v6 (CPUID.23H.0:EBX[0])
        bool any = false;  // AnyThread, IA32_PERFEVTSELx[21]
        bool eq = false;   // IA32_PERFEVTSELx[36], v6 (CPUID.23H.0:EBX[1])
        // Model-specific MSRs programmed with the event (nanoBench MSR_* modifiers).
        u8 aux_count = 0;
        MsrValue aux[kMaxAux];
    } intel;
    struct Amd {
        // PerfEvtSel HG_ONLY bits (APM Vol. 2 §13.2.1: GuestOnly 40, HostOnly 41).
        bool guest_only = false;
        bool host_only = false;
    } amd;
    struct NetBurst {
        int8_t event = -1;  // netburst::EventId
        u16 mask = 0;       // its ESCR event mask
    } netburst;

    // Interrupt on overflow (PERFEVTSELx.INT, FIXED_CTR_CTRL PMI, AMD PERF_CTL.INT): set
    // by the engine for a sampled or cycle-by-cycle counter (measure/sampling.h), never by
    // an event spec. The families program it; every other event counts without it.
    bool pmi = false;

    // The general-purpose encoding (EN clear, INT clear): event select, UMASK, USR/OS,
    // E, AnyThread, INV, CMASK, EQ, UMASK2.
    regs::PerfEvtSel perfevtsel() const;
    // The 4-bit IA32_FIXED_CTR_CTRL group for a fixed counter (OS, USR, AnyThread; PMI clear).
    u64 fixed_ctrl_group() const;
    // Whether the event could sit on a fixed counter (kind fixed).
    bool wants_fixed() const { return kind == EventKind::fixed && fixed_counter >= 0; }
    bool needs_counter() const { return kind != EventKind::tsc; }
};

// Parses one spec (see the top of this header). Errc::invalid_argument on bad syntax.
Result<Event> parse_event_spec(StrView spec, EventDialect dialect = EventDialect::intel);

// Parses a --events value into `out` (appending). The first bad item fails the parse:
// "event list item 2: event spec '0E.1G': UMASK '1G' is not hex (at offset 3)" (one offset: in the
// quoted item).
inline constexpr usize kMaxEventsPerList = 256;
Status parse_event_list(StrView text, Vec<Event>* out, EventDialect dialect = EventDialect::intel);
// The splitting step alone (the rule above): each item's [begin, end) in `text`;
// errors for empty items and for more than kMaxEventsPerList. Shared with the
// event-file resolver (event_files.h) so that both split lists the same way.
struct EventListItem {
    usize begin = 0, end = 0;
};
Status split_event_list(StrView text, Vec<EventListItem>* items);

// Parses an event file (see above) into `out` (appending). `file_name` prefixes errors.
// A file without any event is an error.
Status parse_event_file(StrView text, const char* file_name, Vec<Event>* out,
                        EventDialect dialect = EventDialect::intel);

// The dialect for a CPU: AMD/Hygon by family (17h and later: amd_zen), NetBurst for
// Intel family 0FH without architectural perfmon, else intel.
EventDialect event_dialect_for(const CpuIdentity& id, const PmuCaps& caps);

// Where an available event is counted on this CPU.
enum class EventRoute : u8 {
    fixed,        // its fixed counter
    gp,           // a general-purpose counter
    gp_fallback,  // a fixed-counter event on a GP counter, with its GP equivalent encoding
    none,         // tsc
};
const char* event_route_name(EventRoute r);

// Checks an event against this CPU's PMU: architectural availability (CPUID.0AH:EBX,
// EBX length), fixed counter presence and fallback, counter pins and allowed masks,
// AnyThread / EQ / UMASK2 support, hybrid core type. core_type is the logical
// processor's CPUID.1AH core type (kCoreTypeNone on non-hybrid CPUs). Errors are
// Errc::unsupported and name the event and the reason.
Result<EventRoute> check_event(const Event& e, const PmuCaps& caps, u8 core_type = kCoreTypeNone);

// The counters an event that passed check_event may use on this CPU (bit i = PMCi /
// FIXED_CTRi): for a fixed-counter event its fixed counter when present, plus general-
// purpose counters for its GP equivalent when that counts the same at the same rate
// (or the fixed counter is absent); otherwise the GP counters its pin and allowed mask
// leave. Both 0 for tsc.
struct EventCounters {
    u32 gp = 0;
    u32 fixed = 0;
};
EventCounters event_counters(const Event& e, const PmuCaps& caps);

// The named-event table, for help output: one line per event
// "NAME  EE.UU  description".
void list_named_events(StrBuf& out);
// The named events of another dialect (same format; NetBurst lines give the event
// select, ESCRs and mask bits).
void list_named_events(StrBuf& out, EventDialect dialect);

// Writes the event's encoding in nanoBench form with pmulab's extensions, e.g.
// "0E.01.CMSK=1.INV.CTR=2" (".USR"/".OS" appear only when not both are counted);
// fixed events print "FIXED_CTRn=EE.UU" (their counter and GP equivalent), "tsc" for tsc.
void put_event_encoding(StrBuf& out, const Event& e);

// "event 'NAME' <reason>" as an Errc::unsupported error: what the CPU or its PMU
// cannot do with an event (shared by the availability checks and the backends).
Error event_unsupported(const Event& e, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

}  // namespace pmulab
