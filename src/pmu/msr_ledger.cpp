// The ledger of saved PMU MSRs (see pmu/msr_ledger.h).
#include "pmu/msr_ledger.h"

namespace pmulab {

void MsrLedger::begin() {
    count_ = 0;
    armed_ = false;
    wrote_any_ = false;
}

const MsrLedger::Entry* MsrLedger::find(u32 msr) const {
    const Entry* e = slots();
    for (unsigned i = 0; i < count_; ++i)
        if (e[i].msr == msr || (e[i].phase == RestorePhase::counter && e[i].alt == msr && msr)) return &e[i];
    return nullptr;
}

Status MsrLedger::save(const MsrReg& r) {
    if (!hw_) return Error::make(Errc::internal, "MSR ledger used before bind");
    // Only reads: a fault leaves the hardware untouched.
    Result<u64> v = hw_->rdmsr(r.msr);
    if (!v.ok()) return v.error();
    if (find(r.msr)) return ok_status();
    if (count_ >= capacity())
        return Error::make(Errc::internal, "MSR ledger full: %u registers saved, MSR 0x%X does not fit", capacity(),
                           r.msr);
    Entry& e = slots()[count_++];
    e = Entry();
    e.saved = e.shadow = v.value();
    e.msr = r.msr;
    e.phase = r.phase;
    if (r.phase == RestorePhase::status) {
        e.mask = r.owned;
        e.alt = r.clear_msr;
        e.other = r.set_msr;
    } else {
        e.mask = r.enable;
        e.alt = r.write_msr;
        e.other = r.gate;
    }
    e.legacy_width = r.legacy_width;
    e.report_bit = r.report_bit;
    e.flags = u8((r.always_disable ? kAlways : 0) | (r.reread ? kReread : 0));
    return ok_status();
}

u64 MsrLedger::shadow(u32 msr) const {
    const Entry* e = find(msr);
    return e ? e->shadow : 0;
}

u64 MsrLedger::saved_value(u32 msr) const {
    const Entry* e = find(msr);
    return e ? e->saved : 0;
}

bool MsrLedger::written(u32 msr) const {
    const Entry* e = find(msr);
    return e && (e->flags & kWritten);
}

Status MsrLedger::write(u32 msr, u64 value) {
    if (!hw_) return Error::make(Errc::internal, "MSR ledger used before bind");
    PMULAB_TRY(hw_->wrmsr(msr, value));
    wrote_any_ = true;
    if (Entry* e = find(msr)) {
        e->shadow = value;
        e->flags |= kWritten;
    }
    return ok_status();
}

bool MsrLedger::put(u32 msr, u64 value, Status* first) {
    Status s = write(msr, value);
    if (!s.ok() && first->ok()) *first = s;
    return s.ok();
}

void MsrLedger::restore_entry(Entry& e, RestoreReport* rep, Status* first) {
    switch (e.phase) {
        case RestorePhase::counter: {
            // Only what pmulab wrote, and only while the counter cannot count.
            if (!(e.flags & kWritten)) return;
            if (e.other) {
                const Entry* gate = find(e.other);
                if (gate && !(gate->flags & kOff)) return;
            }
            put(e.alt ? e.alt : e.msr, e.saved, first);
            if (e.legacy_width && regs::legacy_pmc_write_result(e.saved, e.legacy_width) != e.saved)
                rep->gp_counters_inexact |= u32(1) << e.report_bit;
            return;
        }
        case RestorePhase::status: {
            // The hardware sets and clears these bits itself: compare with what it holds now.
            Result<u64> cur = hw_->rdmsr(e.msr);
            if (!cur.ok()) {
                if (first->ok()) *first = cur.error();
                return;
            }
            u64 clear = cur.value() & ~e.saved & e.mask;
            u64 set = e.saved & ~cur.value() & e.mask;
            if (clear) put(e.alt, clear, first);
            if (set) {
                if (e.other) put(e.other, set, first);
                else rep->status_bits_lost |= set;
            }
            return;
        }
        case RestorePhase::event_select:
        case RestorePhase::control:
        case RestorePhase::global:
            if (e.shadow != e.saved) put(e.msr, e.saved, first);
            return;
    }
}

Status MsrLedger::restore(RestoreReport* report) {
    RestoreReport rep;
    Status first = ok_status();
    if (armed_ && wrote_any_) {
        Entry* es = slots();
        // Disable pass: counting off before any counter is written.
        for (unsigned i = 0; i < count_; ++i) {
            Entry& e = es[i];
            if (e.phase == RestorePhase::status || !e.mask) continue;
            if (e.flags & kReread) {
                // A fault keeps the shadow: the disable write then shows whether it is reachable.
                Result<u64> cur = hw_->rdmsr(e.msr);
                if (cur.ok()) e.shadow = cur.value();
            }
            bool off = (!(e.flags & kAlways) && !(e.shadow & e.mask)) || put(e.msr, e.shadow & ~e.mask, &first);
            if (off) e.flags |= kOff;
        }
        for (unsigned p = 0; p < kRestorePhases; ++p)
            for (unsigned i = 0; i < count_; ++i)
                if (unsigned(es[i].phase) == p) restore_entry(es[i], &rep, &first);
    }
    begin();
    if (report) *report = rep;
    return first;
}

}  // namespace pmulab
