// The simulated NetBurst PMU's rules, one by one (sim_netburst.h): the specification of
// the oracle that pmulab's NetBurst backend is tested against. Each expectation is an SDM
// rule (Vol. 3B §18.15, Table 18-63; Vol. 2B RDPMC) stated as exact register values.
#include <gtest/gtest.h>

#include "sim/sim_netburst.h"

using namespace sim;
using pmulab::kVectorGP;

namespace {

u8 vec_of(const Status& s) { return s.ok() ? 0 : s.error().vector; }
u8 vec_of(const Result<u64>& r) { return r.ok() ? 0 : r.error().vector; }
u8 wr(SimCpu& c, u32 msr, u64 v) { return vec_of(c.wrmsr(msr, v)); }
u64 rd(SimCpu& c, u32 msr) {
    Result<u64> r = c.rdmsr(msr);
    EXPECT_TRUE(r.ok()) << "RDMSR 0x" << std::hex << msr << ": " << r.error().msg;
    return r.ok() ? r.value() : ~u64(0);
}

constexpr u32 ctr(u32 i) { return nb::COUNTER0 + i; }
constexpr u32 cccr(u32 i) { return nb::CCCR0 + i; }

// instr_retired, non-bogus tagged and untagged, OS and USR (SDM Example 18-2 uses the
// same value with the T1 bits: 0400_0603H).
constexpr u64 kInstrEscr = nb::escr(0x02, nb::NBOGUSNTAG | nb::NBOGUSTAG, nb::OS | nb::USR);
static_assert(kInstrEscr == 0x0400060C);
constexpr u64 kUopsEscr = nb::escr(0x01, nb::NBOGUS, nb::OS | nb::USR);
// CCCR: enabled, ESCR select 4 (CRU_ESCR0/1 on the IQ counters), any thread.
constexpr u64 kCru = nb::ENABLE | nb::escr_select(4) | nb::THREAD_ANY;
static_assert(kCru == 0x39000);

}  // namespace

// ---------------------------------------------------------------- the machine

TEST(SimNetBurst, PrescottMachineFromTheRealDump) {
    SimMachine m = netburst_p4();
    SimCpu& c = m.cpu(0);
    EXPECT_EQ(c.cpuid(0, 0).eax, 5u);
    EXPECT_EQ(c.cpuid(1, 0), (CpuidRegs{0x00000F41, 0x00010800, 0x0000651D, 0xBFEBFBFF}));
    ASSERT_NE(c.netburst(), nullptr);
    EXPECT_EQ(c.netburst()->model(), 4u);
    EXPECT_FALSE(c.netburst()->ht());  // EDX[28] set, but one logical processor per package
    EXPECT_EQ(rd(c, 0x1A0), kPrescottMiscEnable);
    EXPECT_EQ((rd(c, 0x1A0) >> 7) & 1, 1u);          // performance monitoring available
    EXPECT_EQ(c.pmu().kind, PmuLayout::Kind::none);  // no architectural perfmon (max leaf 5)
}

TEST(SimNetBurst, HyperThreadingPackagesShareOneRegisterFile) {
    SimMachine m = netburst_p4(4, true);
    EXPECT_TRUE(m.cpu(0).netburst()->ht());
    EXPECT_EQ(m.cpu(0).cpuid(1, 0).ebx, 0x00020800u);
    EXPECT_EQ(m.cpu(1).cpuid(1, 0).ebx, 0x01020800u);  // initial APIC ID 1: thread 1 of package 0
    EXPECT_EQ(m.cpu(2).cpuid(1, 0).ebx, 0x02020800u);
    EXPECT_EQ(m.cpu(0).netburst(), m.cpu(1).netburst());
    EXPECT_NE(m.cpu(1).netburst(), m.cpu(2).netburst());
    EXPECT_EQ(m.cpu(1).netburst_thread(), 1u);
    EXPECT_EQ(m.cpu(1).topology().thread, 1u);
    EXPECT_EQ(m.cpu(3).topology().package, 1u);
    EXPECT_EQ(wr(m.cpu(0), nb::CRU_ESCR0, kInstrEscr), 0);
    EXPECT_EQ(rd(m.cpu(1), nb::CRU_ESCR0), kInstrEscr);  // the sibling sees the same ESCR
    EXPECT_EQ(rd(m.cpu(2), nb::CRU_ESCR0), 0u);          // another package does not
}

// ---------------------------------------------------------------- registers

TEST(SimNetBurst, RegistersExistAndAbsentOnesFault) {
    SimMachine m = netburst_p4();
    SimCpu& c = m.cpu(0);
    for (u32 i = 0; i < 18; ++i) {
        EXPECT_EQ(rd(c, ctr(i)), 0u);
        EXPECT_EQ(rd(c, cccr(i)), 0u);
    }
    unsigned escrs = 0;
    for (u32 a = nb::ESCR_FIRST; a <= nb::ESCR_LAST; ++a) escrs += c.rdmsr(a).ok();
    EXPECT_EQ(escrs, 43u);  // 45 in the SDM table less IQ_ESCR0/1 (models 01H-02H only)
    for (u32 a : {0x3BAu, 0x3BBu, 0x3BFu, 0x3C6u, 0x3C7u, 0x3CEu, 0x3D5u, 0x3DFu, 0x312u, 0x372u}) {
        EXPECT_EQ(vec_of(c.rdmsr(a)), kVectorGP) << std::hex << a;
        EXPECT_EQ(wr(c, a, 0), kVectorGP) << std::hex << a;
        EXPECT_FALSE(c.msr_exists(a)) << std::hex << a;
    }
    EXPECT_EQ(c.pmu_state().size(), 18u + 18u + 43u);
    EXPECT_EQ(c.log().back().vector, kVectorGP);  // faults are logged like every access
}

TEST(SimNetBurst, ReservedBitsFault) {
    SimMachine m = netburst_p4();
    SimCpu& c = m.cpu(0);
    // Counters: 40 bits.
    EXPECT_EQ(wr(c, ctr(0), 1ull << 40), kVectorGP);
    EXPECT_EQ(wr(c, ctr(0), 0xFFFFFFFFFFull), 0);
    EXPECT_EQ(rd(c, ctr(0)), 0xFFFFFFFFFFull);
    // ESCR: bits 63:31 reserved; T1_OS/T1_USR reserved without Hyper-Threading.
    EXPECT_EQ(wr(c, nb::CRU_ESCR0, 1ull << 31), kVectorGP);
    EXPECT_EQ(wr(c, nb::CRU_ESCR0, nb::T1_OS), kVectorGP);
    EXPECT_EQ(wr(c, nb::CRU_ESCR0, nb::T1_USR), kVectorGP);
    EXPECT_EQ(wr(c, nb::CRU_ESCR0, 0x7FFFFFFC), 0);
    // CCCR: 11:0, 29:28, 63:32 reserved; 27 (OVF_PMI_T1) without HT too; OVF writable.
    EXPECT_EQ(wr(c, cccr(0), 1), kVectorGP);
    EXPECT_EQ(wr(c, cccr(0), 1ull << 28), kVectorGP);
    EXPECT_EQ(wr(c, cccr(0), 1ull << 32), kVectorGP);
    EXPECT_EQ(wr(c, cccr(0), nb::OVF_PMI_T1), kVectorGP);
    EXPECT_EQ(wr(c, cccr(0), nb::EXT_CASCADE), kVectorGP);  // bit 11 only in the IQ CCCRs
    EXPECT_EQ(wr(c, cccr(nb::IQ0), nb::EXT_CASCADE), 0);    // extended cascading (model 04H)
    EXPECT_EQ(wr(c, cccr(0), nb::OVF | nb::CASCADE | 0x07FFF000), 0);
    EXPECT_EQ(rd(c, cccr(0)), 0xC7FFF000ull);
    SimMachine h = netburst_p4(2, true);
    EXPECT_EQ(wr(h.cpu(0), nb::CRU_ESCR0, nb::T1_OS | nb::T1_USR), 0);
    EXPECT_EQ(wr(h.cpu(0), cccr(0), nb::OVF_PMI_T1), 0);
}

// ---------------------------------------------------------------- counting

TEST(SimNetBurst, CountsOnlyWhenTheCccrIsEnabled) {
    SimMachine m = netburst_p4();
    SimCpu& c = m.cpu(0);
    ASSERT_EQ(wr(c, nb::CRU_ESCR0, kInstrEscr), 0);
    nb_event(c, nb::kInstrRetired, nb::NBOGUSNTAG, 10);  // an ESCR alone counts nothing
    EXPECT_EQ(rd(c, ctr(nb::IQ0)), 0u);
    ASSERT_EQ(wr(c, cccr(nb::IQ0), kCru), 0);
    ASSERT_EQ(wr(c, cccr(nb::IQ1), kCru), 0);
    ASSERT_EQ(wr(c, cccr(nb::IQ4), kCru), 0);
    ASSERT_EQ(wr(c, cccr(nb::IQ2), kCru), 0);  // select 4 on IQ_COUNTER2 is CRU_ESCR1 (still 0)
    nb_event(c, nb::kInstrRetired, nb::NBOGUSNTAG, 10);
    nb_event(c, nb::kInstrRetired, nb::NBOGUSTAG, 3);
    nb_event(c, nb::kInstrRetired, nb::BOGUSNTAG, 100);  // bogus: not selected
    EXPECT_EQ(rd(c, ctr(nb::IQ0)), 13u);
    EXPECT_EQ(rd(c, ctr(nb::IQ1)), 13u);  // CRU_ESCR0 feeds IQ_COUNTER0, 1 and 4
    EXPECT_EQ(rd(c, ctr(nb::IQ4)), 13u);
    EXPECT_EQ(rd(c, ctr(nb::IQ2)), 0u);
    ASSERT_EQ(wr(c, cccr(nb::IQ0), kCru & ~nb::ENABLE), 0);  // disabled: frozen
    nb_event(c, nb::kInstrRetired, nb::NBOGUSNTAG, 7);
    EXPECT_EQ(rd(c, ctr(nb::IQ0)), 13u);
    EXPECT_EQ(rd(c, ctr(nb::IQ1)), 20u);
}

TEST(SimNetBurst, AnEscrNotWiredToTheCounterCountsNothing) {
    SimMachine m = netburst_p4();
    SimCpu& c = m.cpu(0);
    // The instr_retired encoding in every ESCR a CCCR could name: only CRU_ESCR0/1 make it
    // instr_retired.
    ASSERT_EQ(wr(c, nb::CRU_ESCR0, kInstrEscr), 0);
    ASSERT_EQ(wr(c, 0x3AC, kInstrEscr), 0);
    ASSERT_EQ(wr(c, nb::CRU_ESCR2, kInstrEscr), 0);
    // MS_COUNTER0 has no ESCR with select 4 (MS_ESCR0 0, TC_ESCR0 1, TBPU_ESCR0 2).
    ASSERT_EQ(wr(c, cccr(nb::MS0), kCru), 0);
    // BPU_COUNTER0 select 4 is PMH_ESCR0: event 02H of the PMH is not instr_retired.
    ASSERT_EQ(wr(c, cccr(nb::BPU0), kCru), 0);
    // IQ_COUNTER1 select 5 is CRU_ESCR2: event 02H there is machine_clear.
    ASSERT_EQ(wr(c, cccr(nb::IQ1), nb::ENABLE | nb::escr_select(5) | nb::THREAD_ANY), 0);
    // IQ_COUNTER0 select 0 is IQ_ESCR0, which model 04H does not have.
    ASSERT_EQ(wr(c, cccr(nb::IQ0), nb::ENABLE | nb::escr_select(0) | nb::THREAD_ANY), 0);
    // IQ_COUNTER4 select 4: CRU_ESCR0, the right one.
    ASSERT_EQ(wr(c, cccr(nb::IQ4), kCru), 0);
    nb_event(c, nb::kInstrRetired, nb::NBOGUSNTAG, 50);
    EXPECT_EQ(rd(c, ctr(nb::MS0)), 0u);
    EXPECT_EQ(rd(c, ctr(nb::BPU0)), 0u);
    EXPECT_EQ(rd(c, ctr(nb::IQ1)), 0u);
    EXPECT_EQ(rd(c, ctr(nb::IQ0)), 0u);
    EXPECT_EQ(rd(c, ctr(nb::IQ4)), 50u);
    nb_event(c, nb::kMachineClear, nb::CLEAR, 4);
    EXPECT_EQ(rd(c, ctr(nb::IQ1)), 4u);  // what CRU_ESCR2 select 02H really counts
    EXPECT_EQ(rd(c, ctr(nb::IQ4)), 50u);
}

TEST(SimNetBurst, OsAndUsrFollowTheCpl) {
    SimMachine m = netburst_p4();
    SimCpu& c = m.cpu(0);
    ASSERT_EQ(wr(c, cccr(nb::IQ0), kCru), 0);
    ASSERT_EQ(wr(c, nb::CRU_ESCR0, nb::escr(0x02, nb::NBOGUSNTAG, nb::OS)), 0);
    nb_event(c, nb::kInstrRetired, nb::NBOGUSNTAG, 5);
    c.set_cpl(3);
    nb_event(c, nb::kInstrRetired, nb::NBOGUSNTAG, 7);
    EXPECT_EQ(rd(c, ctr(nb::IQ0)), 5u);
    ASSERT_EQ(wr(c, nb::CRU_ESCR0, nb::escr(0x02, nb::NBOGUSNTAG, nb::USR)), 0);
    nb_event(c, nb::kInstrRetired, nb::NBOGUSNTAG, 7);
    c.set_cpl(0);
    nb_event(c, nb::kInstrRetired, nb::NBOGUSNTAG, 11);
    EXPECT_EQ(rd(c, ctr(nb::IQ0)), 12u);
    // Neither OS nor USR: nothing at any CPL.
    ASSERT_EQ(wr(c, nb::CRU_ESCR0, nb::escr(0x02, nb::NBOGUSNTAG, 0)), 0);
    nb_event(c, nb::kInstrRetired, nb::NBOGUSNTAG, 9);
    c.set_cpl(3);
    nb_event(c, nb::kInstrRetired, nb::NBOGUSNTAG, 9);
    EXPECT_EQ(rd(c, ctr(nb::IQ0)), 12u);
}

TEST(SimNetBurst, EventMaskBitsSelectSubEvents) {
    SimMachine m = netburst_p4();
    SimCpu& c = m.cpu(0);
    ASSERT_EQ(wr(c, cccr(nb::IQ1), nb::ENABLE | nb::escr_select(5) | nb::THREAD_ANY), 0);  // CRU_ESCR2
    auto drive = [&] {
        nb_event(c, nb::kBranchRetired, nb::MMNP, 1);
        nb_event(c, nb::kBranchRetired, nb::MMNM, 2);
        nb_event(c, nb::kBranchRetired, nb::MMTP, 4);
        nb_event(c, nb::kBranchRetired, nb::MMTM, 8);
    };
    u64 total = 0;
    for (u16 mask : {nb::MMNP, nb::MMNM, nb::MMTP, nb::MMTM}) {
        ASSERT_EQ(wr(c, nb::CRU_ESCR2, nb::escr(0x06, mask, nb::OS | nb::USR)), 0);
        drive();
        total += mask;  // the drive has `bit` occurrences of the branch kind with mask `bit`
        EXPECT_EQ(rd(c, ctr(nb::IQ1)), total) << mask;
    }
    ASSERT_EQ(wr(c, nb::CRU_ESCR2, nb::escr(0x06, nb::MMNP | nb::MMTM, nb::OS | nb::USR)), 0);
    drive();
    EXPECT_EQ(rd(c, ctr(nb::IQ1)), total + 9);
    ASSERT_EQ(wr(c, nb::CRU_ESCR2, nb::escr(0x06, 0xF, nb::OS | nb::USR)), 0);
    drive();
    EXPECT_EQ(rd(c, ctr(nb::IQ1)), total + 9 + 15);
    // A mask bit the occurrences do not carry counts nothing.
    ASSERT_EQ(wr(c, nb::CRU_ESCR2, nb::escr(0x06, 0x10, nb::OS | nb::USR)), 0);
    drive();
    EXPECT_EQ(rd(c, ctr(nb::IQ1)), total + 24);
}

TEST(SimNetBurst, ThresholdCompareComplementAndEdgePerCycle) {
    SimMachine m = netburst_p4();
    SimCpu& c = m.cpu(0);
    ASSERT_EQ(wr(c, nb::CRU_ESCR0, kUopsEscr), 0);
    auto uops = [](u64 per_cycle) { return NbOccurrence{nb::kUopsRetired, nb::NBOGUS, per_cycle}; };
    auto count = [&](u64 extra, u64 cycles, u64 per_cycle) {
        EXPECT_EQ(wr(c, ctr(nb::IQ0), 0), 0);
        EXPECT_EQ(wr(c, cccr(nb::IQ0), kCru | extra), 0);
        nb_run(c, cycles, {uops(per_cycle)});
        return rd(c, ctr(nb::IQ0));
    };
    EXPECT_EQ(count(0, 10, 3), 30u);                                                // the input, every cycle
    EXPECT_EQ(count(0, 10, 20), 150u);                                              // capped at 15 per cycle
    EXPECT_EQ(count(nb::EDGE, 10, 3), 30u);                                         // edge needs compare
    EXPECT_EQ(count(nb::COMPLEMENT | nb::threshold(5), 10, 3), 30u);                // so do complement/threshold
    EXPECT_EQ(count(nb::COMPARE | nb::threshold(2), 10, 3), 10u);                   // 3 > 2: 1 per cycle
    EXPECT_EQ(count(nb::COMPARE | nb::threshold(3), 10, 3), 0u);                    // 3 > 3 never
    EXPECT_EQ(count(nb::COMPARE | nb::COMPLEMENT | nb::threshold(3), 10, 3), 10u);  // 3 <= 3
    EXPECT_EQ(count(nb::COMPARE | nb::COMPLEMENT | nb::threshold(2), 10, 3), 0u);
    // Complement counts the quiet cycles too (input 0 <= threshold).
    EXPECT_EQ(count(nb::COMPARE | nb::COMPLEMENT | nb::threshold(0), 7, 0), 7u);
    // Edge: one count per false-to-true transition, the state carried across runs.
    EXPECT_EQ(count(nb::COMPARE | nb::EDGE | nb::threshold(0), 10, 3), 1u);
    nb_run(c, 10, {uops(3)});
    EXPECT_EQ(rd(c, ctr(nb::IQ0)), 1u);
    nb_run(c, 5, {uops(0)});
    nb_run(c, 10, {uops(1)});
    EXPECT_EQ(rd(c, ctr(nb::IQ0)), 2u);
}

TEST(SimNetBurst, FortyBitWrapSetsTheStickyOvfFlag) {
    SimMachine m = netburst_p4();
    SimCpu& c = m.cpu(0);
    ASSERT_EQ(wr(c, nb::CRU_ESCR0, kInstrEscr), 0);
    ASSERT_EQ(wr(c, ctr(nb::IQ0), 0xFFFFFFFFFEull), 0);
    ASSERT_EQ(wr(c, cccr(nb::IQ0), kCru | nb::OVF_PMI_T0), 0);
    nb_event(c, nb::kInstrRetired, nb::NBOGUSNTAG, 1);
    EXPECT_EQ(rd(c, ctr(nb::IQ0)), 0xFFFFFFFFFFull);
    EXPECT_EQ(rd(c, cccr(nb::IQ0)), kCru | nb::OVF_PMI_T0);
    nb_event(c, nb::kInstrRetired, nb::NBOGUSNTAG, 4);
    EXPECT_EQ(rd(c, ctr(nb::IQ0)), 3u);
    EXPECT_EQ(rd(c, cccr(nb::IQ0)), kCru | nb::OVF_PMI_T0 | nb::OVF);
    EXPECT_EQ(c.netburst()->pmi_count(0), 1u);
    nb_event(c, nb::kInstrRetired, nb::NBOGUSNTAG, 4);  // sticky
    EXPECT_EQ(rd(c, cccr(nb::IQ0)) & nb::OVF, nb::OVF);
    ASSERT_EQ(wr(c, cccr(nb::IQ0), kCru), 0);  // software clears it
    nb_event(c, nb::kInstrRetired, nb::NBOGUSNTAG, 4);
    EXPECT_EQ(rd(c, cccr(nb::IQ0)), kCru);
    EXPECT_EQ(rd(c, ctr(nb::IQ0)), 11u);
    // FORCE_OVF: an overflow on every increment.
    ASSERT_EQ(wr(c, cccr(nb::IQ0), kCru | nb::FORCE_OVF | nb::OVF_PMI_T0), 0);
    nb_event(c, nb::kInstrRetired, nb::NBOGUSNTAG, 3);
    EXPECT_EQ(rd(c, cccr(nb::IQ0)) & nb::OVF, nb::OVF);
    EXPECT_EQ(rd(c, ctr(nb::IQ0)), 14u);
    EXPECT_EQ(c.netburst()->pmi_count(0), 4u);
}

TEST(SimNetBurst, CascadedCounterStartsWhenItsPartnerWraps) {
    SimMachine m = netburst_p4();
    SimCpu& c = m.cpu(0);
    // IQ_COUNTER0 counts instr_retired from 2^40 - 10; IQ_COUNTER2 (cascade, not enabled)
    // counts uops_retired through CRU_ESCR1 once IQ_COUNTER0 wraps.
    ASSERT_EQ(wr(c, nb::CRU_ESCR0, kInstrEscr), 0);
    ASSERT_EQ(wr(c, nb::CRU_ESCR1, kUopsEscr), 0);
    ASSERT_EQ(wr(c, ctr(nb::IQ0), (1ull << 40) - 10), 0);
    ASSERT_EQ(wr(c, cccr(nb::IQ0), kCru), 0);
    const u64 armed = nb::escr_select(4) | nb::THREAD_ANY | nb::CASCADE;
    ASSERT_EQ(wr(c, cccr(nb::IQ2), armed), 0);
    nb_run(c, 5, {{nb::kInstrRetired, nb::NBOGUSNTAG, 1}, {nb::kUopsRetired, nb::NBOGUS, 2}});
    EXPECT_EQ(rd(c, ctr(nb::IQ2)), 0u);  // armed, waiting
    nb_run(c, 95, {{nb::kInstrRetired, nb::NBOGUSNTAG, 1}, {nb::kUopsRetired, nb::NBOGUS, 2}});
    EXPECT_EQ(rd(c, ctr(nb::IQ0)), 90u);
    EXPECT_EQ(rd(c, cccr(nb::IQ0)), kCru | nb::OVF);
    EXPECT_EQ(rd(c, ctr(nb::IQ2)), 180u);                 // cycles 11-100, 2 uops each
    EXPECT_EQ(rd(c, cccr(nb::IQ2)), armed | nb::ENABLE);  // the hardware enabled it

    // BPU group: BPU_COUNTER0 wrapping starts BPU_COUNTER2 (global_power_events through
    // FSB_ESCR0 and FSB_ESCR1), not BPU_COUNTER1 or 3.
    const u64 running = nb::escr(0x13, nb::RUNNING, nb::OS | nb::USR);
    ASSERT_EQ(wr(c, nb::FSB_ESCR0, running), 0);
    ASSERT_EQ(wr(c, nb::FSB_ESCR1, running), 0);
    const u64 fsb = nb::escr_select(6) | nb::THREAD_ANY;
    ASSERT_EQ(wr(c, ctr(nb::BPU0), (1ull << 40) - 5), 0);
    ASSERT_EQ(wr(c, cccr(nb::BPU0), fsb | nb::ENABLE), 0);
    ASSERT_EQ(wr(c, cccr(nb::BPU2), fsb | nb::CASCADE), 0);
    ASSERT_EQ(wr(c, cccr(nb::BPU3), fsb | nb::CASCADE), 0);
    ASSERT_EQ(wr(c, cccr(nb::BPU1), fsb | nb::CASCADE), 0);
    nb_run(c, 20);
    EXPECT_EQ(rd(c, ctr(nb::BPU0)), 15u);
    EXPECT_EQ(rd(c, ctr(nb::BPU2)), 15u);  // cycles 6-20
    EXPECT_EQ(rd(c, ctr(nb::BPU3)), 0u);   // its partner is BPU_COUNTER1
    EXPECT_EQ(rd(c, ctr(nb::BPU1)), 0u);
}

TEST(SimNetBurst, IqCascadingFollowsTheSdmRestrictions) {
    // 12 <-> 14 and 13 <-> 15 in either order; 16 only from 14, 17 only from 15; 16 and
    // 17 start nothing (SDM §18.15.5.6, §18.15.5.7).
    EXPECT_EQ(nb::cascade_partner(nb::IQ0), int(nb::IQ2));
    EXPECT_EQ(nb::cascade_partner(nb::IQ2), int(nb::IQ0));
    EXPECT_EQ(nb::cascade_partner(nb::IQ1), int(nb::IQ3));
    EXPECT_EQ(nb::cascade_partner(nb::IQ3), int(nb::IQ1));
    EXPECT_EQ(nb::cascade_partner(nb::IQ4), int(nb::IQ2));
    EXPECT_EQ(nb::cascade_partner(nb::IQ5), int(nb::IQ3));
    EXPECT_EQ(nb::cascade_partner(nb::MS1), int(nb::MS3));
    EXPECT_EQ(nb::cascade_partner(nb::FLAME2), int(nb::FLAME0));

    SimMachine m = netburst_p4();
    SimCpu& c = m.cpu(0);
    ASSERT_EQ(wr(c, nb::CRU_ESCR0, kInstrEscr), 0);
    // IQ_COUNTER4 counts and wraps; IQ_COUNTER0 (cascade) must not start.
    ASSERT_EQ(wr(c, ctr(nb::IQ4), (1ull << 40) - 1), 0);
    ASSERT_EQ(wr(c, cccr(nb::IQ4), kCru), 0);
    ASSERT_EQ(wr(c, cccr(nb::IQ0), (kCru & ~nb::ENABLE) | nb::CASCADE), 0);
    nb_event(c, nb::kInstrRetired, nb::NBOGUSNTAG, 10);
    EXPECT_EQ(rd(c, ctr(nb::IQ4)), 9u);
    EXPECT_EQ(rd(c, ctr(nb::IQ0)), 0u);
    EXPECT_EQ(rd(c, cccr(nb::IQ0)) & nb::ENABLE, 0u);
    // IQ_COUNTER1 wraps: IQ_COUNTER3 (CRU_ESCR1, select 4) starts, and a chain follows:
    // IQ_COUNTER3 wraps in turn and starts IQ_COUNTER5.
    ASSERT_EQ(wr(c, nb::CRU_ESCR1, nb::escr(0x02, nb::NBOGUSNTAG, nb::OS)), 0);
    ASSERT_EQ(wr(c, ctr(nb::IQ1), (1ull << 40) - 3), 0);
    ASSERT_EQ(wr(c, cccr(nb::IQ1), kCru), 0);
    ASSERT_EQ(wr(c, ctr(nb::IQ3), (1ull << 40) - 4), 0);
    ASSERT_EQ(wr(c, cccr(nb::IQ3), (kCru & ~nb::ENABLE) | nb::CASCADE), 0);
    ASSERT_EQ(wr(c, cccr(nb::IQ5), (kCru & ~nb::ENABLE) | nb::CASCADE), 0);
    nb_event(c, nb::kInstrRetired, nb::NBOGUSNTAG, 20);
    EXPECT_EQ(rd(c, ctr(nb::IQ1)), 17u);  // wrapped after 3
    EXPECT_EQ(rd(c, ctr(nb::IQ3)), 13u);  // counted the last 17, wrapped after 4
    EXPECT_EQ(rd(c, ctr(nb::IQ5)), 13u);  // counted the last 13
}

TEST(SimNetBurst, RdpmcFastAndFullReads) {
    SimMachine m = netburst_p4();
    SimCpu& c = m.cpu(0);
    c.poke(ctr(5), 0xAB12345678ull);
    EXPECT_EQ(c.rdpmc(5).value(), 0xAB12345678ull);                 // all 40 bits
    EXPECT_EQ(c.rdpmc(nb::RDPMC_FAST | 5).value(), 0x12345678ull);  // bits 31:0, EDX = 0
    EXPECT_EQ(c.rdpmc(17).value(), 0u);
    EXPECT_EQ(vec_of(c.rdpmc(18)), kVectorGP);
    EXPECT_EQ(vec_of(c.rdpmc(nb::RDPMC_FAST | 18)), kVectorGP);
    EXPECT_EQ(vec_of(c.rdpmc(0x40000000)), kVectorGP);  // no fixed counters here
    EXPECT_EQ(rd(c, ctr(5)), 0xAB12345678ull);
    c.set_cpl(3);
    EXPECT_EQ(vec_of(c.rdpmc(5)), kVectorGP);  // CR4.PCE clear
    c.set_cr4_pce(true);
    EXPECT_EQ(c.rdpmc(nb::RDPMC_FAST | 5).value(), 0x12345678ull);
}

TEST(SimNetBurst, ThreadBitsAndActiveThreadWithHyperThreading) {
    SimMachine m = netburst_p4(2, true);
    SimCpu& t0 = m.cpu(0);
    SimCpu& t1 = m.cpu(1);
    ASSERT_EQ(wr(t0, nb::CRU_ESCR0, kInstrEscr), 0);  // T0_OS | T0_USR
    ASSERT_EQ(wr(t0, cccr(nb::IQ0), kCru), 0);
    nb_event(t0, nb::kInstrRetired, nb::NBOGUSNTAG, 5);
    nb_event(t1, nb::kInstrRetired, nb::NBOGUSNTAG, 7);  // thread 1: the T0 bits do not see it
    EXPECT_EQ(rd(t1, ctr(nb::IQ0)), 5u);
    // ESCRs are rewritten with the counter stopped (the model records changes under a
    // running counter).
    ASSERT_EQ(wr(t1, cccr(nb::IQ0), 0), 0);
    ASSERT_EQ(wr(t1, nb::CRU_ESCR0, nb::escr(0x02, nb::NBOGUSNTAG, nb::T1_OS | nb::T1_USR)), 0);
    ASSERT_EQ(wr(t1, cccr(nb::IQ0), kCru), 0);
    nb_event(t0, nb::kInstrRetired, nb::NBOGUSNTAG, 5);
    nb_event(t1, nb::kInstrRetired, nb::NBOGUSNTAG, 7);
    EXPECT_EQ(rd(t0, ctr(nb::IQ0)), 12u);
    t1.set_cpl(3);
    ASSERT_EQ(wr(t1, cccr(nb::IQ0), 0), 0);
    ASSERT_EQ(wr(t1, nb::CRU_ESCR0, nb::escr(0x02, nb::NBOGUSNTAG, nb::T1_OS | nb::USR)), 0);
    ASSERT_EQ(wr(t1, cccr(nb::IQ0), kCru), 0);
    nb_event(t1, nb::kInstrRetired, nb::NBOGUSNTAG, 7);  // T1_USR clear: not counted
    EXPECT_EQ(rd(t0, ctr(nb::IQ0)), 12u);
    ASSERT_EQ(wr(t1, cccr(nb::IQ0), 0), 0);
    // Active thread: 01 counts while exactly one logical processor is active, 10 while
    // both are, 00 never.
    ASSERT_EQ(wr(t0, nb::CRU_ESCR0, kInstrEscr), 0);
    NetBurstModel& nbm = *t0.netburst();
    const u64 base = nb::ENABLE | nb::escr_select(4);
    auto count = [&](u64 thread_field) {
        EXPECT_EQ(wr(t0, cccr(nb::IQ0), 0), 0);
        EXPECT_EQ(wr(t0, ctr(nb::IQ0), 0), 0);
        EXPECT_EQ(wr(t0, cccr(nb::IQ0), base | thread_field), 0);
        nb_event(t0, nb::kInstrRetired, nb::NBOGUSNTAG, 3);
        return rd(t0, ctr(nb::IQ0));
    };
    EXPECT_EQ(count(nb::THREAD_NONE), 0u);
    EXPECT_EQ(count(nb::THREAD_SINGLE), 0u);
    EXPECT_EQ(count(nb::THREAD_BOTH), 3u);
    EXPECT_EQ(count(nb::THREAD_ANY), 3u);
    nbm.set_thread_active(1, false);  // the sibling halted
    EXPECT_EQ(count(nb::THREAD_SINGLE), 3u);
    EXPECT_EQ(count(nb::THREAD_BOTH), 0u);
    EXPECT_EQ(count(nb::THREAD_ANY), 3u);
    EXPECT_TRUE(nbm.violations().empty());
}

TEST(SimNetBurst, ProgrammingRuleViolationsAreRecorded) {
    SimMachine m = netburst_p4();
    SimCpu& c = m.cpu(0);
    NetBurstModel& nbm = *c.netburst();
    ASSERT_EQ(wr(c, nb::CRU_ESCR0, kInstrEscr), 0);
    ASSERT_EQ(wr(c, cccr(nb::IQ0), kCru), 0);
    ASSERT_EQ(wr(c, nb::CRU_ESCR0, kInstrEscr), 0);  // the same value: harmless
    EXPECT_TRUE(nbm.violations().empty());
    ASSERT_EQ(wr(c, ctr(nb::IQ0), 5), 0);
    ASSERT_EQ(wr(c, nb::CRU_ESCR0, kUopsEscr), 0);
    ASSERT_EQ(nbm.violations().size(), 2u);
    EXPECT_EQ(nbm.violations()[0],
              "CPU 0: WRMSR 0x30c (counter 12) while its CCCR is enabled (disable the counter first)");
    EXPECT_EQ(nbm.violations()[1],
              "CPU 0: WRMSR 0x3b8 (CRU_ESCR0) changes the ESCR while counter 12 counts through it");
    // Without Hyper-Threading the active-thread field must be 11b: anything else counts
    // nothing and is recorded.
    nbm.clear_violations();
    ASSERT_EQ(wr(c, cccr(nb::IQ0), 0), 0);
    ASSERT_EQ(wr(c, nb::CRU_ESCR0, kInstrEscr), 0);
    ASSERT_EQ(wr(c, ctr(nb::IQ1), 0), 0);
    ASSERT_EQ(wr(c, cccr(nb::IQ1), nb::ENABLE | nb::escr_select(4) | nb::THREAD_SINGLE), 0);
    nb_event(c, nb::kInstrRetired, nb::NBOGUSNTAG, 3);
    EXPECT_EQ(rd(c, ctr(nb::IQ1)), 0u);
    ASSERT_EQ(nbm.violations().size(), 1u);
    EXPECT_EQ(nbm.violations()[0],
              "CPU 0: WRMSR 0x36d enables counter 13 with active thread 1 (must be 11b without Hyper-Threading)");
}

TEST(SimNetBurst, GlobalPowerEventsCountRunningCycles) {
    SimMachine m = netburst_p4();
    SimCpu& c = m.cpu(0);
    ASSERT_EQ(wr(c, nb::FSB_ESCR1, nb::escr(0x13, nb::RUNNING, nb::OS | nb::USR)), 0);
    ASSERT_EQ(wr(c, cccr(nb::BPU3), nb::ENABLE | nb::escr_select(6) | nb::THREAD_ANY), 0);
    nb_run(c, 1234);
    nb_event(c, nb::kInstrRetired, nb::NBOGUSNTAG, 50);  // not a run: no cycles
    EXPECT_EQ(rd(c, ctr(nb::BPU3)), 1234u);
    // Counters of other logical processors' packages see nothing.
    SimMachine two = netburst_p4(2);
    ASSERT_EQ(wr(two.cpu(0), nb::FSB_ESCR0, nb::escr(0x13, nb::RUNNING, nb::OS)), 0);
    ASSERT_EQ(wr(two.cpu(0), cccr(nb::BPU0), nb::ENABLE | nb::escr_select(6) | nb::THREAD_ANY), 0);
    nb_run(two.cpu(1), 100);
    nb_run(two.cpu(0), 10);
    EXPECT_EQ(rd(two.cpu(0), ctr(nb::BPU0)), 10u);
}
