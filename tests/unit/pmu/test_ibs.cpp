// pmulab's IBS (pmu/ibs.h) against the simulated CPUs: what each has, the period and
// kind checks with their messages, the control values, and the NMI drain of op and fetch
// samples (exact PreciseSample values, the unit re-armed).
#include <gtest/gtest.h>

#include <vector>

#include "pmu/ibs.h"
#include "sim/sim_cpu.h"
#include "support/test_platform.h"

using namespace pmulab;

namespace {

IbsInfo info_of(const sim::SimMachine& m) {
    IbsInfo i;
    ibs_decode(m.cpu(0).snapshot(), &i);
    return i;
}

std::string msg(const Status& s) { return s.ok() ? "" : s.error().msg; }

struct Got final : PmiSink {
    std::vector<std::pair<u32, PreciseSample>> precise_samples;
    void sample(u32, u64) override { ADD_FAILURE() << "IBS hands no counter samples"; }
    void precise(u32 slot, const PreciseSample& s) override { precise_samples.push_back({slot, s}); }
};

}  // namespace

TEST(Ibs, DecodesWhatEachCpuHas) {
    IbsInfo z4 = info_of(sim::amd_zen4(1));
    EXPECT_TRUE(z4.op && z4.fetch);
    EXPECT_TRUE(z4.features.op_cnt() && z4.features.op_cnt_ext() && z4.features.zen4_ext());
    EXPECT_EQ(z4.op_period_max(), 0x7FFFFF0u);
    EXPECT_STREQ(z4.absent, "");
    IbsInfo gr = info_of(pmutest::dump_machine("AuthenticAMD0B40F40_K20_GraniteRidge_02_CPUID.txt"));
    EXPECT_EQ(gr.features.raw(), 0x81BFFu);
    EXPECT_STREQ(info_of(sim::intel_skylake(1)).absent,
                 "IBS (Instruction-Based Sampling) is AMD's; this CPU is GenuineIntel: on Intel, precise samples "
                 "come from PEBS (--sample EVENT --precise)");
    EXPECT_STREQ(info_of(sim::amd_zen3(1)).absent,
                 "this AMD CPU has no usable IBS: CPUID Fn8000_001B_EAX[0] (IBSFFV, the feature flags are valid) is "
                 "0 (EAX = 0x0)");
    EXPECT_STREQ(info_of(sim::qemu_tcg(1)).absent, "this AMD CPU has no IBS: CPUID Fn8000_0001_ECX[10] (IBS) is 0");
}

TEST(Ibs, KindsPeriodsAndControlValues) {
    EXPECT_EQ(ibs_kind(StrView("IBS_OP")), IbsKind::op);
    EXPECT_EQ(ibs_kind(StrView("ibs_op_cycles")), IbsKind::op_cycles);
    EXPECT_EQ(ibs_kind(StrView("ibs_fetch")), IbsKind::fetch);
    EXPECT_EQ(ibs_kind(StrView("ibs_op:16")), IbsKind::none);
    EXPECT_TRUE(ibs_check_period(IbsKind::op, 4096, StrView("ibs_op")).ok());
    EXPECT_EQ(msg(ibs_check_period(IbsKind::op, 100, StrView("ibs_op"))),
              "--sample ibs_op:100: IBS periods are multiples of 16 (IbsOpMaxCnt ignores the low 4 bits); pmulab "
              "does not round: write 96 or 112");
    EXPECT_EQ(msg(ibs_check_period(IbsKind::fetch, 8, StrView("ibs_fetch"))),
              "--sample ibs_fetch:8: IBS periods are multiples of 16 (IbsFetchMaxCnt ignores the low 4 bits); "
              "pmulab does not round: write 16");
    IbsInfo z4 = info_of(sim::amd_zen4(1));
    EXPECT_TRUE(ibs_check(z4, IbsKind::op, 0x7FFFFF0, StrView("ibs_op")).ok());
    Status big = ibs_check(z4, IbsKind::op, 0x8000000, StrView("ibs_op"));
    EXPECT_EQ(big.error().code, Errc::invalid_argument);
    EXPECT_EQ(msg(big), "--sample ibs_op: the period 134217728 exceeds this CPU's IBS maximum 134217712");
    Status fetch = ibs_check(z4, IbsKind::fetch, 0x100000, StrView("ibs_fetch"));
    EXPECT_EQ(msg(fetch), "--sample ibs_fetch: the period 1048576 exceeds this CPU's IBS maximum 1048560");
    Status intel = ibs_check(info_of(sim::intel_skylake(1)), IbsKind::op, 16, StrView("ibs_op"));
    EXPECT_EQ(intel.error().code, Errc::unsupported);
    // Dispatched ops (CntCtl), cycles (no CntCtl), fetches; OpCntExt's bits 26:20.
    EXPECT_EQ(ibs_op_ctl(IbsKind::op, 0x10000), 0xA1000u);
    EXPECT_EQ(ibs_op_ctl(IbsKind::op_cycles, 0x10000), 0x21000u);
    EXPECT_EQ(ibs_op_ctl(IbsKind::op, 0x7FFFFF0), 0x7FAFFFFu);
    EXPECT_EQ(ibs_fetch_ctl(0x10000), 0x0001000000001000u);
}

TEST(Ibs, DrainHandsTheTaggedOpAndReArms) {
    sim::SimMachine m = sim::amd_zen4(1);
    sim::SimCpu& c = m.cpu(0);
    IbsSource src;
    src.op_ctl = ibs_op_ctl(IbsKind::op, 16);
    src.op_slot = 2;
    Got got;
    u64 ack = 0;
    ASSERT_TRUE(src.start(m).ok());
    EXPECT_FALSE(src.drain(m, 0, got, &ack));  // no sample: not IBS's NMI
    for (int i = 0; i < 15; ++i) {
        c.op(sim::OpInfo{.rip = 0x100});
        c.retire(sim::Retired{.instructions = 1});
    }
    c.op(sim::OpInfo{.rip = 0x1234, .load = true, .data_addr = 0x5000, .served = 2, .miss_latency = 40});
    c.retire(sim::Retired{.instructions = 1, .stall_cycles = 40});
    EXPECT_TRUE(src.drain(m, 0, got, &ack));
    EXPECT_EQ(ack, 0u);
    ASSERT_EQ(got.precise_samples.size(), 1u);
    const auto& [slot, s] = got.precise_samples[0];
    EXPECT_EQ(slot, 2u);
    EXPECT_EQ(s.rip, 0x1234u);
    EXPECT_TRUE(s.has_data && s.has_latency);
    EXPECT_EQ(s.data_addr, 0x5000u);
    EXPECT_EQ(s.latency, 40u);
    EXPECT_EQ(c.peek(sim::reg::IBS_OP_CTL), src.op_ctl);  // Val clear, counting from 0 again
    ASSERT_TRUE(src.stop(m).ok());
    EXPECT_EQ(c.peek(sim::reg::IBS_OP_CTL), src.op_ctl & ~(u64(1) << 17));
}

TEST(Ibs, DrainHandsTheFetchAndItsLatency) {
    sim::SimMachine m = sim::amd_zen4(1);
    sim::SimCpu& c = m.cpu(0);
    IbsSource src;
    src.fetch_ctl = ibs_fetch_ctl(16);
    src.fetch_slot = 1;
    Got got;
    u64 ack = 0;
    ASSERT_TRUE(src.start(m).ok());
    for (int i = 0; i < 16; ++i) {
        c.op(sim::OpInfo{.rip = 0x7000 + u64(i)});
        c.retire(sim::Retired{.instructions = 1});
    }
    EXPECT_TRUE(src.drain(m, 0, got, &ack));
    ASSERT_EQ(got.precise_samples.size(), 1u);
    EXPECT_EQ(got.precise_samples[0].first, 1u);
    EXPECT_EQ(got.precise_samples[0].second.rip, 0x700Fu);
    EXPECT_FALSE(got.precise_samples[0].second.has_data);
    EXPECT_EQ(got.precise_samples[0].second.latency, sim::IbsUnit::kFetchHitLatency);  // line 0x7000 fetched already
    EXPECT_EQ(c.peek(sim::reg::IBS_FETCH_CTL), src.fetch_ctl);
}

TEST(Ibs, OpCountingNeedsOpCntAndTheWideCountOpCntExt) {
    CpuidSnapshot s = sim::amd_zen4(1).cpu(0).snapshot();
    s.set(0x8000001B, 0, {0x7, 0, 0, 0});  // IBSFFV, FetchSam, OpSam only (family 10h-like)
    IbsInfo i;
    ibs_decode(s, &i);
    EXPECT_TRUE(i.op && i.fetch);
    Status op = ibs_check(i, IbsKind::op, 16, StrView("ibs_op"));
    EXPECT_EQ(op.error().code, Errc::unsupported);
    EXPECT_EQ(msg(op),
              "--sample ibs_op: this CPU's IBS counts cycles only, not dispatched ops (CPUID Fn8000_001B_EAX[4] OpCnt "
              "= 0): sample with ibs_op_cycles");
    EXPECT_TRUE(ibs_check(i, IbsKind::op_cycles, 0xFFFF0, StrView("ibs_op_cycles")).ok());
    EXPECT_EQ(msg(ibs_check(i, IbsKind::op_cycles, 0x100000, StrView("ibs_op_cycles"))),
              "--sample ibs_op_cycles: the period 1048576 exceeds this CPU's IBS maximum 1048560 (no OpCntExt: 20-bit "
              "counts)");
    s.set(0x8000001B, 0, {0x3, 0, 0, 0});  // fetch sampling only
    ibs_decode(s, &i);
    EXPECT_EQ(msg(ibs_check(i, IbsKind::op_cycles, 16, StrView("ibs_op_cycles"))),
              "--sample ibs_op_cycles: this CPU's IBS has no op sampling (CPUID Fn8000_001B_EAX[2] OpSam = 0)");
}
