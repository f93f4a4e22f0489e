#include "x86_insn.h"

#include "x86_length.h"

namespace pmulab::x86insn {

namespace {

bool legacy_prefix(uint8_t b) {
    switch (b) {
        case 0x26:
        case 0x2E:
        case 0x36:
        case 0x3E:
        case 0x64:
        case 0x65:
        case 0x66:
        case 0x67:
        case 0xF0:
        case 0xF2:
        case 0xF3: return true;
        default: return false;
    }
}

// ModRM.reg of the byte after the opcode (8 when there is none).
unsigned modrm_reg(const uint8_t* p, size_t at, size_t size) { return at + 1 < size ? (p[at + 1] >> 3) & 7 : 8; }
bool modrm_mem(const uint8_t* p, size_t at, size_t size) { return at + 1 < size && (p[at + 1] >> 6) != 3; }

// The two-byte map (0F xx): `at` indexes the byte after 0F.
Kind two_byte(const uint8_t* p, size_t at, size_t size, bool opsize, bool rep) {
    uint8_t op = p[at];
    if (op >= 0x80 && op <= 0x8F) return Kind::jcc;
    switch (op) {
        case 0x30: return Kind::wrmsr;
        case 0x31: return Kind::rdtsc;
        case 0x32: return Kind::rdmsr;
        case 0x33: return Kind::rdpmc;
        case 0xA2: return Kind::cpuid;
        case 0x05:
        case 0x07:
        case 0x34:
        case 0x35: return Kind::far;
        case 0x08: return Kind::invd;
        case 0x0B: return Kind::trap;  // UD2
        case 0x09: return Kind::wbinvd;
        case 0x01:
            if (at + 1 < size && p[at + 1] == 0xF9) return Kind::rdtscp;
            if (at + 1 < size && p[at + 1] == 0xE8 && !opsize && !rep) return Kind::serialize;
            return Kind::plain;
        case 0xAE:
            if (modrm_reg(p, at, size) == 7 && modrm_mem(p, at, size) && !rep) return Kind::clflush;
            return Kind::plain;
        default: return Kind::plain;
    }
}

Kind one_byte(const uint8_t* p, size_t at, size_t size, bool rep) {
    uint8_t op = p[at];
    if (rep && ((op >= 0xA4 && op <= 0xA7) || (op >= 0xAA && op <= 0xAF) || (op >= 0x6C && op <= 0x6F)))
        return Kind::rep_string;
    if (op >= 0x70 && op <= 0x7F) return Kind::jcc;
    if (op >= 0xE0 && op <= 0xE3) return Kind::jcc;  // LOOPNE, LOOPE, LOOP, JrCXZ
    switch (op) {
        case 0xEB:
        case 0xE9: return Kind::jmp;
        case 0xE8: return Kind::call;
        case 0xC3:
        case 0xC2: return Kind::ret;
        case 0xCA:
        case 0xCB:
        case 0xCF:
        case 0xCD:
        case 0xCE: return Kind::far;
        case 0xF4: return Kind::hlt;
        case 0xCC:
        case 0xF1: return Kind::trap;
        case 0xC4:
        case 0xC5:
        case 0x62: return Kind::vex;
        case 0x8F: return modrm_reg(p, at, size) != 0 && modrm_reg(p, at, size) != 8 ? Kind::vex : Kind::plain;
        case 0xFF:
            switch (modrm_reg(p, at, size)) {
                case 2: return Kind::call_ind;
                case 3:
                case 5: return Kind::far;
                case 4: return Kind::jmp_ind;
                default: return Kind::plain;
            }
        default: return Kind::plain;
    }
}

}  // namespace

size_t prefixes_end(const uint8_t* p, size_t size) {
    size_t at = 0;
    while (at < size && legacy_prefix(p[at])) ++at;
    return at;
}

Kind classify(const uint8_t* p, size_t size) {
    size_t at = prefixes_end(p, size);
    bool opsize = false, rep = false;
    for (size_t i = 0; i < at; ++i) {
        opsize |= p[i] == 0x66;
        rep |= p[i] == 0xF3 || p[i] == 0xF2;
    }
    if (at < size && (p[at] & 0xF0) == 0x40) ++at;  // REX
    if (at >= size) return Kind::plain;
    if (p[at] == 0x0F && at + 1 < size) return two_byte(p, at + 1, size, opsize, rep);
    return one_byte(p, at, size, rep);
}

size_t LinearCode::last_start(size_t end) const {
    for (size_t back = 1; back <= 15 && back <= end; ++back)
        if (size[end - back] == back) return end - back;
    return SIZE_MAX;
}

LinearCode decode_linear(const uint8_t* p, size_t n) {
    LinearCode c;
    c.before.assign(n + 1, 0);
    c.size.assign(n, 0);
    c.kind.assign(n, 0);
    uint32_t count = 0;
    for (size_t at = 0; at < n;) {
        x86len::Insn in;
        if (!x86len::decode(p + at, n - at, &in) || in.len == 0 || in.len > 15) return c;
        Kind k = classify(p + at, in.len);
        if (k != Kind::plain && !(k >= Kind::jcc && k <= Kind::ret)) return c;
        c.size[at] = uint8_t(in.len);
        c.kind[at] = uint8_t(k);
        for (size_t i = 0; i < in.len; ++i) c.before[at + i + 1] = count + 1;
        c.before[at] = count;
        ++count;
        at += in.len;
    }
    c.ok = true;
    return c;
}

}  // namespace pmulab::x86insn
