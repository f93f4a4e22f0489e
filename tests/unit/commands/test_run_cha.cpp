// `run --cbox-lookups` on the server uncore's CHAs (pmu/cbox.h, pmu/cbox_cha.cpp) against
// the simulated Skylake-SP, Ice Lake-SP and Sapphire/Emerald Rapids uncores: the CHA of a
// line's slice (the simulator's stand-in hash) counts exactly the lookups of the code, the
// CHA registers come back exactly, the CHA count from CAPID6/7 or SPR_MSR_UNC_CBO_CONFIG,
// and the refusals (exit 3, nothing run) with their reasons.
#include <gtest/gtest.h>

#include "pmu/cbox.h"
#include "sim/sim_builders.h"
#include "sim/sim_slice.h"
#include "sim/sim_uncore.h"
#include "support/sim_cmd.h"
#include "support/sim_measure.h"
#include "support/slice_lookups.h"
#include "support/test_platform.h"
#include "x86/msr_trace.h"

using namespace pmulab;
using simm::Cmd;
using simm::kSliceAt40;
using simm::run_line;
using simm::SimPlatform;

namespace {

sim::SimMachine server(u32 signature) {
    sim::IntelCpuidSpec s;
    s.max_leaf = 0x20;
    s.signature = signature;
    s.brand = "pmulab simulated Intel Xeon";
    s.leaf_0a = {0x07300404, 0, 0, 0x00000603};
    return sim::intel_machine(s, {1, 2, 1}, 0x33c5);
}

CpuIdentity identity(sim::SimMachine& m) {
    CpuidSnapshot snap;
    capture_cpuid(m, &snap);
    return decode_cpuid(snap).id;
}

}  // namespace

TEST(RunCha, TheLinesChaCountsEveryLookupAndTheRegistersComeBack) {
    sim::SimMachine m = sim::intel_skylake_server();
    // What pmulab must put back: CHA 0's box frozen, a select with a count, a filter; CHA 17's counter.
    ASSERT_TRUE(m.wrmsr(0xE00, 0x100).ok());
    ASSERT_TRUE(m.wrmsr(0xE01, 0x1834).ok());
    ASSERT_TRUE(m.wrmsr(0xE05, 0x20000).ok());
    ASSERT_TRUE(m.wrmsr(0xE08, 77).ok());
    ASSERT_TRUE(m.wrmsr(0xF18, 5).ok());
    SimPlatform p(m);
    Cmd c = simm::run_two_lines(p);
    ASSERT_EQ(c.status, 0) << c.out;
    simm::expect_lookups_in_hash_slice(c, "UNC_CHA_LLC_LOOKUP.ALL", 18);
    for (const pmutest::Json& r : simm::of_type(c, "cbox_lookups")) EXPECT_EQ(r["unit"].s(), "cha");
    EXPECT_EQ(m.rdmsr(0xE00).value(), 0x100u);
    EXPECT_EQ(m.rdmsr(0xE01).value(), 0x1834u);
    EXPECT_EQ(m.rdmsr(0xE05).value(), 0x20000u);
    EXPECT_EQ(m.rdmsr(0xE08).value(), 77u);
    EXPECT_EQ(m.rdmsr(0xF18).value(), 5u);  // CHA 17's CTR0
    EXPECT_EQ(m.rdmsr(0xF11).value(), 0u);  // CHA 17's CTL0
    EXPECT_EQ(m.rdmsr(0xF15).value(), 0u);
}

TEST(RunCha, TextNamesTheCha) {
    sim::SimMachine m = sim::intel_skylake_server();
    SimPlatform p(m);
    Cmd c = run_line(p, std::string("run --cpu 0 --code ") + kSliceAt40 +
                            " --name at40 --events tsc --cbox-lookups --unroll 4 --reps 1 --warmup 1");
    ASSERT_EQ(c.status, 0) << c.out;
    EXPECT_NE(c.out.find("CHA lookups of at40 on CPU 0:"), std::string::npos) << c.out;
    EXPECT_NE(c.out.find("-> slice "), std::string::npos) << c.out;
}

TEST(ChaDetect, EachGenerationCountsItsChas) {
    struct Case {
        u32 signature;
        ChaGen gen;
        u32 chas, box_ctl_17;
    } cases[] = {
        {0x00050654, ChaGen::skx, 18, 0xF10},   // Skylake-SP: CAPID6
        {0x000606A6, ChaGen::icx, 28, 0xEEE},   // Ice Lake-SP: CAPID6 + CAPID7
        {0x000806F8, ChaGen::spr, 30, 0x2110},  // Sapphire Rapids: MSR 2FFEH
        {0x000C06F2, ChaGen::spr, 30, 0x2110},  // Emerald Rapids (06_CFH)
    };
    for (const Case& k : cases) {
        sim::SimMachine m = server(k.signature);
        CpuIdentity id = identity(m);
        EXPECT_EQ(cha_generation(id), k.gen) << std::hex << k.signature;
        CboxPmu pmu;
        ASSERT_TRUE(pmu.detect(m, id).ok()) << std::hex << k.signature;
        EXPECT_EQ(pmu.boxes(), k.chas);
        EXPECT_STREQ(pmu.unit(), "cha");
        EXPECT_EQ(cha_box_ctl(k.gen, 17), k.box_ctl_17);
    }
    // Ice Lake-SP's CHAs 18 .. 33 skip one slot, 34 .. 39 start at B60H (icx_cha_msr_offsets).
    EXPECT_EQ(cha_box_ctl(ChaGen::icx, 18), 0xF0Au);
    EXPECT_EQ(cha_box_ctl(ChaGen::icx, 39), 0xBA6u);
    EXPECT_EQ(cha_ctl0(ChaGen::spr, 0), 0x2002u);
    EXPECT_EQ(cha_filter0(ChaGen::spr, 0), 0x200Eu);
    EXPECT_EQ(cha_filter0(ChaGen::skx, 0), 0xE05u);
    // The CAPID bits have holes: the count is the bits set, as Linux's hweight.
    sim::SimMachine skx = server(0x00050654);
    u32 capid6 = skx.pci_read32(sim::SimUncore::kPcuBus, 30, 3, 0x9C).value();
    EXPECT_EQ(__builtin_popcount(capid6), 18);
    EXPECT_NE(capid6, (1u << 18) - 1);
    EXPECT_EQ(skx.pci_read32(sim::SimUncore::kPcuBus, 30, 3, 0).value(), 0x20838086u);
    EXPECT_EQ(skx.pci_read32(0, 30, 3, 0).value(), 0xFFFFFFFFu);
}

TEST(ChaDetect, RefusalsSayWhy) {
    struct Case {
        u32 signature;
        const char* why;
    } cases[] = {
        {0x000A06D1, "Granite Rapids' CHA registers are found only through the uncore PMON discovery table"},
        {0x000506E3, nullptr},  // a client part: C-Boxes, not CHAs
    };
    for (const Case& k : cases) {
        sim::SimMachine m = server(k.signature);
        CboxPmu pmu;
        Status s = pmu.detect(m, identity(m));
        if (!k.why) {
            EXPECT_FALSE(s.ok() && std::string(pmu.unit()) == "cha");
            continue;
        }
        ASSERT_FALSE(s.ok());
        EXPECT_EQ(s.error().code, Errc::unsupported);
        EXPECT_NE(std::string(s.error().msg).find(k.why), std::string::npos) << s.error().msg;
    }
    // Emerald Rapids XCC: SPR_MSR_UNC_CBO_CONFIG reads 0.
    sim::SimMachine emr = server(0x000C06F2);
    emr.uncore()->set_boxes(0);
    CboxPmu pmu;
    Status s = pmu.detect(emr, identity(emr));
    ASSERT_FALSE(s.ok());
    EXPECT_NE(std::string(s.error().msg).find("SPR_MSR_UNC_CBO_CONFIG (0x2ffe) reads 0"), std::string::npos)
        << s.error().msg;
}

TEST(ChaDetect, AGuestIsExit3AndNothingRuns) {
    sim::IntelCpuidSpec s;
    s.max_leaf = 0x20;
    s.signature = 0x00050654;
    s.hypervisor = true;
    s.leaf_0a = {0x07300404, 0, 0, 0x00000603};
    sim::SimMachine m = sim::intel_machine(s, {1, 2, 1}, 0x33c5);
    EXPECT_EQ(m.uncore(), nullptr);
    SimPlatform p(m);
    Cmd c = run_line(p, std::string("--json run --cpu 0 --code ") + kSliceAt40 + " --events tsc --cbox-lookups");
    EXPECT_EQ(c.status, 3) << c.out;
    EXPECT_TRUE(simm::results(c).empty());
    EXPECT_NE(c.out.find("a hypervisor's guest"), std::string::npos) << c.out;
}

TEST(SimCha, ReservedBitsFaultAndTheBoxFreezes) {
    sim::SimUncore skx(18, sim::UncoreKind::skx), icx(28, sim::UncoreKind::icx), spr(30, sim::UncoreKind::spr);
    EXPECT_EQ(skx.wrmsr(0xE01, u64(1) << 32), 13);  // no umask extension before Ice Lake-SP
    EXPECT_EQ(skx.wrmsr(0xE01, u64(1) << 21), 13);
    EXPECT_EQ(icx.wrmsr(0xE01, 0x00001FFF0040FF34ull), 0);
    EXPECT_EQ(icx.wrmsr(0xE05, 0x400), 13);  // FILTER0: TID only
    EXPECT_EQ(spr.wrmsr(0x2FFE, 1), 13);     // read-only
    EXPECT_EQ(spr.wrmsr(0x2008, u64(1) << 48), 13);
    EXPECT_EQ(skx.wrmsr(0xE00, 0x4), 13);
    // Skylake-SP counts a load's miss only with umask bit 0, a request and FILTER0's LLC I state.
    EXPECT_EQ(skx.wrmsr(0xE01, 0x401134), 0);
    skx.llc_lookup(0, false, false);
    EXPECT_EQ(skx.wrmsr(0xE05, u64(1) << 17), 0);
    skx.llc_lookup(0, false, false);
    skx.llc_lookup(0, true, false);  // a hit (LLC E) is filtered out
    EXPECT_EQ(skx.wrmsr(0xE00, 0x100), 0);
    skx.llc_lookup(0, false, false);  // frozen
    u64 v = 0;
    skx.rdmsr(0xE08, &v);
    EXPECT_EQ(v, 1u);
    EXPECT_EQ(skx.wrmsr(0xE00, 0x2), 0);  // reset the counters; the bit reads 0
    skx.rdmsr(0xE08, &v);
    EXPECT_EQ(v, 0u);
    skx.rdmsr(0xE00, &v);
    EXPECT_EQ(v, 0u);
}

TEST(SimCha, StandInHashSpreadsAndIsNotLinear) {
    u32 n[18] = {};
    for (u64 line = 0; line < 18 * 4096; ++line) ++n[sim::llc_slice(line * 64, 18)];
    for (u32 k : n) {
        EXPECT_GT(k, 3600u);
        EXPECT_LT(k, 4600u);
    }
    // Not an XOR of address bits: some a, b, c with slice(a^b^c) != slice(a)^slice(b)^slice(c) within 16 slices.
    bool nonlinear = false;
    for (u64 a = 1; a < 64 && !nonlinear; ++a)
        nonlinear = sim::llc_slice((a ^ 3) << 6, 16) !=
                    (sim::llc_slice(a << 6, 16) ^ sim::llc_slice(3 << 6, 16) ^ sim::llc_slice(0, 16));
    EXPECT_TRUE(nonlinear);
    EXPECT_TRUE(sim::slice_count_ok(18));
    EXPECT_FALSE(sim::slice_count_ok(3));
    EXPECT_FALSE(sim::slice_count_ok(65));
}

TEST(ChaTrace, NamesTheChaMsrsOfEachGeneration) {
    auto name = [](u32 model, u32 msr) {
        TraceNames n;
        n.vendor = Vendor::intel;
        n.pmu.version = 4;
        n.family = 6;
        n.model = model;
        StrBuf b;
        trace_reg_name(n, TraceOp::wrmsr, msr, b);
        return std::string(b.c_str());
    };
    EXPECT_EQ(name(0x55, 0xE00), "C0_MSR_PMON_BOX_CTL");
    EXPECT_EQ(name(0x55, 0xE01), "C0_MSR_PMON_CTL0");  // not the client's MSR_UNC_PERF_GLOBAL_CTRL
    EXPECT_EQ(name(0x55, 0xE05), "C0_MSR_PMON_BOX_FILTER0");
    EXPECT_EQ(name(0x55, 0xFB8), "C27_MSR_PMON_CTR0");
    EXPECT_EQ(name(0x5E, 0xE01), "MSR_UNC_PERF_GLOBAL_CTRL");  // Skylake client
    EXPECT_EQ(name(0x6A, 0xF0A), "C18_MSR_PMON_BOX_CTL");
    EXPECT_EQ(name(0x6A, 0xB6B), "C34_MSR_PMON_CTR3");
    EXPECT_EQ(name(0x6C, 0xEEF), "C17_MSR_PMON_CTL0");
    EXPECT_EQ(name(0x8F, 0x2002), "C0_MSR_PMON_CTL0");
    EXPECT_EQ(name(0x8F, 0x200E), "C0_MSR_PMON_BOX_FILTER0");
    EXPECT_EQ(name(0xCF, 0x2FFE), "SPR_MSR_UNC_CBO_CONFIG");
    EXPECT_EQ(name(0x8F, 0x2001), "MSR 0x2001");  // the status register: not pmulab's
}
