// Typed RAPL (running average power limit) energy registers, Intel and AMD.
//
// References: Intel SDM Vol. 3B §15.10 "Platform Specific Power Management Support"
// (§15.10.1 RAPL interfaces, §15.10.2 MSR_RAPL_POWER_UNIT, §15.10.3-15.10.5 the package,
// PP0/PP1 and DRAM domains' ENERGY_STATUS) and Vol. 4 Table 2-20 (MSR_PLATFORM_ENERGY_STATUS
// 64DH, Skylake and later); AMD PPR for family 17h/19h "MSRC001_0299 RAPL_PWR_UNIT",
// "MSRC001_029A CORE_ENERGY_STAT", "MSRC001_029B PKG_ENERGY_STAT" and CPUID
// Fn8000_0007_EDX[14] RAPL ("Running average power limit"). The energy counters are
// 32 bits wide, count in units of 2^-ESU joules and update about once per millisecond.
#pragma once

#include "base/bits.h"

namespace pmulab::regs::rapl {

// Intel (SDM Vol. 4 Table 2-20 and the model tables that follow it).
inline constexpr u32 MSR_RAPL_POWER_UNIT = 0x606;
inline constexpr u32 MSR_PKG_ENERGY_STATUS = 0x611;
inline constexpr u32 MSR_DRAM_ENERGY_STATUS = 0x619;
inline constexpr u32 MSR_PP0_ENERGY_STATUS = 0x639;
inline constexpr u32 MSR_PP1_ENERGY_STATUS = 0x641;
inline constexpr u32 MSR_PLATFORM_ENERGY_STATUS = 0x64D;
// AMD family 17h and later (PPR).
inline constexpr u32 MSR_AMD_RAPL_POWER_UNIT = 0xC0010299;
inline constexpr u32 MSR_AMD_CORE_ENERGY_STATUS = 0xC001029A;
inline constexpr u32 MSR_AMD_PKG_ENERGY_STATUS = 0xC001029B;

inline constexpr unsigned kEnergyWidth = 32;  // SDM §15.10.3: "Total Energy Consumed (bits 31:0)"

// MSR_RAPL_POWER_UNIT (606H), SDM Vol. 3B §15.10.2; AMD's RAPL_PWR_UNIT has
// the same three fields. Energy unit = 1 / 2^ESU joules.
class PowerUnit : public RegValue<PowerUnit> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FIELD(PowerUnit, power_units, 3, 0)    // PU: 1 / 2^PU watts
    PMULAB_REG_FIELD(PowerUnit, energy_units, 12, 8)  // ESU: 1 / 2^ESU joules
    PMULAB_REG_FIELD(PowerUnit, time_units, 19, 16)   // TU: 1 / 2^TU seconds
};
// The SDM's default (§15.10.2): PU 0011b (1/8 W), ESU 10000b (15.3 uJ), TU 1010b (976 us).
static_assert(PowerUnit(0x000A1003).power_units() == 3 && PowerUnit(0x000A1003).energy_units() == 16 &&
              PowerUnit(0x000A1003).time_units() == 10);
// Skylake client parts report ESU 01110b (61 uJ).
static_assert(PowerUnit(0x000A0E03).energy_units() == 14);

// *_ENERGY_STATUS: "Total Energy Consumed" in bits 31:0, read-only, wrapping
// (SDM §15.10.3; the PP0/PP1/DRAM/PLATFORM ones and AMD's alike).
class EnergyStatus : public RegValue<EnergyStatus> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FIELD(EnergyStatus, energy, 31, 0)
};
static_assert(EnergyStatus(0xFFFFFFFF00001234ull).energy() == 0x1234);

// Fixed energy units of domains whose MSR_RAPL_POWER_UNIT does not apply (Linux
// arch/x86/events/rapl.c, rapl_check_hw_unit): the DRAM domain of Haswell-and-later server
// parts and Xeon Phi counts in 2^-16 J ("Intel Xeon Processor E5-1600 and E5-2600 v3
// Product Families Datasheet Vol. 2", 330784-001); Sapphire Rapids' PSYS in 1 J (2^-0).
inline constexpr u8 kServerDramEsu = 16;
inline constexpr u8 kSprPsysEsu = 0;

}  // namespace pmulab::regs::rapl
