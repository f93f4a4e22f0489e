// The firmware's ACPI tables, found through the UEFI configuration table (UEFI spec §4.6
// "EFI Configuration Table & Properties Table": EFI_ACPI_20_TABLE_GUID gives the RSDP) and
// parsed by src/x86/acpi_tables.h. Read once per boot, on the BSP.
#pragma once

#include "x86/acpi_tables.h"

namespace pmulab::efi {

// The I/O APICs and the HPET the firmware describes. Errors: no ACPI 2.0 RSDP in the
// configuration table, or tables that fail their signature or checksum.
Result<const AcpiPlatform*> acpi_platform();

}  // namespace pmulab::efi
