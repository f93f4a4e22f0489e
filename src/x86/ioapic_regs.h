// Typed I/O APIC registers: what pmulab's BSP watchdog (src/efi/bsp_watchdog.cpp) programs to
// route a timer to the BSP as an NMI.
//
// Reference: Intel "82093AA I/O Advanced Programmable Interrupt Controller (IOAPIC)"
// datasheet (290566-001), §3.0 "Register Description" (IOREGSEL/IOWIN, §3.2.2 IOAPICVER,
// §3.2.4 IOREDTBL). The chipsets' I/O APICs (PCH datasheets, "APIC" chapter) keep it.
#pragma once

#include "base/bits.h"

namespace pmulab::regs {

// The two memory-mapped registers (§3.0 Table 2): write a register index to IOREGSEL, then
// read or write that register through IOWIN (both 32-bit accesses).
inline constexpr u32 kIoApicRegSel = 0x00;
inline constexpr u32 kIoApicWindow = 0x10;

// The indirect registers (§3.2 Table 3).
inline constexpr u32 kIoApicVersionIndex = 0x01;
// Redirection entry n: its low dword at index 10H + 2n, its high dword at 11H + 2n (§3.2.4).
constexpr u32 ioapic_redirection_low(u32 n) { return 0x10 + 2 * n; }
constexpr u32 ioapic_redirection_high(u32 n) { return 0x11 + 2 * n; }
static_assert(ioapic_redirection_low(0) == 0x10 && ioapic_redirection_high(23) == 0x3F);

// IOAPICVER (§3.2.2).
class IoApicVersion : public RegValue<IoApicVersion> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FIELD(IoApicVersion, version, 7, 0)
    PMULAB_REG_FIELD(IoApicVersion, max_redirection, 23, 16)  // the number of entries minus 1
    constexpr u32 entries() const { return u32(max_redirection()) + 1; }
};
// The 82093AA: version 11H, 24 entries (Maximum Redirection Entry 17H); QEMU's reads 00170020H.
static_assert(IoApicVersion(0x00170011).entries() == 24 && IoApicVersion(0x00170020).version() == 0x20);

// Delivery modes of a redirection entry (§3.2.4 "Delivery Mode", bits 10:8).
enum class IoApicDelivery : u8 { fixed = 0, lowest_priority = 1, smi = 2, nmi = 4, init = 5, extint = 7 };

// A redirection table entry (§3.2.4, 64 bits). An NMI is edge triggered whatever the
// trigger mode bit says ("Delivery Mode ... NMI ... treated as edge-triggered").
class IoApicRedirection : public RegValue<IoApicRedirection> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FIELD(IoApicRedirection, vector, 7, 0)
    PMULAB_REG_FIELD(IoApicRedirection, delivery_mode, 10, 8)  // IoApicDelivery
    PMULAB_REG_FLAG(IoApicRedirection, logical, 11)            // destination mode: 0 physical
    PMULAB_REG_FLAG(IoApicRedirection, send_pending, 12)       // delivery status, read-only
    PMULAB_REG_FLAG(IoApicRedirection, active_low, 13)         // input pin polarity
    PMULAB_REG_FLAG(IoApicRedirection, remote_irr, 14)         // read-only (level)
    PMULAB_REG_FLAG(IoApicRedirection, level_trigger, 15)
    PMULAB_REG_FLAG(IoApicRedirection, masked, 16)
    PMULAB_REG_FIELD(IoApicRedirection, destination, 63, 56)  // physical mode: an APIC ID
    constexpr IoApicDelivery delivery() const { return IoApicDelivery(delivery_mode()); }
    constexpr IoApicRedirection& set_delivery(IoApicDelivery d) { return set_delivery_mode(u64(d)); }
};
static_assert(IoApicRedirection::masked_field::mask == 1ull << 16 &&
              IoApicRedirection::delivery_mode_field::mask == 0x700);
// The reset value of every entry: masked (§3.2.4 "Interrupt Mask ... after reset"), 10000H.
static_assert(IoApicRedirection(0x10000).masked() && IoApicRedirection(0x10000).vector() == 0);
// An edge-triggered, active-high NMI to APIC ID 0 in physical mode: 400H; to APIC ID 3: 03000000_00000400H.
static_assert(IoApicRedirection().set_delivery(IoApicDelivery::nmi).raw() == 0x400);
static_assert(IoApicRedirection().set_delivery(IoApicDelivery::nmi).set_destination(3).raw() == 0x0300000000000400ull);

}  // namespace pmulab::regs
