// The simulated RAPL energy counters: the model table and the update rule (sim_rapl.h).
#include "sim/sim_rapl.h"

#include <algorithm>

namespace sim {

namespace {

// Energy units: POWER_UNIT 0x000A0E03 is ESU 14 (61 uJ, Skylake-class parts), 0x000A1003
// ESU 16 (15.3 uJ, Sandy Bridge and AMD Zen). Server parts count DRAM in 2^-16 J whatever
// the POWER_UNIT says, Sapphire Rapids PSYS in 1 J. One class a row; per domain (pkg,
// pp0/core, pp1, dram, psys): MSR, ESU, pJ per retired instruction, pJ per TSC tick (the
// static part).
constexpr u32 PKG = PKG_ENERGY_STATUS, PP0 = PP0_ENERGY_STATUS, PP1 = PP1_ENERGY_STATUS;
constexpr u32 DRAM = DRAM_ENERGY_STATUS, PSYS = PLATFORM_ENERGY_STATUS;
// clang-format off
constexpr SimRaplClass kSnbClient{"sandy bridge client", RAPL_POWER_UNIT, 0x000A1003,
    {{PKG, 16, 250, 4000},  {PP0, 16, 150, 2000},  {PP1, 16, 0, 300}, {},                   {}}};
constexpr SimRaplClass kSklClient{"skylake client", RAPL_POWER_UNIT, 0x000A0E03,
    {{PKG, 14, 300, 3000},  {PP0, 14, 200, 1500},  {PP1, 14, 0, 100}, {DRAM, 14, 20, 300},  {PSYS, 14, 400, 6000}}};
constexpr SimRaplClass kGoldmont{"goldmont", RAPL_POWER_UNIT, 0x000A0E03,
    {{PKG, 14, 150, 800},   {PP0, 14, 100, 400},   {PP1, 14, 0, 50},  {DRAM, 14, 10, 100},  {}}};
constexpr SimRaplClass kServer{"skylake/ice lake server", RAPL_POWER_UNIT, 0x000A0E03,
    {{PKG, 14, 400, 20000}, {PP0, 14, 250, 10000}, {},                {DRAM, 16, 50, 3000}, {}}};
constexpr SimRaplClass kSpr{"sapphire rapids", RAPL_POWER_UNIT, 0x000A0E03,
    {{PKG, 14, 450, 25000}, {PP0, 14, 300, 12000}, {},                {DRAM, 16, 60, 3500}, {PSYS, 0, 0, 40000}}};
constexpr SimRaplClass kZen{"amd zen", AMD_RAPL_PWR_UNIT, 0x000A1003,
    {{AMD_PKG_ENERGY_STAT, 16, 350, 8000}, {AMD_CORE_ENERGY_STAT, 16, 250, 1500}, {}, {}, {}}};
// clang-format on

struct IntelRow {
    const SimRaplClass* cls;
    std::initializer_list<u8> models;  // family 6
};
const IntelRow kIntelRows[] = {
    {&kSnbClient, {0x2A, 0x3A}},
    {&kSklClient, {0x4E, 0x5E, 0x8E, 0x9E, 0x66, 0x7D, 0x7E, 0xA5, 0xA6, 0x8C, 0x8D,
                   0x97, 0x9A, 0xBE, 0xB7, 0xBA, 0xBF, 0xAA, 0xAC, 0xC5, 0xC6, 0xBD}},
    {&kGoldmont, {0x5C, 0x5F, 0x7A}},
    {&kServer, {0x55, 0x6A, 0x6C}},
    {&kSpr, {0x8F, 0xCF}},
};

// The TSC rate: CPUID.15H (crystal Hz x EBX / EAX), else 16H (base MHz), else 1 GHz.
u64 tsc_hz(const CpuidSnapshot& s) {
    const u32 max = s.get(0).eax;
    pmulab::CpuidRegs l15 = s.get(0x15), l16 = s.get(0x16);
    if (max >= 0x15 && l15.eax && l15.ebx && l15.ecx) return u64(l15.ecx) * l15.ebx / l15.eax;
    if (max >= 0x16 && (l16.eax & 0xFFFF)) return u64(l16.eax & 0xFFFF) * 1000000;
    return 1000000000;
}

}  // namespace

SimRapl::SimRapl(const CpuidSnapshot& s, bool read_zero_msrs) {
    const u32 eax = s.get(1).eax, base_family = (eax >> 8) & 0xF;
    const u32 family = base_family == 0xF ? base_family + ((eax >> 20) & 0xFF) : base_family;
    const u32 model = ((eax >> 4) & 0xF) | ((base_family == 0x6 || base_family == 0xF) ? ((eax >> 16) & 0xF) << 4 : 0);
    const bool guest = (s.get(1).ecx >> 31) & 1;
    if (read_zero_msrs || guest) return;
    const u32 vendor_ebx = s.get(0).ebx;
    if (vendor_ebx == 0x68747541u || vendor_ebx == 0x6f677948u) {  // AuthenticAMD, HygonGenuine
        const bool ext7 = s.get(0x80000000).eax >= 0x80000007;
        if (family >= 0x17 && ext7 && ((s.get(0x80000007).edx >> 14) & 1)) cls_ = &kZen;
    } else if (vendor_ebx == 0x756e6547u && family == 6) {  // GenuineIntel
        for (const IntelRow& r : kIntelRows)
            if (std::find(r.models.begin(), r.models.end(), u8(model)) != r.models.end()) cls_ = r.cls;
    }
    if (cls_) interval_ = std::max<u64>(1, tsc_hz(s) / 1000);
}

int SimRapl::domain_of(u32 msr) const {
    for (unsigned d = 0; cls_ && d < kSimRaplDomains; ++d)
        if (cls_->domains[d].msr && cls_->domains[d].msr == msr) return int(d);
    return -1;
}

bool SimRapl::claims(u32 msr) const { return cls_ && (msr == cls_->unit_msr || domain_of(msr) >= 0); }

u64 SimRapl::energy_pj(unsigned d, u64 instructions, u64 ticks) const {
    const SimRaplDomain& m = cls_->domains[d];
    return m.pj_per_instruction * instructions + m.pj_per_tick * ticks;
}

u64 SimRapl::status(unsigned d, u64 tsc) const {
    // The last update at or before `tsc`, and the instructions retired before it.
    const u64 b = tsc / interval_;
    const u64 instr = b > boundary_ ? instructions_ : at_boundary_;
    const u64 at = std::max(b, boundary_) * interval_;
    const unsigned __int128 pj = (unsigned __int128)(cls_->domains[d].pj_per_instruction) * instr +
                                 (unsigned __int128)(cls_->domains[d].pj_per_tick) * at;
    const unsigned __int128 units = (pj << cls_->domains[d].esu) / 1000000000000ull;
    return u32(u64(units) + offset_[d]);
}

u64 SimRapl::read(u32 msr, u64 tsc) const {
    if (!cls_) return 0;
    if (msr == cls_->unit_msr) return cls_->power_unit;
    const int d = domain_of(msr);
    return d < 0 ? 0 : status(unsigned(d), tsc);
}

void SimRapl::preset(u32 msr, u64 value, u64 tsc) {
    const int d = domain_of(msr);
    if (d < 0) return;
    offset_[d] = u32(u32(value) - u32(status(unsigned(d), tsc) - offset_[d]));
}

void SimRapl::retire(u64 t0, u64 t1, u64 instructions) {
    if (!cls_) return;
    const u64 b = t1 / interval_;
    if (t1 > t0 && b > t0 / interval_) {
        // The batch spans the update at tick b x interval: its instructions before it, in
        // proportion to the ticks.
        const u64 before = u64((unsigned __int128)instructions * (b * interval_ - t0) / (t1 - t0));
        boundary_ = b;
        at_boundary_ = instructions_ + before;
    } else if (b > boundary_) {
        boundary_ = b;
        at_boundary_ = instructions_;
    }
    instructions_ += instructions;
}

}  // namespace sim
