#include "x86_length.h"

namespace pmulab::x86len {

namespace {

// Bytes of ModRM + SIB + displacement at p (64-bit addressing; 0 when cut off).
size_t modrm_len(const uint8_t* p, size_t n) {
    if (n < 1) return 0;
    uint8_t m = p[0];
    unsigned mod = m >> 6, rm = m & 7;
    size_t len = 1;
    if (mod == 3) return len;
    if (rm == 4) {
        if (n < 2) return 0;
        ++len;
        if (mod == 0 && (p[1] & 7) == 5) len += 4;
    }
    if (mod == 0 && rm == 5) len += 4;  // RIP-relative
    if (mod == 1) len += 1;
    if (mod == 2) len += 4;
    return len <= n ? len : 0;
}

// One-byte map: ModRM present (SDM Vol. 2D Table A-2).
bool has_modrm_1(uint8_t op) {
    if (op < 0x40) return (op & 7) < 4;
    switch (op) {
        case 0x62:
        case 0x63:
        case 0x69:
        case 0x6B:
        case 0xC0:
        case 0xC1:
        case 0xC6:
        case 0xC7:
        case 0xD0:
        case 0xD1:
        case 0xD2:
        case 0xD3:
        case 0xF6:
        case 0xF7:
        case 0xFE:
        case 0xFF: return true;
        default: break;
    }
    if (op >= 0x80 && op <= 0x8F) return true;
    if (op >= 0xD8 && op <= 0xDF) return true;  // x87
    return false;
}

// Immediate bytes of a one-byte-map opcode (z = 4, or 2 with 66; v = 8 with REX.W for B8-BF).
int imm_len_1(uint8_t op, bool opsize, bool rexw, uint8_t modrm) {
    int z = opsize ? 2 : 4;
    if (op < 0x40) {
        if ((op & 7) == 4) return 1;
        if ((op & 7) == 5) return z;
        return 0;
    }
    switch (op) {
        case 0x68: return z;
        case 0x69: return z;
        case 0x6A:
        case 0x6B:
        case 0x80:
        case 0x82:
        case 0x83:
        case 0xA8:
        case 0xC0:
        case 0xC1:
        case 0xC6:
        case 0xCD:
        case 0xE4:
        case 0xE5:
        case 0xE6:
        case 0xE7: return 1;
        case 0x81:
        case 0xA9:
        case 0xC7: return z;
        case 0xC2:
        case 0xCA: return 2;
        case 0xC8: return 3;
        case 0xF6: return ((modrm >> 3) & 7) < 2 ? 1 : 0;
        case 0xF7: return ((modrm >> 3) & 7) < 2 ? z : 0;
        default: break;
    }
    if (op >= 0xB0 && op <= 0xB7) return 1;
    if (op >= 0xB8 && op <= 0xBF) return rexw ? 8 : z;
    if (op >= 0xA0 && op <= 0xA3) return 8;  // moffs64
    return 0;
}

// 0F map: without ModRM (SDM Vol. 2D Table A-3).
bool no_modrm_0f(uint8_t op) {
    switch (op) {
        case 0x05:
        case 0x06:
        case 0x07:
        case 0x08:
        case 0x09:
        case 0x0B:
        case 0x0E:
        case 0x30:
        case 0x31:
        case 0x32:
        case 0x33:
        case 0x34:
        case 0x35:
        case 0x37:
        case 0x77:
        case 0xA0:
        case 0xA1:
        case 0xA2:
        case 0xA8:
        case 0xA9:
        case 0xAA: return true;
        default: break;
    }
    if (op >= 0x80 && op <= 0x8F) return true;  // Jcc rel32
    if (op >= 0xC8 && op <= 0xCF) return true;  // BSWAP
    return false;
}

int imm_len_0f(uint8_t op) {
    switch (op) {
        case 0x70:
        case 0x71:
        case 0x72:
        case 0x73:
        case 0xA4:
        case 0xAC:
        case 0xBA:
        case 0xC2:
        case 0xC4:
        case 0xC5:
        case 0xC6:
        case 0x0F: return 1;
        default: return 0;
    }
}

int64_t s8(uint8_t b) { return int64_t(int8_t(b)); }
int64_t s32(const uint8_t* p) {
    return int64_t(int32_t(uint32_t(p[0]) | (uint32_t(p[1]) << 8) | (uint32_t(p[2]) << 16) | (uint32_t(p[3]) << 24)));
}

// VEX/EVEX/XOP-encoded instruction after the prefix bytes: opcode, ModRM, imm8 for map 3.
bool decode_vex_body(const uint8_t* p, size_t n, size_t at, unsigned map, Insn* out) {
    if (at + 1 > n) return false;
    if (map == 0 || map > 7) return false;
    size_t m = modrm_len(p + at + 1, n - at - 1);
    if (!m) return false;
    size_t len = at + 1 + m + (map == 3 ? 1 : 0);
    if (len > n) return false;
    out->len = len;
    out->flow = Flow::none;
    return true;
}

// The 0F map (two-byte opcodes, with the 0F38/0F3A three-byte maps); i is just past 0F.
bool decode_0f(const uint8_t* p, size_t n, size_t i, Insn* out) {
    if (i >= n) return false;
    uint8_t op2 = p[i];
    if (op2 == 0x38 || op2 == 0x3A) {
        i += 2;  // the third opcode byte
        if (i > n) return false;
        size_t m = modrm_len(p + i, n - i);
        if (!m) return false;
        size_t len = i + m + (op2 == 0x3A ? 1 : 0);
        if (len > n) return false;
        out->len = len;
        return true;
    }
    ++i;
    if (op2 >= 0x80 && op2 <= 0x8F) {  // Jcc rel32
        if (i + 4 > n) return false;
        out->len = i + 4;
        out->flow = Flow::jcc_rel;
        out->rel = s32(p + i);
        return true;
    }
    if (op2 == 0x05 || op2 == 0x34 || op2 == 0x0B || op2 == 0x07 || op2 == 0x35) out->flow = Flow::syscall;
    size_t len = i;
    if (!no_modrm_0f(op2)) {
        size_t m = modrm_len(p + i, n - i);
        if (!m) return false;
        len += m;
    }
    len += size_t(imm_len_0f(op2));
    if (len > n) return false;
    out->len = len;
    return true;
}

// Opcodes of the one-byte map that are invalid in 64-bit mode.
bool invalid_in_64(uint8_t op) {
    static const uint8_t k[] = {0x06, 0x07, 0x0E, 0x16, 0x17, 0x1E, 0x1F, 0x27, 0x2F,
                                0x37, 0x3F, 0x60, 0x61, 0xCE, 0xD4, 0xD5, 0xD6};
    for (uint8_t b : k)
        if (op == b) return true;
    return false;
}

// Control transfers of the one-byte map other than the relative jumps and calls.
Flow one_byte_flow(uint8_t op, uint8_t modrm) {
    if (op == 0xC3 || op == 0xC2 || op == 0xCB || op == 0xCA || op == 0xCF) return Flow::ret;
    if (op == 0xCC || op == 0xCD || op == 0xF4 || op == 0xEA || op == 0x9A) return Flow::syscall;
    if (op == 0xFF && ((modrm >> 3) & 7) >= 2 && ((modrm >> 3) & 7) <= 5) return Flow::indirect;
    return Flow::none;
}

// The one-byte map; i is at the opcode.
bool decode_one_byte(const uint8_t* p, size_t n, size_t i, bool opsize, bool rexw, Insn* out) {
    uint8_t op = p[i++];
    size_t len = i;
    uint8_t modrm = 0;
    if (has_modrm_1(op)) {
        if (i >= n) return false;
        modrm = p[i];
        size_t m = modrm_len(p + i, n - i);
        if (!m) return false;
        len += m;
    }
    size_t imm_at = len;
    // Relative jumps and calls.
    if ((op >= 0x70 && op <= 0x7F) || (op >= 0xE0 && op <= 0xE3) || op == 0xEB) {
        if (imm_at + 1 > n) return false;
        out->len = imm_at + 1;
        out->flow = op == 0xEB ? Flow::jmp_rel : Flow::jcc_rel;
        out->rel = s8(p[imm_at]);
        return true;
    }
    if (op == 0xE8 || op == 0xE9) {
        if (imm_at + 4 > n) return false;
        out->len = imm_at + 4;
        out->flow = op == 0xE9 ? Flow::jmp_rel : Flow::call_rel;
        out->rel = s32(p + imm_at);
        return true;
    }
    out->flow = one_byte_flow(op, modrm);
    if (invalid_in_64(op)) return false;
    len += size_t(imm_len_1(op, opsize, rexw, modrm));
    if (len > n || len > 15) return false;
    out->len = len;
    return true;
}

}  // namespace

bool decode(const uint8_t* p, size_t n, Insn* out) {
    *out = Insn();
    size_t i = 0;
    bool opsize = false;
    // Legacy prefixes (at most 14 with the opcode: the 15-byte limit).
    while (i < n && i < 14) {
        uint8_t b = p[i];
        if (b == 0x66) opsize = true;
        else if (!(b == 0x67 || b == 0xF2 || b == 0xF3 || b == 0xF0 || b == 0x2E || b == 0x36 || b == 0x3E ||
                   b == 0x26 || b == 0x64 || b == 0x65))
            break;
        ++i;
    }
    if (i >= n) return false;
    bool rexw = false;
    if ((p[i] & 0xF0) == 0x40) {
        rexw = (p[i] & 8) != 0;
        ++i;
        if (i >= n) return false;
    }
    uint8_t op = p[i];
    // VEX (C5: 2 bytes, map 0F; C4: 3 bytes, map in the low 5 bits), EVEX (62: 4 bytes).
    if (op == 0xC5) return decode_vex_body(p, n, i + 2, 1, out);
    if (op == 0xC4) {
        if (i + 1 >= n) return false;
        return decode_vex_body(p, n, i + 3, p[i + 1] & 0x1F, out);
    }
    if (op == 0x62) {
        if (i + 1 >= n) return false;
        return decode_vex_body(p, n, i + 4, p[i + 1] & 0x7, out);
    }
    if (op == 0x0F) return decode_0f(p, n, i + 1, out);
    return decode_one_byte(p, n, i, opsize, rexw, out);
}

}  // namespace pmulab::x86len
