// The model's own decoding of CPUID into a PMU layout, and the choice of the PmuModel of
// a logical processor (sim_pmu.h).
#include "sim/sim_pmu.h"

#include "sim/sim_families.h"
#include "sim/sim_netburst.h"

namespace sim {

namespace {

// AMD (APM Vol. 2 §13.2): the legacy counters from K7, PerfCtrExtCore, PerfMonV2.
void derive_amd(const CpuidSnapshot& s, const CpuidRegs& l1, PmuLayout* L) {
    u32 base_family = (l1.eax >> 8) & 0xf;
    u32 family = base_family == 0xf ? base_family + ((l1.eax >> 20) & 0xff) : base_family;
    u32 emax = s.get(0x80000000).eax;
    if ((emax & 0xffff0000u) != 0x80000000u) emax = 0;
    if (family < 0x6) return;  // the legacy counters exist from K7 (APM Vol. 2 §13.2.1)
    L->kind = PmuLayout::Kind::amd;
    L->amd_legacy = true;
    L->amd_counters = 4;
    if (emax >= 0x80000001 && ((s.get(0x80000001).ecx >> 23) & 1)) {
        L->amd_ext_core = true;
        L->amd_counters = 6;
    }
    // CPUID 8000_0022H EAX[2] LbrAndPmcFreeze (Zen 4 on): DEBUGCTL[12] freezes the counters
    // on a PMI, DEBUGCTL[11] the LBR stack (Linux amd/core.c, amd/lbr.c).
    if (emax >= 0x80000022 && ((s.get(0x80000022).eax >> 2) & 1)) L->amd_pmc_freeze = true;
    if (emax >= 0x80000022 && (s.get(0x80000022).eax & 1)) {
        L->amd_v2 = true;
        L->amd_counters = s.get(0x80000022).ebx & 0xf;
    }
    L->gp_mask = u32(width_mask(L->amd_counters));
    L->gp_width = 48;
    L->amd_irperf = emax >= 0x80000008 && ((s.get(0x80000008).ebx >> 1) & 1);
    u32 model = ((l1.eax >> 4) & 0xf) | (base_family == 0xf ? ((l1.eax >> 16) & 0xf) << 4 : 0);
    L->amd_irperf_erratum1054 = L->amd_irperf && family == 0x17 && model <= 0x2f;
    L->amd_efffreq = s.get(0).eax >= 6 && (s.get(6).ecx & 1);
    L->amd_de_cfg = family >= 0x10;
    L->amd_smi_event = family >= 0x17;
    L->amd_efffreq_ro = emax >= 0x80000007 && ((s.get(0x80000007).edx >> 10) & 1);
}

// Leaf 23H (architectural PMU extended leaf): UMASK2, EQ, RDPMC user disable, bitmaps.
void derive_leaf23(const CpuidSnapshot& s, PmuLayout* L) {
    if (s.get(0).eax < 0x23 || s.get(7, 0).eax < 1 || !((s.get(7, 1).eax >> 8) & 1)) return;
    CpuidRegs s0 = s.get(0x23, 0);
    L->leaf23 = true;
    L->umask2 = s0.ebx & 1;
    L->rdpmc_user_disable = (s0.ebx >> 2) & 1;
    L->eq = (s0.ebx >> 1) & 1;
    if ((s0.eax >> 1) & 1) {
        CpuidRegs s1 = s.get(0x23, 1);
        L->gp_mask = s1.eax;
        L->fixed_mask = s1.ebx & 0xffff;
    }
}

// Intel architectural performance monitoring (SDM Vol. 3B §20.2, CPUID leaf 0AH).
void derive_intel(const CpuidSnapshot& s, const CpuidRegs& l1, u64 caps, const PmuOverrides& ov, PmuLayout* L) {
    if (s.get(0).eax < 0xA) return;
    CpuidRegs a = s.get(0xA);
    L->version = u8(a.eax & 0xff);
    if (L->version == 0) return;
    L->kind = PmuLayout::Kind::intel;
    L->gp_mask = u32(width_mask(std::min<u32>((a.eax >> 8) & 0xff, 32)));
    L->gp_width = (a.eax >> 16) & 0xff;
    if (L->version >= 2) {
        L->fixed_mask = u32(width_mask(std::min<u32>(a.edx & 0x1f, 16)));
        L->fixed_width = (a.edx >> 5) & 0xff;
        if (L->version >= 5) L->fixed_mask |= a.ecx & 0xffff;
    }
    L->anythread_writable = L->version >= 3;
    L->smi_count = L->version >= 3;
    L->anythread_ignored = L->anythread_writable && ((a.edx >> 15) & 1);
    derive_leaf23(s, L);
    if (ov.fixed_count >= 0) L->fixed_mask = u32(width_mask(u32(std::min(ov.fixed_count, 16))));
    if (ov.fixed_width >= 0) L->fixed_width = u32(ov.fixed_width);
    L->full_width_writes = L->pdcm && ((caps >> 13) & 1);
    L->perf_metrics = L->pdcm && ((caps >> 15) & 1) && L->fixed(3);
    L->perf_metrics_l2 = L->perf_metrics && (ov.topdown_l2 >= 0 ? ov.topdown_l2 > 0 : topdown_l2_model(l1.eax));
}

// No PMU (QEMU TCG, Intel version 0, pre-K7 AMD): only the CPU's own MSRs exist.
class NoPmu final : public PmuModel {
public:
    using PmuModel::PmuModel;
    bool exists(u32) const override { return false; }
    u8 rdmsr(u32, u64*) const override { return kVectorGP; }
    u8 wrmsr(u32, u64) override { return kVectorGP; }
    bool poke(u32, u64) override { return false; }
    u8 rdpmc(u32, u64*) const override { return kVectorGP; }
    void state(PmuState*) const override {}
};

}  // namespace

PmuLayout derive_layout(const CpuidSnapshot& s, u64 caps, const PmuOverrides& ov) {
    PmuLayout L;
    CpuidRegs l0 = s.get(0);
    u32 max = l0.eax;
    bool amd = (l0.ebx == kAmdEbx && l0.edx == kAmdEdx && l0.ecx == kAmdEcx) || l0.ebx == kHygonEbx;
    L.vendor_intel = l0.ebx == kIntelEbx && l0.edx == kIntelEdx && l0.ecx == kIntelEcx;
    CpuidRegs l1 = max >= 1 ? s.get(1) : CpuidRegs{};
    L.pdcm = max >= 1 && ((l1.ecx >> 15) & 1);
    L.perf_caps = L.pdcm ? caps : 0;
    L.debugctl = L.vendor_intel;
    L.freeze_while_smm = L.debugctl && ((L.perf_caps >> 12) & 1);  // SDM Vol. 4 Table 2-2
    L.efffreq = L.vendor_intel && max >= 6 && (s.get(6).ecx & 1);
    if (ov.none) return L;
    if (amd) derive_amd(s, l1, &L);
    else derive_intel(s, l1, caps, ov, &L);
    if (L.amd_pmc_freeze) L.debugctl = true;  // DBG_CTL_MSR: the freeze bits
    return L;
}

std::unique_ptr<PmuModel> make_pmu_model(u32 cpu, const CpuSpec& spec, const PmuLayout& layout) {
    if (spec.netburst) return std::make_unique<NetBurstPmu>(cpu, layout, spec.netburst, spec.netburst_thread);
    switch (layout.kind) {
        case PmuLayout::Kind::intel: return std::make_unique<IntelPmu>(cpu, layout, spec.cpuid);
        case PmuLayout::Kind::amd: return std::make_unique<AmdPmu>(cpu, layout, spec.cpuid);
        case PmuLayout::Kind::none: break;
    }
    return std::make_unique<NoPmu>(cpu, layout);
}

const char* event_source_name(EventSource s) {
    switch (s) {
        case EventSource::exact: return "exact";
        case EventSource::modelled: return "modelled";
        case EventSource::not_modelled: break;
    }
    return "not modelled";
}

void Retired::add(const Retired& o) {
    instructions += o.instructions;
    branches += o.branches;
    cond += o.cond;
    cond_taken += o.cond_taken;
    near_taken += o.near_taken;
    near_calls += o.near_calls;
    near_returns += o.near_returns;
    indirect += o.indirect;
    far += o.far;
    loads += o.loads;
    stores += o.stores;
    for (unsigned i = 0; i < 4; ++i) load_served[i] += o.load_served[i];
    stall_cycles += o.stall_cycles;
    if (o.last.valid) last = o.last;
}

}  // namespace sim
