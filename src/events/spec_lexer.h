// The lexer of pmulab's event syntax, shared by the two parsers that read it: event
// specs (event_spec.cpp: --events, event list files) and the event files of
// \pmulab\events (event_table.cpp). Internal to src/events.
//
// It holds the character classes, the quoting of text in messages, the place an error
// is reported at (SpecSite), the split of a spec into its token and display name, the
// classification of a token (which syntax it is written in), and perf's ':u'/':k'
// privilege modifiers. What the KEY[=VALUE] items of nanoBench modifiers and perf terms
// mean is event_terms.h.
#pragma once

#include "events/events.h"

namespace pmulab::spec {

// AMD's two dialects (before Zen, Zen) read the same syntax.
inline bool is_amd(EventDialect d) { return d == EventDialect::amd || d == EventDialect::amd_zen; }

// ---- characters ----

inline bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }
inline bool is_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
inline bool printable(char c) { return u8(c) >= 0x20 && u8(c) < 0x7F; }
bool all_hex(StrView s);     // non-empty, hex digits only
bool all_digits(StrView s);  // non-empty, decimal digits only
// Display names: letters, digits and _ . - : + @ ( ) [ ]. Separators of lists and
// specs (, ; / = # whitespace) are excluded so that a name cannot swallow other items.
bool name_char(char c);

// ---- numbers ----

// Hex digits with an optional 0x prefix, at most `max`.
bool parse_hex_u32(StrView s, u32 max, u32* out);

// ---- near misses ----

// Levenshtein distance between a and b ignoring ASCII case (insert, delete, substitute:
// 1 each), or limit + 1 when it is over `limit` or a string is over 64 characters.
usize edit_distance_nocase(StrView a, StrView b, usize limit);

// ---- quoting ----

// Copies s for quoting in a message: at most `max` characters ("..." when cut);
// non-printable characters become '?'.
void clip(StrView s, char* buf, usize cap, usize max = 40);
// clip() into a buffer of its own: Quote q(s); ... "'%s'", q.s
struct Quote {
    char s[48];
    explicit Quote(StrView v) { clip(v, s, sizeof s); }
};

// ---- where errors are reported ----

// An event spec ("event spec 'SPEC': MSG (at offset N)", N from 0 in the quoted spec) or
// a line of an event file ("PATH:LINE: MSG"; offsets are not reported there). `dialect`
// is the PMU the text is written for.
struct SpecSite {
    StrView spec;
    const char* path = nullptr;  // set: an event file's line
    u32 line = 0;
    EventDialect dialect = EventDialect::intel;

    static SpecSite of_spec(StrView spec, EventDialect d) { return SpecSite{spec, nullptr, 0, d}; }
    static SpecSite of_line(const char* path, u32 line) { return SpecSite{StrView(), path, line, EventDialect::intel}; }
    Error fail(usize off, const char* fmt, ...) const __attribute__((format(printf, 3, 4)));
};

// ---- pieces ----

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

// Splits s at whitespace into words (at most `max`); returns the count, or max + 1
// when there are more.
usize split_words(StrView s, StrView* words, usize max);

// A (trimmed) spec: its token and the optional display name after whitespace.
struct SpecWords {
    StrView tok;
    StrView name;  // empty when none
    usize name_off = 0;
};
// Splits a spec and checks its display name (at most one word of name_char characters,
// shorter than Event::kNameMax). Does not look at the token.
Status split_spec_words(const SpecSite& site, StrView s, SpecWords* out);
// The check of a display name (name= or the word after the token) at `off`.
Status check_name(const SpecSite& site, StrView name, usize off);

// The syntax a spec token is written in, by its shape alone (events.h): the order
// decides ("0E.01" is nanoBench although it could be a name).
enum class TokenForm : u8 { tsc, nanobench, pmu, perf_terms, perf_raw, name };
TokenForm classify_token(StrView tok);

// perf privilege modifiers after ':' (after_colon) or after a PMU's closing '/': 'u'
// (USR only) and 'k' (OS only); sets e->usr and e->os when any is given.
Status parse_priv_mods(const SpecSite& site, StrView mods, usize base, bool after_colon, Event* e);

}  // namespace pmulab::spec
