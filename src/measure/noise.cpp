// Noise provenance: the probe, and the guard around a job (see noise.h).
#include "measure/noise.h"

#include "base/fmt.h"
#include "x86/amd_regs.h"
#include "x86/intel_regs.h"
#include "x86/prefetch.h"
#include "x86/prefetch_regs.h"

namespace pmulab {

namespace {

void note(char* dst, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
void note(char* dst, const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vformat_to(dst, kNoiseNote, fmt, ap);
    va_end(ap);
}

void probe_smi(Hw& hw, const CpuIdentity& id, const PmuInfo& info, NoiseCaps* c) {
    if (is_amd_family(id.vendor) && id.family >= 0x17) {
        // PMCx02B, "SMIs received" (Zen PPRs; Linux amdzen1-5 ls_smi_rx) on a free GP counter.
        if (info.kind == PmuKind::none || !info.gp_mask) {
            note(c->smi_absent, "AMD counts SMIs with PMCx02B (ls_smi_rx) on a GP counter, and there is none: %s",
                 info.absent[0] ? info.absent : "no core performance counters");
            return;
        }
        c->smi_pmc = true;
        c->smi_gp = info.gp_mask;
        c->smi_ext = info.caps.amd_perfctr_core || info.caps.amd_perfmon_v2;
        c->smi_v2 = info.caps.amd_perfmon_v2;
        return;
    }
    if (id.vendor != Vendor::intel) {
        note(c->smi_absent, "not an Intel CPU: MSR_SMI_COUNT (34H) is Intel's");
        return;
    }
    if (id.hypervisor) {
        note(c->smi_absent, "a hypervisor is present (CPUID.01H:ECX[31]): MSR_SMI_COUNT (34H) does not count the "
                            "host's SMIs there (QEMU TCG reads 0 for it)");
        return;
    }
    Result<u64> r = hw.rdmsr(msr::MSR_SMI_COUNT);
    if (r.ok()) c->smi = true;
    else note(c->smi_absent, "%s (this model has no SMI counter)", r.error().msg);
}

void probe_aperf(Hw& hw, const CpuIdentity& id, NoiseCaps* c) {
    if (id.max_leaf < 6) {
        note(c->aperf_absent, "no CPUID leaf 06H (maximum leaf %xH): APERF/MPERF not enumerated", id.max_leaf);
        return;
    }
    if (!(hw.cpuid(6, 0).ecx & 1)) {
        note(c->aperf_absent, "CPUID.06H:ECX[0] = 0: no APERF/MPERF");
        return;
    }
    bool amd = is_amd_family(id.vendor);
    // AMD: the read-only aliases where CPUID 8000_0007H:EDX[10] (EffFreqRO) says they exist.
    bool ro = amd && id.max_ext_leaf >= 0x80000007u && ((hw.cpuid(0x80000007u, 0).edx >> 10) & 1);
    c->aperf_msr = regs::amd::fixed_like_msr(regs::amd::kFixedAperf, ro);
    c->mperf_msr = regs::amd::fixed_like_msr(regs::amd::kFixedMperf, ro);
    Result<u64> a = hw.rdmsr(c->aperf_msr);
    Result<u64> m = hw.rdmsr(c->mperf_msr);
    if (a.ok() && m.ok()) c->aperf_mperf = true;
    else note(c->aperf_absent, "%s", a.ok() ? m.error().msg : a.error().msg);
}

void probe_freeze(const CpuIdentity& id, const CpuProbe& pr, NoiseCaps* c) {
    if (id.vendor != Vendor::intel) {
        note(c->freeze_absent, "not an Intel CPU: FREEZE_WHILE_SMM is Intel's IA32_DEBUGCTL[14]");
    } else if (!id.pdcm) {
        note(c->freeze_absent, "CPUID.01H:ECX.PDCM[15] = 0: no IA32_PERF_CAPABILITIES to enumerate FREEZE_WHILE_SMM");
    } else if (!pr.perf_caps.ok) {
        note(c->freeze_absent, "IA32_PERF_CAPABILITIES unreadable: %s", pr.perf_caps.error.msg);
    } else if (!regs::PerfCapabilities(pr.perf_caps.value).smm_frz()) {
        note(c->freeze_absent, "IA32_PERF_CAPABILITIES[12] = 0: FREEZE_WHILE_SMM not supported");
    } else {
        c->freeze = true;
    }
}

// serialize_choice, then a trial of DE_CFG[1] where it must be set: a write that faults or
// does not stick (QEMU TCG drops it) means CPUID.
void probe_serialize(Hw& hw, const CpuProbe& pr, const PmuInfo& info, NoiseCaps* c) {
    c->serialize = serialize_choice(info);
    c->de_cfg = info.de_cfg;
    if (c->serialize == SerializeWith::cpuid) {
        if (pr.de_cfg.faulted())
            note(c->serialize_note,
                 "DE_CFG (C001_1029H) unreadable (%s): LFENCE may not be dispatch-serialising, "
                 "CPUID serialises",
                 pr.de_cfg.error.msg);
        else
            note(c->serialize_note, "DE_CFG (C001_1029H) not read (AMD family below 10H): LFENCE may not be "
                                    "dispatch-serialising, CPUID serialises");
        return;
    }
    if (c->serialize != SerializeWith::lfence_after_de_cfg) return;
    u64 want = de_cfg_for_measurement(info.de_cfg);
    Status w = hw.wrmsr(msr::AMD_DE_CFG, want);
    Result<u64> back = w.ok() ? hw.rdmsr(msr::AMD_DE_CFG) : Result<u64>(w.error());
    if (w.ok()) (void)hw.wrmsr(msr::AMD_DE_CFG, info.de_cfg);
    if (back.ok() && regs::amd::DeCfg(back.value()).lfence_serializing()) {
        note(c->serialize_note,
             "DE_CFG (C001_1029H)[1] was clear (0x%llx): pmulab sets it for each measurement "
             "and restores it",
             (unsigned long long)info.de_cfg);
        return;
    }
    c->serialize = SerializeWith::cpuid;
    if (!back.ok())
        note(c->serialize_note, "DE_CFG (C001_1029H)[1] is clear and cannot be set (%s): CPUID serialises",
             back.error().msg);
    else
        note(c->serialize_note,
             "DE_CFG (C001_1029H)[1] is clear and a write does not set it (reads back 0x%llx): "
             "CPUID serialises",
             (unsigned long long)back.value());
}

}  // namespace

void noise_probe(Hw& hw, NoiseCaps* out) {
    *out = NoiseCaps();
    // CPUID, PERF_CAPABILITIES and DE_CFG; no RDPMC (the plans have probed it already).
    CpuProbe pr;
    pmu_probe(hw, &pr, ProbeRdpmc::skip);
    CpuDecoded d = decode_cpuid(pr.cpuid);
    if (is_amd_family(d.id.vendor) && amd_reads_de_cfg(d.id.family)) pr.de_cfg.set(hw.rdmsr(msr::AMD_DE_CFG));
    PmuInfo info;
    pmu_decode(pr, &info);
    probe_smi(hw, d.id, info, out);
    probe_aperf(hw, d.id, out);
    probe_freeze(d.id, pr, out);
    probe_serialize(hw, pr, info, out);
    out->probed = true;
}

SerializeMode effective_serialize(SerializeMode requested, const NoiseCaps& caps) {
    if (requested == SerializeMode::cpuid || caps.serialize == SerializeWith::cpuid) return SerializeMode::cpuid;
    return SerializeMode::lfence;
}

const char* freeze_smm_name(FreezeSmm f) {
    switch (f) {
        case FreezeSmm::unsupported: return "unsupported";
        case FreezeSmm::set: return "set";
        case FreezeSmm::already_set: return "already set";
        case FreezeSmm::failed: return "failed";
    }
    return "unsupported";
}

// AMD: PMCx02B (ls_smi_rx) on the highest GP counter the group leaves free, from 0, with
// USR and OS (SMIs arrive whatever the CPL); on PerfMonV2 its PerfCntrGlobalCtl bit set too
// (the group's own GLOBAL_CTL writes keep it: pmu_plan.cpp). The ledger restores all three,
// the global enable last.
void NoiseGuard::begin_smi_pmc(const NoiseCaps& caps, u32 group_gp, NoiseRecord* rec) {
    int i = smi_counter_for(caps.smi_gp, group_gp);
    if (i < 0) {
        note(rec->smi_note,
             "the group's events take all %u GP counters: none is free for PMCx02B (ls_smi_rx); measure fewer "
             "events for the SMI count",
             popcount64(caps.smi_gp));
        return;
    }
    u32 ctl = regs::amd::ctl_msr(unsigned(i), caps.smi_ext), ctr = regs::amd::ctr_msr(unsigned(i), caps.smi_ext);
    constexpr u32 kGlobal = msr::AMD_PERF_CNTR_GLOBAL_CTL;
    // As the PMU session does (pmu/amd_pmu.cpp): the global enable off while the select and
    // the counter change, then only this counter's bit; the restore puts it back last.
    Status s = caps.smi_v2 ? smi_ledger_.save(MsrReg::global(kGlobal).disabled_by(~u64(0))) : ok_status();
    if (s.ok()) s = smi_ledger_.save(MsrReg::event_select(ctl).disabled_by(regs::amd::PerfEvtSel::en_field::mask));
    if (s.ok()) s = smi_ledger_.save(MsrReg::counter(ctr).gated_by(ctl));
    if (s.ok()) {
        smi_ledger_.arm();
        if (caps.smi_v2) s = smi_ledger_.write(kGlobal, 0);
    }
    if (s.ok()) s = smi_ledger_.write(ctl, 0);
    if (s.ok()) s = smi_ledger_.write(ctr, 0);
    if (s.ok())
        s = smi_ledger_.write(ctl, regs::amd::PerfEvtSel().set_event_select(0x2B).set_usr().set_os().set_en().raw());
    if (s.ok() && caps.smi_v2) s = smi_ledger_.write(kGlobal, regs::amd::GlobalCtl().set_counter(unsigned(i)).raw());
    if (!s.ok()) {
        note(rec->smi_note, "PMCx02B (ls_smi_rx) on PMC%d cannot be programmed: %s", i, s.error().msg);
        return;
    }
    rec->smi_known = true;
    rec->smi_pmc = i;
    smi_msr_ = ctr;
    smi0_ = 0;
}

Status NoiseGuard::begin(Hw& hw, const NoiseCaps& caps, SerializeMode mode, NoiseRecord* rec, u32 group_gp) {
    hw_ = &hw;
    caps_ = &caps;
    *rec = NoiseRecord();
    rec->caps = &caps;
    ledger_.bind(&hw);
    ledger_.begin();
    smi_ledger_.bind(&hw);
    smi_ledger_.begin();
    // DE_CFG[1] first: without it the LFENCE code would not serialise.
    rec->serialize = mode == SerializeMode::cpuid ? SerializeWith::cpuid : SerializeWith::lfence;
    if (mode == SerializeMode::lfence && caps.serialize == SerializeWith::lfence_after_de_cfg) {
        MsrReg de = MsrReg::control(msr::AMD_DE_CFG);
        Status s = ledger_.save(de);
        if (s.ok()) {
            ledger_.arm();
            u64 now = ledger_.saved_value(msr::AMD_DE_CFG);
            if (!regs::amd::DeCfg(now).lfence_serializing())
                s = ledger_.write(msr::AMD_DE_CFG, de_cfg_for_measurement(now));
        }
        if (!s.ok()) {
            (void)ledger_.restore();
            return Error::make(s.error().code,
                               "DE_CFG (C001_1029H)[1] (LFENCE dispatch-serialising) cannot be set: %s; measure with "
                               "--serialize cpuid",
                               s.error().msg);
        }
        rec->serialize = SerializeWith::lfence_after_de_cfg;
    }
    if (caps.freeze) {
        MsrReg dc = MsrReg::control(msr::IA32_DEBUGCTL);
        Status s = ledger_.save(dc);
        if (s.ok()) {
            ledger_.arm();
            regs::DebugCtl now(ledger_.saved_value(msr::IA32_DEBUGCTL));
            if (now.freeze_while_smm()) {
                rec->freeze = FreezeSmm::already_set;
            } else {
                s = ledger_.write(msr::IA32_DEBUGCTL, regs::DebugCtl(now).set_freeze_while_smm(true).raw());
                Result<u64> back = s.ok() ? hw.rdmsr(msr::IA32_DEBUGCTL) : Result<u64>(s.error());
                if (back.ok() && regs::DebugCtl(back.value()).freeze_while_smm()) rec->freeze = FreezeSmm::set;
                else if (back.ok())
                    s = Error::make(Errc::fault, "IA32_DEBUGCTL reads back 0x%llx", (unsigned long long)back.value());
                else s = back.error();
            }
        }
        if (!s.ok()) {
            rec->freeze = FreezeSmm::failed;
            note(rec->note, "FREEZE_WHILE_SMM not set: %s", s.error().msg);
        }
    }
    smi_msr_ = msr::MSR_SMI_COUNT;
    if (caps.smi) {
        Result<u64> r = hw.rdmsr(msr::MSR_SMI_COUNT);
        rec->smi_known = r.ok();
        smi0_ = r.ok() ? r.value() : 0;
    }
    if (caps.smi_pmc) begin_smi_pmc(caps, group_gp, rec);
    if (caps.aperf_mperf) {
        Result<u64> a = hw.rdmsr(caps.aperf_msr);
        Result<u64> m = hw.rdmsr(caps.mperf_msr);
        rec->aperf_known = a.ok() && m.ok();
        aperf0_ = a.ok() ? a.value() : 0;
        mperf0_ = m.ok() ? m.value() : 0;
    }
    tsc0_ = hw.rdtsc();
    return ok_status();
}

namespace {

void plan_of(const PrefetchSet& set, PrefetchPlan* plan) {
    *plan = PrefetchPlan();
    StrBuf names;
    for (usize i = 0; i < set.count && i < PrefetchPlan::kMsrs; ++i) {
        const PrefetchMsr& m = set.msrs[i];
        plan->msr[i] = m.msr;
        plan->bits[i] = m.off_mask();
        for (usize b = 0; b < m.count; ++b) names.printf("%s%s", names.size() ? "," : "", m.bits[b].name);
    }
    plan->count = u8(set.count);
    format_to(plan->family, sizeof plan->family, "%s", set.family);
    format_to(plan->names, sizeof plan->names, "%s", names.c_str());
}

// The measuring CPU's plan: the E cores' where the part is hybrid and this CPU says it is
// one (CPUID.1AH:EAX[31:24] = 20H, SDM Vol. 2A CPUID "Hybrid Information Sub-leaf").
u8 plan_index(Hw& hw, const MeasureConfig& cfg) {
    if (!cfg.prefetch[1].count || hw.cpuid(0, 0).eax < 0x1A) return 0;
    return u8(hw.cpuid(0x1A, 0).eax >> 24) == kCoreTypeAtom ? 1 : 0;
}

}  // namespace

Status choose_prefetch_control(Hw& hw, MeasureConfig* cfg) {
    CpuidSnapshot snap;
    capture_cpuid(hw, &snap);
    CpuIdentity id = decode_cpuid(snap).id;
    PrefetchControl pc = prefetch_control(id);
    if (!pc.ok())
        return Error::make(Errc::unsupported, "--prefetchers off: %s (%s family 0x%x model 0x%x); nothing was run",
                           pc.why_not, id.vendor_string, id.family, id.model);
    plan_of(pc.set, &cfg->prefetch[0]);
    plan_of(pc.atom, &cfg->prefetch[1]);
    return ok_status();
}

Status PrefetchGuard::begin(Hw& hw, const MeasureConfig& cfg, u8* plan_taken) {
    if (!cfg.prefetch[0].count) return ok_status();
    u8 which = plan_index(hw, cfg);
    *plan_taken = which;
    const PrefetchPlan& p = cfg.prefetch[which];
    ledger_.bind(&hw);
    ledger_.begin();
    for (u8 i = 0; i < p.count; ++i) {
        // 1A4H is put back last (global phase): on Darkmont its bit 12 holds the dynamic
        // prefetch control off until 1320H/1321H are back (357930 §2.5).
        bool last = p.msr[i] == regs::kMsrMiscFeatureControl && p.count > 1;
        Status s = ledger_.save(last ? MsrReg::global(p.msr[i]) : MsrReg::control(p.msr[i]));
        if (!s.ok()) {
            (void)ledger_.restore();
            return Error::make(Errc::unsupported, "--prefetchers off: MSR 0x%x cannot be read: %s", p.msr[i],
                               s.error().msg);
        }
    }
    ledger_.arm();
    for (u8 i = 0; i < p.count; ++i) {
        u64 now = ledger_.saved_value(p.msr[i]);
        Status s = (now & p.bits[i]) != p.bits[i] ? ledger_.write(p.msr[i], now | p.bits[i]) : ok_status();
        Result<u64> back = s.ok() ? hw.rdmsr(p.msr[i]) : Result<u64>(s.error());
        if (!back.ok() || (back.value() & p.bits[i]) != p.bits[i]) return fail(p.msr[i], p.bits[i], back);
    }
    return ok_status();
}

Status PrefetchGuard::fail(u32 msr, u64 bits, const Result<u64>& back) {
    (void)ledger_.restore();
    if (!back.ok())
        return Error::make(Errc::unsupported, "--prefetchers off: MSR 0x%x cannot be written: %s", msr,
                           back.error().msg);
    return Error::make(Errc::unsupported, "--prefetchers off: MSR 0x%x reads back 0x%llx, not with bits 0x%llx set",
                       msr, (unsigned long long)back.value(), (unsigned long long)bits);
}

Status PrefetchGuard::end() { return ledger_.restore(); }

Status NoiseGuard::end(NoiseRecord* rec) {
    Hw& hw = *hw_;
    u64 tsc1 = hw.rdtsc();
    rec->tsc_delta = tsc1 - tsc0_;
    if (rec->aperf_known) {
        Result<u64> a = hw.rdmsr(caps_->aperf_msr);
        Result<u64> m = hw.rdmsr(caps_->mperf_msr);
        rec->aperf_known = a.ok() && m.ok();
        if (rec->aperf_known) {
            rec->aperf_delta = a.value() - aperf0_;
            rec->mperf_delta = m.value() - mperf0_;
        }
    }
    if (rec->smi_known) {
        // MSR_SMI_COUNT[31:0], or AMD's PERF_CTR (48 bits, APM §13.2.1) from 0.
        Result<u64> r = hw.rdmsr(smi_msr_);
        rec->smi_known = r.ok();
        if (r.ok() && rec->smi_pmc >= 0) rec->smi_delta = (r.value() - smi0_) & low_mask(regs::amd::kCounterWidth);
        else if (r.ok()) rec->smi_delta = u64(u32(r.value() - smi0_));
        else note(rec->note, "the SMI count could not be read at the end: %s", r.error().msg);
    }
    Status smi = smi_ledger_.restore();
    Status rest = ledger_.restore();
    return smi.ok() ? rest : smi;
}

}  // namespace pmulab
