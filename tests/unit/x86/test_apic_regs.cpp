// The typed local APIC registers (x86/apic_regs.h): the static_asserts there pin the
// layouts with the SDM's values; these check the tables and the two modes' addresses.
#include <gtest/gtest.h>

#include "x86/apic_regs.h"

using namespace pmulab;
using namespace pmulab::regs;

TEST(ApicRegs, EveryRegisterHasOneMmioOffsetAndOneX2ApicMsr) {
    ApicBase xapic(0xFEE00900), x2apic(0xFEE00D00);
    for (const ApicLvtEntry& e : kApicLvtEntries) {
        ApicLocation m = apic_location(xapic, e.reg), r = apic_location(x2apic, e.reg);
        EXPECT_FALSE(m.msr) << e.name;
        EXPECT_EQ(m.where, 0xFEE00000u + u32(e.reg)) << e.name;
        EXPECT_TRUE(r.msr) << e.name;
        EXPECT_EQ(r.where, 0x800u + u32(e.reg) / 16) << e.name;
    }
}

// Linux lapic_get_maxlvt / the SDM's Version register: with Max LVT Entry 4 (P6 family,
// 5 entries) the performance-counter entry exists, thermal and CMCI do not.
TEST(ApicRegs, LvtEntriesFollowMaxLvtEntry) {
    ApicVersion v(0x00040014);
    EXPECT_EQ(v.max_lvt(), 4u);
    std::string present;
    for (const ApicLvtEntry& e : kApicLvtEntries)
        if (v.max_lvt() >= e.min_max_lvt) present += std::string(e.name) + ";";
    EXPECT_EQ(present, "timer;LINT0;LINT1;error;performance counters;");
}

TEST(ApicRegs, PerformanceCounterEntryAsAPmiHandlerSetsIt) {
    // An NMI PMI, then the mask bit the processor sets when it delivers one.
    ApicLvt pc = ApicLvt().set_delivery(ApicDelivery::nmi);
    EXPECT_EQ(pc.raw(), 0x400u);
    EXPECT_EQ(ApicLvt(pc.raw() | 0x10000).set_masked(false).raw(), 0x400u);
    EXPECT_EQ(ApicLvt(0x104FE).vector(), 0xFEu);
    EXPECT_TRUE(ApicLvt(0x104FE).masked());
    EXPECT_EQ(ApicLvt(0x104FE).delivery(), ApicDelivery::nmi);
}
