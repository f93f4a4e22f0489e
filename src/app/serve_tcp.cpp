#include "app/serve_tcp.h"

namespace pmulab {

namespace {

// A decimal number of 1..3 digits at text[*i], at most `max`.
bool take_number(StrView text, usize* i, u32 max, u32* out) {
    usize start = *i;
    u32 v = 0;
    while (*i < text.len && text[*i] >= '0' && text[*i] <= '9' && *i - start < 3) {
        v = v * 10 + u32(text[*i] - '0');
        ++*i;
    }
    if (*i == start || (*i < text.len && text[*i] >= '0' && text[*i] <= '9')) return false;
    if (*i - start > 1 && text[start] == '0') return false;  // no leading zeros (not octal)
    *out = v;
    return v <= max;
}

}  // namespace

Status parse_ipv4_prefix(const char* option, StrView text, u8 addr[4], u8* prefix) {
    auto bad = [&](const char* why) {
        return Error::make(Errc::invalid_argument, "%s: '%.*s' is not an IPv4 address A.B.C.D or A.B.C.D/N (%s)",
                           option, int(text.len > 64 ? 64 : text.len), text.ptr, why);
    };
    usize i = 0;
    u8 a[4];
    for (int k = 0; k < 4; ++k) {
        u32 v = 0;
        if (k && (i >= text.len || text[i++] != '.')) return bad("four numbers separated by dots");
        if (!take_number(text, &i, 255, &v)) return bad("each number 0-255, without leading zeros");
        a[k] = u8(v);
    }
    u32 n = 24;
    if (i < text.len) {
        if (text[i++] != '/') return bad("text after the address");
        if (!take_number(text, &i, 32, &n) || n == 0) return bad("the prefix length N is 1-32");
        if (i != text.len) return bad("text after the prefix length");
    }
    u8 mask[4];
    ipv4_mask(u8(n), mask);
    bool host_zero = true, host_ones = true;
    for (int k = 0; k < 4; ++k) {
        if (a[k] & u8(~mask[k])) host_zero = false;
        if ((a[k] | mask[k]) != 0xff) host_ones = false;
    }
    if (a[0] == 0 || a[0] == 127 || a[0] >= 224) return bad("not a unicast host address");
    if (n < 31 && (host_zero || host_ones)) return bad("the network's own or broadcast address, not a host's");
    for (int k = 0; k < 4; ++k) addr[k] = a[k];
    *prefix = u8(n);
    return ok_status();
}

void ipv4_mask(u8 prefix, u8 mask[4]) {
    // The leading `n` bits of a byte set, n = 0..8.
    static constexpr u8 kLeading[9] = {0x00, 0x80, 0xc0, 0xe0, 0xf0, 0xf8, 0xfc, 0xfe, 0xff};
    for (int k = 0; k < 4; ++k) {
        int bits = int(prefix) - 8 * k;
        mask[k] = kLeading[bits < 0 ? 0 : bits > 8 ? 8 : bits];
    }
}

}  // namespace pmulab
