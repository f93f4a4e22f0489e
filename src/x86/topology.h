// The processor topology from CPUID: which package, core and SMT thread a logical processor
// is, from its x2APIC ID and the ID layout its CPUID leaves enumerate (x86/topology_regs.h
// cites the sections), and the SMT siblings of a logical processor (docs/measure.md "SMT
// siblings"). Pure decoding of a CpuidSnapshot (live or from a dump), plus one walk over
// the Hw's processor list.
//
// The layout, in order of preference (SDM Vol. 3A §10.9; Linux arch/x86/kernel/cpu/topology*):
//   cpuid_1fh      V2 extended topology (Intel): SMT shift from the SMT level, package shift
//                  from the last level (module, tile, die levels included in the core ID)
//   cpuid_0bh      extended topology (Intel, AMD Zen 2 and later): SMT and core levels
//   cpuid_8000001eh  AMD TopologyExtensions: threads per core from Fn8000_001E EBX[15:8],
//                  the package's ID bits from Fn8000_0008 ECX (ApicIdSize, else NC)
//   cpuid_legacy   the legacy counts: 01H:EBX[23:16] logical IDs per package (HTT set),
//                  04H:EAX[31:26] core IDs per package (Intel), Fn8000_0008 NC (AMD)
//   single         one logical processor per package (no HTT)
// The core ID is every bit between the SMT and package fields (unique in the package, as
// Linux's core_id); two logical processors are SMT siblings when their x2APIC IDs agree above
// the SMT shift.
#pragma once

#include "x86/cpuid.h"

namespace pmulab {

enum class TopoSource : u8 { none, leaf_1f, leaf_0b, amd_8000001e, legacy, single };
// "cpuid_1fh", "cpuid_0bh", "cpuid_8000001eh", "cpuid_legacy", "single", "none".
const char* topo_source_name(TopoSource s);

struct TopoLevels {
    TopoSource source = TopoSource::none;
    u32 smt_shift = 0;         // x2APIC ID bits of the thread in its core
    u32 package_shift = 0;     // x2APIC ID bits below the package ID
    u32 threads_per_core = 1;  // logical processors the SMT level enumerates (this core's)
};
TopoLevels decode_topology_levels(const CpuidSnapshot& s);

// The (x2)APIC ID CPUID reports: 1FH/0BH EDX, else 01H:EBX[31:24] (8 bits).
u64 cpuid_apic_id(const CpuidSnapshot& s);

struct TopoPlace {
    u32 package = 0, core = 0, thread = 0;
};
TopoPlace topology_place(const TopoLevels& l, u64 apic_id);
// Whether two different APIC IDs are threads of one core.
inline bool same_core(const TopoLevels& l, u64 a, u64 b) { return (a >> l.smt_shift) == (b >> l.smt_shift); }

// What an SMT sibling of the measuring CPU did while it measured (records' "sibling"):
//   none    the core has no other logical processor
//   idle    pmulab ran nothing there (the firmware's wait, which pmulab does not see)
//   halted  pmulab kept it in HLT or MWAIT
//   busy    it ran (e.g. the BSP waiting with PAUSE, a polling AP worker, a simulated load)
enum class SiblingState : u8 { none, idle, halted, busy };
const char* sibling_state_name(SiblingState s);
// The record's state for several siblings: the most active one (busy > idle > halted).
SiblingState sibling_merge(SiblingState a, SiblingState b);

struct SmtSiblings {
    static constexpr u32 kMax = 7;  // 8-way SMT at most
    u32 cpu[kMax] = {};
    u32 count = 0;
    u32 smt_shift = 0;
};
// The other enabled logical processors of `cpu`'s core: APIC IDs from Hw::topology, the SMT
// shift from the calling CPU's CPUID (the ID layout is the same on every CPU of a machine).
// Errors: `cpu` has no topology.
Status find_smt_siblings(Hw& hw, u32 cpu, SmtSiblings* out);

}  // namespace pmulab
