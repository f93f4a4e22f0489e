// Hardware prefetcher control: where the CPU documents it, the MSRs and the bits that turn
// each prefetcher off (docs/cache.md "Hardware prefetchers"). A model table, pure; each
// entry names its source in prefetch.cpp, each layout in x86/prefetch_regs.h:
//
//   Intel MSR 1A4H (MISC_FEATURE_CONTROL) bits 0-3 on Nehalem..Broadwell (Intel's 2014
//     disclosure article) and the later big cores (SDM Vol. 4 Table 2-20, named by their
//     sections); bits 0, 2 on Goldmont/Goldmont Plus (Table 2-12); bits 0, 1 on Xeon Phi.
//   Intel E cores from Gracemont on (Intel 357930 "Hardware Prefetch Controls for Intel
//     Atom Cores" §2.1, §4.1-§4.3): 1A4H bits 0, 2-5 (Gracemont), 0-8 (Crestmont, Skymont),
//     0-8 and 12 (Darkmont), and 1320H bit 43 (LLC streamer), 1321H bit 40 (L2 next line).
//     On hybrid parts the P cores and the E cores take different sets: the measuring CPU's
//     core type (CPUID.1AH:EAX[31:24]) picks one.
//   Intel Core 2: IA32_MISC_ENABLE (1A0H) bits 9, 19, 37, 39 (SDM Vol. 4 Table 2-3).
//   AMD families 19h, 1Ah: C000_0108H (PrefetchControl) bits 0-3, 5 (the PPRs).
#pragma once

#include "x86/cpuid.h"

namespace pmulab {

struct PrefetchBit {
    u8 bit;
    const char* name;  // the record's name: "l2_hw", "dcu_ip", "llc_stream", "l1_stream", ...
};

// One MSR of a control and the bits that turn its prefetchers off.
struct PrefetchMsr {
    u32 msr = 0;
    const PrefetchBit* bits = nullptr;
    usize count = 0;
    u64 off_mask() const;  // every bit set: every prefetcher of this MSR off
};

inline constexpr usize kPrefetchMsrsMax = 3;

// One core type's control: its MSRs in the order they are written (1A4H first: on
// Darkmont its bit 12 stops the dynamic control from rewriting 1320H/1321H).
struct PrefetchSet {
    PrefetchMsr msrs[kPrefetchMsrsMax];
    usize count = 0;          // 0: none
    const char* family = "";  // "skylake-and-later", "gracemont", "crestmont", ... (prefetch.cpp)
    usize bit_count() const;  // the prefetchers named, over every MSR
};

struct PrefetchControl {
    PrefetchSet set;           // every CPU; on hybrid parts the P cores (core type 40H)
    PrefetchSet atom;          // hybrid parts: the E cores (core type 20H); count 0 elsewhere
    const char* why_not = "";  // the refusal's reason when set.count is 0
    bool ok() const { return set.count != 0; }
    bool hybrid() const { return atom.count != 0; }
};

PrefetchControl prefetch_control(const CpuIdentity& id);

}  // namespace pmulab
