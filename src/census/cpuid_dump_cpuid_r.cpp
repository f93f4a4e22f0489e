// `cpuid -r` dumps (Todd Allen's cpuid, Debian package `cpuid`): "CPU N:" (or "CPU:")
// headers, then lines "   0x0000000a 0x00: eax=0x... ebx=0x... ecx=0x... edx=0x...";
// old versions omit the sub-leaf. The line loop and the CPU sections are in cpuid_dump.cpp.
#include "census/cpuid_dump_parser.h"

namespace pmulab::cpuid_dump {

namespace {

bool is_cpuid_r_register_line(StrView t) { return t.len >= 10 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X'); }

// "CPU:" or "CPU <decimal>:".
bool is_cpuid_r_header(StrView t, bool* has_index, u32* index, bool* bad_index) {
    *bad_index = false;
    if (t.eq("CPU:")) {
        *has_index = false;
        *index = 0;
        return true;
    }
    if (!t.starts_with("CPU ") || t.len < 6 || t[t.len - 1] != ':') return false;
    StrView num = t.sub(4, t.len - 5).trim();
    for (usize i = 0; i < num.len; ++i)
        if (!is_digit(num[i])) return false;
    *has_index = true;
    if (!dec_u32(num, index)) *bad_index = true;
    return true;
}

}  // namespace

bool is_cpuid_r_line(StrView t) {
    bool has_index, bad;
    u32 index;
    return is_cpuid_r_header(t, &has_index, &index, &bad) || is_cpuid_r_register_line(t);
}

const char DumpParser::kCpuidRNoCpu[] = "no CPU section found: expected `cpuid -r` output ('CPU 0:' followed by lines "
                                        "'0x00000000 0x00: eax=0x... ebx=0x... ecx=0x... edx=0x...')";

Status DumpParser::cpuid_r_register_line(StrView t, u32 line) {
    // 0xLLLLLLLL 0xSS: eax=0x........ ebx=0x........ ecx=0x........ edx=0x........
    // (old versions: 0xLLLLLLLL: eax=...)
    StrView rest = t;
    StrView w = take_word(&rest);
    bool has_sub = true;
    StrView leaf_tok = w, sub_tok;
    if (w.len && w[w.len - 1] == ':') {
        has_sub = false;
        leaf_tok = w.sub(0, w.len - 1);
    } else {
        sub_tok = take_word(&rest);
        if (!sub_tok.len || sub_tok[sub_tok.len - 1] != ':')
            return err(line, "expected '0xLEAF 0xSUB:' at the start of '%.*s'", qn(t), t.ptr);
        sub_tok = sub_tok.sub(0, sub_tok.len - 1);
    }
    StrView head = t.sub(0, usize(rest.ptr - t.ptr)).trim();
    u32 leaf = 0, sub = 0;
    if (!leaf_tok.starts_with("0x") || !hex_u32(leaf_tok.sub(2), &leaf))
        return err(line, "bad leaf number '%.*s' (expected 0x and up to 8 hex digits)", qn(leaf_tok), leaf_tok.ptr);
    if (has_sub && (!(sub_tok.starts_with("0x") || sub_tok.starts_with("0X")) || !hex_u32(sub_tok.sub(2), &sub)))
        return err(line, "bad sub-leaf number '%.*s' after leaf 0x%08x (expected 0x and up to 8 hex digits)",
                   qn(sub_tok), sub_tok.ptr, leaf);
    static const char* const kRegs[4] = {"eax=", "ebx=", "ecx=", "edx="};
    u32 v[4] = {};
    for (int i = 0; i < 4; ++i) {
        StrView r = take_word(&rest);
        if (!r.starts_with(kRegs[i]))
            return err(line, "expected 4 registers 'eax=0x... ebx=0x... ecx=0x... edx=0x...' after '%.*s'", qn(head),
                       head.ptr);
        StrView hex = r.sub(4);
        if (hex.starts_with("0x") || hex.starts_with("0X")) hex = hex.sub(2);
        if (!hex_u32(hex, &v[i])) {
            char c = first_non_hex(hex);
            if (c)
                return err(line, "bad hex digit '%c' in %.3s value '%.*s' after '%.*s'", c, kRegs[i], qn(r), r.ptr,
                           qn(head), head.ptr);
            return err(line, "%.3s value '%.*s' after '%.*s' is not 1 to 8 hex digits", kRegs[i], qn(r), r.ptr,
                       qn(head), head.ptr);
        }
    }
    if (!rest.empty()) return err(line, "unexpected text '%.*s' after the edx value", qn(rest), rest.ptr);
    return add(leaf, has_sub, sub, v, line, head);
}

Status DumpParser::cpuid_r_line(StrView t, u32 line) {
    bool has_index = false, bad_index = false;
    u32 index = 0;
    if (is_cpuid_r_header(t, &has_index, &index, &bad_index)) {
        if (bad_index) return err(line, "bad CPU number in '%.*s'", qn(t), t.ptr);
        char label[32];
        if (has_index) format_to(label, sizeof label, "CPU %u", index);
        else str_copy(label, sizeof label, "CPU");
        return begin_cpu(index, line, label);
    }
    if (is_cpuid_r_register_line(t)) {
        // `cpuid -r -1` without its "CPU:" line: one implicit CPU.
        if (!in_cpu_) PMULAB_TRY(begin_cpu(0, line, "CPU"));
        return cpuid_r_register_line(t, line);
    }
    if (in_cpu_)
        return err(line,
                   "'%.*s' is not a raw register line ('0x00000000 0x00: eax=0x... ebx=0x... "
                   "ecx=0x... edx=0x...'); decoded `cpuid` output is not supported, use `cpuid -r`",
                   qn(t), t.ptr);
    // Text before the first CPU header is ignored.
    return ok_status();
}

}  // namespace pmulab::cpuid_dump
