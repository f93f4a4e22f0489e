// The NetBurst (Pentium 4 / NetBurst Xeon) PMU backend, a peer of IntelArchPmu behind
// pmu.h's PmuBackend; session.h binds it. Model and tables: x86/netburst_regs.h.
//
// Allocation: each event needs a counter AND an ESCR that can select it and is wired to
// that counter; no two events of a group share either. Groups are filled in input order
// (TakenAlone events alone), each checked by exhaustive placement (netburst.h).
//
// Programming sequence (SDM Vol. 3B §20.15): program: for each counter of the group the
// CCCR's ENABLE is cleared if set, the preset written to the counter (40 bits), the ESCR
// written (event select, event mask, OS/USR: T0 bits, or T1 bits on the second logical
// processor of a Hyper-Threading core), then the CCCR (ESCR select, active thread 11b,
// ENABLE clear). Counters of earlier groups are released (CCCR = 0). start: CCCR.ENABLE
// set per counter; stop: cleared; both read the CCCR first and keep its OVF flag (the
// constant control_writes for generated code do not, and clear it). overflow: CCCR.OVF
// (bit 31). save() reads every ESCR of the model, the CCCRs and counters it may touch;
// restore() disables the touched CCCRs first, then puts back counters, ESCRs and CCCRs
// exactly.
// Include guard after the pmu.h include (not #pragma once): pmu.h includes this header
// after declaring PmuBackend, whichever of the two a file includes first.
#include "x86/netburst_regs.h"
#include "pmu/pmu.h"

#ifndef PMULAB_PMU_NETBURST_H
#define PMULAB_PMU_NETBURST_H

#include "pmu/msr_ledger.h"

namespace pmulab {

void netburst_fill_info(PmuInfo* p, bool perfmon_available);
Status netburst_allocate(const PmuInfo& info, const Event* events, usize n, Allocation* out);
void put_netburst_summary(StrBuf& out, const PmuInfo& p);

class NetBurstPmu final : public PmuBackend {
public:
    NetBurstPmu() = default;
    void init(Hw* hw, const PmuInfo& info);

    const PmuInfo& info() const override { return info_; }
    Status allocate(const Event* events, usize n, Allocation* out) const override;
    CounterAccess access(CounterKind kind, u8 index) const override;
    void control_writes(const Event* events, const CounterGroup& g, PmuWriteList* start,
                        PmuWriteList* stop) const override;
    Status save(const PmuTouch& t) override;
    Status program(const Event* events, const CounterGroup& g, const u64* presets = nullptr) override;
    Status start() override;
    Status stop() override;
    Result<u64> read(CounterKind kind, u8 index) override;
    Result<OverflowState> overflow() override;
    Status clear_overflow() override;
    Status restore(RestoreReport* report = nullptr) override;
    bool saved() const override { return ledger_.armed(); }

    // The ESCR value of an event for logical processor `thread` (0/1).
    static u64 escr_value(const Event& e, unsigned thread);

private:
    static constexpr unsigned kN = netburst::kCounters;
    // CCCR + counter per counter, every ESCR of the model.
    static constexpr unsigned kLedger = 2 * kN + netburst::kEscrCount;
    Status write(u32 msr, u64 value) { return ledger_.write(msr, value); }
    // WRMSR of CCCR i with `value`, keeping the OVF flag the CCCR holds now.
    Status write_keep_ovf(unsigned i, u64 value);

    Hw* hw_ = nullptr;
    PmuInfo info_;
    unsigned thread_ = 0;
    bool programmed_ = false;
    bool started_here_ = false;  // start() ran since program(): CCCR.OVF was kept (overflow())
    // Every register save() read, what pmulab wrote since, and the restore order.
    FixedMsrLedger<kLedger> ledger_;
    u32 touched_ = 0, group_ = 0;
    u64 group_cccr_[kN] = {};
};

}  // namespace pmulab

#endif  // PMULAB_PMU_NETBURST_H
