#include "fault.h"

#include "efi_defs.h"
#include "x86/hw.h"

extern "C" {
void pmulab_ud_stub();
void pmulab_gp_stub();
extern pmulab::u64 pmulab_prev_ud;
extern pmulab::u64 pmulab_prev_gp;
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
    pmulab_prev_ud = gate_offset(src[kVectorUD]);
    pmulab_prev_gp = gate_offset(src[kVectorGP]);
    set_gate(g_idt[kVectorUD], u64(reinterpret_cast<uintptr_t>(&pmulab_ud_stub)), src[kVectorUD].selector);
    set_gate(g_idt[kVectorGP], u64(reinterpret_cast<uintptr_t>(&pmulab_gp_stub)), src[kVectorGP].selector);
    return ok_status();
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

void fault_layer_fini() {
    if (g_idt) gBS->FreePool(g_idt);
    g_idt = nullptr;
}

}  // namespace pmulab::efi
