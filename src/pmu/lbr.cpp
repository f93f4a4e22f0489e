// Last branch records (lbr.h): the model table, detection, start/stop/read, save/restore.
#include "pmu/lbr.h"

#include "base/fmt.h"
#include "x86/intel_regs.h"
#include "x86/lbr_regs.h"

namespace pmulab {

namespace {

// Legacy LBR by family 06H display model, as Linux's intel_pmu_lbr_init_{core,atom,slm,
// nhm,snb,hsw,knl,skl} and the SDM's per-model LBR sections list them.
struct LbrModel {
    u8 model;
    u8 depth;
    bool nhm;     // FROM/TO at 680H/6C0H (else 40H/60H)
    bool info;    // MSR_LBR_INFO_x at DC0H
    bool select;  // MSR_LBR_SELECT
    const char* name;
};
constexpr LbrModel kLbrModels[] = {
    {0x0F, 4, false, false, false, "Core 2"},        {0x16, 4, false, false, false, "Core 2"},
    {0x17, 4, false, false, false, "Core 2"},        {0x1D, 4, false, false, false, "Core 2"},
    {0x1C, 8, false, false, false, "Atom"},          {0x26, 8, false, false, false, "Atom"},
    {0x27, 8, false, false, false, "Atom"},          {0x35, 8, false, false, false, "Atom"},
    {0x36, 8, false, false, false, "Atom"},          {0x37, 8, false, false, true, "Silvermont"},
    {0x4A, 8, false, false, true, "Silvermont"},     {0x4C, 8, false, false, true, "Airmont"},
    {0x4D, 8, false, false, true, "Silvermont"},     {0x5A, 8, false, false, true, "Silvermont"},
    {0x5D, 8, false, false, true, "Silvermont"},     {0x1A, 16, true, false, true, "Nehalem"},
    {0x1E, 16, true, false, true, "Nehalem"},        {0x1F, 16, true, false, true, "Nehalem"},
    {0x2E, 16, true, false, true, "Nehalem"},        {0x25, 16, true, false, true, "Westmere"},
    {0x2C, 16, true, false, true, "Westmere"},       {0x2F, 16, true, false, true, "Westmere"},
    {0x2A, 16, true, false, true, "Sandy Bridge"},   {0x2D, 16, true, false, true, "Sandy Bridge"},
    {0x3A, 16, true, false, true, "Ivy Bridge"},     {0x3E, 16, true, false, true, "Ivy Bridge"},
    {0x3C, 16, true, false, true, "Haswell"},        {0x3F, 16, true, false, true, "Haswell"},
    {0x45, 16, true, false, true, "Haswell"},        {0x46, 16, true, false, true, "Haswell"},
    {0x3D, 16, true, false, true, "Broadwell"},      {0x47, 16, true, false, true, "Broadwell"},
    {0x4F, 16, true, false, true, "Broadwell"},      {0x56, 16, true, false, true, "Broadwell"},
    {0x57, 8, true, false, true, "Knights Landing"}, {0x85, 8, true, false, true, "Knights Mill"},
    {0x4E, 32, true, true, true, "Skylake"},         {0x5E, 32, true, true, true, "Skylake"},
    {0x55, 32, true, true, true, "Skylake-SP"},      {0x8E, 32, true, true, true, "Kaby Lake"},
    {0x9E, 32, true, true, true, "Coffee Lake"},     {0xA5, 32, true, true, true, "Comet Lake"},
    {0xA6, 32, true, true, true, "Comet Lake"},      {0x66, 32, true, true, true, "Cannon Lake"},
    {0x7D, 32, true, true, true, "Ice Lake"},        {0x7E, 32, true, true, true, "Ice Lake"},
    {0x6A, 32, true, true, true, "Ice Lake-SP"},     {0x6C, 32, true, true, true, "Ice Lake-SP"},
    {0x8C, 32, true, true, true, "Tiger Lake"},      {0x8D, 32, true, true, true, "Tiger Lake"},
    {0xA7, 32, true, true, true, "Rocket Lake"},     {0x5C, 32, true, true, true, "Goldmont"},
    {0x5F, 32, true, true, true, "Goldmont"},        {0x7A, 32, true, true, true, "Goldmont Plus"},
    {0x86, 32, true, true, true, "Tremont"},         {0x96, 32, true, true, true, "Tremont"},
    {0x9C, 32, true, true, true, "Tremont"},
};

Status rd(Hw& hw, u32 m, u64* v) {
    Result<u64> r = hw.rdmsr(m);
    if (!r.ok()) return r.error();
    *v = r.value();
    return ok_status();
}

i64 sext(u64 v, unsigned top) { return i64(v << (63 - top)) >> (63 - top); }

bool legacy_from_table(const CpuIdentity& id, const PmuInfo& pmu, LbrInfo* l) {
    for (const LbrModel& m : kLbrModels) {
        if (m.model != id.model) continue;
        if (!pmu.caps.perf_caps_read) {
            format_to(l->absent, sizeof l->absent,
                      "%s has legacy LBR, but its record format is unknown: IA32_PERF_CAPABILITIES is absent "
                      "(CPUID.01H:ECX.PDCM = 0%s)",
                      m.name, id.hypervisor ? ", a hypervisor without LBR support" : "");
            return true;
        }
        u8 fmt = u8(regs::PerfCapabilities(pmu.caps.perf_caps).lbr_fmt());
        if (fmt == 0 || fmt > 7) {  // format 0 holds 32-bit addresses: not pmulab's 64-bit code
            format_to(l->absent, sizeof l->absent, "%s reports LBR format %u (IA32_PERF_CAPABILITIES[5:0])%s", m.name,
                      unsigned(fmt), fmt ? ", which pmulab does not know" : ": 32-bit records, no 64-bit addresses");
            return true;
        }
        l->kind = LbrKind::legacy;
        l->depth = m.depth;
        l->from = m.nhm ? msr::MSR_LBR_NHM_FROM : msr::MSR_LBR_CORE_FROM;
        l->to = m.nhm ? msr::MSR_LBR_NHM_TO : msr::MSR_LBR_CORE_TO;
        l->info = m.info && (fmt == 5 || fmt == 7) ? msr::MSR_LBR_INFO_0 : 0;
        l->format = fmt;
        l->select = m.select;
        l->cycles = fmt == 5 || fmt == 6 || fmt == 7;
        l->mispredict = fmt >= 3;
        l->freeze = pmu.version >= 2;
        format_to(l->model, sizeof l->model, "%s, format %u", m.name, unsigned(fmt));
        return true;
    }
    return false;
}

void arch_from_leaf(const CpuidSnapshot& s, const PmuInfo& pmu, LbrInfo* l) {
    CpuidRegs c = s.get(0x1C);
    u32 mask = u32(regs::Cpuid1cEax(c.eax).depth_mask());
    for (u32 n = 0; n < 8; ++n)
        if ((mask >> n) & 1) l->depth = 8 * (n + 1);
    if (!l->depth) {
        format_to(l->absent, sizeof l->absent, "CPUID.1CH:EAX[7:0] = 0 enumerates no architectural LBR depth");
        return;
    }
    regs::Cpuid1cEcx ecx(c.ecx);
    l->kind = LbrKind::arch;
    l->cycles = ecx.timed_lbr();
    l->mispredict = ecx.mispred();
    l->freeze = pmu.version >= 2;
    format_to(l->model, sizeof l->model, "architectural");
}

}  // namespace

const char* lbr_kind_name(LbrKind k) {
    switch (k) {
        case LbrKind::none: return "none";
        case LbrKind::legacy: return "legacy";
        case LbrKind::arch: return "architectural";
        case LbrKind::amd: return "amd_lbr_v2";
    }
    return "none";
}

void lbr_decode(const CpuProbe& probe, const PmuInfo& pmu, LbrInfo* l) {
    *l = LbrInfo();
    const CpuidSnapshot& s = probe.cpuid;
    CpuDecoded d = decode_cpuid(s);
    const CpuIdentity& id = d.id;
    if (pmu.kind == PmuKind::none) {
        str_copy(l->absent, sizeof l->absent, pmu.absent);  // e.g. "no architectural performance monitoring: ..."
        return;
    }
    if (id.vendor == Vendor::intel) {
        bool arch = id.max_leaf >= 7 && ((s.get(7).edx >> 19) & 1);  // CPUID.(07H,0):EDX[19] Arch LBR
        if (arch && id.max_leaf >= 0x1C) return arch_from_leaf(s, pmu, l);
        if (id.family == 6 && legacy_from_table(id, pmu, l)) return;
        format_to(l->absent, sizeof l->absent,
                  "family %02XH model %02XH: no architectural LBR (CPUID.(07H,0):EDX[19] = 0) and not in pmulab's "
                  "table of legacy LBR models",
                  id.family, id.model);
        return;
    }
    if (id.vendor == Vendor::amd && pmu.caps.amd_lbr_v2 && pmu.caps.amd_lbr_stack_size) {
        l->kind = LbrKind::amd;
        l->depth = pmu.caps.amd_lbr_stack_size;
        if (l->depth > kLbrMaxDepth) l->depth = kLbrMaxDepth;
        l->mispredict = true;
        l->freeze = pmu.caps.amd_lbr_pmc_freeze;
        format_to(l->model, sizeof l->model, "LbrExtV2");
        return;
    }
    if (id.vendor == Vendor::amd) {
        format_to(l->absent, sizeof l->absent,
                  "no LbrExtV2 (CPUID 8000_0022H EAX[1] = 0): AMD parts before Zen 4 have no LBR stack pmulab reads");
        return;
    }
    format_to(l->absent, sizeof l->absent, "%s: no LBR pmulab knows", id.vendor_string);
}

Status lbr_save(Hw& hw, const LbrInfo& l, LbrSaved* s) {
    *s = LbrSaved();
    if (l.kind != LbrKind::amd || l.freeze) PMULAB_TRY(rd(hw, msr::IA32_DEBUGCTL, &s->debugctl));
    switch (l.kind) {
        case LbrKind::legacy:
            if (l.select) PMULAB_TRY(rd(hw, msr::MSR_LBR_SELECT, &s->select));
            break;
        case LbrKind::arch:
            PMULAB_TRY(rd(hw, msr::IA32_LBR_CTL, &s->ctl));
            PMULAB_TRY(rd(hw, msr::IA32_LBR_DEPTH, &s->depth));
            break;
        case LbrKind::amd:
            PMULAB_TRY(rd(hw, msr::AMD_LBR_SELECT, &s->select));
            PMULAB_TRY(rd(hw, msr::AMD_DBG_EXTN_CFG, &s->ctl));
            break;
        case LbrKind::none: return Error::make(Errc::unsupported, "no LBR on this CPU");
    }
    return ok_status();
}

namespace {

// Empties the stack so that a read sees only what the next run records.
Status lbr_clear(Hw& hw, const LbrInfo& l) {
    if (l.kind == LbrKind::arch) return hw.wrmsr(msr::IA32_LBR_DEPTH, l.depth);  // a depth write clears it
    for (u32 i = 0; i < l.depth; ++i) {
        if (l.kind == LbrKind::amd) {
            PMULAB_TRY(hw.wrmsr(msr::AMD_LBR_FROM_0 + 2 * i, 0));
            PMULAB_TRY(hw.wrmsr(msr::AMD_LBR_FROM_0 + 2 * i + 1, 0));
            continue;
        }
        PMULAB_TRY(hw.wrmsr(l.from + i, 0));
        PMULAB_TRY(hw.wrmsr(l.to + i, 0));
        if (l.info) PMULAB_TRY(hw.wrmsr(l.info + i, 0));
    }
    return ok_status();
}

}  // namespace

Status lbr_start(Hw& hw, const LbrInfo& l, const LbrSaved& s, const LbrStartOptions& o) {
    PMULAB_TRY(lbr_clear(hw, l));
    u64 now = s.debugctl;  // DEBUGCTL as it is now (other bits may have changed since lbr_save)
    if (l.kind != LbrKind::amd || l.freeze) PMULAB_TRY(rd(hw, msr::IA32_DEBUGCTL, &now));
    regs::DebugCtl dc(now);
    if (l.freeze && o.freeze_on_pmi) dc.set_freeze_lbrs_on_pmi(true);
    switch (l.kind) {
        case LbrKind::legacy:
            if (l.select) PMULAB_TRY(hw.wrmsr(msr::MSR_LBR_SELECT, 0));  // nothing suppressed
            return hw.wrmsr(msr::IA32_DEBUGCTL, dc.set_lbr(true).raw());
        case LbrKind::arch: {
            if (dc.raw() != now) PMULAB_TRY(hw.wrmsr(msr::IA32_DEBUGCTL, dc.raw()));
            regs::ArchLbrCtl c;
            c.set_os().set_usr().set_cond().set_near_rel_jmp().set_near_ind_jmp().set_near_rel_call();
            c.set_near_ind_call().set_near_ret().set_other_branch();
            return hw.wrmsr(msr::IA32_LBR_CTL, c.set_lbr_en().raw());
        }
        case LbrKind::amd:
            if (dc.raw() != now) PMULAB_TRY(hw.wrmsr(msr::IA32_DEBUGCTL, dc.raw()));
            PMULAB_TRY(hw.wrmsr(msr::AMD_LBR_SELECT, 0));
            return hw.wrmsr(msr::AMD_DBG_EXTN_CFG, regs::AmdDbgExtnCfg(s.ctl).set_lbrv2en().raw());
        case LbrKind::none: break;
    }
    return Error::make(Errc::unsupported, "no LBR on this CPU");
}

Status lbr_stop(Hw& hw, const LbrInfo& l) {
    switch (l.kind) {
        case LbrKind::legacy: {
            u64 dc = 0;
            PMULAB_TRY(rd(hw, msr::IA32_DEBUGCTL, &dc));
            return hw.wrmsr(msr::IA32_DEBUGCTL, regs::DebugCtl(dc).set_lbr(false).raw());
        }
        case LbrKind::arch: return hw.wrmsr(msr::IA32_LBR_CTL, 0);
        case LbrKind::amd: {
            u64 c = 0;
            PMULAB_TRY(rd(hw, msr::AMD_DBG_EXTN_CFG, &c));
            return hw.wrmsr(msr::AMD_DBG_EXTN_CFG, regs::AmdDbgExtnCfg(c).set_lbrv2en(false).raw());
        }
        case LbrKind::none: break;
    }
    return ok_status();
}

namespace {

// One legacy entry at index i in the format's layout (SDM Vol. 3B ch. 19 format table).
Status read_legacy(Hw& hw, const LbrInfo& l, u32 i, LbrEntry* e, bool* valid) {
    u64 from = 0;
    PMULAB_TRY(rd(hw, l.from + i, &from));
    u64 to = 0;
    PMULAB_TRY(rd(hw, l.to + i, &to));
    *valid = from || to;
    regs::LbrFromFlags flags(from);
    switch (l.format) {
        case 3: e->mispredicted = flags.mispred(), from = u64(sext(from, 62)); break;
        case 4: e->mispredicted = flags.mispred(), from = u64(sext(from, 60)); break;
        case 5:
        case 7: {
            u64 info = 0;
            PMULAB_TRY(rd(hw, l.info + i, &info));
            regs::LbrInfoMsr in(info);
            e->mispredicted = in.mispred();
            e->cycles = u16(in.cyc_cnt()), e->has_cycles = true;
            from = u64(sext(from, 60));
            break;
        }
        case 6:
            e->mispredicted = flags.mispred(), from = u64(sext(from, 62));
            e->cycles = u16(regs::LbrToTimed(to).cycles()), e->has_cycles = true;
            to = u64(sext(to, 47));
            break;
        default: break;
    }
    e->from = from, e->to = to;
    return ok_status();
}

Status read_arch_or_amd(Hw& hw, const LbrInfo& l, u32 i, LbrEntry* e, bool* valid) {
    if (l.kind == LbrKind::amd) {
        u64 from = 0;
        PMULAB_TRY(rd(hw, msr::AMD_LBR_FROM_0 + 2 * i, &from));
        u64 to = 0;
        PMULAB_TRY(rd(hw, msr::AMD_LBR_FROM_0 + 2 * i + 1, &to));
        regs::AmdLbrTo t(to);
        *valid = t.valid() || t.spec();
        e->mispredicted = regs::AmdLbrFrom(from).mispredict();
        e->from = u64(sext(from, 57)), e->to = u64(sext(to, 57));
        return ok_status();
    }
    u64 from = 0;
    PMULAB_TRY(rd(hw, msr::IA32_LBR_0_FROM_IP + i, &from));
    *valid = from != 0;
    if (!*valid) return ok_status();
    PMULAB_TRY(rd(hw, msr::IA32_LBR_0_TO_IP + i, &e->to));
    u64 info = 0;
    PMULAB_TRY(rd(hw, msr::IA32_LBR_0_INFO + i, &info));
    regs::LbrInfoMsr in(info);
    e->from = from;
    e->mispredicted = l.mispredict && in.mispred();
    e->has_cycles = l.cycles && in.cyc_cnt_valid();
    e->cycles = e->has_cycles ? u16(in.cyc_cnt()) : 0;
    return ok_status();
}

}  // namespace

Status lbr_read(Hw& hw, const LbrInfo& l, LbrStackRead* out) {
    out->n = 0;
    u32 n = l.depth > kLbrMaxDepth ? kLbrMaxDepth : l.depth;
    u64 tos = 0;
    if (l.kind == LbrKind::legacy) PMULAB_TRY(rd(hw, msr::MSR_LASTBRANCH_TOS, &tos));
    for (u32 k = 0; k < n; ++k) {
        LbrEntry e;
        bool valid = false;
        if (l.kind == LbrKind::legacy) {
            PMULAB_TRY(read_legacy(hw, l, u32((tos + 1 + k) % n), &e, &valid));  // TOS + 1 is the oldest
        } else {
            PMULAB_TRY(read_arch_or_amd(hw, l, n - 1 - k, &e, &valid));  // entry 0 is the youngest
        }
        if (valid) out->e[out->n++] = e;
    }
    return ok_status();
}

Status lbr_restore(Hw& hw, const LbrInfo& l, const LbrSaved& s) {
    switch (l.kind) {
        case LbrKind::legacy:
            if (l.select) PMULAB_TRY(hw.wrmsr(msr::MSR_LBR_SELECT, s.select));
            return hw.wrmsr(msr::IA32_DEBUGCTL, s.debugctl);
        case LbrKind::arch:
            PMULAB_TRY(hw.wrmsr(msr::IA32_LBR_CTL, s.ctl));
            PMULAB_TRY(hw.wrmsr(msr::IA32_LBR_DEPTH, s.depth));
            return hw.wrmsr(msr::IA32_DEBUGCTL, s.debugctl);
        case LbrKind::amd:
            PMULAB_TRY(hw.wrmsr(msr::AMD_DBG_EXTN_CFG, s.ctl));
            PMULAB_TRY(hw.wrmsr(msr::AMD_LBR_SELECT, s.select));
            if (l.freeze) return hw.wrmsr(msr::IA32_DEBUGCTL, s.debugctl);
            return ok_status();
        case LbrKind::none: break;
    }
    return ok_status();
}

}  // namespace pmulab
