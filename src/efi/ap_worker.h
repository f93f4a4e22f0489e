// pmulab's own per-AP workers: how a job reaches an AP in about the time of an IPI.
//
// MP Services notices that an AP finished a procedure on a periodic timer check
// (edk2 MpInitLib: every 100 ms), which made every job on an AP cost up to 100 ms.
// Instead, the first job for an AP starts a worker there through MP Services
// (non-blocking StartupThisAP) that never returns until shutdown: it loads pmulab's
// AP exception table, then waits on its mailbox (ap_mailbox.h) for the job the BSP
// posts, runs it, and writes its completion to the mailbox. The BSP spins (PAUSE) on
// that word, with a firmware timer as the timeout. A job that does not finish in time is
// reported and its AP sent INIT (LocalApic::send_init: it waits for a SIPI, away from
// pmulab's memory); that AP is not used again in this boot. Before pmulab returns to
// the firmware, every worker is told to return to MP Services, which is waited for.
//
// While the BSP waits for a job, allocations are caught (ap_guard.h). The BSP's
// watchdog of generated code (run --timeout) is a worker too (ap_watchdog.cpp).
#pragma once

#include "ap_mailbox.h"
#include "base/result.h"

namespace pmulab::efi {

// The watchdog of jobs that run generated code (`run --timeout`, docs/measure.md): 0 is
// pmulab's own default for every other job (ApWorkers::kJobTimeoutSeconds, then INIT).
void set_code_timeout(u32 seconds);
u32 code_timeout();

class ApWorkers {
public:
    // Called once by EfiHw::init (BSP): the processors, their APIC IDs.
    void init(EfiMpServicesProtocol* mp, u32 count, const u64* apic_ids);
    // Runs fn(ctx) on AP `cpu` and returns when it has run (or timed out). With `quiet` the
    // BSP halts meanwhile where it can (quiet_wait), else it spins (PAUSE).
    Status run(u32 cpu, CpuFn fn, void* ctx, bool quiet = false);
    // Whether the BSP can wait for a job halted (HLT or MWAIT: interrupts enabled), and how.
    bool quiet_wait() const;
    // Starts AP `cpu`'s worker (which waits between jobs) if it is not running; true when it
    // halts there (a worker whose local APIC cannot take the wake IPI polls with PAUSE).
    Result<bool> park(u32 cpu);
    // Every worker returns to MP Services; waits (bounded) until MP Services saw it.
    void shutdown();
    // The BSP's watchdog (ap_watchdog.cpp): AP `watcher` halts with its local APIC timer
    // armed for `seconds` and, if watch_end has not come by then, sends an NMI to the APIC
    // `target` (the BSP). Errors: this AP cannot watch (no wake IPI, no APIC timer).
    Status watch_begin(u32 watcher, u64 target_apic, u32 seconds);
    void watch_end();
    // Two CPUs at once (selftest's nmi-path, nmi_probe.cpp). run_beside: fn(ctx) on AP `cpu`
    // as run() does, while the BSP runs beside(bctx) meanwhile (it must end by itself).
    // start_async: fn(ctx) on AP `cpu` without waiting; wait_async: until it returned, at most
    // `seconds` (then the AP is stopped as a hung job is).
    Status run_beside(u32 cpu, CpuFn fn, void* ctx, CpuFn beside, void* bctx);
    Status start_async(u32 cpu, CpuFn fn, void* ctx, u64* seq);
    Status wait_async(u32 cpu, u64 seq, u32 seconds);
    // The BSP's local APIC, where IPIs go from (valid once a worker has started).
    const LocalApic& apic() const { return apic_; }
    // Seconds a job may take on an AP (firmware timer time).
    static constexpr u32 kJobTimeoutSeconds = 120;

private:
    Status start(ApMailbox& m);
    // Posts a command and wakes the worker; returns its sequence number.
    u64 send(ApMailbox& m, u32 cmd, CpuFn fn, void* ctx);
    Status post(ApMailbox& m, u32 cmd, CpuFn fn, void* ctx, u64 timeout_100ns, const char* what, CpuFn beside = nullptr,
                void* bctx = nullptr);
    // Stops a worker that did not finish (INIT) and never uses it again.
    void stop_hung(ApMailbox& m);
    Status calibrate(ApMailbox& m);
    Status ready(u32 cpu);
    EfiMpServicesProtocol* mp_ = nullptr;
    ApMailbox* boxes_ = nullptr;
    u32 count_ = 0;
    EFI_EVENT timer_ = nullptr;
    LocalApic apic_;    // the BSP's, where IPIs go from (disabled: none usable)
    u64 timer_hz_ = 0;  // the local APIC timer's rate (divide by 1), from calibrate()
    ApMailbox* watcher_ = nullptr;
    u64 watch_seq_ = 0;
    bool quiet_ = false;  // the current post() halts the BSP (run's `quiet`)
};

}  // namespace pmulab::efi
