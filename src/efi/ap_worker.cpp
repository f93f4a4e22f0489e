#include "ap_worker.h"

#include "fault.h"
#include "base/bits.h"
#include "x86/msr_addr.h"

extern "C" {
// The EOI target of the wake stub (fault_stubs.S): the xAPIC MMIO base, or 0 for the
// x2APIC EOI MSR.
extern pmulab::u64 pmulab_wake_eoi_mmio;
}

namespace pmulab::efi {

namespace {

// Local APIC registers as MMIO offsets (SDM Vol. 3A Table "Local APIC Register Address
// Map"); the x2APIC MSR of a register is 0x800 + offset / 16 (Table "Local APIC Register
// Address Map Supported by x2APIC").
constexpr u32 kApicTpr = 0x80;       // task priority
constexpr u32 kApicSvr = 0xF0;       // spurious-interrupt vector
constexpr u32 kApicIcrLow = 0x300;   // interrupt command, bits 31:0
constexpr u32 kApicIcrHigh = 0x310;  // interrupt command, bits 63:32 (xAPIC)
constexpr u32 kX2ApicMsrBase = 0x800;
constexpr u32 kX2ApicIcrMsr = 0x830;  // the whole ICR in one MSR (x2APIC)

// IA32_APIC_BASE, SDM Vol. 3A "Local APIC Status and Location" (Figure "IA32_APIC_BASE MSR").
class ApicBase : public regs::RegValue<ApicBase> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FLAG(ApicBase, extd, 10)    // x2APIC mode
    PMULAB_REG_FLAG(ApicBase, enable, 11)  // APIC global enable
    PMULAB_REG_FIELD(ApicBase, page, 63, 12)
    u64 mmio() const { return page() << page_field::lo; }
};

// Spurious-Interrupt Vector Register, SDM Vol. 3A "Spurious Interrupt" (Figure
// "Spurious-Interrupt Vector Register (SVR)"): bit 8 enables the APIC in software.
class ApicSvr : public regs::RegValue<ApicSvr> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FIELD(ApicSvr, vector, 7, 0)
    PMULAB_REG_FLAG(ApicSvr, software_enable, 8)
};

// Task-Priority Register, SDM Vol. 3A "Task Priority Register (TPR)": an interrupt is
// delivered only when its vector's priority class (bits 7:4) is above the TPR's class.
class ApicTpr : public regs::RegValue<ApicTpr> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FIELD(ApicTpr, subclass, 3, 0)
    PMULAB_REG_FIELD(ApicTpr, priority_class, 7, 4)
};

// Interrupt Command Register, SDM Vol. 3A "Interrupt Command Register (ICR)" (xAPIC:
// two halves at 0x300/0x310, destination in bits 63:56) and "Interrupt Command Register
// Operation in x2APIC Mode" (one MSR, destination in bits 63:32).
class ApicIcr : public regs::RegValue<ApicIcr> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FIELD(ApicIcr, vector, 7, 0)
    PMULAB_REG_FIELD(ApicIcr, delivery_mode, 10, 8)
    PMULAB_REG_FLAG(ApicIcr, logical_destination, 11)
    PMULAB_REG_FLAG(ApicIcr, send_pending, 12)  // delivery status (xAPIC, read-only)
    PMULAB_REG_FLAG(ApicIcr, level_assert, 14)
    PMULAB_REG_FLAG(ApicIcr, level_trigger, 15)
    PMULAB_REG_FIELD(ApicIcr, shorthand, 19, 18)
    PMULAB_REG_FIELD(ApicIcr, xapic_destination, 63, 56)
    PMULAB_REG_FIELD(ApicIcr, x2apic_destination, 63, 32)
};
static_assert(ApicIcr::delivery_mode_field::mask == 0x700 && ApicIcr::xapic_destination_field::mask == 0xFFull << 56);
constexpr u64 kDeliveryFixed = 0;  // 000b
constexpr u64 kDeliveryNmi = 4;    // 100b (the vector is ignored)
constexpr u64 kDeliveryInit = 5;   // 101b

// The local APIC timer, SDM Vol. 3A "APIC Timer": the LVT timer entry (Figure "Local
// Vector Table (LVT)"), the initial- and current-count registers and the divide
// configuration (Figure "Divide Configuration Register": 1011b divides by 1).
constexpr u32 kApicLvtTimer = 0x320;
constexpr u32 kApicInitialCount = 0x380;
constexpr u32 kApicCurrentCount = 0x390;
constexpr u32 kApicDivide = 0x3E0;
constexpr u32 kDivideBy1 = 0xB;
class ApicLvtTimer : public regs::RegValue<ApicLvtTimer> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FIELD(ApicLvtTimer, vector, 7, 0)
    PMULAB_REG_FLAG(ApicLvtTimer, masked, 16)
    PMULAB_REG_FIELD(ApicLvtTimer, mode, 18, 17)  // 00b one-shot
};
static_assert(ApicLvtTimer::masked_field::mask == 0x10000);

// RFLAGS.IF, SDM Vol. 1 §3.4.3.
constexpr u64 kRflagsIf = u64(1) << 9;

u64 read_rflags() {
    u64 f;
    asm volatile("pushfq; popq %0" : "=r"(f));
    return f;
}

enum : u32 { kCmdRun = 1, kCmdExit = 2 };
enum : u32 { kOff = 0, kStarting, kReady, kHung, kBroken };

template <typename T> T load_acquire(const volatile T& v) { return __atomic_load_n(&v, __ATOMIC_ACQUIRE); }
template <typename T> void store_release(volatile T& v, T x) { __atomic_store_n(&v, x, __ATOMIC_RELEASE); }

// ---- the allocation guard ----
volatile u32 g_guard_on = 0;
u64 g_guard_count = 0;
alignas(64) u8 g_arena[64 * 1024];
u64 g_arena_used = 0;

void guard_begin() { store_release(g_guard_on, u32(1)); }
u64 guard_end(u64 before) {
    store_release(g_guard_on, u32(0));
    return __atomic_load_n(&g_guard_count, __ATOMIC_ACQUIRE) - before;
}

}  // namespace

// The BSP writes seq, cmd, fn and ctx; the AP writes done (in another cache line:
// pool memory is 8-byte aligned, so the padding is a full line).
struct ApMailbox {
    volatile u64 seq = 0;  // BSP: the last command posted
    volatile u32 cmd = 0;  // kCmdRun, kCmdExit
    volatile u32 state = kOff;
    CpuFn fn = nullptr;
    void* ctx = nullptr;
    u32 cpu = 0;
    u64 apic_id = 0;
    EFI_EVENT finished = nullptr;  // MP Services signals it when the worker returned
    // What the BSP sees, for the AP to compare with its own APIC.
    u64 bsp_x2apic = 0, bsp_mmio = 0;
    u8 pad[64] = {};
    volatile u64 done = 0;      // AP: the last command finished
    volatile u32 wake_ipi = 0;  // AP: it halts between jobs and wants the wake IPI
};

namespace {

// Whether this AP's local APIC takes the fixed wake IPI from the BSP: enabled, in the
// BSP's mode and place, software-enabled, and its TPR lets vector kApWakeVector through.
bool apic_takes_wake_ipi(const ApMailbox& m) {
    u64 raw = 0;
    if (pmulab_safe_rdmsr(msr::IA32_APIC_BASE, &raw)) return false;
    ApicBase base(raw);
    if (!base.enable() || u64(base.extd()) != m.bsp_x2apic) return false;
    u64 svr = 0, tpr = 0;
    if (base.extd()) {
        if (pmulab_safe_rdmsr(kX2ApicMsrBase + kApicSvr / 16, &svr)) return false;
        if (pmulab_safe_rdmsr(kX2ApicMsrBase + kApicTpr / 16, &tpr)) return false;
    } else {
        if (base.mmio() != m.bsp_mmio) return false;
        svr = *reinterpret_cast<volatile u32*>(uintptr_t(base.mmio() + kApicSvr));
        tpr = *reinterpret_cast<volatile u32*>(uintptr_t(base.mmio() + kApicTpr));
    }
    return ApicSvr(svr).software_enable() && ApicTpr(tpr).priority_class() < (kApWakeVector >> 4);
}

// This CPU's local APIC register `off` (the AP's mode is the BSP's: apic_takes_wake_ipi).
u32 apic_read(const ApMailbox& m, u32 off) {
    if (m.bsp_x2apic) {
        u64 v = 0;
        (void)pmulab_safe_rdmsr(kX2ApicMsrBase + off / 16, &v);
        return u32(v);
    }
    return *reinterpret_cast<volatile u32*>(uintptr_t(m.bsp_mmio + off));
}
void apic_write(const ApMailbox& m, u32 off, u32 v) {
    if (m.bsp_x2apic) (void)pmulab_safe_wrmsr(kX2ApicMsrBase + off / 16, v);
    else *reinterpret_cast<volatile u32*>(uintptr_t(m.bsp_mmio + off)) = v;
}

// The worker, on the AP (started by StartupThisAP, returns on kCmdExit). Runs with
// interrupts masked except inside `sti; hlt` (the STI shadow covers HLT, so a wake IPI
// sent after the mailbox check is taken by HLT, never lost). No allocation, no boot
// services.
VOID EFIAPI worker_main(VOID* arg) {
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

}  // namespace

void* ap_guard_alloc(usize bytes) {
    if (!load_acquire(g_guard_on)) return nullptr;
    __atomic_add_fetch(&g_guard_count, 1, __ATOMIC_RELEASE);
    u64 size = (u64(bytes) + 63) & ~u64(63);
    u64 at = __atomic_fetch_add(&g_arena_used, size, __ATOMIC_RELAXED);
    // Out of reserve: stop this CPU; the BSP's timeout reports the job (and the count).
    if (at + size > sizeof g_arena)
        for (;;) asm volatile("cli; hlt");
    return g_arena + at;
}

bool ap_guard_owns(const void* p) {
    auto a = reinterpret_cast<uintptr_t>(p);
    auto lo = reinterpret_cast<uintptr_t>(g_arena);
    return a >= lo && a < lo + sizeof g_arena;
}

void ApWorkers::init(EfiMpServicesProtocol* mp, u32 count, const u64* apic_ids) {
    mp_ = mp;
    count_ = count;
    boxes_ = new ApMailbox[count];
    for (u32 i = 0; i < count; ++i) {
        boxes_[i].cpu = i;
        boxes_[i].apic_id = apic_ids[i];
    }
}

namespace {

// Sends one IPI (SDM Vol. 3A "Issuing Interprocessor Interrupts") to a physical APIC ID.
void send_ipi(bool x2apic, u64 mmio, u64 apic_id, ApicIcr icr) {
    u64 flags = read_rflags();
    asm volatile("cli" ::: "memory");
    if (x2apic) {
        icr.set_x2apic_destination(apic_id);
        (void)pmulab_safe_wrmsr(kX2ApicIcrMsr, icr.raw());
    } else {
        auto* lo = reinterpret_cast<volatile u32*>(uintptr_t(mmio + kApicIcrLow));
        auto* hi = reinterpret_cast<volatile u32*>(uintptr_t(mmio + kApicIcrHigh));
        // The previous IPI must have left (delivery status idle) before the next.
        for (u32 i = 0; i < 1000000 && ApicIcr(*lo).send_pending(); ++i) asm volatile("pause");
        icr.set_xapic_destination(apic_id);
        *hi = u32(icr.raw() >> 32);
        *lo = u32(icr.raw());
    }
    if (flags & kRflagsIf) asm volatile("sti" ::: "memory");
}

// Arms the one-shot firmware timer (100 ns units) after clearing an old signal.
void arm(EFI_EVENT timer, u64 timeout_100ns) {
    gBS->SetTimer(timer, TimerCancel, 0);
    gBS->CheckEvent(timer);
    gBS->SetTimer(timer, TimerRelative, timeout_100ns);
}

// Spins (PAUSE) until *word == want or the timer fires; true when it got there.
bool spin_until(const volatile u64& word, u64 want, EFI_EVENT timer) {
    for (u32 i = 1;; ++i) {
        if (load_acquire(word) == want) return true;
        asm volatile("pause" ::: "memory");
        if ((i & 255) == 0 && gBS->CheckEvent(timer) == EFI_SUCCESS) return load_acquire(word) == want;
    }
}

constexpr u64 k100nsPerSecond = 10000000;

u32 g_code_timeout = 0;  // seconds; 0: ApWorkers::kJobTimeoutSeconds

// ---- the BSP's watchdog, run by a worker on an AP (no allocation, no boot services) ----

// Calibration of the AP's local APIC timer: counting down from 2^32 - 1 (masked, divide
// by 1) while the BSP stalls a known time.
struct CalCtx {
    const ApMailbox* m;
    u32 lvt, divide, elapsed;
};
void cal_start(void* p) {
    auto* c = static_cast<CalCtx*>(p);
    c->lvt = apic_read(*c->m, kApicLvtTimer);
    c->divide = apic_read(*c->m, kApicDivide);
    apic_write(*c->m, kApicLvtTimer, u32(ApicLvtTimer().set_vector(kApTimerVector).set_masked().raw()));
    apic_write(*c->m, kApicDivide, kDivideBy1);
    apic_write(*c->m, kApicInitialCount, 0xFFFFFFFFu);
}
void cal_read(void* p) {
    auto* c = static_cast<CalCtx*>(p);
    c->elapsed = 0xFFFFFFFFu - apic_read(*c->m, kApicCurrentCount);
    apic_write(*c->m, kApicInitialCount, 0);
    apic_write(*c->m, kApicDivide, c->divide);
    apic_write(*c->m, kApicLvtTimer, c->lvt);
}

// The watch: one-shot timer rounds (each below 2^31 ticks) while halted; woken by the
// timer or by the BSP's wake IPI (cancel). When the last round ends first, an NMI goes
// to the target with the watchdog flag set (fault_stubs.S pmulab_nmi).
struct WatchCtx {
    const ApMailbox* m = nullptr;
    bool x2apic = false;
    u64 mmio = 0;
    u64 target = 0;
    u32 per_round = 0, rounds = 0;
    volatile u32 cancel = 0, armed = 0, fired = 0;
};
WatchCtx g_watch;

void watch_fn(void* p) {
    auto* w = static_cast<WatchCtx*>(p);
    const ApMailbox& m = *w->m;
    u32 lvt = apic_read(m, kApicLvtTimer), divide = apic_read(m, kApicDivide);
    apic_write(m, kApicDivide, kDivideBy1);
    apic_write(m, kApicLvtTimer, u32(ApicLvtTimer().set_vector(kApTimerVector).raw()));  // one-shot, unmasked
    u32 left = w->rounds;
    apic_write(m, kApicInitialCount, w->per_round);
    store_release(w->armed, u32(1));
    for (;;) {
        if (load_acquire(w->cancel)) break;
        asm volatile("sti; hlt; cli" ::: "memory");
        if (load_acquire(w->cancel)) break;
        if (left == 0 || apic_read(m, kApicCurrentCount) != 0) continue;  // not the timer
        if (--left > 0) {
            apic_write(m, kApicInitialCount, w->per_round);
            continue;
        }
        watchdog_nmi_arm(true);
        send_ipi(w->x2apic, w->mmio, w->target, ApicIcr().set_delivery_mode(kDeliveryNmi).set_level_assert());
        store_release(w->fired, u32(1));
    }
    apic_write(m, kApicInitialCount, 0);
    apic_write(m, kApicLvtTimer, u32(ApicLvtTimer(lvt).set_masked().raw()));
    apic_write(m, kApicDivide, divide);
    apic_write(m, kApicLvtTimer, lvt);
}

}  // namespace

void set_code_timeout(u32 seconds) { g_code_timeout = seconds; }
u32 code_timeout() { return g_code_timeout; }

Status ApWorkers::start(ApMailbox& m) {
    if (!mp_) return Error::make(Errc::unsupported, "no MP Services: cannot run on CPU %u", m.cpu);
    if (!timer_) {
        if (gBS->CreateEvent(EVT_TIMER, 0, nullptr, nullptr, &timer_) != EFI_SUCCESS) {
            timer_ = nullptr;
            return Error::make(Errc::io, "cannot create a timer event for AP jobs");
        }
        // The BSP's APIC (read here, with pmulab's exception table loaded): where IPIs go.
        u64 raw = 0;
        if (pmulab_safe_rdmsr(msr::IA32_APIC_BASE, &raw) == 0) {
            ApicBase base(raw);
            x2apic_ = base.extd();
            apic_mmio_ = x2apic_ ? 0 : base.mmio();
            apic_ok_ = base.enable();
        }
        pmulab_wake_eoi_mmio = apic_mmio_;
    }
    m.bsp_x2apic = apic_ok_ && x2apic_;
    m.bsp_mmio = apic_ok_ ? apic_mmio_ : ~u64(0);  // no usable APIC: the worker polls
    EFI_STATUS st = gBS->CreateEvent(0, 0, nullptr, nullptr, &m.finished);
    if (st != EFI_SUCCESS) return Error::make(Errc::io, "CreateEvent for CPU %u failed: %s", m.cpu, status_name(st));
    m.seq = 0;
    m.done = 0;
    store_release(m.state, u32(kStarting));
    st = mp_->StartupThisAP(mp_, worker_main, UINTN(m.cpu), m.finished, 0, &m, nullptr);
    if (st != EFI_SUCCESS) {
        gBS->CloseEvent(m.finished);
        m.finished = nullptr;
        m.state = kOff;
        return Error::make(Errc::io, "MP Services StartupThisAP(CPU %u) failed: %s", m.cpu, status_name(st));
    }
    arm(timer_, 10 * k100nsPerSecond);
    for (u32 i = 1; load_acquire(m.state) != kReady; ++i) {
        asm volatile("pause" ::: "memory");
        if ((i & 255) == 0 && gBS->CheckEvent(timer_) == EFI_SUCCESS && load_acquire(m.state) != kReady) {
            m.state = kBroken;  // MP Services still owns it (and the event)
            return Error::make(Errc::io, "CPU %u did not start pmulab's worker within 10 s", m.cpu);
        }
    }
    return ok_status();
}

Status ApWorkers::post(ApMailbox& m, u32 cmd, CpuFn fn, void* ctx, u64 timeout_100ns, const char* what) {
    m.fn = fn;
    m.ctx = ctx;
    m.cmd = cmd;
    u64 seq = m.seq + 1;
    arm(timer_, timeout_100ns);
    u64 allocs_before = __atomic_load_n(&g_guard_count, __ATOMIC_ACQUIRE);
    guard_begin();
    store_release(m.seq, seq);
    if (m.wake_ipi)
        send_ipi(x2apic_, apic_mmio_, m.apic_id,
                 ApicIcr().set_vector(kApWakeVector).set_delivery_mode(kDeliveryFixed).set_level_assert());
    bool finished = spin_until(m.done, seq, timer_);
    if (!finished && cmd == kCmdRun) {
        // The watchdog: an NMI ends generated code in flight like a fault (vector 2), and
        // the job reports it and returns (fault_stubs.S pmulab_nmi).
        watchdog_nmi_arm(true);
        send_ipi(x2apic_, apic_mmio_, m.apic_id, ApicIcr().set_delivery_mode(kDeliveryNmi).set_level_assert());
        arm(timer_, 5 * k100nsPerSecond);
        finished = spin_until(m.done, seq, timer_);
        watchdog_nmi_settle();
    }
    u64 allocs = guard_end(allocs_before);
    if (!finished) {
        // Stop the CPU where it is (INIT: it waits for a SIPI), so that it never runs in
        // memory pmulab frees or hands back to the firmware.
        ApicIcr init = ApicIcr().set_delivery_mode(kDeliveryInit).set_level_assert().set_level_trigger();
        send_ipi(x2apic_, apic_mmio_, m.apic_id, init);
        if (!x2apic_) send_ipi(x2apic_, apic_mmio_, m.apic_id, ApicIcr(init).set_level_assert(false));
        generated_code_reset();
        m.state = kHung;
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

Status ApWorkers::run(u32 cpu, CpuFn fn, void* ctx) {
    PMULAB_TRY(ready(cpu));
    u32 seconds = g_code_timeout ? g_code_timeout : kJobTimeoutSeconds;
    return post(boxes_[cpu], kCmdRun, fn, ctx, u64(seconds) * k100nsPerSecond, "a job");
}

Status ApWorkers::calibrate(ApMailbox& m) {
    CalCtx c{&m, 0, 0, 0};
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
    g_watch.x2apic = x2apic_;
    g_watch.mmio = apic_mmio_;
    g_watch.target = target_apic;
    g_watch.per_round = u32(ticks / rounds);
    g_watch.rounds = u32(rounds);
    g_watch.cancel = 0;
    g_watch.armed = 0;
    g_watch.fired = 0;
    m.fn = watch_fn;
    m.ctx = &g_watch;
    m.cmd = kCmdRun;
    u64 seq = m.seq + 1;
    store_release(m.seq, seq);
    send_ipi(x2apic_, apic_mmio_, m.apic_id,
             ApicIcr().set_vector(kApWakeVector).set_delivery_mode(kDeliveryFixed).set_level_assert());
    watcher_ = &m;
    watch_seq_ = seq;
    arm(timer_, 5 * k100nsPerSecond);
    for (u32 i = 1; !load_acquire(g_watch.armed); ++i) {
        asm volatile("pause" ::: "memory");
        if ((i & 255) == 0 && gBS->CheckEvent(timer_) == EFI_SUCCESS && !load_acquire(g_watch.armed)) {
            watch_end();
            return Error::make(Errc::io, "CPU %u did not start watching within 5 s", watcher);
        }
    }
    return ok_status();
}

void ApWorkers::watch_end() {
    if (!watcher_) return;
    ApMailbox& m = *watcher_;
    watcher_ = nullptr;
    store_release(g_watch.cancel, u32(1));
    send_ipi(x2apic_, apic_mmio_, m.apic_id,
             ApicIcr().set_vector(kApWakeVector).set_delivery_mode(kDeliveryFixed).set_level_assert());
    arm(timer_, 5 * k100nsPerSecond);
    bool finished = spin_until(m.done, watch_seq_, timer_);
    if (load_acquire(g_watch.fired)) watchdog_nmi_settle();
    if (!finished) {
        ApicIcr init = ApicIcr().set_delivery_mode(kDeliveryInit).set_level_assert().set_level_trigger();
        send_ipi(x2apic_, apic_mmio_, m.apic_id, init);
        if (!x2apic_) send_ipi(x2apic_, apic_mmio_, m.apic_id, ApicIcr(init).set_level_assert(false));
        m.state = kHung;
    }
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
