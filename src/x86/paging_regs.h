// Typed 4-level paging structures: CR3, the CR4 bits that change how paging works, and
// the entries of the PML4, PDPT, PD and PT.
//
// References: Intel SDM Vol. 3A §4.5 "4-Level Paging and 5-Level Paging" (Table 4-12
// "Use of CR3 with 4-Level Paging", Tables 4-14 to 4-20 "Format of a ... Entry"), §2.5
// "Control Registers" (CR4).
#pragma once

#include "base/bits.h"

namespace pmulab::regs {

// CR3 with 4-level paging (SDM Vol. 3A §4.5, Table 4-12 and 4-13): the PML4's physical
// address; bits 11:0 are PWT/PCD, or the PCID where CR4.PCIDE = 1.
class Cr3 : public RegValue<Cr3> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FIELD(Cr3, low_bits, 11, 0)    // PWT (3), PCD (4), or the PCID (CR4.PCIDE = 1)
    PMULAB_REG_FIELD(Cr3, table_pfn, 51, 12)  // the PML4 (PML5 with CR4.LA57) >> 12
    constexpr u64 table() const { return table_pfn() << 12; }
};
static_assert(Cr3(0x1234018).table() == 0x1234000 && Cr3(0x1234018).low_bits() == 0x18);

// CR4 bits that bear on a switch of page tables (SDM Vol. 3A §2.5 "Control Registers").
class Cr4Paging : public RegValue<Cr4Paging> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FLAG(Cr4Paging, pge, 7)     // global pages survive a CR3 load
    PMULAB_REG_FLAG(Cr4Paging, la57, 12)   // 5-level paging
    PMULAB_REG_FLAG(Cr4Paging, pcide, 17)  // CR3[11:0] is a PCID
};
static_assert(Cr4Paging(0x1000).la57() && Cr4Paging(0x20080).pcide() && Cr4Paging(0x80).pge());

// An entry of any level (SDM Vol. 3A §4.5, Tables 4-15 to 4-20): the bits common to all,
// the PS bit of a PDPTE/PDE, and the two places of the PAT bit (bit 7 in a PTE, bit 12
// in a PDPTE/PDE that maps a 1 GiB/2 MiB page).
class PageEntry : public RegValue<PageEntry> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FLAG(PageEntry, present, 0)
    PMULAB_REG_FLAG(PageEntry, writable, 1)
    PMULAB_REG_FLAG(PageEntry, user, 2)
    PMULAB_REG_FLAG(PageEntry, accessed, 5)
    PMULAB_REG_FLAG(PageEntry, page_size, 7)   // PDPTE/PDE: maps a page; PTE: the PAT bit
    PMULAB_REG_FLAG(PageEntry, large_pat, 12)  // PAT of a 1 GiB/2 MiB page
    PMULAB_REG_FIELD(PageEntry, pfn, 51, 12)   // next table or 4 KiB page, >> 12
    PMULAB_REG_FLAG(PageEntry, execute_disable, 63)
    constexpr u64 address() const { return pfn() << 12; }
    constexpr PageEntry& set_address(u64 a) { return set_pfn(a >> 12); }
};
static_assert(PageEntry(0x8000000000200083ull).page_size() && PageEntry(0x200083).address() == 0x200000);
static_assert(PageEntry(0x1003).set_address(0x5000).raw() == 0x5003);
static_assert(PageEntry::pfn_field::mask == 0x000FFFFFFFFFF000ull);

// Bits of the physical address a PDPTE (1 GiB page) or PDE (2 MiB page) maps:
// 51:30 and 51:21 (SDM Vol. 3A §4.5, Tables 4-16 and 4-18).
using Page1gBase = Bits<51, 30>;
using Page2mBase = Bits<51, 21>;

}  // namespace pmulab::regs
