// Decoder correctness on real CPUID dumps (tests/data/cpuid, each with its source on
// line 1). Every expected value below was worked out by hand from the raw hex of the
// dump; the comments show the arithmetic.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "census/cpuid_dump.h"
#include "base/json.h"

using namespace pmulab;

namespace {

std::string data_dir() {
    // __FILE__ is tests/unit/x86/test_cpuid_decode.cpp, relative to the repository root
    // (the directory make and the test driver run in) or absolute.
    return (std::filesystem::path(__FILE__).parent_path().parent_path().parent_path() / "data" / "cpuid").string();
}

std::string read_data(const std::string& name) {
    std::ifstream f(data_dir() + "/" + name, std::ios::binary);
    EXPECT_TRUE(f.good()) << "cannot open " << data_dir() << "/" << name;
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

struct Dump {
    Vec<CpuRecord> cpus;
    const CpuRecord& operator[](usize i) const { return cpus[i]; }
    usize size() const { return cpus.size(); }
};

Dump load(const std::string& name) {
    std::string text = read_data(name);
    Dump d;
    Status s = parse_cpuid_dump(StrView(text.data(), text.size()), name.c_str(), &d.cpus);
    EXPECT_TRUE(s.ok()) << s.error().msg;
    return d;
}

std::string table(const Dump& d) {
    StrBuf b;
    census_table(d.cpus, b);
    return std::string(b.c_str(), b.size());
}

std::vector<u64> apic_ids(const Dump& d) {
    std::vector<u64> v;
    for (const CpuRecord& r : d.cpus) v.push_back(r.topo.apic_id);
    return v;
}

// Every (leaf, sub-leaf) that capture_cpuid would read on the dumped CPU is in the
// dump, so decoding the dump equals decoding a live capture of that CPU.
struct SnapQuery {
    const CpuidSnapshot* s;
    std::vector<std::pair<u32, u32>> missing;
};
CpuidRegs snap_query(void* ctx, u32 leaf, u32 sub) {
    auto* q = static_cast<SnapQuery*>(ctx);
    CpuidRegs r;
    // The cache leaves may stop early: dumps often omit the terminating sub-leaf of type 0
    // (the parser accepts that too, cpuid_dump.cpp missing_query); so do the topology leaves.
    bool cache_leaf = leaf == 4 || leaf == 0x8000001D || leaf == 0x1F || leaf == 0x8000001E;
    if (!q->s->find(leaf, sub, &r) && !cache_leaf) q->missing.push_back({leaf, sub});
    return r;
}

void expect_complete_for_capture(const Dump& d) {
    for (const CpuRecord& r : d.cpus) {
        SnapQuery q{&r.raw, {}};
        CpuidSnapshot again;
        capture_cpuid(snap_query, &q, &again);
        for (auto& m : q.missing)
            ADD_FAILURE() << "CPU " << r.index << ": leaf 0x" << std::hex << m.first << " sub-leaf " << m.second
                          << " read by capture_cpuid is not in the dump";
        // And the dump kept nothing capture_cpuid could never read.
        for (u32 i = 0; i < r.raw.count; ++i)
            EXPECT_TRUE(cpuid_subleaf_is_captured(r.raw.entries[i].leaf, r.raw.entries[i].subleaf));
        EXPECT_TRUE(decode_cpuid(again).pmu == r.dec.pmu) << "CPU " << r.index;
    }
}

}  // namespace

// Core 2 Duo E6700 (Conroe), EVEREST layout, 2 CPUs.
TEST(CpuidDecode, ConroeV2WithoutFixedCountersInCpuid) {
    Dump d = load("GenuineIntel00006F4_Conroe_CPUID.txt");
    ASSERT_EQ(d.size(), 2u);
    const CpuIdentity& id = d[0].dec.id;
    EXPECT_EQ(id.vendor, Vendor::intel);
    EXPECT_STREQ(id.vendor_string, "GenuineIntel");
    // 000006F4: family 6, model F (ext model 0), stepping 4.
    EXPECT_EQ(id.signature, 0x6F4u);
    EXPECT_EQ(id.family, 6u);
    EXPECT_EQ(id.model, 0xFu);
    EXPECT_EQ(id.stepping, 4u);
    // " CPU" + 12 spaces | 4 spaces | "  @ " "2.66" "GHz\0": 18 spaces between "CPU" and "@".
    EXPECT_EQ(std::string(id.brand), "Genuine Intel(R) CPU" + std::string(18, ' ') + "@ 2.66GHz");
    EXPECT_EQ(id.max_leaf, 0xAu);
    EXPECT_EQ(id.max_ext_leaf, 0x80000008u);
    EXPECT_TRUE(id.pdcm);  // ECX 0000E3BD bit 15
    EXPECT_FALSE(id.hypervisor);
    EXPECT_FALSE(id.hybrid);
    // 0AH EAX 07280202: v2, 2 GP x 0x28 = 40 bits, EBX length 7; EDX 0.
    const PmuCaps& p = d[0].dec.pmu;
    EXPECT_TRUE(p.leaf_0a);
    EXPECT_EQ(p.version, 2);
    EXPECT_EQ(p.gp_counters, 2);
    EXPECT_EQ(p.gp_width, 40);
    EXPECT_EQ(p.ebx_length, 7);
    EXPECT_EQ(p.events_available, 0x7Fu);
    EXPECT_EQ(p.events_unavailable, 0u);
    EXPECT_EQ(p.fixed_counters, 0);
    EXPECT_EQ(p.fixed_width, 0);
    EXPECT_FALSE(p.anythread_deprecated);
    EXPECT_EQ(p.fixed_effective, 0u);
    EXPECT_TRUE(p.fixed_count_quirk);
    EXPECT_EQ(p.fixed_counter_mask(), 7u);
    EXPECT_EQ(p.gp_counter_mask(), 3u);
    EXPECT_TRUE(d[1].dec.pmu == p);
    // Initial APIC IDs 00 and 01 (leaf 1 EBX[31:24]); no leaf 0BH, no location.
    EXPECT_EQ(apic_ids(d), (std::vector<u64>{0, 1}));
    EXPECT_FALSE(d[1].topology_known);
    std::string t = table(d);
    EXPECT_NE(t.find("    0      0         0     0    0  -     v2    2x40    3x?\n"), std::string::npos) << t;
    EXPECT_NE(t.find("CPUID reports 0 fixed counters; v2 parts on bare metal have 3"), std::string::npos);
    expect_complete_for_capture(d);
}

// Pentium Silver N5030 (Goldmont Plus), 4 CPUs, newer AIDA64 layout with an MSR section.
TEST(CpuidDecode, GoldmontPlusV4) {
    Dump d = load("GenuineIntel00706A8_GoldmontPlus_CPUID.txt");
    ASSERT_EQ(d.size(), 4u);
    const CpuIdentity& id = d[0].dec.id;
    // 000706A8: family 6, model (7 << 4) + A = 7A, stepping 8.
    EXPECT_EQ(id.family, 6u);
    EXPECT_EQ(id.model, 0x7Au);
    EXPECT_EQ(id.stepping, 8u);
    EXPECT_STREQ(id.brand, "Intel(R) Pentium(R) Silver N5030 CPU @ 1.10GHz");
    StrBuf sig;
    put_signature(sig, id);
    EXPECT_STREQ(sig.c_str(), "06_7AH");
    // 0AH EAX 07300404 EDX 00008603: v4, 4 GP x 48, EBX length 7, 3 fixed x 48, AnyThread deprecated.
    const PmuCaps& p = d[0].dec.pmu;
    EXPECT_EQ(p.version, 4);
    EXPECT_EQ(p.gp_counters, 4);
    EXPECT_EQ(p.gp_width, 48);
    EXPECT_EQ(p.ebx_length, 7);
    EXPECT_EQ(p.fixed_counters, 3);
    EXPECT_EQ(p.fixed_width, 48);
    EXPECT_TRUE(p.anythread_deprecated);
    EXPECT_EQ(p.fixed_effective, 7u);
    EXPECT_FALSE(p.fixed_count_quirk);
    EXPECT_FALSE(p.leaf_23);
    // APIC IDs from the "All CPUs" section (= leaf 0BH EDX), location from "allcpu:".
    EXPECT_EQ(apic_ids(d), (std::vector<u64>{0, 2, 4, 6}));
    for (u32 i = 0; i < 4; ++i) {
        EXPECT_TRUE(d[i].topology_known);
        EXPECT_EQ(d[i].topo.core, i);
        EXPECT_EQ(d[i].topo.thread, 0u);
        EXPECT_EQ(d[i].raw.get(0xB, 0).edx, 2 * i);
    }
    expect_complete_for_capture(d);
}

// Core i5-12400: Alder Lake-S die without E-cores (6 P-cores, 12 threads).
TEST(CpuidDecode, AlderLakeWithoutECoresIsNotHybrid) {
    Dump d = load("GenuineIntel0090672_AlderLake_02_CPUID.txt");
    ASSERT_EQ(d.size(), 12u);
    for (const CpuRecord& r : d.cpus) {
        // 07H EDX FC984510: bit 15 (0x8000) clear -> not hybrid, leaf 1AH not decoded.
        EXPECT_FALSE(r.dec.id.hybrid);
        EXPECT_EQ(r.dec.id.core_type, kCoreTypeNone);
        EXPECT_EQ(r.dec.id.family, 6u);
        EXPECT_EQ(r.dec.id.model, 0x97u);
        EXPECT_EQ(r.dec.id.stepping, 2u);
        // 0AH 08300805-00000000-0000000F-00008604: v5, 8 GP x 48, length 8, ECX 0xF, 4 fixed x 48.
        const PmuCaps& p = r.dec.pmu;
        EXPECT_EQ(p.version, 5);
        EXPECT_EQ(p.gp_counters, 8);
        EXPECT_EQ(p.ebx_length, 8);
        EXPECT_EQ(p.events_available, 0xFFu);
        EXPECT_EQ(p.fixed_mask, 0xFu);
        EXPECT_EQ(p.fixed_counters, 4);
        EXPECT_EQ(p.fixed_effective, 0xFu);
        // 07H.1 EAX 00401C30: bit 8 clear -> no leaf 23H.
        EXPECT_FALSE(r.dec.id.arch_perfmon_ext);
        EXPECT_FALSE(p.leaf_23);
    }
    EXPECT_STREQ(d[0].dec.id.brand, "12th Gen Intel(R) Core(TM) i5-12400");
    EXPECT_EQ(d[11].topo.apic_id, 11u);
    EXPECT_EQ(d[11].topo.core, 5u);
    EXPECT_EQ(d[11].topo.thread, 1u);
    std::string t = table(d);
    EXPECT_EQ(t.find("hybrid"), std::string::npos);
    EXPECT_NE(t.find("PMU of CPU 0-11 (12 CPUs):"), std::string::npos) << t;
    expect_complete_for_capture(d);
}

// Core i5-1350P (Raptor Lake-P). This dump holds only the 4 P-cores (8 threads).
TEST(CpuidDecode, RaptorLakePCoresHybrid) {
    Dump d = load("GenuineIntel00B06A2_RaptorLakeP_02_CPUID.txt");
    ASSERT_EQ(d.size(), 8u);
    for (const CpuRecord& r : d.cpus) {
        // 07H EDX FC1CC410: bit 15 set. 1AH EAX 40000001: core type 40H (Core), native model 1.
        EXPECT_TRUE(r.dec.id.hybrid);
        EXPECT_EQ(r.dec.id.core_type, kCoreTypeCore);
        EXPECT_EQ(r.dec.id.native_model_id, 1u);
        EXPECT_EQ(r.dec.id.model, 0xBAu);
        EXPECT_EQ(r.dec.pmu.version, 5);
        EXPECT_EQ(r.dec.pmu.gp_counters, 8);
        EXPECT_EQ(r.dec.pmu.fixed_effective, 0xFu);
        EXPECT_FALSE(r.dec.pmu.leaf_23);  // 07H.1 EAX 00401C10: bit 8 clear
    }
    EXPECT_EQ(apic_ids(d), (std::vector<u64>{0, 1, 8, 9, 16, 17, 24, 25}));
    EXPECT_EQ(d[3].topo.core, 1u);
    EXPECT_EQ(d[3].topo.thread, 1u);
    // The brand string as the dump has it (its bytes spell "CoreT", not "Core(TM)").
    EXPECT_STREQ(d[0].dec.id.brand, "13th Gen Intel(R) CoreT i5-1350P");
    std::string t = table(d);
    EXPECT_NE(t.find("signature 0x000b06a2, hybrid"), std::string::npos) << t;
    EXPECT_NE(t.find("    2      8         0     1    0  P     v5    8x48    4x48\n"), std::string::npos) << t;
    expect_complete_for_capture(d);
}

// Core Ultra 9 285H (Arrow Lake-H): 6 Lion Cove P-cores, 8 Skymont E-cores, 2 Crestmont
// LP E-cores; three different PMUs, enumerated by leaf 23H.
TEST(CpuidDecode, ArrowLakeHThreePmus) {
    Dump d = load("GenuineIntel00C0652_ArrowLakeH_04_CPUID.txt");
    ASSERT_EQ(d.size(), 16u);
    EXPECT_EQ(apic_ids(d), (std::vector<u64>{0, 8, 16, 18, 20, 22, 24, 26, 28, 30, 32, 40, 48, 56, 64, 66}));
    EXPECT_STREQ(d[0].dec.id.brand, "Intel(R) Core(TM) Ultra 9 285H");
    EXPECT_EQ(d[0].dec.id.model, 0xC5u);
    std::string types;
    for (const CpuRecord& r : d.cpus) {
        EXPECT_TRUE(r.dec.id.hybrid);            // 07H EDX FC1CC430 bit 15
        EXPECT_TRUE(r.dec.id.arch_perfmon_ext);  // 07H.1 EAX 44C009D0 bit 8
        // 0AH 07300805-00000000-00000007-00008603 on every core: v5, 8 GP, 3 fixed.
        EXPECT_EQ(r.dec.pmu.version, 5);
        EXPECT_EQ(r.dec.pmu.gp_counters, 8);
        EXPECT_EQ(r.dec.pmu.fixed_effective, 7u);
        EXPECT_TRUE(r.dec.pmu.leaf_23);
        types += r.dec.id.core_type == kCoreTypeCore ? 'P' : r.dec.id.native_model_id == 3 ? 'E' : 'L';
    }
    EXPECT_EQ(types, "PPEEEEEEEEPPPPLL");
    // Lion Cove: 1AH 40000003; 23H.0 0000000B-00000003-00000000 (sub-leaves 0,1,3; UMASK2, EQ);
    // 23H.1 000003FF-0000000F (10 GP, fixed 0-3); 23H.3 00001DFF (no Topdown Bad Speculation).
    const PmuCaps& pc = d[0].dec.pmu;
    EXPECT_EQ(d[0].dec.id.native_model_id, 3u);
    EXPECT_EQ(pc.leaf23_subleaves, 0xBu);
    EXPECT_TRUE(pc.umask2);
    EXPECT_TRUE(pc.eq_bit);
    EXPECT_EQ(pc.topdown_slots_per_cycle, 0u);
    EXPECT_EQ(pc.gp_counter_mask(), 0x3FFu);
    EXPECT_EQ(pc.fixed_counter_mask(), 0xFu);
    EXPECT_EQ(pc.acr_gp_bitmap, 0u);
    EXPECT_EQ(pc.arch_events_bitmap, 0x1DFFu);
    // Skymont: 1AH 20000003; 23H.0 0000000F-00000003-00000008; 23H.1 000000FF-00000077;
    // 23H.2 000000FC-00000003 (auto counter reload); 23H.3 00001F7F (no Topdown Slots).
    const PmuCaps& pe = d[2].dec.pmu;
    EXPECT_EQ(d[2].dec.id.core_type, kCoreTypeAtom);
    EXPECT_EQ(pe.leaf23_subleaves, 0xFu);
    EXPECT_EQ(pe.topdown_slots_per_cycle, 8u);
    EXPECT_EQ(pe.gp_counter_mask(), 0xFFu);
    EXPECT_EQ(pe.fixed_counter_mask(), 0x77u);
    EXPECT_EQ(pe.acr_gp_bitmap, 0xFCu);
    EXPECT_EQ(pe.acr_fixed_bitmap, 0x3u);
    EXPECT_EQ(pe.arch_events_bitmap, 0x1F7Fu);
    // Crestmont (LP E-core): 1AH 20000002; 23H.0 0000000B-00000000-00000006; 23H.1 FF/7; 23H.3 7F.
    const PmuCaps& pl = d[14].dec.pmu;
    EXPECT_EQ(d[14].dec.id.native_model_id, 2u);
    EXPECT_FALSE(pl.umask2);
    EXPECT_FALSE(pl.eq_bit);
    EXPECT_EQ(pl.topdown_slots_per_cycle, 6u);
    EXPECT_EQ(pl.fixed_counter_mask(), 0x7u);
    EXPECT_EQ(pl.arch_events_bitmap, 0x7Fu);
    std::string t = table(d);
    EXPECT_NE(t.find("PMU of CPU 0-1,10-13 (6 CPUs):"), std::string::npos) << t;
    EXPECT_NE(t.find("PMU of CPU 2-9 (8 CPUs):"), std::string::npos) << t;
    EXPECT_NE(t.find("PMU of CPU 14-15 (2 CPUs):"), std::string::npos) << t;
    EXPECT_NE(t.find("note: 3 different PMU configurations"), std::string::npos) << t;
    EXPECT_NE(t.find("    0      0         0     0    0  P     v5    10x48   4x48\n"), std::string::npos) << t;
    EXPECT_NE(t.find("    2     16         0     2    0  E     v5    8x48    6x48\n"), std::string::npos) << t;
    EXPECT_NE(t.find("   14     64         0    14    0  E     v5    8x48    3x48\n"), std::string::npos) << t;
    EXPECT_NE(t.find("Topdown Bad Speculation      not enumerated  leaf 23H: not supported"), std::string::npos) << t;
    expect_complete_for_capture(d);
}

// Ryzen 9 9950X (Zen 5, Granite Ridge): PerfMonV2, 32 CPUs.
TEST(CpuidDecode, Zen5PerfMonV2) {
    Dump d = load("AuthenticAMD0B40F40_K20_GraniteRidge_02_CPUID.txt");
    ASSERT_EQ(d.size(), 32u);
    const CpuIdentity& id = d[0].dec.id;
    EXPECT_EQ(id.vendor, Vendor::amd);
    // 00B40F40: base family F + ext family 0B = 1A; model (4 << 4) + 4 = 44; stepping 0.
    EXPECT_EQ(id.family, 0x1Au);
    EXPECT_EQ(id.model, 0x44u);
    EXPECT_EQ(id.stepping, 0u);
    StrBuf sig;
    put_signature(sig, id);
    EXPECT_STREQ(sig.c_str(), "1A_44H");
    // Trailing padding spaces of 80000004H trimmed.
    EXPECT_STREQ(id.brand, "AMD Ryzen 9 9950X 16-Core Processor");
    EXPECT_EQ(id.max_ext_leaf, 0x80000028u);
    const PmuCaps& p = d[0].dec.pmu;
    EXPECT_FALSE(p.leaf_0a);          // leaf 0AH (all zero) is not decoded on AMD
    EXPECT_TRUE(p.amd_perfctr_core);  // 80000001H ECX 75C237FF bit 23
    // 80000022H EAX 00000007: PerfMonV2, LbrV2; EBX 00084106: [3:0] = 6 counters,
    // [9:4] = 0x10 LBR entries, [15:10] = 0x10 northbridge (DF) counters.
    EXPECT_TRUE(p.amd_perfmon_v2);
    EXPECT_TRUE(p.amd_lbr_v2);
    EXPECT_EQ(p.amd_core_counters, 6);
    EXPECT_EQ(p.amd_lbr_stack_size, 16);
    EXPECT_EQ(p.amd_nb_counters, 16);
    EXPECT_EQ(p.gp_counter_mask(), 0x3Fu);
    EXPECT_TRUE(p.present());
    for (u32 i = 0; i < 32; ++i) {
        EXPECT_EQ(d[i].index, i);
        EXPECT_EQ(d[i].topo.apic_id, i);
        EXPECT_EQ(d[i].topo.core, i / 2);
        EXPECT_EQ(d[i].topo.thread, i % 2);
        EXPECT_TRUE(d[i].dec.pmu == p);
    }
    std::string t = table(d);
    EXPECT_NE(t.find("   31     31         0    15    1  -     amd   6x48\n"), std::string::npos) << t;
    EXPECT_NE(t.find("PerfMonV2        : LbrV2 yes (stack 16), northbridge counters 16"), std::string::npos);
    expect_complete_for_capture(d);
}

// Athlon 64 3200+ (K8 Venice): family 0FH, no PerfCtrExtCore; the 4 legacy counters.
TEST(CpuidDecode, K8LegacyCounters) {
    Dump d = load("AuthenticAMD0020FF0_K8_Venice_CPUID.txt");
    ASSERT_EQ(d.size(), 1u);
    const CpuIdentity& id = d[0].dec.id;
    // 00020FF0: base family F + ext 0 = F; AMD applies the extended model for family F:
    // (2 << 4) + F = 2F; stepping 0.
    EXPECT_EQ(id.family, 0xFu);
    EXPECT_EQ(id.model, 0x2Fu);
    EXPECT_EQ(id.stepping, 0u);
    EXPECT_EQ(id.max_leaf, 1u);
    EXPECT_STREQ(id.brand, "AMD Athlon(tm) 64 Processor 3200+");
    EXPECT_FALSE(d[0].dec.pmu.amd_perfctr_core);  // 80000001H ECX 00000001
    EXPECT_FALSE(d[0].dec.pmu.amd_perfmon_v2);    // max ext leaf 80000018H < 80000022H
    EXPECT_EQ(d[0].dec.pmu.amd_core_counters, 4);
    EXPECT_TRUE(d[0].dec.pmu.present());
    expect_complete_for_capture(d);
}

// Celeron D 326 (Prescott, NetBurst family 0FH): no leaf 0AH at all.
TEST(CpuidDecode, NetBurstHasNoArchitecturalPmu) {
    Dump d = load("GenuineIntel0000F41_P4_Prescott_CPUID.txt");
    ASSERT_EQ(d.size(), 1u);
    const CpuIdentity& id = d[0].dec.id;
    // 00000F41: family F (+ ext 0), model 4 (ext model 0), stepping 1.
    EXPECT_EQ(id.family, 0xFu);
    EXPECT_EQ(id.model, 4u);
    EXPECT_EQ(id.stepping, 1u);
    EXPECT_EQ(id.max_leaf, 5u);
    // 80000002H is all spaces: leading blanks trimmed.
    EXPECT_STREQ(id.brand, "Intel(R) Celeron(R) CPU 2.53GHz");
    EXPECT_FALSE(d[0].dec.pmu.leaf_0a);
    // No architectural perfmon, but the NetBurst ESCR/CCCR PMU (SDM Vol. 3B §20.15).
    EXPECT_TRUE(d[0].dec.pmu.present());
    EXPECT_TRUE(d[0].dec.pmu.netburst);
    EXPECT_EQ(d[0].dec.pmu.netburst_model, 4u);
    EXPECT_FALSE(d[0].dec.pmu.netburst_ht);  // EDX[28] set, but EBX[23:16] = 1 logical processor
    std::string t = table(d);
    EXPECT_NE(t.find("  PMU              : NetBurst ESCR/CCCR (no leaf 0AH: maximum CPUID leaf 0x5)\n"
                     "  counters         : 18 x 40 bits in 9 pairs: BPU 0-3, MS 4-7, FLAME 8-11, IQ 12-17\n"
                     "  ESCRs            : 43 (IQ_ESCR0/1 exist on models 1-2 only)\n"
                     "  Hyper-Threading  : no\n"),
              std::string::npos)
        << t;
    expect_complete_for_capture(d);
}

// `cpuid -r` in a KVM guest on an AMD EPYC (family 19h) host without a virtual PMU.
TEST(CpuidDecode, CpuidRawKvmGuest) {
    Dump d = load("cpuid-r_KVM_AMD_EPYC_2cpu.txt");
    ASSERT_EQ(d.size(), 2u);
    const CpuIdentity& id = d[0].dec.id;
    // 00A00F11: family F + A = 19h, model (0 << 4) + 1, stepping 1.
    EXPECT_EQ(id.family, 0x19u);
    EXPECT_EQ(id.model, 1u);
    EXPECT_EQ(id.stepping, 1u);
    EXPECT_TRUE(id.hypervisor);  // 01H ECX FFFA3203 bit 31
    EXPECT_STREQ(id.brand, "AMD EPYC");
    EXPECT_TRUE(d[0].raw.has(0x40000000));  // "KVMKVMKVM" leaf kept
    EXPECT_FALSE(d[0].raw.has(0x40000001));
    // 80000001H ECX 004003F3: bit 23 clear; 80000022H all zero. No counters assumed in a VM.
    EXPECT_FALSE(d[0].dec.pmu.amd_perfctr_core);
    EXPECT_FALSE(d[0].dec.pmu.amd_perfmon_v2);
    EXPECT_EQ(d[0].dec.pmu.amd_core_counters, 0);
    EXPECT_FALSE(d[0].dec.pmu.present());
    // x2APIC IDs 0 and 1 (0BH EDX); 0BH.0 EAX[4:0] = 0 (no SMT), 0BH.1 EAX[4:0] = 5.
    EXPECT_EQ(apic_ids(d), (std::vector<u64>{0, 1}));
    EXPECT_EQ(d[1].topo.core, 1u);
    EXPECT_EQ(d[1].topo.thread, 0u);
    EXPECT_EQ(d[1].topo.package, 0u);
    EXPECT_FALSE(d[1].topology_known);
    expect_complete_for_capture(d);
}

// `cpuid -r -1`: one "CPU:" section (here run on the second vCPU).
TEST(CpuidDecode, CpuidRawSingleCpu) {
    Dump d = load("cpuid-r-1_KVM_AMD_EPYC.txt");
    ASSERT_EQ(d.size(), 1u);
    EXPECT_EQ(d[0].index, 0u);
    EXPECT_EQ(d[0].topo.apic_id, 1u);  // 01H EBX 01020800, 0BH EDX 1
    EXPECT_EQ(d[0].dec.id.family, 0x19u);
}

TEST(CpuidDecode, JsonRecordsOfADump) {
    Dump d = load("GenuineIntel00C0652_ArrowLakeH_04_CPUID.txt");
    StrBuf b;
    census_json(d[2], b);
    std::string j(b.c_str(), b.size());
    EXPECT_NE(j.find("\"index\":2,\"apic_id\":16,"), std::string::npos) << j;
    EXPECT_NE(j.find("\"core_type\":\"atom\",\"core_type_id\":32,"), std::string::npos) << j;
    EXPECT_NE(j.find("\"gp_counters_usable\":[0,1,2,3,4,5,6,7],\"fixed_counters_usable\":[0,1,2,4,5,6],"),
              std::string::npos)
        << j;
    EXPECT_NE(j.find("\"perf_capabilities\":null"), std::string::npos) << j;
}

// The captured-leaf list matches what capture_cpuid reads from a CPU that enumerates
// everything.
TEST(CpuidDecode, CapturedLeafListMatchesCapture) {
    struct All {
        std::vector<std::pair<u32, u32>> read;
    } all;
    auto q = [](void* ctx, u32 leaf, u32 sub) {
        static_cast<All*>(ctx)->read.push_back({leaf, sub});
        CpuidRegs r;
        if (leaf == 0) r.eax = 0x23;
        if (leaf == 1) r.ecx = 1u << 31;                                    // hypervisor
        if (leaf == 7 && sub == 0) r.eax = 1, r.edx = 1u << 15 | 1u << 19;  // hybrid, Arch LBR
        if (leaf == 7 && sub == 1) r.eax = 1u << 8;                         // leaf 23H
        if (leaf == 0x23 && sub == 0) r.eax = 0x3E;                         // sub-leaves 1-5
        if (leaf == 4 && sub < 3) r.eax = sub + 1;                          // L1D, L1I, L2; type 0 ends
        if (leaf == 0x80000000) r.eax = 0x80000022;
        return r;
    };
    CpuidSnapshot s;
    capture_cpuid(q, &all, &s);
    for (auto& [leaf, sub] : all.read) EXPECT_TRUE(cpuid_subleaf_is_captured(leaf, sub)) << leaf << "." << sub;
    u32 leaves[] = {0,    1,          7,          0xA,        0xB,        0x1A,       0x1C,       0x1F,
                    0x23, 0x40000000, 0x80000000, 0x80000001, 0x80000002, 0x80000003, 0x80000004, 0x80000022};
    for (u32 l : leaves) {
        EXPECT_TRUE(cpuid_leaf_is_captured(l));
        EXPECT_TRUE(s.has(l, 0)) << std::hex << l;
    }
    EXPECT_EQ(s.count, 27u);  // 16 leaves + 7.1 + 0B.1 + 23H.1-5 + 04H.0-3 (1FH.0 is level type 0: the end)
    // Leaf 4 up to the first sub-leaf of cache type 0 (the simulator's cache geometry).
    for (u32 sub = 0; sub < 4; ++sub) EXPECT_TRUE(s.has(4, sub)) << sub;
    EXPECT_FALSE(s.has(4, 4));
    EXPECT_TRUE(cpuid_subleaf_is_captured(4, 7));
    EXPECT_FALSE(cpuid_subleaf_is_captured(4, 8));
    EXPECT_TRUE(cpuid_subleaf_is_captured(0x8000001D, 3));
    EXPECT_FALSE(s.has(0x8000001D, 0));  // AMD's twin of leaf 4: read on AMD/Hygon only
    EXPECT_FALSE(cpuid_leaf_is_captured(5));
    EXPECT_FALSE(cpuid_leaf_is_captured(0x40000001));
    EXPECT_FALSE(cpuid_leaf_is_captured(0x80000009));
    // 8000_0005H/0006H (AMD's older cache descriptions, x86/cache_geometry.h): AMD/Hygon only.
    EXPECT_TRUE(cpuid_leaf_is_captured(0x80000006));
    EXPECT_FALSE(s.has(0x80000006, 0));
    // 06H, 8000_0007H and 8000_0008H (EffFreq, EffFreqRO, IRPerfCount) are read on AMD/Hygon only.
    EXPECT_TRUE(cpuid_leaf_is_captured(0x80000007));
    EXPECT_FALSE(s.has(0x80000007, 0));
    EXPECT_TRUE(cpuid_leaf_is_captured(0x80000008));
    EXPECT_TRUE(cpuid_leaf_is_captured(6));
    EXPECT_FALSE(s.has(0x80000008, 0));
    EXPECT_FALSE(s.has(6, 0));
    EXPECT_FALSE(cpuid_subleaf_is_captured(7, 2));
    EXPECT_FALSE(cpuid_subleaf_is_captured(0x23, 6));
    EXPECT_FALSE(cpuid_subleaf_is_captured(0xA, 1));
}

// SDM Vol. 2A CPUID 01H (DisplayFamily/DisplayModel) and AMD APM Vol. 3 Fn0000_0001_EAX:
// the extended family counts only for base family 0FH; the extended model for base
// family 06H or 0FH on Intel, only for 0FH on AMD and Hygon.
TEST(CpuidDecode, DisplayFamilyModelRules) {
    auto decode = [](const char* vendor12, u32 sig) {
        CpuidSnapshot s;
        CpuidRegs l0;
        l0.eax = 1;
        u32 w[3];
        for (int i = 0; i < 3; ++i)
            w[i] = u32(u8(vendor12[4 * i])) | u32(u8(vendor12[4 * i + 1])) << 8 | u32(u8(vendor12[4 * i + 2])) << 16 |
                   u32(u8(vendor12[4 * i + 3])) << 24;
        l0.ebx = w[0];
        l0.edx = w[1];
        l0.ecx = w[2];
        s.set(0, 0, l0);
        CpuidRegs l1;
        l1.eax = sig;
        s.set(1, 0, l1);
        CpuIdentity id = decode_cpuid(s).id;
        return std::vector<u32>{id.family, id.model, id.stepping};
    };
    EXPECT_EQ(decode("GenuineIntel", 0x000306A9), (std::vector<u32>{6, 0x3A, 9}));
    EXPECT_EQ(decode("GenuineIntel", 0x00000F41), (std::vector<u32>{0xF, 4, 1}));
    EXPECT_EQ(decode("GenuineIntel", 0x00010591), (std::vector<u32>{5, 9, 1}));     // ext model ignored
    EXPECT_EQ(decode("GenuineIntel", 0x00100F41), (std::vector<u32>{0x10, 4, 1}));  // ext family for 0FH
    EXPECT_EQ(decode("GenuineIntel", 0x00100641), (std::vector<u32>{6, 4, 1}));     // ...only for 0FH
    EXPECT_EQ(decode("AuthenticAMD", 0x00A20F10), (std::vector<u32>{0x19, 0x21, 0}));
    EXPECT_EQ(decode("AuthenticAMD", 0x00010662), (std::vector<u32>{6, 6, 2}));  // K7: ext model ignored
    EXPECT_EQ(decode("HygonGenuine", 0x00900F01), (std::vector<u32>{0x18, 0, 1}));
    EXPECT_EQ(decode("CentaurHauls", 0x000106A5), (std::vector<u32>{6, 0x1A, 5}));  // Intel rules
}
