// Intel architectural performance monitoring, versions 1-6 (SDM Vol. 3B §20.2): the
// kIntelArchFamily description (intel_pmu.h). Register values are built with
// x86/intel_regs.h only.
#include "pmu/pmu_family.h"
#include "x86/msr_addr.h"

namespace pmulab {

using regs::FixedCtrCtrl;
using regs::PerfEvtSel;
using regs::PerfGlobalCtrl;
using regs::PerfGlobalStatus;

namespace {

constexpr unsigned kMax = IntelPmuState::kMax;

// u64 with the GLOBAL_* layout (GP i at bit i, fixed i at bit 32 + i).
u64 global_bits(u32 gp, u32 fixed) { return PerfGlobalStatus().set_pmc_ovf(gp).set_fixed_ovf(fixed).raw(); }

// TOPDOWN.SLOTS on FIXED_CTR3 of a core with IA32_PERF_METRICS: the metrics count with it
// (IA32_PERF_GLOBAL_CTRL.EN_PERF_METRICS, SDM Vol. 3B "Performance Metrics").
bool metrics_with(const PmuInfo& info, u32 fixed) { return has_bit(fixed, 3) && regs::has_perf_metrics(info.caps); }

Error in_context(const Error& e, const char* what, const char* event, CounterKind kind, unsigned index) {
    StrBuf ctr;
    put_counter_name(ctr, kind, u8(index));
    return e.with_context("%s '%s' on %s", what, event, ctr.c_str());
}

// ---- decode ----

bool intel_claims(Vendor vendor, const PmuCaps& c) { return c.version >= 1 && !is_amd_family(vendor); }

void intel_decode(const CpuProbe&, const CpuDecoded&, PmuInfo* out) {
    PmuInfo& p = *out;
    const PmuCaps& c = p.caps;
    p.kind = PmuKind::intel_arch;
    p.version = c.version;
    p.gp_mask = regs::gp_counters(c);
    p.fixed_mask = regs::fixed_counters(c);
    p.gp_width = u8(regs::gp_counter_width(c));
    p.fixed_width = u8(regs::fixed_counter_width(c));
    p.global_ctrl = regs::has_global_ctrl(c);
    p.status_reset = regs::has_global_status_reset_set(c);
    p.full_width_writes = regs::has_full_width_writes(c);
    if (!p.gp_mask && !p.fixed_mask) {
        p.kind = PmuKind::none;
        format_to(p.absent, sizeof p.absent,
                  "architectural PMU version %u enumerates no counters (CPUID.0AH:EAX[15:8] = 0, no fixed "
                  "counters)",
                  c.version);
    }
}

bool intel_explain_absent(const CpuDecoded& d, PmuInfo* p) {
    if (d.id.vendor != Vendor::intel || d.id.max_leaf >= 0xA) return false;
    format_to(p->absent, sizeof p->absent,
              "no architectural performance monitoring: CPUID leaf 0AH is not implemented (maximum basic "
              "leaf 0x%X)",
              d.id.max_leaf);
    return true;
}

// ---- planning ----

Status intel_allocate(const PmuInfo& info, const Event* events, usize n, Allocation* out) {
    if (info.kind != PmuKind::intel_arch) return allocate_without_pmu(info, events, n, out);  // no counters
    const PmuCaps& c = info.caps;
    // CPUID.(23H,3):EAX: architectural events supported (bit set) - SDM Vol. 2A, leaf 23H.
    if (c.leaf_23 && (c.leaf23_subleaves & 8)) {
        for (usize i = 0; i < n; ++i) {
            const Event& e = events[i];
            if (e.arch_bit < 0 || ((c.arch_events_bitmap >> e.arch_bit) & 1)) continue;
            bool on_fixed = e.wants_fixed() && ((info.fixed_mask >> e.fixed_counter) & 1);
            if (on_fixed) continue;
            out->groups.clear();
            out->group_of.clear();
            return Error::make(Errc::unsupported,
                               "event '%s' (%s, %02X.%02X) is not available on this CPU: CPUID.23H.3:EAX[%d] = 0",
                               e.name, arch_event_title(unsigned(e.arch_bit)), unsigned(e.event_select),
                               unsigned(e.umask), e.arch_bit);
        }
    }
    return allocate_counters(events, n, c, out, info.core_type);
}

void intel_summary(StrBuf& out, const PmuInfo& p) {
    out.printf("Intel architectural PMU version %u: ", p.version);
    if (p.gp_mask) {
        regs::put_counter_set(out, p.gp_mask, "PMC");
        out.printf(" (%u bits)", p.gp_width);
    } else {
        out.put("no general-purpose counters");
    }
    out.put(", ");
    if (p.fixed_mask) {
        regs::put_counter_set(out, p.fixed_mask, "FIXED_CTR");
        out.printf(" (%u bits)", p.fixed_width);
        if (p.caps.fixed_count_quirk) out.put(" (CPUID reports fewer; Core 2 rule: 3 assumed)");
    } else {
        out.put("no fixed counters");
    }
    if (p.core_type != kCoreTypeNone)
        out.printf(", %s core", p.core_type == kCoreTypeCore   ? "P (cpu_core)"
                                : p.core_type == kCoreTypeAtom ? "E (cpu_atom)"
                                                               : "unknown");
    out.put(p.full_width_writes ? ", full-width writes" : ", 32-bit counter writes");
    out.printf(", reads with %s", p.method == CounterMethod::rdpmc ? "RDPMC" : "RDMSR");
}

CounterAccess intel_access(const PmuInfo& info, CounterKind kind, u8 index) {
    CounterAccess a;
    bool rdpmc = info.method == CounterMethod::rdpmc;
    switch (kind) {
        case CounterKind::gp:
            // RDPMC ECX = i; RDMSR IA32_PMCi returns the full counter width (SDM §20.2.1).
            a.kind = rdpmc ? CounterAccess::rdpmc : CounterAccess::rdmsr;
            a.index = rdpmc ? index : regs::pmc_msr(index);
            a.width = info.gp_width;
            break;
        case CounterKind::fixed:
            // RDPMC ECX = 4000_0000H | i (SDM Vol. 2B RDPMC); RDMSR IA32_FIXED_CTRi.
            a.kind = rdpmc ? CounterAccess::rdpmc : CounterAccess::rdmsr;
            a.index = rdpmc ? (kRdpmcFixed | index) : regs::fixed_ctr_msr(index);
            a.width = info.fixed_width;
            break;
        case CounterKind::none:
            a.kind = CounterAccess::rdtsc;
            a.width = 64;
            break;
    }
    return a;
}

u64 evtsel_value(const Event& e, bool en) {
    // Event select, UMASK, USR/OS, E, AnyThread, INV, CMASK, EQ, UMASK2 from the event;
    // INT only for a sampled or cycle-by-cycle counter (Event::pmi).
    PerfEvtSel v = e.perfevtsel();
    v.set_intr(e.pmi).set_en(en);
    return v.raw();
}

u64 fixed_ctrl_value(const Event* events, const CounterGroup& g) {
    FixedCtrCtrl v;
    for (const Assignment& as : g.events)
        if (as.kind == CounterKind::fixed) {
            v.set_group(as.index, events[as.event].fixed_ctrl_group());
            if (events[as.event].pmi) v.set_pmi(as.index);
        }
    return v.raw();
}

u32 status_reset_msr(const PmuInfo& info) {
    // One address, two names: IA32_PERF_GLOBAL_OVF_CTRL (v2/v3), _STATUS_RESET (v4+).
    return info.status_reset ? msr::IA32_PERF_GLOBAL_STATUS_RESET : msr::IA32_PERF_GLOBAL_OVF_CTRL;
}

u64 group_status_bits(const PmuCore& c) { return global_bits(c.group_gp, c.group_fixed); }

void intel_control_writes(const PmuInfo& info, const Event* events, const CounterGroup& g, PmuWriteList* start,
                          PmuWriteList* stop) {
    if (info.global_ctrl) {
        // v2+: one WRMSR starts and stops every counter of the group (SDM §20.2.2).
        PerfGlobalCtrl on(g.global_ctrl().raw());
        if (metrics_with(info, g.fixed_mask)) on.set_en_perf_metrics();
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

// ---- on the CPU ----

Status check_touch(const PmuInfo& info, const PmuTouch& t) {
    if (!(t.gp & ~info.gp_mask) && !(t.fixed & ~info.fixed_mask)) return ok_status();
    StrBuf want, have;
    regs::put_counter_set(want, t.gp, "PMC");
    want.put(' ');
    regs::put_counter_set(want, t.fixed, "FIXED_CTR");
    regs::put_counter_set(have, info.gp_mask, "PMC");
    have.put(' ');
    regs::put_counter_set(have, info.fixed_mask, "FIXED_CTR");
    return Error::make(Errc::internal, "counters %s requested, but this CPU has %s", want.c_str(), have.c_str());
}

Status save_aux(MsrLedger& ledger, u32 msr) {
    Status s = ledger.save(MsrReg::control(msr));
    if (s.ok()) return s;
    Error e = Error::make(Errc::unsupported,
                          "model-specific MSR 0x%X (programmed with the event) cannot be used on this CPU: %s", msr,
                          s.error().msg);
    e.vector = s.error().vector;
    return e;
}

// Saved in this order; restored as the ledger's phases say (pmu.h "restore"): counting
// off first (GLOBAL_CTRL = 0 always, EN cleared), counters pmulab wrote (legacy writes
// reported when inexact), PERFEVTSELx, FIXED_CTR_CTRL and aux MSRs, the overflow bits
// of the touched counters, GLOBAL_CTRL last.
Status intel_save(PmuCore& core, const PmuTouch& t) {
    const PmuInfo& info = core.info;
    MsrLedger& ledger = core.ledger;
    PMULAB_TRY(check_touch(info, t));
    const u64 en = PerfEvtSel::en_field::mask;
    if (info.global_ctrl) {
        PMULAB_TRY(ledger.save(MsrReg::global(msr::IA32_PERF_GLOBAL_CTRL).disabled_by(~u64(0)).disabled_always()));
        // Overflow flags: cleared through OVF_CTRL / STATUS_RESET; set again through
        // STATUS_SET on v4+ only (v2/v3 report them lost).
        PMULAB_TRY(ledger.save(MsrReg::status(msr::IA32_PERF_GLOBAL_STATUS, status_reset_msr(info),
                                              info.status_reset ? msr::IA32_PERF_GLOBAL_STATUS_SET : 0,
                                              global_bits(t.gp, t.fixed))));
        if (t.fixed) PMULAB_TRY(ledger.save(MsrReg::control(msr::IA32_FIXED_CTR_CTRL)));
    }
    for (unsigned i = 0; i < kMax; ++i) {
        if (!has_bit(t.gp, i)) continue;
        PMULAB_TRY(ledger.save(MsrReg::event_select(regs::perfevtsel_msr(i)).disabled_by(en)));
        // Written back through the full-width alias when enumerated; a legacy write keeps
        // only bits 31:0 sign-extended (reported when that is not the saved value).
        MsrReg pmc = MsrReg::counter(regs::pmc_msr(i)).gated_by(regs::perfevtsel_msr(i));
        if (info.full_width_writes) pmc.written_at(regs::a_pmc_msr(i));
        else pmc.legacy_write(info.gp_width, u8(i));
        PMULAB_TRY(ledger.save(pmc));
    }
    for (unsigned i = 0; i < kMax; ++i)
        if (has_bit(t.fixed, i)) PMULAB_TRY(ledger.save(MsrReg::counter(regs::fixed_ctr_msr(i))));
    // IA32_PERF_METRICS goes with SLOTS: written (reset) with it, restored after it.
    if (metrics_with(info, t.fixed)) PMULAB_TRY(ledger.save(MsrReg::counter(msr::MSR_PERF_METRICS)));
    for (unsigned k = 0; k < t.aux_count && k < PmuTouch::kMaxAux; ++k) PMULAB_TRY(save_aux(ledger, t.aux[k]));
    return ok_status();
}

// Whether `preset` can be written to GP counter i on this CPU: below 2^width with
// full-width writes; otherwise only values a 32-bit sign-extended legacy write
// produces (below 2^31, or within 2^31 of 2^width). The error says which.
Status check_gp_preset(const PmuInfo& info, u8 index, u64 preset) {
    unsigned w = info.gp_width;
    if (preset & ~regs::counter_mask(w))
        return Error::make(Errc::invalid_argument, "preset 0x%llX does not fit the %u-bit counter PMC%u",
                           (unsigned long long)preset, w, unsigned(index));
    if (!info.full_width_writes && regs::legacy_pmc_write_result(preset, w) != preset)
        return Error::make(Errc::unsupported,
                           "preset 0x%llX cannot be written to PMC%u: without full-width writes (%s) a counter "
                           "write is 32 bits sign-extended, so a preset must be below 0x80000000 or at least 0x%llX",
                           (unsigned long long)preset, unsigned(index),
                           info.caps.perf_caps_read ? "IA32_PERF_CAPABILITIES.FW_WRITE[13] = 0"
                                                    : "no IA32_PERF_CAPABILITIES",
                           (unsigned long long)(regs::counter_mask(w) - 0x7FFFFFFFull));
    return ok_status();
}

Status intel_check_presets(const PmuCore& core, const Event*, const CounterGroup& g, const u64* presets) {
    const PmuInfo& info = core.info;
    u64 fmask = regs::counter_mask(info.fixed_width);
    for (usize k = 0; k < g.events.size(); ++k) {
        const Assignment& as = g.events[k];
        u64 p = presets ? presets[k] : 0;
        if (as.kind == CounterKind::gp) {
            PMULAB_TRY(check_gp_preset(info, as.index, p));
        } else if (as.kind == CounterKind::fixed && (p & ~fmask)) {
            return Error::make(Errc::invalid_argument, "preset 0x%llX does not fit the %u-bit counter FIXED_CTR%u",
                               (unsigned long long)p, info.fixed_width, unsigned(as.index));
        }
    }
    return ok_status();
}

// One GP counter of the group: EN clear, preset, aux MSRs, event select.
Status program_gp(PmuCore& core, const Event& e, unsigned i, u64 preset) {
    const u64 en = PerfEvtSel::en_field::mask;
    u64 sel = core.ledger.shadow(regs::perfevtsel_msr(i));
    if (sel & en) PMULAB_TRY(core.write(regs::perfevtsel_msr(i), sel & ~en));
    // Full-width alias when enumerated; else the legacy address (the value is within
    // the legacy rules, checked before).
    PMULAB_TRY(core.write(core.info.full_width_writes ? regs::a_pmc_msr(i) : regs::pmc_msr(i), preset));
    for (unsigned a = 0; a < e.intel.aux_count; ++a) PMULAB_TRY(core.write(e.intel.aux[a].msr, e.intel.aux[a].value));
    core.intel.group_evtsel[i] = evtsel_value(e, false);
    // v2+: EN set now, counting gated by GLOBAL_CTRL; v1: EN is the start.
    return core.write(regs::perfevtsel_msr(i), evtsel_value(e, core.info.global_ctrl));
}

// The fixed counters: fields cleared, presets, fields set (only this group's).
Status program_fixed(PmuCore& core, const Event* events, const CounterGroup& g, const u64* presets) {
    u64 group_fields = 0;
    for (unsigned i = 0; i < kMax; ++i)
        if (has_bit(g.fixed_mask, i)) group_fields |= FixedCtrCtrl::group_mask(i);
    u64 ctrl = core.ledger.shadow(msr::IA32_FIXED_CTR_CTRL);
    if (ctrl & group_fields) PMULAB_TRY(core.write(msr::IA32_FIXED_CTR_CTRL, ctrl & ~group_fields));
    for (usize k = 0; k < g.events.size(); ++k) {
        const Assignment& as = g.events[k];
        if (as.kind != CounterKind::fixed) continue;
        Status st = core.write(regs::fixed_ctr_msr(as.index), presets ? presets[k] : 0);
        if (!st.ok()) return in_context(st.error(), "programming", events[as.event].name, as.kind, as.index);
    }
    // SLOTS and PERF_METRICS are reset together (perf's topdown.txt; SDM "Performance Metrics").
    if (metrics_with(core.info, g.fixed_mask)) PMULAB_TRY(core.write(msr::MSR_PERF_METRICS, 0));
    u64 want = fixed_ctrl_value(events, g);
    if (want != core.ledger.shadow(msr::IA32_FIXED_CTR_CTRL)) PMULAB_TRY(core.write(msr::IA32_FIXED_CTR_CTRL, want));
    return ok_status();
}

Status intel_program(PmuCore& core, const Event* events, const CounterGroup& g, const u64* presets) {
    const PmuInfo& info = core.info;
    core.intel = IntelPmuState();
    core.intel.group_global = g.global_ctrl().raw();
    if (metrics_with(info, g.fixed_mask))
        core.intel.group_global = PerfGlobalCtrl(core.intel.group_global).set_en_perf_metrics().raw();
    // 1. Counting off: GLOBAL_CTRL (v2+).
    if (info.global_ctrl && core.ledger.shadow(msr::IA32_PERF_GLOBAL_CTRL) != 0)
        PMULAB_TRY(core.write(msr::IA32_PERF_GLOBAL_CTRL, 0));
    // 2. GP counters of earlier groups (or the firmware's) that this group does not use: released.
    for (unsigned i = 0; i < kMax; ++i) {
        if (!has_bit(core.touched_gp, i) || has_bit(g.gp_mask, i) || core.ledger.shadow(regs::perfevtsel_msr(i)) == 0)
            continue;
        PMULAB_TRY(core.write(regs::perfevtsel_msr(i), 0));
    }
    // 3. The group's GP counters.
    for (usize k = 0; k < g.events.size(); ++k) {
        const Assignment& as = g.events[k];
        if (as.kind != CounterKind::gp) continue;
        Status st = program_gp(core, events[as.event], as.index, presets ? presets[k] : 0);
        if (!st.ok()) return in_context(st.error(), "programming", events[as.event].name, as.kind, as.index);
    }
    // 4. The fixed counters.
    if (core.touched_fixed) PMULAB_TRY(program_fixed(core, events, g, presets));
    // 5. v2+: the group's overflow flags cleared.
    if (info.global_ctrl && group_status_bits(core))
        PMULAB_TRY(core.write(status_reset_msr(info), group_status_bits(core)));
    return ok_status();
}

Status intel_start(PmuCore& core) {
    if (core.info.global_ctrl) return core.write(msr::IA32_PERF_GLOBAL_CTRL, core.intel.group_global);
    for (unsigned i = 0; i < kMax; ++i)
        if (has_bit(core.group_gp, i))
            PMULAB_TRY(core.write(regs::perfevtsel_msr(i), core.intel.group_evtsel[i] | PerfEvtSel::en_field::mask));
    return ok_status();
}

Status intel_stop(PmuCore& core) {
    if (core.info.global_ctrl) return core.write(msr::IA32_PERF_GLOBAL_CTRL, 0);
    for (unsigned i = 0; i < kMax; ++i)
        if (has_bit(core.group_gp, i)) PMULAB_TRY(core.write(regs::perfevtsel_msr(i), core.intel.group_evtsel[i]));
    return ok_status();
}

Result<OverflowState> intel_overflow(PmuCore& core) {
    OverflowState o;
    if (!core.info.global_ctrl) return o;  // v1: no IA32_PERF_GLOBAL_STATUS
    Result<u64> r = core.hw->rdmsr(msr::IA32_PERF_GLOBAL_STATUS);
    if (!r.ok()) return r.error();
    PerfGlobalStatus s(r.value());
    o.known = true;
    o.gp = u32(s.pmc_ovf()) & core.group_gp;
    o.fixed = u32(s.fixed_ovf()) & core.group_fixed;
    return o;
}

Status intel_clear_overflow(PmuCore& core) {
    if (!core.info.global_ctrl || !group_status_bits(core)) return ok_status();
    return core.write(status_reset_msr(core.info), group_status_bits(core));
}

}  // namespace

extern const PmuFamily kIntelArchFamily = {
    .kind = PmuKind::intel_arch,
    .name = "intel_arch",
    .rdpmc_fixed = true,
    .claims = intel_claims,
    .decode = intel_decode,
    .explain_absent = intel_explain_absent,
    .allocate = intel_allocate,
    .summary = intel_summary,
    .access = intel_access,
    .control_writes = intel_control_writes,
    .bind = nullptr,
    .save = intel_save,
    .check_presets = intel_check_presets,
    .program = intel_program,
    .start = intel_start,
    .stop = intel_stop,
    .overflow = intel_overflow,
    .clear_overflow = intel_clear_overflow,
};

}  // namespace pmulab
