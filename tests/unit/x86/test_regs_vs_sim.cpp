// pmulab's register knowledge (pmulab/regs.h, decoded from CPUID by the census)
// against the simulator (written separately from the SDM): on every synthetic
// Intel PMU, each architectural PMU MSR exists in one exactly when it exists in
// the other, and every single bit that regs.h calls writable is accepted by the
// model while every bit it calls reserved #GPs.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "census/census.h"
#include "x86/intel_regs.h"
#include "sim/sim_cpu.h"

using namespace sim;

namespace {

// The architectural PMU MSR addresses regs.h covers (GP/fixed indices 0..15).
std::vector<u32> pmu_msrs() {
    std::vector<u32> v;
    for (u32 i = 0; i < 16; ++i) {
        v.push_back(0xC1 + i);
        v.push_back(0x186 + i);
        v.push_back(0x309 + i);
        v.push_back(0x4C1 + i);
    }
    for (u32 m = 0x38D; m <= 0x392; ++m) v.push_back(m);
    v.push_back(0x345);
    return v;
}

struct Named {
    const char* name;
    SimMachine machine;
};

std::vector<Named> intel_machines() {
    std::vector<Named> v;
    v.push_back({"v1", intel_v1(1)});
    v.push_back({"v2", intel_v2(1)});
    v.push_back({"v2 FW_WRITE", intel_v2(1, 0x2000)});
    v.push_back({"v2 Conroe", intel_v2_conroe(1)});
    v.push_back({"v3", intel_v3(2)});
    v.push_back({"v3 FW_WRITE", intel_v3(2, 0x2000)});
    v.push_back({"v4 Goldmont Plus", intel_v4_goldmont_plus(1)});
    v.push_back({"v5 ECX 1001b", intel_v5(0b1001, 0, 1)});
    v.push_back({"v5 ECX 1000b EDX 2", intel_v5(0b1000, 2, 1)});
    v.push_back({"v6 leaf 23H", intel_v6(0x3ff, 0x77, 1)});
    v.push_back({"v6 GP holes", intel_v6(0b1011, 0x7, 1)});
    v.push_back({"hybrid", intel_hybrid()});
    return v;
}

// Bits the model accepts although regs.h calls them reserved: AnyThread where
// CPUID.0AH:EDX[15] deprecates it. The model follows SDM §20.2.5.1 as read here
// (deprecated = ignored, the write still succeeds); regs.h never sets the bit, which
// is safe on either reading.
u64 deprecated_anythread_bits(const SimCpu& c, u32 msr) {
    const PmuLayout& L = c.pmu();
    if (!L.anythread_ignored) return 0;
    if (msr >= 0x186 && msr < 0x186 + 32) return evtsel::ANY;
    if (msr == 0x38D) {
        u64 m = 0;
        for (u32 i = 0; i < 16; ++i)
            if (L.fixed(i)) m |= u64(4) << (4 * i);
        return m;
    }
    return 0;
}

}  // namespace

TEST(RegsVsSim, MsrExistenceAndWritableBitsAgree) {
    for (Named& n : intel_machines()) {
        SimMachine& m = n.machine;
        pmulab::Vec<pmulab::CpuRecord> recs;
        ASSERT_TRUE(pmulab::census_collect(m, recs).ok());
        for (u32 cpu = 0; cpu < m.size(); ++cpu) {
            SCOPED_TRACE(std::string(n.name) + ", CPU " + std::to_string(cpu));
            const pmulab::PmuCaps& caps = recs[cpu].dec.pmu;
            SimCpu& c = m.cpu(cpu);
            EXPECT_EQ(pmulab::regs::gp_counters(caps), c.pmu().gp_mask & 0xFFFFu);
            EXPECT_EQ(pmulab::regs::fixed_counters(caps), c.pmu().fixed_mask);
            EXPECT_EQ(pmulab::regs::gp_counter_width(caps), c.pmu().gp_width);
            if (c.pmu().fixed_mask) EXPECT_EQ(pmulab::regs::fixed_counter_width(caps), c.pmu().fixed_width);
            for (u32 msr : pmu_msrs()) {
                bool exists = pmulab::regs::pmu_msr_exists(caps, msr);
                ASSERT_EQ(exists, c.msr_exists(msr)) << "MSR 0x" << std::hex << msr;
                if (!exists) continue;
                u64 want = pmulab::regs::pmu_msr_writable_mask(caps, msr) | deprecated_anythread_bits(c, msr);
                u64 accepted = 0;
                for (u32 b = 0; b < 64; ++b) {
                    if (c.wrmsr(msr, u64(1) << b).ok()) accepted |= u64(1) << b;
                }
                EXPECT_EQ(accepted, want)
                    << "MSR 0x" << std::hex << msr << ": model accepts 0x" << accepted << ", regs.h says 0x" << want;
            }
        }
    }
}

// The legacy-write rule, computed by regs.h and observed on the model.
TEST(RegsVsSim, LegacyCounterWritesAgree) {
    SimMachine m = intel_v4_goldmont_plus(1);
    SimCpu& c = m.cpu(0);
    for (u64 v : {0x0ull, 0x1ull, 0x7FFFFFFFull, 0x80000000ull, 0xFFFFFFFFull, 0x100000005ull, 0xDEADBEEFCAFEF00Dull}) {
        ASSERT_TRUE(c.wrmsr(0xC1, v).ok());
        EXPECT_EQ(c.peek(0xC1), pmulab::regs::legacy_pmc_write_result(v, 48)) << std::hex << v;
        EXPECT_EQ(pmulab::regs::full_width_write_valid(v, 48), c.wrmsr(0x4C1, v).ok()) << std::hex << v;
    }
}
