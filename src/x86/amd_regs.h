// Typed AMD core performance-monitoring registers (family 10h and later: K10,
// Bulldozer, Zen 1-5), in the style of intel_regs.h.
//
// References: AMD64 Architecture Programmer's Manual (APM) Vol. 2 §13.2 "Performance
// Monitoring Counters" (PerfEvtSel layout, legacy and extended counter MSRs, PerfMonV2
// global control), Vol. 3 Appendix E (CPUID Fn8000_0001_ECX[23] PerfCtrExtCore,
// Fn8000_0022 PerfMonV2, Fn8000_0008_EBX[1] InstRetCntMsr, Fn0000_0006_ECX[0] EffFreq),
// and the family 17h/19h/1Ah PPRs (HWCR, IRPerfCount, MPERF/APERF read-only aliases).
#pragma once

#include "base/bits.h"
#include "x86/msr_addr.h"

namespace pmulab::regs::amd {

inline constexpr unsigned kLegacyCounters = 4;  // PerfEvtSel0-3 / PerfCtr0-3 (K7 and later)
inline constexpr unsigned kExtCounters = 6;     // PerfCtrExtCore (CPUID Fn8000_0001_ECX[23])
inline constexpr unsigned kMaxCounters = 16;    // PerfMonV2 NumPerfCtrCore is 4 bits
inline constexpr unsigned kCounterWidth = 48;   // APM §13.2.1: "48-bit" performance counters

// PerfEvtSeln (legacy C001_0000h + n, or PERF_CTL n at C001_0200h + 2n). APM Vol. 2
// §13.2.1 Figure 13-7 "Core Performance Event-Select Register (PerfEvtSeln)".
// No pin control (19) and no AnyThread (21): those bits are reserved on AMD.
class PerfEvtSel : public RegValue<PerfEvtSel> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FIELD(PerfEvtSel, event_lo, 7, 0)    // EventSelect[7:0]
    PMULAB_REG_FIELD(PerfEvtSel, umask, 15, 8)      // UnitMask
    PMULAB_REG_FLAG(PerfEvtSel, usr, 16)            // count at CPL > 0
    PMULAB_REG_FLAG(PerfEvtSel, os, 17)             // count at CPL 0
    PMULAB_REG_FLAG(PerfEvtSel, edge, 18)           // "E": edge detect
    PMULAB_REG_FLAG(PerfEvtSel, intr, 20)           // "INT": APIC interrupt on overflow
    PMULAB_REG_FLAG(PerfEvtSel, en, 22)             // counter enable
    PMULAB_REG_FLAG(PerfEvtSel, inv, 23)            // invert the CntMask comparison
    PMULAB_REG_FIELD(PerfEvtSel, cmask, 31, 24)     // CntMask (threshold)
    PMULAB_REG_FIELD(PerfEvtSel, event_hi, 35, 32)  // EventSelect[11:8]
    PMULAB_REG_FLAG(PerfEvtSel, guest_only, 40)     // HG_ONLY[0]: count only in SVM guest mode
    PMULAB_REG_FLAG(PerfEvtSel, host_only, 41)      // HG_ONLY[1]: count only in host mode

    // The 12-bit event select spread over 7:0 and 35:32.
    constexpr u64 event_select() const { return event_lo() | (event_hi() << 8); }
    constexpr PerfEvtSel& set_event_select(u64 ev) { return set_event_lo(ev & 0xFF).set_event_hi((ev >> 8) & 0xF); }
    static constexpr bool event_fits(u64 ev) { return ev <= 0xFFF; }
};
static_assert(PerfEvtSel::event_lo_field::mask == 0xFFull && PerfEvtSel::umask_field::mask == 0xFF00ull);
static_assert(PerfEvtSel::usr_field::mask == 1ull << 16 && PerfEvtSel::os_field::mask == 1ull << 17);
static_assert(PerfEvtSel::edge_field::mask == 1ull << 18 && PerfEvtSel::intr_field::mask == 1ull << 20);
static_assert(PerfEvtSel::en_field::mask == 1ull << 22 && PerfEvtSel::inv_field::mask == 1ull << 23);
static_assert(PerfEvtSel::cmask_field::mask == 0xFF000000ull);
static_assert(PerfEvtSel::event_hi_field::mask == 0xF00000000ull);
static_assert(PerfEvtSel::guest_only_field::mask == 1ull << 40 && PerfEvtSel::host_only_field::mask == 1ull << 41);
// Retired instructions (C0h) USR+OS+EN; and the 12-bit select 1C1h lands in 35:32.
static_assert(PerfEvtSel().set_event_select(0xC0).set_usr().set_os().set_en().raw() == 0x004300C0ull);
static_assert(PerfEvtSel().set_event_select(0x1C1).set_umask(0x02).set_usr().raw() == 0x00000001000102C1ull);
// Writable bits: everything above except the reserved 19, 21, 39:36 and 63:42.
inline constexpr u64 kPerfEvtSelWritable = 0xFFull | 0xFF00ull | (1ull << 16) | (1ull << 17) | (1ull << 18) |
                                           (1ull << 20) | (1ull << 22) | (1ull << 23) | 0xFF000000ull | 0xF00000000ull |
                                           (1ull << 40) | (1ull << 41);
static_assert(kPerfEvtSelWritable == 0x30FFFD7FFFFull);

// PerfCntrGlobalCtl (C000_0301h), PerfCntrGlobalStatus (C000_0300h, read-only),
// PerfCntrGlobalStatusClr (C000_0302h), PerfCntrGlobalStatusSet (C000_0303h): one bit per
// core counter (bit i = PERF_CTR i). APM Vol. 2 §13.2.2 "Performance Monitoring
// Version 2" (PerfMonV2; CPUID Fn8000_0022_EAX[0]). Status bit 59 (PMCF, counters
// frozen) and 58 (LBR frozen) exist with LbrAndPmcFreeze; pmulab does not use them.
class GlobalCtl : public RegValue<GlobalCtl> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FIELD(GlobalCtl, counters, 15, 0)
    constexpr bool counter(unsigned i) const { return i < kMaxCounters && get_bit(i); }
    constexpr GlobalCtl& set_counter(unsigned i, bool v = true) { return i < kMaxCounters ? set_bit(i, v) : *this; }
};
using GlobalStatus = GlobalCtl;
static_assert(GlobalCtl().set_counter(0).set_counter(5).raw() == 0x21);

// HWCR (C001_0015h), PPR "MSRC001_0015 [Hardware Configuration] (Core::X86::Msr::HWCR)":
// bit 30 IRPerfEn enables IRPerfCount (C000_00E9h), the free-running retired-instruction
// counter (CPUID Fn8000_0008_EBX[1] InstRetCntMsr).
class Hwcr : public RegValue<Hwcr> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FLAG(Hwcr, ir_perf_en, 30)
};
static_assert(Hwcr::ir_perf_en_field::mask == 1ull << 30);

// DE_CFG (C001_1029h), "Decode Configuration" (family 10h and later; AMD's software
// techniques for managing speculation, 2018): bit 1 LfenceSerializing makes LFENCE
// dispatch-serialising. Linux sets it at boot (amd_set_dispatch_serializing / init_amd);
// firmware may leave it clear, and then LFENCE does not order RDPMC/RDTSC.
class DeCfg : public RegValue<DeCfg> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FLAG(DeCfg, lfence_serializing, 1)
};
static_assert(DeCfg::lfence_serializing_field::mask == 1ull << 1);
// DE_CFG exists from family 10h on (Linux reads it for family >= 10h).
constexpr bool has_de_cfg(u32 family) { return family >= 0x10; }

// IRPerfCount (C000_00E9h): InstRetCnt[47:0] (PPR), 48 bits; counts every retired
// instruction at every privilege level once HWCR.IRPerfEn is set (no USR/OS filter).
inline constexpr unsigned kIrPerfWidth = 48;
// MPERF/APERF (E7h/E8h, read-only aliases C000_00E7h/E8h): 64-bit free-running counters
// of P0-frequency and actual clocks in C0 (CPUID Fn0000_0006_ECX[0] EffFreq).
inline constexpr unsigned kAperfMperfWidth = 64;

// Counter MSR addresses. Legacy: PerfEvtSeln = C001_0000h + n, PerfCtrn = C001_0004h + n
// (n < 4). PerfCtrExtCore: PERF_CTL n = C001_0200h + 2n, PERF_CTR n = C001_0201h + 2n
// (the legacy addresses alias counters 0-3). APM Vol. 2 §13.2.1.
constexpr u32 ctl_msr(unsigned i, bool ext) {
    return ext ? msr::AMD_PERF_CTL_EXT0 + 2 * i : msr::AMD_PERF_EVT_SEL0 + i;
}
constexpr u32 ctr_msr(unsigned i, bool ext) { return ext ? msr::AMD_PERF_CTR_EXT0 + 2 * i : msr::AMD_PERF_CTR0 + i; }
static_assert(ctl_msr(5, true) == 0xC001020A && ctr_msr(5, true) == 0xC001020B);
static_assert(ctl_msr(3, false) == 0xC0010003 && ctr_msr(3, false) == 0xC0010007);

// The "fixed-like" free-running counters pmulab offers on AMD, as CounterKind::fixed
// indices (they mirror Intel's fixed counters 0-2: instructions, core clocks, reference).
enum FixedLike : u8 {
    kFixedIrPerf = 0,  // IRPerfCount: retired instructions
    kFixedAperf = 1,   // APERF: actual clocks in C0
    kFixedMperf = 2,   // MPERF: P0-frequency clocks in C0
    kFixedLikeCount = 3,
};
// MSR read for each fixed-like counter: for APERF/MPERF the read-only aliases
// C000_00E8H/E7H where CPUID Fn8000_0007_EDX[10] EffFreqRO enumerates them (writes cannot
// disturb them), else the architectural E8H/E7H (Fn0000_0006_ECX[0] EffFreq; K8-K10 have
// no aliases).
constexpr u32 fixed_like_msr(unsigned i, bool efffreq_ro) {
    if (i == kFixedIrPerf) return msr::AMD_IRPERF_COUNT;
    if (i == kFixedAperf) return efffreq_ro ? msr::AMD_APERF_RO : msr::IA32_APERF;
    return efffreq_ro ? msr::AMD_MPERF_RO : msr::IA32_MPERF;
}
static_assert(fixed_like_msr(kFixedAperf, false) == 0xE8 && fixed_like_msr(kFixedMperf, true) == 0xC00000E7);
const char* fixed_like_name(unsigned i);  // "IRPerfCount", "APERF", "MPERF"

}  // namespace pmulab::regs::amd
