#include <gtest/gtest.h>

#include <string>

#include "x86/intel_regs.h"

using namespace pmulab;
using namespace pmulab::regs;

namespace {

std::string S(const StrBuf& b) { return std::string(b.c_str(), b.size()); }

// CPUID-derived capabilities of a few PMU generations (values as CPUID reports them).
PmuCaps caps_v1() {
    PmuCaps c;
    c.leaf_0a = true;
    c.version = 1;
    c.gp_counters = 2;
    c.gp_width = 40;
    c.ebx_length = 7;
    return c;
}
PmuCaps caps_v2() {
    PmuCaps c = caps_v1();
    c.version = 2;
    c.fixed_counters = 3;
    c.fixed_width = 40;
    c.fixed_effective = 0x7;
    return c;
}
PmuCaps caps_v3() {
    PmuCaps c = caps_v2();
    c.version = 3;
    c.gp_counters = 4;
    c.gp_width = 48;
    c.fixed_width = 48;
    return c;
}
PmuCaps caps_v4() {
    PmuCaps c = caps_v3();
    c.version = 4;
    c.perf_caps_read = true;
    c.perf_caps = 0x33C5;  // LBR fmt 5, PEBS trap+arch reg, rec fmt 3, SMM_FRZ, FW_WRITE
    return c;
}
PmuCaps caps_v5_icl() {
    PmuCaps c = caps_v4();
    c.version = 5;
    c.gp_counters = 8;
    c.fixed_counters = 4;
    c.fixed_effective = 0xF;
    c.ebx_length = 8;
    c.perf_caps = 0xF2C4;  // ... FW_WRITE, PEBS_BASELINE, PERF_METRICS
    return c;
}

}  // namespace

// ---- PERFEVTSEL ----

TEST(Regs, PerfEvtSelSeedValues) {
    PerfEvtSel v;
    v.set_event_select(0x0E).set_umask(0x01).set_usr(true).set_en(true);
    EXPECT_EQ(v.raw(), 0x0041010Eu);
    PerfEvtSel d;
    d.set_event_select(0x08).set_umask(0x01).set_usr(true).set_os(true);
    EXPECT_EQ(d.raw(), 0x00030108u);
    d.set_en(true);
    EXPECT_EQ(d.raw(), 0x00430108u);
    static_assert(PerfEvtSel(0x0041010E).event_select() == 0x0E && PerfEvtSel(0x0041010E).umask() == 1);
}

TEST(Regs, PerfEvtSelEveryField) {
    struct Case {
        const char* name;
        u64 expect;
        PerfEvtSel v;
    };
    const Case cases[] = {
        {"event_select", 0xA5, PerfEvtSel().set_event_select(0xA5)},
        {"umask", 0x5A00, PerfEvtSel().set_umask(0x5A)},
        {"usr", 1ull << 16, PerfEvtSel().set_usr()},
        {"os", 1ull << 17, PerfEvtSel().set_os()},
        {"edge", 1ull << 18, PerfEvtSel().set_edge()},
        {"pc", 1ull << 19, PerfEvtSel().set_pc()},
        {"intr", 1ull << 20, PerfEvtSel().set_intr()},
        {"any_thread", 1ull << 21, PerfEvtSel().set_any_thread()},
        {"en", 1ull << 22, PerfEvtSel().set_en()},
        {"inv", 1ull << 23, PerfEvtSel().set_inv()},
        {"cmask", 0x3C000000ull, PerfEvtSel().set_cmask(0x3C)},
        {"eq", 1ull << 36, PerfEvtSel().set_eq()},
        {"umask2", 0x0000C30000000000ull, PerfEvtSel().set_umask2(0xC3)},
    };
    u64 all = 0;
    for (const Case& c : cases) {
        EXPECT_EQ(c.v.raw(), c.expect) << c.name;
        EXPECT_EQ(all & c.expect, 0u) << c.name << " overlaps another field";
        all |= c.expect;
    }
    PerfEvtSel r(all | 0xFF);
    EXPECT_EQ(r.event_select(), 0xFFu);
    EXPECT_EQ(r.umask(), 0x5Au);
    EXPECT_TRUE(r.usr() && r.os() && r.edge() && r.pc() && r.intr() && r.any_thread() && r.en() && r.inv() && r.eq());
    EXPECT_EQ(r.cmask(), 0x3Cu);
    EXPECT_EQ(r.umask2(), 0xC3u);
    // Clearing a flag touches only its bit; setters truncate to the field width.
    r.set_usr(false).set_umask(0x1FF);
    EXPECT_FALSE(r.usr());
    EXPECT_EQ(r.umask(), 0xFFu);
    EXPECT_TRUE(r.os());
    EXPECT_TRUE(PerfEvtSel::cmask_field::fits(0xFF));
    EXPECT_FALSE(PerfEvtSel::cmask_field::fits(0x100));
}

TEST(Regs, PerfEvtSelWritableMaskPerVersion) {
    // v1/v2: no AnyThread (bit 21), nothing above bit 31.
    EXPECT_EQ(perfevtsel_writable_mask(caps_v1()), 0xFFDFFFFFull);
    EXPECT_EQ(perfevtsel_writable_mask(caps_v2()), 0xFFDFFFFFull);
    EXPECT_EQ(perfevtsel_writable_mask(caps_v3()), 0xFFFFFFFFull);
    PmuCaps dep = caps_v5_icl();
    dep.anythread_deprecated = true;
    EXPECT_EQ(perfevtsel_writable_mask(dep), 0xFFDFFFFFull);
    PmuCaps v6 = dep;
    v6.version = 6;
    v6.leaf_23 = true;
    v6.umask2 = true;
    v6.eq_bit = true;
    EXPECT_EQ(perfevtsel_writable_mask(v6), 0x0000FF10FFDFFFFFull);
    EXPECT_EQ(perfevtsel_writable_mask(PmuCaps{}), 0u);
}

// ---- counters ----

TEST(Regs, LegacyWriteSignExtends) {
    EXPECT_EQ(legacy_pmc_write_result(0, 48), 0u);
    EXPECT_EQ(legacy_pmc_write_result(0x7FFFFFFF, 48), 0x7FFFFFFFu);
    EXPECT_EQ(legacy_pmc_write_result(0x80000000, 48), 0xFFFF80000000ull);
    EXPECT_EQ(legacy_pmc_write_result(0xFFFFFFFF, 48), 0xFFFFFFFFFFFFull);
    EXPECT_EQ(legacy_pmc_write_result(0xFFFFFFFF, 40), 0xFFFFFFFFFFull);
    // Upper 32 bits of the written value are ignored.
    EXPECT_EQ(legacy_pmc_write_result(0x1234567800000010ull, 48), 0x10u);
    EXPECT_EQ(legacy_pmc_write_result(0x00000001FFFFFFF0ull, 48), 0xFFFFFFFFFFF0ull);
    EXPECT_EQ(legacy_pmc_write_result(0xFFFFFFFE, 32), 0xFFFFFFFEu);
}

TEST(Regs, FullWidthWritesAndDeltas) {
    EXPECT_TRUE(full_width_write_valid(0xFFFFFFFFFFFFull, 48));
    EXPECT_FALSE(full_width_write_valid(0x1000000000000ull, 48));
    EXPECT_EQ(preload_for_overflow_after(0, 48), 0u);
    EXPECT_EQ(preload_for_overflow_after(100, 48), 0xFFFFFFFFFF9Cull);
    EXPECT_EQ(counter_delta(10, 25, 48), 15u);
    EXPECT_EQ(counter_delta(0xFFFFFFFFFFFEull, 3, 48), 5u);
    EXPECT_EQ(counter_mask(40), 0xFFFFFFFFFFull);
    EXPECT_EQ(pmc_msr(0), 0xC1u);
    EXPECT_EQ(a_pmc_msr(7), 0x4C8u);
    EXPECT_EQ(perfevtsel_msr(3), 0x189u);
    EXPECT_EQ(fixed_ctr_msr(3), 0x30Cu);
}

TEST(Regs, CounterWidths) {
    EXPECT_EQ(gp_counter_width(caps_v1()), 40u);
    EXPECT_EQ(fixed_counter_width(caps_v1()), 0u);  // v1: no fixed counters
    EXPECT_EQ(fixed_counter_width(caps_v3()), 48u);
    PmuCaps core2 = caps_v2();
    core2.fixed_counters = 0;
    core2.fixed_width = 0;
    core2.fixed_effective = 0;
    core2.fixed_count_quirk = true;
    EXPECT_EQ(fixed_counters(core2), 0x7u);
    EXPECT_EQ(fixed_counter_width(core2), 40u);  // the GP width stands in
    EXPECT_EQ(gp_counters(PmuCaps{}), 0u);
}

// ---- FIXED_CTR_CTRL ----

TEST(Regs, FixedCtrCtrlFields) {
    FixedCtrCtrl f;
    f.set_os(0).set_usr(1).set_any_thread(2).set_pmi(3);
    EXPECT_EQ(f.raw(), 0x8421u);
    EXPECT_TRUE(f.os(0) && !f.usr(0));
    EXPECT_TRUE(f.usr(1) && f.any_thread(2) && f.pmi(3));
    EXPECT_EQ(f.en(0), 1u);
    EXPECT_EQ(f.en(1), 2u);
    EXPECT_EQ(f.en(2), 0u);
    EXPECT_FALSE(f.enabled(3));
    f.set_group(1, 0xB);
    EXPECT_EQ(f.group(1), 0xBu);
    EXPECT_EQ(f.raw(), 0x84B1u);
    f.set_os(0, false);
    EXPECT_EQ(f.raw(), 0x84B0u);
    // Out-of-range counters are ignored rather than corrupting other bits.
    f.set_os(16);
    EXPECT_EQ(f.raw(), 0x84B0u);
    EXPECT_FALSE(f.os(40));
}

TEST(Regs, FixedCtrCtrlWritableMask) {
    EXPECT_EQ(fixed_ctr_ctrl_writable_mask(caps_v1()), 0u);
    EXPECT_EQ(fixed_ctr_ctrl_writable_mask(caps_v2()), 0xBBBu);  // no AnyThread before v3
    EXPECT_EQ(fixed_ctr_ctrl_writable_mask(caps_v3()), 0xFFFu);
    PmuCaps v5 = caps_v5_icl();
    v5.fixed_mask = 0b1001;
    v5.fixed_counters = 0;
    v5.fixed_effective = 0b1001;
    v5.anythread_deprecated = true;
    EXPECT_EQ(fixed_ctr_ctrl_writable_mask(v5), 0xB00Bu);
}

// ---- GLOBAL_* ----

TEST(Regs, GlobalCtrlFieldsAndMask) {
    PerfGlobalCtrl g;
    g.set_pmc(0).set_pmc(3).set_fixed(1).set_en_perf_metrics();
    EXPECT_EQ(g.raw(), 0x0001000200000009ull);
    EXPECT_TRUE(g.pmc(3) && !g.pmc(2) && g.fixed(1) && !g.fixed(0) && g.en_perf_metrics());
    EXPECT_EQ(g.pmc_enables(), 9u);
    EXPECT_EQ(g.fixed_enables(), 2u);
    EXPECT_EQ(global_ctrl_writable_mask(caps_v1()), 0u);
    EXPECT_EQ(global_ctrl_writable_mask(caps_v2()), 0x0000000700000003ull);
    EXPECT_EQ(global_ctrl_writable_mask(caps_v5_icl()), 0x0001000F000000FFull);
}

TEST(Regs, GlobalStatusFamily) {
    PerfGlobalStatus s;
    s.set_pmc(1).set_fixed(2).set_cond_chgd().set_ovf_buf();
    EXPECT_EQ(s.raw(), 0xC000000400000002ull);
    EXPECT_TRUE(s.pmc(1) && s.fixed(2) && s.cond_chgd() && s.ovf_buf() && !s.ovf_uncore());
    EXPECT_EQ(global_status_bits(caps_v2()), 0xC000000700000003ull);
    EXPECT_EQ(global_status_bits(caps_v3()), 0xE00000070000000Full);
    EXPECT_EQ(global_status_bits(caps_v4()), 0xFC8000070000000Full);
    EXPECT_EQ(global_status_bits(caps_v5_icl()), 0xFC81000F000000FFull);
    EXPECT_EQ(global_ovf_ctrl_writable_mask(caps_v3()), 0xE00000070000000Full);
    EXPECT_EQ(global_status_set_writable_mask(caps_v3()), 0u);
    EXPECT_EQ(global_status_set_writable_mask(caps_v4()), 0x7C8000070000000Full);
    EXPECT_EQ(global_inuse_bits(caps_v3()), 0u);
    EXPECT_EQ(global_inuse_bits(caps_v4()), 0x800000070000000Full);
}

TEST(Regs, PerfCapabilitiesFields) {
    PerfCapabilities p(0xF2C4);
    EXPECT_EQ(p.lbr_fmt(), 4u);
    EXPECT_TRUE(p.pebs_trap());
    EXPECT_TRUE(p.pebs_arch_reg());
    EXPECT_EQ(p.pebs_rec_fmt(), 2u);
    EXPECT_TRUE(p.smm_frz());
    EXPECT_TRUE(p.fw_write());
    EXPECT_TRUE(p.pebs_baseline());
    EXPECT_TRUE(p.perf_metrics());
    EXPECT_FALSE(p.pebs_output_pt_avail());
    EXPECT_EQ(PerfCapabilities().set_pebs_output_pt_avail().set_pebs_timing_info().set_rdpmc_metrics_clear().raw(),
              0xB0000u);
    EXPECT_EQ(PerfCapabilities().set_smm_frz().set_lbr_fmt(0x3F).raw(), 0x103Fu);
}

TEST(Regs, PerfMetricsFields) {
    PerfMetrics m(0x0102030405060708ull);
    EXPECT_EQ(m.retiring(), 0x08u);
    EXPECT_EQ(m.bad_speculation(), 0x07u);
    EXPECT_EQ(m.frontend_bound(), 0x06u);
    EXPECT_EQ(m.backend_bound(), 0x05u);
    EXPECT_EQ(m.heavy_operations(), 0x04u);
    EXPECT_EQ(m.branch_mispredicts(), 0x03u);
    EXPECT_EQ(m.fetch_latency(), 0x02u);
    EXPECT_EQ(m.memory_bound(), 0x01u);
}

// ---- MSR existence per version ----

TEST(Regs, MsrExistencePerVersion) {
    PmuCaps v1 = caps_v1(), v2 = caps_v2(), v3 = caps_v3(), v4 = caps_v4(), v5 = caps_v5_icl();
    EXPECT_TRUE(pmu_msr_exists(v1, msr::IA32_PMC0 + 1));
    EXPECT_FALSE(pmu_msr_exists(v1, msr::IA32_PMC0 + 2));
    EXPECT_TRUE(pmu_msr_exists(v1, msr::IA32_PERFEVTSEL0));
    EXPECT_FALSE(pmu_msr_exists(v1, msr::IA32_FIXED_CTR0));
    EXPECT_FALSE(pmu_msr_exists(v1, msr::IA32_PERF_GLOBAL_CTRL));
    EXPECT_FALSE(pmu_msr_exists(v1, msr::IA32_FIXED_CTR_CTRL));
    EXPECT_FALSE(pmu_msr_exists(v1, msr::IA32_A_PMC0));
    EXPECT_TRUE(pmu_msr_exists(v2, msr::IA32_FIXED_CTR0 + 2));
    EXPECT_FALSE(pmu_msr_exists(v2, msr::IA32_FIXED_CTR0 + 3));
    EXPECT_TRUE(pmu_msr_exists(v2, msr::IA32_PERF_GLOBAL_OVF_CTRL));
    EXPECT_FALSE(pmu_msr_exists(v3, msr::IA32_PERF_GLOBAL_STATUS_SET));
    EXPECT_FALSE(pmu_msr_exists(v3, msr::IA32_PERF_GLOBAL_INUSE));
    EXPECT_TRUE(pmu_msr_exists(v4, msr::IA32_PERF_GLOBAL_STATUS_SET));
    EXPECT_TRUE(pmu_msr_exists(v4, msr::IA32_PERF_GLOBAL_INUSE));
    EXPECT_TRUE(pmu_msr_exists(v4, msr::IA32_A_PMC0 + 3));
    EXPECT_FALSE(pmu_msr_exists(v4, msr::IA32_A_PMC0 + 4));
    EXPECT_FALSE(pmu_msr_exists(v4, msr::MSR_PERF_METRICS));
    EXPECT_TRUE(pmu_msr_exists(v5, msr::MSR_PERF_METRICS));
    EXPECT_TRUE(pmu_msr_exists(v5, msr::IA32_FIXED_CTR0 + 3));
    EXPECT_FALSE(pmu_msr_exists(v3, msr::IA32_PERF_CAPABILITIES));
    EXPECT_TRUE(pmu_msr_exists(v4, msr::IA32_PERF_CAPABILITIES));
}

TEST(Regs, MsrExistenceV5NonContiguousFixedAndV6Bitmaps) {
    PmuCaps v5 = caps_v5_icl();
    v5.fixed_counters = 0;
    v5.fixed_mask = 0b1001;
    v5.fixed_effective = 0b1001;
    EXPECT_TRUE(pmu_msr_exists(v5, msr::IA32_FIXED_CTR0));
    EXPECT_FALSE(pmu_msr_exists(v5, msr::IA32_FIXED_CTR0 + 1));
    EXPECT_FALSE(pmu_msr_exists(v5, msr::IA32_FIXED_CTR0 + 2));
    EXPECT_TRUE(pmu_msr_exists(v5, msr::IA32_FIXED_CTR0 + 3));
    PmuCaps v6 = caps_v5_icl();
    v6.version = 6;
    v6.leaf_23 = true;
    v6.leaf23_subleaves = 0b10;
    v6.gp_bitmap = 0b11110011;
    v6.fixed_bitmap = 0b111;
    EXPECT_TRUE(pmu_msr_exists(v6, msr::IA32_PERFEVTSEL0 + 1));
    EXPECT_FALSE(pmu_msr_exists(v6, msr::IA32_PERFEVTSEL0 + 2));
    EXPECT_FALSE(pmu_msr_exists(v6, msr::IA32_PMC0 + 3));
    EXPECT_TRUE(pmu_msr_exists(v6, msr::IA32_PMC0 + 7));
    EXPECT_FALSE(pmu_msr_exists(v6, msr::MSR_PERF_METRICS));  // fixed counter 3 absent
    EXPECT_EQ(global_ctrl_writable_mask(v6), 0x00000007000000F3ull);
}

TEST(Regs, MsrCheckMessages) {
    auto msg = [](const PmuCaps& c, u32 m) { return std::string(pmu_msr_check(c, m).error().msg); };
    EXPECT_EQ(msg(caps_v1(), msr::IA32_PERF_GLOBAL_CTRL),
              "IA32_PERF_GLOBAL_CTRL (0x38F) does not exist: architectural PMU version 1 (it needs version 2 or "
              "later)");
    EXPECT_EQ(msg(caps_v3(), msr::IA32_PERF_GLOBAL_STATUS_SET),
              "IA32_PERF_GLOBAL_STATUS_SET (0x391) does not exist: architectural PMU version 3 (it needs version 4 "
              "or later)");
    EXPECT_EQ(msg(caps_v3(), msr::IA32_PMC0 + 5),
              "IA32_PMC5 (0xC6) does not exist: this CPU has general-purpose counters PMC0-3");
    EXPECT_EQ(msg(caps_v1(), msr::IA32_FIXED_CTR0),
              "IA32_FIXED_CTR0 (0x309) does not exist: architectural PMU version 1 has no fixed-function counters");
    EXPECT_EQ(msg(caps_v3(), msr::IA32_A_PMC0),
              "IA32_A_PMC0 (0x4C1) does not exist: no IA32_PERF_CAPABILITIES (CPUID.01H:ECX.PDCM[15] = 0), so no "
              "full-width writes");
    PmuCaps nofw = caps_v4();
    nofw.perf_caps = 0;
    EXPECT_EQ(msg(nofw, msr::IA32_A_PMC0),
              "IA32_A_PMC0 (0x4C1) does not exist: IA32_PERF_CAPABILITIES.FW_WRITE[13] = 0");
    EXPECT_EQ(msg(PmuCaps{}, msr::IA32_PERFEVTSEL0),
              "IA32_PERFEVTSEL0 (0x186) does not exist: no architectural performance monitoring (CPUID.0AH:EAX[7:0] "
              "= 0)");
    EXPECT_EQ(msg(caps_v4(), 0x10), "MSR 0x10 is not an architectural performance-monitoring MSR");
    EXPECT_EQ(msg(caps_v4(), msr::MSR_PERF_METRICS),
              "MSR_PERF_METRICS (0x329) does not exist: IA32_PERF_CAPABILITIES.PERF_METRICS[15] = 0");
}

TEST(Regs, MsrNames) {
    auto name = [](const PmuCaps& c, u32 m) {
        StrBuf b;
        pmu_msr_name(c, m, b);
        return S(b);
    };
    EXPECT_EQ(name(caps_v3(), 0x390), "IA32_PERF_GLOBAL_OVF_CTRL");
    EXPECT_EQ(name(caps_v4(), 0x390), "IA32_PERF_GLOBAL_STATUS_RESET");
    EXPECT_EQ(name(caps_v4(), 0xC3), "IA32_PMC2");
    EXPECT_EQ(name(caps_v4(), 0x4C2), "IA32_A_PMC1");
    EXPECT_EQ(name(caps_v4(), 0x18D), "IA32_PERFEVTSEL7");
    EXPECT_EQ(name(caps_v4(), 0x30A), "IA32_FIXED_CTR1");
    EXPECT_EQ(name(caps_v4(), 0x38D), "IA32_FIXED_CTR_CTRL");
    EXPECT_EQ(name(caps_v4(), 0x1A0), "MSR 0x1A0");
}

TEST(Regs, WritableMaskPerMsr) {
    PmuCaps v4 = caps_v4();
    EXPECT_EQ(pmu_msr_writable_mask(v4, msr::IA32_PMC0), ~0ull);
    EXPECT_EQ(pmu_msr_writable_mask(v4, msr::IA32_A_PMC0), 0xFFFFFFFFFFFFull);
    EXPECT_EQ(pmu_msr_writable_mask(v4, msr::IA32_FIXED_CTR0), 0xFFFFFFFFFFFFull);
    EXPECT_EQ(pmu_msr_writable_mask(v4, msr::IA32_PERFEVTSEL0), 0xFFFFFFFFull);
    EXPECT_EQ(pmu_msr_writable_mask(v4, msr::IA32_PERF_GLOBAL_STATUS), 0u);
    EXPECT_EQ(pmu_msr_writable_mask(v4, msr::IA32_PERF_GLOBAL_STATUS_RESET), 0xFC8000070000000Full);
    EXPECT_EQ(pmu_msr_writable_mask(caps_v1(), msr::IA32_PERF_GLOBAL_CTRL), 0u);
}

TEST(Regs, CounterSetFormatting) {
    auto f = [](u32 m, const char* p) {
        StrBuf b;
        put_counter_set(b, m, p);
        return S(b);
    };
    EXPECT_EQ(f(0, "PMC"), "none");
    EXPECT_EQ(f(0b1111, "PMC"), "PMC0-3");
    EXPECT_EQ(f(0b11110011, "PMC"), "PMC0,1,4-7");
    EXPECT_EQ(f(0b1001, "FIXED_CTR"), "FIXED_CTR0,3");
    EXPECT_EQ(f(0b10110, "PMC"), "PMC1,2,4");
    EXPECT_EQ(f(0x80000000u, "PMC"), "PMC31");
}
