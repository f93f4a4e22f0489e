// The PMU families with general-purpose counters (sim_pmu.h): the machinery they share
// (GpPmu, sim_gp.cpp), Intel's architectural PMU (IntelPmu, sim_intel.cpp; its TopDown
// parts in sim_topdown.cpp) and AMD's (AmdPmu, sim_amd.cpp). Not for use outside src/sim/.
#pragma once

#include "sim/sim_internal.h"
#include "sim/sim_pebs.h"
#include "sim/sim_pt.h"
#include "sim/sim_topdown.h"

namespace sim {

// One event a retired batch counts (docs/sim.md "Events"): its encoding, on which cores,
// how it is produced, and its count in a batch (null: counted per cycle by run()/stall()).
struct RetireEvent {
    u16 event, umask;
    u32 where;  // Intel: a bit per IntelEvents; AMD: the lowest CPUID family
    EventSource source;
    u64 (*count)(const Retired& r);
};

// retire(): every event of a family's table on this core (`has`), counted in the batch.
template <class Has, std::size_t N>
void count_retired(SimCpu& cpu, const Retired& r, const RetireEvent (&table)[N], Has has) {
    for (const RetireEvent& e : table)
        if (e.count && has(e)) cpu.event(e.event, e.umask, e.count(r));
}

// retire_source(): how the table produces (event, umask) on this core (`has`).
template <class Has, std::size_t N>
EventSource retired_source(const RetireEvent (&table)[N], u16 event, u16 umask, Has has) {
    for (const RetireEvent& e : table)
        if (e.event == event && e.umask == umask && has(e)) return e.source;
    return EventSource::not_modelled;
}

// General-purpose counters: a control (PERFEVTSELx / PERF_CTLx) and a counter each, a
// global enable and overflow status where the family has them.
class GpPmu : public PmuModel {
public:
    GpPmu(u32 cpu, const PmuLayout& layout);
    void run(u64 cycles, const std::vector<Occurrence>& each) override;
    void event(u16 event_select, u16 umask, u64 n) override;
    void ref_clock(u64 tsc, u64 crystal) override;

protected:
    struct Gp {
        u64 ctl = 0;
        u64 ctr = 0;
        bool prev = false;  // EDGE: the condition in the last evaluated cycle
    };
    // GLOBAL_CTRL/GLOBAL_STATUS exist (Intel v2+, AMD PerfMonV2).
    virtual bool has_global() const = 0;
    virtual bool gp_matches(u32 i, u16 event_select, u16 umask) const = 0;
    virtual bool gp_enabled(u32 i) const;
    // The family's other counters (Intel's fixed counters, AMD's IRPerfCount).
    virtual void run_others(u64 cycles, const std::vector<Occurrence>& each) = 0;
    virtual void event_others(u16 event_select, u16 umask, u64 n) = 0;
    // Counter i overflowed: true when PEBS took it (Intel, sim_pebs.h), else the usual INT.
    virtual bool pebs_overflow(u32 i) { return (void)i, false; }

    // Frozen on a PMI (GLOBAL_STATUS.CTR_FRZ: Intel v4, AMD LbrAndPmcFreeze).
    bool frozen() const { return (global_status_ & kStatusCtrFrz) != 0; }
    bool gp_pmi_armed() const;
    void freeze_by_status(bool perfmon, bool lbrs);
    bool lbrs_frozen() const override { return (global_status_ & kStatusLbrFrz) != 0; }
    u64 gp_increment(Gp& g, u64 per_cycle, u64 cycles);
    void add_gp(u32 i, u64 inc);
    // A counter write while its control's enable bit is set (`what`: the control's name).
    void check_counter_write(u32 msr, u32 i, const char* what);
    u8 write_masked(u64* reg, u64 v, u64 writable);

    Gp gp_[32];
    u64 global_ctrl_ = 0;
    u64 global_status_ = 0;
};

// Intel architectural performance monitoring, versions 1-6 (SDM Vol. 3B ch. 20).
class IntelPmu final : public GpPmu {
public:
    IntelPmu(u32 cpu, const PmuLayout& layout, const CpuidSnapshot& cpuid);
    bool exists(u32 msr) const override {
        return classify(msr).reg != Reg::none || pebs_.claims(msr) || pt_.claims(msr);
    }
    u8 rdmsr(u32 msr, u64* out) const override;
    u8 wrmsr(u32 msr, u64 value) override;
    bool poke(u32 msr, u64 value) override;
    u8 rdpmc(u32 ecx, u64* out) const override;
    void state(PmuState* out) const override;
    bool pebs_available() const override { return pebs_.available(); }
    void topdown_events(const TopdownBudget& b, u64 cycles, std::vector<Occurrence>* out) override;
    void retire(SimCpu& cpu, const Retired& r) override;
    EventSource retire_source(u16 event_select, u16 umask) const override;
    u64 perf_metrics_value() const override;
    u64 topdown_count(unsigned i) const override { return i < 8 ? td_[i] : 0; }
    bool pmi_armed() const override;
    void freeze_on_pmi(bool perfmon, bool lbrs) override;

private:
    enum class Reg : u8 {
        none,
        pmc,
        a_pmc,
        evtsel,
        fixed_ctr,
        fixed_ctrl,
        global_status,
        global_ctrl,
        ovf_ctrl,
        status_set,
        inuse,
        perf_metrics,
    };
    struct Slot {
        Reg reg = Reg::none;
        u32 index = 0;
    };
    Slot classify(u32 msr) const;
    bool has_global() const override { return layout_.version >= 2; }
    bool gp_matches(u32 i, u16 event_select, u16 umask) const override;
    void run_others(u64 cycles, const std::vector<Occurrence>& each) override;
    void event_others(u16 event_select, u16 umask, u64 n) override;
    u8 write_counter(Slot s, u32 msr, u64 v);
    u64 evtsel_writable_mask() const;
    u64 fixed_ctrl_writable_mask() const;
    u64 global_ctrl_mask() const;
    u64 ovf_ctrl_mask() const;
    u64 status_set_mask() const;
    u64 inuse() const;
    bool fixed_enabled(u32 i) const;
    void add_fixed(u32 i, u64 inc);
    bool metrics_counting() const;
    u8 write_perf_metrics(u64 v);
    bool pebs_overflow(u32 i) override;
    bool pebs_fixed_overflow(u32 i);  // fixed counter i with PEBS (sim_pebs.h)
    void pebs_record(u32 b, u16 event, u16 umask, u64* ctr, u32 width);
    // MEM_TRANS_RETIRED.LOAD_LATENCY (CDH/01H): the loads above the threshold (sim_pebs.h).
    void count_load_latency(SimCpu& cpu, const Retired& r);

    SimAtom atom_ = SimAtom::none;  // E-core TopDown events (sim_topdown.h)
    IntelEvents events_ = IntelEvents::architectural;
    u64 slots_per_cycle_ = 4;  // TOPDOWN.SLOTS: CPUID.23H.0:ECX[7:0], else 4
    u64 fixed_ctr_[16] = {};
    u64 fixed_ctrl_ = 0;
    u64 td_[8] = {};              // PERF_METRICS categories (sim_topdown.h)
    PebsUnit pebs_;               // sim_pebs.h
    PebsUnit::Context pebs_ctx_;  // the instruction retire() is counting (PEBS records)
    PtUnit pt_;                   // Intel PT, for PEBS output to PT (sim_pt.h)
};

// AMD performance counters (APM Vol. 2 §13.2): legacy, PerfCtrExtCore, PerfMonV2, with
// HWCR, IRPerfCount and DE_CFG.
class AmdPmu final : public GpPmu {
public:
    AmdPmu(u32 cpu, const PmuLayout& layout, const CpuidSnapshot& cpuid);
    // Counting: Zen 4/5 pipeline utilisation for TopDown budgets, the Zen events of a
    // retired batch (docs/sim.md "Events").
    void topdown_events(const TopdownBudget& b, u64 cycles, std::vector<Occurrence>* out) override;
    void retire(SimCpu& cpu, const Retired& r) override;
    EventSource retire_source(u16 event_select, u16 umask) const override;
    u8 rdpmc(u32 ecx, u64* out) const override;
    bool pmi_armed() const override { return gp_pmi_armed(); }
    // LbrAndPmcFreeze: the status bits, as Intel v4; without it nothing freezes.
    void freeze_on_pmi(bool perfmon, bool lbrs) override {
        if (layout_.amd_pmc_freeze) freeze_by_status(perfmon, lbrs);
    }
    // The MSRs.
    bool exists(u32 msr) const override { return classify(msr).reg != Reg::none; }
    u8 rdmsr(u32 msr, u64* out) const override;
    u8 wrmsr(u32 msr, u64 value) override;
    bool poke(u32 msr, u64 value) override;
    void state(PmuState* out) const override;

private:
    enum class Reg : u8 { none, ctl, ctr, gstatus, gctl, gclr, gset, hwcr, de_cfg, irperf };
    struct Slot {
        Reg reg = Reg::none;
        u32 index = 0;
    };
    Slot classify(u32 msr) const;
    bool has_global() const override { return layout_.amd_v2; }
    bool gp_enabled(u32 i) const override;
    bool gp_matches(u32 i, u16 event_select, u16 umask) const override;
    void run_others(u64 cycles, const std::vector<Occurrence>& each) override;
    void event_others(u16 event_select, u16 umask, u64 n) override;
    void count_irperf(u64 n);

    u32 family_ = 0;  // CPUID family (base + extended): which Zen events exist
    u64 hwcr_ = 0, irperf_ = 0;
    // Family 1Ah (Zen 5): pipeline restarts are PMCx09F unit mask 01h (bp_redirects.resync),
    // not Zen 4's PMCx096 (Linux amdzen5/branch-prediction.json; amdzen4/other.json).
    bool family_1ah_ = false;
    // DE_CFG: firmware may leave bit 1 (LfenceSerializing) clear; Linux sets it at boot.
    u64 de_cfg_ = 0;
};

}  // namespace sim
