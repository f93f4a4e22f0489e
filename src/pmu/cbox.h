// The C-Box lookup counters of Intel's client uncore (x86/uncore_regs.h): pmulab's first
// uncore PMU, used to find the L3 slice of an address (`run --cbox-lookups`,
// docs/cache.md "L3 slices and eviction sets"). One counter per C-Box (PERFCTR0) counts
// UNC_CBO_CACHE_LOOKUP.ANY while the run goes; every register it writes is saved first
// and put back exactly (an MsrLedger, as PmuBackend does: enables cleared, counters,
// selects, the global control last). Allocation-free after detect(): it runs on the
// measuring CPU.
#pragma once

#include "pmu/msr_ledger.h"
#include "x86/uncore_regs.h"

namespace pmulab {

// Where the client C-Box lookup counters exist: the model's global control MSR, or 0 and
// the reason (server parts count lookups in CHAs at other addresses, AMD in its L3 PMU,
// a hypervisor's guest and QEMU do not expose the uncore).
struct CboxSupport {
    u32 global_msr = 0;
    const char* why_not = "";
};
CboxSupport cbox_support(const CpuIdentity& id);

class CboxPmu {
public:
    // The C-Boxes of the calling CPU's package: cbox_support, then MSR_UNC_CBO_CONFIG.
    // Errc::unsupported with the reason (and a pointer at eviction sets) where there are none.
    Status detect(Hw& hw, const CpuIdentity& id);
    u32 boxes() const { return boxes_; }
    u32 global_msr() const { return global_; }
    // Saves the global control and each box's PERFEVTSEL0/PERFCTR0, then counts every
    // lookup from 0 in each box.
    Status begin(Hw& hw);
    // The counters now (out[boxes()]).
    Status read(Hw& hw, u64* out) const;
    // Puts every register back as begin() found it; idempotent.
    Status end();

private:
    u32 boxes_ = 0, global_ = 0;
    Hw* hw_ = nullptr;
    FixedMsrLedger<1 + 2 * msr::kMaxCboxes> ledger_;
};

}  // namespace pmulab
