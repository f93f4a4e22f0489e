// The uncore of a simulated Intel part: the C-Box performance counters of a client part,
// or the CHA counters of a server part, one box per L3 slice, counting the LLC_LOOKUP
// event of the lookups the memory hierarchy makes in its slice (sim_cache.h,
// sim_slice.h). Written from the SDM (Vol. 4, the MSR tables of the 2nd .. 8th
// generation Core processors; Vol. 3B, "Uncore Performance Monitoring" of the 2nd
// generation Core), the Intel Xeon Scalable uncore performance monitoring reference
// manuals and Linux arch/x86/events/intel/uncore_snb.c and uncore_snbep.c:
//
// Client (C-Boxes):
//   MSR_UNC_PERF_GLOBAL_CTRL  391H (Sandy Bridge .. Broadwell), E01H (Skylake .. Coffee
//                             Lake): bits 4:0 PMI core select (3:0 before Skylake),
//                             29 EN (every uncore counter counts only while set), 30 WakePMI,
//                             31 FREEZE; other bits reserved (#GP).
//   MSR_UNC_CBO_CONFIG        396H, read-only: bits 3:0 the number of C-Boxes plus one
//                             (nanoBench's cacheLib.getNCBoxUnits subtracts the one).
//   MSR_UNC_CBO_n_PERFEVTSEL0/1  700H + 10H*n, +1: event 7:0, unit mask 15:8, edge 18,
//                             EN 22, invert 23, threshold 28:24; other bits reserved (#GP).
//   MSR_UNC_CBO_n_PERFCTR0/1  706H + 10H*n, +1: 44-bit counters.
//   Counted: event 34H whose unit mask holds the lookup's state (01H M, 02H E, 04H S,
//   08H I: a hit is E, the model has no dirty lines; a miss is I) and its request (10H
//   read: a load; 20H write: a store; 80H any request).
//
// Server (CHAs), box n's registers (BOX_CTL, CTL0..3, FILTER0, CTR0..3):
//   Skylake-SP (06_55H)    E00H + 10H*n: +0, +1..+4, +5 (and FILTER1 +6), +8..+B.
//   Ice Lake-SP (06_6AH/6CH)  the same offsets at E00H + 0EH*n (n < 18), E00H + 0EH*(n+1)
//                          (18 .. 33), B60H + 0EH*(n-34) (34 .. 39).
//   Sapphire/Emerald Rapids (06_8FH/CFH)  2000H + 10H*n: +0, +2..+5, +EH, +8..+B.
//   BOX_CTL: bit 0 resets the controls, bit 1 the counters (both read 0), 8 freezes the
//   box, 16 freeze enable; other bits #GP. CTLx: event 7:0, umask 15:8, reset 17, edge
//   18, TID enable 19 (16 on Sapphire Rapids), overflow enable 20, EN 22, invert 23,
//   threshold 31:24, and from Ice Lake-SP the umask extension 57:32; other bits #GP.
//   CTRx: 48 bits. FILTER0: Skylake-SP TID 8:0 and states 26:17 (17 LLC I .. 24 LLC F),
//   later parts TID 9:0.
//   Counted: event 34H. Skylake-SP: umask bit 0 set, the request (10H any, 02H a load,
//   04H a store) and FILTER0's state (a hit is LLC E, bit 22; a miss LLC I, bit 17).
//   Ice Lake-SP on: the umask's state (01H I, 20H E) and the extension's request type
//   (bit 0 data read: a load; bit 3 RFO: a store; bit 5 any) and locality (bit 11 local).
//   The CHA count: Skylake-SP and Ice Lake-SP in PCI configuration space, device 30
//   function 3 of bus kPcuBus (the simulator's choice), device ID 2083H/345BH, CAPID6 at
//   9CH (and CAPID7 at A0H), one bit per CHA (the simulator leaves holes between them);
//   Sapphire Rapids in MSR 2FFEH (SPR_MSR_UNC_CBO_CONFIG), read-only.
// Only loads and stores that reach the L3 (missed L1D and L2) look it up; CLFLUSH,
// WBINVD and code fetches do not. Edge, invert, threshold and TID are kept and not modelled.
#pragma once

#include "x86/cpuid.h"

namespace sim {

using pmulab::u32;
using pmulab::u64;
using pmulab::u8;

// Which uncore: a client part's C-Boxes (global control at 391H or E01H) or a server
// generation's CHAs.
enum class UncoreKind : u8 { client_snb, client_skl, skx, icx, spr };

class SimUncore {
public:
    static constexpr u32 kMaxBoxes = 8, kCounters = 2, kMaxChas = 60, kChaCounters = 4;
    static constexpr u32 kCboConfig = 0x396, kGlobalSnb = 0x391, kGlobalSkl = 0xE01;
    static constexpr u32 kCbo0EvtSel = 0x700, kCbo0Ctr = 0x706, kCboStride = 0x10;
    static constexpr u32 kSprChaCount = 0x2FFE, kPcuBus = 0x1E;
    static constexpr u8 kLlcLookup = 0x34;
    static constexpr u64 kCounterMask = (u64(1) << 44) - 1, kChaCounterMask = (u64(1) << 48) - 1;

    // `boxes` C-Boxes (2, 4 or 8); the global control at E01H (Skylake on) or 391H.
    SimUncore(u32 boxes, bool global_e01);
    // `boxes` boxes of `kind`.
    SimUncore(u32 boxes, UncoreKind kind);
    u32 boxes() const { return boxes_; }
    UncoreKind kind() const { return kind_; }
    bool server() const { return kind_ >= UncoreKind::skx; }
    // The boxes follow the L3's slices when --cache changes them (1: no box counts).
    void set_boxes(u32 boxes);

    bool claims(u32 msr) const;
    // Returns 0 or the fault vector.
    u8 rdmsr(u32 msr, u64* value) const;
    u8 wrmsr(u32 msr, u64 value);
    // A dword of PCI configuration space (the server parts' CAPID registers); all ones
    // where there is no device, as on a real bus.
    u32 pci_read32(u32 bus, u32 dev, u32 fn, u32 offset) const;

    // One lookup in slice `slice` by a load (write false) or a store that hit or missed.
    void llc_lookup(u32 slice, bool hit, bool write);

private:
    u32 global_msr() const { return kind_ == UncoreKind::client_skl ? kGlobalSkl : kGlobalSnb; }
    // Server: box `box`'s register `off` (0 BOX_CTL, 1..4 CTL0..3, 5 FILTER0, 8..11
    // CTR0..3) in the generation's layout, or 0 for none.
    u32 cha_msr(u32 box, u32 off) const;
    bool cha_find(u32 msr, u32* box, u32* off) const;
    u8 cha_write(u32 box, u32 off, u64 v);
    bool cha_counts(u32 box, u32 j, bool hit, bool write) const;
    u64 cha_capid() const;
    u32 boxes_;
    UncoreKind kind_;
    u64 global_ = 0;
    u64 evtsel_[kMaxBoxes][kCounters] = {};
    u64 ctr_[kMaxBoxes][kCounters] = {};
    // Server: BOX_CTL, CTL0..3, FILTER0, CTR0..3 per CHA.
    struct Cha {
        u64 box_ctl = 0, filter0 = 0, filter1 = 0;
        u64 ctl[kChaCounters] = {}, ctr[kChaCounters] = {};
    };
    Cha cha_[kMaxChas] = {};
};

}  // namespace sim
