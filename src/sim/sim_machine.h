// The simulated machine: the Hw seam (src/x86/hw.h) over several SimCpus, with MP
// Services' reachability rules. Its builders (CPUID dumps, documented models) are in
// sim_builders.h.
#pragma once

#include <memory>
#include <vector>

#include "sim/sim_core.h"

namespace sim {

class SimUncore;
class SimAmdL3;

class SimMachine final : public pmulab::Hw {
public:
    explicit SimMachine(const std::vector<CpuSpec>& cpus);
    // One CPU per snapshot; topology from CPUID (APIC ID from leaf 0BH or 01H,
    // package/core/thread from the leaf 0BH shifts), CPU 0 is the BSP (sim_builders.cpp).
    static SimMachine from_snapshots(const std::vector<CpuidSnapshot>& snaps, u64 perf_capabilities = 0);
    // One CPU per record of a parsed dump (pmulab/cpuid_dump.h): its raw leaves, and
    // its APIC ID and location where the dump gives them (sim_builders.cpp).
    static SimMachine from_records(const pmulab::Vec<pmulab::CpuRecord>& recs, u64 perf_capabilities = 0);

    SimCpu& cpu(u32 i) { return cpus_.at(i); }
    const SimCpu& cpu(u32 i) const { return cpus_.at(i); }
    u32 size() const { return u32(cpus_.size()); }
    u32 bsp() const { return bsp_; }
    // Makes CPU i the BSP (topology flags, and the CPU top-level code runs on).
    void set_bsp(u32 i);
    // Runs fn with `cpu` current (like run_on_cpu, without the reachability rules).
    template <typename F> void on(u32 cpu_index, F&& fn) {
        u32 saved = current_;
        current_ = cpu_index;
        fn();
        current_ = saved;
    }

    // The package's C-Box counters (sim_uncore.h): client Intel parts only, else null.
    SimUncore* uncore();
    // The L3 complex's PMU (sim_amd_l3.h), shared by every CPU: the named AMD models
    // (zen1, zen3, zen4) enable it; null elsewhere (dumps).
    void enable_amd_l3(bool f17);
    SimAmdL3* amd_l3() const;

    // The k-th WRMSR from now on any CPU faults, once.
    void fail_nth_wrmsr(u64 k, u8 vector = pmulab::kVectorGP);
    // Every CPU's log merged in access order.
    std::vector<LogEntry> log_all() const;
    void clear_logs();
    u64 run_on_cpu_calls() const { return run_calls_; }
    // Every CPU whose core has another logical processor (same package and core in its
    // topology) gets a busy SMT sibling (SimCpu::set_sibling_busy), or a halted one again.
    // Returns how many CPUs have siblings.
    u32 set_siblings_busy(bool on);

    // ---- Hw ----
    CpuidRegs cpuid(u32 leaf, u32 subleaf) override;
    Result<u64> rdmsr(u32 msr) override;
    Status wrmsr(u32 msr, u64 value) override;
    Result<u64> rdpmc(u32 index) override;
    u64 rdtsc() override;
    u32 cpu_count() override { return size(); }
    u32 current_cpu() override { return current_; }
    Result<CpuTopology> topology(u32 cpu) override;
    Status run_on_cpu(u32 cpu, pmulab::CpuFn fn, void* ctx) override;
    // The server uncore's CAPID registers (sim_uncore.h); no device elsewhere (all ones).
    pmulab::Result<u32> pci_read32(u32 bus, u32 dev, u32 fn, u32 offset) override;

private:
    std::shared_ptr<Shared> shared_;
    std::vector<SimCpu> cpus_;
    u32 bsp_ = 0;
    u32 current_ = 0;
    bool in_ap_ = false;
    u64 run_calls_ = 0;
};

}  // namespace sim
