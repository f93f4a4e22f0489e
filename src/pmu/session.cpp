#include "pmu/session.h"

namespace pmulab {

// ---- session ----

void PmuSession::open(Hw& hw) {
    PmuInfo info;
    pmu_detect(hw, &info);
    open(hw, info);
}

void PmuSession::open(Hw& hw, const PmuInfo& info) { bind(&hw, info); }

void PmuSession::plan(const PmuInfo& info) { bind(nullptr, info); }

void PmuSession::bind(Hw* hw, const PmuInfo& info) {
    (void)close();
    info_ = info;
    backend_ = nullptr;
    planning_ = hw == nullptr;
    if (info_.kind == PmuKind::intel_arch) {
        intel_.init(hw, info_);
        backend_ = &intel_;
    } else if (info_.kind == PmuKind::amd) {
        amd_.init(hw, info_);
        backend_ = &amd_;
    } else if (info_.kind == PmuKind::netburst) {
        netburst_.init(hw, info_);
        backend_ = &netburst_;
    }
}

namespace {
Error no_pmu(const PmuInfo& info) { return Error::make(Errc::unsupported, "%s", info.absent); }
Error planning_only() {
    return Error::make(Errc::internal, "PMU planning tried to access the hardware (a session bound by plan())");
}
}  // namespace

// The backend for operations on the CPU: none (error) without a PMU or when planning.
Status PmuSession::on_cpu() const {
    if (!backend_) return no_pmu(info_);
    if (planning_) return planning_only();
    return ok_status();
}

Status PmuSession::allocate(const Event* events, usize n, Allocation* out) const {
    return backend_ ? backend_->allocate(events, n, out) : pmu_allocate(info_, events, n, out);
}

CounterAccess PmuSession::access(CounterKind kind, u8 index) const {
    if (backend_) return backend_->access(kind, index);
    return CounterAccess();  // the TSC: the only counter without a PMU
}

void PmuSession::control_writes(const Event* events, const CounterGroup& g, PmuWriteList* start,
                                PmuWriteList* stop) const {
    start->count = stop->count = 0;
    if (backend_) backend_->control_writes(events, g, start, stop);
}

Status PmuSession::save(const PmuTouch& t) {
    PMULAB_TRY(on_cpu());
    return backend_->save(t);
}

Status PmuSession::program(const Event* events, const CounterGroup& g, const u64* presets) {
    PMULAB_TRY(on_cpu());
    return backend_->program(events, g, presets);
}

Status PmuSession::start() {
    PMULAB_TRY(on_cpu());
    return backend_->start();
}

Status PmuSession::stop() {
    PMULAB_TRY(on_cpu());
    return backend_->stop();
}

Result<u64> PmuSession::read(CounterKind kind, u8 index) {
    PMULAB_TRY(on_cpu());
    return backend_->read(kind, index);
}

Result<OverflowState> PmuSession::overflow() {
    PMULAB_TRY(on_cpu());
    return backend_->overflow();
}

bool PmuSession::saved() const { return backend_ && !planning_ && backend_->saved(); }

Status PmuSession::clear_overflow() {
    PMULAB_TRY(on_cpu());
    return backend_->clear_overflow();
}

Status PmuSession::close(RestoreReport* report) {
    if (!backend_ || planning_) {
        if (report) *report = RestoreReport();
        return ok_status();
    }
    return backend_->restore(report);
}

}  // namespace pmulab
