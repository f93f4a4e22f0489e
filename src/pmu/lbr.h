// Last branch records (`run --lbr`): which LBR a CPU has, enabling and disabling it with
// everything touched saved and restored exactly, and reading the stack oldest first.
//
// Which LBR (x86/lbr_regs.h for the registers):
//  * architectural LBR: CPUID.(07H,0):EDX[19] and leaf 1CH (depths, CPL/branch filtering,
//    mispredict bit, cycle counts, branch type);
//  * legacy LBR is NOT enumerated by CPUID: a table by family 06H model (kLbrModels in
//    lbr.cpp, as Linux's intel_pmu_lbr_init_* keep it) gives the depth and the MSR bases,
//    IA32_PERF_CAPABILITIES[5:0] the record format (so PDCM is required);
//  * AMD LbrExtV2: CPUID 8000_0022H EAX[1] with the depth in EBX[9:4] (Zen 4 on).
// Anything else (QEMU TCG, a hypervisor without LBR, unknown models, AMD before Zen 4) has
// none, with the reason in LbrInfo::absent.
//
// On the measuring CPU everything here is allocation-free.
#pragma once

#include "pmu/pmu.h"
#include "x86/hw.h"

namespace pmulab {

enum class LbrKind : u8 { none, legacy, arch, amd };
const char* lbr_kind_name(LbrKind k);  // "none", "legacy", "architectural", "amd_lbr_v2"

inline constexpr u32 kLbrMaxDepth = 64;

struct LbrInfo {
    LbrKind kind = LbrKind::none;
    u32 depth = 0;                   // entries
    u32 from = 0, to = 0, info = 0;  // legacy: MSR bases (info 0: no MSR_LBR_INFO_x)
    u8 format = 0;                   // legacy: IA32_PERF_CAPABILITIES[5:0]
    bool select = false;             // legacy: MSR_LBR_SELECT exists
    bool cycles = false;             // records carry cycle counts
    bool mispredict = false;         // records carry the mispredict bit
    bool freeze = false;             // DEBUGCTL.FREEZE_LBRS_ON_PMI works (v2+ Intel; AMD LbrAndPmcFreeze)
    char model[40] = {};             // e.g. "Skylake (32 entries, format 5)"
    char absent[360] = {};           // kind == none: why
};
// What the CPU of `probe` (its CPUID and IA32_PERF_CAPABILITIES) has. Pure.
void lbr_decode(const CpuProbe& probe, const PmuInfo& pmu, LbrInfo* out);

// One record, decoded: addresses sign-extended, the flags and cycles the format has.
struct LbrEntry {
    u64 from = 0, to = 0;
    u16 cycles = 0;
    bool has_cycles = false;
    bool mispredicted = false;
};
struct LbrStackRead {
    LbrEntry e[kLbrMaxDepth];
    u32 n = 0;  // valid entries, oldest first
};

// The state lbr_start changes, read before it (and put back by lbr_restore).
struct LbrSaved {
    u64 debugctl = 0;
    u64 select = 0;  // MSR_LBR_SELECT / AMD LBR_SELECT
    u64 ctl = 0;     // IA32_LBR_CTL / AMD DBG_EXTN_CFG
    u64 depth = 0;   // IA32_LBR_DEPTH
};
struct LbrStartOptions {
    // DEBUGCTL.FREEZE_LBRS_ON_PMI: the stack stops at a PMI (useful with sampling, where a
    // PMI handler's own branches would push the measured ones out).
    bool freeze_on_pmi = false;
};

// On the measuring CPU: reads the controls lbr_start changes.
Status lbr_save(Hw& hw, const LbrInfo& l, LbrSaved* s);
// Clears the stack, records every taken branch at every CPL, and enables recording.
Status lbr_start(Hw& hw, const LbrInfo& l, const LbrSaved& s, const LbrStartOptions& o);
// Stops recording (the first thing after the measured code): only the enable bit changes.
Status lbr_stop(Hw& hw, const LbrInfo& l);
// Reads the stack, oldest first (empty entries left out).
Status lbr_read(Hw& hw, const LbrInfo& l, LbrStackRead* out);
// Puts back every control lbr_save read.
Status lbr_restore(Hw& hw, const LbrInfo& l, const LbrSaved& s);

}  // namespace pmulab
