// The BSP's watchdog of generated code (run --timeout, docs/measure.md): a worker on an AP
// halts with its local APIC timer armed (SDM Vol. 3A §11.5.4 "APIC Timer", one-shot,
// divide by 1) and, when the BSP's job overruns, sends the BSP an NMI (fault_stubs.S
// pmulab_nmi ends the generated code like a fault with vector 2). The worker runs on the
// AP: no allocation, no boot services.
#include "ap_worker.h"

#include "fault.h"

namespace pmulab::efi {

using regs::ApicDelivery;
using regs::ApicIcr;
using regs::ApicLvt;
using regs::ApicReg;
using regs::ApicTimerDivide;

namespace {

u32 g_code_timeout = 0;  // seconds; 0: ApWorkers::kJobTimeoutSeconds

// This AP's timer registers (the APIC is in the BSP's mode: apic_takes_wake_ipi). An
// x2APIC register that faults reads as 0.
u32 timer_read(const ApMailbox& m, ApicReg r) { return m.bsp_apic.read(r).value_or(0); }
void timer_write(const ApMailbox& m, ApicReg r, u32 v) { (void)m.bsp_apic.write(r, v); }

// The timer's registers as the firmware left them; restored afterwards.
struct TimerSaved {
    u32 lvt, divide;
};
TimerSaved timer_take(const ApMailbox& m, ApicLvt lvt) {
    TimerSaved s{timer_read(m, ApicReg::lvt_timer), timer_read(m, ApicReg::timer_divide)};
    timer_write(m, ApicReg::lvt_timer, u32(lvt.raw()));
    timer_write(m, ApicReg::timer_divide, u32(ApicTimerDivide::by_pow2(0).raw()));
    return s;
}
void timer_give_back(const ApMailbox& m, const TimerSaved& s) {
    timer_write(m, ApicReg::timer_initial, 0);
    timer_write(m, ApicReg::lvt_timer, u32(ApicLvt(s.lvt).set_masked().raw()));
    timer_write(m, ApicReg::timer_divide, s.divide);
    timer_write(m, ApicReg::lvt_timer, s.lvt);
}

// Calibration: counting down from 2^32 - 1 (masked) while the BSP stalls a known time.
struct CalCtx {
    const ApMailbox* m;
    TimerSaved saved;
    u32 elapsed;
};
void cal_start(void* p) {
    auto* c = static_cast<CalCtx*>(p);
    c->saved = timer_take(*c->m, ApicLvt().set_vector(kApTimerVector).set_masked());
    timer_write(*c->m, ApicReg::timer_initial, 0xFFFFFFFFu);
}
void cal_read(void* p) {
    auto* c = static_cast<CalCtx*>(p);
    c->elapsed = 0xFFFFFFFFu - timer_read(*c->m, ApicReg::timer_current);
    timer_write(*c->m, ApicReg::timer_initial, 0);
    timer_write(*c->m, ApicReg::timer_divide, c->saved.divide);
    timer_write(*c->m, ApicReg::lvt_timer, c->saved.lvt);
}

// The watch: one-shot timer rounds (each below 2^31 ticks) while halted; woken by the
// timer or by the BSP's wake IPI (cancel). When the last round ends first, an NMI goes
// to the target with the watchdog flag set (fault_stubs.S pmulab_nmi).
struct WatchCtx {
    const ApMailbox* m = nullptr;
    u64 target = 0;
    u32 per_round = 0, rounds = 0;
    volatile u32 cancel = 0, armed = 0, fired = 0;
};
WatchCtx g_watch;

void watch_fn(void* p) {
    auto* w = static_cast<WatchCtx*>(p);
    const ApMailbox& m = *w->m;
    TimerSaved saved = timer_take(m, ApicLvt().set_vector(kApTimerVector));  // one-shot, unmasked
    u32 left = w->rounds;
    timer_write(m, ApicReg::timer_initial, w->per_round);
    store_release(w->armed, u32(1));
    for (;;) {
        if (load_acquire(w->cancel)) break;
        asm volatile("sti; hlt; cli" ::: "memory");
        if (load_acquire(w->cancel)) break;
        if (left == 0 || timer_read(m, ApicReg::timer_current) != 0) continue;  // not the timer
        if (--left > 0) {
            timer_write(m, ApicReg::timer_initial, w->per_round);
            continue;
        }
        watchdog_nmi_arm(true);
        m.bsp_apic.send_ipi(w->target, ApicIcr::to(ApicDelivery::nmi));
        store_release(w->fired, u32(1));
    }
    timer_give_back(m, saved);
}

}  // namespace

void set_code_timeout(u32 seconds) { g_code_timeout = seconds; }
u32 code_timeout() { return g_code_timeout; }

Status ApWorkers::calibrate(ApMailbox& m) {
    CalCtx c{&m, {}, 0};
    PMULAB_TRY(post(m, kCmdRun, cal_start, &c, 5 * k100nsPerSecond, "the APIC timer calibration"));
    gBS->Stall(20000);
    PMULAB_TRY(post(m, kCmdRun, cal_read, &c, 5 * k100nsPerSecond, "the APIC timer calibration"));
    if (c.elapsed == 0 || c.elapsed == 0xFFFFFFFFu)
        return Error::make(Errc::unsupported, "the local APIC timer of CPU %u does not count", m.cpu);
    timer_hz_ = u64(c.elapsed) * 50;  // ticks in 20 ms
    return ok_status();
}

Status ApWorkers::watch_begin(u32 watcher, u64 target_apic, u32 seconds) {
    PMULAB_TRY(ready(watcher));
    ApMailbox& m = boxes_[watcher];
    // A worker that polls would run instructions beside the measurement: only a halting one.
    if (!m.wake_ipi) return Error::make(Errc::unsupported, "CPU %u cannot halt between jobs", watcher);
    if (!timer_hz_) PMULAB_TRY(calibrate(m));
    u64 ticks = timer_hz_ * seconds;
    u64 rounds = ticks / 0x80000000ull + 1;
    g_watch.m = &m;
    g_watch.target = target_apic;
    g_watch.per_round = u32(ticks / rounds);
    g_watch.rounds = u32(rounds);
    g_watch.cancel = 0;
    g_watch.armed = 0;
    g_watch.fired = 0;
    watcher_ = &m;
    watch_seq_ = send(m, kCmdRun, watch_fn, &g_watch);
    arm_timer(timer_, 5 * k100nsPerSecond);
    if (!spin_until(g_watch.armed, u32(1), timer_)) {
        watch_end();
        return Error::make(Errc::io, "CPU %u did not start watching within 5 s", watcher);
    }
    return ok_status();
}

void ApWorkers::watch_end() {
    if (!watcher_) return;
    ApMailbox& m = *watcher_;
    watcher_ = nullptr;
    store_release(g_watch.cancel, u32(1));
    apic_.send_ipi(m.apic_id, ApicIcr::to(ApicDelivery::fixed, kApWakeVector));
    arm_timer(timer_, 5 * k100nsPerSecond);
    bool finished = spin_until(m.done, watch_seq_, timer_);
    if (load_acquire(g_watch.fired)) watchdog_nmi_settle();
    if (!finished) stop_hung(m);
}

}  // namespace pmulab::efi
