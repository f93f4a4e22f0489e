// The Intel architectural PMU backend (pmulab/pmu.h) against the simulated machine:
// detection on every synthetic PMU version, the exact WRMSR sequences of program /
// start / stop / restore, counting through the sim's model, full-width and legacy
// writes with presets near the top of the width, overflow, RDPMC/RDMSR fallback,
// GLOBAL_CTRL gating, the EN-before-counter-write rule, and exact save/restore (also
// when a WRMSR faults at every possible step).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "pmu/session.h"
#include "sim/sim_cpu.h"

using namespace pmulab;
using namespace sim;

namespace {

Vec<Event> events(const char* list) {
    Vec<Event> v;
    Status s = parse_event_list(StrView(list), &v);
    EXPECT_TRUE(s.ok()) << s.error().msg;
    return v;
}

std::string hex(u64 v) {
    char b[24];
    std::snprintf(b, sizeof b, "0x%llx", (unsigned long long)v);
    return b;
}

// The CPU's WRMSRs since the last clear, as "ADDR=VALUE" (faulted ones marked "!").
std::vector<std::string> writes(const SimCpu& c) {
    std::vector<std::string> out;
    for (const LogEntry& e : c.log())
        if (e.kind == Access::wrmsr) out.push_back(hex(e.addr) + "=" + hex(e.value) + (e.vector ? "!" : ""));
    return out;
}

// A session on one CPU with an allocation for `list`.
struct Bench {
    SimMachine& m;
    u32 cpu;
    Vec<Event> ev;
    Allocation alloc;
    PmuSession s;
    Bench(SimMachine& machine, u32 c, const char* list) : m(machine), cpu(c), ev(events(list)) {
        m.on(cpu, [&] { s.open(m); });
    }
    PmuSession& b() { return s; }
    void allocate() {
        Status st = s.allocate(ev.data(), ev.size(), &alloc);
        ASSERT_TRUE(st.ok()) << st.error().msg;
    }
    Status save() {
        Result<PmuTouch> t = touch_set(ev.data(), ev.size(), alloc);
        if (!t.ok()) return t.error();
        Status st;
        m.on(cpu, [&] { st = b().save(t.value()); });
        return st;
    }
    Status program(u32 group, const u64* presets = nullptr) {
        Status st;
        m.on(cpu, [&] { st = b().program(ev.data(), alloc.groups[group], presets); });
        return st;
    }
    Status start() {
        Status st;
        m.on(cpu, [&] { st = b().start(); });
        return st;
    }
    Status stop() {
        Status st;
        m.on(cpu, [&] { st = b().stop(); });
        return st;
    }
    u64 read(CounterKind k, u8 i) {
        Result<u64> r = u64(0);
        m.on(cpu, [&] { r = b().read(k, i); });
        EXPECT_TRUE(r.ok()) << r.error().msg;
        return r.ok() ? r.value() : ~u64(0);
    }
    // The value of the counter event `e` was assigned to in its group.
    u64 read_event(u32 e) {
        const Assignment* a = alloc.find(e);
        EXPECT_NE(a, nullptr);
        return a ? read(a->kind, a->index) : ~u64(0);
    }
    Status restore(RestoreReport* rep = nullptr) {
        Status st;
        m.on(cpu, [&] { st = s.close(rep); });
        return st;
    }
    SimCpu& c() { return m.cpu(cpu); }
};

}  // namespace

// ---------------------------------------------------------------- detection

TEST(PmuDetect, EveryVersion) {
    struct Case {
        const char* what;
        SimMachine m;
        u8 version;
        u32 gp, fixed;
        u8 gpw, fxw;
        bool global, reset, fw;
    };
    Case cases[] = {
        {"v1", intel_v1(1), 1, 0x3, 0x0, 40, 0, false, false, false},
        {"v2", intel_v2(1), 2, 0x3, 0x7, 40, 40, true, false, false},
        {"v2 Conroe", intel_v2_conroe(1), 2, 0x3, 0x7, 40, 40, true, false, false},
        {"v3", intel_v3(2), 3, 0xF, 0x7, 48, 48, true, false, false},
        {"v4", intel_v4_goldmont_plus(1), 4, 0xF, 0x7, 48, 48, true, true, true},
        {"v5", intel_v5(0b1001, 0, 1), 5, 0xF, 0x9, 48, 48, true, true, true},
        {"v6", intel_v6(0b1010, 0b101, 1), 6, 0xA, 0x5, 48, 48, true, true, true},
    };
    for (Case& k : cases) {
        PmuInfo p;
        k.m.on(0, [&] { pmu_detect(k.m, &p); });
        EXPECT_EQ(p.kind, PmuKind::intel_arch) << k.what;
        EXPECT_EQ(p.version, k.version) << k.what;
        EXPECT_EQ(p.gp_mask, k.gp) << k.what;
        EXPECT_EQ(p.fixed_mask, k.fixed) << k.what;
        EXPECT_EQ(p.gp_width, k.gpw) << k.what;
        EXPECT_EQ(p.fixed_width, k.fxw) << k.what;
        EXPECT_EQ(p.global_ctrl, k.global) << k.what;
        EXPECT_EQ(p.status_reset, k.reset) << k.what;
        EXPECT_EQ(p.full_width_writes, k.fw) << k.what;
        EXPECT_EQ(p.method, CounterMethod::rdpmc) << k.what;
        EXPECT_STREQ(p.method_note, "") << k.what;
        // Detection only reads.
        EXPECT_TRUE(k.m.cpu(0).writes().empty()) << k.what;
    }
}

TEST(PmuDetect, ProbesRdpmcOnAnExistingCounter) {
    // v6 without PMC0: the probe reads PMC1 (RDPMC ECX = 1), not the absent counter 0.
    SimMachine m = intel_v6(0b1010, 0b101, 1);
    PmuInfo p;
    pmu_detect(m, &p);
    std::vector<u32> pmc;
    for (const LogEntry& e : m.cpu(0).log())
        if (e.kind == Access::rdpmc) pmc.push_back(e.addr);
    EXPECT_EQ(pmc, std::vector<u32>{1});
    EXPECT_EQ(p.method, CounterMethod::rdpmc);
}

TEST(PmuDetect, QemuTcgHasNoPmuAndRdpmcFaults) {
    SimMachine m = qemu_tcg(2);
    PmuInfo p;
    m.on(1, [&] { pmu_detect(m, &p); });
    EXPECT_EQ(p.kind, PmuKind::none);
    EXPECT_EQ(p.method, CounterMethod::rdmsr);
    EXPECT_STREQ(p.method_note, "RDPMC 0x0 raised #UD (invalid opcode)");
    EXPECT_STREQ(p.absent,
                 "no performance-monitoring counters: no AMD core counters enumerated (CPUID 8000_0001H:ECX[23] = 0, "
                 "no PerfMonV2) and CPUID.0AH:EAX[7:0] = 0 (a hypervisor without PMU passthrough)");
    StrBuf b;
    put_pmu_summary(b, p);
    EXPECT_EQ(std::string(b.c_str()), std::string("no PMU counters: ") + p.absent);

    SimMachine mi = qemu_tcg_intel(1);
    pmu_detect(mi, &p);
    EXPECT_EQ(p.kind, PmuKind::none);
    EXPECT_STREQ(p.vendor_string, "GenuineIntel");
    EXPECT_STREQ(p.absent, "no architectural performance monitoring: CPUID.0AH:EAX[7:0] = 0 (a hypervisor without PMU "
                           "passthrough)");
    EXPECT_EQ(p.method, CounterMethod::rdmsr);
    PmuSession s;
    s.open(mi);
    EXPECT_EQ(s.backend(), nullptr);
    EXPECT_TRUE(s.close().ok());
}

TEST(PmuDetect, AmdIsProgrammedByTheAmdBackend) {
    // The AMD backend (pmu_amd.h; its own tests: test_pmu_amd.cpp).
    SimMachine m = amd_zen(1);
    PmuInfo p;
    pmu_detect(m, &p);
    EXPECT_EQ(p.kind, PmuKind::amd);
    EXPECT_EQ(p.dialect, EventDialect::amd_zen);
    EXPECT_STREQ(p.absent, "");
    EXPECT_EQ(p.gp_mask, 0x3Fu);
    Vec<Event> ev = events("instructions");  // the Intel dialect: refused on AMD
    Allocation a;
    Status s = pmu_allocate(p, ev.data(), ev.size(), &a);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.error().code, Errc::unsupported);
    EXPECT_STREQ(s.error().msg, "event 'instructions' was written for an Intel PMU; this CPU has an AMD core PMU");
}

TEST(PmuDetect, RdpmcUdFallsBackToRdmsr) {
    SimMachine m = intel_v3(2);
    m.cpu(1).set_rdpmc_ud(true);
    PmuInfo p0, p1;
    m.on(0, [&] { pmu_detect(m, &p0); });
    m.on(1, [&] { pmu_detect(m, &p1); });
    EXPECT_EQ(p0.method, CounterMethod::rdpmc);
    EXPECT_EQ(p1.method, CounterMethod::rdmsr);
    EXPECT_STREQ(p1.method_note, "RDPMC 0x0 raised #UD (invalid opcode)");
    EXPECT_FALSE(p0.same_pmu(p1));  // different read code: different plans
    PmuSession b;
    b.open(m, p1);
    CounterAccess a = b.access(CounterKind::gp, 2);
    EXPECT_EQ(a.kind, CounterAccess::rdmsr);
    EXPECT_EQ(a.index, 0xC3u);
    EXPECT_EQ(a.width, 48);
    a = b.access(CounterKind::fixed, 1);
    EXPECT_EQ(a.kind, CounterAccess::rdmsr);
    EXPECT_EQ(a.index, 0x30Au);
    b.open(m, p0);
    a = b.access(CounterKind::fixed, 1);
    EXPECT_EQ(a.kind, CounterAccess::rdpmc);
    EXPECT_EQ(a.index, 0x40000001u);
    a = b.access(CounterKind::none, 0);
    EXPECT_EQ(a.kind, CounterAccess::rdtsc);
    EXPECT_EQ(a.width, 64);

    // Reads through RDMSR count the same.
    Bench t(m, 1, "INST_RETIRED.ANY,branches");
    t.allocate();
    ASSERT_TRUE(t.save().ok());
    ASSERT_TRUE(t.program(0).ok());
    ASSERT_TRUE(t.start().ok());
    t.c().instructions(12345);
    t.c().event(0xC4, 0x00, 77);
    ASSERT_TRUE(t.stop().ok());
    t.c().clear_log();
    EXPECT_EQ(t.read_event(0), 12345u);
    EXPECT_EQ(t.read_event(1), 77u);
    std::vector<std::string> reads;
    for (const LogEntry& e : t.c().log()) reads.push_back(std::string(access_name(e.kind)) + " " + hex(e.addr));
    EXPECT_EQ(reads, (std::vector<std::string>{"RDMSR 0x309", "RDMSR 0xc1"}));
    EXPECT_TRUE(t.restore().ok());
}

TEST(PmuDetect, HybridCoresDiffer) {
    SimMachine m = intel_hybrid();
    PmuInfo p, e;
    m.on(0, [&] { pmu_detect(m, &p); });
    m.on(4, [&] { pmu_detect(m, &e); });
    EXPECT_EQ(p.core_type, kCoreTypeCore);
    EXPECT_EQ(e.core_type, kCoreTypeAtom);
    EXPECT_EQ(p.gp_mask, 0xFFu);
    EXPECT_EQ(e.gp_mask, 0x3Fu);
    EXPECT_EQ(p.fixed_mask, 0xFu);
    EXPECT_EQ(e.fixed_mask, 0x7u);
    EXPECT_FALSE(p.same_pmu(e));
    PmuInfo p1;
    m.on(1, [&] { pmu_detect(m, &p1); });
    EXPECT_TRUE(p.same_pmu(p1));
    StrBuf b;
    put_pmu_summary(b, p);
    EXPECT_STREQ(b.c_str(),
                 "Intel architectural PMU version 5: PMC0-7 (48 bits), FIXED_CTR0-3 (48 bits), P (cpu_core) core, "
                 "full-width writes, reads with RDPMC");

    // Eight GP events: one group on a P core, two on an E core.
    const char* list = "C4.00,C5.00,2E.4F,2E.41,D0.81,D0.82,D1.01,D1.02";
    Bench bp(m, 0, list), be(m, 4, list);
    bp.allocate();
    be.allocate();
    EXPECT_EQ(bp.alloc.groups.size(), 1u);
    ASSERT_EQ(be.alloc.groups.size(), 2u);
    EXPECT_EQ(be.alloc.groups[0].gp_mask, 0x3Fu);
    EXPECT_EQ(be.alloc.groups[1].gp_mask, 0x3u);
    for (Bench* t : {&bp, &be}) {
        PmuState before = t->c().pmu_state();
        ASSERT_TRUE(t->save().ok());
        for (u32 g = 0; g < t->alloc.groups.size(); ++g) {
            ASSERT_TRUE(t->program(g).ok());
            ASSERT_TRUE(t->start().ok());
            t->c().event(0xD1, 0x02, 5);
            ASSERT_TRUE(t->stop().ok());
            if (t->alloc.group_of[7] == g) EXPECT_EQ(t->read_event(7), 5u);
        }
        EXPECT_TRUE(t->restore().ok());
        EXPECT_EQ(diff_state(before, t->c().pmu_state()), "");
        EXPECT_TRUE(t->c().violations().empty());
    }
    // A cpu_atom event cannot be allocated on a P core.
    Bench bad(m, 0, "cpu_atom/event=0xc0/");
    Allocation a;
    Status s = pmu_allocate(bad.s.info(), bad.ev.data(), bad.ev.size(), &a);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.error().code, Errc::unsupported);
}

// ---------------------------------------------------------------- programming sequences

TEST(PmuProgram, V1UsesEnOnlyAndLegacyWrites) {
    SimMachine m = intel_v1(1);
    Bench t(m, 0, "instructions_retired,core_cycles");
    t.allocate();
    PmuState before = t.c().pmu_state();
    ASSERT_TRUE(t.save().ok());
    EXPECT_TRUE(writes(t.c()).empty());
    ASSERT_TRUE(t.program(0).ok());
    EXPECT_EQ(writes(t.c()), (std::vector<std::string>{"0xc1=0x0", "0x186=0x300c0", "0xc2=0x0", "0x187=0x3003c"}));
    t.c().clear_log();
    t.c().instructions(50);  // programmed but not started: nothing counts
    ASSERT_TRUE(t.start().ok());
    t.c().run(500, {{0xC0, 0x00, 2}});
    ASSERT_TRUE(t.stop().ok());
    t.c().instructions(7);
    EXPECT_EQ(writes(t.c()),
              (std::vector<std::string>{"0x186=0x4300c0", "0x187=0x43003c", "0x186=0x300c0", "0x187=0x3003c"}));
    EXPECT_EQ(t.read_event(0), 1000u);
    EXPECT_EQ(t.read_event(1), 500u);
    Result<OverflowState> o = OverflowState();
    m.on(0, [&] { o = t.b().overflow(); });
    ASSERT_TRUE(o.ok());
    EXPECT_FALSE(o.value().known);  // v1 has no GLOBAL_STATUS
    // control_writes gives generated code the same EN writes.
    PmuWriteList on, off;
    t.b().control_writes(t.ev.data(), t.alloc.groups[0], &on, &off);
    ASSERT_EQ(on.count, 2u);
    EXPECT_EQ(on.w[0].msr, 0x186u);
    EXPECT_EQ(on.w[0].value, 0x4300C0u);
    EXPECT_EQ(on.w[1].msr, 0x187u);
    EXPECT_EQ(on.w[1].value, 0x43003Cu);
    ASSERT_EQ(off.count, 2u);
    EXPECT_EQ(off.w[0].value, 0x300C0u);
    EXPECT_EQ(off.w[1].value, 0x3003Cu);
    t.c().clear_log();
    ASSERT_TRUE(t.restore().ok());
    EXPECT_EQ(writes(t.c()), (std::vector<std::string>{"0xc1=0x0", "0xc2=0x0", "0x186=0x0", "0x187=0x0"}));
    EXPECT_EQ(diff_state(before, t.c().pmu_state()), "");
    EXPECT_TRUE(t.c().violations().empty());
}

TEST(PmuProgram, V1FixedEventsFallBackToGpCounters) {
    SimMachine m = intel_v1(1);
    Bench t(m, 0, "INST_RETIRED.ANY,cycles:u");
    t.allocate();
    ASSERT_EQ(t.alloc.groups.size(), 1u);
    const Assignment* a = t.alloc.find(0);
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(a->kind, CounterKind::gp);
    EXPECT_TRUE(a->gp_fallback);
    ASSERT_TRUE(t.save().ok());
    ASSERT_TRUE(t.program(0).ok());
    // cycles:u counts at CPL > 0 only: USR without OS.
    EXPECT_EQ(writes(t.c()), (std::vector<std::string>{"0xc1=0x0", "0x186=0x300c0", "0xc2=0x0", "0x187=0x1003c"}));
    ASSERT_TRUE(t.restore().ok());
}

TEST(PmuProgram, V2FixedAndGpWithGlobalCtrl) {
    SimMachine m = intel_v2(1);
    Bench t(m, 0, "INST_RETIRED.ANY,cycles,ref-cycles,branches");
    t.allocate();
    ASSERT_EQ(t.alloc.groups.size(), 1u);
    PmuState before = t.c().pmu_state();
    ASSERT_TRUE(t.save().ok());
    ASSERT_TRUE(t.program(0).ok());
    // GLOBAL_CTRL powers up with the GP enables set (SDM §20.2.2): cleared first.
    EXPECT_EQ(writes(t.c()), (std::vector<std::string>{"0x38f=0x0", "0xc1=0x0", "0x186=0x4300c4", "0x309=0x0",
                                                       "0x30a=0x0", "0x30b=0x0", "0x38d=0x333", "0x390=0x700000001"}));
    t.c().clear_log();
    // EN is set but GLOBAL_CTRL = 0: nothing counts yet.
    t.c().run(10, {{0xC0, 0x00, 1}, {0xC4, 0x00, 1}});
    t.c().ref_cycles(10);
    ASSERT_TRUE(t.start().ok());
    t.c().run(100, {{0xC0, 0x00, 2}, {0xC4, 0x00, 1}});
    t.c().ref_cycles(50);
    ASSERT_TRUE(t.stop().ok());
    t.c().run(10, {{0xC0, 0x00, 1}});
    EXPECT_EQ(writes(t.c()), (std::vector<std::string>{"0x38f=0x700000001", "0x38f=0x0"}));
    EXPECT_EQ(t.read_event(0), 200u);
    EXPECT_EQ(t.read_event(1), 100u);
    EXPECT_EQ(t.read_event(2), 50u);
    EXPECT_EQ(t.read_event(3), 100u);
    PmuWriteList on, off;
    t.b().control_writes(t.ev.data(), t.alloc.groups[0], &on, &off);
    ASSERT_EQ(on.count, 1u);
    EXPECT_EQ(on.w[0].msr, 0x38Fu);
    EXPECT_EQ(on.w[0].value, 0x700000001u);
    ASSERT_EQ(off.count, 1u);
    EXPECT_EQ(off.w[0].value, 0u);
    t.c().clear_log();
    ASSERT_TRUE(t.restore().ok());
    // Disable (GLOBAL_CTRL, EN), counters, controls, GLOBAL_CTRL last.
    EXPECT_EQ(writes(t.c()),
              (std::vector<std::string>{"0x38f=0x0", "0x186=0x300c4", "0xc1=0x0", "0x309=0x0", "0x30a=0x0", "0x30b=0x0",
                                        "0x186=0x0", "0x38d=0x0", "0x38f=0x3"}));
    EXPECT_EQ(diff_state(before, t.c().pmu_state()), "");
    EXPECT_TRUE(t.c().violations().empty());
}

TEST(PmuProgram, V2ConroeQuirkGivesThreeFixedCounters) {
    SimMachine m = intel_v2_conroe(1);
    Bench t(m, 0, "INST_RETIRED.ANY,ref-cycles");
    t.allocate();
    EXPECT_EQ(t.alloc.groups[0].fixed_mask, 0x5u);
    ASSERT_TRUE(t.save().ok());
    ASSERT_TRUE(t.program(0).ok());
    ASSERT_TRUE(t.start().ok());
    t.c().instructions(31);
    t.c().ref_cycles(9);
    ASSERT_TRUE(t.stop().ok());
    EXPECT_EQ(t.read_event(0), 31u);
    EXPECT_EQ(t.read_event(1), 9u);
    ASSERT_TRUE(t.restore().ok());
}

TEST(PmuProgram, V2UnderHypervisorWithoutFixedCountersFallsBack) {
    // A v2 vPMU with CPUID.0AH:EDX = 0 and no PDCM: no fixed counters are assumed under
    // a hypervisor (the Core 2 rule applies to bare metal), and writes are legacy.
    IntelCpuidSpec sp;
    sp.max_leaf = 0xD;
    sp.pdcm = false;
    sp.hypervisor = true;
    sp.leaf_0a = {0x07300202, 0, 0, 0};
    SimMachine m = intel_machine(sp, {1, 1, 1});
    Bench t(m, 0, "INST_RETIRED.ANY,cycles");
    EXPECT_EQ(t.s.info().fixed_mask, 0u);
    EXPECT_FALSE(t.s.info().full_width_writes);
    EXPECT_FALSE(t.s.info().caps.perf_caps_read);
    t.allocate();
    ASSERT_EQ(t.alloc.groups.size(), 1u);
    EXPECT_EQ(t.alloc.groups[0].gp_mask, 0x3u);
    EXPECT_EQ(t.alloc.groups[0].fixed_mask, 0u);
    ASSERT_TRUE(t.save().ok());
    ASSERT_TRUE(t.program(0).ok());
    EXPECT_EQ(writes(t.c()), (std::vector<std::string>{"0x38f=0x0", "0xc1=0x0", "0x186=0x4300c0", "0xc2=0x0",
                                                       "0x187=0x43003c", "0x390=0x3"}));
    ASSERT_TRUE(t.start().ok());
    t.c().run(40, {{0xC0, 0x00, 3}});
    ASSERT_TRUE(t.stop().ok());
    EXPECT_EQ(t.read_event(0), 120u);
    EXPECT_EQ(t.read_event(1), 40u);
    ASSERT_TRUE(t.restore().ok());
}

TEST(PmuProgram, V5NonContiguousFixedCounters) {
    SimMachine m = intel_v5(0b1001, 0, 1);  // FIXED_CTR0 and FIXED_CTR3 only
    Bench t(m, 0, "INST_RETIRED.ANY,TOPDOWN.SLOTS,cycles");
    t.allocate();
    ASSERT_EQ(t.alloc.groups.size(), 1u);
    EXPECT_EQ(t.alloc.groups[0].fixed_mask, 0x9u);
    const Assignment* cyc = t.alloc.find(2);
    ASSERT_NE(cyc, nullptr);
    EXPECT_EQ(cyc->kind, CounterKind::gp);  // fixed counter 1 is absent
    EXPECT_TRUE(cyc->gp_fallback);
    PmuState before = t.c().pmu_state();
    ASSERT_TRUE(t.save().ok());
    ASSERT_TRUE(t.program(0).ok());
    // Full-width writes (PERF_CAPABILITIES 0x2000): IA32_A_PMC0 = 0x4C1.
    EXPECT_EQ(writes(t.c()), (std::vector<std::string>{"0x38f=0x0", "0x4c1=0x0", "0x186=0x43003c", "0x309=0x0",
                                                       "0x30c=0x0", "0x38d=0x3003", "0x390=0x900000001"}));
    ASSERT_TRUE(t.start().ok());
    t.c().run(25, {{0xC0, 0x00, 4}});
    t.c().slots(99);
    ASSERT_TRUE(t.stop().ok());
    EXPECT_EQ(t.read_event(0), 100u);
    EXPECT_EQ(t.read_event(1), 99u);
    EXPECT_EQ(t.read_event(2), 25u);
    ASSERT_TRUE(t.restore().ok());
    EXPECT_EQ(diff_state(before, t.c().pmu_state()), "");
}

TEST(PmuProgram, V6Leaf23Bitmaps) {
    SimMachine m = intel_v6(0b1010, 0b101, 1);  // PMC1, PMC3; FIXED_CTR0, FIXED_CTR2
    Bench t(m, 0, "branches,branch-misses,instructions,cycles");
    t.allocate();
    ASSERT_EQ(t.alloc.groups.size(), 2u);  // cycles falls back to a GP counter: three GP events, two counters
    for (const CounterGroup& g : t.alloc.groups) EXPECT_EQ(g.gp_mask & ~0xAu, 0u);
    ASSERT_TRUE(t.save().ok());
    std::vector<u64> counts(4, ~u64(0));
    for (u32 g = 0; g < 2; ++g) {
        t.c().clear_log();
        ASSERT_TRUE(t.program(g).ok());
        ASSERT_TRUE(t.start().ok());
        t.c().run(10, {{0xC0, 0x00, 1}, {0xC4, 0x00, 2}, {0xC5, 0x00, 3}});
        ASSERT_TRUE(t.stop().ok());
        for (u32 e = 0; e < 4; ++e)
            if (t.alloc.group_of[e] == g) counts[e] = t.read_event(e);
        for (const LogEntry& e : t.c().log())
            if (e.kind == Access::wrmsr) {
                EXPECT_NE(e.addr, 0x4C1u) << "PMC0 does not exist";
                EXPECT_NE(e.addr, 0x186u) << "PERFEVTSEL0 does not exist";
            }
    }
    EXPECT_EQ(counts, (std::vector<u64>{20, 30, 10, 10}));
    ASSERT_TRUE(t.restore().ok());
    EXPECT_TRUE(t.c().violations().empty());
}

TEST(PmuProgram, V6Leaf23UnsupportedArchitecturalEventIsRefused) {
    IntelCpuidSpec sp;
    sp.max_leaf = 0x23;
    sp.leaf_0a = {0x07300806, 0, 0x7, 0x00008603};
    sp.leaf_23 = true;
    sp.leaf_23_sub[0] = {0xB, 0x3, 0x8, 0};  // sub-leaves 0, 1, 3
    sp.leaf_23_sub[1] = {0xFF, 0x7, 0, 0};
    sp.leaf_23_sub[3] = {0x1FEF, 0, 0, 0};  // bit 4 (LLC misses) clear
    SimMachine m = intel_machine(sp, {1, 1, 1}, 0x2000);
    PmuInfo p;
    pmu_detect(m, &p);
    Vec<Event> ev = events("llc_misses");
    Allocation a;
    Status s = pmu_allocate(p, ev.data(), ev.size(), &a);
    ASSERT_FALSE(s.ok());
    EXPECT_STREQ(s.error().msg,
                 "event 'llc_misses' (LLC Misses, 2E.41) is not available on this CPU: CPUID.23H.3:EAX[4] = 0");
    ev = events("llc_references,2E.41");  // raw encodings are not checked against the bitmap
    EXPECT_TRUE(pmu_allocate(p, ev.data(), ev.size(), &a).ok());
}

TEST(PmuProgram, MultiplexedGroupsOneAfterAnother) {
    SimMachine m = intel_v3(2);
    // Six GP events on four counters: two groups.
    Bench t(m, 1, "C4.00,C5.00,2E.4F,2E.41,D0.81,D0.82");
    t.allocate();
    ASSERT_EQ(t.alloc.groups.size(), 2u);
    EXPECT_EQ(t.alloc.groups[0].gp_mask, 0xFu);
    EXPECT_EQ(t.alloc.groups[1].gp_mask, 0x3u);
    PmuState before = t.c().pmu_state();
    ASSERT_TRUE(t.save().ok());
    static const u16 sel[6][2] = {{0xC4, 0}, {0xC5, 0}, {0x2E, 0x4F}, {0x2E, 0x41}, {0xD0, 0x81}, {0xD0, 0x82}};
    std::vector<u64> got(6, 0);
    for (u32 g = 0; g < 2; ++g) {
        ASSERT_TRUE(t.program(g).ok());
        ASSERT_TRUE(t.start().ok());
        for (u32 e = 0; e < 6; ++e) t.c().event(sel[e][0], sel[e][1], 100 * (e + 1) + g);
        ASSERT_TRUE(t.stop().ok());
        for (u32 e = 0; e < 6; ++e)
            if (t.alloc.group_of[e] == g) got[e] = t.read_event(e);
        if (g == 1) {
            // The first group's counters PMC2/PMC3 were released when the second was programmed.
            EXPECT_EQ(t.c().peek(0x188), 0u);
            EXPECT_EQ(t.c().peek(0x189), 0u);
        }
    }
    EXPECT_EQ(got, (std::vector<u64>{100, 200, 300, 400, 501, 601}));
    ASSERT_TRUE(t.restore().ok());
    EXPECT_EQ(diff_state(before, t.c().pmu_state()), "");
    EXPECT_TRUE(t.c().violations().empty());
    // The other CPU was never touched.
    EXPECT_TRUE(m.cpu(0).writes().empty());
}

// ---------------------------------------------------------------- widths, presets, overflow

TEST(PmuWidth, FullWidthPresetNearTheTopWraps) {
    SimMachine m = intel_v4_goldmont_plus(1);
    Bench t(m, 0, "INST_RETIRED.ANY_P,INST_RETIRED.ANY");
    t.allocate();
    const u64 top = (u64(1) << 48);
    u64 presets[2] = {top - 5, top - 3};
    ASSERT_TRUE(t.save().ok());
    ASSERT_TRUE(t.program(0, presets).ok());
    EXPECT_EQ(writes(t.c()), (std::vector<std::string>{"0x38f=0x0", "0x4c1=0xfffffffffffb", "0x186=0x4300c0",
                                                       "0x309=0xfffffffffffd", "0x38d=0x3", "0x390=0x100000001"}));
    EXPECT_EQ(t.c().peek(0xC1), top - 5);
    ASSERT_TRUE(t.start().ok());
    t.c().instructions(10);
    ASSERT_TRUE(t.stop().ok());
    EXPECT_EQ(t.read_event(0), 5u);
    EXPECT_EQ(t.read_event(1), 7u);
    EXPECT_EQ(pmu_delta(top - 5, 5, 48), 10u);
    EXPECT_EQ(pmu_delta(top - 3, 7, 48), 10u);
    Result<OverflowState> o = OverflowState();
    m.on(0, [&] { o = t.b().overflow(); });
    ASSERT_TRUE(o.ok());
    EXPECT_TRUE(o.value().known);
    EXPECT_EQ(o.value().gp, 0x1u);
    EXPECT_EQ(o.value().fixed, 0x1u);
    EXPECT_EQ(t.c().peek(0x38E), 0x100000001u);
    t.c().clear_log();
    Status cl;
    m.on(0, [&] { cl = t.b().clear_overflow(); });
    ASSERT_TRUE(cl.ok());
    EXPECT_EQ(writes(t.c()), (std::vector<std::string>{"0x390=0x100000001"}));  // STATUS_RESET (v4)
    EXPECT_EQ(t.c().peek(0x38E), 0u);
    ASSERT_TRUE(t.restore().ok());
}

TEST(PmuWidth, LegacyWritesPresetWithinTheRules) {
    SimMachine m = intel_v3(2, 0);  // PDCM with PERF_CAPABILITIES = 0: no full-width writes
    Bench t(m, 0, "INST_RETIRED.ANY_P");
    t.allocate();
    EXPECT_FALSE(t.s.info().full_width_writes);
    ASSERT_TRUE(t.save().ok());
    const u64 top = u64(1) << 48;
    // Within 2^31 of the top: a sign-extended 32-bit write reproduces it.
    u64 p = top - 5;
    ASSERT_TRUE(t.program(0, &p).ok());
    EXPECT_EQ(writes(t.c()),
              (std::vector<std::string>{"0x38f=0x0", "0xc1=0xfffffffffffb", "0x186=0x4300c0", "0x390=0x1"}));
    EXPECT_EQ(t.c().peek(0xC1), top - 5);
    ASSERT_TRUE(t.start().ok());
    t.c().instructions(9);
    ASSERT_TRUE(t.stop().ok());
    EXPECT_EQ(t.read_event(0), 4u);
    EXPECT_EQ(t.c().peek(0x38E), 0x1u);  // GLOBAL_STATUS.PMC0 overflow
    // The lowest and highest legacy presets.
    u64 lo = 0x7FFFFFFF, hi = top - 0x80000000;
    EXPECT_TRUE(t.program(0, &lo).ok());
    EXPECT_EQ(t.c().peek(0xC1), lo);
    EXPECT_TRUE(t.program(0, &hi).ok());
    EXPECT_EQ(t.c().peek(0xC1), hi);
    // Values a legacy write cannot produce are refused before any write.
    t.c().clear_log();
    for (u64 bad : {u64(0x80000000), u64(1) << 32, top - 0x80000001}) {
        Status s = t.program(0, &bad);
        ASSERT_FALSE(s.ok());
        EXPECT_EQ(s.error().code, Errc::unsupported);
    }
    u64 bad = u64(1) << 32;
    EXPECT_STREQ(t.program(0, &bad).error().msg,
                 "preset 0x100000000 cannot be written to PMC0: without full-width writes "
                 "(IA32_PERF_CAPABILITIES.FW_WRITE[13] = 0) a counter write is 32 bits sign-extended, so a preset "
                 "must be below 0x80000000 or at least 0xFFFF80000000");
    bad = top;
    EXPECT_STREQ(t.program(0, &bad).error().msg, "preset 0x1000000000000 does not fit the 48-bit counter PMC0");
    EXPECT_TRUE(writes(t.c()).empty());
    ASSERT_TRUE(t.restore().ok());
}

TEST(PmuWidth, FortyBitCountersWrapAtFortyBits) {
    SimMachine m = intel_v2(1);  // 40-bit GP and fixed counters, legacy writes
    Bench t(m, 0, "branches,INST_RETIRED.ANY");
    t.allocate();
    const u64 top = u64(1) << 40;
    u64 presets[2] = {top - 2, top - 1};
    ASSERT_TRUE(t.save().ok());
    ASSERT_TRUE(t.program(0, presets).ok());
    EXPECT_EQ(t.c().peek(0xC1), top - 2);
    EXPECT_EQ(t.c().peek(0x309), top - 1);
    ASSERT_TRUE(t.start().ok());
    t.c().event(0xC4, 0, 3);
    t.c().instructions(3);
    ASSERT_TRUE(t.stop().ok());
    EXPECT_EQ(t.read_event(0), 1u);
    EXPECT_EQ(t.read_event(1), 2u);
    EXPECT_EQ(pmu_delta(top - 2, 1, 40), 3u);
    Result<OverflowState> o = OverflowState();
    m.on(0, [&] { o = t.b().overflow(); });
    EXPECT_EQ(o.value().gp, 1u);
    EXPECT_EQ(o.value().fixed, 1u);
    t.c().clear_log();
    ASSERT_TRUE(t.restore().ok());
    // v2 clears through IA32_PERF_GLOBAL_OVF_CTRL (0x390) when restoring.
    std::vector<std::string> w = writes(t.c());
    EXPECT_NE(std::find(w.begin(), w.end(), "0x390=0x100000001"), w.end());
    EXPECT_EQ(t.c().peek(0x38E), 0u);
}

// ---------------------------------------------------------------- rules and restore

TEST(PmuRestore, FirmwareStateIsDisabledBeforeCounterWritesAndRestoredExactly) {
    SimMachine m = intel_v4_goldmont_plus(1);
    SimCpu& c = m.cpu(0);
    // What firmware (or an OS before a kexec) might leave: PMC0 counting cycles with
    // EN set, FIXED_CTR0 enabled, both enabled in GLOBAL_CTRL, an overflow flag set.
    c.poke(0x186, 0x43003C);
    c.poke(0xC1, 0x123456789Aull);
    c.poke(0x309, 0x77);
    c.poke(0x38D, 0x3);
    c.poke(0x38F, 0x100000001ull);
    c.poke(0x38E, 0x2);
    Bench t(m, 0, "branches,INST_RETIRED.ANY");
    t.allocate();
    PmuState before = c.pmu_state();
    ASSERT_TRUE(t.save().ok());
    ASSERT_TRUE(t.program(0).ok());
    EXPECT_EQ(writes(c), (std::vector<std::string>{"0x38f=0x0", "0x186=0x3003c", "0x4c1=0x0", "0x186=0x4300c4",
                                                   "0x38d=0x0", "0x309=0x0", "0x38d=0x3", "0x390=0x100000001"}));
    EXPECT_TRUE(c.violations().empty());
    ASSERT_TRUE(t.start().ok());
    t.c().event(0xC4, 0, 8);
    ASSERT_TRUE(t.stop().ok());
    EXPECT_EQ(t.read_event(0), 8u);
    c.clear_log();
    RestoreReport rep;
    ASSERT_TRUE(t.restore(&rep).ok());
    EXPECT_EQ(writes(c), (std::vector<std::string>{"0x38f=0x0", "0x186=0x300c4", "0x4c1=0x123456789a", "0x309=0x77",
                                                   "0x186=0x43003c", "0x38f=0x100000001"}));
    EXPECT_EQ(rep.gp_counters_inexact, 0u);
    EXPECT_EQ(rep.status_bits_lost, 0u);
    EXPECT_EQ(diff_state(before, c.pmu_state()), "");
    EXPECT_TRUE(c.violations().empty());
}

TEST(PmuRestore, OverflowFlagsComeBackOnV4AndAreReportedOnV3) {
    {
        SimMachine m = intel_v4_goldmont_plus(1);
        m.cpu(0).poke(0x38E, 0x1);  // PMC0 overflow flag set before pmulab
        Bench t(m, 0, "branches");
        t.allocate();
        PmuState before = t.c().pmu_state();
        ASSERT_TRUE(t.save().ok());
        ASSERT_TRUE(t.program(0).ok());
        EXPECT_EQ(t.c().peek(0x38E), 0u);  // cleared for the measurement
        t.c().clear_log();
        RestoreReport rep;
        ASSERT_TRUE(t.restore(&rep).ok());
        std::vector<std::string> w = writes(t.c());
        EXPECT_NE(std::find(w.begin(), w.end(), "0x391=0x1"), w.end());  // STATUS_SET
        EXPECT_EQ(rep.status_bits_lost, 0u);
        EXPECT_EQ(diff_state(before, t.c().pmu_state()), "");
    }
    {
        SimMachine m = intel_v3(2);
        m.cpu(0).poke(0x38E, 0x1);
        Bench t(m, 0, "branches");
        t.allocate();
        ASSERT_TRUE(t.save().ok());
        ASSERT_TRUE(t.program(0).ok());
        RestoreReport rep;
        ASSERT_TRUE(t.restore(&rep).ok());
        EXPECT_EQ(rep.status_bits_lost, 0x1u);  // v3 cannot set it again
        EXPECT_EQ(t.c().peek(0x38E), 0u);
    }
}

TEST(PmuRestore, LegacyCounterValuesThatCannotBeWrittenBackAreReported) {
    SimMachine m = intel_v3(2, 0);
    m.cpu(0).poke(0xC1, 0x100000005ull);
    Bench t(m, 0, "branches");
    t.allocate();
    ASSERT_TRUE(t.save().ok());
    ASSERT_TRUE(t.program(0).ok());
    RestoreReport rep;
    ASSERT_TRUE(t.restore(&rep).ok());
    EXPECT_EQ(rep.gp_counters_inexact, 0x1u);
    EXPECT_EQ(t.c().peek(0xC1), 5u);  // what a legacy write of the saved value leaves
}

TEST(PmuRestore, AFaultAtEveryWriteRestoresEverything) {
    // Count the writes of a successful program() first, then fail each one in turn.
    auto machine = [] {
        SimMachine m = intel_v4_goldmont_plus(1);
        SimCpu& c = m.cpu(0);
        c.poke(0x186, 0x43003C);
        c.poke(0x187, 0x4300C4);
        c.poke(0xC1, 0x1234);
        c.poke(0xC2, 0xFFFFFFFFFFF0ull);
        c.poke(0x30A, 0x55);
        c.poke(0x38D, 0x30);
        c.poke(0x38F, 0x200000003ull);
        return m;
    };
    const char* list = "branches,branch-misses,INST_RETIRED.ANY,cycles,ref-cycles";
    u64 n = 0;
    {
        SimMachine m = machine();
        Bench t(m, 0, list);
        t.allocate();
        ASSERT_TRUE(t.save().ok());
        ASSERT_TRUE(t.program(0).ok());
        n = t.c().writes().size();
        ASSERT_TRUE(t.restore().ok());
    }
    ASSERT_GE(n, 10u);
    for (u64 k = 1; k <= n; ++k) {
        SimMachine m = machine();
        Bench t(m, 0, list);
        t.allocate();
        PmuState before = t.c().pmu_state();
        ASSERT_TRUE(t.save().ok());
        t.c().fail_nth_wrmsr(k);
        Status s = t.program(0);
        ASSERT_FALSE(s.ok()) << "write " << k;
        EXPECT_EQ(s.error().code, Errc::fault) << "write " << k;
        EXPECT_EQ(s.error().vector, kVectorGP);
        EXPECT_EQ(diff_state(before, t.c().pmu_state()), "") << "write " << k;
        EXPECT_TRUE(t.c().violations().empty()) << "write " << k << ": " << t.c().violations()[0];
        EXPECT_FALSE(t.b().saved()) << "program() restores on failure";
        // The restore after the fault starts by disabling and ends with GLOBAL_CTRL.
        std::vector<LogEntry> w = t.c().writes();
        size_t fault_at = 0;
        while (fault_at < w.size() && !w[fault_at].vector) ++fault_at;
        ASSERT_LT(fault_at, w.size());
        if (fault_at + 1 < w.size()) {
            EXPECT_EQ(w[fault_at + 1].addr, 0x38Fu) << "write " << k;
            EXPECT_EQ(w[fault_at + 1].value, 0u);
            EXPECT_EQ(w.back().addr, 0x38Fu) << "write " << k;
            EXPECT_EQ(w.back().value, 0x200000003u);
        }
    }
}

TEST(PmuRestore, ErrorsNameTheEventAndCounter) {
    SimMachine m = intel_v3(2);
    Bench t(m, 0, "branches,C5.00 MY_MISSES");
    t.allocate();
    ASSERT_TRUE(t.save().ok());
    t.c().fail_wrmsr_to(0x187);
    Status s = t.program(0);
    ASSERT_FALSE(s.ok());
    EXPECT_STREQ(s.error().msg,
                 "programming 'MY_MISSES' on PMC1: WRMSR 0x187 <- 0x4300c5 raised #GP (general protection): the CPU "
                 "rejects this MSR or value");
}

TEST(PmuRestore, AuxMsrsAreSavedProgrammedAndRestored) {
    SimMachine m = intel_v3(2);
    m.cpu(0).define_msr(0x1A6, 0xABC);
    Bench t(m, 0, "B7.01.MSR_RSP0=0x10001 OFFCORE");
    t.allocate();
    PmuState before = t.c().pmu_state();
    ASSERT_TRUE(t.save().ok());
    ASSERT_TRUE(t.program(0).ok());
    EXPECT_EQ(t.c().peek(0x1A6), 0x10001u);
    EXPECT_EQ(writes(t.c()),
              (std::vector<std::string>{"0x38f=0x0", "0xc1=0x0", "0x1a6=0x10001", "0x186=0x4301b7", "0x390=0x1"}));
    ASSERT_TRUE(t.restore().ok());
    EXPECT_EQ(t.c().peek(0x1A6), 0xABCu);
    EXPECT_EQ(diff_state(before, t.c().pmu_state()), "");

    // Without the MSR the save fails before any write.
    SimMachine m2 = intel_v3(2);
    Bench t2(m2, 0, "B7.01.MSR_RSP0=0x10001");
    t2.allocate();
    Status s = t2.save();
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.error().code, Errc::unsupported);
    EXPECT_STREQ(s.error().msg,
                 "model-specific MSR 0x1A6 (programmed with the event) cannot be used on this CPU: RDMSR 0x1a6 raised "
                 "#GP (general protection): the CPU does not implement this MSR");
    EXPECT_TRUE(writes(t2.c()).empty());
}

TEST(PmuRestore, SessionRestoresOnDestructionAndCloseIsIdempotent) {
    SimMachine m = intel_v3(2);
    PmuState before = m.cpu(0).pmu_state();
    {
        Bench t(m, 0, "branches,cycles");
        t.allocate();
        ASSERT_TRUE(t.save().ok());
        ASSERT_TRUE(t.program(0).ok());
        ASSERT_TRUE(t.start().ok());
        EXPECT_NE(diff_state(before, m.cpu(0).pmu_state()), "");
        // Destruction restores (on the current CPU, 0 here).
    }
    EXPECT_EQ(diff_state(before, m.cpu(0).pmu_state()), "");
    Bench t(m, 0, "branches");
    t.allocate();
    ASSERT_TRUE(t.save().ok());
    ASSERT_TRUE(t.program(0).ok());
    ASSERT_TRUE(t.restore().ok());
    m.cpu(0).clear_log();
    ASSERT_TRUE(t.restore().ok());
    EXPECT_TRUE(writes(m.cpu(0)).empty());
}

TEST(PmuRestore, MisuseIsAnInternalError) {
    SimMachine m = intel_v3(2);
    Bench t(m, 0, "branches");
    t.allocate();
    Status s = t.program(0);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.error().code, Errc::internal);
    EXPECT_EQ(t.start().error().code, Errc::internal);
    ASSERT_TRUE(t.save().ok());
    EXPECT_EQ(t.save().error().code, Errc::internal);
    PmuTouch big;
    big.gp = 0x10;  // PMC4 does not exist on this CPU
    PmuSession b;
    b.open(m, t.s.info());
    EXPECT_STREQ(b.save(big).error().msg, "counters PMC4 none requested, but this CPU has PMC0-3 FIXED_CTR0-2");
    ASSERT_TRUE(t.restore().ok());
}

TEST(PmuDetect, PerfCapabilitiesFaultMeansLegacyWrites) {
    // PDCM set but IA32_PERF_CAPABILITIES raises #GP (seen under hypervisors): treated
    // as absent, so counters are written with legacy 32-bit writes.
    SimMachine m = intel_v4_goldmont_plus(1);
    m.cpu(0).fail_rdmsr_to(0x345);
    PmuInfo p;
    pmu_detect(m, &p);
    EXPECT_EQ(p.kind, PmuKind::intel_arch);
    EXPECT_TRUE(p.perf_caps_fault);
    EXPECT_FALSE(p.caps.perf_caps_read);
    EXPECT_FALSE(p.full_width_writes);
    m.cpu(0).clear_faults();
    Bench t(m, 0, "branches");
    t.s.open(m, p);
    t.allocate();
    ASSERT_TRUE(t.save().ok());
    ASSERT_TRUE(t.program(0).ok());
    std::vector<std::string> w = writes(t.c());
    EXPECT_NE(std::find(w.begin(), w.end(), "0xc1=0x0"), w.end());
    EXPECT_EQ(std::find(w.begin(), w.end(), "0x4c1=0x0"), w.end());
    ASSERT_TRUE(t.restore().ok());
}
