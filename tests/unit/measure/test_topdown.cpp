// `pmulab run --topdown` and `--metrics` end to end on simulated CPUs with known slot
// budgets (sim_cpu.h TopdownBudget): exact slot-scaled deltas per iteration, the
// validation rules, reset between runs, GP-event TopDown multiplexed by rerun, hybrid
// parts with TopDown on the P cores only.
#include <gtest/gtest.h>

#include "measure/metrics.h"
#include "sim/sim_topdown.h"
#include "support/sim_measure.h"
#include "support/test_platform.h"

using namespace pmulab;
using namespace sim;
using simm::SimPlatform;

namespace {

struct Cmd {
    int status = -1;
    std::string out;
    std::vector<pmutest::Json> recs;
};

Cmd run_line(SimPlatform& p, const std::string& line) {
    p.out.clear();
    ArgVec av;
    Status s = split_command_line(StrView(line.c_str()), &av);
    EXPECT_TRUE(s.ok());
    GlobalOptions g;
    Cmd c;
    c.status = app_run(p, av.argc(), av.argv.data(), &g);
    c.out = p.out;
    if (g.json) c.recs = pmutest::parse_json_lines(c.out);
    return c;
}

std::vector<pmutest::Json> of_type(const Cmd& c, const char* type) {
    std::vector<pmutest::Json> r;
    for (const pmutest::Json& j : c.recs)
        if (j["type"].s() == type) r.push_back(j);
    return r;
}

const pmutest::Json* find(const std::vector<pmutest::Json>& v, const char* key, const char* value, u64 cpu = 0) {
    for (const pmutest::Json& j : v)
        if (j[key].s() == value && j["cpu"].u() == cpu) return &j;
    return nullptr;
}

TopdownBudget budget(u64 width, u64 ret, u64 bad, u64 fe, u64 be) {
    TopdownBudget b;
    b.slots_per_cycle = width;
    b.retiring = ret;
    b.bad_spec = bad;
    b.fe_bound = fe;
    b.be_bound = be;
    return b;
}

const char kFast[] = " --reps 3 --warmup 1 --unroll 10";

}  // namespace

TEST(Topdown, IceLakeLevel1ExactFromPerfMetrics) {
    SimMachine m = intel_icelake(2);
    m.cpu(0).set_topdown(budget(5, 2, 1, 1, 1));
    SimPlatform p(m);
    Cmd c = run_line(p, std::string("run --json --bench add_indep --topdown 1") + kFast);
    ASSERT_EQ(c.status, 0) << c.out;
    std::vector<pmutest::Json> res = of_type(c, "result");
    for (auto& r : res)
        std::printf("%s %s %s\n", r["event"].s().c_str(), r["counter"].s().c_str(), r["per_iteration"].s().c_str());
    std::printf("%s\n", c.out.c_str());
}
