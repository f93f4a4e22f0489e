// The C-Box and CHA counters of a simulated uncore (sim_uncore.h).
#include "sim/sim_uncore.h"

namespace sim {

namespace {

constexpr u64 bit(u32 b) { return u64(1) << b; }
constexpr u64 kEvtSelWritable = 0xFFull | (0xFFull << 8) | bit(18) | bit(22) | bit(23) | (0x1Full << 24);
constexpr u64 kEvtSelEn = bit(22);
constexpr u64 kGlobalEn = bit(29);
constexpr u8 kGp = 13;  // #GP
// Server CHA registers, the simulator's own numbering of a box's registers.
enum ChaReg : u32 { kBoxCtl = 0, kCtl0 = 1, kFilter0 = 5, kFilter1 = 6, kCtr0 = 8 };
constexpr u64 kBoxCtlWritable = bit(0) | bit(1) | bit(8) | bit(16), kBoxFrz = bit(8);
constexpr u64 kCtlLow = 0xFFFFFFFFull & ~bit(16) & ~bit(21);  // Skylake-SP, Ice Lake-SP
constexpr u64 kCtlLowSpr = 0xFFFFFFFFull & ~bit(19) & ~bit(21);
constexpr u64 kUmaskExt = 0x3FFFFFFull << 32;

}  // namespace

SimUncore::SimUncore(u32 boxes, bool global_e01)
    : SimUncore(boxes, global_e01 ? UncoreKind::client_skl : UncoreKind::client_snb) {}

SimUncore::SimUncore(u32 boxes, UncoreKind kind) : boxes_(boxes), kind_(kind) { set_boxes(boxes); }

void SimUncore::set_boxes(u32 boxes) {
    u32 max = server() ? kMaxChas : kMaxBoxes;
    boxes_ = boxes < max ? boxes : max;
}

u32 SimUncore::cha_msr(u32 box, u32 off) const {
    u32 base = 0;
    if (kind_ == UncoreKind::skx) base = 0xE00 + 0x10 * box;
    else if (kind_ == UncoreKind::icx)
        base = box < 18 ? 0xE00 + 0xE * box : box < 34 ? 0xE00 + 0xE * (box + 1) : 0xB60 + 0xE * (box - 34);
    else base = 0x2000 + 0x10 * box;
    if (kind_ != UncoreKind::spr) return off == kFilter1 && kind_ != UncoreKind::skx ? 0 : base + off;
    if (off >= kCtl0 && off < kCtl0 + kChaCounters) return base + 1 + off;
    if (off == kFilter0) return base + 0xE;
    return off == kFilter1 ? 0 : base + off;
}

bool SimUncore::cha_find(u32 msr, u32* box, u32* off) const {
    static constexpr u32 kOffs[] = {kBoxCtl, 1, 2, 3, 4, kFilter0, kFilter1, kCtr0, 9, 10, 11};
    for (u32 b = 0; b < boxes_; ++b)
        for (u32 o : kOffs)
            if (cha_msr(b, o) == msr) {
                *box = b, *off = o;
                return true;
            }
    return false;
}

bool SimUncore::claims(u32 msr) const {
    if (server()) {
        u32 b, o;
        return (kind_ == UncoreKind::spr && msr == kSprChaCount) || cha_find(msr, &b, &o);
    }
    if (msr == kCboConfig || msr == global_msr()) return true;
    if (msr < kCbo0EvtSel || msr >= kCbo0EvtSel + kCboStride * boxes_) return false;
    u32 off = (msr - kCbo0EvtSel) % kCboStride;
    return off < kCounters || (off >= kCbo0Ctr - kCbo0EvtSel && off < kCbo0Ctr - kCbo0EvtSel + kCounters);
}

u8 SimUncore::rdmsr(u32 msr, u64* v) const {
    if (server()) {
        u32 b = 0, o = 0;
        if (msr == kSprChaCount && kind_ == UncoreKind::spr) *v = boxes_;
        else if (cha_find(msr, &b, &o)) {
            const Cha& c = cha_[b];
            *v = o == kBoxCtl    ? c.box_ctl
                 : o == kFilter0 ? c.filter0
                 : o == kFilter1 ? c.filter1
                 : o >= kCtr0    ? c.ctr[o - kCtr0]
                                 : c.ctl[o - kCtl0];
        }
        return 0;
    }
    if (msr == kCboConfig) *v = boxes_ + 1;
    else if (msr == global_msr()) *v = global_;
    else {
        u32 box = (msr - kCbo0EvtSel) / kCboStride, off = (msr - kCbo0EvtSel) % kCboStride;
        *v = off < kCounters ? evtsel_[box][off] : ctr_[box][off - (kCbo0Ctr - kCbo0EvtSel)];
    }
    return 0;
}

u8 SimUncore::cha_write(u32 box, u32 off, u64 v) {
    Cha& c = cha_[box];
    if (off == kBoxCtl) {
        if (v & ~kBoxCtlWritable) return kGp;
        if (v & bit(0))
            for (u64& x : c.ctl) x = 0;
        if (v & bit(1))
            for (u64& x : c.ctr) x = 0;
        c.box_ctl = v & (kBoxFrz | bit(16));
    } else if (off == kFilter0 || off == kFilter1) {
        u64 ok = kind_ != UncoreKind::skx ? 0x3FFull : off == kFilter0 ? 0x7FFFFFFull : 0xFFFFFFFFull;
        if (v & ~ok) return kGp;
        (off == kFilter0 ? c.filter0 : c.filter1) = v;
    } else if (off >= kCtr0) {
        if (v & ~kChaCounterMask) return kGp;
        c.ctr[off - kCtr0] = v;
    } else {
        u64 ok = kind_ == UncoreKind::skx ? kCtlLow : (kind_ == UncoreKind::icx ? kCtlLow : kCtlLowSpr) | kUmaskExt;
        if (v & ~ok) return kGp;
        c.ctl[off - kCtl0] = v;
    }
    return 0;
}

u8 SimUncore::wrmsr(u32 msr, u64 v) {
    if (server()) {
        u32 b = 0, o = 0;
        if (msr == kSprChaCount) return kGp;  // read-only
        return cha_find(msr, &b, &o) ? cha_write(b, o, v) : kGp;
    }
    if (msr == kCboConfig) return kGp;  // read-only
    if (msr == global_msr()) {
        u64 ok = (kind_ == UncoreKind::client_skl ? 0x1Full : 0xFull) | kGlobalEn | bit(30) | bit(31);
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

// The CAPID6 (low) and CAPID7 (high) bits of the CHAs: one per CHA from bit 0 up,
// leaving every third bit clear while there is room (the fused-off CHAs of a real part
// leave holes, and pmulab counts bits, as Linux does).
u64 SimUncore::cha_capid() const {
    u64 mask = 0;
    u32 room = kind_ == UncoreKind::skx ? 28 : 64, left = boxes_;
    for (u32 i = 0; i < room && left; ++i) {
        if (i % 3 == 2 && room - i > left) continue;
        mask |= bit(i);
        --left;
    }
    return mask;
}

u32 SimUncore::pci_read32(u32 bus, u32 dev, u32 fn, u32 offset) const {
    if ((kind_ != UncoreKind::skx && kind_ != UncoreKind::icx) || bus != kPcuBus || dev != 30 || fn != 3)
        return 0xFFFFFFFFu;
    if (offset == 0) return (kind_ == UncoreKind::skx ? 0x2083u : 0x345Bu) << 16 | 0x8086u;
    if (offset == 0x9C) return u32(cha_capid());
    if (offset == 0xA0 && kind_ == UncoreKind::icx) return u32(cha_capid() >> 32);
    return 0;
}

bool SimUncore::cha_counts(u32 box, u32 j, bool hit, bool write) const {
    const Cha& c = cha_[box];
    u64 ctl = c.ctl[j];
    if (!(ctl & kEvtSelEn) || (ctl & 0xFF) != kLlcLookup) return false;
    u64 umask = (ctl >> 8) & 0xFF, ext = (ctl >> 32) & 0x3FFFFFF;
    if (kind_ == UncoreKind::skx) {
        u64 state = hit ? bit(22) : bit(17);  // LLC E, LLC I
        bool request = (umask & 0x10) || (umask & (write ? 0x04 : 0x02));
        return (umask & 1) && request && (c.filter0 & state);
    }
    bool state = umask & (hit ? 0x20 : 0x01);
    bool type = ext & (bit(5) | (write ? bit(3) : bit(0)));
    return state && type && (ext & bit(11));
}

void SimUncore::llc_lookup(u32 slice, bool hit, bool write) {
    if (server()) {
        if (slice >= boxes_ || (cha_[slice].box_ctl & kBoxFrz)) return;
        for (u32 j = 0; j < kChaCounters; ++j)
            if (cha_counts(slice, j, hit, write)) cha_[slice].ctr[j] = (cha_[slice].ctr[j] + 1) & kChaCounterMask;
        return;
    }
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
