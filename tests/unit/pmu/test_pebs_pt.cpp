// PEBS output to Intel PT (pmu/pebs_pt.h, x86/pt_regs.h): the packet writer and decoder
// round trips, the register fields, and the trace MSRs written back exactly.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "pmu/pebs.h"
#include "pmu/pebs_pt.h"
#include "sim/sim_builders.h"

using namespace pmulab;
using namespace pmulab::regs::pt;

namespace {

u64 q(const u8* p) {
    u64 v = 0;
    std::memcpy(&v, p, 8);
    return v;
}

// Decodes `n` bytes of buf; the stats and the rebuilt records.
struct Decoded {
    Status st = ok_status();
    std::vector<u8> out = std::vector<u8>(1024);
    usize used = 0;
    PtDecodeStats stats;
};
Decoded decode(const u8* buf, usize n, usize cap = 1024) {
    Decoded d;
    d.out.resize(cap);
    d.st = pt_pebs_decode(buf, n, d.out.data(), cap, &d.used, &d.stats);
    return d;
}

}  // namespace

TEST(PebsPtRegs, FieldsAreWhereTheSdmPutsThem) {
    EXPECT_EQ(RtitCtl().set_trace_en().set_topa().set_branch_en().raw(), 0x2101u);
    EXPECT_EQ(RtitCtl().set_psb_freq(5).raw(), 0x05000000u);
    EXPECT_EQ(RtitCtl().set_addr_cfg(0x21).raw(), 0x2100000000ull);
    EXPECT_EQ(RtitOutputMask(0x0000005F00000FFFull).output_offset(), 0x5Fu);
    EXPECT_EQ(RtitOutputMask(0x0000005F00000FFFull).mask_or_table_offset(), 0x1Fu);
    EXPECT_TRUE(RtitStatus(0x10).error());
    EXPECT_EQ(RtitStatus(0x0001234500000000ull).packet_byte_cnt(), 0x12345u);
    EXPECT_EQ(PebsEnablePt(0x3000000000000001ull).output(), kPebsOutputPt);
    EXPECT_TRUE(PebsEnablePt(0x3000000000000001ull).pmi_after_each_record());
    EXPECT_TRUE(PtLeafEcx(0x4).single_range());
    EXPECT_FALSE(PtLeafEcx(0x3).single_range());
    EXPECT_EQ(BbpByte().set_type(kBlockMemory).set_size4().raw(), 0x85u);
    EXPECT_EQ(BipHeader().set_tag(kBipTag).set_id(2).raw(), 0x14u);
}

TEST(PebsPtPackets, BasicAndMemoryBlocksDecodeToTheAdaptiveRecord) {
    u8 buf[256];
    PtWriter w(buf, sizeof buf);
    w.psb();
    w.cbr(0x10);
    w.psbend();
    w.pad();
    w.bbp(kBlockBasic, false);
    w.bip(kBasicItemIp, 0x401006, false);
    w.bip(kBasicItemApplicable, 1, false);
    w.bip(kBasicItemTsc, 0x123456789ull, false);
    w.bbp(kBlockMemory, false);
    w.bip(kMemItemAddress, 0x7040, false);
    w.bip(kMemItemAux, 0, false);
    w.bip(kMemItemLatency, 204, false);
    w.bip(kMemItemTsx, 0, false);
    w.bep();
    ASSERT_FALSE(w.overflow());
    // PSB 16, CBR 4, PSBEND 2, PAD 1, BBP 3 + 3 x 9, BBP 3 + 4 x 9, BEP 2.
    ASSERT_EQ(w.size(), 16u + 4 + 2 + 1 + 30 + 39 + 2);
    EXPECT_EQ(buf[0], 0x02);
    EXPECT_EQ(buf[1], 0x82);
    EXPECT_EQ(buf[23], 0x02);
    EXPECT_EQ(buf[24], 0x63);
    EXPECT_EQ(buf[25], 0x04);
    EXPECT_EQ(buf[26], 0x04) << "BIP id 0: header 00000 100b";
    Decoded d = decode(buf, w.size());
    ASSERT_TRUE(d.st.ok()) << d.st.error().msg;
    EXPECT_EQ(d.stats.records, 1u);
    EXPECT_EQ(d.stats.psbs, 1u);
    EXPECT_EQ(d.stats.skipped, 3u) << "CBR, PSBEND, PAD";
    ASSERT_EQ(d.used, 0x40u);
    const u8* r = d.out.data();
    regs::pebs::BasicFormat f(q(r));
    EXPECT_EQ(f.size(), 0x40u);
    EXPECT_EQ(f.groups(), 1u) << "memory info";
    EXPECT_EQ(q(r + 0x8), 0x401006u);
    EXPECT_EQ(q(r + 0x10), 1u);
    EXPECT_EQ(q(r + 0x18), 0x123456789u);
    EXPECT_EQ(q(r + 0x20), 0x7040u);
    EXPECT_EQ(q(r + 0x30), 204u);
}

TEST(PebsPtPackets, FourByteItemsGprBlocksAndOtherPacketsByTheirLengths) {
    // clang-format off
    const u8 other[] = {
        0x19, 1, 2, 3, 4, 5, 6, 7,          // TSC
        0x99, 0x01,                         // MODE.Exec
        0x59, 0x33,                         // MTC
        0x02, 0x73, 1, 2, 0, 3, 4,          // TMA
        0x1D | (3 << 5), 1, 2, 3, 4, 5, 6,  // FUP, 6 IP bytes
        0x02, 0xF3,                         // OVF
        0x0A,                               // short TNT
        0x07, 0x02,                         // CYC, 2 bytes
    };
    // clang-format on
    u8 buf[512];
    std::memcpy(buf, other, sizeof other);
    PtWriter w(buf + sizeof other, sizeof buf - sizeof other);
    w.bbp(kBlockBasic, true);
    w.bip(kBasicItemIp, 0x1006, true);
    w.bip(kBasicItemApplicable, 2, true);
    w.bbp(kBlockGprs, false);
    for (u8 id = 0; id < kGprItems; ++id) w.bip(id, 0x100 + id, false);
    w.bep();
    Decoded d = decode(buf, sizeof other + w.size());
    ASSERT_TRUE(d.st.ok()) << d.st.error().msg;
    EXPECT_EQ(d.stats.skipped, 8u);
    ASSERT_EQ(d.used, 0x20u + 0x90u);
    const u8* r = d.out.data();
    EXPECT_EQ(regs::pebs::BasicFormat(q(r)).groups(), 2u) << "GPRs";
    EXPECT_EQ(q(r + 0x8), 0x1006u);
    EXPECT_EQ(q(r + 0x10), 2u);
    EXPECT_EQ(q(r + 0x20), 0x100u) << "RFLAGS";
    EXPECT_EQ(q(r + 0x20 + 8 * 17), 0x111u) << "R15";
}

TEST(PebsPtPackets, BadStreamsAreErrorsWithTheRecordsBefore) {
    u8 buf[128];
    PtWriter w(buf, sizeof buf);
    w.bbp(kBlockBasic, false);
    w.bip(kBasicItemIp, 0x10, false);
    w.bep();
    const usize one = w.size();
    buf[one] = 0x02, buf[one + 1] = 0xFF;  // no such ext packet
    Decoded d = decode(buf, one + 2);
    EXPECT_FALSE(d.st.ok());
    EXPECT_EQ(d.st.error().code, Errc::invalid_argument);
    EXPECT_NE(std::strstr(d.st.error().msg, "byte 14"), nullptr) << d.st.error().msg;
    EXPECT_EQ(d.used, 0x20u) << "the record before it";
    d = decode(buf, 5);  // a BIP cut after 2 of its 9 bytes
    EXPECT_FALSE(d.st.ok());
    d = decode(buf, one, 0x10);  // no room for the record
    EXPECT_FALSE(d.st.ok());
    EXPECT_EQ(d.used, 0u);
    // Without a basic block a BEP closes nothing.
    PtWriter e(buf, sizeof buf);
    e.bbp(kBlockMemory, false);
    e.bip(kMemItemAddress, 1, false);
    e.bep();
    d = decode(buf, e.size());
    ASSERT_TRUE(d.st.ok());
    EXPECT_EQ(d.stats.records, 0u);
    EXPECT_EQ(d.used, 0u);
    PtWriter full(buf, 3);
    full.bep();
    full.bep();
    EXPECT_TRUE(full.overflow());
}

// The trace MSRs and the reload MSRs: firmware's values written back exactly; TraceEn
// already set: refused before anything is written.
TEST(PebsPtTrace, SetupProgramsTheTraceAndTeardownRestoresEveryMsr) {
    sim::SimMachine m = sim::intel_icelake_pt(1);
    sim::SimCpu& c = m.cpu(0);
    c.poke(IA32_RTIT_OUTPUT_BASE, 0x12340000);
    c.poke(IA32_RTIT_OUTPUT_MASK_PTRS, 0x0000001000001FFFull);
    c.poke(IA32_RTIT_STATUS, 0x20);
    c.poke(IA32_RTIT_CTL, 0x2004);
    c.poke(MSR_RELOAD_PMC0 + 1, 0x55);
    void* page = std::aligned_alloc(4096, 4096);
    PebsPt pt;
    ASSERT_TRUE(pt.add_cpu(0, page).ok());
    regs::pebs::DsArea ds{};
    ds.pebs_base = ds.pebs_index = 0x9000;
    ds.pebs_max = 0x9F00, ds.pebs_threshold = 0x9100;
    ds.pebs_reset[1] = 0xFFFFFFFFFF00ull;
    u64 en = regs::pebs::PebsEnable().set_pmc(1).raw();
    ASSERT_TRUE(pt.on_setup(m, &ds, 4, &en).ok());
    EXPECT_EQ(en, 0x3000000000000002ull) << "output = PT, a PMI after each record";
    EXPECT_EQ(ds.pebs_max, 0x9000u) << "the DS buffer has no room";
    EXPECT_EQ(c.peek(IA32_RTIT_CTL), 0xDu) << "TraceEn, OS, User; single-range; no branches";
    EXPECT_EQ(c.peek(IA32_RTIT_OUTPUT_BASE), u64(reinterpret_cast<uintptr_t>(page)));
    EXPECT_EQ(c.peek(IA32_RTIT_OUTPUT_MASK_PTRS), 0xFFFu);
    EXPECT_EQ(c.peek(MSR_RELOAD_PMC0 + 1), 0xFFFFFFFFFF00ull) << "the DS area's reset value";
    ASSERT_TRUE(pt.on_teardown(m).ok());
    EXPECT_EQ(c.peek(IA32_RTIT_CTL), 0x2004u);
    EXPECT_EQ(c.peek(IA32_RTIT_STATUS), 0x20u);
    EXPECT_EQ(c.peek(IA32_RTIT_OUTPUT_BASE), 0x12340000u);
    EXPECT_EQ(c.peek(IA32_RTIT_OUTPUT_MASK_PTRS), 0x0000001000001FFFull);
    EXPECT_EQ(c.peek(MSR_RELOAD_PMC0 + 1), 0x55u);
    // Someone traces already: refused, nothing written.
    c.poke(IA32_RTIT_CTL, 0x2005);
    en = regs::pebs::PebsEnable().set_pmc(1).raw();
    Status s = pt.on_setup(m, &ds, 4, &en);
    EXPECT_EQ(s.error().code, Errc::unsupported);
    EXPECT_NE(std::strstr(s.error().msg, "already tracing"), nullptr) << s.error().msg;
    EXPECT_EQ(en, 2u);
    EXPECT_EQ(c.peek(IA32_RTIT_OUTPUT_BASE), 0x12340000u);
    EXPECT_TRUE(pt.on_teardown(m).ok()) << "nothing saved: nothing to write";
    EXPECT_EQ(c.peek(IA32_RTIT_CTL), 0x2005u);
    std::free(page);
}

// Format 5 keeps fixed counter i's reset value at 140H + 8i (DsArea5), not at 80H: the
// reload MSR of a PEBS-via-PT fixed counter takes it from there (found at the merge of
// format 5 with PEBS via PT, which had read format 4's slot).
TEST(PebsPtTrace, Format5FixedCounterReloadComesFromThe140HSlot) {
    sim::SimMachine m = sim::intel_icelake_pt(1);
    sim::SimCpu& c = m.cpu(0);
    void* page = std::aligned_alloc(4096, 4096);
    PebsPt pt;
    ASSERT_TRUE(pt.add_cpu(0, page).ok());
    regs::pebs::DsArea5 ds5{};
    ds5.pebs_base = ds5.pebs_index = 0x9000;
    ds5.pebs_max = 0x9F00, ds5.pebs_threshold = 0x9100;
    ds5.pebs_reset[8] = 0x1111;  // where format 4's fixed counter 0 would be (80H)
    ds5.fixed_reset[0] = 0xFFFFFFFFFFF0ull;
    auto* ds = reinterpret_cast<regs::pebs::DsArea*>(&ds5);
    u64 en = regs::pebs::PebsEnable().set_fixed(0).raw();
    ASSERT_TRUE(pt.on_setup(m, ds, 5, &en).ok());
    EXPECT_EQ(c.peek(MSR_RELOAD_FIXED_CTR0), 0xFFFFFFFFFFF0ull) << "the 140H slot, not 80H";
    ASSERT_TRUE(pt.on_teardown(m).ok());
    std::free(page);
}
