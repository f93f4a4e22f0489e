// The ACPI tables the BSP's timer watchdog reads (x86/acpi_tables.h): an RSDP, its XSDT or
// RSDT, a MADT with two I/O APICs and an HPET table, laid out in a buffer as QEMU's q35
// firmware lays them out (I/O APIC 0 at FEC00000H from GSI 0, the HPET at FED00000H).
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "x86/acpi_tables.h"

using namespace pmulab;

namespace {

constexpr u64 kBase = 0x7F000000;  // where the buffer "is" in physical memory

struct Mem {
    std::vector<u8> bytes = std::vector<u8>(0x1000, 0);
    void put(usize at, const std::vector<u8>& b) { std::memcpy(bytes.data() + at, b.data(), b.size()); }
    void put32(usize at, u32 v) {
        for (int i = 0; i < 4; ++i) bytes[at + i] = u8(v >> (8 * i));
    }
    void put64(usize at, u64 v) {
        put32(at, u32(v));
        put32(at + 4, u32(v >> 32));
    }
    void checksum(usize at, usize len, usize field) {
        u8 s = 0;
        bytes[at + field] = 0;
        for (usize i = 0; i < len; ++i) s = u8(s + bytes[at + i]);
        bytes[at + field] = u8(-s);
    }
    // A table header (ACPI §5.2.6): signature, length, revision 1, checksum over it all.
    void header(usize at, const char* sig, u32 len) {
        std::memcpy(bytes.data() + at, sig, 4);
        put32(at + 4, len);
        bytes[at + 8] = 1;
    }
};

const u8* map(u64 phys, usize len, void* ctx) {
    auto* m = static_cast<Mem*>(ctx);
    if (phys < kBase || phys + len > kBase + m->bytes.size()) return nullptr;
    return m->bytes.data() + (phys - kBase);
}

// RSDP at 0, root table at 0x100, MADT at 0x200, HPET at 0x300, FACP-like other at 0x400.
Mem platform(bool xsdt) {
    Mem m;
    m.put(0, {'R', 'S', 'D', ' ', 'P', 'T', 'R', ' '});
    m.bytes[15] = xsdt ? 2 : 0;
    m.put32(16, u32(kBase + 0x100));
    m.put32(20, 36);
    m.put64(24, kBase + 0x100);
    m.checksum(0, 20, 8);
    if (xsdt) m.checksum(0, 36, 32);
    usize step = xsdt ? 8 : 4;
    m.header(0x100, xsdt ? "XSDT" : "RSDT", u32(36 + 3 * step));
    for (usize i = 0; i < 3; ++i) {
        u64 t = kBase + 0x200 + 0x100 * i;
        if (xsdt) m.put64(0x100 + 36 + 8 * i, t);
        else m.put32(0x100 + 36 + 4 * i, u32(t));
    }
    m.checksum(0x100, 36 + 3 * step, 9);
    // MADT: local APIC (type 0, 8 bytes), two I/O APICs (type 1, 12 bytes each).
    m.header(0x200, "APIC", 44 + 8 + 12 + 12);
    m.put(0x200 + 44, {0, 8, 0, 0, 1, 0, 0, 0});
    m.put(0x200 + 52, {1, 12, 0, 0});
    m.put32(0x200 + 56, 0xFEC00000);
    m.put32(0x200 + 60, 0);
    m.put(0x200 + 64, {1, 12, 9, 0});
    m.put32(0x200 + 68, 0xFEC01000);
    m.put32(0x200 + 72, 24);
    m.checksum(0x200, 76, 9);
    // HPET (HPET spec Table 3): 56 bytes, base in system memory (GAS space 0).
    m.header(0x300, "HPET", 56);
    m.put32(0x300 + 36, 0x8086A201);
    m.put(0x300 + 40, {0, 64, 0, 0});
    m.put64(0x300 + 44, 0xFED00000);
    m.bytes[0x300 + 52] = 0;
    m.checksum(0x300, 56, 9);
    m.header(0x400, "FACP", 36);
    m.checksum(0x400, 36, 9);
    return m;
}

}  // namespace

TEST(AcpiTables, ReadsTheIoApicsAndTheHpetThroughTheXsdt) {
    Mem m = platform(true);
    Result<AcpiPlatform> p = acpi_read(kBase, map, &m);
    ASSERT_TRUE(p.ok()) << p.error().msg;
    ASSERT_EQ(p.value().ioapic_count, 2u);
    EXPECT_EQ(p.value().ioapics[0].address, 0xFEC00000u);
    EXPECT_EQ(p.value().ioapics[0].gsi_base, 0u);
    EXPECT_EQ(p.value().ioapics[1].id, 9u);
    EXPECT_EQ(p.value().ioapics[1].gsi_base, 24u);
    EXPECT_TRUE(p.value().hpet);
    EXPECT_EQ(p.value().hpet_base, 0xFED00000u);
    EXPECT_EQ(p.value().ioapic_for(20, 24), &p.value().ioapics[0]);
    EXPECT_EQ(p.value().ioapic_for(30, 24), &p.value().ioapics[1]);
    EXPECT_EQ(p.value().ioapic_for(48, 24), nullptr);
}

TEST(AcpiTables, ReadsTheRsdtOfRevisionZero) {
    Mem m = platform(false);
    Result<AcpiPlatform> p = acpi_read(kBase, map, &m);
    ASSERT_TRUE(p.ok()) << p.error().msg;
    EXPECT_EQ(p.value().ioapic_count, 2u);
    EXPECT_EQ(p.value().hpet_base, 0xFED00000u);
}

TEST(AcpiTables, ChecksumsAndSignaturesAreChecked) {
    Mem m = platform(true);
    m.bytes[3] = 'X';  // "RSX PTR "
    Result<AcpiPlatform> p = acpi_read(kBase, map, &m);
    ASSERT_FALSE(p.ok());
    EXPECT_STREQ(p.error().msg, "ACPI: no valid RSDP at 0x7f000000");
    m = platform(true);
    m.bytes[0x100 + 40] ^= 1;  // an XSDT entry changed, its checksum not
    p = acpi_read(kBase, map, &m);
    ASSERT_FALSE(p.ok());
    EXPECT_STREQ(p.error().msg, "ACPI root table: ACPI: the XSDT table at 0x7f000100 fails its checksum");
    // A MADT that fails its checksum is skipped, not trusted: no I/O APIC.
    m = platform(true);
    m.bytes[0x200 + 56] ^= 1;
    p = acpi_read(kBase, map, &m);
    ASSERT_TRUE(p.ok());
    EXPECT_EQ(p.value().ioapic_count, 0u);
    EXPECT_FALSE(p.value().madt);
    EXPECT_TRUE(p.value().hpet);
}

TEST(AcpiTables, AnHpetOutsideSystemMemoryIsNotUsed) {
    Mem m = platform(true);
    m.bytes[0x300 + 40] = 1;  // system I/O space
    m.checksum(0x300, 56, 9);
    Result<AcpiPlatform> p = acpi_read(kBase, map, &m);
    ASSERT_TRUE(p.ok());
    EXPECT_FALSE(p.value().hpet);
}
