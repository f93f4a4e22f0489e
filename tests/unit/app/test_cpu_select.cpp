// --cpu: single CPUs, lists, ranges, all/bsp and hybrid core types (app/cpu_select.h).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "app/cpu_select.h"
#include "support/test_platform.h"

using namespace pmulab;

namespace {

std::vector<u32> expand(Hw& hw, const char* value, std::string* err = nullptr) {
    Result<CpuSelection> s = parse_cpu_selection(value);
    if (!s.ok()) {
        if (err) *err = s.error().msg;
        return {};
    }
    Vec<u32> cpus;
    Status st = expand_cpu_selection(hw, s.value(), &cpus);
    if (!st.ok()) {
        if (err) *err = st.error().msg;
        return {};
    }
    return std::vector<u32>(cpus.begin(), cpus.end());
}

std::string parse_error(const char* value) {
    Result<CpuSelection> s = parse_cpu_selection(value);
    return s.ok() ? "" : s.error().msg;
}

}  // namespace

TEST(CpuSelect, ListsAndRanges) {
    sim::SimMachine m = pmutest::dump_machine("GenuineIntel00C0652_ArrowLakeH_04_CPUID.txt");
    EXPECT_EQ(expand(m, "3"), (std::vector<u32>{3}));
    EXPECT_EQ(expand(m, "0,2"), (std::vector<u32>{0, 2}));
    EXPECT_EQ(expand(m, "1-3,6"), (std::vector<u32>{1, 2, 3, 6}));
    EXPECT_EQ(expand(m, "14-15"), (std::vector<u32>{14, 15}));
    EXPECT_EQ(expand(m, "all").size(), 16u);
    EXPECT_EQ(expand(m, "bsp").size(), 1u);
}

TEST(CpuSelect, HybridCoreTypes) {
    sim::SimMachine m = pmutest::dump_machine("GenuineIntel00C0652_ArrowLakeH_04_CPUID.txt");
    // Arrow Lake-H: P-cores 0, 1, 10-13; E-cores 2-9, 14, 15 (the dump's CPUID.1AH).
    EXPECT_EQ(expand(m, "core"), (std::vector<u32>{0, 1, 10, 11, 12, 13}));
    EXPECT_EQ(expand(m, "atom"), (std::vector<u32>{2, 3, 4, 5, 6, 7, 8, 9, 14, 15}));
}

TEST(CpuSelect, CoreTypeOnANonHybridPartIsUnsupported) {
    sim::SimMachine m = pmutest::dump_machine("GenuineIntel00006F4_Conroe_CPUID.txt");
    std::string err;
    EXPECT_TRUE(expand(m, "atom", &err).empty());
    EXPECT_NE(err.find("--cpu atom: no logical processor reports that core type"), std::string::npos) << err;
    Result<CpuSelection> s = parse_cpu_selection("core");
    ASSERT_TRUE(s.ok());
    Vec<u32> cpus;
    EXPECT_EQ(expand_cpu_selection(m, s.value(), &cpus).error().code, Errc::unsupported);
}

TEST(CpuSelect, BadValuesSayWhatIsAccepted) {
    EXPECT_NE(parse_error("3-1").find("'3-1' is not a CPU index, list or range"), std::string::npos);
    EXPECT_NE(parse_error("x").find("'x' is not a CPU index, list or range"), std::string::npos);
    EXPECT_NE(parse_error("0,,2").find("'' is not a CPU index, list or range"), std::string::npos);
    EXPECT_NE(parse_error("1,").find("'' is not a CPU index, list or range"), std::string::npos);
    EXPECT_NE(parse_error("").find("--cpu needs a value"), std::string::npos);
    EXPECT_NE(parse_error("0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16").find("at most 16 items"), std::string::npos);
    sim::SimMachine m = pmutest::dump_machine("GenuineIntel00C0652_ArrowLakeH_04_CPUID.txt");
    std::string err;
    EXPECT_TRUE(expand(m, "15-16", &err).empty());
    EXPECT_EQ(err, "--cpu 15-16: there are only 16 logical processors (0..15)");
    EXPECT_TRUE(expand(m, "16", &err).empty());
    EXPECT_EQ(err, "--cpu 16: there are only 16 logical processors (0..15)");
    EXPECT_TRUE(expand(m, "1-3,2", &err).empty());
    EXPECT_EQ(err, "--cpu: CPU 2 is listed twice");
}
