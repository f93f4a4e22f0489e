// `run --events energy-*` (commands/run_energy.cpp) on simulated machines: joules per
// iteration as the energy model gives them, within the update quantisation computed from
// the model; the 32-bit wrap; a run too short; one CPU per package; the refusals.
#include <gtest/gtest.h>

#include <cmath>

#include "support/sim_cmd.h"
#include "support/sim_measure.h"
#include "support/test_platform.h"

using namespace pmulab;
using namespace sim;
using simm::Cmd;
using simm::run_line;
using simm::SimPlatform;

namespace {

// The model's machines with time passing between two RDTSCs outside measured code, as
// pmulab-sim builds them (build_sim_machine), and counters that update every 50000 TSC
// ticks instead of every 1 ms (1 GHz here): the same rule, 20 times less to execute.
constexpr u64 kInterval = 50000;
SimMachine ticking(SimMachine m) {
    for (u32 i = 0; i < m.size(); ++i) {
        m.cpu(i).set_rdtsc_step(3);
        m.cpu(i).set_rapl_interval(kInterval);
    }
    return m;
}

double value_of(const pmutest::Json& r) {
    const pmutest::Json& f = r["fraction"];
    return std::stod(f[0].s()) / std::stod(f[1].s());
}

// add_indep: 8 instructions and 8 cycles (TSC ticks) per iteration. The bound: each of the
// two medians' runs lags the true energy by less than one update interval's energy at its
// start and at its end, plus one unit of the floor, over the record's iterations.
void expect_model_value(const SimCpu& c, const pmutest::Json& r, unsigned domain, unsigned esu) {
    const double want = double(c.rapl().energy_pj(domain, 8, 8)) * 1e-12;
    const u64 I = c.rapl().interval_ticks();
    const double per_interval = double(c.rapl().energy_pj(domain, I, I)) * 1e-12;
    const double bound = 2 * (per_interval + std::ldexp(1.0, -int(esu))) / double(r["iterations"].u());
    EXPECT_NEAR(value_of(r), want, bound) << r["event"].s();
    EXPECT_LE(bound, want * 0.041) << "the rule keeps the quantisation within 2 % + 2 %: " << r["event"].s();
    EXPECT_EQ(r["unit"].s(), "J / iteration");
    EXPECT_EQ(r["energy_unit_exp"].u(), esu);
    EXPECT_GE(r["updates"].u(), 100u);
    EXPECT_GE(r["units"].u(), 100u);
    EXPECT_EQ(r["too_short"].b, false);
}

const char kRun[] = "--json run --bench add_indep --reps 3 --warmup 1 --events ";

// The result records of `run ... --events EVENTS` on `m` (exit status 0).
std::vector<pmutest::Json> energy_results(SimMachine& m, const char* events) {
    SimPlatform p(m);
    Cmd c = run_line(p, std::string(kRun) + events);
    EXPECT_EQ(c.status, 0) << c.out;
    return simm::results(c);
}

}  // namespace

TEST(RunEnergy, SkylakeClientJoulesPerIterationFromTheModel) {
    SimMachine m = ticking(intel_skylake(2));
    std::vector<pmutest::Json> rs = energy_results(m, "energy-pkg,energy-cores,energy-dram,energy-psys");
    ASSERT_EQ(rs.size(), 4u);
    const char* names[] = {"energy-pkg", "energy-cores", "energy-dram", "energy-psys"};
    const unsigned domains[] = {0, 1, 3, 4};
    for (unsigned i = 0; i < 4; ++i) {
        EXPECT_EQ(rs[i]["event"].s(), names[i]);
        EXPECT_EQ(rs[i]["energy_scope"].s(), "package");
        EXPECT_EQ(rs[i]["loop_rule"].s(), "auto");
        expect_model_value(m.cpu(0), rs[i], domains[i], 14);
    }
    EXPECT_EQ(rs[0]["energy_msr"].s(), "0x611");
    EXPECT_EQ(rs[0]["counter"].s(), "RAPL_PKG");
}

TEST(RunEnergy, SandyBridgeClientGpu) {
    SimMachine m = ticking(intel_v3(1));  // 06_2AH: 2^-16 J units
    std::vector<pmutest::Json> rs = energy_results(m, "energy-gpu");
    ASSERT_EQ(rs.size(), 1u);
    const pmutest::Json& r = rs[0];
    EXPECT_EQ(r["energy_msr"].s(), "0x641");
    expect_model_value(m.cpu(0), r, 2, 16);
}

TEST(RunEnergy, IceLakeServerDramCountsInItsFixedUnit) {
    SimMachine m = ticking(with_tsc_leaf15(intel_icelake_server(1), {2, 160, 25000000, 0}));
    std::vector<pmutest::Json> rs = energy_results(m, "energy-dram,energy-pkg");
    ASSERT_EQ(rs.size(), 2u);
    expect_model_value(m.cpu(0), rs[0], 3, 16);  // 2^-16 J, not the POWER_UNIT's 2^-14
    expect_model_value(m.cpu(0), rs[1], 0, 14);
}

TEST(RunEnergy, Zen4PackageAndCoreWithOtherEvents) {
    SimMachine m = ticking(amd_zen4(1));
    std::vector<pmutest::Json> rs = energy_results(m, "instructions,energy-pkg,energy-core");
    ASSERT_EQ(rs.size(), 3u);
    EXPECT_EQ(rs[0]["event"].s(), "instructions");
    EXPECT_EQ(rs[0]["per_iteration"].s(), "8.00");
    expect_model_value(m.cpu(0), rs[1], 0, 16);
    EXPECT_EQ(rs[2]["event"].s(), "energy-core");
    EXPECT_EQ(rs[2]["energy_scope"].s(), "core");
    EXPECT_EQ(rs[2]["energy_msr"].s(), "0xc001029a");
    expect_model_value(m.cpu(0), rs[2], 1, 16);
}

TEST(RunEnergy, WrapOfThe32BitCounterDuringAMeasuredRun) {
    const std::string line = std::string(kRun) + "energy-pkg --raw";
    SimMachine a = ticking(intel_skylake(1));
    SimPlatform pa(a);
    Cmd ca = run_line(pa, line);
    ASSERT_EQ(ca.status, 0) << ca.out;
    const u64 total = a.cpu(0).peek(0x611);  // units since reset, the measured runs last
    const pmutest::Json ra = simm::results(ca).at(0);
    const u64 last = ra["long"]["counts"].u_list().back();
    ASSERT_GT(total, last);
    // The same machine with the counter started so that it wraps in the middle of the last
    // long run: every count and value the same, and the counter ends past 2^32.
    SimMachine b = ticking(intel_skylake(1));
    const u64 start = (u64(1) << 32) - (total - last / 2);
    b.cpu(0).poke(0x611, start);
    SimPlatform pb(b);
    Cmd cb = run_line(pb, line);
    ASSERT_EQ(cb.status, 0) << cb.out;
    const pmutest::Json rb = simm::results(cb).at(0);
    EXPECT_EQ(b.cpu(0).peek(0x611), last / 2) << "wrapped once";
    EXPECT_EQ(rb["long"]["counts"].u_list(), ra["long"]["counts"].u_list());
    EXPECT_EQ(rb["short"]["counts"].u_list(), ra["short"]["counts"].u_list());
    EXPECT_EQ(rb["per_iteration"].s(), ra["per_iteration"].s());
}

TEST(RunEnergy, TooShortRunHasNoValue) {
    SimMachine m = ticking(intel_skylake(1));
    SimPlatform p(m);
    Cmd c = run_line(p, std::string(kRun) + "energy-pkg --loop 10");
    ASSERT_EQ(c.status, 0) << c.out;
    const pmutest::Json r = simm::results(c).at(0);
    EXPECT_TRUE(r["too_short"].b);
    EXPECT_EQ(r["loop_rule"].s(), "given");
    EXPECT_EQ(r["updates"].u(), 0u);  // 100 x 10 iterations of 8 ticks: under one interval
    EXPECT_TRUE(r["per_iteration"].is_null());
    EXPECT_TRUE(r["median"].is_null());
    EXPECT_TRUE(r["fraction"].is_null());
    Cmd t = run_line(p, "run --bench add_indep --reps 3 --events energy-pkg --loop 10");
    EXPECT_NE(t.out.find("TOO SHORT: 0 updates and "), std::string::npos) << t.out;
    EXPECT_NE(t.out.find(" units of the counter (at least 100 and 100 needed)"), std::string::npos) << t.out;
}

TEST(RunEnergy, OneCpuPerPackage) {
    IntelCpuidSpec s;
    s.signature = 0x000506E3;
    SimMachine m = ticking(intel_machine(s, {2, 2, 1}));  // 2 packages x 2 cores
    SimPlatform p(m);
    Cmd c = run_line(p, "run --bench add_indep --reps 3 --events energy-pkg --cpu all");
    ASSERT_EQ(c.status, 0) << c.out;
    EXPECT_NE(c.out.find("energy of package 0 measured on CPU 0 (energy is per package: it covers CPU 1 too"),
              std::string::npos)
        << c.out;
    EXPECT_NE(c.out.find("energy of package 1 measured on CPU 2"), std::string::npos) << c.out;
}

TEST(RunEnergy, RefusedWhereAbsentAndNothingRuns) {
    struct Case {
        SimMachine m;
        const char* events;
        int status;
        const char* msg;
    };
    Case cases[] = {
        {intel_icelake_server(1), "energy-gpu", 3,
         "energy-gpu: CPU 0 (Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz, 06_6AH) has no gpu energy domain (Linux's "
         "model_hsx: energy-pkg, energy-cores, energy-dram)"},
        {intel_v3(1), "energy-dram", 3,
         "has no dram energy domain (Linux's model_snb: energy-pkg, energy-cores, energy-gpu)"},
        {amd_zen4(1), "energy-psys", 3, "has no psys energy domain (Linux's model_amd_hygon: energy-pkg, energy-core)"},
        {qemu_tcg_intel(1), "energy-pkg", 3,
         "energy-pkg: RAPL is unavailable on CPU 0 (Intel Core Processor (Skylake), 06_5EH): RDMSR 606H (the energy "
         "unit) reads 0 (QEMU TCG reads unknown MSRs as 0); this is a virtual machine"},
        {qemu_tcg(1), "energy-pkg", 3, "has no RAPL energy counters: CPUID Fn8000_0007_EDX[14] (RAPL) is 0"},
        {intel_v2(1), "instructions,energy-pkg", 3, "is not in the RAPL model table"},
        {intel_skylake(1), "energy-pkg,energy-ram", 0, ""},
        {intel_skylake(1), "energy-dram,energy-ram", 2, "--events: the energy domain of 'energy-ram' is listed twice"},
    };
    for (Case& k : cases) {
        SimMachine m = ticking(std::move(k.m));
        SimPlatform p(m);
        Cmd c = run_line(p, std::string("run --bench add_indep --reps 1 --loop 1 --events ") + k.events);
        EXPECT_EQ(c.status, k.status) << k.events << "\n" << c.out;
        if (!k.status) continue;
        EXPECT_NE(c.out.find(k.msg), std::string::npos) << c.out;
        EXPECT_EQ(p.engine().executions, 0u) << "nothing ran: " << k.events;
    }
    SimMachine m = ticking(intel_skylake(1));
    SimPlatform p(m);
    Cmd c = run_line(p, "run --bench add_indep --events energy-pkg --cycle-by-cycle");
    EXPECT_EQ(c.status, 2) << c.out;
    EXPECT_NE(c.out.find("energy counters cannot be measured cycle by cycle"), std::string::npos) << c.out;
}

TEST(RunEnergy, CounterThatNeverMovesIsUnavailable) {
    SimMachine m = intel_skylake(1);  // RDTSC stands still: no update ever comes
    SimPlatform p(m);
    Cmd c = run_line(p, "run --bench add_indep --events energy-pkg");
    EXPECT_EQ(c.status, 3) << c.out;
    EXPECT_NE(c.out.find("the package energy counter (MSR 611H) did not move"), std::string::npos) << c.out;
    EXPECT_EQ(p.engine().executions, 0u);
}
