// Issue 11 ("Counts you can trust on real silicon"): behaviours of real hardware that the
// code and the simulators used to get wrong together. Each test failed before its fix.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "pmu/session.h"
#include "sim/sim_cpu.h"
#include "support/test_platform.h"

using namespace pmulab;
using sim::SimCpu;
using sim::SimMachine;

namespace {

Vec<Event> ev(const char* list, EventDialect d) {
    Vec<Event> v;
    Status s = parse_event_list(StrView(list), &v, d);
    EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error().msg);
    return v;
}

// Counts `list` over `run` on CPU 0 of m through a session; returns the counts in order.
template <typename Run> std::vector<u64> count(SimMachine& m, const char* list, Run&& run) {
    SimCpu& c = m.cpu(0);
    PmuSession s;
    s.open(m);
    EXPECT_NE(s.backend(), nullptr);
    if (!s.backend()) return {};
    PmuSession* b = &s;
    Vec<Event> e = ev(list, s.info().dialect);
    Allocation a;
    Status st = b->allocate(e.data(), e.size(), &a);
    EXPECT_TRUE(st.ok()) << (st.ok() ? "" : st.error().msg);
    if (!st.ok()) return {};
    EXPECT_EQ(a.groups.size(), 1u);
    EXPECT_TRUE(b->save(touch_set(e.data(), e.size(), a).value()).ok());
    EXPECT_TRUE(b->program(e.data(), a.groups[0]).ok());
    EXPECT_TRUE(b->start().ok());
    run(c);
    EXPECT_TRUE(b->stop().ok());
    std::vector<u64> out;
    for (usize i = 0; i < e.size(); ++i) {
        const Assignment* as = a.find(u32(i));
        Result<u64> r = b->read(as->kind, as->index);
        EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().msg);
        out.push_back(r.ok() ? r.value() : ~0ull);
    }
    EXPECT_TRUE(s.close().ok());
    EXPECT_TRUE(c.violations().empty());
    return out;
}

// ---- 2. Zen 1 / Zen+: erratum 1054, IRPerfCount is not used for `instructions`.

TEST(Silicon, Zen1InstructionsAvoidIrPerfCount) {
    SimMachine m = sim::amd_zen1(1);
    PmuInfo p;
    pmu_detect(m, &p);
    EXPECT_TRUE(p.caps.amd_irperf_enumerated);
    EXPECT_TRUE(p.caps.amd_irperf_erratum1054);
    EXPECT_FALSE(p.caps.amd_irperf);
    EXPECT_EQ(p.fixed_mask, 0x6u);  // APERF, MPERF; no IRPerfCount
    StrBuf b;
    put_pmu_summary(b, p);
    EXPECT_STREQ(b.c_str(), "AMD core PMU (PerfCtrExtCore): PMC0-5 (48 bits), fixed-like APERF,MPERF (IRPerfCount "
                            "unused: erratum 1054; instructions on PMCx0C0), reads with RDPMC");
    std::vector<u64> n = count(m, "instructions", [](SimCpu& c) { c.instructions(8000); });
    EXPECT_EQ(n, std::vector<u64>{8000});  // the simulated IRPerfCount would say 9000
}

TEST(Silicon, Zen1ErratumOnlyOnFamily17hModels00To2F) {
    // Zen 2 (family 17h model 71h) and Zen 3 keep IRPerfCount.
    SimMachine z3 = sim::amd_zen3(1);
    PmuInfo p;
    pmu_detect(z3, &p);
    EXPECT_TRUE(p.caps.amd_irperf);
    EXPECT_FALSE(p.caps.amd_irperf_erratum1054);
    CpuidSnapshot z = z3.cpu(0).snapshot();
    CpuidRegs l1 = z.get(1);
    l1.eax = 0x00870F10;  // family 17h model 71h (Matisse)
    z.set(1, 0, l1);
    EXPECT_TRUE(decode_cpuid(z).pmu.amd_irperf);
    l1.eax = 0x00800F82;  // family 17h model 08h (Pinnacle Ridge, Zen+)
    z.set(1, 0, l1);
    EXPECT_FALSE(decode_cpuid(z).pmu.amd_irperf);
    EXPECT_TRUE(decode_cpuid(z).pmu.amd_irperf_erratum1054);
    l1.eax = 0x00820F01;  // family 17h model 20h (Dali/Raven 2)
    z.set(1, 0, l1);
    EXPECT_TRUE(decode_cpuid(z).pmu.amd_irperf_erratum1054);
    l1.eax = 0x00830F10;  // family 17h model 31h (Rome): not affected
    z.set(1, 0, l1);
    EXPECT_FALSE(decode_cpuid(z).pmu.amd_irperf_erratum1054);
}

// ---- 4. AMD APERF/MPERF: the C000_00E7/E8 aliases only with EffFreqRO.

TEST(Silicon, K10ReadsAperfMperfAtTheArchitecturalMsrs) {
    SimMachine m = sim::amd_k10(1);
    EXPECT_FALSE(m.cpu(0).msr_exists(0xC00000E8));  // no EffFreqRO on family 10h
    EXPECT_TRUE(m.cpu(0).msr_exists(0xE8));
    PmuInfo p;
    pmu_detect(m, &p);
    EXPECT_TRUE(p.caps.amd_efffreq);
    EXPECT_FALSE(p.caps.amd_efffreq_ro);
    std::vector<u64> n = count(m, "aperf;mperf", [](SimCpu& c) { c.run(1000, {}); });
    EXPECT_EQ(n, (std::vector<u64>{1000, 1000}));
}

TEST(Silicon, Zen3ReadsTheReadOnlyAliases) {
    SimMachine m = sim::amd_zen3(1);
    PmuInfo p;
    pmu_detect(m, &p);
    EXPECT_TRUE(p.caps.amd_efffreq_ro);
    PmuSession s;
    s.open(m);
    ASSERT_NE(s.backend(), nullptr);
    EXPECT_EQ(s.access(CounterKind::fixed, regs::amd::kFixedAperf).index, 0xC00000E8u);
    EXPECT_EQ(s.access(CounterKind::fixed, regs::amd::kFixedMperf).index, 0xC00000E7u);
    SimMachine k = sim::amd_k10(1);
    PmuSession t;
    t.open(k);
    ASSERT_NE(t.backend(), nullptr);
    EXPECT_EQ(t.access(CounterKind::fixed, regs::amd::kFixedAperf).index, 0xE8u);
    EXPECT_EQ(t.access(CounterKind::fixed, regs::amd::kFixedMperf).index, 0xE7u);
}

TEST(Silicon, GraniteRidgeDumpEnumeratesEffFreqRo) {
    SimMachine m = pmutest::dump_machine("AuthenticAMD0B40F40_K20_GraniteRidge_02_CPUID.txt");
    PmuInfo p;
    pmu_detect(m, &p);
    EXPECT_TRUE(p.caps.amd_efffreq_ro);  // 8000_0007H:EDX = 0x6599, bit 10
    EXPECT_TRUE(p.caps.amd_irperf);
}

}  // namespace

// ---- 6. IA32_FIXED_CTR_CTRL has groups for fixed counters 0-7 only.

namespace {

TEST(Silicon, FixedCountersFromEightAreNotProgrammable) {
    // A v6 part enumerating fixed counters 0-2 and 8 (leaf 23H.1:EBX): FIXED_CTR8 has no
    // OS/USR/PMI group (bits 32-35 belong to FIXED_CTR0: adaptive PEBS, RDPMC user disable).
    SimMachine m = sim::intel_v6(0xff, 0x107, 1);
    SimCpu& c = m.cpu(0);
    PmuInfo p;
    pmu_detect(m, &p);
    EXPECT_EQ(p.caps.fixed_counter_mask(), 0x107u);  // what CPUID enumerates
    EXPECT_EQ(p.fixed_mask, 0x7u);                   // what pmulab programs
    // The simulator: writing counter 8's would-be group faults or lands on FIXED_CTR0's bits,
    // and counter 8 never counts through FIXED_CTR_CTRL.
    EXPECT_FALSE(c.wrmsr(0x38D, 0x3ull << 32).ok());
    c.clear_log();
    // Counters 0-2 still work, and FIXED_CTR_CTRL never gets a bit above 11.
    std::vector<u64> n = count(m, "INST_RETIRED.ANY", [](SimCpu& cpu) { cpu.instructions(100); });
    EXPECT_EQ(n, std::vector<u64>{100});
    for (const sim::LogEntry& w : c.writes())
        if (w.addr == 0x38D) EXPECT_EQ(w.value >> 12, 0u) << std::hex << w.value;
}

TEST(Silicon, FixedCtrCtrlTypedRegisterStopsAtCounterSeven) {
    using regs::FixedCtrCtrl;
    EXPECT_EQ(FixedCtrCtrl().set_os(7).set_usr(7).raw(), 0x3ull << 28);
    EXPECT_EQ(FixedCtrCtrl().set_os(8).set_usr(8).set_pmi(8).set_any_thread(8).raw(), 0u);
    EXPECT_EQ(FixedCtrCtrl().set_group(9, 0xF).raw(), 0u);
    EXPECT_FALSE(FixedCtrCtrl(0x3ull << 32).enabled(8));  // FIXED_CTR0's adaptive/RDPMC bits
    EXPECT_EQ(FixedCtrCtrl::adaptive_bit(1), 36u);
}

}  // namespace

// ---- 5. AMD LFENCE: dispatch-serialising only with DE_CFG[1].

namespace {

TEST(Silicon, AmdLfenceSerialisationIsProbedFromDeCfg) {
    // Firmware left DE_CFG[1] clear: LFENCE does not serialise; the measurement must set
    // it (and restore it) or use CPUID.
    SimMachine m = sim::amd_zen3(1);
    m.cpu(0).poke(0xC0011029, 0x1000);
    PmuInfo p;
    pmu_detect(m, &p);
    EXPECT_EQ(p.lfence, LfenceSerializing::no);
    EXPECT_EQ(p.de_cfg, 0x1000u);
    EXPECT_EQ(serialize_choice(p), SerializeWith::lfence_after_de_cfg);
    EXPECT_EQ(de_cfg_for_measurement(p.de_cfg), 0x1002u);
    EXPECT_STREQ(serialize_name(serialize_choice(p)), "lfence_after_de_cfg");
    // Only a read: detection writes nothing.
    for (const sim::LogEntry& w : m.cpu(0).writes()) EXPECT_NE(w.addr, 0xC0011029u);
    // As Linux leaves it: LFENCE serialises.
    m.cpu(0).poke(0xC0011029, 0x1002);
    pmu_detect(m, &p);
    EXPECT_EQ(p.lfence, LfenceSerializing::yes);
    EXPECT_EQ(serialize_choice(p), SerializeWith::lfence);
}

TEST(Silicon, LfenceChoiceElsewhere) {
    // Intel: LFENCE is serialising as it is; no DE_CFG read.
    SimMachine i = sim::intel_v4_goldmont_plus(1);
    PmuInfo p;
    pmu_detect(i, &p);
    EXPECT_EQ(p.lfence, LfenceSerializing::not_amd);
    EXPECT_EQ(serialize_choice(p), SerializeWith::lfence);
    for (const sim::LogEntry& e : i.cpu(0).log()) EXPECT_NE(e.addr, 0xC0011029u);
    // AMD where DE_CFG is not readable (a hypervisor may #GP): CPUID serialisation.
    SimMachine z = sim::amd_zen3(1);
    z.cpu(0).fail_rdmsr_to(0xC0011029);
    pmu_detect(z, &p);
    EXPECT_EQ(p.lfence, LfenceSerializing::unknown);
    EXPECT_EQ(serialize_choice(p), SerializeWith::cpuid);
    // Family 0Fh (QEMU's qemu64/max models, K8) and 11h: LFENCE is always
    // dispatch-serialising there (AMD's 2018 speculation paper; Linux init_amd), and they
    // have no DE_CFG bit: LFENCE, no DE_CFG read.
    SimMachine k8 = sim::qemu_tcg(1);
    pmu_detect(k8, &p);
    EXPECT_EQ(p.lfence, LfenceSerializing::yes);
    EXPECT_EQ(serialize_choice(p), SerializeWith::lfence);
    for (const sim::LogEntry& e : k8.cpu(0).log()) EXPECT_NE(e.addr, 0xC0011029u);
}

}  // namespace
