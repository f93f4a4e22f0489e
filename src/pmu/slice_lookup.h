// What `run --cbox-lookups` (commands/run_cbox.cpp) needs of a slice-lookup unit: Intel's
// C-Boxes and CHAs (pmu/cbox.h) and AMD's L3 PMU (pmu/amd_l3.h) each count the L3 lookups
// of every slice, the latter in rounds where its slices outnumber its counters.
#pragma once

#include "x86/hw.h"

namespace pmulab {

class SliceLookupPmu {
public:
    // The slices (boxes) of the unit.
    virtual u32 boxes() const = 0;
    // Saves every register it writes, then counts every lookup from 0 (round 0).
    virtual Status begin(Hw& hw) = 0;
    // The counters now (out[boxes()]; only the current round's are written).
    virtual Status read(Hw& hw, u64* out) const = 0;
    // Puts every register back as begin() found it; idempotent.
    virtual Status end() = 0;
    virtual unsigned counter_bits() const = 0;
    // The rounds the slices are counted in, the current one's, and switching to round k.
    virtual u32 rounds() const { return 1; }
    virtual bool counted(u32 slice) const { return slice < boxes(); }
    virtual Status select_round(Hw& hw, u32 k) { return ok_status(); }

protected:
    ~SliceLookupPmu() = default;
};

}  // namespace pmulab
