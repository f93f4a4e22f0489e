// Internals shared by the simulator's sources (the logical processor: sim_cpu.cpp,
// sim_count.cpp; the PMU families: sim_pmu.cpp, sim_gp.cpp, sim_intel.cpp, sim_amd.cpp,
// sim_topdown.cpp; the machine and its builders). Not for use outside src/sim/.
#pragma once

#include <algorithm>

#include <memory>

#include "sim/sim_cpu.h"
#include "sim/sim_amd_l3.h"
#include "sim/sim_uncore.h"

namespace sim {

struct Shared {
    u64 seq = 0;
    u64 nth_wrmsr = 0;  // machine-wide countdown, 0 = off
    u8 nth_vector = 0;
    std::unique_ptr<SimUncore> uncore;  // the package's C-Boxes (client Intel parts), or null
    std::unique_ptr<SimAmdL3> amd_l3;   // the L3 complex's PMU (the named AMD models), or null
};

using pmulab::kVectorGP;
using pmulab::kVectorUD;

inline constexpr u64 width_mask(u32 bits) { return bits >= 64 ? ~u64(0) : (u64(1) << bits) - 1; }
inline constexpr u64 bit(u32 b) { return u64(1) << b; }

// Reports a misuse of the model (a test bug) and aborts.
[[noreturn]] void die(const char* fmt, ...);

// CPUID vendor strings as EBX, EDX, ECX.
inline constexpr u32 kIntelEbx = 0x756e6547, kIntelEdx = 0x49656e69, kIntelEcx = 0x6c65746e;  // GenuineIntel
inline constexpr u32 kAmdEbx = 0x68747541, kAmdEdx = 0x69746e65, kAmdEcx = 0x444d4163;        // AuthenticAMD
inline constexpr u32 kHygonEbx = 0x6f677948;                                                  // HygonGenuine

// Leaves whose output depends on ECX (Intel SDM Vol. 2A Table 3-8; AMD APM Vol. 3 App. E).
inline bool subleaf_indexed(u32 leaf) {
    static const u32 k[] = {0x4,  0x7,  0xB,  0xD,  0xF,  0x10, 0x12, 0x14,       0x17,       0x18,
                            0x1B, 0x1D, 0x1E, 0x1F, 0x20, 0x23, 0x24, 0x8000001D, 0x80000020, 0x80000026};
    return std::find(std::begin(k), std::end(k), leaf) != std::end(k);
}

// The architectural event each fixed counter counts (SDM Table 20-2), as the
// (event select, unit mask) the model delivers it under. Fixed counter 2 counts
// the model's reference clock, delivered as UnHalted Reference Cycles (3CH/01H).
struct FixedKey {
    u16 event, umask;
};
inline constexpr FixedKey kFixedKeys[7] = {
    {0xC0, 0x00},  // INST_RETIRED.ANY
    {0x3C, 0x00},  // CPU_CLK_UNHALTED.THREAD
    {0x3C, 0x01},  // CPU_CLK_UNHALTED.REF_TSC
    {0xA4, 0x01},  // TOPDOWN.SLOTS
    {0x73, 0x00},  // TOPDOWN_BAD_SPECULATION
    {0x9C, 0x01},  // TOPDOWN_FE_BOUND
    {0xC2, 0x02},  // TOPDOWN_RETIRING
};

inline bool fixed_key(u32 i, u16 event, u16 umask) {
    return i < 7 && kFixedKeys[i].event == event && kFixedKeys[i].umask == umask;
}

// GLOBAL_STATUS bits other than counter overflows (SDM Figure 20-9/20-30).
inline constexpr u64 kStatusTopaPmi = bit(55), kStatusLbrFrz = bit(58), kStatusCtrFrz = bit(59), kStatusAsci = bit(60),
                     kStatusUncore = bit(61), kStatusOvfBuf = bit(62), kStatusCondChgd = bit(63);

// Golden Cove and later P cores (family 6): PERF_METRICS has level-2 bytes (Linux
// intel_pmu_init_glc: num_topdown_events = 8). `eax` is CPUID.01H:EAX.
bool topdown_l2_model(u32 eax);

// IA32_MISC_ENABLE read-only bits: 7 performance monitoring available,
// 11 BTS unavailable, 12 PEBS unavailable.
inline constexpr u64 kMiscPerfmon = bit(7), kMiscBtsUnavail = bit(11), kMiscPebsUnavail = bit(12);
inline constexpr u64 kMiscReadOnly = kMiscPerfmon | kMiscBtsUnavail | kMiscPebsUnavail;

}  // namespace sim
