#include "fault.h"

#include "ap_mailbox.h"
#include "bsp_watchdog.h"
#include "efi_defs.h"
#include "pmu/pmi.h"
#include "x86/hw.h"

extern "C" {
#define PMULAB_EXC(v) void pmulab_exc_##v();
PMULAB_EXC(0)
PMULAB_EXC(1)
PMULAB_EXC(3)
PMULAB_EXC(4)
PMULAB_EXC(5)
PMULAB_EXC(6)
PMULAB_EXC(7)
PMULAB_EXC(10)
PMULAB_EXC(11)
PMULAB_EXC(12)
PMULAB_EXC(13)
PMULAB_EXC(14)
PMULAB_EXC(16)
PMULAB_EXC(17)
PMULAB_EXC(19)
#undef PMULAB_EXC
void pmulab_ap_wake();
void pmulab_nmi();
void pmulab_gen_abort();
extern pmulab::u64 pmulab_nmi_armed;
extern pmulab::u64 pmulab_prev_exc[32];
extern pmulab::u64 pmulab_gen_lo, pmulab_gen_hi, pmulab_gen_exit;
extern pmulab::u64 pmulab_gen_fault[5];
extern pmulab::PmiHandler* volatile pmulab_nmi_pmi;
extern pmulab::u64 pmulab_nmi_expected;
// Called by pmulab_nmi (fault_stubs.S) with the interrupted RIP while a handler is attached:
// 1 when the handler claimed the NMI.
pmulab::u32 pmulab_nmi_offer(pmulab::u64 rip);
}

namespace pmulab::efi {

namespace {

// 64-bit IDT gate descriptor, SDM Vol. 3A §6.14.1 (Figure 6-8).
struct IdtGate {
    u16 offset_lo;
    u16 selector;
    u8 ist;
    u8 type_attr;
    u16 offset_mid;
    u32 offset_hi;
    u32 reserved;
};
static_assert(sizeof(IdtGate) == 16, "IDT gate is 16 bytes in IA-32e mode");
constexpr u8 kInterruptGatePresentDpl0 = 0x8E;

IdtGate* g_idt = nullptr;
IdtGate* g_ap_idt = nullptr;  // g_idt plus the AP workers' wake vector
u16 g_idt_limit = 0;

u64 gate_offset(const IdtGate& g) { return u64(g.offset_lo) | (u64(g.offset_mid) << 16) | (u64(g.offset_hi) << 32); }

void set_gate(IdtGate& g, u64 target, u16 selector) {
    g.offset_lo = u16(target);
    g.offset_mid = u16(target >> 16);
    g.offset_hi = u32(target >> 32);
    g.selector = selector;
    g.ist = 0;
    g.type_attr = kInterruptGatePresentDpl0;
    g.reserved = 0;
}

SavedIdtr read_idtr() {
    SavedIdtr r;
    asm volatile("sidt %0" : "=m"(r));
    return r;
}

void load_idtr(const SavedIdtr& r) { asm volatile("lidt %0" ::"m"(r)); }

}  // namespace

Status fault_layer_init() {
    if (g_idt) return ok_status();
    SavedIdtr cur = read_idtr();
    usize entries = (usize(cur.limit) + 1) / sizeof(IdtGate);
    if (entries <= kVectorGP)
        return Error::make(Errc::unsupported, "firmware IDT has only %u entries; cannot catch #GP", unsigned(entries));
    void* mem = nullptr;
    if (gBS->AllocatePool(EfiLoaderData, usize(cur.limit) + 1, &mem) != EFI_SUCCESS)
        return Error::make(Errc::io, "cannot allocate the exception table");
    auto* src = reinterpret_cast<const IdtGate*>(cur.base);
    g_idt = static_cast<IdtGate*>(mem);
    for (usize i = 0; i < entries; ++i) g_idt[i] = src[i];
    g_idt_limit = cur.limit;
    // The vectors code can raise (SDM Vol. 3A Table 6-1), each to its stub.
    struct Hook {
        u32 vector;
        void (*stub)();
    };
    static const Hook kHooks[] = {
        {0, pmulab_exc_0},   {1, pmulab_exc_1},   {2, pmulab_nmi},     {3, pmulab_exc_3},
        {4, pmulab_exc_4},   {5, pmulab_exc_5},   {6, pmulab_exc_6},   {7, pmulab_exc_7},
        {10, pmulab_exc_10}, {11, pmulab_exc_11}, {12, pmulab_exc_12}, {13, pmulab_exc_13},
        {14, pmulab_exc_14}, {16, pmulab_exc_16}, {17, pmulab_exc_17}, {19, pmulab_exc_19},
    };
    for (const Hook& h : kHooks) {
        if (h.vector >= entries) continue;
        pmulab_prev_exc[h.vector] = gate_offset(src[h.vector]);
        set_gate(g_idt[h.vector], u64(reinterpret_cast<uintptr_t>(h.stub)), src[h.vector].selector);
    }
    // The AP workers' copy: the same, plus their wake IPI.
    if (kApWakeVector < entries) {
        if (gBS->AllocatePool(EfiLoaderData, usize(cur.limit) + 1, &mem) != EFI_SUCCESS)
            return Error::make(Errc::io, "cannot allocate the AP exception table");
        g_ap_idt = static_cast<IdtGate*>(mem);
        for (usize i = 0; i < entries; ++i) g_ap_idt[i] = g_idt[i];
        u16 cs;
        asm volatile("mov %%cs, %0" : "=r"(cs));
        set_gate(g_ap_idt[kApWakeVector], u64(reinterpret_cast<uintptr_t>(pmulab_ap_wake)), cs);
        // The watchdog's local APIC timer only needs to end HLT too (the same stub: EOI).
        if (kApTimerVector < entries)
            set_gate(g_ap_idt[kApTimerVector], u64(reinterpret_cast<uintptr_t>(pmulab_ap_wake)), cs);
    }
    return ok_status();
}

SavedIdtr fault_layer_enter_ap() {
    SavedIdtr prev = read_idtr();
    IdtGate* t = g_ap_idt ? g_ap_idt : g_idt;
    if (t) {
        SavedIdtr mine{g_idt_limit, u64(reinterpret_cast<uintptr_t>(t))};
        load_idtr(mine);
    }
    return prev;
}

SavedIdtr fault_layer_enter() {
    SavedIdtr prev = read_idtr();
    if (g_idt) {
        SavedIdtr mine{g_idt_limit, u64(reinterpret_cast<uintptr_t>(g_idt))};
        load_idtr(mine);
    }
    return prev;
}

void fault_layer_leave(const SavedIdtr& saved) { load_idtr(saved); }

void generated_code_enter(const void* lo, usize code_size) {
    pmulab_gen_fault[0] = 0;
    pmulab_gen_exit = u64(reinterpret_cast<uintptr_t>(pmulab_gen_abort));
    pmulab_gen_lo = u64(reinterpret_cast<uintptr_t>(lo));
    pmulab_gen_hi = pmulab_gen_lo + code_size;
    asm volatile("" ::: "memory");
}

bool generated_code_leave(u64 out[4]) {
    asm volatile("" ::: "memory");
    pmulab_gen_lo = pmulab_gen_hi = 0;
    for (int i = 0; i < 4; ++i) out[i] = pmulab_gen_fault[1 + i];
    return pmulab_gen_fault[0] != 0;
}

void generated_code_reset() {
    pmulab_gen_lo = pmulab_gen_hi = 0;
    asm volatile("" ::: "memory");
}

void watchdog_nmi_arm(bool on) {
    // Armed right before the watchdog's NMI is sent: the NMI also counts as expected
    // (fault_stubs.S pmulab_nmi, case 3), in case a PMI does the stop before it arrives.
    if (on) __atomic_add_fetch(&pmulab_nmi_expected, u64(1), __ATOMIC_SEQ_CST);
    __atomic_store_n(&pmulab_nmi_armed, on ? 1 : 0, __ATOMIC_SEQ_CST);
}

void watchdog_nmi_settle() {
    // An NMI sent with the flag set clears it when it arrives; wait (bounded) for that, so
    // that a late NMI never reaches the firmware's handler.
    for (u32 i = 0; i < 10000000 && __atomic_load_n(&pmulab_nmi_armed, __ATOMIC_ACQUIRE); ++i) asm volatile("pause");
    watchdog_nmi_arm(false);
}

namespace {
NmiCounts g_nmi;
volatile u32 g_in_nmi = 0;
}  // namespace

static u32 nmi_offer_pmi(u64 rip) {
    PmiHandler* h = pmulab_nmi_pmi;
    if (!h) return 0;
    if (g_in_nmi) {  // NMI blocking failed: never run the handler inside itself
        ++g_nmi.nested;
        return 0;
    }
    g_in_nmi = 1;
    ++g_nmi.offered;
    bool mine = h->on_nmi(rip);
    if (mine) ++g_nmi.claimed;
    g_in_nmi = 0;
    return mine ? 1 : 0;
}

// The PMI handler first; then, while the BSP's timer watchdog is armed, the watchdog
// (bsp_watchdog.h timer_watch_nmi: a PMI and the watchdog's NMI may have merged).
extern "C" u32 pmulab_nmi_offer(u64 rip) {
    u32 mine = nmi_offer_pmi(rip);
    if (load_acquire(pmulab_nmi_timer)) mine |= timer_watch_nmi();
    return mine;
}

void nmi_pmi_attach(PmiHandler* h) {
    if (h) {
        g_nmi = NmiCounts();
        g_in_nmi = 0;
    }
    asm volatile("" ::: "memory");
    __atomic_store_n(&pmulab_nmi_pmi, h, __ATOMIC_SEQ_CST);
}

bool nmi_pmi_attached() { return __atomic_load_n(&pmulab_nmi_pmi, __ATOMIC_ACQUIRE) != nullptr; }

NmiCounts nmi_counts() {
    asm volatile("" ::: "memory");
    return g_nmi;
}

void nmi_expect(u64 n) { __atomic_add_fetch(&pmulab_nmi_expected, n, __ATOMIC_SEQ_CST); }
u64 nmi_expected() { return __atomic_load_n(&pmulab_nmi_expected, __ATOMIC_ACQUIRE); }

void fault_layer_fini() {
    if (g_idt) gBS->FreePool(g_idt);
    if (g_ap_idt) gBS->FreePool(g_ap_idt);
    g_idt = g_ap_idt = nullptr;
}

}  // namespace pmulab::efi
