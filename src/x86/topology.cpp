// The processor topology from CPUID (see topology.h).
#include "x86/topology.h"

#include "x86/cache_regs.h"
#include "x86/topology_regs.h"

namespace pmulab {

namespace {

constexpr u32 kLeafTopo = 0xB, kLeafTopoV2 = 0x1F, kLeafAmdSize = 0x80000008, kLeafAmdTopo = 0x8000001E;
constexpr u32 kTopoSubleaves = 6;

// 0BH or 1FH (SDM Vol. 3A §10.9.2): the SMT level's shift and count, the last valid level's
// shift; false when sub-leaf 0 reports no logical processors (the leaf is not supported).
bool decode_extended(const CpuidSnapshot& s, u32 leaf, TopoLevels* out) {
    CpuidRegs r;
    if (s.get(0).eax < leaf || !s.find(leaf, 0, &r) || regs::TopoLeafEbx(r.ebx).logical() == 0) return false;
    for (u32 sub = 0; sub < kTopoSubleaves && s.find(leaf, sub, &r); ++sub) {
        u32 type = u32(regs::TopoLeafEcx(r.ecx).level_type());
        if (type == regs::kTopoInvalid) break;
        u32 shift = u32(regs::TopoLeafEax(r.eax).shift());
        if (type == regs::kTopoSmt) {
            out->smt_shift = shift;
            out->threads_per_core = u32(regs::TopoLeafEbx(r.ebx).logical());
        }
        out->package_shift = shift;
    }
    if (out->package_shift < out->smt_shift) out->package_shift = out->smt_shift;
    out->source = leaf == kLeafTopoV2 ? TopoSource::leaf_1f : TopoSource::leaf_0b;
    return true;
}

// AMD without 0BH (APM Vol. 3 E.4.7, E.4.14, E.5): threads per core from Fn8000_001E where
// TopologyExtensions is set, the package's bits from Fn8000_0008 ECX.
bool decode_amd(const CpuidSnapshot& s, TopoLevels* out) {
    CpuidRegs size, topo;
    if (!s.find(kLeafAmdSize, 0, &size)) return false;
    regs::AmdSizeEcx ecx(size.ecx);
    u32 threads = u32(ecx.nc()) + 1;
    out->package_shift = ecx.apic_id_size() ? u32(ecx.apic_id_size()) : ceil_log2(threads);
    bool ext = (s.get(0x80000001).ecx >> regs::kAmdTopologyExtensions) & 1;
    if (ext && s.find(kLeafAmdTopo, 0, &topo)) {
        out->threads_per_core = u32(regs::AmdTopoEbx(topo.ebx).threads_per_core()) + 1;
        out->smt_shift = ceil_log2(out->threads_per_core);
        out->source = TopoSource::amd_8000001e;
    } else {
        out->source = TopoSource::legacy;  // K8-K10: one thread per core
    }
    if (out->package_shift < out->smt_shift) out->package_shift = out->smt_shift;
    return true;
}

// Intel without 0BH (SDM Vol. 3A §10.9.3): logical IDs per package from 01H:EBX[23:16],
// core IDs per package from 04H:EAX[31:26] + 1.
void decode_legacy(const CpuidSnapshot& s, TopoLevels* out) {
    CpuidRegs l1 = s.get(1), l4;
    if (!((l1.edx >> regs::kLeaf1EdxHtt) & 1)) {
        out->source = TopoSource::single;
        return;
    }
    u32 logical = u32(regs::Leaf1Ebx(l1.ebx).logical_ids());
    if (logical == 0) logical = 1;
    u32 cores = 1;
    if (s.get(0).eax >= 4 && s.find(4, 0, &l4)) cores = u32(regs::CacheLeafEax(l4.eax).core_ids()) + 1;
    u32 per_core = logical > cores ? logical / cores : 1;
    out->smt_shift = ceil_log2(per_core);
    out->threads_per_core = per_core;
    out->package_shift = ceil_log2(logical);
    if (out->package_shift < out->smt_shift) out->package_shift = out->smt_shift;
    out->source = TopoSource::legacy;
}

}  // namespace

const char* topo_source_name(TopoSource s) {
    switch (s) {
        case TopoSource::leaf_1f: return "cpuid_1fh";
        case TopoSource::leaf_0b: return "cpuid_0bh";
        case TopoSource::amd_8000001e: return "cpuid_8000001eh";
        case TopoSource::legacy: return "cpuid_legacy";
        case TopoSource::single: return "single";
        case TopoSource::none: break;
    }
    return "none";
}

TopoLevels decode_topology_levels(const CpuidSnapshot& s) {
    TopoLevels l;
    if (!s.has(0)) return l;
    if (decode_extended(s, kLeafTopoV2, &l) || decode_extended(s, kLeafTopo, &l)) return l;
    bool amd = is_amd_family(decode_cpuid(s).id.vendor);
    if (amd && decode_amd(s, &l)) return l;
    decode_legacy(s, &l);
    return l;
}

u64 cpuid_apic_id(const CpuidSnapshot& s) {
    const u32 max = s.get(0).eax;
    CpuidRegs r;
    const u32 leaves[2] = {kLeafTopoV2, kLeafTopo};
    for (u32 leaf : leaves)
        if (max >= leaf && s.find(leaf, 0, &r) && regs::TopoLeafEbx(r.ebx).logical()) return r.edx;
    return regs::Leaf1Ebx(s.get(1).ebx).initial_apic_id();
}

TopoPlace topology_place(const TopoLevels& l, u64 apic_id) {
    TopoPlace p;
    p.thread = u32(apic_id & low_mask(l.smt_shift));
    p.core = u32((apic_id >> l.smt_shift) & low_mask(l.package_shift - l.smt_shift));
    p.package = u32(apic_id >> l.package_shift);
    return p;
}

const char* sibling_state_name(SiblingState s) {
    switch (s) {
        case SiblingState::none: return "none";
        case SiblingState::idle: return "idle";
        case SiblingState::halted: return "halted";
        case SiblingState::busy: return "busy";
    }
    return "none";
}

SiblingState sibling_merge(SiblingState a, SiblingState b) {
    auto rank = [](SiblingState s) {
        return s == SiblingState::busy ? 3 : s == SiblingState::idle ? 2 : s == SiblingState::halted ? 1 : 0;
    };
    return rank(a) >= rank(b) ? a : b;
}

Status find_smt_siblings(Hw& hw, u32 cpu, SmtSiblings* out) {
    *out = SmtSiblings();
    Result<CpuTopology> me = hw.topology(cpu);
    if (!me.ok()) return me.error();
    CpuidSnapshot snap;
    capture_cpuid(hw, &snap);
    TopoLevels l = decode_topology_levels(snap);
    out->smt_shift = l.smt_shift;
    if (!l.smt_shift) return ok_status();
    for (u32 i = 0, n = hw.cpu_count(); i < n && out->count < SmtSiblings::kMax; ++i) {
        if (i == cpu) continue;
        Result<CpuTopology> t = hw.topology(i);
        if (t.ok() && t.value().enabled && same_core(l, t.value().apic_id, me.value().apic_id))
            out->cpu[out->count++] = i;
    }
    return ok_status();
}

}  // namespace pmulab
