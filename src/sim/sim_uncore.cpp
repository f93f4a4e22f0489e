// The C-Box counters of a simulated client uncore (sim_uncore.h).
#include "sim/sim_uncore.h"

namespace sim {

namespace {

constexpr u64 bit(u32 b) { return u64(1) << b; }
constexpr u64 kEvtSelWritable = 0xFFull | (0xFFull << 8) | bit(18) | bit(22) | bit(23) | (0x1Full << 24);
constexpr u64 kEvtSelEn = bit(22);
constexpr u64 kGlobalEn = bit(29);
constexpr u8 kGp = 13;  // #GP

}  // namespace

SimUncore::SimUncore(u32 boxes, bool global_e01) : boxes_(boxes), global_e01_(global_e01) { set_boxes(boxes); }

bool SimUncore::claims(u32 msr) const {
    if (msr == kCboConfig || msr == global_msr()) return true;
    if (msr < kCbo0EvtSel || msr >= kCbo0EvtSel + kCboStride * boxes_) return false;
    u32 off = (msr - kCbo0EvtSel) % kCboStride;
    return off < kCounters || (off >= kCbo0Ctr - kCbo0EvtSel && off < kCbo0Ctr - kCbo0EvtSel + kCounters);
}

u8 SimUncore::rdmsr(u32 msr, u64* v) const {
    if (msr == kCboConfig) *v = boxes_ + 1;
    else if (msr == global_msr()) *v = global_;
    else {
        u32 box = (msr - kCbo0EvtSel) / kCboStride, off = (msr - kCbo0EvtSel) % kCboStride;
        *v = off < kCounters ? evtsel_[box][off] : ctr_[box][off - (kCbo0Ctr - kCbo0EvtSel)];
    }
    return 0;
}

u8 SimUncore::wrmsr(u32 msr, u64 v) {
    if (msr == kCboConfig) return kGp;  // read-only
    if (msr == global_msr()) {
        u64 ok = (global_e01_ ? 0x1Full : 0xFull) | kGlobalEn | bit(30) | bit(31);
        if (v & ~ok) return kGp;
        global_ = v;
        return 0;
    }
    u32 box = (msr - kCbo0EvtSel) / kCboStride, off = (msr - kCbo0EvtSel) % kCboStride;
    if (off < kCounters) {
        if (v & ~kEvtSelWritable) return kGp;
        evtsel_[box][off] = v;
    } else {
        if (v & ~kCounterMask) return kGp;
        ctr_[box][off - (kCbo0Ctr - kCbo0EvtSel)] = v;
    }
    return 0;
}

void SimUncore::llc_lookup(u32 slice, bool hit, bool write) {
    if (!(global_ & kGlobalEn) || slice >= boxes_) return;
    u64 state = hit ? 0x02 : 0x08;               // E or I
    u64 request = (write ? 0x20 : 0x10) | 0x80;  // read or write; any request
    for (u32 j = 0; j < kCounters; ++j) {
        u64 sel = evtsel_[slice][j];
        u64 umask = (sel >> 8) & 0xFF;
        if (!(sel & kEvtSelEn) || (sel & 0xFF) != kLlcLookup) continue;
        if (!(umask & state) || !(umask & request & 0xF0)) continue;
        ctr_[slice][j] = (ctr_[slice][j] + 1) & kCounterMask;
    }
}

}  // namespace sim
