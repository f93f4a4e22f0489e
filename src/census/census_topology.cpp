// The census's topology block (`info`) and the records' "topology" object: package, core
// and SMT thread of every CPU from CPUID (x86/topology.h), and the SMT siblings.
#include "census/census.h"

#include "base/json.h"
#include "pmu/pmu.h"
#include "x86/topology.h"

namespace pmulab {

namespace {

const CpuRecord* first_collected(const Vec<CpuRecord>& cpus) {
    for (const CpuRecord& r : cpus)
        if (r.collected) return &r;
    return nullptr;
}

// The SMT groups ("0+1, 2+3"): every core with more than one logical processor.
usize put_smt_groups(StrBuf& out, const Vec<CpuRecord>& cpus, const TopoLevels& l) {
    usize groups = 0;
    for (const Vec<u32>&members : group_indices(cpus.size(), [&](usize i, usize j) {
             return cpus[i].collected && cpus[j].collected && same_core(l, cpus[i].topo.apic_id, cpus[j].topo.apic_id);
         })) {
        if (members.size() < 2) continue;
        out.put(groups++ ? ", " : "");
        for (usize k = 0; k < members.size(); ++k) out.printf("%s%u", k ? "+" : "", cpus[members[k]].index);
    }
    return groups;
}

}  // namespace

void census_topology(const Vec<CpuRecord>& cpus, StrBuf& out) {
    const CpuRecord* first = first_collected(cpus);
    if (!first) return;
    TopoLevels l = decode_topology_levels(first->raw);
    StrBuf groups;
    if (!put_smt_groups(groups, cpus, l)) return;  // no SMT: the table says all there is
    usize packages = 0, cores = 0, logical = 0;
    for (usize i = 0; i < cpus.size(); ++i) {
        if (!cpus[i].collected) continue;
        ++logical;
        bool new_core = true, new_package = true;
        for (usize j = 0; j < i; ++j) {
            if (!cpus[j].collected) continue;
            u64 a = cpus[i].topo.apic_id, b = cpus[j].topo.apic_id;
            new_core = new_core && !same_core(l, a, b);
            new_package = new_package && (a >> l.package_shift) != (b >> l.package_shift);
        }
        cores += new_core;
        packages += new_package;
    }
    out.printf("\ntopology (%s): %u package%s, %u core%s, %u logical processors; x2APIC ID: %u SMT bit%s, "
               "package ID above bit %u\n",
               topo_source_name(l.source), unsigned(packages), packages == 1 ? "" : "s", unsigned(cores),
               cores == 1 ? "" : "s", unsigned(logical), l.smt_shift, l.smt_shift == 1 ? "" : "s", l.package_shift);
    out.printf("  SMT siblings: %s\n", groups.c_str());
    // Where the firmware's location disagrees with CPUID's (EFI_CPU_PHYSICAL_LOCATION numbers
    // the core field the same way, edk2 GetProcessorLocationByApicId).
    for (const CpuRecord& r : cpus) {
        if (!r.collected) continue;
        TopoPlace p = topology_place(decode_topology_levels(r.raw), r.topo.apic_id);
        if (p.thread != r.topo.thread || p.package != r.topo.package)
            out.printf("  note: CPU %u: CPUID gives package %u thread %u, the firmware %u/%u\n", r.index, p.package,
                       p.thread, r.topo.package, r.topo.thread);
    }
}

void census_topology_json(JsonWriter& w, const CpuRecord& r) {
    TopoLevels l = decode_topology_levels(r.raw);
    TopoPlace p = topology_place(l, r.topo.apic_id);
    w.key("topology").begin_object();
    w.field("source", topo_source_name(l.source)).field_u("x2apic_id", cpuid_apic_id(r.raw));
    w.field_u("package", p.package).field_u("core", p.core).field_u("thread", p.thread);
    w.field_u("threads_per_core", l.threads_per_core);
    w.field_u("smt_shift", l.smt_shift).field_u("package_shift", l.package_shift);
    w.end_object();
}

}  // namespace pmulab
