// The simulated PEBS (sim_pebs.h): which CPUs have its MSRs, their reserved bits, and the
// records of formats 3 (Skylake) and 4 (Ice Lake, adaptive) written into guest memory at
// the DS area's index, with the counter reloaded and the PMI at the threshold.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "sim/sim_cpu.h"
#include "sim/sim_pebs.h"

using namespace sim;

namespace {

constexpr u32 kDsArea = 0x600, kPebsEnable = 0x3F1, kDataCfg = 0x3F2, kLdLat = 0x3F6, kMiscEnable = 0x1A0;

u8 wr(SimCpu& c, u32 msr, u64 v) {
    Status s = c.wrmsr(msr, v);
    return s.ok() ? 0 : s.error().vector;
}

// Guest memory at [base, base + size) and fixed registers (RAX = 0xA0 + ..., RFLAGS 0x246).
class FakeGuest final : public GuestAccess {
public:
    static constexpr u64 kBase = 0x100000;
    std::vector<u8> mem = std::vector<u8>(0x3000);
    bool read(u64 a, void* out, u64 n) override {
        if (a < kBase || a + n > kBase + mem.size()) return false;
        std::memcpy(out, mem.data() + (a - kBase), n);
        return true;
    }
    bool write(u64 a, const void* p, u64 n) override {
        if (a < kBase || a + n > kBase + mem.size()) return false;
        std::memcpy(mem.data() + (a - kBase), p, n);
        return true;
    }
    void gprs(u64 out[16], u64* rflags) override {
        for (int i = 0; i < 16; ++i) out[i] = 0xA0 + u64(i);
        *rflags = 0x246;
    }
    u64 q(u64 a) {
        u64 v = 0;
        read(a, &v, 8);
        return v;
    }
    void set_q(u64 a, u64 v) { write(a, &v, 8); }
};

// The DS area at kBase, the buffer at kBase + 0x1000 (8 records of `rec` bytes), the
// interrupt threshold `per_pmi` records in, PMC0's reset value `reset`.
void lay_ds(FakeGuest& g, u64 rec, u64 per_pmi, u64 reset) {
    const u64 ds = FakeGuest::kBase, buf = ds + 0x1000;
    g.set_q(ds + 0x20, buf);
    g.set_q(ds + 0x28, buf);
    g.set_q(ds + 0x30, buf + 8 * rec);
    g.set_q(ds + 0x38, buf + per_pmi * rec);
    g.set_q(ds + 0x40, reset);
}

constexpr u64 kTop48 = u64(1) << 48;

// PMC0 counts event/umask with PEBS, `period` events before the first record.
void arm_pmc0(SimCpu& c, u16 event, u16 umask, u64 period) {
    ASSERT_EQ(wr(c, reg::PERFEVTSEL0, evtsel::make(event, umask, evtsel::OS)), 0);
    ASSERT_EQ(wr(c, reg::PMC0 + 0x400 /* IA32_A_PMC0 */, kTop48 - period), 0);
    ASSERT_EQ(wr(c, kDsArea, FakeGuest::kBase), 0);
    ASSERT_EQ(wr(c, reg::PERFEVTSEL0, evtsel::make(event, umask, evtsel::OS | evtsel::EN)), 0);
    ASSERT_EQ(wr(c, reg::GLOBAL_CTRL, 1), 0);
}

// A CPU of machine m with the fake guest memory as its memory while the test runs.
struct Rig {
    SimMachine m;
    SimCpu& c;
    FakeGuest g;
    explicit Rig(SimMachine mm) : m(std::move(mm)), c(m.cpu(0)) { c.set_guest(&g); }
    ~Rig() { c.set_guest(nullptr); }
};

// One load at `rip` of `addr`, served by `level`.
Retired load_at(u64 rip, u64 addr, unsigned level) {
    Retired r{.instructions = 1, .loads = 1};
    r.load_served[level] = 1;
    r.last = RetiredInsn{rip, rip + 4, addr, 0, level, true, true, false};
    return r;
}

}  // namespace

TEST(SimPebs, TheMsrsExistWhereThePartHasPebs) {
    SimMachine icl = intel_icelake(1), skl = intel_skylake(1), v3 = intel_v3(1), tcg = qemu_tcg_intel(1);
    for (u32 msr : {kDsArea, kPebsEnable, kDataCfg, kLdLat}) EXPECT_TRUE(icl.cpu(0).msr_exists(msr)) << msr;
    for (u32 msr : {kDsArea, kPebsEnable, kLdLat}) EXPECT_TRUE(skl.cpu(0).msr_exists(msr)) << msr;
    EXPECT_FALSE(skl.cpu(0).msr_exists(kDataCfg)) << "format 3: no adaptive PEBS";
    EXPECT_FALSE(v3.cpu(0).msr_exists(kPebsEnable)) << "no PERF_CAPABILITIES: no record format";
    EXPECT_FALSE(tcg.cpu(0).msr_exists(kDsArea));
    EXPECT_EQ(icl.cpu(0).peek(kMiscEnable) & (u64(1) << 12), 0u) << "PEBS available";
    EXPECT_EQ(v3.cpu(0).peek(kMiscEnable) & (u64(1) << 12), u64(1) << 12) << "PEBS unavailable";
    SimCpu& c = icl.cpu(0);
    EXPECT_EQ(wr(c, kPebsEnable, u64(1) << 8), pmulab::kVectorGP) << "8 GP counters: bit 8 is reserved";
    EXPECT_EQ(wr(c, kPebsEnable, u64(1) << 32), 0) << "v5, adaptive: fixed counter 0's PEBS enable";
    EXPECT_EQ(wr(c, kPebsEnable, u64(1) << 36), pmulab::kVectorGP) << "4 fixed counters: bit 36 is reserved";
    EXPECT_EQ(wr(c, kPebsEnable, 0), 0);
    EXPECT_EQ(wr(c, kDataCfg, 4), pmulab::kVectorGP) << "XMM group not modelled";
    EXPECT_EQ(wr(c, kDsArea, u64(1) << 60), pmulab::kVectorGP) << "non-canonical";
    EXPECT_EQ(wr(skl.cpu(0), kPebsEnable, (u64(1) << 35) | 8), 0) << "Skylake (v4): LL_EN_PMC3";
}

TEST(SimPebs, Format3RecordAtTheEventingInstructionReloadsAndInterrupts) {
    Rig r(intel_skylake(1));
    SimCpu& c = r.c;
    FakeGuest& g = r.g;
    c.set_lvt_perf(SimCpu::kLvtDeliveryNmi);
    lay_ds(g, 0xC8, 1, kTop48 - 3);
    arm_pmc0(c, 0xD0, 0x81, 2);  // MEM_INST_RETIRED.ALL_LOADS
    ASSERT_EQ(wr(c, kPebsEnable, 1), 0);
    EXPECT_TRUE(c.needs_each_instruction()) << "PEBS_ENABLE arms it (EVENTSEL.INT is clear)";
    c.set_tsc(1000);
    c.retire(load_at(0x4000, 0x7000, 0));
    EXPECT_FALSE(c.take_nmi());
    c.retire(load_at(0x4010, 0x7040, 0));  // the second load overflows PMC0
    EXPECT_TRUE(c.take_nmi()) << "the index reached the threshold";
    const u64 rec = FakeGuest::kBase + 0x1000;
    EXPECT_EQ(g.q(FakeGuest::kBase + 0x28), rec + 0xC8);
    EXPECT_EQ(g.q(rec + 0x0), 0x246u);       // RFLAGS
    EXPECT_EQ(g.q(rec + 0x8), 0x4014u);      // the IP after it
    EXPECT_EQ(g.q(rec + 0x10), 0xA0u);       // RAX
    EXPECT_EQ(g.q(rec + 0x18), 0xA3u);       // RBX (format 3's order: RAX RBX RCX RDX)
    EXPECT_EQ(g.q(rec + 0x48), 0xA4u);       // RSP
    EXPECT_EQ(g.q(rec + 0x90), 1u);          // applicable counters: PMC0
    EXPECT_EQ(g.q(rec + 0x98), 0x7040u);     // data linear address
    EXPECT_EQ(g.q(rec + 0xA8), 0u);          // latency: load-latency events only
    EXPECT_EQ(g.q(rec + 0xB0), 0x4010u);     // the eventing IP
    EXPECT_EQ(g.q(rec + 0xC0), 1000u + 1u);  // the TSC (the first batch's cycle)
    EXPECT_EQ(c.peek(reg::PMC0), kTop48 - 3) << "reloaded from the DS area's reset value";
    EXPECT_EQ(c.peek(reg::GLOBAL_STATUS) & ((u64(1) << 62) | 1), (u64(1) << 62) | 1);
}

TEST(SimPebs, AdaptiveRecordsHaveTheGroupsDataCfgChose) {
    Rig r(intel_icelake(1));
    SimCpu& c = r.c;
    FakeGuest& g = r.g;
    lay_ds(g, 0xD0, 8, kTop48 - 1);
    arm_pmc0(c, 0xCD, 0x01, 1);  // MEM_TRANS_RETIRED.LOAD_LATENCY
    ASSERT_EQ(wr(c, kLdLat, 10), 0);
    ASSERT_EQ(wr(c, kDataCfg, 3), 0);  // memory info and GPRs
    ASSERT_EQ(wr(c, kPebsEnable, 1), 0);
    c.retire(load_at(0x4000, 0x7000, 0));  // 4 cycles: below the threshold, not counted
    EXPECT_EQ(c.peek(reg::PMC0), kTop48 - 1);
    c.retire(load_at(0x4020, 0x9000, 3));  // memory: 204 cycles
    const u64 rec = FakeGuest::kBase + 0x1000;
    EXPECT_EQ(g.q(rec) >> 48, 0x20u + 0x20u + 0x90u) << "the record's size";
    EXPECT_EQ(g.q(rec) & 0xFFFFFFFF, 3u) << "its groups";
    EXPECT_EQ(g.q(rec + 0x8), 0x4020u);   // eventing IP
    EXPECT_EQ(g.q(rec + 0x10), 1u);       // applicable counters
    EXPECT_EQ(g.q(rec + 0x20), 0x9000u);  // memory info: address
    EXPECT_EQ(g.q(rec + 0x30), 204u);     // latency: 4 + 200
    EXPECT_EQ(pebs_load_latency(0), 4u);
    EXPECT_EQ(pebs_load_latency(1), 16u);
    EXPECT_EQ(g.q(rec + 0x40), 0x246u);          // GPRs: RFLAGS,
    EXPECT_EQ(g.q(rec + 0x48), 0x4024u);         // the IP after,
    EXPECT_EQ(g.q(rec + 0x50 + 8 * 14), 0xAEu);  // ... R14
    EXPECT_EQ(g.q(FakeGuest::kBase + 0x28), rec + 0xD0);
    EXPECT_EQ(c.peek(reg::GLOBAL_STATUS) & (u64(1) << 62), 0u) << "threshold 8 records in";
}

TEST(SimPebs, AFullBufferTakesNoRecord) {
    Rig r(intel_icelake(1));
    SimCpu& c = r.c;
    FakeGuest& g = r.g;
    lay_ds(g, 0x20, 1, kTop48 - 1);
    g.set_q(FakeGuest::kBase + 0x30, FakeGuest::kBase + 0x1000 + 0x10);  // less than one record
    arm_pmc0(c, 0xD0, 0x81, 1);
    ASSERT_EQ(wr(c, kPebsEnable, 1), 0);
    c.retire(load_at(0x4000, 0x7000, 0));
    EXPECT_EQ(g.q(FakeGuest::kBase + 0x28), FakeGuest::kBase + 0x1000) << "the index stays";
    EXPECT_FALSE(c.take_nmi());
}

// One non-memory instruction at `rip` (4 bytes).
static Retired alu_at(u64 rip) {
    Retired r{.instructions = 1};
    r.last = RetiredInsn{rip, rip + 4, 0, 0, 0, true, false, false};
    return r;
}

TEST(SimPebs, FixedCounter0RecordAtTheEventingInstructionReloadsFromItsFixedSlot) {
    Rig r(intel_icelake(1));
    SimCpu& c = r.c;
    FakeGuest& g = r.g;
    c.set_lvt_perf(SimCpu::kLvtDeliveryNmi);
    lay_ds(g, 0x20, 1, 0);
    g.set_q(FakeGuest::kBase + 0x80, kTop48 - 5);  // fixed counter 0's reset value (format 4: 80H)
    ASSERT_EQ(wr(c, reg::FIXED_CTR0, kTop48 - 2), 0);
    ASSERT_EQ(wr(c, kDsArea, FakeGuest::kBase), 0);
    ASSERT_EQ(wr(c, reg::FIXED_CTR_CTRL, 0x1), 0);  // OS, PMI bit clear (PEBS interrupts)
    ASSERT_EQ(wr(c, kDataCfg, 0), 0);
    ASSERT_EQ(wr(c, kPebsEnable, u64(1) << 32), 0);
    ASSERT_EQ(wr(c, reg::GLOBAL_CTRL, u64(1) << 32), 0);
    EXPECT_TRUE(c.needs_each_instruction()) << "PEBS_ENABLE bit 32 arms it";
    c.retire(alu_at(0x4000));
    EXPECT_FALSE(c.take_nmi());
    c.retire(alu_at(0x4004));  // the second instruction overflows fixed counter 0
    EXPECT_TRUE(c.take_nmi()) << "the index reached the threshold";
    const u64 rec = FakeGuest::kBase + 0x1000;
    EXPECT_EQ(g.q(rec) >> 48, 0x20u) << "the basic group only";
    EXPECT_EQ(g.q(rec + 0x8), 0x4004u) << "the eventing IP: the instruction that overflowed it";
    EXPECT_EQ(g.q(rec + 0x10), u64(1) << 32) << "applicable counters: fixed counter 0";
    EXPECT_EQ(g.q(FakeGuest::kBase + 0x28), rec + 0x20);
    EXPECT_EQ(c.peek(reg::FIXED_CTR0), kTop48 - 5) << "reloaded from the DS area's fixed slot";
    EXPECT_EQ(c.peek(reg::GLOBAL_STATUS) & ((u64(1) << 62) | (u64(1) << 32)), (u64(1) << 62) | (u64(1) << 32));
    for (u64 rip = 0x4008; rip < 0x4008 + 4 * 4; rip += 4) c.retire(alu_at(rip));
    EXPECT_EQ(g.q(FakeGuest::kBase + 0x28), rec + 0x20) << "5 more to the next overflow";
    c.retire(alu_at(0x4018));
    EXPECT_EQ(g.q(rec + 0x20 + 0x8), 0x4018u) << "the fifth after the reload";
}

TEST(SimPebs, Format5ReadsTheFixedResetAt140H) {
    Rig r(intel_sapphire_rapids(1));
    SimCpu& c = r.c;
    FakeGuest& g = r.g;
    EXPECT_TRUE(c.msr_exists(kDataCfg)) << "format 5: adaptive PEBS";
    lay_ds(g, 0x20, 8, 0);
    g.set_q(FakeGuest::kBase + 0x80, kTop48 - 7);   // format 4's fixed slot: PMC8's here, not read
    g.set_q(FakeGuest::kBase + 0x140, kTop48 - 2);  // fixed counter 0 (index 32)
    g.set_q(FakeGuest::kBase + 0x158, kTop48 - 9);  // fixed counter 3 (SLOTS)
    ASSERT_EQ(wr(c, reg::FIXED_CTR0, kTop48 - 1), 0);
    ASSERT_EQ(wr(c, kDsArea, FakeGuest::kBase), 0);
    ASSERT_EQ(wr(c, reg::FIXED_CTR_CTRL, 0x1), 0);
    ASSERT_EQ(wr(c, kPebsEnable, u64(1) << 32), 0);
    ASSERT_EQ(wr(c, reg::GLOBAL_CTRL, u64(1) << 32), 0);
    c.retire(alu_at(0x4000));
    EXPECT_EQ(c.peek(reg::FIXED_CTR0), kTop48 - 2) << "reloaded from 140H";
    EXPECT_EQ(wr(c, kPebsEnable, u64(1) << 35), 0) << "SLOTS' PEBS enable";
    EXPECT_EQ(wr(c, kPebsEnable, u64(1) << 36), pmulab::kVectorGP) << "4 fixed counters";
}

TEST(SimPebs, SlotsRecordOnFixedCounter3) {
    Rig r(intel_sapphire_rapids(1));
    SimCpu& c = r.c;
    FakeGuest& g = r.g;
    c.set_lvt_perf(SimCpu::kLvtDeliveryNmi);
    lay_ds(g, 0x20, 1, 0);
    g.set_q(FakeGuest::kBase + 0x158, kTop48 - 4);  // fixed counter 3's reset value (140H + 3 * 8)
    ASSERT_EQ(wr(c, reg::FIXED_CTR0 + 3, kTop48 - 6), 0);
    ASSERT_EQ(wr(c, kDsArea, FakeGuest::kBase), 0);
    ASSERT_EQ(wr(c, reg::FIXED_CTR_CTRL, 0x1000), 0);  // fixed counter 3 at CPL 0, PMI bit clear
    ASSERT_EQ(wr(c, kDataCfg, 0), 0);
    ASSERT_EQ(wr(c, kPebsEnable, u64(1) << 35), 0);
    ASSERT_EQ(wr(c, reg::GLOBAL_CTRL, u64(1) << 35), 0);
    c.retire(alu_at(0x4000));  // 4 slots: 2 left
    EXPECT_FALSE(c.take_nmi());
    c.retire(alu_at(0x4004));  // overflows at this instruction
    EXPECT_TRUE(c.take_nmi());
    const u64 rec = FakeGuest::kBase + 0x1000;
    EXPECT_EQ(g.q(rec + 0x8), 0x4004u) << "the eventing IP";
    EXPECT_EQ(g.q(rec + 0x10), u64(1) << 35) << "applicable counters: fixed counter 3";
    EXPECT_EQ(c.peek(reg::FIXED_CTR0 + 3), kTop48 - 4) << "reloaded from 158H";
}

TEST(SimPebs, AlderLakeECoresHaveFormat5) {
    SimMachine m = intel_alder_lake();
    SimCpu& e = m.cpu(4);
    for (u32 msr : {kDsArea, kPebsEnable, kDataCfg, kLdLat}) EXPECT_TRUE(e.msr_exists(msr)) << msr;
    EXPECT_EQ(wr(e, kPebsEnable, 0x3F), 0) << "six GP counters";
    EXPECT_EQ(wr(e, kPebsEnable, u64(1) << 6), pmulab::kVectorGP);
    EXPECT_EQ(wr(e, kPebsEnable, u64(1) << 34), 0) << "fixed counter 2";
    EXPECT_EQ(wr(e, kPebsEnable, u64(1) << 35), pmulab::kVectorGP) << "three fixed counters: no SLOTS";
    SimMachine hybrid = intel_hybrid();
    EXPECT_FALSE(hybrid.cpu(4).msr_exists(kPebsEnable)) << "format 3 on an E core: not modelled";
}
