// The prefetcher model table (x86/prefetch.h) per model, from real CPUID dumps where
// tests/data/cpuid has one, and on the simulator (which models each control independently,
// sim_cpu.cpp): `run --prefetchers off` sets exactly the documented bits, restores the MSR
// exactly, and is refused with the reason on models without a documented control.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "support/sim_cmd.h"
#include "support/sim_measure.h"
#include "support/test_platform.h"
#include "x86/prefetch.h"

using namespace pmulab;
using namespace sim;

namespace {

// The first CPU of a dump in tests/data/cpuid, as pmulab decodes it.
CpuIdentity dump_identity(const std::string& name) {
    return decode_cpuid(pmutest::dump_machine(name).cpu(0).spec().cpuid).id;
}

// Every prefetcher a set names, over its MSRs, in the records' order.
std::string names(const PrefetchSet& s) {
    std::string out;
    for (usize m = 0; m < s.count; ++m)
        for (usize i = 0; i < s.msrs[m].count; ++i) out += std::string(out.empty() ? "" : ",") + s.msrs[m].bits[i].name;
    return out;
}

// (MSR, bits) of each MSR of a set, in the order written.
std::vector<std::pair<u32, u64>> msrs(const PrefetchSet& s) {
    std::vector<std::pair<u32, u64>> v;
    for (usize m = 0; m < s.count; ++m) v.push_back({s.msrs[m].msr, s.msrs[m].off_mask()});
    return v;
}

using Msrs = std::vector<std::pair<u32, u64>>;
constexpr u64 kLlcStream = 1ull << 43, kL2NextLine = 1ull << 40;  // 357930 §4.2, §4.3

CpuIdentity intel(u32 model, bool hybrid = false) {
    CpuIdentity id;
    id.vendor = Vendor::intel;
    id.family = 6;
    id.model = model;
    id.hybrid = hybrid;
    return id;
}

}  // namespace

TEST(PrefetchModels, SkylakeAndLaterBigCoresUse1A4Bits0To3) {
    PrefetchControl skl = prefetch_control(dump_identity("GenuineIntel00506E3_Skylake_CPUID.txt"));
    EXPECT_EQ(msrs(skl.set), (Msrs{{0x1A4, 0xF}}));
    EXPECT_FALSE(skl.hybrid());
    EXPECT_STREQ(skl.set.family, "skylake-and-later");
    EXPECT_EQ(names(skl.set), "l2_hw,l2_adjacent_line,dcu,dcu_ip");
    for (u32 m : {0x55u, 0x8Eu, 0x9Eu, 0x7Eu, 0x6Au, 0x8Cu, 0xA7u, 0x8Fu, 0xCFu, 0xADu}) {
        SCOPED_TRACE(m);
        EXPECT_EQ(msrs(prefetch_control(intel(m)).set), (Msrs{{0x1A4, 0xF}}));
    }
    // Alder Lake without E cores (not hybrid): the P cores' four bits, no E-core set.
    PrefetchControl adl = prefetch_control(dump_identity("GenuineIntel0090672_AlderLake_02_CPUID.txt"));
    EXPECT_EQ(msrs(adl.set), (Msrs{{0x1A4, 0xF}}));
    EXPECT_FALSE(adl.hybrid());
}

TEST(PrefetchModels, HybridPartsTakeOneSetPerCoreType) {
    // Raptor Lake-P: P cores 1A4H bits 0-3; Gracemont E cores 1A4H 0, 2-5, 1320H[43], 1321H[40].
    CpuIdentity rpl = dump_identity("GenuineIntel00B06A2_RaptorLakeP_02_CPUID.txt");
    ASSERT_TRUE(rpl.hybrid);
    PrefetchControl c = prefetch_control(rpl);
    EXPECT_EQ(msrs(c.set), (Msrs{{0x1A4, 0xF}}));
    EXPECT_EQ(names(c.set), "l2_hw,l2_adjacent_line,dcu,dcu_ip");
    ASSERT_TRUE(c.hybrid());
    EXPECT_EQ(msrs(c.atom), (Msrs{{0x1A4, 0x3D}, {0x1320, kLlcStream}, {0x1321, kL2NextLine}}));
    EXPECT_EQ(names(c.atom), "l2_hw,dcu,dcu_ip,dcu_next_page,l2_amp,llc_stream,l2_next_line");
    EXPECT_STREQ(c.atom.family, "gracemont");
    EXPECT_EQ(c.atom.bit_count(), 7u);
    // Arrow Lake-H: Skymont (and low-power Crestmont) E cores, 1A4H bits 0-8.
    CpuIdentity arl = dump_identity("GenuineIntel00C0652_ArrowLakeH_04_CPUID.txt");
    ASSERT_TRUE(arl.hybrid);
    PrefetchControl a = prefetch_control(arl);
    EXPECT_EQ(msrs(a.set), (Msrs{{0x1A4, 0xF}}));
    EXPECT_EQ(msrs(a.atom), (Msrs{{0x1A4, 0x1FF}, {0x1320, kLlcStream}, {0x1321, kL2NextLine}}));
    EXPECT_STREQ(a.atom.family, "skymont");
    // Meteor Lake: Crestmont.
    PrefetchControl mtl = prefetch_control(intel(0xAA, true));
    EXPECT_STREQ(mtl.atom.family, "crestmont");
    EXPECT_EQ(names(mtl.atom), "l2_hw,l2_adjacent_line,dcu,dcu_ip,dcu_next_page,l2_amp,llc_page,aop,l2_code_stream,"
                               "llc_stream,l2_next_line");
}

TEST(PrefetchModels, AtomLayouts) {
    PrefetchControl glp = prefetch_control(dump_identity("GenuineIntel00706A8_GoldmontPlus_CPUID.txt"));
    EXPECT_EQ(msrs(glp.set), (Msrs{{0x1A4, 0x5}}));  // SDM Vol. 4 Table 2-12: bit 0 L2, bit 2 DCU
    EXPECT_EQ(names(glp.set), "l2_hw,dcu");
    // E-core-only parts: one set, every CPU.
    PrefetchControl grt = prefetch_control(intel(0xBE));  // Alder Lake-N
    EXPECT_FALSE(grt.hybrid());
    EXPECT_EQ(msrs(grt.set), (Msrs{{0x1A4, 0x3D}, {0x1320, kLlcStream}, {0x1321, kL2NextLine}}));
    EXPECT_EQ(names(grt.set), "l2_hw,dcu,dcu_ip,dcu_next_page,l2_amp,llc_stream,l2_next_line");
    for (u32 m : {0xAFu, 0xB6u}) {  // Sierra Forest, Grand Ridge
        PrefetchControl cmt = prefetch_control(intel(m));
        EXPECT_EQ(msrs(cmt.set), (Msrs{{0x1A4, 0x1FF}, {0x1320, kLlcStream}, {0x1321, kL2NextLine}}));
        EXPECT_STREQ(cmt.set.family, "crestmont");
    }
    PrefetchControl dkt = prefetch_control(intel(0xDD));  // Clearwater Forest: bit 12 too
    EXPECT_EQ(msrs(dkt.set), (Msrs{{0x1A4, 0x11FF}, {0x1320, kLlcStream}, {0x1321, kL2NextLine}}));
    EXPECT_EQ(names(dkt.set), "l2_hw,l2_adjacent_line,dcu,dcu_ip,dcu_next_page,l2_amp,llc_page,aop,l2_code_stream,"
                              "dynamic_prefetch_control,llc_stream,l2_next_line");
    for (u32 m : {0x37u, 0x4Du, 0x4Cu, 0x86u, 0x96u, 0x9Cu}) {  // Silvermont, Airmont, Tremont
        SCOPED_TRACE(m);
        PrefetchControl none = prefetch_control(intel(m));
        EXPECT_FALSE(none.ok());
        EXPECT_NE(std::string(none.why_not).find("Silvermont, Airmont or Tremont"), std::string::npos);
    }
}

TEST(PrefetchModels, XeonPhiDcuBit0L2Bit1) {
    for (u32 m : {0x57u, 0x85u}) {
        PrefetchControl phi = prefetch_control(intel(m));
        EXPECT_EQ(msrs(phi.set), (Msrs{{0x1A4, 0x3}}));
        EXPECT_EQ(names(phi.set), "dcu,l2_hw");
    }
}

TEST(PrefetchModels, AmdAndRefusals) {
    PrefetchControl zen5 = prefetch_control(dump_identity("AuthenticAMD0B40F40_K20_GraniteRidge_02_CPUID.txt"));
    EXPECT_EQ(msrs(zen5.set), (Msrs{{0xC0000108, 0x2F}}));
    CpuIdentity k8 = dump_identity("AuthenticAMD0020FF0_K8_Venice_CPUID.txt");
    EXPECT_FALSE(prefetch_control(k8).ok());
    EXPECT_NE(std::string(prefetch_control(k8).why_not).find("families 19h and 1Ah"), std::string::npos);
    PrefetchControl unknown = prefetch_control(intel(0x0E));  // Core Duo (Yonah)
    EXPECT_FALSE(unknown.ok());
    EXPECT_NE(std::string(unknown.why_not).find("not in pmulab's prefetcher table"), std::string::npos);
    // A hypervisor's Skylake: no MSR for the guest, refused whatever the model.
    CpuIdentity vm = intel(0x5E);
    vm.hypervisor = true;
    EXPECT_FALSE(prefetch_control(vm).ok());
    EXPECT_NE(std::string(prefetch_control(vm).why_not).find("hypervisor"), std::string::npos);
}

namespace {

SimMachine intel_model(u32 signature) {
    IntelCpuidSpec sp;
    sp.signature = signature;
    sp.leaf_0a = {0x07300403, 0, 0, 0x00000603};
    return intel_machine(sp, {1, 1, 1});
}

simm::Cmd prefetch_run(SimMachine& m, const char* cpu = "0") {
    simm::SimPlatform p(m);
    std::string line = std::string("run --json --bench nop --reps 2 --warmup 0 --prefetchers off --cpu ") + cpu;
    return simm::run_line(p, line.c_str());
}

// The record's list of what was off, from a run that must have succeeded with one result.
std::string off_in_record(const simm::Cmd& c) {
    std::vector<pmutest::Json> r = simm::results(c);
    EXPECT_EQ(c.status, 0) << c.out;
    EXPECT_EQ(r.size(), 1u) << c.out;
    return c.status == 0 && r.size() == 1 ? r[0]["prefetchers_off"].s() : std::string("(failed)");
}

}  // namespace

TEST(PrefetchModels, SimulatorAcceptsExactlyTheDocumentedBits) {
    struct Case {
        u32 signature;
        u64 bits;
        const char* names;
    } cases[] = {
        {0x000506E3, 0xF, "l2_hw,l2_adjacent_line,dcu,dcu_ip"},                               // Skylake
        {0x000506C9, 0x5, "l2_hw,dcu"},                                                       // Goldmont
        {0x00050671, 0x3, "dcu,l2_hw"},                                                       // Knights Landing
        {0x000B06E0, 0x3D, "l2_hw,dcu,dcu_ip,dcu_next_page,l2_amp,llc_stream,l2_next_line"},  // Alder Lake-N
        {0x000A06F3, 0x1FF,
         "l2_hw,l2_adjacent_line,dcu,dcu_ip,dcu_next_page,l2_amp,llc_page,aop,l2_code_stream,llc_stream,"
         "l2_next_line"},  // Sierra Forest (Crestmont)
        {0x000D06D0, 0x11FF,
         "l2_hw,l2_adjacent_line,dcu,dcu_ip,dcu_next_page,l2_amp,llc_page,aop,l2_code_stream,"
         "dynamic_prefetch_control,llc_stream,l2_next_line"},  // Clearwater Forest (Darkmont)
    };
    for (const Case& k : cases) {
        SCOPED_TRACE(k.names);
        SimMachine m = intel_model(k.signature);
        m.cpu(0).poke(0x1A4, 0);
        EXPECT_FALSE(m.cpu(0).wrmsr(0x1A4, k.bits | (k.bits + 1)).ok());  // the next bit up is reserved: #GP
        m.cpu(0).poke(0x1A4, 0x1);                                        // the firmware left the first prefetcher off
        EXPECT_EQ(off_in_record(prefetch_run(m)), k.names);
        EXPECT_EQ(simm::writes_to(m.cpu(0), 0x1A4), (std::vector<u64>{k.bits, 0x1}));
        EXPECT_EQ(m.cpu(0).peek(0x1A4), 0x1u);
        // E cores: 1320H's LLC streamer off and back; 1321H's L2 next line is off at reset (no write).
        bool ecore = m.cpu(0).msr_exists(0x1320);
        EXPECT_EQ(ecore, k.bits > 0xF) << std::hex << k.signature;
        if (ecore) {
            EXPECT_EQ(simm::writes_to(m.cpu(0), 0x1320), (std::vector<u64>{kLlcStream, 0}));
            EXPECT_TRUE(simm::writes_to(m.cpu(0), 0x1321).empty());
            EXPECT_EQ(m.cpu(0).peek(0x1321), kL2NextLine);
        }
    }
}

TEST(PrefetchModels, SimulatorRefusesSilvermontAndHypervisorsBeforeRunning) {
    SimMachine slm = intel_model(0x00030678);  // Silvermont (Bay Trail): no 1A4H
    EXPECT_FALSE(slm.cpu(0).msr_exists(0x1A4));
    simm::Cmd c = prefetch_run(slm);
    EXPECT_EQ(c.status, 3) << c.out;
    EXPECT_NE(c.out.find("Silvermont, Airmont or Tremont"), std::string::npos) << c.out;
    EXPECT_TRUE(simm::results(c).empty());
    SimMachine vm = qemu_tcg_intel(1);  // QEMU's Skylake-Client model under TCG
    EXPECT_FALSE(vm.cpu(0).msr_exists(0x1A4));
    c = prefetch_run(vm);
    EXPECT_EQ(c.status, 3) << c.out;
    EXPECT_NE(c.out.find("a hypervisor's virtual CPU"), std::string::npos) << c.out;
    EXPECT_TRUE(simm::writes_to(vm.cpu(0), 0x1A4).empty());
}

namespace {

// The prefetcher writes of a CPU's log in order: (MSR, value) for 1A4H and 1320H-1327H.
Msrs prefetch_writes(const SimCpu& c) {
    Msrs v;
    for (const LogEntry& e : c.writes())
        if (e.vector == 0 && (e.addr == 0x1A4 || (e.addr >= 0x1320 && e.addr <= 0x1327)))
            v.push_back({e.addr, e.value});
    return v;
}

}  // namespace

TEST(PrefetchModels, HybridPcoresAndEcoresTakeTheirOwnSetsRestoredExactly) {
    // Alder Lake-like hybrid: P cores 1A4H bits 0-3 and no 1320H; Gracemont E cores 1A4H
    // bits 0, 2-5 (bit 1 faults there), 1320H and 1321H with the firmware's tuning in them.
    SimMachine m = intel_hybrid();
    EXPECT_FALSE(m.cpu(4).wrmsr(0x1A4, 0xF).ok());
    EXPECT_FALSE(m.cpu(0).msr_exists(0x1320));
    EXPECT_FALSE(m.cpu(0).rdmsr(0x1321).ok());
    EXPECT_FALSE(m.cpu(4).wrmsr(0x1320, 1ull << 5).ok());  // reserved (357930 §4.2)
    const u64 fw1320 = 0x0000060000100004ull;              // XQ threshold 4, L2 distance 1, LLC distance 3
    const u64 fw1321 = 0x0000250122000001ull;              // an Alder Lake E core's (L2 next line already off)
    m.cpu(4).poke(0x1A4, 0x1);
    m.cpu(4).poke(0x1320, fw1320);
    m.cpu(4).poke(0x1321, fw1321);
    simm::SimPlatform p(m);
    simm::Cmd c = simm::run_line(p, "run --json --bench nop --reps 2 --warmup 0 --prefetchers off --cpu 0,4");
    ASSERT_EQ(c.status, 0) << c.out;
    std::vector<pmutest::Json> r = simm::results(c);
    ASSERT_EQ(r.size(), 2u) << c.out;
    EXPECT_EQ(r[0]["cpu"].u(), 0u);
    EXPECT_EQ(r[0]["prefetchers_off"].s(), "l2_hw,l2_adjacent_line,dcu,dcu_ip");
    EXPECT_EQ(r[0]["prefetch_family"].s(), "skylake-and-later");
    EXPECT_EQ(r[0]["prefetch_msrs"]["0x1a4"].s(), "0xf");
    EXPECT_EQ(r[1]["cpu"].u(), 4u);
    EXPECT_EQ(r[1]["prefetchers_off"].s(), "l2_hw,dcu,dcu_ip,dcu_next_page,l2_amp,llc_stream,l2_next_line");
    EXPECT_EQ(r[1]["prefetch_family"].s(), "gracemont");
    EXPECT_EQ(r[1]["prefetch_msr"].s(), "0x1a4");
    EXPECT_EQ(r[1]["prefetch_bits"].s(), "0x3d");
    EXPECT_EQ(r[1]["prefetch_msrs"]["0x1320"].s(), "0x80000000000");
    EXPECT_EQ(r[1]["prefetch_msrs"]["0x1321"].s(), "0x10000000000");
    EXPECT_EQ(prefetch_writes(m.cpu(0)), (Msrs{{0x1A4, 0xF}, {0x1A4, 0}}));
    // E core: 1A4H first, then 1320H; back in reverse, 1A4H last; 1321H had its bit already.
    EXPECT_EQ(prefetch_writes(m.cpu(4)),
              (Msrs{{0x1A4, 0x3D}, {0x1320, fw1320 | kLlcStream}, {0x1320, fw1320}, {0x1A4, 0x1}}));
    EXPECT_EQ(m.cpu(4).peek(0x1A4), 0x1u);
    EXPECT_EQ(m.cpu(4).peek(0x1320), fw1320);
    EXPECT_EQ(m.cpu(4).peek(0x1321), fw1321);
}

TEST(PrefetchModels, AnEcoreWriteThatFaultsPutsBackWhatWasWritten) {
    SimMachine m = intel_hybrid();
    m.cpu(4).poke(0x1A4, 0x4);
    m.cpu(4).poke(0x1321, 0);  // the L2 next-line prefetcher on: pmulab must write 1321H
    m.cpu(4).fail_wrmsr_to(0x1321);
    simm::Cmd c = prefetch_run(m, "4");
    EXPECT_EQ(c.status, 3) << c.out;
    EXPECT_NE(c.out.find("--prefetchers off: MSR 0x1321 cannot be written"), std::string::npos) << c.out;
    EXPECT_TRUE(simm::results(c).empty());
    EXPECT_EQ(prefetch_writes(m.cpu(4)), (Msrs{{0x1A4, 0x3D}, {0x1320, kLlcStream}, {0x1320, 0}, {0x1A4, 0x4}}));
    EXPECT_EQ(m.cpu(4).peek(0x1A4), 0x4u);
    EXPECT_EQ(m.cpu(4).peek(0x1320), 0u);
}

TEST(PrefetchModels, Zen4PrefetchControlOnTheSimulator) {
    SimMachine m = amd_zen4(1);
    EXPECT_FALSE(m.cpu(0).wrmsr(0xC0000108, 0x10).ok());  // bit 4 reserved
    EXPECT_EQ(off_in_record(prefetch_run(m)), "l1_stream,l1_stride,l1_region,l2_stream,l2_up_down");
    EXPECT_EQ(simm::writes_to(m.cpu(0), 0xC0000108), (std::vector<u64>{0x2F, 0x0}));
}
