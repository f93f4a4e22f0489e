// The BSP's watchdog on one CPU (bsp_watchdog.h): an HPET comparator routed through the I/O
// APIC as an NMI. Begin and end run on the BSP with interrupts masked (the I/O APIC's
// index/window pair is not atomic); timer_watch_nmi runs in the NMI and only reads the
// main counter and rewrites the comparator.
#include "bsp_watchdog.h"

#include "acpi.h"
#include "ap_mailbox.h"
#include "efi_defs.h"
#include "x86/hpet_regs.h"
#include "x86/ioapic_regs.h"

extern "C" {
volatile pmulab::u64 pmulab_nmi_timer = 0;
extern pmulab::u64 pmulab_nmi_armed;
extern pmulab::u64 pmulab_nmi_expected;
}

namespace pmulab::efi {

using regs::HpetCapabilities;
using regs::HpetConfig;
using regs::HpetReg;
using regs::HpetTimerConfig;
using regs::IoApicDelivery;
using regs::IoApicRedirection;
using regs::IoApicVersion;

namespace {

constexpr u64 kRetryFemtos = 10 * 1000000000000ull;  // 10 ms: the retry after the time is over
constexpr u64 kRound32 = u64(1) << 31;               // one round of a 32-bit comparator

u64 mmio64(u64 base, u32 off) { return *reinterpret_cast<volatile u64*>(uintptr_t(base + off)); }
void mmio64_write(u64 base, u32 off, u64 v) { *reinterpret_cast<volatile u64*>(uintptr_t(base + off)) = v; }
u64 hpet_read(u64 base, HpetReg r) { return mmio64(base, u32(r)); }
void hpet_write(u64 base, HpetReg r, u64 v) { mmio64_write(base, u32(r), v); }

u32 ioapic_read(u64 base, u32 index) {
    *reinterpret_cast<volatile u32*>(uintptr_t(base + regs::kIoApicRegSel)) = index;
    return *reinterpret_cast<volatile u32*>(uintptr_t(base + regs::kIoApicWindow));
}
void ioapic_write(u64 base, u32 index, u32 v) {
    *reinterpret_cast<volatile u32*>(uintptr_t(base + regs::kIoApicRegSel)) = index;
    *reinterpret_cast<volatile u32*>(uintptr_t(base + regs::kIoApicWindow)) = v;
}
IoApicRedirection redirection_read(u64 base, u32 pin) {
    return IoApicRedirection(u64(ioapic_read(base, regs::ioapic_redirection_low(pin))) |
                             (u64(ioapic_read(base, regs::ioapic_redirection_high(pin))) << 32));
}
// The low dword last: its mask bit decides when the entry takes effect.
void redirection_write(u64 base, u32 pin, IoApicRedirection e) {
    ioapic_write(base, regs::ioapic_redirection_low(pin), u32(e.raw()) | u32(IoApicRedirection::masked_field::mask));
    ioapic_write(base, regs::ioapic_redirection_high(pin), u32(e.raw() >> 32));
    ioapic_write(base, regs::ioapic_redirection_low(pin), u32(e.raw()));
}

u64 irq_save() {
    u64 f;
    asm volatile("pushfq; pop %0; cli" : "=r"(f)::"memory");
    return f;
}
void irq_restore(u64 f) {
    if (f & 0x200) asm volatile("sti" ::: "memory");  // RFLAGS.IF
}

// Where the watch's NMI comes from, and what it found there.
struct Route {
    u32 timer = 0, gsi = 0, pin = 0;
    u64 ioapic = 0;
};

// The firmware's values of every register the watch writes.
struct Saved {
    u64 config = 0, counter = 0, timer_config = 0, comparator = 0;
    IoApicRedirection entry;
};

struct Watch {
    u64 hpet = 0;
    Route route;
    Saved saved;
    u64 deadline = 0, target = 0;  // main-counter values: the end, and the armed comparator's
    u64 round = 0, retry = 0;      // ticks: the longest round the comparator takes, the retry
    volatile u32 ending = 0;
    TimerWatchInfo info;
};
Watch g_watch;

// An I/O APIC input the firmware leaves masked (unused) that timer `cfg` can drive: inputs
// 16 and up first (no ISA device and, under QEMU, no 8259 behind them), then the others
// except 0 and 2 (the 8254's IRQ0 and the 8259 cascade).
bool pick_input(const AcpiPlatform& p, HpetTimerConfig cfg, Route* r) {
    for (int pass = 0; pass < 2; ++pass)
        for (u32 gsi = 0; gsi < 32; ++gsi) {
            if (!cfg.can_route(gsi) || (pass == 0) != (gsi >= 16) || gsi == 0 || gsi == 2) continue;
            for (u32 i = 0; i < p.ioapic_count; ++i) {
                const AcpiIoApic& a = p.ioapics[i];
                u32 n = IoApicVersion(ioapic_read(a.address, regs::kIoApicVersionIndex)).entries();
                if (gsi < a.gsi_base || gsi - a.gsi_base >= n) continue;
                if (!redirection_read(a.address, gsi - a.gsi_base).masked()) continue;  // in use
                *r = Route{0, gsi, gsi - a.gsi_base, a.address};
                return true;
            }
        }
    return false;
}

// A timer whose interrupt the firmware leaves off, not FSB-routed, and not one of the two
// the legacy replacement route takes (§2.3.5 LEG_RT_CNF), with a free input.
Status pick_route(const AcpiPlatform& p, u64 hpet, Route* r) {
    HpetCapabilities caps(hpet_read(hpet, HpetReg::capabilities));
    bool legacy = HpetConfig(hpet_read(hpet, HpetReg::configuration)).legacy_route();
    for (u32 t = legacy ? 2 : 0; t < caps.timers(); ++t) {
        HpetTimerConfig cfg(mmio64(hpet, regs::hpet_timer_config(t)));
        if (cfg.int_enable() || cfg.fsb_enable()) continue;
        if (!pick_input(p, cfg, r)) continue;
        r->timer = t;
        return ok_status();
    }
    return Error::make(Errc::unsupported,
                       "none of the HPET's %u timers is free with a free I/O APIC input to route it to (the firmware "
                       "uses them)",
                       caps.timers());
}

// Where the HPET is and that it can time `seconds`.
Result<u64> hpet_usable(const AcpiPlatform& p) {
    if (!p.hpet) return Error::make(Errc::unsupported, "the firmware describes no HPET (no ACPI HPET table)");
    if (!p.ioapic_count) return Error::make(Errc::unsupported, "the firmware describes no I/O APIC (ACPI MADT)");
    HpetCapabilities caps(hpet_read(p.hpet_base, HpetReg::capabilities));
    if (caps.period_fs() == 0 || caps.period_fs() > 100000000)  // §2.3.4: at most 100 ns
        return Error::make(Errc::unsupported, "the HPET at 0x%llx reports a bad period (%llu fs)",
                           (unsigned long long)p.hpet_base, (unsigned long long)caps.period_fs());
    if (!caps.counter_64bit())
        return Error::make(Errc::unsupported, "the HPET at 0x%llx has a 32-bit main counter",
                           (unsigned long long)p.hpet_base);
    return p.hpet_base;
}

u64 ticks_for(u64 period_fs, u64 seconds) {
    return seconds * (regs::kHpetFemtosPerSecond / period_fs) +
           seconds * (regs::kHpetFemtosPerSecond % period_fs) / period_fs;
}

// Arms the comparator for the next round from `now`: the deadline, or one round of a
// 32-bit comparator, whichever comes first.
void arm_next(Watch& w, u64 now) {
    u64 end = w.deadline - now > w.round ? now + w.round : w.deadline;
    w.target = end;
    mmio64_write(w.hpet, regs::hpet_timer_comparator(w.route.timer), end);
}

void program(Watch& w, u64 bsp_apic, u64 ticks) {
    const Route& r = w.route;
    HpetConfig cfg(w.saved.config);
    redirection_write(r.ioapic, r.pin, IoApicRedirection().set_delivery(IoApicDelivery::nmi).set_destination(bsp_apic));
    HpetTimerConfig tc(w.saved.timer_config);
    tc.set_int_enable(false).set_level_trigger(false).set_periodic(false).set_fsb_enable(false).set_int_route(r.gsi);
    mmio64_write(w.hpet, regs::hpet_timer_config(r.timer), tc.raw());
    if (!cfg.enable()) hpet_write(w.hpet, HpetReg::configuration, HpetConfig(cfg).set_enable().raw());
    u64 now = hpet_read(w.hpet, HpetReg::main_counter);
    w.deadline = now + ticks;
    arm_next(w, now);
    store_release(pmulab_nmi_timer, u64(1));
    mmio64_write(w.hpet, regs::hpet_timer_config(r.timer), tc.set_int_enable().raw());
}

}  // namespace

namespace {

// What begin needs, read without writing anything (interrupts masked by the caller).
Status find_route(u64 bsp_apic, u64* hpet_out, Route* route) {
    Result<const AcpiPlatform*> p = acpi_platform();
    if (!p.ok()) return p.error();
    Result<u64> hpet = hpet_usable(*p.value());
    if (!hpet.ok()) return hpet.error();
    if (bsp_apic > 0xFF)
        return Error::make(Errc::unsupported, "the BSP's APIC ID %llu is above 255: an I/O APIC cannot address it",
                           (unsigned long long)bsp_apic);
    *hpet_out = hpet.value();
    return pick_route(*p.value(), hpet.value(), route);
}

}  // namespace

Status timer_watch_probe(u64 bsp_apic) {
    if (load_acquire(pmulab_nmi_timer)) return ok_status();
    u64 hpet = 0;
    Route r;
    u64 flags = irq_save();
    Status s = find_route(bsp_apic, &hpet, &r);
    irq_restore(flags);
    return s;
}

Status timer_watch_begin(u64 bsp_apic, u32 seconds) {
    if (load_acquire(pmulab_nmi_timer)) return Error::make(Errc::internal, "the BSP's timer watchdog is armed already");
    Watch& w = g_watch;
    w = Watch();
    u64 flags = irq_save();
    Status s = find_route(bsp_apic, &w.hpet, &w.route);
    if (!s.ok()) {
        irq_restore(flags);
        return s;
    }
    const Route& r = w.route;
    w.saved = Saved{hpet_read(w.hpet, HpetReg::configuration), hpet_read(w.hpet, HpetReg::main_counter),
                    mmio64(w.hpet, regs::hpet_timer_config(r.timer)),
                    mmio64(w.hpet, regs::hpet_timer_comparator(r.timer)), redirection_read(r.ioapic, r.pin)};
    u64 period = HpetCapabilities(hpet_read(w.hpet, HpetReg::capabilities)).period_fs();
    HpetTimerConfig tc(w.saved.timer_config);
    w.round = tc.size_64bit_cap() && !tc.mode_32bit() ? ~u64(0) : kRound32;
    w.retry = kRetryFemtos / period;
    w.info.timer = r.timer;
    w.info.gsi = r.gsi;
    program(w, bsp_apic, ticks_for(period, seconds));
    irq_restore(flags);
    return ok_status();
}

// Reads back what timer_watch_end restored (the read-only status bits of the entry aside).
static Status check_restored(const Watch& w) {
    const Route& r = w.route;
    constexpr u64 kStatus = IoApicRedirection::send_pending_field::mask | IoApicRedirection::remote_irr_field::mask;
    const char* what = nullptr;
    if (hpet_read(w.hpet, HpetReg::configuration) != w.saved.config) what = "the HPET's General Configuration";
    else if (!HpetConfig(w.saved.config).enable() && hpet_read(w.hpet, HpetReg::main_counter) != w.saved.counter)
        what = "the HPET's halted main counter";
    else if (mmio64(w.hpet, regs::hpet_timer_config(r.timer)) != w.saved.timer_config)
        what = "the timer's configuration";
    else if (mmio64(w.hpet, regs::hpet_timer_comparator(r.timer)) != w.saved.comparator)
        what = "the timer's comparator";
    else if ((redirection_read(r.ioapic, r.pin).raw() & ~kStatus) != (w.saved.entry.raw() & ~kStatus))
        what = "the I/O APIC's redirection entry";
    if (!what) return ok_status();
    return Error::make(Errc::internal, "the BSP's timer watchdog could not restore %s (HPET timer %u, GSI %u)", what,
                       r.timer, r.gsi);
}

Status timer_watch_end() {
    Watch& w = g_watch;
    if (!load_acquire(pmulab_nmi_timer)) return ok_status();
    const Route& r = w.route;
    u64 flags = irq_save();
    store_release(w.ending, u32(1));
    HpetTimerConfig tc(mmio64(w.hpet, regs::hpet_timer_config(r.timer)));
    mmio64_write(w.hpet, regs::hpet_timer_config(r.timer), tc.set_int_enable(false).raw());
    redirection_write(r.ioapic, r.pin, IoApicRedirection(w.saved.entry).set_masked());
    // An NMI the timer sent just before is taken within microseconds (NMIs get through CLI):
    // the stub still drops it meanwhile.
    gBS->Stall(100);
    store_release(pmulab_nmi_timer, u64(0));
    mmio64_write(w.hpet, regs::hpet_timer_comparator(r.timer), w.saved.comparator);
    mmio64_write(w.hpet, regs::hpet_timer_config(r.timer), w.saved.timer_config);
    redirection_write(r.ioapic, r.pin, w.saved.entry);
    if (!HpetConfig(w.saved.config).enable()) {
        // The counter was halted: halt it again and put back its value (§2.3.7).
        hpet_write(w.hpet, HpetReg::configuration, w.saved.config);
        hpet_write(w.hpet, HpetReg::main_counter, w.saved.counter);
    }
    Status s = check_restored(w);
    irq_restore(flags);
    return s;
}

u32 timer_watch_nmi() {
    Watch& w = g_watch;
    if (!load_acquire(pmulab_nmi_timer)) return 0;
    if (!load_acquire(w.ending)) {
        u64 now = hpet_read(w.hpet, HpetReg::main_counter);
        if (now >= w.deadline) {
            ++w.info.fired;
            w.target = now + w.retry;
            mmio64_write(w.hpet, regs::hpet_timer_comparator(w.route.timer), w.target);
            __atomic_store_n(&pmulab_nmi_armed, u64(1), __ATOMIC_SEQ_CST);
            return 0;
        }
        if (now >= w.target) {
            ++w.info.rounds;
            arm_next(w, now);
            return 1;
        }
    }
    if (__atomic_load_n(&pmulab_nmi_expected, __ATOMIC_ACQUIRE)) return 0;
    ++w.info.dropped;
    return 1;
}

TimerWatchInfo timer_watch_info() { return g_watch.info; }

}  // namespace pmulab::efi
