// Intel architectural performance monitoring, versions 1-6 (SDM Vol. 3B §20.2): the
// IntelArchPmu backend (intel_pmu.h). Register values are built with x86/intel_regs.h only.
#include "x86/msr_addr.h"
#include "pmu/intel_pmu.h"

namespace pmulab {

using regs::FixedCtrCtrl;
using regs::PerfEvtSel;
using regs::PerfGlobalCtrl;
using regs::PerfGlobalStatus;

namespace {

bool has(u32 mask, unsigned i) { return i < 32 && ((mask >> i) & 1); }

// u64 with the GLOBAL_* layout (GP i at bit i, fixed i at bit 32 + i).
u64 global_bits(u32 gp, u32 fixed) { return PerfGlobalStatus().set_pmc_ovf(gp).set_fixed_ovf(fixed).raw(); }

// TOPDOWN.SLOTS on FIXED_CTR3 of a core with IA32_PERF_METRICS: the metrics count with it
// (IA32_PERF_GLOBAL_CTRL.EN_PERF_METRICS, SDM Vol. 3B "Performance Metrics").
bool metrics_with(const PmuInfo& info, u32 fixed) { return has(fixed, 3) && regs::has_perf_metrics(info.caps); }

Error in_context(const Error& e, const char* what, const char* event, CounterKind kind, unsigned index) {
    StrBuf ctr;
    put_counter_name(ctr, kind, u8(index));
    return e.with_context("%s '%s' on %s", what, event, ctr.c_str());
}

}  // namespace

void IntelArchPmu::init(Hw* hw, const PmuInfo& info) {
    *this = IntelArchPmu();
    hw_ = hw;
    info_ = info;
    ledger_.bind(hw);
}

Status IntelArchPmu::allocate(const Event* events, usize n, Allocation* out) const {
    return pmu_allocate(info_, events, n, out);
}

CounterAccess IntelArchPmu::access(CounterKind kind, u8 index) const {
    CounterAccess a;
    bool rdpmc = info_.method == CounterMethod::rdpmc;
    switch (kind) {
        case CounterKind::gp:
            // RDPMC ECX = i; RDMSR IA32_PMCi returns the full counter width (SDM §20.2.1).
            a.kind = rdpmc ? CounterAccess::rdpmc : CounterAccess::rdmsr;
            a.index = rdpmc ? index : regs::pmc_msr(index);
            a.width = info_.gp_width;
            break;
        case CounterKind::fixed:
            // RDPMC ECX = 4000_0000H | i (SDM Vol. 2B RDPMC); RDMSR IA32_FIXED_CTRi.
            a.kind = rdpmc ? CounterAccess::rdpmc : CounterAccess::rdmsr;
            a.index = rdpmc ? (kRdpmcFixed | index) : regs::fixed_ctr_msr(index);
            a.width = info_.fixed_width;
            break;
        case CounterKind::none:
            a.kind = CounterAccess::rdtsc;
            a.width = 64;
            break;
    }
    return a;
}

u64 IntelArchPmu::evtsel_value(const Event& e, bool en) const {
    // Event select, UMASK, USR/OS, E, AnyThread, INV, CMASK, EQ, UMASK2 from the event;
    // INT stays clear (pmulab counts, it does not sample).
    PerfEvtSel v = e.perfevtsel();
    v.set_intr(false).set_en(en);
    return v.raw();
}

u64 IntelArchPmu::fixed_ctrl_value(const Event* events, const CounterGroup& g) const {
    FixedCtrCtrl v;
    for (const Assignment& as : g.events)
        if (as.kind == CounterKind::fixed) v.set_group(as.index, events[as.event].fixed_ctrl_group());
    return v.raw();
}

u32 IntelArchPmu::status_reset_msr() const {
    // One address, two names: IA32_PERF_GLOBAL_OVF_CTRL (v2/v3), _STATUS_RESET (v4+).
    return info_.status_reset ? msr::IA32_PERF_GLOBAL_STATUS_RESET : msr::IA32_PERF_GLOBAL_OVF_CTRL;
}

u64 IntelArchPmu::group_status_bits() const { return global_bits(group_gp_, group_fixed_); }

void IntelArchPmu::control_writes(const Event* events, const CounterGroup& g, PmuWriteList* start,
                                  PmuWriteList* stop) const {
    start->count = stop->count = 0;
    if (info_.global_ctrl) {
        // v2+: one WRMSR starts and stops every counter of the group (SDM §20.2.2).
        PerfGlobalCtrl on(g.global_ctrl().raw());
        if (metrics_with(info_, g.fixed_mask)) on.set_en_perf_metrics();
        start->add(msr::IA32_PERF_GLOBAL_CTRL, on.raw());
        stop->add(msr::IA32_PERF_GLOBAL_CTRL, 0);
        return;
    }
    // v1: IA32_PERFEVTSELx.EN, counter by counter.
    for (const Assignment& as : g.events) {
        if (as.kind != CounterKind::gp) continue;
        start->add(regs::perfevtsel_msr(as.index), evtsel_value(events[as.event], true));
        stop->add(regs::perfevtsel_msr(as.index), evtsel_value(events[as.event], false));
    }
}

Status IntelArchPmu::save(const PmuTouch& t) {
    if (!hw_) return Error::make(Errc::internal, "PMU backend used before init");
    if (ledger_.armed()) return Error::make(Errc::internal, "PMU state saved twice without a restore in between");
    if ((t.gp & ~info_.gp_mask) || (t.fixed & ~info_.fixed_mask)) {
        StrBuf want, have;
        regs::put_counter_set(want, t.gp, "PMC");
        want.put(' ');
        regs::put_counter_set(want, t.fixed, "FIXED_CTR");
        regs::put_counter_set(have, info_.gp_mask, "PMC");
        have.put(' ');
        regs::put_counter_set(have, info_.fixed_mask, "FIXED_CTR");
        return Error::make(Errc::internal, "counters %s requested, but this CPU has %s", want.c_str(), have.c_str());
    }
    touched_gp_ = t.gp;
    touched_fixed_ = t.fixed;
    programmed_ = false;
    // Saved in this order; restored as the ledger's phases say (pmu.h "restore"): counting
    // off first (GLOBAL_CTRL = 0 always, EN cleared), counters pmulab wrote (legacy writes
    // reported when inexact), PERFEVTSELx, FIXED_CTR_CTRL and aux MSRs, the overflow bits
    // of the touched counters, GLOBAL_CTRL last.
    ledger_.begin();
    const u64 en = PerfEvtSel::en_field::mask;
    if (info_.global_ctrl) {
        PMULAB_TRY(ledger_.save(MsrReg::global(msr::IA32_PERF_GLOBAL_CTRL).disabled_by(~u64(0)).disabled_always()));
        // Overflow flags: cleared through OVF_CTRL / STATUS_RESET; set again through
        // STATUS_SET on v4+ only (v2/v3 report them lost).
        PMULAB_TRY(ledger_.save(MsrReg::status(msr::IA32_PERF_GLOBAL_STATUS, status_reset_msr(),
                                               info_.status_reset ? msr::IA32_PERF_GLOBAL_STATUS_SET : 0,
                                               global_bits(t.gp, t.fixed))));
        if (t.fixed) PMULAB_TRY(ledger_.save(MsrReg::control(msr::IA32_FIXED_CTR_CTRL)));
    }
    for (unsigned i = 0; i < kMax; ++i) {
        if (!has(t.gp, i)) continue;
        PMULAB_TRY(ledger_.save(MsrReg::event_select(regs::perfevtsel_msr(i)).disabled_by(en)));
        // Written back through the full-width alias when enumerated; a legacy write keeps
        // only bits 31:0 sign-extended (reported when that is not the saved value).
        MsrReg pmc = MsrReg::counter(regs::pmc_msr(i)).gated_by(regs::perfevtsel_msr(i));
        if (info_.full_width_writes) pmc.written_at(regs::a_pmc_msr(i));
        else pmc.legacy_write(info_.gp_width, u8(i));
        PMULAB_TRY(ledger_.save(pmc));
    }
    for (unsigned i = 0; i < kMax; ++i)
        if (has(t.fixed, i)) PMULAB_TRY(ledger_.save(MsrReg::counter(regs::fixed_ctr_msr(i))));
    // IA32_PERF_METRICS goes with SLOTS: written (reset) with it, restored after it.
    if (metrics_with(info_, t.fixed)) PMULAB_TRY(ledger_.save(MsrReg::counter(msr::MSR_PERF_METRICS)));
    for (unsigned k = 0; k < t.aux_count && k < PmuTouch::kMaxAux; ++k) {
        Status s = ledger_.save(MsrReg::control(t.aux[k]));
        if (!s.ok()) {
            Error e = Error::make(Errc::unsupported,
                                  "model-specific MSR 0x%X (programmed with the event) cannot be used on this CPU: %s",
                                  t.aux[k], s.error().msg);
            e.vector = s.error().vector;
            return e;
        }
    }
    ledger_.arm();
    return ok_status();
}

Status IntelArchPmu::check_gp_preset(u8 index, u64 preset) const {
    unsigned w = info_.gp_width;
    if (preset & ~regs::counter_mask(w))
        return Error::make(Errc::invalid_argument, "preset 0x%llX does not fit the %u-bit counter PMC%u",
                           (unsigned long long)preset, w, unsigned(index));
    if (!info_.full_width_writes && regs::legacy_pmc_write_result(preset, w) != preset)
        return Error::make(Errc::unsupported,
                           "preset 0x%llX cannot be written to PMC%u: without full-width writes (%s) a counter "
                           "write is 32 bits sign-extended, so a preset must be below 0x80000000 or at least 0x%llX",
                           (unsigned long long)preset, unsigned(index),
                           info_.caps.perf_caps_read ? "IA32_PERF_CAPABILITIES.FW_WRITE[13] = 0"
                                                     : "no IA32_PERF_CAPABILITIES",
                           (unsigned long long)(regs::counter_mask(w) - 0x7FFFFFFFull));
    return ok_status();
}

Status IntelArchPmu::program(const Event* events, const CounterGroup& g, const u64* presets) {
    if (!ledger_.armed()) return Error::make(Errc::internal, "PMU programmed before its state was saved");
    if ((g.gp_mask & ~touched_gp_) || (g.fixed_mask & ~touched_fixed_))
        return Error::make(Errc::internal, "counter group uses counters whose state was not saved");
    u64 fmask = regs::counter_mask(info_.fixed_width);
    // Every value is checked before the first write.
    for (usize k = 0; k < g.events.size(); ++k) {
        const Assignment& as = g.events[k];
        u64 p = presets ? presets[k] : 0;
        if (as.kind == CounterKind::gp) {
            Status s = check_gp_preset(as.index, p);
            if (!s.ok()) return s;
        } else if (as.kind == CounterKind::fixed && (p & ~fmask)) {
            return Error::make(Errc::invalid_argument, "preset 0x%llX does not fit the %u-bit counter FIXED_CTR%u",
                               (unsigned long long)p, info_.fixed_width, unsigned(as.index));
        }
    }
    programmed_ = false;
    group_gp_ = g.gp_mask;
    group_fixed_ = g.fixed_mask;
    group_global_ = g.global_ctrl().raw();
    if (metrics_with(info_, g.fixed_mask)) group_global_ = PerfGlobalCtrl(group_global_).set_en_perf_metrics().raw();
    for (unsigned i = 0; i < kMax; ++i) group_evtsel_[i] = 0;

    const u64 en = PerfEvtSel::en_field::mask;
    Status st = ok_status();
    auto fail = [&](const Status& s, const Assignment* as) -> Status {
        Error e = s.error();
        if (as) e = in_context(e, "programming", events[as->event].name, as->kind, as->index);
        Status r = restore();
        (void)r;  // the programming error is the one to report
        return e;
    };

    // 1. Counting off: GLOBAL_CTRL (v2+).
    if (info_.global_ctrl && ledger_.shadow(msr::IA32_PERF_GLOBAL_CTRL) != 0) {
        st = write(msr::IA32_PERF_GLOBAL_CTRL, 0);
        if (!st.ok()) return fail(st, nullptr);
    }
    // 2. GP counters of earlier groups (or the firmware's) that this group does not use: released.
    for (unsigned i = 0; i < kMax; ++i) {
        if (!has(touched_gp_, i) || has(g.gp_mask, i) || ledger_.shadow(regs::perfevtsel_msr(i)) == 0) continue;
        st = write(regs::perfevtsel_msr(i), 0);
        if (!st.ok()) return fail(st, nullptr);
    }
    // 3. The group's GP counters: EN clear, preset, event select.
    for (usize k = 0; k < g.events.size(); ++k) {
        const Assignment& as = g.events[k];
        if (as.kind != CounterKind::gp) continue;
        const Event& e = events[as.event];
        unsigned i = as.index;
        u64 sel = ledger_.shadow(regs::perfevtsel_msr(i));
        if (sel & en) {
            st = write(regs::perfevtsel_msr(i), sel & ~en);
            if (!st.ok()) return fail(st, &as);
        }
        u64 p = presets ? presets[k] : 0;
        // Full-width alias when enumerated; else the legacy address (the value is within
        // the legacy rules, checked above).
        st = write(info_.full_width_writes ? regs::a_pmc_msr(i) : regs::pmc_msr(i), p);
        if (!st.ok()) return fail(st, &as);
        for (unsigned a = 0; a < e.intel.aux_count; ++a) {
            st = write(e.intel.aux[a].msr, e.intel.aux[a].value);
            if (!st.ok()) return fail(st, &as);
        }
        group_evtsel_[i] = evtsel_value(e, false);
        // v2+: EN set now, counting gated by GLOBAL_CTRL; v1: EN is the start.
        st = write(regs::perfevtsel_msr(i), evtsel_value(e, info_.global_ctrl));
        if (!st.ok()) return fail(st, &as);
    }
    // 4. Fixed counters: fields cleared, preset, fields set (only this group's).
    if (touched_fixed_) {
        u64 group_fields = 0;
        for (unsigned i = 0; i < kMax; ++i)
            if (has(g.fixed_mask, i)) group_fields |= FixedCtrCtrl::group_mask(i);
        u64 ctrl = ledger_.shadow(msr::IA32_FIXED_CTR_CTRL);
        if (ctrl & group_fields) {
            st = write(msr::IA32_FIXED_CTR_CTRL, ctrl & ~group_fields);
            if (!st.ok()) return fail(st, nullptr);
        }
        for (usize k = 0; k < g.events.size(); ++k) {
            const Assignment& as = g.events[k];
            if (as.kind != CounterKind::fixed) continue;
            st = write(regs::fixed_ctr_msr(as.index), presets ? presets[k] : 0);
            if (!st.ok()) return fail(st, &as);
        }
        // SLOTS and PERF_METRICS are reset together (perf's topdown.txt; SDM "Performance Metrics").
        if (metrics_with(info_, g.fixed_mask)) {
            st = write(msr::MSR_PERF_METRICS, 0);
            if (!st.ok()) return fail(st, nullptr);
        }
        u64 want = fixed_ctrl_value(events, g);
        if (want != ledger_.shadow(msr::IA32_FIXED_CTR_CTRL)) {
            st = write(msr::IA32_FIXED_CTR_CTRL, want);
            if (!st.ok()) return fail(st, nullptr);
        }
    }
    // 5. v2+: the group's overflow flags cleared.
    if (info_.global_ctrl && group_status_bits()) {
        st = write(status_reset_msr(), group_status_bits());
        if (!st.ok()) return fail(st, nullptr);
    }
    programmed_ = true;
    return ok_status();
}

Status IntelArchPmu::start() {
    if (!programmed_) return Error::make(Errc::internal, "PMU started before a group was programmed");
    if (info_.global_ctrl) return write(msr::IA32_PERF_GLOBAL_CTRL, group_global_);
    for (unsigned i = 0; i < kMax; ++i)
        if (has(group_gp_, i))
            PMULAB_TRY(write(regs::perfevtsel_msr(i), group_evtsel_[i] | PerfEvtSel::en_field::mask));
    return ok_status();
}

Status IntelArchPmu::stop() {
    if (!programmed_) return Error::make(Errc::internal, "PMU stopped before a group was programmed");
    if (info_.global_ctrl) return write(msr::IA32_PERF_GLOBAL_CTRL, 0);
    for (unsigned i = 0; i < kMax; ++i)
        if (has(group_gp_, i)) PMULAB_TRY(write(regs::perfevtsel_msr(i), group_evtsel_[i]));
    return ok_status();
}

Result<u64> IntelArchPmu::read(CounterKind kind, u8 index) {
    bool gp = kind == CounterKind::gp;
    if (kind == CounterKind::none || !has(gp ? info_.gp_mask : info_.fixed_mask, index))
        return absent_counter_error(kind, index);
    return perform_read(*hw_, access(kind, index));
}

Result<OverflowState> IntelArchPmu::overflow() {
    OverflowState o;
    if (!info_.global_ctrl) return o;  // v1: no IA32_PERF_GLOBAL_STATUS
    Result<u64> r = hw_->rdmsr(msr::IA32_PERF_GLOBAL_STATUS);
    if (!r.ok()) return r.error();
    PerfGlobalStatus s(r.value());
    o.known = true;
    o.gp = u32(s.pmc_ovf()) & group_gp_;
    o.fixed = u32(s.fixed_ovf()) & group_fixed_;
    return o;
}

Status IntelArchPmu::clear_overflow() {
    if (!info_.global_ctrl || !group_status_bits()) return ok_status();
    return write(status_reset_msr(), group_status_bits());
}

Status IntelArchPmu::restore(RestoreReport* report) {
    programmed_ = false;
    return ledger_.restore(report);
}

}  // namespace pmulab
