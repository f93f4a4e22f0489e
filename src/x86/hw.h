// The hardware seam. Everything in the portable core that touches the CPU does it
// through this interface; the EFI build implements it with inline assembly and MP
// Services, the host tests with a simulated CPU (src/sim/sim_cpu.*);
// --trace-msr wraps either in MsrTrace (x86/msr_trace.h).
//
// Operations other than run_on_cpu act on the logical processor the caller is
// running on. run_on_cpu(i, fn) runs fn on logical processor i and returns when
// it is done. Inside fn only the per-CPU operations may be used (on EFI, an AP may
// not call boot services: no allocation, no output).
#pragma once

#include "base/result.h"

namespace pmulab {

struct CpuidRegs {
    u32 eax = 0, ebx = 0, ecx = 0, edx = 0;
    bool operator==(const CpuidRegs& o) const { return eax == o.eax && ebx == o.ebx && ecx == o.ecx && edx == o.edx; }
};

// Interrupt vectors of the faults pmulab expects from MSR/PMC access.
enum : u8 { kVectorUD = 6, kVectorGP = 13 };

// Where the firmware places a logical processor (EFI_CPU_PHYSICAL_LOCATION and,
// when the firmware supports it, EFI_CPU_PHYSICAL_LOCATION2).
struct CpuTopology {
    u64 apic_id = 0;
    bool bsp = false;
    bool enabled = true;
    bool healthy = true;
    u32 package = 0, core = 0, thread = 0;
    bool has_extended = false;
    u32 ext_package = 0, ext_die = 0, ext_tile = 0, ext_module = 0, ext_core = 0, ext_thread = 0;
};

// One MSR and a value for it: a write to perform (start/stop of counting, an event's
// model-specific MSR), or a value saved to put back.
struct MsrValue {
    u32 msr = 0;
    u64 value = 0;
};

using CpuFn = void (*)(void* ctx);

class MsrTrace;  // x86/msr_trace.h

class Hw {
public:
    virtual CpuidRegs cpuid(u32 leaf, u32 subleaf) = 0;
    // Faults (#GP/#UD) come back as Errc::fault errors naming the register.
    virtual Result<u64> rdmsr(u32 msr) = 0;
    virtual Status wrmsr(u32 msr, u64 value) = 0;
    virtual Result<u64> rdpmc(u32 index) = 0;
    virtual u64 rdtsc() = 0;

    virtual u32 cpu_count() = 0;
    // Index (0-based, MP Services numbering) of the processor the caller runs on.
    virtual u32 current_cpu() = 0;
    virtual Result<CpuTopology> topology(u32 cpu) = 0;
    virtual Status run_on_cpu(u32 cpu, CpuFn fn, void* ctx) = 0;
    // A dword of PCI configuration space, segment 0 (PCI Local Bus Specification 3.0
    // §3.2.2.3.2, configuration mechanism #1: ports CF8H/CFCH): offset < 256, dword-aligned.
    // Errc::unsupported where the implementation has none.
    // (Inline: the tests' fakes derive from Hw with RTTI, the core has no key function.)
    virtual Result<u32> pci_read32(u32 bus, u32 dev, u32 fn, u32 offset) {
        return Error::make(Errc::unsupported, "no PCI configuration space access here (%02x:%02x.%u offset 0x%x)", bus,
                           dev, fn, offset);
    }
    // The --trace-msr layer when this Hw is one (msr_trace.h), else null: the engine
    // tells it what generated code does and where each run begins and ends.
    virtual MsrTrace* msr_trace() { return nullptr; }

protected:
    ~Hw() = default;
};

// Runs a callable on logical processor `cpu` through Hw::run_on_cpu: the adapter
// from a lambda (captured by reference, called with no arguments) to the CpuFn/void*
// pair, instead of one context struct and trampoline per call site. No allocation:
// the callable stays where the caller keeps it, and run_on_cpu returns only when it
// has run. cpu_call(fn) is the same pair for other runners with run_on_cpu's shape
// (MeasurePlatform::run_on_cpu).
struct CpuCall {
    CpuFn fn;
    void* ctx;
};
template <typename F> CpuCall cpu_call(F& callable) {
    using T = typename remove_ref<F>::type;
    CpuFn fn = [](void* p) { (*static_cast<T*>(p))(); };
    return CpuCall{fn, const_cast<void*>(static_cast<const void*>(&callable))};
}
template <typename F> Status run_on(Hw& hw, u32 cpu, F&& callable) {
    CpuCall c = cpu_call(callable);
    return hw.run_on_cpu(cpu, c.fn, c.ctx);
}

// Standard messages for faults, shared by all Hw implementations so that the
// same failure reads the same everywhere.
Error msr_fault_error(const char* op, u32 msr, u64 value, u8 vector);
Error pmc_fault_error(u32 index, u8 vector);
const char* vector_name(u8 vector);

}  // namespace pmulab
