// A MeasurePlatform (measure/measure.h) that hands every call to another: the measurement
// wrappers (TracePlatform's, ServeSession's) derive from it and override only what they
// change.
#pragma once

#include "measure/measure.h"

namespace pmulab {

class ForwardingMeasure : public MeasurePlatform {
public:
    explicit ForwardingMeasure(MeasurePlatform* inner = nullptr) : inner_(inner) {}
    void set_inner(MeasurePlatform* m) { inner_ = m; }
    Result<void*> alloc_pages(usize bytes, bool executable) override { return inner_->alloc_pages(bytes, executable); }
    void free_pages(void* p, usize bytes) override { inner_->free_pages(p, bytes); }
    CodeSpan kernel_body(KernelId id) override { return inner_->kernel_body(id); }
    Status irq_mask(IrqMode mode, IrqSaved* saved) override { return inner_->irq_mask(mode, saved); }
    void irq_restore(const IrqSaved& saved) override { inner_->irq_restore(saved); }
    void serialize() override { inner_->serialize(); }
    void execute(const Region& region, RegionFrame* frame) override { inner_->execute(region, frame); }
    Status vector_enter(VectorSaved* v) override { return inner_->vector_enter(v); }
    void vector_leave(const VectorSaved& v) override { inner_->vector_leave(v); }
    Status prepare() override { return inner_->prepare(); }
    void finish() override { inner_->finish(); }
    Status memory_map(MemoryMapInfo* out) override { return inner_->memory_map(out); }
    Result<void*> alloc_aligned(usize bytes, u64 align, u64 offset) override {
        return inner_->alloc_aligned(bytes, align, offset);
    }
    void set_job_timeout(u32 seconds) override { inner_->set_job_timeout(seconds); }
    Status guard_pages(const void* p, usize bytes, bool on) override { return inner_->guard_pages(p, bytes, on); }
    Status run_on_cpu(Hw& hw, u32 cpu, CpuFn fn, void* ctx) override { return inner_->run_on_cpu(hw, cpu, fn, ctx); }
    SiblingState prepare_siblings(Hw& hw, u32 cpu) override { return inner_->prepare_siblings(hw, cpu); }
    Result<u32> lvt_perf() override { return inner_->lvt_perf(); }
    Status set_lvt_perf(u32 value) override { return inner_->set_lvt_perf(value); }
    Result<u32> lvt_ext(unsigned n) override { return inner_->lvt_ext(n); }
    Status set_lvt_ext(unsigned n, u32 value) override { return inner_->set_lvt_ext(n, value); }
    Status pmi_attach(PmiHandler* h) override { return inner_->pmi_attach(h); }
    void pmi_detach() override { inner_->pmi_detach(); }
    Result<u32> run_with_nmis(Hw& hw, u32 cpu, NmiProbe& probe, CpuFn fn, void* ctx) override {
        return inner_->run_with_nmis(hw, cpu, probe, fn, ctx);
    }

protected:
    ~ForwardingMeasure() = default;
    MeasurePlatform& inner() { return *inner_; }

private:
    MeasurePlatform* inner_;
};

}  // namespace pmulab
