#include "census/census.h"
#include "x86/cache_geometry.h"
#include "census/tsc_freq.h"

#include "base/json.h"
#include "pmu/pmu.h"
#include "x86/netburst_regs.h"
#include "x86/topology.h"

namespace pmulab {

namespace {

void put_mask_list(StrBuf& out, u32 mask) {
    if (!mask) {
        out.put("none");
        return;
    }
    bool first = true;
    for (u32 i = 0; i < 32; ++i) {
        if (!((mask >> i) & 1)) continue;
        // Collapse runs: 0-3,5
        u32 j = i;
        while (j + 1 < 32 && ((mask >> (j + 1)) & 1)) ++j;
        if (!first) out.put(',');
        first = false;
        if (j > i) out.printf("%u-%u", i, j);
        else out.printf("%u", i);
        i = j;
    }
}

// "key": the indices of the set bits of mask.
void json_index_array(JsonWriter& w, const char* key, u32 mask) {
    w.key(key).begin_array();
    for (u32 i = 0; i < 32; ++i)
        if ((mask >> i) & 1) w.num(i);
    w.end_array();
}

const char* yesno(bool b) { return b ? "yes" : "no"; }

// Two CPUs share a PMU block when identity-relevant fields and PMU caps match.
bool same_pmu(const CpuRecord& a, const CpuRecord& b) {
    return a.collected == b.collected && (a.collected || str_eq(a.error, b.error)) && a.dec.pmu == b.dec.pmu &&
           a.dec.id.core_type == b.dec.id.core_type && a.dec.id.signature == b.dec.id.signature &&
           a.dec.id.vendor == b.dec.id.vendor && a.netburst_perfmon == b.netburst_perfmon;
}

bool netburst_disabled(const CpuRecord& r) { return r.netburst_perfmon == CpuRecord::NetBurstPerfmon::disabled; }

void put_cpu_list(StrBuf& out, const Vec<CpuRecord>& cpus, const Vec<u32>& members) {
    Vec<u32> index;
    for (u32 m : members) index.push(cpus[m].index);
    put_index_ranges(out, index.data(), index.size());
}

void put_core_type(StrBuf& out, const CpuIdentity& id) {
    if (id.hybrid)
        out.printf("  core type        : %s (0x%02x), native model id 0x%06x\n", core_type_name(id.core_type),
                   id.core_type, id.native_model_id);
    else if (id.leaf_1a)
        // CPUID.1AH exists on non-hybrid parts too (an Atom-only SoC reports 0x20, some
        // server parts 0x40); 0 means the part reports no core type.
        out.printf("  core type        : %s (0x%02x from CPUID.1AH), native model id 0x%06x\n",
                   id.leaf_1a_core_type ? core_type_name(id.leaf_1a_core_type) : "not reported", id.leaf_1a_core_type,
                   id.native_model_id);
}

void put_amd_block(StrBuf& out, const CpuIdentity& id, const PmuCaps& p) {
    if (!p.amd_core_counters) {
        out.printf("  PMU              : none enumerated (%s)\n",
                   id.hypervisor ? "no PerfCtrExtCore/PerfMonV2 under a hypervisor; the 4 legacy "
                                   "counters are not assumed in a virtual machine"
                                 : "family before K7 has no performance counters");
    } else {
        out.printf("  AMD core PMU     : %u counters, 48 bits; PerfCtrExtCore %s, PerfMonV2 %s\n", p.amd_core_counters,
                   yesno(p.amd_perfctr_core), yesno(p.amd_perfmon_v2));
        if (p.amd_perfmon_v2)
            out.printf("  PerfMonV2        : LbrV2 %s (stack %u), northbridge counters %u\n", yesno(p.amd_lbr_v2),
                       p.amd_lbr_stack_size, p.amd_nb_counters);
        out.printf("  fixed-like       : IRPerfCount %s, MPERF/APERF %s\n",
                   p.amd_irperf ? "yes (C000_00E9H, 48 bits)" : "no", p.amd_efffreq ? "yes (E7H/E8H, 64 bits)" : "no");
    }
}

void put_netburst_block(StrBuf& out, const CpuRecord& r) {
    const CpuIdentity& id = r.dec.id;
    const PmuCaps& p = r.dec.pmu;
    // SDM Vol. 3B §20.15: ESCR/CCCR counters; IA32_MISC_ENABLE[7] confirms them at run time.
    if (!p.leaf_0a)
        out.printf("  PMU              : NetBurst ESCR/CCCR (no leaf 0AH: maximum CPUID leaf 0x%x)\n", id.max_leaf);
    else out.put("  PMU              : NetBurst ESCR/CCCR (CPUID.0AH reports version 0)\n");
    out.put("  counters         : 18 x 40 bits in 9 pairs: BPU 0-3, MS 4-7, FLAME 8-11, IQ 12-17\n");
    out.printf("  ESCRs            : %u (IQ_ESCR0/1 exist on models 1-2 only)\n", p.netburst_model <= 2 ? 45u : 43u);
    out.printf("  Hyper-Threading  : %s\n",
               p.netburst_ht ? "yes: the two logical processors share the ESCRs and CCCRs" : "no");
    if (netburst_disabled(r))
        out.put("  perfmon          : disabled by the firmware: IA32_MISC_ENABLE[7] (Performance Monitoring "
                "Available) is 0, so no counter can be used (only the TSC)\n");
    else if (r.netburst_perfmon == CpuRecord::NetBurstPerfmon::read_fault)
        out.put("  perfmon          : unknown: RDMSR IA32_MISC_ENABLE (0x1A0) faulted\n");
}

// Architectural PMU: the counters (GP, fixed) and their quirks.
void put_arch_counters(StrBuf& out, const PmuCaps& p) {
    out.printf("  perfmon version  : %u\n", p.version);
    out.printf("  GP counters      : %u x %u bits", p.gp_counters, p.gp_width);
    if (p.leaf_23 && (p.leaf23_subleaves & 2)) {
        out.put(" (leaf 23H bitmap: ");
        put_mask_list(out, p.gp_bitmap);
        out.put(")");
    }
    out.put('\n');
    out.printf("  fixed counters   : %u x %u bits (EDX[4:0]=%u", popcount64(p.fixed_effective), p.fixed_width,
               p.fixed_counters);
    if (p.version >= 5) out.printf(", ECX mask 0x%x", p.fixed_mask);
    out.put("; effective: ");
    put_mask_list(out, p.fixed_effective);
    if (p.leaf_23 && (p.leaf23_subleaves & 2)) {
        out.put("; leaf 23H bitmap: ");
        put_mask_list(out, p.fixed_bitmap);
    }
    out.put(")\n");
    if (p.fixed_count_quirk)
        out.printf("  note             : CPUID reports %u fixed counters; v%u parts on bare metal have "
                   "3 (fixed 0-2 assumed, as Linux does)\n",
                   p.fixed_counters, p.version);
}

// Architectural PMU: AnyThread and the architectural events.
void put_arch_events(StrBuf& out, const PmuCaps& p) {
    out.printf("  AnyThread        : %s\n", p.anythread_deprecated ? "deprecated" : "supported");
    out.printf("  arch events      : EBX length %u, EBX 0x%x\n", p.ebx_length, p.ebx);
    for (unsigned b = 0; b < kArchEventCount; ++b) {
        bool in_vec = b < p.ebx_length;
        const char* state = !in_vec ? "not enumerated" : ((p.ebx >> b) & 1) ? "UNAVAILABLE" : "available";
        out.printf("    %-28s %s", arch_event_title(b), state);
        // CPUID.(23H,3):EAX lists the supported architectural events (bit set = supported).
        if (p.leaf_23 && (p.leaf23_subleaves & 8))
            out.printf("%*s leaf 23H: %s", int(15 - str_len(state)), "",
                       ((p.arch_events_bitmap >> b) & 1) ? "supported" : "not supported");
        out.put('\n');
    }
}

// Architectural PMU: leaf 23H and IA32_PERF_CAPABILITIES.
void put_arch_extras(StrBuf& out, const CpuRecord& r) {
    const CpuIdentity& id = r.dec.id;
    const PmuCaps& p = r.dec.pmu;
    if (p.leaf_23) {
        out.printf("  leaf 23H         : sub-leaves 0x%x, UMASK2 %s, EQ %s", p.leaf23_subleaves, yesno(p.umask2),
                   yesno(p.eq_bit));
        if (p.leaf23_subleaves & 4) {
            out.put(", ACR GP ");
            put_mask_list(out, p.acr_gp_bitmap);
            out.put(" fixed ");
            put_mask_list(out, p.acr_fixed_bitmap);
        }
        if (p.leaf23_subleaves & 8) out.printf(", arch events 0x%x", p.arch_events_bitmap);
        out.put('\n');
    }
    if (id.pdcm) {
        if (p.perf_caps_read)
            out.printf("  PERF_CAPABILITIES: 0x%llx (full-width writes %s)\n", (unsigned long long)p.perf_caps,
                       yesno((p.perf_caps >> 13) & 1));
        else if (r.perf_caps_fault) out.put("  PERF_CAPABILITIES: PDCM set but RDMSR 0x345 faulted\n");
        else out.put("  PERF_CAPABILITIES: not read (offline)\n");
    }
}

void put_pmu_block(StrBuf& out, const CpuRecord& r) {
    const CpuIdentity& id = r.dec.id;
    const PmuCaps& p = r.dec.pmu;
    if (!r.collected) {
        out.printf("  not collected: %s\n", r.error);
        return;
    }
    put_core_type(out, id);
    if (is_amd_family(id.vendor)) return put_amd_block(out, id, p);
    if (p.netburst) return put_netburst_block(out, r);
    if (!p.leaf_0a) {
        out.printf("  PMU              : none (maximum CPUID leaf 0x%x has no leaf 0AH)\n", id.max_leaf);
        return;
    }
    if (p.version == 0) {
        out.printf("  PMU              : none: CPUID.0AH reports version 0, no architectural "
                   "performance monitoring%s\n",
                   id.hypervisor ? " (normal under a hypervisor without PMU passthrough, e.g. QEMU TCG)" : "");
        return;
    }
    put_arch_counters(out, p);
    put_arch_events(out, p);
    put_arch_extras(out, r);
}

}  // namespace

void census_decode(CpuRecord& r) {
    bool caps_read = r.dec.pmu.perf_caps_read;
    u64 caps = r.dec.pmu.perf_caps;
    r.dec = decode_cpuid(r.raw);
    r.dec.pmu.perf_caps_read = caps_read;
    r.dec.pmu.perf_caps = caps;
    if (!r.topology_known) {
        // The location from CPUID (x86/topology.h: leaves 1FH/0BH, AMD 8000_001EH, 01H/04H).
        r.topo.apic_id = cpuid_apic_id(r.raw);
        TopoPlace p = topology_place(decode_topology_levels(r.raw), r.topo.apic_id);
        r.topo.package = p.package;
        r.topo.core = p.core;
        r.topo.thread = p.thread;
    }
}

void census_from_probe(const CpuProbe& probe, CpuRecord& r) {
    r.raw = probe.cpuid;
    // IA32_PERF_CAPABILITIES: read where CPUID.01H:ECX.PDCM is set.
    if (probe.perf_caps.attempted) {
        r.dec.pmu.perf_caps_read = probe.perf_caps.ok;
        r.dec.pmu.perf_caps = probe.perf_caps.value;
        r.perf_caps_fault = !probe.perf_caps.ok;
    }
    // NetBurst: the ESCR/CCCR counters exist only when IA32_MISC_ENABLE[7] (Performance
    // Monitoring Available, read-only) is set; the firmware can clear it.
    if (probe.misc_enable.attempted)
        r.netburst_perfmon = !probe.misc_enable.ok ? CpuRecord::NetBurstPerfmon::read_fault
                             : ((probe.misc_enable.value >> netburst::kMiscEnablePerfMonAvailable) & 1)
                                 ? CpuRecord::NetBurstPerfmon::available
                                 : CpuRecord::NetBurstPerfmon::disabled;
    r.collected = true;
    census_decode(r);
}

Status census_collect(Hw& hw, Vec<CpuRecord>& out) {
    u32 n = hw.cpu_count();
    if (n == 0) return Error::make(Errc::internal, "no logical processors reported");
    out.clear();
    out.resize(n);
    for (u32 i = 0; i < n; ++i) {
        CpuRecord& r = out[i];
        r.index = i;
        Result<CpuTopology> t = hw.topology(i);
        if (t.ok()) {
            r.topo = t.value();
            r.topology_known = true;
        }
        if (t.ok() && !t.value().enabled) {
            str_copy(r.error, sizeof r.error, "processor is disabled by the firmware");
            continue;
        }
        // CPUID and the MSRs the census reports; no RDPMC (nothing here reads a counter).
        CpuProbe probe;
        Status s = run_on(hw, i, [&] { pmu_probe(hw, &probe, ProbeRdpmc::skip); });
        if (!s.ok()) {
            str_copy(r.error, sizeof r.error, s.error().msg);
            r.collected = false;
            continue;
        }
        census_from_probe(probe, r);
    }
    return ok_status();
}

// Vector extensions `run --code` can use: CPUID.01H and 07H feature flags (SDM Vol. 2A
// CPUID, Tables 3-10/3-11 and leaf 07H); the VEX/EVEX ones need XSAVE (01H:ECX[26]),
// since pmulab sets CR4.OSXSAVE and XCR0 itself while measuring (docs/measure.md).
usize census_vector_extensions(const CpuRecord& r, const char** names, usize max) {
    const CpuIdentity& id = r.dec.id;
    CpuidRegs l1 = r.raw.get(1), l7 = id.max_leaf >= 7 ? r.raw.get(7, 0) : CpuidRegs{};
    bool xsave = (l1.ecx >> 26) & 1, avx = xsave && ((l1.ecx >> 28) & 1);
    struct Flag {
        const char* name;
        bool on;
    };
    const Flag flags[] = {
        {"sse", bool((l1.edx >> 25) & 1)},
        {"sse2", bool((l1.edx >> 26) & 1)},
        {"sse3", bool(l1.ecx & 1)},
        {"ssse3", bool((l1.ecx >> 9) & 1)},
        {"sse4.1", bool((l1.ecx >> 19) & 1)},
        {"sse4.2", bool((l1.ecx >> 20) & 1)},
        {"avx", avx},
        {"fma", avx && ((l1.ecx >> 12) & 1)},
        {"avx2", avx && ((l7.ebx >> 5) & 1)},
        {"avx512f", avx && ((l7.ebx >> 16) & 1)},
        {"avx512dq", avx && ((l7.ebx >> 17) & 1)},
        {"avx512bw", avx && ((l7.ebx >> 30) & 1)},
        {"avx512vl", avx && ((l7.ebx >> 31) & 1)},
    };
    usize n = 0;
    for (const Flag& f : flags)
        if (f.on && n < max) names[n++] = f.name;
    return n;
}

namespace {

void put_vector_extensions(StrBuf& out, const CpuRecord& r) {
    const char* names[kVectorExtensionsMax];
    usize n = census_vector_extensions(r, names, kVectorExtensionsMax);
    if (!n) out.put("none");
    for (usize i = 0; i < n; ++i) out.printf("%s%s", i ? " " : "", names[i]);
}

bool same_vector_extensions(const CpuRecord& a, const CpuRecord& b) {
    const char* na[kVectorExtensionsMax];
    const char* nb[kVectorExtensionsMax];
    usize n = census_vector_extensions(a, na, kVectorExtensionsMax);
    if (census_vector_extensions(b, nb, kVectorExtensionsMax) != n) return false;
    for (usize i = 0; i < n; ++i)
        if (na[i] != nb[i]) return false;
    return true;
}

// The first lines: how many CPUs, and the identity of the first one that answered.
void put_census_header(StrBuf& out, const Vec<CpuRecord>& cpus) {
    usize collected = 0;
    for (const CpuRecord& r : cpus) collected += r.collected;
    const CpuRecord* first = nullptr;
    for (const CpuRecord& r : cpus)
        if (r.collected) {
            first = &r;
            break;
        }
    out.printf("pmulab census: %u logical processor%s", unsigned(cpus.size()), cpus.size() == 1 ? "" : "s");
    if (collected != cpus.size()) out.printf(" (%u not reachable)", unsigned(cpus.size() - collected));
    out.put('\n');
    if (first) {
        const CpuIdentity& id = first->dec.id;
        out.printf("CPU: %s", id.vendor_string);
        if (id.brand[0]) out.printf(" \"%s\"", id.brand);
        out.printf(", family 0x%x model 0x%x stepping 0x%x (", id.family, id.model, id.stepping);
        put_signature(out, id);
        out.printf("), signature 0x%08x%s%s\n", id.signature, id.hybrid ? ", hybrid" : "",
                   id.hypervisor ? ", hypervisor present" : "");
    }
}

// One row of the CPU table.
void put_census_row(StrBuf& out, const CpuRecord& r) {
    const PmuCaps& p = r.dec.pmu;
    out.printf("  %3u  %5llu  %-3s  %3u  %4u  %3u", r.index, (unsigned long long)r.topo.apic_id,
               r.topo.bsp ? "yes" : "", r.topo.package, r.topo.core, r.topo.thread);
    if (!r.collected) {
        out.printf("  error: %s\n", r.error);
        return;
    }
    out.printf("  %-4s", r.dec.id.hybrid ? (r.dec.id.core_type == kCoreTypeCore   ? "P"
                                            : r.dec.id.core_type == kCoreTypeAtom ? "E"
                                                                                  : "?")
                                         : "-");
    bool amd = is_amd_family(r.dec.id.vendor);
    if (!p.present()) {
        out.put("  none\n");
        return;
    }
    if (amd) out.printf("  amd   %ux48\n", p.amd_core_counters);
    else if (p.netburst) out.put(netburst_disabled(r) ? "  p4    off\n" : "  p4    18x40\n");
    else {
        char gp[16];
        format_to(gp, sizeof gp, "%ux%u", popcount64(p.gp_counter_mask()), p.gp_width);
        out.printf("  v%-3u  %-6s", p.version, gp);
        // Core 2 (fixed_count_quirk) reports no fixed counters, hence no width either.
        u32 nfixed = popcount64(p.fixed_counter_mask());
        if (!nfixed) out.put("  0\n");
        else if (p.fixed_width) out.printf("  %ux%u\n", nfixed, p.fixed_width);
        else out.printf("  %ux?\n", nfixed);
    }
}

// Extended topology (when the firmware reports it) and one detailed block per group
// of CPUs with the same PMU.
void put_census_pmus(StrBuf& out, const Vec<CpuRecord>& cpus) {
    bool any_ext = false;
    for (const CpuRecord& r : cpus) any_ext |= r.topo.has_extended;
    if (any_ext) {
        out.put("\n  extended location (package/die/tile/module/core/thread):\n");
        for (const CpuRecord& r : cpus)
            if (r.topo.has_extended)
                out.printf("  %3u  %u/%u/%u/%u/%u/%u\n", r.index, r.topo.ext_package, r.topo.ext_die, r.topo.ext_tile,
                           r.topo.ext_module, r.topo.ext_core, r.topo.ext_thread);
    }
    // Group identical PMUs; one detailed block per group.
    usize groups = 0;
    for (const Vec<u32>&members :
         group_indices(cpus.size(), [&](usize i, usize j) { return same_pmu(cpus[i], cpus[j]); })) {
        const usize i = members[0];
        if (cpus[i].collected) ++groups;  // unreachable CPUs are not a PMU configuration
        out.put("\nPMU of CPU ");
        put_cpu_list(out, cpus, members);
        out.printf(" (%u CPU%s):\n", unsigned(members.size()), members.size() == 1 ? "" : "s");
        put_pmu_block(out, cpus[i]);
    }
    if (groups > 1)
        out.printf("\nnote: %u different PMU configurations across CPUs (hybrid part or "
                   "asymmetric firmware setup)\n",
                   unsigned(groups));
}

// What user code may use, per group of CPUs with the same extensions.
void put_census_vectors(StrBuf& out, const Vec<CpuRecord>& cpus) {
    // What user code may use (pmulab enables OSXSAVE/XCR0 itself while measuring).
    bool first_line = true;
    for (const Vec<u32>&members : group_indices(cpus.size(), [&](usize i, usize j) {
             return cpus[i].collected && cpus[j].collected && same_vector_extensions(cpus[i], cpus[j]);
         })) {
        if (!cpus[members[0]].collected) continue;
        out.put(first_line ? "\n" : "");
        first_line = false;
        out.put("vector extensions (run --code)");
        if (members.size() != cpus.size()) {
            out.put(" of CPU ");
            put_cpu_list(out, cpus, members);
        }
        out.put(": ");
        put_vector_extensions(out, cpus[members[0]]);
        out.put('\n');
    }
}

}  // namespace

void census_table(const Vec<CpuRecord>& cpus, StrBuf& out) {
    put_census_header(out, cpus);
    out.put("\n  CPU   APIC  BSP  PKG  CORE  THR  TYPE  PMU   GP      FIXED\n");
    for (const CpuRecord& r : cpus) put_census_row(out, r);
    census_topology(cpus, out);
    put_census_pmus(out, cpus);
    put_census_vectors(out, cpus);
    census_caches(cpus, out);
}

void census_next_step(const Vec<CpuRecord>& cpus, StrBuf& out) {
    bool any = false;
    for (const CpuRecord& r : cpus) {
        if (!r.collected) continue;
        if (!r.dec.id.hypervisor || (r.dec.pmu.present() && !netburst_disabled(r))) return;
        any = true;
    }
    if (any)
        out.put("\nNext: 'run --bench nop --events tsc' works without a PMU; for counters boot on hardware, "
                "or under KVM with -cpu host,pmu=on\n");
}

void census_json(const CpuRecord& r, StrBuf& out, const TscFreq* tsc) { json_write_line(out, census_record(r, tsc)); }

namespace {

// Where the CPU is: its index, APIC ID and topology.
void json_location(JsonWriter& w, const CpuRecord& r) {
    const CpuTopology& t = r.topo;
    w.field_u("index", r.index).field_u("apic_id", t.apic_id).field_b("bsp", t.bsp);
    w.field_u("package", t.package).field_u("core", t.core).field_u("thread", t.thread);
    if (t.has_extended) {
        w.key("location2").begin_object();
        w.field_u("package", t.ext_package).field_u("die", t.ext_die).field_u("tile", t.ext_tile);
        w.field_u("module", t.ext_module).field_u("core", t.ext_core).field_u("thread", t.ext_thread);
        w.end_object();
    }
}

// Who the CPU is: vendor, model, core type, the CPUID leaves it has.
void json_identity(JsonWriter& w, const CpuRecord& r) {
    const CpuIdentity& id = r.dec.id;
    w.field("vendor", id.vendor_string).field("brand", id.brand).field_hex("signature", id.signature);
    w.field_u("family", id.family).field_u("model", id.model).field_u("stepping", id.stepping);
    w.field_b("hypervisor", id.hypervisor).field_b("hybrid", id.hybrid);
    w.field("core_type", core_type_name(id.core_type)).field_u("core_type_id", id.core_type);
    w.field_b("leaf_1a", id.leaf_1a);
    if (id.leaf_1a)
        w.field_u("leaf_1a_core_type_id", id.leaf_1a_core_type).field_hex("native_model_id", id.native_model_id);
    w.field_b("pdcm", id.pdcm).field_hex("max_leaf", id.max_leaf);
    w.key("vector_extensions").begin_array();
    {
        const char* names[kVectorExtensionsMax];
        usize n = census_vector_extensions(r, names, kVectorExtensionsMax);
        for (usize i = 0; i < n; ++i) w.str(names[i]);
    }
    w.end_array();
    w.field_hex("max_ext_leaf", id.max_ext_leaf);
}

// The architectural PMU of CPUID.0AH (and 23H), inside "pmu".
void json_arch_pmu(JsonWriter& w, const CpuRecord& r) {
    const PmuCaps& p = r.dec.pmu;
    w.field_b("present", p.present() && !netburst_disabled(r)).field_u("perfmon_version", p.version);
    w.field_u("gp_counters", p.gp_counters).field_u("gp_width", p.gp_width);
    w.field_u("ebx_vector_length", p.ebx_length).field_hex("ebx", p.ebx);
    w.key("events_unavailable").begin_array();
    for (unsigned b = 0; b < kArchEventCount; ++b)
        if ((p.events_unavailable >> b) & 1) w.str(arch_event_key(b));
    w.end_array();
    w.key("events_available").begin_array();
    for (unsigned b = 0; b < kArchEventCount; ++b)
        if ((p.events_available >> b) & 1) w.str(arch_event_key(b));
    w.end_array();
    w.field_u("fixed_counters", p.fixed_counters).field_u("fixed_width", p.fixed_width);
    w.field_b("anythread_deprecated", p.anythread_deprecated).field_hex("fixed_counter_mask", p.fixed_mask);
    json_index_array(w, "fixed_counters_effective", p.fixed_effective);
    w.field_b("fixed_count_quirk", p.fixed_count_quirk);
    json_index_array(w, "gp_counters_usable", p.gp_counter_mask());
    json_index_array(w, "fixed_counters_usable", p.fixed_counter_mask());
    w.field_b("leaf_23", p.leaf_23);
    if (p.leaf_23) {
        w.field_hex("leaf23_subleaves", p.leaf23_subleaves).field_b("umask2", p.umask2).field_b("eq", p.eq_bit);
        json_index_array(w, "gp_bitmap", p.gp_bitmap);
        json_index_array(w, "fixed_bitmap", p.fixed_bitmap);
        json_index_array(w, "acr_gp_bitmap", p.acr_gp_bitmap);
        json_index_array(w, "acr_fixed_bitmap", p.acr_fixed_bitmap);
        w.field_hex("arch_events_bitmap", p.arch_events_bitmap);
    }
}

// The AMD and NetBurst parts of "pmu".
void json_vendor_pmu(JsonWriter& w, const CpuRecord& r) {
    const CpuIdentity& id = r.dec.id;
    const PmuCaps& p = r.dec.pmu;
    if (is_amd_family(id.vendor)) {
        w.key("amd").begin_object();
        w.field_b("perfctr_ext_core", p.amd_perfctr_core).field_b("perfmon_v2", p.amd_perfmon_v2);
        w.field_u("core_counters", p.amd_core_counters);
        w.field_b("lbr_v2", p.amd_lbr_v2).field_u("lbr_stack_size", p.amd_lbr_stack_size);
        w.field_u("nb_counters", p.amd_nb_counters);
        w.field_b("irperf", p.amd_irperf).field_b("aperf_mperf", p.amd_efffreq);
        w.end_object();
    }
    if (p.netburst) {
        w.key("netburst").begin_object();
        w.field_u("counters", 18);
        w.field_u("width", 40);
        w.field_u("escrs", p.netburst_model <= 2 ? 45 : 43);
        w.field_b("hyperthreading", p.netburst_ht);
        // IA32_MISC_ENABLE[7]; null when not read (offline dump) or the read faulted.
        w.key("perfmon_available");
        if (r.netburst_perfmon == CpuRecord::NetBurstPerfmon::available) w.boolean(true);
        else if (netburst_disabled(r)) w.boolean(false);
        else w.null();
        w.end_object();
    }
}

}  // namespace

Value census_record(const CpuRecord& r, const TscFreq* tsc) {
    const PmuCaps& p = r.dec.pmu;
    Value rec;
    JsonWriter w(rec);
    w.begin_object();
    w.field("type", "cpu");
    json_location(w, r);
    w.field_b("collected", r.collected);
    if (!r.collected) {
        w.field("error", r.error);
        w.end_object();
        return rec;
    }
    json_identity(w, r);
    w.key("pmu").begin_object();
    json_arch_pmu(w, r);
    json_vendor_pmu(w, r);
    if (p.perf_caps_read) w.field_hex("perf_capabilities", p.perf_caps);
    else w.key("perf_capabilities").null();
    w.field_b("perf_capabilities_fault", r.perf_caps_fault);
    w.end_object();
    cache_geometry_json(w, decode_cache_geometry(r.raw));
    census_topology_json(w, r);
    if (tsc) tsc_freq_fields(w, *tsc);
    w.end_object();
    return rec;
}

}  // namespace pmulab
