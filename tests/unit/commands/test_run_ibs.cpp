// `run --sample ibs_op|ibs_op_cycles|ibs_fetch` on the simulated machines (run_ibs.cpp,
// pmu/ibs.h, sim/sim_ibs.h): exact samples with data places and latencies, everything
// IBS touched (IbsOpCtl, IbsFetchCtl, the extended LVT entry, the PMI's LVT entry) put
// back as it was, and the refusals before anything runs.
#include <gtest/gtest.h>

#include "support/sim_cmd.h"
#include "support/sim_measure.h"
#include "support/test_platform.h"

using namespace pmulab;
using namespace sim;

namespace {

// mov rax, [r14]; add rbx, 1; clflush [r14+64]; mov rcx, [r14+64]; add rdx, 1
// offsets 0, 3, 7, 12, 16: an L1D hit, an ALU op, the flush, a load from memory, an ALU op.
const char kMix[] = "498b064883c301410fae7e40498b4e404883c201";

simm::Cmd run_ibs(SimMachine& m, const std::string& sample) {
    simm::SimPlatform p(m);
    return simm::run_line(p, "--json run --cpu 0 --code " + std::string(kMix) + " --name mix --sample " + sample +
                                 " --unroll 16 --reps 2 --warmup 0");
}

const pmutest::Json* bucket(const pmutest::Json& rec, u64 offset) {
    for (const pmutest::Json& b : rec["buckets"].items)
        if (b["offset"].u() == offset) return &b;
    return nullptr;
}

}  // namespace

TEST(RunIbs, Zen4OpSamplesEveryOpKindWithItsDataAndLatencyAndRestoresEverything) {
    SimMachine m = amd_zen4(1);
    SimCpu& c = m.cpu(0);
    // What firmware left: a masked extended entry with a vector, IbsOpCtl with a count.
    c.set_lvt_ext(1, 0x100F4);
    c.poke(reg::IBS_OP_CTL, 0x1234);
    const u32 lvt_perf = c.lvt_perf();
    simm::Cmd r = run_ibs(m, "ibs_op:16");
    ASSERT_EQ(r.status, 0) << r.out;
    std::vector<pmutest::Json> s = simm::of_type(r, "samples");
    ASSERT_EQ(s.size(), 1u) << r.out;
    EXPECT_EQ(s[0]["event"].s(), "ibs_op");
    EXPECT_EQ(s[0]["source"].s(), "ibs_op");
    EXPECT_TRUE(s[0]["precise"].b);
    EXPECT_EQ(s[0]["period"].u(), 16u);
    // Every 16th op: 80 ops per 16 copies step through all 5 positions once, so each gets
    // 1 sample per 16 copies: 96 copies in all (2 runs of 16, 2 of 32).
    for (u64 off : {0, 3, 7, 12, 16}) {
        const pmutest::Json* b = bucket(s[0], off);
        ASSERT_TRUE(b) << off << " " << r.out;
        EXPECT_EQ((*b)["count"].u(), 6u) << off;
    }
    EXPECT_EQ(s[0]["samples"].u(), 30u + s[0]["harness"].u());
    // The loads: their exact places from R14, the miss's latency from the cost model.
    const pmutest::Json& hit = *bucket(s[0], 0);
    ASSERT_EQ(hit["data"].items.size(), 1u);
    EXPECT_EQ(hit["data"][0]["reg"].s(), "r14");
    EXPECT_EQ(hit["data"][0]["offset"].s(), "0");
    EXPECT_EQ(hit["data"][0]["count"].u(), 6u);
    EXPECT_FALSE(hit.has("latency"));  // an L1D hit has no DC miss latency
    const pmutest::Json& miss = *bucket(s[0], 12);
    EXPECT_EQ(miss["data"][0]["offset"].s(), "64");
    EXPECT_EQ(miss["latency"]["n"].u(), 6u);
    EXPECT_EQ(miss["latency"]["min"].u(), 200u);
    EXPECT_EQ(miss["latency"]["max"].u(), 200u);
    EXPECT_FALSE(bucket(s[0], 3)->has("data"));  // an ALU op
    // Restored exactly.
    EXPECT_EQ(c.lvt_ext(1), 0x100F4u);
    EXPECT_EQ(c.peek(reg::IBS_OP_CTL), 0x1234u);
    EXPECT_EQ(c.lvt_perf(), lvt_perf);
    EXPECT_EQ(simm::of_type(r, "result").size(), 0u);
}

TEST(RunIbs, CyclesModeTagsTheLongOpEveryTime) {
    SimMachine m = amd_zen4(1);
    simm::Cmd r = run_ibs(m, "ibs_op_cycles:16");
    ASSERT_EQ(r.status, 0) << r.out;
    std::vector<pmutest::Json> s = simm::of_type(r, "samples");
    ASSERT_EQ(s.size(), 1u);
    // The 201-cycle load reaches any count of 16 by itself: each of its 96 executions.
    EXPECT_EQ((*bucket(s[0], 12))["count"].u(), 96u);
}

TEST(RunIbs, FetchSamplesWithLatencyAndOpAndFetchTogether) {
    SimMachine m = amd_zen4(1);
    simm::Cmd r = run_ibs(m, "ibs_fetch:16 --sample ibs_op:32");
    ASSERT_EQ(r.status, 0) << r.out;
    std::vector<pmutest::Json> s = simm::of_type(r, "samples");
    ASSERT_EQ(s.size(), 2u) << r.out;
    EXPECT_EQ(s[0]["source"].s(), "ibs_fetch");
    for (u64 off : {0, 3, 7, 12, 16}) {
        const pmutest::Json* b = bucket(s[0], off);
        ASSERT_TRUE(b) << off;
        EXPECT_EQ((*b)["count"].u(), 6u) << off;
        EXPECT_EQ((*b)["latency"]["min"].u(), u64(IbsUnit::kFetchHitLatency)) << off;
    }
    EXPECT_EQ(s[1]["source"].s(), "ibs_op");
    EXPECT_EQ(m.cpu(0).peek(reg::IBS_FETCH_CTL), 0u);
    EXPECT_EQ(m.cpu(0).lvt_ext(1), SimCpu::kLvtMasked);
}

TEST(RunIbs, RefusalsComeBeforeAnythingRuns) {
    struct Case {
        SimMachine (*make)(u32);
        const char* sample;
        int status;
        const char* msg;
    } cases[] = {
        {intel_skylake, "ibs_op", 3,
         "CPU 0: --sample ibs_op: IBS (Instruction-Based Sampling) is AMD's; this CPU is GenuineIntel: on Intel, "
         "precise samples come from PEBS (--sample EVENT --precise)"},
        {amd_zen3, "ibs_fetch", 3,
         "CPU 0: --sample ibs_fetch: this AMD CPU has no usable IBS: CPUID Fn8000_001B_EAX[0] (IBSFFV, the feature "
         "flags are valid) is 0 (EAX = 0x0)"},
        {amd_zen4, "ibs_op:100", 2,
         "--sample ibs_op:100: IBS periods are multiples of 16 (IbsOpMaxCnt ignores the low 4 bits); pmulab does "
         "not round: write 96 or 112"},
        {amd_zen4, "ibs_op --sample ibs_op_cycles", 2,
         "--sample: ibs_op and ibs_op_cycles use the one IBS op unit of a CPU: sample one of them per run"},
    };
    for (const Case& k : cases) {
        SimMachine m = k.make(1);
        simm::Cmd r = run_ibs(m, k.sample);
        EXPECT_EQ(r.status, k.status) << k.sample << r.out;
        std::vector<pmutest::Json> e = simm::of_type(r, "error");
        ASSERT_EQ(e.size(), 1u) << r.out;
        EXPECT_EQ(e[0]["message"].s(), k.msg);
        EXPECT_EQ(simm::of_type(r, "samples").size(), 0u);
        for (const LogEntry& w : m.cpu(0).writes()) EXPECT_NE(w.addr & 0xFFFFFFF0u, 0xC0011030u) << k.sample;
    }
}
