#include "fault.h"
#include "bsp_watchdog.h"
#include "efi_platform.h"

namespace pmulab::efi {

namespace {

EFI_GUID kMpServicesGuid = PMULAB_MP_SERVICES_GUID;

}  // namespace

const char* status_name(EFI_STATUS s) {
    switch (s) {
        case EFI_SUCCESS: return "EFI_SUCCESS";
        case EFI_LOAD_ERROR: return "EFI_LOAD_ERROR";
        case EFI_INVALID_PARAMETER: return "EFI_INVALID_PARAMETER";
        case EFI_UNSUPPORTED: return "EFI_UNSUPPORTED";
        case EFI_BAD_BUFFER_SIZE: return "EFI_BAD_BUFFER_SIZE";
        case EFI_BUFFER_TOO_SMALL: return "EFI_BUFFER_TOO_SMALL";
        case EFI_NOT_READY: return "EFI_NOT_READY";
        case EFI_DEVICE_ERROR: return "EFI_DEVICE_ERROR";
        case EFI_WRITE_PROTECTED: return "EFI_WRITE_PROTECTED";
        case EFI_OUT_OF_RESOURCES: return "EFI_OUT_OF_RESOURCES";
        case EFI_VOLUME_FULL: return "EFI_VOLUME_FULL";
        case EFI_NOT_FOUND: return "EFI_NOT_FOUND";
        case EFI_ACCESS_DENIED: return "EFI_ACCESS_DENIED";
        case EFI_TIMEOUT: return "EFI_TIMEOUT";
        case EFI_NOT_STARTED: return "EFI_NOT_STARTED";
        case EFI_ALREADY_STARTED: return "EFI_ALREADY_STARTED";
        case EFI_ABORTED: return "EFI_ABORTED";
        default: return "EFI error";
    }
}

Status EfiHw::init() {
    void* iface = nullptr;
    EFI_STATUS st = gBS->LocateProtocol(&kMpServicesGuid, nullptr, &iface);
    if (st != EFI_SUCCESS || !iface) {
        // Single-processor firmware may not install MP Services at all.
        mp_ = nullptr;
        count_ = 1;
        bsp_ = 0;
        topo_.resize(1);
        topo_[0].bsp = true;
        topo_[0].apic_id = (cpuid(1, 0).ebx >> 24) & 0xff;
        return ok_status();
    }
    mp_ = static_cast<EfiMpServicesProtocol*>(iface);
    UINTN n = 0, enabled = 0;
    st = mp_->GetNumberOfProcessors(mp_, &n, &enabled);
    if (st != EFI_SUCCESS || n == 0)
        return Error::make(Errc::io, "MP Services GetNumberOfProcessors failed: %s", status_name(st));
    count_ = u32(n);
    topo_.resize(count_);
    for (u32 i = 0; i < count_; ++i) {
        EfiProcessorInformation info{};
        bool ext = true;
        st = mp_->GetProcessorInfo(mp_, UINTN(i) | kCpuV2ExtendedTopology, &info);
        if (st == EFI_INVALID_PARAMETER || st == EFI_NOT_FOUND) {
            // Firmware older than PI 1.7 rejects the extended-topology flag.
            ext = false;
            st = mp_->GetProcessorInfo(mp_, UINTN(i), &info);
        }
        if (st != EFI_SUCCESS)
            return Error::make(Errc::io, "MP Services GetProcessorInfo(%u) failed: %s", i, status_name(st));
        CpuTopology& t = topo_[i];
        t.apic_id = info.ProcessorId;
        t.bsp = info.StatusFlag & kProcessorAsBspBit;
        t.enabled = info.StatusFlag & kProcessorEnabledBit;
        t.healthy = info.StatusFlag & kProcessorHealthStatusBit;
        t.package = info.Location.Package;
        t.core = info.Location.Core;
        t.thread = info.Location.Thread;
        t.has_extended = ext;
        if (ext) {
            t.ext_package = info.Location2.Package;
            t.ext_module = info.Location2.Module;
            t.ext_tile = info.Location2.Tile;
            t.ext_die = info.Location2.Die;
            t.ext_core = info.Location2.Core;
            t.ext_thread = info.Location2.Thread;
        }
        if (t.bsp) bsp_ = i;
    }
    CpuidSnapshot snap;
    capture_cpuid(*this, &snap);
    levels_ = decode_topology_levels(snap);
    Vec<u64> apic_ids;
    for (u32 i = 0; i < count_; ++i) apic_ids.push(topo_[i].apic_id);
    workers_.init(mp_, count_, apic_ids.data());
    return ok_status();
}

CpuidRegs EfiHw::cpuid(u32 leaf, u32 subleaf) {
    CpuidRegs r;
    asm volatile("cpuid" : "=a"(r.eax), "=b"(r.ebx), "=c"(r.ecx), "=d"(r.edx) : "a"(leaf), "c"(subleaf));
    return r;
}

Result<u64> EfiHw::rdmsr(u32 msr) {
    u64 v = 0;
    u32 vec = pmulab_safe_rdmsr(msr, &v);
    if (vec) return msr_fault_error("RDMSR", msr, 0, u8(vec));
    return v;
}

Status EfiHw::wrmsr(u32 msr, u64 value) {
    u32 vec = pmulab_safe_wrmsr(msr, value);
    if (vec) return msr_fault_error("WRMSR", msr, value, u8(vec));
    return ok_status();
}

Result<u64> EfiHw::rdpmc(u32 index) {
    u64 v = 0;
    u32 vec = pmulab_safe_rdpmc(index, &v);
    if (vec) return pmc_fault_error(index, u8(vec));
    return v;
}

u64 EfiHw::rdtsc() { return rdtsc_now(); }

// Configuration mechanism #1 (PCI Local Bus Specification 3.0 §3.2.2.3.2): the address
// (bit 31 enable, bus 23:16, device 15:11, function 10:8, register 7:2) to CF8H, the
// dword from CFCH. The BSP alone calls it (no other agent of pmulab uses the ports).
Result<u32> EfiHw::pci_read32(u32 bus, u32 dev, u32 fn, u32 offset) {
    if (bus > 255 || dev > 31 || fn > 7 || offset > 0xFC || (offset & 3))
        return Error::make(Errc::invalid_argument, "PCI %x:%x.%x offset 0x%x is not a configuration dword", bus, dev,
                           fn, offset);
    u32 addr = 0x80000000u | (bus << 16) | (dev << 11) | (fn << 8) | offset;
    u32 v = 0;
    asm volatile("outl %0, %1" ::"a"(addr), "Nd"(u16(0xCF8)));
    asm volatile("inl %1, %0" : "=a"(v) : "Nd"(u16(0xCFC)));
    return v;
}

u32 EfiHw::current_cpu() {
    if (!mp_) return 0;
    UINTN n = 0;
    if (mp_->WhoAmI(mp_, &n) != EFI_SUCCESS) return bsp_;
    return u32(n);
}

Result<CpuTopology> EfiHw::topology(u32 cpu) {
    if (cpu >= count_) return Error::make(Errc::invalid_argument, "no logical processor %u", cpu);
    return topo_[cpu];
}

Status EfiHw::run_on_cpu(u32 cpu, CpuFn fn, void* ctx) {
    if (cpu >= count_)
        return Error::make(Errc::invalid_argument, "no logical processor %u (there are %u)", cpu, count_);
    u32 self = current_cpu();
    if (cpu == self) {
        // The BSP runs with pmulab's IDT loaded for the whole session. A job that runs
        // generated code (code_timeout set) is watched by a halted AP, which sends an NMI
        // when it overruns (ap_worker.h); with no AP that can watch, by an HPET timer routed
        // as an NMI (bsp_watchdog.h).
        bool watched = false, timed = false;
        if (code_timeout() && self == bsp_) {
            for (u32 w = 0; w < count_ && !watched; ++w)
                if (w != bsp_ && topo_[w].enabled)
                    watched = workers_.watch_begin(w, topo_[bsp_].apic_id, code_timeout()).ok();
            // Neither: user code was refused before (MeasurePlatform::can_stop); built-in
            // kernels end by themselves and run unwatched.
            if (!watched) timed = timer_watch_begin(topo_[bsp_].apic_id, code_timeout()).ok();
        }
        fn(ctx);
        if (watched) workers_.watch_end();
        if (timed) return timer_watch_end();
        return ok_status();
    }
    if (self != bsp_)
        return Error::make(Errc::internal, "CPU %u cannot hand a job to CPU %u: only the BSP dispatches", self, cpu);
    if (!topo_[cpu].enabled)
        return Error::make(Errc::unsupported, "logical processor %u is disabled by the firmware", cpu);
    // The BSP leaves the core to an SMT sibling that works (docs/measure.md "SMT siblings").
    return workers_.run(cpu, fn, ctx, same_core(levels_, topo_[cpu].apic_id, topo_[bsp_].apic_id));
}

SiblingState EfiHw::prepare_siblings(u32 cpu) {
    SmtSiblings sib;
    if (!find_smt_siblings(*this, cpu, &sib).ok() || !sib.count) return SiblingState::none;
    SiblingState st = SiblingState::none;
    for (u32 k = 0; k < sib.count; ++k) {
        u32 s = sib.cpu[k];
        SiblingState one = SiblingState::idle;  // the firmware's wait (pmulab could not start its worker)
        if (s == bsp_) {
            one = workers_.quiet_wait() ? SiblingState::halted : SiblingState::busy;
        } else {
            Result<bool> halts = workers_.park(s);
            if (halts.ok()) one = halts.value() ? SiblingState::halted : SiblingState::busy;
        }
        st = sibling_merge(st, one);
    }
    return st;
}

}  // namespace pmulab::efi
