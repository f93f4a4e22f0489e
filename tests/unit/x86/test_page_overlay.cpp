// The page-table overlay (x86/page_overlay.h) over firmware-like tables in host memory:
// the tables' addresses are their pointers, as under UEFI's identity mapping.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "x86/page_overlay.h"
#include "x86/paging_regs.h"

using namespace pmulab;
using namespace pmulab::regs;

namespace {

constexpr u64 kP = 1, kRw = 2, kPs = 0x80, kG = 0x100, kPatLarge = 0x1000, kXd = u64(1) << 63;
constexpr u64 kGiB = u64(1) << 30, kMiB2 = u64(1) << 21;

struct Tables {
    std::vector<u64*> pages;
    ~Tables() {
        for (u64* p : pages) std::free(p);
    }
    u64* page() {
        u64* p = static_cast<u64*>(std::aligned_alloc(4096, 4096));
        std::memset(p, 0, 4096);
        pages.push_back(p);
        return p;
    }
    static u64 at(const u64* t) { return u64(reinterpret_cast<uintptr_t>(t)); }
    // A copy of every firmware table, to check that the overlay never writes them.
    std::vector<std::vector<u64>> snapshot() const {
        std::vector<std::vector<u64>> s;
        for (u64* p : pages) s.emplace_back(p, p + 512);
        return s;
    }
};

struct Walk {
    bool present = false;
    u64 phys = 0;
    u64 leaf = 0;  // the entry that mapped it
    unsigned level = 0;
};

// The SDM's 4-level walk (Vol. 3A §4.5), independent of the code under test.
Walk walk(u64 cr3, u64 addr) {
    const u64* t = reinterpret_cast<const u64*>(uintptr_t(cr3 & 0x000FFFFFFFFFF000ull));
    for (unsigned level = 4; level >= 1; --level) {
        u64 e = t[(addr >> (12 + 9 * (level - 1))) & 511];
        if (!(e & kP)) return {};
        if (level == 1) return {true, (e & 0x000FFFFFFFFFF000ull) | (addr & 0xFFF), e, 1};
        if ((level == 3 || level == 2) && (e & kPs)) {
            u64 size = level == 3 ? kGiB : kMiB2;
            return {true, (e & 0x000FFFFFFFFFF000ull & ~(size - 1)) | (addr & (size - 1)), e, level};
        }
        t = reinterpret_cast<const u64*>(uintptr_t(e & 0x000FFFFFFFFFF000ull));
    }
    return {};
}

struct Pool {
    u64* mem;
    explicit Pool(usize pages) : mem(static_cast<u64*>(std::aligned_alloc(4096, pages * 4096))) {}
    ~Pool() { std::free(mem); }
};

}  // namespace

// OVMF-like: the first 4 GiB as 1 GiB pages (the first one write-back PAT 1 and global).
TEST(PageOverlay, Page0InAOneGibPageIsSplitDownToAPageTable) {
    Tables fw;
    u64 *pml4 = fw.page(), *pdpt = fw.page();
    pml4[0] = Tables::at(pdpt) | kP | kRw;
    for (u64 i = 0; i < 4; ++i) pdpt[i] = (i * kGiB) | kP | kRw | kPs | (i == 0 ? kPatLarge | kG : kXd);
    auto before = fw.snapshot();
    Pool pool(8);
    PageOverlay ov;
    ov.init(pool.mem, 8);
    u64 cr3 = Tables::at(pml4) | 0x18;  // PWT, PCD kept
    Result<u64> r = ov.build(cr3, std::vector<u64>{0}.data(), 1);
    ASSERT_TRUE(r.ok()) << r.error().msg;
    EXPECT_EQ(r.value() & 0xFFF, 0x18u);
    EXPECT_EQ(r.value() & ~u64(0xFFF), Tables::at(pool.mem));
    EXPECT_EQ(ov.used(), 4u);  // PML4, PDPT, a PD of 2 MiB pages, a PT of 4 KiB pages
    EXPECT_FALSE(walk(r.value(), 0).present);
    EXPECT_FALSE(walk(r.value(), 0xFFF).present);
    // Everything else maps as before, with the same attributes (PAT moved to bit 7 in a PTE).
    for (u64 a : {u64(0x1000), u64(0x1FF123), u64(0x200000), u64(0x3FFFF000), kGiB + 0x5000, 3 * kGiB + 0x1234}) {
        Walk fwm = walk(cr3, a), ovm = walk(r.value(), a);
        ASSERT_TRUE(ovm.present) << std::hex << a;
        EXPECT_EQ(ovm.phys, fwm.phys) << std::hex << a;
        EXPECT_EQ(ovm.leaf & kXd, fwm.leaf & kXd) << std::hex << a;
        EXPECT_EQ(ovm.leaf & (kRw | kG), fwm.leaf & (kRw | kG)) << std::hex << a;
    }
    Walk pte = walk(r.value(), 0x1000);
    EXPECT_EQ(pte.level, 1u);
    EXPECT_EQ(pte.leaf, 0x1000 | kP | kRw | kG | 0x80);  // PAT: bit 12 of the 1 GiB page, bit 7 here
    Walk pde = walk(r.value(), 0x200000);
    EXPECT_EQ(pde.level, 2u);
    EXPECT_EQ(pde.leaf, 0x200000 | kP | kRw | kPs | kG | kPatLarge);
    EXPECT_EQ(walk(r.value(), kGiB).level, 3u);  // the other 1 GiB pages stay whole
    EXPECT_EQ(fw.snapshot(), before);            // the firmware's tables are only read
}

// Firmware with 4 KiB pages where the guard pages lie: the PT and the tables above it are
// copied; two absent pages in one PT share the copies; other PML4 entries still point at
// the firmware's own tables.
TEST(PageOverlay, FourKibTablesAreCopiedOnceAndSharedByTheirAbsentPages) {
    Tables fw;
    u64 *pml4 = fw.page(), *pdpt = fw.page(), *pd = fw.page(), *pt = fw.page(), *pdpt_hi = fw.page();
    pml4[0] = Tables::at(pdpt) | kP | kRw;
    pml4[1] = Tables::at(pdpt_hi) | kP | kRw;
    pdpt[0] = Tables::at(pd) | kP | kRw;
    pd[0] = Tables::at(pt) | kP | kRw;
    for (u64 i = 0; i < 512; ++i) pt[i] = (i * 4096) | kP | kRw | kXd;
    pt[7] = 0;  // absent in the firmware already
    for (u64 i = 1; i < 512; ++i) pd[i] = (i * kMiB2) | kP | kRw | kPs;
    auto before = fw.snapshot();
    Pool pool(16);
    PageOverlay ov;
    ov.init(pool.mem, 16);
    u64 absent[] = {0, 0x10000, 0x10FFF, 0x7000, 0x400000 + 0x3000};
    Result<u64> r = ov.build(Tables::at(pml4), absent, 5);
    ASSERT_TRUE(r.ok()) << r.error().msg;
    EXPECT_EQ(ov.used(), 5u);  // PML4, PDPT, PD, the copied PT, the split 2 MiB page at 4 MiB
    for (u64 a : {u64(0), u64(0x10000), u64(0x7000), u64(0x403000)}) EXPECT_FALSE(walk(r.value(), a).present) << a;
    for (u64 a : {u64(0x1000), u64(0xF000), u64(0x11000), u64(0x402000), u64(0x404000), u64(0x600000)}) {
        ASSERT_TRUE(walk(r.value(), a).present) << std::hex << a;
        EXPECT_EQ(walk(r.value(), a).phys, walk(Tables::at(pml4), a).phys);
        EXPECT_EQ(walk(r.value(), a).leaf & kXd, walk(Tables::at(pml4), a).leaf & kXd);
    }
    const u64* ov_pml4 = pool.mem;
    EXPECT_EQ(ov_pml4[1], pml4[1]);  // shared, not copied
    EXPECT_EQ(fw.snapshot(), before);
    // A second build starts over from the firmware's tables (what they say now).
    pt[0x20] = 0;
    Result<u64> again = ov.build(Tables::at(pml4), absent, 1);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(ov.used(), 4u);
    EXPECT_TRUE(walk(again.value(), 0x10000).present);
    EXPECT_FALSE(walk(again.value(), 0x20000).present);
}

TEST(PageOverlay, TooFewPagesIsAnInternalErrorNotACorruptTable) {
    Tables fw;
    u64 *pml4 = fw.page(), *pdpt = fw.page();
    pml4[0] = Tables::at(pdpt) | kP | kRw;
    pdpt[0] = kP | kRw | kPs;
    Pool pool(3);
    PageOverlay ov;
    ov.init(pool.mem, 3);
    u64 zero = 0;
    Result<u64> r = ov.build(Tables::at(pml4), &zero, 1);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, Errc::internal);
    EXPECT_NE(std::strstr(r.error().msg, "3 pages are not enough for page 0x0"), nullptr) << r.error().msg;
    EXPECT_EQ(PageOverlay::pages_for(1), 4u);
}

TEST(PagingRegs, EntryFieldsFollowTheSdmTables) {
    PageEntry pde(0x80000000002010E3ull);  // 2 MiB page at 2 MiB: P RW A D PS, PAT (bit 12), XD
    EXPECT_TRUE(pde.present() && pde.writable() && pde.page_size() && pde.large_pat() && pde.execute_disable());
    EXPECT_EQ(pde.raw() & Page2mBase::mask, 0x200000u);
    EXPECT_EQ(Cr3(0x7F8A001).set_table_pfn(0x1234).raw(), 0x1234001u);
    EXPECT_TRUE(Cr4Paging(0x3406E0).pge());
    EXPECT_FALSE(Cr4Paging(0x3406E0).la57());
}
