// The last-branch-record stack of a simulated logical processor (owned by SimCpu), written
// from the Intel SDM Vol. 3B "Last Branch, Call Stack, Interrupt, and Exception Recording"
// (legacy LBR: IA32_DEBUGCTL.LBR, MSR_LASTBRANCH_TOS, FROM_IP/TO_IP, MSR_LBR_INFO,
// MSR_LBR_SELECT, the formats of IA32_PERF_CAPABILITIES[5:0]), its "Architectural Last
// Branch Records" chapter (CPUID 1CH, IA32_LBR_CTL/DEPTH, the FROM/TO/INFO arrays) and
// the AMD APM Vol. 2 "Last Branch Stack Extension" (LbrExtV2: CPUID 8000_0022H EAX[1],
// EBX[9:4]; DBG_EXTN_CFG.LBRV2EN; LBR_SELECT; the FROM/TO pairs at C001_0300H),
// independently of pmulab's headers.
//
// Which parts have which LBR (legacy LBR is not enumerated by CPUID): the model table in
// sim_lbr.cpp by family 06H display model; architectural LBR where CPUID.(07H,0):EDX[19]
// and leaf 1CH say so; AMD LbrExtV2 from CPUID.
//
// What is modelled: every taken branch the executor reports (SimCpu::taken_branch) is
// recorded while the facility is enabled (legacy DEBUGCTL.LBR, IA32_LBR_CTL.LBREn,
// DBG_EXTN_CFG.LBRV2EN) and not frozen (LBR_FRZ), filtered by CPL and branch type
// (LBR_SELECT bits suppress, LBR_CTL bits enable), with the cycles since the last recorded
// branch (saturating at 16 bits) where the format has them. Misprediction is never set:
// the model has no branch predictor. Not modelled: call-stack mode (the bit is accepted,
// branches are recorded as without it), TSX flags, deep C-state resets, XSAVES of the LBR
// state, 32-bit format 0 parts other than as one MSR per entry.
#pragma once

#include <vector>

#include "sim/sim_pmu.h"

namespace sim {

// The executor's kinds of taken branches (the values of x86insn::Kind, which
// sim_unicorn_run.cpp asserts).
enum class BranchKind : u8 { jcc = 2, jmp = 3, jmp_ind = 4, call = 5, call_ind = 6, ret = 7, far = 8 };

namespace reg {
inline constexpr u32 LBR_SELECT = 0x1C8, LASTBRANCH_TOS = 0x1C9;
inline constexpr u32 LBR_CORE_FROM = 0x40, LBR_CORE_TO = 0x60;  // Core 2, Atom, Silvermont
inline constexpr u32 LBR_NHM_FROM = 0x680, LBR_NHM_TO = 0x6C0;  // Nehalem and later
inline constexpr u32 LBR_INFO_0 = 0xDC0;                        // Skylake and later
inline constexpr u32 ARCH_LBR_CTL = 0x14CE, ARCH_LBR_DEPTH = 0x14CF;
inline constexpr u32 ARCH_LBR_FROM_0 = 0x1500, ARCH_LBR_TO_0 = 0x1600, ARCH_LBR_INFO_0 = 0x1200;
inline constexpr u32 AMD_LBR_SELECT = 0xC000010E, AMD_DBG_EXTN_CFG = 0xC000010F;
inline constexpr u32 AMD_LBR_FROM_0 = 0xC0010300;  // FROM_i = base + 2i, TO_i = base + 2i + 1
}  // namespace reg

struct LbrLayout {
    enum class Kind : u8 { none, legacy, arch, amd };
    Kind kind = Kind::none;
    u32 depth = 0;                   // entries (arch: the current IA32_LBR_DEPTH starts at the largest)
    u32 from = 0, to = 0, info = 0;  // legacy: MSR bases (info 0: no MSR_LBR_INFO)
    u8 format = 0;                   // legacy: IA32_PERF_CAPABILITIES[5:0]
    bool select = false;             // legacy: MSR_LBR_SELECT exists
    u8 arch_depths = 0;              // arch: CPUID.1CH:EAX[7:0] (bit n: depth 8(n+1))
    bool arch_cpl = false, arch_filter = false, arch_call_stack = false;  // 1CH:EBX[0..2]
    bool arch_mispred = false, arch_timed = false, arch_br_type = false;  // 1CH:ECX[0..2]
};
// What the CPU has: from its CPUID and IA32_PERF_CAPABILITIES (0 without PDCM).
LbrLayout lbr_layout(const CpuidSnapshot& s, u64 perf_caps);

class LbrStack {
public:
    LbrStack() = default;
    explicit LbrStack(const LbrLayout& l);
    const LbrLayout& layout() const { return layout_; }

    // MSRs: whether an address is the stack's, and RDMSR/WRMSR (0 or the fault vector).
    bool claims(u32 msr) const;
    u8 rdmsr(u32 msr, u64* v) const;
    u8 wrmsr(u32 msr, u64 v);

    // Whether branches are recorded now: enabled by its own control (legacy: `debugctl`
    // bit 0), not `frozen` and not broken.
    bool recording(u64 debugctl, bool frozen) const;
    // A taken branch at CPL `cpl` with the core cycle count `now`.
    void record(u64 from, u64 to, BranchKind kind, u8 cpl, u64 now);
    // selftest's broken LBR: nothing is recorded.
    void set_broken(bool on) { broken_ = on; }

private:
    struct Entry {
        u64 from = 0, to = 0, info = 0;
    };
    bool wanted(BranchKind kind, u8 cpl) const;
    void push(const Entry& e);
    Entry encode(u64 from, u64 to, u64 cycles) const;
    // Index i of an array MSR at `base` of `n` entries, or -1.
    static int index(u32 msr, u32 base, u32 n, u32 stride = 1);

    LbrLayout layout_;
    std::vector<Entry> e_;
    u32 tos_ = 0;         // legacy: the youngest entry
    u64 select_ = 0;      // MSR_LBR_SELECT / AMD LBR_SELECT
    u64 ctl_ = 0;         // IA32_LBR_CTL / DBG_EXTN_CFG
    u32 arch_depth_ = 0;  // IA32_LBR_DEPTH
    u64 last_ = 0;        // core cycles at the last recorded branch (0 at reset)
    bool broken_ = false;
};

}  // namespace sim
