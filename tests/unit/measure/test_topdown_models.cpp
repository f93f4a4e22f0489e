// Which TopDown method a core gets from its family and model (x86/uarch.h, the table
// measure/topdown.cpp reads; Linux intel_pmu_init and bsp_init_amd): Arrow Lake-U and
// Wildcat Lake, Zen 4's whole model range, Zen 6 apart from Zen 5, Skylake-class cores under
// KVM (perfmon v2), and Zen 5's pipeline-restart event (bp_redirects.resync, PMCx09F).
#include <gtest/gtest.h>

#include <string>

#include "events/events.h"
#include "measure/topdown.h"
#include "pmu/pmu.h"
#include "x86/uarch.h"

using namespace pmulab;

namespace {

CpuIdentity ident(Vendor v, u32 family, u32 model, u8 core_type = kCoreTypeNone, u32 native = 0) {
    CpuIdentity id;
    id.vendor = v;
    id.family = family;
    id.model = model;
    id.core_type = core_type;
    id.leaf_1a_core_type = core_type;
    id.native_model_id = native;
    return id;
}

PmuInfo intel_pmu(u8 version, bool perf_metrics) {
    PmuInfo info;
    info.kind = PmuKind::intel_arch;
    info.vendor = Vendor::intel;
    info.caps.leaf_0a = true;
    info.caps.version = version;
    info.caps.gp_counters = 4;
    info.caps.fixed_counters = perf_metrics ? 4 : 3;
    info.caps.fixed_effective = perf_metrics ? 0xF : 0x7;
    info.caps.perf_caps_read = perf_metrics;
    info.caps.perf_caps = perf_metrics ? u64(1) << 15 : 0;
    info.version = version;
    info.gp_mask = 0xF;
    info.fixed_mask = info.caps.fixed_effective;
    return info;
}

PmuInfo amd_pmu() {
    PmuInfo info;
    info.kind = PmuKind::amd;
    info.vendor = Vendor::amd;
    info.caps.amd_perfctr_core = true;
    info.caps.amd_core_counters = 6;
    info.gp_mask = 0x3F;
    return info;
}

}  // namespace

TEST(UarchTables, AmdZenGenerationsFollowLinux) {
    EXPECT_EQ(amd_zen_generation(0x19, 0x21), 3u);
    for (u32 m : {0x10u, 0x1Fu, 0x61u, 0x75u, 0x80u, 0x9Fu, 0xA0u, 0xAFu})
        EXPECT_EQ(amd_zen_generation(0x19, m), 4u) << m;
    for (u32 m : {0x00u, 0x24u, 0x44u, 0x60u, 0x7Fu}) EXPECT_EQ(amd_zen_generation(0x1A, m), 5u) << m;
    for (u32 m : {0x50u, 0x5Fu, 0x80u, 0xA0u, 0xC0u, 0xD0u, 0xE0u, 0xEFu})
        EXPECT_EQ(amd_zen_generation(0x1A, m), 6u) << m;
    EXPECT_EQ(amd_zen_generation(0x1A, 0x30), 0u);
    EXPECT_EQ(amd_zen_generation(0x1A, 0xF0), 0u);
}

TEST(UarchTables, ArrowLakeUAndWildcatLake) {
    EXPECT_TRUE(intel_topdown_l2_model(6, 0xB5));
    EXPECT_TRUE(intel_topdown_l2_model(6, 0xD5));
    EXPECT_EQ(intel_atom_uarch(6, 0xB5, 2), AtomUarch::crestmont);  // Meteor Lake's E cores
    EXPECT_EQ(intel_atom_uarch(6, 0xD5, 3), AtomUarch::skymont);    // Panther Lake's (Darkmont)
}

TEST(TopdownModels, ArrowLakeUAndWildcatLakePCoresHaveLevel2AndTheirECoresTheirEvents) {
    // Arrow Lake-U (06_B5H): Meteor Lake's cores (Redwood Cove, Crestmont); Wildcat Lake
    // (06_D5H): Panther Lake's (Cougar Cove, Darkmont).
    struct Part {
        u32 model, native;
        TopdownMethod e;
        unsigned slots;
    } parts[] = {{0xB5, 2, TopdownMethod::crestmont_events, 6}, {0xD5, 3, TopdownMethod::skymont_events, 8}};
    for (const Part& x : parts) {
        TopdownSupport p = topdown_support(intel_pmu(5, true), ident(Vendor::intel, 6, x.model, kCoreTypeCore));
        EXPECT_EQ(p.method, TopdownMethod::perf_metrics) << std::hex << x.model;
        EXPECT_EQ(p.max_level, 2u) << std::hex << x.model;
        TopdownSupport e = topdown_support(intel_pmu(5, false),
                                           ident(Vendor::intel, 6, x.model, kCoreTypeAtom, x.native));
        EXPECT_EQ(e.method, x.e) << std::hex << x.model << ": " << e.why;
        EXPECT_EQ(e.slots_per_cycle, x.slots) << std::hex << x.model;
    }
}

TEST(TopdownModels, Zen4IsModels10To1FAnd60ToAF) {
    for (u32 m : {0x11u, 0x61u, 0x78u, 0x80u, 0x90u, 0xA2u}) {
        TopdownSupport s = topdown_support(amd_pmu(), ident(Vendor::amd, 0x19, m));
        EXPECT_EQ(s.method, TopdownMethod::zen4_pipeline) << std::hex << m << ": " << s.why;
        EXPECT_EQ(s.slots_per_cycle, 6u);
    }
    EXPECT_EQ(topdown_support(amd_pmu(), ident(Vendor::amd, 0x19, 0x21)).method, TopdownMethod::none);  // Zen 3
}

TEST(TopdownModels, Zen6IsNotZen5AndSaysSo) {
    for (u32 m : {0x02u, 0x44u, 0x70u}) {
        TopdownSupport s = topdown_support(amd_pmu(), ident(Vendor::amd, 0x1A, m));
        EXPECT_EQ(s.method, TopdownMethod::zen5_pipeline) << std::hex << m;
        EXPECT_EQ(s.slots_per_cycle, 8u);
    }
    for (u32 m : {0x50u, 0x80u, 0xA4u, 0xC0u, 0xE0u}) {
        TopdownSupport s = topdown_support(amd_pmu(), ident(Vendor::amd, 0x1A, m));
        EXPECT_EQ(s.method, TopdownMethod::none) << std::hex << m;
        EXPECT_NE(std::string(s.why).find("Zen 6"), std::string::npos) << s.why;
    }
}

TEST(TopdownModels, SkylakeClassUnderKvmPerfmonV2StillHasTopdown) {
    // KVM exposes architectural perfmon v2 on a Skylake-SP host (Linux kvm_pmu_cap clamps the
    // version to 2): the model and its 4 GP counters decide, as on bare metal (v4).
    for (u8 v : {u8(2), u8(4)}) {
        TopdownSupport s = topdown_support(intel_pmu(v, false), ident(Vendor::intel, 6, 0x55));
        EXPECT_EQ(s.method, TopdownMethod::skylake_events) << "v" << int(v) << ": " << s.why;
        EXPECT_EQ(s.slots_per_cycle, 4u);
    }
    PmuInfo two = intel_pmu(2, false);
    two.gp_mask = 0x3;  // too few counters for its 4 GP events
    EXPECT_EQ(topdown_support(two, ident(Vendor::intel, 6, 0x55)).method, TopdownMethod::none);
}

TEST(TopdownModels, Zen5Level2ReadsBpRedirectsResyncNotPmcx096) {
    TopdownSupport z5 = topdown_support(amd_pmu(), ident(Vendor::amd, 0x1A, 0x44));
    StrBuf specs;
    topdown_event_specs(z5, 2, &specs);
    std::string s5 = specs.c_str();
    EXPECT_NE(s5.find("bp_redirects.resync"), std::string::npos) << s5;
    EXPECT_EQ(s5.find("resyncs_or_nc_redirects"), std::string::npos) << s5;
    TopdownSupport z4 = topdown_support(amd_pmu(), ident(Vendor::amd, 0x19, 0x61));
    StrBuf specs4;
    topdown_event_specs(z4, 2, &specs4);
    std::string s4 = specs4.c_str();
    EXPECT_NE(s4.find("resyncs_or_nc_redirects"), std::string::npos) << s4;
    EXPECT_EQ(s4.find("bp_redirects.resync"), std::string::npos) << s4;
    Result<Event> e = parse_event_spec(StrView("bp_redirects.resync"), EventDialect::amd_zen);
    ASSERT_TRUE(e.ok());
    EXPECT_EQ(e.value().event_select, 0x9Fu);
    EXPECT_EQ(e.value().umask, 0x01u);
}
