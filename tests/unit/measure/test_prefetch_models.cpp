// The prefetcher model table (x86/prefetch.h) per model, from real CPUID dumps where
// tests/data/cpuid has one, and on the simulator (which models each control independently,
// sim_cpu.cpp): `run --prefetchers off` sets exactly the documented bits, restores the MSR
// exactly, and is refused with the reason on models without a documented control.
#include <gtest/gtest.h>

#include <string>
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

std::string names(const PrefetchControl& c) {
    std::string out;
    for (usize i = 0; i < c.count; ++i) out += std::string(i ? "," : "") + c.bits[i].name;
    return out;
}

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
    EXPECT_EQ(skl.msr, 0x1A4u);
    EXPECT_EQ(skl.off_mask(), 0xFull);
    EXPECT_STREQ(skl.family, "skylake-and-later");
    EXPECT_EQ(names(skl), "l2_hw,l2_adjacent_line,dcu,dcu_ip");
    for (u32 m : {0x55u, 0x8Eu, 0x9Eu, 0x7Eu, 0x6Au, 0x8Cu, 0xA7u, 0x8Fu, 0xCFu, 0xADu}) {
        SCOPED_TRACE(m);
        EXPECT_EQ(prefetch_control(intel(m)).off_mask(), 0xFull);
    }
    // Alder Lake without E cores (not hybrid): the P cores' four bits.
    PrefetchControl adl = prefetch_control(dump_identity("GenuineIntel0090672_AlderLake_02_CPUID.txt"));
    EXPECT_EQ(adl.off_mask(), 0xFull);
}

TEST(PrefetchModels, HybridPartsGetTheBitsBothCoreTypesDocument) {
    // Raptor Lake-P: Golden Cove-class P cores (0-3) and Gracemont E cores (0, 2, 3, 5).
    CpuIdentity rpl = dump_identity("GenuineIntel00B06A2_RaptorLakeP_02_CPUID.txt");
    ASSERT_TRUE(rpl.hybrid);
    PrefetchControl c = prefetch_control(rpl);
    EXPECT_EQ(c.off_mask(), 0xDull);
    EXPECT_EQ(names(c), "l2_hw,dcu,dcu_ip");
    EXPECT_STREQ(c.family, "hybrid-gracemont");
    // Arrow Lake-H: Crestmont/Skymont E cores document bits 0-3 as the P cores do.
    CpuIdentity arl = dump_identity("GenuineIntel00C0652_ArrowLakeH_04_CPUID.txt");
    ASSERT_TRUE(arl.hybrid);
    EXPECT_EQ(prefetch_control(arl).off_mask(), 0xFull);
}

TEST(PrefetchModels, AtomLayouts) {
    PrefetchControl glp = prefetch_control(dump_identity("GenuineIntel00706A8_GoldmontPlus_CPUID.txt"));
    EXPECT_EQ(glp.msr, 0x1A4u);
    EXPECT_EQ(glp.off_mask(), 0x5ull);  // SDM Vol. 4 Table 2-12: bit 0 L2, bit 2 DCU
    EXPECT_EQ(names(glp), "l2_hw,dcu");
    PrefetchControl grt = prefetch_control(intel(0xBE));  // Alder Lake-N
    EXPECT_EQ(grt.off_mask(), 0x2Dull);
    EXPECT_EQ(names(grt), "l2_hw,dcu,dcu_ip,l2_amp");
    PrefetchControl cmt = prefetch_control(intel(0xAF));  // Sierra Forest
    EXPECT_EQ(cmt.off_mask(), 0x1FFull);
    EXPECT_EQ(names(cmt), "l2_hw,l2_adjacent_line,dcu,dcu_ip,dcu_next_page,l2_amp,llc_page,aop,l2_code_stream");
    for (u32 m : {0x37u, 0x4Du, 0x4Cu, 0x86u, 0x96u, 0x9Cu}) {  // Silvermont, Airmont, Tremont
        SCOPED_TRACE(m);
        PrefetchControl none = prefetch_control(intel(m));
        EXPECT_EQ(none.msr, 0u);
        EXPECT_NE(std::string(none.why_not).find("Silvermont, Airmont or Tremont"), std::string::npos);
    }
}

TEST(PrefetchModels, XeonPhiDcuBit0L2Bit1) {
    for (u32 m : {0x57u, 0x85u}) {
        PrefetchControl phi = prefetch_control(intel(m));
        EXPECT_EQ(phi.msr, 0x1A4u);
        EXPECT_EQ(phi.off_mask(), 0x3ull);
        EXPECT_EQ(names(phi), "dcu,l2_hw");
    }
}

TEST(PrefetchModels, AmdAndRefusals) {
    PrefetchControl zen5 = prefetch_control(dump_identity("AuthenticAMD0B40F40_K20_GraniteRidge_02_CPUID.txt"));
    EXPECT_EQ(zen5.msr, 0xC0000108u);
    EXPECT_EQ(zen5.off_mask(), 0x2Full);
    CpuIdentity k8 = dump_identity("AuthenticAMD0020FF0_K8_Venice_CPUID.txt");
    EXPECT_EQ(prefetch_control(k8).msr, 0u);
    EXPECT_NE(std::string(prefetch_control(k8).why_not).find("families 19h and 1Ah"), std::string::npos);
    PrefetchControl unknown = prefetch_control(intel(0x0E));  // Core Duo (Yonah)
    EXPECT_EQ(unknown.msr, 0u);
    EXPECT_NE(std::string(unknown.why_not).find("not in pmulab's prefetcher table"), std::string::npos);
    // A hypervisor's Skylake: no MSR for the guest, refused whatever the model.
    CpuIdentity vm = intel(0x5E);
    vm.hypervisor = true;
    EXPECT_EQ(prefetch_control(vm).msr, 0u);
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
        {0x000506E3, 0xF, "l2_hw,l2_adjacent_line,dcu,dcu_ip"},  // Skylake
        {0x000506C9, 0x5, "l2_hw,dcu"},                          // Goldmont
        {0x00050671, 0x3, "dcu,l2_hw"},                          // Knights Landing
        {0x000B06E0, 0x2D, "l2_hw,dcu,dcu_ip,l2_amp"},           // Alder Lake-N (Gracemont)
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

TEST(PrefetchModels, HybridEcoreAndPcoreBothTakeTheCommonBits) {
    // Alder Lake: P cores accept bits 0-3, Gracemont E cores 0, 2, 3, 5 (a write of bit 1
    // faults there): pmulab writes 0xD on either and restores it.
    SimMachine m = intel_hybrid();
    EXPECT_FALSE(m.cpu(4).wrmsr(0x1A4, 0xF).ok());
    EXPECT_TRUE(m.cpu(0).wrmsr(0x1A4, 0xF).ok());
    m.cpu(0).poke(0x1A4, 0);
    for (const char* cpu : {"0", "4"}) {
        SCOPED_TRACE(cpu);
        EXPECT_EQ(off_in_record(prefetch_run(m, cpu)), "l2_hw,dcu,dcu_ip");
    }
    EXPECT_EQ(simm::writes_to(m.cpu(0), 0x1A4), (std::vector<u64>{0xF, 0xD, 0x0}));  // the test's own 0xF first
    EXPECT_EQ(simm::writes_to(m.cpu(4), 0x1A4), (std::vector<u64>{0xD, 0x0}));
    EXPECT_EQ(m.cpu(4).peek(0x1A4), 0u);
}

TEST(PrefetchModels, Zen4PrefetchControlOnTheSimulator) {
    SimMachine m = amd_zen4(1);
    EXPECT_FALSE(m.cpu(0).wrmsr(0xC0000108, 0x10).ok());  // bit 4 reserved
    EXPECT_EQ(off_in_record(prefetch_run(m)), "l1_stream,l1_stride,l1_region,l2_stream,l2_up_down");
    EXPECT_EQ(simm::writes_to(m.cpu(0), 0xC0000108), (std::vector<u64>{0x2F, 0x0}));
}
