// Intel PT of the simulated Intel cores (sim_pt.h says what is modelled, and from where),
// and the PEBS assist that writes its record into the trace.
#include "sim/sim_pt.h"

#include <cstring>

#include "sim/sim_internal.h"
#include "sim/sim_pebs.h"

namespace sim {

namespace {

// MSRs (SDM Vol. 4 Table 2-2: IA32_RTIT_*; Vol. 3B "PEBS Output to Intel Processor Trace":
// the reload MSRs).
constexpr u32 kOutputBase = 0x560, kOutputMask = 0x561, kCtl = 0x570, kStatus = 0x571;
constexpr u32 kReloadPmc0 = 0x14C1, kReloadFixed0 = 0x1309;

// IA32_RTIT_CTL's bits.
constexpr u64 kTraceEn = bit(0), kCycEn = bit(1), kOs = bit(2), kUser = bit(3), kPwrEvtEn = bit(4);
constexpr u64 kFupOnPtw = bit(5), kFabricEn = bit(6), kCr3Filter = bit(7), kToPA = bit(8), kMtcEn = bit(9);
constexpr u64 kTscEn = bit(10), kDisRetc = bit(11), kPtwEn = bit(12), kBranchEn = bit(13);
constexpr u32 kMtcFreqAt = 14, kCycThreshAt = 19, kPsbFreqAt = 24, kAddrCfgAt = 32;
constexpr u64 field(u32 at) { return u64(0xF) << at; }
// IA32_RTIT_STATUS's bits.
constexpr u64 kStRo = 0x7, kStError = bit(4), kStStopped = bit(5), kStByteCnt = u64(0x1FFFF) << 32;

// Packets (SDM Vol. 3C "Packet Definitions").
constexpr u8 kBlockGprs = 0x01, kBlockBasic = 0x04, kBlockMem = 0x05;

struct Packets {
    u8 b[3 + 3 * 9 + 3 + 4 * 9 + 3 + 18 * 9 + 2] = {};
    u64 n = 0;
    void put(u8 x) { b[n++] = x; }
    void begin(u8 type) { put(0x02), put(0x63), put(type); }  // BBP, SZ = 0: 8-byte items
    void item(u8 id, const u8* v) {
        put(u8((id << 3) | 0x4));
        for (int i = 0; i < 8; ++i) put(v[i]);
    }
    void items(u8 type, const u8* group, u8 count) {
        begin(type);
        for (u8 id = 0; id < count; ++id) item(id, group + 8 * id);
    }
};

}  // namespace

PtUnit::PtUnit(const PmuLayout& L, const CpuidSnapshot& s) {
    CpuidRegs l7, l14, l14b, e8;
    if (!s.find(7, 0, &l7) || !((l7.ebx >> 25) & 1) || !s.find(0x14, 0, &l14)) return;
    pt_ = true;
    ebx0_ = l14.ebx, ecx0_ = l14.ecx;
    if (l14.eax >= 1 && s.find(0x14, 1, &l14b)) eax1_ = l14b.eax, ebx1_ = l14b.ebx;
    if (s.find(0x80000008, 0, &e8) && (e8.eax & 0xFF)) maxphys_ = e8.eax & 0xFF;
    const u8 fmt = u8((L.perf_caps >> 8) & 0xF);
    pebs_out_ = L.pdcm && ((L.perf_caps >> 16) & 1) && fmt >= 4 && ((L.perf_caps >> 14) & 1);
    gp_mask_ = L.gp_mask & 0xFF, fixed_mask_ = L.fixed_mask & 0xF;
    gp_width_ = L.gp_width, fixed_width_ = L.fixed_width;
}

bool PtUnit::claims(u32 m) const {
    if (!pt_) return false;
    if (m == kOutputBase || m == kOutputMask || m == kCtl || m == kStatus) return true;
    if (!pebs_out_) return false;
    if (m >= kReloadPmc0 && m < kReloadPmc0 + 8) return (gp_mask_ >> (m - kReloadPmc0)) & 1;
    return m >= kReloadFixed0 && m < kReloadFixed0 + 4 && ((fixed_mask_ >> (m - kReloadFixed0)) & 1);
}

bool PtUnit::tracing() const { return (ctl_ & kTraceEn) && (ctl_ & kOs) && !(status_ & (kStError | kStStopped)); }

u8 PtUnit::rdmsr(u32 m, u64* out) const {
    switch (m) {
        case kCtl: *out = ctl_; return 0;
        case kStatus: {
            const bool on = ctl_ & kTraceEn;  // TriggerEn; FilterEn (no ranges); ContextEn at CPL 0 with OS
            *out = status_ | (on ? 0x5 : 0) | (on && (ctl_ & kOs) ? 0x2 : 0);
            return 0;
        }
        case kOutputBase: *out = base_; return 0;
        case kOutputMask: *out = mask_; return 0;
        default: break;
    }
    if (m >= kReloadPmc0 && m < kReloadPmc0 + 8) return *out = reload_[m - kReloadPmc0], 0;
    if (m >= kReloadFixed0 && m < kReloadFixed0 + 4) return *out = reload_fixed_[m - kReloadFixed0], 0;
    return kVectorGP;
}

u64 PtUnit::ctl_writable() const {
    u64 w = kTraceEn | kOs | kUser | kTscEn | kDisRetc | kBranchEn;
    if (ebx0_ & 1) w |= kCr3Filter;
    if (ebx0_ & 2) w |= kCycEn | field(kCycThreshAt) | field(kPsbFreqAt);
    if (ebx0_ & 8) w |= kMtcEn | field(kMtcFreqAt);
    if (ebx0_ & 0x10) w |= kPtwEn | kFupOnPtw;
    if (ebx0_ & 0x20) w |= kPwrEvtEn;
    if (ecx0_ & 1) w |= kToPA;
    if (ecx0_ & 8) w |= kFabricEn;
    for (u32 n = 0; n < (eax1_ & 7) && n < 4; ++n) w |= field(kAddrCfgAt + 4 * n);
    return w;
}

// PSBFreq, MTCFreq and CycThresh: only the encodings leaf 14H.1's bitmaps list.
bool PtUnit::encodings_ok(u64 v) const {
    const u32 mtc = (v >> kMtcFreqAt) & 0xF, cyc = (v >> kCycThreshAt) & 0xF, psb = (v >> kPsbFreqAt) & 0xF;
    if (mtc && !((eax1_ >> (16 + mtc)) & 1)) return false;
    if (cyc && !((ebx1_ >> cyc) & 1)) return false;
    return !psb || ((ebx1_ >> (16 + psb)) & 1);
}

u8 PtUnit::write_ctl(u64 v) {
    if ((v & ~ctl_writable()) || !encodings_ok(v)) return kVectorGP;
    const bool was = ctl_ & kTraceEn, now = v & kTraceEn;
    if (was && (v & ~kTraceEn) != (ctl_ & ~kTraceEn)) return kVectorGP;  // only TraceEn may change
    if (!was && now && !(v & kToPA) && !(ecx0_ & 4)) return kVectorGP;   // no single-range output
    ctl_ = v;
    if (!was && now) {
        offset_ = mask_ >> 32;
        psb_due_ = true;
        if (v & kToPA) status_ |= kStError;  // ToPA output: not modelled
    }
    if (was && !now) mask_ = (mask_ & 0xFFFFFFFFull) | (offset_ << 32);
    return 0;
}

u8 PtUnit::wrmsr(u32 m, u64 v) {
    if (m == kCtl) return write_ctl(v);
    if (m == kStatus || m == kOutputBase || m == kOutputMask) {
        if (ctl_ & kTraceEn) return kVectorGP;  // only RTIT_CTL may be written while tracing
        if (m == kStatus) {
            if (v & ~(kStRo | kStError | kStStopped | kStByteCnt)) return kVectorGP;
            status_ = v & ~kStRo;
        } else if (m == kOutputBase) {
            if ((v & 0x7F) || (maxphys_ < 64 && (v >> maxphys_))) return kVectorGP;
            base_ = v;
        } else {
            mask_ = v | 0x7F;
        }
        return 0;
    }
    const bool gp = m >= kReloadPmc0 && m < kReloadPmc0 + 8;
    if (!claims(m)) return kVectorGP;
    if (v & ~width_mask(gp ? gp_width_ : fixed_width_)) return kVectorGP;
    (gp ? reload_[m - kReloadPmc0] : reload_fixed_[m - kReloadFixed0]) = v;
    return 0;
}

void PtUnit::state(PmuState* st) const {
    if (!pt_) return;
    for (u32 m : {kCtl, kStatus, kOutputBase, kOutputMask}) (void)rdmsr(m, &(*st)[m]);
    for (u32 i = 0; pebs_out_ && i < 8; ++i)
        if ((gp_mask_ >> i) & 1) (*st)[kReloadPmc0 + i] = reload_[i];
    for (u32 i = 0; pebs_out_ && i < 4; ++i)
        if ((fixed_mask_ >> i) & 1) (*st)[kReloadFixed0 + i] = reload_fixed_[i];
}

u64 PtUnit::reload(u32 b) const {
    if (b < 8) return reload_[b];
    return b >= 32 && b < 36 ? reload_fixed_[b - 32] : 0;
}

// Single-range output: the bytes at base + offset, wrapping at the region's end.
bool PtUnit::emit(GuestAccess& g, const u8* p, u64 n) {
    const u64 size = (mask_ & 0xFFFFFFFFull) + 1;
    while (n) {
        const u64 chunk = std::min(n, size - offset_ % size);
        if (!g.write(base_ + offset_ % size, p, chunk)) {
            status_ |= kStError;
            return false;
        }
        offset_ = (offset_ + chunk) % size;
        p += chunk, n -= chunk;
        bytes_ += chunk, since_psb_ += chunk;
    }
    return true;
}

bool PtUnit::psb_plus(GuestAccess& g) {
    u8 b[16 + 4 + 2 + 2];
    for (int i = 0; i < 16; i += 2) b[i] = 0x02, b[i + 1] = 0x82;  // PSB
    b[16] = 0x02, b[17] = 0x03, b[18] = 0x10, b[19] = 0;           // CBR: ratio 16
    b[20] = 0x99, b[21] = 0x01;                                    // MODE.Exec: 64-bit
    b[22] = 0x02, b[23] = 0x23;                                    // PSBEND
    psb_due_ = false;
    since_psb_ = 0;
    return emit(g, b, sizeof b);
}

bool PtUnit::pebs_record(GuestAccess& g, const u8* rec, u64 size) {
    if (!tracing() || size < 0x20) return false;
    u64 fmt = 0;
    std::memcpy(&fmt, rec, 8);
    Packets pk;
    pk.items(kBlockBasic, rec + 8, 3);  // IP, applicable counters, TSC
    u64 at = 0x20;
    if ((fmt & 1) && at + 0x20 <= size) pk.items(kBlockMem, rec + at, 4), at += 0x20;
    if ((fmt & 2) && at + 0x90 <= size) pk.items(kBlockGprs, rec + at, 18), at += 0x90;
    pk.put(0x02), pk.put(0x33);  // BEP
    const u64 period = u64(1) << (11 + ((ctl_ >> kPsbFreqAt) & 0xF));
    if ((psb_due_ || since_psb_ >= period) && !psb_plus(g)) return false;
    return emit(g, pk.b, pk.n);
}

// PEBS with output to Intel PT (sim_pebs.h): the record built as for the DS area, then
// written into the trace; the counter's reload from MSR_RELOAD_PMCx / FIXED_CTRx; a PMI
// only with PMI_AFTER_EACH_RECORD (IA32_PEBS_ENABLE[60]): the DS threshold is not used.
bool PebsUnit::assist_pt(u32 i, u16 event, u16 umask, const Context& c, u64* reset, bool* threshold) {
    if (!c.guest || !c.insn || !c.insn->valid || !c.pt) return false;
    *reset = c.pt->reload(i);
    u8 rec[0x20 + 0x20 + 0x90] = {};
    const u64 size = write_adaptive(rec, i, event, umask, c);
    if (c.pt->pebs_record(*c.guest, rec, size)) ++records_;
    *threshold = (enable_ >> 60) & 1;
    return true;
}

}  // namespace sim
