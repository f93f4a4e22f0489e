// The simulated AMD L3 PMU (src/sim/sim_amd_l3.h) and the stand-in slice hash
// (sim_slice.h amd_standin_slice): hand-worked addresses, #GP on reserved bits per family,
// counting by the slice, core and thread selections, and the sliced L3 of the AMD models.
#include <gtest/gtest.h>

#include "sim/sim_amd_l3.h"
#include "sim/sim_builders.h"
#include "sim/sim_machine.h"
#include "sim/sim_slice.h"

using pmulab::u32;
using pmulab::u64;
using sim::SimAmdL3;

namespace {
constexpr u32 kCfg0 = 0xC0010230, kCtr0 = 0xC0010231;
constexpr u64 kEn = u64(1) << 22;
// L3PMCx04 unit mask FFh, enabled.
constexpr u64 kLookupAll = 0x04 | (0xFFull << 8) | kEn;
}  // namespace

TEST(SimAmdL3, StandInHashFoldsThreeBitGroups) {
    EXPECT_EQ(sim::amd_standin_slice(0x40, 8), 1u);          // bit 6
    EXPECT_EQ(sim::amd_standin_slice(0x200, 8), 1u);         // bit 9: the next group's low bit
    EXPECT_EQ(sim::amd_standin_slice(0x240, 8), 0u);         // bits 6 and 9 cancel
    EXPECT_EQ(sim::amd_standin_slice(0x100, 8), 4u);         // bit 8
    EXPECT_EQ(sim::amd_standin_slice(0x100, 4), 0u);         // 4 slices: the low 2 bits
    EXPECT_EQ(sim::amd_standin_slice(u64(1) << 47, 8), 4u);  // bit 47: the last group's top
    EXPECT_EQ(sim::amd_standin_slice(u64(1) << 48, 8), 0u);  // above the hash
    EXPECT_EQ(sim::amd_standin_slice(0x3F, 8), 0u);          // the line offset
    for (u32 k = 0; k < 8; ++k) EXPECT_EQ(sim::amd_standin_slice(u64(k) << 6, 8), k);  // 8 lines: every slice
    EXPECT_EQ(sim::slice_of_hash(0x40, 4, sim::SliceHash::intel_client), sim::llc_slice(0x40, 4));
}

TEST(SimAmdL3, ReservedBitsAreGpPerFamily) {
    SimAmdL3 f17(true), f19(false);
    const u64 f17_ok = 0xFFull | (0xFFull << 8) | kEn | (0xFull << 48) | (0xFFull << 56);
    const u64 f19_ok = 0xFFull | (0xFFull << 8) | kEn | (7ull << 42) | (3ull << 46) | (7ull << 48) | (3ull << 56);
    EXPECT_EQ(f17.wrmsr(kCfg0, f17_ok), 0);
    EXPECT_EQ(f19.wrmsr(kCfg0 + 10, f19_ok), 0);
    for (u32 b = 0; b < 64; ++b) {
        u64 v = u64(1) << b;
        EXPECT_EQ(f17.wrmsr(kCfg0 + 2, v), (f17_ok & v) ? 0 : 13) << "17h bit " << b;
        EXPECT_EQ(f19.wrmsr(kCfg0 + 2, v), (f19_ok & v) ? 0 : 13) << "19h bit " << b;
    }
    EXPECT_EQ(f19.wrmsr(kCtr0, (u64(1) << 48) - 1), 0);
    EXPECT_EQ(f19.wrmsr(kCtr0, u64(1) << 48), 13);
    u64 v = 0;
    EXPECT_EQ(f19.rdmsr(kCtr0, &v), 0);
    EXPECT_EQ(v, (u64(1) << 48) - 1);
    EXPECT_TRUE(f19.claims(0xC001023B) && !f19.claims(0xC001023C) && !f19.claims(0xC001022F));
}

TEST(SimAmdL3, Family17hCountsBySliceMaskAndThreadMask) {
    SimAmdL3 l3(true);
    ASSERT_EQ(l3.wrmsr(kCfg0, kLookupAll | (0x4ull << 48) | (0xFFull << 56)), 0);     // slice 2, every thread
    ASSERT_EQ(l3.wrmsr(kCfg0 + 2, kLookupAll | (0xFull << 48) | (0x8ull << 56)), 0);  // all slices, core 1 thread 1
    ASSERT_EQ(l3.wrmsr(kCfg0 + 4, 0x04 | (0x01ull << 8) | kEn | (0xFull << 48) | (0xFFull << 56)), 0);  // misses
    l3.lookup(2, 0, 0, true);
    l3.lookup(2, 1, 1, false);
    l3.lookup(3, 1, 1, true);
    l3.lookup(1, 1, 0, true);
    u64 v[3];
    for (u32 i = 0; i < 3; ++i) l3.rdmsr(kCtr0 + 2 * i, &v[i]);
    EXPECT_EQ(v[0], 2u);
    EXPECT_EQ(v[1], 2u);
    EXPECT_EQ(v[2], 1u);
}

TEST(SimAmdL3, Family19hCountsBySliceIdCoreIdAndThreadMask) {
    SimAmdL3 l3(false);
    ASSERT_EQ(l3.wrmsr(kCfg0, kLookupAll | (5ull << 48) | (1ull << 47) | (3ull << 56)), 0);      // slice 5, all cores
    ASSERT_EQ(l3.wrmsr(kCfg0 + 2, kLookupAll | (1ull << 46) | (3ull << 42) | (2ull << 56)), 0);  // core 3 thread 1
    ASSERT_EQ(l3.wrmsr(kCfg0 + 4, kLookupAll | (5ull << 48) | (1ull << 47)), 0);  // ThreadMask 0: nothing
    ASSERT_EQ(l3.wrmsr(kCfg0 + 6, (kLookupAll & ~kEn) | (1ull << 46) | (1ull << 47) | (3ull << 56)), 0);  // off
    l3.lookup(5, 0, 0, true);
    l3.lookup(5, 3, 1, false);
    l3.lookup(4, 3, 1, true);
    l3.lookup(4, 3, 0, true);
    u64 v[4];
    for (u32 i = 0; i < 4; ++i) l3.rdmsr(kCtr0 + 2 * i, &v[i]);
    EXPECT_EQ(v[0], 2u);
    EXPECT_EQ(v[1], 2u);
    EXPECT_EQ(v[2], 0u);
    EXPECT_EQ(v[3], 0u);
}

TEST(SimAmdL3, NamedModelsHaveItAndDumpsDoNot) {
    sim::SimMachine z1 = sim::amd_zen1(), z3 = sim::amd_zen3(), z4 = sim::amd_zen4();
    ASSERT_TRUE(z1.amd_l3() && z3.amd_l3() && z4.amd_l3());
    EXPECT_EQ(z1.amd_l3()->slices(), 4u);
    EXPECT_EQ(z3.amd_l3()->slices(), 8u);
    EXPECT_EQ(z4.amd_l3()->slices(), 8u);
    EXPECT_TRUE(z3.rdmsr(kCfg0).ok());
    EXPECT_FALSE(sim::amd_k10().rdmsr(kCfg0).ok());
    EXPECT_EQ(sim::amd_k10().amd_l3(), nullptr);
}

TEST(SimAmdL3, TheModelsL3IsTheComplexsSlices) {
    sim::SimMachine z3 = sim::amd_zen3();
    sim::CacheConfig c = sim::default_cache_config(z3.cpu(0).snapshot());
    sim::amd_l3_defaults(&c, *z3.amd_l3());
    ASSERT_EQ(c.levels.size(), 3u);
    EXPECT_EQ(c.levels[2].slices, 8u);
    EXPECT_EQ(c.levels[2].hash, sim::SliceHash::amd_standin);
    sim::CacheHierarchy h(c);
    for (u64 a : {0x40ull, 0x12345680ull, 0x7FFFFFC0ull}) EXPECT_EQ(h.slice_of(a), sim::amd_standin_slice(a, 8));
    pmulab::Result<sim::CacheConfig> two = sim::parse_cache_spec("L3:1M:4:LRU:2", c);
    ASSERT_TRUE(two.ok());
    pmulab::Status s = sim::amd_l3_check(&two.value(), *z3.amd_l3());
    ASSERT_FALSE(s.ok());
    EXPECT_STREQ(s.error().msg,
                 "L3: 2 slices, but this model's L3 PMU counts 8 per complex (family 19h): give L3:SIZE:WAYS:POLICY:8");
    pmulab::Result<sim::CacheConfig> kept = sim::parse_cache_spec("L3:4M:8:FIFO", c);
    ASSERT_TRUE(kept.ok());
    EXPECT_TRUE(sim::amd_l3_check(&kept.value(), *z3.amd_l3()).ok());
    EXPECT_EQ(kept.value().levels[2].slices, 8u);
}
