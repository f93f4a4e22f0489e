// PMU detection from a CPU probe, planning helpers and summaries (see pmu.h).
#include "pmu/session.h"

#include "x86/msr_addr.h"

namespace pmulab {

const char* pmu_kind_name(PmuKind k) {
    switch (k) {
        case PmuKind::intel_arch: return "intel_arch";
        case PmuKind::amd: return "amd";
        case PmuKind::netburst: return "netburst";
        case PmuKind::none: break;
    }
    return "none";
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

    const PmuCaps& c = p.caps;
    if (c.version >= 1 && p.vendor != Vendor::amd && p.vendor != Vendor::hygon) {
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
    } else if ((p.vendor == Vendor::amd || p.vendor == Vendor::hygon) && c.amd_core_counters) {
        amd_fill_info(&p);
    } else if (c.netburst) {
        // IA32_MISC_ENABLE[7] "Performance Monitoring Available" (SDM Vol. 4 Table 2-2).
        const ProbeRead& me = probe.misc_enable;
        netburst_fill_info(&p, me.ok && ((me.value >> netburst::kMiscEnablePerfMonAvailable) & 1));
        if (!me.ok)
            format_to(p.absent, sizeof p.absent,
                      "NetBurst processor, but RDMSR IA32_MISC_ENABLE (0x1A0) failed (%s): whether performance "
                      "monitoring is available (bit 7) is unknown",
                      me.error.msg);
    } else if (p.vendor == Vendor::intel && d.id.max_leaf < 0xA) {
        format_to(p.absent, sizeof p.absent,
                  "no architectural performance monitoring: CPUID leaf 0AH is not implemented (maximum basic "
                  "leaf 0x%X)",
                  d.id.max_leaf);
    } else if (p.vendor == Vendor::amd || p.vendor == Vendor::hygon) {
        format_to(p.absent, sizeof p.absent,
                  "no performance-monitoring counters: no AMD core counters enumerated (CPUID 8000_0001H:ECX[23] = "
                  "0, no PerfMonV2) and CPUID.0AH:EAX[7:0] = 0%s",
                  p.hypervisor ? " (a hypervisor without PMU passthrough)" : "");
    } else {
        format_to(p.absent, sizeof p.absent, "no architectural performance monitoring: CPUID.0AH:EAX[7:0] = 0%s",
                  p.hypervisor ? " (a hypervisor without PMU passthrough)" : "");
    }
    p.dialect = event_dialect_for(d.id, d.pmu);
}

// The counter the RDPMC probe reads: the first one there is (ECX = 0 when there is
// none, which is what QEMU TCG answers with #UD). Ring 0 needs no CR4.PCE.
u32 rdpmc_probe_index(const PmuInfo& p) {
    if (p.gp_mask) return first_bit(p.gp_mask);
    if (p.fixed_mask && p.kind == PmuKind::intel_arch) return kRdpmcFixed | first_bit(p.fixed_mask);
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
    bool amd = d.id.vendor == Vendor::amd || d.id.vendor == Vendor::hygon;
    if (amd && amd_reads_de_cfg(d.id.family)) pr.de_cfg.set(hw.rdmsr(msr::AMD_DE_CFG));
    PmuInfo p;
    decode_counters(pr, d, &p);
    pr.rdpmc_index = rdpmc_probe_index(p);
    pr.rdpmc.set(hw.rdpmc(pr.rdpmc_index));
}

const char* serialize_name(SerializeWith s) {
    switch (s) {
        case SerializeWith::lfence: return "lfence";
        case SerializeWith::lfence_after_de_cfg: return "lfence_after_de_cfg";
        case SerializeWith::cpuid: return "cpuid";
    }
    return "cpuid";
}

SerializeWith serialize_choice(const PmuInfo& p) {
    if (p.vendor != Vendor::amd && p.vendor != Vendor::hygon) return SerializeWith::lfence;
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
    if ((p.vendor == Vendor::amd || p.vendor == Vendor::hygon) && amd_lfence_always_serialising(d.id.family)) {
        p.lfence = LfenceSerializing::yes;
    } else if (probe.de_cfg.ok) {
        p.de_cfg = probe.de_cfg.value;
        p.lfence = regs::amd::DeCfg(probe.de_cfg.value).lfence_serializing() ? LfenceSerializing::yes
                                                                             : LfenceSerializing::no;
    } else if (p.vendor == Vendor::amd || p.vendor == Vendor::hygon) {
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
    if (p.kind == PmuKind::amd) {
        put_amd_summary(out, p);
        return;
    }
    if (p.kind == PmuKind::netburst) {
        put_netburst_summary(out, p);
        return;
    }
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

Status pmu_allocate(const PmuInfo& info, const Event* events, usize n, Allocation* out) {
    if (info.kind == PmuKind::amd) return amd_allocate(info, events, n, out);
    // NetBurst without usable counters (IA32_MISC_ENABLE[7] clear) too: its reason, not
    // the architectural-perfmon one.
    if (info.kind == PmuKind::netburst || (info.kind == PmuKind::none && info.caps.netburst))
        return netburst_allocate(info, events, n, out);
    const PmuCaps& c = info.caps;
    // CPUID.(23H,3):EAX: architectural events supported (bit set) - SDM Vol. 2A, leaf 23H.
    if (info.kind == PmuKind::intel_arch && c.leaf_23 && (c.leaf23_subleaves & 8)) {
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
    PmuCaps effective = c;
    if (info.kind != PmuKind::intel_arch) effective.version = 0;  // AMD etc.: not programmable here
    return allocate_counters(events, n, effective, out, info.core_type);
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
