// PmuBackend's guards around the family hooks, and PmuSession (see session.h).
#include "pmu/session.h"

namespace pmulab {

// ---- backend ----

void PmuBackend::bind(Hw* hw, const PmuInfo& info) {
    (void)restore();
    family_ = &pmu_backend_family(info);
    core_ = PmuCore();
    core_.hw = hw;
    core_.info = info;
    core_.ledger.bind(hw);
    if (family_->bind) family_->bind(core_);
}

Status PmuBackend::on_cpu() const {
    if (core_.info.kind == PmuKind::none) return Error::make(Errc::unsupported, "%s", core_.info.absent);
    if (!core_.hw)
        return Error::make(Errc::internal, "PMU planning tried to access the hardware (a session bound by plan())");
    return ok_status();
}

Status PmuBackend::allocate(const Event* events, usize n, Allocation* out) const {
    return pmu_allocate(core_.info, events, n, out);
}

CounterAccess PmuBackend::access(CounterKind kind, u8 index) const { return family_->access(core_.info, kind, index); }

void PmuBackend::control_writes(const Event* events, const CounterGroup& g, PmuWriteList* start,
                                PmuWriteList* stop) const {
    start->count = stop->count = 0;
    family_->control_writes(core_.info, events, g, start, stop);
}

Status PmuBackend::save(const PmuTouch& t) {
    PMULAB_TRY(on_cpu());
    if (core_.ledger.armed()) return Error::make(Errc::internal, "PMU state saved twice without a restore in between");
    core_.touched_gp = t.gp;
    core_.touched_fixed = t.fixed;
    core_.programmed = false;
    core_.ledger.begin();
    PMULAB_TRY(family_->save(core_, t));
    core_.ledger.arm();
    return ok_status();
}

Status PmuBackend::program(const Event* events, const CounterGroup& g, const u64* presets) {
    PMULAB_TRY(on_cpu());
    if (!core_.ledger.armed()) return Error::make(Errc::internal, "PMU programmed before its state was saved");
    if ((g.gp_mask & ~core_.touched_gp) || (g.fixed_mask & ~core_.touched_fixed))
        return Error::make(Errc::internal, "counter group uses counters whose state was not saved");
    PMULAB_TRY(family_->check_presets(core_, events, g, presets));
    core_.programmed = false;
    core_.group_gp = g.gp_mask;
    core_.group_fixed = g.fixed_mask;
    Status st = family_->program(core_, events, g, presets);
    if (!st.ok()) {
        Error e = st.error();
        (void)restore();  // the programming error is the one to report
        return e;
    }
    core_.programmed = true;
    return ok_status();
}

Status PmuBackend::start() {
    PMULAB_TRY(on_cpu());
    if (!core_.programmed) return Error::make(Errc::internal, "PMU started before a group was programmed");
    return family_->start(core_);
}

Status PmuBackend::stop() {
    PMULAB_TRY(on_cpu());
    if (!core_.programmed) return Error::make(Errc::internal, "PMU stopped before a group was programmed");
    return family_->stop(core_);
}

Result<u64> PmuBackend::read(CounterKind kind, u8 index) {
    PMULAB_TRY(on_cpu());
    bool gp = kind == CounterKind::gp;
    if (kind == CounterKind::none || !has_bit(gp ? core_.info.gp_mask : core_.info.fixed_mask, index))
        return absent_counter_error(kind, index);
    return perform_read(*core_.hw, access(kind, index));
}

Result<OverflowState> PmuBackend::overflow() {
    PMULAB_TRY(on_cpu());
    return family_->overflow(core_);
}

Status PmuBackend::clear_overflow() {
    PMULAB_TRY(on_cpu());
    return family_->clear_overflow(core_);
}

Status PmuBackend::restore(RestoreReport* report) {
    core_.programmed = false;
    return core_.ledger.restore(report);
}

// ---- session ----

void PmuSession::open(Hw& hw) {
    PmuInfo info;
    pmu_detect(hw, &info);
    open(hw, info);
}

void PmuSession::open(Hw& hw, const PmuInfo& info) { bind(&hw, info); }

void PmuSession::plan(const PmuInfo& info) { bind(nullptr, info); }

}  // namespace pmulab
