// The AMD core PMU backend (see amd_pmu.h). Register values via x86/amd_regs.h only.
#include "pmu/amd_pmu.h"

#include <stdarg.h>

#include "x86/msr_addr.h"

namespace pmulab {

using regs::amd::GlobalCtl;
using regs::amd::Hwcr;
using regs::amd::PerfEvtSel;

namespace regs::amd {
const char* fixed_like_name(unsigned i) {
    return i == kFixedIrPerf ? "IRPerfCount" : i == kFixedAperf ? "APERF" : i == kFixedMperf ? "MPERF" : "?";
}
}  // namespace regs::amd

namespace {

bool has(u32 mask, unsigned i) { return i < 32 && ((mask >> i) & 1); }
bool amd_dialect(EventDialect d) { return d == EventDialect::amd || d == EventDialect::amd_zen; }

}  // namespace

void amd_fill_info(PmuInfo* p) {
    const PmuCaps& c = p->caps;
    if (!c.amd_core_counters) {
        format_to(p->absent, sizeof p->absent,
                  "no AMD core counters enumerated: no PerfCtrExtCore (CPUID 8000_0001H:ECX[23]) or PerfMonV2 "
                  "(8000_0022H:EAX[0])%s",
                  p->hypervisor ? " under a hypervisor, which does not expose the legacy counters either" : "");
        return;
    }
    p->kind = PmuKind::amd;
    p->gp_mask = u32(low_mask(min_of<unsigned>(c.amd_core_counters, regs::amd::kMaxCounters)));
    p->gp_width = regs::amd::kCounterWidth;
    if (c.amd_irperf) p->fixed_mask |= 1u << regs::amd::kFixedIrPerf;
    if (c.amd_efffreq) p->fixed_mask |= (1u << regs::amd::kFixedAperf) | (1u << regs::amd::kFixedMperf);
    p->fixed_width = regs::amd::kIrPerfWidth;
    p->global_ctrl = c.amd_perfmon_v2;
    p->full_width_writes = true;  // PERF_CTR takes all 48 bits
}

void put_amd_summary(StrBuf& out, const PmuInfo& p) {
    const PmuCaps& c = p.caps;
    out.printf("AMD core PMU (%s): ", c.amd_perfmon_v2     ? "PerfMonV2"
                                      : c.amd_perfctr_core ? "PerfCtrExtCore"
                                                           : "legacy");
    regs::put_counter_set(out, p.gp_mask, "PMC");
    out.printf(" (%u bits)", p.gp_width);
    out.put(", fixed-like ");
    if (!p.fixed_mask) out.put("none");
    bool first = true;
    for (unsigned i = 0; i < regs::amd::kFixedLikeCount; ++i)
        if (has(p.fixed_mask, i)) {
            out.printf("%s%s", first ? "" : ",", regs::amd::fixed_like_name(i));
            first = false;
        }
    if (c.amd_irperf_erratum1054) out.put(" (IRPerfCount unused: erratum 1054; instructions on PMCx0C0)");
    if (c.amd_efffreq && !c.amd_efffreq_ro) out.put(" (APERF/MPERF read at E8H/E7H: no EffFreqRO aliases)");
    out.printf(", reads with %s", p.method == CounterMethod::rdpmc ? "RDPMC" : "RDMSR");
}

Status amd_allocate(const PmuInfo& info, const Event* events, usize n, Allocation* out) {
    out->groups.clear();
    out->group_of.clear();
    Vec<EventCounters> cand;
    cand.resize(n);
    StrBuf have;
    regs::put_counter_set(have, info.gp_mask, "PMC");
    for (usize i = 0; i < n; ++i) {
        const Event& e = events[i];
        if (!e.needs_counter()) continue;
        if (info.kind != PmuKind::amd)
            return event_unsupported(e, "cannot be counted: %s", info.absent[0] ? info.absent : "no AMD core PMU");
        if (!amd_dialect(e.dialect))
            return event_unsupported(e, "was written for %s; this CPU has an AMD core PMU",
                                     e.dialect == EventDialect::netburst ? "a NetBurst PMU" : "an Intel PMU");
        EventCounters& c = cand[i];
        if (e.kind == EventKind::fixed) {
            bool present = e.fixed_counter >= 0 && has(info.fixed_mask, unsigned(e.fixed_counter));
            // IRPerfCount counts at every privilege level: only for events counting both.
            bool fits = present && (e.fixed_counter != regs::amd::kFixedIrPerf || (e.usr && e.os));
            if (fits && e.pinned_counter < 0) c.fixed = 1u << e.fixed_counter;
            if (e.gp_equivalent) {
                c.gp = info.gp_mask & e.allowed_gp;
                if (e.pinned_counter >= 0) c.gp &= 1u << e.pinned_counter;
            }
            if (!c.fixed && !c.gp) {
                if (!e.gp_equivalent)
                    return event_unsupported(e, "needs %s, which this CPU does not have (%s)",
                                             regs::amd::fixed_like_name(unsigned(e.fixed_counter)),
                                             e.fixed_counter != regs::amd::kFixedIrPerf ? "CPUID 06H:ECX[0] EffFreq = 0"
                                             : info.caps.amd_irperf_erratum1054
                                                 ? "disabled on family 17h models 00h-2Fh by erratum 1054"
                                                 : "CPUID 8000_0008H:EBX[1] = 0");
                return event_unsupported(e,
                                         "cannot be counted: no general-purpose counter left for it (this CPU has %s)",
                                         have.c_str());
            }
            continue;
        }
        if (e.pinned_counter >= 0 && !has(info.gp_mask, unsigned(e.pinned_counter)))
            return event_unsupported(e, "is pinned to PMC%d (.CTR=%d), but this CPU has %s", e.pinned_counter,
                                     e.pinned_counter, have.c_str());
        c.gp = info.gp_mask & e.allowed_gp;
        if (e.pinned_counter >= 0) c.gp &= 1u << e.pinned_counter;
        if (!c.gp) return event_unsupported(e, "has no allowed counter on this CPU (it has %s)", have.c_str());
    }
    return place_counters(events, n, cand.data(), out);
}

// ---- the backend ----

void AmdPmu::init(Hw* hw, const PmuInfo& info) {
    *this = AmdPmu();
    hw_ = hw;
    info_ = info;
    ledger_.bind(hw);
    v2_ = info.caps.amd_perfmon_v2;
    ext_ = info.caps.amd_perfctr_core || v2_;
}

Status AmdPmu::allocate(const Event* events, usize n, Allocation* out) const {
    return amd_allocate(info_, events, n, out);
}

u64 AmdPmu::ctl_value(const Event& e, bool en) {
    PerfEvtSel v;
    v.set_event_select(e.event_select).set_umask(e.umask).set_usr(e.usr).set_os(e.os).set_edge(e.edge);
    v.set_inv(e.inv).set_cmask(e.cmask).set_host_only(e.amd.host_only).set_guest_only(e.amd.guest_only).set_en(en);
    return v.raw();
}

CounterAccess AmdPmu::access(CounterKind kind, u8 index) const {
    CounterAccess a;
    if (kind == CounterKind::gp) {
        bool rdpmc = info_.method == CounterMethod::rdpmc;
        a.kind = rdpmc ? CounterAccess::rdpmc : CounterAccess::rdmsr;
        a.index = rdpmc ? index : ctr(index);  // RDPMC ECX = i reads PERF_CTR i (APM RDPMC)
        a.width = info_.gp_width;
    } else if (kind == CounterKind::fixed) {
        a.kind = CounterAccess::rdmsr;
        a.index = regs::amd::fixed_like_msr(index, info_.caps.amd_efffreq_ro);
        a.width = index == regs::amd::kFixedIrPerf ? regs::amd::kIrPerfWidth : regs::amd::kAperfMperfWidth;
    } else {
        a.kind = CounterAccess::rdtsc;
        a.width = 64;
    }
    return a;
}

void AmdPmu::control_writes(const Event* events, const CounterGroup& g, PmuWriteList* start, PmuWriteList* stop) const {
    start->count = stop->count = 0;
    if (v2_) {
        start->add(msr::AMD_PERF_CNTR_GLOBAL_CTL, GlobalCtl().set_counters(g.gp_mask).raw());
        stop->add(msr::AMD_PERF_CNTR_GLOBAL_CTL, 0);
        return;
    }
    for (const Assignment& as : g.events) {
        if (as.kind != CounterKind::gp) continue;
        start->add(ctl(as.index), ctl_value(events[as.event], true));
        stop->add(ctl(as.index), ctl_value(events[as.event], false));
    }
}

Status AmdPmu::save(const PmuTouch& t) {
    if (!hw_) return Error::make(Errc::internal, "PMU backend used before init");
    if (ledger_.armed()) return Error::make(Errc::internal, "PMU state saved twice without a restore in between");
    if ((t.gp & ~info_.gp_mask) || (t.fixed & ~info_.fixed_mask) || t.aux_count)
        return Error::make(Errc::internal, "registers requested that this AMD PMU does not have");
    touched_gp_ = t.gp;
    touched_fixed_ = t.fixed;
    programmed_ = false;
    // Restore order (ledger phases): GLOBAL_CTL = 0 (when set) and EN cleared first;
    // counters pmulab wrote; PERF_CTLs; HWCR; GLOBAL_STATUS bits back exactly through
    // STATUS_CLR/STATUS_SET; GLOBAL_CTL last, so counting resumes only on a complete state.
    ledger_.begin();
    const u64 en = PerfEvtSel::en_field::mask;
    if (v2_) {
        PMULAB_TRY(ledger_.save(MsrReg::global(msr::AMD_PERF_CNTR_GLOBAL_CTL).disabled_by(~u64(0))));
        PMULAB_TRY(ledger_.save(MsrReg::status(msr::AMD_PERF_CNTR_GLOBAL_STATUS, msr::AMD_PERF_CNTR_GLOBAL_STATUS_CLR,
                                               msr::AMD_PERF_CNTR_GLOBAL_STATUS_SET, t.gp)));
    }
    for (unsigned i = 0; i < kMax; ++i) {
        if (!has(t.gp, i)) continue;
        PMULAB_TRY(ledger_.save(MsrReg::event_select(ctl(i)).disabled_by(en)));
        PMULAB_TRY(ledger_.save(MsrReg::counter(ctr(i)).gated_by(ctl(i))));
    }
    if (has(t.fixed, regs::amd::kFixedIrPerf)) PMULAB_TRY(ledger_.save(MsrReg::control(msr::AMD_HWCR)));
    ledger_.arm();
    return ok_status();
}

Status AmdPmu::program(const Event* events, const CounterGroup& g, const u64* presets) {
    if (!ledger_.armed()) return Error::make(Errc::internal, "PMU programmed before its state was saved");
    if ((g.gp_mask & ~touched_gp_) || (g.fixed_mask & ~touched_fixed_))
        return Error::make(Errc::internal, "counter group uses counters whose state was not saved");
    u64 mask = regs::counter_mask(info_.gp_width);
    for (usize k = 0; k < g.events.size(); ++k) {
        const Assignment& as = g.events[k];
        u64 p = presets ? presets[k] : 0;
        if (as.kind == CounterKind::gp && (p & ~mask))
            return Error::make(Errc::invalid_argument, "preset 0x%llX does not fit the %u-bit counter PMC%u",
                               (unsigned long long)p, info_.gp_width, unsigned(as.index));
        if (as.kind == CounterKind::fixed && p)
            return Error::make(Errc::invalid_argument, "%s is free-running and cannot be preset (preset 0x%llX)",
                               regs::amd::fixed_like_name(as.index), (unsigned long long)p);
    }
    programmed_ = false;
    group_gp_ = g.gp_mask;
    const u64 en = PerfEvtSel::en_field::mask;
    auto fail = [&](const Status& s) -> Status {
        Error e = s.error();
        (void)restore();
        return e;
    };
    Status st = ok_status();
    if (v2_ && ledger_.shadow(msr::AMD_PERF_CNTR_GLOBAL_CTL)) {
        st = write(msr::AMD_PERF_CNTR_GLOBAL_CTL, 0);
        if (!st.ok()) return fail(st);
    }
    for (unsigned i = 0; i < kMax; ++i) {
        if (!has(touched_gp_, i) || has(g.gp_mask, i) || ledger_.shadow(ctl(i)) == 0) continue;
        st = write(ctl(i), 0);
        if (!st.ok()) return fail(st);
    }
    for (usize k = 0; k < g.events.size(); ++k) {
        const Assignment& as = g.events[k];
        if (as.kind == CounterKind::fixed && as.index == regs::amd::kFixedIrPerf) {
            u64 hwcr = ledger_.shadow(msr::AMD_HWCR);
            u64 want = Hwcr(hwcr).set_ir_perf_en().raw();
            if (want != hwcr) {
                st = write(msr::AMD_HWCR, want);
                if (!st.ok()) return fail(st);
            }
        }
        if (as.kind != CounterKind::gp) continue;
        unsigned i = as.index;
        u64 sel = ledger_.shadow(ctl(i));
        if (sel & en) {
            st = write(ctl(i), sel & ~en);
            if (!st.ok()) return fail(st);
        }
        preset_[i] = presets ? presets[k] : 0;
        st = write(ctr(i), preset_[i]);
        if (!st.ok()) return fail(st);
        group_ctl_[i] = ctl_value(events[as.event], false);
        st = write(ctl(i), ctl_value(events[as.event], v2_));
        if (!st.ok()) return fail(st);
    }
    if (v2_ && g.gp_mask) {
        st = write(msr::AMD_PERF_CNTR_GLOBAL_STATUS_CLR, g.gp_mask);
        if (!st.ok()) return fail(st);
    }
    programmed_ = true;
    return ok_status();
}

Status AmdPmu::start() {
    if (!programmed_) return Error::make(Errc::internal, "PMU started before a group was programmed");
    if (v2_) return write(msr::AMD_PERF_CNTR_GLOBAL_CTL, GlobalCtl().set_counters(group_gp_).raw());
    for (unsigned i = 0; i < kMax; ++i)
        if (has(group_gp_, i)) PMULAB_TRY(write(ctl(i), group_ctl_[i] | PerfEvtSel::en_field::mask));
    return ok_status();
}

Status AmdPmu::stop() {
    if (!programmed_) return Error::make(Errc::internal, "PMU stopped before a group was programmed");
    if (v2_) return write(msr::AMD_PERF_CNTR_GLOBAL_CTL, 0);
    for (unsigned i = 0; i < kMax; ++i)
        if (has(group_gp_, i)) PMULAB_TRY(write(ctl(i), group_ctl_[i]));
    return ok_status();
}

Result<u64> AmdPmu::read(CounterKind kind, u8 index) {
    bool gp = kind == CounterKind::gp;
    if (kind == CounterKind::none || !has(gp ? info_.gp_mask : info_.fixed_mask, index))
        return absent_counter_error(kind, index);
    return perform_read(*hw_, access(kind, index));
}

Result<OverflowState> AmdPmu::overflow() {
    OverflowState o;
    o.known = true;
    if (v2_) {
        Result<u64> r = hw_->rdmsr(msr::AMD_PERF_CNTR_GLOBAL_STATUS);
        if (!r.ok()) return r.error();
        o.gp = u32(GlobalCtl(r.value()).counters()) & group_gp_;
        return o;
    }
    // Without PerfMonV2 nothing latches the overflow: a counter that wrapped is below
    // its preset (valid for less than one full 2^48 period).
    for (unsigned i = 0; i < kMax; ++i) {
        if (!has(group_gp_, i)) continue;
        Result<u64> r = hw_->rdmsr(ctr(i));
        if (!r.ok()) return r.error();
        if ((r.value() & regs::counter_mask(info_.gp_width)) < preset_[i]) o.gp |= 1u << i;
    }
    return o;
}

Status AmdPmu::clear_overflow() {
    if (!v2_ || !group_gp_) return ok_status();
    return write(msr::AMD_PERF_CNTR_GLOBAL_STATUS_CLR, group_gp_);
}

Status AmdPmu::restore(RestoreReport* report) {
    programmed_ = false;
    return ledger_.restore(report);
}

}  // namespace pmulab
