// The processor topology from CPUID (x86/topology.h) on real dumps: Intel with and without
// Hyper-Threading, a hybrid part, AMD Zen 5, the legacy leaves, KVM guests. AIDA64's own
// "All CPUs" section (package / core / thread as AIDA64 computed them) is the independent
// check of the SMT grouping.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "census/cpuid_dump.h"
#include "x86/topology.h"

using namespace pmulab;

namespace {

Vec<CpuRecord> load(const char* name) {
    std::string path = std::string(__FILE__);
    path = path.substr(0, path.rfind("/unit/")) + "/data/cpuid/" + name;
    FILE* f = fopen(path.c_str(), "rb");
    EXPECT_NE(f, nullptr) << path;
    std::string text;
    char buf[4096];
    for (size_t n; f && (n = fread(buf, 1, sizeof buf, f)) > 0;) text.append(buf, n);
    if (f) fclose(f);
    Vec<CpuRecord> out;
    Status s = parse_cpuid_dump(StrView(text.data(), text.size()), name, &out);
    EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error().msg);
    return out;
}

// "source smt/package threads-per-core" of CPU 0, then "apic:package/core/thread" per CPU.
std::string describe(const Vec<CpuRecord>& cpus) {
    std::string s;
    char b[96];
    TopoLevels l0 = decode_topology_levels(cpus[0].raw);
    snprintf(b, sizeof b, "%s %u/%u x%u", topo_source_name(l0.source), l0.smt_shift, l0.package_shift,
             l0.threads_per_core);
    s += b;
    for (const CpuRecord& r : cpus) {
        TopoLevels l = decode_topology_levels(r.raw);
        u64 apic = cpuid_apic_id(r.raw);
        TopoPlace p = topology_place(l, apic);
        snprintf(b, sizeof b, " %llu:%u/%u/%u", (unsigned long long)apic, p.package, p.core, p.thread);
        s += b;
    }
    return s;
}

// The SMT grouping agrees with AIDA64's: same (package, core) there exactly when same_core.
void expect_groups_as_aida(const Vec<CpuRecord>& cpus) {
    for (const CpuRecord& a : cpus)
        for (const CpuRecord& b : cpus) {
            ASSERT_TRUE(a.topology_known && b.topology_known);
            bool aida = a.topo.package == b.topo.package && a.topo.core == b.topo.core;
            TopoLevels l = decode_topology_levels(a.raw);
            EXPECT_EQ(same_core(l, cpuid_apic_id(a.raw), cpuid_apic_id(b.raw)), aida)
                << "CPU " << a.index << " and " << b.index;
            EXPECT_EQ(cpuid_apic_id(a.raw), a.topo.apic_id) << "CPU " << a.index;
            EXPECT_EQ(topology_place(l, a.topo.apic_id).thread, a.topo.thread) << "CPU " << a.index;
        }
}

}  // namespace

TEST(Topology, SkylakeWithoutHyperThreading) {
    Vec<CpuRecord> c = load("GenuineIntel00506E3_Skylake_CPUID.txt");
    // i5-6400T: 4 cores, 0BH reports 1 logical processor at the SMT level (shift 1).
    EXPECT_EQ(describe(c), "cpuid_0bh 1/4 x1 0:0/0/0 2:0/1/0 4:0/2/0 6:0/3/0");
    expect_groups_as_aida(c);
}

TEST(Topology, RaptorLakeHybridWithHyperThreading) {
    Vec<CpuRecord> c = load("GenuineIntel00B06A2_RaptorLakeP_02_CPUID.txt");
    // 1FH on a hybrid part: P cores with two threads (APIC IDs 0/1, 8/9, ...).
    EXPECT_EQ(describe(c).substr(0, 40), "cpuid_1fh 1/6 x2 0:0/0/0 1:0/0/1 8:0/4/0");
    expect_groups_as_aida(c);
}

TEST(Topology, AlderLakeAndArrowLake) {
    Vec<CpuRecord> adl = load("GenuineIntel0090672_AlderLake_02_CPUID.txt");
    EXPECT_EQ(describe(adl).substr(0, 17), "cpuid_1fh 1/5 x2 ");
    expect_groups_as_aida(adl);
    // Arrow Lake-H: hybrid, no SMT; 1FH has a module level above the core level (shift 7).
    Vec<CpuRecord> arl = load("GenuineIntel00C0652_ArrowLakeH_04_CPUID.txt");
    EXPECT_EQ(describe(arl).substr(0, 17), "cpuid_1fh 1/7 x1 ");
    expect_groups_as_aida(arl);
}

TEST(Topology, AmdZen5WithSmt) {
    Vec<CpuRecord> c = load("AuthenticAMD0B40F40_K20_GraniteRidge_02_CPUID.txt");
    ASSERT_EQ(c.size(), 32u);
    EXPECT_EQ(describe(c).substr(0, 33), "cpuid_0bh 1/5 x2 0:0/0/0 1:0/0/1 ");
    expect_groups_as_aida(c);
    // Without 0BH the AMD leaves give the same layout: Fn8000_001E threads per core 2,
    // Fn8000_0008 ECX ApicIdSize 5.
    CpuidSnapshot s = c[1].raw;
    s.set(0xB, 0, CpuidRegs{});
    TopoLevels l = decode_topology_levels(s);
    EXPECT_EQ(l.source, TopoSource::amd_8000001e);
    EXPECT_EQ(l.smt_shift, 1u);
    EXPECT_EQ(l.package_shift, 5u);
    EXPECT_EQ(l.threads_per_core, 2u);
}

TEST(Topology, LegacyLeaves) {
    // Conroe (Core 2 Duo): no 0BH; 01H:EBX[23:16] = 2 logical IDs, 04H: 2 cores.
    Vec<CpuRecord> c = load("GenuineIntel00006F4_Conroe_CPUID.txt");
    EXPECT_EQ(describe(c), "cpuid_legacy 0/1 x1 0:0/0/0 1:0/1/0");
    // K8 Venice: AMD's Fn8000_0008 NC = 0, one core.
    EXPECT_EQ(describe(load("AuthenticAMD0020FF0_K8_Venice_CPUID.txt")), "cpuid_legacy 0/0 x1 0:0/0/0");
}

TEST(Topology, KvmGuests) {
    // 16 vCPUs, one thread per core (1FH SMT shift 0); the AMD guest has 0BH only.
    EXPECT_EQ(describe(load("cpuid-r_KVM_Intel_EmeraldRapids_16cpu.txt")).substr(0, 41),
              "cpuid_1fh 0/5 x1 0:0/0/0 1:0/1/0 2:0/2/0 ");
    EXPECT_EQ(describe(load("cpuid-r_KVM_AMD_EPYC_2cpu.txt")), "cpuid_0bh 0/5 x1 0:0/0/0 1:0/1/0");
}

TEST(Topology, SiblingStateNamesAndMerge) {
    EXPECT_STREQ(sibling_state_name(SiblingState::halted), "halted");
    EXPECT_EQ(sibling_merge(SiblingState::halted, SiblingState::idle), SiblingState::idle);
    EXPECT_EQ(sibling_merge(SiblingState::busy, SiblingState::halted), SiblingState::busy);
    EXPECT_EQ(sibling_merge(SiblingState::none, SiblingState::halted), SiblingState::halted);
}
