// The scanning runner (sim_runner.h): "runs" a region the code generator emits by its
// encodings, without executing it.
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
// Cost model: each harness access and LFENCE retires one instruction, the body its
// instructions times copies times loop iterations (SimCpu::retire: one core cycle and one
// reference cycle per instruction; the events each PMU family counts for them are its
// model's, sim_pmu.h).
#pragma once

#include <string>

#include "sim_runner.h"

namespace pmulab {

class ScanRunner final : public SimRunner {
public:
    CodeSpan kernel_body(KernelId id) override;
    void execute(const Region& region, RegionFrame* frame, sim::SimCpu& cpu, SimProblems& problems) override;

    // Instructions and branches of one copy of a body; false (and *why) when the
    // runner cannot follow it.
    struct BodyCount {
        u64 instructions = 0;
        u64 branches = 0;
        usize bad_offset = 0;
        std::string why;
    };
    static bool count_body(const u8* body, usize len, BodyCount* out);

private:
    u8 bodies_[kKernelCount][64] = {};
};

}  // namespace pmulab
