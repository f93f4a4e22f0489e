// The L3 lookup counters of Intel's uncore, one box per L3 slice: the C-Boxes of the client
// parts (Sandy Bridge .. Coffee Lake) and the CHAs of the server parts (Skylake-SP/Cascade
// Lake, Ice Lake-SP/-D, Sapphire/Emerald Rapids) (x86/uncore_regs.h): pmulab's first
// uncore PMU, used to find the L3 slice of an address (`run --cbox-lookups`, docs/cache.md
// "L3 slices and eviction sets"). One counter per box counts every LLC lookup (client:
// UNC_CBO_CACHE_LOOKUP.ANY; server: UNC_CHA_LLC_LOOKUP with every state and request) while
// the run goes; every register it writes is saved first and put back exactly (an
// MsrLedger, as PmuBackend does: enables cleared, counters, selects, the controls and the
// global control last). Allocation-free after detect(): it runs on the measuring CPU.
#pragma once

#include "pmu/msr_ledger.h"
#include "pmu/slice_lookup.h"
#include "x86/uncore_regs.h"

namespace pmulab {

// Where the client C-Box lookup counters exist: the model's global control MSR, or 0 and
// the reason (server parts count lookups in CHAs: cha_generation; AMD in its L3 PMU, a
// hypervisor's guest and QEMU do not expose the uncore).
struct CboxSupport {
    u32 global_msr = 0;
    const char* why_not = "";
};
CboxSupport cbox_support(const CpuIdentity& id);

// The server CHA generation of an Intel part (x86/uncore_regs.h cha_generation).
inline ChaGen cha_generation(const CpuIdentity& id) {
    return id.vendor == Vendor::intel ? cha_generation(id.family, id.model) : ChaGen::none;
}

class CboxPmu final : public SliceLookupPmu {
public:
    // The boxes of the calling CPU's package: client C-Boxes (cbox_support, then
    // MSR_UNC_CBO_CONFIG) or server CHAs (cha_generation, then the CHA count: CAPID6/7 in
    // PCI configuration space, or SPR_MSR_UNC_CBO_CONFIG). Errc::unsupported with the
    // reason (and a pointer at eviction sets) where there are none.
    Status detect(Hw& hw, const CpuIdentity& id);
    u32 boxes() const override { return boxes_; }
    u32 global_msr() const { return global_; }
    // "cbox" (client) or "cha" (server): the record's "unit".
    const char* unit() const { return gen_ == ChaGen::none ? "cbox" : "cha"; }
    const char* box_name() const { return gen_ == ChaGen::none ? "C-Box" : "CHA"; }
    // The event as the record names it.
    const char* event() const { return gen_ == ChaGen::none ? "UNC_CBO_CACHE_LOOKUP.ANY" : "UNC_CHA_LLC_LOOKUP.ALL"; }
    unsigned counter_bits() const override {
        return gen_ == ChaGen::none ? regs::kCboCounterBits : regs::kChaCounterBits;
    }
    // Saves every register it writes (global control or box controls, filters, each box's
    // first select and counter), then counts every lookup from 0 in each box.
    Status begin(Hw& hw) override;
    // The counters now (out[boxes()]).
    Status read(Hw& hw, u64* out) const override;
    // Puts every register back as begin() found it; idempotent.
    Status end() override;

private:
    Status detect_cha(Hw& hw, const CpuIdentity& id, ChaGen g);
    Status begin_cha(Hw& hw);
    u32 ctr(u32 box) const;
    u32 boxes_ = 0, global_ = 0;
    ChaGen gen_ = ChaGen::none;
    Hw* hw_ = nullptr;
    FixedMsrLedger<4 * msr::kMaxChas> ledger_;
};

}  // namespace pmulab
