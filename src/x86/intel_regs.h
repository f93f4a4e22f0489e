// Typed Intel architectural performance-monitoring registers.
//
// Each register value is a small class over the raw 64-bit MSR contents with a
// get/set accessor pair per field; the field layouts are pinned by static_assert
// (here and in tests/unit/x86/test_regs.cpp) and cite the SDM section that defines them.
// Setters return the object so that values chain:
//
//     PerfEvtSel v;
//     v.set_event_select(0x0E).set_umask(0x01).set_usr(true).set_en(true);
//     v.raw() == 0x0041010E
//
// Setters store only the bits of the field (a too-wide value is truncated); callers
// that take values from the user validate the range first (Bits<>::fits).
//
// The second half of this header is the per-version knowledge: which PMU MSRs exist
// on a given PmuCaps (cpuid.h), the counter widths, and the writable-bit masks of each
// control register (everything outside them is reserved: WRMSR of a reserved bit #GPs).
//
// References: Intel SDM Vol. 3B chapter 20 "Performance Monitoring" (chapter 18 in
// editions before 2023; section numbers below are the current ones), Vol. 4 Table 2-2
// (architectural MSRs). Counter indices supported by the core: GP 0..15, fixed 0..15
// (kMaxGpCounters/kMaxFixedCounters); enumeration bits beyond them are ignored.
#pragma once

#include "base/bits.h"
#include "x86/cpuid.h"
#include "x86/msr_addr.h"

namespace pmulab::regs {

inline constexpr unsigned kMaxGpCounters = 16;
inline constexpr unsigned kMaxFixedCounters = 16;

// ---------------------------------------------------------------------------
// Register values
// ---------------------------------------------------------------------------

// IA32_PERFEVTSELx (0x186 + x). SDM Vol. 3B §20.2.1.1 "Version 1 Facilities" (layout),
// §20.2.3 "Version 3" (AnyThread), Vol. 2A CPUID leaf 23H and §20.2 "Version 6" (EQ, UMASK2).
class PerfEvtSel : public RegValue<PerfEvtSel> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FIELD(PerfEvtSel, event_select, 7, 0)
    PMULAB_REG_FIELD(PerfEvtSel, umask, 15, 8)
    PMULAB_REG_FLAG(PerfEvtSel, usr, 16)          // count at CPL 1..3
    PMULAB_REG_FLAG(PerfEvtSel, os, 17)           // count at CPL 0
    PMULAB_REG_FLAG(PerfEvtSel, edge, 18)         // "E": count deasserted->asserted edges
    PMULAB_REG_FLAG(PerfEvtSel, pc, 19)           // pin control (reserved since Sandy Bridge)
    PMULAB_REG_FLAG(PerfEvtSel, intr, 20)         // "INT": APIC interrupt on overflow
    PMULAB_REG_FLAG(PerfEvtSel, any_thread, 21)   // "AnyThread" (v3+, unless deprecated)
    PMULAB_REG_FLAG(PerfEvtSel, en, 22)           // enable
    PMULAB_REG_FLAG(PerfEvtSel, inv, 23)          // invert the CMASK comparison
    PMULAB_REG_FIELD(PerfEvtSel, cmask, 31, 24)   // counter mask (threshold)
    PMULAB_REG_FLAG(PerfEvtSel, eq, 36)           // CMASK compares "equal" (leaf 23H EBX[1])
    PMULAB_REG_FIELD(PerfEvtSel, umask2, 47, 40)  // second unit mask (leaf 23H EBX[0])
};
static_assert(PerfEvtSel::event_select_field::mask == 0x00000000000000FFull);
static_assert(PerfEvtSel::umask_field::mask == 0x000000000000FF00ull);
static_assert(PerfEvtSel::usr_field::mask == 1ull << 16);
static_assert(PerfEvtSel::os_field::mask == 1ull << 17);
static_assert(PerfEvtSel::edge_field::mask == 1ull << 18);
static_assert(PerfEvtSel::pc_field::mask == 1ull << 19);
static_assert(PerfEvtSel::intr_field::mask == 1ull << 20);
static_assert(PerfEvtSel::any_thread_field::mask == 1ull << 21);
static_assert(PerfEvtSel::en_field::mask == 1ull << 22);
static_assert(PerfEvtSel::inv_field::mask == 1ull << 23);
static_assert(PerfEvtSel::cmask_field::mask == 0x00000000FF000000ull);
static_assert(PerfEvtSel::eq_field::mask == 1ull << 36);
static_assert(PerfEvtSel::umask2_field::mask == 0x0000FF0000000000ull);
// The worked examples of the SDM seeds: UOPS_ISSUED.ANY (0E.01) USR+EN, and
// DTLB_MISSES.ANY (08.01) USR+OS without and with EN.
static_assert(PerfEvtSel().set_event_select(0x0E).set_umask(0x01).set_usr(true).set_en(true).raw() == 0x0041010E);
static_assert(PerfEvtSel().set_event_select(0x08).set_umask(0x01).set_usr().set_os().raw() == 0x00030108);
static_assert(PerfEvtSel().set_event_select(0x08).set_umask(0x01).set_usr().set_os().set_en().raw() == 0x00430108);

// IA32_FIXED_CTR_CTRL (0x38D): 4 bits per fixed counter i at 4i, for counters 0-7 only.
// SDM Vol. 3B §20.2.2 "Version 2" (OS, USR, PMI), §20.2.3 "Version 3" (AnyThread). Bits
// 32+4i and 33+4i are not the groups of counters 8+: they are FIXED_CTRi's adaptive-PEBS
// enable and RDPMC user-disable bits (Linux INTEL_FIXED_0_ADAPTIVE, bit 32, and
// INTEL_FIXED_0_RDPMC_USER_DISABLE, bit 33), so fixed counters >= 8 have no enable here
// and pmulab never programs them (regs::fixed_counters clips them).
class FixedCtrCtrl : public RegValue<FixedCtrCtrl> {
public:
    using RegValue::RegValue;
    static constexpr unsigned kStride = 4;
    static constexpr unsigned kGroups = 8;  // counters with an OS/USR/AnyThread/PMI group
    // Bit positions inside one counter's 4-bit group.
    static constexpr unsigned kOs = 0, kUsr = 1, kAnyThread = 2, kPmi = 3;
    // The ENi field: bits [1:0] of the group (0 off, 1 OS, 2 USR, 3 all rings).
    static constexpr u64 kEnField = 0x3;
    static constexpr bool has_group(unsigned counter) { return counter < kGroups; }
    static constexpr unsigned bit(unsigned counter, unsigned which) { return counter * kStride + which; }
    // All four bits of counter i in place (0 for counters without a group).
    static constexpr u64 group_mask(unsigned counter) {
        return has_group(counter) ? u64(0xF) << (counter * kStride) : 0;
    }
    // FIXED_CTRi's adaptive-PEBS and RDPMC user-disable bits (i < 8).
    static constexpr unsigned adaptive_bit(unsigned counter) { return 32 + counter * kStride; }
    static constexpr unsigned rdpmc_user_disable_bit(unsigned counter) { return 33 + counter * kStride; }

    constexpr bool os(unsigned i) const { return has_group(i) && get_bit(bit(i, kOs)); }
    constexpr bool usr(unsigned i) const { return has_group(i) && get_bit(bit(i, kUsr)); }
    constexpr bool any_thread(unsigned i) const { return has_group(i) && get_bit(bit(i, kAnyThread)); }
    constexpr bool pmi(unsigned i) const { return has_group(i) && get_bit(bit(i, kPmi)); }
    constexpr FixedCtrCtrl& set_os(unsigned i, bool v = true) { return set_in_group(i, kOs, v); }
    constexpr FixedCtrCtrl& set_usr(unsigned i, bool v = true) { return set_in_group(i, kUsr, v); }
    constexpr FixedCtrCtrl& set_any_thread(unsigned i, bool v = true) { return set_in_group(i, kAnyThread, v); }
    constexpr FixedCtrCtrl& set_pmi(unsigned i, bool v = true) { return set_in_group(i, kPmi, v); }
    // The 2-bit enable field of counter i.
    constexpr u64 en(unsigned i) const { return has_group(i) ? (raw_ >> (i * kStride)) & kEnField : 0; }
    constexpr bool enabled(unsigned i) const { return en(i) != 0; }
    // Whole 4-bit group of counter i (value 0..15).
    constexpr u64 group(unsigned i) const { return has_group(i) ? (raw_ >> (i * kStride)) & 0xF : 0; }
    constexpr FixedCtrCtrl& set_group(unsigned i, u64 v) {
        if (has_group(i)) raw_ = (raw_ & ~group_mask(i)) | ((v & 0xF) << (i * kStride));
        return *this;
    }

private:
    constexpr FixedCtrCtrl& set_in_group(unsigned i, unsigned which, bool v) {
        return has_group(i) ? set_bit(bit(i, which), v) : *this;
    }
};
// Counter 8 has no group: its "OS" bit would be FIXED_CTR0's adaptive-PEBS bit.
static_assert(FixedCtrCtrl().set_os(8).set_usr(8).set_pmi(9).raw() == 0 && FixedCtrCtrl::group_mask(8) == 0);
static_assert(FixedCtrCtrl::adaptive_bit(0) == 32 && FixedCtrCtrl::rdpmc_user_disable_bit(1) == 37);
static_assert(FixedCtrCtrl::bit(0, FixedCtrCtrl::kOs) == 0 && FixedCtrCtrl::bit(0, FixedCtrCtrl::kUsr) == 1);
static_assert(FixedCtrCtrl::bit(0, FixedCtrCtrl::kAnyThread) == 2 && FixedCtrCtrl::bit(0, FixedCtrCtrl::kPmi) == 3);
static_assert(FixedCtrCtrl::bit(2, FixedCtrCtrl::kOs) == 8 && FixedCtrCtrl::group_mask(1) == 0xF0);
static_assert(FixedCtrCtrl().set_os(0).set_usr(0).set_os(1).set_usr(1).set_os(2).set_usr(2).raw() == 0x333);

// IA32_PERF_GLOBAL_CTRL (0x38F), v2+. SDM Vol. 3B §20.2.2 "Version 2" (PMCi enable at
// bit i, FIXED_CTRi enable at bit 32+i), "Performance Metrics" (EN_PERF_METRICS, bit 48).
class PerfGlobalCtrl : public RegValue<PerfGlobalCtrl> {
public:
    using RegValue::RegValue;
    static constexpr unsigned kFixedBase = 32;
    static constexpr unsigned pmc_bit(unsigned i) { return i; }
    static constexpr unsigned fixed_bit(unsigned i) { return kFixedBase + i; }
    PMULAB_REG_FIELD(PerfGlobalCtrl, pmc_enables, 31, 0)
    PMULAB_REG_FIELD(PerfGlobalCtrl, fixed_enables, 47, 32)
    PMULAB_REG_FLAG(PerfGlobalCtrl, en_perf_metrics, 48)
    constexpr bool pmc(unsigned i) const { return i < 32 && get_bit(pmc_bit(i)); }
    constexpr bool fixed(unsigned i) const { return i < kMaxFixedCounters && get_bit(fixed_bit(i)); }
    constexpr PerfGlobalCtrl& set_pmc(unsigned i, bool v = true) { return i < 32 ? set_bit(pmc_bit(i), v) : *this; }
    constexpr PerfGlobalCtrl& set_fixed(unsigned i, bool v = true) {
        return i < kMaxFixedCounters ? set_bit(fixed_bit(i), v) : *this;
    }
};
static_assert(PerfGlobalCtrl::fixed_bit(0) == 32 && PerfGlobalCtrl::en_perf_metrics_field::mask == 1ull << 48);
static_assert(PerfGlobalCtrl().set_pmc(0).set_pmc(1).set_fixed(0).set_fixed(2).raw() == 0x0000000500000003ull);

// IA32_PERF_GLOBAL_STATUS (0x38E, read-only), v2+, and the registers that share its
// layout bit for bit: IA32_PERF_GLOBAL_OVF_CTRL (0x390, v2/v3: write 1 to clear),
// IA32_PERF_GLOBAL_STATUS_RESET (0x390, v4+: write 1 to clear) and
// IA32_PERF_GLOBAL_STATUS_SET (0x391, v4+: write 1 to set). SDM Vol. 3B §20.2.2
// "Version 2", §20.2.4 "Version 4" (STATUS_RESET/SET, freeze bits), "Performance
// Metrics" (bit 48).
class PerfGlobalStatus : public RegValue<PerfGlobalStatus> {
public:
    using RegValue::RegValue;
    static constexpr unsigned kFixedBase = 32;
    PMULAB_REG_FIELD(PerfGlobalStatus, pmc_ovf, 31, 0)
    PMULAB_REG_FIELD(PerfGlobalStatus, fixed_ovf, 47, 32)
    PMULAB_REG_FLAG(PerfGlobalStatus, perf_metrics_ovf, 48)
    PMULAB_REG_FLAG(PerfGlobalStatus, trace_topa_pmi, 55)
    PMULAB_REG_FLAG(PerfGlobalStatus, lbr_frz, 58)     // v4
    PMULAB_REG_FLAG(PerfGlobalStatus, ctr_frz, 59)     // v4
    PMULAB_REG_FLAG(PerfGlobalStatus, asci, 60)        // v4
    PMULAB_REG_FLAG(PerfGlobalStatus, ovf_uncore, 61)  // v3+
    PMULAB_REG_FLAG(PerfGlobalStatus, ovf_buf, 62)     // DS buffer (PEBS/BTS) overflow
    PMULAB_REG_FLAG(PerfGlobalStatus, cond_chgd, 63)
    constexpr bool pmc(unsigned i) const { return i < 32 && get_bit(i); }
    constexpr bool fixed(unsigned i) const { return i < kMaxFixedCounters && get_bit(kFixedBase + i); }
    constexpr PerfGlobalStatus& set_pmc(unsigned i, bool v = true) { return i < 32 ? set_bit(i, v) : *this; }
    constexpr PerfGlobalStatus& set_fixed(unsigned i, bool v = true) {
        return i < kMaxFixedCounters ? set_bit(kFixedBase + i, v) : *this;
    }
};
using PerfGlobalOvfCtrl = PerfGlobalStatus;
using PerfGlobalStatusReset = PerfGlobalStatus;
using PerfGlobalStatusSet = PerfGlobalStatus;
static_assert(PerfGlobalStatus::cond_chgd_field::mask == 1ull << 63 &&
              PerfGlobalStatus::ovf_buf_field::mask == 1ull << 62 &&
              PerfGlobalStatus::ovf_uncore_field::mask == 1ull << 61 &&
              PerfGlobalStatus::asci_field::mask == 1ull << 60 && PerfGlobalStatus::ctr_frz_field::mask == 1ull << 59 &&
              PerfGlobalStatus::lbr_frz_field::mask == 1ull << 58 &&
              PerfGlobalStatus::trace_topa_pmi_field::mask == 1ull << 55 &&
              PerfGlobalStatus::perf_metrics_ovf_field::mask == 1ull << 48);

// IA32_PERF_GLOBAL_INUSE (0x392, read-only), v4+. SDM Vol. 3B §20.2.4 "Version 4".
class PerfGlobalInUse : public RegValue<PerfGlobalInUse> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FIELD(PerfGlobalInUse, pmc_in_use, 31, 0)     // PERFEVTSELi[7:0] != 0
    PMULAB_REG_FIELD(PerfGlobalInUse, fixed_in_use, 47, 32)  // FIXED_CTR_CTRL ENi != 0
    PMULAB_REG_FLAG(PerfGlobalInUse, pmi_in_use, 63)
    constexpr bool pmc(unsigned i) const { return i < 32 && get_bit(i); }
    constexpr bool fixed(unsigned i) const { return i < kMaxFixedCounters && get_bit(32 + i); }
};
static_assert(PerfGlobalInUse::pmi_in_use_field::mask == 1ull << 63);

// IA32_PERF_CAPABILITIES (0x345, read-only; exists when CPUID.01H:ECX.PDCM[15] = 1).
// SDM Vol. 4 Table 2-2 (IA32_PERF_CAPABILITIES), Vol. 3B §20.2.6 (FW_WRITE),
// "Performance Metrics" (PERF_METRICS).
class PerfCapabilities : public RegValue<PerfCapabilities> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FIELD(PerfCapabilities, lbr_fmt, 5, 0)
    PMULAB_REG_FLAG(PerfCapabilities, pebs_trap, 6)
    PMULAB_REG_FLAG(PerfCapabilities, pebs_arch_reg, 7)
    PMULAB_REG_FIELD(PerfCapabilities, pebs_rec_fmt, 11, 8)
    PMULAB_REG_FLAG(PerfCapabilities, smm_frz, 12)
    PMULAB_REG_FLAG(PerfCapabilities, fw_write, 13)  // IA32_A_PMCx full-width writes
    PMULAB_REG_FLAG(PerfCapabilities, pebs_baseline, 14)
    PMULAB_REG_FLAG(PerfCapabilities, perf_metrics, 15)  // MSR_PERF_METRICS available
    PMULAB_REG_FLAG(PerfCapabilities, pebs_output_pt_avail, 16)
    PMULAB_REG_FLAG(PerfCapabilities, pebs_timing_info, 17)
    PMULAB_REG_FLAG(PerfCapabilities, rdpmc_metrics_clear, 19)
};
static_assert(PerfCapabilities::lbr_fmt_field::mask == 0x3F && PerfCapabilities::pebs_rec_fmt_field::mask == 0xF00);
static_assert(PerfCapabilities::fw_write_field::mask == 1ull << 13 &&
              PerfCapabilities::perf_metrics_field::mask == 1ull << 15);

// IA32_DEBUGCTL (0x1D9). SDM Vol. 3B §18.4.1 "IA32_DEBUGCTL MSR", §20.8.1 (freeze
// while SMM); FREEZE_WHILE_SMM exists where IA32_PERF_CAPABILITIES[12] (smm_frz) is set.
class DebugCtl : public RegValue<DebugCtl> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FLAG(DebugCtl, lbr, 0)
    PMULAB_REG_FLAG(DebugCtl, btf, 1)
    PMULAB_REG_FLAG(DebugCtl, freeze_lbrs_on_pmi, 11)  // §18.4.7 (AMD: LbrAndPmcFreeze)
    PMULAB_REG_FLAG(DebugCtl, freeze_perfmon_on_pmi, 12)
    PMULAB_REG_FLAG(DebugCtl, freeze_while_smm, 14)  // counters stop while the CPU is in SMM
};
static_assert(DebugCtl::freeze_while_smm_field::mask == 1ull << 14);
static_assert(PerfCapabilities::smm_frz_field::mask == 1ull << 12);

// MSR_PERF_METRICS (0x329): the topdown level-1 (and, where supported, level-2)
// metrics as 8-bit fractions of TOPDOWN.SLOTS (value/0xFF). SDM Vol. 3B, Ice Lake
// section "Performance Metrics" (level-2 fields from Sapphire Rapids).
class PerfMetrics : public RegValue<PerfMetrics> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FIELD(PerfMetrics, retiring, 7, 0)
    PMULAB_REG_FIELD(PerfMetrics, bad_speculation, 15, 8)
    PMULAB_REG_FIELD(PerfMetrics, frontend_bound, 23, 16)
    PMULAB_REG_FIELD(PerfMetrics, backend_bound, 31, 24)
    PMULAB_REG_FIELD(PerfMetrics, heavy_operations, 39, 32)
    PMULAB_REG_FIELD(PerfMetrics, branch_mispredicts, 47, 40)
    PMULAB_REG_FIELD(PerfMetrics, fetch_latency, 55, 48)
    PMULAB_REG_FIELD(PerfMetrics, memory_bound, 63, 56)
};
static_assert(PerfMetrics::backend_bound_field::mask == 0xFF000000ull &&
              PerfMetrics::memory_bound_field::mask == 0xFF00000000000000ull);

// ---------------------------------------------------------------------------
// Counter addresses, widths, writes
// ---------------------------------------------------------------------------

// SDM Vol. 3B §20.2.1 (IA32_PMCx at 0C1H + x, IA32_PERFEVTSELx at 186H + x),
// §20.2.2 (IA32_FIXED_CTRx at 309H + x), §20.2.6 (IA32_A_PMCx at 4C1H + x).
constexpr u32 pmc_msr(unsigned i) { return msr::IA32_PMC0 + i; }
constexpr u32 a_pmc_msr(unsigned i) { return msr::IA32_A_PMC0 + i; }
constexpr u32 perfevtsel_msr(unsigned i) { return msr::IA32_PERFEVTSEL0 + i; }
constexpr u32 fixed_ctr_msr(unsigned i) { return msr::IA32_FIXED_CTR0 + i; }
static_assert(pmc_msr(1) == 0xC2 && perfevtsel_msr(1) == 0x187 && fixed_ctr_msr(2) == 0x30B && a_pmc_msr(3) == 0x4C4);

// Model-specific MSRs that raw nanoBench-style specs can program alongside an event
// (SDM Vol. 4 model tables: off-core response, PEBS load latency, PEBS front-end).
inline constexpr u32 MSR_OFFCORE_RSP_0 = 0x1A6;
inline constexpr u32 MSR_OFFCORE_RSP_1 = 0x1A7;
inline constexpr u32 MSR_PEBS_LD_LAT_THRESHOLD = 0x3F6;
inline constexpr u32 MSR_PEBS_FRONTEND = 0x3F7;

// Value mask of a counter `width` bits wide.
constexpr u64 counter_mask(unsigned width) { return low_mask(width); }

// What a legacy WRMSR to IA32_PMCx leaves in a counter `width` bits wide: only
// bits 31:0 of the value are written and bit 31 is sign-extended into the upper
// counter bits (SDM Vol. 3B §20.2.1 "write operations ... bits 31:0 ... sign extended",
// §20.2.6). Writing 0xFFFFFFFF to a 48-bit counter leaves 0xFFFFFFFFFFFF; writing
// 0x1_0000_0005 leaves 5.
constexpr u64 legacy_pmc_write_result(u64 written, unsigned width) {
    u64 low = written & 0xFFFFFFFFull;
    u64 ext = (low & 0x80000000ull) ? (low | 0xFFFFFFFF00000000ull) : low;
    return ext & counter_mask(width);
}
static_assert(legacy_pmc_write_result(0xFFFFFFFFull, 48) == 0xFFFFFFFFFFFFull);
static_assert(legacy_pmc_write_result(0x100000005ull, 48) == 5);
static_assert(legacy_pmc_write_result(0x7FFFFFFFull, 48) == 0x7FFFFFFFull);
static_assert(legacy_pmc_write_result(0x80000000ull, 40) == 0xFF80000000ull);

// Full-width writes through IA32_A_PMCx (PERF_CAPABILITIES.FW_WRITE) store the value
// as is; bits at and above the counter width are reserved (#GP when set).
constexpr bool full_width_write_valid(u64 written, unsigned width) { return (written & ~counter_mask(width)) == 0; }

// Fixed counters take full-width writes at their own addresses (SDM Vol. 3B §20.2.2).
// The counter value to preload so that it overflows (wraps to 0) after `n` more
// increments: 2^width - n, masked. n = 0 gives 0.
constexpr u64 preload_for_overflow_after(u64 n, unsigned width) { return (u64(0) - n) & counter_mask(width); }
static_assert(preload_for_overflow_after(1, 48) == 0xFFFFFFFFFFFFull);

// Increments between two readings of a counter `width` bits wide, across one wrap.
constexpr u64 counter_delta(u64 before, u64 after, unsigned width) { return (after - before) & counter_mask(width); }
static_assert(counter_delta(0xFFFFFFFFFFF0ull, 0x10, 48) == 0x20);

// ---------------------------------------------------------------------------
// Per-version knowledge (functions of CPUID-derived PmuCaps)
// ---------------------------------------------------------------------------

// Counters of this PMU, clipped to what the core supports (bit i = counter i).
u32 gp_counters(const PmuCaps& c);     // PmuCaps::gp_counter_mask() & low_mask(kMaxGpCounters)
u32 fixed_counters(const PmuCaps& c);  // PmuCaps::fixed_counter_mask() (v2+) & low_mask(kMaxFixedCounters)

// Counter widths in bits: GP from CPUID.0AH:EAX[23:16]; fixed from EDX[12:5], or the
// GP width where fixed counters exist but EDX reports no width (Core 2, see
// PmuCaps::fixed_count_quirk). 0 when there are no such counters.
unsigned gp_counter_width(const PmuCaps& c);
unsigned fixed_counter_width(const PmuCaps& c);

bool has_global_ctrl(const PmuCaps& c);              // v2+: FIXED_CTR_CTRL, GLOBAL_CTRL/STATUS/OVF_CTRL
bool has_global_status_reset_set(const PmuCaps& c);  // v4+: STATUS_RESET/SET, GLOBAL_INUSE
bool has_anythread(const PmuCaps& c);                // v3+ and not CPUID.0AH:EDX[15] (deprecated)
bool has_perf_capabilities(const PmuCaps& c);        // PDCM: IA32_PERF_CAPABILITIES was read
bool has_full_width_writes(const PmuCaps& c);        // PERF_CAPABILITIES.FW_WRITE: IA32_A_PMCx exist
bool has_perf_metrics(const PmuCaps& c);             // PERF_CAPABILITIES.PERF_METRICS and fixed counter 3

// Writable bits (the complement is reserved) of each control register on this PMU.
// PERFEVTSELx: bits 0..20, 22..31 (v1); AnyThread 21 when has_anythread; EQ 36 and
// UMASK2 47:40 when leaf 23H enumerates them. Model-specific bits (IN_TX 32, IN_TX_CP
// 33, adaptive PEBS 34, ...) are not included.
u64 perfevtsel_writable_mask(const PmuCaps& c);
// FIXED_CTR_CTRL: OS, USR, PMI of each fixed counter; AnyThread when has_anythread.
u64 fixed_ctr_ctrl_writable_mask(const PmuCaps& c);
// GLOBAL_CTRL: one enable per GP and fixed counter; EN_PERF_METRICS with perf metrics.
u64 global_ctrl_writable_mask(const PmuCaps& c);
// Bits GLOBAL_STATUS may report: counters, PERF_METRICS_OVF (with perf metrics),
// OvfBuf and CondChgd (v2+), Ovf_Uncore (v3+), Trace_ToPA_PMI, LBR_Frz, CTR_Frz,
// ASCI (v4+).
u64 global_status_bits(const PmuCaps& c);
// GLOBAL_OVF_CTRL (v2/v3) and GLOBAL_STATUS_RESET (v4+): every status bit can be
// cleared. GLOBAL_STATUS_SET (v4+): every status bit except CondChgd.
u64 global_ovf_ctrl_writable_mask(const PmuCaps& c);
u64 global_status_set_writable_mask(const PmuCaps& c);
// GLOBAL_INUSE (v4+, read-only): counters and PMI_InUse.
u64 global_inuse_bits(const PmuCaps& c);

// Architectural PMU MSRs: SDM name of an address ("IA32_PMC3", "IA32_A_PMC0",
// "IA32_PERF_GLOBAL_STATUS_RESET" on v4+ / "IA32_PERF_GLOBAL_OVF_CTRL" before, ...).
// Returns false (and writes "MSR 0x...") when the address is not an architectural PMU
// MSR known here.
bool pmu_msr_name(const PmuCaps& c, u32 msr, StrBuf& out);
// Whether the architectural PMU MSR `msr` exists on this PMU; the error (Errc::unsupported)
// says why not and what would be needed, e.g. "IA32_PERF_GLOBAL_CTRL (0x38F) does not
// exist: architectural PMU version 1 (it needs version 2 or later)".
Status pmu_msr_check(const PmuCaps& c, u32 msr);
inline bool pmu_msr_exists(const PmuCaps& c, u32 msr) { return pmu_msr_check(c, msr).ok(); }
// Bits a WRMSR to an existing PMU MSR may set without #GP: IA32_PMCx any value (a
// legacy write; see legacy_pmc_write_result), IA32_A_PMCx and IA32_FIXED_CTRx their
// counter width, control registers the masks above, read-only MSRs 0. 0 for MSRs that
// do not exist.
u64 pmu_msr_writable_mask(const PmuCaps& c, u32 msr);

// Formats a counter bitmap compactly: "PMC0-3", "PMC0,1,4-7", "FIXED_CTR0,3", "none".
void put_counter_set(StrBuf& out, u32 mask, const char* prefix);

}  // namespace pmulab::regs
