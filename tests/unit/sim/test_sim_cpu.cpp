// The simulated CPU's rules, one by one: the specification of the oracle that
// pmulab's PMU code is tested against. Each expectation is an SDM rule (or a
// documented QEMU/AMD behaviour) stated as exact register values.
#include <gtest/gtest.h>

#include "sim/sim_cpu.h"
#include "sim/sim_netburst.h"

using namespace sim;
using pmulab::Errc;
using pmulab::kVectorGP;
using pmulab::kVectorUD;

namespace {

// 0 when the access completed, else the fault vector.
u8 vec_of(const Status& s) { return s.ok() ? 0 : s.error().vector; }
u8 vec_of(const Result<u64>& r) { return r.ok() ? 0 : r.error().vector; }

u8 wr(SimCpu& c, u32 msr, u64 v) { return vec_of(c.wrmsr(msr, v)); }
u64 rd(SimCpu& c, u32 msr) {
    Result<u64> r = c.rdmsr(msr);
    EXPECT_TRUE(r.ok()) << "RDMSR 0x" << std::hex << msr << ": " << r.error().msg;
    return r.value();
}

constexpr u64 kOsEn = evtsel::OS | evtsel::EN;
constexpr u64 kInstOs = evtsel::make(0xC0, 0x00, kOsEn);

}  // namespace

// ---------------------------------------------------------------- CPUID

TEST(SimCpuid, AnswersFromTheSnapshot) {
    SimMachine m = intel_v4_goldmont_plus();
    EXPECT_EQ(m.cpu(0).cpuid(0xA, 0), (CpuidRegs{0x07300404, 0, 0, 0x00008603}));
    EXPECT_EQ(m.cpu(0).cpuid(1, 0).eax, 0x000706A8u);
    // Initial APIC ID in CPUID.01H:EBX[31:24] follows the topology.
    EXPECT_EQ(m.cpu(3).cpuid(1, 0).ebx >> 24, 3u);
}

TEST(SimCpuid, LeafAboveMaximumReturnsHighestBasicLeaf) {
    SimMachine m = intel_v1();  // max basic leaf 0AH, max extended 8000_0008H
    CpuidRegs top = m.cpu(0).cpuid(0xA, 0);
    EXPECT_EQ(top.eax, 0x07280201u);
    EXPECT_EQ(m.cpu(0).cpuid(0xB, 0), top);
    EXPECT_EQ(m.cpu(0).cpuid(0x23, 0), top);
    EXPECT_EQ(m.cpu(0).cpuid(0x80000009, 0), top);
    EXPECT_EQ(m.cpu(0).cpuid(0x40000000, 0), top);            // no hypervisor leaves
    EXPECT_EQ(m.cpu(0).cpuid(0x80000008, 0), (CpuidRegs{}));  // in range, not in the snapshot
}

TEST(SimCpuid, SubleafOfTheHighestLeafIsHonoured) {
    IntelCpuidSpec sp;
    sp.max_leaf = 0xB;
    sp.leaf_0a = {0x07300403, 0, 0, 0x603};
    SimMachine m = intel_machine(sp, {1, 2, 2});
    SimCpu& c = m.cpu(3);
    EXPECT_EQ(c.cpuid(0xB, 1), (CpuidRegs{2, 4, 0x201, 3}));
    EXPECT_EQ(c.cpuid(0x1F, 1), (CpuidRegs{2, 4, 0x201, 3}));
    EXPECT_EQ(c.cpuid(0x1F, 0), (CpuidRegs{1, 2, 0x100, 3}));
}

TEST(SimCpuid, EcxIgnoredForUnindexedLeavesZeroForAbsentSubleaves) {
    SimMachine m = intel_v6();
    SimCpu& c = m.cpu(1);
    EXPECT_EQ(c.cpuid(1, 5), c.cpuid(1, 0));
    EXPECT_EQ(c.cpuid(0xA, 3), c.cpuid(0xA, 0));
    EXPECT_EQ(c.cpuid(7, 1).eax, 1u << 8);
    EXPECT_EQ(c.cpuid(7, 3), (CpuidRegs{}));
    EXPECT_EQ(c.cpuid(0x23, 1), (CpuidRegs{0x3ff, 0x77, 0, 0}));
    EXPECT_EQ(c.cpuid(0x23, 2), (CpuidRegs{}));
}

// ---------------------------------------------------------------- MSR existence

TEST(SimMsrs, Version1HasTwoCountersAndNothingElse) {
    SimMachine m = intel_v1();
    SimCpu& c = m.cpu(0);
    for (u32 msr : {0xC1u, 0xC2u, 0x186u, 0x187u, 0x10u, 0x8Bu, 0x6E1u, 0x1A0u}) EXPECT_TRUE(c.msr_exists(msr)) << msr;
    for (u32 msr : {0xC3u, 0x188u, 0x309u, 0x38Du, 0x38Eu, 0x38Fu, 0x390u, 0x345u, 0x4C1u})
        EXPECT_FALSE(c.msr_exists(msr)) << msr;
    Result<u64> r = c.rdmsr(0xC3);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, Errc::fault);
    EXPECT_EQ(r.error().vector, kVectorGP);
    EXPECT_STREQ(r.error().msg, "RDMSR 0xc3 raised #GP (general protection): the CPU does not implement this MSR");
    Status w = c.wrmsr(0x38F, 1);
    ASSERT_FALSE(w.ok());
    EXPECT_STREQ(w.error().msg,
                 "WRMSR 0x38f <- 0x1 raised #GP (general protection): the CPU rejects this MSR or value");
}

TEST(SimMsrs, Version2AddsFixedAndGlobalControls) {
    SimMachine m = intel_v2(2, 0x0);
    SimCpu& c = m.cpu(0);
    for (u32 msr : {0x309u, 0x30Au, 0x30Bu, 0x38Du, 0x38Eu, 0x38Fu, 0x390u, 0x345u})
        EXPECT_TRUE(c.msr_exists(msr)) << msr;
    for (u32 msr : {0x30Cu, 0x391u, 0x392u, 0x4C1u, 0xC3u}) EXPECT_FALSE(c.msr_exists(msr)) << msr;
    EXPECT_EQ(c.pmu().fixed_width, 40u);
}

TEST(SimMsrs, FullWidthAliasesNeedPdcmAndPerfCapabilitiesBit13) {
    SimMachine m = intel_v2(1, 0x2000);
    EXPECT_TRUE(m.cpu(0).msr_exists(0x4C1));
    EXPECT_TRUE(m.cpu(0).msr_exists(0x4C2));
    EXPECT_FALSE(m.cpu(0).msr_exists(0x4C3));
    EXPECT_EQ(rd(m.cpu(0), 0x345), 0x2000u);
    // Bit 13 in the value but no PDCM: neither PERF_CAPABILITIES nor the aliases exist.
    IntelCpuidSpec sp;
    sp.max_leaf = 0xA;
    sp.pdcm = false;
    sp.leaf_0a = {0x07280202, 0, 0, 0x503};
    SimMachine n = intel_machine(sp, {1, 1, 1}, 0x2000);
    EXPECT_FALSE(n.cpu(0).msr_exists(0x345));
    EXPECT_FALSE(n.cpu(0).msr_exists(0x4C1));
}

TEST(SimMsrs, Version4GoldmontPlus) {
    SimMachine m = intel_v4_goldmont_plus();
    SimCpu& c = m.cpu(2);
    const PmuLayout& L = c.pmu();
    EXPECT_EQ(L.version, 4);
    EXPECT_EQ(L.gp_mask, 0xFu);
    EXPECT_EQ(L.gp_width, 48u);
    EXPECT_EQ(L.fixed_mask, 0x7u);
    EXPECT_EQ(L.fixed_width, 48u);
    EXPECT_TRUE(L.anythread_ignored);
    for (u32 msr : {0xC4u, 0x189u, 0x30Bu, 0x391u, 0x392u, 0x4C1u, 0x4C4u}) EXPECT_TRUE(c.msr_exists(msr)) << msr;
    for (u32 msr : {0xC5u, 0x18Au, 0x30Cu, 0x4C5u}) EXPECT_FALSE(c.msr_exists(msr)) << msr;
    EXPECT_EQ(rd(c, 0x345), kGoldmontPlusPerfCaps);
    // RESET state: the GP enable bits of GLOBAL_CTRL are set, everything else clear.
    EXPECT_EQ(rd(c, 0x38F), 0xFu);
    EXPECT_EQ(rd(c, 0x38D), 0u);
    EXPECT_EQ(rd(c, 0x38E), 0u);
}

TEST(SimMsrs, Version5FixedCountersFromEcxMaskOrEdxCount) {
    SimMachine m = intel_v5(0b1001, 0);
    SimCpu& c = m.cpu(0);
    EXPECT_TRUE(c.msr_exists(0x309));
    EXPECT_FALSE(c.msr_exists(0x30A));
    EXPECT_FALSE(c.msr_exists(0x30B));
    EXPECT_TRUE(c.msr_exists(0x30C));
    EXPECT_FALSE(c.msr_exists(0x30D));
    // Fixed counter i exists when ECX[i] or EDX[4:0] > i.
    SimMachine n = intel_v5(0b1000, 2);
    EXPECT_EQ(n.cpu(0).pmu().fixed_mask, 0b1011u);
}

TEST(SimMsrs, Leaf23BitmapsOverrideLeaf0A) {
    SimMachine m = intel_v6();  // 0AH: 8 GP, fixed 0-2; 23H: GP 0-9, fixed 0-2,4-6
    SimCpu& c = m.cpu(0);
    EXPECT_EQ(c.pmu().gp_mask, 0x3FFu);
    EXPECT_EQ(c.pmu().fixed_mask, 0x77u);
    EXPECT_TRUE(c.msr_exists(0xC1 + 9));
    EXPECT_TRUE(c.msr_exists(0x186 + 9));
    EXPECT_FALSE(c.msr_exists(0xC1 + 10));
    EXPECT_FALSE(c.msr_exists(0x309 + 3));
    EXPECT_TRUE(c.msr_exists(0x309 + 6));
    SimMachine holes = intel_v6(0b1011, 0x7);
    EXPECT_FALSE(holes.cpu(0).msr_exists(0xC3));
    EXPECT_FALSE(holes.cpu(0).msr_exists(0x188));
    EXPECT_TRUE(holes.cpu(0).msr_exists(0xC4));
    EXPECT_TRUE(holes.cpu(0).msr_exists(0x189));
}

TEST(SimMsrs, AlwaysPresentMsrs) {
    SimMachine m = intel_v3();
    SimCpu& c = m.cpu(1);
    EXPECT_EQ(rd(c, 0x8B), 0x2a00000000ull);
    EXPECT_EQ(wr(c, 0x8B, 0), 0);  // the microcode-revision read protocol
    EXPECT_EQ(wr(c, 0x10, 12345), 0);
    EXPECT_EQ(c.rdtsc(), 12345u);
    EXPECT_EQ(rd(c, 0x10), 12345u);
    // IA32_PKRS: bits 63:32 reserved (#GP with EDX != 0, as QEMU does).
    EXPECT_EQ(wr(c, 0x6E1, 0x100000000ull), kVectorGP);
    EXPECT_EQ(wr(c, 0x6E1, 0x55), 0);
    EXPECT_EQ(rd(c, 0x6E1), 0x55u);
    // IA32_MISC_ENABLE: bit 7 (perfmon available), 11, 12 read-only.
    EXPECT_EQ(rd(c, 0x1A0), 0x1881u);
    EXPECT_EQ(wr(c, 0x1A0, 0), 0);
    EXPECT_EQ(rd(c, 0x1A0), 0x1880u);
}

// ---------------------------------------------------------------- reserved bits

TEST(SimReserved, PerfEvtSelUpperBitsAndAnyThread) {
    SimMachine v4 = intel_v4_goldmont_plus();
    SimCpu& c = v4.cpu(0);
    EXPECT_EQ(wr(c, 0x186, 1ull << 32), kVectorGP);
    EXPECT_EQ(wr(c, 0x186, 1ull << 63), kVectorGP);
    EXPECT_EQ(wr(c, 0x186, evtsel::EQ), kVectorGP);  // not enumerated before leaf 23H
    EXPECT_EQ(wr(c, 0x186, evtsel::umask2(1)), kVectorGP);
    EXPECT_EQ(wr(c, 0x186, 0xFFFFFFFFull), 0);  // all of 31:0 incl. AnyThread (v3+)
    EXPECT_EQ(rd(c, 0x186), 0xFFFFFFFFull);
    // v2: AnyThread is reserved.
    SimMachine v2 = intel_v2();
    EXPECT_EQ(wr(v2.cpu(0), 0x186, evtsel::ANY), kVectorGP);
    EXPECT_EQ(wr(v2.cpu(0), 0x186, 0xFFFFFFFFull & ~evtsel::ANY), 0);
    // v3: AnyThread is a real control.
    SimMachine v3 = intel_v3();
    EXPECT_FALSE(v3.cpu(0).pmu().anythread_ignored);
    EXPECT_EQ(wr(v3.cpu(0), 0x186, evtsel::ANY), 0);
    // v6 with leaf 23H: EQ (36) and UMASK2 (47:40) writable, the rest of 63:32 not.
    SimMachine v6 = intel_v6();
    SimCpu& d = v6.cpu(0);
    EXPECT_EQ(wr(d, 0x186, evtsel::EQ | evtsel::umask2(0xFF)), 0);
    EXPECT_EQ(rd(d, 0x186), (1ull << 36) | (0xFFull << 40));
    EXPECT_EQ(wr(d, 0x186, 1ull << 37), kVectorGP);
    EXPECT_EQ(wr(d, 0x186, 1ull << 48), kVectorGP);
    // A faulting write leaves the register unchanged.
    EXPECT_EQ(rd(d, 0x186), (1ull << 36) | (0xFFull << 40));
}

TEST(SimReserved, AnyThreadDeprecatedIsAcceptedAndIgnored) {
    SimMachine m = intel_v4_goldmont_plus();  // CPUID.0AH:EDX[15] = 1
    SimCpu& c = m.cpu(0);
    EXPECT_EQ(wr(c, 0x186, kInstOs | evtsel::ANY), 0);
    EXPECT_EQ(wr(c, 0x38D, 0x4), 0);  // FIXED_CTR_CTRL AnyThread of counter 0
    EXPECT_EQ(wr(c, 0x38D, 0x0), 0);
    m.cpu(1).instructions(1000);  // another CPU's events never reach this counter
    c.instructions(7);
    EXPECT_EQ(rd(c, 0xC1), 7u);
}

TEST(SimReserved, FixedCtrCtrlFieldsOfAbsentCounters) {
    SimMachine v4 = intel_v4_goldmont_plus();
    SimCpu& c = v4.cpu(0);
    EXPECT_EQ(wr(c, 0x38D, 0xFFF), 0);
    EXPECT_EQ(wr(c, 0x38D, 0x1000), kVectorGP);  // counter 3's field
    EXPECT_EQ(wr(c, 0x38D, 1ull << 63), kVectorGP);
    EXPECT_EQ(rd(c, 0x38D), 0xFFFu);
    SimMachine v2 = intel_v2();
    EXPECT_EQ(wr(v2.cpu(0), 0x38D, 0xBBB), 0);
    EXPECT_EQ(wr(v2.cpu(0), 0x38D, 0x4), kVectorGP);  // AnyThread reserved before v3
    SimMachine v5 = intel_v5(0b1001, 0);
    EXPECT_EQ(wr(v5.cpu(0), 0x38D, 0xF00F), 0);
    EXPECT_EQ(wr(v5.cpu(0), 0x38D, 0x0010), kVectorGP);  // counter 1 does not exist
    EXPECT_EQ(wr(v5.cpu(0), 0x38D, 0x0100), kVectorGP);  // counter 2 does not exist
}

TEST(SimReserved, GlobalCtrlBitsOfAbsentCountersAndReadOnlyMsrs) {
    SimMachine v4 = intel_v4_goldmont_plus();
    SimCpu& c = v4.cpu(0);
    EXPECT_EQ(wr(c, 0x38F, 0x70000000Full), 0);
    EXPECT_EQ(wr(c, 0x38F, 1ull << 4), kVectorGP);
    EXPECT_EQ(wr(c, 0x38F, 1ull << 35), kVectorGP);
    EXPECT_EQ(wr(c, 0x38F, 1ull << 48), kVectorGP);
    EXPECT_EQ(rd(c, 0x38F), 0x70000000Full);
    EXPECT_EQ(wr(c, 0x38E, 0), kVectorGP);  // GLOBAL_STATUS is read-only
    EXPECT_EQ(wr(c, 0x392, 0), kVectorGP);  // GLOBAL_INUSE is read-only
    EXPECT_EQ(wr(c, 0x345, 0), kVectorGP);  // PERF_CAPABILITIES is read-only
    EXPECT_EQ(wr(c, 0x390, 1ull << 40), kVectorGP);
    EXPECT_EQ(wr(c, 0x391, 1ull << 63), kVectorGP);  // CondChgd cannot be set
    SimMachine v5 = intel_v5(0b1001, 0);
    EXPECT_EQ(wr(v5.cpu(0), 0x38F, (0x9ull << 32) | 0xF), 0);
    EXPECT_EQ(wr(v5.cpu(0), 0x38F, 1ull << 33), kVectorGP);
}

TEST(SimReserved, CounterValuesBeyondTheWidth) {
    SimMachine m = intel_v4_goldmont_plus();
    SimCpu& c = m.cpu(0);
    EXPECT_EQ(wr(c, 0x4C1, 0xFFFFFFFFFFFFull), 0);
    EXPECT_EQ(wr(c, 0x4C1, 0x1000000000000ull), kVectorGP);
    EXPECT_EQ(rd(c, 0xC1), 0xFFFFFFFFFFFFull);
    EXPECT_EQ(wr(c, 0x309, 0xFFFFFFFFFFFFull), 0);
    EXPECT_EQ(wr(c, 0x309, 0x1000000000000ull), kVectorGP);
    EXPECT_EQ(wr(c, 0x309, ~0ull), kVectorGP);
    EXPECT_EQ(rd(c, 0x309), 0xFFFFFFFFFFFFull);
}

// ---------------------------------------------------------------- counter writes

TEST(SimCounters, LegacyWritesSignExtendBit31ToTheWidth) {
    SimMachine m = intel_v4_goldmont_plus();
    SimCpu& c = m.cpu(0);
    EXPECT_EQ(wr(c, 0xC1, 0x80000000), 0);
    EXPECT_EQ(rd(c, 0xC1), 0xFFFF80000000ull);
    EXPECT_EQ(rd(c, 0x4C1), 0xFFFF80000000ull);  // the same counter through its alias
    EXPECT_EQ(wr(c, 0xC1, 0x7FFFFFFF), 0);
    EXPECT_EQ(rd(c, 0xC1), 0x7FFFFFFFull);
    EXPECT_EQ(wr(c, 0xC1, 0x1234567800000001ull), 0);  // EDX is ignored
    EXPECT_EQ(rd(c, 0xC1), 1u);
    EXPECT_EQ(wr(c, 0xC1, 0xFFFFFFFFFFFFFFFEull), 0);  // -2 written the legacy way
    EXPECT_EQ(rd(c, 0xC1), 0xFFFFFFFFFFFEull);
    SimMachine v1 = intel_v1();
    EXPECT_EQ(wr(v1.cpu(0), 0xC2, 0x80000000), 0);
    EXPECT_EQ(rd(v1.cpu(0), 0xC2), 0xFF80000000ull);  // 40 bits
}

TEST(SimCounters, FullWidthWritesAndMaskedReads) {
    SimMachine m = intel_v4_goldmont_plus();
    SimCpu& c = m.cpu(0);
    EXPECT_EQ(wr(c, 0x4C2, 0x123456789ABCull), 0);
    EXPECT_EQ(rd(c, 0xC2), 0x123456789ABCull);
    EXPECT_EQ(c.rdpmc(1).value(), 0x123456789ABCull);
}

// ---------------------------------------------------------------- counting

TEST(SimCounting, Version1CountsWithoutGlobalControl) {
    SimMachine m = intel_v1();
    SimCpu& c = m.cpu(0);
    EXPECT_EQ(wr(c, 0x186, kInstOs), 0);
    c.instructions(100);
    EXPECT_EQ(rd(c, 0xC1), 100u);
}

TEST(SimCounting, Version2NeedsTheGlobalControlBit) {
    SimMachine m = intel_v2();
    SimCpu& c = m.cpu(0);
    EXPECT_EQ(wr(c, 0x38F, 0), 0);
    EXPECT_EQ(wr(c, 0x186, kInstOs), 0);
    c.instructions(100);
    EXPECT_EQ(rd(c, 0xC1), 0u);
    EXPECT_EQ(wr(c, 0x38F, 1), 0);
    c.instructions(100);
    EXPECT_EQ(rd(c, 0xC1), 100u);
    // EN clear: nothing, whatever the global control says.
    EXPECT_EQ(wr(c, 0x186, kInstOs & ~evtsel::EN), 0);
    c.instructions(5);
    EXPECT_EQ(rd(c, 0xC1), 100u);
}

TEST(SimCounting, EventAndUnitMaskMustMatch) {
    SimMachine m = intel_v3();
    SimCpu& c = m.cpu(0);
    EXPECT_EQ(wr(c, 0x186, evtsel::make(0x2E, 0x41, kOsEn)), 0);  // LLC misses
    c.event(0x2E, 0x4F, 10);                                      // LLC references
    c.event(0x2F, 0x41, 10);
    EXPECT_EQ(rd(c, 0xC1), 0u);
    c.event(0x2E, 0x41, 3);
    EXPECT_EQ(rd(c, 0xC1), 3u);
}

TEST(SimCounting, UsrOsFilterFollowsTheCpl) {
    SimMachine m = intel_v3();
    SimCpu& c = m.cpu(0);
    EXPECT_EQ(wr(c, 0x186, evtsel::make(0xC0, 0, evtsel::OS | evtsel::EN)), 0);
    EXPECT_EQ(wr(c, 0x187, evtsel::make(0xC0, 0, evtsel::USR | evtsel::EN)), 0);
    EXPECT_EQ(wr(c, 0x188, evtsel::make(0xC0, 0, evtsel::USR | evtsel::OS | evtsel::EN)), 0);
    EXPECT_EQ(wr(c, 0x189, evtsel::make(0xC0, 0, evtsel::EN)), 0);
    c.instructions(10);
    c.set_cpl(3);
    c.instructions(100);
    EXPECT_EQ(rd(c, 0xC1), 10u);
    EXPECT_EQ(rd(c, 0xC2), 100u);
    EXPECT_EQ(rd(c, 0xC3), 110u);
    EXPECT_EQ(rd(c, 0xC4), 0u);
}

TEST(SimCounting, FixedCountersFollowTheirControlFieldAndGlobalBit) {
    SimMachine m = intel_v3();
    SimCpu& c = m.cpu(0);
    EXPECT_EQ(wr(c, 0x38F, 0x7ull << 32), 0);
    EXPECT_EQ(wr(c, 0x38D, 0x321), 0);  // ctr0: OS, ctr1: USR, ctr2: all
    c.instructions(10);
    c.cycles(20);
    c.ref_cycles(30);
    c.set_cpl(3);
    c.instructions(1);
    c.cycles(2);
    c.ref_cycles(3);
    EXPECT_EQ(rd(c, 0x309), 10u);
    EXPECT_EQ(rd(c, 0x30A), 2u);
    EXPECT_EQ(rd(c, 0x30B), 33u);
    EXPECT_EQ(c.tsc(), 33u);
    EXPECT_EQ(wr(c, 0x38F, 0x5ull << 32), 0);  // fixed 1 globally disabled
    c.cycles(50);
    EXPECT_EQ(rd(c, 0x30A), 2u);
    EXPECT_EQ(rd(c, 0x30B), 33u);  // cycles do not feed the reference clock
}

TEST(SimCounting, TopdownSlotsOnFixedCounter3) {
    SimMachine m = intel_hybrid();
    SimCpu& p = m.cpu(0);
    EXPECT_EQ(wr(p, 0x38F, 0xFull << 32), 0);
    EXPECT_EQ(wr(p, 0x38D, 0x1000), 0);
    p.slots(48);
    EXPECT_EQ(rd(p, 0x30C), 48u);
    EXPECT_FALSE(m.cpu(5).msr_exists(0x30C));  // E cores: fixed 0-2
}

TEST(SimCounting, RunFeedsCoreCyclesAndListedEvents) {
    SimMachine m = intel_v3();
    SimCpu& c = m.cpu(0);
    EXPECT_EQ(wr(c, 0x186, evtsel::make(0x3C, 0x00, kOsEn)), 0);
    EXPECT_EQ(wr(c, 0x187, kInstOs), 0);
    EXPECT_EQ(wr(c, 0x38F, 0xF | (0x7ull << 32)), 0);
    EXPECT_EQ(wr(c, 0x38D, 0x111), 0);
    c.run(10, {{0xC0, 0x00, 3}});
    EXPECT_EQ(rd(c, 0xC1), 10u);
    EXPECT_EQ(rd(c, 0xC2), 30u);
    EXPECT_EQ(rd(c, 0x309), 30u);
    EXPECT_EQ(rd(c, 0x30A), 10u);
    EXPECT_EQ(rd(c, 0x30B), 0u);
}

TEST(SimCounting, CmaskInvEdgePerCycle) {
    SimMachine m = intel_v3();
    SimCpu& c = m.cpu(0);
    const u64 base = evtsel::make(0xC0, 0, kOsEn);
    EXPECT_EQ(wr(c, 0x186, base | evtsel::cmask(2)), 0);                 // cycles with >= 2
    EXPECT_EQ(wr(c, 0x187, base | evtsel::cmask(4)), 0);                 // cycles with >= 4
    EXPECT_EQ(wr(c, 0x188, base | evtsel::cmask(4) | evtsel::INV), 0);   // cycles with < 4
    EXPECT_EQ(wr(c, 0x189, base | evtsel::cmask(2) | evtsel::EDGE), 0);  // starts of >= 2 runs
    c.run(10, {{0xC0, 0, 3}});
    c.run(5, {{0xC0, 0, 3}});
    EXPECT_EQ(rd(c, 0xC1), 15u);
    EXPECT_EQ(rd(c, 0xC2), 0u);
    EXPECT_EQ(rd(c, 0xC3), 15u);
    EXPECT_EQ(rd(c, 0xC4), 1u);  // one rising edge across both calls
    c.run(4);                    // no instructions: condition false
    c.run(2, {{0xC0, 0, 5}});
    EXPECT_EQ(rd(c, 0xC1), 17u);
    EXPECT_EQ(rd(c, 0xC2), 2u);
    EXPECT_EQ(rd(c, 0xC3), 19u);
    EXPECT_EQ(rd(c, 0xC4), 2u);
    // CMASK = 0: INV is ignored, every occurrence counts.
    EXPECT_EQ(wr(c, 0x186, base | evtsel::INV), 0);
    EXPECT_EQ(wr(c, 0xC1, 0), 0);
    c.run(10, {{0xC0, 0, 3}});
    EXPECT_EQ(rd(c, 0xC1), 30u);
}

TEST(SimCounting, EventDeliversOneOccurrencePerCycle) {
    SimMachine m = intel_v3();
    SimCpu& c = m.cpu(0);
    const u64 base = evtsel::make(0xC0, 0, kOsEn);
    EXPECT_EQ(wr(c, 0x186, base | evtsel::cmask(1)), 0);
    EXPECT_EQ(wr(c, 0x187, base | evtsel::cmask(2)), 0);
    EXPECT_EQ(wr(c, 0x188, base | evtsel::EDGE), 0);
    EXPECT_EQ(wr(c, 0x189, evtsel::make(0x3C, 0, kOsEn)), 0);
    c.instructions(5);
    EXPECT_EQ(rd(c, 0xC1), 5u);
    EXPECT_EQ(rd(c, 0xC2), 0u);
    EXPECT_EQ(rd(c, 0xC3), 1u);
    EXPECT_EQ(rd(c, 0xC4), 0u);  // event() does not advance the core clock
}

TEST(SimCounting, EqComparesForEqualityWhereEnumerated) {
    SimMachine m = intel_v6();
    SimCpu& c = m.cpu(0);
    EXPECT_EQ(wr(c, 0x186, evtsel::make(0xC0, 0, kOsEn) | evtsel::cmask(3) | evtsel::EQ), 0);
    c.run(10, {{0xC0, 0, 3}});
    c.run(10, {{0xC0, 0, 4}});
    EXPECT_EQ(rd(c, 0xC1), 10u);
}

TEST(SimCounting, Umask2ExtendsTheUnitMask) {
    SimMachine m = intel_v6();
    SimCpu& c = m.cpu(0);
    EXPECT_EQ(wr(c, 0x186, evtsel::make(0xD0, 0x21, kOsEn) | evtsel::umask2(0x01)), 0);
    c.event(0xD0, 0x21, 7);
    EXPECT_EQ(rd(c, 0xC1), 0u);
    c.event(0xD0, 0x0121, 7);
    EXPECT_EQ(rd(c, 0xC1), 7u);
}

TEST(SimCounting, OverflowWrapsAtTheWidthAndSetsStatus) {
    SimMachine m = intel_v4_goldmont_plus();
    SimCpu& c = m.cpu(0);
    EXPECT_EQ(wr(c, 0x186, kInstOs), 0);
    EXPECT_EQ(wr(c, 0x4C1, 0xFFFFFFFFFFFEull), 0);
    c.instructions(1);
    EXPECT_EQ(rd(c, 0xC1), 0xFFFFFFFFFFFFull);
    EXPECT_EQ(rd(c, 0x38E), 0u);
    c.instructions(3);
    EXPECT_EQ(rd(c, 0xC1), 2u);
    EXPECT_EQ(rd(c, 0x38E), 1u);
    EXPECT_EQ(c.pmi_count(), 0u);
    // Fixed counter 1 overflow: status bit 33, and a PMI with its PMI bit.
    EXPECT_EQ(wr(c, 0x38F, 0xF | (0x7ull << 32)), 0);
    EXPECT_EQ(wr(c, 0x38D, 0x0B0), 0);
    EXPECT_EQ(wr(c, 0x30A, 0xFFFFFFFFFFF0ull), 0);
    c.cycles(0x20);
    EXPECT_EQ(rd(c, 0x30A), 0x10u);
    EXPECT_EQ(rd(c, 0x38E), (1ull << 33) | 1);
    EXPECT_EQ(c.pmi_count(), 1u);
    // STATUS_RESET clears, STATUS_SET sets (v4).
    EXPECT_EQ(wr(c, 0x390, 1), 0);
    EXPECT_EQ(rd(c, 0x38E), 1ull << 33);
    EXPECT_EQ(wr(c, 0x391, (1ull << 62) | 4), 0);
    EXPECT_EQ(rd(c, 0x38E), (1ull << 62) | (1ull << 33) | 4);
    EXPECT_EQ(wr(c, 0x390, ~0ull & c.peek(0x38E)), 0);
    EXPECT_EQ(rd(c, 0x38E), 0u);
    EXPECT_EQ(rd(c, 0x390), 0u);
}

TEST(SimCounting, PmiOnGpOverflowWithInt) {
    SimMachine m = intel_v3();
    SimCpu& c = m.cpu(0);
    EXPECT_EQ(wr(c, 0x186, kInstOs | evtsel::INT), 0);
    EXPECT_EQ(wr(c, 0xC1, 0xFFFFFFFF), 0);  // -1 legacy write: all 48 bits set
    c.instructions(1);
    EXPECT_EQ(rd(c, 0xC1), 0u);
    EXPECT_EQ(rd(c, 0x38E), 1u);
    EXPECT_EQ(c.pmi_count(), 1u);
}

TEST(SimCounting, Version1OverflowJustWraps) {
    SimMachine m = intel_v1();
    SimCpu& c = m.cpu(0);
    EXPECT_EQ(wr(c, 0x186, kInstOs), 0);
    EXPECT_EQ(wr(c, 0xC1, 0xFFFFFFFF), 0);
    EXPECT_EQ(rd(c, 0xC1), 0xFFFFFFFFFFull);
    c.instructions(2);
    EXPECT_EQ(rd(c, 0xC1), 1u);
}

TEST(SimCounting, GlobalInUse) {
    SimMachine m = intel_v4_goldmont_plus();
    SimCpu& c = m.cpu(0);
    EXPECT_EQ(rd(c, 0x392), 0u);
    EXPECT_EQ(wr(c, 0x188, evtsel::make(0x3C, 0, 0)), 0);  // event select != 0 is "in use"
    EXPECT_EQ(wr(c, 0x38D, 0x200), 0);
    EXPECT_EQ(rd(c, 0x392), (1ull << 34) | (1ull << 2));
    EXPECT_EQ(wr(c, 0x38D, 0x208), 0);  // PMI of fixed 0
    EXPECT_EQ(rd(c, 0x392), (1ull << 63) | (1ull << 34) | (1ull << 2));
}

TEST(SimCounting, Conroe) {
    SimMachine m = intel_v2_conroe();
    SimCpu& c = m.cpu(0);
    EXPECT_EQ(c.cpuid(0xA, 0).edx, 0u);   // CPUID says no fixed counters ...
    EXPECT_EQ(c.pmu().fixed_mask, 0x7u);  // ... the hardware has three
    EXPECT_EQ(wr(c, 0x38F, 0x7ull << 32), 0);
    EXPECT_EQ(wr(c, 0x38D, 0x1), 0);
    c.instructions(9);
    EXPECT_EQ(rd(c, 0x309), 9u);
    EXPECT_EQ(wr(c, 0x309, 0x10000000000ull), kVectorGP);  // 40 bits
}

// ---------------------------------------------------------------- RDPMC

TEST(SimRdpmc, GpAndFixedIndices) {
    SimMachine m = intel_v4_goldmont_plus();
    SimCpu& c = m.cpu(0);
    EXPECT_EQ(wr(c, 0x4C4, 44), 0);
    EXPECT_EQ(wr(c, 0x30B, 33), 0);
    EXPECT_EQ(c.rdpmc(3).value(), 44u);
    EXPECT_EQ(c.rdpmc(0x40000002).value(), 33u);
    EXPECT_EQ(vec_of(c.rdpmc(4)), kVectorGP);
    Result<u64> r = c.rdpmc(0x40000005);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, Errc::fault);
    EXPECT_STREQ(r.error().msg, "RDPMC 0x40000005 raised #GP (general protection)");
    EXPECT_EQ(vec_of(c.rdpmc(0x80000000)), kVectorGP);
    EXPECT_EQ(vec_of(c.rdpmc(0x20000000)), kVectorGP);
    SimMachine v1 = intel_v1();
    EXPECT_EQ(vec_of(v1.cpu(0).rdpmc(0x40000000)), kVectorGP);
    SimMachine v6 = intel_v6();
    EXPECT_EQ(vec_of(v6.cpu(0).rdpmc(0x40000003)), kVectorGP);
    EXPECT_EQ(vec_of(v6.cpu(0).rdpmc(0x40000004)), 0);
    EXPECT_EQ(vec_of(v6.cpu(0).rdpmc(9)), 0);
}

TEST(SimRdpmc, UserModeNeedsCr4PceAndTcgRaisesUd) {
    SimMachine m = intel_v3();
    SimCpu& c = m.cpu(0);
    c.set_cpl(3);
    EXPECT_EQ(vec_of(c.rdpmc(0)), kVectorGP);
    c.set_cr4_pce(true);
    EXPECT_EQ(vec_of(c.rdpmc(0)), 0);
    c.set_rdpmc_ud(true);
    Result<u64> r = c.rdpmc(0);
    EXPECT_EQ(vec_of(r), kVectorUD);
    EXPECT_STREQ(r.error().msg, "RDPMC 0x0 raised #UD (invalid opcode)");
}

// ---------------------------------------------------------------- fault injection, log, state

TEST(SimFaults, NthWrmsrFaultsOnceAndChangesNothing) {
    SimMachine m = intel_v4_goldmont_plus();
    SimCpu& c = m.cpu(0);
    c.fail_nth_wrmsr(2);
    EXPECT_EQ(wr(c, 0x186, kInstOs), 0);
    Status s = c.wrmsr(0x187, kInstOs);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.error().vector, kVectorGP);
    EXPECT_STREQ(s.error().msg,
                 "WRMSR 0x187 <- 0x4200c0 raised #GP (general protection): the CPU rejects this MSR or value");
    EXPECT_EQ(rd(c, 0x187), 0u);
    EXPECT_EQ(wr(c, 0x187, kInstOs), 0);
    EXPECT_EQ(rd(c, 0x187), kInstOs);
    ASSERT_EQ(c.writes().size(), 3u);
    EXPECT_TRUE(c.writes()[1].injected);
    EXPECT_EQ(c.writes()[1].vector, kVectorGP);
}

TEST(SimFaults, EveryWriteToOneMsrAndMachineWideCountdown) {
    SimMachine m = intel_v3();
    m.cpu(1).fail_wrmsr_to(0x38F);
    EXPECT_EQ(wr(m.cpu(1), 0x38F, 0), kVectorGP);
    EXPECT_EQ(wr(m.cpu(1), 0x38F, 0), kVectorGP);
    EXPECT_EQ(wr(m.cpu(0), 0x38F, 0), 0);
    m.cpu(1).fail_rdmsr_to(0xC1, kVectorUD);
    EXPECT_EQ(vec_of(m.cpu(1).rdmsr(0xC1)), kVectorUD);
    m.cpu(1).clear_faults();
    EXPECT_EQ(wr(m.cpu(1), 0x38F, 0), 0);
    EXPECT_EQ(vec_of(m.cpu(1).rdmsr(0xC1)), 0);
    m.fail_nth_wrmsr(3);
    EXPECT_EQ(wr(m.cpu(0), 0x186, 0), 0);
    EXPECT_EQ(wr(m.cpu(2), 0x186, 0), 0);
    EXPECT_EQ(wr(m.cpu(3), 0x186, 0), kVectorGP);
    EXPECT_EQ(wr(m.cpu(0), 0x186, 0), 0);
}

TEST(SimLog, RecordsEveryAccessInOrder) {
    SimMachine m = intel_v3();
    SimCpu& c = m.cpu(2);
    EXPECT_EQ(wr(c, 0x186, 0), 0);
    EXPECT_EQ(wr(c, 0xC1, 0), 0);
    EXPECT_EQ(wr(m.cpu(1), 0x186, kInstOs), 0);
    EXPECT_EQ(wr(c, 0x186, kInstOs), 0);
    EXPECT_EQ(vec_of(c.rdmsr(0xC5)), kVectorGP);
    EXPECT_EQ(c.rdpmc(0).value(), 0u);
    ASSERT_EQ(c.log().size(), 5u);
    EXPECT_EQ(describe(c.log()[0]), "#1 cpu2 WRMSR 0x186 <- 0x0");
    EXPECT_EQ(describe(c.log()[2]), "#4 cpu2 WRMSR 0x186 <- 0x4200c0");
    EXPECT_EQ(describe(c.log()[3]), "#5 cpu2 RDMSR 0xc5 -> 0x0 #GP");
    EXPECT_EQ(describe(c.log()[4]), "#6 cpu2 RDPMC 0x0 -> 0x0");
    std::vector<LogEntry> all = m.log_all();
    ASSERT_EQ(all.size(), 6u);
    EXPECT_EQ(all[2].cpu, 1u);
    EXPECT_EQ(all[2].seq, 3u);
    m.clear_logs();
    EXPECT_TRUE(m.log_all().empty());
}

TEST(SimState, SnapshotListsEveryPmuMsrAndDiffs) {
    SimMachine m = intel_v4_goldmont_plus();
    SimCpu& c = m.cpu(0);
    PmuState before = c.pmu_state();
    EXPECT_EQ(before.size(), 15u);  // 4 PMC + 4 PERFEVTSEL + 3 FIXED + FIXED_CTRL, CTRL, STATUS, INUSE
    EXPECT_EQ(before.at(0x38F), 0xFu);
    EXPECT_EQ(diff_state(before, c.pmu_state()), "");
    EXPECT_EQ(wr(c, 0x186, kInstOs), 0);
    EXPECT_EQ(diff_state(before, c.pmu_state()), "0x186: 0x0 -> 0x4200c0\n0x392: 0x0 -> 0x1\n");
    EXPECT_EQ(wr(c, 0x186, 0), 0);
    EXPECT_EQ(c.pmu_state(), before);
}

TEST(SimState, PeekPokeBypassTheLogAndTheChecks) {
    SimMachine m = intel_v3();
    SimCpu& c = m.cpu(0);
    c.poke(0x186, kInstOs);  // e.g. firmware left a counter running
    c.poke(0xC1, 0xFFFFFFFFFFFFFFFFull);
    EXPECT_EQ(c.peek(0xC1), 0xFFFFFFFFFFFFull);
    c.poke(0x38E, 0x3);
    EXPECT_EQ(c.peek(0x38E), 0x3u);
    c.define_msr(0x1234, 77, false);
    EXPECT_EQ(rd(c, 0x1234), 77u);
    EXPECT_EQ(wr(c, 0x1234, 1), kVectorGP);
    EXPECT_EQ(c.log().size(), 2u);
}

// ---------------------------------------------------------------- the machine

namespace {
struct Probe {
    sim::SimMachine* m;
    u32 seen = 99;
    Status nested;
};
void probe_fn(void* p) {
    auto* pr = static_cast<Probe*>(p);
    pr->seen = pr->m->current_cpu();
    pr->nested = pr->m->run_on_cpu(
        0, [](void*) {}, nullptr);
}
}  // namespace

TEST(SimMachineTest, RunOnCpuSwitchesAndRestoresTheCurrentCpu) {
    SimMachine m = intel_v3();
    EXPECT_EQ(m.current_cpu(), 0u);
    Probe p{&m, 99, {}};
    ASSERT_TRUE(m.run_on_cpu(2, probe_fn, &p).ok());
    EXPECT_EQ(p.seen, 2u);
    EXPECT_EQ(m.current_cpu(), 0u);
    ASSERT_FALSE(p.nested.ok());
    EXPECT_EQ(p.nested.error().code, Errc::internal);
    EXPECT_STREQ(p.nested.error().msg, "run_on_cpu(0) called on CPU 2: MP Services may only be used from the BSP");
    // The BSP runs the function itself.
    Probe q{&m, 99, {}};
    ASSERT_TRUE(m.run_on_cpu(0, probe_fn, &q).ok());
    EXPECT_EQ(q.seen, 0u);
    EXPECT_TRUE(q.nested.ok());
}

TEST(SimMachineTest, RunOnCpuErrorsReadLikeTheEfiOnes) {
    SimMachine m = intel_v3();
    m.cpu(1).set_enabled(false);
    m.cpu(3).set_unreachable();
    Probe p{&m, 99, {}};
    Status s = m.run_on_cpu(4, probe_fn, &p);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.error().code, Errc::invalid_argument);
    EXPECT_STREQ(s.error().msg, "no logical processor 4 (there are 4)");
    s = m.run_on_cpu(1, probe_fn, &p);
    EXPECT_EQ(s.error().code, Errc::unsupported);
    EXPECT_STREQ(s.error().msg, "logical processor 1 is disabled by the firmware");
    s = m.run_on_cpu(3, probe_fn, &p);
    EXPECT_EQ(s.error().code, Errc::io);
    EXPECT_STREQ(s.error().msg, "MP Services StartupThisAP(CPU 3) failed: EFI_TIMEOUT");
    EXPECT_EQ(p.seen, 99u);
    EXPECT_STREQ(m.topology(9).error().msg, "no logical processor 9");
}

TEST(SimMachineTest, HwCallsActOnTheCurrentCpu) {
    SimMachine m = intel_v3();
    m.on(3, [&] { ASSERT_TRUE(m.wrmsr(0x186, kInstOs).ok()); });
    m.cpu(3).instructions(4);
    EXPECT_EQ(m.cpu(3).peek(0xC1), 4u);
    EXPECT_EQ(m.cpu(0).peek(0x186), 0u);
    EXPECT_EQ(m.cpu(0).log().size(), 0u);
    EXPECT_EQ(m.cpuid(1, 0).ebx >> 24, 0u);
    m.on(3, [&] { EXPECT_EQ(m.cpuid(1, 0).ebx >> 24, 3u); });
}

TEST(SimMachineTest, Topologies) {
    SimMachine v3 = intel_v3(4);  // 2 cores x 2 threads
    EXPECT_EQ(v3.cpu(3).topology().apic_id, 3u);
    EXPECT_EQ(v3.cpu(3).topology().core, 1u);
    EXPECT_EQ(v3.cpu(3).topology().thread, 1u);
    EXPECT_TRUE(v3.cpu(0).topology().bsp);
    EXPECT_FALSE(v3.cpu(1).topology().bsp);
    SimMachine h = intel_hybrid();
    EXPECT_EQ(h.size(), 8u);
    EXPECT_EQ(h.cpu(3).topology().apic_id, 3u);
    EXPECT_EQ(h.cpu(4).topology().apic_id, 8u);
    EXPECT_EQ(h.cpu(7).topology().apic_id, 14u);
    EXPECT_EQ(h.cpu(0).pmu().gp_mask, 0xFFu);
    EXPECT_EQ(h.cpu(7).pmu().gp_mask, 0x3Fu);
    EXPECT_EQ(h.cpu(0).cpuid(0x1A, 0).eax >> 24, 0x40u);
    EXPECT_EQ(h.cpu(7).cpuid(0x1A, 0).eax >> 24, 0x20u);
}

TEST(SimMachineTest, FromSnapshotsDerivesTopologyFromLeaf0B) {
    std::vector<CpuidSnapshot> snaps;
    IntelCpuidSpec sp;
    sp.leaf_0a = {0x07300404, 0, 0, 0x8603};
    TopoSpec t{2, 2, 2};
    for (u32 i = 0; i < 8; ++i) snaps.push_back(intel_snapshot(sp, i, t));
    SimMachine m = SimMachine::from_snapshots(snaps, 0x2000);
    ASSERT_EQ(m.size(), 8u);
    const CpuTopology& c5 = m.cpu(5).topology();
    EXPECT_EQ(c5.apic_id, 5u);
    EXPECT_EQ(c5.package, 1u);
    EXPECT_EQ(c5.core, 0u);
    EXPECT_EQ(c5.thread, 1u);
    EXPECT_TRUE(m.cpu(0).topology().bsp);
    EXPECT_TRUE(m.cpu(5).msr_exists(0x4C1));
}

// ---------------------------------------------------------------- AMD and QEMU TCG

TEST(SimAmd, PerfCtrExtCoreAndPerfMonV2) {
    SimMachine m = amd_zen(2, true);
    SimCpu& c = m.cpu(1);
    EXPECT_EQ(c.pmu().kind, PmuLayout::Kind::amd);
    EXPECT_EQ(c.pmu().amd_counters, 6u);
    for (u32 msr : {0xC0010000u, 0xC0010007u, 0xC0010200u, 0xC001020Bu, 0xC0000300u, 0xC0000303u})
        EXPECT_TRUE(c.msr_exists(msr)) << std::hex << msr;
    for (u32 msr : {0xC0010008u, 0xC001020Cu, 0xC0000304u, 0xC1u, 0x186u, 0x38Fu})
        EXPECT_FALSE(c.msr_exists(msr)) << msr;
    EXPECT_EQ(rd(c, 0xC0000301), 0x3Fu);  // reset: all counters globally enabled
    // The legacy addresses alias counters 0-3.
    EXPECT_EQ(wr(c, 0xC0010000, evtsel::make(0xC0, 0, kOsEn)), 0);
    EXPECT_EQ(rd(c, 0xC0010200), evtsel::make(0xC0, 0, kOsEn));
    c.instructions(12);
    EXPECT_EQ(rd(c, 0xC0010201), 12u);
    EXPECT_EQ(rd(c, 0xC0010004), 12u);
    EXPECT_EQ(c.rdpmc(0).value(), 12u);
    EXPECT_EQ(vec_of(c.rdpmc(6)), kVectorGP);
    // 12-bit event select: bits 35:32 are event[11:8].
    EXPECT_EQ(wr(c, 0xC001020A, evtsel::make(0xC0, 0, kOsEn) | (0x1ull << 32)), 0);
    c.event(0x1C0, 0, 5);
    EXPECT_EQ(rd(c, 0xC001020B), 5u);
    EXPECT_EQ(wr(c, 0xC0010200, evtsel::ANY), kVectorGP);  // bit 21 reserved on AMD
    // Global control gates; overflow at 48 bits sets the global status.
    EXPECT_EQ(wr(c, 0xC0000301, 0x3E), 0);
    c.instructions(1);
    EXPECT_EQ(rd(c, 0xC0010201), 12u);
    EXPECT_EQ(wr(c, 0xC0000301, 0x3F), 0);
    EXPECT_EQ(wr(c, 0xC0010201, 0xFFFFFFFFFFFFull), 0);
    c.instructions(2);
    EXPECT_EQ(rd(c, 0xC0010201), 1u);
    EXPECT_EQ(rd(c, 0xC0000300), 1u);
    EXPECT_EQ(wr(c, 0xC0000300, 0), kVectorGP);
    EXPECT_EQ(wr(c, 0xC0000302, 1), 0);
    EXPECT_EQ(rd(c, 0xC0000300), 0u);
    EXPECT_EQ(wr(c, 0xC0000303, 0x20), 0);
    EXPECT_EQ(rd(c, 0xC0000300), 0x20u);
    EXPECT_EQ(c.pmu_state().size(), 14u);
}

TEST(SimAmd, WithoutPerfMonV2NoGlobalControls) {
    SimMachine m = amd_zen(1, false);
    SimCpu& c = m.cpu(0);
    EXPECT_FALSE(c.msr_exists(0xC0000301));
    EXPECT_EQ(wr(c, 0xC0010202, evtsel::make(0x76, 0, kOsEn)), 0);
    c.cycles(9);
    c.event(0x76, 0, 1);
    EXPECT_EQ(rd(c, 0xC0010203), 1u);
}

TEST(SimQemuTcg, NoPmuUnknownMsrsReadZeroRdpmcUd) {
    SimMachine m = qemu_tcg(4);
    SimCpu& c = m.cpu(2);
    EXPECT_EQ(c.pmu().kind, PmuLayout::Kind::none);
    EXPECT_FALSE(c.msr_exists(0xC0010000));
    EXPECT_EQ(wr(c, 0xC0010000, evtsel::make(0x76, 0, kOsEn)), 0);  // swallowed
    EXPECT_EQ(rd(c, 0xC0010000), 0u);
    EXPECT_EQ(wr(c, 0x186, kInstOs), 0);
    c.instructions(10);
    EXPECT_EQ(rd(c, 0xC1), 0u);
    EXPECT_EQ(rd(c, 0x345), 0u);
    EXPECT_EQ(vec_of(c.rdpmc(0)), kVectorUD);
    EXPECT_EQ(wr(c, 0x6E1, 0xFFFFFFFF00000000ull), kVectorGP);
    EXPECT_EQ(c.cpuid(0, 0).ebx, 0x68747541u);  // AuthenticAMD
    EXPECT_EQ(c.cpuid(1, 0).eax, 0x00060FB1u);
    EXPECT_EQ(c.cpuid(1, 0).ecx >> 31, 1u);  // hypervisor
    SimMachine i = qemu_tcg_intel(2);
    EXPECT_EQ(i.cpu(1).cpuid(0xA, 0), (CpuidRegs{}));
    EXPECT_EQ(i.cpu(1).pmu().kind, PmuLayout::Kind::none);
}

// ---------------------------------------------------------------- programming rules

TEST(SimRules, CounterWriteWhileEnabledIsRecorded) {
    SimMachine m = intel_v4_goldmont_plus();
    SimCpu& c = m.cpu(1);
    EXPECT_EQ(wr(c, 0x186, kInstOs), 0);
    EXPECT_EQ(wr(c, 0xC1, 0), 0);  // completes, as on hardware, but breaks the SDM rule
    EXPECT_EQ(wr(c, 0x4C1, 5), 0);
    ASSERT_EQ(c.violations().size(), 2u);
    EXPECT_EQ(c.violations()[0],
              "CPU 1: WRMSR 0xc1 while IA32_PERFEVTSEL0.EN = 1 (clear EN before writing the counter)");
    EXPECT_EQ(c.violations()[1],
              "CPU 1: WRMSR 0x4c1 while IA32_PERFEVTSEL0.EN = 1 (clear EN before writing the counter)");
    c.clear_violations();
    EXPECT_EQ(wr(c, 0x186, kInstOs & ~evtsel::EN), 0);
    EXPECT_EQ(wr(c, 0xC1, 0), 0);
    EXPECT_EQ(wr(c, 0x187, kInstOs), 0);  // another counter enabled does not matter
    EXPECT_EQ(wr(c, 0xC1, 0), 0);
    EXPECT_TRUE(c.violations().empty());
}

namespace {

// A reference "program one counter, restore on failure" sequence written against
// the simulator only: how pmulab's programming code is meant to be checked.
Status program_counter0(SimCpu& c, u64 sel) {
    PMULAB_TRY(c.wrmsr(0x38F, 0));
    PMULAB_TRY(c.wrmsr(0x186, sel & ~evtsel::EN));
    PMULAB_TRY(c.wrmsr(0xC1, 0));
    PMULAB_TRY(c.wrmsr(0x186, sel));
    PMULAB_TRY(c.wrmsr(0x38F, 1));
    return pmulab::ok_status();
}

void restore(SimCpu& c, const PmuState& s) {
    (void)c.wrmsr(0x38F, 0);
    for (const auto& [msr, v] : s)
        if (msr >= 0x186 && msr < 0x186 + 32) (void)c.wrmsr(msr, v & ~evtsel::EN);
    for (const auto& [msr, v] : s)
        if ((msr >= 0xC1 && msr < 0xC1 + 32)) (void)c.wrmsr(msr + 0x400, v);  // full width via IA32_A_PMCx
        else if (msr >= 0x309 && msr < 0x319) (void)c.wrmsr(msr, v);
    for (const auto& [msr, v] : s)
        if ((msr >= 0x186 && msr < 0x186 + 32) || msr == 0x38D) (void)c.wrmsr(msr, v);
    (void)c.wrmsr(0x38F, s.at(0x38F));
}

}  // namespace

TEST(SimRules, FaultAtEveryStepThenRestoreLeavesTheStateAsItWas) {
    for (u64 k = 1; k <= 5; ++k) {
        SimMachine m = intel_v4_goldmont_plus(1);
        SimCpu& c = m.cpu(0);
        c.poke(0x187, evtsel::make(0x3C, 0, kOsEn));  // state left by someone else
        c.poke(0xC2, 0x123456789ABull);
        c.poke(0x38D, 0x3);
        PmuState saved = c.pmu_state();
        c.fail_nth_wrmsr(k);
        Status s = program_counter0(c, kInstOs);
        ASSERT_FALSE(s.ok()) << "k=" << k;
        EXPECT_EQ(s.error().vector, kVectorGP);
        restore(c, saved);
        EXPECT_EQ(diff_state(saved, c.pmu_state()), "") << "k=" << k;
        EXPECT_TRUE(c.violations().empty()) << c.violations()[0];
    }
    SimMachine m = intel_v4_goldmont_plus(1);
    ASSERT_TRUE(program_counter0(m.cpu(0), kInstOs).ok());
    m.cpu(0).instructions(3);
    EXPECT_EQ(m.cpu(0).peek(0xC1), 3u);
    EXPECT_TRUE(m.cpu(0).violations().empty());
}

// ---------------------------------------------------------------- CPUID capture, TSC

TEST(SimCpuid, PmulabCaptureReadsBackTheSnapshot) {
    std::vector<SimMachine> ms;
    ms.push_back(intel_v1());
    ms.push_back(intel_v4_goldmont_plus());
    ms.push_back(intel_v6());
    ms.push_back(intel_hybrid());
    ms.push_back(qemu_tcg());
    ms.push_back(amd_zen());
    for (SimMachine& m : ms) {
        u32 last = m.size() - 1;
        m.on(last, [&] {
            CpuidSnapshot got;
            pmulab::capture_cpuid(m, &got);
            const CpuidSnapshot& want = m.cpu(last).snapshot();
            for (u32 i = 0; i < got.count; ++i) {
                const pmulab::CpuidEntry& e = got.entries[i];
                EXPECT_EQ(e.regs, want.get(e.leaf, e.subleaf)) << std::hex << e.leaf << "." << e.subleaf;
            }
            // Every leaf the decoder uses and the snapshot has was captured.
            for (u32 i = 0; i < want.count; ++i) {
                const pmulab::CpuidEntry& e = want.entries[i];
                if (pmulab::cpuid_subleaf_is_captured(e.leaf, e.subleaf))
                    EXPECT_TRUE(got.has(e.leaf, e.subleaf)) << std::hex << e.leaf << "." << e.subleaf;
            }
        });
    }
}

TEST(SimTsc, RdtscStepAndReferenceCycles) {
    SimMachine m = intel_v3();
    SimCpu& c = m.cpu(0);
    EXPECT_EQ(m.rdtsc(), 0u);
    EXPECT_EQ(m.rdtsc(), 0u);  // time stands still by default
    c.set_rdtsc_step(100);
    EXPECT_EQ(m.rdtsc(), 0u);
    EXPECT_EQ(m.rdtsc(), 100u);
    c.ref_cycles(50);
    EXPECT_EQ(m.rdtsc(), 250u);
    EXPECT_EQ(m.cpu(1).tsc(), 0u);  // every CPU has its own TSC
}

// ---- the executor's API: a batch of retired instructions, in each family's own events ----

TEST(SimRetire, EachPmuFamilyCountsItsOwnEvents) {
    const u64 os = evtsel::OS | evtsel::EN;
    // Intel: C0H instructions, C4H branches; one cycle (3CH) and one TSC tick per instruction.
    SimMachine intel = intel_v3();
    SimCpu& i = intel.cpu(0);
    ASSERT_EQ(wr(i, reg::PERFEVTSEL0, evtsel::make(0xC0, 0, os)), 0);
    ASSERT_EQ(wr(i, reg::PERFEVTSEL0 + 1, evtsel::make(0xC4, 0, os)), 0);
    ASSERT_EQ(wr(i, reg::PERFEVTSEL0 + 2, evtsel::make(0x3C, 0, os)), 0);
    u64 tsc = i.tsc();
    i.retire({10, 3});
    EXPECT_EQ(rd(i, reg::PMC0), 10u);
    EXPECT_EQ(rd(i, reg::PMC0 + 1), 3u);
    EXPECT_EQ(rd(i, reg::PMC0 + 2), 10u);
    EXPECT_EQ(i.tsc(), tsc + 10);
    // AMD: C0H instructions, 76H cycles, C2H branches.
    SimMachine amd = amd_zen4();
    SimCpu& a = amd.cpu(0);
    ASSERT_EQ(wr(a, reg::AMD_EXT_CTL0, evtsel::make(0xC0, 0, os)), 0);
    ASSERT_EQ(wr(a, reg::AMD_EXT_CTL0 + 2, evtsel::make(0x76, 0, os)), 0);
    ASSERT_EQ(wr(a, reg::AMD_EXT_CTL0 + 4, evtsel::make(0xC2, 0, os)), 0);
    a.retire({10, 3});
    EXPECT_EQ(rd(a, reg::AMD_EXT_CTL0 + 1), 10u);
    EXPECT_EQ(rd(a, reg::AMD_EXT_CTL0 + 3), 10u);
    EXPECT_EQ(rd(a, reg::AMD_EXT_CTL0 + 5), 3u);
    // NetBurst: instr_retired NBOGUSNTAG on IQ counter 0 (CRU_ESCR0, CCCR ESCR select 4).
    SimMachine p4 = netburst_p4();
    SimCpu& n = p4.cpu(0);
    ASSERT_EQ(wr(n, nb::CRU_ESCR0, nb::escr(0x02, nb::NBOGUSNTAG, nb::OS)), 0);
    ASSERT_EQ(wr(n, nb::CCCR0 + nb::IQ0, nb::ENABLE | nb::escr_select(4) | nb::THREAD_ANY), 0);
    n.retire({10, 3});
    EXPECT_EQ(rd(n, nb::COUNTER0 + nb::IQ0), 10u);
    // No PMU: only time passes.
    SimMachine tcg = qemu_tcg(1);
    tsc = tcg.cpu(0).tsc();
    tcg.cpu(0).retire({10, 3});
    EXPECT_EQ(tcg.cpu(0).tsc(), tsc + 10);
}
