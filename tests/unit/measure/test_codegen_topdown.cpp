// The generated region with --topdown's PERF_METRICS reads (issue #22's two review
// findings): the SLOTS/PERF_METRICS reset comes after the user's init, right before the
// start reads; --no-mem keeps the PERF_METRICS end value as read (not end - start);
// pause/resume markers with PERF_METRICS are refused.
#include <gtest/gtest.h>

#include "measure/measure.h"
#include "measure/pmu_plan.h"
#include "measure/topdown.h"
#include "x86/msr_addr.h"
#include "x86/intel_regs.h"

using namespace pmulab;

namespace {

// TSC, SLOTS (RDPMC fixed 3), GLOBAL_CTRL on/off, then what --topdown 1 adds
// (add_topdown_reads): 6 reads, as many as --no-mem takes.
const ReadGroup& topdown_group(PmuPlan* plan) {
    ReadGroup& g = plan->groups.emplace();
    CounterRead tsc;
    tsc.kind = CounterAccess::rdtsc;
    tsc.width = 64;
    g.reads.push(tsc);
    CounterRead slots;
    slots.kind = CounterAccess::rdpmc;
    slots.index = kRdpmcFixed | 3;
    slots.width = 48;
    g.reads.push(slots);
    g.start_writes.push(MsrValue{msr::IA32_PERF_GLOBAL_CTRL, (u64(1) << 48) | (u64(9) << 32)});
    g.stop_writes.push(MsrValue{msr::IA32_PERF_GLOBAL_CTRL, 0});
    EXPECT_TRUE(add_topdown_reads(plan, 1).ok());
    return plan->groups[0];
}

u32 le32(const Vec<u8>& c, usize at) {
    return u32(c[at]) | (u32(c[at + 1]) << 8) | (u32(c[at + 2]) << 16) | (u32(c[at + 3]) << 24);
}

// Offsets of the emitted WRMSRs to `msr` (mov $msr,%ecx; mov $lo,%eax; mov $hi,%edx; wrmsr).
std::vector<usize> wrmsr_at(const Vec<u8>& c, usize end, u32 msr) {
    std::vector<usize> at;
    for (usize i = 0; i + 17 <= end; ++i)
        if (c[i] == 0xB9 && c[i + 5] == 0xB8 && c[i + 10] == 0xBA && c[i + 15] == 0x0F && c[i + 16] == 0x30 &&
            le32(c, i + 1) == msr)
            at.push_back(i);
    return at;
}

// Offsets of `mov $index,%ecx; rdpmc`.
std::vector<usize> rdpmc_at(const Vec<u8>& c, usize end, u32 index) {
    std::vector<usize> at;
    for (usize i = 0; i + 7 <= end; ++i)
        if (c[i] == 0xB9 && c[i + 5] == 0x0F && c[i + 6] == 0x33 && le32(c, i + 1) == index) at.push_back(i);
    return at;
}

// A long init: 40 x imul %rax,%rax (48 0F AF C0).
std::vector<u8> long_init() {
    std::vector<u8> v;
    for (int i = 0; i < 40; ++i) v.insert(v.end(), {0x48, 0x0F, 0xAF, 0xC0});
    return v;
}

const u8 kAdd[] = {0x48, 0x01, 0xC0};  // add %rax,%rax (the 4801c0)

}  // namespace

TEST(CodegenTopdown, ResetAfterInitRightBeforeTheStartReads) {
    PmuPlan plan;
    const ReadGroup& g = topdown_group(&plan);
    ASSERT_EQ(g.start_writes.size(), 3u);
    ASSERT_EQ(g.start_writes[0].msr, regs::fixed_ctr_msr(3));  // 0x30C, SLOTS
    ASSERT_EQ(g.start_writes[1].msr, msr::MSR_PERF_METRICS);   // 0x329
    std::vector<u8> init = long_init();
    for (bool no_mem : {false, true}) {
        for (u32 align : {0u, 17u}) {
            RegionSpec s;
            s.body = kAdd, s.body_len = sizeof kAdd, s.copies = 10, s.group = &g;
            s.init = CodeSpan{init.data(), init.size()};
            s.no_mem = no_mem, s.no_mem_loop = 1, s.align_offset = align;
            Vec<u8> c;
            Result<RegionLayout> lay = emit_region(s, &c);
            ASSERT_TRUE(lay.ok()) << lay.error().msg;
            const RegionLayout& L = lay.value();
            usize init_end = L.init_offset + init.size();
            std::vector<usize> slots_reads = rdpmc_at(c, L.code_size, kRdpmcFixed | 3);
            ASSERT_EQ(slots_reads.size(), 2u);  // start and end
            for (u32 m : {regs::fixed_ctr_msr(3), msr::MSR_PERF_METRICS, msr::IA32_PERF_GLOBAL_CTRL}) {
                std::vector<usize> w = wrmsr_at(c, L.code_size, m);
                ASSERT_FALSE(w.empty()) << std::hex << m;
                // Every start write: after the init bytes, before the start read of SLOTS.
                EXPECT_GE(w[0], init_end) << "MSR 0x" << std::hex << m << " written before --init ends";
                EXPECT_LT(w[0], slots_reads[0]) << std::hex << m;
            }
            // The reset before counting is switched on, nothing but the serialisation and
            // the reads between the writes and the start read of SLOTS.
            EXPECT_LT(wrmsr_at(c, L.code_size, msr::MSR_PERF_METRICS)[0],
                      wrmsr_at(c, L.code_size, msr::IA32_PERF_GLOBAL_CTRL)[0]);
            // The first copy stays 64-byte aligned (+ --align-offset).
            EXPECT_EQ(L.body_offset % 64, align % 64) << no_mem << " " << align;
        }
    }
}

// The reads between the end serialisations in --no-mem mode: each read's RAX goes into
// R8+i; a count is end - start (sub %r(8+i),%rax first), a PERF_METRICS read is not: its
// bytes are fractions of all the slots since the reset.
TEST(CodegenTopdown, NoMemKeepsThePerfMetricsEndValueAbsolute) {
    ReadGroup g;
    {
        PmuPlan plan;
        const ReadGroup& full = topdown_group(&plan);
        // SLOTS and the four metric bytes (read 0 is SLOTS here).
        g.reads.push(full.reads[1]);
        for (usize i = 2; i < full.reads.size(); ++i) {
            g.reads.push(full.reads[i]);
            g.reads[g.reads.size() - 1].slots_read = 0;
        }
        for (const MsrValue& w : full.start_writes) g.start_writes.push(w);
        for (const MsrValue& w : full.stop_writes) g.stop_writes.push(w);
    }
    ASSERT_EQ(g.reads.size(), 5u);
    RegionSpec s;
    s.body = kAdd, s.body_len = sizeof kAdd, s.copies = 10, s.group = &g, s.no_mem = true, s.no_mem_loop = 1;
    Vec<u8> c;
    Result<RegionLayout> lay = emit_region(s, &c);
    ASSERT_TRUE(lay.ok()) << lay.error().msg;
    // The end reads: after the copies. Each: its read, shl $32,%rdx; or %rdx,%rax (7
    // bytes), then [sub %r(8+i),%rax] mov %rax,%r(8+i).
    usize tail = lay.value().tail_offset;
    std::vector<usize> slots = rdpmc_at(c, lay.value().code_size, kRdpmcFixed | 3);
    std::vector<usize> metrics = rdpmc_at(c, lay.value().code_size, u32(1) << 29);
    ASSERT_EQ(slots.size(), 2u);
    ASSERT_EQ(metrics.size(), 8u);  // 4 bytes, start and end
    auto after_read = [&](usize at) { return at + 7 + 7; };
    ASSERT_GT(slots[1], tail);
    usize k = after_read(slots[1]);
    EXPECT_EQ(c[k], 0x4C) << "SLOTS: end - start";  // sub %r8,%rax
    EXPECT_EQ(c[k + 1], 0x29);
    EXPECT_EQ(c[k + 2], 0xC0);
    for (unsigned b = 0; b < 4; ++b) {
        usize m = after_read(metrics[4 + b]);
        ASSERT_GT(metrics[4 + b], tail);
        unsigned reg = b + 1;  // R9..R12
        EXPECT_EQ(c[m], 0x49) << "PERF_METRICS byte " << b << ": the end value is kept as read";
        EXPECT_EQ(c[m + 1], 0x89);
        EXPECT_EQ(c[m + 2], 0xC0 | reg);
    }
    // What the engine makes of it: start 0 (stored by the window's end), end as read,
    // SLOTS differenced: the end fractions scaled by the window's slots.
    u64 start[5] = {0, 0, 0, 0, 0};
    u64 end[5] = {1000, 0x40302010ull, 0x40302010ull, 0x40302010ull, 0x40302010ull};
    EXPECT_EQ(topdown_read_delta(g, 1, start, end), 0x10u * 1000 / 255);
    EXPECT_EQ(topdown_read_delta(g, 4, start, end), 0x40u * 1000 / 255);
}

TEST(CodegenTopdown, MarkersWithPerfMetricsAreRefused) {
    PmuPlan plan;
    const ReadGroup& g = topdown_group(&plan);
    static const u8 kMarked[] = {0x48, 0x01, 0xD8, 0x04, 0x3F, 0x81, 0xC2, 0xB1, 0x13, 0xB5, 0xF0, 0x90,
                                 0x04, 0x3F, 0x81, 0xC2, 0xB1, 0x13, 0xB5, 0xE0, 0x48, 0x01, 0xD8};
    RegionSpec s;
    s.body = kMarked, s.body_len = sizeof kMarked, s.copies = 10, s.group = &g;
    Vec<u8> c;
    Result<RegionLayout> lay = emit_region(s, &c);
    ASSERT_FALSE(lay.ok());
    EXPECT_EQ(lay.error().code, Errc::invalid_argument);
    EXPECT_NE(std::string(lay.error().msg).find("cannot pause IA32_PERF_METRICS"), std::string::npos)
        << lay.error().msg;
    EXPECT_NE(std::string(lay.error().msg).find("drop the markers"), std::string::npos) << lay.error().msg;
}
