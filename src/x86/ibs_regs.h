// Typed AMD Instruction-Based Sampling (IBS) registers: op and fetch sampling (family 10h
// and later, Zen 1-5), in the style of amd_regs.h.
//
// References: AMD64 Architecture Programmer's Manual (APM) Vol. 2 §13.3 "Instruction-Based
// Sampling" (IbsFetchCtl, IbsOpCtl, IbsOpData1-3, IbsDcLinAd/PhysAd), §16.4.5 "Extended
// Interrupts" (the APIC extended LVT entries at 500h + 10h * n), Vol. 3 Appendix E (CPUID
// Fn8000_0001_ECX[10] IBS, Fn8000_001B_EAX IBS features), and the family 19h PPRs
// (MSRC001_1030..103A; IBS_CTL's LVTOffset is set by firmware).
#pragma once

#include "base/bits.h"

namespace pmulab::msr {

inline constexpr u32 AMD_IBS_FETCH_CTL = 0xC0011030;      // IbsFetchCtl
inline constexpr u32 AMD_IBS_FETCH_LINAD = 0xC0011031;    // IbsFetchLinAd
inline constexpr u32 AMD_IBS_FETCH_PHYSAD = 0xC0011032;   // IbsFetchPhysAd
inline constexpr u32 AMD_IBS_OP_CTL = 0xC0011033;         // IbsOpCtl
inline constexpr u32 AMD_IBS_OP_RIP = 0xC0011034;         // IbsOpRip
inline constexpr u32 AMD_IBS_OP_DATA = 0xC0011035;        // IbsOpData (IbsOpData1)
inline constexpr u32 AMD_IBS_OP_DATA2 = 0xC0011036;       // IbsOpData2
inline constexpr u32 AMD_IBS_OP_DATA3 = 0xC0011037;       // IbsOpData3
inline constexpr u32 AMD_IBS_DC_LINAD = 0xC0011038;       // IbsDcLinAd
inline constexpr u32 AMD_IBS_DC_PHYSAD = 0xC0011039;      // IbsDcPhysAd
inline constexpr u32 AMD_IBS_CTL = 0xC001103A;            // IBS_CTL (read-only; set by firmware)
inline constexpr u32 AMD_IBS_BR_TARGET = 0xC001103B;      // BP_IBSTGT_RIP (BrnTrgt)
inline constexpr u32 AMD_IBS_FETCH_CTL_EXT = 0xC001103C;  // IC_IBS_EXTD_CTL (IbsFetchCtlExtd)

}  // namespace pmulab::msr

namespace pmulab::regs::ibs {

// CPUID Fn8000_0001_ECX[10] "IBS" (APM Vol. 3 Appendix E.4.2).
inline constexpr u32 kExt1EcxIbs = 1u << 10;
inline constexpr u32 kFeatureLeaf = 0x8000001B;

// CPUID Fn8000_001B_EAX "Instruction-Based Sampling Identifiers" (APM Vol. 3 E.4.13).
class IbsFeatures : public RegValue<IbsFeatures> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FLAG(IbsFeatures, ffv, 0)              // IBSFFV: the feature flags are valid
    PMULAB_REG_FLAG(IbsFeatures, fetch_sam, 1)        // fetch sampling
    PMULAB_REG_FLAG(IbsFeatures, op_sam, 2)           // execution (op) sampling
    PMULAB_REG_FLAG(IbsFeatures, rd_wr_op_cnt, 3)     // RdWrOpCnt: IbsOpCurCnt read/write
    PMULAB_REG_FLAG(IbsFeatures, op_cnt, 4)           // OpCnt: IbsOpCntCtl (count ops, not cycles)
    PMULAB_REG_FLAG(IbsFeatures, brn_trgt, 5)         // BrnTrgt: branch target address MSR
    PMULAB_REG_FLAG(IbsFeatures, op_cnt_ext, 6)       // OpCntExt: IbsOpMaxCnt[26:20]
    PMULAB_REG_FLAG(IbsFeatures, rip_invalid_chk, 7)  // RipInvalidChk: IbsOpData[38]
    PMULAB_REG_FLAG(IbsFeatures, op_brn_fuse, 8)      // OpBrnFuse: IbsOpData[39]
    PMULAB_REG_FLAG(IbsFeatures, fetch_ctl_extd, 9)   // IbsFetchCtlExtd MSR
    PMULAB_REG_FLAG(IbsFeatures, op_data4, 10)        // IbsOpData4 MSR
    PMULAB_REG_FLAG(IbsFeatures, zen4_ext, 11)        // Zen 4 extensions (L3MissOnly, DTLB page size)
    PMULAB_REG_FLAG(IbsFeatures, op_ld_lat, 12)       // load-latency filtering (Zen 5)
};
static_assert(IbsFeatures::op_cnt_field::mask == 0x10 && IbsFeatures::zen4_ext_field::mask == 0x800);
// The Granite Ridge (Zen 5) dump's EAX 0x00081BFF: everything up to FetchCtlExtd, Zen 4 and
// load-latency extensions, no IbsOpData4.
static_assert(IbsFeatures(0x81BFF).op_cnt_ext() && !IbsFeatures(0x81BFF).op_data4() &&
              IbsFeatures(0x81BFF).op_ld_lat());

// IbsOpCtl, MSRC001_1033 (APM §13.3.2, Figure 13-12 "IBS Execution Control Register").
// The maximum count is 27 bits in units of 16: bits [19:4] in IbsOpMaxCnt[15:0], bits
// [26:20] (OpCntExt) in 26:20; the low 4 bits of the count do not exist.
class IbsOpCtl : public RegValue<IbsOpCtl> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FIELD(IbsOpCtl, max_cnt, 15, 0)       // IbsOpMaxCnt[19:4]
    PMULAB_REG_FLAG(IbsOpCtl, l3_miss_only, 16)      // Zen 4: tag only L3 misses
    PMULAB_REG_FLAG(IbsOpCtl, en, 17)                // IbsOpEn
    PMULAB_REG_FLAG(IbsOpCtl, val, 18)               // IbsOpVal: a sample is ready
    PMULAB_REG_FLAG(IbsOpCtl, cnt_ctl, 19)           // IbsOpCntCtl: 1 = dispatched ops, 0 = cycles
    PMULAB_REG_FIELD(IbsOpCtl, max_cnt_ext, 26, 20)  // IbsOpMaxCnt[26:20] (OpCntExt)
    PMULAB_REG_FIELD(IbsOpCtl, cur_cnt, 58, 32)      // IbsOpCurCnt[26:0]

    // The period (ops or cycles between samples) the max-count fields hold.
    constexpr u64 period() const { return (max_cnt() << 4) | (max_cnt_ext() << 20); }
    constexpr IbsOpCtl& set_period(u64 p) { return set_max_cnt((p >> 4) & 0xFFFF).set_max_cnt_ext((p >> 20) & 0x7F); }
};
static_assert(IbsOpCtl::en_field::mask == 1ull << 17 && IbsOpCtl::val_field::mask == 1ull << 18);
static_assert(IbsOpCtl::cnt_ctl_field::mask == 1ull << 19 && IbsOpCtl::max_cnt_ext_field::mask == 0x7Full << 20);
static_assert(IbsOpCtl::cur_cnt_field::mask == 0x7FFFFFFull << 32);
// Every 4096 ops, enabled: IbsOpMaxCnt = 0x100, CntCtl and En set.
static_assert(IbsOpCtl().set_period(4096).set_cnt_ctl().set_en().raw() == 0xA0100);
static_assert(IbsOpCtl().set_period(0x7FFFFF0).period() == 0x7FFFFF0);
static_assert(IbsOpCtl().set_period(0x100000).raw() == 0x100000);  // bit 20 of the count: 20 of the MSR
inline constexpr u64 kOpPeriodMax = 0xFFFF0;                       // without OpCntExt
inline constexpr u64 kOpPeriodMaxExt = 0x7FFFFF0;                  // with OpCntExt
inline constexpr u64 kFetchPeriodMax = 0xFFFF0;

// IbsOpData (IbsOpData1), MSRC001_1035 (APM §13.3.2, Figure 13-14).
class IbsOpData : public RegValue<IbsOpData> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FIELD(IbsOpData, comp_to_ret_ctr, 15, 0)  // cycles from completion to retire
    PMULAB_REG_FIELD(IbsOpData, tag_to_ret_ctr, 31, 16)  // cycles from tagging to retire
    PMULAB_REG_FLAG(IbsOpData, op_return, 34)
    PMULAB_REG_FLAG(IbsOpData, brn_taken, 35)
    PMULAB_REG_FLAG(IbsOpData, brn_misp, 36)
    PMULAB_REG_FLAG(IbsOpData, brn_ret, 37)
    PMULAB_REG_FLAG(IbsOpData, rip_invalid, 38)  // RipInvalidChk: IbsOpRip is not valid
    PMULAB_REG_FLAG(IbsOpData, brn_fuse, 39)     // OpBrnFuse: a fused branch op
    PMULAB_REG_FLAG(IbsOpData, microcode, 40)
};
static_assert(IbsOpData::rip_invalid_field::mask == 1ull << 38 && IbsOpData::brn_ret_field::mask == 1ull << 37);

// IbsOpData2, MSRC001_1036 (APM §13.3.2, Figure 13-15; the family 19h PPR): where a load
// that missed L2 was served from (the values: mem_source_regs.h).
class IbsOpData2 : public RegValue<IbsOpData2> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FIELD(IbsOpData2, data_src_lo, 2, 0)  // DataSrc
    PMULAB_REG_FLAG(IbsOpData2, rmt_node, 4)         // served by another node
    PMULAB_REG_FLAG(IbsOpData2, cache_hit_st, 5)     // the cache line's state (0 M, 1 O)
    PMULAB_REG_FIELD(IbsOpData2, data_src_hi, 7, 6)  // DataSrc[4:3] (Zen 4 extensions)
    // The data source: 5 bits with the Zen 4 extensions, else DataSrc[2:0].
    constexpr unsigned source(bool zen4) const {
        return unsigned(zen4 ? (data_src_hi() << 3) | data_src_lo() : data_src_lo());
    }
};
static_assert(IbsOpData2(0x43).source(true) == 0xB && IbsOpData2(0x43).source(false) == 3);

// IbsOpData3, MSRC001_1037 (APM §13.3.2, Figure 13-16): the load/store unit's view.
class IbsOpData3 : public RegValue<IbsOpData3> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FLAG(IbsOpData3, ld_op, 0)  // IbsLdOp: a load
    PMULAB_REG_FLAG(IbsOpData3, st_op, 1)  // IbsStOp: a store
    PMULAB_REG_FLAG(IbsOpData3, dc_l1tlb_miss, 2)
    PMULAB_REG_FLAG(IbsOpData3, dc_l2tlb_miss, 3)
    PMULAB_REG_FLAG(IbsOpData3, dc_miss, 7)                // IbsDcMiss: the data cache missed
    PMULAB_REG_FLAG(IbsOpData3, dc_mis_acc, 8)             // misaligned
    PMULAB_REG_FLAG(IbsOpData3, dc_uc_mem_acc, 14)         // uncacheable memory
    PMULAB_REG_FLAG(IbsOpData3, dc_locked_op, 15)          // a locked operation
    PMULAB_REG_FLAG(IbsOpData3, dc_miss_no_mab_alloc, 16)  // the miss found its line in flight (MAB)
    PMULAB_REG_FLAG(IbsOpData3, dc_lin_addr_valid, 17)
    PMULAB_REG_FLAG(IbsOpData3, dc_phy_addr_valid, 18)
    PMULAB_REG_FLAG(IbsOpData3, l2_miss, 20)  // Zen: the access missed L2 too
    PMULAB_REG_FIELD(IbsOpData3, op_mem_width, 25, 22)
    PMULAB_REG_FIELD(IbsOpData3, dc_miss_lat, 47, 32)  // IbsDcMissLat: cycles from the miss to the fill
    PMULAB_REG_FIELD(IbsOpData3, tlb_refill_lat, 63, 48)
};
static_assert(IbsOpData3::dc_miss_field::mask == 0x80 && IbsOpData3::dc_lin_addr_valid_field::mask == 1ull << 17);
static_assert(IbsOpData3::dc_miss_lat_field::mask == 0xFFFFull << 32);
static_assert(IbsOpData3().set_dc_uc_mem_acc().set_dc_miss_no_mab_alloc().raw() == 0x14000);
// A load that missed with 40 cycles of latency and a valid linear address.
static_assert(IbsOpData3().set_ld_op().set_dc_miss().set_dc_lin_addr_valid().set_dc_miss_lat(40).raw() ==
              0x0000002800020081ull);

// IbsFetchCtl, MSRC001_1030 (APM §13.3.1, Figure 13-10 "IBS Fetch Control Register").
// The maximum count is in units of 16 fetches as IbsOpMaxCnt's.
class IbsFetchCtl : public RegValue<IbsFetchCtl> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FIELD(IbsFetchCtl, max_cnt, 15, 0)  // IbsFetchMaxCnt[19:4]
    PMULAB_REG_FIELD(IbsFetchCtl, cnt, 31, 16)     // IbsFetchCnt[19:4]
    PMULAB_REG_FIELD(IbsFetchCtl, lat, 47, 32)     // IbsFetchLat: cycles of the fetch
    PMULAB_REG_FLAG(IbsFetchCtl, en, 48)           // IbsFetchEn
    PMULAB_REG_FLAG(IbsFetchCtl, val, 49)          // IbsFetchVal: a sample is ready
    PMULAB_REG_FLAG(IbsFetchCtl, comp, 50)         // IbsFetchComp: the fetch completed
    PMULAB_REG_FLAG(IbsFetchCtl, ic_miss, 51)      // IbsIcMiss: the instruction cache missed
    PMULAB_REG_FLAG(IbsFetchCtl, phy_addr_valid, 52)
    PMULAB_REG_FIELD(IbsFetchCtl, l1tlb_pg_sz, 54, 53)
    PMULAB_REG_FLAG(IbsFetchCtl, l1tlb_miss, 55)
    PMULAB_REG_FLAG(IbsFetchCtl, l2tlb_miss, 56)
    PMULAB_REG_FLAG(IbsFetchCtl, rand_en, 57)       // IbsRandEn: randomise the low 4 bits
    PMULAB_REG_FLAG(IbsFetchCtl, l2_miss, 58)       // Zen: IbsFetchL2Miss
    PMULAB_REG_FLAG(IbsFetchCtl, l3_miss_only, 59)  // Zen 4 (Fn8000_001B_EAX[11]): only L3 misses

    constexpr u64 period() const { return max_cnt() << 4; }
    constexpr IbsFetchCtl& set_period(u64 p) { return set_max_cnt((p >> 4) & 0xFFFF); }
};
static_assert(IbsFetchCtl::en_field::mask == 1ull << 48 && IbsFetchCtl::val_field::mask == 1ull << 49);
static_assert(IbsFetchCtl::ic_miss_field::mask == 1ull << 51 && IbsFetchCtl::lat_field::mask == 0xFFFFull << 32);
static_assert(IbsFetchCtl().set_period(0x1000).set_en().raw() == 0x0001000000000100ull);

// IBS_CTL, MSRC001_103A (APM §13.3.3; PPR): which extended LVT entry the IBS interrupt uses.
class IbsCtl : public RegValue<IbsCtl> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FIELD(IbsCtl, lvt_offset, 3, 0)  // LVTOffset: extended LVT entry n (APIC 500h + 10h * n)
    PMULAB_REG_FLAG(IbsCtl, lvt_offset_val, 8)  // LVTOffsetVal: firmware assigned it
};
static_assert(IbsCtl(0x101).lvt_offset() == 1 && IbsCtl(0x101).lvt_offset_val() && !IbsCtl(0x1).lvt_offset_val());

// The APIC's extended registers (APM §16.4.5 "Extended Interrupts", Table 16-2): the
// Extended APIC Feature register at 400h (ExtLvtCnt in 23:16) and the extended LVT entries
// at 500h + 10h * n (an LVT entry's layout: vector, delivery mode 10:8, mask 16; x2APIC:
// MSR 850h + n). The APIC version register's bit 31 says the extended space exists.
inline constexpr u32 kApicExtFeature = 0x400;
inline constexpr u32 kApicExtLvt0 = 0x500;
inline constexpr u32 kApicVersionExtSpace = 1u << 31;
constexpr u32 ext_lvt_offset(unsigned n) { return kApicExtLvt0 + 0x10 * n; }
static_assert(ext_lvt_offset(1) == 0x510 && ext_lvt_offset(3) == 0x530);
class ApicExtFeature : public RegValue<ApicExtFeature> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FIELD(ApicExtFeature, ext_lvt_count, 23, 16)
};
static_assert(ApicExtFeature(0x00040007).ext_lvt_count() == 4);

// The IBS MSRs by name (--trace-msr), null for any other address.
constexpr const char* msr_name(u32 m) {
    constexpr const char* kNames[] = {"IbsFetchCtl", "IbsFetchLinAd", "IbsFetchPhysAd", "IbsOpCtl",   "IbsOpRip",
                                      "IbsOpData",   "IbsOpData2",    "IbsOpData3",     "IbsDcLinAd", "IbsDcPhysAd",
                                      "IBS_CTL",     "IbsBrTarget",   "IbsFetchCtlExtd"};
    return m >= msr::AMD_IBS_FETCH_CTL && m <= msr::AMD_IBS_FETCH_CTL_EXT ? kNames[m - msr::AMD_IBS_FETCH_CTL]
                                                                          : nullptr;
}
static_assert(msr_name(0xC0011033)[4] == 'p' && msr_name(0xC001103D) == nullptr);

}  // namespace pmulab::regs::ibs
