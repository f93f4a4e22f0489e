#include "acpi.h"

#include "efi_defs.h"

namespace pmulab::efi {

namespace {

EFI_GUID kAcpi20Guid = ACPI_20_TABLE_GUID;

// Boot services run with physical memory identity-mapped (UEFI spec §2.3.4 "x64 Platforms").
const u8* identity(u64 phys, usize len, void*) {
    if (phys == 0 || phys + len < phys) return nullptr;
    return reinterpret_cast<const u8*>(uintptr_t(phys));
}

bool guid_eq(const EFI_GUID& a, const EFI_GUID& b) {
    const u8* x = reinterpret_cast<const u8*>(&a);
    const u8* y = reinterpret_cast<const u8*>(&b);
    for (usize i = 0; i < sizeof(EFI_GUID); ++i)
        if (x[i] != y[i]) return false;
    return true;
}

AcpiPlatform g_platform;
bool g_read = false;

}  // namespace

Result<const AcpiPlatform*> acpi_platform() {
    if (g_read) return &g_platform;
    u64 rsdp = 0;
    for (UINTN i = 0; i < gST->NumberOfTableEntries && !rsdp; ++i)
        if (guid_eq(gST->ConfigurationTable[i].VendorGuid, kAcpi20Guid))
            rsdp = u64(reinterpret_cast<uintptr_t>(gST->ConfigurationTable[i].VendorTable));
    if (!rsdp)
        return Error::make(Errc::unsupported, "the firmware publishes no ACPI 2.0 tables (EFI_ACPI_20_TABLE_GUID)");
    Result<AcpiPlatform> p = acpi_read(rsdp, identity, nullptr);
    if (!p.ok()) return p.error();
    g_platform = p.value();
    g_read = true;
    return &g_platform;
}

}  // namespace pmulab::efi
