// Processor event-based sampling (PEBS): its MSRs, the 64-bit DS save area and the PEBS
// record formats 0-5 (docs/sampling.md "Precise sampling (PEBS)").
//   SDM Vol. 3B §20.6.2.1  the DS save area (IA32_DS_AREA, 600H) and its PEBS fields
//   SDM Vol. 3B §20.6.2.2  PEBS record formats (IA32_PERF_CAPABILITIES[11:8])
//   SDM Vol. 3B §20.3.1.1  load latency (MSR_PEBS_LD_LAT_THRESHOLD, 3F6H), Nehalem on
//   SDM Vol. 3B §20.9      adaptive PEBS (Ice Lake on: MSR_PEBS_DATA_CFG, 3F2H, groups)
#pragma once

#include "base/bits.h"

namespace pmulab::regs::pebs {

inline constexpr u32 IA32_DS_AREA = 0x600;
inline constexpr u32 MSR_PEBS_DATA_CFG = 0x3F2;
// (IA32_PEBS_ENABLE: msr::IA32_PEBS_ENABLE; MSR_PEBS_LD_LAT_THRESHOLD: intel_regs.h.)

// IA32_PEBS_ENABLE (3F1H): bit i enables PEBS on IA32_PMCi; before perfmon v5 bits 32+i
// (i < 4) are LL_EN_PMCi, load latency on that counter (SDM Vol. 3B §20.3.1.1.2); from
// v5 (adaptive PEBS) bits 32+i enable fixed counter i instead.
class PebsEnable : public RegValue<PebsEnable> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FIELD(PebsEnable, pmc_bits, 31, 0)
    PMULAB_REG_FIELD(PebsEnable, ll_bits, 35, 32)  // before v5
    constexpr PebsEnable& set_pmc(unsigned i) { return i < 32 ? set_bit(i, true) : *this; }
    constexpr PebsEnable& set_ll(unsigned i) { return i < 4 ? set_bit(32 + i, true) : *this; }
    // v5 (adaptive PEBS, SDM Vol. 3B §20.9 fixed-counter PEBS): fixed counter i.
    constexpr PebsEnable& set_fixed(unsigned i) { return i < 16 ? set_bit(32 + i, true) : *this; }
};
static_assert(PebsEnable().set_pmc(1).set_ll(1).raw() == 0x0000000200000002ull);
static_assert(PebsEnable().set_fixed(0).raw() == 0x0000000100000000ull);
// Format 5 on: every enumerated GP counter has its bit (bit 9: PMC9 of Lion Cove's ten),
// and SLOTS, fixed counter 3, bit 35.
static_assert(PebsEnable().set_pmc(9).set_fixed(3).raw() == 0x0000000800000200ull);

// MSR_PEBS_DATA_CFG (3F2H), adaptive PEBS: the groups after the basic group.
class PebsDataCfg : public RegValue<PebsDataCfg> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FLAG(PebsDataCfg, mem_info, 0)
    PMULAB_REG_FLAG(PebsDataCfg, gprs, 1)
    PMULAB_REG_FLAG(PebsDataCfg, xmms, 2)
    PMULAB_REG_FLAG(PebsDataCfg, lbrs, 3)
    PMULAB_REG_FIELD(PebsDataCfg, lbr_entries, 31, 24)  // entries - 1
};
static_assert(PebsDataCfg().set_mem_info().set_gprs().raw() == 3);

// MSR_PEBS_LD_LAT_THRESHOLD (3F6H): loads slower than this many core cycles count.
class LdLatThreshold : public RegValue<LdLatThreshold> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FIELD(LdLatThreshold, threshold, 15, 0)
};

// The 64-bit DS save area (SDM Vol. 3B Figure "IA-32e Mode DS Save Area"): BTS's four
// quadwords, PEBS's four, then the reset value of IA32_PMCi at 40H + 8i; with adaptive
// PEBS format 4 fixed counter i's at 80H + 8i (after eight GP slots; format 5 has 32 GP
// slots, fixed at 140H + 8i, as Linux's ds.c). pmulab fills it in memory it owns, per CPU.
struct DsArea {
    u64 bts_base, bts_index, bts_max, bts_threshold;
    u64 pebs_base, pebs_index, pebs_max, pebs_threshold;
    u64 pebs_reset[8];   // IA32_PMC0..7
    u64 fixed_reset[8];  // IA32_FIXED_CTR0..7 (format 4)
};
static_assert(sizeof(DsArea) == 0xC0 && __builtin_offsetof(DsArea, pebs_index) == 0x28 &&
              __builtin_offsetof(DsArea, pebs_threshold) == 0x38 && __builtin_offsetof(DsArea, pebs_reset) == 0x40 &&
              __builtin_offsetof(DsArea, fixed_reset) == 0x80);
// Format 5 on (Sapphire Rapids, Alder Lake and later; SDM Vol. 3B §20.6.2.1 and Linux's
// struct debug_store): the counter-reset array holds 32 GP slots, so fixed counter i's
// reset value is at 140H + 8i (index 32 + i); the header is format 4's.
struct DsArea5 {
    u64 bts_base, bts_index, bts_max, bts_threshold;
    u64 pebs_base, pebs_index, pebs_max, pebs_threshold;
    u64 pebs_reset[32];   // IA32_PMC0..31
    u64 fixed_reset[16];  // IA32_FIXED_CTR0..15
};
static_assert(sizeof(DsArea5) == 0x1C0 && __builtin_offsetof(DsArea5, pebs_reset) == 0x40 &&
              __builtin_offsetof(DsArea5, fixed_reset) == 0x140);
// The GP and fixed counters whose reset value the DS area of `format` has a slot for.
constexpr unsigned ds_gp_slots(unsigned format) { return format >= 5 ? 32 : 8; }
constexpr unsigned ds_fixed_slots(unsigned format) { return format >= 5 ? 16 : format == 4 ? 8 : 0; }
// The byte offset in the DS area of the reset value of GP counter i, or (fixed) fixed
// counter i: 40H + 8i; fixed: 80H + 8i (format 4), 140H + 8i (format 5 on).
constexpr u64 ds_reset_offset(unsigned format, bool fixed, unsigned i) {
    return 0x40 + 8 * ((fixed ? ds_gp_slots(format) : 0) + i);
}
// The DS area's size in bytes (header and reset slots) for `format`.
constexpr u64 ds_area_bytes(unsigned format) { return format >= 5 ? sizeof(DsArea5) : sizeof(DsArea); }
static_assert(ds_reset_offset(4, true, 0) == 0x80 && ds_reset_offset(5, true, 0) == 0x140 &&
              ds_reset_offset(5, true, 3) == 0x158 && ds_reset_offset(5, false, 9) == 0x88);
// The DS area's reset value of GP counter i or fixed counter i (DsArea: format 4 and
// before, fixed at 80H; DsArea5: format 5 on, fixed at 140H); null where it has none.
inline u64* reset_slot(DsArea* ds, unsigned format, bool fixed, unsigned i) {
    if (i >= (fixed ? ds_fixed_slots(format) : ds_gp_slots(format))) return nullptr;
    if (format >= 5) {
        DsArea5* d5 = reinterpret_cast<DsArea5*>(ds);
        return fixed ? &d5->fixed_reset[i] : &d5->pebs_reset[i];
    }
    return fixed ? &ds->fixed_reset[i] : &ds->pebs_reset[i];
}

// The record formats (IA32_PERF_CAPABILITIES[11:8]) and their fixed layouts; 4 and 5 are
// adaptive (a basic group and the groups MSR_PEBS_DATA_CFG chose; the record says its size).
//   0  Core (Merom): RFLAGS, the IP after the instruction, 16 GPRs               90H bytes
//   1  Nehalem .. Ivy Bridge: + applicable counters (status), data linear address,
//      data source, load latency                                                 B0H
//   2  Haswell, Broadwell: + the eventing IP, TSX info                           C0H
//   3  Skylake .. Comet Lake: + the TSC                                          C8H
//   4  Ice Lake on: adaptive (basic group 20H, memory info 20H, GPRs 90H, ...)
//   5  Sapphire Rapids / Alder Lake on: as 4 (the same groups); the DS area's reset
//      array has 32 GP slots, fixed counters' at 140H (DsArea5)
//   6  Lunar Lake / Arrow Lake P cores: as 5, plus a counters-snapshot group pmulab does
//      not ask for (DATA_CFG bits it leaves 0), so its records are format 5's
inline constexpr u64 kRecordSize[4] = {0x90, 0xB0, 0xC0, 0xC8};
// Fixed-layout records (formats 0-3): offsets.
inline constexpr u64 kRecFlags = 0x0, kRecIp = 0x8, kRecGprs = 0x10, kRecStatus = 0x90, kRecDla = 0x98;
inline constexpr u64 kRecDse = 0xA0, kRecLat = 0xA8, kRecEventingIp = 0xB0, kRecTsx = 0xB8, kRecTsc = 0xC0;
// Adaptive records (formats 4-5): the basic group, then the memory-info group when chosen.
inline constexpr u64 kBasicFormatSize = 0x0, kBasicIp = 0x8, kBasicApplicable = 0x10, kBasicTsc = 0x18;
inline constexpr u64 kBasicBytes = 0x20, kMemBytes = 0x20, kGprBytes = 0x90;
inline constexpr u64 kMemAddress = 0x0, kMemAux = 0x8, kMemLatency = 0x10;
// The basic group's first quadword: [31:0] the groups present, [63:48] the record's size.
class BasicFormat : public RegValue<BasicFormat> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FIELD(BasicFormat, groups, 31, 0)
    PMULAB_REG_FIELD(BasicFormat, size, 63, 48)
};
static_assert(BasicFormat::size_field::mask == 0xFFFF000000000000ull);

// The eventing instruction is in the record from format 2 on; formats 0-1 give only the
// IP after the instruction that triggered the assist (off by one instruction).
constexpr bool has_eventing_ip(unsigned format) { return format >= 2; }
constexpr bool adaptive(unsigned format) { return format >= 4; }

}  // namespace pmulab::regs::pebs
