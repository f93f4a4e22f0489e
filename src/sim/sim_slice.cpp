// L3 slices (sim_slice.h): the complex-addressing hash and the models that have C-Boxes.
#include "sim/sim_slice.h"

namespace sim {

namespace {

u32 parity(u64 x) { return u32(__builtin_popcountll(x) & 1); }

// CPUID.01H:EAX's family and model (SDM Vol. 2A, CPUID, "Version Information").
u32 display_model(const pmulab::CpuidSnapshot& s, u32* family) {
    u32 eax = s.get(1).eax, base = (eax >> 8) & 0xF;
    *family = base == 0xF ? base + ((eax >> 20) & 0xFF) : base;
    u32 model = (eax >> 4) & 0xF;
    if (base == 0x6 || base == 0xF) model |= ((eax >> 16) & 0xF) << 4;
    return model;
}

bool is_intel(const pmulab::CpuidSnapshot& s) { return s.get(0).ebx == 0x756e6547u; }  // "Genu"

// Client parts with one C-Box per core and the LLC_LOOKUP event (SDM Vol. 3B, the uncore
// performance monitoring sections of the 2nd .. 8th generation Core processors).
constexpr u32 kSnbToHswClient[] = {0x2A, 0x3A, 0x3C, 0x45, 0x46, 0x3D, 0x47};
constexpr u32 kSklClient[] = {0x4E, 0x5E, 0x8E, 0x9E, 0xA5, 0xA6};

template <size_t N> bool in(const u32 (&list)[N], u32 m) {
    for (u32 x : list)
        if (x == m) return true;
    return false;
}

}  // namespace

bool slice_count_ok(u32 slices) {
    return slices == 1 || slices == 2 || slices == 4 || slices == 8 || (slices > 8 && slices <= kMaxServerSlices);
}

u32 llc_slice(u64 phys, u32 slices) {
    if (slices > 8) {  // the server stand-in (sim_slice.h)
        u64 h = phys >> 6;
        h ^= h >> 33;
        h *= 0xFF51AFD7ED558CCDull;
        h ^= h >> 33;
        h *= 0xC4CEB9FE1A85EC53ull;
        h ^= h >> 33;
        return u32((unsigned __int128)h * slices >> 64);
    }
    u32 out = 0;
    for (u32 i = 0; (1u << i) < slices && i < 3; ++i) out |= parity(phys & kSliceHashMasks[i]) << i;
    return out;
}

u32 amd_standin_slice(u64 phys, u32 slices) {
    u32 fold = 0;
    for (u32 b = 6; b < 48; b += 3) fold ^= u32(phys >> b) & 7;
    return slices > 1 ? fold & (slices - 1) : 0;
}

u32 slice_of_hash(u64 phys, u32 slices, SliceHash hash) {
    return hash == SliceHash::amd_standin ? amd_standin_slice(phys, slices) : llc_slice(phys, slices);
}

bool uncore_global_at_e01(const pmulab::CpuidSnapshot& cpuid) {
    u32 family = 0, model = display_model(cpuid, &family);
    return is_intel(cpuid) && family == 6 && in(kSklClient, model);
}

u32 server_llc_slices(const pmulab::CpuidSnapshot& cpuid, u32* gen) {
    u32 family = 0, model = display_model(cpuid, &family);
    if (!is_intel(cpuid) || family != 6 || (cpuid.get(1).ecx >> 31)) return 0;
    u32 g = model == 0x55 ? 0 : model == 0x6A || model == 0x6C ? 1 : model == 0x8F || model == 0xCF ? 2 : 3;
    if (gen) *gen = g;
    constexpr u32 kChas[] = {18, 28, 30, 0};
    return kChas[g];
}

u32 server_slice_ways(u32 gen) { return gen == 0 ? 11 : gen == 1 ? 12 : 15; }

u32 client_llc_slices(const pmulab::CpuidSnapshot& cpuid) {
    u32 family = 0, model = display_model(cpuid, &family);
    if (!is_intel(cpuid) || family != 6 || !(in(kSnbToHswClient, model) || in(kSklClient, model))) return 0;
    // CPUID.0BH: sub-leaf 0 is the SMT level, sub-leaf 1 the core level; EBX[15:0] the
    // logical processors at that level (SDM Vol. 2A, CPUID leaf 0BH).
    pmulab::CpuidRegs smt, core;
    if (!cpuid.find(0xB, 0, &smt) || !cpuid.find(0xB, 1, &core)) return 0;
    u32 threads = smt.ebx & 0xFFFF, logical = core.ebx & 0xFFFF;
    if (!threads || logical % threads) return 0;
    u32 cores = logical / threads;
    return cores == 2 || cores == 4 || cores == 8 ? cores : 0;
}

}  // namespace sim
