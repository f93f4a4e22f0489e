// pmulab's own copy of the firmware's 4-level page tables in which chosen 4 KiB pages are
// not present (page 0, the guard pages around user code's scratch areas): what the
// measuring CPU loads into CR3 while a region runs (src/efi/measure_efi.cpp), so that a
// load or store through a null pointer raises #PF instead of writing physical page 0.
//
// Copy on write, from the root down: only the tables on the path to an absent page are
// copied (a PML4, and per absent page at most one PDPT, PD and PT); every other entry
// still points at the firmware's own tables. A 1 GiB or 2 MiB page on the path is split
// into 512 entries of the next size with the same attributes. The firmware's tables are
// only read, never written (they may be read-only: CR0.WP with protected page tables).
// Memory is identity-mapped (UEFI), so a table's physical address is its pointer.
// SDM Vol. 3A §4.5 "4-Level Paging and 5-Level Paging".
#pragma once

#include "base/result.h"

namespace pmulab {

inline constexpr usize kPageTableBytes = 4096;

class PageOverlay {
public:
    // `pool`: `pages` 4 KiB-aligned pages of the overlay's own, identity-mapped.
    void init(u64* pool, usize pages) {
        pool_ = pool;
        pages_ = pages;
    }
    bool ready() const { return pool_ != nullptr; }
    u64* pool() const { return pool_; }
    usize used() const { return used_; }  // pages the last build took
    // Builds the overlay of the tables CR3 = `cr3` points at (4-level paging) with the 4 KiB
    // pages at `absent[0..n)` not present, and returns the CR3 value to load (the overlay's
    // PML4 with cr3's low bits: PWT/PCD or the PCID). Pages already absent stay so.
    Result<u64> build(u64 cr3, const u64* absent, usize n);
    // How many pages the worst case of `n` absent pages needs.
    static constexpr usize pages_for(usize n) { return 1 + 3 * n; }

private:
    u64* take();
    bool owned(u64 addr) const;
    Status clear(u64* pml4, u64 addr);
    u64* pool_ = nullptr;
    usize pages_ = 0, used_ = 0;
};

}  // namespace pmulab
