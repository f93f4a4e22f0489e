// Machines from CPUID snapshots and dumps, and pmulab-sim's named models (sim_builders.h).
#include <algorithm>

#include "sim/sim_builders.h"
#include "sim/sim_internal.h"
#include "sim/sim_netburst.h"

namespace sim {

// ---------------------------------------------------------------------------
// Machines from CPUID snapshots and dumps

SimMachine SimMachine::from_snapshots(const std::vector<CpuidSnapshot>& snaps, u64 perf_caps) {
    std::vector<CpuSpec> specs;
    for (u32 i = 0; i < snaps.size(); ++i) {
        CpuSpec c;
        c.cpuid = snaps[i];
        c.perf_capabilities = perf_caps;
        const CpuidSnapshot& s = snaps[i];
        u32 max = s.get(0).eax;
        CpuidRegs b0, b1;
        u32 apic = (s.get(1).ebx >> 24) & 0xff;
        u32 smt_shift = 0, core_shift = 0;
        if (max >= 0xB && s.find(0xB, 0, &b0) && (b0.ebx & 0xffff)) {
            apic = b0.edx;
            smt_shift = b0.eax & 0x1f;
            core_shift = s.find(0xB, 1, &b1) ? (b1.eax & 0x1f) : smt_shift;
        } else {
            // Without leaf 0BH: one thread per core, the APIC ID is the core number.
            core_shift = 8;
        }
        c.topo.apic_id = apic;
        c.topo.thread = apic & u32(width_mask(smt_shift));
        c.topo.core = (apic >> smt_shift) & u32(width_mask(core_shift - smt_shift));
        c.topo.package = core_shift >= 32 ? 0 : apic >> core_shift;
        c.topo.bsp = i == 0;
        specs.push_back(c);
    }
    return SimMachine(specs);
}

SimMachine SimMachine::from_records(const pmulab::Vec<pmulab::CpuRecord>& recs, u64 perf_caps) {
    std::vector<CpuidSnapshot> snaps;
    for (const pmulab::CpuRecord& r : recs) snaps.push_back(r.raw);
    SimMachine m = from_snapshots(snaps, perf_caps);
    for (u32 i = 0; i < recs.size(); ++i) {
        CpuTopology& t = m.cpu(i).topology();
        t.apic_id = recs[i].topo.apic_id;
        if (recs[i].topology_known) {
            t.package = recs[i].topo.package;
            t.core = recs[i].topo.core;
            t.thread = recs[i].topo.thread;
        }
    }
    return m;
}

// ---------------------------------------------------------------------------
// pmulab-sim's named models and the CPUs it keeps

namespace {

// Skylake client (06_5EH): perfmon v4, 4 GP counters x 48 bits per thread (HT on), 3 fixed
// x 48, IA32_PERF_CAPABILITIES 33C5H (full-width writes, PEBS format 3, LBR format 5).
SimMachine skylake_ht() {
    IntelCpuidSpec s;
    s.signature = 0x000506E3;
    s.brand = "pmulab simulated Intel Core (Skylake-like)";
    s.leaf_0a = {0x07300404, 0x00000000, 0x00000000, 0x00000603};
    return intel_machine(s, {1, 2, 2}, 0x33c5);
}

const NamedModel kModels[] = {
    {"skylake", "Intel Skylake-like: perfmon v4, 4 GP + 3 fixed x 48, 2 cores x 2 threads", skylake_ht},
    {"intel_v1", "Intel v1 (Core Duo-like): 2 GP x 40, no fixed counters", [] { return intel_v1(); }},
    {"intel_v2", "Intel v2 (Core 2-like): 2 GP + 3 fixed x 40", [] { return intel_v2(); }},
    {"intel_v2_conroe", "Intel v2 with the Conroe erratum (CPUID.0AH:EDX = 0, 3 fixed counters)",
     [] { return intel_v2_conroe(); }},
    {"intel_v3", "Intel v3 (Nehalem-like): 4 GP + 3 fixed x 48, 2 threads per core", [] { return intel_v3(); }},
    {"intel_v4", "Intel v4 (Goldmont Plus-like): 4 GP + 3 fixed x 48, full-width writes",
     [] { return intel_v4_goldmont_plus(); }},
    {"intel_v5", "Intel v5: 4 GP x 48, fixed counters 0 and 3 from CPUID.0AH:ECX", [] { return intel_v5(); }},
    {"intel_v6", "Intel v6 with leaf 23H: 10 GP, fixed 0-2,4-6, UMASK2 and EQ", [] { return intel_v6(); }},
    {"hybrid", "Intel hybrid (Alder Lake-like): 2 P cores x 2 threads (8 GP) + 4 E cores (6 GP)",
     [] { return intel_hybrid(); }},
    {"icelake",
     "Intel Ice Lake client (06_7EH): perfmon v5, 8 GP + 4 fixed, PERF_METRICS level 1, TSC 1497.6 MHz (CPUID.15H)",
     [] {
         return with_tsc_leaf15(intel_icelake(), {2, 156, 19200000, 0});
     }},
    {"icelake_pt",
     "as icelake, with Intel PT (CPUID 14H) and PEBS output to PT (IA32_PERF_CAPABILITIES[16]): "
     "--precise --pebs-output pt",
     [] {
         return with_tsc_leaf15(intel_icelake_pt(), {2, 156, 19200000, 0});
     }},
    {"icelake_server",
     "Intel Ice Lake server (06_6AH): as icelake, TSC 2.0 GHz (CPUID.15H), RAPL with a 2^-16 J DRAM unit",
     [] {
         return with_tsc_leaf15(intel_icelake_server(), {2, 160, 25000000, 0});
     }},
    {"skylake_server",
     "Intel Skylake-SP (06_55H): as skylake, 18 CHAs (L3 slices, the simulator's stand-in hash), CAPID6 in PCI",
     [] { return intel_skylake_server(); }},
    {"sapphire_rapids", "Intel Sapphire Rapids (06_8FH): PERF_METRICS levels 1 and 2",
     [] { return intel_sapphire_rapids(); }},
    {"alder_lake", "hybrid with PERF_METRICS on the P cores (Gracemont E cores)", [] { return intel_alder_lake(); }},
    {"qemu_tcg", "QEMU TCG, qemu64 model: no PMU, RDPMC #UD, unknown MSRs read 0", [] { return qemu_tcg(); }},
    {"qemu_tcg_intel", "QEMU TCG, Skylake-Client model: CPUID.0AH = 0", [] { return qemu_tcg_intel(); }},
    {"zen1", "AMD Zen 1 (17h/01h): PerfCtrExtCore, IRPerfCount erratum 1054, L3 PMU (4 slices)",
     [] { return amd_zen1(); }},
    {"zen3", "AMD Zen 3 (19h/21h): PerfCtrExtCore, 6 counters, no PerfMonV2, L3 PMU (8 slices)",
     [] { return amd_zen3(); }},
    {"zen4", "AMD Zen 4 (19h/61h): PerfMonV2, 6 core counters, L3 PMU (8 slices)", [] { return amd_zen4(); }},
    {"k10", "AMD family 10h: 4 legacy counters", [] { return amd_k10(); }},
    {"prescott", "Intel Pentium 4 Prescott (NetBurst ESCR/CCCR), 1 CPU", [] { return netburst_p4(1); }},
    {"prescott_ht", "Prescott with Hyper-Threading: 2 threads sharing one ESCR/CCCR file",
     [] { return netburst_p4(2, true); }},
};

bool is_netburst(const CpuidSnapshot& s) {
    CpuidRegs v = s.get(0), l1 = s.get(1);
    bool intel = v.ebx == kIntelEbx && v.edx == kIntelEdx && v.ecx == kIntelEcx;
    return intel && ((l1.eax >> 8) & 0xF) == 0xF;
}

// Core 2 (perfmon v2) on bare metal has three fixed counters even where CPUID.0AH:EDX
// reports none (the Conroe erratum; Linux assumes 3 too).
void conroe_fixed_counters(CpuSpec* s) {
    CpuidRegs a = s->cpuid.get(0xA), l1 = s->cpuid.get(1);
    bool hv = (l1.ecx >> 31) & 1;
    if ((a.eax & 0xFF) == 2 && (a.edx & 0x1F) < 3 && !hv) {
        s->pmu.fixed_count = 3;
        s->pmu.fixed_width = int((a.eax >> 16) & 0xFF);
    }
}

}  // namespace

const std::vector<NamedModel>& named_models() {
    static const std::vector<NamedModel> v(std::begin(kModels), std::end(kModels));
    return v;
}

const NamedModel* find_named_model(const std::string& name) {
    for (const NamedModel& m : kModels)
        if (name == m.name) return &m;
    return nullptr;
}

SimMachine keep_cpus(const SimMachine& base, const std::vector<u32>& keep, bool from_dump) {
    std::vector<CpuSpec> specs;
    // NetBurst register files: one per package, shared by its threads.
    std::vector<std::pair<u32, std::shared_ptr<NetBurstModel>>> packages;
    for (u32 k = 0; k < keep.size(); ++k) {
        CpuSpec s = base.cpu(keep[k]).spec();
        s.topo.bsp = k == 0;
        if (from_dump) conroe_fixed_counters(&s);
        if (from_dump && is_netburst(s.cpuid)) {
            std::shared_ptr<NetBurstModel> pkg;
            for (auto& [p, m] : packages)
                if (p == s.topo.package) pkg = m;
            if (!pkg) {
                pkg = std::make_shared<NetBurstModel>(s.cpuid);
                packages.push_back({s.topo.package, pkg});
            }
            s.netburst = pkg;
            s.netburst_thread = pkg->ht() ? (s.topo.thread & 1) : 0;
        }
        specs.push_back(s);
    }
    const SimCpu& first = base.cpu(keep[0]);
    u64 misc = first.msr_exists(reg::MISC_ENABLE) ? first.peek(reg::MISC_ENABLE) : 0;
    SimMachine m(specs);
    if (const SimAmdL3* l3 = base.amd_l3()) m.enable_amd_l3(l3->f17());  // the named AMD models' L3 PMU
    // NetBurst: performance monitoring available (IA32_MISC_ENABLE[7]), as the Prescott
    // dump records it.
    for (u32 i = 0; i < m.size(); ++i) {
        SimCpu& c = m.cpu(i);
        if (c.netburst() && c.msr_exists(reg::MISC_ENABLE))
            c.poke(reg::MISC_ENABLE, from_dump ? kPrescottMiscEnable : misc);
    }
    return m;
}

}  // namespace sim
