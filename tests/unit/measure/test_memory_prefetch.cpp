// The memory of an experiment (measure/memory.h: where an aligned area fits in the memory
// map's free regions, and the refusal that names the largest size) and the prefetcher
// model table (x86/prefetch.h) with the guard that restores the MSR exactly.
#include <gtest/gtest.h>

#include <vector>

#include "measure/memory.h"
#include "measure/noise.h"
#include "support/sim_cmd.h"
#include "support/sim_measure.h"
#include "support/test_platform.h"
#include "x86/prefetch.h"

using namespace pmulab;
using namespace sim;

namespace {

MemoryMapInfo two_regions() {
    MemoryMapInfo m;
    m.add(0x100000, 0x7FF00000);     // 1 MiB .. 2 GiB
    m.add(0x100000000, 0x80000000);  // 4 GiB .. 6 GiB
    return m;
}

CpuIdentity intel(u32 model) {
    CpuIdentity id;
    id.vendor = Vendor::intel;
    id.family = 6;
    id.model = model;
    return id;
}

}  // namespace

TEST(ExperimentMemory, LargestAlignedFitCountsTheGuardPages) {
    MemoryMapInfo m = two_regions();
    EXPECT_EQ(m.free_bytes, 0xFFF00000ull);
    EXPECT_EQ(m.largest().start, 0x100000000ull);
    u64 at = 0;
    // 4 KiB alignment: one guard page before and after: 2 GiB - 8 KiB at 4 GiB + 4 KiB.
    EXPECT_EQ(largest_aligned_fit(m, 4096, 4096, 4096, &at), 0x80000000ull - 0x2000);
    EXPECT_EQ(at, 0x100001000ull);
    // 2 MiB alignment: both regions hold 2 GiB - 2 MiB - 4 KiB; the first found (at 2 MiB) wins.
    EXPECT_EQ(largest_aligned_fit(m, 2 << 20, 4096, 4096, &at), 0x80000000ull - (2 << 20) - 4096);
    EXPECT_EQ(at, 0x200000ull);
    // 1 GiB alignment: 4 GiB + 1 GiB in the upper region, 1 GiB in the lower (ends at 2 GiB).
    EXPECT_EQ(largest_aligned_fit(m, 1 << 30, 4096, 4096, &at), 0x40000000ull - 4096);
    // The lowest place that holds 1 GiB at 1 GiB alignment.
    EXPECT_TRUE(find_aligned_fit(m, 1 << 29, 1 << 30, 4096, 0, &at));
    EXPECT_EQ(at, 0x40000000ull);
    EXPECT_FALSE(find_aligned_fit(m, 0x80000000ull, 4096, 4096, 0, &at));
}

TEST(ExperimentMemory, FullMapKeepsTheLargestRegions) {
    MemoryMapInfo m;
    for (usize i = 0; i < MemoryMapInfo::kMaxRegions + 10; ++i) m.add(u64(i) << 32, 4096 * (i + 1));
    EXPECT_EQ(m.count, MemoryMapInfo::kMaxRegions);
    EXPECT_EQ(m.free_regions, MemoryMapInfo::kMaxRegions + 10);
    EXPECT_EQ(m.largest().bytes, 4096ull * (MemoryMapInfo::kMaxRegions + 10));
}

TEST(PrefetchTable, DocumentedModelsOnly) {
    PrefetchControl yonah = prefetch_control(intel(0x0E));  // Core Duo: no documented control
    EXPECT_FALSE(yonah.ok());
    EXPECT_NE(std::string(yonah.why_not).find("not in pmulab's prefetcher table"), std::string::npos);
    PrefetchControl hsw = prefetch_control(intel(0x3C));
    ASSERT_EQ(hsw.set.count, 1u);
    EXPECT_FALSE(hsw.hybrid());
    EXPECT_EQ(hsw.set.msrs[0].msr, 0x1A4u);
    EXPECT_EQ(hsw.set.msrs[0].off_mask(), 0xFull);
    EXPECT_STREQ(hsw.set.msrs[0].bits[3].name, "dcu_ip");
    PrefetchControl conroe = prefetch_control(intel(0x0F));
    EXPECT_EQ(conroe.set.msrs[0].msr, 0x1A0u);  // IA32_MISC_ENABLE
    EXPECT_EQ(conroe.set.msrs[0].off_mask(), (1ull << 9) | (1ull << 19) | (1ull << 37) | (1ull << 39));
    CpuIdentity zen;
    zen.vendor = Vendor::amd;
    zen.family = 0x1A;
    EXPECT_EQ(prefetch_control(zen).set.msrs[0].msr, 0xC0000108u);
    EXPECT_EQ(prefetch_control(zen).set.msrs[0].off_mask(), 0x2Full);
    zen.family = 0x17;
    EXPECT_FALSE(prefetch_control(zen).ok());
    zen.family = 0xF;  // QEMU TCG's qemu64/max model
    EXPECT_NE(std::string(prefetch_control(zen).why_not).find("families 19h and 1Ah"), std::string::npos);
}

namespace {

// A Haswell (06_3CH): MSR 1A4H with bits 0-3.
SimMachine haswell() {
    IntelCpuidSpec sp;
    sp.signature = 0x000306C3;
    sp.leaf_0a = {0x07300403, 0, 0, 0x00000603};
    return intel_machine(sp, {1, 1, 1});
}

}  // namespace

TEST(PrefetchGuard, OffForTheJobAndRestoredExactly) {
    SimMachine m = haswell();
    m.cpu(0).poke(0x1A4, 0x2);  // the firmware had the adjacent-line prefetcher off
    simm::SimPlatform p(m);
    simm::Cmd c = simm::run_line(p, "run --json --bench nop --reps 3 --warmup 1 --prefetchers off --cpu 0");
    ASSERT_EQ(c.status, 0) << c.out;
    std::vector<pmutest::Json> r = simm::results(c);
    ASSERT_EQ(r.size(), 1u) << c.out;
    EXPECT_EQ(r[0]["prefetchers_off"].s(), "l2_hw,l2_adjacent_line,dcu,dcu_ip");
    EXPECT_EQ(r[0]["prefetch_bits"].s(), "0xf");
    EXPECT_EQ(simm::writes_to(m.cpu(0), 0x1A4), (std::vector<u64>{0xF, 0x2}));
    EXPECT_EQ(m.cpu(0).peek(0x1A4), 0x2u);
}

TEST(PrefetchGuard, AWriteThatFaultsFailsTheJobAndChangesNothing) {
    SimMachine m = haswell();
    m.cpu(0).fail_wrmsr_to(0x1A4);
    simm::SimPlatform p(m);
    simm::Cmd c = simm::run_line(p, "run --json --bench nop --reps 3 --warmup 1 --prefetchers off --cpu 0");
    EXPECT_EQ(c.status, 3) << c.out;
    EXPECT_NE(c.out.find("--prefetchers off: MSR 0x1a4 cannot be written"), std::string::npos) << c.out;
    EXPECT_TRUE(simm::results(c).empty()) << c.out;
    EXPECT_TRUE(simm::writes_to(m.cpu(0), 0x1A4).empty());
    EXPECT_EQ(m.cpu(0).peek(0x1A4), 0u);
}
