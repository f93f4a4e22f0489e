// Builders of simulated machines: synthetic CPUs of every architectural perfmon version,
// the AMD, QEMU TCG, TopDown-era and NetBurst parts, machines from CPUID dumps, and the
// named models pmulab-sim offers (--model). One home: sim_builders.cpp (the NetBurst
// snapshot reader is in sim_netburst.cpp, the TopDown parts' CPUID in sim_topdown.cpp).
#pragma once

#include <string>
#include <vector>

#include "sim/sim_machine.h"

namespace sim {

// The leaves of a synthetic Intel CPU; intel_snapshot() fills leaves 0, 1, 7,
// 0AH, 0BH, 1AH, 23H and 8000_0000H..8000_0004H from it.
struct IntelCpuidSpec {
    u32 max_leaf = 0x16;
    u32 signature = 0x000906EA;
    bool pdcm = true;
    bool hypervisor = false;
    const char* brand = "pmulab simulated Intel CPU";
    CpuidRegs leaf_0a;     // EAX version/GP/width/EBX length, EBX, ECX fixed mask, EDX
    bool hybrid = false;   // CPUID.(7,0):EDX[15]
    u32 leaf_1a_eax = 0;   // core type [31:24] and native model id
    bool leaf_23 = false;  // CPUID.(7,1):EAX[8] and leaf 23H
    CpuidRegs leaf_23_sub[4];
    // Leaves set only when nonzero (and within max_leaf): 06H (ECX[0]: APERF/MPERF),
    // 15H (TSC/crystal ratio EBX/EAX, crystal Hz in ECX), 16H (base MHz in EAX).
    u32 leaf_06_ecx = 0;
    CpuidRegs leaf_15, leaf_16;
    // Intel PT (sim_pt.h): CPUID.(07H,0):EBX[25] and leaf 14H's subleaves 0 and 1.
    bool pt = false;
    CpuidRegs leaf_14[2];
};

// Where each logical processor sits; APIC ID = pkg:core:thread packed in the
// fewest bits, like QEMU and most firmware.
struct TopoSpec {
    u32 packages = 1;
    u32 cores = 1;    // per package
    u32 threads = 1;  // per core
    u32 count() const { return packages * cores * threads; }
};

CpuidSnapshot intel_snapshot(const IntelCpuidSpec& spec, u32 apic_id, const TopoSpec& topo);
// Builds a machine of identical CPUs (CPU 0 the BSP).
SimMachine intel_machine(const IntelCpuidSpec& spec, const TopoSpec& topo, u64 perf_capabilities = 0,
                         const PmuOverrides& ov = {});

// v1: Core Duo (Yonah)-like, 2 GP x 40 bits, no fixed counters, no PDCM.
SimMachine intel_v1(u32 ncpus = 2);
// v2: Core 2 (Penryn)-like, 2 GP x 40, 3 fixed x 40 (CPUID.0AH:EDX = 0x503), PDCM.
SimMachine intel_v2(u32 ncpus = 2, u64 perf_capabilities = 0);
// v2 with the Conroe erratum: CPUID.0AH:EDX = 0 though the hardware has 3 fixed x 40.
SimMachine intel_v2_conroe(u32 ncpus = 2);
// v3: Nehalem/Sandy Bridge-like, 4 GP x 48, 3 fixed x 48, 2 threads per core.
SimMachine intel_v3(u32 ncpus = 4, u64 perf_capabilities = 0);
// v4: Goldmont Plus-like (CPUID.0AH EAX=07300404 EDX=00008603): 4 GP x 48,
// 3 fixed x 48, AnyThread deprecated, PERF_CAPABILITIES with full-width writes.
SimMachine intel_v4_goldmont_plus(u32 ncpus = 4);
inline constexpr u64 kGoldmontPlusPerfCaps = 0x33c5;
// v5: 4 GP x 48 with fixed counters from CPUID.0AH:ECX (mask) and EDX[4:0].
SimMachine intel_v5(u32 fixed_ecx_mask = 0b1001, u32 fixed_edx_count = 0, u32 ncpus = 2);
// v6 with leaf 23H: GP and fixed bitmaps from sub-leaf 1, UMASK2 and EQ enumerated.
SimMachine intel_v6(u32 gp_bitmap = 0x3ff, u32 fixed_bitmap = 0x77, u32 ncpus = 2);
// Hybrid (Alder Lake-like): CPUs 0-3 are 2 P cores x 2 threads (8 GP, fixed 0-3),
// CPUs 4-7 are 4 E cores (6 GP, fixed 0-2).
SimMachine intel_hybrid();
// QEMU TCG with the default qemu64 model: AuthenticAMD family 0Fh, no PMU,
// unknown MSRs read 0 and drop writes, RDPMC #UD, IA32_PKRS #GP with EDX != 0.
SimMachine qemu_tcg(u32 ncpus = 4);
// QEMU TCG with an Intel model (Skylake-Client): CPUID.0AH = 0, otherwise as above.
SimMachine qemu_tcg_intel(u32 ncpus = 2);
// AMD Zen-like: PerfCtrExtCore (6 counters); with perfmon_v2 also the global MSRs.
SimMachine amd_zen(u32 ncpus = 2, bool perfmon_v2 = true);
// Snapshots built from documented CPUID values (no dump of these parts is in
// tests/data/cpuid): Zen 3 (family 19h model 21h, Vermeer: PerfCtrExtCore, no leaf
// 8000_0022H), Zen 4 (family 19h model 61h, Raphael: PerfMonV2 with 6 core counters, IBS: 8000_001BH),
// both with IRPerfCount (8000_0008H:EBX[1]) and EffFreq (06H:ECX[0]); and a family 10h
// K10 (4 legacy counters only, no IRPerfCount; EffFreq without the EffFreqRO aliases).
// Zen 3/4 enumerate EffFreqRO (8000_0007H:EDX[10]). Zen 1 (family 17h model 01h, Summit
// Ridge): PerfCtrExtCore, IRPerfCount enumerated but hit by erratum 1054 (the simulated
// IRPerfCount over-counts).
SimMachine amd_zen1(u32 ncpus = 2);
SimMachine amd_zen3(u32 ncpus = 2);
SimMachine amd_zen4(u32 ncpus = 2);
SimMachine amd_k10(u32 ncpus = 2);

// TopDown-era parts (CPUID values from the SDM/perfmon tables; PERF_CAPABILITIES[15] where
// the part has PERF_METRICS): Ice Lake client (06_7EH, v5, 8 GP, fixed 0-3, level 1),
// Sapphire Rapids (06_8FH, also level 2), Skylake client (06_5EH, v4, 4 GP, fixed 0-2,
// no PERF_METRICS), and Alder Lake as intel_hybrid() with PERF_METRICS on the P cores.
inline constexpr u64 kIceLakePerfCaps = 0x33c5 | (1ull << 15);
// Ice Lake client's own: PEBS record format 4 ([11:8]) and PEBS baseline ([14], adaptive
// PEBS, sim_pebs.h) besides the above.
inline constexpr u64 kIceLakeClientPerfCaps = 0xF4C5;
// Sapphire Rapids and Alder Lake's P cores: PEBS record format 5 ([11:8], the DS area's
// fixed-counter reset slots at 140H, sim_pebs.h), PEBS baseline [14] and PERF_METRICS [15];
// Alder Lake's Gracemont E cores the same without PERF_METRICS.
inline constexpr u64 kGoldenCovePerfCaps = 0xF5C5;
inline constexpr u64 kGracemontPerfCaps = 0x75C5;
SimMachine intel_icelake(u32 ncpus = 2);
SimMachine intel_icelake_server(u32 ncpus = 2);  // 06_6AH (Ice Lake-SP), as the client's PMU
// As intel_icelake, with Intel PT (leaf 14H: single-range and ToPA output) and
// PERF_CAPABILITIES[16] (PEBS output to Intel PT, sim_pt.h).
SimMachine intel_icelake_pt(u32 ncpus = 2);
SimMachine intel_sapphire_rapids(u32 ncpus = 2);
// Skylake-SP (06_55H, stepping 4): Skylake's core PMU; 18 CHAs in the simulated uncore.
SimMachine intel_skylake_server(u32 ncpus = 2);
SimMachine intel_skylake(u32 ncpus = 2);
SimMachine intel_alder_lake();
// `m` with CPUID.15H (TSC/crystal ratio EBX/EAX, crystal Hz ECX; SDM Vol. 2A) on every CPU,
// so that the TSC frequency is known (the CPUs' maximum basic leaf must reach 15H).
SimMachine with_tsc_leaf15(const SimMachine& m, const CpuidRegs& l15);

// NetBurst. The real Prescott snapshot (tests/data/cpuid/GenuineIntel0000F41_P4_
// Prescott_CPUID.txt: Celeron D 326, family 0FH model 04H, no Hyper-Threading), with
// IA32_MISC_ENABLE as that dump records it (2084_2081H: bit 7 "performance monitoring
// available" set, bit 12 "PEBS unavailable" clear). `ncpus` logical processors; with
// `ht` they are packages of two threads sharing one register file each, and the
// snapshot says so (CPUID.01H:EBX[23:16] = 2, initial APIC ID package:thread, as a
// Prescott Pentium 4 with HT reports); without, every CPU has its own.
SimMachine netburst_p4(u32 ncpus = 1, bool ht = false);
// The snapshot itself (leaves of the dump; sim_netburst.cpp).
CpuidSnapshot prescott_snapshot();
inline constexpr u64 kPrescottMiscEnable = 0x20842081;

// The named models (pmulab-sim --model NAME, --list-models).
struct NamedModel {
    const char* name;
    const char* what;  // one line
    SimMachine (*make)();
};
const std::vector<NamedModel>& named_models();
// Null for an unknown name.
const NamedModel* find_named_model(const std::string& name);

// The CPUs `keep` of `base` (indices, the first the BSP) as a machine of their own. For a
// machine from a dump (`from_dump`), what the dump cannot say: Core 2's three fixed
// counters where CPUID.0AH:EDX reports fewer (the Conroe erratum, bare metal only), and
// NetBurst's ESCR/CCCR register file, one per package shared by its threads, with
// IA32_MISC_ENABLE as the Prescott dump records it. Otherwise a NetBurst CPU's
// IA32_MISC_ENABLE is the first kept CPU's.
SimMachine keep_cpus(const SimMachine& base, const std::vector<u32>& keep, bool from_dump);

}  // namespace sim
