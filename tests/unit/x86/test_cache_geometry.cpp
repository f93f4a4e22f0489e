// Cache geometry from CPUID (x86/cache_geometry.h) on the real dumps in tests/data/cpuid:
// exact sets, ways, line sizes, sharing and inclusiveness per level, as the dumps' raw
// leaves say (leaf 04H, 8000_001DH, and 8000_0005H/0006H where 8000_001DH is absent).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "census/census.h"
#include "census/cpuid_dump.h"
#include "x86/cache_geometry.h"

using namespace pmulab;

namespace {

Vec<CpuRecord> load(const std::string& name) {
    std::filesystem::path dir = std::filesystem::path(__FILE__).parent_path().parent_path().parent_path() / "data" /
                                "cpuid";
    std::ifstream f(dir / name, std::ios::binary);
    EXPECT_TRUE(f.good()) << name;
    std::stringstream ss;
    ss << f.rdbuf();
    std::string text = ss.str();
    Vec<CpuRecord> recs;
    Status s = parse_cpuid_dump(StrView(text.data(), text.size()), name.c_str(), &recs);
    EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error().msg);
    return recs;
}

CacheGeometry geometry(const std::string& name) {
    Vec<CpuRecord> r = load(name);
    return r.empty() ? CacheGeometry() : decode_cache_geometry(r[0].raw);
}

struct Want {
    u32 level;
    CacheType type;
    u32 sets, ways, line, shared_by;
    int inclusive;  // 1, 0, -1 unknown
    u64 size;
};

void expect(const CacheGeometry& g, std::initializer_list<Want> want) {
    ASSERT_EQ(g.count, want.size());
    u32 i = 0;
    for (const Want& w : want) {
        const CacheLevel& c = g.levels[i++];
        SCOPED_TRACE(i);
        EXPECT_EQ(c.level, w.level);
        EXPECT_EQ(c.type, w.type);
        EXPECT_EQ(c.sets, w.sets);
        EXPECT_EQ(c.ways, w.ways);
        EXPECT_EQ(c.line, w.line);
        EXPECT_EQ(c.partitions, 1u);
        EXPECT_EQ(c.shared_by, w.shared_by);
        EXPECT_EQ(c.inclusive_known, w.inclusive >= 0);
        if (w.inclusive >= 0) EXPECT_EQ(c.inclusive, w.inclusive == 1);
        EXPECT_EQ(c.size(), w.size);
    }
}

constexpr CacheType D = CacheType::data, I = CacheType::instruction, U = CacheType::unified;
constexpr u64 KiB = 1024, MiB = 1024 * 1024;

}  // namespace

TEST(CacheGeometry, SkylakeLeaf4) {
    CacheGeometry g = geometry("GenuineIntel00506E3_Skylake_CPUID.txt");
    expect(g, {{1, D, 64, 8, 64, 2, 0, 32 * KiB},
               {1, I, 64, 8, 64, 2, 0, 32 * KiB},
               {2, U, 1024, 4, 64, 2, 0, 256 * KiB},
               {3, U, 8192, 12, 64, 16, 1, 6 * MiB}});
    EXPECT_EQ(g.levels[0].source, CacheSource::leaf4);
    EXPECT_EQ(g.levels[0].apic_id_shift, 1u);
    EXPECT_EQ(g.levels[3].apic_id_shift, 4u);
    EXPECT_TRUE(g.levels[3].complex_indexing);  // EDX = 6
    EXPECT_FALSE(g.levels[0].complex_indexing);
    StrBuf b;
    put_cache_level(b, g.levels[3]);
    EXPECT_STREQ(b.c_str(), "L3 6 MiB: 8192 sets x 12 ways x 64 B, shared by 16, inclusive, complex indexing");
    StrBuf a;
    put_cache_level(a, g.levels[0]);
    EXPECT_STREQ(a.c_str(), "L1d 32 KiB: 64 sets x 8 ways x 64 B, shared by 2, not inclusive");
}

TEST(CacheGeometry, ConroeAndAlderLake) {
    expect(geometry("GenuineIntel00006F4_Conroe_CPUID.txt"),
           {{1, D, 64, 8, 64, 1, 0, 32 * KiB}, {1, I, 64, 8, 64, 1, 0, 32 * KiB}, {2, U, 4096, 16, 64, 2, 0, 4 * MiB}});
    expect(geometry("GenuineIntel0090672_AlderLake_02_CPUID.txt"), {{1, D, 64, 12, 64, 2, 0, 48 * KiB},
                                                                    {1, I, 64, 8, 64, 2, 0, 32 * KiB},
                                                                    {2, U, 2048, 10, 64, 2, 0, 1280 * KiB},
                                                                    {3, U, 32768, 9, 64, 32, 0, 18 * MiB}});
}

TEST(CacheGeometry, GraniteRidge8000001D) {
    CacheGeometry g = geometry("AuthenticAMD0B40F40_K20_GraniteRidge_02_CPUID.txt");
    expect(g, {{1, D, 64, 12, 64, 2, 0, 48 * KiB},
               {1, I, 64, 8, 64, 2, 0, 32 * KiB},
               {2, U, 1024, 16, 64, 2, 1, 1 * MiB},
               {3, U, 32768, 16, 64, 16, 0, 32 * MiB}});
    EXPECT_EQ(g.levels[0].source, CacheSource::amd_8000001d);
    EXPECT_STREQ(g.note, "CPUID 8000_001DH");
}

TEST(CacheGeometry, K8FromLeaves80000005And6) {
    // No 8000_001DH on K8: L1 from 8000_0005H (64 KiB, 2-way, 64 B), L2 from 8000_0006H
    // (512 KiB, code 8 = 16-way); no L3 (EDX = 0). Sharing and inclusiveness unknown.
    CacheGeometry g = geometry("AuthenticAMD0020FF0_K8_Venice_CPUID.txt");
    expect(g, {{1, D, 512, 2, 64, 0, -1, 64 * KiB},
               {1, I, 512, 2, 64, 0, -1, 64 * KiB},
               {2, U, 512, 16, 64, 0, -1, 512 * KiB}});
    EXPECT_EQ(g.levels[0].source, CacheSource::amd_80000005);
    StrBuf b;
    put_cache_level(b, g.levels[2]);
    EXPECT_STREQ(b.c_str(), "L2 512 KiB: 512 sets x 16 ways x 64 B");
}

TEST(CacheGeometry, KvmDumpsAndSharers) {
    // cpuid -r under KVM: the AMD EPYC model's 8000_001DH, the Emerald Rapids model's leaf 04H.
    expect(geometry("cpuid-r-1_KVM_AMD_EPYC.txt"), {{1, D, 64, 8, 64, 1, 0, 32 * KiB},
                                                    {1, I, 64, 8, 64, 1, 0, 32 * KiB},
                                                    {2, U, 1024, 8, 64, 1, 1, 512 * KiB},
                                                    {3, U, 32768, 16, 64, 2, 0, 32 * MiB}});
    Vec<CpuRecord> cpus = load("cpuid-r_KVM_Intel_EmeraldRapids_16cpu.txt");
    ASSERT_EQ(cpus.size(), 16u);
    CacheGeometry g = decode_cache_geometry(cpus[0].raw);
    ASSERT_EQ(g.count, 4u);
    EXPECT_EQ(g.levels[3].shared_by, 16u);
    EXPECT_EQ(g.levels[3].sets, 0x3C000u);
    // The text block: every CPU the same; L3 shared by all 16 (by APIC ID).
    StrBuf t;
    census_caches(cpus, t);
    EXPECT_NE(std::string(t.c_str()).find("\ncaches (CPUID 04H):\n  L1d 48 KiB: 64 sets x 12 ways x 64 B, shared by 1, "
                                          "not inclusive; CPU 0's: CPU 0\n"),
              std::string::npos)
        << t.c_str();
    EXPECT_NE(std::string(t.c_str()).find(
                  "L3 300 MiB: 245760 sets x 20 ways x 64 B, shared by 16, not inclusive, complex indexing; "
                  "CPU 0's: CPUs 0-15\n"),
              std::string::npos)
        << t.c_str();
}

TEST(CacheGeometry, NoLeavesSaysSo) {
    CpuidSnapshot s;
    s.set(0, 0, {1, 0x756E6547, 0x6C65746E, 0x49656E69});
    CacheGeometry g = decode_cache_geometry(s);
    EXPECT_EQ(g.count, 0u);
    EXPECT_STREQ(g.note, "no cache leaf (04H)");
}

TEST(CacheGeometry, InTheCpuRecord) {
    Vec<CpuRecord> cpus = load("GenuineIntel00506E3_Skylake_CPUID.txt");
    ASSERT_FALSE(cpus.empty());
    StrBuf b;
    census_json(cpus[0], b);
    EXPECT_NE(std::string(b.c_str()).find(
                  "\"caches\":{\"L1d\":{\"level\":1,\"type\":\"data\",\"size\":32768,\"sets\":64,\"ways\":8,"
                  "\"line_size\":64,\"partitions\":1,\"fully_associative\":false,\"shared_by\":2,\"apic_id_shift\":1,"
                  "\"inclusive\":false,\"complex_indexing\":false,\"source\":\"cpuid_04h\"},\"L1i\":"),
              std::string::npos)
        << b.c_str();
    // K8: sharing and inclusiveness unknown are null.
    Vec<CpuRecord> k8 = load("AuthenticAMD0020FF0_K8_Venice_CPUID.txt");
    StrBuf c;
    census_json(k8[0], c);
    EXPECT_NE(std::string(c.c_str()).find("\"L2\":{\"level\":2,\"type\":\"unified\",\"size\":524288,\"sets\":512,"
                                          "\"ways\":16,\"line_size\":64,\"partitions\":1,\"fully_associative\":false,"
                                          "\"shared_by\":null,\"inclusive\":null,\"complex_indexing\":false,"
                                          "\"source\":\"cpuid_80000005h_6h\"}"),
              std::string::npos)
        << c.c_str();
}
