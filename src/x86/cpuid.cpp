#include "x86/cpuid.h"

namespace pmulab {

bool CpuidSnapshot::find(u32 leaf, u32 subleaf, CpuidRegs* out) const {
    for (u32 i = 0; i < count; ++i) {
        if (entries[i].leaf == leaf && entries[i].subleaf == subleaf) {
            if (out) *out = entries[i].regs;
            return true;
        }
    }
    return false;
}

CpuidRegs CpuidSnapshot::get(u32 leaf, u32 subleaf) const {
    CpuidRegs r;
    find(leaf, subleaf, &r);
    return r;
}

bool CpuidSnapshot::has(u32 leaf, u32 subleaf) const { return find(leaf, subleaf, nullptr); }

bool CpuidSnapshot::set(u32 leaf, u32 subleaf, const CpuidRegs& r) {
    for (u32 i = 0; i < count; ++i) {
        if (entries[i].leaf == leaf && entries[i].subleaf == subleaf) {
            entries[i].regs = r;
            return true;
        }
    }
    if (count >= kMaxEntries) return false;
    entries[count].leaf = leaf;
    entries[count].subleaf = subleaf;
    entries[count].regs = r;
    ++count;
    return true;
}

namespace {

// Bit positions used by the decoder (SDM Vol. 2A CPUID; AMD APM Vol. 3).
constexpr u32 kLeaf1EcxPdcm = 15;
constexpr u32 kLeaf1EcxHypervisor = 31;
constexpr u32 kLeaf7EdxHybrid = 15;
constexpr u32 kLeaf71EaxArchPerfmonExt = 8;
constexpr u32 kExt1EcxPerfCtrExtCore = 23;
constexpr u32 kExt22EaxPerfMonV2 = 0;
constexpr u32 kExt22EaxLbrV2 = 1;
constexpr u32 kExt22EaxLbrPmcFreeze = 2;
// Deterministic cache parameters, leaf 4 (SDM Vol. 2A, CPUID) / 8000_001DH (APM Vol. 3,
// E.4.15): sub-leaves until the first whose cache type EAX[4:0] is 0 (the simulator's
// cache geometry, sim_cache.h), at most kCacheSubleaves.
constexpr u32 kCacheSubleaves = 8;

constexpr bool bit(u32 v, u32 b) { return (v >> b) & 1; }
constexpr u32 bits(u32 v, u32 hi, u32 lo) { return (v >> lo) & u32(low_mask(hi - lo + 1)); }

void regs_to_chars(u32 v, char* out) {
    for (int i = 0; i < 4; ++i) out[i] = char((v >> (8 * i)) & 0xff);
}

struct HwQuery {
    Hw* hw;
};

CpuidRegs hw_query(void* ctx, u32 leaf, u32 sub) { return static_cast<HwQuery*>(ctx)->hw->cpuid(leaf, sub); }

}  // namespace

void capture_cpuid(CpuidQueryFn q, void* ctx, CpuidSnapshot* out) {
    out->count = 0;
    CpuidRegs l0 = q(ctx, 0, 0);
    out->set(0, 0, l0);
    u32 max = l0.eax;
    auto take = [&](u32 leaf, u32 sub) {
        CpuidRegs r = q(ctx, leaf, sub);
        out->set(leaf, sub, r);
        return r;
    };
    bool ext23 = false;
    // AMD APM Vol. 3 App. E: "AuthenticAMD" / "HygonGenuine" (EBX "Auth" / "Hygo").
    bool amd_like = l0.ebx == 0x68747541u || l0.ebx == 0x6F677948u;
    CpuidRegs l1;
    if (max >= 1) l1 = take(1, 0);
    auto take_caches = [&](u32 leaf) {
        for (u32 sub = 0; sub < kCacheSubleaves; ++sub)
            if (bits(take(leaf, sub).eax, 4, 0) == 0) break;
    };
    if (max >= 4 && !amd_like) take_caches(4);
    if (max >= 6 && amd_like) take(6, 0);
    bool arch_lbr = false;
    if (max >= 7) {
        CpuidRegs r7 = take(7, 0);
        if (r7.eax >= 1) ext23 = bit(take(7, 1).eax, kLeaf71EaxArchPerfmonExt);
        arch_lbr = bit(r7.edx, 19);  // CPUID.(07H,0):EDX[19] Arch LBR: leaf 1CH is valid (SDM Vol. 2A)
    }
    if (max >= 0xA) take(0xA, 0);
    if (max >= 0xB) {
        take(0xB, 0);
        take(0xB, 1);
    }
    // V2 extended topology (x86/topology.h): its levels up to the first invalid one.
    if (max >= 0x1F)
        for (u32 sub = 0; sub < 6; ++sub)
            if (bits(take(0x1F, sub).ecx, 15, 8) == 0) break;
    if (max >= 0x1A) take(0x1A, 0);
    if (max >= 0x1C && arch_lbr) take(0x1C, 0);  // architectural LBR (pmu/lbr.h)
    if (max >= 0x23 && ext23) {
        CpuidRegs s0 = take(0x23, 0);
        for (u32 sub = 1; sub < 6; ++sub)
            if (bit(s0.eax, sub)) take(0x23, sub);
    }
    // (Leaf 1 only when it exists: above the maximum leaf CPUID returns other data.)
    if (bit(l1.ecx, kLeaf1EcxHypervisor)) take(0x40000000, 0);

    CpuidRegs e0 = take(0x80000000, 0);
    u32 emax = e0.eax;
    if ((emax & 0xffff0000u) == 0x80000000u) {
        if (emax >= 0x80000001) take(0x80000001, 0);
        if (emax >= 0x80000004)
            for (u32 l = 0x80000002; l <= 0x80000004; ++l) take(l, 0);
        // AMD's L1/L2/L3 descriptions (cache_geometry.h), used where 8000_001DH is absent.
        if (emax >= 0x80000006 && amd_like)
            for (u32 l = 0x80000005; l <= 0x80000006; ++l) take(l, 0);
        if (emax >= 0x80000007 && amd_like) take(0x80000007, 0);
        if (emax >= 0x80000008 && amd_like) take(0x80000008, 0);
        if (emax >= 0x8000001B && amd_like) take(0x8000001B, 0);  // IBS features (pmu/ibs.h)
        if (emax >= 0x8000001D && amd_like) take_caches(0x8000001D);
        if (emax >= 0x8000001E && amd_like) take(0x8000001E, 0);  // topology (x86/topology.h)
        if (emax >= 0x80000022) take(0x80000022, 0);
    }
}

void capture_cpuid(Hw& hw, CpuidSnapshot* out) {
    HwQuery ctx{&hw};
    capture_cpuid(hw_query, &ctx, out);
}

bool cpuid_leaf_is_captured(u32 leaf) {
    switch (leaf) {
        case 0x0:
        case 0x1:
        case 0x4:
        case 0x6:
        case 0x7:
        case 0xA:
        case 0xB:
        case 0x1A:
        case 0x1C:
        case 0x1F:
        case 0x23:
        case 0x40000000:
        case 0x80000000:
        case 0x80000001:
        case 0x80000002:
        case 0x80000003:
        case 0x80000004:
        case 0x80000005:
        case 0x80000006:
        case 0x80000007:
        case 0x80000008:
        case 0x8000001B:
        case 0x8000001D:
        case 0x8000001E:
        case 0x80000022: return true;
        default: return false;
    }
}

bool cpuid_subleaf_is_captured(u32 leaf, u32 subleaf) {
    if (!cpuid_leaf_is_captured(leaf)) return false;
    switch (leaf) {
        case 0x7: return subleaf <= 1;
        case 0xB: return subleaf <= 1;
        case 0x1F: return subleaf <= 5;
        case 0x23: return subleaf <= 5;
        case 0x4:
        case 0x8000001D: return subleaf < kCacheSubleaves;
        default: return subleaf == 0;
    }
}

const char* vendor_id_name(Vendor v) {
    switch (v) {
        case Vendor::intel: return "intel";
        case Vendor::amd: return "amd";
        case Vendor::hygon: return "hygon";
        case Vendor::zhaoxin: return "zhaoxin";
        case Vendor::other: return "other";
    }
    return "other";
}

// Each architectural event (the bits of CPUID.0AH:EBX, SDM Vol. 3B §20.2): its snake_case
// key and its title.
struct ArchEventName {
    const char* key;
    const char* title;
};
constexpr ArchEventName kArchEventNames[kArchEventCount] = {
    {"core_cycles", "UnHalted Core Cycles"},
    {"instructions_retired", "Instructions Retired"},
    {"reference_cycles", "UnHalted Reference Cycles"},
    {"llc_references", "LLC References"},
    {"llc_misses", "LLC Misses"},
    {"branch_instructions_retired", "Branch Instructions Retired"},
    {"branch_mispredicts_retired", "Branch Mispredicts Retired"},
    {"topdown_slots", "Topdown Slots"},
    {"topdown_backend_bound", "Topdown Backend Bound"},
    {"topdown_bad_speculation", "Topdown Bad Speculation"},
    {"topdown_frontend_bound", "Topdown Frontend Bound"},
    {"topdown_retiring", "Topdown Retiring"},
    {"lbr_inserts", "LBR Inserts"},
};

const char* arch_event_key(unsigned b) { return b < kArchEventCount ? kArchEventNames[b].key : "unknown"; }

const char* arch_event_title(unsigned b) { return b < kArchEventCount ? kArchEventNames[b].title : "unknown"; }

const char* core_type_name(u8 t) {
    switch (t) {
        case kCoreTypeNone: return "none";
        case kCoreTypeAtom: return "atom";
        case kCoreTypeCore: return "core";
        default: return "unknown";
    }
}

u32 PmuCaps::gp_counter_mask() const {
    if (leaf_23 && (leaf23_subleaves & 2)) return gp_bitmap;
    if (amd_perfmon_v2 || amd_perfctr_core || amd_core_counters) return u32(low_mask(amd_core_counters));
    return u32(low_mask(gp_counters));
}

u32 PmuCaps::fixed_counter_mask() const {
    if (leaf_23 && (leaf23_subleaves & 2)) return fixed_bitmap;
    u32 m = fixed_effective;
    if (fixed_count_quirk) m |= 7;
    return m;
}

bool PmuCaps::present() const { return version > 0 || amd_core_counters > 0 || netburst; }

bool PmuCaps::operator==(const PmuCaps& o) const {
    return leaf_0a == o.leaf_0a && version == o.version && gp_counters == o.gp_counters && gp_width == o.gp_width &&
           ebx_length == o.ebx_length && ebx == o.ebx && fixed_mask == o.fixed_mask &&
           fixed_counters == o.fixed_counters && fixed_width == o.fixed_width &&
           anythread_deprecated == o.anythread_deprecated && fixed_count_quirk == o.fixed_count_quirk &&
           leaf_23 == o.leaf_23 && leaf23_subleaves == o.leaf23_subleaves && umask2 == o.umask2 && eq_bit == o.eq_bit &&
           gp_bitmap == o.gp_bitmap && fixed_bitmap == o.fixed_bitmap && acr_gp_bitmap == o.acr_gp_bitmap &&
           acr_fixed_bitmap == o.acr_fixed_bitmap && arch_events_bitmap == o.arch_events_bitmap &&
           amd_perfctr_core == o.amd_perfctr_core && amd_perfmon_v2 == o.amd_perfmon_v2 &&
           amd_core_counters == o.amd_core_counters && amd_lbr_v2 == o.amd_lbr_v2 &&
           amd_lbr_pmc_freeze == o.amd_lbr_pmc_freeze && amd_lbr_stack_size == o.amd_lbr_stack_size &&
           amd_nb_counters == o.amd_nb_counters && rdpmc_user_disable == o.rdpmc_user_disable &&
           amd_irperf == o.amd_irperf && amd_efffreq == o.amd_efffreq && amd_efffreq_ro == o.amd_efffreq_ro &&
           amd_irperf_erratum1054 == o.amd_irperf_erratum1054 && netburst == o.netburst &&
           netburst_model == o.netburst_model && netburst_ht == o.netburst_ht &&
           topdown_slots_per_cycle == o.topdown_slots_per_cycle && events_available == o.events_available &&
           perf_caps_read == o.perf_caps_read && perf_caps == o.perf_caps;
}

namespace {

// Leaf 0: the maximum leaf and the vendor.
void decode_vendor(const CpuidSnapshot& s, CpuIdentity& id) {
    CpuidRegs l0 = s.get(0);
    id.max_leaf = l0.eax;
    regs_to_chars(l0.ebx, id.vendor_string);
    regs_to_chars(l0.edx, id.vendor_string + 4);
    regs_to_chars(l0.ecx, id.vendor_string + 8);
    id.vendor_string[12] = 0;
    if (str_eq(id.vendor_string, "GenuineIntel")) id.vendor = Vendor::intel;
    else if (str_eq(id.vendor_string, "AuthenticAMD")) id.vendor = Vendor::amd;
    else if (str_eq(id.vendor_string, "HygonGenuine")) id.vendor = Vendor::hygon;
    else if (str_eq(id.vendor_string, "CentaurHauls") || str_eq(id.vendor_string, "  Shanghai  "))
        id.vendor = Vendor::zhaoxin;
}

// Leaves 1, 7 and 1AH: signature, family/model/stepping, hybrid and core type.
void decode_identity(const CpuidSnapshot& s, CpuIdentity& id) {
    if (id.max_leaf >= 1) {
        CpuidRegs l1 = s.get(1);
        id.signature = l1.eax;
        u32 base_family = bits(l1.eax, 11, 8);
        u32 base_model = bits(l1.eax, 7, 4);
        u32 ext_family = bits(l1.eax, 27, 20);
        u32 ext_model = bits(l1.eax, 19, 16);
        id.stepping = bits(l1.eax, 3, 0);
        // SDM Vol. 2A Figure 3-6 note: DisplayFamily/DisplayModel. AMD applies the
        // extended model only for base family 0Fh (APM Vol. 3, CPUID Fn0000_0001_EAX).
        id.family = base_family == 0xF ? base_family + ext_family : base_family;
        bool use_ext_model = is_amd_family(id.vendor) ? base_family == 0xF : (base_family == 0x6 || base_family == 0xF);
        id.model = use_ext_model ? (ext_model << 4) + base_model : base_model;
        id.initial_apic_id = bits(l1.ebx, 31, 24);
        id.hypervisor = bit(l1.ecx, kLeaf1EcxHypervisor);
        id.pdcm = bit(l1.ecx, kLeaf1EcxPdcm);
    }
    if (id.max_leaf >= 7) {
        CpuidRegs l7 = s.get(7, 0);
        id.hybrid = bit(l7.edx, kLeaf7EdxHybrid);
        if (l7.eax >= 1) id.arch_perfmon_ext = bit(s.get(7, 1).eax, kLeaf71EaxArchPerfmonExt);
    }
    if (id.max_leaf >= 0x1A) {
        CpuidRegs r = s.get(0x1A);
        id.leaf_1a = true;
        id.leaf_1a_core_type = u8(bits(r.eax, 31, 24));
        id.native_model_id = bits(r.eax, 23, 0);
        if (id.hybrid) id.core_type = id.leaf_1a_core_type;
    }
}

// The architectural performance monitoring leaf 0AH (SDM Vol. 3B §20.2).
void decode_leaf_0a(const CpuidSnapshot& s, const CpuIdentity& id, PmuCaps& p) {
    bool intel_like = id.vendor == Vendor::intel || id.vendor == Vendor::zhaoxin || id.vendor == Vendor::other;
    if (id.max_leaf < 0xA || !intel_like) return;
    CpuidRegs a = s.get(0xA);
    p.leaf_0a = true;
    p.version = u8(bits(a.eax, 7, 0));
    if (p.version == 0) return;
    p.gp_counters = u8(bits(a.eax, 15, 8));
    p.gp_width = u8(bits(a.eax, 23, 16));
    p.ebx_length = u8(bits(a.eax, 31, 24));
    p.ebx = a.ebx;
    u32 known = u32(low_mask(min_of<u32>(p.ebx_length, kArchEventCount)));
    p.events_unavailable = a.ebx & known;
    p.events_available = ~a.ebx & known;
    if (p.version < 2) return;  // EDX is reserved in version 1 (no fixed-function counters).
    p.fixed_counters = u8(bits(a.edx, 4, 0));
    p.fixed_width = u8(bits(a.edx, 12, 5));
    p.anythread_deprecated = bit(a.edx, 15);
    if (p.version >= 5) p.fixed_mask = a.ecx;
    for (u32 i = 0; i < 32; ++i)
        if (bit(p.fixed_mask, i) || p.fixed_counters > i) p.fixed_effective |= 1u << i;
    // Linux's intel_pmu_init: v2..v4 parts on bare metal have at least 3 fixed
    // counters even when EDX says fewer (Core 2 reports 0).
    p.fixed_count_quirk = p.version < 5 && p.fixed_counters < 3 && !id.hypervisor;
}

// Leaf 23H, the architectural performance monitoring extended leaf, and its subleaves.
void decode_leaf_23(const CpuidSnapshot& s, const CpuIdentity& id, PmuCaps& p) {
    if (id.max_leaf < 0x23 || !id.arch_perfmon_ext) return;
    CpuidRegs s0 = s.get(0x23, 0);
    p.leaf_23 = true;
    p.leaf23_subleaves = s0.eax;
    p.umask2 = bit(s0.ebx, 0);
    p.eq_bit = bit(s0.ebx, 1);
    p.rdpmc_user_disable = bit(s0.ebx, 2);
    p.topdown_slots_per_cycle = bits(s0.ecx, 7, 0);
    if (bit(s0.eax, 1)) {
        CpuidRegs s1 = s.get(0x23, 1);
        p.gp_bitmap = s1.eax;
        p.fixed_bitmap = s1.ebx;
    }
    if (bit(s0.eax, 2)) {
        CpuidRegs s2 = s.get(0x23, 2);
        p.acr_gp_bitmap = s2.eax;
        p.acr_fixed_bitmap = s2.ebx;
    }
    if (bit(s0.eax, 3)) p.arch_events_bitmap = s.get(0x23, 3).eax;
}

// The maximum extended leaf and the brand string (80000002H-80000004H), trimmed.
void decode_brand(const CpuidSnapshot& s, CpuIdentity& id) {
    CpuidRegs e0 = s.get(0x80000000);
    if ((e0.eax & 0xffff0000u) == 0x80000000u) id.max_ext_leaf = e0.eax;
    if (id.max_ext_leaf < 0x80000004) return;
    for (u32 i = 0; i < 3; ++i) {
        CpuidRegs r = s.get(0x80000002 + i);
        regs_to_chars(r.eax, id.brand + 16 * i);
        regs_to_chars(r.ebx, id.brand + 16 * i + 4);
        regs_to_chars(r.ecx, id.brand + 16 * i + 8);
        regs_to_chars(r.edx, id.brand + 16 * i + 12);
    }
    id.brand[48] = 0;
    // Trim leading and trailing spaces.
    usize b = 0;
    while (id.brand[b] == ' ') ++b;
    usize n = str_len(id.brand + b);
    for (usize i = 0; i <= n; ++i) id.brand[i] = id.brand[b + i];
    while (n > 0 && id.brand[n - 1] == ' ') id.brand[--n] = 0;
}

// AMD and Hygon: the core counters, IRPerfCount and the effective-frequency interface.
void decode_amd(const CpuidSnapshot& s, const CpuIdentity& id, bool amd_like, PmuCaps& p) {
    if (amd_like && id.max_ext_leaf >= 0x80000001) {
        p.amd_perfctr_core = bit(s.get(0x80000001).ecx, kExt1EcxPerfCtrExtCore);
        // The 4 legacy counters PerfCtr0-3 (C001_0004H-C001_0007H, APM Vol. 2 §13.2.1) exist
        // from K7 (family 6) on, K8 (family 0FH) included, but CPUID does not enumerate
        // them; Linux's amd_pmu_init assumes them for family >= 6. Under a hypervisor they
        // may or may not be virtualised (QEMU TCG has none), so only enumerated counters
        // (PerfCtrExtCore, PerfMonV2) are reported there.
        p.amd_core_counters = p.amd_perfctr_core ? 6 : (id.family >= 6 && !id.hypervisor ? 4 : 0);
    }
    if (amd_like && id.max_ext_leaf >= 0x80000008) p.amd_irperf_enumerated = bit(s.get(0x80000008).ebx, 1);
    // Erratum 1054 (Revision Guide for AMD Family 17h Models 00h-0Fh; Linux init_amd_zen1
    // covers models 00h-2Fh): IRPerfCount may be inaccurate.
    p.amd_irperf_erratum1054 = p.amd_irperf_enumerated && id.family == 0x17 && id.model <= 0x2F;
    p.amd_irperf = p.amd_irperf_enumerated && !p.amd_irperf_erratum1054;
    if (amd_like && id.max_leaf >= 6) p.amd_efffreq = bit(s.get(6).ecx, 0);
    if (amd_like && id.max_ext_leaf >= 0x80000007) p.amd_efffreq_ro = bit(s.get(0x80000007).edx, 10);
}

// AMD PerfMonV2 and LbrExtV2 (80000022H).
void decode_amd_perfmon_v2(const CpuidSnapshot& s, const CpuIdentity& id, bool amd_like, PmuCaps& p) {
    if (!amd_like || id.max_ext_leaf < 0x80000022) return;
    CpuidRegs r = s.get(0x80000022);
    p.amd_perfmon_v2 = bit(r.eax, kExt22EaxPerfMonV2);
    p.amd_lbr_v2 = bit(r.eax, kExt22EaxLbrV2);
    p.amd_lbr_pmc_freeze = bit(r.eax, kExt22EaxLbrPmcFreeze);
    if (p.amd_perfmon_v2) {
        p.amd_core_counters = u8(bits(r.ebx, 3, 0));
        p.amd_lbr_stack_size = u8(bits(r.ebx, 9, 4));
        p.amd_nb_counters = u8(bits(r.ebx, 15, 10));
    }
}

}  // namespace

CpuDecoded decode_cpuid(const CpuidSnapshot& s) {
    CpuDecoded d;
    CpuIdentity& id = d.id;
    PmuCaps& p = d.pmu;
    decode_vendor(s, id);
    decode_identity(s, id);
    decode_leaf_0a(s, id, p);
    decode_leaf_23(s, id, p);
    decode_brand(s, id);
    bool amd_like = is_amd_family(id.vendor);
    decode_amd(s, id, amd_like, p);
    // NetBurst: Intel family 0FH without architectural performance monitoring (every
    // Pentium 4 / NetBurst Xeon; the last ones (models 3/4/6, CPUID max leaf 5 or 6) have
    // no leaf 0AH). SDM Vol. 3B §20.15.
    if (id.vendor == Vendor::intel && id.family == 0xF && p.version == 0) {
        p.netburst = true;
        p.netburst_model = u8(id.model);
        CpuidRegs l1 = s.get(1);
        p.netburst_ht = bit(l1.edx, 28) && bits(l1.ebx, 23, 16) > 1;
    }
    decode_amd_perfmon_v2(s, id, amd_like, p);
    return d;
}

void put_signature(StrBuf& out, const CpuIdentity& id) { out.printf("%02X_%02XH", id.family, id.model); }

void hypervisor_signature(const CpuidRegs& r, char (&out)[13]) {
    const u32 words[3] = {r.ebx, r.ecx, r.edx};
    for (unsigned i = 0; i < 12; ++i) {
        char ch = char(words[i / 4] >> (8 * (i % 4)));
        out[i] = ch && (ch < 0x20 || ch > 0x7e) ? '?' : ch;
    }
    out[12] = 0;
}

}  // namespace pmulab
