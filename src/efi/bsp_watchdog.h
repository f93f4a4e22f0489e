// The BSP's watchdog when no AP can watch it (one CPU, `--smp 1`; docs/measure.md "The
// watchdog"): an HPET timer that the firmware leaves unused, routed through an I/O APIC
// input as an NMI to the BSP (IA-PC HPET spec 1.0a §2.3.8; 82093AA datasheet §3.2.4, delivery
// mode NMI). The NMI goes through pmulab's one NMI stub (fault_stubs.S pmulab_nmi): the
// stub offers it (fault.cpp pmulab_nmi_offer) to the attached PMI handler first, then to
// timer_watch_nmi, which ends the code like the AP watchdog's NMI does (vector 2).
// Every HPET and I/O APIC register it writes is restored exactly at timer_watch_end.
#pragma once

#include "base/result.h"

extern "C" {
// Nonzero while a timer watch is armed (or ending): the NMI stub then calls
// pmulab_nmi_offer even without a PMI handler.
extern volatile pmulab::u64 pmulab_nmi_timer;
}

namespace pmulab::efi {

// Arms the watch: the BSP (local APIC ID `bsp_apic`) gets an NMI `seconds` from now unless
// timer_watch_end comes first. Errors (Errc::unsupported, nothing armed): no ACPI HPET
// table, no free HPET timer with an I/O APIC input free for it, an APIC ID above 255.
Status timer_watch_begin(u64 bsp_apic, u32 seconds);
// Whether timer_watch_begin could arm a watch for the BSP, with its errors; writes nothing.
Status timer_watch_probe(u64 bsp_apic);
// Disarms it, restores the HPET's and the I/O APIC's registers and reads them back (no-op
// when not armed). Errors (Errc::internal): a register that does not read back as it was.
Status timer_watch_end();
// In the NMI (pmulab_nmi_offer, while pmulab_nmi_timer is set; allocation-free):
//  * the time is over: sets pmulab_nmi_armed (the stub ends the code, vector 2), re-arms
//    the timer for a retry 10 ms later (in case this NMI landed outside the code): 0;
//  * an intermediate round of a timer narrower than the timeout: re-armed, 1 (claimed);
//  * any other NMI while watching: 1 (dropped), unless pmulab expects NMIs of its own
//    (nmi_expect): 0.
u32 timer_watch_nmi();
// What the last watch did: the HPET timer and I/O APIC input it used, and NMIs it took.
struct TimerWatchInfo {
    u32 timer = 0, gsi = 0;
    u64 rounds = 0, fired = 0, dropped = 0;
};
TimerWatchInfo timer_watch_info();

}  // namespace pmulab::efi
