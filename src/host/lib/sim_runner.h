// The executor's room: what runs a generated region on a simulated CPU. SimExec (the
// MeasurePlatform of pmulab-sim, sim_exec.h) owns one SimRunner and hands it each region
// together with the CPU it runs on; the runner calls the CPU only through its
// instruction API (sim_cpu.h: cpuid, rdmsr, wrmsr, rdpmc, rdtsc at an instruction, and
// retire() for a batch of retired instructions), so the CPU knows nothing of the runner.
// The runner is UnicornRunner (sim_unicorn.h): every byte runs on an x86-64 emulator.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "measure/measure.h"
#include "sim/sim_cpu.h"

namespace pmulab {

// Where a runner reports what it cannot run and faults of the harness's accesses
// (pmulab-sim prints them; the tests fail on them).
class SimProblems {
public:
    virtual void problem(const std::string& msg) = 0;

protected:
    ~SimProblems() = default;
};

// The data-cache model of one CPU as the executor sees it (the memory hierarchy,
// sim_cache.h): every data access of one line, CLFLUSH, WBINVD/INVD.
class SimDataCache {
public:
    virtual ~SimDataCache() = default;
    // The level that served the access: 0 = L1D, 1 = L2, 2 = L3, ..., levels() = memory.
    virtual unsigned access(u64 phys_addr, bool write) = 0;
    virtual void flush_line(u64 phys_addr) = 0;
    virtual void reset() = 0;
    virtual unsigned levels() const = 0;
    virtual u32 line_bytes() const { return 64; }
};
// Makes the model of a CPU (null: that CPU has no cache model).
using DataCacheFactory = std::function<std::unique_ptr<SimDataCache>(const sim::SimCpu&)>;

class SimRunner {
public:
    virtual ~SimRunner() = default;
    // The body of a built-in kernel, as this runner runs it.
    virtual CodeSpan kernel_body(KernelId id) = 0;
    // The engine's pages (MeasurePlatform::alloc_pages/free_pages), at their host address.
    virtual void map_pages(void* p, usize bytes, bool executable) = 0;
    virtual void unmap_pages(void* p, usize bytes) = 0;
    // Guard pages (MeasurePlatform::guard_pages): not present while code runs (on), or
    // ordinary memory again (off).
    virtual void guard(const void* p, usize bytes, bool on) = 0;
    // The job's watchdog (MeasurePlatform::set_job_timeout); 0: the runner's default.
    virtual void set_timeout(u32 seconds) = 0;
    // The data-cache model for every CPU (none: loads and stores are counted, no levels).
    virtual void set_data_cache(DataCacheFactory f) = 0;
    // NMIs of the simulated CPUs (the PMI through the LVT entry; sim_cpu.h "Interrupts")
    // go to `h` at the instruction boundary where they are taken, with the interrupted
    // RIP (the next instruction to run); h returns whether the NMI was the PMU's. Null:
    // none is expected (one that comes is a problem the runner reports).
    using NmiHandler = std::function<bool(sim::SimCpu& cpu, u64 rip)>;
    virtual void set_nmi_handler(NmiHandler h) = 0;
    // Runs `region` on `cpu`, filling *frame as the generated code does (the reads, the
    // carried registers, or the fault).
    virtual void execute(const Region& region, RegionFrame* frame, sim::SimCpu& cpu, SimProblems& problems) = 0;
};

// The runner pmulab-sim uses.
std::unique_ptr<SimRunner> make_sim_runner();

}  // namespace pmulab
