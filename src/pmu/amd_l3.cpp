#include "pmu/amd_l3.h"

namespace pmulab {

namespace {

constexpr const char kEvsets[] = "; find slices by eviction sets instead (tools/pmulab-cache evset)";

u32 cfg_msr(u32 i) { return msr::AMD_CH_L3_PMC_CFG0 + 2 * i; }
u32 ctr_msr(u32 i) { return msr::AMD_CH_L3_PMC0 + 2 * i; }

u32 log2_ceil(u32 n) {
    u32 s = 0;
    while ((1u << s) < n && s < 31) ++s;
    return s;
}

// CPUID Fn8000_001D (cache topology, APM Vol. 3 Appendix E): the sub-leaf of the L3
// (EAX[4:0] type, [7:5] level) and its NumSharingCache (EAX[25:14], plus one).
u32 l3_sharing(Hw& hw, u32 max_ext) {
    if (max_ext < 0x8000001Du) return 0;
    for (u32 sub = 0; sub < 8; ++sub) {
        CpuidRegs r = hw.cpuid(0x8000001Du, sub);
        u32 type = regs::Bits<4, 0>::get(r.eax), level = regs::Bits<7, 5>::get(r.eax);
        if (type == 0) break;
        if (level == 3) return u32(regs::Bits<25, 14>::get(r.eax)) + 1;
    }
    return 0;
}

}  // namespace

AmdL3Support amd_l3_support(const CpuIdentity& id, bool perf_ctr_ext_llc) {
    AmdL3Support s;
    if (id.vendor != Vendor::amd) {
        s.why_not = "the L3 PMU (PerfCtrExtLLC) is AMD's";
    } else if (id.hypervisor) {
        s.why_not = "a hypervisor's guest: the L3 PMU's MSRs (ChL3PmcCfg, C001_0230H) are not virtualized";
    } else if (!perf_ctr_ext_llc) {
        s.why_not = "CPUID Fn8000_0001_ECX[28] (PerfCtrExtLLC) is clear: no L3 performance counters";
    } else if (id.family == 0x17) {
        s.slices = regs::kAmdL3SlicesF17;
        s.f17 = true;
    } else if (id.family == 0x19 || id.family == 0x1A) {
        s.slices = regs::kAmdL3SlicesF19;
    } else {
        s.why_not = "pmulab knows the L3 PMU's slice fields of families 17h, 19h and 1Ah only";
    }
    return s;
}

Status AmdL3Pmu::detect(Hw& hw, const CpuIdentity& id) {
    CpuidRegs e1 = hw.cpuid(0x80000001u, 0);
    AmdL3Support s = amd_l3_support(id, id.max_ext_leaf >= 0x80000001u && regs::Bits<28, 28>::get(e1.ecx));
    if (!s.slices)
        return Error::make(Errc::unsupported, "no L3 slice lookup on this CPU (%s family 0x%x model 0x%x): %s%s",
                           id.vendor_string, id.family, id.model, s.why_not, kEvsets);
    Result<u64> cfg = hw.rdmsr(cfg_msr(0));
    if (!cfg.ok())
        return Error::make(Errc::unsupported, "ChL3PmcCfg0 (C001_0230H) cannot be read: %s%s", cfg.error().msg,
                           kEvsets);
    slices_ = s.slices;
    f17_ = s.f17;
    rounds_ = (slices_ + msr::kAmdL3Counters - 1) / msr::kAmdL3Counters;
    per_round_ = (slices_ + rounds_ - 1) / rounds_;
    u32 sharing = l3_sharing(hw, id.max_ext_leaf);
    shift_ = sharing ? log2_ceil(sharing) : f17_ ? 3 : 4;
    complex_from_ = sharing ? "CPUID 8000_001DH (the L3's NumSharingCache)"
                            : (f17_ ? "the family's: 4 cores x 2 threads per CCX (no CPUID 8000_001DH)"
                                    : "the family's: 8 cores x 2 threads per CCD (no CPUID 8000_001DH)");
    max_ext_ = id.max_ext_leaf;
    return ok_status();
}

const char* AmdL3Pmu::slices_from() const {
    return f17_ ? "family 17h: 4 per CCX (SliceMask's 4 bits; not enumerated by CPUID)"
                : "family 19h/1Ah: 8 per CCD (SliceId's 3 bits; not enumerated by CPUID)";
}

u64 AmdL3Pmu::config_for(u32 slice) const {
    if (f17_)
        return regs::AmdL3CfgF17()
            .set_event(regs::kAmdL3LookupState)
            .set_umask(regs::kAmdL3LookupAll)
            .set_slice_mask(u64(1) << slice)
            .set_thread_mask(0xFF)
            .raw();
    return regs::AmdL3CfgF19()
        .set_event(regs::kAmdL3LookupState)
        .set_umask(regs::kAmdL3LookupAll)
        .set_slice_id(slice)
        .set_en_all_cores(true)
        .set_thread_mask(0x3)
        .raw();
}

Status AmdL3Pmu::begin(Hw& hw) {
    // The complex of the measuring CPU: its extended APIC ID (8000_001EH) or CPUID 1's.
    u32 apic = u32(regs::Bits<31, 24>::get(hw.cpuid(1, 0).ebx));
    if (max_ext_ >= 0x8000001Eu) apic = hw.cpuid(0x8000001Eu, 0).eax;
    complex_ = shift_ >= 32 ? 0 : apic >> shift_;
    ledger_.bind(&hw);
    ledger_.begin();
    const u64 en = regs::AmdL3CfgF19().set_en(true).raw();
    for (u32 i = 0; i < msr::kAmdL3Counters; ++i) {
        PMULAB_TRY(ledger_.save(MsrReg::event_select(cfg_msr(i)).disabled_by(en)));
        PMULAB_TRY(ledger_.save(MsrReg::counter(ctr_msr(i)).gated_by(cfg_msr(i))));
    }
    ledger_.arm();
    // A counter is written while disabled (APM Vol. 2 §13.2.1): every enable off first.
    for (u32 i = 0; i < msr::kAmdL3Counters; ++i)
        PMULAB_TRY(ledger_.write(cfg_msr(i), ledger_.saved_value(cfg_msr(i)) & ~en));
    round_ = ~0u;
    return program(0);
}

// Counter i counts slice round * per_round + i (the rest of the counters: off, 0).
Status AmdL3Pmu::program(u32 round) {
    const u64 en = regs::AmdL3CfgF19().set_en(true).raw();
    for (u32 i = 0; i < per_round_; ++i) {
        u32 slice = round * per_round_ + i;
        u64 cfg = slice < slices_ ? config_for(slice) : 0;
        PMULAB_TRY(ledger_.write(cfg_msr(i), cfg));
        PMULAB_TRY(ledger_.write(ctr_msr(i), 0));
        if (cfg) PMULAB_TRY(ledger_.write(cfg_msr(i), cfg | en));
    }
    round_ = round;
    return ok_status();
}

Status AmdL3Pmu::select_round(Hw&, u32 k) {
    if (k == round_) return ok_status();
    return program(k % rounds_);
}

Status AmdL3Pmu::read(Hw& hw, u64* out) const {
    for (u32 i = 0; i < per_round_; ++i) {
        u32 slice = round_ * per_round_ + i;
        if (slice >= slices_) break;
        Result<u64> v = hw.rdmsr(ctr_msr(i));
        if (!v.ok()) return v.error();
        out[slice] = v.value() & low_mask(regs::kAmdL3CounterBits);
    }
    return ok_status();
}

Status AmdL3Pmu::end() { return ledger_.armed() ? ledger_.restore() : ok_status(); }

}  // namespace pmulab
