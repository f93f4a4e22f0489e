// The counter-overflow interrupt, the portable half (pmi.h).
#include "pmu/pmi.h"

#include "x86/amd_regs.h"
#include "x86/intel_regs.h"
#include "x86/msr_addr.h"

namespace pmulab {

using regs::PerfGlobalStatus;

namespace {

u8 counter_width(const PmuInfo& info, CounterKind kind) {
    if (info.kind == PmuKind::amd) return regs::amd::kCounterWidth;
    return kind == CounterKind::fixed ? info.fixed_width : info.gp_width;
}

// Whether the handler tells an overflow by the global status (else by the sign).
bool has_status(const PmuInfo& info) {
    return (info.kind == PmuKind::intel_arch && info.global_ctrl) ||
           (info.kind == PmuKind::amd && info.caps.amd_perfmon_v2);
}

}  // namespace

const char* pmi_unsupported(const PmuInfo& info) {
    switch (info.kind) {
        case PmuKind::intel_arch:
        case PmuKind::amd: return "";
        case PmuKind::netburst:
            return "the NetBurst ESCR/CCCR PMU's overflow interrupt (CCCR.OVF_PMI) is not implemented in pmulab";
        case PmuKind::none: break;
    }
    return info.absent[0] ? info.absent : "this CPU has no PMU counters";
}

const char* freeze_unsupported(const PmuInfo& info) {
    if (const char* why = pmi_unsupported(info); *why) return why;
    if (info.kind == PmuKind::intel_arch && info.version < 2)
        return "freezing the counters on a PMI needs architectural performance monitoring version 2 or later "
               "(IA32_DEBUGCTL.FREEZE_PERFMON_ON_PMI with IA32_PERF_GLOBAL_CTRL; this CPU has version 1)";
    if (info.kind == PmuKind::amd && !info.caps.amd_lbr_pmc_freeze)
        return "this AMD CPU cannot freeze its counters on a PMI: CPUID Fn8000_0022_EAX[2] (LbrAndPmcFreeze) is 0 "
               "(Zen 4 and later have it)";
    return "";
}

Result<u64> pmi_reload(const PmuInfo& info, CounterKind kind, u64 period) {
    const unsigned w = counter_width(info, kind);
    if (w == 0 || kind == CounterKind::none)
        return Error::make(Errc::invalid_argument, "this event has no counter that can interrupt");
    if (period == 0) return Error::make(Errc::invalid_argument, "a period of 0: the period counts events, at least 1");
    const u64 mask = regs::counter_mask(w);
    // The sign test (no global status) needs the reload's top bit set: period <= 2^(w-1).
    const u64 max = has_status(info) ? mask : (u64(1) << (w - 1));
    if (period > max)
        return Error::make(Errc::invalid_argument, "period %llu does not fit the %u-bit counter (at most %llu)",
                           (unsigned long long)period, w, (unsigned long long)max);
    const u64 reload = (mask - period + 1) & mask;
    // Without full-width writes an Intel GP counter is written as 32 bits sign-extended
    // (SDM §20.2.6): only reloads within 2^31 of the top can be written.
    if (info.kind == PmuKind::intel_arch && kind == CounterKind::gp && !info.full_width_writes &&
        regs::legacy_pmc_write_result(reload, w) != reload)
        return Error::make(
            Errc::invalid_argument,
            "period %llu cannot be written to a general-purpose counter of this CPU: without full-width "
            "writes (IA32_PERF_CAPABILITIES.FW_WRITE[13]) a counter write is 32 bits sign-extended, so a "
            "period must be at most 2147483648",
            (unsigned long long)period);
    return reload;
}

Status pmi_setup(const PmuInfo& info, const CounterGroup& g, const u64* periods, const u32* slots, bool freeze,
                 PmiSetup* out) {
    *out = PmiSetup();
    if (const char* why = pmi_unsupported(info); *why) return Error::make(Errc::unsupported, "%s", why);
    if (freeze) {
        if (const char* why = freeze_unsupported(info); *why) return Error::make(Errc::unsupported, "%s", why);
    }
    out->kind = info.kind;
    out->freeze = freeze;
    const bool intel = info.kind == PmuKind::intel_arch;
    const bool ext = info.caps.amd_perfctr_core || info.caps.amd_perfmon_v2;
    if (intel && info.global_ctrl) {
        out->status_msr = msr::IA32_PERF_GLOBAL_STATUS;
        out->ack_msr = info.status_reset ? msr::IA32_PERF_GLOBAL_STATUS_RESET : msr::IA32_PERF_GLOBAL_OVF_CTRL;
        out->ctrl_msr = msr::IA32_PERF_GLOBAL_CTRL;
        out->ctrl_on = g.global_ctrl().raw();
        if (info.status_reset) out->ack_extra = PerfGlobalStatus().set_ctr_frz().set_lbr_frz().raw();
        out->legacy_freeze = freeze && !info.status_reset;
    } else if (!intel && info.caps.amd_perfmon_v2) {
        out->status_msr = msr::AMD_PERF_CNTR_GLOBAL_STATUS;
        out->ack_msr = msr::AMD_PERF_CNTR_GLOBAL_STATUS_CLR;
        out->ctrl_msr = msr::AMD_PERF_CNTR_GLOBAL_CTL;
        out->ctrl_on = g.gp_mask;
        if (info.caps.amd_lbr_pmc_freeze) out->ack_extra = PerfGlobalStatus().set_ctr_frz().set_lbr_frz().raw();
    }
    for (usize k = 0; k < g.events.size(); ++k) {
        const Assignment& as = g.events[k];
        if (!periods || !periods[k]) continue;
        if (out->count >= PmiSetup::kMax) return Error::make(Errc::invalid_argument, "too many interrupting counters");
        if (!intel && as.kind != CounterKind::gp)
            return Error::make(Errc::unsupported,
                               "AMD's fixed-like counters (IRPerfCount, APERF, MPERF) cannot interrupt: sample on a "
                               "PERF_CTR counter (e.g. PMCx0C0 for retired instructions)");
        Result<u64> reload = pmi_reload(info, as.kind, periods[k]);
        if (!reload.ok()) return reload.error();
        PmiCounter& c = out->counters[out->count++];
        c.kind = as.kind;
        c.index = as.index;
        c.slot = slots ? slots[k] : u32(k);
        c.reload = reload.value();
        c.width = counter_width(info, as.kind);
        if (intel) {
            if (as.kind == CounterKind::fixed) {
                c.read_msr = c.write_msr = regs::fixed_ctr_msr(as.index);
                c.status_bit = info.global_ctrl ? PerfGlobalStatus().set_fixed(as.index).raw() : 0;
            } else {
                c.read_msr = regs::pmc_msr(as.index);
                c.write_msr = info.full_width_writes ? regs::a_pmc_msr(as.index) : regs::pmc_msr(as.index);
                c.status_bit = info.global_ctrl ? PerfGlobalStatus().set_pmc(as.index).raw() : 0;
                c.ctl_msr = regs::perfevtsel_msr(as.index);
            }
        } else {
            c.read_msr = c.write_msr = regs::amd::ctr_msr(as.index, ext);
            c.ctl_msr = regs::amd::ctl_msr(as.index, ext);
            c.status_bit = info.caps.amd_perfmon_v2 ? u64(1) << as.index : 0;
        }
    }
    return ok_status();
}

void PmiHandler::arm(Hw& hw, const PmiSetup& setup, PmiSink* sink, PmiRearm rearm, void* rearm_ctx,
                     PreciseSource* precise) {
    hw_ = &hw;
    precise_ = precise;
    setup_ = setup;
    sink_ = sink;
    rearm_ = rearm;
    rearm_ctx_ = rearm_ctx;
    pmis_ = foreign_ = samples_ = 0;
    error_ = ok_status();
    // Without a global control, each armed counter's enable is read once here (the
    // programmed PERFEVTSELx / PERF_CTLx with EN): the handler clears and sets EN.
    for (unsigned i = 0; i < setup_.count; ++i) {
        PmiCounter& c = setup_.counters[i];
        if (!setup_.ctrl_msr && c.ctl_msr) {
            // Programmed with EN clear where the region's own WRMSR starts counting (v1,
            // AMD without PerfMonV2): the handler runs while it counts, so EN is set.
            Result<u64> v = hw.rdmsr(c.ctl_msr);
            c.ctl_on = v.ok() ? v.value() | (u64(1) << 22) : 0;
        }
    }
    armed_ = true;
}

void PmiHandler::write(u32 msr, u64 v) {
    Status s = hw_->wrmsr(msr, v);
    if (!s.ok() && error_.ok()) error_ = s;
}

u64 PmiHandler::read(u32 msr) {
    Result<u64> v = hw_->rdmsr(msr);
    if (!v.ok()) {
        if (error_.ok()) error_ = v.error();
        return 0;
    }
    return v.value();
}

// Counting on or off: the global control, or each armed counter's enable where there is none.
void PmiHandler::set_counting(bool on) {
    const PmiSetup& s = setup_;
    // PERFEVTSELx.EN (SDM Figure 20-1), the same bit as AMD's PERF_CTL.En (APM §13.2.1).
    const u64 en_bit = regs::PerfEvtSel::en_field::mask;
    if (s.ctrl_msr) return write(s.ctrl_msr, on ? s.ctrl_on : 0);
    for (unsigned i = 0; i < s.count; ++i)
        if (s.counters[i].ctl_msr)
            write(s.counters[i].ctl_msr, on ? s.counters[i].ctl_on : s.counters[i].ctl_on & ~en_bit);
}

bool PmiHandler::on_nmi(u64 rip) {
    if (!armed_) return false;
    const PmiSetup& s = setup_;
    // 1. Counting off, unless the PMU froze itself.
    const bool stop = !s.freeze;
    if (stop) {
        set_counting(false);
    }
    // 2. Which armed counters overflowed.
    u64 status = s.status_msr ? read(s.status_msr) : 0;
    u32 hit = 0;
    for (unsigned i = 0; i < s.count; ++i) {
        const PmiCounter& c = s.counters[i];
        if (c.precise) continue;
        bool ovf = c.status_bit ? (status & c.status_bit) != 0
                                : ((read(c.read_msr) >> (c.width - 1)) & 1) == 0;  // wrapped past 0
        if (ovf) hit |= 1u << i;
    }
    u64 ack = 0;
    const bool mine = precise_ && sink_ && precise_->drain(*hw_, status, *sink_, &ack);
    if (!hit && !mine) {
        // Not the PMU's: counting back on as it was, nothing else touched.
        if (stop) {
            set_counting(true);
        }
        ++foreign_;
        return false;
    }
    ++pmis_;
    // 3. One sample per overflowed counter, and its reload.
    for (unsigned i = 0; i < s.count; ++i) {
        if (!((hit >> i) & 1)) continue;
        const PmiCounter& c = s.counters[i];
        if (sink_) sink_->sample(c.slot, rip);
        ++samples_;
        write(c.write_msr, c.reload);
        ack |= c.status_bit;
    }
    // 4. The overflow bits and the freeze bits acknowledged.
    if (s.ack_msr) write(s.ack_msr, ack | (status & s.ack_extra));
    // 5. Counting on again.
    if (stop || s.legacy_freeze) {
        set_counting(true);
    }
    // 6. The LVT entry unmasked again.
    if (rearm_) {
        Status r = rearm_(rearm_ctx_, kLvtPerfNmi);
        if (!r.ok() && error_.ok()) error_ = r;
    }
    return true;
}

}  // namespace pmulab
