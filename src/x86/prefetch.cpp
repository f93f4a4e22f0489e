#include "x86/prefetch.h"

#include "x86/msr_addr.h"

namespace pmulab {

namespace {

constexpr u32 kMiscFeatureControl = 0x1A4;  // Intel's disclosure article
constexpr u32 kAmdPrefetchControl = 0xC0000108;

constexpr PrefetchBit kIntelBits[] = {{0, "l2_hw"}, {1, "l2_adjacent_line"}, {2, "dcu"}, {3, "dcu_ip"}};
constexpr PrefetchBit kCore2Bits[] = {{9, "l2_hw"}, {19, "l2_adjacent_line"}, {37, "dcu"}, {39, "dcu_ip"}};
constexpr PrefetchBit kAmdBits[] = {{0, "l1_stream"},
                                    {1, "l1_stride"},
                                    {2, "l1_region"},
                                    {3, "l2_stream"},
                                    {5, "l2_up_down"}};

// Family 6 display models of the article's microarchitectures.
constexpr u8 kIntelModels[] = {
    0x1A, 0x1E, 0x1F, 0x2E,  // Nehalem
    0x25, 0x2C, 0x2F,        // Westmere
    0x2A, 0x2D,              // Sandy Bridge
    0x3A, 0x3E,              // Ivy Bridge
    0x3C, 0x3F, 0x45, 0x46,  // Haswell
    0x3D, 0x47, 0x4F, 0x56,  // Broadwell
};
constexpr u8 kCore2Models[] = {0x0F, 0x16, 0x17, 0x1D};

bool in(const u8* list, usize n, u32 model) {
    for (usize i = 0; i < n; ++i)
        if (list[i] == model) return true;
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

}  // namespace

u64 PrefetchControl::off_mask() const {
    u64 m = 0;
    for (usize i = 0; i < count; ++i) m |= u64(1) << bits[i].bit;
    return m;
}

PrefetchControl prefetch_control(const CpuIdentity& id) {
    PrefetchControl none;
    if (id.vendor == Vendor::intel && id.family == 6) {
        if (in(kIntelModels, sizeof kIntelModels, id.model))
            return make(kMiscFeatureControl, kIntelBits, "nehalem-broadwell");
        if (in(kCore2Models, sizeof kCore2Models, id.model)) return make(msr::IA32_MISC_ENABLE, kCore2Bits, "core2");
        none.why_not = "Intel documents prefetcher control (MSR 1A4H, IA32_MISC_ENABLE on Core 2) for Core 2 and "
                       "Nehalem through Broadwell only; this model is not in pmulab's table";
        return none;
    }
    if (id.vendor == Vendor::amd && (id.family == 0x19 || id.family == 0x1A))
        return make(kAmdPrefetchControl, kAmdBits, "amd-19h-1ah");
    none.why_not = id.vendor == Vendor::amd
                       ? "AMD documents MSR C000_0108H (PrefetchControl) for families 19h and 1Ah only"
                       : "no documented prefetcher control for this vendor";
    return none;
}

}  // namespace pmulab
