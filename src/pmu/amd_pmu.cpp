// The AMD core PMU family (see amd_pmu.h): the kAmdFamily description. Register values
// via x86/amd_regs.h only.
#include "pmu/pmu_family.h"
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

constexpr unsigned kMax = AmdPmuState::kMax;

bool amd_dialect(EventDialect d) { return d == EventDialect::amd || d == EventDialect::amd_zen; }
// PERF_CTL/CTR at C001_0200H + 2i (PerfCtrExtCore or PerfMonV2).
bool ext_counters(const PmuInfo& info) { return info.caps.amd_perfctr_core || info.caps.amd_perfmon_v2; }
// PerfMonV2: PerfCntrGlobalCtl gates every counter.
bool v2(const PmuInfo& info) { return info.caps.amd_perfmon_v2; }
u32 ctl(const PmuInfo& info, unsigned i) { return regs::amd::ctl_msr(i, ext_counters(info)); }
u32 ctr(const PmuInfo& info, unsigned i) { return regs::amd::ctr_msr(i, ext_counters(info)); }

// ---- decode ----

bool amd_claims(Vendor vendor, const PmuCaps& c) { return is_amd_family(vendor) && c.amd_core_counters; }

void amd_decode(const CpuProbe&, const CpuDecoded&, PmuInfo* p) {
    const PmuCaps& c = p->caps;
    p->kind = PmuKind::amd;
    p->gp_mask = u32(low_mask(min_of<unsigned>(c.amd_core_counters, regs::amd::kMaxCounters)));
    p->gp_width = regs::amd::kCounterWidth;
    if (c.amd_irperf) p->fixed_mask |= 1u << regs::amd::kFixedIrPerf;
    if (c.amd_efffreq) p->fixed_mask |= (1u << regs::amd::kFixedAperf) | (1u << regs::amd::kFixedMperf);
    p->fixed_width = regs::amd::kIrPerfWidth;
    p->global_ctrl = c.amd_perfmon_v2;
    p->full_width_writes = true;  // PERF_CTR takes all 48 bits
}

bool amd_explain_absent(const CpuDecoded& d, PmuInfo* p) {
    if (!is_amd_family(d.id.vendor)) return false;
    format_to(p->absent, sizeof p->absent,
              "no performance-monitoring counters: no AMD core counters enumerated (CPUID 8000_0001H:ECX[23] = "
              "0, no PerfMonV2) and CPUID.0AH:EAX[7:0] = 0%s",
              p->hypervisor ? " (a hypervisor without PMU passthrough)" : "");
    return true;
}

// ---- planning ----

void amd_summary(StrBuf& out, const PmuInfo& p) {
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
        if (has_bit(p.fixed_mask, i)) {
            out.printf("%s%s", first ? "" : ",", regs::amd::fixed_like_name(i));
            first = false;
        }
    if (c.amd_irperf_erratum1054) out.put(" (IRPerfCount unused: erratum 1054; instructions on PMCx0C0)");
    if (c.amd_efffreq && !c.amd_efffreq_ro) out.put(" (APERF/MPERF read at E8H/E7H: no EffFreqRO aliases)");
    out.printf(", reads with %s", p.method == CounterMethod::rdpmc ? "RDPMC" : "RDMSR");
}

// The counters a fixed-like event may use: its fixed-like counter, else (with a GP
// encoding) a PERF_CTR.
Status fixed_like_counters(const PmuInfo& info, const Event& e, const StrBuf& have, EventCounters* c) {
    bool present = e.fixed_counter >= 0 && has_bit(info.fixed_mask, unsigned(e.fixed_counter));
    // IRPerfCount counts at every privilege level: only for events counting both.
    bool fits = present && (e.fixed_counter != regs::amd::kFixedIrPerf || (e.usr && e.os));
    if (fits && e.pinned_counter < 0) c->fixed = 1u << e.fixed_counter;
    if (e.gp_equivalent) {
        c->gp = info.gp_mask & e.allowed_gp;
        if (e.pinned_counter >= 0) c->gp &= 1u << e.pinned_counter;
    }
    if (c->fixed || c->gp) return ok_status();
    if (!e.gp_equivalent)
        return event_unsupported(e, "needs %s, which this CPU does not have (%s)",
                                 regs::amd::fixed_like_name(unsigned(e.fixed_counter)),
                                 e.fixed_counter != regs::amd::kFixedIrPerf ? "CPUID 06H:ECX[0] EffFreq = 0"
                                 : info.caps.amd_irperf_erratum1054
                                     ? "disabled on family 17h models 00h-2Fh by erratum 1054"
                                     : "CPUID 8000_0008H:EBX[1] = 0");
    return event_unsupported(e, "cannot be counted: no general-purpose counter left for it (this CPU has %s)",
                             have.c_str());
}

// Allocation on an AMD PMU: events of the AMD dialects only; IRPerfCount takes
// 'instructions' counted at every privilege level, else a PERF_CTR with C0.00.
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
            PMULAB_TRY(fixed_like_counters(info, e, have, &c));
            continue;
        }
        if (e.pinned_counter >= 0 && !has_bit(info.gp_mask, unsigned(e.pinned_counter)))
            return event_unsupported(e, "is pinned to PMC%d (.CTR=%d), but this CPU has %s", e.pinned_counter,
                                     e.pinned_counter, have.c_str());
        c.gp = info.gp_mask & e.allowed_gp;
        if (e.pinned_counter >= 0) c.gp &= 1u << e.pinned_counter;
        if (!c.gp) return event_unsupported(e, "has no allowed counter on this CPU (it has %s)", have.c_str());
    }
    PMULAB_TRY(place_counters(events, n, cand.data(), out));
    out->fixed_name = regs::amd::fixed_like_name;  // IRPerfCount, APERF, MPERF
    return ok_status();
}

// The PERF_CTL value of an event (EN as given, INT only for a sampled counter: Event::pmi).
u64 ctl_value(const Event& e, bool en) {
    PerfEvtSel v;
    v.set_event_select(e.event_select).set_umask(e.umask).set_usr(e.usr).set_os(e.os).set_edge(e.edge);
    v.set_inv(e.inv).set_cmask(e.cmask).set_host_only(e.amd.host_only).set_guest_only(e.amd.guest_only).set_en(en);
    v.set_intr(e.pmi);
    return v.raw();
}

CounterAccess amd_access(const PmuInfo& info, CounterKind kind, u8 index) {
    CounterAccess a;
    if (kind == CounterKind::gp) {
        bool rdpmc = info.method == CounterMethod::rdpmc;
        a.kind = rdpmc ? CounterAccess::rdpmc : CounterAccess::rdmsr;
        a.index = rdpmc ? index : ctr(info, index);  // RDPMC ECX = i reads PERF_CTR i (APM RDPMC)
        a.width = info.gp_width;
    } else if (kind == CounterKind::fixed) {
        a.kind = CounterAccess::rdmsr;
        a.index = regs::amd::fixed_like_msr(index, info.caps.amd_efffreq_ro);
        a.width = index == regs::amd::kFixedIrPerf ? regs::amd::kIrPerfWidth : regs::amd::kAperfMperfWidth;
    } else {
        a.kind = CounterAccess::rdtsc;
        a.width = 64;
    }
    return a;
}

void amd_control_writes(const PmuInfo& info, const Event* events, const CounterGroup& g, PmuWriteList* start,
                        PmuWriteList* stop) {
    if (v2(info)) {
        start->add(msr::AMD_PERF_CNTR_GLOBAL_CTL, GlobalCtl().set_counters(g.gp_mask).raw());
        stop->add(msr::AMD_PERF_CNTR_GLOBAL_CTL, 0);
        return;
    }
    for (const Assignment& as : g.events) {
        if (as.kind != CounterKind::gp) continue;
        start->add(ctl(info, as.index), ctl_value(events[as.event], true));
        stop->add(ctl(info, as.index), ctl_value(events[as.event], false));
    }
}

// ---- on the CPU ----

// Restore order (ledger phases): GLOBAL_CTL = 0 (when set) and EN cleared first;
// counters pmulab wrote; PERF_CTLs; HWCR; GLOBAL_STATUS bits back exactly through
// STATUS_CLR/STATUS_SET; GLOBAL_CTL last, so counting resumes only on a complete state.
Status amd_save(PmuCore& core, const PmuTouch& t) {
    const PmuInfo& info = core.info;
    MsrLedger& ledger = core.ledger;
    if ((t.gp & ~info.gp_mask) || (t.fixed & ~info.fixed_mask) || t.aux_count)
        return Error::make(Errc::internal, "registers requested that this AMD PMU does not have");
    const u64 en = PerfEvtSel::en_field::mask;
    if (v2(core.info)) {
        PMULAB_TRY(ledger.save(MsrReg::global(msr::AMD_PERF_CNTR_GLOBAL_CTL).disabled_by(~u64(0))));
        PMULAB_TRY(ledger.save(MsrReg::status(msr::AMD_PERF_CNTR_GLOBAL_STATUS, msr::AMD_PERF_CNTR_GLOBAL_STATUS_CLR,
                                              msr::AMD_PERF_CNTR_GLOBAL_STATUS_SET, t.gp)));
    }
    for (unsigned i = 0; i < kMax; ++i) {
        if (!has_bit(t.gp, i)) continue;
        PMULAB_TRY(ledger.save(MsrReg::event_select(ctl(info, i)).disabled_by(en)));
        PMULAB_TRY(ledger.save(MsrReg::counter(ctr(info, i)).gated_by(ctl(info, i))));
    }
    if (has_bit(t.fixed, regs::amd::kFixedIrPerf)) PMULAB_TRY(ledger.save(MsrReg::control(msr::AMD_HWCR)));
    return ok_status();
}

Status amd_check_presets(const PmuCore& core, const Event*, const CounterGroup& g, const u64* presets) {
    u64 mask = regs::counter_mask(core.info.gp_width);
    for (usize k = 0; k < g.events.size(); ++k) {
        const Assignment& as = g.events[k];
        u64 p = presets ? presets[k] : 0;
        if (as.kind == CounterKind::gp && (p & ~mask))
            return Error::make(Errc::invalid_argument, "preset 0x%llX does not fit the %u-bit counter PMC%u",
                               (unsigned long long)p, core.info.gp_width, unsigned(as.index));
        if (as.kind == CounterKind::fixed && p)
            return Error::make(Errc::invalid_argument, "%s is free-running and cannot be preset (preset 0x%llX)",
                               regs::amd::fixed_like_name(as.index), (unsigned long long)p);
    }
    return ok_status();
}

// IRPerfCount: HWCR.IRPerfEn set (when it is not).
Status enable_irperf(PmuCore& core) {
    u64 hwcr = core.ledger.shadow(msr::AMD_HWCR);
    u64 want = Hwcr(hwcr).set_ir_perf_en().raw();
    return want != hwcr ? core.write(msr::AMD_HWCR, want) : ok_status();
}

// One PERF_CTR of the group: EN clear, preset, PERF_CTL.
Status program_counter(PmuCore& core, const Event& e, unsigned i, u64 preset) {
    const PmuInfo& info = core.info;
    u64 sel = core.ledger.shadow(ctl(info, i));
    if (sel & PerfEvtSel::en_field::mask) PMULAB_TRY(core.write(ctl(info, i), sel & ~PerfEvtSel::en_field::mask));
    core.amd.preset[i] = preset;
    PMULAB_TRY(core.write(ctr(info, i), preset));
    core.amd.group_ctl[i] = ctl_value(e, false);
    return core.write(ctl(info, i), ctl_value(e, v2(core.info)));
}

Status amd_program(PmuCore& core, const Event* events, const CounterGroup& g, const u64* presets) {
    const PmuInfo& info = core.info;
    if (v2(core.info) && core.ledger.shadow(msr::AMD_PERF_CNTR_GLOBAL_CTL))
        PMULAB_TRY(core.write(msr::AMD_PERF_CNTR_GLOBAL_CTL, 0));
    for (unsigned i = 0; i < kMax; ++i) {
        if (!has_bit(core.touched_gp, i) || has_bit(g.gp_mask, i) || core.ledger.shadow(ctl(info, i)) == 0) continue;
        PMULAB_TRY(core.write(ctl(info, i), 0));
    }
    for (usize k = 0; k < g.events.size(); ++k) {
        const Assignment& as = g.events[k];
        if (as.kind == CounterKind::fixed && as.index == regs::amd::kFixedIrPerf) PMULAB_TRY(enable_irperf(core));
        if (as.kind != CounterKind::gp) continue;
        PMULAB_TRY(program_counter(core, events[as.event], as.index, presets ? presets[k] : 0));
    }
    if (v2(core.info) && g.gp_mask) PMULAB_TRY(core.write(msr::AMD_PERF_CNTR_GLOBAL_STATUS_CLR, g.gp_mask));
    return ok_status();
}

Status amd_start(PmuCore& core) {
    if (v2(core.info)) return core.write(msr::AMD_PERF_CNTR_GLOBAL_CTL, GlobalCtl().set_counters(core.group_gp).raw());
    for (unsigned i = 0; i < kMax; ++i)
        if (has_bit(core.group_gp, i))
            PMULAB_TRY(core.write(ctl(core.info, i), core.amd.group_ctl[i] | PerfEvtSel::en_field::mask));
    return ok_status();
}

Status amd_stop(PmuCore& core) {
    if (v2(core.info)) return core.write(msr::AMD_PERF_CNTR_GLOBAL_CTL, 0);
    for (unsigned i = 0; i < kMax; ++i)
        if (has_bit(core.group_gp, i)) PMULAB_TRY(core.write(ctl(core.info, i), core.amd.group_ctl[i]));
    return ok_status();
}

Result<OverflowState> amd_overflow(PmuCore& core) {
    OverflowState o;
    o.known = true;
    if (v2(core.info)) {
        Result<u64> r = core.hw->rdmsr(msr::AMD_PERF_CNTR_GLOBAL_STATUS);
        if (!r.ok()) return r.error();
        o.gp = u32(GlobalCtl(r.value()).counters()) & core.group_gp;
        return o;
    }
    // Without PerfMonV2 nothing latches the overflow: a counter that wrapped is below
    // its preset (valid for less than one full 2^48 period).
    for (unsigned i = 0; i < kMax; ++i) {
        if (!has_bit(core.group_gp, i)) continue;
        Result<u64> r = core.hw->rdmsr(ctr(core.info, i));
        if (!r.ok()) return r.error();
        if ((r.value() & regs::counter_mask(core.info.gp_width)) < core.amd.preset[i]) o.gp |= 1u << i;
    }
    return o;
}

Status amd_clear_overflow(PmuCore& core) {
    if (!v2(core.info) || !core.group_gp) return ok_status();
    return core.write(msr::AMD_PERF_CNTR_GLOBAL_STATUS_CLR, core.group_gp);
}

}  // namespace

extern const PmuFamily kAmdFamily = {
    .kind = PmuKind::amd,
    .name = "amd",
    .rdpmc_fixed = false,
    .claims = amd_claims,
    .decode = amd_decode,
    .explain_absent = amd_explain_absent,
    .allocate = amd_allocate,
    .summary = amd_summary,
    .access = amd_access,
    .control_writes = amd_control_writes,
    .bind = nullptr,
    .save = amd_save,
    .check_presets = amd_check_presets,
    .program = amd_program,
    .start = amd_start,
    .stop = amd_stop,
    .overflow = amd_overflow,
    .clear_overflow = amd_clear_overflow,
};

}  // namespace pmulab
