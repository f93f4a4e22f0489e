#include "ap_worker.h"

#include "ap_guard.h"
#include "fault.h"

extern "C" {
// The EOI target of the wake stub (fault_stubs.S): the xAPIC MMIO base, or 0 for the
// x2APIC EOI MSR.
extern pmulab::u64 pmulab_wake_eoi_mmio;
}

namespace pmulab::efi {

namespace {

// CPUID.01H:ECX[3] MONITOR (SDM Vol. 2A Table 3-10): MONITOR/MWAIT exist (and
// IA32_MISC_ENABLE[18] left them enabled). Used on bare metal only (ECX[31] clear): QEMU TCG
// executes MWAIT as PAUSE, where HLT really halts the vCPU (see docs/measure.md).
constexpr unsigned kLeaf1EcxMonitor = 3, kLeaf1EcxHypervisor = 31;
bool mwait_supported() {
    u32 a = 1, b, c = 0, d;
    asm volatile("cpuid" : "+a"(a), "=b"(b), "+c"(c), "=d"(d));
    return ((c >> kLeaf1EcxMonitor) & 1) && !((c >> kLeaf1EcxHypervisor) & 1);
}

}  // namespace

using regs::ApicDelivery;
using regs::ApicIcr;

void ApWorkers::init(EfiMpServicesProtocol* mp, u32 count, const u64* apic_ids) {
    mp_ = mp;
    count_ = count;
    boxes_ = new ApMailbox[count];
    for (u32 i = 0; i < count; ++i) {
        boxes_[i].cpu = i;
        boxes_[i].apic_id = apic_ids[i];
    }
}

Status ApWorkers::start(ApMailbox& m) {
    if (!mp_) return Error::make(Errc::unsupported, "no MP Services: cannot run on CPU %u", m.cpu);
    if (!timer_) {
        if (gBS->CreateEvent(EVT_TIMER, 0, nullptr, nullptr, &timer_) != EFI_SUCCESS) {
            timer_ = nullptr;
            return Error::make(Errc::io, "cannot create a timer event for AP jobs");
        }
        // The BSP's APIC (read here, with pmulab's exception table loaded): where IPIs go.
        apic_ = LocalApic::this_cpu().value_or(LocalApic());
        pmulab_wake_eoi_mmio = apic_.enabled() ? apic_.mmio() : 0;
    }
    m.bsp_apic = apic_;  // not enabled: the worker polls
    EFI_STATUS st = gBS->CreateEvent(0, 0, nullptr, nullptr, &m.finished);
    if (st != EFI_SUCCESS) return Error::make(Errc::io, "CreateEvent for CPU %u failed: %s", m.cpu, status_name(st));
    m.seq = 0;
    m.done = 0;
    store_release(m.state, u32(kStarting));
    st = mp_->StartupThisAP(mp_, ap_worker_main, UINTN(m.cpu), m.finished, 0, &m, nullptr);
    if (st != EFI_SUCCESS) {
        gBS->CloseEvent(m.finished);
        m.finished = nullptr;
        m.state = kOff;
        return Error::make(Errc::io, "MP Services StartupThisAP(CPU %u) failed: %s", m.cpu, status_name(st));
    }
    arm_timer(timer_, 10 * k100nsPerSecond);
    if (!spin_until(m.state, u32(kReady), timer_)) {
        m.state = kBroken;  // MP Services still owns it (and the event)
        return Error::make(Errc::io, "CPU %u did not start pmulab's worker within 10 s", m.cpu);
    }
    return ok_status();
}

u64 ApWorkers::send(ApMailbox& m, u32 cmd, CpuFn fn, void* ctx) {
    m.fn = fn;
    m.ctx = ctx;
    m.cmd = cmd;
    u64 seq = m.seq + 1;
    store_release(m.seq, seq);
    if (m.wake_ipi) apic_.send_ipi(m.apic_id, ApicIcr::to(ApicDelivery::fixed, kApWakeVector));
    return seq;
}

void ApWorkers::stop_hung(ApMailbox& m) {
    apic_.send_init(m.apic_id);
    m.state = kHung;
}

Status ApWorkers::post(ApMailbox& m, u32 cmd, CpuFn fn, void* ctx, u64 timeout_100ns, const char* what, CpuFn beside,
                       void* bctx) {
    arm_timer(timer_, timeout_100ns);
    u64 allocs_before = ap_guard_begin();
    u64 seq = send(m, cmd, fn, ctx);
    if (beside) beside(bctx);
    bool finished = quiet_ && quiet_wait() ? halt_until(m.done, seq, timer_, mwait_supported())
                                           : spin_until(m.done, seq, timer_);
    if (!finished && cmd == kCmdRun) {
        // The watchdog: an NMI ends generated code in flight like a fault (vector 2), and
        // the job reports it and returns (fault_stubs.S pmulab_nmi).
        watchdog_nmi_arm(true);
        apic_.send_ipi(m.apic_id, ApicIcr::to(ApicDelivery::nmi));
        arm_timer(timer_, 5 * k100nsPerSecond);
        finished = spin_until(m.done, seq, timer_);
        watchdog_nmi_settle();
    }
    u64 allocs = ap_guard_end(allocs_before);
    if (!finished) {
        // Stopped where it is, so that it never runs in memory pmulab frees or hands back
        // to the firmware.
        stop_hung(m);
        generated_code_reset();
        return Error::make(Errc::io,
                           "CPU %u did not finish %s within %u s (e.g. code in an endless loop with interrupts "
                           "masked); it was stopped (INIT) and is not used again until the machine restarts",
                           m.cpu, what, unsigned(timeout_100ns / k100nsPerSecond));
    }
    if (allocs)
        return Error::make(Errc::internal,
                           "pmulab bug: the job on CPU %u allocated memory %llu times (code on an AP must not "
                           "call the firmware's allocator; served from a reserve)",
                           m.cpu, (unsigned long long)allocs);
    return ok_status();
}

Status ApWorkers::ready(u32 cpu) {
    if (cpu >= count_ || !boxes_) return Error::make(Errc::invalid_argument, "no logical processor %u", cpu);
    ApMailbox& m = boxes_[cpu];
    if (m.state == kHung)
        return Error::make(Errc::io,
                           "CPU %u was stopped after an earlier job did not finish; it is not used again until the "
                           "machine restarts",
                           cpu);
    if (m.state == kBroken) return Error::make(Errc::io, "CPU %u did not start pmulab's worker", cpu);
    if (m.state == kOff) PMULAB_TRY(start(m));
    return ok_status();
}

Status ApWorkers::run(u32 cpu, CpuFn fn, void* ctx, bool quiet) {
    PMULAB_TRY(ready(cpu));
    u32 seconds = code_timeout() ? code_timeout() : kJobTimeoutSeconds;
    quiet_ = quiet;
    Status s = post(boxes_[cpu], kCmdRun, fn, ctx, u64(seconds) * k100nsPerSecond, "a job");
    quiet_ = false;
    return s;
}

bool ApWorkers::quiet_wait() const { return read_rflags() & kRflagsIf; }

Result<bool> ApWorkers::park(u32 cpu) {
    PMULAB_TRY(ready(cpu));
    return boxes_[cpu].wake_ipi != 0;
}

Status ApWorkers::run_beside(u32 cpu, CpuFn fn, void* ctx, CpuFn beside, void* bctx) {
    PMULAB_TRY(ready(cpu));
    u32 seconds = code_timeout() ? code_timeout() : kJobTimeoutSeconds;
    return post(boxes_[cpu], kCmdRun, fn, ctx, u64(seconds) * k100nsPerSecond, "a job", beside, bctx);
}

Status ApWorkers::start_async(u32 cpu, CpuFn fn, void* ctx, u64* seq) {
    PMULAB_TRY(ready(cpu));
    *seq = send(boxes_[cpu], kCmdRun, fn, ctx);
    return ok_status();
}

Status ApWorkers::wait_async(u32 cpu, u64 seq, u32 seconds) {
    ApMailbox& m = boxes_[cpu];
    arm_timer(timer_, u64(seconds) * k100nsPerSecond);
    if (spin_until(m.done, seq, timer_)) return ok_status();
    stop_hung(m);
    return Error::make(Errc::io, "CPU %u did not finish its part within %u s; it was stopped (INIT)", cpu, seconds);
}

void ApWorkers::shutdown() {
    if (!boxes_) return;
    // Every worker returns (each acknowledges at once), then MP Services notices them all
    // on its next periodic check and signals their events.
    bool all_back = true;
    for (u32 i = 0; i < count_; ++i) {
        ApMailbox& m = boxes_[i];
        if (m.state == kReady && !post(m, kCmdExit, nullptr, nullptr, 5 * k100nsPerSecond, "its return").ok())
            all_back = false;
    }
    for (u32 ms = 0; ms <= 5000; ++ms) {
        bool waiting = false;
        for (u32 i = 0; i < count_; ++i) {
            ApMailbox& m = boxes_[i];
            if (m.state != kReady) continue;
            if (gBS->CheckEvent(m.finished) != EFI_SUCCESS) {
                waiting = true;
                continue;
            }
            gBS->CloseEvent(m.finished);
            m.finished = nullptr;
            m.state = kOff;
        }
        if (!waiting) break;
        gBS->Stall(1000);
    }
    for (u32 i = 0; i < count_; ++i) all_back &= boxes_[i].state == kOff;  // else MP Services keeps the event
    if (timer_) {
        gBS->SetTimer(timer_, TimerCancel, 0);
        gBS->CloseEvent(timer_);
        timer_ = nullptr;
    }
    // Hung or unconfirmed workers may still reference their mailbox.
    if (all_back) {
        delete[] boxes_;
        boxes_ = nullptr;
        count_ = 0;
    }
}

}  // namespace pmulab::efi
