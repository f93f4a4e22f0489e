// The event-syntax lexer shared by event specs and event files; see spec_lexer.h.
#include "events/spec_lexer.h"

#include <stdarg.h>

namespace pmulab::spec {

bool all_hex(StrView s) {
    if (s.empty()) return false;
    for (usize i = 0; i < s.len; ++i)
        if (!is_hex(s[i])) return false;
    return true;
}

bool all_digits(StrView s) {
    if (s.empty()) return false;
    for (usize i = 0; i < s.len; ++i)
        if (s[i] < '0' || s[i] > '9') return false;
    return true;
}

bool name_char(char c) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
    switch (c) {
        case '_':
        case '.':
        case '-':
        case ':':
        case '+':
        case '@':
        case '(':
        case ')':
        case '[':
        case ']': return true;
        default: return false;
    }
}

bool parse_hex_u32(StrView s, u32 max, u32* out) {
    if (s.len > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) s = s.sub(2);
    u64 v = 0;
    if (s.empty() || s.len > 16 || !parse_hex_u64(s, &v) || v > max) return false;
    *out = u32(v);
    return true;
}

void clip(StrView s, char* buf, usize cap, usize max) {
    usize n = s.len;
    bool cut = n > max;
    if (cut) n = max - 3;
    usize o = 0;
    for (usize i = 0; i < n && o + 1 < cap; ++i) buf[o++] = printable(s[i]) ? s[i] : '?';
    if (cut)
        for (int k = 0; k < 3 && o + 1 < cap; ++k) buf[o++] = '.';
    buf[o] = 0;
}

usize edit_distance_nocase(StrView a, StrView b, usize limit) {
    constexpr usize kMax = 64;
    if (a.len > kMax || b.len > kMax || (a.len > b.len ? a.len - b.len : b.len - a.len) > limit) return limit + 1;
    usize row[kMax + 1];  // row[j]: the distance between a[0..i) and b[0..j)
    for (usize j = 0; j <= b.len; ++j) row[j] = j;
    for (usize i = 1; i <= a.len; ++i) {
        usize diag = row[0], best = i;
        row[0] = i;
        for (usize j = 1; j <= b.len; ++j) {
            usize up = row[j];
            usize sub = diag + (ascii_lower(a[i - 1]) != ascii_lower(b[j - 1]) ? 1 : 0);
            usize v = sub < up + 1 ? sub : up + 1;
            row[j] = v < row[j - 1] + 1 ? v : row[j - 1] + 1;
            diag = up;
            if (row[j] < best) best = row[j];
        }
        if (best > limit) return limit + 1;  // no later row gets below its minimum
    }
    return row[b.len] > limit ? limit + 1 : row[b.len];
}

Error SpecSite::fail(usize off, const char* fmt, ...) const {
    char msg[sizeof(Error::msg)];
    va_list ap;
    va_start(ap, fmt);
    vformat_to(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (path) return Error::make(Errc::invalid_argument, "%s:%u: %s", path, line, msg);
    Quote q(spec);
    return Error::make(Errc::invalid_argument, "event spec '%s': %s (at offset %zu)", q.s, msg, off);
}

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

Status check_name(const SpecSite& site, StrView name, usize off) {
    for (usize i = 0; i < name.len; ++i) {
        if (name_char(name[i])) continue;
        Quote q(name);
        return site.fail(off + i, "event name '%s' contains '%c' (names use letters, digits and _ . - : + @ ( ) [ ])",
                         q.s, printable(name[i]) ? name[i] : '?');
    }
    return ok_status();
}

Status split_spec_words(const SpecSite& site, StrView s, SpecWords* out) {
    *out = SpecWords{};
    usize t = 0;
    while (t < s.len && !is_ws(s[t])) ++t;
    out->tok = s.sub(0, t);
    usize n0 = t;
    while (n0 < s.len && is_ws(s[n0])) ++n0;
    if (n0 >= s.len) return ok_status();
    if (out->tok.len && out->tok[out->tok.len - 1] == ',')
        return site.fail(t, "space after ',' in perf terms; write them without spaces (event=0x0e,umask=0x01)");
    usize n1 = n0;
    while (n1 < s.len && !is_ws(s[n1])) ++n1;
    StrView name = s.sub(n0, n1 - n0);
    usize r = n1;
    while (r < s.len && is_ws(s[r])) ++r;
    if (r < s.len) {
        Quote q1(s.sub(r)), q2(name);
        return site.fail(r, "unexpected '%s' after the event name '%s'", q1.s, q2.s);
    }
    if (name.len >= Event::kNameMax)
        return site.fail(n0, "event name is too long (%zu characters; at most %zu)", name.len, Event::kNameMax - 1);
    PMULAB_TRY(check_name(site, name, n0));
    out->name = name;
    out->name_off = n0;
    return ok_status();
}

TokenForm classify_token(StrView tok) {
    if (tok.eq_nocase("tsc")) return TokenForm::tsc;
    usize dot = tok.find('.');
    if (dot > 0 && dot < tok.len && all_hex(tok.sub(0, dot))) return TokenForm::nanobench;
    if (tok.find('/') < tok.len) return TokenForm::pmu;
    if (tok.find('=') < tok.len || tok.find(',') < tok.len) return TokenForm::perf_terms;
    usize colon = tok.find(':');
    if (tok.len >= 2 && tok[0] == 'r' && colon > 1 && all_hex(tok.sub(1, colon - 1))) return TokenForm::perf_raw;
    return TokenForm::name;
}

Status parse_priv_mods(const SpecSite& site, StrView mods, usize base, bool after_colon, Event* e) {
    if (mods.empty()) {
        if (after_colon) return site.fail(base, "empty modifier list after ':' (expected u or k)");
        return ok_status();
    }
    bool u = false, k = false;
    for (usize i = 0; i < mods.len; ++i) {
        char c = mods[i];
        bool* slot = c == 'u' ? &u : c == 'k' ? &k : nullptr;
        if (!slot) {
            char q[2] = {printable(c) ? c : '?', 0};
            return site.fail(base + i, "unsupported modifier '%s' (pmulab accepts u and k)", q);
        }
        if (*slot) return site.fail(base + i, "modifier '%c' given twice", c);
        *slot = true;
    }
    e->usr = u;
    e->os = k;
    return ok_status();
}

}  // namespace pmulab::spec
