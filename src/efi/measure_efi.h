// The measurement engine's platform services on UEFI: pages from AllocatePages,
// the kernel bodies of kernel_bodies.S, interrupt masking (cli or local APIC LVT), and
// calling generated code.
#pragma once

#include "measure/measure.h"
#include "x86/page_overlay.h"

namespace pmulab::efi {

class EfiHw;

class EfiMeasure final : public MeasurePlatform {
public:
    explicit EfiMeasure(Hw& hw) : hw_(hw) {}
    Result<void*> alloc_pages(usize bytes, bool executable) override;
    void free_pages(void* p, usize bytes) override;
    CodeSpan kernel_body(KernelId id) override;
    Status irq_mask(IrqMode mode, IrqSaved* saved) override;
    void irq_restore(const IrqSaved& saved) override;
    void serialize() override;
    void execute(const Region& region, RegionFrame* frame) override;
    Status prepare() override;
    void finish() override;
    Status memory_map(MemoryMapInfo* out) override;
    Result<void*> alloc_aligned(usize bytes, u64 align, u64 offset) override;
    Status vector_enter(VectorSaved* saved) override;
    void vector_leave(const VectorSaved& saved) override;
    void set_job_timeout(u32 seconds) override;
    // The BSP alone (no other enabled CPU to watch it): only where bsp_watchdog.h can arm.
    Status can_stop(Hw& hw, u32 cpu) override;
    Status guard_pages(const void* p, usize bytes, bool on) override;
    // The PMU's interrupt on the calling CPU (any CPU; no allocation, no boot services):
    // its local APIC's LVT performance-counter entry, xAPIC or x2APIC (local_apic.h), and
    // the NMI stub's handler (fault.h nmi_pmi_attach). pmi_attach saves the LVT entry and
    // pmi_detach restores it and the NMI routing exactly.
    Result<u32> lvt_perf() override;
    Status set_lvt_perf(u32 value) override;
    // The AMD extended LVT entries (IBS's interrupt, pmu/ibs.h): APIC 500h + 10h * n.
    Result<u32> lvt_ext(unsigned n) override;
    Status set_lvt_ext(unsigned n, u32 value) override;
    Status pmi_attach(PmiHandler* h) override;
    void pmi_detach() override;
    // selftest's nmi-path check (nmi_probe.cpp): another CPU sends the NMIs.
    Result<u32> run_with_nmis(Hw& hw, u32 cpu, NmiProbe& probe, CpuFn fn, void* ctx) override;
    // The measured core's SMT siblings halted (EfiHw::prepare_siblings).
    SiblingState prepare_siblings(Hw& hw, u32 cpu) override;
    // The CPUs' runner (EfiPlatform sets it): run_with_nmis needs two CPUs at once.
    void set_cpus(EfiHw* cpus) { cpus_ = cpus; }

private:
    Hw& hw_;
    EfiHw* cpus_ = nullptr;
    u32 lvt_saved_ = 0;         // the LVT performance-counter entry at pmi_attach (one CPU at a time)
    bool xsave_ = false;        // CPUID.01H:ECX.XSAVE[bit 26]
    u64 xcr0_all_ = 0;          // CPUID.(0DH,0):EDX:EAX, the XCR0 bits the CPU supports
    u8* xsave_area_ = nullptr;  // 64-byte aligned, CPUID.(0DH,0).ECX bytes (one CPU at a time)
    usize xsave_bytes_ = 0;
    // Not present while a region runs: page 0 and the guard pages (absent_[1..n)).
    static constexpr usize kMaxAbsent = 32;
    u64 absent_[kMaxAbsent] = {};
    usize absent_n_ = 1;
    PageOverlay overlay_;  // its pages from prepare(); built on the measuring CPU (one at a time)
    Status paging_enter(VectorSaved* saved);
};

}  // namespace pmulab::efi
