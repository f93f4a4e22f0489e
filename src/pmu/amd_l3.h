// AMD's L3 performance counters (PerfCtrExtLLC; x86/amd_l3_regs.h) as the slice-lookup unit
// on AMD: `run --cbox-lookups` on AMD (docs/cache.md "L3 slices and eviction sets", "AMD's L3
// PMU"). The L3 is shared per complex (a CCX on family 17h, a CCD from 19h on) and its PMU is
// the complex's: counter i counts L3PMCx04 "L3 Lookup State" (unit mask FFh, every lookup) of
// one slice, every core and thread of the complex. There are 6 counters: where the complex has
// more slices (8 from family 19h on) the slices are counted in rounds (select_round: round k
// counts slices k * per_round .. (k + 1) * per_round - 1). Every register it writes is saved
// first and put back exactly (an MsrLedger: the enables cleared, counters, configurations).
// Allocation-free after detect(): it runs on the measuring CPU.
#pragma once

#include "pmu/msr_ledger.h"
#include "pmu/slice_lookup.h"
#include "x86/amd_l3_regs.h"
#include "x86/cpuid.h"

namespace pmulab {

// Whether the L3 PMU is usable from the CPU's identity and CPUID Fn8000_0001_ECX[28]
// (PerfCtrExtLLC): the family's slice layout, or 0 slices and the reason.
struct AmdL3Support {
    u32 slices = 0;    // per L3 complex (regs::kAmdL3SlicesF17 / F19)
    bool f17 = false;  // family 17h's SliceMask/ThreadMask layout, else 19h/1Ah's
    const char* why_not = "";
};
AmdL3Support amd_l3_support(const CpuIdentity& id, bool perf_ctr_ext_llc);

class AmdL3Pmu final : public SliceLookupPmu {
public:
    // The BSP's word: amd_l3_support, then ChL3PmcCfg0 read (a fault: not usable), and how
    // the L3 complex of an APIC ID is found (CPUID 8000_001DH's L3 sharing, or the family's).
    // Errc::unsupported with the reason (and a pointer at eviction sets) where it is not.
    Status detect(Hw& hw, const CpuIdentity& id);
    u32 boxes() const override { return slices_; }  // slices of one L3 complex
    u32 rounds() const override { return rounds_; }
    u32 round() const { return round_; }
    bool counted(u32 slice) const override { return slice / per_round_ == round_; }
    unsigned counter_bits() const override { return regs::kAmdL3CounterBits; }
    // The L3 complex of the CPU begin() ran on (its APIC ID >> complex_shift()).
    u32 complex() const { return complex_; }
    u32 complex_shift() const { return shift_; }
    const char* complex_from() const { return complex_from_; }
    const char* slices_from() const;
    bool f17() const { return f17_; }
    // Saves every configuration and counter, then counts round 0's slices from 0.
    Status begin(Hw& hw) override;
    // Counts round k's slices from 0 (nothing written when k is the current round).
    Status select_round(Hw& hw, u32 k) override;
    // The counters of the current round's slices now (out[slice]; the others untouched).
    Status read(Hw& hw, u64* out) const override;
    // Puts every register back as begin() found it; idempotent.
    Status end() override;

    // The configuration that counts every lookup in `slice` by every core and thread.
    u64 config_for(u32 slice) const;

private:
    Status program(u32 round);
    u32 slices_ = 0, rounds_ = 1, per_round_ = 1, round_ = 0, complex_ = 0, shift_ = 0, max_ext_ = 0;
    bool f17_ = false;
    const char* complex_from_ = "";
    FixedMsrLedger<2 * msr::kAmdL3Counters> ledger_;
};

}  // namespace pmulab
