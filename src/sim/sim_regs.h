// The simulated CPU's own register addresses, PERFEVTSEL fields and architectural
// events, written from the manuals independently of pmulab's x86/ headers (sim_cpu.h).
#pragma once

#include "base/base.h"

namespace sim {

using pmulab::u16;
using pmulab::u32;
using pmulab::u64;

// The model's own register addresses (SDM Vol. 4 Table 2-2; AMD APM Vol. 2 §13.2).
namespace reg {
// Every vendor: the TSC, the microcode revision, PKRS.
inline constexpr u32 TSC = 0x10, BIOS_SIGN_ID = 0x8B, PKRS = 0x6E1;
// Intel: the counters, their controls, the global MSRs.
inline constexpr u32 PMC0 = 0xC1, PERFEVTSEL0 = 0x186, A_PMC0 = 0x4C1, FIXED_CTR0 = 0x309;
inline constexpr u32 FIXED_CTR_CTRL = 0x38D, GLOBAL_STATUS = 0x38E, GLOBAL_CTRL = 0x38F;
inline constexpr u32 GLOBAL_OVF_CTRL = 0x390;  // GLOBAL_STATUS_RESET from v4
inline constexpr u32 GLOBAL_STATUS_SET = 0x391, GLOBAL_INUSE = 0x392;
inline constexpr u32 PERF_METRICS = 0x329, PERF_CAPABILITIES = 0x345, MISC_ENABLE = 0x1A0;
inline constexpr u32 SMI_COUNT = 0x34;  // MSR_SMI_COUNT (Intel, Nehalem on): SMIs since reset, read-only
inline constexpr u32 DEBUGCTL = 0x1D9;  // IA32_DEBUGCTL: bit 14 FREEZE_WHILE_SMM
// APERF/MPERF (Intel CPUID.06H:ECX[0], AMD EffFreq), and AMD's read-only aliases.
inline constexpr u32 MPERF = 0xE7, APERF = 0xE8, AMD_MPERF_RO = 0xC00000E7, AMD_APERF_RO = 0xC00000E8;
// AMD: legacy and PerfCtrExtCore counters, PerfMonV2's global MSRs.
inline constexpr u32 AMD_PERF_CTL0 = 0xC0010000, AMD_PERF_CTR0 = 0xC0010004;
inline constexpr u32 AMD_EXT_CTL0 = 0xC0010200;  // CTL_i = base + 2i, CTR_i = base + 2i + 1
inline constexpr u32 AMD_GLOBAL_STATUS = 0xC0000300, AMD_GLOBAL_CTL = 0xC0000301;
inline constexpr u32 AMD_GLOBAL_STATUS_CLR = 0xC0000302, AMD_GLOBAL_STATUS_SET = 0xC0000303;
inline constexpr u32 AMD_HWCR = 0xC0010015;    // bit 30 IRPerfEn
inline constexpr u32 AMD_DE_CFG = 0xC0011029;  // bit 1 LfenceSerializing
inline constexpr u32 AMD_IRPERF = 0xC00000E9;  // IRPerfCount, 48 bits
// Hardware prefetcher control: Intel MISC_FEATURE_CONTROL (its bits per model and their
// sources: sim_cpu.cpp intel_prefetch_bits), AMD PrefetchControl (the family 19h/1Ah PPRs:
// bits 0-3 and 5).
inline constexpr u32 MISC_FEATURE_CONTROL = 0x1A4, AMD_PREFETCH_CONTROL = 0xC0000108;
// The E cores' L2 prefetcher configuration (Intel 357930 §4.2-§4.9).
inline constexpr u32 ECORE_PREFETCH_FIRST = 0x1320, ECORE_PREFETCH_LAST = 0x1327;
}  // namespace reg

// PERFEVTSEL fields (Intel SDM Figure 20-1/20-6; AMD PERF_CTL has the same low 32 bits).
namespace evtsel {
inline constexpr u64 USR = 1ull << 16;
inline constexpr u64 OS = 1ull << 17;
inline constexpr u64 EDGE = 1ull << 18;
inline constexpr u64 PC = 1ull << 19;
inline constexpr u64 INT = 1ull << 20;
inline constexpr u64 ANY = 1ull << 21;
inline constexpr u64 EN = 1ull << 22;
inline constexpr u64 INV = 1ull << 23;
inline constexpr u64 EQ = 1ull << 36;
constexpr u64 cmask(u32 c) { return u64(c & 0xff) << 24; }
constexpr u64 umask2(u32 u) { return u64(u & 0xff) << 40; }
// Event select + unit mask + flags: the usual way tests build a PERFEVTSEL value.
constexpr u64 make(u32 event, u32 umask, u64 flags) { return u64(event & 0xff) | (u64(umask & 0xff) << 8) | flags; }
}  // namespace evtsel

// Architectural events as (event select, unit mask) — SDM Table 20-1.
namespace ev {
inline constexpr u16 kCoreCycles[2] = {0x3C, 0x00};
inline constexpr u16 kInstructions[2] = {0xC0, 0x00};
inline constexpr u16 kRefCycles[2] = {0x3C, 0x01};
inline constexpr u16 kTopdownSlots[2] = {0xA4, 0x01};
}  // namespace ev

}  // namespace sim
