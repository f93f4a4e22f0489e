// AMD's L3 cache performance counters (PerfCtrExtLLC), typed: the slice-lookup unit on AMD
// (src/pmu/amd_l3.h; docs/cache.md "L3 slices and eviction sets"). Sources: APM Vol. 2
// §13.2.4 "L3 Cache Performance Monitor Counters" and Vol. 3 Appendix E (CPUID
// Fn8000_0001_ECX[28] PerfCtrExtLLC); the PPRs' "L3 Cache PMC" sections (family 17h
// models 01h/31h: MSRC001_0230..023B ChL3PmcCfg/ChL3Pmc with SliceMask and ThreadMask;
// family 19h/1Ah: SliceId, EnAllSlices, CoreId, EnAllCores, ThreadMask[57:56]) and
// their event tables (L3PMCx04 "L3 Lookup State", unit mask FFh all lookups); Linux
// arch/x86/include/asm/perf_event.h (AMD64_L3_*) and arch/x86/events/amd/uncore.c.
#pragma once

#include "base/bits.h"

namespace pmulab {

namespace msr {
// ChL3PmcCfg n = C001_0230h + 2n, ChL3Pmc n = C001_0231h + 2n, n = 0 .. 5.
inline constexpr u32 AMD_CH_L3_PMC_CFG0 = 0xC0010230;
inline constexpr u32 AMD_CH_L3_PMC0 = 0xC0010231;
inline constexpr u32 kAmdL3Counters = 6;
}  // namespace msr

namespace regs {

// ChL3PmcCfg, the fields every family shares (APM Vol. 2 §13.2.4).
// Family 17h (Zen 1, Zen 2): SliceMask[51:48] (one bit per slice of the CCX's four),
// ThreadMask[63:56] (one bit per thread: bit 2 * core + thread of the CCX's four cores).
class AmdL3CfgF17 : public RegValue<AmdL3CfgF17> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FIELD(AmdL3CfgF17, event, 7, 0)
    PMULAB_REG_FIELD(AmdL3CfgF17, umask, 15, 8)
    PMULAB_REG_FLAG(AmdL3CfgF17, en, 22)
    PMULAB_REG_FIELD(AmdL3CfgF17, slice_mask, 51, 48)
    PMULAB_REG_FIELD(AmdL3CfgF17, thread_mask, 63, 56)
};
static_assert(AmdL3CfgF17::slice_mask_field::mask == 0xFull << 48);
static_assert(AmdL3CfgF17::thread_mask_field::mask == 0xFFull << 56);
static_assert(AmdL3CfgF17().set_event(4).set_umask(0xFF).set_en(true).raw() == 0x40FF04);

// Family 19h and 1Ah (Zen 3, 4, 5): one slice (SliceId[50:48]) or all (EnAllSlices 46), one
// core of the CCD (CoreId[44:42]) or all (EnAllCores 47), ThreadMask[57:56] (SMT thread 0, 1).
class AmdL3CfgF19 : public RegValue<AmdL3CfgF19> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FIELD(AmdL3CfgF19, event, 7, 0)
    PMULAB_REG_FIELD(AmdL3CfgF19, umask, 15, 8)
    PMULAB_REG_FLAG(AmdL3CfgF19, en, 22)
    PMULAB_REG_FIELD(AmdL3CfgF19, core_id, 44, 42)
    PMULAB_REG_FLAG(AmdL3CfgF19, en_all_slices, 46)
    PMULAB_REG_FLAG(AmdL3CfgF19, en_all_cores, 47)
    PMULAB_REG_FIELD(AmdL3CfgF19, slice_id, 50, 48)
    PMULAB_REG_FIELD(AmdL3CfgF19, thread_mask, 57, 56)
};
static_assert(AmdL3CfgF19::core_id_field::mask == 0x7ull << 42);
static_assert(AmdL3CfgF19::slice_id_field::mask == 0x7ull << 48);
static_assert(AmdL3CfgF19::thread_mask_field::mask == 0x3ull << 56);
static_assert(AmdL3CfgF19().set_en_all_slices(true).set_en_all_cores(true).raw() == 0xC00000000000ull);

// The writable bits of ChL3PmcCfg per family; every other bit is reserved.
inline constexpr u64 kAmdL3CfgF17Bits = AmdL3CfgF17::event_field::mask | AmdL3CfgF17::umask_field::mask |
                                        AmdL3CfgF17::en_field::mask | AmdL3CfgF17::slice_mask_field::mask |
                                        AmdL3CfgF17::thread_mask_field::mask;
inline constexpr u64 kAmdL3CfgF19Bits = AmdL3CfgF19::event_field::mask | AmdL3CfgF19::umask_field::mask |
                                        AmdL3CfgF19::en_field::mask | AmdL3CfgF19::core_id_field::mask |
                                        AmdL3CfgF19::en_all_slices_field::mask | AmdL3CfgF19::en_all_cores_field::mask |
                                        AmdL3CfgF19::slice_id_field::mask | AmdL3CfgF19::thread_mask_field::mask;

// L3PMCx04 L3 Lookup State, unit mask FFh: every L3 lookup (perf's
// l3_lookup_state.all_coherent_accesses_to_l3 / all_l3_req_typs): bit 0 a miss, 7:1 the hits.
inline constexpr u8 kAmdL3LookupState = 0x04, kAmdL3LookupAll = 0xFF;
inline constexpr unsigned kAmdL3CounterBits = 48;

// Slices per L3 complex. Not enumerated by CPUID: the PPRs' documented structure, which
// the slice fields' widths follow. Family 17h: four per CCX (SliceMask's 4 bits, one per
// core); 19h/1Ah: eight per CCD (SliceId's 3 bits, one per core of the 8-core complex).
inline constexpr unsigned kAmdL3SlicesF17 = 4, kAmdL3SlicesF19 = 8;
inline constexpr unsigned kAmdL3MaxSlices = 8;

}  // namespace regs

}  // namespace pmulab
