// One description per PMU family, as Linux's `struct x86_pmu` (arch/x86/events/
// perf_event.h): what pmulab knows of a family of performance-monitoring units is one
// PmuFamily, a table of constants and functions, defined at the bottom of the family's
// own file (intel_pmu.cpp, amd_pmu.cpp, netburst_pmu.cpp; the "no PMU" entry in pmu.cpp).
// The families are listed once, in decode order, in pmu.cpp (kPmuFamilies); adding a
// PMU family is one new file with one PmuFamily and one line there (docs/vendors.md).
//
// Everything family-neutral is written once elsewhere: pmu_decode (pmu.cpp) asks the
// table which family describes a CPU; PmuBackend (session.h) owns the guards around the
// hooks (a PMU to program, hardware behind it, state saved before programming, a group
// programmed before start), the MSR ledger and restore.
#pragma once

#include "pmu/amd_pmu.h"
#include "pmu/intel_pmu.h"
#include "pmu/msr_ledger.h"
#include "pmu/netburst_pmu.h"

namespace pmulab {

// What the on-CPU hooks of a family work on: the state every family has (written by
// PmuBackend, read by the hooks) and each family's own (written by its hooks only).
struct PmuCore {
    static constexpr unsigned kLedger = max_of(max_of(IntelPmuState::kLedger, AmdPmuState::kLedger),
                                               NetBurstPmuState::kLedger);
    Hw* hw = nullptr;  // null: bound for planning (PmuSession::plan)
    PmuInfo info;
    // Every register save() read, what pmulab wrote since, and the restore order.
    FixedMsrLedger<kLedger> ledger;
    u32 touched_gp = 0, touched_fixed = 0;  // the counters save() took (PmuTouch)
    bool programmed = false;                // program() completed; start/stop allowed
    u32 group_gp = 0, group_fixed = 0;      // the counters of the programmed group
    IntelPmuState intel;
    AmdPmuState amd;
    NetBurstPmuState netburst;

    Status write(u32 msr, u64 value) { return ledger.write(msr, value); }
};

// One PMU family. Hooks marked "may be null" are skipped when null; the others exist in
// every family with a PMU (the "no PMU" entry has only the pure ones: PmuBackend refuses
// every operation on the CPU before a hook runs).
struct PmuFamily {
    PmuKind kind;
    const char* name;  // pmu_kind_name
    // RDPMC reads the fixed counters (ECX[30] set, SDM Vol. 2B RDPMC): the RDPMC probe
    // may use one when there is no general-purpose counter.
    bool rdpmc_fixed;

    // ---- decode (pure: no hardware access, any CPU) ----
    // Whether this family describes a CPU of `vendor` with `caps` (decoded CPUID). The
    // first family of kPmuFamilies that claims a CPU decodes it; a CPU claimed by no
    // family has no PMU. May be null (the "no PMU" entry).
    bool (*claims)(Vendor vendor, const PmuCaps& caps);
    // Fills the counter fields of *p (kind, masks, widths, global controls), or leaves
    // kind none with the reason in p->absent. May be null.
    void (*decode)(const CpuProbe& probe, const CpuDecoded& d, PmuInfo* p);
    // For a CPU no family claimed: writes into p->absent why this family's vendor has no
    // counters and returns true, or returns false (not its vendor). May be null.
    bool (*explain_absent)(const CpuDecoded& d, PmuInfo* p);

    // ---- planning (pure) ----
    // Counter allocation (alloc.h rules plus the family's own checks).
    Status (*allocate)(const PmuInfo& info, const Event* events, usize n, Allocation* out);
    // The one-line summary of a PMU with counters (put_pmu_summary).
    void (*summary)(StrBuf& out, const PmuInfo& info);
    // How generated code reads counter (kind, index): the probed method, the selector or
    // MSR, the counter width.
    CounterAccess (*access)(const PmuInfo& info, CounterKind kind, u8 index);
    // The writes that start and stop counting of group g (the lists arrive empty).
    void (*control_writes)(const PmuInfo& info, const Event* events, const CounterGroup& g, PmuWriteList* start,
                           PmuWriteList* stop);

    // ---- on the CPU (after PmuBackend's guards; see PmuBackend for each) ----
    // The family's state from core.info (and core.hw when not null). May be null.
    void (*bind)(PmuCore& core);
    // Checks t against the PMU, then saves its registers into core.ledger (begun).
    Status (*save)(PmuCore& core, const PmuTouch& t);
    // Every preset (optional, indexed like g.events) checked before the first write.
    Status (*check_presets)(const PmuCore& core, const Event* events, const CounterGroup& g, const u64* presets);
    // Programs group g with counting off; an error is returned with its context and
    // PmuBackend restores everything saved.
    Status (*program)(PmuCore& core, const Event* events, const CounterGroup& g, const u64* presets);
    Status (*start)(PmuCore& core);
    Status (*stop)(PmuCore& core);
    Result<OverflowState> (*overflow)(PmuCore& core);
    Status (*clear_overflow)(PmuCore& core);
};

extern const PmuFamily kIntelArchFamily;  // intel_pmu.cpp
extern const PmuFamily kAmdFamily;        // amd_pmu.cpp
extern const PmuFamily kNetBurstFamily;   // netburst_pmu.cpp
extern const PmuFamily kNoPmuFamily;      // pmu.cpp: kind none, only the TSC

// The family that describes `info`: the first of kPmuFamilies that claims its vendor
// and caps (also when it found no usable counters), else kNoPmuFamily.
const PmuFamily& pmu_family(const PmuInfo& info);
// The family whose counters are programmed: pmu_family(info), or kNoPmuFamily when
// info.kind is none.
const PmuFamily& pmu_backend_family(const PmuInfo& info);

// allocate_counters on info's caps as if the CPU had no architectural counters (version
// 0): only 'tsc' allocates, every other event fails with the reason. The allocation of
// kNoPmuFamily, and of a family that found no usable counters.
Status allocate_without_pmu(const PmuInfo& info, const Event* events, usize n, Allocation* out);

// u32 bit test shared by the families' hooks.
inline bool has_bit(u32 mask, unsigned i) { return i < 32 && ((mask >> i) & 1); }

}  // namespace pmulab
