// What the KEY[=VALUE] items of the event syntax mean, declared once as data: nanoBench
// modifiers (0E.01.CMSK=1.INV), perf terms (event=0x0e,umask=0x01,inv) and the modifiers
// of event files (\pmulab\events) are rows of one table, each an Event field under its
// name in each syntax; each dialect says which of the fields its PMU has and how wide
// its event select is (compare Linux arch/x86/events/amd/core.c,
// PMU_FORMAT_ATTR(event, "config:0-7,32-35"): a PMU's fields declared once).
// Internal to src/events: the parsers (event_spec.cpp, event_table.cpp) use it.
#pragma once

#include "events/spec_lexer.h"

namespace pmulab::spec {

// The Event field a term sets.
enum class EventField : u8 {
    event,  // event_select
    umask,
    cmask,
    umask2,
    inv,
    edge,
    any,  // AnyThread
    eq,
    usr,  // privilege: the modes given replace the default (both)
    os,
    host_only,
    guest_only,
    name,     // the display name
    counter,  // specs: pinned_counter (CTR=n); event files: allowed_gp (CTR=n|a-b|0xMASK)
    taken_alone,
    aux_msr,  // an extra MSR and its value (aux); the event is measured alone
};

// The PMUs that have a field (DialectFormat::on).
enum : u8 { kOnIntel = 1, kOnAmd = 2, kOnBoth = kOnIntel | kOnAmd };

struct TermDef {
    EventField field;
    const char* nb;    // nanoBench modifier key (EE.UU.KEY[=v]), or null
    const char* perf;  // perf term key (KEY[=v]), or null
    bool value;        // takes =VALUE; else a flag (nanoBench: bare; perf: bare, =0 or =1)
    u8 on;             // the PMUs that have it
    bool in_files;     // a modifier of event files (written from Intel's perfmon data)
    bool on_fixed;     // event files: allowed on FIXED_CTRn
    u32 msr;           // aux_msr: the MSR
};
extern const TermDef kTerms[];
extern const usize kTermCount;

// A dialect's event-select layout.
struct DialectFormat {
    u8 on;                   // kOnIntel or kOnAmd: the rows of kTerms it has
    u16 event_max;           // 0xFF (8-bit Intel event selects) or 0xFFF (12-bit AMD ones)
    const char* nb_range;    // "Intel event selects are 00-FF"
    const char* perf_range;  // "Intel event selects are 0x00-0xff"
    const char* nb_known;    // the nanoBench modifiers, for "unknown modifier" messages
};
// NetBurst has no raw event syntax (its parsers refuse it first): Intel's.
const DialectFormat& dialect_format(EventDialect d);

// Which items are being read.
enum class TermSyntax : u8 {
    nanobench,         // event specs: EE.UU.MOD...
    perf,              // event specs: KEY=VALUE,... (alone or inside cpu/.../)
    event_file,        // event files: EE.UU.MOD...
    event_file_fixed,  // event files: FIXED_CTRn.MOD...
};

// The row of `key` (case-insensitive) in a syntax, or null.
const TermDef* find_term(TermSyntax syn, StrView key);

// What a list of items has set so far.
struct TermState {
    u32 seen = 0;    // rows given (bit = index in kTerms)
    u32 fields = 0;  // fields given (bit = EventField)
    bool want_usr = false, want_os = false;
    bool has(EventField f) const { return (fields >> unsigned(f)) & 1; }
};

// Parses the items of `text` (at offset `base` in the spec) separated by '.' (nanoBench
// and event-file modifiers) or ',' (perf terms) into e. Call finish_terms() after the
// last list of an event.
Status parse_terms(const SpecSite& site, TermSyntax syn, StrView text, usize base, TermState* st, Event* e);
// Applies the privilege terms (usr/os, USR/OS): given ones replace the default.
Status finish_terms(const SpecSite& site, usize base, const TermState& st, Event* e);

}  // namespace pmulab::spec
