// The builders of synthetic machines (sim_builders.h): CPUs from documented CPUID values.
// Machines from CPUID dumps and pmulab-sim's named models are in sim_models.cpp.
#include "sim/sim_builders.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "census/cpuid_dump.h"
#include "sim/sim_internal.h"
#include "sim/sim_netburst.h"

namespace sim {

// ---------------------------------------------------------------------------
// Synthetic machines

namespace {

u32 ceil_log2(u32 n) {
    u32 b = 0;
    while ((1u << b) < n) ++b;
    return b;
}

void set_vendor(CpuidSnapshot& s, u32 max_leaf, u32 ebx, u32 edx, u32 ecx) { s.set(0, 0, {max_leaf, ebx, ecx, edx}); }

void set_brand(CpuidSnapshot& s, const char* brand) {
    char b[48] = {};
    for (int i = 0; i < 47 && brand[i]; ++i) b[i] = brand[i];
    for (u32 l = 0; l < 3; ++l) {
        u32 r[4];
        for (u32 k = 0; k < 4; ++k) {
            const unsigned char* p = reinterpret_cast<const unsigned char*>(b + 16 * l + 4 * k);
            r[k] = u32(p[0]) | (u32(p[1]) << 8) | (u32(p[2]) << 16) | (u32(p[3]) << 24);
        }
        s.set(0x80000002 + l, 0, {r[0], r[1], r[2], r[3]});
    }
}

// Leaf 0BH, sub-leaves 0 (SMT) and 1 (core).
void set_leaf_0b(CpuidSnapshot& s, u32 apic, const TopoSpec& t) {
    u32 tbits = ceil_log2(t.threads), cbits = ceil_log2(t.cores);
    s.set(0xB, 0, {tbits, t.threads, 0x100, apic});
    s.set(0xB, 1, {tbits + cbits, t.threads * t.cores, 0x201, apic});
}

u32 apic_of(u32 idx, const TopoSpec& t, CpuTopology* topo) {
    u32 tbits = ceil_log2(t.threads), cbits = ceil_log2(t.cores);
    u32 thread = idx % t.threads, core = (idx / t.threads) % t.cores, pkg = idx / (t.threads * t.cores);
    if (topo) {
        topo->thread = thread;
        topo->core = core;
        topo->package = pkg;
        topo->bsp = idx == 0;
    }
    u32 apic = (pkg << (tbits + cbits)) | (core << tbits) | thread;
    if (topo) topo->apic_id = apic;
    return apic;
}

}  // namespace

CpuidSnapshot intel_snapshot(const IntelCpuidSpec& sp, u32 apic, const TopoSpec& t) {
    CpuidSnapshot s;
    set_vendor(s, sp.max_leaf, kIntelEbx, kIntelEdx, kIntelEcx);
    u32 per_pkg = 1u << ceil_log2(t.cores * t.threads);
    u32 ebx1 = ((apic & 0xff) << 24) | ((per_pkg & 0xff) << 16) | 0x0800;
    u32 ecx1 = (0x0000e3bd & ~(1u << 15)) | (sp.pdcm ? 1u << 15 : 0) | (sp.hypervisor ? 1u << 31 : 0);
    s.set(1, 0, {sp.signature, ebx1, ecx1, 0xbfebfbff});
    if (sp.max_leaf >= 7) {
        s.set(7, 0, {sp.leaf_23 ? 1u : 0u, sp.pt ? 1u << 25 : 0u, 0, sp.hybrid ? 1u << 15 : 0u});
        if (sp.leaf_23) s.set(7, 1, {1u << 8, 0, 0, 0});
    }
    if (sp.max_leaf >= 6 && sp.leaf_06_ecx) s.set(6, 0, {0, 0, sp.leaf_06_ecx, 0});
    if (sp.max_leaf >= 0xA) s.set(0xA, 0, sp.leaf_0a);
    if (sp.max_leaf >= 0x14 && sp.pt) s.set(0x14, 0, sp.leaf_14[0]), s.set(0x14, 1, sp.leaf_14[1]);
    if (sp.max_leaf >= 0x15 && !(sp.leaf_15 == CpuidRegs{})) s.set(0x15, 0, sp.leaf_15);
    if (sp.max_leaf >= 0x16 && !(sp.leaf_16 == CpuidRegs{})) s.set(0x16, 0, sp.leaf_16);
    if (sp.max_leaf >= 0xB) set_leaf_0b(s, apic, t);
    if (sp.max_leaf >= 0x1A && sp.hybrid) s.set(0x1A, 0, {sp.leaf_1a_eax, 0, 0, 0});
    if (sp.max_leaf >= 0x23 && sp.leaf_23)
        for (u32 i = 0; i < 4; ++i)
            if (i == 0 || ((sp.leaf_23_sub[0].eax >> i) & 1)) s.set(0x23, i, sp.leaf_23_sub[i]);
    s.set(0x80000000, 0, {0x80000008, 0, 0, 0});
    s.set(0x80000001, 0, {0, 0, 0x121, 0x2c100800});
    set_brand(s, sp.brand);
    return s;
}

SimMachine intel_machine(const IntelCpuidSpec& sp, const TopoSpec& t, u64 caps, const PmuOverrides& ov) {
    std::vector<CpuSpec> specs;
    for (u32 i = 0; i < t.count(); ++i) {
        CpuSpec c;
        u32 apic = apic_of(i, t, &c.topo);
        c.cpuid = intel_snapshot(sp, apic, t);
        c.perf_capabilities = caps;
        c.pmu = ov;
        specs.push_back(c);
    }
    return SimMachine(specs);
}

SimMachine intel_v1(u32 n) {
    IntelCpuidSpec sp;
    sp.max_leaf = 0xA;
    sp.signature = 0x000006E8;  // Core Duo (Yonah)
    sp.pdcm = false;
    sp.brand = "Genuine Intel(R) CPU T2400 @ 1.83GHz";
    sp.leaf_0a = {0x07280201, 0, 0, 0};
    return intel_machine(sp, {1, n, 1});
}

SimMachine intel_v2(u32 n, u64 caps) {
    IntelCpuidSpec sp;
    sp.max_leaf = 0xD;
    sp.signature = 0x00010676;  // Core 2 (Penryn)
    sp.brand = "Intel(R) Core(TM)2 Duo CPU E8400 @ 3.00GHz";
    sp.leaf_0a = {0x07280202, 0, 0, 0x00000503};
    return intel_machine(sp, {1, n, 1}, caps);
}

SimMachine intel_v2_conroe(u32 n) {
    IntelCpuidSpec sp;
    sp.max_leaf = 0xA;
    sp.signature = 0x000006F4;  // Core 2 (Conroe)
    sp.brand = "Intel(R) Core(TM)2 CPU 6400 @ 2.13GHz";
    sp.leaf_0a = {0x07280202, 0, 0, 0};
    PmuOverrides ov;
    ov.fixed_count = 3;
    ov.fixed_width = 40;
    return intel_machine(sp, {1, n, 1}, 0, ov);
}

SimMachine intel_v3(u32 n, u64 caps) {
    IntelCpuidSpec sp;
    sp.max_leaf = 0xD;
    sp.signature = 0x000206A7;  // Sandy Bridge
    sp.brand = "Intel(R) Core(TM) i7-2600 CPU @ 3.40GHz";
    sp.leaf_0a = {0x07300403, 0, 0, 0x00000603};
    return intel_machine(sp, {1, std::max<u32>(1, n / 2), n >= 2 ? 2u : 1u}, caps);
}

SimMachine intel_v4_goldmont_plus(u32 n) {
    IntelCpuidSpec sp;
    sp.max_leaf = 0x18;
    sp.signature = 0x000706A8;
    sp.brand = "Intel(R) Pentium(R) Silver N5030 CPU @ 1.10GHz";
    sp.leaf_0a = {0x07300404, 0, 0, 0x00008603};
    return intel_machine(sp, {1, n, 1}, kGoldmontPlusPerfCaps);
}

SimMachine intel_v5(u32 ecx_mask, u32 edx_count, u32 n) {
    IntelCpuidSpec sp;
    sp.max_leaf = 0x20;
    sp.signature = 0x000A0671;  // Rocket Lake
    sp.brand = "pmulab simulated v5 CPU";
    sp.leaf_0a = {0x07300405, 0, ecx_mask, (edx_count & 0x1f) | (48u << 5) | (1u << 15)};
    return intel_machine(sp, {1, n, 1}, 0x2000);
}

SimMachine intel_v6(u32 gp_bitmap, u32 fixed_bitmap, u32 n) {
    IntelCpuidSpec sp;
    sp.max_leaf = 0x23;
    sp.signature = 0x000C0652;  // Arrow Lake
    sp.brand = "pmulab simulated v6 CPU";
    sp.leaf_0a = {0x07300806, 0, 0x7, 0x00008603};
    sp.leaf_23 = true;
    sp.leaf_23_sub[0] = {0x3, 0x3, 0x8, 0};  // sub-leaves 0-1; UMASK2, EQ; 8 slots/cycle
    sp.leaf_23_sub[1] = {gp_bitmap, fixed_bitmap, 0, 0};
    return intel_machine(sp, {1, n, 1}, 0x2000);
}

SimMachine intel_hybrid() {
    IntelCpuidSpec p;
    p.max_leaf = 0x20;
    p.signature = 0x00090672;  // Alder Lake
    p.brand = "12th Gen Intel(R) Core(TM) i5-12600K";
    p.hybrid = true;
    p.leaf_1a_eax = 0x40000001;
    p.leaf_0a = {0x08300805, 0, 0xf, 0x00008604};
    IntelCpuidSpec e = p;
    e.leaf_1a_eax = 0x20000001;
    e.leaf_0a = {0x07300605, 0, 0x7, 0x00008603};
    // APIC IDs: P core c thread t -> 2c + t; E core k -> 8 + 2k.
    TopoSpec t{1, 8, 2};
    std::vector<CpuSpec> specs;
    for (u32 i = 0; i < 8; ++i) {
        CpuSpec c;
        bool pcore = i < 4;
        u32 core = pcore ? i / 2 : 4 + (i - 4);
        u32 thread = pcore ? i % 2 : 0;
        c.topo.apic_id = core * 2 + thread;
        c.topo.core = core;
        c.topo.thread = thread;
        c.topo.bsp = i == 0;
        c.cpuid = intel_snapshot(pcore ? p : e, u32(c.topo.apic_id), t);
        c.perf_capabilities = 0x33c5;
        specs.push_back(c);
    }
    return SimMachine(specs);
}

namespace {

CpuSpec tcg_spec(u32 i, u32 n, bool intel) {
    CpuSpec c;
    TopoSpec t{1, n, 1};
    u32 apic = apic_of(i, t, &c.topo);
    CpuidSnapshot& s = c.cpuid;
    if (intel) {
        set_vendor(s, 0xD, kIntelEbx, kIntelEdx, kIntelEcx);
        s.set(1, 0, {0x000506E3, (apic << 24) | 0x0800, 0xfffa3203, 0x0f8bfbff});  // Skylake-Client
        s.set(7, 0, {0, 0x029c6fbb, 0, 0});
        s.set(0xA, 0, {0, 0, 0, 0});
        set_brand(s, "Intel Core Processor (Skylake)");
        s.set(0x80000000, 0, {0x80000008, 0, 0, 0});
        s.set(0x80000001, 0, {0, 0, 0x121, 0x2c100800});
    } else {
        set_vendor(s, 0xD, kAmdEbx, kAmdEdx, kAmdEcx);
        s.set(1, 0, {0x00060FB1, (apic << 24) | 0x0800, 0x80002001, 0x078bfbfd});  // qemu64: family 0Fh model 6Bh
        set_brand(s, "QEMU Virtual CPU version 2.5+");
        s.set(0x80000000, 0, {0x8000000A, kAmdEbx, kAmdEcx, kAmdEdx});
        s.set(0x80000001, 0, {0x00060FB1, 0, 0x00000065, 0x2fd3fbff});
    }
    set_leaf_0b(s, apic, t);
    c.pmu.none = true;
    c.unknown = UnknownMsr::read_zero;
    c.rdpmc_ud = true;
    return c;
}

}  // namespace

SimMachine qemu_tcg(u32 n) {
    std::vector<CpuSpec> specs;
    for (u32 i = 0; i < n; ++i) specs.push_back(tcg_spec(i, n, false));
    return SimMachine(specs);
}

SimMachine qemu_tcg_intel(u32 n) {
    std::vector<CpuSpec> specs;
    for (u32 i = 0; i < n; ++i) specs.push_back(tcg_spec(i, n, true));
    return SimMachine(specs);
}

namespace {

// An AMD machine from the leaves that matter: signature, 8000_0001H:ECX, optional
// 8000_0022H; with `ext_leaves` also 06H (EffFreq), 8000_0007H and 8000_0008H (IRPerfCount).
struct AmdLeaves {
    u32 signature;
    u32 ext1_ecx;
    const char* brand;
    u32 emax;
    bool v2 = false;
    CpuidRegs leaf22 = {};
    bool ext_leaves = true;
    bool irperf = false, efffreq = false;
    u32 ext7_edx = 0;
    u32 ibs = 0;  // CPUID Fn8000_001B_EAX (IBS features; 0: the leaf reads as zeros)
};

SimMachine amd_machine(u32 n, const AmdLeaves& a) {
    std::vector<CpuSpec> specs;
    TopoSpec t{1, n, 1};
    for (u32 i = 0; i < n; ++i) {
        CpuSpec c;
        u32 apic = apic_of(i, t, &c.topo);
        CpuidSnapshot& s = c.cpuid;
        set_vendor(s, 0x10, kAmdEbx, kAmdEdx, kAmdEcx);
        s.set(1, 0, {a.signature, (apic << 24) | 0x0800, 0x7ed8320b, 0x178bfbff});
        if (a.ext_leaves) s.set(6, 0, {0x4, 0, a.efffreq ? 1u : 0u, 0});
        set_leaf_0b(s, apic, t);
        set_brand(s, a.brand);
        s.set(0x80000000, 0, {a.emax, kAmdEbx, kAmdEcx, kAmdEdx});
        s.set(0x80000001, 0, {a.signature, 0, a.ext1_ecx, 0x2fd3fbff});
        if (a.ext_leaves && a.emax >= 0x80000007) s.set(0x80000007, 0, {0, 0, 0, a.ext7_edx});
        if (a.ext_leaves) s.set(0x80000008, 0, {0x3030, a.irperf ? 0x2u : 0u, 0, 0});
        if (a.v2) s.set(0x80000022, 0, a.leaf22);
        if (a.ibs) s.set(0x8000001B, 0, {a.ibs, 0, 0, 0});
        specs.push_back(c);
    }
    return SimMachine(specs);
}

}  // namespace

SimMachine amd_zen(u32 n, bool v2) {
    // Family 1Ah (Zen 5); 8000_0001H:ECX[23] PerfCtrExtCore.
    AmdLeaves a{0x00B40F40, 0x75c237ff, v2 ? "AMD Ryzen 9 9950X 16-Core Processor" : "AMD Ryzen (no PerfMonV2)",
                0x80000028};
    a.v2 = v2;
    a.leaf22 = {0x7, 0x00084106, 0x3, 0};
    a.ext_leaves = false;
    return amd_machine(n, a);
}

namespace {

// Zen 1/3/4: IRPerfCount and EffFreq enumerated, 8000_0007H:EDX = 0x6799 (EffFreqRO bit 10 set).
AmdLeaves zen(u32 signature, u32 ext1_ecx, const char* brand, u32 emax) {
    AmdLeaves a{signature, ext1_ecx, brand, emax};
    a.irperf = a.efffreq = true;
    a.ext7_edx = 0x6799;
    return a;
}

}  // namespace

SimMachine amd_zen1(u32 n) {
    // Family 17h model 01h (Ryzen 7 1800X): PerfCtrExtCore, IRPerfCount enumerated
    // (erratum 1054).
    // PerfCtrExtLLC (8000_0001H:ECX[28]): the L3 PMU with family 17h's slice fields.
    SimMachine m = amd_machine(n, zen(0x00800F11, 0x35C233FF, "AMD Ryzen 7 1800X Eight-Core Processor", 0x8000001F));
    m.enable_amd_l3(true);
    return m;
}

SimMachine amd_zen3(u32 n) {
    // Family 19h model 21h (Ryzen 5000): maximum extended leaf 8000_0020H, so no PerfMonV2.
    SimMachine m = amd_machine(n, zen(0x00A20F10, 0x75C237FF, "AMD Ryzen 7 5800X 8-Core Processor", 0x80000020));
    m.enable_amd_l3(false);  // PerfCtrExtLLC: family 19h's slice fields
    return m;
}

SimMachine amd_zen4(u32 n) {
    // Family 19h model 61h (Ryzen 7000): 8000_0022H EAX[0] PerfMonV2, EBX[3:0] = 6 core
    // counters, EBX[9:4] = 16 LBR entries (LbrV2 EAX[1]), EBX[15:10] = 16 DF counters,
    // EAX[2] LbrAndPmcFreeze (as the Granite Ridge dump's 0000_0007H).
    AmdLeaves a = zen(0x00A60F12, 0x75C237FF, "AMD Ryzen 9 7950X 16-Core Processor", 0x80000028);
    a.v2 = true;
    a.leaf22 = {0x7, 0x00004106, 0, 0};
    // IBS (8000_0001H:ECX[10] is set in 0x75C237FF): Fn8000_001B_EAX 0xBFF, the Granite
    // Ridge dump's 0x81BFF without Zen 5's load-latency bits (12, 19): IBSFFV, FetchSam,
    // OpSam, RdWrOpCnt, OpCnt, BrnTrgt, OpCntExt, RipInvalidChk, OpBrnFuse, FetchCtlExtd and
    // the Zen 4 extensions (bit 11).
    a.ibs = 0xBFF;
    SimMachine m = amd_machine(n, a);
    m.enable_amd_l3(false);  // PerfCtrExtLLC: family 19h's slice fields
    return m;
}

SimMachine amd_k10(u32 n) {
    // Family 10h (Phenom II): legacy PerfEvtSel0-3 only; no IRPerfCount.
    AmdLeaves a{0x00100F42, 0x000037FF, "AMD Phenom(tm) II X4 940 Processor", 0x8000001B};
    a.irperf = false;
    a.efffreq = true;
    a.ext7_edx = 0x1F9;
    return amd_machine(n, a);
}

// ---------------------------------------------------------------------------
// TopDown-era parts

namespace {

IntelCpuidSpec topdown_spec(u32 signature, const char* brand, u32 eax_0a, u32 edx_0a) {
    IntelCpuidSpec sp;
    sp.max_leaf = 0x20;
    sp.signature = signature;
    sp.brand = brand;
    sp.leaf_0a = {eax_0a, 0, 0, edx_0a};
    return sp;
}

SimMachine topdown_part(u32 signature, const char* brand, u32 eax_0a, u32 edx_0a, u64 caps, u32 n) {
    return intel_machine(topdown_spec(signature, brand, eax_0a, edx_0a), {1, n, 1}, caps);
}

}  // namespace

SimMachine intel_icelake(u32 n) {
    // v5, 8 GP x 48, 4 fixed x 48 (EDX[4:0] = 4), AnyThread deprecated.
    return topdown_part(0x000706E5, "Intel(R) Core(TM) i7-1065G7 CPU @ 1.30GHz", 0x08300805, 0x00008604,
                        kIceLakeClientPerfCaps, n);
}

SimMachine intel_icelake_pt(u32 n) {
    IntelCpuidSpec sp = topdown_spec(0x000706E5, "Intel(R) Core(TM) i7-1065G7 CPU @ 1.30GHz", 0x08300805, 0x00008604);
    sp.pt = true;
    // 14H.0: one more subleaf; EBX CR3 filtering, configurable PSB/CYC, IP filtering, MTC,
    // PTWRITE, power events; ECX ToPA, multi-entry ToPA, single-range output. 14H.1: two
    // address ranges, MTC periods 0-9 (EAX[31:16]); CycThresh 0-12, PSB frequencies 0-5.
    sp.leaf_14[0] = {1, 0x3F, 0x7, 0};
    sp.leaf_14[1] = {0x03FF0002, 0x003F1FFF, 0, 0};
    return intel_machine(sp, {1, n, 1}, kIceLakeClientPerfCaps | (1ull << 16));
}

SimMachine intel_icelake_server(u32 n) {
    // Ice Lake-SP (06_6AH): the client's perfmon (v5, 8 GP, 4 fixed); RAPL with the server
    // parts' 2^-16 J DRAM unit and no PP1 (sim_rapl.h).
    return topdown_part(0x000606A6, "Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz", 0x08300805, 0x00008604,
                        kIceLakePerfCaps, n);
}

SimMachine intel_sapphire_rapids(u32 n) {
    return topdown_part(0x000806F8, "Intel(R) Xeon(R) Platinum 8480+", 0x08300805, 0x00008604, kGoldenCovePerfCaps, n);
}

SimMachine intel_skylake_server(u32 n) {
    return topdown_part(0x00050654, "Intel(R) Xeon(R) Gold 6140 CPU @ 2.30GHz", 0x07300404, 0x00000603, 0x33c5, n);
}

SimMachine intel_skylake(u32 n) {
    // v4, 4 GP x 48, 3 fixed x 48; no PERF_METRICS (PERF_CAPABILITIES[15] = 0).
    return topdown_part(0x000506E3, "Intel(R) Core(TM) i7-6700K CPU @ 4.00GHz", 0x07300404, 0x00000603, 0x33c5, n);
}

SimMachine with_tsc_leaf15(const SimMachine& m, const CpuidRegs& l15) {
    std::vector<CpuSpec> specs;
    for (u32 i = 0; i < m.size(); ++i) {
        CpuSpec s = m.cpu(i).spec();
        s.cpuid.set(0x15, 0, l15);
        specs.push_back(s);
    }
    return SimMachine(specs);
}

SimMachine intel_alder_lake() {
    // P cores 0-3, E cores 4-7: PEBS format 5 on both. Built from the specs so that every
    // CPU's PMU (its PEBS included) is made with its own PERF_CAPABILITIES.
    SimMachine m = intel_hybrid();
    std::vector<CpuSpec> specs;
    for (u32 i = 0; i < m.size(); ++i) {
        CpuSpec s = m.cpu(i).spec();
        s.perf_capabilities = i < 4 ? kGoldenCovePerfCaps : kGracemontPerfCaps;
        specs.push_back(s);
    }
    return SimMachine(specs);
}

// ---------------------------------------------------------------------------
// NetBurst

CpuidSnapshot prescott_snapshot() {
    static const char kName[] = "GenuineIntel0000F41_P4_Prescott_CPUID.txt";
    // __FILE__ is src/sim/sim_netburst.cpp, relative to the repository root or absolute.
    // The dump is tests/data/cpuid/ of the same tree (the simulator moved from tests/sim).
    std::filesystem::path p = std::filesystem::path(__FILE__).parent_path().parent_path().parent_path() / "tests" /
                              "data" / "cpuid" / kName;
    std::ifstream f(p, std::ios::binary);
    if (!f.good()) {
        std::fprintf(stderr, "sim_netburst: cannot open %s\n", p.string().c_str());
        std::abort();
    }
    std::stringstream ss;
    ss << f.rdbuf();
    std::string text = ss.str();
    pmulab::Vec<pmulab::CpuRecord> recs;
    pmulab::Status s = pmulab::parse_cpuid_dump(pmulab::StrView(text.data(), text.size()), kName, &recs);
    if (!s.ok() || recs.size() != 1) {
        std::fprintf(stderr, "sim_netburst: %s: %s\n", kName, s.ok() ? "expected one CPU" : s.error().msg);
        std::abort();
    }
    return recs[0].raw;
}

SimMachine netburst_p4(u32 ncpus, bool ht) {
    if (!ncpus || (ht && ncpus % 2)) {
        std::fprintf(stderr, "sim_netburst: netburst_p4(%u, %s): HT packages have two logical processors\n", ncpus,
                     ht ? "ht" : "no ht");
        std::abort();
    }
    const CpuidSnapshot base = prescott_snapshot();
    std::vector<CpuSpec> specs;
    std::shared_ptr<NetBurstModel> pkg;
    for (u32 i = 0; i < ncpus; ++i) {
        CpuSpec c;
        c.cpuid = base;
        u32 thread = ht ? i % 2 : 0;
        u32 package = ht ? i / 2 : i;
        u32 apic = ht ? (package << 1) | thread : i;
        CpuidRegs l1 = base.get(1);
        // EBX: initial APIC ID 31:24, logical processors per package 23:16, CLFLUSH 15:8.
        l1.ebx = (apic << 24) | ((ht ? 2u : 1u) << 16) | (l1.ebx & 0xFFFF);
        c.cpuid.set(1, 0, l1);
        c.topo.apic_id = apic;
        c.topo.package = package;
        c.topo.core = 0;
        c.topo.thread = thread;
        c.topo.bsp = i == 0;
        c.microcode = 0x17;  // IA32_BIOS_SIGN_ID[63:32] of the dump (MSR 8BH = 0000_0017_0000_0000H)
        if (thread == 0) pkg = std::make_shared<NetBurstModel>(c.cpuid);
        c.netburst = pkg;
        c.netburst_thread = thread;
        specs.push_back(c);
    }
    SimMachine m(specs);
    for (u32 i = 0; i < ncpus; ++i) m.cpu(i).poke(reg::MISC_ENABLE, kPrescottMiscEnable);
    return m;
}

}  // namespace sim
