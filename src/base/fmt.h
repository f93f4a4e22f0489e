// Text building without a C library: a growable buffer with printf-style
// formatting (subset: %d %i %u %x %X %o %c %s %p %% with flags '-', '0', width,
// precision for %s, and length modifiers l, ll, z).
#pragma once

#include <stdarg.h>

#include "base/base.h"

namespace pmulab {

class StrBuf {
public:
    StrBuf() = default;
    StrBuf(const StrBuf&) = delete;
    StrBuf& operator=(const StrBuf&) = delete;
    StrBuf(StrBuf&& o) noexcept : v_(move(o.v_)) {}
    StrBuf& operator=(StrBuf&& o) noexcept {
        v_ = move(o.v_);
        return *this;
    }

    StrBuf& put(char c);
    StrBuf& put(StrView s);
    StrBuf& printf(const char* fmt, ...) __attribute__((format(printf, 2, 3)));
    StrBuf& vprintf(const char* fmt, va_list ap);
    // Pads with spaces to `width` columns (left-aligned text).
    StrBuf& pad_to(usize column_start, usize width);

    const char* c_str() const;  // always NUL-terminated
    usize size() const { return v_.size(); }
    StrView view() const { return StrView(v_.data(), v_.size()); }
    void clear() { v_.clear(); }
    void truncate(usize n) {
        if (n < v_.size()) v_.resize(n);
    }

private:
    mutable Vec<char> v_;
};

// Formats into a fixed buffer, truncating; always NUL-terminates (cap > 0).
// Returns the length written (excluding the NUL).
usize format_to(char* buf, usize cap, const char* fmt, ...) __attribute__((format(printf, 3, 4)));
usize vformat_to(char* buf, usize cap, const char* fmt, va_list ap);

// Appends `s` with control characters (bytes below 0x20, and 0x7F) written as \xNN,
// so that text from arguments cannot move the cursor or forge lines on a console.
void put_escaped(StrBuf& out, StrView s);

// Fixed-point decimal: value/scale printed with `decimals` digits, rounded half away from zero.
// Exact for all i64 inputs; used for per-iteration results.
void put_fixed(StrBuf& out, i64 numerator, u64 denominator, unsigned decimals);
// Ascending indices as ranges: "0-3,6".
void put_index_ranges(StrBuf& out, const u32* v, usize n);
// Logical processors for messages and headers: "CPU 3", "CPUs 0-3,6".
void put_cpu_list(StrBuf& out, const Vec<u32>& cpus);

// Parses unsigned integers: decimal, 0x hex, with optional size suffixes K/M/G (binary)
// when allow_suffix. Rejects empty input, junk and overflow.
bool parse_u64(StrView s, u64* out, bool allow_suffix = false);
// Parses hex digits only (no prefix).
bool parse_hex_u64(StrView s, u64* out);

}  // namespace pmulab
