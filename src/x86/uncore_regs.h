// The C-Box performance counters of Intel's client uncore (2nd .. 8th generation Core:
// Sandy Bridge, Ivy Bridge, Haswell, Broadwell, Skylake, Kaby/Coffee/Comet Lake client),
// typed: pmulab's first uncore PMU (src/pmu/cbox.h; docs/cache.md "L3 slices and
// eviction sets"). Sources: SDM Vol. 3B §20.3.1.2 / §21.3 "Performance Monitoring for
// the 2nd Generation Intel Core Processor Family" uncore sections, SDM Vol. 4 Tables 2-20
// (MSR_UNC_*), 2-30 and 2-41 (Haswell/Skylake client uncore MSRs), and Linux
// arch/x86/events/intel/uncore_snb.c (SNB_UNC_*, SKL_UNC_PERF_GLOBAL_CTL).
#pragma once

#include "base/bits.h"
#include "x86/cpuid.h"

namespace pmulab {

namespace msr {
// MSR_UNC_PERF_GLOBAL_CTRL: 391H on Sandy Bridge .. Broadwell; E01H from Skylake on (where
// 391H became IA32_PERF_GLOBAL_STATUS_SET of the core PMU, version 4).
inline constexpr u32 MSR_UNC_PERF_GLOBAL_CTRL_SNB = 0x391;
inline constexpr u32 MSR_UNC_PERF_GLOBAL_CTRL_SKL = 0xE01;
// MSR_UNC_CBO_CONFIG (R/O): the number of C-Boxes.
inline constexpr u32 MSR_UNC_CBO_CONFIG = 0x396;
// MSR_UNC_CBO_n_PERFEVTSEL0 = 700H + 10H * n, MSR_UNC_CBO_n_PERFCTR0 = 706H + 10H * n.
inline constexpr u32 MSR_UNC_CBO_0_PERFEVTSEL0 = 0x700;
inline constexpr u32 MSR_UNC_CBO_0_PERFCTR0 = 0x706;
inline constexpr u32 MSR_UNC_CBO_STRIDE = 0x10;
inline constexpr u32 kMaxCboxes = 8;  // 700H .. 77FH
// Server CHAs. Skylake-SP: box n at E00H + 10H * n (BOX_CTL +0, CTL0..3 +1..+4, FILTER0
// +5, FILTER1 +6, CTR0..3 +8..+B). Ice Lake-SP: the same layout at E00H + 0EH * n for
// n < 18, E00H + 0EH * (n + 1) for 18 .. 33, B60H + 0EH * (n - 34) for 34 .. 39
// (uncore_snbep.c icx_cha_msr_offsets). Sapphire/Emerald Rapids: 2000H + 10H * n (CTL0..3
// +2..+5, CTR0..3 +8..+B, FILTER0 +EH).
inline constexpr u32 SKX_CHA_0_BOX_CTL = 0xE00, SKX_CHA_STRIDE = 0x10;
inline constexpr u32 ICX_CHA_0_BOX_CTL = 0xE00, ICX_CHA_34_BOX_CTL = 0xB60, ICX_CHA_STRIDE = 0x0E;
inline constexpr u32 SPR_CHA_0_BOX_CTL = 0x2000, SPR_CHA_STRIDE = 0x10;
inline constexpr u32 kSkxChaCtl0 = 1, kSkxChaFilter0 = 5, kChaCtr0 = 8, kSprChaCtl0 = 2, kSprChaFilter0 = 0xE;
inline constexpr u32 kMaxChas = 64;  // the MSR ranges' room (Skylake-SP 28, Ice Lake-SP 40, SPR 60)
// SPR_MSR_UNC_CBO_CONFIG (2FFEH, uncore_snbep.c): the number of CHAs on Sapphire Rapids;
// reads 0 on Emerald Rapids XCC (Linux then keeps the discovery table's count).
inline constexpr u32 SPR_MSR_UNC_CBO_CONFIG = 0x2FFE;
}  // namespace msr

// The server uncore generations whose CHA lookup counters pmulab programs, by family 6
// model: 55H Skylake-SP/Cascade Lake, 6AH/6CH Ice Lake-SP/-D, 8FH/CFH Sapphire/Emerald
// Rapids; none elsewhere (Granite Rapids included: its CHAs are found only through the
// uncore PMON discovery table).
enum class ChaGen : u8 { none, skx, icx, spr };
constexpr ChaGen cha_generation(u32 family, u32 model) {
    if (family != 6) return ChaGen::none;
    if (model == 0x55) return ChaGen::skx;
    if (model == 0x6A || model == 0x6C) return ChaGen::icx;
    if (model == 0x8F || model == 0xCF) return ChaGen::spr;
    return ChaGen::none;
}
// CHA `box`'s BOX_CTL in generation `g`'s layout (msr:: above), 0 for none.
constexpr u32 cha_box_ctl(ChaGen g, u32 box) {
    if (g == ChaGen::skx) return msr::SKX_CHA_0_BOX_CTL + msr::SKX_CHA_STRIDE * box;
    if (g == ChaGen::spr) return msr::SPR_CHA_0_BOX_CTL + msr::SPR_CHA_STRIDE * box;
    if (g != ChaGen::icx) return 0;
    if (box < 18) return msr::ICX_CHA_0_BOX_CTL + msr::ICX_CHA_STRIDE * box;
    if (box < 34) return msr::ICX_CHA_0_BOX_CTL + msr::ICX_CHA_STRIDE * (box + 1);
    return msr::ICX_CHA_34_BOX_CTL + msr::ICX_CHA_STRIDE * (box - 34);
}
constexpr u32 cha_ctl0(ChaGen g, u32 box) {
    return cha_box_ctl(g, box) + (g == ChaGen::spr ? msr::kSprChaCtl0 : msr::kSkxChaCtl0);
}
constexpr u32 cha_ctr0(ChaGen g, u32 box) { return cha_box_ctl(g, box) + msr::kChaCtr0; }
constexpr u32 cha_filter0(ChaGen g, u32 box) {
    return cha_box_ctl(g, box) + (g == ChaGen::spr ? msr::kSprChaFilter0 : msr::kSkxChaFilter0);
}
static_assert(cha_box_ctl(ChaGen::icx, 18) == 0xF0A && cha_box_ctl(ChaGen::icx, 34) == 0xB60 &&
              cha_ctr0(ChaGen::spr, 1) == 0x2018 && cha_filter0(ChaGen::skx, 2) == 0xE25);

// Where Linux counts the CHAs of Skylake-SP and Ice Lake-SP (uncore_snbep.c
// skx_count_chabox, icx_count_chabox): the bits set in CAPID6 (offset 9CH; Skylake-SP
// bits 27:0) and, on Ice Lake-SP, CAPID7 (A0H) of the PCU's device 30 function 3
// (device ID 2083H on Skylake-SP and Cascade Lake, 345BH on Ice Lake-SP), PCI
// configuration space.
namespace pci {
inline constexpr u16 kIntelVendor = 0x8086;
inline constexpr u16 kSkxPcuCr3 = 0x2083, kIcxPcuCr3 = 0x345B;
inline constexpr u32 kPcuDevice = 30, kPcuFunction = 3;
inline constexpr u32 kCapid6 = 0x9C, kCapid7 = 0xA0;
inline constexpr u32 kSkxChaMask = 0x0FFFFFFF;
}  // namespace pci

namespace msr {}  // namespace msr

namespace regs {

// MSR_UNC_PERF_GLOBAL_CTRL (SDM Vol. 4 Table 2-20: 391H; Table 2-41: E01H).
class UncPerfGlobalCtrl : public RegValue<UncPerfGlobalCtrl> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FIELD(UncPerfGlobalCtrl, pmi_core_select, 3, 0)  // 4:0 from Skylake on
    PMULAB_REG_FLAG(UncPerfGlobalCtrl, en, 29)                  // every uncore counter counts only while set
    PMULAB_REG_FLAG(UncPerfGlobalCtrl, wake_pmi, 30)
    PMULAB_REG_FLAG(UncPerfGlobalCtrl, freeze, 31)
};
static_assert(UncPerfGlobalCtrl().set_en(true).raw() == 0x20000000);

// MSR_UNC_CBO_CONFIG (SDM Vol. 4 Table 2-20): bits 3:0 report the C-Box units "including
// processor cores and processor graphics": one more than the C-Boxes with LLC slices on
// Sandy Bridge .. Coffee Lake (nanoBench's cacheLib.getNCBoxUnits subtracts it).
class UncCboConfig : public RegValue<UncCboConfig> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FIELD(UncCboConfig, units, 3, 0)
};

// MSR_UNC_CBO_n_PERFEVTSELx (SDM Vol. 3B, "Uncore Performance Event Configuration
// Facility", Figure 20-32 of the 2nd generation Core; uncore_snb.c SNB_UNC_CTL_*).
class UncCboEvtSel : public RegValue<UncCboEvtSel> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FIELD(UncCboEvtSel, event, 7, 0)
    PMULAB_REG_FIELD(UncCboEvtSel, umask, 15, 8)
    PMULAB_REG_FLAG(UncCboEvtSel, edge, 18)
    PMULAB_REG_FLAG(UncCboEvtSel, en, 22)
    PMULAB_REG_FLAG(UncCboEvtSel, invert, 23)
    PMULAB_REG_FIELD(UncCboEvtSel, threshold, 28, 24)
};

// UNC_CBO_CACHE_LOOKUP (event 34H): the unit mask's low nibble selects the line states
// (01H M, 02H E, 04H S, 08H I), the high one the requests (10H read, 20H write, 40H
// external snoop, 80H any). 8FH: every lookup (nanoBench's -cBox configuration).
inline constexpr u8 kCboLlcLookup = 0x34, kCboLookupAny = 0x8F;
static_assert(UncCboEvtSel().set_event(kCboLlcLookup).set_umask(kCboLookupAny).set_en(true).raw() == 0x408F34);
inline constexpr unsigned kCboCounterBits = 44;

// ---- The server uncore's CHAs (Caching/Home Agents: one L3 slice each) ----
// Intel Xeon Scalable uncore performance monitoring reference manuals (Skylake-SP
// 336274, Ice Lake-SP 639778, Sapphire Rapids 642827), "CHA Performance Monitoring";
// Linux arch/x86/events/intel/uncore_snbep.c (skx_/icx_/spr_uncore_chabox).

// CHA counter control Cn_MSR_PMON_CTLx (uncore guides, "CHA PMON Counter Control"):
// event 7:0, umask 15:8, reset 17, edge 18, EN 22, invert 23, threshold 31:24; from Ice
// Lake-SP on the unit mask extension 57:32 (Linux's umask_ext: LLC_LOOKUP's request types).
class ChaCtl : public RegValue<ChaCtl> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FIELD(ChaCtl, event, 7, 0)
    PMULAB_REG_FIELD(ChaCtl, umask, 15, 8)
    PMULAB_REG_FLAG(ChaCtl, rst, 17)
    PMULAB_REG_FLAG(ChaCtl, edge, 18)
    PMULAB_REG_FLAG(ChaCtl, en, 22)
    PMULAB_REG_FLAG(ChaCtl, invert, 23)
    PMULAB_REG_FIELD(ChaCtl, threshold, 31, 24)
    PMULAB_REG_FIELD(ChaCtl, umask_ext, 57, 32)
};

// Cn_MSR_PMON_BOX_FILTER0 of Skylake-SP (SKX uncore guide, "CHA Filter0"; uncore_snbep.c
// SKX_CHA_MSR_PMON_BOX_FILTER_STATE): bits 24:17 the line states LLC_LOOKUP counts
// (17 LLC I, 18 SF S, 19 SF E, 20 SF H, 21 LLC S, 22 LLC E, 23 LLC M, 24 LLC F).
class SkxChaFilter0 : public RegValue<SkxChaFilter0> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FIELD(SkxChaFilter0, tid, 8, 0)
    PMULAB_REG_FIELD(SkxChaFilter0, state, 26, 17)
};

// LLC_LOOKUP (event 34H) counting every lookup. Skylake-SP: umask 11H (bit 0 must be set,
// 10H any request) with every state in FILTER0. Ice Lake-SP and Sapphire/Emerald Rapids:
// the umask's 8 bits are the states (I, SF S/E/H, S, E, M, F: FFH) and the extension the
// request types (1FFFH: UNC_CHA_LLC_LOOKUP.ALL, perfmon's umask 1FFFFFH).
inline constexpr u8 kChaLlcLookup = 0x34;
inline constexpr u8 kSkxLookupAny = 0x11;
inline constexpr u64 kSkxAllStates = 0xFF;
inline constexpr u8 kIcxAllStates = 0xFF;
inline constexpr u64 kIcxAllRequests = 0x1FFF;
inline constexpr unsigned kChaCounterBits = 48;
static_assert(ChaCtl().set_event(kChaLlcLookup).set_umask(0xFF).set_umask_ext(kIcxAllRequests).set_en(true).raw() ==
              0x00001FFF0040FF34ull);
static_assert(SkxChaFilter0().set_state(kSkxAllStates).raw() == 0x1FE0000);

// CHA box control Cn_MSR_PMON_BOX_CTL: bit 0 resets the control registers, bit 1 the
// counters, bit 8 freezes the box (uncore guides, "Unit Control").
class ChaBoxCtl : public RegValue<ChaBoxCtl> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FLAG(ChaBoxCtl, rst_ctrl, 0)
    PMULAB_REG_FLAG(ChaBoxCtl, rst_ctrs, 1)
    PMULAB_REG_FLAG(ChaBoxCtl, frz, 8)
};

}  // namespace regs

}  // namespace pmulab
