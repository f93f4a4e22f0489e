// The AMD core PMU backend (family 10h and later: K10, Bulldozer, Zen 1-5), a peer of
// IntelArchPmu behind pmu.h's PmuBackend; session.h binds it.
//
// Counters (APM Vol. 2 §13.2): the legacy PerfEvtSel0-3/PerfCtr0-3 (C001_0000H/
// C001_0004H), or with PerfCtrExtCore (CPUID Fn8000_0001_ECX[23]) 6 counters at
// PERF_CTL/PERF_CTR C001_0200H + 2i / C001_0201H + 2i (the legacy addresses alias 0-3),
// or with PerfMonV2 (Fn8000_0022_EAX[0]) Fn8000_0022_EBX[3:0] counters at the same
// addresses plus PerfCntrGlobalCtl/Status/StatusClr/StatusSet (C000_0300H-0303H). All
// 48 bits wide. RDPMC ECX = i reads PERF_CTR i.
//
// "Fixed-like" counters, CounterKind::fixed indices (x86/amd_regs.h FixedLike): 0 IRPerfCount
// (C000_00E9H; enabled by HWCR[30] IRPerfEn; counts every privilege level), 1 APERF,
// 2 MPERF (read through the read-only aliases C000_00E8H/E7H). They are free-running:
// program() enables IRPerfCount, start()/stop() do not gate them; measure by difference.
//
// Programming sequence
//   program:  PerfMonV2: GLOBAL_CTL = 0. Each counter of the group: EN cleared in its
//             PERF_CTL if it was set (a counter is written only while disabled), the
//             preset written to PERF_CTR (48 bits), then PERF_CTL = the event (with EN on
//             PerfMonV2, where GLOBAL_CTL gates counting; without EN otherwise). Counters
//             of earlier groups are released (PERF_CTL = 0). IRPerfCount: HWCR.IRPerfEn
//             set. PerfMonV2: the group's GLOBAL_STATUS bits cleared via STATUS_CLR.
//   start:    PerfMonV2: GLOBAL_CTL = the group's counters; else EN set counter by counter.
//   stop:     GLOBAL_CTL = 0; else EN cleared.
//   overflow: PerfMonV2: GLOBAL_STATUS; else a counter overflowed when it wrapped below
//             its preset (the 48-bit counter's carry out of bit 47 is not latched).
//   restore:  GLOBAL_CTL = 0 and EN cleared first; counters; PERF_CTLs; HWCR; GLOBAL_STATUS
//             bits back as they were (STATUS_CLR/STATUS_SET: exact); GLOBAL_CTL last.
// Include guard after the pmu.h include (not #pragma once): pmu.h includes this header
// after declaring PmuBackend, whichever of the two a file includes first.
#include "pmu/pmu.h"

#ifndef PMULAB_PMU_AMD_H
#define PMULAB_PMU_AMD_H
#include "pmu/msr_ledger.h"
#include "x86/amd_regs.h"

namespace pmulab {

// Fills the counter fields of an AMD PmuInfo from its caps (kind amd, or none with the
// reason in absent).
void amd_fill_info(PmuInfo* p);
// Allocation on an AMD PMU: events of the AMD dialects only; IRPerfCount takes
// 'instructions' counted at every privilege level, else a PERF_CTR with C0.00.
Status amd_allocate(const PmuInfo& info, const Event* events, usize n, Allocation* out);
void put_amd_summary(StrBuf& out, const PmuInfo& p);

class AmdPmu final : public PmuBackend {
public:
    AmdPmu() = default;
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

    // The PERF_CTL value of an event (EN as given, INT clear).
    static u64 ctl_value(const Event& e, bool en);

private:
    static constexpr unsigned kMax = regs::amd::kMaxCounters;
    // GLOBAL_CTL, GLOBAL_STATUS, PERF_CTL + PERF_CTR per counter, HWCR.
    static constexpr unsigned kLedger = 2 + 2 * kMax + 1;
    Status write(u32 msr, u64 value) { return ledger_.write(msr, value); }
    u32 ctl(unsigned i) const { return regs::amd::ctl_msr(i, ext_); }
    u32 ctr(unsigned i) const { return regs::amd::ctr_msr(i, ext_); }

    Hw* hw_ = nullptr;
    PmuInfo info_;
    bool ext_ = false;  // PERF_CTL/CTR at C001_0200H + 2i
    bool v2_ = false;   // PerfMonV2 global registers
    bool programmed_ = false;
    // Every register save() read, what pmulab wrote since, and the restore order.
    FixedMsrLedger<kLedger> ledger_;
    u32 touched_gp_ = 0, touched_fixed_ = 0;
    u32 group_gp_ = 0;
    u64 group_ctl_[kMax] = {};
    u64 preset_[kMax] = {};
};

}  // namespace pmulab

#endif  // PMULAB_PMU_AMD_H
