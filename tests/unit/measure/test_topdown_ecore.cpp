// `pmulab run --topdown` on E cores (Gracemont/Crestmont/Skymont formulas, fixed counters
// 4-6), on AMD Zen 4/5 (pipeline utilisation) and the `frequency` metric, end to end on
// simulated CPUs: hybrid dumps with every core type getting its own method, exact values
// where the slot budget makes them exact.
#include <gtest/gtest.h>

#include "measure/metrics.h"
#include "sim/sim_topdown.h"
#include "support/sim_cmd.h"
#include "support/sim_measure.h"
#include "support/test_platform.h"

using namespace pmulab;
using namespace sim;
using simm::SimPlatform;

using simm::Cmd;
using simm::find;
using simm::of_type;
using simm::run_line;

namespace {

const char kFast[] = " --reps 3 --warmup 1 --unroll 10";
const char* const kL1[4] = {"tma_retiring", "tma_bad_speculation", "tma_frontend_bound", "tma_backend_bound"};
constexpr u64 kIceLakeCaps = 0x33c5 | (1ull << 15);

// The four level-1 fractions of one CPU, checked exactly, with the method.
void expect_l1(const std::vector<pmutest::Json>& met, u64 cpu, const char* method, const std::vector<u64> (&want)[4]) {
    for (int i = 0; i < 4; ++i) {
        const pmutest::Json* j = find(met, "metric", kL1[i], cpu);
        ASSERT_NE(j, nullptr) << kL1[i] << " of CPU " << cpu;
        EXPECT_EQ((*j)["method"].s(), method) << "CPU " << cpu;
        EXPECT_EQ((*j)["fraction"].u_list(), want[i]) << kL1[i] << " of CPU " << cpu;
        EXPECT_TRUE((*j)["valid"].b) << kL1[i] << " of CPU " << cpu;
        EXPECT_EQ((*j)["level"].u(), 1u);
    }
}

}  // namespace

TEST(TopdownEcore, ArrowLakeHEveryCoreTypeWithItsMethod) {
    // Three core types: Lion Cove P cores (PERF_METRICS with PERF_CAPABILITIES[15]),
    // Skymont E cores (leaf 23H fixed counters 4-6) and Crestmont low-power E cores
    // (native model ID 2: GP events, 6 slots per cycle). The default budgets of pmulab-sim.
    SimMachine m = pmutest::dump_machine("GenuineIntel00C0652_ArrowLakeH_04_CPUID.txt", kIceLakeCaps);
    apply_default_topdown(m);
    SimPlatform p(m);
    Cmd c = run_line(p, std::string("run --json --bench add_indep --topdown 1 --cpu all") + kFast);
    ASSERT_EQ(c.status, 0) << c.out;
    std::vector<pmutest::Json> met = of_type(c, "metric");
    ASSERT_EQ(met.size(), 16u * 4) << c.out;
    // Skymont, 8 slots: 4 retiring, 1 bad speculation, 1 frontend, 2 backend.
    const std::vector<u64> sky[4] = {{1, 2}, {1, 8}, {1, 8}, {1, 4}};
    for (u64 cpu = 2; cpu <= 9; ++cpu) expect_l1(met, cpu, "atom_fixed", sky);
    // Crestmont, 6 slots: 3, 1, 1, 1.
    const std::vector<u64> cmt[4] = {{1, 2}, {1, 6}, {1, 6}, {1, 6}};
    for (u64 cpu = 14; cpu <= 15; ++cpu) expect_l1(met, cpu, "crestmont_events", cmt);
    for (u64 cpu : {0, 1, 10, 11, 12, 13})
        EXPECT_EQ((*find(met, "metric", "tma_retiring", cpu))["method"].s(), "perf_metrics") << cpu;
    // The Skymont core reads its categories from fixed counters 4-6, exactly.
    std::vector<pmutest::Json> res = of_type(c, "result");
    const pmutest::Json* bad = find(res, "event", "TOPDOWN_BAD_SPECULATION.ALL", 2);
    const pmutest::Json* fe = find(res, "event", "TOPDOWN_FE_BOUND.ALL", 2);
    const pmutest::Json* ret = find(res, "event", "TOPDOWN_RETIRING.ALL", 2);
    ASSERT_TRUE(bad && fe && ret) << c.out;
    EXPECT_EQ((*bad)["counter"].s(), "FIXED_CTR4");
    EXPECT_EQ((*fe)["counter"].s(), "FIXED_CTR5");
    EXPECT_EQ((*ret)["counter"].s(), "FIXED_CTR6");
    EXPECT_EQ((*ret)["fraction"].u_list(), (std::vector<u64>{32, 1}));  // 8 cycles x 4 slots
    EXPECT_EQ((*find(met, "metric", "tma_backend_bound", 2))["formula"].s(), "[A4.02] / (8 * CPU_CLK_UNHALTED.CORE)");
    EXPECT_EQ((*find(res, "event", "72.00", 14))["fraction"].u_list(), (std::vector<u64>{24, 1}));
}

TEST(TopdownEcore, SkymontWithoutFixedCounters4To6UsesItsGpEvents) {
    // The same dump with leaf 23H's fixed-counter bitmap cut to 0-2: the Skymont E cores
    // then read the GP forms (.ALL_P: 9C.01, 73.00, A4.02, C2.02), 8 slots per cycle.
    SimMachine d = pmutest::dump_machine("GenuineIntel00C0652_ArrowLakeH_04_CPUID.txt");
    std::vector<CpuSpec> specs;
    for (u32 i = 0; i < d.size(); ++i) {
        CpuSpec s = d.cpu(i).spec();
        CpuidRegs r;
        if (s.cpuid.find(0x23, 1, &r)) {
            r.ebx &= 0x7;
            s.cpuid.set(0x23, 1, r);
        }
        specs.push_back(s);
    }
    SimMachine m(specs);
    apply_default_topdown(m);
    SimPlatform p(m);
    Cmd c = run_line(p, std::string("run --json --bench add_indep --topdown 1 --cpu 2") + kFast);
    ASSERT_EQ(c.status, 0) << c.out;
    std::vector<pmutest::Json> met = of_type(c, "metric");
    ASSERT_EQ(met.size(), 4u) << c.out;
    const std::vector<u64> sky[4] = {{1, 2}, {1, 8}, {1, 8}, {1, 4}};
    expect_l1(met, 2, "skymont_events", sky);
    EXPECT_EQ((*find(met, "metric", "tma_retiring", 2))["formula"].s(), "[C2.02] / (8 * CPU_CLK_UNHALTED.CORE)");
    // Without PERF_CAPABILITIES[15] the P cores have no TopDown: CPU 0 alone says why.
    c = run_line(p, "run --bench add_indep --topdown 1 --cpu 0");
    EXPECT_EQ(c.status, 3) << c.out;
    EXPECT_NE(c.out.find("--topdown: CPU 0: TopDown is unavailable: no TopDown on this core (family 0x6 model 0xc5)"),
              std::string::npos)
        << c.out;
    EXPECT_NE(c.out.find("(CPUID.0AH:EBX bits 7-11), not a Skylake-class core or a known E core\n"), std::string::npos)
        << c.out;  // the whole reason, not cut
}

TEST(TopdownEcore, Zen4PipelineUtilisationWithSmtContention) {
    SimMachine m = amd_zen4(1);
    apply_default_topdown(m);  // 6 slots: 3 retiring, 1 bad speculation, 1 frontend, 1 backend
    SimPlatform p(m);
    Cmd c = run_line(p, std::string("run --json --bench add_indep --topdown 1") + kFast);
    ASSERT_EQ(c.status, 0) << c.out;
    std::vector<pmutest::Json> met = of_type(c, "metric");
    ASSERT_EQ(met.size(), 5u) << c.out;
    const std::vector<u64> want[4] = {{1, 2}, {1, 6}, {1, 6}, {1, 6}};
    expect_l1(met, 0, "zen4_pipeline", want);
    const pmutest::Json* smt = find(met, "metric", "tma_smt_contention");
    ASSERT_NE(smt, nullptr);
    EXPECT_EQ((*smt)["fraction"].u_list(), (std::vector<u64>{0, 1}));
    EXPECT_TRUE((*smt)["valid"].b);
    const pmutest::Json* bad = find(met, "metric", "tma_bad_speculation");
    EXPECT_EQ((*bad)["formula"].s(), "(de_src_op_disp.all - ex_ret_ops) / (6 * ls_not_halted_cyc)");
    EXPECT_EQ((*bad)["inputs"]["de_src_op_disp.all"].s(), "32.00");
    EXPECT_EQ((*bad)["inputs"]["ex_ret_ops"].s(), "24.00");
    EXPECT_EQ((*bad)["inputs"]["ls_not_halted_cyc"].s(), "8.00");
}

TEST(TopdownEcore, Zen5FromItsDumpHasEightSlots) {
    SimMachine m = pmutest::dump_machine("AuthenticAMD0B40F40_K20_GraniteRidge_02_CPUID.txt");
    apply_default_topdown(m);
    SimPlatform p(m);
    Cmd c = run_line(p, std::string("run --json --bench add_indep --topdown 1 --cpu 0") + kFast);
    ASSERT_EQ(c.status, 0) << c.out;
    std::vector<pmutest::Json> met = of_type(c, "metric");
    const std::vector<u64> want[4] = {{1, 2}, {1, 8}, {1, 8}, {1, 4}};
    expect_l1(met, 0, "zen5_pipeline", want);
}

TEST(TopdownEcore, AmdLevelOneSumCountsFiveParts) {
    MetricSet b;
    ASSERT_TRUE(parse_metric_text(StrView(kBuiltinMetrics), "built-in", &b).ok());
    Vec<StrView> names;
    ASSERT_TRUE(select_metrics(b, StrView("TopdownL1"), &names).ok());
    struct In final : MetricInputs {
        u64 smt = 0;
        bool get(StrView l, Frac* v) const override {
            // 6 slots x 10 cycles: 30 retired, 40 dispatched, 10 FE, 10 BE, `smt` SMT.
            struct {
                const char* n;
                i64 v;
            } t[] = {{"ls_not_halted_cyc", 10},
                     {"ex_ret_ops", 30},
                     {"de_src_op_disp.all", 40},
                     {"de_no_dispatch_per_slot.no_ops_from_frontend", 10},
                     {"de_no_dispatch_per_slot.backend_stalls", 10},
                     {"de_no_dispatch_per_slot.smt_contention", i64(smt)}};
            for (auto& x : t)
                if (l.eq(StrView(x.n))) {
                    *v = Frac{x.v, 1};
                    return true;
                }
            return false;
        }
    } in;
    Vec<MetricValue> v;
    evaluate_metrics(b, names, TopdownMethod::zen4_pipeline, in, &v);
    unsigned ok = 0;
    for (const MetricValue& mv : v) {
        if (mv.no_variant) continue;
        ++ok;
        EXPECT_TRUE(mv.ok) << mv.def->name << ": " << mv.why;
        EXPECT_EQ(mv.violation[0], 0) << mv.def->name << ": " << mv.violation;
    }
    EXPECT_EQ(ok, 5u);
    // 12 slots of SMT contention too many: the five parts sum to 1.2000.
    in.smt = 12;
    v.clear();
    evaluate_metrics(b, names, TopdownMethod::zen4_pipeline, in, &v);
    for (const MetricValue& mv : v)
        if (!mv.no_variant)
            EXPECT_STREQ(mv.violation, "the level-1 parts sum to 1.2000, not 1 (tolerance 0.01)") << mv.def->name;
}

TEST(Frequency, HzFromCyclesRefCyclesAndTheTscFrequency) {
    SimMachine m = intel_icelake(1);
    SimPlatform p(m);
    p.stall_ticks_per_us = 3000;  // a 3 GHz TSC, measured against the simulated timer
    Cmd c = run_line(p, std::string("run --json --bench add_indep --metrics frequency") + kFast);
    ASSERT_EQ(c.status, 0) << c.out;
    std::vector<pmutest::Json> met = of_type(c, "metric");
    ASSERT_EQ(met.size(), 1u) << c.out;
    EXPECT_EQ(met[0]["metric"].s(), "frequency");
    EXPECT_EQ(met[0]["unit"].s(), "Hz");
    EXPECT_EQ(met[0]["formula"].s(), "CPU_CLK_UNHALTED.THREAD / CPU_CLK_UNHALTED.REF_TSC * TSC_FREQUENCY");
    EXPECT_EQ(met[0]["fraction"].u_list(), (std::vector<u64>{3000000000ull, 1}));
    EXPECT_EQ(met[0]["inputs"]["TSC_FREQUENCY"].s(), "3000000000.00");
    EXPECT_TRUE(met[0]["valid"].b);
}

TEST(Frequency, UndefinedWithTheReasonWhenTheTscFrequencyIsUnknown) {
    SimMachine m = intel_icelake(1);
    SimPlatform p(m);  // no CPUID.15H/16H, no timer
    Cmd c = run_line(p, std::string("run --json --bench add_indep --metrics frequency,frequency_ratio") + kFast);
    ASSERT_EQ(c.status, 0) << c.out;
    std::vector<pmutest::Json> met = of_type(c, "metric");
    ASSERT_EQ(met.size(), 2u) << c.out;
    const pmutest::Json* f = find(met, "metric", "frequency");
    ASSERT_NE(f, nullptr);
    EXPECT_TRUE((*f)["value"].is_null());
    EXPECT_EQ((*f)["undefined"].s().rfind("the TSC frequency is unknown (", 0), 0u) << (*f)["undefined"].s();
    EXPECT_TRUE((*f)["inputs"]["TSC_FREQUENCY"].is_null());
    EXPECT_FALSE((*f)["valid"].b);
    EXPECT_EQ((*find(met, "metric", "frequency_ratio"))["fraction"].u_list(), (std::vector<u64>{1, 1}));
}

TEST(TopdownEcore, PantherLakeDarkmontFixedCounters4To6WhereLeaf23hEnumeratesThem) {
    // A Panther Lake (06_CCH) E core, core type 20H: leaf 23H enumerates fixed counters
    // 0-2 and 4-6, so TopDown reads TOPDOWN_BAD_SPECULATION/FE_BOUND/RETIRING.ALL there.
    auto darkmont = [](u32 fixed_bitmap) {
        IntelCpuidSpec sp;
        sp.max_leaf = 0x23;
        sp.signature = 0x000C06C0;  // family 6 model CCH
        sp.brand = "pmulab simulated Panther Lake E core";
        sp.hybrid = true;
        sp.leaf_1a_eax = 0x20000000;
        sp.leaf_0a = {0x07300806, 0, 0x7, 0x00008603};
        sp.leaf_23 = true;
        sp.leaf_23_sub[0] = {0x3, 0x3, 0x8, 0};
        sp.leaf_23_sub[1] = {0xff, fixed_bitmap, 0, 0};
        return intel_machine(sp, {1, 1, 1}, 0x2000);
    };
    SimMachine m = darkmont(0x77);
    EXPECT_EQ(default_topdown_width(m.cpu(0)), 8u);
    apply_default_topdown(m);
    SimPlatform p(m);
    Cmd c = run_line(p, std::string("run --json --bench add_indep --topdown 1") + kFast);
    ASSERT_EQ(c.status, 0) << c.out;
    std::vector<pmutest::Json> met = of_type(c, "metric");
    const std::vector<u64> want[4] = {{1, 2}, {1, 8}, {1, 8}, {1, 4}};
    expect_l1(met, 0, "atom_fixed", want);
    std::vector<pmutest::Json> res = of_type(c, "result");
    EXPECT_EQ((*find(res, "event", "TOPDOWN_RETIRING.ALL"))["counter"].s(), "FIXED_CTR6");
    EXPECT_EQ((*find(res, "event", "TOPDOWN_BAD_SPECULATION.ALL"))["counter"].s(), "FIXED_CTR4");
    // Without fixed counters 4-6 in leaf 23H: the GP forms.
    SimMachine g = darkmont(0x07);
    apply_default_topdown(g);
    SimPlatform pg(g);
    c = run_line(pg, std::string("run --json --bench add_indep --topdown 1") + kFast);
    ASSERT_EQ(c.status, 0) << c.out;
    met = of_type(c, "metric");
    expect_l1(met, 0, "skymont_events", want);
}

TEST(Frequency, AmdFromAperfMperfAndIpcFromTheGenericNames) {
    // Intel's names do not resolve on AMD: the variants over instructions / cycles and
    // APERF / MPERF (the TSC of AMD parts runs at the P0 frequency, as MPERF does).
    SimMachine m = amd_zen4(1);
    SimPlatform p(m);
    p.stall_ticks_per_us = 4500;  // 4.5 GHz
    Cmd c = run_line(p, std::string("run --json --bench add_indep --metrics IPC,CPI,frequency") + kFast);
    ASSERT_EQ(c.status, 0) << c.out;
    std::vector<pmutest::Json> met = of_type(c, "metric");
    ASSERT_EQ(met.size(), 3u) << c.out;
    EXPECT_EQ(met[0]["formula"].s(), "instructions / cycles");
    EXPECT_EQ(met[0]["fraction"].u_list(), (std::vector<u64>{1, 1}));
    EXPECT_EQ(met[1]["formula"].s(), "cycles / instructions");
    EXPECT_EQ(met[2]["formula"].s(), "aperf / mperf * TSC_FREQUENCY");
    EXPECT_EQ(met[2]["fraction"].u_list(), (std::vector<u64>{4500000000ull, 1}));
    EXPECT_EQ(met[2]["inputs"]["aperf"].s(), "8.00");
    // Without the TSC frequency the APERF/MPERF variant is the one reported undefined.
    SimMachine m2 = amd_zen4(1);
    SimPlatform p2(m2);
    c = run_line(p2, std::string("run --json --bench add_indep --metrics frequency") + kFast);
    ASSERT_EQ(c.status, 0) << c.out;
    met = of_type(c, "metric");
    ASSERT_EQ(met.size(), 1u) << c.out;
    EXPECT_EQ(met[0]["formula"].s(), "aperf / mperf * TSC_FREQUENCY");
    EXPECT_EQ(met[0]["undefined"].s().rfind("the TSC frequency is unknown (", 0), 0u) << c.out;
}

TEST(TopdownEcore, Zen4Level2FromThePipelineJson) {
    // 6 slots: 3 retiring (1 microcode), 1 bad speculation (a mispredict), 1 frontend,
    // 1 backend (memory bound). Two runs: 11 events on 6 counters.
    SimMachine m = amd_zen4(1);
    TopdownBudget b = default_topdown_budget(6);
    b.heavy_ops = 1;
    b.br_mispredict = 1;
    b.mem_bound = 1;
    m.cpu(0).set_topdown(b);
    SimPlatform p(m);
    Cmd c = run_line(p, std::string("run --json --bench add_indep --topdown 2") + kFast);
    ASSERT_EQ(c.status, 0) << c.out;
    std::vector<pmutest::Json> res = of_type(c, "result");
    ASSERT_FALSE(res.empty());
    EXPECT_EQ(res[0]["runs"].u(), 2u);
    std::vector<pmutest::Json> met = of_type(c, "metric");
    ASSERT_EQ(met.size(), 13u) << c.out;  // 5 level 1, 8 level 2 (the frontend split with CntMask 6)
    struct W {
        const char* name;
        u64 num, den;
        const char* parent;
    } want[] = {{"tma_heavy_operations", 1, 6, "tma_retiring"},
                {"tma_light_operations", 1, 3, "tma_retiring"},
                {"tma_branch_mispredicts", 1, 6, "tma_bad_speculation"},
                {"tma_machine_clears", 0, 1, "tma_bad_speculation"},
                {"tma_fetch_latency", 0, 1, "tma_frontend_bound"},
                {"tma_fetch_bandwidth", 1, 6, "tma_frontend_bound"},
                {"tma_memory_bound", 1, 6, "tma_backend_bound"},
                {"tma_core_bound", 0, 1, "tma_backend_bound"}};
    for (const W& x : want) {
        const pmutest::Json* j = find(met, "metric", x.name);
        ASSERT_NE(j, nullptr) << x.name;
        EXPECT_EQ((*j)["fraction"].u_list(), (std::vector<u64>{x.num, x.den})) << x.name;
        EXPECT_EQ((*j)["method"].s(), "zen4_pipeline");
        EXPECT_EQ((*j)["level"].u(), 2u);
        EXPECT_EQ((*j)["parent"].s(), x.parent);
        EXPECT_TRUE((*j)["valid"].b) << x.name;
    }
    EXPECT_EQ((*find(met, "metric", "tma_branch_mispredicts"))["inputs"]["ex_ret_brn_misp"].s(), "8.00");
    // One empty frontend slot per cycle: never CntMask 6 of them, all fetch bandwidth.
    EXPECT_EQ((*find(met, "metric", "tma_fetch_latency"))["inputs"]["1A0.01.CMSK=6"].s(), "0.00");
}

TEST(TopdownEcore, EventsListsFixedCounters4To6OnlyWhereTheyExist) {
    SimMachine m = pmutest::dump_machine("GenuineIntel00C0652_ArrowLakeH_04_CPUID.txt");
    SimPlatform p(m);
    Cmd c = run_line(p, "events --cpu 2");
    ASSERT_EQ(c.status, 0) << c.out;
    EXPECT_NE(c.out.find("\n  TOPDOWN_RETIRING.ALL                                  C2.02  FIXED_CTR6     yes\n"),
              std::string::npos)
        << c.out;
    EXPECT_NE(c.out.find("\n  TOPDOWN_BAD_SPECULATION.ALL                           73.00  FIXED_CTR4     yes\n"),
              std::string::npos)
        << c.out;
    c = run_line(p, "events --cpu 0");  // the P core: fixed counters 0-3
    ASSERT_EQ(c.status, 0) << c.out;
    EXPECT_EQ(c.out.find("TOPDOWN_RETIRING.ALL"), std::string::npos) << c.out;
}
