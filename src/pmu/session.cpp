#include "pmu/session.h"

namespace pmulab {

// ---- session ----

void PmuSession::open(Hw& hw) {
    PmuInfo info;
    pmu_detect(hw, &info);
    open(hw, info);
}

void PmuSession::open(Hw& hw, const PmuInfo& info) {
    (void)close();
    info_ = info;
    backend_ = nullptr;
    if (info_.kind == PmuKind::intel_arch) {
        intel_.init(&hw, info_);
        backend_ = &intel_;
    } else if (info_.kind == PmuKind::amd) {
        amd_.init(&hw, info_);
        backend_ = &amd_;
    } else if (info_.kind == PmuKind::netburst) {
        netburst_.init(&hw, info_);
        backend_ = &netburst_;
    }
}

namespace {
Error no_pmu(const PmuInfo& info) { return Error::make(Errc::unsupported, "%s", info.absent); }
}  // namespace

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

Status PmuSession::save(const PmuTouch& t) { return backend_ ? backend_->save(t) : Status(no_pmu(info_)); }

Status PmuSession::program(const Event* events, const CounterGroup& g, const u64* presets) {
    return backend_ ? backend_->program(events, g, presets) : Status(no_pmu(info_));
}

Status PmuSession::start() { return backend_ ? backend_->start() : Status(no_pmu(info_)); }

Status PmuSession::stop() { return backend_ ? backend_->stop() : Status(no_pmu(info_)); }

Result<u64> PmuSession::read(CounterKind kind, u8 index) {
    if (!backend_) return no_pmu(info_);
    return backend_->read(kind, index);
}

Result<OverflowState> PmuSession::overflow() {
    if (!backend_) return no_pmu(info_);
    return backend_->overflow();
}

bool PmuSession::saved() const { return backend_ && backend_->saved(); }

Status PmuSession::clear_overflow() { return backend_ ? backend_->clear_overflow() : Status(no_pmu(info_)); }

Status PmuSession::close(RestoreReport* report) {
    if (!backend_) {
        if (report) *report = RestoreReport();
        return ok_status();
    }
    return backend_->restore(report);
}

}  // namespace pmulab
