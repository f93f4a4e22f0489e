// A MeasurePlatform for the simulated machine: pmulab-sim's executor (src/host/lib/
// sim_exec.h, which documents what it decodes and its cost model) with the tests' checks
// on top: every region runs with interrupts masked, no generated access faults, no code
// the executor cannot follow, every page freed.
//
// Per iteration: instructions = cycles = reference cycles = TSC ticks = the kernel's
// instruction count, and everything around the body cancels between U and 2U.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "app/out.h"
#include "measure/measure.h"
#include "sim/sim_cpu.h"
#include "sim/sim_netburst.h"
#include "sim_exec.h"

namespace simm {

using namespace pmulab;

class SimMeasure final : public MeasurePlatform {
public:
    explicit SimMeasure(sim::SimMachine& m) : exec_(m) {}
    ~SimMeasure() { EXPECT_EQ(exec_.live_pages(), 0u) << "pages not freed"; }

    Result<void*> alloc_pages(usize bytes, bool executable) override { return exec_.alloc_pages(bytes, executable); }
    void free_pages(void* p, usize bytes) override { exec_.free_pages(p, bytes); }
    Status guard_pages(const void* p, usize bytes, bool on) override { return exec_.guard_pages(p, bytes, on); }
    CodeSpan kernel_body(KernelId id) override { return exec_.kernel_body(id); }
    Status irq_mask(IrqMode mode, IrqSaved* saved) override { return exec_.irq_mask(mode, saved); }
    void irq_restore(const IrqSaved& saved) override { exec_.irq_restore(saved); }
    void serialize() override {}
    Result<u32> lvt_perf() override { return exec_.lvt_perf(); }
    Status set_lvt_perf(u32 value) override { return exec_.set_lvt_perf(value); }
    Result<u32> lvt_ext(unsigned n) override { return exec_.lvt_ext(n); }
    Status set_lvt_ext(unsigned n, u32 value) override { return exec_.set_lvt_ext(n, value); }
    Status pmi_attach(PmiHandler* h) override { return exec_.pmi_attach(h); }
    void pmi_detach() override { exec_.pmi_detach(); }
    SiblingState prepare_siblings(Hw& hw, u32 cpu) override { return exec_.prepare_siblings(hw, cpu); }

    void execute(const Region& region, RegionFrame* frame) override {
        EXPECT_TRUE(exec_.masked());
        ++executions;
        usize before = exec_.problems().size();
        exec_.execute(region, frame);
        for (usize i = before; i < exec_.problems().size(); ++i) ADD_FAILURE() << exec_.problems()[i];
    }

    u64 executions = 0;

private:
    pmulab::SimExec exec_;
};

// A Platform over a SimMachine with the SimMeasure engine services.
class SimPlatform final : public Platform {
public:
    explicit SimPlatform(sim::SimMachine& m) : m_(m), mp_(m) {}
    Hw& hw() override { return m_; }
    void write(StrView text) override { out.append(text.ptr, text.len); }
    MeasurePlatform* measure() override { return &mp_; }
    // A firmware timer over the simulated TSC: `stall_ticks_per_us` ticks per microsecond
    // (0: no timer).
    Status stall_us(u32 us) override {
        if (!stall_ticks_per_us) return Error::make(Errc::unsupported, "no firmware timer (simulated)");
        sim::SimCpu& c = m_.cpu(m_.current_cpu());
        c.set_tsc(c.tsc() + u64(us) * stall_ticks_per_us);
        return ok_status();
    }
    const char* stall_source() override { return "sim_stall"; }
    const char* stall_what() override { return "the simulated firmware timer"; }
    SimMeasure& engine() { return mp_; }
    std::string out;
    u64 stall_ticks_per_us = 0;

private:
    sim::SimMachine& m_;
    SimMeasure mp_;
};

// The values of the WRMSRs to `msr` on `c` that completed (its log), in order.
inline std::vector<u64> writes_to(const sim::SimCpu& c, u32 msr) {
    std::vector<u64> v;
    for (const sim::LogEntry& e : c.writes())
        if (e.addr == msr && e.vector == 0) v.push_back(e.value);
    return v;
}

}  // namespace simm
