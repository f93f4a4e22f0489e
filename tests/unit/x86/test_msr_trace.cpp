// --trace-msr (x86/msr_trace.h): register names and decoded fields, buffering on APs,
// folding of identical runs, faults and a full buffer; and the global option end to end.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "support/test_platform.h"
#include "x86/msr_trace.h"

using namespace pmulab;

namespace {

TraceNames names_for(Vendor v, u8 version = 4, bool netburst = false) {
    TraceNames n;
    n.vendor = v;
    n.pmu.version = version;
    n.pmu.netburst = netburst;
    return n;
}

std::string name(const TraceNames& n, TraceOp op, u32 addr) {
    StrBuf b;
    trace_reg_name(n, op, addr, b);
    return b.c_str();
}

std::string fields(const TraceNames& n, u32 msr, u64 v) {
    StrBuf b;
    trace_fields(n, msr, v, b);
    return b.c_str();
}

// Every name and decoded field of the MSR ranges pmulab knows, for four PMUs and
// eighteen values, as one FNV-1a 64 hash: pinned when trace_fields was split into one
// function per register family (the value is the text of the code before the split).
TEST(MsrTraceNames, EveryFieldTextStaysTheSame) {
    static const u64 vals[] = {0,
                               1,
                               ~0ull,
                               0x4300c0,
                               0x5300c0,
                               0x300c0,
                               0x1234567890abcdefull,
                               0xfedcba9876543210ull,
                               0x7,
                               0x70000000full,
                               0x8000000000000000ull,
                               0x0000000100000003ull,
                               0x3333,
                               0xb0b,
                               0x4d0fe00ull,
                               0x5555555555555555ull,
                               0xaaaaaaaaaaaaaaaaull,
                               0x100000000ull};
    TraceNames ns[4];
    ns[0].vendor = Vendor::intel, ns[0].pmu.version = 5, ns[0].pmu.gp_counters = 8;
    ns[1].vendor = Vendor::amd, ns[1].pmu.amd_perfmon_v2 = true, ns[1].pmu.amd_core_counters = 6;
    ns[2].vendor = Vendor::intel, ns[2].pmu.netburst = true, ns[2].pmu.netburst_model = 2;
    ns[3].vendor = Vendor::hygon;
    u64 h = 0xCBF29CE484222325ull;
    auto each = [&](u32 m) {
        for (const TraceNames& n : ns)
            for (u64 v : vals) {
                StrBuf f, r, line;
                trace_fields(n, m, v, f);
                trace_reg_name(n, TraceOp::wrmsr, m, r);
                line.printf("%x %llx %s | %s\n", m, (unsigned long long)v, r.c_str(), f.c_str());
                for (usize i = 0; i < line.size(); ++i) h = (h ^ u8(line.c_str()[i])) * 0x100000001B3ull;
            }
    };
    static const u32 ranges[][2] = {{0, 0x400},
                                    {0x6E0, 0x6F0},
                                    {0x1320, 0x1328},
                                    {0xC0000000, 0xC0000100},
                                    {0xC0010000, 0xC0010020},
                                    {0xC0010200, 0xC0010240},
                                    {0xC0011000, 0xC0011040}};
    for (const auto& r : ranges)
        for (u32 m = r[0]; m < r[1]; ++m) each(m);
    // GLOBAL_STATUS flags, FREEZE_LBRS_ON_PMI, LBR MSR names, MSR_UNC_CBO_CONFIG (396H), IBS and PEBS MSR names,
    // the prefetcher controls (MSR_MISC_FEATURE_CONTROL, ECORE_PREFETCH_1320H-1327H),
    // AMD's L3 PMU (ChL3PmcCfg/ChL3Pmc, C001_0230H..023BH)
    EXPECT_EQ(h, 0xE301B9516D7E7E0Eull);
}

struct Sink final : TraceSink {
    std::vector<TraceEntry> got;
    u64 dropped = 0;
    void trace(const TraceEntry& e) override { got.push_back(e); }
    void trace_dropped(u64 n) override { dropped += n; }
};

}  // namespace

TEST(MsrTrace, NamesRegistersOfEveryVendor) {
    TraceNames intel = names_for(Vendor::intel), v3 = names_for(Vendor::intel, 3);
    EXPECT_EQ(name(intel, TraceOp::wrmsr, 0x186), "IA32_PERFEVTSEL0");
    EXPECT_EQ(name(intel, TraceOp::wrmsr, 0x38F), "IA32_PERF_GLOBAL_CTRL");
    EXPECT_EQ(name(intel, TraceOp::wrmsr, 0x390), "IA32_PERF_GLOBAL_STATUS_RESET");
    EXPECT_EQ(name(v3, TraceOp::wrmsr, 0x390), "IA32_PERF_GLOBAL_OVF_CTRL");
    EXPECT_EQ(name(intel, TraceOp::wrmsr, 0x4C2), "IA32_A_PMC1");
    EXPECT_EQ(name(intel, TraceOp::rdmsr, 0x1A0), "IA32_MISC_ENABLE");
    EXPECT_EQ(name(intel, TraceOp::rdpmc, 0x40000001), "FIXED_CTR1");
    EXPECT_EQ(name(intel, TraceOp::rdpmc, 2), "PMC2");
    EXPECT_EQ(name(intel, TraceOp::rdmsr, 0x12345), "MSR 0x12345");
    EXPECT_EQ(name(intel, TraceOp::wrmsr, 0x1A4), "MSR_MISC_FEATURE_CONTROL");  // --prefetchers off
    EXPECT_EQ(name(intel, TraceOp::wrmsr, 0x1320), "ECORE_PREFETCH_1320H");
    EXPECT_EQ(name(intel, TraceOp::rdmsr, 0x1327), "ECORE_PREFETCH_1327H");
    EXPECT_EQ(name(intel, TraceOp::rdmsr, 0x1328), "MSR 0x1328");
    TraceNames amd = names_for(Vendor::amd, 0);
    EXPECT_EQ(name(amd, TraceOp::wrmsr, 0xC0010204), "PERF_CTL2");
    EXPECT_EQ(name(amd, TraceOp::wrmsr, 0xC0010205), "PERF_CTR2");
    EXPECT_EQ(name(amd, TraceOp::wrmsr, 0xC0010001), "PerfEvtSel1");
    EXPECT_EQ(name(amd, TraceOp::wrmsr, 0xC0000301), "PerfCntrGlobalCtl");
    EXPECT_EQ(name(amd, TraceOp::wrmsr, 0xC0000108), "PrefetchControl");
    EXPECT_EQ(name(amd, TraceOp::wrmsr, 0x1A4), "MSR 0x1a4");
    EXPECT_EQ(name(amd, TraceOp::rdpmc, 3), "PERF_CTR3");
    TraceNames p4 = names_for(Vendor::intel, 0, true);
    EXPECT_EQ(name(p4, TraceOp::wrmsr, 0x36C), "MSR_IQ_CCCR0");
    EXPECT_EQ(name(p4, TraceOp::wrmsr, 0x309), "MSR_FLAME_COUNTER1");  // not IA32_FIXED_CTR0 here
    EXPECT_EQ(name(p4, TraceOp::wrmsr, 0x3B8), "MSR_CRU_ESCR0");
    EXPECT_EQ(name(p4, TraceOp::rdpmc, 0x8000000C), "MSR_IQ_COUNTER0 (fast read)");
}

TEST(MsrTrace, NamesTheClientUncoresCboxes) {
    TraceNames skl = names_for(Vendor::intel, 4), snb = names_for(Vendor::intel, 3);
    EXPECT_EQ(name(skl, TraceOp::wrmsr, 0xE01), "MSR_UNC_PERF_GLOBAL_CTRL");
    EXPECT_EQ(name(snb, TraceOp::wrmsr, 0x391), "MSR_UNC_PERF_GLOBAL_CTRL");
    EXPECT_NE(name(skl, TraceOp::wrmsr, 0x391), "MSR_UNC_PERF_GLOBAL_CTRL");  // IA32_PERF_GLOBAL_STATUS_SET
    EXPECT_EQ(name(skl, TraceOp::rdmsr, 0x396), "MSR_UNC_CBO_CONFIG");
    EXPECT_EQ(name(skl, TraceOp::wrmsr, 0x730), "MSR_UNC_CBO_3_PERFEVTSEL0");
    EXPECT_EQ(name(skl, TraceOp::wrmsr, 0x701), "MSR_UNC_CBO_0_PERFEVTSEL1");
    EXPECT_EQ(name(skl, TraceOp::rdmsr, 0x776), "MSR_UNC_CBO_7_PERFCTR0");
    EXPECT_EQ(name(skl, TraceOp::rdmsr, 0x703), "MSR 0x703");
    EXPECT_EQ(name(names_for(Vendor::amd), TraceOp::rdmsr, 0x700), "MSR 0x700");
}

TEST(MsrTrace, DecodesControlRegisters) {
    TraceNames intel = names_for(Vendor::intel);
    EXPECT_EQ(fields(intel, 0x186, 0x0041010E), "event=0x0e umask=0x01 usr en");
    EXPECT_EQ(fields(intel, 0x187, 0x01C300C0), "event=0xc0 umask=0x00 cmask=1 usr os inv en");
    EXPECT_EQ(fields(intel, 0x186, 0), "clear");
    EXPECT_EQ(fields(intel, 0x38D, 0x0B3), "FIXED_CTR0=os+usr FIXED_CTR1=os+usr+pmi");
    EXPECT_EQ(fields(intel, 0x38F, 0x70000000Full), "PMC0-3,FIXED_CTR0-2");
    EXPECT_EQ(fields(intel, 0x38F, 0), "none");
    EXPECT_EQ(fields(intel, 0xC1, 1234), "");  // counters have no fields
    TraceNames amd = names_for(Vendor::amd, 0);
    EXPECT_EQ(fields(amd, 0xC0010200, 0x201004301C1ull), "event=0x1c1 umask=0x01 usr os host en");
    EXPECT_EQ(fields(amd, 0xC0000301, 0x21), "PERF_CTR0,5");
    EXPECT_EQ(fields(amd, 0xC0010015, 1ull << 30), "IRPerfEn=1");
    TraceNames p4 = names_for(Vendor::intel, 0, true);
    EXPECT_EQ(fields(p4, 0x370, 0x39000), "escr_select=4 active_thread=3 enable");
    EXPECT_EQ(fields(p4, 0x3B8, (u64(2) << 25) | (u64(1) << 9) | 0xC),
              "event_select=0x02 event_mask=0x0001 t0_os t0_usr");
}

TEST(MsrTrace, BspAccessesAreImmediateApAccessesWaitForTheBsp) {
    sim::SimMachine m = sim::intel_v4_goldmont_plus(2);
    Sink sink;
    MsrTrace t(m, sink);
    ASSERT_TRUE(t.rdmsr(0x186).ok());
    ASSERT_EQ(sink.got.size(), 1u);  // the BSP outside run_on_cpu: delivered at once
    size_t during = 99;
    Status s = run_on(t, 1, [&] {
        EXPECT_TRUE(t.wrmsr(0x186, 0x43003C).ok());
        EXPECT_FALSE(t.rdmsr(0x12345).ok());
        during = sink.got.size();  // nothing delivered while on the AP
    });
    ASSERT_TRUE(s.ok());
    EXPECT_EQ(during, 1u);
    ASSERT_EQ(sink.got.size(), 3u);
    EXPECT_EQ(sink.got[1].cpu, 1u);
    EXPECT_EQ(sink.got[1].op, TraceOp::wrmsr);
    EXPECT_EQ(sink.got[1].value, 0x43003Cu);
    EXPECT_EQ(sink.got[1].vector, 0);
    EXPECT_EQ(sink.got[2].vector, kVectorGP);
    EXPECT_EQ(m.cpu(1).peek(0x186), 0x43003Cu);  // the write went through to the CPU
}

TEST(MsrTrace, IdenticalRunsAreFoldedWithTheirCount) {
    sim::SimMachine m = sim::intel_v4_goldmont_plus(2);
    Sink sink;
    MsrTrace t(m, sink);
    Status s = run_on(t, 1, [&] {
        for (int i = 0; i < 5; ++i) {
            t.run_begin();
            t.code(TraceOp::wrmsr, 0x38F, 1);
            EXPECT_TRUE(t.rdpmc(0).ok());  // values differ from run to run: still the same run
            t.code(TraceOp::wrmsr, 0x38F, 0);
            t.run_end();
        }
        t.run_begin();
        t.code(TraceOp::wrmsr, 0x38F, 3);  // a different value: a new block
        t.run_end();
    });
    ASSERT_TRUE(s.ok());
    ASSERT_EQ(sink.got.size(), 4u);
    EXPECT_TRUE(sink.got[0].block_first);
    EXPECT_EQ(sink.got[0].runs, 5u);
    EXPECT_TRUE(sink.got[0].code);
    EXPECT_EQ(sink.got[1].op, TraceOp::rdpmc);
    EXPECT_FALSE(sink.got[1].code);
    EXPECT_EQ(sink.got[2].runs, 5u);
    EXPECT_TRUE(sink.got[3].block_first);
    EXPECT_EQ(sink.got[3].runs, 1u);
    EXPECT_EQ(sink.got[3].value, 3u);
}

TEST(MsrTrace, AFullBufferIsReportedNotOverrun) {
    sim::SimMachine m = sim::intel_v4_goldmont_plus(2);
    Sink sink;
    MsrTrace t(m, sink, 4);
    Status s = run_on(t, 1, [&] {
        for (int i = 0; i < 10; ++i) (void)t.rdmsr(0x186);
    });
    ASSERT_TRUE(s.ok());
    EXPECT_EQ(sink.got.size(), 4u);
    EXPECT_EQ(sink.dropped, 6u);
}

TEST(MsrTrace, GlobalOptionTracesACommandInTextAndJson) {
    sim::SimMachine m = sim::intel_v4_goldmont_plus(2);
    pmutest::RunResult r = pmutest::run(m, {"--trace-msr", "msr", "write", "0x186", "0x43003c", "--cpu", "1"});
    ASSERT_EQ(r.status, 0) << r.out;
    EXPECT_TRUE(r.has_line("msr: CPU 1 WRMSR IA32_PERFEVTSEL0 (0x186) <- 0x43003c: event=0x3c umask=0x00 usr os en"))
        << r.out;
    EXPECT_TRUE(r.opts.trace_msr);
    r = pmutest::run(m, {"--json", "--trace-msr", "msr", "read", "0x12345", "--cpu", "0"});
    bool found = false;
    for (const pmutest::Json& j : pmutest::parse_json_lines(r.out)) {
        if (j["type"].s() != "msr_trace" || j["msr"].s() != "0x12345") continue;
        found = true;
        EXPECT_EQ(j["result"].s(), "#GP");
        EXPECT_EQ(j["op"].s(), "rdmsr");
        EXPECT_TRUE(j["value"].is_null());
    }
    EXPECT_TRUE(found) << r.out;
    // Without the option nothing is traced.
    r = pmutest::run(m, {"msr", "read", "0x186"});
    EXPECT_EQ(r.out.find("msr: CPU"), std::string::npos) << r.out;
}

namespace {

// A machine whose current_cpu() can run a callback once: an NMI that arrives while the
// tracer is inside a call (record() asks for the CPU after entering).
class NmiHw final : public Hw {
public:
    explicit NmiHw(Hw& inner) : inner_(inner) {}
    std::function<void()> nmi;
    CpuidRegs cpuid(u32 leaf, u32 subleaf) override { return inner_.cpuid(leaf, subleaf); }
    Result<u64> rdmsr(u32 msr) override { return inner_.rdmsr(msr); }
    Status wrmsr(u32 msr, u64 value) override { return inner_.wrmsr(msr, value); }
    Result<u64> rdpmc(u32 index) override { return inner_.rdpmc(index); }
    u64 rdtsc() override { return inner_.rdtsc(); }
    u32 cpu_count() override { return inner_.cpu_count(); }
    u32 current_cpu() override {
        if (nmi) {
            auto f = std::move(nmi);
            nmi = nullptr;
            f();
        }
        return inner_.current_cpu();
    }
    Result<CpuTopology> topology(u32 cpu) override { return inner_.topology(cpu); }
    Status run_on_cpu(u32 cpu, CpuFn fn, void* ctx) override { return inner_.run_on_cpu(cpu, fn, ctx); }

private:
    Hw& inner_;
};

std::vector<u32> addrs(const Sink& s) {
    std::vector<u32> a;
    for (const TraceEntry& e : s.got) a.push_back(e.addr);
    return a;
}

}  // namespace

// The PMI handler's NMI records from inside another access's record() (parked, then appended
// after it), and while held nothing is printed by record() itself.
TEST(MsrTrace, AnNmiInsideTheTracerIsParkedAndKeptInOrder) {
    sim::SimMachine m = sim::intel_v4_goldmont_plus(2);
    NmiHw hw(m);
    Sink sink;
    MsrTrace t(hw, sink);
    t.hold(true);
    ASSERT_TRUE(t.rdmsr(0x186).ok());
    hw.nmi = [&] { (void)t.rdmsr(0x38E); };  // the NMI's access, inside the next record()
    ASSERT_TRUE(t.rdmsr(0x187).ok());
    ASSERT_TRUE(t.rdmsr(0x188).ok());
    EXPECT_TRUE(sink.got.empty()) << "held: nothing printed by the accesses themselves";
    t.hold(false);
    EXPECT_EQ(addrs(sink), (std::vector<u32>{0x186, 0x187, 0x38E, 0x188}));
}

// An NMI while the BSP prints: parked, printed by the next flush, never lost.
TEST(MsrTrace, AnNmiWhileFlushingWaitsForTheNextFlush) {
    sim::SimMachine m = sim::intel_v4_goldmont_plus(2);
    NmiHw hw(m);
    struct NmiSink final : TraceSink {
        std::vector<TraceEntry> got;
        std::function<void()> during;
        void trace(const TraceEntry& e) override {
            got.push_back(e);
            if (during) {
                auto f = std::move(during);
                during = nullptr;
                f();
            }
        }
        void trace_dropped(u64) override {}
    } sink;
    MsrTrace t(hw, sink);
    t.hold(true);
    ASSERT_TRUE(t.rdmsr(0x186).ok());
    ASSERT_TRUE(t.rdmsr(0x187).ok());
    sink.during = [&] { (void)t.rdmsr(0x38E); };
    t.flush();
    ASSERT_EQ(sink.got.size(), 2u);
    t.flush();
    ASSERT_EQ(sink.got.size(), 3u);
    EXPECT_EQ(sink.got[2].addr, 0x38Eu);
    t.hold(false);
}

// The LBR MSRs by name (legacy, architectural, AMD LbrExtV2), as run --lbr reads them.
TEST(MsrTraceNames, LbrMsrs) {
    TraceNames intel, amd;
    intel.vendor = Vendor::intel;
    amd.vendor = Vendor::amd;
    EXPECT_EQ(name(intel, TraceOp::rdmsr, 0x1C8), "MSR_LBR_SELECT");
    EXPECT_EQ(name(intel, TraceOp::rdmsr, 0x1C9), "MSR_LASTBRANCH_TOS");
    EXPECT_EQ(name(intel, TraceOp::rdmsr, 0x680), "MSR_LASTBRANCH_0_FROM_IP");
    EXPECT_EQ(name(intel, TraceOp::rdmsr, 0x6DF), "MSR_LASTBRANCH_31_TO_IP");
    EXPECT_EQ(name(intel, TraceOp::rdmsr, 0xDC5), "MSR_LBR_INFO_5");
    EXPECT_EQ(name(intel, TraceOp::rdmsr, 0x14CE), "IA32_LBR_CTL");
    EXPECT_EQ(name(intel, TraceOp::rdmsr, 0x14CF), "IA32_LBR_DEPTH");
    EXPECT_EQ(name(intel, TraceOp::rdmsr, 0x1601), "IA32_LBR_1_TO_IP");
    EXPECT_EQ(name(intel, TraceOp::rdmsr, 0x121F), "IA32_LBR_31_INFO");
    EXPECT_EQ(name(amd, TraceOp::rdmsr, 0xC000010E), "LBR_SELECT");
    EXPECT_EQ(name(amd, TraceOp::rdmsr, 0xC000010F), "DBG_EXTN_CFG");
    EXPECT_EQ(name(amd, TraceOp::rdmsr, 0xC0010300), "LBR_FROM_0");
    EXPECT_EQ(name(amd, TraceOp::rdmsr, 0xC0010303), "LBR_TO_1");
    EXPECT_EQ(name(amd, TraceOp::rdmsr, 0x1C8), "MSR 0x1c8");  // Intel's address: nothing on AMD
}

// The IBS MSRs by name on AMD (run --sample ibs_op), nothing on Intel.
TEST(MsrTraceNames, IbsMsrs) {
    TraceNames intel, amd;
    intel.vendor = Vendor::intel;
    amd.vendor = Vendor::amd;
    EXPECT_EQ(name(amd, TraceOp::rdmsr, 0xC0011030), "IbsFetchCtl");
    EXPECT_EQ(name(amd, TraceOp::rdmsr, 0xC0011031), "IbsFetchLinAd");
    EXPECT_EQ(name(amd, TraceOp::rdmsr, 0xC0011033), "IbsOpCtl");
    EXPECT_EQ(name(amd, TraceOp::rdmsr, 0xC0011034), "IbsOpRip");
    EXPECT_EQ(name(amd, TraceOp::rdmsr, 0xC0011035), "IbsOpData");
    EXPECT_EQ(name(amd, TraceOp::rdmsr, 0xC0011037), "IbsOpData3");
    EXPECT_EQ(name(amd, TraceOp::rdmsr, 0xC0011038), "IbsDcLinAd");
    EXPECT_EQ(name(amd, TraceOp::rdmsr, 0xC0011039), "IbsDcPhysAd");
    EXPECT_EQ(name(amd, TraceOp::rdmsr, 0xC001103A), "IBS_CTL");
    EXPECT_EQ(name(intel, TraceOp::rdmsr, 0xC0011033), "MSR 0xc0011033");
}

TEST(MsrTraceNames, IntelPtAndPebsReloadMsrs) {
    TraceNames icl = names_for(Vendor::intel, 5), amd = names_for(Vendor::amd);
    EXPECT_EQ(name(icl, TraceOp::wrmsr, 0x570), "IA32_RTIT_CTL");
    EXPECT_EQ(name(icl, TraceOp::rdmsr, 0x571), "IA32_RTIT_STATUS");
    EXPECT_EQ(name(icl, TraceOp::wrmsr, 0x560), "IA32_RTIT_OUTPUT_BASE");
    EXPECT_EQ(name(icl, TraceOp::wrmsr, 0x561), "IA32_RTIT_OUTPUT_MASK_PTRS");
    EXPECT_EQ(name(icl, TraceOp::wrmsr, 0x14C1), "MSR_RELOAD_PMC0");
    EXPECT_EQ(name(icl, TraceOp::wrmsr, 0x14C8), "MSR_RELOAD_PMC7");
    EXPECT_EQ(name(icl, TraceOp::wrmsr, 0x14C9), "MSR 0x14c9");
    EXPECT_EQ(name(icl, TraceOp::wrmsr, 0x1309), "MSR_RELOAD_FIXED_CTR0");
    EXPECT_EQ(name(icl, TraceOp::wrmsr, 0x130C), "MSR_RELOAD_FIXED_CTR3");
    EXPECT_EQ(name(amd, TraceOp::wrmsr, 0x570), "MSR 0x570");
}
