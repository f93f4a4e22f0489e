// Test doubles for the measurement engine: a minimal Hw (no PMU, like QEMU TCG),
// a MeasurePlatform that synthesises counts, and a Platform that captures output.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "commands/commands.h"
#include "measure/measure.h"
#include "commands/measure_cmd.h"

namespace mtest {

using namespace pmulab;

// Two or more CPUs, TSC from a counter, RDPMC raises #UD, only IA32_TSC and
// IA32_APIC_BASE readable (others #GP). run_on_cpu runs inline and remembers where.
class FakeHw final : public Hw {
public:
    explicit FakeHw(u32 cpus = 2) : cpus_(cpus) {}
    CpuidRegs cpuid(u32, u32) override { return CpuidRegs{}; }
    Result<u64> rdmsr(u32 msr) override {
        ++rdmsr_calls;
        if (msr == 0x10) return tsc_ += 1000;
        if (msr == 0x1B) return u64(0xFEE00900);
        return msr_fault_error("RDMSR", msr, 0, kVectorGP);
    }
    Status wrmsr(u32 msr, u64 value) override {
        writes.push_back({msr, value});
        if (reject_writes) return msr_fault_error("WRMSR", msr, value, kVectorGP);
        return ok_status();
    }
    Result<u64> rdpmc(u32 index) override {
        ++rdpmc_calls;
        if (pmc_works) return u64(0);
        return pmc_fault_error(index, kVectorUD);
    }
    u64 rdtsc() override { return tsc_ += 7; }
    // PCI configuration space: none (Errc::unsupported) unless pci_dword is set, then every
    // dword reads it.
    Result<u32> pci_read32(u32 bus, u32 dev, u32 fn, u32 offset) override {
        if (!pci_present) return Hw::pci_read32(bus, dev, fn, offset);
        return pci_dword;
    }
    u32 cpu_count() override { return cpus_; }
    u32 current_cpu() override { return current_; }
    Result<CpuTopology> topology(u32 cpu) override {
        if (cpu >= cpus_) return Error::make(Errc::invalid_argument, "no CPU %u", cpu);
        CpuTopology t;
        t.apic_id = cpu * 2;  // distinct from the index on purpose
        t.bsp = cpu == 0;
        return t;
    }
    Status run_on_cpu(u32 cpu, CpuFn fn, void* ctx) override {
        if (cpu >= cpus_) return Error::make(Errc::invalid_argument, "no logical processor %u", cpu);
        ran_on.push_back(cpu);
        u32 prev = current_;
        current_ = cpu;
        fn(ctx);
        current_ = prev;
        return ok_status();
    }

    std::vector<u32> ran_on;
    std::vector<std::pair<u32, u64>> writes;
    bool pmc_works = false;
    bool reject_writes = false;
    bool pci_present = false;
    u32 pci_dword = 0xFFFFFFFFu;
    int rdpmc_calls = 0, rdmsr_calls = 0;

private:
    u32 cpus_;
    u32 current_ = 0;
    u64 tsc_ = 1000000;
};

// Synthesises counts: for read r of a region with `copies` copies of a body of
// `body_len` bytes (one byte per documented instruction) and loop L,
//   end - start = overhead[r] + copies * L * body_len * cost[r] + noise(run)
// where noise(run) is taken from `noise` cyclically (0 when empty). Counts start
// near the top of the counter width to exercise wrap-around.
class FakeMeasure final : public MeasurePlatform {
public:
    Result<void*> alloc_pages(usize bytes, bool executable) override {
        if (fail_alloc) return Error::make(Errc::io, "AllocatePages failed: EFI_OUT_OF_RESOURCES");
        void* p = std::aligned_alloc(4096, (bytes + 4095) & ~usize(4095));
        live[p] = bytes;
        (executable ? code_allocs : data_allocs)++;
        return p;
    }
    void free_pages(void* p, usize bytes) override {
        EXPECT_EQ(live.count(p), 1u);
        EXPECT_EQ(live[p], bytes);
        live.erase(p);
        std::free(p);
    }
    CodeSpan kernel_body(KernelId id) override {
        // Any bytes do: nothing executes them. One byte per documented instruction,
        // or big_body when set.
        static const u8 body[64] = {};
        if (!big_body.empty()) return CodeSpan{big_body.data(), big_body.size()};
        return CodeSpan{body, kernel_info(id).instructions};
    }
    Status irq_mask(IrqMode mode, IrqSaved* saved) override {
        ++masks;
        last_mode = mode;
        if (mode == IrqMode::lvt && lvt_unsupported)
            return Error::make(Errc::unsupported, "--irq lvt: the local APIC is disabled");
        saved->word[0] = 0xABCD;
        masked = true;
        return ok_status();
    }
    void irq_restore(const IrqSaved& saved) override {
        EXPECT_EQ(saved.word[0], 0xABCDu);
        ++restores;
        masked = false;
    }
    void serialize() override { ++serializes; }
    void execute(const Region& region, RegionFrame* frame) override {
        EXPECT_TRUE(masked) << "regions must run with interrupts masked";
        ++executions;
        copies_seen.push_back(region.copies);
        frame_gprs = std::vector<u64>(frame->gpr, frame->gpr + kGprCount);
        u64 run = executions - 1;
        if (stop_at && executions == stop_at) {  // the watchdog stopped this run (vector 2)
            frame->faulted = 1;
            frame->fault_vector = kWatchdogVector;
            frame->fault_rip = u64(reinterpret_cast<uintptr_t>(region.code)) + region.body_offset + 2;
            return;
        }
        for (u32 r = 0; r < reads; ++r) {
            u64 width_mask = r < widths.size() ? low_mask(widths[r]) : ~u64(0);
            u64 start = (base - 1000 + run * 977) & width_mask;
            i64 n = noise.empty() ? 0 : noise[run % noise.size()];
            u64 delta = overhead[r % overhead.size()] +
                        region.copies * region.loop * region.body_len * cost[r % cost.size()] + u64(n);
            frame->start[r] = start;
            frame->end[r] = (start + delta) & width_mask;
        }
    }

    void set_job_timeout(u32 seconds) override { timeouts.push_back(seconds); }

    std::map<void*, usize> live;
    std::vector<u32> timeouts;  // set_job_timeout calls
    u64 stop_at = 0;            // 1-based execution the watchdog stops (0: none)
    int code_allocs = 0, data_allocs = 0;
    bool fail_alloc = false, lvt_unsupported = false, masked = false;
    int masks = 0, restores = 0, serializes = 0;
    u64 executions = 0;
    IrqMode last_mode = IrqMode::cli;
    std::vector<u64> copies_seen;
    std::vector<u8> big_body;
    std::vector<u64> frame_gprs;
    // Synthetic model
    u32 reads = kMaxReads;
    std::vector<u64> overhead = {500};
    std::vector<u64> cost = {128};
    std::vector<u8> widths;
    std::vector<i64> noise;
    u64 base = ~u64(0);
};

// A Platform that captures everything written.
class FakePlatform final : public Platform {
public:
    FakePlatform(Hw& hw, MeasurePlatform* mp) : hw_(hw), mp_(mp) {}
    Hw& hw() override { return hw_; }
    void write(StrView text) override { out.append(text.ptr, text.len); }
    MeasurePlatform* measure() override { return mp_; }
    std::string out;

private:
    Hw& hw_;
    MeasurePlatform* mp_;
};

// Runs a pmulab command line ("run --bench nop ...") and returns the exit status.
inline int run_cmd(Platform& p, const std::string& line) {
    ArgVec av;
    Status s = split_command_line(StrView(line.c_str()), &av);
    if (!s.ok()) return -1;
    GlobalOptions g;
    return app_run(p, av.argc(), av.argv.data(), &g);
}

}  // namespace mtest
