// The simulated CPU: see sim_cpu.h for what is modelled and the sources.
#include "sim/sim_cpu.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>

#include "sim/sim_internal.h"
#include "sim/sim_netburst.h"

namespace sim {

[[noreturn]] void die(const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    std::fprintf(stderr, "sim_cpu: ");
    std::vfprintf(stderr, fmt, ap);
    std::fprintf(stderr, "\n");
    va_end(ap);
    std::abort();
}

const char* access_name(Access a) {
    switch (a) {
        case Access::rdmsr: return "RDMSR";
        case Access::wrmsr: return "WRMSR";
        case Access::rdpmc: return "RDPMC";
    }
    return "?";
}

std::string describe(const LogEntry& e) {
    char buf[160];
    if (e.kind == Access::wrmsr)
        std::snprintf(buf, sizeof buf, "#%llu cpu%u WRMSR 0x%x <- 0x%llx", (unsigned long long)e.seq, e.cpu, e.addr,
                      (unsigned long long)e.value);
    else
        std::snprintf(buf, sizeof buf, "#%llu cpu%u %s 0x%x -> 0x%llx", (unsigned long long)e.seq, e.cpu,
                      access_name(e.kind), e.addr, (unsigned long long)e.value);
    std::string s = buf;
    if (e.vector) s += e.vector == kVectorGP ? " #GP" : e.vector == kVectorUD ? " #UD" : " fault";
    if (e.injected) s += " (injected)";
    return s;
}

std::string diff_state(const PmuState& a, const PmuState& b) {
    std::string out;
    char buf[96];
    auto line = [&](u32 msr, const char* x, const char* y) {
        std::snprintf(buf, sizeof buf, "0x%x: %s -> %s\n", msr, x, y);
        out += buf;
    };
    auto hex = [](u64 v) {
        char t[24];
        std::snprintf(t, sizeof t, "0x%llx", (unsigned long long)v);
        return std::string(t);
    };
    for (const auto& [msr, v] : a) {
        auto it = b.find(msr);
        if (it == b.end()) line(msr, hex(v).c_str(), "absent");
        else if (it->second != v) line(msr, hex(v).c_str(), hex(it->second).c_str());
    }
    for (const auto& [msr, v] : b)
        if (!a.count(msr)) line(msr, "absent", hex(v).c_str());
    return out;
}

// ---------------------------------------------------------------------------
// CPUID -> PMU layout (the model's own decoding).

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

    if (amd) {
        u32 base_family = (l1.eax >> 8) & 0xf;
        u32 family = base_family == 0xf ? base_family + ((l1.eax >> 20) & 0xff) : base_family;
        u32 emax = s.get(0x80000000).eax;
        if ((emax & 0xffff0000u) != 0x80000000u) emax = 0;
        if (family < 0x6) return L;  // the legacy counters exist from K7 (APM Vol. 2 §13.2.1)
        L.kind = PmuLayout::Kind::amd;
        L.amd_legacy = true;
        L.amd_counters = 4;
        if (emax >= 0x80000001 && ((s.get(0x80000001).ecx >> 23) & 1)) {
            L.amd_ext_core = true;
            L.amd_counters = 6;
        }
        if (emax >= 0x80000022 && (s.get(0x80000022).eax & 1)) {
            L.amd_v2 = true;
            L.amd_counters = s.get(0x80000022).ebx & 0xf;
        }
        L.gp_mask = u32(width_mask(L.amd_counters));
        L.gp_width = 48;
        L.amd_irperf = emax >= 0x80000008 && ((s.get(0x80000008).ebx >> 1) & 1);
        u32 model = ((l1.eax >> 4) & 0xf) | (base_family == 0xf ? ((l1.eax >> 16) & 0xf) << 4 : 0);
        L.amd_irperf_erratum1054 = L.amd_irperf && family == 0x17 && model <= 0x2f;
        L.amd_efffreq = max >= 6 && (s.get(6).ecx & 1);
        L.amd_de_cfg = family >= 0x10;
        L.amd_efffreq_ro = emax >= 0x80000007 && ((s.get(0x80000007).edx >> 10) & 1);
        return L;
    }

    if (max < 0xA) return L;
    CpuidRegs a = s.get(0xA);
    L.version = u8(a.eax & 0xff);
    if (L.version == 0) return L;
    L.kind = PmuLayout::Kind::intel;
    L.gp_mask = u32(width_mask(std::min<u32>((a.eax >> 8) & 0xff, 32)));
    L.gp_width = (a.eax >> 16) & 0xff;
    if (L.version >= 2) {
        L.fixed_mask = u32(width_mask(std::min<u32>(a.edx & 0x1f, 16)));
        L.fixed_width = (a.edx >> 5) & 0xff;
        if (L.version >= 5) L.fixed_mask |= a.ecx & 0xffff;
    }
    L.anythread_writable = L.version >= 3;
    L.smi_count = L.version >= 3;
    L.anythread_ignored = L.anythread_writable && ((a.edx >> 15) & 1);
    if (max >= 0x23 && s.get(7, 0).eax >= 1 && ((s.get(7, 1).eax >> 8) & 1)) {
        CpuidRegs s0 = s.get(0x23, 0);
        L.leaf23 = true;
        L.umask2 = s0.ebx & 1;
        L.rdpmc_user_disable = (s0.ebx >> 2) & 1;
        L.eq = (s0.ebx >> 1) & 1;
        if ((s0.eax >> 1) & 1) {
            CpuidRegs s1 = s.get(0x23, 1);
            L.gp_mask = s1.eax;
            L.fixed_mask = s1.ebx & 0xffff;
        }
    }
    if (ov.fixed_count >= 0) L.fixed_mask = u32(width_mask(u32(std::min(ov.fixed_count, 16))));
    if (ov.fixed_width >= 0) L.fixed_width = u32(ov.fixed_width);
    L.full_width_writes = L.pdcm && ((caps >> 13) & 1);
    L.perf_metrics = L.pdcm && ((caps >> 15) & 1) && L.fixed(3);
    L.perf_metrics_l2 = L.perf_metrics && (ov.topdown_l2 >= 0 ? ov.topdown_l2 > 0 : topdown_l2_model(l1.eax));
    return L;
}

// ---------------------------------------------------------------------------
// SimCpu

SimCpu::SimCpu(u32 index, const CpuSpec& spec, std::shared_ptr<Shared> shared)
    : index_(index), spec_(spec), shared_(std::move(shared)) {
    layout_ = derive_layout(spec_.cpuid, spec_.perf_capabilities, spec_.pmu);
    // At RESET the GP enable bits of the global control are set so that software
    // written for v1 counts (SDM §20.2.2; AMD PerfMonV2 likewise).
    if (layout_.kind == PmuLayout::Kind::intel && layout_.version >= 2) global_ctrl_ = layout_.gp_mask;
    if (layout_.kind == PmuLayout::Kind::amd && layout_.amd_v2) global_ctrl_ = layout_.gp_mask;
    misc_enable_ = 1 | kMiscBtsUnavail | kMiscPebsUnavail | (layout_.kind == PmuLayout::Kind::intel ? kMiscPerfmon : 0);
}

void SimCpu::set_unreachable(const char* efi_status) { unreachable_status_ = efi_status ? efi_status : ""; }

void SimCpu::set_perf_capabilities(u64 v) {
    spec_.perf_capabilities = v;
    layout_ = derive_layout(spec_.cpuid, v, spec_.pmu);
}

CpuidRegs SimCpu::cpuid(u32 leaf, u32 sub) const {
    const CpuidSnapshot& s = spec_.cpuid;
    u32 max = s.get(0).eax;
    u32 emax = s.get(0x80000000).eax;
    bool ext_ok = (emax & 0xffff0000u) == 0x80000000u;
    CpuidRegs hv;
    bool hv_ok = s.find(0x40000000, 0, &hv);
    bool valid = leaf <= max || (ext_ok && leaf >= 0x80000000u && leaf <= emax) ||
                 (hv_ok && leaf >= 0x40000000u && leaf <= std::max<u32>(hv.eax, 0x40000000u));
    if (!valid) leaf = max;  // the highest basic leaf; its ECX dependence is honoured
    bool indexed = subleaf_indexed(leaf);
    for (u32 i = 0; i < s.count && !indexed; ++i) indexed = s.entries[i].leaf == leaf && s.entries[i].subleaf;
    return s.get(leaf, indexed ? sub : 0);
}

SimCpu::Slot SimCpu::classify(u32 m) const {
    using K = Kind;
    if (extra_.count(m)) return {K::extra, 0};
    const PmuLayout& L = layout_;
    auto in = [m](u32 base, u32 n, u32* i) {
        if (m < base || m >= base + n) return false;
        *i = m - base;
        return true;
    };
    u32 i = 0;
    if (L.kind == PmuLayout::Kind::intel) {
        if (in(reg::PMC0, 32, &i) && L.gp(i)) return {K::pmc, i};
        if (in(reg::PERFEVTSEL0, 32, &i) && L.gp(i)) return {K::evtsel, i};
        if (in(reg::A_PMC0, 32, &i) && L.gp(i) && L.full_width_writes) return {K::a_pmc, i};
        if (in(reg::FIXED_CTR0, 16, &i) && L.fixed(i)) return {K::fixed_ctr, i};
        if (L.version >= 2) {
            if (m == reg::FIXED_CTR_CTRL) return {K::fixed_ctrl, 0};
            if (m == reg::GLOBAL_STATUS) return {K::global_status, 0};
            if (m == reg::GLOBAL_CTRL) return {K::global_ctrl, 0};
            if (m == reg::GLOBAL_OVF_CTRL) return {K::ovf_ctrl, 0};
        }
        if (m == reg::PERF_METRICS && L.perf_metrics) return {K::perf_metrics, 0};
        if (L.version >= 4) {
            if (m == reg::GLOBAL_STATUS_SET) return {K::status_set, 0};
            if (m == reg::GLOBAL_INUSE) return {K::inuse, 0};
        }
    }
    if (L.kind == PmuLayout::Kind::amd) {
        if (L.amd_legacy && in(reg::AMD_PERF_CTL0, 4, &i)) return {K::amd_ctl, i};
        if (L.amd_legacy && in(reg::AMD_PERF_CTR0, 4, &i)) return {K::amd_ctr, i};
        if (L.amd_ext_core && in(reg::AMD_EXT_CTL0, 2 * L.amd_counters, &i))
            return {(i & 1) ? K::amd_ctr : K::amd_ctl, i / 2};
        if (L.amd_v2) {
            if (m == reg::AMD_GLOBAL_STATUS) return {K::amd_gstatus, 0};
            if (m == reg::AMD_GLOBAL_CTL) return {K::amd_gctl, 0};
            if (m == reg::AMD_GLOBAL_STATUS_CLR) return {K::amd_gclr, 0};
            if (m == reg::AMD_GLOBAL_STATUS_SET) return {K::amd_gset, 0};
        }
    }
    if (m == reg::PERF_CAPABILITIES && L.pdcm) return {K::perf_caps, 0};
    if (m == reg::TSC) return {K::tsc, 0};
    if (m == reg::BIOS_SIGN_ID) return {K::bios_sign, 0};
    if (m == reg::PKRS) return {K::pkrs, 0};
    if (m == reg::MISC_ENABLE && L.vendor_intel) return {K::misc_enable, 0};
    if (m == reg::DEBUGCTL && L.debugctl) return {K::debugctl, 0};
    if (m == reg::SMI_COUNT && L.smi_count) return {K::smi_count, 0};
    if (L.efffreq && m == reg::APERF) return {K::aperf, 0};
    if (L.efffreq && m == reg::MPERF) return {K::mperf, 0};
    if (L.kind == PmuLayout::Kind::amd) {
        if (m == reg::AMD_HWCR) return {K::amd_hwcr, 0};
        if (m == reg::AMD_DE_CFG && L.amd_de_cfg) return {K::amd_de_cfg, 0};
        if (m == reg::AMD_IRPERF && L.amd_irperf) return {K::amd_irperf, 0};
        if (L.amd_efffreq) {
            if (m == reg::APERF) return {K::aperf, 0};
            if (m == reg::MPERF) return {K::mperf, 0};
            if (m == reg::AMD_APERF_RO && L.amd_efffreq_ro) return {K::aperf_ro, 0};
            if (m == reg::AMD_MPERF_RO && L.amd_efffreq_ro) return {K::mperf_ro, 0};
        }
    }
    return {K::none, 0};
}

bool SimCpu::msr_exists(u32 msr) const {
    if (netburst() && NetBurstModel::owns(msr)) return netburst()->exists(msr);
    return classify(msr).kind != Kind::none;
}

u64 SimCpu::evtsel_writable_mask() const {
    const PmuLayout& L = layout_;
    // AMD APM PerfEvtSel: 7:0, 15:8, 16-18, 20, 22-31, 35:32 (event[11:8]), 41:40
    // (HostOnly/GuestOnly); 19, 21, 39:36 and 63:42 reserved.
    if (L.kind == PmuLayout::Kind::amd) return (0xffffffffull & ~(bit(19) | bit(21))) | (0xfull << 32) | (0x3ull << 40);
    u64 m = 0xffffffffull & ~evtsel::ANY;
    if (L.anythread_writable) m |= evtsel::ANY;
    if (L.eq) m |= evtsel::EQ;
    if (L.umask2) m |= 0xffull << 40;
    return m;
}

u64 SimCpu::fixed_ctrl_writable_mask() const {
    // OS/USR/AnyThread/PMI groups exist for fixed counters 0-7 only; bits 32+4i and 33+4i
    // are FIXED_CTRi's adaptive-PEBS (PERF_CAPABILITIES[14] PEBS baseline) and RDPMC
    // user-disable (CPUID.23H.0:EBX[2]) bits. Counters >= 8 have no enable here.
    u64 m = 0;
    for (u32 i = 0; i < 8; ++i) {
        if (!layout_.fixed(i)) continue;
        m |= u64(layout_.anythread_writable ? 0xf : 0xb) << (4 * i);
        if ((layout_.perf_caps >> 14) & 1) m |= u64(1) << (32 + 4 * i);
        if (layout_.rdpmc_user_disable) m |= u64(1) << (33 + 4 * i);
    }
    return m;
}

u64 SimCpu::global_ctrl_mask() const {
    if (layout_.kind == PmuLayout::Kind::amd) return layout_.gp_mask;
    // Bit 48: EN_PERF_METRICS in GLOBAL_CTRL, PERF_METRICS_OVF in STATUS/RESET/SET.
    return u64(layout_.gp_mask) | (u64(layout_.fixed_mask) << 32) | (layout_.perf_metrics ? bit(48) : 0);
}

u64 SimCpu::ovf_ctrl_mask() const {
    u64 m = global_ctrl_mask() | kStatusOvfBuf | kStatusCondChgd;
    if (layout_.version >= 3) m |= kStatusUncore;
    if (layout_.version >= 4) m |= kStatusTopaPmi | kStatusLbrFrz | kStatusCtrFrz | kStatusAsci;
    return m;
}

u64 SimCpu::status_set_mask() const {
    return global_ctrl_mask() | kStatusTopaPmi | kStatusLbrFrz | kStatusCtrFrz | kStatusAsci | kStatusUncore |
           kStatusOvfBuf;
}

u64 SimCpu::inuse() const {
    // SDM §20.2.4.3: bit i = PERFEVTSELi[7:0] != 0; bit 32+i = FIXED_CTR_CTRL
    // enable field of counter i != 0; bit 63 = any PMI enabled.
    u64 v = 0;
    bool pmi = false;
    for (u32 i = 0; i < 32; ++i)
        if (layout_.gp(i)) {
            if (gp_[i].ctl & 0xff) v |= bit(i);
            pmi |= (gp_[i].ctl & evtsel::INT) != 0;
        }
    for (u32 i = 0; i < 8; ++i)
        if (layout_.fixed(i)) {
            if ((fixed_ctrl_ >> (4 * i)) & 3) v |= bit(32 + i);
            pmi |= ((fixed_ctrl_ >> (4 * i + 3)) & 1) != 0;
        }
    if (pmi) v |= bit(63);
    return v;
}

u64 SimCpu::read_slot(Slot s) const {
    switch (s.kind) {
        case Kind::pmc:
        case Kind::a_pmc:
        case Kind::amd_ctr: return gp_[s.index].ctr;
        case Kind::evtsel:
        case Kind::amd_ctl: return gp_[s.index].ctl;
        case Kind::fixed_ctr: return fixed_ctr_[s.index];
        case Kind::fixed_ctrl: return fixed_ctrl_;
        case Kind::global_status:
        case Kind::amd_gstatus: return global_status_;
        case Kind::global_ctrl:
        case Kind::amd_gctl: return global_ctrl_;
        case Kind::ovf_ctrl:
        case Kind::status_set:
        case Kind::amd_gclr:
        case Kind::amd_gset: return 0;  // write-only in effect: reads return 0
        case Kind::inuse: return inuse();
        case Kind::perf_caps: return layout_.perf_caps;
        case Kind::perf_metrics: return perf_metrics_value();
        case Kind::tsc: return tsc_;
        case Kind::bios_sign: return u64(spec_.microcode) << 32;
        case Kind::pkrs: return pkrs_;
        case Kind::misc_enable: return misc_enable_;
        case Kind::amd_hwcr: return hwcr_;
        case Kind::amd_de_cfg: return de_cfg_;
        case Kind::amd_irperf: return irperf_;
        case Kind::aperf:
        case Kind::aperf_ro: return aperf_;
        case Kind::mperf:
        case Kind::mperf_ro: return mperf_;
        case Kind::smi_count: return smi_count_;
        case Kind::debugctl: return debugctl_;
        case Kind::extra: break;
        case Kind::none: return 0;
    }
    return 0;
}

u8 SimCpu::write_slot(Slot s, u64 v) {
    const PmuLayout& L = layout_;
    switch (s.kind) {
        case Kind::pmc:
            // Legacy write: EAX[31:0] sign-extended to the counter width (SDM §20.2.6);
            // EDX is ignored.
            gp_[s.index].ctr = u64(int64_t(int32_t(u32(v)))) & width_mask(L.gp_width);
            return 0;
        case Kind::a_pmc:
            if (v & ~width_mask(L.gp_width)) return kVectorGP;
            gp_[s.index].ctr = v;
            return 0;
        case Kind::fixed_ctr:
            // "Bits beyond the width of the fixed-function counter are reserved" (SDM §20.2.2).
            if (v & ~width_mask(L.fixed_width)) return kVectorGP;
            fixed_ctr_[s.index] = v;
            // SLOTS and PERF_METRICS are reset together (SDM "Performance Metrics").
            if (s.index == 3 && v == 0 && L.perf_metrics) write_perf_metrics(0);
            return 0;
        case Kind::perf_metrics: return write_perf_metrics(v);
        case Kind::evtsel:
        case Kind::amd_ctl:
            if (v & ~evtsel_writable_mask()) return kVectorGP;
            gp_[s.index].ctl = v;
            gp_[s.index].prev = false;
            return 0;
        case Kind::amd_ctr:
            // APM: 48-bit counters; the model drops bits 63:48 of the written value.
            gp_[s.index].ctr = v & width_mask(L.gp_width);
            return 0;
        case Kind::fixed_ctrl:
            if (v & ~fixed_ctrl_writable_mask()) return kVectorGP;
            fixed_ctrl_ = v;
            return 0;
        case Kind::global_ctrl:
        case Kind::amd_gctl:
            if (v & ~global_ctrl_mask()) return kVectorGP;
            global_ctrl_ = v;
            return 0;
        case Kind::ovf_ctrl:
            if (v & ~ovf_ctrl_mask()) return kVectorGP;
            global_status_ &= ~v;
            return 0;
        case Kind::status_set:
            if (v & ~status_set_mask()) return kVectorGP;
            global_status_ |= v;
            return 0;
        case Kind::amd_gclr:
            if (v & ~global_ctrl_mask()) return kVectorGP;
            global_status_ &= ~v;
            return 0;
        case Kind::amd_gset:
            if (v & ~global_ctrl_mask()) return kVectorGP;
            global_status_ |= v;
            return 0;
        case Kind::global_status:
        case Kind::amd_gstatus:
        case Kind::inuse:
        case Kind::perf_caps: return kVectorGP;  // read-only
        case Kind::tsc: tsc_ = v; return 0;
        case Kind::bios_sign: return 0;  // the microcode-revision read protocol: accepted, no effect
        case Kind::pkrs:
            if (v >> 32) return kVectorGP;  // bits 63:32 reserved (QEMU and the SDM)
            pkrs_ = v;
            return 0;
        case Kind::misc_enable: misc_enable_ = (v & ~kMiscReadOnly) | (misc_enable_ & kMiscReadOnly); return 0;
        case Kind::amd_hwcr: hwcr_ = v; return 0;  // only IRPerfEn (bit 30) has an effect here
        case Kind::amd_de_cfg: de_cfg_ = v; return 0;
        case Kind::amd_irperf:
            if (v >> 48) return kVectorGP;  // InstRetCnt[47:0]; 63:48 reserved
            irperf_ = v;
            return 0;
        case Kind::aperf: aperf_ = v; return 0;
        case Kind::mperf: mperf_ = v; return 0;
        case Kind::aperf_ro:
        case Kind::mperf_ro: return kVectorGP;   // read-only aliases
        case Kind::smi_count: return kVectorGP;  // read-only
        case Kind::debugctl: {
            // SDM Vol. 3B §18.4.1 (IA32_DEBUGCTL): LBR 0, BTF 1, TR 6, BTS 7, BTINT 8,
            // BTS_OFF_OS 9, BTS_OFF_USR 10, FREEZE_LBRS_ON_PMI 11, FREEZE_PERFMON_ON_PMI 12,
            // ENABLE_UNCORE_PMI 13, FREEZE_WHILE_SMM 14 (only where enumerated), RTM_DEBUG 15.
            u64 ok = bit(0) | bit(1) | (0xffull << 6) | bit(15) | (L.freeze_while_smm ? bit(14) : 0);
            if (v & ~ok) return kVectorGP;
            debugctl_ = v;
            return 0;
        }
        case Kind::extra: break;
        case Kind::none: return kVectorGP;
    }
    return kVectorGP;
}

void SimCpu::record(Access kind, u32 addr, u64 value, u8 vector, bool injected) {
    LogEntry e;
    e.seq = ++shared_->seq;
    e.cpu = index_;
    e.kind = kind;
    e.addr = addr;
    e.value = value;
    e.vector = vector;
    e.injected = injected;
    log_.push_back(e);
}

Result<u64> SimCpu::rdmsr(u32 msr) {
    auto f = fail_rd_.find(msr);
    if (f != fail_rd_.end()) {
        record(Access::rdmsr, msr, 0, f->second, true);
        return pmulab::msr_fault_error("RDMSR", msr, 0, f->second);
    }
    if (netburst() && NetBurstModel::owns(msr)) {
        u64 v = 0;
        u8 vec = netburst()->rdmsr(msr, &v);
        record(Access::rdmsr, msr, v, vec, false);
        if (vec) return pmulab::msr_fault_error("RDMSR", msr, 0, vec);
        return v;
    }
    Slot s = classify(msr);
    if (s.kind == Kind::none) {
        if (spec_.unknown == UnknownMsr::read_zero) {
            record(Access::rdmsr, msr, 0, 0, false);
            return u64(0);
        }
        record(Access::rdmsr, msr, 0, kVectorGP, false);
        return pmulab::msr_fault_error("RDMSR", msr, 0, kVectorGP);
    }
    u64 v = s.kind == Kind::extra ? extra_.at(msr).value : read_slot(s);
    record(Access::rdmsr, msr, v, 0, false);
    return v;
}

Status SimCpu::wrmsr(u32 msr, u64 value) {
    u8 injected = 0;
    if (shared_->nth_wrmsr && --shared_->nth_wrmsr == 0) injected = shared_->nth_vector;
    if (nth_wrmsr_ && --nth_wrmsr_ == 0 && !injected) injected = nth_vector_;
    auto f = fail_wr_.find(msr);
    if (!injected && f != fail_wr_.end()) injected = f->second;
    if (injected) {
        record(Access::wrmsr, msr, value, injected, true);
        return pmulab::msr_fault_error("WRMSR", msr, value, injected);
    }
    if (netburst() && NetBurstModel::owns(msr)) {
        u8 vec = netburst()->wrmsr(index_, spec_.netburst_thread, msr, value);
        record(Access::wrmsr, msr, value, vec, false);
        if (vec) return pmulab::msr_fault_error("WRMSR", msr, value, vec);
        return pmulab::ok_status();
    }
    Slot s = classify(msr);
    u8 vec = 0;
    if (s.kind == Kind::none) {
        vec = spec_.unknown == UnknownMsr::read_zero ? 0 : kVectorGP;
    } else if (s.kind == Kind::extra) {
        Extra& x = extra_.at(msr);
        if (x.writable) x.value = value;
        else vec = kVectorGP;
    } else {
        if ((s.kind == Kind::amd_ctr) && (gp_[s.index].ctl & evtsel::EN)) {
            char buf[160];
            std::snprintf(buf, sizeof buf,
                          "CPU %u: WRMSR 0x%x while PERF_CTL%u.EN = 1 (clear EN before writing the counter)", index_,
                          msr, s.index);
            violations_.push_back(buf);
        }
        if ((s.kind == Kind::pmc || s.kind == Kind::a_pmc) && (gp_[s.index].ctl & evtsel::EN)) {
            char buf[160];
            std::snprintf(buf, sizeof buf,
                          "CPU %u: WRMSR 0x%x while IA32_PERFEVTSEL%u.EN = 1 (clear EN before writing the counter)",
                          index_, msr, s.index);
            violations_.push_back(buf);
        }
        vec = write_slot(s, value);
    }
    record(Access::wrmsr, msr, value, vec, false);
    if (vec) return pmulab::msr_fault_error("WRMSR", msr, value, vec);
    return pmulab::ok_status();
}

Result<u64> SimCpu::rdpmc(u32 ecx) {
    auto fault = [&](u8 vec) -> Result<u64> {
        record(Access::rdpmc, ecx, 0, vec, false);
        return pmulab::pmc_fault_error(ecx, vec);
    };
    if (spec_.rdpmc_ud) return fault(kVectorUD);
    if (cpl_ > 0 && !pce_) return fault(kVectorGP);
    const PmuLayout& L = layout_;
    u64 v = 0;
    if (netburst()) {
        u8 vec = netburst()->rdpmc(ecx, &v);
        if (vec) return fault(vec);
    } else if (L.kind == PmuLayout::Kind::intel) {
        // ECX[30] selects the fixed counters, ECX[29:0] the index (SDM RDPMC).
        // ECX[31] ("fast read" on some older parts) is not modelled: #GP.
        u32 idx = ecx & 0x3fffffff;
        bool fixed = (ecx >> 30) & 1;
        if (ecx >> 31) return fault(kVectorGP);
        // ECX[29] (with ECX[30] clear and index 0): IA32_PERF_METRICS (SDM RDPMC).
        bool metrics = !fixed && ((ecx >> 29) & 1);
        if (metrics) {
            if (!L.perf_metrics || (ecx & ~(u32(1) << 29))) return fault(kVectorGP);
            v = perf_metrics_value();
        } else {
            if (fixed ? !L.fixed(idx) : !L.gp(idx)) return fault(kVectorGP);
            v = fixed ? fixed_ctr_[idx] : gp_[idx].ctr;
        }
    } else if (L.kind == PmuLayout::Kind::amd) {
        if (ecx >= L.amd_counters) return fault(kVectorGP);  // NB/L3 counters not modelled
        v = gp_[ecx].ctr;
    } else {
        return fault(kVectorGP);
    }
    record(Access::rdpmc, ecx, v, 0, false);
    return v;
}

u64 SimCpu::rdtsc() {
    u64 v = tsc_;
    tsc_ += rdtsc_step_;
    return v;
}

}  // namespace sim
