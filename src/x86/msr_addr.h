// MSR addresses with their SDM names. Intel: SDM Vol. 4 Table 2-2
// (architectural MSRs); NetBurst: SDM Vol. 3B Table 20-xx (ESCR/CCCR);
// AMD: APM Vol. 2 §13.2 and PPRs.
#pragma once

#include "base/base.h"

namespace pmulab::msr {

// --- Intel architectural ---
inline constexpr u32 IA32_TIME_STAMP_COUNTER = 0x10;
inline constexpr u32 MSR_SMI_COUNT = 0x34;  // SMIs since reset, read-only (Nehalem and later; Vol. 4 Table 2-15)
inline constexpr u32 IA32_APIC_BASE = 0x1B;
inline constexpr u32 IA32_BIOS_SIGN_ID = 0x8B;  // microcode revision in EDX after CPUID(1)
inline constexpr u32 IA32_PMC0 = 0xC1;          // IA32_PMCx = IA32_PMC0 + x
inline constexpr u32 IA32_MPERF = 0xE7;
inline constexpr u32 IA32_APERF = 0xE8;
inline constexpr u32 IA32_PERFEVTSEL0 = 0x186;  // IA32_PERFEVTSELx = IA32_PERFEVTSEL0 + x
inline constexpr u32 IA32_MISC_ENABLE = 0x1A0;
inline constexpr u32 IA32_DEBUGCTL = 0x1D9;
inline constexpr u32 IA32_FIXED_CTR0 = 0x309;  // IA32_FIXED_CTRx = IA32_FIXED_CTR0 + x
inline constexpr u32 IA32_PERF_CAPABILITIES = 0x345;
inline constexpr u32 IA32_FIXED_CTR_CTRL = 0x38D;
inline constexpr u32 IA32_PERF_GLOBAL_STATUS = 0x38E;
inline constexpr u32 IA32_PERF_GLOBAL_CTRL = 0x38F;
inline constexpr u32 IA32_PERF_GLOBAL_OVF_CTRL = 0x390;      // v2/v3 name
inline constexpr u32 IA32_PERF_GLOBAL_STATUS_RESET = 0x390;  // v4+ name of the same address
inline constexpr u32 IA32_PERF_GLOBAL_STATUS_SET = 0x391;    // v4+
inline constexpr u32 IA32_PERF_GLOBAL_INUSE = 0x392;         // v4+
inline constexpr u32 IA32_PEBS_ENABLE = 0x3F1;
inline constexpr u32 IA32_A_PMC0 = 0x4C1;  // full-width alias, IA32_A_PMCx = IA32_A_PMC0 + x
inline constexpr u32 IA32_PKRS = 0x6E1;
inline constexpr u32 MSR_PERF_METRICS = 0x329;

// --- AMD (APM Vol. 2 §13.2) ---
inline constexpr u32 AMD_PERF_EVT_SEL0 = 0xC0010000;  // legacy: PerfEvtSel0..3
inline constexpr u32 AMD_PERF_CTR0 = 0xC0010004;      // legacy: PerfCtr0..3
inline constexpr u32 AMD_PERF_CTL_EXT0 = 0xC0010200;  // PerfCtrExtCore: CTL_i = base + 2i
inline constexpr u32 AMD_PERF_CTR_EXT0 = 0xC0010201;  // CTR_i = base + 2i
inline constexpr u32 AMD_PERF_CNTR_GLOBAL_STATUS = 0xC0000300;
inline constexpr u32 AMD_PERF_CNTR_GLOBAL_CTL = 0xC0000301;
inline constexpr u32 AMD_PERF_CNTR_GLOBAL_STATUS_CLR = 0xC0000302;
inline constexpr u32 AMD_PERF_CNTR_GLOBAL_STATUS_SET = 0xC0000303;
inline constexpr u32 AMD_HWCR = 0xC0010015;
inline constexpr u32 AMD_DE_CFG = 0xC0011029;  // decode configuration (LFENCE serialising, bit 1)
inline constexpr u32 AMD_IRPERF_COUNT = 0xC00000E9;
inline constexpr u32 AMD_MPERF_RO = 0xC00000E7;
inline constexpr u32 AMD_APERF_RO = 0xC00000E8;

}  // namespace pmulab::msr
