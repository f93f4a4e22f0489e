// Offline CPUID dumps: parses the text that other tools print into the same
// CpuRecords that `pmulab info` collects live, so the decoder and the census
// report can run on any machine's dump (`pmulab-cpuid`).
//
// Formats:
//   cpuid-r  Todd Allen's `cpuid -r` (and `cpuid -r -1`): "CPU N:" (or "CPU:")
//            headers, then lines "   0x0000000a 0x00: eax=0x... ebx=0x... ecx=0x... edx=0x...".
//            Old versions omit the sub-leaf ("0x00000004: eax=..."); repeated lines of
//            one leaf are then sub-leaves 0, 1, 2... in order of appearance.
//   aida64   AIDA64 / EVEREST reports as published by InstLatx64: sections
//            "------[ CPUID Registers / Logical CPU #N ]------" (older: "------[ Logical CPU #N ]------")
//            (or a line "CPU#000 AffMask: 0x0000000000000001") with lines
//            "CPUID 0000000A: 07300404-00000000-00000000-00008603 [comments]".
//            A "[SL xx]" tag gives the sub-leaf; without it repeated lines of one leaf
//            are sub-leaves in order of appearance. "allcpu: Package P / Core C / Thread T"
//            gives the location, the "All CPUs" section the APIC IDs. All other
//            sections (MSR dumps, summaries) are skipped.
// Only the leaves the decoder uses are kept (cpuid_subleaf_is_captured). Lines
// starting with '#' are comments in both formats.
#pragma once

#include "census/census.h"

namespace pmulab {

enum class DumpFormat : u8 { automatic, cpuid_r, aida64 };

// "auto", "cpuid-r", "aida64".
const char* dump_format_name(DumpFormat f);
bool parse_dump_format(StrView s, DumpFormat* out);

// The format the first recognisable line belongs to; automatic when none is found.
DumpFormat detect_cpuid_dump_format(StrView text);

// A dump with more logical CPUs than this is rejected (no real machine has more).
constexpr u32 kMaxDumpCpus = 4096;

// Parses `text` (the contents of file `name`, used in messages as "name:LINE: ...")
// into one record per logical CPU, in the order of the dump, each decoded with
// census_decode. Errors (Errc::invalid_argument) name the file and line: no CPU
// section, a malformed register line or bad hex, a truncated dump (a CPU section
// without leaf 0, or without a leaf the decoder reads although the CPU's own leaves
// enumerate it, or without a leaf the first CPU has), duplicate CPUs or leaves, more
// than kMaxDumpCpus CPUs, binary data (UTF-16 is named as such).
// *out is cleared first and left empty on error.
Status parse_cpuid_dump(StrView text, const char* name, DumpFormat format, Vec<CpuRecord>* out);
inline Status parse_cpuid_dump(StrView text, const char* name, Vec<CpuRecord>* out) {
    return parse_cpuid_dump(text, name, DumpFormat::automatic, out);
}

}  // namespace pmulab
