// The mailbox between the BSP and one AP worker (ap_worker.h), and the worker's loop on
// the AP. The BSP writes seq, cmd, fn and ctx and wakes the AP; the AP runs the job and
// writes done. Between jobs the worker waits with interrupts masked except for `sti; hlt`
// (woken by a fixed IPI, vector kApWakeVector, whose stub only signals EOI), or polls with
// PAUSE where its local APIC cannot take that IPI (software-disabled, or not in the BSP's
// mode and place).
#pragma once

#include "efi_defs.h"
#include "local_apic.h"
#include "x86/hw.h"

namespace pmulab::efi {

// The IPI vector that wakes a halted worker (in the AP exception table only).
inline constexpr u8 kApWakeVector = 0xF7;
// The vector of a watching worker's local APIC timer (AP exception table only).
inline constexpr u8 kApTimerVector = 0xF6;

enum : u32 { kCmdRun = 1, kCmdExit = 2 };
// A worker's state (the BSP's view): kHung was stopped with INIT, kBroken never started.
enum : u32 { kOff = 0, kStarting, kReady, kHung, kBroken };

template <typename T> T load_acquire(const volatile T& v) { return __atomic_load_n(&v, __ATOMIC_ACQUIRE); }
template <typename T> void store_release(volatile T& v, T x) { __atomic_store_n(&v, x, __ATOMIC_RELEASE); }

// The AP writes done in another cache line (pool memory is 8-byte aligned, so the padding
// is a full line).
struct ApMailbox {
    volatile u64 seq = 0;  // BSP: the last command posted
    volatile u32 cmd = 0;  // kCmdRun, kCmdExit
    volatile u32 state = kOff;
    CpuFn fn = nullptr;
    void* ctx = nullptr;
    u32 cpu = 0;
    u64 apic_id = 0;
    EFI_EVENT finished = nullptr;  // MP Services signals it when the worker returned
    // The BSP's APIC (disabled: none usable), for the AP to compare with its own.
    LocalApic bsp_apic;
    u8 pad[64] = {};
    volatile u64 done = 0;      // AP: the last command finished
    volatile u32 wake_ipi = 0;  // AP: it halts between jobs and wants the wake IPI
};

// The worker, on the AP (MP Services StartupThisAP's procedure; returns on kCmdExit). No
// allocation, no boot services.
VOID EFIAPI ap_worker_main(VOID* mailbox);

// ---- the BSP's waiting, on a one-shot firmware timer ----
inline constexpr u64 k100nsPerSecond = 10000000;
// Arms the timer (100 ns units) after clearing an old signal.
void arm_timer(EFI_EVENT timer, u64 timeout_100ns);
// Spins (PAUSE) until word == want or the timer fires; true when it got there.
template <typename T> bool spin_until(const volatile T& word, T want, EFI_EVENT timer) {
    for (u32 i = 1;; ++i) {
        if (load_acquire(word) == want) return true;
        asm volatile("pause" ::: "memory");
        if ((i & 255) == 0 && gBS->CheckEvent(timer) == EFI_SUCCESS) return load_acquire(word) == want;
    }
}

// As spin_until without PAUSE: the BSP halts between checks, so that it leaves the core to
// an SMT sibling that measures (docs/measure.md "SMT siblings"). With `mwait` (CPUID.01H:
// ECX[3] MONITOR) it waits in MWAIT on the word's line, woken by the AP's write or an
// interrupt (SDM Vol. 2B MONITOR/MWAIT); else in HLT, woken by the firmware's timer tick.
// Needs RFLAGS.IF = 1: an interrupt ends either wait, so the timer is checked each time.
template <typename T> bool halt_until(const volatile T& word, T want, EFI_EVENT timer, bool mwait) {
    for (;;) {
        if (load_acquire(word) == want) return true;
        if (gBS->CheckEvent(timer) == EFI_SUCCESS) return load_acquire(word) == want;
        if (!mwait) {
            asm volatile("hlt" ::: "memory");
            continue;
        }
        asm volatile("monitor" ::"a"(&word), "c"(0u), "d"(0u) : "memory");
        if (load_acquire(word) == want) return true;
        asm volatile("mwait" ::"a"(0u), "c"(0u) : "memory");
    }
}

}  // namespace pmulab::efi
