// L3 slices (src/sim/sim_slice.h): the complex-addressing hash of Maurice et al. 2015 on
// hand-worked addresses, the sliced L3 of the hierarchy, the --cache field, and the
// C-Box lookup counters of the simulated client uncore (src/sim/sim_uncore.h).
#include <gtest/gtest.h>

#include <vector>

#include "sim/sim_cache.h"
#include "sim/sim_cpu.h"
#include "sim/sim_slice.h"
#include "sim/sim_uncore.h"
#include "support/test_platform.h"

using pmulab::u32;
using pmulab::u64;
using sim::CacheConfig;
using sim::CacheHierarchy;

TEST(SimSlices, HashBitsOfMauriceEtAl) {
    // o0 has bit 6, o1 bit 7, o2 bit 8 (and only they, of 6..9).
    EXPECT_EQ(sim::llc_slice(0x40, 4), 1u);
    EXPECT_EQ(sim::llc_slice(0x80, 4), 2u);
    EXPECT_EQ(sim::llc_slice(0x100, 4), 0u);
    EXPECT_EQ(sim::llc_slice(0x100, 8), 4u);
    EXPECT_EQ(sim::llc_slice(0x200, 8), 0u);  // bit 9 is in none of them
    // Bit 17 is in o0 and o1; bit 37 in o1 and o2; bit 36 in o0 and o2.
    EXPECT_EQ(sim::llc_slice(u64(1) << 17, 4), 3u);
    EXPECT_EQ(sim::llc_slice(u64(1) << 37, 8), 6u);
    EXPECT_EQ(sim::llc_slice(u64(1) << 36, 8), 5u);
    // Two slices use o0 alone; a bit twice cancels (XOR).
    EXPECT_EQ(sim::llc_slice(0xC0, 2), 1u);
    EXPECT_EQ(sim::llc_slice(0x440, 2), 0u);  // bits 6 and 10: both in o0
    EXPECT_EQ(sim::llc_slice(0xFFFFFFFFC0ull, 1), 0u);
    // Every slice takes a quarter of 4096 consecutive lines.
    u32 n[4] = {};
    for (u64 line = 0; line < 4096; ++line) ++n[sim::llc_slice(line * 64, 4)];
    for (u32 k : n) EXPECT_EQ(k, 1024u);
}

TEST(SimSlices, ClientPartsGetOneSlicePerCore) {
    sim::SimMachine skl = pmutest::dump_machine("GenuineIntel00506E3_Skylake_CPUID.txt");
    EXPECT_EQ(sim::client_llc_slices(skl.cpu(0).snapshot()), 4u);
    EXPECT_TRUE(sim::uncore_global_at_e01(skl.cpu(0).snapshot()));
    EXPECT_EQ(sim::describe(sim::default_cache_config(skl.cpu(0).snapshot())),
              "L1D 32 KiB 8-way 64 sets PLRU, L2 256 KiB 4-way 1024 sets QLRU_H00_M1_R2_U1, "
              "L3 6 MiB 12-way 8192 sets QLRU_H11_M1_R0_U0 (4 slices of 2048 sets)");
    // A server part (CHAs, not C-Boxes), AMD and a hybrid client: no slices.
    for (const char* d : {"cpuid-r_KVM_Intel_EmeraldRapids_16cpu.txt", "cpuid-r-1_KVM_AMD_EPYC.txt",
                          "GenuineIntel00C0652_ArrowLakeH_04_CPUID.txt"}) {
        sim::SimMachine m = pmutest::dump_machine(d);
        EXPECT_EQ(sim::client_llc_slices(m.cpu(0).snapshot()), 0u) << d;
        EXPECT_EQ(m.uncore(), nullptr) << d;
    }
    // Sandy Bridge (model 2AH) with 2 cores of 2 threads: 2 slices, the global control at 391H.
    pmulab::CpuidSnapshot snb;
    snb.set(0, 0, {0xD, 0x756e6547, 0x6c65746e, 0x49656e69});
    snb.set(1, 0, {0x000206A7, 0, 0, 0});
    snb.set(0xB, 0, {1, 2, 0x100, 0});
    snb.set(0xB, 1, {4, 4, 0x201, 0});
    EXPECT_EQ(sim::client_llc_slices(snb), 2u);
    EXPECT_FALSE(sim::uncore_global_at_e01(snb));
}

TEST(SimSlices, EachSliceIsItsOwnCache) {
    // 4 slices of 4 one-way sets: lines 0 and 4 share set 0 of a slice; line 4 (0x100,
    // bit 8: o2 only) is in slice 0 like line 0, line 1 (0x40) in slice 1, and so is line
    // 5 (0x140: bits 6 and 8, o0 = 1, o1 = 0), which shares slice 1's set 1 with it.
    CacheConfig c;
    c.levels.push_back({"L3", 16 * 64, 1, 64, "LRU", 4});
    ASSERT_TRUE(sim::check_cache_level(c.levels[0]).ok());
    CacheHierarchy h(c);
    EXPECT_EQ(h.slice_of(0x0), 0u);
    EXPECT_EQ(h.slice_of(0x100), 0u);
    EXPECT_EQ(h.slice_of(0x140), 1u);
    h.access(0x0, false);
    h.access(0x40, false);
    EXPECT_EQ(h.access(0x0, false), 0u);    // 0x40 went to another slice
    EXPECT_EQ(h.access(0x100, false), 1u);  // same slice, same set: evicts 0x0
    EXPECT_EQ(h.access(0x0, false), 1u);
    EXPECT_EQ(h.access(0x140, false), 1u);  // evicts 0x40 (slice 1, set 1)
    EXPECT_EQ(h.access(0x40, false), 1u);
    EXPECT_EQ(h.access(0x0, false), 0u);  // slice 0 untouched by slice 1
}

TEST(SimSlices, CacheSpecSetsTheSlices) {
    CacheConfig d;
    d.levels = {{"L1D", 32768, 8, 64, "LRU"}, {"L2", 262144, 4, 64, "LRU"}, {"L3", 8 << 20, 16, 64, "LRU", 4}};
    auto r = sim::parse_cache_spec("L3:::FIFO:8", d);
    ASSERT_TRUE(r.ok()) << r.error().msg;
    EXPECT_EQ(sim::describe(r.value()), "L1D 32 KiB 8-way 64 sets LRU, L2 256 KiB 4-way 1024 sets LRU, "
                                        "L3 8 MiB 16-way 8192 sets FIFO (8 slices of 1024 sets)");
    r = sim::parse_cache_spec("L3:::LRU:1", d);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r.value().levels[2].slices, 1u);
    EXPECT_EQ(sim::parse_cache_spec("L3:::LRU:3", d).error().msg,
              std::string("--cache: L3: 3 slices (L3 only: 1, 2, 4 or 8 by the client hash, 9 to 64 by the server "
                          "stand-in)"));
    EXPECT_EQ(sim::parse_cache_spec("L2::::2", d).error().msg,
              std::string("--cache: 'L2::::2': 5 fields; the form is LEVEL:SIZE[:WAYS[:POLICY]] (L3: "
                          "[:POLICY[:SLICES]])"));
    EXPECT_EQ(sim::parse_cache_spec("L3:1536:12:LRU:4", d).error().msg,
              std::string("--cache: L3: 2 sets do not split into 4 slices"));
}

TEST(SimUncore, CboxMsrsOfSkylakeClient) {
    sim::SimMachine m = pmutest::dump_machine("GenuineIntel00506E3_Skylake_CPUID.txt");
    ASSERT_NE(m.uncore(), nullptr);
    EXPECT_EQ(m.rdmsr(0x396).value(), 5u);  // 4 C-Boxes, plus one
    EXPECT_FALSE(m.wrmsr(0x396, 0).ok());   // read-only
    EXPECT_TRUE(m.wrmsr(0xE01, 0x20000000).ok());
    // Sandy Bridge's address: on Skylake (PMU version 4) 391H is IA32_PERF_GLOBAL_STATUS_SET.
    EXPECT_FALSE(m.uncore()->claims(0x391));
    EXPECT_FALSE(m.wrmsr(0xE01, u64(1) << 28).ok());  // reserved
    EXPECT_TRUE(m.wrmsr(0x730, 0x408F34).ok());       // C-Box 3, PERFEVTSEL0
    EXPECT_EQ(m.rdmsr(0x730).value(), 0x408F34u);
    EXPECT_FALSE(m.wrmsr(0x730, u64(1) << 20).ok());  // reserved bit 20
    EXPECT_FALSE(m.wrmsr(0x736, u64(1) << 44).ok());  // 44-bit counter
    EXPECT_TRUE(m.wrmsr(0x737, 5).ok());              // PERFCTR1
    EXPECT_EQ(m.rdmsr(0x737).value(), 5u);
    EXPECT_FALSE(m.rdmsr(0x740).ok());  // no C-Box 4
    // Shared by the package: CPU 2 sees what CPU 0 wrote.
    m.on(2, [&] { EXPECT_EQ(m.rdmsr(0x730).value(), 0x408F34u); });
}

TEST(SimUncore, LlcLookupCountsByStateAndRequest) {
    sim::SimUncore u(4, true);
    ASSERT_EQ(u.wrmsr(0x700, 0x408F34), 0);  // C-Box 0 counter 0: any state, any request
    ASSERT_EQ(u.wrmsr(0x701, 0x401834), 0);  // counter 1: state I, reads only
    ASSERT_EQ(u.wrmsr(0x710, 0x408F34), 0);  // C-Box 1 counter 0
    u.llc_lookup(0, true, false);            // global control off: nothing counts
    u64 v = 0;
    u.rdmsr(0x706, &v);
    EXPECT_EQ(v, 0u);
    ASSERT_EQ(u.wrmsr(0xE01, 0x20000000), 0);
    u.llc_lookup(0, true, false);   // hit (E), read
    u.llc_lookup(0, false, false);  // miss (I), read
    u.llc_lookup(0, false, true);   // miss, write
    u.llc_lookup(1, false, false);
    u.llc_lookup(7, false, false);  // no such C-Box: ignored
    u.rdmsr(0x706, &v);
    EXPECT_EQ(v, 3u);
    u.rdmsr(0x707, &v);
    EXPECT_EQ(v, 1u);
    u.rdmsr(0x716, &v);
    EXPECT_EQ(v, 1u);
    ASSERT_EQ(u.wrmsr(0x710, 0x008F34), 0);  // EN clear: stops
    u.llc_lookup(1, false, false);
    u.rdmsr(0x716, &v);
    EXPECT_EQ(v, 1u);
    ASSERT_EQ(u.wrmsr(0x706, (u64(1) << 44) - 1), 0);  // wraps at 44 bits
    u.llc_lookup(0, true, false);
    u.rdmsr(0x706, &v);
    EXPECT_EQ(v, 0u);
}

TEST(SimSlices, ASlicedL3IsSharedAndAnotherIsNot) {
    CacheConfig c;
    c.levels = {{"L1D", 32768, 8, 64, "LRU"}, {"L2", 262144, 4, 64, "LRU"}, {"L3", 8 << 20, 16, 64, "LRU", 4}};
    CacheHierarchy a(c), b(c);
    ASSERT_TRUE(b.share_last_level(a));
    EXPECT_EQ(a.access(0x12340, false), 3u);  // memory
    EXPECT_EQ(b.access(0x12340, false), 2u);  // the other core's L3 holds it
    b.reset();                                // WBINVD on one core empties the shared L3
    EXPECT_EQ(a.access(0x56780, false), 3u);
    EXPECT_EQ(a.access(0x12340, false), 0u);  // still in a's own L1
    c.levels[2].slices = 1;
    CacheHierarchy d(c), e(c);
    EXPECT_FALSE(e.share_last_level(d));  // an unsliced L3 stays each CPU's own
    CacheConfig other = c;
    other.levels[2].slices = 4;
    other.levels[2].policy = "FIFO";
    CacheHierarchy f(other);
    EXPECT_FALSE(f.share_last_level(a));  // another policy
}
