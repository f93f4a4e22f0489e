// The L3 performance counters of a simulated AMD part (PerfCtrExtLLC, CPUID
// Fn8000_0001_ECX[28]): the PMU of one L3 complex (a CCX on family 17h, a CCD on 19h/1Ah),
// counting the lookups the memory hierarchy makes in the complex's slices (sim_cache.h; the
// slices by the simulator's stand-in hash, sim_slice.h amd_standin_slice). Written from
// APM Vol. 2 §13.2.4 "L3 Cache Performance Monitor Counters" and the PPRs' L3 PMC sections:
//
//   ChL3PmcCfg n  C001_0230H + 2n (n = 0 .. 5): EventSel 7:0, UnitMask 15:8, Enable 22;
//                 family 17h: SliceMask 51:48 (a bit per slice), ThreadMask 63:56 (bit
//                 2 * core + thread of the CCX's 4 cores); family 19h/1Ah: CoreId 44:42,
//                 EnAllSlices 46, EnAllCores 47, SliceId 50:48, ThreadMask 57:56 (the SMT
//                 thread). Every other bit is reserved: a write setting one is #GP.
//   ChL3Pmc n     C001_0231H + 2n: 48-bit counters (bits 63:48 reserved, #GP).
//
// Counted: L3PMCx04 "L3 Lookup State": unit mask bit 0 a lookup that missed, bits 7:1 one
// that hit (FFh: every lookup), of a load or store that reaches the L3 (missed L1D and L2);
// a counter counts a lookup when it is enabled, its slice is selected (SliceMask bit /
// EnAllSlices or SliceId) and so is the requesting thread (ThreadMask bit / EnAllCores or
// CoreId, and the ThreadMask bit of the SMT thread).
#pragma once

#include "base/base.h"
#include "sim/sim_cache.h"

namespace sim {

using pmulab::u32;
using pmulab::u64;
using pmulab::u8;

class SimAmdL3 {
public:
    static constexpr u32 kCounters = 6, kCfg0 = 0xC0010230, kCtr0 = 0xC0010231;
    static constexpr u8 kLookupState = 0x04;
    static constexpr u64 kCounterMask = (u64(1) << 48) - 1;

    // Family 17h's layout (4 slices per complex) or 19h/1Ah's (8 slices).
    explicit SimAmdL3(bool f17) : f17_(f17) {}
    bool f17() const { return f17_; }
    u32 slices() const { return f17_ ? 4 : 8; }

    bool claims(u32 msr) const { return msr >= kCfg0 && msr < kCfg0 + 2 * kCounters; }
    // Returns 0 or the fault vector.
    u8 rdmsr(u32 msr, u64* value) const;
    u8 wrmsr(u32 msr, u64 value);

    // One lookup in `slice` by thread `thread` of core `core` of the complex, a hit or a miss.
    void lookup(u32 slice, u32 core, u32 thread, bool hit);

private:
    bool selects(u64 cfg, u32 slice, u32 core, u32 thread) const;
    bool f17_;
    u64 cfg_[kCounters] = {};
    u64 ctr_[kCounters] = {};
};

// The machine's L3 is the complex's: slices() slices by the stand-in hash. Before
// parse_cache_spec: the defaults' L3 (when its sets split). After it: the L3 must keep that
// slice count (invalid_argument otherwise: the PMU counts the family's slices).
void amd_l3_defaults(CacheConfig* defaults, const SimAmdL3& l3);
pmulab::Status amd_l3_check(CacheConfig* c, const SimAmdL3& l3);

}  // namespace sim
