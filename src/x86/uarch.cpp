// Microarchitectures by family and model (see uarch.h for the sources).
#include "x86/uarch.h"

namespace pmulab {

namespace {

struct Range {
    u8 lo, hi;
};

template <usize N> bool in(u32 model, const u8 (&list)[N]) {
    for (u8 m : list)
        if (m == model) return true;
    return false;
}

template <usize N> bool in(u32 model, const Range (&ranges)[N]) {
    for (const Range& r : ranges)
        if (model >= r.lo && model <= r.hi) return true;
    return false;
}

// Linux intel_pmu_init: the models of intel_pmu_init_glc and later (Golden Cove, Raptor Cove,
// Redwood Cove, Lion Cove, Cougar Cove P cores).
constexpr u8 kLevel2Models[] = {0x8F, 0xCF, 0xAD, 0xAE, 0x97, 0x9A, 0xB7, 0xBA, 0xBF,
                                0xAA, 0xAC, 0xB5, 0xC5, 0xC6, 0xBD, 0xCC, 0xD5};
constexpr u8 kSkylakeModels[] = {0x4E, 0x5E, 0x55, 0x8E, 0x9E, 0xA5, 0xA6};
constexpr u8 kGracemontModels[] = {0x97, 0x9A, 0xB7, 0xBA, 0xBF, 0xBE};
constexpr u8 kCrestmontModels[] = {0xAA, 0xAC, 0xB5, 0xAF, 0xB6};
constexpr u8 kSkymontModels[] = {0xBD, 0xCC, 0xD5, 0xDD};
constexpr u8 kArrowLakeModels[] = {0xC5, 0xC6};  // E cores by native model ID
constexpr u8 kAtomOnlyModels[] = {0xBE, 0xAF, 0xB6, 0xDD};

// Linux bsp_init_amd (X86_FEATURE_ZEN1 .. ZEN6).
constexpr Range kZen1[] = {{0x00, 0x2F}, {0x50, 0x5F}};
constexpr Range kZen2[] = {{0x30, 0x4F}, {0x60, 0x7F}, {0x90, 0x91}, {0xA0, 0xAF}};
constexpr Range kZen3[] = {{0x00, 0x0F}, {0x20, 0x5F}};
constexpr Range kZen4[] = {{0x10, 0x1F}, {0x60, 0xAF}};
constexpr Range kZen5[] = {{0x00, 0x2F}, {0x40, 0x4F}, {0x60, 0x7F}};
constexpr Range kZen6[] = {{0x50, 0x5F}, {0x80, 0xAF}, {0xC0, 0xEF}};

}  // namespace

bool intel_topdown_l2_model(u32 family, u32 model) { return family == 6 && in(model, kLevel2Models); }

bool intel_skylake_class_model(u32 family, u32 model) { return family == 6 && in(model, kSkylakeModels); }

AtomUarch intel_atom_uarch(u32 family, u32 model, u32 native_model_id) {
    if (family != 6) return AtomUarch::none;
    if (in(model, kGracemontModels)) return AtomUarch::gracemont;
    if (in(model, kCrestmontModels)) return AtomUarch::crestmont;
    if (in(model, kSkymontModels)) return AtomUarch::skymont;
    if (in(model, kArrowLakeModels)) return native_model_id == 2 ? AtomUarch::crestmont : AtomUarch::skymont;
    return AtomUarch::none;
}

bool intel_atom_only_model(u32 family, u32 model) { return family == 6 && in(model, kAtomOnlyModels); }

unsigned amd_zen_generation(u32 family, u32 model) {
    switch (family) {
        case 0x17: return in(model, kZen1) ? 1 : in(model, kZen2) ? 2 : 0;
        case 0x19: return in(model, kZen3) ? 3 : in(model, kZen4) ? 4 : 0;
        case 0x1A: return in(model, kZen5) ? 5 : in(model, kZen6) ? 6 : 0;
        default: return 0;
    }
}

}  // namespace pmulab
