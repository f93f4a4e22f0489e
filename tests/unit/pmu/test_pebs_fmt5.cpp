// PEBS record format 5 and the per-core PEBS tables (pmu/pebs.h, x86/pebs_regs.h): the DS
// area's layout per format (fixed counters' reset slots at 80H in format 4, 140H from
// format 5), the PEBS_ENABLE bits, and which table each model and core type gets, on the
// simulated models and the hybrid CPUID dumps.
#include <gtest/gtest.h>

#include <string>

#include "pmu/pebs.h"
#include "sim/sim_builders.h"
#include "support/test_platform.h"

using namespace pmulab;
using namespace pmulab::regs::pebs;
using namespace sim;

namespace {

// The PEBS caps of CPU `cpu` of machine m (probed as run does), or the refusal.
Status caps_of(SimMachine& m, u32 cpu, PebsCaps* out) {
    Vec<u32> cpus;
    cpus.push(cpu);
    Vec<ProbedCpu> probed;
    probe_cpus(m, cpus, &probed);
    EXPECT_EQ(probed.size(), 1u);
    return pebs_decode(probed[0], out);
}

Event programmable(u16 event, u8 umask) {
    Event e;
    e.kind = EventKind::programmable;
    e.event_select = event;
    e.umask = umask;
    str_copy(e.name, sizeof e.name, "raw");
    return e;
}

Event fixed(int8_t i) {
    Event e;
    e.kind = EventKind::fixed;
    e.fixed_counter = i;
    e.event_select = i == 3 ? 0xA4 : 0xC0;
    e.umask = i == 3 ? 1 : 0;
    str_copy(e.name, sizeof e.name, i == 3 ? "slots" : "instructions");
    return e;
}

}  // namespace

TEST(PebsFormat5, DsAreaLayoutPerFormat) {
    EXPECT_EQ(sizeof(DsArea), 0xC0u);
    EXPECT_EQ(sizeof(DsArea5), 0x1C0u);
    EXPECT_EQ(offsetof(DsArea5, pebs_reset), 0x40u);
    EXPECT_EQ(offsetof(DsArea5, fixed_reset), 0x140u);
    EXPECT_EQ(ds_reset_offset(4, true, 0), 0x80u);   // format 4: after eight GP slots
    EXPECT_EQ(ds_reset_offset(5, true, 0), 0x140u);  // format 5: after 32 GP slots (index 32)
    EXPECT_EQ(ds_reset_offset(5, true, 3), 0x158u);  // SLOTS
    EXPECT_EQ(ds_reset_offset(6, true, 0), 0x140u);  // format 6 keeps format 5's array
    EXPECT_EQ(ds_reset_offset(5, false, 9), 0x88u);  // PMC9 (Lion Cove's tenth counter)
    EXPECT_EQ(ds_gp_slots(4), 8u);
    EXPECT_EQ(ds_gp_slots(5), 32u);
    EXPECT_EQ(ds_fixed_slots(3), 0u);
    EXPECT_EQ(ds_fixed_slots(4), 8u);
    EXPECT_EQ(ds_fixed_slots(5), 16u);
    EXPECT_EQ(ds_area_bytes(4), 0xC0u);
    EXPECT_EQ(ds_area_bytes(5), 0x1C0u);
}

TEST(PebsFormat5, PebsEnableBits) {
    EXPECT_EQ(PebsEnable().set_pmc(9).raw(), u64(1) << 9);
    EXPECT_EQ(PebsEnable().set_pmc(31).raw(), u64(1) << 31);
    EXPECT_EQ(PebsEnable().set_pmc(32).raw(), 0u) << "no GP counter 32";
    EXPECT_EQ(PebsEnable().set_fixed(3).raw(), u64(1) << 35) << "SLOTS";
    EXPECT_EQ(PebsEnable().set_fixed(15).raw(), u64(1) << 47);
    EXPECT_EQ(PebsEnable().set_fixed(16).raw(), 0u);
}

TEST(PebsFormat5, SimulatedModelsGetTheirFormatAndTable) {
    struct Case {
        SimMachine m;
        u32 cpu;
        u8 format;
        PebsCaps::Gen gen;
        const char* model;
    };
    Case cases[] = {
        {intel_sapphire_rapids(1), 0, 5, PebsCaps::Gen::golden_cove, "06_8FH"},
        {intel_alder_lake(), 0, 5, PebsCaps::Gen::golden_cove, "06_97H P core"},
        {intel_alder_lake(), 4, 5, PebsCaps::Gen::gracemont, "06_97H E core"},
        {intel_icelake(1), 0, 4, PebsCaps::Gen::icelake, "06_7EH"},
        {intel_skylake(1), 0, 3, PebsCaps::Gen::skylake, "06_5EH"},
    };
    for (Case& c : cases) {
        PebsCaps caps;
        Status s = caps_of(c.m, c.cpu, &caps);
        ASSERT_TRUE(s.ok()) << c.model << ": " << s.error().msg;
        EXPECT_EQ(caps.format, c.format) << c.model;
        EXPECT_EQ(caps.gen, c.gen) << c.model;
        EXPECT_EQ(caps.adaptive, c.format >= 4) << c.model;
        EXPECT_STREQ(caps.model, c.model);
    }
}

TEST(PebsFormat5, HybridDumpsPickEachCoreTypesTable) {
    // Arrow Lake-H: CPUs 0-1 Lion Cove P cores, 2-9 Skymont E cores (CPUID.1AH).
    SimMachine arl = pmutest::dump_machine("GenuineIntel00C0652_ArrowLakeH_04_CPUID.txt", kGoldenCovePerfCaps);
    PebsCaps p, e;
    ASSERT_TRUE(caps_of(arl, 0, &p).ok());
    ASSERT_TRUE(caps_of(arl, 2, &e).ok());
    EXPECT_EQ(p.gen, PebsCaps::Gen::lion_cove);
    EXPECT_EQ(e.gen, PebsCaps::Gen::gracemont);
    EXPECT_STREQ(p.model, "06_C5H P core");
    EXPECT_STREQ(e.model, "06_C5H E core");
    // Lion Cove lists the memory events only; Gracemont INST_RETIRED.ANY_P and the branches.
    EXPECT_NE(pebs_event(p, 0xD0, 0x81), nullptr);
    EXPECT_EQ(pebs_event(p, 0xC0, 0x00), nullptr);
    EXPECT_EQ(pebs_event(p, 0xCD, 0x01), nullptr);
    ASSERT_NE(pebs_event(e, 0xC0, 0x00), nullptr);
    EXPECT_STREQ(pebs_event(e, 0xC0, 0x00)->name, "INST_RETIRED.ANY_P");
    ASSERT_NE(pebs_event(e, 0xD0, 0x05), nullptr);
    EXPECT_EQ(pebs_event(e, 0xD0, 0x05)->counters, 0x3u) << "load latency on PMC0-1 only (Linux's fix for ADL/RPL)";
    EXPECT_TRUE(pebs_event(e, 0xD0, 0x05)->latency);
    EXPECT_EQ(pebs_event_of(p, fixed(3)), &kPebsSlots);
    EXPECT_EQ(pebs_event_of(e, fixed(3)), nullptr) << "no SLOTS PEBS on the E cores";
    EXPECT_EQ(pebs_event_of(e, fixed(0)), &kPebsFixed0Any);
    // The Alder Lake dump (its E cores off: no hybrid bit): Golden Cove on every CPU.
    SimMachine adl = pmutest::dump_machine("GenuineIntel0090672_AlderLake_02_CPUID.txt", kGoldenCovePerfCaps);
    PebsCaps a;
    ASSERT_TRUE(caps_of(adl, 0, &a).ok());
    EXPECT_EQ(a.gen, PebsCaps::Gen::golden_cove);
    EXPECT_EQ(a.format, 5u);
    // The load-latency data source: Golden Cove reads the client table; Arrow Lake's Lion
    // Cove and Skymont cores use tables pmulab lacks, so their source is left undecoded.
    EXPECT_EQ(a.dse, PebsDseTable::client);
    EXPECT_EQ(p.dse, PebsDseTable::unknown);
    EXPECT_EQ(e.dse, PebsDseTable::unknown);
}

TEST(PebsFormat5, AlderLakeECoresReadGracemontsDataSourceTable) {
    SimMachine m = intel_alder_lake();  // CPU 0 a P core, CPU 4 an E core (as above)
    PebsCaps p, e;
    ASSERT_TRUE(caps_of(m, 0, &p).ok());
    ASSERT_TRUE(caps_of(m, 4, &e).ok());
    ASSERT_EQ(e.gen, PebsCaps::Gen::gracemont);
    EXPECT_EQ(p.dse, PebsDseTable::client);
    EXPECT_EQ(e.dse, PebsDseTable::gracemont);
}

// Sierra Forest (06_AFH, all Crestmont cores): Gracemont's event table, Crestmont's data
// source table.
TEST(PebsFormat5, SierraForestReadsCrestmontsDataSourceTable) {
    IntelCpuidSpec s;
    s.max_leaf = 0x1A;
    s.signature = 0x000A06F3;
    s.leaf_0a = {0x08300805, 0, 0, 0x00000603};
    SimMachine m = intel_machine(s, {1, 1, 1}, kGracemontPerfCaps);
    PebsCaps c;
    ASSERT_TRUE(caps_of(m, 0, &c).ok());
    EXPECT_EQ(c.gen, PebsCaps::Gen::gracemont);
    EXPECT_EQ(c.dse, PebsDseTable::crestmont);
}

TEST(PebsFormat5, GoldenCoveTableAndPdistCounters) {
    SimMachine m = intel_sapphire_rapids(1);
    PebsCaps caps;
    ASSERT_TRUE(caps_of(m, 0, &caps).ok());
    // INST_RETIRED.* and load latency leave PMC0 to the precise distribution (0xFE).
    ASSERT_NE(pebs_event(caps, 0xC0, 0x00), nullptr);
    EXPECT_EQ(pebs_event(caps, 0xC0, 0x00)->counters, 0xFEu);
    EXPECT_EQ(pebs_event(caps, 0xCD, 0x01)->counters, 0xFEu);
    EXPECT_EQ(pebs_event(caps, 0xD0, 0x81)->counters, 0xFu);
    EXPECT_EQ(pebs_event(caps, 0xD0, 0x22), pebs_event(caps, 0xD0, 0x01))
        << "MEM_INST_RETIRED.* (no LOCK_STORES entry)";
    EXPECT_FALSE(pebs_event(caps, 0xD0, 0x22)->data_la);
    EXPECT_EQ(pebs_event(caps, 0xC4, 0x00), nullptr);
    // 00.01 (INST_RETIRED.PREC_DIST) goes to fixed counter 0; C0.01 stays a GP event there.
    Event prec = programmable(0x00, 0x01), c0 = programmable(0xC0, 0x01);
    ASSERT_TRUE(pebs_mark(caps, 0, &prec).ok());
    EXPECT_EQ(prec.kind, EventKind::fixed);
    EXPECT_EQ(prec.fixed_counter, 0);
    ASSERT_TRUE(pebs_mark(caps, 0, &c0).ok());
    EXPECT_EQ(c0.kind, EventKind::programmable);
    EXPECT_EQ(c0.allowed_gp & 1u, 0u) << "not on PMC0";
    Event slots = fixed(3);
    ASSERT_TRUE(pebs_mark(caps, 0, &slots).ok());
    EXPECT_FALSE(slots.pmi) << "the buffer's threshold interrupts";
    Event cycles = fixed(1);
    str_copy(cycles.name, sizeof cycles.name, "cycles");
    Status s = pebs_mark(caps, 0, &cycles);
    ASSERT_FALSE(s.ok());
    EXPECT_STREQ(s.error().msg,
                 "CPU 0 (06_8FH): PEBS takes fixed counters 0 and 3 only (instructions, INST_RETIRED.PREC_DIST; "
                 "slots, TOPDOWN.SLOTS); 'cycles' is fixed counter 1");
}

TEST(PebsFormat5, SkylakeHasNoFixedCounterPebs) {
    SimMachine m = intel_skylake(1);
    PebsCaps caps;
    ASSERT_TRUE(caps_of(m, 0, &caps).ok());
    EXPECT_EQ(pebs_event_of(caps, fixed(0)), nullptr);
    EXPECT_EQ(pebs_event_of(caps, fixed(3)), nullptr);
}

TEST(PebsFormat5, UnknownFormatsAreRefused) {
    SimMachine m = intel_sapphire_rapids(1);
    m.cpu(0).set_perf_capabilities((kGoldenCovePerfCaps & ~u64(0xF00)) | 0x700);
    PebsCaps caps;
    Status s = caps_of(m, 0, &caps);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.error().code, Errc::unsupported);
    EXPECT_STREQ(s.error().msg,
                 "CPU 0 (06_8FH): PEBS record format 7 is newer than pmulab knows (formats 2-6, SDM Vol. 3B "
                 "§20.6.2.2): its DS area and records are not described to it");
    // Format 5 without the PEBS baseline (adaptive PEBS): not what the SDM describes.
    m.cpu(0).set_perf_capabilities(kGoldenCovePerfCaps & ~(u64(1) << 14));
    s = caps_of(m, 0, &caps);
    ASSERT_FALSE(s.ok());
    EXPECT_STREQ(s.error().msg,
                 "CPU 0 (06_8FH): a core with Golden Cove's PEBS event table whose IA32_PERF_CAPABILITIES says "
                 "PEBS format 5 without adaptive PEBS (bit 14): not what the SDM describes for it");
}
