// pmulab's own per-AP workers: how a job reaches an AP in about the time of an IPI.
//
// MP Services notices that an AP finished a procedure on a periodic timer check
// (edk2 MpInitLib: every 100 ms), which made every job on an AP cost up to 100 ms.
// Instead, the first job for an AP starts a worker there through MP Services
// (non-blocking StartupThisAP) that never returns until shutdown: it loads pmulab's
// AP exception table, then waits on its mailbox with interrupts masked except for
// `sti; hlt` (woken by a fixed IPI, vector kApWakeVector, whose stub only signals EOI),
// runs the job the BSP posted, and writes its completion to the mailbox. The BSP
// spins (PAUSE) on that word, with a firmware timer as the timeout. A job that does not
// finish in time is reported and its AP sent INIT (it waits for a SIPI, away from
// pmulab's memory); that AP is not used again in this boot. Before pmulab returns to
// the firmware, every worker is told to return to MP Services, which is waited for.
//
// Where the AP's local APIC cannot take the wake IPI (software-disabled, or not in
// the BSP's mode), its worker polls with PAUSE instead.
//
// The allocation guard: the firmware's pool allocator belongs to the BSP (it raises
// the global TPL), and code on an AP must not allocate. While the BSP waits for a job,
// operator new serves from a fixed arena and counts; a job that allocated fails with an
// internal error naming the CPU, so the bug shows in every test instead of as a rare
// TPL corruption.
#pragma once

#include "efi_defs.h"
#include "base/result.h"
#include "x86/hw.h"

namespace pmulab::efi {

// The IPI vector that wakes a halted worker (in the AP exception table only).
inline constexpr u8 kApWakeVector = 0xF7;
// The vector of a watching worker's local APIC timer (AP exception table only).
inline constexpr u8 kApTimerVector = 0xF6;

// The watchdog of jobs that run generated code (`run --timeout`, docs/measure.md): 0 is
// pmulab's own default for every other job (ApWorkers::kJobTimeoutSeconds, then INIT).
void set_code_timeout(u32 seconds);
u32 code_timeout();

struct ApMailbox;

class ApWorkers {
public:
    // Called once by EfiHw::init (BSP): the processors, their APIC IDs.
    void init(EfiMpServicesProtocol* mp, u32 count, const u64* apic_ids);
    // Runs fn(ctx) on AP `cpu` and returns when it has run (or timed out).
    Status run(u32 cpu, CpuFn fn, void* ctx);
    // Every worker returns to MP Services; waits (bounded) until MP Services saw it.
    void shutdown();
    // The BSP's watchdog: AP `watcher` halts with its local APIC timer armed for
    // `seconds` and, if watch_end has not come by then, sends an NMI to the APIC
    // `target` (the BSP). Errors: this AP cannot watch (no wake IPI, no APIC timer).
    Status watch_begin(u32 watcher, u64 target_apic, u32 seconds);
    void watch_end();
    // Seconds a job may take on an AP (firmware timer time).
    static constexpr u32 kJobTimeoutSeconds = 120;

private:
    Status start(ApMailbox& m);
    Status post(ApMailbox& m, u32 cmd, CpuFn fn, void* ctx, u64 timeout_100ns, const char* what);
    Status calibrate(ApMailbox& m);
    Status ready(u32 cpu);
    EfiMpServicesProtocol* mp_ = nullptr;
    ApMailbox* boxes_ = nullptr;
    u32 count_ = 0;
    EFI_EVENT timer_ = nullptr;
    bool x2apic_ = false;
    bool apic_ok_ = false;
    u64 apic_mmio_ = 0;
    u64 timer_hz_ = 0;  // the local APIC timer's rate (divide by 1), from calibrate()
    ApMailbox* watcher_ = nullptr;
    u64 watch_seq_ = 0;
};

// The allocation guard (runtime.cpp's operator new/delete).
void* ap_guard_alloc(usize bytes);  // nullptr when the guard is off
bool ap_guard_owns(const void* p);  // memory from the guard's arena (never freed)

}  // namespace pmulab::efi
