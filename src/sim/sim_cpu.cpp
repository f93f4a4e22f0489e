// The simulated logical processor: CPUID, its own MSRs (the PMU's are its PmuModel's,
// sim_pmu.h), the logged instructions. See sim_cpu.h for what is modelled and the sources.
#include "sim/sim_core.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>

#include "sim/sim_internal.h"
#include "sim/sim_netburst.h"
#include "sim/sim_topdown.h"

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
    static const char* const kNames[] = {"RDMSR", "WRMSR", "RDPMC"};
    return unsigned(a) < 3 ? kNames[unsigned(a)] : "?";
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
// SimCpu

SimCpu::SimCpu(u32 index, const CpuSpec& spec, std::shared_ptr<Shared> shared)
    : index_(index), spec_(spec), shared_(std::move(shared)) {
    PmuLayout layout = derive_layout(spec_.cpuid, spec_.perf_capabilities, spec_.pmu);
    model_ = make_pmu_model(index, spec_, layout);
    lbr_ = LbrStack(lbr_layout(spec_.cpuid, layout.pdcm ? layout.perf_caps : 0));
    ibs_ = IbsUnit(spec_.cpuid);
    rapl_ = SimRapl(spec_.cpuid, spec_.unknown == UnknownMsr::read_zero);
    misc_enable_ = 1 | kMiscBtsUnavail | kMiscPebsUnavail | (layout.kind == PmuLayout::Kind::intel ? kMiscPerfmon : 0);
    if (model_->pebs_available()) misc_enable_ &= ~kMiscPebsUnavail;  // sim_pebs.h
    // The reference clock steps like the hardware's: REF_TSC advances by the TSC/crystal
    // ratio of CPUID.15H (EBX/EAX, SDM Vol. 2A) once per crystal tick where an Intel part
    // enumerates it (e.g. 78 for 156/2), by 1 elsewhere; set_ref_clock overrides.
    const CpuidSnapshot& s = spec_.cpuid;
    CpuidRegs l15;
    if (layout.kind == PmuLayout::Kind::intel && s.get(0).eax >= 0x15 && s.find(0x15, 0, &l15) && l15.eax && l15.ebx)
        ref_step_ = std::max<u64>(1, (u64(l15.ebx) + l15.eax / 2) / l15.eax);
}

SimCpu::SimCpu(SimCpu&&) noexcept = default;
SimCpu& SimCpu::operator=(SimCpu&&) noexcept = default;
SimCpu::~SimCpu() = default;

void SimCpu::set_unreachable(const char* efi_status) { unreachable_status_ = efi_status ? efi_status : ""; }

void SimCpu::set_cpl(u8 cpl) {
    cpl_ = cpl;
    model_->set_cpl(cpl);
}

void SimCpu::set_perf_capabilities(u64 v) {
    spec_.perf_capabilities = v;
    PmuLayout layout = derive_layout(spec_.cpuid, v, spec_.pmu);
    model_->set_layout(layout);
    lbr_ = LbrStack(lbr_layout(spec_.cpuid, layout.pdcm ? layout.perf_caps : 0));  // the LBR format
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

// ---- the logical processor's own MSRs ----

namespace {

// The writable bits of MISC_FEATURE_CONTROL (1A4H) per family 6 model, 0 where the MSR does
// not exist. Intel's 2014 prefetcher disclosure (Nehalem..Broadwell: bits 0-3); SDM Vol. 4
// Table 2-20 for the later big cores; Table 2-12 for Goldmont (bits 0 and 2); the Xeon Phi
// table (bits 0 DCU and 1 L2); Intel 357930 §2.1/§4.1 for E cores (Gracemont 0, 2-5;
// Crestmont and Skymont 0-8; Darkmont, Clearwater Forest 06_DDH, also 12).
u64 intel_prefetch_bits(const CpuidSnapshot& s, u32 model) {
    switch (sim_atom_core(s)) {
        case SimAtom::gracemont: return 0x3D;
        case SimAtom::crestmont:
        case SimAtom::skymont: return model == 0xDD ? 0x11FF : 0x1FF;
        case SimAtom::none: break;
    }
    // Bits 0-3: Nehalem, Westmere, Sandy/Ivy Bridge, Haswell, Broadwell; Skylake..Comet Lake,
    // Cannon..Tiger Lake, Rocket Lake, the Xeons since; the P cores of Alder/Raptor, Meteor,
    // Arrow and Lunar Lake.
    static constexpr u8 kBig[] = {0x1A, 0x1E, 0x1F, 0x2E, 0x25, 0x2C, 0x2F, 0x2A, 0x2D, 0x3A, 0x3E, 0x3C, 0x3F,
                                  0x45, 0x46, 0x3D, 0x47, 0x4F, 0x56, 0x4E, 0x5E, 0x55, 0x8E, 0x9E, 0xA5, 0xA6,
                                  0x66, 0x7D, 0x7E, 0x6A, 0x6C, 0x8C, 0x8D, 0xA7, 0x8F, 0xCF, 0xAD, 0xAE, 0x97,
                                  0x9A, 0xB7, 0xBA, 0xBF, 0xAA, 0xAC, 0xB5, 0xC5, 0xC6, 0xBD};
    if (std::find(std::begin(kBig), std::end(kBig), model) != std::end(kBig)) return 0xF;
    if (model == 0x5C || model == 0x5F || model == 0x7A) return 0x5;  // Goldmont, Goldmont Plus
    if (model == 0x57 || model == 0x85) return 0x3;                   // Knights Landing, Knights Mill
    return 0;
}

}  // namespace

// The E cores' L2 prefetcher MSRs 1320H-1327H (357930 §4.2-§4.9): the bits some E core
// generation documents, per register; the rest are reserved (#GP). P cores have none.
constexpr u64 kEcorePrefetchWritable[8] = {
    ~(bit(5) | bit(28) | bit(29) | bit(52) | bit(63)),                   // 1320H
    bit(0) | (0x3FFFFFull << 11) | bit(36) | (0x7Full << 40) | bit(63),  // 1321H: 0, 32:11, 36, 46:40, 63
    0xFFFull | (0x1FFFFFFFFFull << 14) | (0x7ull << 59),                 // 1322H: 11:0, 50:14, 61:59
    (0x3ull << 34) | (0x1Full << 37) | (0x1Full << 44),                  // 1323H: 35:34, 41:37, 48:44
    0xFFull << 54,                                                       // 1324H: 61:54
    0x7FFull | (0x3Full << 14) | (0xFFFFFFFull << 32),                   // 1325H: 10:0, 19:14, 59:32
    0x3Full << 56,                                                       // 1326H: 61:56
    0x7FFFFFFull,                                                        // 1327H: 26:0
};

u64 SimCpu::ecore_prefetch_bits(u32 m) const {
    if (m < reg::ECORE_PREFETCH_FIRST || m > reg::ECORE_PREFETCH_LAST) return 0;
    if (!pmu().vendor_intel || sim_atom_core(spec_.cpuid) == SimAtom::none) return 0;
    return kEcorePrefetchWritable[m - reg::ECORE_PREFETCH_FIRST];
}

u64 SimCpu::prefetch_bits(u32 m) const {
    if (m != reg::MISC_FEATURE_CONTROL && m != reg::AMD_PREFETCH_CONTROL) return 0;
    const CpuidSnapshot& s = spec_.cpuid;
    u32 eax = s.get(1).eax, base_family = (eax >> 8) & 0xF;
    u32 family = base_family == 0xF ? base_family + ((eax >> 20) & 0xFF) : base_family;
    u32 model = (eax >> 4) & 0xF;
    if (base_family == 0x6 || base_family == 0xF) model |= ((eax >> 16) & 0xF) << 4;
    if ((s.get(1).ecx >> 31) & 1) return 0;  // KVM and QEMU give guests neither MSR
    if (m == reg::MISC_FEATURE_CONTROL && pmu().vendor_intel && family == 6) return intel_prefetch_bits(s, model);
    bool amd = s.get(0).ebx == 0x68747541u;  // "Auth"
    if (m == reg::AMD_PREFETCH_CONTROL && amd && (family == 0x19 || family == 0x1A)) return 0x2F;
    return 0;
}

SimCpu::Reg SimCpu::classify(u32 m) const {
    const PmuLayout& L = pmu();
    if (extra_.count(m)) return Reg::extra;
    if (m == reg::PERF_CAPABILITIES && L.pdcm) return Reg::perf_caps;
    if (m == reg::TSC) return Reg::tsc;
    if (m == reg::BIOS_SIGN_ID) return Reg::bios_sign;
    if (m == reg::PKRS) return Reg::pkrs;
    if (m == reg::MISC_ENABLE && L.vendor_intel) return Reg::misc_enable;
    if (prefetch_bits(m)) return Reg::prefetch;
    if (ecore_prefetch_bits(m)) return Reg::ecore_prefetch;
    if (shared_->uncore && shared_->uncore->claims(m)) return Reg::uncore;
    if (shared_->amd_l3 && shared_->amd_l3->claims(m)) return Reg::amd_l3;
    if (m == reg::DEBUGCTL && L.debugctl) return Reg::debugctl;
    if (m == reg::SMI_COUNT && L.smi_count) return Reg::smi_count;
    if (lbr_.claims(m)) return Reg::lbr;
    if (ibs_.claims(m)) return Reg::ibs;
    if (rapl_.claims(m)) return Reg::rapl;
    // APERF/MPERF: Intel CPUID.06H:ECX[0]; AMD EffFreq, with the read-only aliases.
    if ((L.efffreq || L.amd_efffreq) && m == reg::APERF) return Reg::aperf;
    if ((L.efffreq || L.amd_efffreq) && m == reg::MPERF) return Reg::mperf;
    if (L.amd_efffreq && L.amd_efffreq_ro && m == reg::AMD_APERF_RO) return Reg::aperf_ro;
    if (L.amd_efffreq && L.amd_efffreq_ro && m == reg::AMD_MPERF_RO) return Reg::mperf_ro;
    return Reg::none;
}

bool SimCpu::msr_exists(u32 msr) const {
    if (!extra_.count(msr) && model_->claims(msr)) return model_->exists(msr);
    return classify(msr) != Reg::none;
}

u64 SimCpu::read_reg(Reg r, u32 msr) const {
    switch (r) {
        case Reg::perf_caps: return pmu().perf_caps;
        case Reg::tsc: return tsc_;
        case Reg::bios_sign: return u64(spec_.microcode) << 32;
        case Reg::pkrs: return pkrs_;
        case Reg::misc_enable: return misc_enable_;
        case Reg::prefetch: return prefetch_ctl_;
        case Reg::ecore_prefetch: return ecore_prefetch_[msr - reg::ECORE_PREFETCH_FIRST];
        case Reg::debugctl: return debugctl_;
        case Reg::smi_count: return smi_count_;
        case Reg::aperf:
        case Reg::aperf_ro: return aperf_;
        case Reg::mperf:
        case Reg::mperf_ro: return mperf_;
        case Reg::extra: return extra_.at(msr).value;
        case Reg::uncore: {
            u64 v = 0;
            shared_->uncore->rdmsr(msr, &v);
            return v;
        }
        case Reg::amd_l3: {
            u64 v = 0;
            shared_->amd_l3->rdmsr(msr, &v);
            return v;
        }
        case Reg::rapl: return rapl_.read(msr, tsc_);
        case Reg::lbr: {
            u64 v = 0;
            lbr_.rdmsr(msr, &v);
            return v;
        }
        case Reg::ibs: {
            u64 v = 0;
            ibs_.rdmsr(msr, &v);
            return v;
        }
        case Reg::none: break;
    }
    return 0;
}

u8 SimCpu::write_reg(Reg r, u32 msr, u64 v) {
    switch (r) {
        case Reg::tsc: tsc_ = v; return 0;
        case Reg::bios_sign: return 0;  // the microcode-revision read protocol: accepted, no effect
        case Reg::pkrs:
            if (v >> 32) return kVectorGP;  // bits 63:32 reserved (QEMU and the SDM)
            pkrs_ = v;
            return 0;
        case Reg::misc_enable: misc_enable_ = (v & ~kMiscReadOnly) | (misc_enable_ & kMiscReadOnly); return 0;
        case Reg::aperf: aperf_ = v; return 0;
        case Reg::mperf: mperf_ = v; return 0;
        case Reg::lbr: return lbr_.wrmsr(msr, v);
        case Reg::uncore: return shared_->uncore->wrmsr(msr, v);
        case Reg::amd_l3: return shared_->amd_l3->wrmsr(msr, v);
        case Reg::ibs: return ibs_.wrmsr(msr, v);
        case Reg::prefetch:
            if (v & ~prefetch_bits(msr)) return kVectorGP;  // the other bits are reserved
            prefetch_ctl_ = v;
            return 0;
        case Reg::ecore_prefetch:
            if (v & ~ecore_prefetch_bits(msr)) return kVectorGP;  // reserved bits
            ecore_prefetch_[msr - reg::ECORE_PREFETCH_FIRST] = v;
            return 0;
        case Reg::debugctl: {
            // SDM Vol. 3B §18.4.1 (IA32_DEBUGCTL): LBR 0, BTF 1, TR 6, BTS 7, BTINT 8,
            // BTS_OFF_OS 9, BTS_OFF_USR 10, FREEZE_LBRS_ON_PMI 11, FREEZE_PERFMON_ON_PMI 12,
            // ENABLE_UNCORE_PMI 13, FREEZE_WHILE_SMM 14 (only where enumerated), RTM_DEBUG 15.
            u64 ok = bit(0) | bit(1) | (0xffull << 6) | bit(15) | (pmu().freeze_while_smm ? bit(14) : 0);
            if (v & ~ok) return kVectorGP;
            debugctl_ = v;
            return 0;
        }
        case Reg::extra: {
            Extra& x = extra_.at(msr);
            if (!x.writable) return kVectorGP;
            x.value = v;
            return 0;
        }
        case Reg::perf_caps:
        case Reg::smi_count:
        case Reg::aperf_ro:
        case Reg::mperf_ro:  // read-only
        case Reg::rapl:      // POWER_UNIT and the energy status counters: read-only
        case Reg::none: break;
    }
    return kVectorGP;
}

bool SimCpu::poke_reg(Reg r, u32 msr, u64 v) {
    switch (r) {
        case Reg::tsc: tsc_ = v; return true;
        case Reg::pkrs: pkrs_ = v; return true;
        case Reg::misc_enable: misc_enable_ = v; return true;
        case Reg::prefetch: prefetch_ctl_ = v; return true;
        case Reg::ecore_prefetch: ecore_prefetch_[msr - reg::ECORE_PREFETCH_FIRST] = v; return true;
        case Reg::aperf:
        case Reg::aperf_ro: aperf_ = v; return true;
        case Reg::mperf:
        case Reg::mperf_ro: mperf_ = v; return true;
        case Reg::smi_count: smi_count_ = v; return true;
        case Reg::debugctl: debugctl_ = v; return true;
        case Reg::perf_caps: set_perf_capabilities(v); return true;
        case Reg::extra: extra_.at(msr).value = v; return true;
        case Reg::lbr: return lbr_.wrmsr(msr, v) == 0;
        case Reg::uncore: return shared_->uncore->wrmsr(msr, v) == 0;
        case Reg::amd_l3: return shared_->amd_l3->wrmsr(msr, v) == 0;
        case Reg::ibs: ibs_.poke(msr, v); return true;
        case Reg::rapl: rapl_.preset(msr, v, tsc_); return true;
        case Reg::bios_sign:
        case Reg::none: break;
    }
    return false;
}

// ---- the instructions ----

void SimCpu::record(Access kind, u32 addr, u64 value, u8 vector, bool injected) {
    log_.push_back(LogEntry{++shared_->seq, index_, kind, addr, value, vector, injected});
}

Result<u64> SimCpu::rdmsr(u32 msr) {
    auto f = fail_rd_.find(msr);
    if (f != fail_rd_.end()) {
        record(Access::rdmsr, msr, 0, f->second, true);
        return pmulab::msr_fault_error("RDMSR", msr, 0, f->second);
    }
    u64 v = 0;
    u8 vec = 0;
    Reg r = classify(msr);
    if (r != Reg::extra && model_->claims(msr)) vec = model_->rdmsr(msr, &v);
    else if (r != Reg::none) v = read_reg(r, msr);
    else if (spec_.unknown != UnknownMsr::read_zero) vec = kVectorGP;
    record(Access::rdmsr, msr, vec ? 0 : v, vec, false);
    if (vec) return pmulab::msr_fault_error("RDMSR", msr, 0, vec);
    return v;
}

u8 SimCpu::injected_wrmsr_fault(u32 msr) {
    u8 injected = 0;
    if (shared_->nth_wrmsr && --shared_->nth_wrmsr == 0) injected = shared_->nth_vector;
    if (nth_wrmsr_ && --nth_wrmsr_ == 0 && !injected) injected = nth_vector_;
    auto f = fail_wr_.find(msr);
    if (!injected && f != fail_wr_.end()) injected = f->second;
    return injected;
}

Status SimCpu::wrmsr(u32 msr, u64 value) {
    u8 vec = injected_wrmsr_fault(msr);
    bool injected = vec != 0;
    if (!injected) {
        Reg r = classify(msr);
        if (r != Reg::extra && model_->claims(msr)) vec = model_->wrmsr(msr, value);
        else if (r != Reg::none) vec = write_reg(r, msr, value);
        else vec = spec_.unknown == UnknownMsr::read_zero ? 0 : kVectorGP;
    }
    record(Access::wrmsr, msr, value, vec, injected);
    if (vec) return pmulab::msr_fault_error("WRMSR", msr, value, vec);
    return pmulab::ok_status();
}

Result<u64> SimCpu::rdpmc(u32 ecx) {
    u64 v = 0;
    u8 vec = 0;
    if (spec_.rdpmc_ud) vec = kVectorUD;
    else if (cpl_ > 0 && !pce_) vec = kVectorGP;
    else vec = model_->rdpmc(ecx, &v);
    record(Access::rdpmc, ecx, vec ? 0 : v, vec, false);
    if (vec) return pmulab::pmc_fault_error(ecx, vec);
    return v;
}

u64 SimCpu::rdtsc() {
    u64 v = tsc_;
    tsc_ += rdtsc_step_;
    return v;
}

}  // namespace sim
