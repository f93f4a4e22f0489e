#include "base/base.h"

namespace pmulab {

usize str_len(const char* s) {
    usize n = 0;
    while (s[n]) ++n;
    return n;
}

bool str_eq(const char* a, const char* b) { return StrView(a).eq(StrView(b)); }
bool str_eq_nocase(const char* a, const char* b) { return StrView(a).eq_nocase(StrView(b)); }
bool str_starts_with(const char* s, const char* p) { return StrView(s).starts_with(StrView(p)); }

void str_copy(char* dst, usize cap, const char* src) {
    usize i = 0;
    for (; src[i] && i + 1 < cap; ++i) dst[i] = src[i];
    dst[i] = 0;
}

char ascii_lower(char c) { return (c >= 'A' && c <= 'Z') ? char(c - 'A' + 'a') : c; }

bool StrView::eq(StrView o) const {
    if (len != o.len) return false;
    for (usize i = 0; i < len; ++i)
        if (ptr[i] != o.ptr[i]) return false;
    return true;
}

bool StrView::eq_nocase(StrView o) const {
    if (len != o.len) return false;
    for (usize i = 0; i < len; ++i)
        if (ascii_lower(ptr[i]) != ascii_lower(o.ptr[i])) return false;
    return true;
}

bool StrView::starts_with(StrView p) const { return p.len <= len && StrView(ptr, p.len).eq(p); }

StrView StrView::sub(usize from, usize n) const {
    if (from > len) from = len;
    usize rest = len - from;
    return StrView(ptr + from, n < rest ? n : rest);
}

StrView StrView::trim() const {
    usize b = 0, e = len;
    auto ws = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
    while (b < e && ws(ptr[b])) ++b;
    while (e > b && ws(ptr[e - 1])) --e;
    return StrView(ptr + b, e - b);
}

usize StrView::find(char c, usize from) const {
    for (usize i = from; i < len; ++i)
        if (ptr[i] == c) return i;
    return len;
}

}  // namespace pmulab
