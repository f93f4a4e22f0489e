// Intel architectural performance monitoring (CPUID.0AH versions 1-6): the
// PmuBackend for Intel cores (SDM Vol. 3B §20.2; the programming sequence is at the
// top of pmu.h).
#pragma once

#include "pmu/msr_ledger.h"
#include "pmu/pmu.h"

namespace pmulab {

// Intel architectural performance monitoring (v1..v6).
class IntelArchPmu final : public PmuBackend {
public:
    IntelArchPmu() = default;
    // Binds the backend to hw (the current CPU) and a detected PMU of kind intel_arch.
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

    // Whether `preset` can be written to GP counter i on this CPU: below 2^width with
    // full-width writes; otherwise only values a 32-bit sign-extended legacy write
    // produces (below 2^31, or within 2^31 of 2^width). The error says which.
    Status check_gp_preset(u8 index, u64 preset) const;

private:
    static constexpr unsigned kMax = 16;  // regs::kMaxGpCounters / kMaxFixedCounters
    // GLOBAL_CTRL, GLOBAL_STATUS, FIXED_CTR_CTRL, PERFEVTSELx + PMCx, FIXED_CTRx,
    // IA32_PERF_METRICS (with SLOTS on FIXED_CTR3), aux MSRs.
    static constexpr unsigned kLedger = 3 + 2 * kMax + kMax + 1 + PmuTouch::kMaxAux;
    Status write(u32 msr, u64 value) { return ledger_.write(msr, value); }
    u64 evtsel_value(const Event& e, bool en) const;
    u64 fixed_ctrl_value(const Event* events, const CounterGroup& g) const;
    u32 status_reset_msr() const;
    u64 group_status_bits() const;

    Hw* hw_ = nullptr;
    PmuInfo info_;
    // Every register save() read, what pmulab wrote since, and the restore order.
    FixedMsrLedger<kLedger> ledger_;
    u32 touched_gp_ = 0, touched_fixed_ = 0;
    // The programmed group.
    bool programmed_ = false;
    u32 group_gp_ = 0, group_fixed_ = 0;
    u64 group_evtsel_[kMax] = {};  // PERFEVTSELx values without EN
    u64 group_global_ = 0;         // GLOBAL_CTRL enables of the group
};

}  // namespace pmulab
