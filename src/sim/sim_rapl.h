// The simulated RAPL energy counters (docs/sim.md "Energy (RAPL)"), written from the Intel
// SDM Vol. 3B §15.10 "Platform Specific Power Management Support" and the AMD family
// 17h/19h PPRs (MSRC001_0299 RAPL_PWR_UNIT, C001_029A CORE_ENERGY_STAT, C001_029B
// PKG_ENERGY_STAT), independently of pmulab's src/x86/rapl*.
//
// The energy model: each domain consumes a fixed energy per retired instruction and per
// TSC tick (sim_rapl.cpp: one SimRaplClass per class of models, kIntelRows maps models).
// Energy between two moments is therefore
//     E = pJ_per_instruction x instructions + pJ_per_tick x TSC ticks.
// The status counters update once per interval of 1 ms of simulated time at the CPU's
// TSC rate (CPUID.15H, else 16H, else 1 GHz): at the update at tick k x interval, a
// counter becomes floor(E(0..k x interval) x 2^ESU / 10^12) mod 2^32, where E up to that
// tick counts the instructions retired before it (a batch of the executor that spans it
// is split in proportion to its ticks). Between updates a counter does not move.
// Absent domains: no MSR (#GP as any unimplemented MSR); QEMU-TCG-like CPUs (unknown
// MSRs read 0) and guests (CPUID.01H:ECX[31]) have no RAPL at all.
#pragma once

#include <cstdint>

#include "x86/cpuid.h"

namespace sim {

using pmulab::CpuidSnapshot;
using pmulab::u32;
using pmulab::u64;
using pmulab::u8;

inline constexpr u32 RAPL_POWER_UNIT = 0x606, PKG_ENERGY_STATUS = 0x611, DRAM_ENERGY_STATUS = 0x619;
inline constexpr u32 PP0_ENERGY_STATUS = 0x639, PP1_ENERGY_STATUS = 0x641, PLATFORM_ENERGY_STATUS = 0x64D;
inline constexpr u32 AMD_RAPL_PWR_UNIT = 0xC0010299, AMD_CORE_ENERGY_STAT = 0xC001029A,
                     AMD_PKG_ENERGY_STAT = 0xC001029B;

// One domain of the model: its status MSR, its unit (2^-esu J) and its energy.
struct SimRaplDomain {
    u32 msr = 0;  // 0: the class has no such domain
    u8 esu = 0;
    u64 pj_per_instruction = 0, pj_per_tick = 0;
};
inline constexpr unsigned kSimRaplDomains = 5;  // pkg, pp0/core, pp1, dram, psys

struct SimRaplClass {
    const char* name;
    u32 unit_msr;
    u64 power_unit;  // the POWER_UNIT value
    SimRaplDomain domains[kSimRaplDomains];
};

class SimRapl {
public:
    SimRapl() = default;
    // The class of the CPU's model (none for QEMU TCG, guests and models not in the table).
    SimRapl(const CpuidSnapshot& s, bool read_zero_msrs);
    bool present() const { return cls_ != nullptr; }
    const SimRaplClass* model() const { return cls_; }
    u64 interval_ticks() const { return interval_; }
    // A test's own update interval (e.g. shorter runs under ASan); 0 is ignored.
    void set_interval(u64 ticks) {
        if (ticks) interval_ = ticks;
    }
    bool claims(u32 msr) const;
    bool writable(u32 msr) const { return false; }  // all read-only
    // The register's value at TSC `tsc`.
    u64 read(u32 msr, u64 tsc) const;
    // Sets a status counter so that it reads `value` now (the next updates add to it).
    void preset(u32 msr, u64 value, u64 tsc);
    // A batch of `instructions` retired while the TSC went from t0 to t1.
    void retire(u64 t0, u64 t1, u64 instructions);
    // The energy the model gives for `instructions` and `ticks`, in pJ (tests).
    u64 energy_pj(unsigned domain, u64 instructions, u64 ticks) const;

private:
    int domain_of(u32 msr) const;
    u64 status(unsigned d, u64 tsc) const;
    const SimRaplClass* cls_ = nullptr;
    u64 interval_ = 0;
    u64 instructions_ = 0;              // retired so far
    u64 boundary_ = 0;                  // the last update boundary (index) a batch crossed
    u64 at_boundary_ = 0;               // instructions retired before it
    u32 offset_[kSimRaplDomains] = {};  // preset
};

}  // namespace sim
