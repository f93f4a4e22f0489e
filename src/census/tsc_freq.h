// The TSC frequency, so that ticks convert to nanoseconds (issue 11, "noise provenance";
// docs/measure.md). From CPUID where the processor enumerates it (SDM Vol. 2A CPUID
// leaves 15H "Time Stamp Counter and Nominal Core Crystal Clock" and 16H "Processor
// Frequency Information"; Vol. 3B §19.7.3), else measured against a firmware timer
// (Platform::stall_us), saying which.
#pragma once

#include "base/json.h"
#include "x86/hw.h"

namespace pmulab {

struct TscFreq {
    u64 hz = 0;               // 0: unknown
    const char* source = "";  // "cpuid_15h", "cpuid_16h", "efi_stall" (the timer's key), "" unknown
    char detail[200] = {};    // how it was obtained, or why it is unknown
    // TSC ticks per crystal-clock tick, CPUID.15H EBX/EAX rounded up (also where ECX gives no
    // crystal frequency): the step in which IA32_FIXED_CTR2 (REF_TSC) advances; 0 unknown.
    u64 ref_step = 0;
};

// CPUID.15H's TSC/crystal ratio rounded up (TscFreq::ref_step), 0 where EAX or EBX is 0.
u64 ref_step_from_cpuid(u32 max_leaf, const CpuidRegs& leaf15);

// From the calling CPU's CPUID: 15H with EAX, EBX and ECX nonzero: ECX x EBX / EAX
// ("cpuid_15h"); else 16H:EAX, the processor base frequency in MHz, at which the TSC of
// such parts runs ("cpuid_16h"); else hz = 0 with the reason.
TscFreq tsc_freq_from_cpuid(u32 max_leaf, const CpuidRegs& leaf15, const CpuidRegs& leaf16);
TscFreq tsc_freq_from_cpuid(Hw& hw);
// `ticks` TSC ticks over `us` microseconds of the timer named `source` (`what` for people).
TscFreq tsc_freq_measured(u64 ticks, u64 us, const char* source, const char* what);

// "1000.000 MHz (cpuid_15h: ...)" or "unknown (...)".
void put_tsc_freq(StrBuf& out, const TscFreq& f);
// "tsc_hz", "tsc_source", "tsc_detail" (hz and source null when unknown).
void tsc_freq_fields(JsonWriter& w, const TscFreq& f);

}  // namespace pmulab
