// Instruction-Based Sampling of the simulated CPU (sim_ibs.h).
#include "sim/sim_ibs.h"

#include "sim/sim_internal.h"
#include "sim/sim_memsrc.h"

namespace sim {

namespace {

// CPUID Fn8000_001B_EAX (APM Vol. 3 E.4.13).
constexpr u32 kFfv = 1u << 0, kFetchSam = 1u << 1, kOpSam = 1u << 2, kOpCnt = 1u << 4, kBrnTrgt = 1u << 5,
              kOpCntExt = 1u << 6, kFetchCtlExtd = 1u << 9, kZen4 = 1u << 11;

// IbsOpCtl (APM §13.3.2): MaxCnt[15:0] (count bits 19:4), L3MissOnly 16 (Zen 4), En 17,
// Val 18, CntCtl 19, MaxCnt[26:20] (OpCntExt) 26:20, CurCnt 58:32.
constexpr u64 kOpL3MissOnly = bit(16), kOpEn = bit(17), kOpVal = bit(18), kOpCntCtl = bit(19);
constexpr u64 kOpCurShift = 32, kOpCurMask = 0x7FFFFFFull;
// IbsOpData3: LdOp 0, StOp 1, DcMiss 7, DcLinAddrValid 17, DcPhyAddrValid 18, L2Miss 20,
// DcMissLat 47:32.
constexpr u64 kLdOp = bit(0), kStOp = bit(1), kDcMiss = bit(7), kLinValid = bit(17), kPhyValid = bit(18),
              kL2Miss = bit(20);
// IbsFetchCtl (APM §13.3.1): MaxCnt 15:0, Cnt 31:16, Lat 47:32, En 48, Val 49, Comp 50,
// IcMiss 51, PhyAddrValid 52, RandEn 57, L2Miss 58, L3MissOnly 59 (Zen 4).
constexpr u64 kFetchEn = bit(48), kFetchVal = bit(49), kFetchComp = bit(50), kIcMiss = bit(51),
              kFetchPhyValid = bit(52), kFetchRandEn = bit(57), kFetchL3MissOnly = bit(59);
// The random bits: IbsOpCurCnt[6:0] after a rollover, the fetch counter's 3:0 (RandEn).
constexpr u64 kOpRandMask = 0x7F, kFetchRandMask = 0xF;
// IBS_CTL: LVTOffset 3:0, LVTOffsetVal 8.
constexpr u64 kLvtOffsetVal = bit(8);

bool amd_vendor(const CpuidSnapshot& s) {
    const u32 ebx = s.get(0).ebx;
    return ebx == kAmdEbx || ebx == kHygonEbx;
}

}  // namespace

IbsUnit::IbsUnit(const CpuidSnapshot& s) {
    const u32 emax = s.get(0x80000000).eax;
    if (!amd_vendor(s) || emax < 0x8000001B || !((s.get(0x80000001).ecx >> 10) & 1)) return;
    const u32 f = s.get(0x8000001B).eax;
    if (f & kFfv) features_ = f;
}

bool IbsUnit::claims(u32 m) const {
    if (!present()) return false;
    if (m == reg::IBS_BR_TARGET) return features_ & kBrnTrgt;
    if (m == reg::IBS_FETCH_CTL_EXTD) return features_ & kFetchCtlExtd;
    return m >= reg::IBS_FETCH_CTL && m <= reg::IBS_CTL;
}

u8 IbsUnit::rdmsr(u32 m, u64* v) const {
    switch (m) {
        case reg::IBS_FETCH_CTL: *v = fetch_ctl_; break;
        case reg::IBS_FETCH_LINAD: *v = fetch_lin_; break;
        case reg::IBS_FETCH_PHYSAD: *v = fetch_phys_; break;
        case reg::IBS_OP_CTL:
            // IbsOpCurCnt reads the periodic counter (RdWrOpCnt).
            *v = (op_ctl_ & ~(kOpCurMask << kOpCurShift)) | ((op_count_ & kOpCurMask) << kOpCurShift);
            break;
        case reg::IBS_OP_RIP: *v = op_rip_; break;
        case reg::IBS_OP_DATA: *v = op_data_; break;
        case reg::IBS_OP_DATA2: *v = op_data2_; break;
        case reg::IBS_OP_DATA3: *v = op_data3_; break;
        case reg::IBS_DC_LINAD: *v = dc_lin_; break;
        case reg::IBS_DC_PHYSAD: *v = dc_phys_; break;
        case reg::IBS_CTL: *v = kLvtOffsetVal | kLvtOffset; break;
        case reg::IBS_BR_TARGET: *v = br_target_; break;
        case reg::IBS_FETCH_CTL_EXTD: *v = fetch_extd_; break;
        default: return kVectorGP;
    }
    return 0;
}

u8 IbsUnit::wrmsr(u32 m, u64 v) {
    switch (m) {
        case reg::IBS_OP_CTL: {
            u64 ok = 0xFFFFull | kOpEn | kOpVal | (kOpCurMask << kOpCurShift);
            if (features_ & kZen4) ok |= bit(16);
            if (features_ & kOpCnt) ok |= kOpCntCtl;
            if (features_ & kOpCntExt) ok |= 0x7Full << 20;
            if (!(features_ & kOpSam) || (v & ~ok)) return kVectorGP;
            op_ctl_ = v;
            op_count_ = (v >> kOpCurShift) & kOpCurMask;  // the counter restarts from IbsOpCurCnt
            return 0;
        }
        case reg::IBS_FETCH_CTL: {
            u64 ok = width_mask(59) | ((features_ & kZen4) ? bit(59) : 0);
            if (!(features_ & kFetchSam) || (v & ~ok)) return kVectorGP;
            fetch_ctl_ = v;
            fetch_count_ = ((v >> 16) & 0xFFFF) << 4;  // IbsFetchCnt[19:4]
            if ((v & kFetchEn) && (v & kFetchRandEn)) fetch_count_ |= random() & kFetchRandMask;
            return 0;
        }
        case reg::IBS_CTL: return kVectorGP;  // read-only: firmware sets it (PCI config)
        default: poke(m, v); return 0;
    }
}

void IbsUnit::poke(u32 m, u64 v) {
    switch (m) {
        case reg::IBS_FETCH_CTL: fetch_ctl_ = v; break;
        case reg::IBS_FETCH_LINAD: fetch_lin_ = v; break;
        case reg::IBS_FETCH_PHYSAD: fetch_phys_ = v; break;
        case reg::IBS_OP_CTL: op_ctl_ = v, op_count_ = (v >> kOpCurShift) & kOpCurMask; break;
        case reg::IBS_OP_RIP: op_rip_ = v; break;
        case reg::IBS_OP_DATA: op_data_ = v; break;
        case reg::IBS_OP_DATA2: op_data2_ = v; break;
        case reg::IBS_OP_DATA3: op_data3_ = v; break;
        case reg::IBS_DC_LINAD: dc_lin_ = v; break;
        case reg::IBS_DC_PHYSAD: dc_phys_ = v; break;
        case reg::IBS_BR_TARGET: br_target_ = v; break;
        case reg::IBS_FETCH_CTL_EXTD: fetch_extd_ = v; break;
        default: break;
    }
}

bool IbsUnit::counting() const {
    const bool op = (op_ctl_ & kOpEn) && !(op_ctl_ & kOpVal);
    const bool fetch = (fetch_ctl_ & kFetchEn) && !(fetch_ctl_ & kFetchVal);
    return op || fetch;
}

u64 IbsUnit::random() {
    // splitmix64 (Steele, Lea, Flood 2014): one step per random value.
    u64 z = (rng_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

bool IbsUnit::tag_op(const OpInfo& op, u64 cycles) {
    if (!(op_ctl_ & kOpEn) || (op_ctl_ & kOpVal)) return false;
    const u64 max = ((op_ctl_ & 0xFFFF) << 4) | (((op_ctl_ >> 20) & 0x7F) << 20);
    op_count_ += (op_ctl_ & kOpCntCtl) ? 1 : cycles;
    if (!max || op_count_ < max) return false;
    op_count_ = 0;
    if ((op_ctl_ & kOpL3MissOnly) && !(op.load && op.served >= 3)) return false;  // discarded
    op_count_ = random() & kOpRandMask;                                           // IbsOpCurCnt[6:0] after the rollover
    op_rip_ = op.rip;
    op_data_ = (cycles & 0xFFFF) << 16;  // IbsTagToRetCtr: the op's cycles
    op_data3_ = 0;
    op_data2_ = op.load ? ibs_op_data2(op.served, features_ & kZen4) : 0;
    if (op.load || op.store) {
        op_data3_ |= (op.load ? kLdOp : 0) | (op.store ? kStOp : 0) | kLinValid | kPhyValid;
        dc_lin_ = dc_phys_ = op.data_addr;  // identity-mapped
    }
    if (op.load && op.served > 0) {
        op_data3_ |= kDcMiss | (op.served >= 2 ? kL2Miss : 0);
        op_data3_ |= u64(op.miss_latency & 0xFFFF) << 32;  // IbsDcMissLat
    }
    op_ctl_ |= kOpVal;
    ++samples_;
    return true;
}

bool IbsUnit::tag_fetch(const OpInfo& op) {
    if (!(fetch_ctl_ & kFetchEn) || (fetch_ctl_ & kFetchVal)) return false;
    const u64 max = (fetch_ctl_ & 0xFFFF) << 4;
    ++fetch_count_;
    const bool miss = fetched_lines_.insert(op.rip / 64).second;
    if (!max || fetch_count_ < max) return false;
    fetch_count_ = 0;
    if (fetch_ctl_ & kFetchL3MissOnly) {  // no fetch misses L3 in the model: discarded, restarted
        if (fetch_ctl_ & kFetchRandEn) fetch_count_ = random() & kFetchRandMask;
        return false;
    }
    fetch_lin_ = fetch_phys_ = op.rip;
    const u64 lat = miss ? kFetchMissLatency : kFetchHitLatency;
    fetch_ctl_ &= ~((0xFFFFull << 16) | (0xFFFFull << 32) | kIcMiss);
    fetch_ctl_ |= kFetchVal | kFetchComp | kFetchPhyValid | (miss ? kIcMiss : 0) | (lat << 32);
    ++samples_;
    return true;
}

bool IbsUnit::retire(const OpInfo& op, u64 cycles) {
    if (!present()) return false;
    const bool o = tag_op(op, cycles);
    const bool f = tag_fetch(op);
    return o || f;
}

void IbsUnit::state(PmuState* out) const {
    if (!present()) return;
    // The controls (what software owns); the sample registers are the hardware's results.
    u64 v = 0;
    for (u32 m : {reg::IBS_FETCH_CTL, reg::IBS_OP_CTL})
        if (rdmsr(m, &v) == 0) (*out)[m] = v;
}

}  // namespace sim
