// Typed local APIC registers (xAPIC and x2APIC).
//
// Each register value is a RegValue (base/bits.h) with one accessor pair per field, the
// layout pinned by static_asserts with worked values. A register is named once (ApicReg,
// its xAPIC MMIO offset); where it lives in either mode, MMIO at the base IA32_APIC_BASE
// gives or an MSR at 800H + offset / 16, is one function (apic_location), so that code
// that touches the APIC (src/efi/local_apic.h) never spells a mode-specific address.
//
// References: Intel SDM Vol. 3A chapter 11 "Advanced Programmable Interrupt Controller
// (APIC)" (chapter 10 in editions before 2023; the section numbers below are the current
// ones, each with its title so that older editions find it too).
#pragma once

#include "base/bits.h"

namespace pmulab::regs {

// ---------------------------------------------------------------------------
// Where the registers are
// ---------------------------------------------------------------------------

// The local APIC registers pmulab uses, as xAPIC MMIO offsets: SDM §11.4.1 Table 11-1
// "Local APIC Register Address Map".
enum class ApicReg : u32 {
    id = 0x20,              // Local APIC ID (§11.4.6)
    version = 0x30,         // Local APIC Version (§11.4.8)
    tpr = 0x80,             // Task Priority (§11.8.3.1)
    eoi = 0xB0,             // EOI, write-only (§11.8.5)
    svr = 0xF0,             // Spurious-Interrupt Vector (§11.9)
    esr = 0x280,            // Error Status (§11.5.3)
    lvt_cmci = 0x2F0,       // LVT corrected machine-check interrupt (§11.5.1)
    icr_low = 0x300,        // Interrupt Command, bits 31:0 (§11.6.1)
    icr_high = 0x310,       // Interrupt Command, bits 63:32 (xAPIC only: §11.12.9)
    lvt_timer = 0x320,      // LVT timer (§11.5.1, §11.5.4)
    lvt_thermal = 0x330,    // LVT thermal sensor (§11.5.1)
    lvt_perf = 0x340,       // LVT performance-monitoring counters: the PMI (§11.5.1)
    lvt_lint0 = 0x350,      // LVT LINT0 (§11.5.1)
    lvt_lint1 = 0x360,      // LVT LINT1 (§11.5.1)
    lvt_error = 0x370,      // LVT error (§11.5.1)
    timer_initial = 0x380,  // timer Initial Count (§11.5.4)
    timer_current = 0x390,  // timer Current Count, read-only (§11.5.4)
    timer_divide = 0x3E0,   // timer Divide Configuration (§11.5.4)
};

// x2APIC: register offset X is MSR 800H + X / 16 (SDM §11.12.1.2 "x2APIC Register Address
// Space", Table 11-6); the ICR is one 64-bit MSR, 830H (§11.12.9), and 0x310 has no MSR.
inline constexpr u32 kX2ApicMsrBase = 0x800;
constexpr u32 x2apic_msr(ApicReg r) { return kX2ApicMsrBase + u32(r) / 16; }
static_assert(x2apic_msr(ApicReg::tpr) == 0x808 && x2apic_msr(ApicReg::eoi) == 0x80B);
static_assert(x2apic_msr(ApicReg::svr) == 0x80F && x2apic_msr(ApicReg::icr_low) == 0x830);
static_assert(x2apic_msr(ApicReg::lvt_timer) == 0x832 && x2apic_msr(ApicReg::lvt_perf) == 0x834);
static_assert(x2apic_msr(ApicReg::lvt_cmci) == 0x82F && x2apic_msr(ApicReg::timer_divide) == 0x83E);

// IA32_APIC_BASE (MSR 1BH), SDM §11.4.4 "Local APIC Status and Location" (Figure 11-5) and
// §11.12.1 "Detecting and Enabling x2APIC Mode" (EXTD).
class ApicBase : public RegValue<ApicBase> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FLAG(ApicBase, bsp, 8)      // this processor is the BSP
    PMULAB_REG_FLAG(ApicBase, extd, 10)    // x2APIC mode
    PMULAB_REG_FLAG(ApicBase, enable, 11)  // APIC global enable
    PMULAB_REG_FIELD(ApicBase, page, 63, 12)
    // The xAPIC MMIO base (4-KByte aligned).
    constexpr u64 mmio() const { return page() << page_field::lo; }
};
static_assert(ApicBase::extd_field::mask == 1ull << 10 && ApicBase::enable_field::mask == 1ull << 11);
// The power-up value of the BSP's register (§11.4.4): FEE00000H, enabled, BSP.
static_assert(ApicBase(0xFEE00900).mmio() == 0xFEE00000 && ApicBase(0xFEE00900).enable() &&
              ApicBase(0xFEE00900).bsp() && !ApicBase(0xFEE00900).extd());
static_assert(ApicBase(0xFEE00D00).extd());  // the same in x2APIC mode

// Where register `r` is for an APIC in the mode and place IA32_APIC_BASE gives: an MSR
// (x2APIC) or a physical MMIO address (xAPIC).
struct ApicLocation {
    bool msr;
    u64 where;  // MSR number, or physical address
};
constexpr ApicLocation apic_location(ApicBase base, ApicReg r) {
    if (base.extd()) return {true, x2apic_msr(r)};
    return {false, base.mmio() + u32(r)};
}
static_assert(apic_location(ApicBase(0xFEE00900), ApicReg::lvt_perf).where == 0xFEE00340);
static_assert(apic_location(ApicBase(0xFEE00D00), ApicReg::lvt_perf).where == 0x834);

// ---------------------------------------------------------------------------
// Register values
// ---------------------------------------------------------------------------

// Local APIC Version Register, SDM §11.4.8 (Figure 11-7).
class ApicVersion : public RegValue<ApicVersion> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FIELD(ApicVersion, version, 7, 0)    // 1XH: an integrated APIC
    PMULAB_REG_FIELD(ApicVersion, max_lvt, 23, 16)  // the number of LVT entries minus 1
    PMULAB_REG_FLAG(ApicVersion, eoi_broadcast_suppression, 24)
};
// A part with CMCI: 7 LVT entries (Max LVT Entry 6), version 15H.
static_assert(ApicVersion(0x01060015).max_lvt() == 6 && ApicVersion(0x01060015).version() == 0x15);

// Task-Priority Register, SDM §11.8.3.1 "Task and Processor Priorities" (Figure 11-18): a
// fixed interrupt is delivered only when its priority class (vector bits 7:4) is above
// the TPR's class.
class ApicTpr : public RegValue<ApicTpr> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FIELD(ApicTpr, subclass, 3, 0)
    PMULAB_REG_FIELD(ApicTpr, priority_class, 7, 4)
    // Whether a fixed interrupt with `vector` gets through this TPR.
    constexpr bool admits(u8 vector) const { return priority_class() < u64(vector >> 4); }
};
// TPR = F0H holds back every fixed interrupt; 0 lets through every class above 0.
static_assert(ApicTpr().set_priority_class(15).raw() == 0xF0 && !ApicTpr(0xF0).admits(0xFF));
static_assert(ApicTpr(0).admits(0xF7) && !ApicTpr(0xF0).admits(0xF7));

// Spurious-Interrupt Vector Register, SDM §11.9 "Spurious Interrupt" (Figure 11-23).
class ApicSvr : public RegValue<ApicSvr> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FIELD(ApicSvr, vector, 7, 0)
    PMULAB_REG_FLAG(ApicSvr, software_enable, 8)
    PMULAB_REG_FLAG(ApicSvr, focus_check_disable, 9)
    PMULAB_REG_FLAG(ApicSvr, eoi_broadcast_suppression, 12)
};
// The reset value (§11.4.7.1): vector FFH, the APIC software-disabled.
static_assert(ApicSvr(0xFF).vector() == 0xFF && !ApicSvr(0xFF).software_enable());
static_assert(ApicSvr().set_vector(0xFF).set_software_enable().raw() == 0x1FF);

// Delivery modes of an LVT entry (§11.5.1) and of the ICR (§11.6.1): 3-bit codes.
enum class ApicDelivery : u8 {
    fixed = 0,    // 000b: the vector
    smi = 2,      // 010b (vector 00H)
    nmi = 4,      // 100b (the vector is ignored)
    init = 5,     // 101b
    startup = 6,  // 110b: SIPI (ICR only)
    extint = 7,   // 111b: the 8259's vector (LINT0 only)
};

// The LVT timer's modes (§11.5.4): bits 18:17 of the LVT timer entry.
enum class ApicTimerMode : u8 { one_shot = 0, periodic = 1, tsc_deadline = 2 };

// An LVT entry, SDM §11.5.1 "Local Vector Table" (Figure 11-8). One layout for all seven
// entries; not every field exists in every entry: delivery mode in CMCI, LINT0/1,
// performance counters and thermal; polarity, remote IRR and trigger mode in LINT0/1 only;
// the timer mode in the timer entry only. On a PMI the processor sets the performance
// counter entry's mask bit itself (SDM Vol. 3B §21.5.1 / §20.6.3.5.8 "Generating an
// Interrupt on Overflow"): the handler clears it to take the next one.
class ApicLvt : public RegValue<ApicLvt> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FIELD(ApicLvt, vector, 7, 0)
    PMULAB_REG_FIELD(ApicLvt, delivery_mode, 10, 8)  // ApicDelivery
    PMULAB_REG_FLAG(ApicLvt, send_pending, 12)       // delivery status, read-only
    PMULAB_REG_FLAG(ApicLvt, active_low, 13)         // interrupt input pin polarity (LINT)
    PMULAB_REG_FLAG(ApicLvt, remote_irr, 14)         // read-only (LINT, level)
    PMULAB_REG_FLAG(ApicLvt, level_trigger, 15)      // trigger mode (LINT)
    PMULAB_REG_FLAG(ApicLvt, masked, 16)
    PMULAB_REG_FIELD(ApicLvt, timer_mode, 18, 17)  // ApicTimerMode (timer entry)
    constexpr ApicDelivery delivery() const { return ApicDelivery(delivery_mode()); }
    constexpr ApicLvt& set_delivery(ApicDelivery d) { return set_delivery_mode(u64(d)); }
    constexpr ApicTimerMode timer() const { return ApicTimerMode(timer_mode()); }
    constexpr ApicLvt& set_timer(ApicTimerMode m) { return set_timer_mode(u64(m)); }
};
static_assert(ApicLvt::delivery_mode_field::mask == 0x700 && ApicLvt::masked_field::mask == 0x10000);
static_assert(ApicLvt::timer_mode_field::mask == 0x60000 && ApicLvt::level_trigger_field::mask == 0x8000);
// The reset value of every entry is "masked" (§11.4.7.1): 00010000H.
static_assert(ApicLvt(0x10000).masked() && ApicLvt(0x10000).vector() == 0);
// LINT1 as firmware sets it up for NMIs: NMI delivery, edge, unmasked (400H).
static_assert(ApicLvt().set_delivery(ApicDelivery::nmi).raw() == 0x400);
// Linux's PMI set-up, apic_write(APIC_LVTPC, APIC_DM_NMI): 400H; a fixed PMI vector FEH: FEH.
static_assert(ApicLvt(0x400).delivery() == ApicDelivery::nmi && ApicLvt().set_vector(0xFE).raw() == 0xFE);
// A periodic timer on vector 20H (20020H), and TSC-deadline mode (40000H).
static_assert(ApicLvt().set_vector(0x20).set_timer(ApicTimerMode::periodic).raw() == 0x20020);
static_assert(ApicLvt().set_timer(ApicTimerMode::tsc_deadline).raw() == 0x40000);

// The LVT entries, in the order of their Max LVT Entry requirement: an entry exists when
// the Version register's Max LVT Entry is at least min_max_lvt (Linux lapic_get_maxlvt:
// error from 3, performance counters from 4, thermal from 5, CMCI from 6).
struct ApicLvtEntry {
    ApicReg reg;
    u8 min_max_lvt;
    const char* name;
};
inline constexpr ApicLvtEntry kApicLvtEntries[] = {
    {ApicReg::lvt_timer, 0, "timer"},
    {ApicReg::lvt_lint0, 0, "LINT0"},  // ExtINT from the 8259 on the BSP
    {ApicReg::lvt_lint1, 0, "LINT1"},  // usually NMI
    {ApicReg::lvt_error, 3, "error"},
    {ApicReg::lvt_perf, 4, "performance counters"},  // the PMI
    {ApicReg::lvt_thermal, 5, "thermal sensor"},
    {ApicReg::lvt_cmci, 6, "CMCI"},
};
inline constexpr unsigned kApicLvtCount = sizeof kApicLvtEntries / sizeof kApicLvtEntries[0];
static_assert(kApicLvtCount == 7);

// Divide Configuration Register, SDM §11.5.4 "APIC Timer" (Figure 11-10): bits 3, 1:0
// encode the divisor 2^((code + 1) mod 8).
class ApicTimerDivide : public RegValue<ApicTimerDivide> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FIELD(ApicTimerDivide, low, 1, 0)
    PMULAB_REG_FLAG(ApicTimerDivide, high, 3)
    // The value for a divisor of 2^log2 (0..7: 1..128).
    static constexpr ApicTimerDivide by_pow2(unsigned log2) {
        unsigned code = (log2 + 7) % 8;  // 2^((code + 1) mod 8)
        return ApicTimerDivide().set_low(code & 3).set_high((code & 4) != 0);
    }
};
static_assert(ApicTimerDivide::by_pow2(0).raw() == 0xB);  // 1011b: divide by 1
static_assert(ApicTimerDivide::by_pow2(1).raw() == 0x0);  // 0000b: by 2
static_assert(ApicTimerDivide::by_pow2(4).raw() == 0x3);  // 0011b: by 16
static_assert(ApicTimerDivide::by_pow2(7).raw() == 0xA);  // 1010b: by 128

// Interrupt Command Register, SDM §11.6.1 (Figure 11-12; xAPIC: two halves at 300H/310H,
// destination in bits 63:56) and §11.12.9 "ICR Operation in x2APIC Mode" (MSR 830H,
// destination in bits 63:32).
class ApicIcr : public RegValue<ApicIcr> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FIELD(ApicIcr, vector, 7, 0)
    PMULAB_REG_FIELD(ApicIcr, delivery_mode, 10, 8)  // ApicDelivery
    PMULAB_REG_FLAG(ApicIcr, logical_destination, 11)
    PMULAB_REG_FLAG(ApicIcr, send_pending, 12)  // delivery status (xAPIC, read-only)
    PMULAB_REG_FLAG(ApicIcr, level_assert, 14)
    PMULAB_REG_FLAG(ApicIcr, level_trigger, 15)
    PMULAB_REG_FIELD(ApicIcr, shorthand, 19, 18)  // 00b: the destination field
    PMULAB_REG_FIELD(ApicIcr, xapic_destination, 63, 56)
    PMULAB_REG_FIELD(ApicIcr, x2apic_destination, 63, 32)
    constexpr ApicIcr& set_delivery(ApicDelivery d) { return set_delivery_mode(u64(d)); }
    // A physical-destination IPI of `mode` (and `vector`), level assert, edge.
    static constexpr ApicIcr to(ApicDelivery mode, u8 vector = 0) {
        return ApicIcr().set_vector(vector).set_delivery(mode).set_level_assert();
    }
};
static_assert(ApicIcr::delivery_mode_field::mask == 0x700 && ApicIcr::xapic_destination_field::mask == 0xFFull << 56);
// The SDM's INIT-SIPI-SIPI sequence (§9.4.4.1 "Typical BSP Initialization Sequence",
// Example 9-1): INIT 000C4500H and SIPI 000C46XXH to all excluding self (shorthand 11b);
// the INIT level de-assert of older APICs is INIT with trigger level, level 0: 8500H.
static_assert(ApicIcr::to(ApicDelivery::init).set_shorthand(3).raw() == 0x000C4500);
static_assert(ApicIcr::to(ApicDelivery::init).set_level_trigger().set_level_assert(false).raw() == 0x8500);
static_assert(ApicIcr::to(ApicDelivery::startup, 0x08).set_shorthand(3).raw() == 0x000C4608);
static_assert(ApicIcr::to(ApicDelivery::nmi).set_xapic_destination(1).raw() == 0x0100000000004400ull);
static_assert(ApicIcr::to(ApicDelivery::fixed, 0xF7).set_x2apic_destination(3).raw() == 0x00000003000040F7ull);

}  // namespace pmulab::regs
