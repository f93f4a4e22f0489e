// RAPL domains per model (x86/rapl.h) against Linux's arch/x86/events/rapl.c table, the
// unit quirks, AMD's CPUID bit, and the event names.
#include <gtest/gtest.h>

#include "x86/rapl.h"

using namespace pmulab;
using regs::rapl::PowerUnit;

namespace {

CpuIdentity intel(u32 model) {
    CpuIdentity id;
    id.vendor = Vendor::intel;
    id.family = 6;
    id.model = model;
    return id;
}

u8 mask(std::initializer_list<RaplDomain> ds) {
    u8 m = 0;
    for (RaplDomain d : ds) m |= u8(1u << unsigned(d));
    return m;
}

using D = RaplDomain;

}  // namespace

TEST(Rapl, IntelModelsAsLinuxTable) {
    struct Case {
        u32 model;
        const char* table;
        u8 domains;
    };
    const Case cases[] = {
        {0x2A, "model_snb", mask({D::pkg, D::cores, D::gpu})},                    // Sandy Bridge
        {0x2D, "model_snbep", mask({D::pkg, D::cores, D::dram})},                 // Sandy Bridge-EP
        {0x3C, "model_hsw", mask({D::pkg, D::cores, D::dram, D::gpu})},           // Haswell
        {0x3F, "model_hsx", mask({D::pkg, D::cores, D::dram})},                   // Haswell-X
        {0x57, "model_knl", mask({D::pkg, D::dram})},                             // Knights Landing
        {0x5E, "model_skl", mask({D::pkg, D::cores, D::dram, D::gpu, D::psys})},  // Skylake client
        {0x55, "model_hsx", mask({D::pkg, D::cores, D::dram})},                   // Skylake-X
        {0x7A, "model_hsw", mask({D::pkg, D::cores, D::dram, D::gpu})},           // Goldmont Plus
        {0x6A, "model_hsx", mask({D::pkg, D::cores, D::dram})},                   // Ice Lake-X
        {0x8F, "model_spr", mask({D::pkg, D::cores, D::dram, D::psys})},          // Sapphire Rapids
        {0xC5, "model_skl", mask({D::pkg, D::cores, D::dram, D::gpu, D::psys})},  // Arrow Lake-H
    };
    for (const Case& c : cases) {
        RaplSupport s = rapl_support(intel(c.model), 0);
        EXPECT_TRUE(s.present) << std::hex << c.model;
        EXPECT_FALSE(s.amd);
        EXPECT_STREQ(s.table, c.table) << std::hex << c.model;
        EXPECT_EQ(s.domains, c.domains) << std::hex << c.model;
    }
    // Not in the table: Nehalem (no RAPL), Core 2, and a Pentium 4 family.
    RaplSupport n = rapl_support(intel(0x1A), 0);
    EXPECT_FALSE(n.present);
    EXPECT_STREQ(n.why, "family 6H model 1AH is not in the RAPL model table (Linux's rapl.c)");
    CpuIdentity p4 = intel(4);
    p4.family = 0xF;
    EXPECT_FALSE(rapl_support(p4, 0).present);
}

TEST(Rapl, UnitQuirksOfServerDramAndSprPsys) {
    const PowerUnit unit(0x000A0E03);  // ESU 14
    RaplSupport icx = rapl_support(intel(0x6A), 0);
    EXPECT_EQ(rapl_domain_esu(icx, D::pkg, unit), 14);
    EXPECT_EQ(rapl_domain_esu(icx, D::dram, unit), 16);  // fixed 2^-16 J
    RaplSupport skl = rapl_support(intel(0x5E), 0);
    EXPECT_EQ(rapl_domain_esu(skl, D::dram, unit), 14);  // a client: the MSR's unit
    RaplSupport spr = rapl_support(intel(0x8F), 0);
    EXPECT_EQ(rapl_domain_esu(spr, D::psys, unit), 0);   // 1 J
    EXPECT_EQ(rapl_domain_esu(spr, D::dram, unit), 14);  // SPR: no DRAM quirk in Linux's table
}

TEST(Rapl, AmdNeedsCpuidBit14) {
    CpuIdentity zen;
    zen.vendor = Vendor::amd;
    zen.family = 0x19;
    zen.model = 0x61;
    RaplSupport s = rapl_support(zen, 0x6799);  // 8000_0007H:EDX of Zen 4 (bit 14 set)
    EXPECT_TRUE(s.present && s.amd);
    EXPECT_EQ(s.domains, mask({D::pkg, D::cores}));
    EXPECT_STREQ(rapl_event_name(D::cores, true), "energy-core");
    EXPECT_EQ(rapl_status_msr(D::pkg, true), 0xC001029Bu);
    EXPECT_EQ(rapl_status_msr(D::cores, true), 0xC001029Au);
    EXPECT_EQ(rapl_unit_msr(true), 0xC0010299u);
    RaplSupport none = rapl_support(zen, 0x6799 & ~(1u << 14));
    EXPECT_FALSE(none.present);
    EXPECT_STREQ(none.why, "CPUID Fn8000_0007_EDX[14] (RAPL) is 0");
}

TEST(Rapl, EventNamesAndAliases) {
    struct Case {
        const char* name;
        RaplDomain d;
    };
    const Case cases[] = {{"energy-pkg", D::pkg},  {"ENERGY-CORES", D::cores}, {"energy-core", D::cores},
                          {"energy-gpu", D::gpu},  {"energy-dram", D::dram},   {"energy-ram", D::dram},
                          {"energy-psys", D::psys}};
    for (const Case& c : cases) {
        RaplDomain d = D::psys;
        EXPECT_TRUE(parse_energy_event(StrView(c.name), &d)) << c.name;
        EXPECT_EQ(d, c.d) << c.name;
    }
    RaplDomain d;
    EXPECT_FALSE(parse_energy_event(StrView("energy-uncore"), &d));
    EXPECT_FALSE(parse_energy_event(StrView("instructions"), &d));
    EXPECT_EQ(rapl_status_msr(D::pkg, false), 0x611u);
    EXPECT_EQ(rapl_status_msr(D::cores, false), 0x639u);
    EXPECT_EQ(rapl_status_msr(D::gpu, false), 0x641u);
    EXPECT_EQ(rapl_status_msr(D::dram, false), 0x619u);
    EXPECT_EQ(rapl_status_msr(D::psys, false), 0x64Du);
    EXPECT_EQ(rapl_unit_msr(false), 0x606u);
}
