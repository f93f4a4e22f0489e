// The local APIC of the calling CPU (registers: x86/apic_regs.h), in either mode: xAPIC
// registers are MMIO at the base IA32_APIC_BASE gives, x2APIC registers are MSRs (read and
// written through the fault layer, so a register the CPU lacks is an error, not a #GP).
// Every part of pmulab that touches an APIC goes through this: the AP workers' wake IPI
// and watchdog (ap_worker.h, ap_watchdog.cpp), `run --irq lvt` (measure_efi.cpp).
//
// A LocalApic is a description (mode and place), not a pointer to one CPU's APIC: every
// CPU's APIC is at the same MSRs or MMIO address, so the BSP's LocalApic serves an AP whose
// IA32_APIC_BASE says the same (same_place_as). No allocation, no boot services: usable on
// an AP.
#pragma once

#include "base/result.h"
#include "x86/apic_regs.h"

namespace pmulab::efi {

class LocalApic {
public:
    // No APIC: enabled() is false.
    constexpr LocalApic() = default;
    constexpr explicit LocalApic(regs::ApicBase base) : base_(base) {}
    // The calling CPU's IA32_APIC_BASE (SDM Vol. 3A §11.4.4). Errors: the RDMSR faulted.
    static Result<LocalApic> this_cpu();

    regs::ApicBase base() const { return base_; }
    bool enabled() const { return base_.enable(); }
    bool x2apic() const { return base_.extd(); }
    // The xAPIC MMIO base; 0 in x2APIC mode.
    u64 mmio() const { return x2apic() ? 0 : base_.mmio(); }
    // Both enabled, in the same mode and (xAPIC) at the same address.
    bool same_place_as(const LocalApic& o) const;

    // Register `r` of the calling CPU's APIC. Errors (x2APIC): the register does not exist.
    Result<u32> read(regs::ApicReg r) const;
    Status write(regs::ApicReg r, u32 value) const;
    template <typename T> Result<T> get(regs::ApicReg r) const {
        Result<u32> v = read(r);
        if (!v.ok()) return v.error();
        return T(v.value());
    }
    template <typename T> Status put(regs::ApicReg r, T value) const { return write(r, u32(value.raw())); }

    // Sends one IPI (SDM Vol. 3A §11.6 "Issuing Interprocessor Interrupts") to physical APIC
    // ID `apic_id`, with interrupts masked around it; xAPIC: after the previous one left.
    // Nothing without an enabled APIC.
    void send_ipi(u64 apic_id, regs::ApicIcr icr) const;
    // Stops the CPU `apic_id` where it is: INIT (level assert, then the de-assert older
    // xAPICs want). It waits for a SIPI, away from pmulab's memory, until the machine
    // restarts (SDM Vol. 3A §9.4 "Multiple-Processor (MP) Initialization").
    void send_init(u64 apic_id) const;

private:
    regs::ApicBase base_;
};

// RFLAGS (SDM Vol. 1 §3.4.3): IF is bit 9.
inline constexpr u64 kRflagsIf = u64(1) << 9;
inline u64 read_rflags() {
    u64 f;
    asm volatile("pushfq; popq %0" : "=r"(f));
    return f;
}

}  // namespace pmulab::efi
