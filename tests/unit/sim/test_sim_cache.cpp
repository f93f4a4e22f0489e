// The memory hierarchy (src/sim/sim_cache.h): each replacement policy on hand-worked
// sequences (worked from nanoBench's cacheSim.py classes), the hierarchy's fill, flush and
// reset rules, the --cache syntax and the defaults from real CPUID dumps.
// tests/py/test_cache_model.py compares random sequences with an independent reference.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sim/sim_cache.h"
#include "sim/sim_cpu.h"
#include "support/test_platform.h"

using pmulab::u64;
using sim::CacheConfig;
using sim::CacheHierarchy;
using sim::CacheLevelSpec;

namespace {

// One level of one set with `ways` ways: line k is address k * 64.
CacheHierarchy one_set(unsigned ways, const std::string& policy, u64 seed = 0) {
    CacheConfig c;
    c.levels.push_back({"L1D", u64(ways) * 64, ways, 64, policy});
    c.seed = seed;
    EXPECT_TRUE(sim::check_cache_level(c.levels[0]).ok()) << sim::check_cache_level(c.levels[0]).error().msg;
    return CacheHierarchy(c);
}

// "H" for a hit, "M" for a miss, per line of `seq` (letters A.. are lines 0..).
std::string run(CacheHierarchy& h, const std::string& seq) {
    std::string out;
    for (char ch : seq) out += h.access(u64(ch - 'A') * 64, false) == 0 ? 'H' : 'M';
    return out;
}

}  // namespace

TEST(SimCacheLru, WaysLinesHitAfterWarmupOneMoreMissesAlways) {
    CacheHierarchy h = one_set(4, "LRU");
    EXPECT_EQ(run(h, "ABCD"), "MMMM");
    EXPECT_EQ(run(h, "ABCDABCD"), "HHHHHHHH");
    CacheHierarchy g = one_set(4, "LRU");
    EXPECT_EQ(run(g, "ABCDEABCDEABCDE"), "MMMMMMMMMMMMMMM");
}

TEST(SimCacheLru, HitRefreshesFifoDoesNot) {
    CacheHierarchy lru = one_set(4, "LRU");
    CacheHierarchy fifo = one_set(4, "FIFO");
    // A hit in between: LRU evicts B for E, FIFO still evicts A (the first in).
    EXPECT_EQ(run(lru, "ABCDAEA"), "MMMMHMH");
    EXPECT_EQ(run(fifo, "ABCDAEA"), "MMMMHMM");
}

TEST(SimCacheLru, FlushedWayKeepsItsAgeAsInCacheSim) {
    // LRUSim keeps an empty way at its place in the recency list: after flushing B, the
    // next miss still evicts the least recent way (A), not the empty one.
    CacheHierarchy h = one_set(4, "LRU");
    EXPECT_EQ(run(h, "ABCD"), "MMMM");
    h.flush_line(1 * 64);
    EXPECT_EQ(run(h, "E"), "M");
    EXPECT_EQ(run(h, "CDE"), "HHH");
    EXPECT_EQ(run(h, "A"), "M");
}

TEST(SimCachePlru, TreeVersusLinearFill) {
    // 4 ways, bits 0 initially: A, B, C, D fill ways 0, 2, 1, 3 and leave the tree on way 0.
    // After C's way is flushed, PLRU follows the tree (evicts A, the empty way stays);
    // PLRUl fills the empty way first (A stays).
    CacheHierarchy plru = one_set(4, "PLRU");
    CacheHierarchy plrul = one_set(4, "PLRUl");
    for (CacheHierarchy* h : {&plru, &plrul}) {
        EXPECT_EQ(run(*h, "ABCD"), "MMMM");
        h->flush_line(2 * 64);
        EXPECT_EQ(run(*h, "E"), "M");
    }
    EXPECT_EQ(run(plru, "A"), "M");
    EXPECT_EQ(run(plrul, "A"), "H");
    EXPECT_EQ(run(plrul, "BDE"), "HHH");
}

TEST(SimCachePlru, FourLinesStayFiveThrash) {
    CacheHierarchy h = one_set(4, "PLRU");
    EXPECT_EQ(run(h, "ABCDABCDABCD"), "MMMMHHHHHHHH");
    // A B C D leave the tree on way 0: E replaces A (way 0), then A replaces B (way 2), C
    // (way 1) still hits; the set holds E C A D.
    CacheHierarchy g = one_set(4, "PLRU");
    EXPECT_EQ(run(g, "ABCDEAC"), "MMMMMMH");
    EXPECT_EQ(run(g, "ADE"), "HHH");
    EXPECT_EQ(run(g, "B"), "M");
}

TEST(SimCachePlru, NonPowerOfTwoWaysClampTheLeaf) {
    // 3 ways: a 2-level tree whose leaf 3 is clamped to way 2. A, B, C fill ways 0, 2, 1;
    // D follows the tree to leaf 3, i.e. way 2, and evicts B; B then replaces A (way 0).
    CacheHierarchy h = one_set(3, "PLRU");
    EXPECT_EQ(run(h, "ABCD"), "MMMM");
    EXPECT_EQ(run(h, "BCDA"), "MHHM");
}

TEST(SimCacheMru, ResetKeepsOnlyTheLastAndMruNWaitsUntilFull) {
    // MRU (4 ways): after A-D the bits reset to 1110; E, F, G take ways 0-2, the reset
    // leaves only G marked, H takes way 0 (E): the set holds H F G D.
    CacheHierarchy mru = one_set(4, "MRU");
    EXPECT_EQ(run(mru, "ABCDEFGH"), "MMMMMMMM");
    EXPECT_EQ(run(mru, "DFGH"), "HHHH");
    EXPECT_EQ(run(mru, "E"), "M");
    // MRU_N: no update while filling, so E-H replace A-D in order: E F G H stay.
    CacheHierarchy mrun = one_set(4, "MRU_N");
    EXPECT_EQ(run(mrun, "ABCDEFGH"), "MMMMMMMM");
    EXPECT_EQ(run(mrun, "EFGH"), "HHHH");
    EXPECT_EQ(run(mrun, "D"), "M");
    CacheHierarchy lru = one_set(4, "LRU");
    EXPECT_EQ(run(lru, "ABCDEFGHD"), "MMMMMMMMM");
}

TEST(SimCacheNru, MissTakesFirstBitOneEvenWithAnEmptyWay) {
    // After A-D every bit is 0; B's way is flushed. E finds no bit 1, sets all, takes way 0
    // (A), although way 1 is empty.
    CacheHierarchy h = one_set(4, "NRU");
    EXPECT_EQ(run(h, "ABCD"), "MMMM");
    h.flush_line(1 * 64);
    EXPECT_EQ(run(h, "E"), "M");
    EXPECT_EQ(run(h, "CDE"), "HHH");
    EXPECT_EQ(run(h, "A"), "M");
    // A hit clears its bit: after E (way 0, bits 0111) and a hit on C (0101), F takes way 1.
    CacheHierarchy g = one_set(4, "NRU");
    EXPECT_EQ(run(g, "ABCDECF"), "MMMMMHM");
    EXPECT_EQ(run(g, "ECDF"), "HHHH");
}

TEST(SimCacheQlru, CflL3ProtectsAHitLine) {
    // QLRU_H11_M1_R0_U0: inserted at age 1, A-D age to 3 together; a hit on A brings it to
    // 1, so E replaces the first age-3 way, B.
    CacheHierarchy h = one_set(4, "QLRU_H11_M1_R0_U0");
    EXPECT_EQ(run(h, "ABCDAE"), "MMMMHM");
    EXPECT_EQ(run(h, "ACDE"), "HHHH");
    EXPECT_EQ(run(h, "B"), "M");
}

TEST(SimCacheQlru, CflL2FillsFromTheLastWay) {
    // QLRU_H00_M1_R2_U1: A-D fill ways 3, 2, 1, 0; the update after D makes ways 1-3 age 3,
    // so E replaces way 1 (C), not A.
    CacheHierarchy h = one_set(4, "QLRU_H00_M1_R2_U1");
    EXPECT_EQ(run(h, "ABCDE"), "MMMMM");
    EXPECT_EQ(run(h, "ABDC"), "HHHM");
}

TEST(SimCacheQlru, SrripResistsAScan) {
    // SRRIP = QLRU_H00_M2_R0_U0_UMO: lines hit once (age 0) outlive a scan of six lines
    // inserted at age 2; under LRU the scan evicts them.
    CacheHierarchy srrip = one_set(4, "SRRIP");
    EXPECT_EQ(run(srrip, "AABBCDEFGHAB"), "MHMHMMMMMMHH");
    CacheHierarchy lru = one_set(4, "LRU");
    EXPECT_EQ(run(lru, "AABBCDEFGHAB"), "MHMHMMMMMMMM");
    CacheHierarchy same = one_set(4, "QLRU_H00_M2_R0_U0_UMO");
    EXPECT_EQ(run(same, "AABBCDEFGHAB"), "MHMHMMMMMMHH");
}

TEST(SimCacheQlru, EveryVariantParsesAndTheExcludedOnesDoNot) {
    const char* h[] = {"H21", "H20", "H11", "H10", "H00"};
    const char* m[] = {"M0", "M1", "M2", "M3", "MR32", "MR31", "MR30", "MR21", "MR20", "MR10"};
    int ok = 0;
    for (const char* hf : h)
        for (const char* mf : m)
            for (int r = 0; r < 3; ++r)
                for (int u = 0; u < 4; ++u)
                    for (const char* umo : {"", "_UMO"}) {
                        std::string n = std::string("QLRU_") + hf + "_" + mf + "_R" + std::to_string(r) + "_U" +
                                        std::to_string(u) + umo;
                        bool valid = sim::check_cache_level({"L2", 4096, 4, 64, n}).ok();
                        EXPECT_EQ(valid, !(r != 1 && u >= 2)) << n;
                        ok += valid;
                    }
    EXPECT_EQ(ok, 320 + 480);  // cacheSim.py's AllDetQLRUVariants and AllRandQLRUVariants
}

TEST(SimCacheRandom, SameSeedSameChoicesAndResetIsAFreshStart) {
    std::string seq = "ABCDEFGH";  // fills the 8 empty ways in order
    for (unsigned i = 0, x = 1; i < 200; ++i) {
        x = x * 1103515245u + 12345u;  // 12 lines, pseudo-random
        seq += char('A' + (x >> 16) % 12);
    }
    CacheHierarchy a = one_set(8, "RANDOM", 42);
    CacheHierarchy b = one_set(8, "RANDOM", 42);
    CacheHierarchy c = one_set(8, "RANDOM", 43);
    std::string ra = run(a, seq);
    EXPECT_EQ(ra, run(b, seq));
    EXPECT_NE(ra, run(c, seq));
    EXPECT_EQ(ra.substr(0, 8), "MMMMMMMM");  // the empty ways fill first: A-H
    a.reset();
    EXPECT_EQ(run(a, seq), ra);
    for (const char* p : {"PLRURand", "RandPLRU", "QLRU_H11_MR31_R0_U0"}) {
        CacheHierarchy x = one_set(8, p, 7), y = one_set(8, p, 7);
        EXPECT_EQ(run(x, seq), run(y, seq)) << p;
    }
}

TEST(SimCacheRandom, LruPlru4GroupsAreLruOrdered) {
    // 8 ways = 2 groups of PLRUl(4): A-D fill group 0, E-H group 1; I goes to the least
    // recent group (0) and its tree's way 0 (A).
    CacheHierarchy h = one_set(8, "LRU_PLRU4");
    EXPECT_EQ(run(h, "ABCDEFGHI"), "MMMMMMMMM");
    EXPECT_EQ(run(h, "BCDEFGHI"), "HHHHHHHH");
    EXPECT_EQ(run(h, "A"), "M");
}

TEST(SimCacheHierarchy, MissesFillEveryLevelAboveTheServer) {
    CacheConfig c;
    c.levels = {{"L1D", 128, 2, 64, "LRU"}, {"L2", 256, 4, 64, "LRU"}};  // one set each
    CacheHierarchy h(c);
    EXPECT_EQ(h.access(0x1000, false), 2u);  // memory
    EXPECT_EQ(h.access(0x1000, false), 0u);
    EXPECT_EQ(h.access(0x1010, true), 0u);  // same line; a store is served like a load
    EXPECT_EQ(h.access(0x2000, true), 2u);  // write-allocate: the store fills both levels
    EXPECT_EQ(h.access(0x3000, false), 2u);
    EXPECT_EQ(h.access(0x1000, false), 1u);  // evicted from L1, still in L2
    EXPECT_EQ(h.access(0x1000, false), 0u);  // and filled into L1 again
    // K = ways + 1 = 3 lines of one L1 set under LRU (L1 holds 0x1000 and 0x3000, 0x2000 is
    // the next): one L1 miss and one L2 hit per load.
    for (int round = 0; round < 4; ++round)
        for (u64 a : {0x2000, 0x3000, 0x1000}) EXPECT_EQ(h.access(a, false), 1u) << round << " " << a;
}

TEST(SimCacheHierarchy, SetsAreIndexedByPhysicalLineNumber) {
    CacheConfig c;
    c.levels = {{"L1D", 4 * 64 * 2, 2, 64, "LRU"}};  // 4 sets of 2 ways
    CacheHierarchy h(c);
    // Lines 0, 4, 8 share set 0: the third evicts the first; line 1 (set 1) is untouched.
    for (u64 a : {0x0ull, 0x40ull, 0x100ull, 0x200ull}) EXPECT_EQ(h.access(a, false), 1u);
    EXPECT_EQ(h.access(0x40, false), 0u);
    EXPECT_EQ(h.access(0x0, false), 1u);
}

TEST(SimCacheHierarchy, ClflushInvalidatesEveryLevel) {
    CacheConfig c;
    c.levels = {{"L1D", 512, 2, 64, "PLRU"}, {"L2", 2048, 4, 64, "QLRU_H00_M1_R2_U1"}, {"L3", 8192, 8, 64, "SRRIP"}};
    CacheHierarchy h(c);
    EXPECT_EQ(h.access(0x5000, false), 3u);
    EXPECT_EQ(h.access(0x5008, false), 0u);
    h.flush_line(0x5030);  // any byte of the line
    EXPECT_EQ(h.access(0x5000, false), 3u);
    h.flush_line(0x9000);  // a line nowhere: nothing happens
    EXPECT_EQ(h.access(0x5000, false), 0u);
}

TEST(SimCacheHierarchy, WbinvdEmptiesAndRestoresTheInitialState) {
    CacheHierarchy h = one_set(4, "PLRU");
    std::string first = run(h, "ABCDEAC");
    EXPECT_EQ(first, "MMMMMMH");
    EXPECT_EQ(run(h, "ADE"), "HHH");
    h.reset();
    EXPECT_EQ(run(h, "ADE"), "MMM");
    h.reset();
    EXPECT_EQ(run(h, "ABCDEAC"), first);  // the tree starts from all zeros again
    CacheHierarchy off(CacheConfig{});
    EXPECT_EQ(off.access(0, false), 0u);  // no levels: memory is level 0
    EXPECT_EQ(off.memory_level(), 0u);
}

TEST(SimCacheHierarchy, OneWayIsDirectMappedForEveryPolicy) {
    for (const char* p : {"LRU", "FIFO", "PLRU", "PLRUl", "MRU", "MRU_N", "NRU", "SRRIP", "QLRU_H00_M1_R0_U1",
                          "QLRU_H11_M1_R1_U2", "RANDOM", "RandPLRU"}) {
        CacheHierarchy h = one_set(1, p);
        EXPECT_EQ(run(h, "AABAB"), "MHMMM") << p;
    }
}

TEST(SimCacheSpec, ParsesLevelsSizesAndPolicies) {
    CacheConfig d;
    d.levels = {{"L1D", 48 << 10, 12, 64, "PLRU"}, {"L2", 2 << 20, 16, 64, "QLRU_H00_M1_R2_U1"}};
    auto r = sim::parse_cache_spec("L1D:32K:8:LRU,L3:8M:16:QLRU_H11_M1_R0_U0", d);
    ASSERT_TRUE(r.ok()) << r.error().msg;
    EXPECT_EQ(sim::describe(*r), "L1D 32 KiB 8-way 64 sets LRU, L2 2 MiB 16-way 2048 sets QLRU_H00_M1_R2_U1, "
                                 "L3 8 MiB 16-way 8192 sets QLRU_H11_M1_R0_U0");
    r = sim::parse_cache_spec("L2:1280K,L1D:::NRU", d);  // empty fields keep the default
    ASSERT_TRUE(r.ok()) << r.error().msg;
    EXPECT_EQ(sim::describe(*r), "L1D 48 KiB 12-way 64 sets NRU, L2 1280 KiB 16-way 1280 sets QLRU_H00_M1_R2_U1");
    r = sim::parse_cache_spec("L2:1g:8:FIFO", d);  // 1 GiB: within the 4 GiB limit
    ASSERT_TRUE(r.ok()) << r.error().msg;
    EXPECT_EQ(r->levels[1].size_bytes, 1ull << 30);
    r = sim::parse_cache_spec("L1D:4096:1:LRU", d);
    ASSERT_TRUE(r.ok()) << r.error().msg;
    EXPECT_EQ(r->levels[0].sets(), 64u);
    r = sim::parse_cache_spec("off", d);
    ASSERT_TRUE(r.ok());
    EXPECT_TRUE(r->levels.empty());
    EXPECT_EQ(sim::describe(*r), "off");
    r = sim::parse_cache_spec("L2:off", d);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->levels.size(), 1u);
}

TEST(SimCacheSpec, ErrorsSayWhatToDo) {
    CacheConfig d;
    d.levels = {{"L1D", 32 << 10, 8, 64, "PLRU"}, {"L2", 256 << 10, 4, 64, "LRU"}};
    struct Case {
        const char* spec;
        const char* want;
    } cases[] = {
        {"L1D:32K:8:BOGUS", "unknown replacement policy 'BOGUS'; known: LRU, FIFO, PLRU, PLRUl"},
        {"L1D:32K:8:BOGUS", "QLRU_<H21|H20|H11|H10|H00>"},
        {"L1D:1000:8:LRU", "size 1000 bytes is not a non-zero multiple of ways * line (8 * 64 = 512 bytes)"},
        {"L1D:32K:8:LRU:x", "5 fields; the form is LEVEL:SIZE[:WAYS[:POLICY]]"},
        {"L1D", "1 fields; the form is LEVEL:SIZE[:WAYS[:POLICY]]"},
        {"L4:32K:8:LRU", "unknown cache level 'L4' (L1D, L2 or L3)"},
        {"L1D:32Q", "bad size '32Q' (bytes, or with K, M or G: 32K)"},
        {"L1D:32K:x8", "bad ways 'x8' (a number, 1 to 256)"},
        {"L1D:32K:0", "0 ways (1 to 256)"},
        {"L2:8G:16:LRU", "size 8589934592 bytes is above the model's limit of 4 GiB"},
        {"L3:8M", "this machine has no L3 by default: give SIZE:WAYS:POLICY"},
        {"L1D:32K,L1D:64K", "cache level L1D given twice"},
        {"L1D:24K:6:LRU_PLRU4", "LRU_PLRU4 needs a multiple of 4 ways, not 6"},
        {"L1D:16K:4:RandPLRU", "it needs 1, 2 or at least 5 ways, not 4"},
        {"L1D:32K:8:QLRU_H11_M1_R0_U2", "unknown replacement policy 'QLRU_H11_M1_R0_U2'"},
        {"", "empty cache spec"},
    };
    for (const Case& c : cases) {
        auto r = sim::parse_cache_spec(c.spec, d);
        ASSERT_FALSE(r.ok()) << c.spec;
        EXPECT_EQ(r.error().code, pmulab::Errc::invalid_argument);
        EXPECT_NE(std::string(r.error().msg).find(c.want), std::string::npos) << c.spec << ": " << r.error().msg;
    }
    CacheConfig none;  // no L2 to hang an L3 under
    none.levels = {{"L1D", 32 << 10, 8, 64, "PLRU"}};
    auto r = sim::parse_cache_spec("L3:8M:16:LRU", none);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(std::string(r.error().msg).find("L3 needs L2 (this machine has 1 levels)"), std::string::npos)
        << r.error().msg;
}

TEST(SimCacheDefaults, FromLeaf4AndLeaf8000001DOfRealDumps) {
    // Worked by hand from the dumps' lines: ways = EBX[31:22] + 1, partitions = EBX[21:12] + 1,
    // line = EBX[11:0] + 1, sets = ECX + 1; level EAX[7:5], type EAX[4:0] (1 data, 3 unified).
    struct Case {
        const char* dump;
        unsigned cpu;
        const char* want;
    } cases[] = {
        {"cpuid-r_KVM_Intel_EmeraldRapids_16cpu.txt", 0,
         "L1D 48 KiB 12-way 64 sets PLRUl, L2 2 MiB 16-way 2048 sets QLRU_H00_M1_R2_U1, "
         "L3 300 MiB 20-way 245760 sets QLRU_H11_M1_R0_U0"},
        // Arrow Lake H: a Lion Cove P-core, a Skymont E-core, a low-power E-core without L3.
        {"GenuineIntel00C0652_ArrowLakeH_04_CPUID.txt", 0,
         "L1D 48 KiB 12-way 64 sets PLRUl, L2 3 MiB 12-way 4096 sets QLRU_H00_M1_R2_U1, "
         "L3 24 MiB 12-way 32768 sets QLRU_H11_M1_R0_U0"},
        {"GenuineIntel00C0652_ArrowLakeH_04_CPUID.txt", 2,
         "L1D 32 KiB 8-way 64 sets PLRU, L2 4 MiB 16-way 4096 sets QLRU_H00_M1_R2_U1, "
         "L3 24 MiB 12-way 32768 sets QLRU_H11_M1_R0_U0"},
        {"GenuineIntel00C0652_ArrowLakeH_04_CPUID.txt", 14,
         "L1D 32 KiB 8-way 64 sets PLRU, L2 2 MiB 16-way 2048 sets QLRU_H00_M1_R2_U1"},
        // KVM's AMD EPYC: leaf 4 is all zeros, 8000_001DH describes the caches.
        {"cpuid-r-1_KVM_AMD_EPYC.txt", 0,
         "L1D 32 KiB 8-way 64 sets LRU, L2 512 KiB 8-way 1024 sets LRU, L3 32 MiB 16-way 32768 sets LRU"},
        // Prescott (NetBurst): leaf 4 with 2 line partitions on L2 (4 ways, 512 sets of 2
        // lines: 256 KiB modelled as 4 ways of 1024 sets); LRU.
        {"GenuineIntel0000F41_P4_Prescott_CPUID.txt", 0,
         "L1D 16 KiB 8-way 32 sets LRU, L2 256 KiB 4-way 1024 sets LRU"},
        // K8 has neither leaf: the documented K8 geometry.
        {"AuthenticAMD0020FF0_K8_Venice_CPUID.txt", 0, "L1D 64 KiB 2-way 512 sets LRU, L2 1 MiB 16-way 1024 sets LRU"},
    };
    for (const Case& c : cases) {
        sim::SimMachine m = pmutest::dump_machine(c.dump);
        EXPECT_EQ(sim::describe(sim::default_cache_config(m.cpu(c.cpu).snapshot())), c.want) << c.dump << " " << c.cpu;
    }
}

TEST(SimCacheDefaults, FallbackGeometryPerFamily) {
    // Snapshots without leaf 4 / 8000_001DH: the documented geometry per vendor and family.
    pmulab::CpuidSnapshot p4;
    p4.set(0, 0, {2, 0x756e6547, 0x6c65746e, 0x49656e69});  // GenuineIntel, max leaf 2
    p4.set(1, 0, {0x00000F29, 0, 0, 0});                    // family 0FH (Northwood)
    EXPECT_EQ(sim::describe(sim::default_cache_config(p4)),
              "L1D 16 KiB 8-way 32 sets LRU, L2 1 MiB 8-way 2048 sets LRU");
    EXPECT_EQ(sim::describe(sim::default_cache_config(pmulab::CpuidSnapshot{})),
              "L1D 32 KiB 8-way 64 sets LRU, L2 256 KiB 4-way 1024 sets LRU, L3 8 MiB 16-way 8192 sets LRU");
    pmulab::CpuidSnapshot intel;
    intel.set(0, 0, {1, 0x756e6547, 0x6c65746e, 0x49656e69});  // GenuineIntel, max leaf 1
    intel.set(1, 0, {0x000906EA, 0, 0, 0});                    // family 6 (Coffee Lake)
    EXPECT_EQ(sim::describe(sim::default_cache_config(intel)),
              "L1D 32 KiB 8-way 64 sets PLRU, L2 256 KiB 4-way 1024 sets QLRU_H00_M1_R2_U1, "
              "L3 8 MiB 16-way 8192 sets QLRU_H11_M1_R0_U0");
    pmulab::CpuidSnapshot zen;
    zen.set(0, 0, {1, 0x68747541, 0x444d4163, 0x69746e65});  // AuthenticAMD
    zen.set(1, 0, {0x00A20F12, 0, 0, 0});                    // family 19H
    EXPECT_EQ(sim::describe(sim::default_cache_config(zen)),
              "L1D 32 KiB 8-way 64 sets LRU, L2 512 KiB 8-way 1024 sets LRU, L3 16 MiB 16-way 16384 sets LRU");
}

TEST(SimCacheDefaults, KLinesOfOneL1SetHitAfterWarmupOnEveryDump) {
    // The defaults keep any K <= ways lines of one L1 set (cacheSim.py's PLRU over 12 ways
    // would not: hence PLRUl there); K = ways + 1 lines miss L1 at least once per round.
    struct Case {
        const char* dump;
        unsigned cpu;
    } cases[] = {{"cpuid-r_KVM_Intel_EmeraldRapids_16cpu.txt", 0},
                 {"GenuineIntel00C0652_ArrowLakeH_04_CPUID.txt", 0},
                 {"GenuineIntel00C0652_ArrowLakeH_04_CPUID.txt", 2},
                 {"GenuineIntel0090672_AlderLake_02_CPUID.txt", 0},
                 {"cpuid-r-1_KVM_AMD_EPYC.txt", 0},
                 {"GenuineIntel00006F4_Conroe_CPUID.txt", 0},
                 {"AuthenticAMD0020FF0_K8_Venice_CPUID.txt", 0}};
    for (const Case& c : cases) {
        sim::SimMachine m = pmutest::dump_machine(c.dump);
        CacheConfig cfg = sim::default_cache_config(m.cpu(c.cpu).snapshot());
        const CacheLevelSpec& l1 = cfg.levels.at(0);
        u64 stride = l1.sets() * l1.line;  // lines this far apart share an L1 set
        for (unsigned k = 1; k <= l1.ways + 1; ++k) {
            CacheHierarchy h(cfg);
            for (int warm = 0; warm < 20; ++warm)
                for (unsigned i = 0; i < k; ++i) h.access(i * stride, false);
            unsigned l1_misses = 0;
            for (unsigned i = 0; i < k; ++i) l1_misses += h.access(i * stride, false) != 0;
            if (k <= l1.ways) EXPECT_EQ(l1_misses, 0u) << c.dump << " CPU " << c.cpu << " K " << k << " " << l1.policy;
            else EXPECT_GT(l1_misses, 0u) << c.dump << " CPU " << c.cpu << " K " << k << " " << l1.policy;
        }
    }
}
