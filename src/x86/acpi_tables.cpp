#include "x86/acpi_tables.h"

namespace pmulab {

namespace {

constexpr usize kHeaderBytes = 36;  // §5.2.6 Table 5.4
constexpr u8 kMadtIoApic = 1;       // §5.2.12 Table 5.45 "Interrupt Controller Structure Types"
constexpr usize kMadtEntries = 44;  // after the header, Local Interrupt Controller Address, Flags
constexpr usize kHpetBase = 40;     // HPET spec Table 3: BASE_ADDRESS (a Generic Address Structure)

u32 le32(const u8* p) { return u32(p[0]) | (u32(p[1]) << 8) | (u32(p[2]) << 16) | (u32(p[3]) << 24); }
u64 le64(const u8* p) { return u64(le32(p)) | (u64(le32(p + 4)) << 32); }
bool sums_to_zero(const u8* p, usize n) {
    u8 s = 0;
    for (usize i = 0; i < n; ++i) s = u8(s + p[i]);
    return s == 0;
}
bool signature_is(const u8* p, const char* sig, usize n) {
    for (usize i = 0; i < n; ++i)
        if (p[i] != u8(sig[i])) return false;
    return true;
}

// A table at `phys` whose header has signature `sig` and a valid checksum.
Result<const u8*> table_at(u64 phys, const char* sig, PhysMap map, void* ctx) {
    const u8* h = map(phys, kHeaderBytes, ctx);
    if (!h)
        return Error::make(Errc::io, "ACPI: the %.4s table at 0x%llx cannot be read", sig, (unsigned long long)phys);
    if (!signature_is(h, sig, 4)) return Error::make(Errc::not_found, "not %.4s", sig);
    u32 len = le32(h + 4);
    const u8* t = len >= kHeaderBytes ? map(phys, len, ctx) : nullptr;
    if (!t)
        return Error::make(Errc::io, "ACPI: the %.4s table at 0x%llx has a bad length %u", sig,
                           (unsigned long long)phys, len);
    if (!sums_to_zero(t, len))
        return Error::make(Errc::io, "ACPI: the %.4s table at 0x%llx fails its checksum", sig,
                           (unsigned long long)phys);
    return t;
}

void read_madt(const u8* t, AcpiPlatform* out) {
    u32 len = le32(t + 4);
    out->madt = true;
    for (usize at = kMadtEntries; at + 2 <= len;) {
        u8 type = t[at], n = t[at + 1];
        if (n < 2 || at + n > len) break;
        if (type == kMadtIoApic && n >= 12 && out->ioapic_count < AcpiPlatform::kMaxIoApics) {
            AcpiIoApic& a = out->ioapics[out->ioapic_count++];
            a.id = t[at + 2];
            a.address = le32(t + at + 4);
            a.gsi_base = le32(t + at + 8);
        }
        at += n;
    }
}

void read_hpet(const u8* t, AcpiPlatform* out) {
    if (le32(t + 4) < 56 || out->hpet) return;  // the first HPET only
    // Generic Address Structure (ACPI §5.2.3.2): space ID 0 is system memory.
    if (t[kHpetBase] != 0) return;
    out->hpet = true;
    out->hpet_base = le64(t + kHpetBase + 4);
    out->hpet_number = t[52];
}

void read_entry(u64 phys, PhysMap map, void* ctx, AcpiPlatform* out) {
    if (Result<const u8*> m = table_at(phys, "APIC", map, ctx); m.ok()) return read_madt(m.value(), out);
    if (Result<const u8*> h = table_at(phys, "HPET", map, ctx); h.ok()) read_hpet(h.value(), out);
}

}  // namespace

const AcpiIoApic* AcpiPlatform::ioapic_for(u32 gsi, u32 entries_of_each) const {
    for (u32 i = 0; i < ioapic_count; ++i)
        if (gsi >= ioapics[i].gsi_base && gsi - ioapics[i].gsi_base < entries_of_each) return &ioapics[i];
    return nullptr;
}

Result<AcpiPlatform> acpi_read(u64 rsdp, PhysMap map, void* ctx) {
    // RSDP (§5.2.5.3 Table 5.3): "RSD PTR ", checksum over 20 bytes; from revision 2 a
    // length, the XSDT's address and an extended checksum over the whole structure.
    const u8* r = map(rsdp, 20, ctx);
    if (!r || !signature_is(r, "RSD PTR ", 8) || !sums_to_zero(r, 20))
        return Error::make(Errc::io, "ACPI: no valid RSDP at 0x%llx", (unsigned long long)rsdp);
    bool x = r[15] >= 2;
    if (x) {
        r = map(rsdp, 36, ctx);
        u32 len = r ? le32(r + 20) : 0;
        if (len < 36 || !(r = map(rsdp, len, ctx)) || !sums_to_zero(r, len))
            return Error::make(Errc::io, "ACPI: the RSDP at 0x%llx fails its extended checksum",
                               (unsigned long long)rsdp);
    }
    u64 root = x ? le64(r + 24) : u64(le32(r + 16));
    Result<const u8*> t = table_at(root, x ? "XSDT" : "RSDT", map, ctx);
    if (!t.ok()) return t.error().with_context("ACPI root table");
    usize step = x ? 8 : 4;
    usize n = (le32(t.value() + 4) - kHeaderBytes) / step;
    AcpiPlatform out;
    for (usize i = 0; i < n; ++i) {
        const u8* e = t.value() + kHeaderBytes + i * step;
        read_entry(x ? le64(e) : u64(le32(e)), map, ctx, &out);
    }
    return out;
}

}  // namespace pmulab
