// RAPL domains per model (see rapl.h for the sources).
#include "x86/rapl.h"

namespace pmulab {

namespace {

using regs::rapl::PowerUnit;

constexpr u8 bit(RaplDomain d) { return u8(1u << unsigned(d)); }
constexpr u8 kPkg = bit(RaplDomain::pkg), kCores = bit(RaplDomain::cores), kGpu = bit(RaplDomain::gpu);
constexpr u8 kDram = bit(RaplDomain::dram), kPsys = bit(RaplDomain::psys);

enum class Quirk : u8 { none, hsw_dram, spr_psys };

// Linux's struct rapl_model entries: the domains and the unit quirk.
struct ModelClass {
    const char* name;
    u8 domains;
    Quirk quirk;
};
constexpr ModelClass kSnb{"model_snb", kPkg | kCores | kGpu, Quirk::none};
constexpr ModelClass kSnbep{"model_snbep", kPkg | kCores | kDram, Quirk::none};
constexpr ModelClass kHsw{"model_hsw", kPkg | kCores | kDram | kGpu, Quirk::none};
constexpr ModelClass kHsx{"model_hsx", kPkg | kCores | kDram, Quirk::hsw_dram};
constexpr ModelClass kKnl{"model_knl", kPkg | kDram, Quirk::hsw_dram};
constexpr ModelClass kSkl{"model_skl", kPkg | kCores | kDram | kGpu | kPsys, Quirk::none};
constexpr ModelClass kSpr{"model_spr", kPkg | kCores | kDram | kPsys, Quirk::spr_psys};

// rapl_model_match: family 6 models (asm/intel-family.h) and their class.
struct ModelEntry {
    u8 model;
    const ModelClass* cls;
};
constexpr ModelEntry kIntelModels[] = {
    {0x2A, &kSnb}, {0x2D, &kSnbep}, {0x3A, &kSnb}, {0x3E, &kSnbep},  // Sandy/Ivy Bridge (-EP)
    {0x3C, &kHsw}, {0x3F, &kHsx},   {0x45, &kHsw}, {0x46, &kHsw},    // Haswell, -X, -L, -G
    {0x3D, &kHsw}, {0x47, &kHsw},   {0x4F, &kHsx}, {0x56, &kHsx},    // Broadwell, -G, -X, -D
    {0x57, &kKnl}, {0x85, &kKnl},                                    // Xeon Phi KNL, KNM
    {0x4E, &kSkl}, {0x5E, &kSkl},   {0x55, &kHsx},                   // Skylake -L, client, -X
    {0x8E, &kSkl}, {0x9E, &kSkl},   {0x66, &kSkl},                   // Kaby Lake -L, client; Cannon Lake
    {0x5C, &kHsw}, {0x5F, &kHsw},   {0x7A, &kHsw},                   // Goldmont, -D, Goldmont Plus
    {0x7E, &kSkl}, {0x7D, &kSkl},   {0x6C, &kHsx}, {0x6A, &kHsx},    // Ice Lake -L, client, -D, -X
    {0xA6, &kSkl}, {0xA5, &kSkl},   {0x8C, &kSkl}, {0x8D, &kSkl},    // Comet Lake, Tiger Lake
    {0x97, &kSkl}, {0x9A, &kSkl},   {0xBE, &kSkl},                   // Alder Lake, -L, Gracemont
    {0x8F, &kSpr}, {0xCF, &kSpr},                                    // Sapphire / Emerald Rapids
    {0xB7, &kSkl}, {0xBA, &kSkl},   {0xBF, &kSkl},                   // Raptor Lake, -P, -S
    {0xAC, &kSkl}, {0xAA, &kSkl},   {0xC5, &kSkl}, {0xC6, &kSkl},    // Meteor Lake, Arrow Lake
    {0xBD, &kSkl},                                                   // Lunar Lake
};

struct DomainNames {
    const char* event;
    const char* intel_msr;
    const char* amd_msr;
    u32 intel_addr, amd_addr;
};
constexpr DomainNames kNames[kRaplDomains] = {
    {"energy-pkg", "MSR_PKG_ENERGY_STATUS", "PKG_ENERGY_STAT", regs::rapl::MSR_PKG_ENERGY_STATUS,
     regs::rapl::MSR_AMD_PKG_ENERGY_STATUS},
    {"energy-cores", "MSR_PP0_ENERGY_STATUS", "CORE_ENERGY_STAT", regs::rapl::MSR_PP0_ENERGY_STATUS,
     regs::rapl::MSR_AMD_CORE_ENERGY_STATUS},
    {"energy-gpu", "MSR_PP1_ENERGY_STATUS", "", regs::rapl::MSR_PP1_ENERGY_STATUS, 0},
    {"energy-dram", "MSR_DRAM_ENERGY_STATUS", "", regs::rapl::MSR_DRAM_ENERGY_STATUS, 0},
    {"energy-psys", "MSR_PLATFORM_ENERGY_STATUS", "", regs::rapl::MSR_PLATFORM_ENERGY_STATUS, 0},
};

constexpr u32 kAmdRaplBit = 14;  // CPUID Fn8000_0007_EDX[14] RAPL

}  // namespace

RaplSupport rapl_support(const CpuIdentity& id, u32 ext_leaf7_edx) {
    RaplSupport s;
    if (is_amd_family(id.vendor)) {
        if (!((ext_leaf7_edx >> kAmdRaplBit) & 1)) {
            format_to(s.why, sizeof s.why, "CPUID Fn8000_0007_EDX[14] (RAPL) is 0");
            return s;
        }
        s.present = s.amd = true;
        s.domains = kPkg | kCores;
        s.table = "model_amd_hygon";
        return s;
    }
    if (id.vendor == Vendor::intel && id.family == 6) {
        for (const ModelEntry& e : kIntelModels) {
            if (e.model != id.model) continue;
            s.present = true;
            s.domains = e.cls->domains;
            s.table = e.cls->name;
            if (e.cls->quirk == Quirk::hsw_dram) s.fixed_esu[unsigned(RaplDomain::dram)] = regs::rapl::kServerDramEsu;
            if (e.cls->quirk == Quirk::spr_psys) s.fixed_esu[unsigned(RaplDomain::psys)] = regs::rapl::kSprPsysEsu;
            return s;
        }
    }
    format_to(s.why, sizeof s.why, "family %XH model %02XH is not in the RAPL model table (Linux's rapl.c)", id.family,
              id.model);
    return s;
}

const char* rapl_event_name(RaplDomain d, bool amd) {
    if (amd && d == RaplDomain::cores) return "energy-core";
    return kNames[unsigned(d)].event;
}
const char* rapl_msr_name(RaplDomain d, bool amd) {
    return amd ? kNames[unsigned(d)].amd_msr : kNames[unsigned(d)].intel_msr;
}
u32 rapl_status_msr(RaplDomain d, bool amd) {
    return amd ? kNames[unsigned(d)].amd_addr : kNames[unsigned(d)].intel_addr;
}
u32 rapl_unit_msr(bool amd) { return amd ? regs::rapl::MSR_AMD_RAPL_POWER_UNIT : regs::rapl::MSR_RAPL_POWER_UNIT; }

u8 rapl_domain_esu(const RaplSupport& s, RaplDomain d, PowerUnit unit) {
    u8 fixed = s.fixed_esu[unsigned(d)];
    return fixed != 0xFF ? fixed : u8(unit.energy_units());
}

bool parse_energy_event(StrView name, RaplDomain* out) {
    struct Alias {
        const char* name;
        RaplDomain d;
    };
    static constexpr Alias kAliases[] = {
        {"energy-pkg", RaplDomain::pkg},   {"energy-cores", RaplDomain::cores}, {"energy-core", RaplDomain::cores},
        {"energy-gpu", RaplDomain::gpu},   {"energy-dram", RaplDomain::dram},   {"energy-ram", RaplDomain::dram},
        {"energy-psys", RaplDomain::psys},
    };
    for (const Alias& a : kAliases) {
        if (!name.eq_nocase(StrView(a.name))) continue;
        *out = a.d;
        return true;
    }
    return false;
}

}  // namespace pmulab
