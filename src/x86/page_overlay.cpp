#include "x86/page_overlay.h"

#include "x86/paging_regs.h"

namespace pmulab {

namespace {

using regs::PageEntry;

constexpr usize kEntries = 512;
constexpr u64 kPage4k = 4096, kPage2m = u64(1) << 21;

u64* table_at(u64 phys) { return reinterpret_cast<u64*>(uintptr_t(phys)); }
u64 phys_of(const u64* t) { return u64(reinterpret_cast<uintptr_t>(t)); }

// The index of `addr` in the table of `level` (4 = PML4 ... 1 = PT): 9 bits from bit
// 12 + 9 (level - 1) (SDM Vol. 3A §4.5, Figure 4-8 "Linear-Address Translation to a 4-KByte
// Page Using 4-Level Paging").
usize index_of(u64 addr, unsigned level) { return usize((addr >> (12 + 9 * (level - 1))) & (kEntries - 1)); }

// A 1 GiB page (level 3) as 512 2 MiB pages, or a 2 MiB page (level 2) as 512 4 KiB pages,
// each with the large page's attributes (the PAT bit moves from bit 12 to bit 7 in a PTE).
void split(PageEntry large, unsigned level, u64* out) {
    if (level == 3) {
        u64 base = large.raw() & regs::Page1gBase::mask;
        u64 attrs = large.raw() & ~regs::Page1gBase::mask;
        for (usize i = 0; i < kEntries; ++i) out[i] = attrs | (base + i * kPage2m);
        return;
    }
    u64 base = large.raw() & regs::Page2mBase::mask;
    bool pat = large.large_pat();
    PageEntry attrs = PageEntry(large.raw() & ~regs::Page2mBase::mask).set_large_pat(false).set_page_size(pat);
    for (usize i = 0; i < kEntries; ++i) out[i] = PageEntry(attrs).set_address(base + i * kPage4k).raw();
}

}  // namespace

u64* PageOverlay::take() {
    if (used_ == pages_) return nullptr;
    return pool_ + (used_++) * (kPageTableBytes / sizeof(u64));
}

bool PageOverlay::owned(u64 addr) const {
    u64 lo = phys_of(pool_);
    return addr >= lo && addr < lo + pages_ * kPageTableBytes;
}

// Walks to the PTE of `addr` in the overlay rooted at `pml4`, copying or splitting each
// table on the way that is still the firmware's, and clears its P bit.
Status PageOverlay::clear(u64* pml4, u64 addr) {
    u64* t = pml4;
    for (unsigned level = 4; level >= 1; --level) {
        usize i = index_of(addr, level);
        PageEntry e(t[i]);
        if (!e.present()) return ok_status();  // absent already (SDM: P = 0 ends the walk)
        if (level == 1) {
            t[i] = e.set_present(false).raw();
            return ok_status();
        }
        bool large = level <= 3 && e.page_size();  // PS is reserved in a PML4E
        if (!large && owned(e.address())) {
            t = table_at(e.address());
            continue;
        }
        u64* child = take();
        if (!child)
            return Error::make(Errc::internal, "page-table overlay: %llu pages are not enough for page 0x%llx",
                               (unsigned long long)pages_, (unsigned long long)addr);
        if (large) {
            split(e, level, child);
            // The new table's entry grants everything; the split entries carry the page's
            // own R/W, U/S and XD (the access rights are the most restrictive on the path).
            e = PageEntry().set_present().set_writable().set_user().set_accessed().set_address(phys_of(child));
        } else {
            __builtin_memcpy(child, table_at(e.address()), kPageTableBytes);
            e.set_address(phys_of(child));
        }
        t[i] = e.raw();
        t = child;
    }
    return ok_status();
}

Result<u64> PageOverlay::build(u64 cr3, const u64* absent, usize n) {
    used_ = 0;
    u64* pml4 = take();
    if (!pml4) return Error::make(Errc::internal, "page-table overlay: no pages");
    regs::Cr3 fw(cr3);
    __builtin_memcpy(pml4, table_at(fw.table()), kPageTableBytes);
    for (usize k = 0; k < n; ++k) PMULAB_TRY(clear(pml4, absent[k] & ~(kPage4k - 1)));
    return regs::Cr3(cr3).set_table_pfn(phys_of(pml4) >> 12).raw();
}

}  // namespace pmulab
