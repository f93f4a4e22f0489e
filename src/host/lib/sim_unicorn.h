// The simulator's executor: runs every byte of a generated region on an x86-64 emulator
// (Unicorn 2.0, QEMU's TCG as a library; docs/sim.md "The executor"), with the simulated
// CPU servicing what a PMU experiment depends on at the exact instruction:
//
//  * RDPMC, RDMSR, WRMSR, RDTSC, RDTSCP, CPUID and SERIALIZE are found by a hook that sees
//    every instruction before it runs (Unicorn cannot hook RDMSR/WRMSR/RDTSC, and its TCG
//    raises #UD on RDPMC), performed on the SimCpu with the counts of every instruction
//    before them, and skipped; a #GP or #UD of the simulated PMU is raised in the emulated
//    code as the hardware would (the region exits through its fault path).
//  * Every other instruction is the emulator's: branches, loops, CALL/RET, the stack,
//    faults. What retired is reported to the CPU in batches (SimCpu::retire, sim::Retired):
//    instructions, branches by kind and direction, instructions that loaded or stored, and
//    which level of the data-cache model served each load (sim_runner.h, SimDataCache).
//  * Memory: every page the engine allocated (MeasurePlatform::alloc_pages) is mapped at
//    its own host address (the sim's physical address of a byte is its address, as on the
//    identity-mapped target), code pages executable, data pages not; page 0 and everything
//    else is unmapped, so accesses there fault with #PF (CR2 = the address, the error code
//    as the hardware builds it) and non-canonical addresses with #GP(0).
//  * Faults end the region as on the target: the vector, the RIP of the faulting
//    instruction (after it for the traps #BP and #OF), error code and CR2 go to the frame,
//    and the region resumes at its exit path. An instruction the emulator cannot execute
//    although the simulated CPU would (VEX/EVEX/XOP: Unicorn 2.0 has no AVX) is refused
//    with its bytes, block and offset instead of being guessed (fault vector 255).
//  * HLT with interrupts masked waits for the watchdog, and code that runs longer than the
//    job's timeout (wall-clock time on the host) is stopped like the target's watchdog
//    stops it: vector 2 at the instruction it was about to run.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "sim_runner.h"
#include "x86_insn.h"

struct uc_struct;

namespace pmulab {

class UnicornRunner final : public SimRunner {
public:
    UnicornRunner();
    ~UnicornRunner() override;

    CodeSpan kernel_body(KernelId id) override;
    void map_pages(void* p, usize bytes, bool executable) override;
    void unmap_pages(void* p, usize bytes) override;
    void guard(const void* p, usize bytes, bool on) override;
    bool guarded(u64 addr) const;
    void set_timeout(u32 seconds) override { timeout_s_ = seconds ? seconds : kDefaultTimeout; }
    void set_data_cache(DataCacheFactory f) override {
        cache_factory_ = std::move(f);
        caches_.clear();
    }
    void set_nmi_handler(NmiHandler h) override { nmi_ = std::move(h); }
    const NmiHandler& nmi_handler() const { return nmi_; }
    // CPU `cpu`'s cache model (made on its first region; null without a model).
    SimDataCache* data_cache(u32 cpu);
    void execute(const Region& region, RegionFrame* frame, sim::SimCpu& cpu, SimProblems& problems) override;

    // The job timeout when the engine sets none (seconds of host time).
    static constexpr u32 kDefaultTimeout = 10;

    struct Run;  // one execute(): the hooks' state (sim_unicorn.cpp)
    Run* active() const { return run_; }

private:
    // Per region address: the checksum of the code last translated there, and the kinds
    // of the instructions seen at each offset (kind + 1; 0 = not seen yet).
    // In fast mode the body is decoded once (body) and runs without a per-instruction
    // hook: the harness around it has code hooks (hooks), the body is counted per
    // translation block.
    // Every instruction is hooked, the body too, when the CPU needs each instruction
    // retired on its own (SimCpu::needs_each_instruction: a PMI can come, the LBR records).
    struct CodeSeen {
        u64 sum = 0;
        std::vector<u8> kinds;
        bool fast = false;
        bool each = false;  // hooked for SimCpu::needs_each_instruction
        x86insn::LinearCode body;
        std::vector<size_t> hooks;  // Unicorn hook handles of this region's code ranges
    };
    void set_code_hooks(CodeSeen& seen, const Region& r, bool each);
    std::map<u64, CodeSeen> code_seen_;
    bool start();
    CodeSeen& refresh_code(const Region& region, bool each);

    uc_struct* uc_ = nullptr;
    std::string broken_;  // why the emulator could not be set up ("" when it was)
    u8* own_ = nullptr;   // the runner's own pages: the frame copy, the stack, the return point
    DataCacheFactory cache_factory_;
    NmiHandler nmi_;
    std::map<u32, std::unique_ptr<SimDataCache>> caches_;
    std::map<u64, u64> guards_;  // guard pages: start -> end (not present while code runs)
    u32 timeout_s_ = kDefaultTimeout;
    u64 executed_ = 0, regions_ = 0;
    double seconds_ = 0;  // in execute()
    Run* run_ = nullptr;
};

}  // namespace pmulab
