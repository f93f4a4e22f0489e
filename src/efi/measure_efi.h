// The measurement engine's platform services on UEFI: pages from AllocatePages,
// the kernel bodies of kernel_bodies.S, interrupt masking (cli or local APIC LVT), and
// calling generated code.
#pragma once

#include "measure/measure.h"
#include "x86/page_overlay.h"

namespace pmulab::efi {

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
    Status guard_pages(const void* p, usize bytes, bool on) override;

private:
    Hw& hw_;
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
