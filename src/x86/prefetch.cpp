#include "x86/prefetch.h"

#include "x86/msr_addr.h"
#include "x86/prefetch_regs.h"

namespace pmulab {

namespace {

using regs::AmdPrefetchControl;
using regs::Core2MiscEnablePrefetch;
using regs::EcoreMiscFeatureControl;
using regs::EcorePrefetch1320;
using regs::EcorePrefetch1321;
using regs::MiscFeatureControl;
using regs::PhiMiscFeatureControl;

// The bits each layout (x86/prefetch_regs.h, one source each) turns off, in the records' names.
constexpr PrefetchBit kIntelBits[] = {{MiscFeatureControl::l2_hw_off_field::lo, "l2_hw"},
                                      {MiscFeatureControl::l2_adjacent_line_off_field::lo, "l2_adjacent_line"},
                                      {MiscFeatureControl::dcu_off_field::lo, "dcu"},
                                      {MiscFeatureControl::dcu_ip_off_field::lo, "dcu_ip"}};
constexpr PrefetchBit kCore2Bits[] = {{Core2MiscEnablePrefetch::l2_hw_off_field::lo, "l2_hw"},
                                      {Core2MiscEnablePrefetch::adjacent_line_off_field::lo, "l2_adjacent_line"},
                                      {Core2MiscEnablePrefetch::dcu_off_field::lo, "dcu"},
                                      {Core2MiscEnablePrefetch::ip_off_field::lo, "dcu_ip"}};
// Goldmont: SDM Vol. 4 Table 2-12 (2016 Vol. 3C Table 35-12): bit 0 L2 HW, bit 2 DCU HW.
constexpr PrefetchBit kGoldmontBits[] = {{MiscFeatureControl::l2_hw_off_field::lo, "l2_hw"},
                                         {MiscFeatureControl::dcu_off_field::lo, "dcu"}};
constexpr PrefetchBit kPhiBits[] = {{PhiMiscFeatureControl::dcu_off_field::lo, "dcu"},
                                    {PhiMiscFeatureControl::l2_hw_off_field::lo, "l2_hw"}};
// E cores, 357930 §2.1/§4.1: Gracemont 0, 2-5; Crestmont and Skymont 0-8; Darkmont 0-8, 12.
using E = EcoreMiscFeatureControl;
constexpr PrefetchBit kGracemontBits[] = {{E::mlc_streamer_off_field::lo, "l2_hw"},
                                          {E::l1_nlp_off_field::lo, "dcu"},
                                          {E::l1_ipp_off_field::lo, "dcu_ip"},
                                          {E::l1_npp_off_field::lo, "dcu_next_page"},
                                          {E::amp_off_field::lo, "l2_amp"}};
constexpr PrefetchBit kCrestmontBits[] = {{E::mlc_streamer_off_field::lo, "l2_hw"},
                                          {E::adjacent_line_off_field::lo, "l2_adjacent_line"},
                                          {E::l1_nlp_off_field::lo, "dcu"},
                                          {E::l1_ipp_off_field::lo, "dcu_ip"},
                                          {E::l1_npp_off_field::lo, "dcu_next_page"},
                                          {E::amp_off_field::lo, "l2_amp"},
                                          {E::llc_page_off_field::lo, "llc_page"},
                                          {E::aop_off_field::lo, "aop"},
                                          {E::code_stream_off_field::lo, "l2_code_stream"}};
// Darkmont: Crestmont's and bit 12, the dynamic prefetch control (§2.5), which would
// otherwise rewrite the settings pmulab puts in 1320H/1321H.
template <usize N> struct BitTable { PrefetchBit bits[N]; };
template <usize N> constexpr BitTable<N + 1> with_bit(const PrefetchBit (&head)[N], PrefetchBit last) {
    BitTable<N + 1> t{};
    for (usize i = 0; i < N; ++i) t.bits[i] = head[i];
    t.bits[N] = last;
    return t;
}
constexpr BitTable<10> kDarkmont = with_bit(kCrestmontBits,
                                            {E::dynamic_control_off_field::lo, "dynamic_prefetch_control"});
constexpr PrefetchBit kLlcStreamBits[] = {{EcorePrefetch1320::llc_stream_off_field::lo, "llc_stream"}};
constexpr PrefetchBit kL2NextLineBits[] = {{EcorePrefetch1321::l2_nlp_off_field::lo, "l2_next_line"}};
constexpr PrefetchBit kAmdBits[] = {{AmdPrefetchControl::l1_stream_off_field::lo, "l1_stream"},
                                    {AmdPrefetchControl::l1_stride_off_field::lo, "l1_stride"},
                                    {AmdPrefetchControl::l1_region_off_field::lo, "l1_region"},
                                    {AmdPrefetchControl::l2_stream_off_field::lo, "l2_stream"},
                                    {AmdPrefetchControl::up_down_off_field::lo, "l2_up_down"}};

// Family 6 display models, one source each.
// Intel's 2014 disclosure article: Nehalem, Westmere, Sandy Bridge, Ivy Bridge, Haswell, Broadwell.
constexpr u8 kArticleModels[] = {0x1A, 0x1E, 0x1F, 0x2E, 0x25, 0x2C, 0x2F, 0x2A, 0x2D, 0x3A,
                                 0x3E, 0x3C, 0x3F, 0x45, 0x46, 0x3D, 0x47, 0x4F, 0x56};
// SDM Vol. 4 Table 2-20 (Sandy Bridge; 2016 Vol. 3C Table 35-18, p. 35-149) has 1A4H bits
// 0-3, and the later big cores' sections list it among their tables. One source per row:
// Skylake 06_4EH/06_5EH: 2016 Vol. 3C §35.15 "supports the MSR interfaces listed in Table
// 35-18, ..." (read).
constexpr u8 kSkylakeClientModels[] = {0x4E, 0x5E};
// The sections of SDM Vol. 4 §2.16-§2.17 (their table lists; not re-read in the session
// that split this table, docs/cache.md says so): Skylake/Cascade/Cooper Lake-SP 55,
// Kaby/Coffee/Comet Lake 8E 9E A5 A6, Cannon Lake 66, Ice Lake 7D 7E 6A 6C, Tiger Lake 8C 8D,
// Rocket Lake A7, Sapphire/Emerald/Granite Rapids 8F CF AD AE.
constexpr u8 kSdmCoreModels[] = {0x55, 0x8E, 0x9E, 0xA5, 0xA6, 0x66, 0x7D, 0x7E, 0x6A,
                                 0x6C, 0x8C, 0x8D, 0xA7, 0x8F, 0xCF, 0xAD, 0xAE};
// Hybrid parts: P cores 1A4H bits 0-3 (Table 2-20, as above), E cores per 357930 by their
// microarchitecture (357930 §1.1's table: Gracemont in Alder/Raptor Lake, Crestmont in
// Meteor Lake and Arrow Lake-U, Skymont in Arrow Lake and Lunar Lake). Without E cores
// (CPUID.07H:EDX[15] clear) the P cores' set alone.
constexpr u8 kHybridGracemontModels[] = {0x97, 0x9A, 0xB7, 0xBA, 0xBF};  // Alder Lake, Raptor Lake
constexpr u8 kHybridCrestmontModels[] = {0xAA, 0xAC, 0xB5};              // Meteor Lake, Arrow Lake-U
// Arrow Lake (its low-power E cores are Crestmont: the same bits), Lunar Lake.
constexpr u8 kHybridSkymontModels[] = {0xC5, 0xC6, 0xBD};
constexpr u8 kCore2Models[] = {0x0F, 0x16, 0x17, 0x1D};  // SDM Vol. 4 Table 2-3
constexpr u8 kGoldmontModels[] = {0x5C, 0x5F, 0x7A};     // Goldmont, Denverton, Goldmont Plus (§2.6, §2.7)
constexpr u8 kPhiModels[] = {0x57, 0x85};                // Knights Landing, Knights Mill
// E-core-only parts (357930 §1.1): Alder Lake-N (Gracemont), Sierra Forest and Grand Ridge
// (Crestmont), Clearwater Forest (Darkmont).
constexpr u8 kGracemontModels[] = {0xBE};
constexpr u8 kCrestmontModels[] = {0xAF, 0xB6};
constexpr u8 kDarkmontModels[] = {0xDD};
// No control found in Intel's documents: Silvermont and Airmont (SDM Vol. 4 Tables 2-6 to
// 2-11 list no 1A4H), Tremont (neither the SDM's Tremont MSRs nor 357930, which starts at
// Gracemont, give one).
constexpr u8 kAtomNoneModels[] = {0x37, 0x4A, 0x4C, 0x4D, 0x5A, 0x5D, 0x75, 0x86, 0x96, 0x9C};

template <usize N> bool in(const u8 (&list)[N], u32 model) {
    for (u8 m : list)
        if (m == model) return true;
    return false;
}

template <usize N> PrefetchMsr msr_of(u32 msr, const PrefetchBit (&bits)[N]) {
    PrefetchMsr m;
    m.msr = msr;
    m.bits = bits;
    m.count = N;
    return m;
}

template <usize N> PrefetchSet one(u32 msr, const PrefetchBit (&bits)[N], const char* family) {
    PrefetchSet s;
    s.msrs[0] = msr_of(msr, bits);
    s.count = 1;
    s.family = family;
    return s;
}

// An E core's set: its 1A4H bits, then 1320H bit 43 and 1321H bit 40 (357930 §2.1).
template <usize N> PrefetchSet ecore(const PrefetchBit (&bits)[N], const char* family) {
    PrefetchSet s = one(regs::kMsrMiscFeatureControl, bits, family);
    s.msrs[1] = msr_of(regs::kMsrEcorePrefetchFirst, kLlcStreamBits);
    s.msrs[2] = msr_of(regs::kMsrEcorePrefetchFirst + 1, kL2NextLineBits);
    s.count = 3;
    return s;
}

PrefetchControl control_of(const PrefetchSet& set, const PrefetchSet& atom = PrefetchSet()) {
    PrefetchControl c;
    c.set = set;
    c.atom = atom;
    return c;
}

PrefetchControl intel_control(const CpuIdentity& id) {
    u32 m = id.model;
    constexpr u32 k1A4 = regs::kMsrMiscFeatureControl;
    if (in(kArticleModels, m)) return control_of(one(k1A4, kIntelBits, "nehalem-broadwell"));
    if (in(kSkylakeClientModels, m) || in(kSdmCoreModels, m))
        return control_of(one(k1A4, kIntelBits, "skylake-and-later"));
    bool grt = in(kHybridGracemontModels, m), cmt = in(kHybridCrestmontModels, m), skt = in(kHybridSkymontModels, m);
    if (grt || cmt || skt) {
        PrefetchSet p = one(k1A4, kIntelBits, "skylake-and-later");
        if (!id.hybrid) return control_of(p);
        return control_of(p, grt   ? ecore(kGracemontBits, "gracemont")
                             : cmt ? ecore(kCrestmontBits, "crestmont")
                                   : ecore(kCrestmontBits, "skymont"));
    }
    if (in(kCore2Models, m)) return control_of(one(msr::IA32_MISC_ENABLE, kCore2Bits, "core2"));
    if (in(kGoldmontModels, m)) return control_of(one(k1A4, kGoldmontBits, "goldmont"));
    if (in(kPhiModels, m)) return control_of(one(k1A4, kPhiBits, "xeon-phi"));
    if (in(kGracemontModels, m)) return control_of(ecore(kGracemontBits, "gracemont"));
    if (in(kCrestmontModels, m)) return control_of(ecore(kCrestmontBits, "crestmont"));
    if (in(kDarkmontModels, m)) return control_of(ecore(kDarkmont.bits, "darkmont"));
    PrefetchControl none;
    none.why_not = in(kAtomNoneModels, m)
                       ? "Intel documents no prefetcher control for Silvermont, Airmont or Tremont (the SDM's "
                         "MSR tables for them have no 1A4H; 357930 starts at Gracemont)"
                       : "this Intel model is not in pmulab's prefetcher table (Core 2, Nehalem and later big "
                         "cores, Goldmont, Xeon Phi, Gracemont and later E cores; docs/cache.md)";
    return none;
}

}  // namespace

u64 PrefetchMsr::off_mask() const {
    u64 m = 0;
    for (usize i = 0; i < count; ++i) m |= u64(1) << bits[i].bit;
    return m;
}

usize PrefetchSet::bit_count() const {
    usize n = 0;
    for (usize i = 0; i < count; ++i) n += msrs[i].count;
    return n;
}

PrefetchControl prefetch_control(const CpuIdentity& id) {
    PrefetchControl none;
    PrefetchControl c = none;
    if (id.vendor == Vendor::intel && id.family == 6) c = intel_control(id);
    // AMD: the family 19h and 1Ah PPRs, "MSRC000_0108 [Prefetch Control]".
    if (id.vendor == Vendor::amd && (id.family == 0x19 || id.family == 0x1A))
        c = control_of(one(regs::kMsrAmdPrefetchControl, kAmdBits, "amd-19h-1ah"));
    if (c.ok() && id.hypervisor) {
        // KVM and QEMU give guests no prefetcher MSR whatever model they show.
        none.why_not = "a hypervisor's virtual CPU (CPUID.01H:ECX[31]) has no prefetcher control, whatever model "
                       "it shows; the host's prefetchers are the host's to switch";
        return none;
    }
    if (c.ok() || (id.vendor == Vendor::intel && id.family == 6)) return c;
    none.why_not = id.vendor == Vendor::amd
                       ? "AMD documents MSR C000_0108H (PrefetchControl) for families 19h and 1Ah only"
                       : "no documented prefetcher control for this vendor";
    return none;
}

}  // namespace pmulab
