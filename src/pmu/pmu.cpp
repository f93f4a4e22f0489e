// PMU detection from a CPU probe, planning helpers and summaries (see pmu.h).
#include "pmu/pmu_family.h"

#include "x86/msr_addr.h"

namespace pmulab {

namespace {

// The "no PMU" entry: a CPU no family claims, or one whose family found no usable
// counters. Only 'tsc' allocates; summaries say why (put_pmu_summary); PmuBackend
// refuses every operation on the CPU.
CounterAccess tsc_access(const PmuInfo&, CounterKind, u8) { return CounterAccess(); }
void no_control_writes(const PmuInfo&, const Event*, const CounterGroup&, PmuWriteList*, PmuWriteList*) {}

// The PMU families, in decode order: the first that claims a CPU describes it.
const PmuFamily* const kPmuFamilies[] = {&kIntelArchFamily, &kAmdFamily, &kNetBurstFamily};

}  // namespace

extern const PmuFamily kNoPmuFamily = {
    .kind = PmuKind::none,
    .name = "none",
    .rdpmc_fixed = false,
    .claims = nullptr,
    .decode = nullptr,
    .explain_absent = nullptr,
    .allocate = allocate_without_pmu,
    .summary = nullptr,
    .access = tsc_access,
    .control_writes = no_control_writes,
    .bind = nullptr,
    .save = nullptr,
    .check_presets = nullptr,
    .program = nullptr,
    .start = nullptr,
    .stop = nullptr,
    .overflow = nullptr,
    .clear_overflow = nullptr,
};

const PmuFamily& pmu_family(const PmuInfo& info) {
    for (const PmuFamily* f : kPmuFamilies)
        if (f->claims(info.vendor, info.caps)) return *f;
    return kNoPmuFamily;
}

const PmuFamily& pmu_backend_family(const PmuInfo& info) {
    return info.kind == PmuKind::none ? kNoPmuFamily : pmu_family(info);
}

const char* pmu_kind_name(PmuKind k) {
    for (const PmuFamily* f : kPmuFamilies)
        if (f->kind == k) return f->name;
    return kNoPmuFamily.name;
}

Status allocate_without_pmu(const PmuInfo& info, const Event* events, usize n, Allocation* out) {
    PmuCaps effective = info.caps;
    effective.version = 0;  // no architectural counters to program
    return allocate_counters(events, n, effective, out, info.core_type);
}

const char* counter_method_name(CounterMethod m) { return m == CounterMethod::rdpmc ? "rdpmc" : "rdmsr"; }

bool PmuInfo::same_pmu(const PmuInfo& o) const {
    return kind == o.kind && vendor == o.vendor && core_type == o.core_type && caps == o.caps &&
           perf_caps_fault == o.perf_caps_fault && method == o.method && gp_mask == o.gp_mask &&
           fixed_mask == o.fixed_mask && gp_width == o.gp_width && fixed_width == o.fixed_width && lfence == o.lfence;
}

namespace {

u32 first_bit(u32 m) {
    for (u32 i = 0; i < 32; ++i)
        if ((m >> i) & 1) return i;
    return 0;
}

// Everything but the read method, which depends on the RDPMC probe. `d` is
// decode_cpuid(probe.cpuid).
void decode_counters(const CpuProbe& probe, const CpuDecoded& d, PmuInfo* out) {
    *out = PmuInfo();
    PmuInfo& p = *out;
    p.vendor = d.id.vendor;
    str_copy(p.vendor_string, sizeof p.vendor_string, d.id.vendor_string);
    p.hypervisor = d.id.hypervisor;
    p.core_type = d.id.core_type;
    p.caps = d.pmu;

    // IA32_PERF_CAPABILITIES exists when CPUID.01H:ECX.PDCM[15] = 1 (SDM Vol. 4 Table 2-2).
    // Hypervisors sometimes set PDCM without the MSR: a fault means "absent".
    if (d.id.pdcm && probe.perf_caps.attempted) {
        if (probe.perf_caps.ok) {
            p.caps.perf_caps_read = true;
            p.caps.perf_caps = probe.perf_caps.value;
        } else {
            p.perf_caps_fault = true;
        }
    }

    const PmuFamily& f = pmu_family(p);
    if (&f != &kNoPmuFamily) {
        f.decode(probe, d, &p);
    } else {  // no family claims the CPU: the first vendor that knows why, else the generic reason
        bool explained = false;
        for (const PmuFamily* g : kPmuFamilies)
            explained = explained || (g->explain_absent && g->explain_absent(d, &p));
        if (!explained)
            format_to(p.absent, sizeof p.absent, "no architectural performance monitoring: CPUID.0AH:EAX[7:0] = 0%s",
                      p.hypervisor ? " (a hypervisor without PMU passthrough)" : "");
    }
    p.dialect = event_dialect_for(d.id, d.pmu);
}

// The counter the RDPMC probe reads: the first one there is (ECX = 0 when there is
// none, which is what QEMU TCG answers with #UD). Ring 0 needs no CR4.PCE.
u32 rdpmc_probe_index(const PmuInfo& p) {
    if (p.gp_mask) return first_bit(p.gp_mask);
    if (p.fixed_mask && pmu_family(p).rdpmc_fixed) return kRdpmcFixed | first_bit(p.fixed_mask);
    return 0;
}

}  // namespace

void pmu_probe(Hw& hw, CpuProbe* out, ProbeRdpmc rdpmc) {
    *out = CpuProbe();
    CpuProbe& pr = *out;
    capture_cpuid(hw, &pr.cpuid);
    CpuDecoded d = decode_cpuid(pr.cpuid);
    if (d.id.pdcm) pr.perf_caps.set(hw.rdmsr(msr::IA32_PERF_CAPABILITIES));
    // NetBurst only: Intel family 0FH without architectural perfmon (cpuid.h), where
    // the ESCR/CCCR counters exist only when the firmware left bit 7 set.
    if (d.pmu.netburst) pr.misc_enable.set(hw.rdmsr(netburst::IA32_MISC_ENABLE));
    if (rdpmc == ProbeRdpmc::skip) return;
    if (is_amd_family(d.id.vendor) && amd_reads_de_cfg(d.id.family)) pr.de_cfg.set(hw.rdmsr(msr::AMD_DE_CFG));
    PmuInfo p;
    decode_counters(pr, d, &p);
    pr.rdpmc_index = rdpmc_probe_index(p);
    pr.rdpmc.set(hw.rdpmc(pr.rdpmc_index));
}

const char* serialize_name(SerializeWith s) {
    constexpr const char* kNames[] = {"lfence", "lfence_after_de_cfg", "cpuid"};  // SerializeWith order
    return unsigned(s) < sizeof kNames / sizeof kNames[0] ? kNames[unsigned(s)] : "cpuid";
}

SerializeWith serialize_choice(const PmuInfo& p) {
    if (!is_amd_family(p.vendor)) return SerializeWith::lfence;
    switch (p.lfence) {
        case LfenceSerializing::yes: return SerializeWith::lfence;
        case LfenceSerializing::no: return SerializeWith::lfence_after_de_cfg;
        default: return SerializeWith::cpuid;
    }
}

u64 de_cfg_for_measurement(u64 de_cfg) { return regs::amd::DeCfg(de_cfg).set_lfence_serializing(true).raw(); }

void pmu_decode(const CpuProbe& probe, PmuInfo* out) {
    decode_counters(probe, decode_cpuid(probe.cpuid), out);
    PmuInfo& p = *out;
    CpuDecoded d = decode_cpuid(probe.cpuid);
    if (is_amd_family(p.vendor) && amd_lfence_always_serialising(d.id.family)) {
        p.lfence = LfenceSerializing::yes;
    } else if (probe.de_cfg.ok) {
        p.de_cfg = probe.de_cfg.value;
        p.lfence = regs::amd::DeCfg(probe.de_cfg.value).lfence_serializing() ? LfenceSerializing::yes
                                                                             : LfenceSerializing::no;
    } else if (is_amd_family(p.vendor)) {
        p.lfence = LfenceSerializing::unknown;  // not probed (census) or faulted
    }
    if (probe.rdpmc.ok && p.kind != PmuKind::none) {
        p.method = CounterMethod::rdpmc;
    } else {
        p.method = CounterMethod::rdmsr;
        if (probe.rdpmc.faulted()) str_copy(p.method_note, sizeof p.method_note, probe.rdpmc.error.msg);
        else if (!probe.rdpmc.attempted) str_copy(p.method_note, sizeof p.method_note, "RDPMC was not probed");
        else format_to(p.method_note, sizeof p.method_note, "no counters to read");
    }
}

void pmu_detect(Hw& hw, PmuInfo* out) {
    CpuProbe probe;
    pmu_probe(hw, &probe);
    pmu_decode(probe, out);
}

void probe_cpus(Hw& hw, const Vec<u32>& cpus, Vec<ProbedCpu>* out) {
    probe_cpus(hw, cpus, out, [&](u32 cpu, auto&& fn) { return run_on(hw, cpu, fn); });
}

void put_pmu_summary(StrBuf& out, const PmuInfo& p) {
    if (p.kind == PmuKind::none) {
        out.printf("no PMU counters: %s", p.absent);
        return;
    }
    pmu_family(p).summary(out, p);
}

// NetBurst without usable counters (IA32_MISC_ENABLE[7] clear) too: its family's
// reason, not the architectural-perfmon one.
Status pmu_allocate(const PmuInfo& info, const Event* events, usize n, Allocation* out) {
    return pmu_family(info).allocate(info, events, n, out);
}

namespace {

Status add_touch(PmuTouch* t, const Event& e, const Assignment& as) {
    if (as.kind == CounterKind::gp) t->gp |= u32(1) << as.index;
    else if (as.kind == CounterKind::fixed) t->fixed |= u32(1) << as.index;
    for (unsigned k = 0; k < e.intel.aux_count; ++k) {
        bool have = false;
        for (unsigned j = 0; j < t->aux_count; ++j) have |= t->aux[j] == e.intel.aux[k].msr;
        if (have) continue;
        if (t->aux_count >= PmuTouch::kMaxAux)
            return Error::make(Errc::invalid_argument, "too many model-specific MSRs in one event set (at most %u)",
                               PmuTouch::kMaxAux);
        t->aux[t->aux_count++] = e.intel.aux[k].msr;
    }
    return ok_status();
}

}  // namespace

Result<PmuTouch> touch_set(const Event* events, usize n, const CounterGroup& g) {
    PmuTouch t;
    for (const Assignment& as : g.events) {
        if (as.event >= n)
            return Error::make(Errc::internal, "touch_set: assignment of event %u out of range", as.event);
        PMULAB_TRY(add_touch(&t, events[as.event], as));
    }
    return t;
}

Result<PmuTouch> touch_set(const Event* events, usize n, const Allocation& a) {
    PmuTouch t;
    for (const CounterGroup& g : a.groups)
        for (const Assignment& as : g.events) {
            if (as.event >= n)
                return Error::make(Errc::internal, "touch_set: assignment of event %u out of range", as.event);
            PMULAB_TRY(add_touch(&t, events[as.event], as));
        }
    return t;
}

Result<u64> perform_read(Hw& hw, const CounterAccess& a) {
    if (a.kind == CounterAccess::rdtsc) return hw.rdtsc() & regs::counter_mask(a.width);
    Result<u64> r = a.kind == CounterAccess::rdpmc ? hw.rdpmc(a.index) : hw.rdmsr(a.index);
    if (!r.ok()) return r.error();
    return r.value() & regs::counter_mask(a.width);
}

Error absent_counter_error(CounterKind kind, u8 index) {
    return Error::make(Errc::internal, "read of a counter this CPU does not have (%s %u)", counter_kind_name(kind),
                       unsigned(index));
}

}  // namespace pmulab
