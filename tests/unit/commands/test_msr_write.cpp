// `msr write` safety (cmd_msr.cpp): --unsafe for non-PMU MSRs and IA32_PEBS_ENABLE,
// reserved bits refused in the registers pmulab knows, and the read-back comparison
// that catches a write the CPU ignored.
#include <gtest/gtest.h>

#include "commands/commands.h"

using namespace pmulab;

namespace {

CpuDecoded intel_v4() {
    CpuDecoded c{};
    c.id.vendor = Vendor::intel;
    c.pmu.leaf_0a = true;
    c.pmu.version = 4;
    c.pmu.gp_counters = 4;
    c.pmu.gp_width = 48;
    c.pmu.fixed_counters = 3;
    c.pmu.fixed_width = 48;
    c.pmu.fixed_effective = 0x7;
    return c;
}

CpuDecoded amd() {
    CpuDecoded c{};
    c.id.vendor = Vendor::amd;
    return c;
}

}  // namespace

TEST(MsrWrite, PebsEnableNeedsUnsafe) {
    Status s = msr_write_check(intel_v4(), 0x3F1, 1, false);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.error().code, Errc::invalid_argument);
    EXPECT_NE(strstr(s.error().msg, "IA32_PEBS_ENABLE (0x3f1) makes the CPU write PEBS records to memory"), nullptr)
        << s.error().msg;
    EXPECT_NE(strstr(s.error().msg, "--unsafe"), nullptr);
    EXPECT_TRUE(msr_write_check(intel_v4(), 0x3F1, 1, true).ok());
}

TEST(MsrWrite, NonPmuNeedsUnsafe) {
    Status s = msr_write_check(intel_v4(), 0x6E1, 1, false);
    ASSERT_FALSE(s.ok());
    EXPECT_STREQ(s.error().msg,
                 "msr write: 0x6e1 is not a PMU MSR; writing it could harm the machine. Add --unsafe if you mean it");
}

TEST(MsrWrite, ReservedBitsRefusedInKnownRegisters) {
    // PERFEVTSEL0: bit 35 is reserved (not EQ 36, not UMASK2) on a v4 PMU.
    Status s = msr_write_check(intel_v4(), 0x186, (1ull << 35) | 0x4300C0, false);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.error().code, Errc::invalid_argument);
    EXPECT_NE(strstr(s.error().msg, "sets reserved bits 0x800000000 of IA32_PERFEVTSEL0 (0x186)"), nullptr)
        << s.error().msg;
    EXPECT_TRUE(msr_write_check(intel_v4(), 0x186, 0x4300C0, false).ok());
    // GLOBAL_CTRL: counters 0-3 and fixed 0-2 only.
    EXPECT_TRUE(msr_write_check(intel_v4(), 0x38F, 0x70000000Full, false).ok());
    EXPECT_FALSE(msr_write_check(intel_v4(), 0x38F, 0x10, false).ok());  // PMC4 does not exist
    // A register this PMU does not have: said so.
    Status gone = msr_write_check(intel_v4(), 0x186 + 5, 0, false);
    ASSERT_FALSE(gone.ok());
    EXPECT_EQ(gone.error().code, Errc::unsupported);
    // AMD PerfEvtSel: bit 19 and 21 are reserved.
    EXPECT_FALSE(msr_write_check(amd(), 0xC0010000, 1ull << 21, false).ok());
    EXPECT_TRUE(msr_write_check(amd(), 0xC0010000, 0x430076, false).ok());
    EXPECT_FALSE(msr_write_check(amd(), 0xC0010200, 1ull << 19, false).ok());
    // --unsafe is the user's word: no check.
    EXPECT_TRUE(msr_write_check(amd(), 0xC0010000, 1ull << 21, true).ok());
}

TEST(MsrWrite, ReadBackComparison) {
    // A control register the CPU ignored (TCG reads 0): a mismatch.
    EXPECT_FALSE(msr_readback_matches(amd(), 0xC0010000, 0x430076, 0));
    EXPECT_TRUE(msr_readback_matches(amd(), 0xC0010000, 0x430076, 0x430076));
    EXPECT_FALSE(msr_readback_matches(intel_v4(), 0x38F, 0xF, 0));
    // Counters may have moved on.
    EXPECT_TRUE(msr_readback_matches(intel_v4(), 0x309, 1000, 1050));
    EXPECT_FALSE(msr_readback_matches(intel_v4(), 0x309, 1000, 0));
    EXPECT_FALSE(msr_readback_matches(amd(), 0xC0010004, 0x1234567890, 0));
    // Legacy IA32_PMCx writes keep bits 31:0, sign-extended.
    EXPECT_TRUE(msr_readback_matches(intel_v4(), 0xC1, 0xFFFFFFFF, 0xFFFFFFFFFFFF));
    EXPECT_TRUE(msr_readback_matches(intel_v4(), 0xC1, 0x100000005, 5));
    // Write-1-to-clear and read-only registers are not compared.
    EXPECT_TRUE(msr_readback_matches(intel_v4(), 0x390, 0xF, 0));
    EXPECT_TRUE(msr_readback_matches(amd(), 0xC0000302, 0xF, 0));
}
