// The per-CPU probe (x86/probe.h, pmu_probe) and the pure decoding of it (pmu_decode),
// the lambda adapter for run_on_cpu (run_on), the one grouping helper (group_indices,
// group_by_pmu) and planning without hardware (PmuSession::plan), on simulated CPUs.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "pmu/session.h"
#include "sim/sim_netburst.h"

using namespace pmulab;
using namespace sim;

namespace {

CpuProbe probe_of(SimMachine& m, u32 cpu, ProbeRdpmc rdpmc = ProbeRdpmc::probe) {
    CpuProbe p;
    Status s = run_on(m, cpu, [&] { pmu_probe(m, &p, rdpmc); });
    EXPECT_TRUE(s.ok()) << s.error().msg;
    return p;
}

PmuInfo decode(const CpuProbe& p) {
    PmuInfo info;
    pmu_decode(p, &info);
    return info;
}

// Every field of two infos, strings included (same_pmu leaves the notes out).
void expect_same_info(const PmuInfo& a, const PmuInfo& b) {
    EXPECT_TRUE(a.same_pmu(b));
    EXPECT_EQ(a.version, b.version);
    EXPECT_EQ(a.global_ctrl, b.global_ctrl);
    EXPECT_EQ(a.status_reset, b.status_reset);
    EXPECT_EQ(a.full_width_writes, b.full_width_writes);
    EXPECT_EQ(a.dialect, b.dialect);
    EXPECT_EQ(a.hypervisor, b.hypervisor);
    EXPECT_STREQ(a.vendor_string, b.vendor_string);
    EXPECT_STREQ(a.method_note, b.method_note);
    EXPECT_STREQ(a.absent, b.absent);
}

std::vector<std::vector<u32>> to_std(const Vec<Vec<u32>>& g) {
    std::vector<std::vector<u32>> out;
    for (const Vec<u32>& v : g) out.emplace_back(v.begin(), v.end());
    return out;
}

}  // namespace

TEST(CpuProbe, DecodingIsPureAndMatchesDetection) {
    SimMachine m = intel_v4_goldmont_plus(2);
    CpuProbe p = probe_of(m, 1);
    // What the probe read on the CPU: PERF_CAPABILITIES (PDCM) and one RDPMC.
    ASSERT_EQ(m.cpu(1).log().size(), 2u);
    EXPECT_EQ(m.cpu(1).log()[0].addr, 0x345u);
    EXPECT_EQ(m.cpu(1).log()[1].kind, Access::rdpmc);
    EXPECT_TRUE(m.cpu(0).log().empty());
    EXPECT_TRUE(p.perf_caps.attempted && p.perf_caps.ok);
    EXPECT_FALSE(p.misc_enable.attempted);
    EXPECT_TRUE(p.rdpmc.attempted && p.rdpmc.ok);
    EXPECT_EQ(p.rdpmc_index, 0u);

    // Decoding touches nothing and gives the same info every time, equal to pmu_detect's.
    usize before = m.cpu(0).log().size() + m.cpu(1).log().size();
    PmuInfo a = decode(p), b = decode(p);
    EXPECT_EQ(m.cpu(0).log().size() + m.cpu(1).log().size(), before);
    expect_same_info(a, b);
    PmuInfo d;
    m.on(1, [&] { pmu_detect(m, &d); });
    expect_same_info(a, d);
    EXPECT_EQ(a.kind, PmuKind::intel_arch);
    EXPECT_EQ(a.method, CounterMethod::rdpmc);
    EXPECT_TRUE(a.full_width_writes);
}

TEST(CpuProbe, FaultingPerfCapabilitiesIsAbsent) {
    SimMachine m = intel_v4_goldmont_plus(1);
    CpuProbe p = probe_of(m, 0);
    PmuInfo with = decode(p);
    ASSERT_TRUE(with.caps.perf_caps_read);
    ASSERT_TRUE(with.full_width_writes);
    // PDCM set, but RDMSR 0x345 faults (what some hypervisors do).
    p.perf_caps = ProbeRead();
    p.perf_caps.set(Result<u64>(msr_fault_error("RDMSR", 0x345, 0, kVectorGP)));
    EXPECT_TRUE(p.perf_caps.faulted());
    PmuInfo without = decode(p);
    EXPECT_TRUE(without.perf_caps_fault);
    EXPECT_FALSE(without.caps.perf_caps_read);
    EXPECT_FALSE(without.full_width_writes);  // legacy 32-bit counter writes then
    EXPECT_EQ(without.kind, PmuKind::intel_arch);
    EXPECT_FALSE(with.same_pmu(without));
}

TEST(CpuProbe, RdpmcUdSelectsRdmsr) {
    SimMachine m = intel_v3(2);
    m.cpu(1).set_rdpmc_ud(true);
    CpuProbe p0 = probe_of(m, 0), p1 = probe_of(m, 1);
    EXPECT_TRUE(p1.rdpmc.faulted());
    EXPECT_EQ(p1.rdpmc.error.vector, kVectorUD);
    PmuInfo i0 = decode(p0), i1 = decode(p1);
    EXPECT_EQ(i0.method, CounterMethod::rdpmc);
    EXPECT_EQ(i1.method, CounterMethod::rdmsr);
    EXPECT_STREQ(i1.method_note, "RDPMC 0x0 raised #UD (invalid opcode)");
    // The same probe with a working RDPMC: the same PMU as CPU 0.
    p1.rdpmc = p0.rdpmc;
    expect_same_info(decode(p1), i0);

    // QEMU TCG: no PMU, RDPMC 0 raises #UD.
    SimMachine q = qemu_tcg_intel(1);
    PmuInfo iq = decode(probe_of(q, 0));
    EXPECT_EQ(iq.kind, PmuKind::none);
    EXPECT_EQ(iq.method, CounterMethod::rdmsr);
    EXPECT_STREQ(iq.method_note, "RDPMC 0x0 raised #UD (invalid opcode)");
}

TEST(CpuProbe, SkippingRdpmcReadsOnlyCpuidAndMsrs) {
    SimMachine m = intel_v3(1);
    CpuProbe p = probe_of(m, 0, ProbeRdpmc::skip);
    for (const LogEntry& e : m.cpu(0).log()) EXPECT_NE(e.kind, Access::rdpmc);
    EXPECT_FALSE(p.rdpmc.attempted);
    PmuInfo i = decode(p);
    EXPECT_EQ(i.kind, PmuKind::intel_arch);
    EXPECT_EQ(i.method, CounterMethod::rdmsr);
    EXPECT_STREQ(i.method_note, "RDPMC was not probed");
}

TEST(CpuProbe, NetBurstMiscEnable) {
    SimMachine m = netburst_p4(1);
    CpuProbe p = probe_of(m, 0);
    ASSERT_TRUE(p.misc_enable.attempted);
    EXPECT_EQ(decode(p).kind, PmuKind::netburst);
    // Firmware cleared IA32_MISC_ENABLE[7]: no counters.
    p.misc_enable.value &= ~(u64(1) << netburst::kMiscEnablePerfMonAvailable);
    PmuInfo off = decode(p);
    EXPECT_EQ(off.kind, PmuKind::none);
    EXPECT_NE(std::string(off.absent).find("IA32_MISC_ENABLE[7]"), std::string::npos) << off.absent;
    // The read faulted: unknown, said so.
    p.misc_enable = ProbeRead();
    p.misc_enable.set(Result<u64>(msr_fault_error("RDMSR", 0x1A0, 0, kVectorGP)));
    PmuInfo fault = decode(p);
    EXPECT_EQ(fault.kind, PmuKind::none);
    EXPECT_EQ(std::string(fault.absent).rfind("NetBurst processor, but RDMSR IA32_MISC_ENABLE (0x1A0) failed", 0), 0u)
        << fault.absent;
}

TEST(CpuProbe, ProbeCpusKeepsUnreachableCpusWithTheirError) {
    SimMachine m = intel_hybrid();
    ASSERT_GE(m.size(), 3u);
    m.cpu(1).set_unreachable();
    Vec<u32> cpus;
    for (u32 i = 0; i < m.size(); ++i) cpus.push(i);
    Vec<ProbedCpu> probed;
    probe_cpus(m, cpus, &probed);
    ASSERT_EQ(probed.size(), cpus.size());
    EXPECT_EQ(m.run_on_cpu_calls(), u64(m.size()));
    EXPECT_FALSE(probed[1].status.ok());
    for (u32 i = 0; i < m.size(); ++i) {
        EXPECT_EQ(probed[i].cpu, i);
        if (i != 1) EXPECT_TRUE(probed[i].status.ok()) << i;
    }
    // One group per PMU (P and E cores differ); the unreachable CPU alone.
    Vec<Vec<u32>> g = group_by_pmu(probed);
    usize members = 0;
    for (const Vec<u32>& k : g) {
        members += k.size();
        for (u32 j : k) EXPECT_TRUE(probed[j].info.same_pmu(probed[k[0]].info) || k.size() == 1);
    }
    EXPECT_EQ(members, probed.size());
    bool alone = false;
    for (const Vec<u32>& k : g) alone |= k.size() == 1 && k[0] == 1;
    EXPECT_TRUE(alone);
}

TEST(CpuProbe, GroupIndicesKeepsFirstSeenOrder) {
    int key[] = {3, 1, 3, 2, 1, 3};
    Vec<Vec<u32>> g = group_indices(6, [&](usize i, usize j) { return key[i] == key[j]; });
    EXPECT_EQ(to_std(g), (std::vector<std::vector<u32>>{{0, 2, 5}, {1, 4}, {3}}));
    EXPECT_TRUE(group_indices(0, [](usize, usize) { return true; }).empty());
}

TEST(RunOn, RunsTheLambdaOnTheCpuByReference) {
    SimMachine m = intel_v3(4);
    u32 where = 99;
    int calls = 0;
    Status s = run_on(m, 2, [&] {
        where = m.current_cpu();
        ++calls;
    });
    ASSERT_TRUE(s.ok());
    EXPECT_EQ(where, 2u);
    EXPECT_EQ(calls, 1);
    // A named callable works too, and so does cpu_call for other runners.
    auto count = [&] { ++calls; };
    CpuCall c = cpu_call(count);
    c.fn(c.ctx);
    EXPECT_EQ(calls, 2);
    m.cpu(3).set_unreachable();
    EXPECT_FALSE(run_on(m, 3, count).ok());
    EXPECT_EQ(calls, 2);
}

TEST(PmuSessionPlan, PlanningBindsTheBackendWithoutHardware) {
    SimMachine m = intel_v3(1);
    PmuInfo info;
    pmu_detect(m, &info);
    usize before = m.cpu(0).log().size();
    PmuSession s;
    s.plan(info);
    ASSERT_NE(s.backend(), nullptr);
    CounterAccess a = s.access(CounterKind::gp, 1);
    EXPECT_EQ(a.kind, CounterAccess::rdpmc);
    EXPECT_EQ(a.index, 1u);
    // Anything that would touch the CPU is refused; close has nothing to restore.
    Status st = s.start();
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.error().code, Errc::internal);
    EXPECT_FALSE(s.read(CounterKind::gp, 0).ok());
    EXPECT_FALSE(s.saved());
    EXPECT_TRUE(s.close().ok());
    EXPECT_EQ(m.cpu(0).log().size(), before);
    EXPECT_TRUE(m.cpu(0).writes().empty());
}
