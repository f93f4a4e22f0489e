// AIDA64 / EVEREST reports (as InstLatx64 publishes them): "------[ CPUID Registers /
// Logical CPU #N ]------" sections (older "------[ Logical CPU #N ]------", or a line
// "CPU#000 AffMask: ..."), "CPUID 0000000A: EAX-EBX-ECX-EDX [SL xx] ..." lines, the
// location in "allcpu:" lines and the APIC IDs in the "All CPUs" section. The line loop
// and the CPU sections are in cpuid_dump.cpp.
#include "census/cpuid_dump_parser.h"

namespace pmulab::cpuid_dump {

namespace {

// "------[ Title ]------" -> Title.
bool aida_section_title(StrView t, StrView* title) {
    if (!t.starts_with("------[")) return false;
    usize e = t.len;
    while (e > 0 && t[e - 1] == '-') --e;
    if (e == 0 || t[e - 1] != ']' || e <= 7) return false;
    *title = t.sub(7, e - 1 - 7).trim();
    return true;
}

bool is_aida_register_line(StrView t) { return t.starts_with("CPUID "); }

// A third AIDA64 layout starts each CPU with "CPU#000 AffMask: 0x0000000000000001".
bool is_aida_affmask_header(StrView t, StrView* num) {
    if (!t.starts_with("CPU#")) return false;
    usize n = 4;
    while (n < t.len && is_digit(t[n])) ++n;
    if (n == 4 || !t.sub(n).starts_with(" AffMask:")) return false;
    *num = t.sub(4, n - 4);
    return true;
}

// Finds "<key> N" in t; returns false when absent or not a number.
bool find_number_after(StrView t, StrView key, u32* out) {
    for (usize i = 0; i + key.len <= t.len; ++i) {
        if (!t.sub(i, key.len).eq(key)) continue;
        StrView r = skip_spaces(t.sub(i + key.len));
        usize n = 0;
        while (n < r.len && is_digit(r[n])) ++n;
        return dec_u32(r.sub(0, n), out);
    }
    return false;
}

}  // namespace

bool is_aida64_line(StrView t) {
    StrView title, num;
    return aida_section_title(t, &title) || is_aida_register_line(t) || is_aida_affmask_header(t, &num);
}

const char DumpParser::kAida64NoCpu[] =
    "no logical-CPU section found: expected an AIDA64 report with sections "
    "'------[ CPUID Registers / Logical CPU #0 ]------' (or '------[ Logical CPU #0 ]------') "
    "holding 'CPUID 00000000: ...' lines";

Status DumpParser::aida_register_line(StrView t, u32 line) {
    // CPUID 0000000A: 07300404-00000000-00000000-00008603 [SL 01] [comment]
    StrView rest = skip_spaces(t.sub(6));
    usize colon = rest.find(':');
    StrView leaf_tok = rest.sub(0, colon);
    u32 leaf = 0;
    if (colon == rest.len || !hex_u32(leaf_tok, &leaf))
        return err(line, "bad leaf number in '%.*s' (expected 'CPUID' and 8 hex digits, then ':')", qn(t), t.ptr);
    StrView head = t.sub(0, usize(leaf_tok.ptr - t.ptr) + colon + 1);
    int hl = qn(head);
    rest = skip_spaces(rest.sub(colon + 1));
    StrView regs_tok = take_word(&rest);
    u32 v[4] = {};
    static const char* const kNames[4] = {"EAX", "EBX", "ECX", "EDX"};
    unsigned n = 0;
    usize p = 0;
    StrView part[4];
    while (true) {
        usize dash = regs_tok.find('-', p);
        if (n < 4) part[n] = regs_tok.sub(p, dash - p);
        ++n;
        if (dash >= regs_tok.len) break;
        p = dash + 1;
    }
    if (regs_tok.empty() || n != 4)
        return err(line, "expected 4 hex registers after '%.*s' (EAX-EBX-ECX-EDX, found %u)", hl, head.ptr,
                   regs_tok.empty() ? 0u : n);
    for (int i = 0; i < 4; ++i) {
        if (part[i].len != 8 || !hex_u32(part[i], &v[i])) {
            char c = first_non_hex(part[i]);
            if (c)
                return err(line, "bad hex digit '%c' in %s value '%.*s' after '%.*s'", c, kNames[i], qn(part[i]),
                           part[i].ptr, hl, head.ptr);
            return err(line, "%s value '%.*s' after '%.*s' is not 8 hex digits", kNames[i], qn(part[i]), part[i].ptr,
                       hl, head.ptr);
        }
    }
    // Optional "[SL xx]" among the bracketed comments.
    bool has_sub = false;
    u32 sub = 0;
    for (usize i = rest.find('['); i < rest.len; i = rest.find('[', i + 1)) {
        StrView tag = rest.sub(i + 1);
        if (!tag.starts_with("SL ")) continue;
        usize close = tag.find(']');
        if (close == tag.len || !hex_u32(tag.sub(3, close - 3).trim(), &sub))
            return err(line, "bad sub-leaf tag '%.*s' (expected '[SL' and hex digits, then ']')",
                       qn(StrView(tag.ptr - 1, tag.len + 1)), tag.ptr - 1);
        has_sub = true;
        break;
    }
    return add(leaf, has_sub, sub, v, line, head);
}

// "allcpu: Package 0 / Core 1 / Thread 0: Valid"
void DumpParser::aida_location(StrView t) {
    u32 p, c, th;
    if (find_number_after(t, "Package", &p) && find_number_after(t, "Core", &c) &&
        find_number_after(t, "Thread", &th)) {
        cur_has_loc_ = true;
        cur_pkg_ = p;
        cur_core_ = c;
        cur_thread_ = th;
    }
}

// "CPU   3: APICID   18 / Package 0 / Core   3 / Thread 0: Valid"
Status DumpParser::aida_all_cpus_line(StrView t, u32 line) {
    if (!t.starts_with("CPU ")) return ok_status();
    u32 cpu, apic;
    if (!find_number_after(t, "CPU", &cpu) || !find_number_after(t, "APICID", &apic)) return ok_status();
    // Whole lines end "Thread N: Valid": the file's last line, cut short, may hold a
    // wrong APIC ID.
    u32 th;
    bool last = t.ptr + t.len == text_.ptr + text_.len;  // no newline after it
    if (last && (!find_number_after(t, "Thread", &th) || t.find(':', t.find('/')) == t.len))
        return err(line, "incomplete line '%.*s' in the 'All CPUs' section (truncated dump?)", qn(t), t.ptr);
    for (const ApicEntry& e : apic_)
        if (e.cpu == cpu) return err(line, "CPU %u is listed twice in the 'All CPUs' section", cpu);
    if (apic_.size() >= kMaxDumpCpus) return err(line, "more than %u CPUs in the 'All CPUs' section", kMaxDumpCpus);
    apic_.push(ApicEntry{cpu, apic});
    return ok_status();
}

Status DumpParser::aida64_line(StrView t, u32 line) {
    StrView title;
    if (aida_section_title(t, &title)) {
        PMULAB_TRY(end_cpu());
        aida_section_ = AidaSection::other;
        StrView num;
        if (title.starts_with("CPUID Registers / Logical CPU #")) num = title.sub(31);
        else if (title.starts_with("Logical CPU #")) num = title.sub(13);
        else if (title.eq("All CPUs")) {
            aida_section_ = AidaSection::all_cpus;
            aida_all_cpus_line_ = line;
        } else if (title.eq("Versions") || title.eq("CPU Info")) {
            aida_report_ = true;
        }
        if (num.ptr) {
            u32 index = 0;
            if (!dec_u32(num, &index))
                return err(line, "bad CPU number '%.*s' in section header '%.*s'", qn(num), num.ptr, qn(t), t.ptr);
            char label[32];
            format_to(label, sizeof label, "logical CPU #%u", index);
            PMULAB_TRY(begin_cpu(index, line, label));
            aida_section_ = AidaSection::cpu;
        }
        return ok_status();
    }
    StrView affnum;
    if (is_aida_affmask_header(t, &affnum)) {
        u32 index = 0;
        if (!dec_u32(affnum, &index)) return err(line, "bad CPU number in '%.*s'", qn(t), t.ptr);
        char label[32];
        format_to(label, sizeof label, "logical CPU #%u", index);
        PMULAB_TRY(begin_cpu(index, line, label));
        aida_section_ = AidaSection::cpu;
        return ok_status();
    }
    if (aida_section_ == AidaSection::cpu) {
        if (is_aida_register_line(t)) return aida_register_line(t, line);
        if (t.starts_with("allcpu:")) aida_location(t);
        // Cache descriptions and other text inside the section are not CPUID data.
    } else if (aida_section_ == AidaSection::all_cpus) {
        return aida_all_cpus_line(t, line);
    }
    return ok_status();
}

}  // namespace pmulab::cpuid_dump
