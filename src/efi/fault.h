// Fault-safe MSR/PMC access on the EFI side (fault_stubs.S + fault.cpp).
#pragma once

#include "base/result.h"

namespace pmulab {
class PmiHandler;
}

extern "C" {
pmulab::u32 pmulab_safe_rdmsr(pmulab::u32 msr, pmulab::u64* out);
pmulab::u32 pmulab_safe_wrmsr(pmulab::u32 msr, pmulab::u64 value);
pmulab::u32 pmulab_safe_rdpmc(pmulab::u32 index, pmulab::u64* out);
// Calls generated code (fault_stubs.S): a fault or watchdog NMI inside the code registered
// with generated_code_enter returns from here, with the caller's registers and flags.
void pmulab_gen_call(void (*code)(void*), void* frame);
}

namespace pmulab::efi {

struct SavedIdtr {
    u16 limit;
    u64 base;
} __attribute__((packed));

// Builds pmulab's IDT: a copy of the current one with the NMI and #DE #DB #BP #OF #BR #UD #NM
// #TS #NP #SS #GP #PF #MF #AC #XM pointing at pmulab's stubs (which chain to the
// originals for faults that are not pmulab's). BSP only (allocates).
Status fault_layer_init();
// Loads pmulab's IDT on the calling CPU (any CPU) and returns the previous IDTR.
SavedIdtr fault_layer_enter();
// The same on an AP worker: pmulab's table plus the workers' wake vector
// (ap_worker.h, kApWakeVector).
SavedIdtr fault_layer_enter_ap();
// Restores the IDTR returned by fault_layer_enter.
void fault_layer_leave(const SavedIdtr& saved);
// Generated code at [lo, lo + code_size) is about to run on this CPU, called through
// pmulab_gen_call: a fault inside it (any vector the stubs catch, or the watchdog's NMI)
// is recorded and returns from pmulab_gen_call, wherever in the code it happened.
void generated_code_enter(const void* lo, usize code_size);
// After the call: true when it faulted, with vector, RIP, error code, CR2 in out.
bool generated_code_leave(u64 out[4]);
// Forgets the running generated code without reading the record (an AP stopped in it).
void generated_code_reset();
// The watchdog (run --timeout): with the flag on, the next NMI on any CPU whose RIP is
// in the running generated code ends it like a fault with vector 2 (the stub clears the
// flag); an NMI without the flag goes to the firmware's handler. Arming also expects one
// NMI (nmi_expect): call it once per NMI sent.
void watchdog_nmi_arm(bool on);
// After a watchdog NMI was sent: waits (bounded) until it arrived, then clears the flag.
void watchdog_nmi_settle();
// The PMU's interrupt (fault_stubs.S pmulab_nmi, case 1): from nmi_pmi_attach(h) until
// nmi_pmi_attach(nullptr), every NMI on a CPU with pmulab's IDT goes to h->on_nmi first (on
// the measuring CPU: one CPU measures at a time, and pmulab sends NMIs only to it). One that
// it does not claim goes on to the watchdog, the NMIs pmulab expects, or the firmware.
void nmi_pmi_attach(PmiHandler* h);
bool nmi_pmi_attached();
// What the NMI stub saw since the last attach: NMIs offered to the handler, those it claimed,
// and those that arrived while the handler ran (0 unless NMI blocking failed).
struct NmiCounts {
    u64 offered = 0, claimed = 0, nested = 0;
};
NmiCounts nmi_counts();
// The NMIs pmulab sends to test the path (nmi_probe.cpp, case 3): `n` more are expected; an
// expected NMI that no handler claims is dropped. nmi_expected(): those not taken yet.
void nmi_expect(u64 n);
u64 nmi_expected();
// Frees the IDT copy (after every CPU has left).
void fault_layer_fini();

}  // namespace pmulab::efi
