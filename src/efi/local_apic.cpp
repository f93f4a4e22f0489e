#include "local_apic.h"

#include "fault.h"
#include "x86/hw.h"
#include "x86/msr_addr.h"

namespace pmulab::efi {

using regs::ApicIcr;
using regs::ApicReg;

Result<LocalApic> LocalApic::this_cpu() {
    u64 raw = 0;
    if (u32 vec = pmulab_safe_rdmsr(msr::IA32_APIC_BASE, &raw))
        return msr_fault_error("RDMSR", msr::IA32_APIC_BASE, 0, u8(vec));
    return LocalApic(regs::ApicBase(raw));
}

bool LocalApic::same_place_as(const LocalApic& o) const {
    return enabled() && o.enabled() && x2apic() == o.x2apic() && (x2apic() || base_.mmio() == o.base_.mmio());
}

Result<u32> LocalApic::read(ApicReg r) const {
    regs::ApicLocation at = regs::apic_location(base_, r);
    if (!at.msr) return u32(*reinterpret_cast<volatile u32*>(uintptr_t(at.where)));
    u64 v = 0;
    if (u32 vec = pmulab_safe_rdmsr(u32(at.where), &v)) return msr_fault_error("RDMSR", u32(at.where), 0, u8(vec));
    return u32(v);
}

Status LocalApic::write(ApicReg r, u32 value) const {
    regs::ApicLocation at = regs::apic_location(base_, r);
    if (!at.msr) {
        *reinterpret_cast<volatile u32*>(uintptr_t(at.where)) = value;
        return ok_status();
    }
    if (u32 vec = pmulab_safe_wrmsr(u32(at.where), value))
        return msr_fault_error("WRMSR", u32(at.where), value, u8(vec));
    return ok_status();
}

void LocalApic::send_ipi(u64 apic_id, ApicIcr icr) const {
    if (!enabled()) return;  // no APIC to send from
    u64 flags = read_rflags();
    asm volatile("cli" ::: "memory");
    if (x2apic()) {
        icr.set_x2apic_destination(apic_id);
        (void)pmulab_safe_wrmsr(regs::x2apic_msr(ApicReg::icr_low), icr.raw());  // one MSR (§11.12.9)
    } else {
        auto* lo = reinterpret_cast<volatile u32*>(uintptr_t(base_.mmio() + u32(ApicReg::icr_low)));
        auto* hi = reinterpret_cast<volatile u32*>(uintptr_t(base_.mmio() + u32(ApicReg::icr_high)));
        // The previous IPI must have left (delivery status idle) before the next.
        for (u32 i = 0; i < 1000000 && ApicIcr(*lo).send_pending(); ++i) asm volatile("pause");
        icr.set_xapic_destination(apic_id);
        *hi = u32(icr.raw() >> 32);
        *lo = u32(icr.raw());  // the write of the low half sends it
    }
    if (flags & kRflagsIf) asm volatile("sti" ::: "memory");
}

void LocalApic::send_init(u64 apic_id) const {
    ApicIcr init = ApicIcr::to(regs::ApicDelivery::init).set_level_trigger();
    send_ipi(apic_id, init);
    if (!x2apic()) send_ipi(apic_id, ApicIcr(init).set_level_assert(false));
}

}  // namespace pmulab::efi
