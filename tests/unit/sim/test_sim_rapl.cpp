// The simulated RAPL counters (sim/sim_rapl.h): which CPUs have which MSRs, the energy
// model, the update interval and its quantisation, a batch split at an update, the 32-bit
// wrap (poke presets a counter), and none under QEMU TCG or in a guest.
#include <gtest/gtest.h>

#include "sim/sim_cpu.h"

using namespace sim;

namespace {

constexpr u32 kPkg = 0x611, kPp0 = 0x639, kPp1 = 0x641, kDram = 0x619, kPsys = 0x64D;

// pJ -> status units (2^-esu J), floored, as the model updates.
u64 units(u64 pj, unsigned esu) { return u64(((unsigned __int128)pj << esu) / 1000000000000ull); }

}  // namespace

TEST(SimRapl, DomainsPerModel) {
    SimMachine skl = intel_skylake(1);
    SimCpu& c = skl.cpu(0);
    ASSERT_TRUE(c.rapl().present());
    EXPECT_EQ(c.peek(0x606), 0x000A0E03u);
    for (u32 msr : {kPkg, kPp0, kPp1, kDram, kPsys}) EXPECT_TRUE(c.msr_exists(msr)) << std::hex << msr;
    SimMachine icx = intel_icelake_server(1);
    EXPECT_TRUE(icx.cpu(0).msr_exists(kDram));
    EXPECT_FALSE(icx.cpu(0).msr_exists(kPp1));  // no GPU domain on a server: #GP
    EXPECT_FALSE(icx.cpu(0).rdmsr(kPp1).ok());
    EXPECT_FALSE(icx.cpu(0).msr_exists(kPsys));
    SimMachine zen = amd_zen4(1);
    EXPECT_EQ(zen.cpu(0).peek(0xC0010299), 0x000A1003u);
    EXPECT_TRUE(zen.cpu(0).msr_exists(0xC001029A) && zen.cpu(0).msr_exists(0xC001029B));
    EXPECT_FALSE(zen.cpu(0).msr_exists(0x606));
    // QEMU TCG reads every unknown MSR as 0 and has no RAPL; a CPU without RAPL #GPs.
    SimMachine tcg = qemu_tcg_intel(1);
    EXPECT_FALSE(tcg.cpu(0).rapl().present());
    Result<u64> u = tcg.cpu(0).rdmsr(0x606);
    ASSERT_TRUE(u.ok());
    EXPECT_EQ(u.value(), 0u);
    SimMachine v2 = intel_v2(1);  // Core 2: not in the table
    EXPECT_FALSE(v2.cpu(0).rdmsr(0x606).ok());
}

TEST(SimRapl, UpdatesOncePerIntervalWithTheModelsEnergy) {
    SimMachine m = intel_skylake(1);
    SimCpu& c = m.cpu(0);
    const u64 I = c.rapl().interval_ticks();
    EXPECT_EQ(I, 1000000u);  // no CPUID.15H/16H: 1 GHz
    Retired r;
    r.instructions = I / 2;  // one cycle each: half an interval
    c.retire(r);
    EXPECT_EQ(c.peek(kPkg), 0u) << "no update yet";
    c.retire(r);  // reaches the update at tick I exactly
    const u64 one = c.rapl().energy_pj(0, I, I);
    EXPECT_EQ(one, I * 300 + I * 3000);
    EXPECT_EQ(c.peek(kPkg), units(one, 14));
    EXPECT_EQ(c.peek(kPp0), units(c.rapl().energy_pj(1, I, I), 14));
    // Time without instructions: the static part only, at the next update.
    c.set_tsc(c.tsc() + I - 1);
    EXPECT_EQ(c.peek(kPkg), units(one, 14));
    c.set_tsc(c.tsc() + 1);
    EXPECT_EQ(c.peek(kPkg), units(one + 3000 * I, 14));
}

TEST(SimRapl, BatchAcrossAnUpdateIsSplitByTicks) {
    SimMachine m = amd_zen4(1);
    SimCpu& c = m.cpu(0);
    const u64 I = c.rapl().interval_ticks();
    c.set_tsc(I - 100);
    Retired r;
    r.instructions = 400;  // 100 of them before the update
    c.retire(r);
    const u64 at = c.rapl().energy_pj(0, 100, I);
    EXPECT_EQ(c.peek(0xC001029B), units(at, 16));
}

TEST(SimRapl, WrapsAt32BitsFromAPreset) {
    SimMachine m = intel_skylake(1);
    SimCpu& c = m.cpu(0);
    const u64 I = c.rapl().interval_ticks();
    c.poke(kPkg, 0xFFFFFFF0);
    EXPECT_EQ(c.peek(kPkg), 0xFFFFFFF0u);
    Retired r;
    r.instructions = I;
    c.retire(r);
    EXPECT_EQ(c.peek(kPkg), (0xFFFFFFF0u + units(c.rapl().energy_pj(0, I, I), 14)) & 0xFFFFFFFFu);
    EXPECT_LT(c.peek(kPkg), 0xFFFFFFF0u);  // it wrapped
    EXPECT_FALSE(c.wrmsr(kPkg, 0).ok());   // read-only
}

TEST(SimRapl, TscRateFromCpuidLeaf15) {
    SimMachine m = with_tsc_leaf15(intel_icelake_server(1), {2, 160, 25000000, 0});
    EXPECT_EQ(m.cpu(0).rapl().interval_ticks(), 2000000u);  // 2.0 GHz: 1 ms
}
