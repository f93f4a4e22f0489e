// Which RAPL energy domains a CPU has, and how each one reads (rapl_regs.h), enumerated
// per model as Linux's arch/x86/events/rapl.c does: its model table (rapl_model_match:
// model_snb, model_snbep, model_hsw, model_hsx, model_knl, model_skl, model_spr), its unit
// quirks (the fixed 2^-16 J DRAM unit of server parts, SPR's 1 J PSYS unit), and on AMD
// and Hygon CPUID Fn8000_0007_EDX[14] (package and per-core energy). docs/measure.md
// "Energy (RAPL)", docs/vendors.md.
#pragma once

#include "x86/cpuid.h"
#include "x86/rapl_regs.h"

namespace pmulab {

// perf's power/ events: energy-pkg, energy-cores (AMD: energy-core, per core), energy-gpu
// (PP1), energy-dram (perf: energy-ram), energy-psys.
enum class RaplDomain : u8 { pkg, cores, gpu, dram, psys };
inline constexpr unsigned kRaplDomains = 5;

// What a CPU's model says about RAPL (no MSR read).
struct RaplSupport {
    bool present = false;
    bool amd = false;                                             // AMD/Hygon MSRs (C001_0299H..)
    u8 domains = 0;                                               // bit d: RaplDomain d
    u8 fixed_esu[kRaplDomains] = {0xFF, 0xFF, 0xFF, 0xFF, 0xFF};  // 0xFF: the POWER_UNIT's ESU
    const char* table = "";  // Linux's entry ("model_skl", "model_hsx", "model_amd_hygon")
    char why[160] = {};      // when !present: why not, in words
    bool has(RaplDomain d) const { return (domains >> unsigned(d)) & 1; }
};

// From the CPU's identity and CPUID Fn8000_0007_EDX (0 when the leaf is absent).
RaplSupport rapl_support(const CpuIdentity& id, u32 ext_leaf7_edx);
// The domain's perf name ("energy-pkg") and its register's name ("MSR_PKG_ENERGY_STATUS").
const char* rapl_event_name(RaplDomain d, bool amd);
const char* rapl_msr_name(RaplDomain d, bool amd);
u32 rapl_status_msr(RaplDomain d, bool amd);  // 0 where the vendor has no such domain
u32 rapl_unit_msr(bool amd);
// The energy unit of domain d as 2^-esu J, from the POWER_UNIT value and the quirks.
u8 rapl_domain_esu(const RaplSupport& s, RaplDomain d, regs::rapl::PowerUnit unit);
// "energy-pkg" and the rest, any case; also perf's "energy-ram" (dram) and "energy-core"
// (cores). False for any other name.
bool parse_energy_event(StrView name, RaplDomain* out);

}  // namespace pmulab
