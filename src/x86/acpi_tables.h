// The ACPI tables pmulab reads: where the I/O APICs are (MADT) and the HPET's registers (the
// HPET table), for the BSP's watchdog (src/efi/bsp_watchdog.cpp). Parsing only: the tables
// are reached through a PhysMap, so that the EFI side hands in the firmware's identity
// mapping (src/efi/acpi.cpp) and tests hand in a buffer.
//
// References: ACPI Specification 6.5, §5.2.5.3 "Root System Description Pointer (RSDP)
// Structure", §5.2.6 "System Description Table Header" (checksum: all bytes sum to 0),
// §5.2.7 RSDT, §5.2.8 XSDT, §5.2.12 "Multiple APIC Description Table (MADT)" with §5.2.12.3
// "I/O APIC Structure" (type 1); IA-PC HPET Specification 1.0a §3.2.4 "The ACPI 2.0 HPET
// Description Table (HPET)" (the base address, a Generic Address Structure at offset 40).
#pragma once

#include "base/result.h"

namespace pmulab {

// `len` bytes of physical memory at `phys`, or nullptr where they cannot be reached.
using PhysMap = const u8* (*)(u64 phys, usize len, void* ctx);

struct AcpiIoApic {
    u8 id = 0;
    u32 address = 0;   // the registers' physical base (IOREGSEL)
    u32 gsi_base = 0;  // the global system interrupt of its input 0
};

struct AcpiPlatform {
    static constexpr u32 kMaxIoApics = 8;
    AcpiIoApic ioapics[kMaxIoApics];
    u32 ioapic_count = 0;
    bool madt = false;
    bool hpet = false;  // an HPET table with a base in system memory
    u64 hpet_base = 0;
    u8 hpet_number = 0;  // the HPET's sequence number (the table's byte 52)
    // The I/O APIC whose inputs include `gsi`, or nullptr.
    const AcpiIoApic* ioapic_for(u32 gsi, u32 entries_of_each) const;
};

// Reads the RSDP at `rsdp` (the UEFI configuration table's EFI_ACPI_20_TABLE_GUID entry),
// its XSDT (or, for revision 0, its RSDT), the MADT's I/O APICs and the HPET table. Errors:
// a signature or checksum that does not match (named), memory `map` cannot reach.
Result<AcpiPlatform> acpi_read(u64 rsdp, PhysMap map, void* ctx);

}  // namespace pmulab
