// AMD performance counters (sim_families.h; the rules and their sources are in
// sim_cpu.h): legacy PERF_CTL/CTR0-3, PerfCtrExtCore, PerfMonV2's global MSRs, HWCR,
// IRPerfCount and DE_CFG, RDPMC, and what a batch of retired instructions counts.
#include "sim/sim_families.h"

namespace sim {

AmdPmu::AmdPmu(u32 cpu, const PmuLayout& layout, const CpuidSnapshot& cpuid) : GpPmu(cpu, layout) {
    CpuidRegs l1;
    if (!cpuid.find(1, 0, &l1)) return;
    const u32 base = (l1.eax >> 8) & 0xf;
    family_ = base == 0xf ? base + ((l1.eax >> 20) & 0xff) : base;
    family_1ah_ = family_ == 0x1A;
}

AmdPmu::Slot AmdPmu::classify(u32 m) const {
    const PmuLayout& L = layout_;
    auto in = [m](u32 base, u32 n, u32* i) {
        if (m < base || m >= base + n) return false;
        *i = m - base;
        return true;
    };
    u32 i = 0;
    if (L.amd_legacy && in(reg::AMD_PERF_CTL0, 4, &i)) return {Reg::ctl, i};
    if (L.amd_legacy && in(reg::AMD_PERF_CTR0, 4, &i)) return {Reg::ctr, i};
    if (L.amd_ext_core && in(reg::AMD_EXT_CTL0, 2 * L.amd_counters, &i)) return {(i & 1) ? Reg::ctr : Reg::ctl, i / 2};
    if (L.amd_v2) {
        if (m == reg::AMD_GLOBAL_STATUS) return {Reg::gstatus, 0};
        if (m == reg::AMD_GLOBAL_CTL) return {Reg::gctl, 0};
        if (m == reg::AMD_GLOBAL_STATUS_CLR) return {Reg::gclr, 0};
        if (m == reg::AMD_GLOBAL_STATUS_SET) return {Reg::gset, 0};
    }
    if (m == reg::AMD_HWCR) return {Reg::hwcr, 0};
    if (m == reg::AMD_DE_CFG && L.amd_de_cfg) return {Reg::de_cfg, 0};
    if (m == reg::AMD_IRPERF && L.amd_irperf) return {Reg::irperf, 0};
    return {};
}

u8 AmdPmu::rdmsr(u32 msr, u64* out) const {
    Slot s = classify(msr);
    switch (s.reg) {
        case Reg::ctr: *out = gp_[s.index].ctr; return 0;
        case Reg::ctl: *out = gp_[s.index].ctl; return 0;
        case Reg::gstatus: *out = global_status_; return 0;
        case Reg::gctl: *out = global_ctrl_; return 0;
        case Reg::gclr:
        case Reg::gset: *out = 0; return 0;  // write-only in effect: reads return 0
        case Reg::hwcr: *out = hwcr_; return 0;
        case Reg::de_cfg: *out = de_cfg_; return 0;
        case Reg::irperf: *out = irperf_; return 0;
        case Reg::none: break;
    }
    return kVectorGP;
}

u8 AmdPmu::wrmsr(u32 msr, u64 v) {
    // AMD APM PerfEvtSel: 7:0, 15:8, 16-18, 20, 22-31, 35:32 (event[11:8]), 41:40
    // (HostOnly/GuestOnly); 19, 21, 39:36 and 63:42 reserved.
    constexpr u64 kCtlWritable = (0xffffffffull & ~(bit(19) | bit(21))) | (0xfull << 32) | (0x3ull << 40);
    Slot s = classify(msr);
    switch (s.reg) {
        case Reg::ctl:
            if (v & ~kCtlWritable) return kVectorGP;
            gp_[s.index].ctl = v;
            gp_[s.index].prev = false;
            return 0;
        case Reg::ctr:
            check_counter_write(msr, s.index, "PERF_CTL");
            // APM: 48-bit counters; the model drops bits 63:48 of the written value.
            gp_[s.index].ctr = v & width_mask(layout_.gp_width);
            return 0;
        case Reg::gctl: return write_masked(&global_ctrl_, v, layout_.gp_mask);
        case Reg::gclr:
            if (v & ~(u64(layout_.gp_mask) | (layout_.amd_pmc_freeze ? kStatusCtrFrz | kStatusLbrFrz : 0)))
                return kVectorGP;
            global_status_ &= ~v;
            return 0;
        case Reg::gset:
            if (v & ~u64(layout_.gp_mask)) return kVectorGP;
            global_status_ |= v;
            return 0;
        case Reg::hwcr: hwcr_ = v; return 0;  // only IRPerfEn (bit 30) has an effect here
        case Reg::de_cfg: de_cfg_ = v; return 0;
        case Reg::irperf: return write_masked(&irperf_, v, width_mask(48));  // InstRetCnt[47:0]
        case Reg::gstatus:
        case Reg::none: break;  // read-only
    }
    return kVectorGP;
}

bool AmdPmu::poke(u32 msr, u64 v) {
    Slot s = classify(msr);
    switch (s.reg) {
        case Reg::ctr: gp_[s.index].ctr = v & width_mask(layout_.gp_width); return true;
        case Reg::ctl: gp_[s.index].ctl = v; return true;
        case Reg::gstatus: global_status_ = v; return true;
        case Reg::gctl: global_ctrl_ = v; return true;
        case Reg::hwcr: hwcr_ = v; return true;
        case Reg::de_cfg: de_cfg_ = v; return true;
        case Reg::irperf: irperf_ = v & width_mask(48); return true;
        default: return false;
    }
}

u8 AmdPmu::rdpmc(u32 ecx, u64* out) const {
    if (ecx >= layout_.amd_counters) return kVectorGP;  // NB/L3 counters not modelled
    *out = gp_[ecx].ctr;
    return 0;
}

void AmdPmu::state(PmuState* st) const {
    const PmuLayout& L = layout_;
    for (u32 i = 0; i < L.amd_counters && i < 32; ++i) {
        u32 ctl = L.amd_ext_core ? reg::AMD_EXT_CTL0 + 2 * i : reg::AMD_PERF_CTL0 + i;
        u32 ctr = L.amd_ext_core ? reg::AMD_EXT_CTL0 + 2 * i + 1 : reg::AMD_PERF_CTR0 + i;
        (*st)[ctl] = gp_[i].ctl;
        (*st)[ctr] = gp_[i].ctr;
    }
    if (L.amd_v2) {
        (*st)[reg::AMD_GLOBAL_CTL] = global_ctrl_;
        (*st)[reg::AMD_GLOBAL_STATUS] = global_status_;
    }
    if (L.amd_irperf) {
        (*st)[reg::AMD_HWCR] = hwcr_;
        (*st)[reg::AMD_IRPERF] = irperf_;
    }
}

// ---- counting ----

bool AmdPmu::gp_enabled(u32 i) const {
    if (!GpPmu::gp_enabled(i)) return false;
    // HG_ONLY with EFER.SVME = 0: HostOnly or GuestOnly alone counts nothing.
    u64 hg = (gp_[i].ctl >> 40) & 3;
    return hg != 1 && hg != 2;
}

bool AmdPmu::gp_matches(u32 i, u16 event, u16 umask) const {
    u64 c = gp_[i].ctl;
    return ((c & 0xff) | (((c >> 32) & 0xf) << 8)) == event && ((c >> 8) & 0xff) == umask;
}

// IRPerfCount: every retired instruction, every CPL, while HWCR.IRPerfEn.
void AmdPmu::count_irperf(u64 n) {
    if (!layout_.amd_irperf || !((hwcr_ >> 30) & 1)) return;
    irperf_ = (irperf_ + n + (layout_.amd_irperf_erratum1054 ? n / 8 : 0)) & width_mask(48);
}

void AmdPmu::run_others(u64 cycles, const std::vector<Occurrence>& each) {
    for (const Occurrence& o : each)
        if (o.event == 0xC0 && o.umask == 0) count_irperf(o.per_cycle * cycles);
}

void AmdPmu::event_others(u16 event, u16 umask, u64 n) {
    if (event == 0xC0 && umask == 0) count_irperf(n);
}

namespace {

constexpr EventSource kExact = EventSource::exact, kModelled = EventSource::modelled;
constexpr u32 kK7 = 0x6, kZen = 0x17, kZen3 = 0x19;

u64 l2_miss(const Retired& r) { return r.load_served[2] + r.load_served[3]; }
u64 l1_miss(const Retired& r) { return r.load_served[1] + l2_miss(r); }
u64 from_l2(const Retired& r) { return r.load_served[1]; }
u64 from_l3(const Retired& r) { return r.load_served[2]; }
u64 from_l2_l3(const Retired& r) { return r.load_served[1] + r.load_served[2]; }
u64 from_dram(const Retired& r) { return r.load_served[3]; }

// The PPR / Linux amdzen* names; the K8/K10 BKDGs give C0H-C8H and 76H the same meaning. Branch
// mispredictions (C3H, C5H, C9H, CAH, D2H) and everything not listed read 0.
const RetireEvent kAmdEvents[] = {
    {0x0C0, 0x00, kK7, kExact, nullptr},                                      // ex_ret_instr (IRPerfCount likewise)
    {0x076, 0x00, kK7, kModelled, nullptr},                                   // ls_not_halted_cyc
    {0x0C2, 0x00, kK7, kExact, [](const Retired& r) { return r.branches; }},  // ex_ret_brn, far included
    // ex_ret_brn_tkn: every taken control transfer, far ones included.
    {0x0C4, 0x00, kK7, kExact, [](const Retired& r) { return r.near_taken + r.far; }},
    {0x0C6, 0x00, kK7, kExact, [](const Retired& r) { return r.far; }},           // ex_ret_brn_far
    {0x0C8, 0x00, kK7, kExact, [](const Retired& r) { return r.near_returns; }},  // ex_ret_near_ret
    {0x0D1, 0x00, kZen, kExact, [](const Retired& r) { return r.cond; }},         // ex_ret_cond
    {0x0CC, 0x00, kZen3, kExact, [](const Retired& r) { return r.indirect; }},    // ex_ret_ind_brch_instr
    // ls_dispatch: dispatch = retire here (nothing is dispatched speculatively).
    {0x029, 0x01, kZen, kExact, [](const Retired& r) { return r.loads; }},             // ld_dispatch
    {0x029, 0x02, kZen, kExact, [](const Retired& r) { return r.stores; }},            // store_dispatch
    {0x029, 0x07, kZen, kExact, [](const Retired& r) { return r.loads + r.stores; }},  // all
    // Demand fills by source: ls_refills_from_sys (Zen 1/2), ls_dmnd_fills_from_sys (Zen 3+);
    // ls_any_fills_from_sys (Zen 3+) the same: no prefetcher, every fill is a demand fill.
    {0x043, 0x01, kZen, kModelled, from_l2},     // local L2
    {0x043, 0x02, kZen, kModelled, from_l3},     // L3 of this CCX
    {0x043, 0x03, kZen, kModelled, from_l2_l3},  // local_all
    {0x043, 0x08, kZen, kModelled, from_dram},   // DRAM of this node
    {0x043, 0x48, kZen, kModelled, from_dram},   // all DRAM
    {0x043, 0xFF, kZen, kModelled, l1_miss},     // all
    {0x044, 0x01, kZen3, kModelled, from_l2},
    {0x044, 0x02, kZen3, kModelled, from_l3},
    {0x044, 0x03, kZen3, kModelled, from_l2_l3},
    {0x044, 0x08, kZen3, kModelled, from_dram},
    {0x044, 0x48, kZen3, kModelled, from_dram},
    {0x044, 0xFF, kZen3, kModelled, l1_miss},
    // l2_cache_req_stat: data-cache reads that missed L1D, by their L2 outcome (hits are on
    // lines held exclusive: one core).
    {0x064, 0x08, kZen, kModelled, l2_miss},  // ls_rd_blk_c
    {0x064, 0x09, kZen, kModelled, l2_miss},  // ic_dc_miss_in_l2
    {0x064, 0x40, kZen, kModelled, from_l2},  // ls_rd_blk_l_hit_x
    {0x064, 0xF0, kZen, kModelled, from_l2},  // dc_hit_in_l2
    {0x064, 0xF6, kZen, kModelled, from_l2},  // ic_dc_hit_in_l2
    {0x064, 0xFF, kZen, kModelled, l1_miss},  // all
    // ls_smi_rx: SMIs received, counted by SimCpu::smi (none come from retiring code).
    {0x02B, 0x00, kZen, kExact, [](const Retired&) { return u64(0); }},
};

}  // namespace

void AmdPmu::retire(SimCpu& cpu, const Retired& r) {
    // ex_ret_instr (C0H) in the instruction cycles; ls_not_halted_cyc (76H) in every cycle.
    cpu.stall(r.stall_cycles, {{0x76, 0x00, 1}});  // stalls first, as on Intel (sim_intel.cpp)
    cpu.run(r.instructions, {{0xC0, 0x00, 1}, {0x76, 0x00, 1}});
    count_retired(cpu, r, kAmdEvents, [this](const RetireEvent& e) { return family_ >= e.where; });
}

EventSource AmdPmu::retire_source(u16 event, u16 umask) const {
    return retired_source(kAmdEvents, event, umask, [this](const RetireEvent& e) { return family_ >= e.where; });
}

}  // namespace sim
