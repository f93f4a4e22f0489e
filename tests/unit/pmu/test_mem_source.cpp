// Data sources of precise memory samples (pmu/mem_source.h): PEBS's Data Source Encoding
// and IBS's IbsOpData2/IbsOpData3 decoded, the simulator's writers (sim/sim_memsrc.h,
// written independently from the manuals) read back through them, and the IBS controls
// (--ibs-rand, --ibs-l3-miss-only) checked, encoded and drained on the simulated Zen 4.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "pmu/ibs.h"
#include "pmu/mem_source.h"
#include "sim/sim_cpu.h"
#include "sim/sim_memsrc.h"
#include "x86/mem_source_regs.h"

using namespace pmulab;

namespace {

std::string name(const MemSourceInfo& m) { return mem_source_name(m.source); }
std::string msg(const Status& s) { return s.ok() ? "" : s.error().msg; }

// IbsOpData3 of a load (or a store) with the given miss bits.
u64 d3(bool load, bool dc_miss, bool l2_miss) {
    return regs::ibs::IbsOpData3().set_ld_op(load).set_st_op(!load).set_dc_miss(dc_miss).set_l2_miss(l2_miss).raw();
}

}  // namespace

TEST(MemSource, PebsDataSourceEncodingTable) {
    const char* want[16] = {"unknown",      "L1",           "LFB", "L2",        "L3",   "L3_snoop",
                            "L3_snoop",     "L3_HITM",      "L4",  "remote_L4", "DRAM", "remote_DRAM",
                            "remote_cache", "remote_cache", "IO",  "uncached"};
    for (u64 v = 0; v < 16; ++v) {
        MemSourceInfo m = pebs_mem_source(v);
        EXPECT_EQ(name(m), want[v]) << v;
        EXPECT_FALSE(m.stlb_miss || m.locked) << v;
    }
    // Bit 4 STLB miss, bit 5 locked; the bits above them are not the source's.
    MemSourceInfo m = pebs_mem_source(0x3A);
    EXPECT_EQ(name(m), "DRAM");
    EXPECT_TRUE(m.stlb_miss && m.locked);
    EXPECT_EQ(name(pebs_mem_source(0xFFFFFF01)), "L1");
    // The table's first entry for a source; 0 (unknown) for what PEBS cannot say.
    EXPECT_EQ(pebs_dse_of(MemSource::l3_snoop), 0x5);
    EXPECT_EQ(pebs_dse_of(MemSource::dram), regs::pebs::kDseDram);
    EXPECT_EQ(pebs_dse_of(MemSource::peer_cache), 0);
    EXPECT_EQ(std::string(mem_source_name(MemSource::count)), "?");
}

TEST(MemSource, IbsOpSourcesInLinuxsOrder) {
    using regs::ibs::IbsOpData2;
    // Not a memory op: none. L1: no DcMiss. L2: DcMiss without L2Miss (IbsOpData2 ignored).
    EXPECT_EQ(name(ibs_mem_source(0, 0, true)), "none");
    EXPECT_EQ(name(ibs_mem_source(0x3, d3(true, false, false), true)), "L1");
    EXPECT_EQ(name(ibs_mem_source(0x3, d3(true, true, false), true)), "L2");
    EXPECT_EQ(name(ibs_mem_source(0, d3(false, false, false), true)), "L1");  // a store that hit
    // Beyond L2, loads: DataSrc, 5 bits with the Zen 4 extensions.
    const u64 miss = d3(true, true, true);
    const std::pair<u64, const char*> zen4[] = {{0x1, "L3"},           {0x2, "peer_cache"}, {0x3, "DRAM"},
                                                {0x5, "remote_cache"}, {0x6, "PMEM"},       {0x7, "IO"},
                                                {0x40, "CXL"},         {0x0, "unknown"},    {0x4, "unknown"}};
    for (auto [v, want] : zen4) EXPECT_EQ(name(ibs_mem_source(v, miss, true)), want) << v;
    EXPECT_EQ(name(ibs_mem_source(IbsOpData2(0x3).set_rmt_node().raw(), miss, true)), "remote_DRAM");
    EXPECT_EQ(name(ibs_mem_source(IbsOpData2(0x1).set_rmt_node().raw(), miss, true)), "L3");
    // Before them: 2 local cache, 3 DRAM, 4 remote cache, 7 I/O; DataSrcHi not read.
    const std::pair<u64, const char*> old[] = {{0x2, "L3"}, {0x3, "DRAM"},    {0x4, "remote_cache"},
                                               {0x7, "IO"}, {0x1, "unknown"}, {0x43, "DRAM"}};
    for (auto [v, want] : old) EXPECT_EQ(name(ibs_mem_source(v, miss, false)), want) << v;
    // A store beyond L2: IbsOpData2 is a load's, so unknown; with DcMissNoMabAlloc: LFB.
    EXPECT_EQ(name(ibs_mem_source(0x3, d3(false, true, true), true)), "unknown");
    const u64 mab = regs::ibs::IbsOpData3(miss).set_dc_miss_no_mab_alloc().raw();
    EXPECT_EQ(name(ibs_mem_source(0, mab, true)), "LFB");
    EXPECT_EQ(name(ibs_mem_source(0x3, mab, true)), "DRAM");  // DataSrc first, as Linux
    // Uncacheable memory before everything, except I/O; the TLB and lock bits.
    const u64 uc = regs::ibs::IbsOpData3(d3(true, false, false)).set_dc_uc_mem_acc().raw();
    EXPECT_EQ(name(ibs_mem_source(0, uc, true)), "uncached");
    EXPECT_EQ(name(ibs_mem_source(0x7, uc | miss, true)), "IO");
    MemSourceInfo m = ibs_mem_source(0, regs::ibs::IbsOpData3(miss).set_dc_l2tlb_miss().set_dc_locked_op().raw(), true);
    EXPECT_TRUE(m.stlb_miss && m.locked);
}

// The simulator's writers (sim_memsrc.h) and pmulab's decoders agree, level by level.
TEST(MemSource, SimulatedSourcesDecodeToTheCacheModelsLevel) {
    const char* want[4] = {"L1", "L2", "L3", "DRAM"};
    for (unsigned level = 0; level < 4; ++level) {
        EXPECT_EQ(name(pebs_mem_source(sim::pebs_data_source(level))), want[level]);
        const u64 data3 = d3(true, level >= 1, level >= 2);
        for (bool zen4 : {true, false})
            EXPECT_EQ(name(ibs_mem_source(sim::ibs_op_data2(level, zen4), data3, zen4)), want[level]) << zen4;
    }
    EXPECT_EQ(sim::pebs_data_source(7), 0xAu);  // beyond memory's index: memory
}

TEST(MemSource, IbsControlsCheckedAndEncoded) {
    IbsInfo z4;
    ibs_decode(sim::amd_zen4(1).cpu(0).snapshot(), &z4);
    const IbsControls both{.rand = true, .l3_miss_only = true};
    EXPECT_TRUE(ibs_check_controls(z4, IbsKind::op, both, StrView("ibs_op")).ok());
    EXPECT_TRUE(ibs_check_controls(z4, IbsKind::fetch, both, StrView("ibs_fetch")).ok());
    Status cyc = ibs_check_controls(z4, IbsKind::op_cycles, IbsControls{.rand = true}, StrView("ibs_op_cycles"));
    EXPECT_EQ(cyc.error().code, Errc::invalid_argument);
    EXPECT_EQ(msg(cyc),
              "--ibs-rand (--sample ibs_op_cycles): op randomisation keeps the hardware's random IbsOpCurCnt[6:0] as "
              "the next period's start, which Linux does only when counting ops: use ibs_op, or ibs_fetch (IbsRandEn)");
    CpuidSnapshot s = sim::amd_zen4(1).cpu(0).snapshot();
    s.set(0x8000001B, 0, {0x7F7, 0, 0, 0});  // Zen 3-like: no Zen 4 extensions, no RdWrOpCnt
    IbsInfo z3;
    ibs_decode(s, &z3);
    Status l3 = ibs_check_controls(z3, IbsKind::op, IbsControls{.l3_miss_only = true}, StrView("ibs_op"));
    EXPECT_EQ(l3.error().code, Errc::unsupported);
    EXPECT_EQ(msg(l3),
              "--ibs-l3-miss-only (--sample ibs_op): this CPU's IBS has no L3 miss filtering: CPUID "
              "Fn8000_001B_EAX[11] (the Zen 4 IBS extensions: L3MissOnly in IbsOpCtl[16] and IbsFetchCtl[59]) is 0 "
              "(EAX = 0x7f7)");
    Status rw = ibs_check_controls(z3, IbsKind::op, IbsControls{.rand = true}, StrView("ibs_op"));
    EXPECT_EQ(rw.error().code, Errc::unsupported);
    EXPECT_EQ(msg(rw), "--ibs-rand (--sample ibs_op): this CPU's IbsOpCurCnt is not writable (CPUID Fn8000_001B_EAX[3] "
                       "RdWrOpCnt = 0), so the random start cannot be kept");
    EXPECT_TRUE(ibs_check_controls(z3, IbsKind::fetch, IbsControls{.rand = true}, StrView("ibs_fetch")).ok());
    // L3MissOnly: IbsOpCtl[16], IbsFetchCtl[59]; IbsRandEn: IbsFetchCtl[57] (ops: no bit).
    EXPECT_EQ(ibs_op_ctl(IbsKind::op, 0x10000, both), 0xB1000u);
    EXPECT_EQ(ibs_fetch_ctl(0x10000, both), 0x0A01000000001000u);
}

namespace {

struct Got final : PmiSink {
    std::vector<PreciseSample> got;
    void sample(u32, u64) override { ADD_FAILURE() << "IBS hands no counter samples"; }
    void precise(u32, const PreciseSample& s) override { got.push_back(s); }
};

void retire(sim::SimCpu& c, const sim::OpInfo& op) {
    c.op(op);
    c.retire(sim::Retired{.instructions = 1});
}

}  // namespace

// L3MissOnly in the simulated unit: the tagged op that did not miss L3 is discarded and the
// counter restarts; the next period's tagged DRAM load is the sample, with its source.
TEST(MemSource, IbsL3MissOnlyKeepsTheDramLoadWithItsSource) {
    sim::SimMachine m = sim::amd_zen4(1);
    sim::SimCpu& c = m.cpu(0);
    IbsSource src;
    src.op_ctl = ibs_op_ctl(IbsKind::op, 16, IbsControls{.l3_miss_only = true});
    src.zen4 = true;
    Got got;
    u64 ack = 0;
    ASSERT_TRUE(src.start(m).ok());
    for (int i = 0; i < 16; ++i) retire(c, sim::OpInfo{.rip = 0x100, .load = true, .data_addr = 0x40, .served = 2});
    EXPECT_FALSE(src.drain(m, 0, got, &ack));  // the 16th op, an L3 hit: discarded
    for (int i = 0; i < 15; ++i) retire(c, sim::OpInfo{.rip = 0x200});
    retire(c, sim::OpInfo{.rip = 0x300, .load = true, .data_addr = 0x80, .served = 3, .miss_latency = 200});
    EXPECT_TRUE(src.drain(m, 0, got, &ack));
    ASSERT_EQ(got.got.size(), 1u);
    EXPECT_EQ(got.got[0].rip, 0x300u);
    EXPECT_EQ(mem_source_name(got.got[0].source.source), std::string("DRAM"));
    EXPECT_EQ(c.peek(sim::reg::IBS_OP_DATA2), 0x3u);
}

// --ibs-rand on ops: the re-arm keeps the random IbsOpCurCnt[6:0] of the rollover, the
// same under the same seed, so the next sample comes that many ops early.
TEST(MemSource, IbsOpRandomStartIsKeptAndSeeded) {
    auto first_rearm = [](u64 seed) {
        sim::SimMachine m = sim::amd_zen4(1);
        sim::SimCpu& c = m.cpu(0);
        c.seed_ibs(seed);
        IbsSource src;
        src.op_ctl = ibs_op_ctl(IbsKind::op, 256);
        src.op_rand = true;
        Got got;
        u64 ack = 0;
        EXPECT_TRUE(src.start(m).ok());
        for (int i = 0; i < 256; ++i) retire(c, sim::OpInfo{.rip = 0x100});
        EXPECT_TRUE(src.drain(m, 0, got, &ack));
        const u64 start = regs::ibs::IbsOpCtl(c.peek(sim::reg::IBS_OP_CTL)).cur_cnt();
        u64 ops = 0;  // to the next sample
        for (; ops < 1000 && !src.drain(m, 0, got, &ack); ++ops) retire(c, sim::OpInfo{.rip = 0x100});
        EXPECT_EQ(ops, 256 - start);
        return start;
    };
    const u64 a = first_rearm(1), b = first_rearm(2);
    EXPECT_EQ(a, first_rearm(1));
    EXPECT_LT(a, 128u);
    EXPECT_LT(b, 128u);
    EXPECT_NE(a, b);
}

// Gracemont's table differs from the client one from 5 on and swaps the lock and STLB
// bits; Lion Cove's is not known to pmulab, so its records carry no source rather than
// the client table's guess.
TEST(MemSource, EachCoreDecodesWithItsOwnTable) {
    EXPECT_EQ(name(pebs_mem_source(0x6, PebsDseTable::client)), "L3_snoop");
    EXPECT_EQ(name(pebs_mem_source(0x6, PebsDseTable::gracemont)), "L3_HITM");
    EXPECT_EQ(name(pebs_mem_source(0x8, PebsDseTable::gracemont)), "peer_cache");
    EXPECT_EQ(name(pebs_mem_source(0x8, PebsDseTable::client)), "L4");
    EXPECT_EQ(name(pebs_mem_source(0xC, PebsDseTable::gracemont)), "DRAM");
    EXPECT_EQ(name(pebs_mem_source(0x1, PebsDseTable::gracemont)), "L1");
    MemSourceInfo g = pebs_mem_source(0x11, PebsDseTable::gracemont);
    EXPECT_TRUE(g.locked && !g.stlb_miss) << "Gracemont: bit 4 is the lock";
    MemSourceInfo c = pebs_mem_source(0x11, PebsDseTable::client);
    EXPECT_TRUE(c.stlb_miss && !c.locked) << "client: bit 4 is the STLB miss";
    // Crestmont: bit 4 belongs to the source field (unused by the table), 5 the lock, 6
    // the STLB miss; 7 is a forward, 8 a HITM (Gracemont: 8 a forward, 7 a HITM).
    EXPECT_EQ(name(pebs_mem_source(0x7, PebsDseTable::crestmont)), "peer_cache");
    EXPECT_EQ(name(pebs_mem_source(0x8, PebsDseTable::crestmont)), "L3_HITM");
    EXPECT_EQ(name(pebs_mem_source(0x7, PebsDseTable::gracemont)), "L3_HITM");
    EXPECT_EQ(name(pebs_mem_source(0x1A, PebsDseTable::crestmont)), "DRAM");
    MemSourceInfo cm = pebs_mem_source(0x41, PebsDseTable::crestmont);
    EXPECT_TRUE(cm.stlb_miss && !cm.locked && cm.source == MemSource::l1);
    EXPECT_TRUE(pebs_mem_source(0x21, PebsDseTable::crestmont).locked);
    // An unknown table's layout is unknown too: no source and no flags (bits 4 and 5 are
    // the client's lock and STLB bits, not necessarily Lion Cove's).
    MemSourceInfo m = pebs_mem_source(0x31, PebsDseTable::unknown);
    EXPECT_EQ(m.source, MemSource::none);
    EXPECT_FALSE(m.stlb_miss || m.locked);
}
