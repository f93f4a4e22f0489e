#include "measure_efi.h"

#include "ap_worker.h"
#include "bsp_watchdog.h"
#include "efi_defs.h"
#include "efi_platform.h"
#include "fault.h"
#include "local_apic.h"
#include "base/box.h"
#include "measure/kernel_bodies.h"
#include "measure/memory.h"
#include "x86/ibs_regs.h"
#include "x86/paging_regs.h"

namespace pmulab::efi {

namespace {

constexpr usize kPageBytes = 4096;
constexpr usize kMemoryMapBytes = 64 << 10;  // ~1300 descriptors of 48 bytes

using regs::ApicLvt;
using regs::ApicReg;
using regs::kApicLvtCount;
using regs::kApicLvtEntries;

// TPR = F0H: every fixed interrupt (priority class <= 15) stays pending (SDM Vol. 3A
// §11.8.3.1 "Task and Processor Priorities").
constexpr regs::ApicTpr kTprBlockAll = regs::ApicTpr().set_priority_class(15);

// What irq_mask saved, in the engine's opaque IrqSaved.
struct Saved {
    u64 mode;
    u64 rflags;
    u64 apic_base;  // IA32_APIC_BASE (--irq lvt)
    u64 present;    // bit i: kApicLvtEntries[i] exists
    u64 tpr;
    u64 lvt[kApicLvtCount];
};
static_assert(sizeof(Saved) <= sizeof(IrqSaved), "IrqSaved too small");

constexpr unsigned lvt_index(ApicReg r) {
    for (unsigned i = 0; i < kApicLvtCount; ++i)
        if (kApicLvtEntries[i].reg == r) return i;
    return kApicLvtCount;
}
constexpr unsigned kLvtPerfIndex = lvt_index(ApicReg::lvt_perf);
static_assert(kLvtPerfIndex < kApicLvtCount);

// --irq lvt: masks every LVT entry the APIC has (SDM Vol. 3A §11.5.1) and raises the TPR.
Status mask_lvt(Saved& s) {
    Result<LocalApic> found = LocalApic::this_cpu();
    if (!found.ok()) return found.error();
    const LocalApic& apic = found.value();
    if (!apic.enabled())
        return Error::make(Errc::unsupported, "--irq lvt: the local APIC is disabled (IA32_APIC_BASE = 0x%llx)",
                           (unsigned long long)apic.base().raw());
    s.apic_base = apic.base().raw();
    Result<regs::ApicVersion> ver = apic.get<regs::ApicVersion>(ApicReg::version);
    if (!ver.ok()) return ver.error();
    Result<u32> tpr = apic.read(ApicReg::tpr);
    if (!tpr.ok()) return tpr.error();
    s.tpr = tpr.value();
    for (unsigned i = 0; i < kApicLvtCount; ++i) {
        if (ver.value().max_lvt() < kApicLvtEntries[i].min_max_lvt) continue;
        Result<u32> v = apic.read(kApicLvtEntries[i].reg);
        if (!v.ok()) continue;  // x2APIC without this entry (#GP caught)
        s.present |= u64(1) << i;
        s.lvt[i] = v.value();
    }
    // While a PMI handler is attached its LVT entry stays as the measurement set it: the
    // PMI is an NMI, which no LVT mask of the others' or TPR holds back anyway.
    if (nmi_pmi_attached()) s.present &= ~(u64(1) << kLvtPerfIndex);
    for (unsigned i = 0; i < kApicLvtCount; ++i)
        if (s.present & (u64(1) << i)) (void)apic.put(kApicLvtEntries[i].reg, ApicLvt(s.lvt[i]).set_masked());
    (void)apic.put(ApicReg::tpr, kTprBlockAll);
    return ok_status();
}

}  // namespace

Result<void*> EfiMeasure::alloc_pages(usize bytes, bool executable) {
    EFI_PHYSICAL_ADDRESS addr = 0;
    UINTN pages = (bytes + kPageBytes - 1) / kPageBytes;
    // Generated code goes into EfiLoaderCode: firmware that enforces NX on data
    // allocations (PcdDxeNxMemoryProtectionPolicy) leaves loader code executable.
    EFI_STATUS st = gBS->AllocatePages(AllocateAnyPages, executable ? EfiLoaderCode : EfiLoaderData, pages, &addr);
    if (st != EFI_SUCCESS)
        return Error::make(Errc::io, "AllocatePages(%llu pages) failed: %s", (unsigned long long)pages,
                           status_name(st));
    return reinterpret_cast<void*>(uintptr_t(addr));
}

void EfiMeasure::free_pages(void* p, usize bytes) {
    if (!p) return;
    gBS->FreePages(EFI_PHYSICAL_ADDRESS(uintptr_t(p)), (bytes + kPageBytes - 1) / kPageBytes);
}

CodeSpan EfiMeasure::kernel_body(KernelId id) { return builtin_kernel_body(id); }

Status EfiMeasure::irq_mask(IrqMode mode, IrqSaved* out) {
    Saved s{};
    s.mode = u64(mode);
    s.rflags = read_rflags();
    if (mode == IrqMode::cli) {
        asm volatile("cli" ::: "memory");
        __builtin_memcpy(out, &s, sizeof s);
        return ok_status();
    }
    PMULAB_TRY(mask_lvt(s));
    __builtin_memcpy(out, &s, sizeof s);
    return ok_status();
}

void EfiMeasure::irq_restore(const IrqSaved& in) {
    Saved s;
    __builtin_memcpy(&s, &in, sizeof s);
    if (IrqMode(s.mode) == IrqMode::lvt) {
        LocalApic apic{regs::ApicBase(s.apic_base)};
        for (unsigned i = 0; i < kApicLvtCount; ++i)
            if (s.present & (u64(1) << i)) (void)apic.write(kApicLvtEntries[i].reg, u32(s.lvt[i]));
        (void)apic.write(ApicReg::tpr, u32(s.tpr));
        return;
    }
    if (s.rflags & kRflagsIf) asm volatile("sti" ::: "memory");
}

// ---- the PMU's interrupt (SDM Vol. 3A §11.5.1 "Local Vector Table") ----

namespace {
Result<LocalApic> pmi_apic() {
    Result<LocalApic> found = LocalApic::this_cpu();
    if (!found.ok()) return found.error();
    if (!found.value().enabled())
        return Error::make(Errc::unsupported, "the local APIC of this CPU is disabled (IA32_APIC_BASE = 0x%llx)",
                           (unsigned long long)found.value().base().raw());
    return found.value();
}
}  // namespace

Result<u32> EfiMeasure::lvt_perf() {
    Result<LocalApic> apic = pmi_apic();
    if (!apic.ok()) return apic.error();
    return apic.value().read(ApicReg::lvt_perf);
}

Status EfiMeasure::set_lvt_perf(u32 value) {
    Result<LocalApic> apic = pmi_apic();
    if (!apic.ok()) return apic.error();
    return apic.value().write(ApicReg::lvt_perf, value);
}

namespace {
// Extended LVT entry n of `apic` (APM Vol. 2 §16.4.5 "Extended Interrupts"): the APIC has
// the extended register space (version register bit 31) and more than n entries (Extended
// APIC Feature register, ExtLvtCnt).
Result<ApicReg> ext_lvt_reg(const LocalApic& apic, unsigned n) {
    Result<u32> ver = apic.read(ApicReg::version);
    if (!ver.ok()) return ver.error();
    if (!(ver.value() & regs::ibs::kApicVersionExtSpace))
        return Error::make(Errc::unsupported,
                           "the local APIC has no extended register space (APIC version 0x%x: bit 31 ExtApicSpace is "
                           "0), so no extended LVT entry",
                           ver.value());
    Result<u32> feat = apic.read(ApicReg(regs::ibs::kApicExtFeature));
    if (!feat.ok()) return feat.error();
    const u64 count = regs::ibs::ApicExtFeature(feat.value()).ext_lvt_count();
    if (n >= count)
        return Error::make(Errc::unsupported, "the local APIC has %llu extended LVT entries; entry %u does not exist",
                           (unsigned long long)count, n);
    return ApicReg(regs::ibs::ext_lvt_offset(n));
}
}  // namespace

Result<u32> EfiMeasure::lvt_ext(unsigned n) {
    Result<LocalApic> apic = pmi_apic();
    if (!apic.ok()) return apic.error();
    Result<ApicReg> r = ext_lvt_reg(apic.value(), n);
    if (!r.ok()) return r.error();
    return apic.value().read(r.value());
}

Status EfiMeasure::set_lvt_ext(unsigned n, u32 value) {
    Result<LocalApic> apic = pmi_apic();
    if (!apic.ok()) return apic.error();
    Result<ApicReg> r = ext_lvt_reg(apic.value(), n);
    if (!r.ok()) return r.error();
    return apic.value().write(r.value(), value);
}

Status EfiMeasure::pmi_attach(PmiHandler* h) {
    if (!h) return Error::make(Errc::internal, "pmi_attach: no handler");
    if (nmi_pmi_attached()) return Error::make(Errc::internal, "a PMI handler is attached already (one CPU at a time)");
    Result<u32> lvt = lvt_perf();
    if (!lvt.ok()) return lvt.error().with_context("the PMU's interrupt");
    lvt_saved_ = lvt.value();
    nmi_pmi_attach(h);
    return ok_status();
}

void EfiMeasure::pmi_detach() {
    if (!nmi_pmi_attached()) return;
    // The entry first (masked, so that no PMI comes between), then the routing: an NMI in
    // between still finds the handler.
    (void)set_lvt_perf(u32(ApicLvt(lvt_saved_).set_masked().raw()));
    (void)set_lvt_perf(lvt_saved_);
    nmi_pmi_attach(nullptr);
}

void EfiMeasure::serialize() {
    u32 a = 0, b, c = 0, d;
    asm volatile("cpuid" : "+a"(a), "=b"(b), "+c"(c), "=d"(d)::"memory");
}

// The watchdog of jobs that run generated code: on an AP the BSP's wait (ap_worker.cpp
// ApWorkers::post) and on the BSP a halted AP (ApWorkers::watch_begin) send an NMI.
void EfiMeasure::set_job_timeout(u32 seconds) { set_code_timeout(seconds); }

Status EfiMeasure::can_stop(Hw& hw, u32 cpu) {
    if (!cpus_ || cpu != cpus_->bsp()) return ok_status();
    for (u32 c = 0; c < hw.cpu_count(); ++c)
        if (c != cpu && cpus_->enabled(c)) return ok_status();
    Status s = timer_watch_probe(cpus_->apic_id(cpu));
    if (s.ok()) return s;
    return s.error().with_context("code on the BSP alone cannot be stopped if it never ends (no AP to watch it, no "
                                  "timer to route as an NMI), so pmulab does not run it");
}

void EfiMeasure::execute(const Region& region, RegionFrame* frame) {
    auto fn = reinterpret_cast<void (*)(void*)>(const_cast<void*>(region.code));
    generated_code_enter(region.code, region.code_size);
    pmulab_gen_call(fn, frame);
    u64 f[4];
    if (generated_code_leave(f)) {
        frame->faulted = 1;
        frame->fault_vector = f[0];
        frame->fault_rip = f[1];
        frame->fault_error = f[2];
        frame->fault_cr2 = f[3];
    }
    asm volatile("" ::: "memory");
}

// ---- vector state (SDM Vol. 1 §13 "Managing State Using the XSAVE Feature Set") ----
//
// Firmware may leave CR4.OSXSAVE clear, and then every VEX/EVEX instruction raises
// #UD. Around each measurement job the measuring CPU sets CR4.OSXSAVE (bit 18, SDM
// Vol. 3A §2.5) and XCR0 to every component CPUID.(0DH,0) reports, saves the
// firmware's extended state with XSAVE, and afterwards restores it, XCR0 and CR4.

namespace {
constexpr u64 kCr4Osxsave = u64(1) << 18;
constexpr u32 kCpuid1EcxXsave = u32(1) << 26;
u64 read_cr4() {
    u64 v;
    asm volatile("mov %%cr4, %0" : "=r"(v));
    return v;
}
void write_cr4(u64 v) { asm volatile("mov %0, %%cr4" ::"r"(v) : "memory"); }
u64 read_cr3() {
    u64 v;
    asm volatile("mov %%cr3, %0" : "=r"(v));
    return v;
}
void write_cr3(u64 v) { asm volatile("mov %0, %%cr3" ::"r"(v) : "memory"); }
u64 xgetbv0() {
    u32 lo, hi;
    asm volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return u64(lo) | (u64(hi) << 32);
}
void xsetbv0(u64 v) { asm volatile("xsetbv" ::"a"(u32(v)), "d"(u32(v >> 32)), "c"(0) : "memory"); }
}  // namespace

Status EfiMeasure::prepare() {
    if (!overlay_.ready()) {
        constexpr usize pages = PageOverlay::pages_for(kMaxAbsent);
        Result<void*> p = alloc_pages(pages * kPageTableBytes, false);
        if (!p.ok()) return p.error().with_context("the page-table overlay (%u pages)", unsigned(pages));
        overlay_.init(static_cast<u64*>(p.value()), pages);
    }
    if (xsave_area_ || xsave_) return ok_status();
    CpuidRegs l1 = hw_.cpuid(1, 0);
    CpuidRegs l0 = hw_.cpuid(0, 0);
    if (!(l1.ecx & kCpuid1EcxXsave) || l0.eax < 0xD) return ok_status();
    CpuidRegs d = hw_.cpuid(0xD, 0);
    usize bytes = usize(d.ecx) + 64;
    Result<void*> p = alloc_pages(bytes, false);
    if (!p.ok()) return p.error().with_context("the XSAVE area (%u bytes)", unsigned(d.ecx));
    xsave_area_ = static_cast<u8*>(p.value());  // page-aligned, so 64-byte aligned
    xsave_bytes_ = bytes;
    for (usize i = 0; i < bytes; ++i) xsave_area_[i] = 0;
    xcr0_all_ = u64(d.eax) | (u64(d.edx) << 32);
    xsave_ = true;
    return ok_status();
}

void EfiMeasure::finish() {
    if (overlay_.ready()) {
        free_pages(overlay_.pool(), PageOverlay::pages_for(kMaxAbsent) * kPageTableBytes);
        overlay_.init(nullptr, 0);
    }
    if (xsave_area_) free_pages(xsave_area_, xsave_bytes_);
    xsave_area_ = nullptr;
    xsave_ = false;
}

// The memory map (UEFI spec §7.2 "Memory Allocation Services", GetMemoryMap) into a
// buffer of pmulab's own image, so that reading it allocates nothing: the map stays as
// it is. EfiConventionalMemory is free memory.
Status EfiMeasure::memory_map(MemoryMapInfo* out) {
    static u8 buf[kMemoryMapBytes] __attribute__((aligned(16)));
    UINTN size = sizeof buf, key = 0, dsize = 0;
    UINT32 ver = 0;
    EFI_STATUS st = gBS->GetMemoryMap(&size, reinterpret_cast<EFI_MEMORY_DESCRIPTOR*>(buf), &key, &dsize, &ver);
    if (st != EFI_SUCCESS)
        return Error::make(Errc::io, "GetMemoryMap failed: %s (%llu bytes needed)", status_name(st),
                           (unsigned long long)size);
    *out = MemoryMapInfo();
    for (UINTN off = 0; dsize && off + dsize <= size; off += dsize) {
        const EFI_MEMORY_DESCRIPTOR* d = reinterpret_cast<const EFI_MEMORY_DESCRIPTOR*>(buf + off);
        ++out->descriptors;
        if (d->Type == EfiConventionalMemory) out->add(d->PhysicalStart, u64(d->NumberOfPages) * kPageBytes);
    }
    return ok_status();
}

// At an address the memory map says is free, so that the alignment costs no extra pages;
// always through the map (4 KiB alignment too): the first region that holds the area, so
// that every size check_r14_area accepts is allocated, wherever the region lies.
Result<void*> EfiMeasure::alloc_aligned(usize bytes, u64 align, u64 offset) {
    if (align < kPageBytes) align = kPageBytes;
    Box<MemoryMapInfo> m = make_box<MemoryMapInfo>();
    PMULAB_TRY(memory_map(m.get()));
    u64 at = 0;
    if (bytes < offset || !find_aligned_fit(*m, bytes - offset, align, offset, 0, &at))
        return Error::make(Errc::unsupported, "no free region of the memory map holds it (largest: %llu bytes)",
                           (unsigned long long)m->largest().bytes);
    EFI_PHYSICAL_ADDRESS addr = at - offset;
    UINTN pages = (bytes + kPageBytes - 1) / kPageBytes;
    EFI_STATUS st = gBS->AllocatePages(AllocateAddress, EfiLoaderData, pages, &addr);
    if (st != EFI_SUCCESS)
        return Error::make(Errc::io, "AllocatePages(%llu pages at 0x%llx) failed: %s", (unsigned long long)pages,
                           (unsigned long long)addr, status_name(st));
    return reinterpret_cast<void*>(uintptr_t(addr));
}

Status EfiMeasure::vector_enter(VectorSaved* s) {
    PMULAB_TRY(paging_enter(s));
    s->word[0] = read_cr4();
    s->word[2] = 0;
    if (!xsave_) return ok_status();
    if (!(s->word[0] & kCr4Osxsave)) write_cr4(s->word[0] | kCr4Osxsave);
    s->word[1] = xgetbv0();
    // Every component the CPU has is saved and restored, not only those the firmware
    // enabled: with the firmware's XCR0 = 1 (x87 only), XSAVE would leave MXCSR and the
    // XMM registers out, and code that unmasks SIMD exceptions (--init with LDMXCSR)
    // would leave them unmasked for the firmware. (The header's XSTATE_BV must be clear
    // in a fresh area: zeroed once in prepare, XSAVE keeps it valid.)
    if (xcr0_all_ != s->word[1]) xsetbv0(xcr0_all_);
    u64 mask = xcr0_all_;
    asm volatile("xsave64 (%0)" ::"r"(xsave_area_), "a"(u32(mask)), "d"(u32(mask >> 32)) : "memory");
    s->word[2] = 1;
    return ok_status();
}

void EfiMeasure::vector_leave(const VectorSaved& s) {
    if (s.word[2]) {
        if (xgetbv0() != xcr0_all_) xsetbv0(xcr0_all_);
        u64 mask = xcr0_all_;
        asm volatile("xrstor64 (%0)" ::"r"(xsave_area_), "a"(u32(mask)), "d"(u32(mask >> 32)) : "memory");
        if (s.word[1] != xcr0_all_) xsetbv0(s.word[1]);
    }
    if (read_cr4() != s.word[0]) write_cr4(s.word[0]);
    if (s.word[3]) write_cr3(s.word[3]);
}

// ---- page 0 and the guard pages (SDM Vol. 3A §4.5 "4-Level Paging") ----
//
// Around each run, inside the interrupt masking, the measuring CPU (BSP or AP; they all
// use the firmware's CR3) loads CR3 with pmulab's overlay of the firmware's tables
// (x86/page_overlay.h), in which page 0 and the guard pages around user code's scratch
// areas are not present, and afterwards loads the firmware's CR3 value again. The overlay
// is built afresh from the firmware's tables on every run, so it never holds stale
// entries, and no firmware code ever runs on it. The load flushes the TLB's non-global
// entries; INVLPG drops a global translation of an absent page (CR4.PGE). With 5-level
// paging (CR4.LA57) nothing is made absent.

Status EfiMeasure::paging_enter(VectorSaved* s) {
    s->word[3] = 0;
    if (!overlay_.ready() || regs::Cr4Paging(read_cr4()).la57()) return ok_status();
    u64 fw = read_cr3();
    Result<u64> cr3 = overlay_.build(fw, absent_, absent_n_);
    if (!cr3.ok()) return cr3.error();
    write_cr3(cr3.value());
    for (usize i = 0; i < absent_n_; ++i) asm volatile("invlpg (%0)" ::"r"(uintptr_t(absent_[i])) : "memory");
    s->word[3] = fw;
    return ok_status();
}

Status EfiMeasure::guard_pages(const void* p, usize bytes, bool on) {
    u64 first = u64(uintptr_t(p)) & ~u64(kPageBytes - 1);
    u64 end = u64(uintptr_t(p)) + bytes;
    for (u64 a = first; a < end; a += kPageBytes) {
        usize at = 1;
        while (at < absent_n_ && absent_[at] != a) ++at;
        if (!on) {
            if (at < absent_n_) absent_[at] = absent_[--absent_n_];
            continue;
        }
        if (at < absent_n_) continue;
        if (absent_n_ == kMaxAbsent)
            return Error::make(Errc::internal, "more than %u guard pages", unsigned(kMaxAbsent - 1));
        absent_[absent_n_++] = a;
    }
    return ok_status();
}

SiblingState EfiMeasure::prepare_siblings(Hw& hw, u32 cpu) {
    return cpus_ ? cpus_->prepare_siblings(cpu) : MeasurePlatform::prepare_siblings(hw, cpu);
}

}  // namespace pmulab::efi
