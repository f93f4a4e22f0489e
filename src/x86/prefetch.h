// Hardware prefetcher control: where the CPU documents it, the MSR and the bits that turn
// each data prefetcher off (docs/cache.md "Hardware prefetchers"). A model table, pure; each
// entry names its source in prefetch.cpp:
//
//   Intel MSR 1A4H (MISC_FEATURE_CONTROL): bits 0-3 L2 hardware, L2 adjacent line, DCU, DCU
//     IP on Nehalem..Broadwell (Intel, "Disclosure of Hardware Prefetcher Control on Some
//     Intel Processors", 2014) and on Skylake and later big cores (SDM Vol. 4 Table 2-20,
//     which their sections name); bits 0, 2 on Goldmont/Goldmont Plus (SDM Vol. 4 Table
//     2-12); bits 0 (DCU), 1 (L2) on Xeon Phi 06_57H/06_85H; E cores from Gracemont on:
//     Intel 357930 "Hardware Prefetch Controls for Intel Atom Cores" §4.1. Hybrid parts get
//     the bits both core types document alike.
//   Intel Core 2 (family 6 models 0FH, 16H, 17H, 1DH): IA32_MISC_ENABLE (1A0H) bit 9
//     hardware prefetcher, 19 adjacent cache line, 37 DCU, 39 IP prefetcher disable (SDM
//     Vol. 4 Table 2-3, "MSRs in Processors Based on Intel Core Microarchitecture").
//   AMD family 19h and 1Ah: MSR C000_0108H (PrefetchControl) bits 0 L1 stream, 1 L1
//     stride, 2 L1 region, 3 L2 stream, 5 L2 up/down prefetcher disable (the PPRs of those
//     families, "MSRC000_0108 [Prefetch Control]").
#pragma once

#include "x86/cpuid.h"

namespace pmulab {

struct PrefetchBit {
    u8 bit;
    const char* name;  // the record's name: "l2_hw", "dcu_ip", "l1_stream", ...
};

struct PrefetchControl {
    u32 msr = 0;  // 0: no documented control (why_not says why)
    const PrefetchBit* bits = nullptr;
    usize count = 0;
    const char* family = "";   // "nehalem-broadwell", "skylake-and-later", "goldmont", ... (prefetch.cpp)
    const char* why_not = "";  // the refusal's reason
    u64 off_mask() const;      // every bit set: every prefetcher off
};

PrefetchControl prefetch_control(const CpuIdentity& id);

}  // namespace pmulab
