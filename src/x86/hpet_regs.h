// Typed HPET registers: the timer pmulab's BSP watchdog (src/efi/bsp_watchdog.cpp) arms.
//
// Reference: Intel "IA-PC HPET (High Precision Event Timers) Specification" rev. 1.0a
// (2004), §2.3 "Register Descriptions": §2.3.1 Table 3 the register map, §2.3.4 General
// Capabilities and ID, §2.3.5 General Configuration, §2.3.7 Main Counter Value, §2.3.8
// Timer N Configuration and Capability, §2.3.9 Timer N Comparator Value. Every register is
// 64 bits, at the base the ACPI HPET table gives (§3.2.4).
#pragma once

#include "base/bits.h"

namespace pmulab::regs {

// The register offsets (§2.3.1 Table 3).
enum class HpetReg : u32 {
    capabilities = 0x000,   // General Capabilities and ID, read-only
    configuration = 0x010,  // General Configuration
    main_counter = 0x0F0,   // Main Counter Value (writable only while halted, §2.3.7)
};
// Timer n's registers: configuration at 100H + 20H * n, comparator at 108H + 20H * n.
constexpr u32 hpet_timer_config(u32 n) { return 0x100 + 0x20 * n; }
constexpr u32 hpet_timer_comparator(u32 n) { return 0x108 + 0x20 * n; }
static_assert(hpet_timer_config(0) == 0x100 && hpet_timer_comparator(2) == 0x148);
// Femtoseconds per second: the unit of COUNTER_CLK_PERIOD.
inline constexpr u64 kHpetFemtosPerSecond = 1000000000000000ull;

// General Capabilities and ID (§2.3.4).
class HpetCapabilities : public RegValue<HpetCapabilities> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FIELD(HpetCapabilities, revision, 7, 0)
    PMULAB_REG_FIELD(HpetCapabilities, last_timer, 12, 8)  // NUM_TIM_CAP: the last timer's number
    PMULAB_REG_FLAG(HpetCapabilities, counter_64bit, 13)   // COUNT_SIZE_CAP
    PMULAB_REG_FLAG(HpetCapabilities, legacy_route, 15)    // LEG_RT_CAP
    PMULAB_REG_FIELD(HpetCapabilities, vendor, 31, 16)
    PMULAB_REG_FIELD(HpetCapabilities, period_fs, 63, 32)  // COUNTER_CLK_PERIOD, femtoseconds (<= 100 ns)
    constexpr u32 timers() const { return u32(last_timer()) + 1; }
};
// QEMU's HPET: 3 timers, 64-bit, legacy route, vendor 8086H, 10 ns (10^7 fs): 00989680_8086A201H.
static_assert(HpetCapabilities(0x009896808086A201ull).timers() == 3 &&
              HpetCapabilities(0x009896808086A201ull).counter_64bit());
static_assert(HpetCapabilities(0x009896808086A201ull).period_fs() == 10000000 &&
              HpetCapabilities(0x009896808086A201ull).vendor() == 0x8086);

// General Configuration (§2.3.5).
class HpetConfig : public RegValue<HpetConfig> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FLAG(HpetConfig, enable, 0)        // ENABLE_CNF: the main counter runs, timers interrupt
    PMULAB_REG_FLAG(HpetConfig, legacy_route, 1)  // LEG_RT_CNF: timers 0 and 1 on IRQ0/IRQ8
};
static_assert(HpetConfig().set_enable().raw() == 1 && HpetConfig(3).legacy_route());

// Timer N Configuration and Capability (§2.3.8).
class HpetTimerConfig : public RegValue<HpetTimerConfig> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FLAG(HpetTimerConfig, level_trigger, 1)    // Tn_INT_TYPE_CNF: 0 edge
    PMULAB_REG_FLAG(HpetTimerConfig, int_enable, 2)       // Tn_INT_ENB_CNF
    PMULAB_REG_FLAG(HpetTimerConfig, periodic, 3)         // Tn_TYPE_CNF
    PMULAB_REG_FLAG(HpetTimerConfig, periodic_cap, 4)     // Tn_PER_INT_CAP, read-only
    PMULAB_REG_FLAG(HpetTimerConfig, size_64bit_cap, 5)   // Tn_SIZE_CAP, read-only
    PMULAB_REG_FLAG(HpetTimerConfig, value_set, 6)        // Tn_VAL_SET_CNF (periodic)
    PMULAB_REG_FLAG(HpetTimerConfig, mode_32bit, 8)       // Tn_32MODE_CNF
    PMULAB_REG_FIELD(HpetTimerConfig, int_route, 13, 9)   // Tn_INT_ROUTE_CNF: the I/O APIC input
    PMULAB_REG_FLAG(HpetTimerConfig, fsb_enable, 14)      // Tn_FSB_EN_CNF
    PMULAB_REG_FLAG(HpetTimerConfig, fsb_cap, 15)         // Tn_FSB_INT_DEL_CAP, read-only
    PMULAB_REG_FIELD(HpetTimerConfig, route_cap, 63, 32)  // Tn_INT_ROUTE_CAP: bit n = input n allowed
    constexpr bool can_route(u32 input) const { return input < 32 && ((route_cap() >> input) & 1); }
};
// QEMU's q35 timers at reset: routable to inputs 2, 8 and 16..23 (00FF0104H), 64-bit, periodic capable.
static_assert(HpetTimerConfig(0x00FF010400000030ull).can_route(2) &&
              HpetTimerConfig(0x00FF010400000030ull).can_route(23));
static_assert(!HpetTimerConfig(0x00FF010400000030ull).can_route(0) && HpetTimerConfig(0x30).size_64bit_cap());
// One-shot, edge, enabled, on input 20: 2804H.
static_assert(HpetTimerConfig().set_int_enable().set_int_route(20).raw() == 0x2804);

}  // namespace pmulab::regs
