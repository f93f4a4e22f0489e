#include "x86/prefetch.h"

#include "x86/msr_addr.h"

namespace pmulab {

namespace {

constexpr u32 kMiscFeatureControl = 0x1A4;  // MSR_MISC_FEATURE_CONTROL (SDM Vol. 4)
constexpr u32 kAmdPrefetchControl = 0xC0000108;

// The bits each source documents, in the records' names. One line per table entry: its source.
constexpr PrefetchBit kIntelBits[] = {{0, "l2_hw"}, {1, "l2_adjacent_line"}, {2, "dcu"}, {3, "dcu_ip"}};
constexpr PrefetchBit kCore2Bits[] = {{9, "l2_hw"}, {19, "l2_adjacent_line"}, {37, "dcu"}, {39, "dcu_ip"}};
// Goldmont: SDM Vol. 4 Table 2-12 (2016 Vol. 3C Table 35-12): bit 0 L2 HW, bit 2 DCU HW.
constexpr PrefetchBit kGoldmontBits[] = {{0, "l2_hw"}, {2, "dcu"}};
// Xeon Phi: SDM Vol. 4, the Xeon Phi table (2016 Vol. 3C Table 35-40): bit 0 DCU, bit 1 L2 HW.
constexpr PrefetchBit kPhiBits[] = {{0, "dcu"}, {1, "l2_hw"}};
// Gracemont: Intel 357930-001, "Hardware Prefetch Controls for Intel Atom Cores" §4.1: bit 0
// MLC streamer, 2 L1 data stream (DCU), 3 L1 IP (DCU IP), 5 L2 AMP.
constexpr PrefetchBit kGracemontBits[] = {{0, "l2_hw"}, {2, "dcu"}, {3, "dcu_ip"}, {5, "l2_amp"}};
// Crestmont and later E cores: the same §4.1 adds 1 adjacent line, 4 DCU next page,
// 6 LLC page, 7 array of pointers (AOP), 8 stream prefetch of code fetches.
constexpr PrefetchBit kCrestmontBits[] = {{0, "l2_hw"},         {1, "l2_adjacent_line"}, {2, "dcu"},      {3, "dcu_ip"},
                                          {4, "dcu_next_page"}, {5, "l2_amp"},           {6, "llc_page"}, {7, "aop"},
                                          {8, "l2_code_stream"}};
// Hybrid parts with Gracemont E cores: the bits both core types document alike (0, 2, 3).
constexpr PrefetchBit kHybridGrtBits[] = {{0, "l2_hw"}, {2, "dcu"}, {3, "dcu_ip"}};
constexpr PrefetchBit kAmdBits[] = {{0, "l1_stream"},
                                    {1, "l1_stride"},
                                    {2, "l1_region"},
                                    {3, "l2_stream"},
                                    {5, "l2_up_down"}};

// Family 6 display models, one source each.
// Intel's 2014 disclosure article: Nehalem, Westmere, Sandy Bridge, Ivy Bridge, Haswell, Broadwell.
constexpr u8 kArticleModels[] = {0x1A, 0x1E, 0x1F, 0x2E, 0x25, 0x2C, 0x2F, 0x2A, 0x2D, 0x3A,
                                 0x3E, 0x3C, 0x3F, 0x45, 0x46, 0x3D, 0x47, 0x4F, 0x56};
// SDM Vol. 4 Table 2-20 (Sandy Bridge; 2016 Table 35-18) lists 1A4H bits 0-3, and the
// sections of the later big cores name it among their tables (§2.17 on): Skylake 4E 5E,
// Skylake/Cascade/Cooper Lake server 55, Kaby/Coffee/Comet Lake 8E 9E A5 A6, Cannon Lake 66,
// Ice Lake 7D 7E 6A 6C, Tiger Lake 8C 8D, Rocket Lake A7, Sapphire/Emerald/Granite Rapids
// 8F CF AD AE; hybrid parts with Crestmont/Skymont E cores (same bits 0-3 in 357930 §4.1):
// Meteor Lake AA AC, Arrow Lake B5 C5 C6, Lunar Lake BD.
constexpr u8 kSdmCoreModels[] = {0x4E, 0x5E, 0x55, 0x8E, 0x9E, 0xA5, 0xA6, 0x66, 0x7D, 0x7E, 0x6A, 0x6C, 0x8C,
                                 0x8D, 0xA7, 0x8F, 0xCF, 0xAD, 0xAE, 0xAA, 0xAC, 0xB5, 0xC5, 0xC6, 0xBD};
// Alder Lake 97 9A, Raptor Lake B7 BA BF: P cores bits 0-3 (Table 2-20), Gracemont E cores
// 0 2 3 5 (357930): bits 0 2 3 where hybrid (CPUID.07H:EDX[15]), else P cores only: 0-3.
constexpr u8 kGracemontHybridModels[] = {0x97, 0x9A, 0xB7, 0xBA, 0xBF};
constexpr u8 kCore2Models[] = {0x0F, 0x16, 0x17, 0x1D};  // SDM Vol. 4 Table 2-3
constexpr u8 kGoldmontModels[] = {0x5C, 0x5F, 0x7A};     // Goldmont, Denverton, Goldmont Plus (§2.6, §2.7)
constexpr u8 kPhiModels[] = {0x57, 0x85};                // Knights Landing, Knights Mill
constexpr u8 kGracemontModels[] = {0xBE};                // Alder Lake-N (E cores only)
constexpr u8 kCrestmontModels[] = {0xAF, 0xB6, 0xDD};    // Sierra Forest, Grand Ridge, Clearwater Forest
// No control found in Intel's documents: Silvermont and Airmont (SDM Vol. 4 Tables 2-6 to
// 2-11 list no 1A4H), Tremont (neither the SDM's Tremont MSRs nor 357930, which starts at
// Gracemont, give one).
constexpr u8 kAtomNoneModels[] = {0x37, 0x4A, 0x4C, 0x4D, 0x5A, 0x5D, 0x75, 0x86, 0x96, 0x9C};

template <usize N> bool in(const u8 (&list)[N], u32 model) {
    for (u8 m : list)
        if (m == model) return true;
    return false;
}

template <usize N> PrefetchControl make(u32 msr, const PrefetchBit (&bits)[N], const char* family) {
    PrefetchControl c;
    c.msr = msr;
    c.bits = bits;
    c.count = N;
    c.family = family;
    return c;
}

PrefetchControl intel_control(const CpuIdentity& id) {
    u32 m = id.model;
    if (in(kArticleModels, m)) return make(kMiscFeatureControl, kIntelBits, "nehalem-broadwell");
    if (in(kSdmCoreModels, m)) return make(kMiscFeatureControl, kIntelBits, "skylake-and-later");
    if (in(kGracemontHybridModels, m))
        return id.hybrid ? make(kMiscFeatureControl, kHybridGrtBits, "hybrid-gracemont")
                         : make(kMiscFeatureControl, kIntelBits, "skylake-and-later");
    if (in(kCore2Models, m)) return make(msr::IA32_MISC_ENABLE, kCore2Bits, "core2");
    if (in(kGoldmontModels, m)) return make(kMiscFeatureControl, kGoldmontBits, "goldmont");
    if (in(kPhiModels, m)) return make(kMiscFeatureControl, kPhiBits, "xeon-phi");
    if (in(kGracemontModels, m)) return make(kMiscFeatureControl, kGracemontBits, "gracemont");
    if (in(kCrestmontModels, m)) return make(kMiscFeatureControl, kCrestmontBits, "crestmont");
    PrefetchControl none;
    none.why_not = in(kAtomNoneModels, m)
                       ? "Intel documents no prefetcher control for Silvermont, Airmont or Tremont (the SDM's "
                         "MSR tables for them have no 1A4H; 357930 starts at Gracemont)"
                       : "this Intel model is not in pmulab's prefetcher table (Core 2, Nehalem and later big "
                         "cores, Goldmont, Xeon Phi, Gracemont and later E cores; docs/cache.md)";
    return none;
}

}  // namespace

u64 PrefetchControl::off_mask() const {
    u64 m = 0;
    for (usize i = 0; i < count; ++i) m |= u64(1) << bits[i].bit;
    return m;
}

PrefetchControl prefetch_control(const CpuIdentity& id) {
    PrefetchControl none;
    PrefetchControl c = none;
    if (id.vendor == Vendor::intel && id.family == 6) c = intel_control(id);
    // AMD: the family 19h and 1Ah PPRs, "MSRC000_0108 [Prefetch Control]".
    if (id.vendor == Vendor::amd && (id.family == 0x19 || id.family == 0x1A))
        c = make(kAmdPrefetchControl, kAmdBits, "amd-19h-1ah");
    if (c.msr && id.hypervisor) {
        // KVM and QEMU give guests no prefetcher MSR whatever model they show.
        none.why_not = "a hypervisor's virtual CPU (CPUID.01H:ECX[31]) has no prefetcher control, whatever model "
                       "it shows; the host's prefetchers are the host's to switch";
        return none;
    }
    if (c.msr || (id.vendor == Vendor::intel && id.family == 6)) return c;
    none.why_not = id.vendor == Vendor::amd
                       ? "AMD documents MSR C000_0108H (PrefetchControl) for families 19h and 1Ah only"
                       : "no documented prefetcher control for this vendor";
    return none;
}

}  // namespace pmulab
