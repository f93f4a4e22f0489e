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
}  // namespace msr

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

}  // namespace regs

}  // namespace pmulab
