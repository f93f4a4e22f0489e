#include "base/fmt.h"

namespace pmulab {

namespace {

// Output sink used by the formatter: either a StrBuf or a fixed buffer.
struct Sink {
    StrBuf* sb = nullptr;
    char* buf = nullptr;
    usize cap = 0;
    usize n = 0;
    void put(char c) {
        if (sb) {
            sb->put(c);
        } else if (n + 1 < cap) {
            buf[n] = c;
        }
        ++n;
    }
};

void emit_padded(Sink& s, const char* digits, usize len, int width, bool left, char padc, const char* prefix) {
    usize plen = prefix ? str_len(prefix) : 0;
    int pad = width - int(len + plen);
    if (!left && padc == ' ')
        for (; pad > 0; --pad) s.put(' ');
    for (usize i = 0; i < plen; ++i) s.put(prefix[i]);
    if (!left && padc == '0')
        for (; pad > 0; --pad) s.put('0');
    for (usize i = 0; i < len; ++i) s.put(digits[i]);
    if (left)
        for (; pad > 0; --pad) s.put(' ');
}

// The variable arguments, passed by reference between the formatter's steps.
struct Args {
    va_list ap;
};

// One conversion: %[flags][width][.precision][length]conv.
struct Conv {
    bool left = false, alt = false;
    char padc = ' ';
    int width = 0;
    int prec = -1;
    int lng = 0;  // count of 'l' (z counts as 2)
    char conv = 0;
};

// A number of digits, or '*' for an int argument.
int parse_count(const char*& p, Args& a) {
    int v = 0;
    if (*p == '*') {
        ++p;
        return va_arg(a.ap, int);
    }
    while (*p >= '0' && *p <= '9') v = v * 10 + (*p++ - '0');
    return v;
}

// Parses the conversion after '%'; returns where its conversion character is.
const char* parse_conv(const char* p, Args& a, Conv* c) {
    for (;; ++p) {
        if (*p == '-') c->left = true;
        else if (*p == '0') c->padc = '0';
        else if (*p == '#') c->alt = true;
        else break;
    }
    c->width = parse_count(p, a);
    if (*p == '.') {
        ++p;
        c->prec = parse_count(p, a);
    }
    while (*p == 'l') {
        ++c->lng;
        ++p;
    }
    if (*p == 'z') {
        c->lng = 2;
        ++p;
    }
    c->conv = *p;
    return p;
}

// The digits of v in `base`, right-aligned in tmp; returns how many.
usize to_digits(u64 v, unsigned base, const char* dig, char (&tmp)[24]) {
    usize n = 0;
    do {
        tmp[sizeof tmp - 1 - n++] = dig[v % base];
        v /= base;
    } while (v);
    return n;
}

void put_integer(Sink& s, const Conv& c, Args& a) {
    char tmp[24];
    if (c.conv == 'd' || c.conv == 'i') {
        i64 v = c.lng ? va_arg(a.ap, i64) : va_arg(a.ap, int);
        u64 mag = v < 0 ? u64(0) - u64(v) : u64(v);
        usize n = to_digits(mag, 10, "0123456789", tmp);
        emit_padded(s, tmp + sizeof tmp - n, n, c.width, c.left, c.padc, v < 0 ? "-" : nullptr);
        return;
    }
    u64 v;
    if (c.conv == 'p') v = u64(uintptr_t(va_arg(a.ap, void*)));
    else v = c.lng ? va_arg(a.ap, u64) : va_arg(a.ap, unsigned);
    unsigned base = c.conv == 'u' ? 10 : c.conv == 'o' ? 8 : 16;
    usize n = to_digits(v, base, c.conv == 'X' ? "0123456789ABCDEF" : "0123456789abcdef", tmp);
    const char* prefix = (c.alt || c.conv == 'p') && base == 16 ? "0x" : nullptr;
    emit_padded(s, tmp + sizeof tmp - n, n, c.width, c.left, c.padc, prefix);
}

void put_conv(Sink& s, const Conv& c, Args& a) {
    switch (c.conv) {
        case 'd':
        case 'i':
        case 'u':
        case 'x':
        case 'X':
        case 'o':
        case 'p': put_integer(s, c, a); break;
        case 'c': {
            char ch = char(va_arg(a.ap, int));
            emit_padded(s, &ch, 1, c.width, c.left, ' ', nullptr);
            break;
        }
        case 's': {
            const char* str = va_arg(a.ap, const char*);
            if (!str) str = "(null)";
            usize n = 0;
            // Precision first: "%.*s" may point into text with no NUL after it.
            while ((c.prec < 0 || n < usize(c.prec)) && str[n]) ++n;
            emit_padded(s, str, n, c.width, c.left, ' ', nullptr);
            break;
        }
        case '%': s.put('%'); break;
        default:
            s.put('%');
            s.put(c.conv);
            break;
    }
}

void vformat(Sink& s, const char* fmt, va_list ap) {
    Args a;
    va_copy(a.ap, ap);
    for (const char* p = fmt; *p; ++p) {
        if (*p != '%') {
            s.put(*p);
            continue;
        }
        Conv c;
        p = parse_conv(p + 1, a, &c);
        if (!c.conv) break;
        put_conv(s, c, a);
    }
    va_end(a.ap);
}

}  // namespace

StrBuf& StrBuf::put(char c) {
    v_.push(c);
    return *this;
}

StrBuf& StrBuf::put(StrView s) {
    v_.reserve(v_.size() + s.len + 1);
    for (usize i = 0; i < s.len; ++i) v_.push(s.ptr[i]);
    return *this;
}

StrBuf& StrBuf::printf(const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    return *this;
}

StrBuf& StrBuf::vprintf(const char* fmt, va_list ap) {
    Sink s;
    s.sb = this;
    vformat(s, fmt, ap);
    return *this;
}

StrBuf& StrBuf::pad_to(usize column_start, usize width) {
    while (v_.size() < column_start + width) v_.push(' ');
    return *this;
}

const char* StrBuf::c_str() const {
    v_.push(0);
    v_.pop();
    return v_.data();
}

usize vformat_to(char* buf, usize cap, const char* fmt, va_list ap) {
    Sink s;
    s.buf = buf;
    s.cap = cap;
    vformat(s, fmt, ap);
    usize end = s.n < cap ? s.n : cap - 1;
    buf[end] = 0;
    return end;
}

usize format_to(char* buf, usize cap, const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    usize n = vformat_to(buf, cap, fmt, ap);
    va_end(ap);
    return n;
}

void put_fixed(StrBuf& out, i64 num, u64 den, unsigned decimals) {
    if (den == 0) {
        out.put("nan");
        return;
    }
    if (decimals > 18) decimals = 18;
    bool neg = num < 0;
    u64 mag = neg ? u64(0) - u64(num) : u64(num);
    // Keep rem * 10 within 64 bits (no 128-bit division in the freestanding build).
    while (den > (u64(1) << 59)) {
        den >>= 1;
        mag >>= 1;
    }
    u64 ip = mag / den;
    u64 rem = mag % den;
    char digits[20];
    for (unsigned i = 0; i < decimals; ++i) {
        rem *= 10;
        digits[i] = char('0' + rem / den);
        rem %= den;
    }
    // Round half away from zero, carrying into the integer part.
    if (rem * 2 >= den) {
        int i = int(decimals) - 1;
        for (; i >= 0; --i) {
            if (digits[i] == '9') {
                digits[i] = '0';
            } else {
                ++digits[i];
                break;
            }
        }
        if (i < 0) ++ip;
    }
    bool all_zero = ip == 0;
    for (unsigned i = 0; i < decimals; ++i) all_zero &= digits[i] == '0';
    if (neg && !all_zero) out.put('-');
    out.printf("%llu", (unsigned long long)ip);
    if (decimals) {
        out.put('.');
        out.put(StrView(digits, decimals));
    }
}

static int digit_val(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    c = ascii_lower(c);
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

bool parse_hex_u64(StrView s, u64* out) {
    if (s.empty() || s.len > 16) return false;
    u64 v = 0;
    for (usize i = 0; i < s.len; ++i) {
        int d = digit_val(s[i]);
        if (d < 0) return false;
        v = v << 4 | u64(d);
    }
    *out = v;
    return true;
}

bool parse_u64(StrView s, u64* out, bool allow_suffix) {
    if (s.empty()) return false;
    u64 mult = 1;
    if (allow_suffix) {
        char last = s[s.len - 1];
        if (last == 'K' || last == 'k') mult = u64(1) << 10;
        else if (last == 'M' || last == 'm') mult = u64(1) << 20;
        else if (last == 'G' || last == 'g') mult = u64(1) << 30;
        if (mult != 1) s = s.sub(0, s.len - 1);
        if (s.empty()) return false;
    }
    unsigned base = 10;
    if (s.len > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        base = 16;
        s = s.sub(2);
    }
    u64 v = 0;
    for (usize i = 0; i < s.len; ++i) {
        int d = digit_val(s[i]);
        if (d < 0 || unsigned(d) >= base) return false;
        if (v > (~u64(0) - u64(d)) / base) return false;
        v = v * base + u64(d);
    }
    if (mult != 1 && v > ~u64(0) / mult) return false;
    *out = v * mult;
    return true;
}

void put_index_ranges(StrBuf& out, const u32* v, usize n) {
    for (usize i = 0; i < n;) {
        usize j = i;
        while (j + 1 < n && v[j + 1] == v[j] + 1) ++j;
        if (i) out.put(',');
        if (j == i) out.printf("%u", v[i]);
        else out.printf("%u-%u", v[i], v[j]);
        i = j + 1;
    }
}

void put_cpu_list(StrBuf& out, const Vec<u32>& cpus) {
    out.put(cpus.size() == 1 ? "CPU " : "CPUs ");
    put_index_ranges(out, cpus.data(), cpus.size());
}

void put_escaped(StrBuf& out, StrView s) {
    static const char kHex[] = "0123456789abcdef";
    for (usize i = 0; i < s.len; ++i) {
        u8 c = u8(s[i]);
        if (c < 0x20 || c == 0x7F) {
            out.put('\\').put('x').put(kHex[c >> 4]).put(kHex[c & 15]);
        } else {
            out.put(char(c));
        }
    }
}

}  // namespace pmulab
