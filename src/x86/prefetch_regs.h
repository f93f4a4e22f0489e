// Typed registers of the hardware prefetcher controls (x86/prefetch.h): which bit of which
// MSR turns which prefetcher off. Each layout names its source in one line; the model
// table that says which CPU has which layout is prefetch.cpp's.
//
// References: Intel, "Disclosure of Hardware Prefetcher Control on Some Intel Processors"
// (2014); Intel SDM Vol. 4 (Tables 2-3, 2-12, 2-20 and the Xeon Phi table); Intel 357930
// "Hardware Prefetch Controls for Intel Atom Cores" (2023; the July 2026 revision "for
// Intel E-Cores", github.com/intel/optimization-zone hardware/HWPrefetchTuning); AMD's
// family 19h/1Ah PPRs, "MSRC000_0108 [Prefetch Control]".
#pragma once

#include "base/bits.h"

namespace pmulab::regs {

inline constexpr u32 kMsrMiscFeatureControl = 0x1A4;  // MSR_MISC_FEATURE_CONTROL
// The E cores' L2 prefetcher configuration, one register per address 1320H..1327H
// (357930 §4.2-§4.9); module scope: the four E cores of a module share them (357930 §4).
inline constexpr u32 kMsrEcorePrefetchFirst = 0x1320, kMsrEcorePrefetchLast = 0x1327;
inline constexpr u32 kMsrAmdPrefetchControl = 0xC0000108;  // PrefetchControl

// 1A4H on big cores: Intel's 2014 disclosure and SDM Vol. 4 Table 2-20 (bits 0-3).
class MiscFeatureControl : public RegValue<MiscFeatureControl> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FLAG(MiscFeatureControl, l2_hw_off, 0)             // L2 hardware (streamer)
    PMULAB_REG_FLAG(MiscFeatureControl, l2_adjacent_line_off, 1)  // L2 adjacent cache line
    PMULAB_REG_FLAG(MiscFeatureControl, dcu_off, 2)               // DCU (L1 next line)
    PMULAB_REG_FLAG(MiscFeatureControl, dcu_ip_off, 3)            // DCU IP (L1 stride)
};
static_assert(MiscFeatureControl::dcu_ip_off_field::mask == 0x8ull);

// 1A4H on E cores from Gracemont on: 357930 §2.1 and §4.1. Bits 0, 2-5 from Gracemont
// (§2.1 and §1.2 give the next-page prefetcher, bit 4, to Gracemont; §4.1 marks it
// Crestmont), 1 and 6-8 from Crestmont, 12 from Darkmont (dynamic prefetch control,
// §2.5: set before 1320H/1321H are written, or it may rewrite them).
class EcoreMiscFeatureControl : public RegValue<EcoreMiscFeatureControl> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FLAG(EcoreMiscFeatureControl, mlc_streamer_off, 0)
    PMULAB_REG_FLAG(EcoreMiscFeatureControl, adjacent_line_off, 1)
    PMULAB_REG_FLAG(EcoreMiscFeatureControl, l1_nlp_off, 2)  // DCU streamer (L1 next line)
    PMULAB_REG_FLAG(EcoreMiscFeatureControl, l1_ipp_off, 3)  // DCU IP prefetcher
    PMULAB_REG_FLAG(EcoreMiscFeatureControl, l1_npp_off, 4)  // DCU next page
    PMULAB_REG_FLAG(EcoreMiscFeatureControl, amp_off, 5)     // L2 adaptive multi-path
    PMULAB_REG_FLAG(EcoreMiscFeatureControl, llc_page_off, 6)
    PMULAB_REG_FLAG(EcoreMiscFeatureControl, aop_off, 7)  // array of pointers
    PMULAB_REG_FLAG(EcoreMiscFeatureControl, code_stream_off, 8)
    PMULAB_REG_FLAG(EcoreMiscFeatureControl, dynamic_control_off, 12)
};
static_assert(EcoreMiscFeatureControl::code_stream_off_field::mask == 0x100ull);
static_assert(EcoreMiscFeatureControl::dynamic_control_off_field::mask == 0x1000ull);

// 1320H: 357930 §4.2 (bit 43 LLC streamer disable; §2.1 lists it from Gracemont on).
class EcorePrefetch1320 : public RegValue<EcorePrefetch1320> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FLAG(EcorePrefetch1320, llc_stream_off, 43)
};
static_assert(EcorePrefetch1320::llc_stream_off_field::mask == 0x80000000000ull);

// 1321H: 357930 §4.3 (bit 40 L2 next-line prefetcher disable, from Gracemont on).
class EcorePrefetch1321 : public RegValue<EcorePrefetch1321> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FLAG(EcorePrefetch1321, l2_nlp_off, 40)
};
static_assert(EcorePrefetch1321::l2_nlp_off_field::mask == 0x10000000000ull);

// 1A4H on Xeon Phi 06_57H/06_85H: SDM Vol. 4 Xeon Phi table (2016 Vol. 3C Table 35-40).
class PhiMiscFeatureControl : public RegValue<PhiMiscFeatureControl> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FLAG(PhiMiscFeatureControl, dcu_off, 0)
    PMULAB_REG_FLAG(PhiMiscFeatureControl, l2_hw_off, 1)
};
static_assert(PhiMiscFeatureControl::l2_hw_off_field::mask == 0x2ull);

// IA32_MISC_ENABLE (1A0H) on Core 2: SDM Vol. 4 Table 2-3.
class Core2MiscEnablePrefetch : public RegValue<Core2MiscEnablePrefetch> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FLAG(Core2MiscEnablePrefetch, l2_hw_off, 9)
    PMULAB_REG_FLAG(Core2MiscEnablePrefetch, adjacent_line_off, 19)
    PMULAB_REG_FLAG(Core2MiscEnablePrefetch, dcu_off, 37)
    PMULAB_REG_FLAG(Core2MiscEnablePrefetch, ip_off, 39)
};
static_assert(Core2MiscEnablePrefetch::ip_off_field::mask == 0x8000000000ull);

// C000_0108H on AMD families 19h and 1Ah: the PPRs' "MSRC000_0108 [Prefetch Control]".
class AmdPrefetchControl : public RegValue<AmdPrefetchControl> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FLAG(AmdPrefetchControl, l1_stream_off, 0)
    PMULAB_REG_FLAG(AmdPrefetchControl, l1_stride_off, 1)
    PMULAB_REG_FLAG(AmdPrefetchControl, l1_region_off, 2)
    PMULAB_REG_FLAG(AmdPrefetchControl, l2_stream_off, 3)
    PMULAB_REG_FLAG(AmdPrefetchControl, up_down_off, 5)
};
static_assert(AmdPrefetchControl::up_down_off_field::mask == 0x20ull);

}  // namespace pmulab::regs
