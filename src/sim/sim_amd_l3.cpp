// The L3 PMU of a simulated AMD L3 complex (sim_amd_l3.h).
#include "sim/sim_amd_l3.h"

namespace sim {

namespace {

constexpr u64 bit(u32 b) { return u64(1) << b; }
constexpr u64 field(u32 hi, u32 lo) { return ((u64(1) << (hi - lo + 1)) - 1) << lo; }
constexpr u64 kCommon = field(7, 0) | field(15, 8) | bit(22);
constexpr u64 kF17Bits = kCommon | field(51, 48) | field(63, 56);
constexpr u64 kF19Bits = kCommon | field(44, 42) | bit(46) | bit(47) | field(50, 48) | field(57, 56);
constexpr u8 kGp = 13;  // #GP

}  // namespace

u8 SimAmdL3::rdmsr(u32 msr, u64* v) const {
    u32 i = (msr - kCfg0) / 2;
    *v = (msr - kCfg0) % 2 ? ctr_[i] : cfg_[i];
    return 0;
}

u8 SimAmdL3::wrmsr(u32 msr, u64 v) {
    u32 i = (msr - kCfg0) / 2;
    if ((msr - kCfg0) % 2) {
        if (v & ~kCounterMask) return kGp;
        ctr_[i] = v;
        return 0;
    }
    if (v & ~(f17_ ? kF17Bits : kF19Bits)) return kGp;
    cfg_[i] = v;
    return 0;
}

bool SimAmdL3::selects(u64 cfg, u32 slice, u32 core, u32 thread) const {
    if (f17_) {
        u64 slice_mask = (cfg >> 48) & 0xF, thread_mask = cfg >> 56;
        return ((slice_mask >> slice) & 1) && ((thread_mask >> (2 * (core % 4) + (thread & 1))) & 1);
    }
    bool all_slices = cfg & bit(46), all_cores = cfg & bit(47);
    u64 slice_id = (cfg >> 48) & 7, core_id = (cfg >> 42) & 7, thread_mask = (cfg >> 56) & 3;
    return (all_slices || slice_id == slice) && (all_cores || core_id == core % 8) &&
           ((thread_mask >> (thread & 1)) & 1);
}

void SimAmdL3::lookup(u32 slice, u32 core, u32 thread, bool hit) {
    for (u32 i = 0; i < kCounters; ++i) {
        u64 cfg = cfg_[i], umask = (cfg >> 8) & 0xFF;
        if (!(cfg & bit(22)) || (cfg & 0xFF) != kLookupState) continue;
        if (!(umask & (hit ? 0xFE : 0x01)) || !selects(cfg, slice, core, thread)) continue;
        ctr_[i] = (ctr_[i] + 1) & kCounterMask;
    }
}

namespace {
CacheLevelSpec* l3_of(CacheConfig* c) { return c->levels.size() == 3 ? &c->levels[2] : nullptr; }
}  // namespace

void amd_l3_defaults(CacheConfig* d, const SimAmdL3& l3) {
    CacheLevelSpec* l = l3_of(d);
    if (!l || l->sets() % l3.slices()) return;
    l->slices = l3.slices();
    l->hash = SliceHash::amd_standin;
}

pmulab::Status amd_l3_check(CacheConfig* c, const SimAmdL3& l3) {
    CacheLevelSpec* l = l3_of(c);
    if (!l) return pmulab::Status();
    if (l->slices != l3.slices())
        return pmulab::Error::make(pmulab::Errc::invalid_argument,
                                   "L3: %u slices, but this model's L3 PMU counts %u per complex (family %s): give "
                                   "L3:SIZE:WAYS:POLICY:%u",
                                   l->slices, l3.slices(), l3.f17() ? "17h" : "19h", l3.slices());
    l->hash = SliceHash::amd_standin;
    return pmulab::Status();
}

}  // namespace sim
