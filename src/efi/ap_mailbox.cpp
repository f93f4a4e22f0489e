#include "ap_mailbox.h"

#include "fault.h"

namespace pmulab::efi {

namespace {

// Whether this AP's local APIC takes the fixed wake IPI from the BSP: enabled, in the
// BSP's mode and place, software-enabled, and its TPR lets vector kApWakeVector through.
bool apic_takes_wake_ipi(const ApMailbox& m) {
    Result<LocalApic> own = LocalApic::this_cpu();
    if (!own.ok() || !own.value().same_place_as(m.bsp_apic)) return false;
    Result<regs::ApicSvr> svr = m.bsp_apic.get<regs::ApicSvr>(regs::ApicReg::svr);
    Result<regs::ApicTpr> tpr = m.bsp_apic.get<regs::ApicTpr>(regs::ApicReg::tpr);
    return svr.ok() && tpr.ok() && svr.value().software_enable() && tpr.value().admits(kApWakeVector);
}

}  // namespace

// Runs with interrupts masked except inside `sti; hlt` (the STI shadow covers HLT, so a
// wake IPI sent after the mailbox check is taken by HLT, never lost).
VOID EFIAPI ap_worker_main(VOID* arg) {
    auto* m = static_cast<ApMailbox*>(arg);
    u64 flags = read_rflags();
    asm volatile("cli" ::: "memory");
    SavedIdtr idt = fault_layer_enter_ap();
    m->wake_ipi = apic_takes_wake_ipi(*m) ? 1 : 0;
    u64 seen = load_acquire(m->seq);
    store_release(m->state, u32(kReady));
    for (;;) {
        u64 s;
        while ((s = load_acquire(m->seq)) == seen) {
            if (m->wake_ipi) asm volatile("sti; hlt; cli" ::: "memory");
            else asm volatile("pause" ::: "memory");
        }
        seen = s;
        if (m->cmd == kCmdExit) break;
        m->fn(m->ctx);
        store_release(m->done, s);
    }
    fault_layer_leave(idt);
    if (flags & kRflagsIf) asm volatile("sti" ::: "memory");
    store_release(m->done, seen);
}

void arm_timer(EFI_EVENT timer, u64 timeout_100ns) {
    gBS->SetTimer(timer, TimerCancel, 0);
    gBS->CheckEvent(timer);
    gBS->SetTimer(timer, TimerRelative, timeout_100ns);
}

}  // namespace pmulab::efi
