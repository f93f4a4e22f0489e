// `run --sample EVENT --precise` in process on the simulated Ice Lake and Skylake
// (commands/run_precise.cpp, pmu/pebs.h): the samples at the loads, and every PEBS MSR
// back to what firmware left there, non-zero values included.
#include <gtest/gtest.h>

#include <map>

#include "support/sim_cmd.h"

using namespace pmulab;
using namespace sim;

namespace {

// mov rax, [r14]; add rbx, rcx; mov rdx, [r14+64]: loads at offsets 0 and 6.
const char kLoads[] = "498b064801cb498b5640";

void check_run(SimMachine& m, bool adaptive) {
    SimCpu& c = m.cpu(0);
    c.poke(0x600, 0xfeed000);          // IA32_DS_AREA: firmware's
    c.poke(0x3F1, 0x4);                // IA32_PEBS_ENABLE: PMC2 (not counting)
    c.poke(0x3F6, 0x7);                // MSR_PEBS_LD_LAT_THRESHOLD
    if (adaptive) c.poke(0x3F2, 0x2);  // MSR_PEBS_DATA_CFG: GPRs
    const PmuState before = c.pmu_state();
    ASSERT_EQ(before.count(0x3F2), adaptive ? 1u : 0u);
    simm::SimPlatform p(m);
    simm::Cmd r = simm::run_line(p, std::string("--json run --cpu 0 --code ") + kLoads +
                                        " --sample D0.81:1 --precise --unroll 4 --reps 1 --warmup 0");
    ASSERT_EQ(r.status, 0) << r.out;
    std::vector<pmutest::Json> s = simm::of_type(r, "samples");
    ASSERT_EQ(s.size(), 1u) << r.out;
    const pmutest::Json& b = s[0]["buckets"];
    ASSERT_EQ(b.items.size(), 2u) << r.out;
    // 2 runs (4 and 8 copies): 12 copies, each load once per copy.
    EXPECT_EQ(b[0]["offset"].u(), 0u);
    EXPECT_EQ(b[0]["count"].u(), 12u);
    EXPECT_EQ(b[1]["offset"].u(), 6u);
    EXPECT_EQ(b[1]["count"].u(), 12u);
    EXPECT_EQ(b[1]["data"][0]["reg"].s(), "r14");
    EXPECT_EQ(b[1]["data"][0]["offset"].u(), 64u);
    EXPECT_EQ(diff_state(before, c.pmu_state()), "") << "every PEBS MSR restored exactly";
    EXPECT_TRUE(c.violations().empty());
}

}  // namespace

TEST(RunPrecise, IceLakeAdaptivePebsSamplesTheLoadsAndRestoresEverything) {
    SimMachine m = intel_icelake(1);
    check_run(m, true);
}

TEST(RunPrecise, SkylakeFormat3SamplesTheLoadsAndRestoresEverything) {
    SimMachine m = intel_skylake(1);
    check_run(m, false);
}

namespace {

// add rbx, rcx (0); imul rsi, rdi (3); nop (7): three instructions a copy.
const char kAlu[] = "4801cb480faff790";

// Ice Lake's fixed counter 0 with PEBS (INST_RETIRED.PREC_DIST): `sample` over 2 runs (4
// and 8 copies); the buckets (offset -> count), and every MSR back as firmware left it.
std::vector<std::pair<u64, u64>> fixed_pebs_run(const std::string& sample, SimMachine m = intel_icelake(1)) {
    SimCpu& c = m.cpu(0);
    c.poke(0x600, 0xfeed000);  // IA32_DS_AREA: firmware's
    c.poke(0x3F1, 0x4);        // IA32_PEBS_ENABLE: PMC2 (not counting)
    c.poke(0x3F2, 0x2);        // MSR_PEBS_DATA_CFG: GPRs
    c.poke(0x38D, 0x200);      // IA32_FIXED_CTR_CTRL: fixed counter 2 at CPL 0 (not enabled globally)
    const PmuState before = c.pmu_state();
    simm::SimPlatform p(m);
    simm::Cmd r = simm::run_line(p, std::string("--json run --cpu 0 --code ") + kAlu + " --sample " + sample +
                                        " --precise --unroll 4 --reps 1 --warmup 0");
    EXPECT_EQ(r.status, 0) << r.out;
    EXPECT_EQ(diff_state(before, c.pmu_state()), "") << "PEBS_ENABLE, DS_AREA, FIXED_CTR_CTRL restored exactly";
    EXPECT_TRUE(c.violations().empty());
    std::vector<pmutest::Json> s = simm::of_type(r, "samples");
    std::vector<std::pair<u64, u64>> out;
    if (s.size() != 1u) return out;
    EXPECT_TRUE(s[0]["precise"].b) << r.out;
    const pmutest::Json& b = s[0]["buckets"];
    for (usize i = 0; i < b.items.size(); ++i) out.emplace_back(b[i]["offset"].u(), b[i]["count"].u());
    return out;
}

using Buckets = std::vector<std::pair<u64, u64>>;

}  // namespace

TEST(RunPrecise, IceLakeFixedCounter0PeriodOneGivesEachInstructionItsExecutions) {
    EXPECT_EQ(fixed_pebs_run("instructions:1"), (Buckets{{0, 12}, {3, 12}, {7, 12}}));
    // C0.01 (INST_RETIRED.PREC_DIST's encoding) is put on fixed counter 0 too.
    EXPECT_EQ(fixed_pebs_run("C0.01:1"), (Buckets{{0, 12}, {3, 12}, {7, 12}}));
}

TEST(RunPrecise, IceLakeFixedCounter0SamplesTheInstructionThatRetiredThePth) {
    // Period 3, three instructions a copy: every record on the same instruction (no skid).
    EXPECT_EQ(fixed_pebs_run("instructions:3"), (Buckets{{0, 12}}));
}

TEST(RunPrecise, SlotsTakesPebsOnFixedCounter3) {
    // Four slots a cycle, one cycle an instruction: period 4 overflows at every instruction.
    EXPECT_EQ(fixed_pebs_run("slots:4"), (Buckets{{0, 12}, {3, 12}, {7, 12}}));
    EXPECT_EQ(fixed_pebs_run("slots:4", intel_sapphire_rapids(1)), (Buckets{{0, 12}, {3, 12}, {7, 12}}));
}

TEST(RunPrecise, SapphireRapidsFormat5SamplesTheLoadsAndRestoresEverything) {
    SimMachine m = intel_sapphire_rapids(1);
    check_run(m, true);
}

TEST(RunPrecise, Format5FixedCounter0ReloadsFromThe140HSlot) {
    // Period 3 gives one record a copy only when the reload came from 140H (the 80H slot
    // of format 4 holds PMC8's reset value there: 0, a period of 2^48).
    EXPECT_EQ(fixed_pebs_run("instructions:3", intel_sapphire_rapids(1)), (Buckets{{0, 12}}));
    EXPECT_EQ(fixed_pebs_run("instructions:1", intel_alder_lake()), (Buckets{{0, 12}, {3, 12}, {7, 12}}));
}

TEST(RunPrecise, AlderLakeECoreHasGracemontsTable) {
    SimMachine m = intel_alder_lake();
    SimCpu& c = m.cpu(4);
    c.poke(0x600, 0xfeed000);
    c.poke(0x3F2, 0x1);
    const PmuState before = c.pmu_state();
    simm::SimPlatform p(m);
    simm::Cmd r = simm::run_line(p, std::string("--json run --cpu 4 --code ") + kAlu +
                                        " --sample C0.00:1 --precise --unroll 4 --reps 1 --warmup 0");
    ASSERT_EQ(r.status, 0) << r.out;
    std::vector<pmutest::Json> s = simm::of_type(r, "samples");
    ASSERT_EQ(s.size(), 1u) << r.out;
    EXPECT_EQ(s[0]["buckets"][0]["count"].u(), 12u);
    EXPECT_EQ(diff_state(before, c.pmu_state()), "");
    r = simm::run_line(p, std::string("run --cpu 4 --code ") + kAlu + " --sample slots:100 --precise");
    EXPECT_EQ(r.status, 3) << r.out;
    EXPECT_NE(r.out.find("CPU 4 (06_97H E core): PEBS takes fixed counter 0 only (instructions, INST_RETIRED.ANY)"),
              std::string::npos)
        << r.out;
}

TEST(RunPrecise, Format5TraceShowsTheFirmwareValuesWrittenBack) {
    // --trace-msr on sapphire_rapids: the first read of each PEBS MSR is firmware's non-zero
    // value and the last write puts exactly that back.
    SimMachine m = intel_sapphire_rapids(1);
    SimCpu& c = m.cpu(0);
    c.poke(0x600, 0xfeed000);
    c.poke(0x3F1, 0x4);
    c.poke(0x3F2, 0x2);
    simm::SimPlatform p(m);
    simm::Cmd r = simm::run_line(p, std::string("--json --trace-msr run --cpu 0 --code ") + kAlu +
                                        " --sample slots:4 --precise --unroll 4 --reps 1 --warmup 0");
    ASSERT_EQ(r.status, 0) << r.out;
    std::map<std::string, std::vector<std::string>> reads, writes;
    for (const pmutest::Json& e : simm::of_type(r, "msr_trace")) {
        if (e["generated_code"].b || e["result"].s() != "ok" || e["op"].s() == "rdpmc") continue;
        (e["op"].s() == "rdmsr" ? reads : writes)[e["msr"].s()].push_back(e["value"].s());
    }
    const std::pair<const char*, const char*> firmware[] = {{"0x600", "0xfeed000"}, {"0x3f1", "0x4"}, {"0x3f2", "0x2"}};
    for (const auto& [msr, value] : firmware) {
        ASSERT_FALSE(reads[msr].empty()) << msr << r.out;
        EXPECT_EQ(reads[msr].front(), value) << msr;
        ASSERT_GE(writes[msr].size(), 2u) << msr;
        EXPECT_EQ(writes[msr].back(), value) << msr << " written back";
    }
    EXPECT_EQ(writes["0x3f1"].front(), "0x800000000") << "SLOTS: PEBS_ENABLE bit 35";
    EXPECT_EQ(writes["0x3f2"].front(), "0x0");
}
