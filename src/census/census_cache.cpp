// `info`'s cache block: the geometry of each level (x86/cache_geometry.h) per group of
// CPUs that report the same caches, and which CPUs share each cache (by APIC ID).
#include "census/census.h"
#include "x86/cache_geometry.h"

namespace pmulab {

namespace {

// The collected CPUs whose APIC ID shares cache c with CPU `of`.
void sharers(const Vec<CpuRecord>& cpus, const CpuRecord& of, const CacheLevel& c, Vec<u32>* out) {
    for (const CpuRecord& r : cpus)
        if (r.collected && c.shares(of.topo.apic_id, r.topo.apic_id)) out->push(r.index);
}

void put_group(StrBuf& out, const Vec<CpuRecord>& cpus, const Vec<u32>& members, const CacheGeometry& g) {
    out.printf("\ncaches (%s)", g.note);
    if (members.size() != cpus.size()) {
        out.put(StrView(" of "));
        put_cpu_list(out, members);
    }
    out.put(StrView(":\n"));
    const CpuRecord* first = nullptr;
    for (const CpuRecord& r : cpus)
        if (r.index == members[0]) first = &r;
    for (u32 i = 0; i < g.count; ++i) {
        const CacheLevel& c = g.levels[i];
        out.put(StrView("  "));
        put_cache_level(out, c);
        if (c.shared_by && first) {
            Vec<u32> with;
            sharers(cpus, *first, c, &with);
            out.printf("; CPU %u's: ", first->index);
            put_cpu_list(out, with);
        }
        out.put('\n');
    }
}

}  // namespace

void census_caches(const Vec<CpuRecord>& cpus, StrBuf& out) {
    Vec<CacheGeometry> seen;
    Vec<Vec<u32>> groups;
    for (const CpuRecord& r : cpus) {
        if (!r.collected) continue;
        CacheGeometry g = decode_cache_geometry(r.raw);
        usize k = 0;
        while (k < seen.size() && !(seen[k] == g)) ++k;
        if (k == seen.size()) {
            seen.push(g);
            groups.push(Vec<u32>());
        }
        groups[k].push(r.index);
    }
    // CPUs without cache leaves (QEMU's qemu64 model) print nothing; their records say "caches": [].
    for (usize k = 0; k < seen.size(); ++k)
        if (seen[k].count) put_group(out, cpus, groups[k], seen[k]);
}

}  // namespace pmulab
