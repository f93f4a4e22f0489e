// PEBS of the simulated Intel cores (sim_pebs.h says what is modelled, and from where).
#include "sim/sim_pebs.h"

#include <cstring>

#include "sim/sim_costs.h"
#include "sim/sim_internal.h"
#include "sim/sim_topdown.h"
#include "sim/sim_memsrc.h"

namespace sim {

namespace {

// MSR addresses (SDM Vol. 4 Table 2-2 "IA32_DS_AREA", "IA32_PEBS_ENABLE"; Table 2-?? of
// Ice Lake: MSR_PEBS_DATA_CFG; MSR_PEBS_LD_LAT_THRESHOLD from Nehalem on).
constexpr u32 kDsArea = 0x600, kPebsEnable = 0x3F1, kDataCfg = 0x3F2, kLdLat = 0x3F6;

// The 64-bit DS save area (SDM Vol. 3B §20.6.2.1, "IA-32e mode DS save area"): BTS's four
// fields, then PEBS's: buffer base, index, absolute maximum, interrupt threshold, and the
// reset value of GP counter i at 0x40 + 8i; in format 4 fixed counter j's at 0x80 + 8j
// (eight GP slots, then the fixed ones; §20.9 fixed-counter PEBS).
constexpr u64 kDsPebsBase = 0x20, kDsPebsIndex = 0x28, kDsPebsMax = 0x30, kDsPebsThreshold = 0x38;
constexpr u64 kDsReset0 = 0x40, kDsFixedReset0 = 0x80;
// Record format 5 (SDM Vol. 3B §20.6.2.1, the DS save area of format 5): the counter-reset
// array has 32 GP slots (0x40 + 8i, i < 32), then the fixed counters' at 0x140 + 8j (j < 16);
// the records are format 4's.
constexpr u64 kDs5FixedReset0 = 0x140, kDs5Bytes = 0x1C0;
constexpr unsigned kDsWords = kDs5Bytes / 8;

// Record format 3 (SDM Vol. 3B §20.6.2.2, Skylake's "PEBS record format 3", 200 bytes).
constexpr u64 kF3Flags = 0x0, kF3Ip = 0x8, kF3Gprs = 0x10, kF3Status = 0x90, kF3Dla = 0x98, kF3Lat = 0xA8;
constexpr u64 kF3RealIp = 0xB0, kF3Tsc = 0xC0, kF3Size = 0xC8;
constexpr u64 kF3Dse = 0xA0, kMemAux = 0x8;  // the data source (sim_memsrc.h)
// Its GPR order: RAX RBX RCX RDX RSI RDI RBP RSP R8..R15, as indices of GuestAccess::gprs.
constexpr unsigned kF3Order[16] = {0, 3, 1, 2, 6, 7, 5, 4, 8, 9, 10, 11, 12, 13, 14, 15};
// Adaptive PEBS (format 4, SDM Vol. 3B §20.9.2): the groups and their sizes.
constexpr u64 kBasicSize = 0x20, kMemSize = 0x20, kGprSize = 0x90;
constexpr u64 kCfgMem = 1, kCfgGpr = 2;

bool data_la(u16 event) { return (event >= 0xD0 && event <= 0xD4) || event == 0xCD; }
bool store_event(u16 event, u16 umask) { return event == 0xD0 && (umask & 0x02); }
bool load_latency(u16 event, u16 umask) { return event == 0xCD && umask == 0x01; }

void put(u8* rec, u64 at, u64 v) { std::memcpy(rec + at, &v, 8); }

}  // namespace

u32 pebs_load_latency(unsigned level) {
    u64 served[4] = {};
    served[level > 3 ? 3 : level] = 1;
    return kL1LoadToUse + u32(memory_stall_cycles(served));
}

PebsUnit::PebsUnit(const PmuLayout& L, const CpuidSnapshot& s, IntelEvents events) {
    CpuidRegs l1;
    const bool ds = s.find(1, 0, &l1) && ((l1.edx >> 21) & 1);
    const u8 fmt = u8((L.perf_caps >> 8) & 0xF);
    if (!ds || !L.pdcm || L.version < 2 || fmt < 3 || fmt > 5) return;
    // Atom-family and older cores: not modelled, except the E cores of format 5 (Gracemont
    // and later: adaptive PEBS like the P cores, their own counters).
    const bool e_core = fmt == 5 && sim_atom_core(s) != SimAtom::none;
    if (events == IntelEvents::architectural && !e_core) return;
    format_ = fmt;
    adaptive_ = fmt >= 4 && ((L.perf_caps >> 14) & 1);
    version_ = L.version;
    gp_mask_ = L.gp_mask;
    fixed_mask_ = L.fixed_mask & 0xFF;
}

bool PebsUnit::claims(u32 m) const {
    if (!format_) return false;
    return m == kDsArea || m == kPebsEnable || m == kLdLat || (m == kDataCfg && adaptive_);
}

bool PebsUnit::ll_enabled(u32 i) const { return version_ < 5 ? ((enable_ >> (32 + i)) & 1) : true; }

u8 PebsUnit::rdmsr(u32 m, u64* out) const {
    switch (m) {
        case kDsArea: *out = ds_area_; return 0;
        case kPebsEnable: *out = enable_; return 0;
        case kDataCfg: *out = data_cfg_; return 0;
        case kLdLat: *out = ld_lat_; return 0;
        default: return kVectorGP;
    }
}

u8 PebsUnit::wrmsr(u32 m, u64 v) {
    u64 writable = 0;
    u64* reg = nullptr;
    switch (m) {
        case kDsArea: {
            const int64_t top = int64_t(v) >> 47;  // a linear address: canonical
            if (top != 0 && top != -1) return kVectorGP;
            ds_area_ = v;
            return 0;
        }
        case kPebsEnable:
            // GP counters; before v5 bits 32+i (counters 0-3) are LL_EN (load latency), from
            // v5 with adaptive PEBS the fixed counters' PEBS enables.
            writable = u64(gp_mask_) | (version_ < 5 ? u64(gp_mask_ & 0xF) << 32 : 0) |
                       (version_ >= 5 && adaptive_ ? u64(fixed_mask_) << 32 : 0);
            reg = &enable_;
            if (pt_output_) writable |= u64(7) << 60;                 // PMI_AFTER_EACH_RECORD, PEBS_OUTPUT
            if (((v >> 61) & 3) > 1 && pt_output_) return kVectorGP;  // output 10B/11B: reserved
            break;
        case kDataCfg: writable = kCfgMem | kCfgGpr, reg = &data_cfg_; break;
        case kLdLat: writable = 0xFFFF, reg = &ld_lat_; break;
        default: return kVectorGP;
    }
    if (v & ~writable) return kVectorGP;
    *reg = v;
    return 0;
}

void PebsUnit::state(PmuState* st) const {
    if (!format_) return;
    (*st)[kDsArea] = ds_area_;
    (*st)[kPebsEnable] = enable_;
    (*st)[kLdLat] = ld_lat_;
    if (adaptive_) (*st)[kDataCfg] = data_cfg_;
}

u64 PebsUnit::write_format3(u8* rec, u32 i, u16 event, u16 umask, const Context& c) const {
    const RetiredInsn& in = *c.insn;
    u64 g[16] = {}, flags = 0;
    c.guest->gprs(g, &flags);
    put(rec, kF3Flags, flags);
    put(rec, kF3Ip, in.next);
    for (unsigned k = 0; k < 16; ++k) put(rec, kF3Gprs + 8 * k, g[kF3Order[k]]);
    put(rec, kF3Status, c.status | bit(i));
    const bool st = store_event(event, umask);
    put(rec, kF3Dla, !data_la(event) ? 0 : st ? in.store_addr : in.load_addr);
    put(rec, kF3Lat, load_latency(event, umask) && ll_enabled(i) ? pebs_load_latency(in.served) : 0);
    put(rec, kF3Dse, load_latency(event, umask) && ll_enabled(i) ? pebs_data_source(in.served) : 0);
    put(rec, kF3RealIp, in.rip);
    put(rec, kF3Tsc, c.tsc);
    return kF3Size;
}

u64 PebsUnit::write_adaptive(u8* rec, u32 i, u16 event, u16 umask, const Context& c) const {
    const RetiredInsn& in = *c.insn;
    u64 at = kBasicSize;
    if (data_cfg_ & kCfgMem) {
        const bool st = store_event(event, umask);
        put(rec, at, !data_la(event) ? 0 : st ? in.store_addr : in.load_addr);
        put(rec, at + 0x10, load_latency(event, umask) ? pebs_load_latency(in.served) : 0);
        put(rec, at + kMemAux, load_latency(event, umask) ? pebs_data_source(in.served) : 0);
        at += kMemSize;
    }
    if (data_cfg_ & kCfgGpr) {
        u64 g[16] = {}, flags = 0;
        c.guest->gprs(g, &flags);
        put(rec, at, flags);
        put(rec, at + 8, in.next);
        for (unsigned k = 0; k < 16; ++k) put(rec, at + 0x10 + 8 * k, g[k]);
        at += kGprSize;
    }
    // Basic group: [31:0] the groups present (DATA_CFG's bits), [63:48] the record's size.
    put(rec, 0, (data_cfg_ & (kCfgMem | kCfgGpr)) | (at << 48));
    put(rec, 0x8, in.rip);
    put(rec, 0x10, c.status | bit(i));
    put(rec, 0x18, c.tsc);
    return at;
}

// The DS area's reset value of counter i (i < 32: PMCi; 32 + j: fixed counter j): format
// 4 and before eight GP slots and (format 4) fixed at 0x80; format 5 32 GP slots, fixed
// at 0x140.
u64 PebsUnit::reset_value(const u64* ds, u32 i) const {
    const u32 gp_slots = format_ >= 5 ? 32 : 8, fixed_slots = format_ >= 5 ? 16 : format_ == 4 ? 8 : 0;
    const u64 fixed0 = format_ >= 5 ? kDs5FixedReset0 : kDsFixedReset0;
    if (i < gp_slots) return ds[kDsReset0 / 8 + i];
    if (i >= 32 && i - 32 < fixed_slots) return ds[fixed0 / 8 + (i - 32)];
    return 0;
}

bool PebsUnit::assist(u32 i, u16 event, u16 umask, const Context& c, u64* reset, bool* threshold) {
    *threshold = false;
    *reset = 0;
    if (output_pt()) return assist_pt(i, event, umask, c, reset, threshold);  // sim_pt.cpp
    if (!c.guest || !c.insn || !c.insn->valid || !ds_area_) return false;
    u64 ds[kDsWords] = {};
    if (!c.guest->read(ds_area_, ds, format_ >= 5 ? kDs5Bytes : 0xC0)) return false;
    *reset = reset_value(ds, i);
    u8 rec[kF3Size + kGprSize + kMemSize] = {};
    const u64 size = format_ == 3 ? write_format3(rec, i, event, umask, c) : write_adaptive(rec, i, event, umask, c);
    const u64 index = ds[kDsPebsIndex / 8];
    if (index < ds[kDsPebsBase / 8] || index + size > ds[kDsPebsMax / 8]) return false;  // full
    if (!c.guest->write(index, rec, size)) return false;
    const u64 next = index + size;
    if (!c.guest->write(ds_area_ + kDsPebsIndex, &next, 8)) return false;
    ++records_;
    *threshold = next >= ds[kDsPebsThreshold / 8];
    return true;
}

}  // namespace sim
