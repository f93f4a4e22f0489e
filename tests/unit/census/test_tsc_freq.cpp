// The TSC frequency (issue 11, noise provenance): CPUID.15H/16H decoded from real dumps'
// values, and measured against the platform's firmware timer once per boot.
#include <gtest/gtest.h>

#include "census/tsc_freq.h"
#include "support/sim_measure.h"
#include "support/test_platform.h"

using namespace pmulab;

// tests/data/cpuid/GenuineIntel0090672_AlderLake_02_CPUID.txt:
//   CPUID 00000015: 00000002-00000082-0249F000-00000000 [65.00x / 38400000]
//   CPUID 00000016: 000009C4-00001130-00000064-00000000 [2500 / 4400 / 100]
TEST(TscFreq, AlderLakeLeaf15) {
    TscFreq f = tsc_freq_from_cpuid(0x20, {2, 0x82, 0x0249F000, 0}, {0x9C4, 0x1130, 0x64, 0});
    EXPECT_EQ(f.hz, 2496000000u);  // 38.4 MHz x 130/2
    EXPECT_STREQ(f.source, "cpuid_15h");
    EXPECT_STREQ(f.detail, "CPUID.15H: crystal 38400000 Hz x 130/2");
    StrBuf b;
    put_tsc_freq(b, f);
    EXPECT_STREQ(b.c_str(), "2496.000 MHz (cpuid_15h: CPUID.15H: crystal 38400000 Hz x 130/2)");
}

// tests/data/cpuid/GenuineIntel00706A8_GoldmontPlus_CPUID.txt:
//   CPUID 00000015: 00000003-000000AB-0124F800-00000000 [57.00x / 19200000]
TEST(TscFreq, GoldmontPlusLeaf15) {
    TscFreq f = tsc_freq_from_cpuid(0x18, {3, 0xAB, 0x0124F800, 0}, {});
    EXPECT_EQ(f.hz, 1094400000u);  // 19.2 MHz x 171/3
    EXPECT_STREQ(f.source, "cpuid_15h");
}

TEST(TscFreq, Leaf16WhenLeaf15HasNoCrystal) {
    // Skylake client parts: 15H gives the ratio but ECX = 0; 16H the base frequency.
    TscFreq f = tsc_freq_from_cpuid(0x16, {2, 0x12C, 0, 0}, {0xE10, 0xFA0, 0x64, 0});
    EXPECT_EQ(f.hz, 3600000000u);
    EXPECT_STREQ(f.source, "cpuid_16h");
    EXPECT_STREQ(f.detail, "CPUID.16H:EAX processor base frequency 3600 MHz (CPUID.15H gives no crystal frequency)");
}

TEST(TscFreq, AbsentLeavesSayWhy) {
    TscFreq f = tsc_freq_from_cpuid(0xD, {}, {});  // Zen, K8, QEMU's qemu64/max
    EXPECT_EQ(f.hz, 0u);
    EXPECT_STREQ(f.source, "");
    EXPECT_STREQ(f.detail, "CPUID leaves 15H/16H absent (maximum basic leaf dH)");
    StrBuf b;
    JsonWriter w(b);
    w.begin_object();
    tsc_freq_fields(w, f);
    w.end_object();
    EXPECT_STREQ(b.c_str(),
                 "{\"tsc_hz\":null,\"tsc_source\":null,\"tsc_detail\":\"CPUID leaves 15H/16H absent (maximum "
                 "basic leaf dH)\"}");
}

// Not enumerated: measured against the firmware timer, once (the second call is cached),
// and shown by `info` (text and JSON) and in the meta record.
TEST(TscFreq, MeasuredAgainstTheFirmwareTimerOncePerBoot) {
    sim::SimMachine m = sim::amd_zen4(1);  // no leaf 15H/16H
    simm::SimPlatform p(m);
    p.stall_ticks_per_us = 2500;
    const TscFreq& f = p.tsc_frequency();
    EXPECT_EQ(f.hz, 2500000000u);
    EXPECT_STREQ(f.source, "sim_stall");
    EXPECT_STREQ(f.detail, "measured: 125000000 TSC ticks over 50000 us of the simulated firmware timer on the BSP");
    u64 tsc = m.cpu(0).tsc();
    EXPECT_EQ(p.tsc_frequency().hz, 2500000000u);
    EXPECT_EQ(m.cpu(0).tsc(), tsc) << "measured twice";

    ArgVec av;
    ASSERT_TRUE(split_command_line(StrView("--json info"), &av).ok());
    GlobalOptions g;
    p.out.clear();
    EXPECT_EQ(app_run(p, av.argc(), av.argv.data(), &g), 0);
    std::vector<pmutest::Json> recs = pmutest::parse_json_lines(p.out);
    ASSERT_FALSE(recs.empty());
    EXPECT_EQ(recs[0]["tsc_hz"].u(), 2500000000u);
    EXPECT_EQ(recs[0]["tsc_source"].s(), "sim_stall");

    ASSERT_TRUE(split_command_line(StrView("info"), &av).ok());
    p.out.clear();
    EXPECT_EQ(app_run(p, av.argc(), av.argv.data(), &g), 0);
    EXPECT_NE(p.out.find("\nTSC frequency: 2500.000 MHz (sim_stall: measured: 125000000 TSC ticks over 50000 us of "
                         "the simulated firmware timer on the BSP)\n"),
              std::string::npos)
        << p.out;

    Value meta = build_meta_record(p, "info");
    u64 hz = 0;
    ASSERT_NE(meta.get("tsc_hz"), nullptr);
    EXPECT_TRUE(meta.get("tsc_hz")->to_u64(&hz));
    EXPECT_EQ(hz, 2500000000u);
    EXPECT_EQ(std::string(meta.get("tsc_source")->text().ptr, meta.get("tsc_source")->text().len), "sim_stall");
}

TEST(TscFreq, NoTimerNoCpuidIsUnknownWithBothReasons) {
    sim::SimMachine m = sim::amd_zen4(1);
    simm::SimPlatform p(m);
    const TscFreq& f = p.tsc_frequency();
    EXPECT_EQ(f.hz, 0u);
    EXPECT_STREQ(f.detail, "CPUID leaves 15H/16H absent (maximum basic leaf 10H); no firmware timer (simulated)");
}
