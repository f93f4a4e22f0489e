// Typed last-branch-record registers: legacy LBR (Intel SDM Vol. 3B ch. 19 "Last Branch
// Records": MSR_LASTBRANCH_TOS, MSR_LASTBRANCH_x_FROM_IP/TO_IP, MSR_LBR_INFO_x, MSR_LBR_SELECT
// and the record formats of IA32_PERF_CAPABILITIES[5:0]), architectural LBR (same volume,
// "Architectural Last Branch Records"; CPUID leaf 1CH in Vol. 2A) and AMD's Last Branch
// Stack Extension (APM Vol. 2 §13.1.1.x "Last Branch Stack Extension", LbrExtV2: CPUID
// 8000_0022H EAX[1], EBX[9:4]). pmu/lbr.h decides which one a CPU has.
#pragma once

#include "base/bits.h"

namespace pmulab {

namespace msr {
// Legacy LBR (SDM Vol. 4, the per-model MSR tables): bases by microarchitecture.
inline constexpr u32 MSR_LBR_SELECT = 0x1C8;
inline constexpr u32 MSR_LASTBRANCH_TOS = 0x1C9;
inline constexpr u32 MSR_LBR_CORE_FROM = 0x40, MSR_LBR_CORE_TO = 0x60;  // Core 2, Atom, Silvermont
inline constexpr u32 MSR_LBR_NHM_FROM = 0x680, MSR_LBR_NHM_TO = 0x6C0;  // Nehalem and later
inline constexpr u32 MSR_LBR_INFO_0 = 0xDC0;                            // Skylake and later
// Architectural LBR (Vol. 4 Table 2-2).
inline constexpr u32 IA32_LBR_CTL = 0x14CE, IA32_LBR_DEPTH = 0x14CF;
inline constexpr u32 IA32_LBR_0_FROM_IP = 0x1500, IA32_LBR_0_TO_IP = 0x1600, IA32_LBR_0_INFO = 0x1200;
// AMD LbrExtV2 (APM Vol. 2; Linux msr-index.h).
inline constexpr u32 AMD_LBR_SELECT = 0xC000010E, AMD_DBG_EXTN_CFG = 0xC000010F;
inline constexpr u32 AMD_LBR_FROM_0 = 0xC0010300;  // FROM_i = base + 2i, TO_i = base + 2i + 1
}  // namespace msr

namespace regs {

// MSR_LBR_SELECT (1C8H; AMD LBR_SELECT C000_010EH has bits 8:0 alike). SDM Vol. 3B ch. 19
// "Filtering of Last Branch Records": a set bit suppresses that kind of branch.
class LbrSelect : public RegValue<LbrSelect> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FLAG(LbrSelect, cpl_eq_0, 0)  // suppress branches ending at CPL 0
    PMULAB_REG_FLAG(LbrSelect, cpl_neq_0, 1)
    PMULAB_REG_FLAG(LbrSelect, jcc, 2)
    PMULAB_REG_FLAG(LbrSelect, near_rel_call, 3)
    PMULAB_REG_FLAG(LbrSelect, near_ind_call, 4)
    PMULAB_REG_FLAG(LbrSelect, near_ret, 5)
    PMULAB_REG_FLAG(LbrSelect, near_ind_jmp, 6)
    PMULAB_REG_FLAG(LbrSelect, near_rel_jmp, 7)
    PMULAB_REG_FLAG(LbrSelect, far_branch, 8)
    PMULAB_REG_FLAG(LbrSelect, en_callstack, 9)  // Haswell on; not a suppress bit
};
static_assert(LbrSelect::far_branch_field::mask == 1ull << 8 && LbrSelect::en_callstack_field::mask == 1ull << 9);

// MSR_LBR_INFO_x (Skylake, format 5/7) and IA32_LBR_x_INFO (architectural). SDM Vol. 3B
// ch. 19 "LBR Stack" (MSR_LBR_INFO_x) and "Architectural LBR" (IA32_LBR_x_INFO).
class LbrInfoMsr : public RegValue<LbrInfoMsr> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FIELD(LbrInfoMsr, cyc_cnt, 15, 0)    // core cycles since the last LBR update, saturating
    PMULAB_REG_FIELD(LbrInfoMsr, br_type, 59, 56)   // architectural only
    PMULAB_REG_FLAG(LbrInfoMsr, cyc_cnt_valid, 60)  // architectural only
    PMULAB_REG_FLAG(LbrInfoMsr, tsx_abort, 61)
    PMULAB_REG_FLAG(LbrInfoMsr, in_tsx, 62)
    PMULAB_REG_FLAG(LbrInfoMsr, mispred, 63)
};
static_assert(LbrInfoMsr::cyc_cnt_field::mask == 0xFFFF && LbrInfoMsr::mispred_field::mask == 1ull << 63);

// IA32_LBR_CTL (14CEH). SDM Vol. 3B ch. 19 "Architectural LBR": enable bits (a set type
// bit records that type; OS/USR record at CPL 0 / above).
class ArchLbrCtl : public RegValue<ArchLbrCtl> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FLAG(ArchLbrCtl, lbr_en, 0)
    PMULAB_REG_FLAG(ArchLbrCtl, os, 1)
    PMULAB_REG_FLAG(ArchLbrCtl, usr, 2)
    PMULAB_REG_FLAG(ArchLbrCtl, call_stack, 3)
    PMULAB_REG_FLAG(ArchLbrCtl, cond, 16)
    PMULAB_REG_FLAG(ArchLbrCtl, near_rel_jmp, 17)
    PMULAB_REG_FLAG(ArchLbrCtl, near_ind_jmp, 18)
    PMULAB_REG_FLAG(ArchLbrCtl, near_rel_call, 19)
    PMULAB_REG_FLAG(ArchLbrCtl, near_ind_call, 20)
    PMULAB_REG_FLAG(ArchLbrCtl, near_ret, 21)
    PMULAB_REG_FLAG(ArchLbrCtl, other_branch, 22)
};
static_assert(ArchLbrCtl::other_branch_field::mask == 1ull << 22);

// CPUID leaf 1CH (SDM Vol. 2A "Last Branch Records Information Leaf").
class Cpuid1cEax : public RegValue<Cpuid1cEax> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FIELD(Cpuid1cEax, depth_mask, 7, 0)  // bit n: depth 8(n+1) supported
    PMULAB_REG_FLAG(Cpuid1cEax, deep_c_reset, 30)
    PMULAB_REG_FLAG(Cpuid1cEax, lip, 31)
};
class Cpuid1cEcx : public RegValue<Cpuid1cEcx> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FLAG(Cpuid1cEcx, mispred, 0)
    PMULAB_REG_FLAG(Cpuid1cEcx, timed_lbr, 1)  // CYC_CNT
    PMULAB_REG_FLAG(Cpuid1cEcx, br_type, 2)
};

// Legacy FROM_IP flags (formats 3, 4, 6; SDM Vol. 3B ch. 19 "LBR Stack" format table).
class LbrFromFlags : public RegValue<LbrFromFlags> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FLAG(LbrFromFlags, tsx_abort, 61)
    PMULAB_REG_FLAG(LbrFromFlags, in_tsx, 62)
    PMULAB_REG_FLAG(LbrFromFlags, mispred, 63)
};
// Format 6 (Goldmont) TO_IP: the cycle count in 63:48.
class LbrToTimed : public RegValue<LbrToTimed> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FIELD(LbrToTimed, cycles, 63, 48)
};

// AMD DBG_EXTN_CFG (C000_010FH): LBRV2EN enables the LbrExtV2 stack.
class AmdDbgExtnCfg : public RegValue<AmdDbgExtnCfg> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FLAG(AmdDbgExtnCfg, lbrv2en, 6)
};
// AMD LbrExtV2 entries: FROM 63 mispredict; TO 63 valid, 62 speculative; 57:0 the address.
class AmdLbrFrom : public RegValue<AmdLbrFrom> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FLAG(AmdLbrFrom, mispredict, 63)
};
class AmdLbrTo : public RegValue<AmdLbrTo> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FLAG(AmdLbrTo, spec, 62)
    PMULAB_REG_FLAG(AmdLbrTo, valid, 63)
};
static_assert(AmdDbgExtnCfg::lbrv2en_field::mask == 1ull << 6 && AmdLbrTo::valid_field::mask == 1ull << 63);

}  // namespace regs
}  // namespace pmulab
