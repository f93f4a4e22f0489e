// The simulator's executor (pmulab-sim, and the tests that run commands on a simulated
// machine): a MeasurePlatform whose execute() runs the regions the code generator emits
// on the SimMachine's current CPU, so that the engine, the PMU layer and the simulated PMU
// work together exactly as on hardware.
//
// SimExec is the platform side: pages, interrupt masking, the watchdog's timeout, the
// problems it met. What runs a region is its SimRunner (sim_runner.h): UnicornRunner
// (sim_unicorn.h), which executes every byte on an x86-64 emulator and talks to the
// simulated CPU only through the CPU's instruction API. Which events come out of the
// execution, and how, is docs/sim.md "Events".
#pragma once

#include <map>
#include <set>
#include <memory>
#include <string>
#include <vector>

#include "measure/measure.h"
#include "sim/sim_cpu.h"
#include "sim_runner.h"

namespace pmulab {

class SimExec final : public MeasurePlatform, private SimProblems {
public:
    explicit SimExec(sim::SimMachine& m);
    ~SimExec();

    Result<void*> alloc_pages(usize bytes, bool executable) override;
    void free_pages(void* p, usize bytes) override;
    // Host memory with p + offset aligned (--r14-align); the executor maps it as it is.
    Result<void*> alloc_aligned(usize bytes, u64 align, u64 offset) override;
    CodeSpan kernel_body(KernelId id) override { return runner_->kernel_body(id); }
    Status irq_mask(IrqMode mode, IrqSaved* saved) override;
    void irq_restore(const IrqSaved& saved) override;
    void serialize() override {}
    void execute(const Region& region, RegionFrame* frame) override;
    // The simulated CPU's LVT entry and NMIs (sim_cpu.h "Interrupts"): the executor hands
    // an NMI to the attached handler at the instruction boundary it is taken at.
    Result<u32> lvt_perf() override;
    Status set_lvt_perf(u32 value) override;
    // The AMD extended LVT entries (SimCpu::lvt_ext): IBS's interrupt.
    Result<u32> lvt_ext(unsigned n) override;
    Status set_lvt_ext(unsigned n, u32 value) override;
    Status pmi_attach(PmiHandler* h) override;
    void pmi_detach() override;
    // The simulated SMT siblings (docs/sim.md "SMT siblings"): busy where the machine's model
    // runs a load there (SimMachine::set_siblings_busy), else halted; none without siblings.
    SiblingState prepare_siblings(Hw& hw, u32 cpu) override;

    // Called with a message when the executor cannot follow the code (pmulab-sim prints it).
    void set_problem_hook(void (*hook)(void* ctx, const char* msg), void* ctx) {
        hook_ = hook;
        hook_ctx_ = ctx;
    }
    // Called with a note the user should see (an event the simulator does not model).
    void set_note_hook(void (*hook)(void* ctx, const char* msg)) { note_hook_ = hook; }
    // What went wrong in generated code: faults of harness accesses, unfollowable code.
    const std::vector<std::string>& problems() const { return problems_; }
    u64 executions() const { return executions_; }
    bool masked() const { return masked_; }
    // Pages still allocated (0 after every measurement).
    usize live_pages() const { return live_.size(); }

    void set_job_timeout(u32 seconds) override { runner_->set_timeout(seconds); }
    Status guard_pages(const void* p, usize bytes, bool on) override {
        runner_->guard(p, bytes, on);
        return ok_status();
    }
    // The data-cache model of every CPU (docs/sim.md "The memory hierarchy"): the
    // --cache spec ("" = each CPU's defaults from its CPUID, "off" = none) and the seed of
    // the random policies. Errors name the CPU whose defaults the spec does not fit.
    Status set_cache(const std::string& spec, u64 seed);
    SimRunner& runner() { return *runner_; }

private:
    void problem(const std::string& msg) override;

    sim::SimMachine& m_;
    std::unique_ptr<SimRunner> runner_;
    std::map<void*, usize> live_;
    std::map<void*, void*> aligned_;  // alloc_aligned's pages -> the block to free
    std::map<u32, PmiHandler*> pmi_;  // per CPU: the attached handler
    std::map<u32, u32> pmi_lvt_;      // ... and its LVT entry before pmi_attach
    bool masked_ = false;
    u64 executions_ = 0;
    std::vector<std::string> problems_;
    std::set<u32> noted_;    // (event << 16) | umask already noted
    std::set<u64> checked_;  // (CPU << 32) | (event << 16) | umask already looked up
    void (*note_hook_)(void*, const char*) = nullptr;
    void note_unmodelled(const sim::SimCpu& cpu);
    void (*hook_)(void*, const char*) = nullptr;
    void* hook_ctx_ = nullptr;
};

}  // namespace pmulab
