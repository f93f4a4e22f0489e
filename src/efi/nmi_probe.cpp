// selftest's nmi-path check on UEFI (MeasurePlatform::run_with_nmis): while the measuring CPU
// runs code with a PMI handler attached, another CPU sends it NMIs (SDM Vol. 3A §11.6.1,
// delivery mode NMI), one at a time. Each is pmulab's own (fault.h nmi_expect): the NMI stub
// offers it to the handler first, and when the handler does not claim it (nothing overflowed)
// drops it as expected. The BSP sends to an AP while it waits for the AP's job; an AP sends to
// the BSP, started before the BSP's part. The sender runs without allocation or boot services.
#include "efi_platform.h"
#include "fault.h"

namespace pmulab::efi {

namespace {

using regs::ApicDelivery;
using regs::ApicIcr;

struct Sender {
    const LocalApic* apic = nullptr;  // the BSP's description (every CPU's APIC is at the same place)
    u64 target = 0;                   // the measuring CPU's APIC ID
    NmiProbe* probe = nullptr;
    volatile u32 started = 0;
    u32 taken = 0;
};

// The sender's bounded waits: PAUSE iterations, no timer (it may run on an AP). 2^28 is
// seconds under TCG and more on hardware; an NMI is taken in microseconds.
constexpr u64 kSpins = u64(1) << 28;

bool wait_go(const NmiProbe& p) {
    for (u64 i = 0; i < kSpins; ++i) {
        u64 g = load_acquire(p.go);
        if (g) return g == 1;
        asm volatile("pause");
    }
    return false;
}

// Waits until the NMIs expected are back to `before` (all taken) or `also` is set.
bool wait_taken(u64 before, const volatile u64* also = nullptr) {
    for (u64 k = 0; k < kSpins; ++k) {
        if (nmi_expected() <= before || (also && load_acquire(*also))) return true;
        asm volatile("pause");
    }
    return false;
}

void send_nmi(Sender& s) {
    nmi_expect(1);
    s.apic->send_ipi(s.target, ApicIcr::to(ApicDelivery::nmi));
}

// One NMI, and a second one into its handler when the handler says it runs (NmiProbe).
// Counted from what is expected already (a watchdog NMI that merged into a PMI leaves its
// count behind). Returns the NMIs taken, 0 when one was not: it stays expected, so a late
// one is dropped too.
u32 send_round(Sender& s) {
    NmiProbe& p = *s.probe;
    const u64 before = nmi_expected();
    send_nmi(s);
    (void)wait_taken(before, &p.inside);
    const bool pair = load_acquire(p.inside) != 0;
    if (pair) {
        send_nmi(s);
        store_release(p.second, u64(1));
    }
    if (!wait_taken(before) || nmi_expected() > before) return 0;
    store_release(p.inside, u64(0));
    store_release(p.second, u64(0));
    return pair ? 2 : 1;
}

void send_nmis(void* ctx) {
    auto* s = static_cast<Sender*>(ctx);
    store_release(s->started, u32(1));
    NmiProbe& p = *s->probe;
    if (wait_go(p)) {
        while (s->taken < p.count) {
            u32 n = send_round(*s);
            if (!n) break;
            s->taken += n;
        }
    }
    store_release(p.done, u64(1));
}

// Waits (firmware time, on the BSP) until the sender on an AP has begun.
bool sender_started(const Sender& s) {
    for (u32 ms = 0; ms < 5000; ++ms) {
        if (load_acquire(s.started)) return true;
        gBS->Stall(1000);
    }
    return load_acquire(s.started) != 0;
}

// The NMIs taken; an error when one entered the stub while the handler ran (NMI blocking
// broken, e.g. by an IRETQ inside the handler: fault_stubs.S fixup_return).
Result<u32> taken(const Sender& s) {
    NmiCounts c = nmi_counts();
    if (c.nested)
        return Error::make(Errc::internal, "%llu NMIs arrived while the PMI handler ran: NMIs were not blocked",
                           (unsigned long long)c.nested);
    return s.taken;
}

}  // namespace

Result<u32> EfiMeasure::run_with_nmis(Hw& hw, u32 cpu, NmiProbe& probe, CpuFn fn, void* ctx) {
    (void)hw;
    if (!cpus_ || cpus_->cpu_count() < 2)
        return Error::make(Errc::unsupported, "one CPU: no other CPU can send the NMIs");
    EfiHw& h = *cpus_;
    ApWorkers& w = h.workers();
    Sender s;
    s.apic = &w.apic();
    s.probe = &probe;
    s.target = h.apic_id(cpu);
    probe.go = 0;
    probe.done = 0;
    probe.inside = 0;
    probe.second = 0;
    if (cpu != h.bsp()) {
        PMULAB_TRY(w.run_beside(cpu, fn, ctx, send_nmis, &s));
        return taken(s);
    }
    u32 helper = 0;
    while (helper < h.cpu_count() && (helper == h.bsp() || !h.enabled(helper))) ++helper;
    if (helper == h.cpu_count()) return Error::make(Errc::unsupported, "no enabled AP can send the NMIs");
    u64 seq = 0;
    PMULAB_TRY(w.start_async(helper, send_nmis, &s, &seq));
    if (!sender_started(s) || !w.apic().enabled()) {
        store_release(probe.go, u64(2));
        PMULAB_TRY(w.wait_async(helper, seq, 5));
        return Error::make(Errc::unsupported, "CPU %u cannot send NMIs (no local APIC in use)", helper);
    }
    fn(ctx);
    if (load_acquire(probe.go) == 0) store_release(probe.go, u64(2));
    PMULAB_TRY(w.wait_async(helper, seq, 30));
    return taken(s);
}

}  // namespace pmulab::efi
