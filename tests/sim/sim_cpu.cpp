// The simulated CPU: see sim_cpu.h for what is modelled and the sources.
#include "sim/sim_cpu.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>

#include "sim/sim_netburst.h"

namespace sim {

struct Shared {
    u64 seq = 0;
    u64 nth_wrmsr = 0;  // machine-wide countdown, 0 = off
    u8 nth_vector = 0;
};

namespace {

using pmulab::kVectorGP;
using pmulab::kVectorUD;

constexpr u64 width_mask(u32 bits) { return bits >= 64 ? ~u64(0) : (u64(1) << bits) - 1; }
constexpr u64 bit(u32 b) { return u64(1) << b; }

[[noreturn]] void die(const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    std::fprintf(stderr, "sim_cpu: ");
    std::vfprintf(stderr, fmt, ap);
    std::fprintf(stderr, "\n");
    va_end(ap);
    std::abort();
}

// CPUID vendor strings as EBX, EDX, ECX.
constexpr u32 kIntelEbx = 0x756e6547, kIntelEdx = 0x49656e69, kIntelEcx = 0x6c65746e;  // GenuineIntel
constexpr u32 kAmdEbx = 0x68747541, kAmdEdx = 0x69746e65, kAmdEcx = 0x444d4163;        // AuthenticAMD
constexpr u32 kHygonEbx = 0x6f677948;                                                  // HygonGenuine

// Leaves whose output depends on ECX (Intel SDM Vol. 2A Table 3-8; AMD APM Vol. 3 App. E).
bool subleaf_indexed(u32 leaf) {
    static const u32 k[] = {0x4,  0x7,  0xB,  0xD,  0xF,  0x10, 0x12, 0x14,       0x17,       0x18,
                            0x1B, 0x1D, 0x1E, 0x1F, 0x20, 0x23, 0x24, 0x8000001D, 0x80000020, 0x80000026};
    return std::find(std::begin(k), std::end(k), leaf) != std::end(k);
}

// The architectural event each fixed counter counts (SDM Table 20-2), as the
// (event select, unit mask) the model delivers it under. Fixed counter 2 counts
// the model's reference clock, delivered as UnHalted Reference Cycles (3CH/01H).
struct FixedKey {
    u16 event, umask;
};
constexpr FixedKey kFixedKeys[7] = {
    {0xC0, 0x00},  // INST_RETIRED.ANY
    {0x3C, 0x00},  // CPU_CLK_UNHALTED.THREAD
    {0x3C, 0x01},  // CPU_CLK_UNHALTED.REF_TSC
    {0xA4, 0x01},  // TOPDOWN.SLOTS
    {0x73, 0x00},  // TOPDOWN_BAD_SPECULATION
    {0x9C, 0x01},  // TOPDOWN_FE_BOUND
    {0xC2, 0x02},  // TOPDOWN_RETIRING
};

bool fixed_key(u32 i, u16 event, u16 umask) {
    return i < 7 && kFixedKeys[i].event == event && kFixedKeys[i].umask == umask;
}

// GLOBAL_STATUS bits other than counter overflows (SDM Figure 20-9/20-30).
constexpr u64 kStatusTopaPmi = bit(55), kStatusLbrFrz = bit(58), kStatusCtrFrz = bit(59), kStatusAsci = bit(60),
              kStatusUncore = bit(61), kStatusOvfBuf = bit(62), kStatusCondChgd = bit(63);

// IA32_MISC_ENABLE read-only bits: 7 performance monitoring available,
// 11 BTS unavailable, 12 PEBS unavailable.
constexpr u64 kMiscPerfmon = bit(7), kMiscBtsUnavail = bit(11), kMiscPebsUnavail = bit(12);
constexpr u64 kMiscReadOnly = kMiscPerfmon | kMiscBtsUnavail | kMiscPebsUnavail;

}  // namespace

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
    return u64(layout_.gp_mask) | (u64(layout_.fixed_mask) << 32);
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
            return 0;
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
        case Kind::mperf_ro: return kVectorGP;  // read-only aliases
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
        if (fixed ? !L.fixed(idx) : !L.gp(idx)) return fault(kVectorGP);
        v = fixed ? fixed_ctr_[idx] : gp_[idx].ctr;
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

// ---- counting ----

bool SimCpu::gp_enabled(u32 i) const {
    const Gp& g = gp_[i];
    if (!(g.ctl & evtsel::EN)) return false;
    if (!(g.ctl & (cpl_ == 0 ? evtsel::OS : evtsel::USR))) return false;
    if (layout_.kind == PmuLayout::Kind::intel && layout_.version >= 2 && !((global_ctrl_ >> i) & 1)) return false;
    if (layout_.kind == PmuLayout::Kind::amd && layout_.amd_v2 && !((global_ctrl_ >> i) & 1)) return false;
    // HG_ONLY with EFER.SVME = 0: HostOnly or GuestOnly alone counts nothing.
    if (layout_.kind == PmuLayout::Kind::amd && (((g.ctl >> 40) & 3) == 1 || ((g.ctl >> 40) & 3) == 2)) return false;
    return true;
}

bool SimCpu::gp_matches(u32 i, u16 event, u16 umask) const {
    u64 c = gp_[i].ctl;
    if (layout_.kind == PmuLayout::Kind::amd)
        return ((c & 0xff) | (((c >> 32) & 0xf) << 8)) == event && ((c >> 8) & 0xff) == umask;
    return (c & 0xff) == event && (((c >> 8) & 0xff) | (((c >> 40) & 0xff) << 8)) == umask;
}

bool SimCpu::fixed_enabled(u32 i) const {
    if (i >= 8) return false;  // no enable field in FIXED_CTR_CTRL
    u64 field = (fixed_ctrl_ >> (4 * i)) & 3;
    if (!(field & (cpl_ == 0 ? 1 : 2))) return false;
    return (global_ctrl_ >> (32 + i)) & 1;
}

u64 SimCpu::gp_increment(Gp& g, u64 c, u64 cycles) {
    if (!cycles) return 0;
    u32 cmask = (g.ctl >> 24) & 0xff;
    bool inv = g.ctl & evtsel::INV;
    bool edge = g.ctl & evtsel::EDGE;
    bool eq = layout_.eq && (g.ctl & evtsel::EQ);
    bool cond;
    if (cmask == 0) {
        if (!edge) return c * cycles;  // INV is ignored with CMASK = 0
        cond = c > 0;
    } else {
        cond = eq ? c == cmask : c >= cmask;
        if (inv) cond = !cond;
    }
    u64 inc = edge ? (cond && !g.prev ? 1 : 0) : (cond ? cycles : 0);
    g.prev = cond;
    return inc;
}

void SimCpu::add_gp(u32 i, u64 inc) {
    if (!inc) return;
    u64 mask = width_mask(layout_.gp_width);
    u64 old = gp_[i].ctr;
    bool ovf = inc > mask - old;
    gp_[i].ctr = (old + inc) & mask;
    if (!ovf) return;
    bool has_status = (layout_.kind == PmuLayout::Kind::intel && layout_.version >= 2) ||
                      (layout_.kind == PmuLayout::Kind::amd && layout_.amd_v2);
    if (has_status) global_status_ |= bit(i);
    if (gp_[i].ctl & evtsel::INT) ++pmis_;
}

void SimCpu::add_fixed(u32 i, u64 inc) {
    if (!inc) return;
    u64 mask = width_mask(layout_.fixed_width);
    u64 old = fixed_ctr_[i];
    bool ovf = inc > mask - old;
    fixed_ctr_[i] = (old + inc) & mask;
    if (!ovf) return;
    global_status_ |= bit(32 + i);
    if (i < 8 && (fixed_ctrl_ >> (4 * i + 3)) & 1) ++pmis_;
}

void SimCpu::deliver(u16 event, u16 umask, u64 n) {
    if (!n || layout_.kind == PmuLayout::Kind::none) return;
    // IRPerfCount: every retired instruction, every CPL, while HWCR.IRPerfEn.
    if (layout_.amd_irperf && event == 0xC0 && umask == 0 && ((hwcr_ >> 30) & 1))
        irperf_ = (irperf_ + n + (layout_.amd_irperf_erratum1054 ? n / 8 : 0)) & width_mask(48);
    for (u32 i = 0; i < 32; ++i)
        if (layout_.gp(i) && gp_enabled(i) && gp_matches(i, event, umask)) add_gp(i, gp_increment(gp_[i], 1, n));
    for (u32 i = 0; i < 16; ++i)
        if (layout_.fixed(i) && fixed_key(i, event, umask) && fixed_enabled(i)) add_fixed(i, n);
}

void SimCpu::event(u16 event, u16 umask, u64 n) { deliver(event, umask, n); }

void SimCpu::ref_cycles(u64 n) {
    // CPU_CLK_UNHALTED.REF_TSC advances at the reference (crystal/bus) clock, by
    // ref_step_ TSC ticks at a time, whenever the TSC (offset by ref_phase_) crosses a
    // multiple of ref_step_ (step 1: every tick, the default).
    u64 before = (tsc_ + ref_phase_) / ref_step_;
    tsc_ += n;
    u64 after = (tsc_ + ref_phase_) / ref_step_;
    deliver(0x3C, 0x01, (after - before) * ref_step_);
}

void SimCpu::run(u64 cycles, std::initializer_list<Occurrence> each) { run(cycles, std::vector<Occurrence>(each)); }

void SimCpu::run(u64 cycles, const std::vector<Occurrence>& each) {
    if (!cycles || layout_.kind == PmuLayout::Kind::none) return;
    // An SMI during every smi_every_-th run: the SMM handler's instructions and cycles are
    // counted like the measured code's (no FREEZE_WHILE_SMM in this model).
    if (smi_every_ && !in_smi_ && ++runs_ % smi_every_ == 0) {
        in_smi_ = true;
        run(smi_extra_, {{0xC0, 0x00, 1}});
        in_smi_ = false;
    }
    if (layout_.amd_efffreq) {
        aperf_ += cycles;
        mperf_ += cycles;
    }
    if (layout_.amd_irperf)
        for (const Occurrence& o : each)
            if (o.event == 0xC0 && o.umask == 0 && ((hwcr_ >> 30) & 1))
                irperf_ = (irperf_ + o.per_cycle * cycles +
                           (layout_.amd_irperf_erratum1054 ? o.per_cycle * cycles / 8 : 0)) &
                          width_mask(48);
    for (u32 i = 0; i < 32; ++i) {
        if (!layout_.gp(i) || !gp_enabled(i)) continue;
        u64 c = gp_matches(i, 0x3C, 0x00) ? 1 : 0;
        for (const Occurrence& o : each)
            if (gp_matches(i, o.event, o.umask)) c += o.per_cycle;
        add_gp(i, gp_increment(gp_[i], c, cycles));
    }
    for (u32 i = 0; i < 16; ++i) {
        if (!layout_.fixed(i) || !fixed_enabled(i)) continue;
        u64 c = fixed_key(i, 0x3C, 0x00) ? 1 : 0;
        for (const Occurrence& o : each)
            if (fixed_key(i, o.event, o.umask)) c += o.per_cycle;
        add_fixed(i, c * cycles);
    }
}

// ---- direct access ----

u64 SimCpu::peek(u32 msr) const {
    if (netburst() && NetBurstModel::owns(msr)) {
        if (!netburst()->exists(msr)) die("peek: CPU %u has no MSR 0x%x", index_, msr);
        return netburst()->peek(msr);
    }
    Slot s = classify(msr);
    if (s.kind == Kind::none) die("peek: CPU %u has no MSR 0x%x", index_, msr);
    if (s.kind == Kind::extra) return extra_.at(msr).value;
    return read_slot(s);
}

void SimCpu::poke(u32 msr, u64 v) {
    if (netburst() && NetBurstModel::owns(msr)) {
        if (!netburst()->exists(msr)) die("poke: CPU %u has no MSR 0x%x", index_, msr);
        netburst()->poke(msr, v);
        return;
    }
    Slot s = classify(msr);
    switch (s.kind) {
        case Kind::pmc:
        case Kind::a_pmc:
        case Kind::amd_ctr: gp_[s.index].ctr = v & width_mask(layout_.gp_width); return;
        case Kind::evtsel:
        case Kind::amd_ctl: gp_[s.index].ctl = v; return;
        case Kind::fixed_ctr: fixed_ctr_[s.index] = v & width_mask(layout_.fixed_width); return;
        case Kind::fixed_ctrl: fixed_ctrl_ = v; return;
        case Kind::global_status:
        case Kind::amd_gstatus: global_status_ = v; return;
        case Kind::global_ctrl:
        case Kind::amd_gctl: global_ctrl_ = v; return;
        case Kind::tsc: tsc_ = v; return;
        case Kind::pkrs: pkrs_ = v; return;
        case Kind::misc_enable: misc_enable_ = v; return;
        case Kind::amd_hwcr: hwcr_ = v; return;
        case Kind::amd_de_cfg: de_cfg_ = v; return;
        case Kind::amd_irperf: irperf_ = v & width_mask(48); return;
        case Kind::aperf:
        case Kind::aperf_ro: aperf_ = v; return;
        case Kind::mperf:
        case Kind::mperf_ro: mperf_ = v; return;
        case Kind::perf_caps: set_perf_capabilities(v); return;
        case Kind::extra: extra_.at(msr).value = v; return;
        default: die("poke: CPU %u MSR 0x%x has no state to set", index_, msr);
    }
}

void SimCpu::define_msr(u32 msr, u64 value, bool writable) { extra_[msr] = Extra{value, writable}; }

void SimCpu::fail_nth_wrmsr(u64 k, u8 vector) {
    nth_wrmsr_ = k;
    nth_vector_ = vector;
}
void SimCpu::fail_wrmsr_to(u32 msr, u8 vector) { fail_wr_[msr] = vector; }
void SimCpu::fail_rdmsr_to(u32 msr, u8 vector) { fail_rd_[msr] = vector; }
void SimCpu::clear_faults() {
    nth_wrmsr_ = 0;
    fail_wr_.clear();
    fail_rd_.clear();
}

std::vector<LogEntry> SimCpu::writes() const {
    std::vector<LogEntry> w;
    for (const LogEntry& e : log_)
        if (e.kind == Access::wrmsr) w.push_back(e);
    return w;
}

PmuState SimCpu::pmu_state() const {
    PmuState st;
    const PmuLayout& L = layout_;
    if (L.kind == PmuLayout::Kind::intel) {
        for (u32 i = 0; i < 32; ++i)
            if (L.gp(i)) {
                st[reg::PMC0 + i] = gp_[i].ctr;
                st[reg::PERFEVTSEL0 + i] = gp_[i].ctl;
            }
        for (u32 i = 0; i < 16; ++i)
            if (L.fixed(i)) st[reg::FIXED_CTR0 + i] = fixed_ctr_[i];
        if (L.version >= 2) {
            st[reg::FIXED_CTR_CTRL] = fixed_ctrl_;
            st[reg::GLOBAL_CTRL] = global_ctrl_;
            st[reg::GLOBAL_STATUS] = global_status_;
        }
        if (L.version >= 4) st[reg::GLOBAL_INUSE] = inuse();
    } else if (L.kind == PmuLayout::Kind::amd) {
        for (u32 i = 0; i < L.amd_counters && i < 32; ++i) {
            u32 ctl = L.amd_ext_core ? reg::AMD_EXT_CTL0 + 2 * i : reg::AMD_PERF_CTL0 + i;
            u32 ctr = L.amd_ext_core ? reg::AMD_EXT_CTL0 + 2 * i + 1 : reg::AMD_PERF_CTR0 + i;
            st[ctl] = gp_[i].ctl;
            st[ctr] = gp_[i].ctr;
        }
        if (L.amd_v2) {
            st[reg::AMD_GLOBAL_CTL] = global_ctrl_;
            st[reg::AMD_GLOBAL_STATUS] = global_status_;
        }
        if (L.amd_irperf) {
            st[reg::AMD_HWCR] = hwcr_;
            st[reg::AMD_IRPERF] = irperf_;
        }
    }
    if (netburst()) netburst()->state(&st);
    return st;
}

// ---------------------------------------------------------------------------
// SimMachine

SimMachine::SimMachine(const std::vector<CpuSpec>& cpus) : shared_(std::make_shared<Shared>()) {
    if (cpus.empty()) die("a machine needs at least one CPU");
    cpus_.reserve(cpus.size());
    for (u32 i = 0; i < cpus.size(); ++i) cpus_.emplace_back(i, cpus[i], shared_);
    bsp_ = 0;
    for (u32 i = 0; i < cpus_.size(); ++i)
        if (cpus_[i].topology().bsp) {
            bsp_ = i;
            break;
        }
    current_ = bsp_;
}

SimMachine SimMachine::from_snapshots(const std::vector<CpuidSnapshot>& snaps, u64 perf_caps) {
    std::vector<CpuSpec> specs;
    for (u32 i = 0; i < snaps.size(); ++i) {
        CpuSpec c;
        c.cpuid = snaps[i];
        c.perf_capabilities = perf_caps;
        const CpuidSnapshot& s = snaps[i];
        u32 max = s.get(0).eax;
        CpuidRegs b0, b1;
        u32 apic = (s.get(1).ebx >> 24) & 0xff;
        u32 smt_shift = 0, core_shift = 0;
        if (max >= 0xB && s.find(0xB, 0, &b0) && (b0.ebx & 0xffff)) {
            apic = b0.edx;
            smt_shift = b0.eax & 0x1f;
            core_shift = s.find(0xB, 1, &b1) ? (b1.eax & 0x1f) : smt_shift;
        } else {
            // Without leaf 0BH: one thread per core, the APIC ID is the core number.
            core_shift = 8;
        }
        c.topo.apic_id = apic;
        c.topo.thread = apic & u32(width_mask(smt_shift));
        c.topo.core = (apic >> smt_shift) & u32(width_mask(core_shift - smt_shift));
        c.topo.package = core_shift >= 32 ? 0 : apic >> core_shift;
        c.topo.bsp = i == 0;
        specs.push_back(c);
    }
    return SimMachine(specs);
}

SimMachine SimMachine::from_records(const pmulab::Vec<pmulab::CpuRecord>& recs, u64 perf_caps) {
    std::vector<CpuidSnapshot> snaps;
    for (const pmulab::CpuRecord& r : recs) snaps.push_back(r.raw);
    SimMachine m = from_snapshots(snaps, perf_caps);
    for (u32 i = 0; i < recs.size(); ++i) {
        CpuTopology& t = m.cpu(i).topology();
        t.apic_id = recs[i].topo.apic_id;
        if (recs[i].topology_known) {
            t.package = recs[i].topo.package;
            t.core = recs[i].topo.core;
            t.thread = recs[i].topo.thread;
        }
    }
    return m;
}

void SimMachine::set_bsp(u32 i) {
    for (u32 k = 0; k < size(); ++k) cpus_[k].topology().bsp = k == i;
    bsp_ = current_ = i;
}

void SimMachine::fail_nth_wrmsr(u64 k, u8 vector) {
    shared_->nth_wrmsr = k;
    shared_->nth_vector = vector;
}

std::vector<LogEntry> SimMachine::log_all() const {
    std::vector<LogEntry> all;
    for (const SimCpu& c : cpus_) all.insert(all.end(), c.log().begin(), c.log().end());
    std::sort(all.begin(), all.end(), [](const LogEntry& a, const LogEntry& b) { return a.seq < b.seq; });
    return all;
}

void SimMachine::clear_logs() {
    for (SimCpu& c : cpus_) c.clear_log();
}

CpuidRegs SimMachine::cpuid(u32 leaf, u32 sub) { return cpus_[current_].cpuid(leaf, sub); }
Result<u64> SimMachine::rdmsr(u32 msr) { return cpus_[current_].rdmsr(msr); }
Status SimMachine::wrmsr(u32 msr, u64 v) { return cpus_[current_].wrmsr(msr, v); }
Result<u64> SimMachine::rdpmc(u32 index) { return cpus_[current_].rdpmc(index); }
u64 SimMachine::rdtsc() { return cpus_[current_].rdtsc(); }

Result<CpuTopology> SimMachine::topology(u32 cpu) {
    if (cpu >= size()) return Error::make(pmulab::Errc::invalid_argument, "no logical processor %u", cpu);
    return cpus_[cpu].topology();
}

Status SimMachine::run_on_cpu(u32 cpu, pmulab::CpuFn fn, void* ctx) {
    using pmulab::Errc;
    ++run_calls_;
    // The same checks, in the same order and words, as the EFI implementation.
    if (cpu >= size())
        return Error::make(Errc::invalid_argument, "no logical processor %u (there are %u)", cpu, size());
    if (in_ap_)
        return Error::make(Errc::internal,
                           "run_on_cpu(%u) called on CPU %u: MP Services may only be used "
                           "from the BSP",
                           cpu, current_);
    if (cpu == current_) {
        fn(ctx);
        return pmulab::ok_status();
    }
    SimCpu& c = cpus_[cpu];
    if (!c.topology().enabled)
        return Error::make(Errc::unsupported, "logical processor %u is disabled by the firmware", cpu);
    if (c.unreachable())
        return Error::make(Errc::io, "MP Services StartupThisAP(CPU %u) failed: %s", cpu,
                           c.unreachable_status().c_str());
    u32 saved = current_;
    current_ = cpu;
    in_ap_ = true;
    fn(ctx);
    in_ap_ = false;
    current_ = saved;
    return pmulab::ok_status();
}

// ---------------------------------------------------------------------------
// Builders

namespace {

u32 ceil_log2(u32 n) {
    u32 b = 0;
    while ((1u << b) < n) ++b;
    return b;
}

void set_vendor(CpuidSnapshot& s, u32 max_leaf, u32 ebx, u32 edx, u32 ecx) { s.set(0, 0, {max_leaf, ebx, ecx, edx}); }

void set_brand(CpuidSnapshot& s, const char* brand) {
    char b[48] = {};
    for (int i = 0; i < 47 && brand[i]; ++i) b[i] = brand[i];
    for (u32 l = 0; l < 3; ++l) {
        u32 r[4];
        for (u32 k = 0; k < 4; ++k) {
            const unsigned char* p = reinterpret_cast<const unsigned char*>(b + 16 * l + 4 * k);
            r[k] = u32(p[0]) | (u32(p[1]) << 8) | (u32(p[2]) << 16) | (u32(p[3]) << 24);
        }
        s.set(0x80000002 + l, 0, {r[0], r[1], r[2], r[3]});
    }
}

// Leaf 0BH, sub-leaves 0 (SMT) and 1 (core).
void set_leaf_0b(CpuidSnapshot& s, u32 apic, const TopoSpec& t) {
    u32 tbits = ceil_log2(t.threads), cbits = ceil_log2(t.cores);
    s.set(0xB, 0, {tbits, t.threads, 0x100, apic});
    s.set(0xB, 1, {tbits + cbits, t.threads * t.cores, 0x201, apic});
}

u32 apic_of(u32 idx, const TopoSpec& t, CpuTopology* topo) {
    u32 tbits = ceil_log2(t.threads), cbits = ceil_log2(t.cores);
    u32 thread = idx % t.threads, core = (idx / t.threads) % t.cores, pkg = idx / (t.threads * t.cores);
    if (topo) {
        topo->thread = thread;
        topo->core = core;
        topo->package = pkg;
        topo->bsp = idx == 0;
    }
    u32 apic = (pkg << (tbits + cbits)) | (core << tbits) | thread;
    if (topo) topo->apic_id = apic;
    return apic;
}

}  // namespace

CpuidSnapshot intel_snapshot(const IntelCpuidSpec& sp, u32 apic, const TopoSpec& t) {
    CpuidSnapshot s;
    set_vendor(s, sp.max_leaf, kIntelEbx, kIntelEdx, kIntelEcx);
    u32 per_pkg = 1u << ceil_log2(t.cores * t.threads);
    u32 ebx1 = ((apic & 0xff) << 24) | ((per_pkg & 0xff) << 16) | 0x0800;
    u32 ecx1 = (0x0000e3bd & ~(1u << 15)) | (sp.pdcm ? 1u << 15 : 0) | (sp.hypervisor ? 1u << 31 : 0);
    s.set(1, 0, {sp.signature, ebx1, ecx1, 0xbfebfbff});
    if (sp.max_leaf >= 7) {
        s.set(7, 0, {sp.leaf_23 ? 1u : 0u, 0, 0, sp.hybrid ? 1u << 15 : 0u});
        if (sp.leaf_23) s.set(7, 1, {1u << 8, 0, 0, 0});
    }
    if (sp.max_leaf >= 0xA) s.set(0xA, 0, sp.leaf_0a);
    if (sp.max_leaf >= 0xB) set_leaf_0b(s, apic, t);
    if (sp.max_leaf >= 0x1A && sp.hybrid) s.set(0x1A, 0, {sp.leaf_1a_eax, 0, 0, 0});
    if (sp.max_leaf >= 0x23 && sp.leaf_23)
        for (u32 i = 0; i < 4; ++i)
            if (i == 0 || ((sp.leaf_23_sub[0].eax >> i) & 1)) s.set(0x23, i, sp.leaf_23_sub[i]);
    s.set(0x80000000, 0, {0x80000008, 0, 0, 0});
    s.set(0x80000001, 0, {0, 0, 0x121, 0x2c100800});
    set_brand(s, sp.brand);
    return s;
}

SimMachine intel_machine(const IntelCpuidSpec& sp, const TopoSpec& t, u64 caps, const PmuOverrides& ov) {
    std::vector<CpuSpec> specs;
    for (u32 i = 0; i < t.count(); ++i) {
        CpuSpec c;
        u32 apic = apic_of(i, t, &c.topo);
        c.cpuid = intel_snapshot(sp, apic, t);
        c.perf_capabilities = caps;
        c.pmu = ov;
        specs.push_back(c);
    }
    return SimMachine(specs);
}

SimMachine intel_v1(u32 n) {
    IntelCpuidSpec sp;
    sp.max_leaf = 0xA;
    sp.signature = 0x000006E8;  // Core Duo (Yonah)
    sp.pdcm = false;
    sp.brand = "Genuine Intel(R) CPU T2400 @ 1.83GHz";
    sp.leaf_0a = {0x07280201, 0, 0, 0};
    return intel_machine(sp, {1, n, 1});
}

SimMachine intel_v2(u32 n, u64 caps) {
    IntelCpuidSpec sp;
    sp.max_leaf = 0xD;
    sp.signature = 0x00010676;  // Core 2 (Penryn)
    sp.brand = "Intel(R) Core(TM)2 Duo CPU E8400 @ 3.00GHz";
    sp.leaf_0a = {0x07280202, 0, 0, 0x00000503};
    return intel_machine(sp, {1, n, 1}, caps);
}

SimMachine intel_v2_conroe(u32 n) {
    IntelCpuidSpec sp;
    sp.max_leaf = 0xA;
    sp.signature = 0x000006F4;  // Core 2 (Conroe)
    sp.brand = "Intel(R) Core(TM)2 CPU 6400 @ 2.13GHz";
    sp.leaf_0a = {0x07280202, 0, 0, 0};
    PmuOverrides ov;
    ov.fixed_count = 3;
    ov.fixed_width = 40;
    return intel_machine(sp, {1, n, 1}, 0, ov);
}

SimMachine intel_v3(u32 n, u64 caps) {
    IntelCpuidSpec sp;
    sp.max_leaf = 0xD;
    sp.signature = 0x000206A7;  // Sandy Bridge
    sp.brand = "Intel(R) Core(TM) i7-2600 CPU @ 3.40GHz";
    sp.leaf_0a = {0x07300403, 0, 0, 0x00000603};
    return intel_machine(sp, {1, std::max<u32>(1, n / 2), n >= 2 ? 2u : 1u}, caps);
}

SimMachine intel_v4_goldmont_plus(u32 n) {
    IntelCpuidSpec sp;
    sp.max_leaf = 0x18;
    sp.signature = 0x000706A8;
    sp.brand = "Intel(R) Pentium(R) Silver N5030 CPU @ 1.10GHz";
    sp.leaf_0a = {0x07300404, 0, 0, 0x00008603};
    return intel_machine(sp, {1, n, 1}, kGoldmontPlusPerfCaps);
}

SimMachine intel_v5(u32 ecx_mask, u32 edx_count, u32 n) {
    IntelCpuidSpec sp;
    sp.max_leaf = 0x20;
    sp.signature = 0x000A0671;  // Rocket Lake
    sp.brand = "pmulab simulated v5 CPU";
    sp.leaf_0a = {0x07300405, 0, ecx_mask, (edx_count & 0x1f) | (48u << 5) | (1u << 15)};
    return intel_machine(sp, {1, n, 1}, 0x2000);
}

SimMachine intel_v6(u32 gp_bitmap, u32 fixed_bitmap, u32 n) {
    IntelCpuidSpec sp;
    sp.max_leaf = 0x23;
    sp.signature = 0x000C0652;  // Arrow Lake
    sp.brand = "pmulab simulated v6 CPU";
    sp.leaf_0a = {0x07300806, 0, 0x7, 0x00008603};
    sp.leaf_23 = true;
    sp.leaf_23_sub[0] = {0x3, 0x3, 0x8, 0};  // sub-leaves 0-1; UMASK2, EQ; 8 slots/cycle
    sp.leaf_23_sub[1] = {gp_bitmap, fixed_bitmap, 0, 0};
    return intel_machine(sp, {1, n, 1}, 0x2000);
}

SimMachine intel_hybrid() {
    IntelCpuidSpec p;
    p.max_leaf = 0x20;
    p.signature = 0x00090672;  // Alder Lake
    p.brand = "12th Gen Intel(R) Core(TM) i5-12600K";
    p.hybrid = true;
    p.leaf_1a_eax = 0x40000001;
    p.leaf_0a = {0x08300805, 0, 0xf, 0x00008604};
    IntelCpuidSpec e = p;
    e.leaf_1a_eax = 0x20000001;
    e.leaf_0a = {0x07300605, 0, 0x7, 0x00008603};
    // APIC IDs: P core c thread t -> 2c + t; E core k -> 8 + 2k.
    TopoSpec t{1, 8, 2};
    std::vector<CpuSpec> specs;
    for (u32 i = 0; i < 8; ++i) {
        CpuSpec c;
        bool pcore = i < 4;
        u32 core = pcore ? i / 2 : 4 + (i - 4);
        u32 thread = pcore ? i % 2 : 0;
        c.topo.apic_id = core * 2 + thread;
        c.topo.core = core;
        c.topo.thread = thread;
        c.topo.bsp = i == 0;
        c.cpuid = intel_snapshot(pcore ? p : e, u32(c.topo.apic_id), t);
        c.perf_capabilities = 0x33c5;
        specs.push_back(c);
    }
    return SimMachine(specs);
}

namespace {

CpuSpec tcg_spec(u32 i, u32 n, bool intel) {
    CpuSpec c;
    TopoSpec t{1, n, 1};
    u32 apic = apic_of(i, t, &c.topo);
    CpuidSnapshot& s = c.cpuid;
    if (intel) {
        set_vendor(s, 0xD, kIntelEbx, kIntelEdx, kIntelEcx);
        s.set(1, 0, {0x000506E3, (apic << 24) | 0x0800, 0xfffa3203, 0x0f8bfbff});  // Skylake-Client
        s.set(7, 0, {0, 0x029c6fbb, 0, 0});
        s.set(0xA, 0, {0, 0, 0, 0});
        set_brand(s, "Intel Core Processor (Skylake)");
        s.set(0x80000000, 0, {0x80000008, 0, 0, 0});
        s.set(0x80000001, 0, {0, 0, 0x121, 0x2c100800});
    } else {
        set_vendor(s, 0xD, kAmdEbx, kAmdEdx, kAmdEcx);
        s.set(1, 0, {0x00060FB1, (apic << 24) | 0x0800, 0x80002001, 0x078bfbfd});  // qemu64: family 0Fh model 6Bh
        set_brand(s, "QEMU Virtual CPU version 2.5+");
        s.set(0x80000000, 0, {0x8000000A, kAmdEbx, kAmdEcx, kAmdEdx});
        s.set(0x80000001, 0, {0x00060FB1, 0, 0x00000065, 0x2fd3fbff});
    }
    set_leaf_0b(s, apic, t);
    c.pmu.none = true;
    c.unknown = UnknownMsr::read_zero;
    c.rdpmc_ud = true;
    return c;
}

}  // namespace

SimMachine qemu_tcg(u32 n) {
    std::vector<CpuSpec> specs;
    for (u32 i = 0; i < n; ++i) specs.push_back(tcg_spec(i, n, false));
    return SimMachine(specs);
}

SimMachine qemu_tcg_intel(u32 n) {
    std::vector<CpuSpec> specs;
    for (u32 i = 0; i < n; ++i) specs.push_back(tcg_spec(i, n, true));
    return SimMachine(specs);
}

SimMachine amd_zen(u32 n, bool v2) {
    std::vector<CpuSpec> specs;
    TopoSpec t{1, n, 1};
    for (u32 i = 0; i < n; ++i) {
        CpuSpec c;
        u32 apic = apic_of(i, t, &c.topo);
        CpuidSnapshot& s = c.cpuid;
        set_vendor(s, 0x10, kAmdEbx, kAmdEdx, kAmdEcx);
        s.set(1, 0, {0x00B40F40, (apic << 24) | 0x0800, 0x7ed8320b, 0x178bfbff});  // family 1Ah (Zen 5)
        set_leaf_0b(s, apic, t);
        set_brand(s, v2 ? "AMD Ryzen 9 9950X 16-Core Processor" : "AMD Ryzen (no PerfMonV2)");
        s.set(0x80000000, 0, {0x80000028, kAmdEbx, kAmdEcx, kAmdEdx});
        s.set(0x80000001, 0, {0x00B40F40, 0, 0x75c237ff, 0x2fd3fbff});  // ECX[23] PerfCtrExtCore
        if (v2) s.set(0x80000022, 0, {0x7, 0x00084106, 0x3, 0});
        specs.push_back(c);
    }
    return SimMachine(specs);
}

namespace {

// An AMD machine from the leaves that matter: signature, 8000_0001H:ECX, optional
// 8000_0022H, IRPerfCount and EffFreq.
SimMachine amd_machine(u32 n, u32 signature, u32 ext1_ecx, bool v2, CpuidRegs leaf22, bool irperf, bool efffreq,
                       const char* brand, u32 emax, u32 ext7_edx) {
    std::vector<CpuSpec> specs;
    TopoSpec t{1, n, 1};
    for (u32 i = 0; i < n; ++i) {
        CpuSpec c;
        u32 apic = apic_of(i, t, &c.topo);
        CpuidSnapshot& s = c.cpuid;
        set_vendor(s, 0x10, kAmdEbx, kAmdEdx, kAmdEcx);
        s.set(1, 0, {signature, (apic << 24) | 0x0800, 0x7ed8320b, 0x178bfbff});
        s.set(6, 0, {0x4, 0, efffreq ? 1u : 0u, 0});
        set_leaf_0b(s, apic, t);
        set_brand(s, brand);
        s.set(0x80000000, 0, {emax, kAmdEbx, kAmdEcx, kAmdEdx});
        s.set(0x80000001, 0, {signature, 0, ext1_ecx, 0x2fd3fbff});
        if (emax >= 0x80000007) s.set(0x80000007, 0, {0, 0, 0, ext7_edx});
        s.set(0x80000008, 0, {0x3030, irperf ? 0x2u : 0u, 0, 0});
        if (v2) s.set(0x80000022, 0, leaf22);
        specs.push_back(c);
    }
    return SimMachine(specs);
}

}  // namespace

SimMachine amd_zen1(u32 n) {
    // Family 17h model 01h (Ryzen 7 1800X): PerfCtrExtCore, IRPerfCount enumerated
    // (erratum 1054), 8000_0007H:EDX = 0x6799 (EffFreqRO bit 10 set).
    return amd_machine(n, 0x00800F11, 0x35C233FF, false, {}, true, true, "AMD Ryzen 7 1800X Eight-Core Processor",
                       0x8000001F, 0x6799);
}

SimMachine amd_zen3(u32 n) {
    // Family 19h model 21h (Ryzen 5000): maximum extended leaf 8000_0020H, so no PerfMonV2.
    return amd_machine(n, 0x00A20F10, 0x75C237FF, false, {}, true, true, "AMD Ryzen 7 5800X 8-Core Processor",
                       0x80000020, 0x6799);
}

SimMachine amd_zen4(u32 n) {
    // Family 19h model 61h (Ryzen 7000): 8000_0022H EAX[0] PerfMonV2, EBX[3:0] = 6 core
    // counters, EBX[9:4] = 16 LBR entries (LbrV2 EAX[1]), EBX[15:10] = 16 DF counters.
    return amd_machine(n, 0x00A60F12, 0x75C237FF, true, {0x3, 0x00004106, 0, 0}, true, true,
                       "AMD Ryzen 9 7950X 16-Core Processor", 0x80000028, 0x6799);
}

SimMachine amd_k10(u32 n) {
    // Family 10h (Phenom II): legacy PerfEvtSel0-3 only; no IRPerfCount.
    return amd_machine(n, 0x00100F42, 0x000037FF, false, {}, false, true, "AMD Phenom(tm) II X4 940 Processor",
                       0x8000001B, 0x1F9);
}

}  // namespace sim
