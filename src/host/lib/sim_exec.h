// The simulator's executor (pmulab-sim, and the tests that run commands on a simulated
// machine): a MeasurePlatform whose execute() "runs" the regions the code generator
// emits on the SimMachine's current CPU, so that the engine, the PMU layer and the
// simulated PMU work together exactly as on hardware.
//
// The harness around the body (measure/codegen.cpp) is decoded by its own encodings:
//   B9 imm32 0F 33 / 0F 32              mov $imm, %ecx; rdpmc / rdmsr
//   B9 imm32 B8 imm32 BA imm32 0F 30    mov $msr, %ecx; mov $lo, %eax; mov $hi, %edx; wrmsr
//   0F 31                               rdtsc
//   0F AE E8                            lfence (the serialisation: one instruction)
// and these are performed on the simulated CPU (reads fill RegionFrame::start/end). The
// user blocks (init, late-init) and the body are skipped there: the body is counted.
//
// The body: built-in kernels come from kernel_body() as one byte per instruction (0xCC,
// or 0xCB for a branch: the kernels' documented instruction and branch counts); user code
// is walked with a length decoder (x86_length.h): every instruction retires once, a JMP
// forward inside the body is followed (it counts as a branch); any other control transfer
// (Jcc, LOOP, CALL, RET, indirect jumps, INT, UD2) and bytes it cannot decode stop the
// run with an error naming the offset, instead of a guess.
//
// Cost model: one instruction per core cycle, one reference cycle (one TSC tick) per
// cycle. Events: instructions retired (Intel/AMD C0H, NetBurst instr_retired NBOGUSNTAG
// and uops_retired NBOGUS), branches retired (Intel C4H, AMD C2H, NetBurst branch_retired
// MMTP), core cycles (3CH/00H, AMD 76H, NetBurst global_power_events RUNNING), reference
// cycles (3CH/01H, fixed counter 2). Everything else counts 0 (no misses of any kind).
#pragma once

#include <map>
#include <string>

#include "measure/measure.h"
#include "sim/sim_cpu.h"

namespace pmulab {

class SimExec final : public MeasurePlatform {
public:
    explicit SimExec(sim::SimMachine& m);
    ~SimExec();

    Result<void*> alloc_pages(usize bytes, bool executable) override;
    void free_pages(void* p, usize bytes) override;
    CodeSpan kernel_body(KernelId id) override;
    Status irq_mask(IrqMode mode, IrqSaved* saved) override;
    void irq_restore(const IrqSaved& saved) override;
    void serialize() override {}
    void execute(const Region& region, RegionFrame* frame) override;

    // Called with a message when the executor cannot follow the code (pmulab-sim prints it).
    void set_problem_hook(void (*hook)(void* ctx, const char* msg), void* ctx) {
        hook_ = hook;
        hook_ctx_ = ctx;
    }
    // What went wrong in generated code: faults of harness accesses, unfollowable code.
    const std::vector<std::string>& problems() const { return problems_; }
    u64 executions() const { return executions_; }
    bool masked() const { return masked_; }
    // Pages still allocated (0 after every measurement).
    usize live_pages() const { return live_.size(); }

    // Instructions and branches of one copy of a body; false (and *why) when the
    // executor cannot follow it.
    struct BodyCount {
        u64 instructions = 0;
        u64 branches = 0;
        usize bad_offset = 0;
        std::string why;
    };
    static bool count_body(const u8* body, usize len, BodyCount* out);

private:
    void retire(sim::SimCpu& cpu, u64 instructions, u64 branches);
    void problem(const std::string& msg);

    sim::SimMachine& m_;
    std::map<void*, usize> live_;
    bool masked_ = false;
    u64 executions_ = 0;
    std::vector<std::string> problems_;
    void (*hook_)(void*, const char*) = nullptr;
    void* hook_ctx_ = nullptr;
    u8 bodies_[kKernelCount][64] = {};
};

}  // namespace pmulab
