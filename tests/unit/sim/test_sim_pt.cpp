// The simulated Intel PT and PEBS output to it (sim_pt.h): which models have the MSRs, the
// #GP rules, the record written as packets with a PMI per record (PEBS_ENABLE[60]), and
// the trace decoding (pmulab's pt_pebs_decode) to the very record the DS area gets.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "pmu/pebs_pt.h"
#include "sim/sim_cpu.h"
#include "sim/sim_pebs.h"
#include "sim/sim_pt.h"

using namespace sim;

namespace {

constexpr u32 kBase = 0x560, kMask = 0x561, kCtl = 0x570, kStatus = 0x571, kReload0 = 0x14C1;
constexpr u32 kDsArea = 0x600, kPebsEnable = 0x3F1, kDataCfg = 0x3F2;
constexpr u64 kTop48 = u64(1) << 48, kOutPt = u64(1) << 61, kPmiEach = u64(1) << 60;
constexpr u8 GP = pmulab::kVectorGP;

u8 wr(SimCpu& c, u32 msr, u64 v) {
    Status s = c.wrmsr(msr, v);
    return s.ok() ? 0 : s.error().vector;
}

// Memory at [kAt, kAt + 0x4000): the DS area at kAt, its buffer at +1000H, the trace at
// +2000H (one 4 KiB range).
struct Memory final : GuestAccess {
    static constexpr u64 kAt = 0x200000, kBuf = kAt + 0x1000, kTrace = kAt + 0x2000;
    std::vector<u8> m = std::vector<u8>(0x4000);
    bool in(u64 a, u64 n) const { return a >= kAt && a + n <= kAt + m.size(); }
    bool read(u64 a, void* out, u64 n) override { return in(a, n) && (std::memcpy(out, &m[a - kAt], n), true); }
    bool write(u64 a, const void* p, u64 n) override { return in(a, n) && (std::memcpy(&m[a - kAt], p, n), true); }
    void gprs(u64 out[16], u64* rflags) override {
        for (int i = 0; i < 16; ++i) out[i] = 0x300 + u64(i);
        *rflags = 0x202;
    }
    u64 q(u64 a) const {
        u64 v = 0;
        std::memcpy(&v, &m[a - kAt], 8);
        return v;
    }
    void set_q(u64 a, u64 v) { std::memcpy(&m[a - kAt], &v, 8); }
    const u8* at(u64 a) const { return &m[a - kAt]; }
};

struct Cpu {
    SimMachine machine = intel_icelake_pt(1);
    SimCpu& c = machine.cpu(0);
    Memory g;
    Cpu() { c.set_guest(&g); }
    ~Cpu() { c.set_guest(nullptr); }
    // MEM_INST_RETIRED.ALL_LOADS on PMC0, one event to the overflow, DATA_CFG `cfg`; the DS
    // area with room for 8 records and a threshold one record in; the reset value `reset`.
    void arm(u64 cfg, u64 reset) {
        c.set_lvt_perf(SimCpu::kLvtDeliveryNmi);
        g.set_q(Memory::kAt + 0x20, Memory::kBuf);
        g.set_q(Memory::kAt + 0x28, Memory::kBuf);
        g.set_q(Memory::kAt + 0x30, Memory::kBuf + 0x800);
        g.set_q(Memory::kAt + 0x38, Memory::kBuf + 1);
        g.set_q(Memory::kAt + 0x40, reset);
        ASSERT_EQ(wr(c, reg::PERFEVTSEL0, evtsel::make(0xD0, 0x81, evtsel::OS | evtsel::EN)), 0);
        ASSERT_EQ(wr(c, reg::PMC0 + 0x400, kTop48 - 1), 0);
        ASSERT_EQ(wr(c, kDsArea, Memory::kAt), 0);
        ASSERT_EQ(wr(c, kDataCfg, cfg), 0);
        ASSERT_EQ(wr(c, reg::GLOBAL_CTRL, 1), 0);
    }
    void trace_on() {
        ASSERT_EQ(wr(c, kBase, Memory::kTrace), 0);
        ASSERT_EQ(wr(c, kMask, 0xFFF), 0);
        ASSERT_EQ(wr(c, kCtl, 0xD), 0);  // TraceEn, OS, User: single-range
    }
    u64 trace_off() {  // the output offset (current only with TraceEn clear)
        EXPECT_EQ(wr(c, kCtl, 0xC), 0);
        return c.peek(kMask) >> 32;
    }
};

Retired load_at(u64 rip, u64 addr) {
    Retired r{.instructions = 1, .loads = 1};
    r.load_served[0] = 1;
    r.last = RetiredInsn{rip, rip + 3, addr, 0, 0, true, true, false};
    return r;
}

}  // namespace

TEST(SimPt, TheMsrsExistWhereTheModelEnumeratesPt) {
    SimMachine pt = intel_icelake_pt(1), icl = intel_icelake(1), skl = intel_skylake(1);
    for (u32 m : {kBase, kMask, kCtl, kStatus, kReload0, kReload0 + 7, 0x1309u, 0x130Cu})
        EXPECT_TRUE(pt.cpu(0).msr_exists(m)) << std::hex << m;
    EXPECT_FALSE(pt.cpu(0).msr_exists(kReload0 + 8)) << "8 GP counters";
    for (u32 m : {kBase, kCtl, kReload0}) EXPECT_FALSE(icl.cpu(0).msr_exists(m)) << "no CPUID.07H:EBX[25]";
    EXPECT_FALSE(skl.cpu(0).msr_exists(kCtl));
    EXPECT_EQ(wr(pt.cpu(0), kPebsEnable, kOutPt | kPmiEach | 1), 0);
    EXPECT_EQ(wr(pt.cpu(0), kPebsEnable, (u64(2) << 61) | 1), GP) << "output 10B is reserved";
    EXPECT_EQ(wr(icl.cpu(0), kPebsEnable, kOutPt | 1), GP) << "PERF_CAPABILITIES[16] is 0";
    EXPECT_EQ(wr(pt.cpu(0), kReload0, kTop48), GP) << "wider than the counter";
}

TEST(SimPt, RtitWritesGpWhereTheSdmSays) {
    SimMachine m = intel_icelake_pt(1);
    SimCpu& c = m.cpu(0);
    EXPECT_EQ(wr(c, kCtl, u64(1) << 18), GP) << "reserved";
    EXPECT_EQ(wr(c, kCtl, u64(1) << 6), GP) << "FabricEn: no trace transport (14H.0:ECX[3])";
    EXPECT_EQ(wr(c, kCtl, u64(6) << 24), GP) << "PSBFreq 6: not in 14H.1:EBX[31:16]";
    EXPECT_EQ(wr(c, kCtl, u64(1) << 40), GP) << "ADDR2_CFG: two address ranges";
    EXPECT_EQ(wr(c, kCtl, (u64(1) << 36) | (u64(5) << 24)), 0) << "ADDR1_CFG, PSBFreq 5";
    EXPECT_EQ(wr(c, kBase, 0x1040), GP) << "bits 6:0";
    EXPECT_EQ(wr(c, kBase, u64(1) << 52), GP) << "above MAXPHYADDR";
    EXPECT_EQ(wr(c, kStatus, 0x8), GP) << "bit 3 is reserved";
    EXPECT_EQ(wr(c, kStatus, 0x7), 0) << "FilterEn, ContextEn, TriggerEn: read-only";
    EXPECT_EQ(c.peek(kStatus), 0u);
    EXPECT_EQ(wr(c, kMask, 0x1000), 0);
    EXPECT_EQ(c.peek(kMask), 0x107Fu) << "bits 6:0 read as 1s";
    EXPECT_EQ(wr(c, kCtl, 0xD), 0);
    EXPECT_EQ(c.peek(kStatus), 0x7u) << "tracing: TriggerEn, ContextEn (OS at CPL 0), FilterEn";
    EXPECT_EQ(wr(c, kBase, 0x1000), GP) << "only RTIT_CTL while TraceEn is set";
    EXPECT_EQ(wr(c, kMask, 0xFFF), GP);
    EXPECT_EQ(wr(c, kCtl, 0x200D), GP) << "BranchEn changed while tracing";
    EXPECT_EQ(wr(c, kCtl, 0x2C), GP) << "clearing TraceEn and changing another bit";
    EXPECT_EQ(wr(c, kCtl, 0xC), 0) << "clearing TraceEn alone";
    EXPECT_EQ(wr(c, kCtl, 0x10D), 0) << "ToPA is enumerated";
    EXPECT_EQ(c.peek(kStatus) & 0x10, 0x10u) << "ToPA output is not modelled: Error";
}

TEST(SimPt, ARecordGoesIntoTheTraceWithAPmiAfterEachRecord) {
    Cpu p;
    p.arm(1, kTop48 - 100);  // the DS area's reset value: not used with PT output
    ASSERT_EQ(wr(p.c, kReload0, kTop48 - 3), 0);
    p.trace_on();
    ASSERT_EQ(wr(p.c, kPebsEnable, kOutPt | kPmiEach | 1), 0);
    p.c.set_tsc(5000);
    p.c.retire(load_at(0x4000, 0x7000));
    EXPECT_TRUE(p.c.take_nmi()) << "PMI_AFTER_EACH_RECORD";
    EXPECT_EQ(p.c.peek(reg::GLOBAL_STATUS) & ((u64(1) << 62) | 1), (u64(1) << 62) | 1);
    EXPECT_EQ(p.c.peek(reg::PMC0), kTop48 - 3) << "reloaded from MSR_RELOAD_PMC0";
    EXPECT_EQ(p.g.q(Memory::kAt + 0x28), Memory::kBuf) << "nothing in the DS buffer";
    EXPECT_EQ(p.c.peek(kMask) >> 32, 0u) << "MASK_PTRS is current only with TraceEn clear";
    const u64 end = p.trace_off();
    ASSERT_EQ(end, 24u + 30u + 39u + 2u) << "PSB+ (PSB CBR MODE PSBEND), basic, memory, BEP";
    const u8* t = p.g.at(Memory::kTrace);
    const u8 head[] = {0x02, 0x82, 0x02, 0x82};
    EXPECT_EQ(std::memcmp(t, head, 4), 0);
    EXPECT_EQ(t[22], 0x02);
    EXPECT_EQ(t[23], 0x23) << "PSBEND";
    const u8 basic[] = {0x02, 0x63, 0x04, 0x04, 0x00, 0x40, 0, 0, 0, 0, 0, 0, 0x0C, 0x01};
    EXPECT_EQ(std::memcmp(t + 24, basic, sizeof basic), 0) << "BBP basic; BIP 0 = IP 4000H; BIP 1 = applicable 1";
    EXPECT_EQ(t[end - 2], 0x02);
    EXPECT_EQ(t[end - 1], 0x33) << "BEP";
    // Without PMI_AFTER_EACH_RECORD: the record, no PMI (no threshold in PT mode).
    ASSERT_EQ(wr(p.c, kMask, 0xFFF), 0);
    ASSERT_EQ(wr(p.c, kCtl, 0xD), 0);
    ASSERT_EQ(wr(p.c, kPebsEnable, kOutPt | 1), 0);
    ASSERT_EQ(wr(p.c, reg::GLOBAL_OVF_CTRL, (u64(1) << 62) | 1), 0);
    ASSERT_EQ(wr(p.c, reg::PMC0 + 0x400, kTop48 - 1), 0);
    p.c.retire(load_at(0x4010, 0x7008));
    EXPECT_FALSE(p.c.take_nmi());
    EXPECT_EQ(p.c.peek(reg::GLOBAL_STATUS) & (u64(1) << 62), 0u);
    EXPECT_EQ(p.trace_off(), 24u + 71u) << "a PSB+ after TraceEn, the record";
    // Tracing off: the record is dropped, the counter still reloads.
    ASSERT_EQ(wr(p.c, kPebsEnable, kOutPt | kPmiEach | 1), 0);
    ASSERT_EQ(wr(p.c, reg::PMC0 + 0x400, kTop48 - 1), 0);
    p.c.set_lvt_perf(SimCpu::kLvtDeliveryNmi);  // the first PMI masked the LVT entry
    p.c.retire(load_at(0x4020, 0x7010));
    EXPECT_TRUE(p.c.take_nmi());
    EXPECT_EQ(p.c.peek(kMask) >> 32, 95u);
    EXPECT_EQ(p.c.peek(reg::PMC0), kTop48 - 3);
}

// The same load through the DS area and through the trace: pmulab's decoder gives the
// DS area's record byte for byte (basic, memory info and GPR groups).
TEST(SimPt, TheDecodedTraceIsTheRecordTheDsAreaGets) {
    Cpu ds, pt;
    ds.arm(3, kTop48 - 1);
    ASSERT_EQ(wr(ds.c, kPebsEnable, 1), 0);
    ds.c.set_tsc(777);
    ds.c.retire(load_at(0x4100, 0x7A00));
    ASSERT_TRUE(ds.c.take_nmi());
    const u64 size = ds.g.q(Memory::kAt + 0x28) - Memory::kBuf;
    ASSERT_EQ(size, 0x20u + 0x20u + 0x90u);
    pt.arm(3, 0);
    ASSERT_EQ(wr(pt.c, kReload0, kTop48 - 1), 0);
    pt.trace_on();
    ASSERT_EQ(wr(pt.c, kPebsEnable, kOutPt | kPmiEach | 1), 0);
    pt.c.set_tsc(777);
    pt.c.retire(load_at(0x4100, 0x7A00));
    ASSERT_TRUE(pt.c.take_nmi());
    const u64 end = pt.trace_off();
    std::vector<u8> out(512);
    pmulab::usize used = 0;
    pmulab::PtDecodeStats st;
    Status s = pmulab::pt_pebs_decode(pt.g.at(Memory::kTrace), pmulab::usize(end), out.data(), out.size(), &used, &st);
    ASSERT_TRUE(s.ok()) << s.error().msg;
    EXPECT_EQ(st.records, 1u);
    EXPECT_EQ(st.psbs, 1u);
    ASSERT_EQ(used, size);
    EXPECT_EQ(std::memcmp(out.data(), ds.g.at(Memory::kBuf), size), 0);
}
