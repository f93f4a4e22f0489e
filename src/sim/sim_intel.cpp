// Intel architectural performance monitoring, versions 1-6 (sim_families.h; the rules and
// their sources are in sim_cpu.h): the registers, RDPMC, the fixed counters and what a
// batch of retired instructions counts. PERF_METRICS is in sim_topdown.cpp.
#include "sim/sim_families.h"

namespace sim {

IntelEvents intel_events(const CpuidSnapshot& s) {
    CpuidRegs l1;
    if (!s.find(1, 0, &l1) || ((l1.eax >> 8) & 0xf) != 6) return IntelEvents::architectural;
    if (sim_atom_core(s) != SimAtom::none) return IntelEvents::architectural;  // E cores, Atom SoCs
    if (topdown_l2_model(l1.eax)) return IntelEvents::golden_cove;             // P cores from Golden Cove
    const u32 model = ((l1.eax >> 4) & 0xf) | (((l1.eax >> 16) & 0xf) << 4);
    // Ice Lake client and server, Tiger Lake, Rocket Lake (Sunny, Willow, Cypress Cove).
    static const u32 icl[] = {0x7D, 0x7E, 0x6A, 0x6C, 0x8C, 0x8D, 0xA7};
    // Sandy Bridge, Ivy Bridge, Haswell, Broadwell, Skylake, Kaby/Coffee/Comet/Cannon Lake.
    static const u32 skl[] = {0x2A, 0x2D, 0x3A, 0x3E, 0x3C, 0x3F, 0x45, 0x46, 0x3D, 0x47,
                              0x4F, 0x56, 0x4E, 0x5E, 0x55, 0x8E, 0x9E, 0xA5, 0xA6, 0x66};
    if (std::find(std::begin(icl), std::end(icl), model) != std::end(icl)) return IntelEvents::icelake;
    if (std::find(std::begin(skl), std::end(skl), model) != std::end(skl)) return IntelEvents::skylake;
    return IntelEvents::architectural;
}

IntelPmu::IntelPmu(u32 cpu, const PmuLayout& layout, const CpuidSnapshot& cpuid)
    : GpPmu(cpu, layout),
      atom_(sim_atom_core(cpuid)),
      events_(intel_events(cpuid)),
      pebs_(layout, cpuid, events_),
      pt_(layout, cpuid) {
    pebs_.set_pt_output(pebs_.available() && pt_.pebs_output());
    CpuidRegs l23;
    if (cpuid.find(0x23, 0, &l23) && (l23.ecx & 0xFF)) slots_per_cycle_ = l23.ecx & 0xFF;
}

IntelPmu::Slot IntelPmu::classify(u32 m) const {
    const PmuLayout& L = layout_;
    auto in = [m](u32 base, u32 n, u32* i) {
        if (m < base || m >= base + n) return false;
        *i = m - base;
        return true;
    };
    u32 i = 0;
    if (in(reg::PMC0, 32, &i) && L.gp(i)) return {Reg::pmc, i};
    if (in(reg::PERFEVTSEL0, 32, &i) && L.gp(i)) return {Reg::evtsel, i};
    if (in(reg::A_PMC0, 32, &i) && L.gp(i) && L.full_width_writes) return {Reg::a_pmc, i};
    if (in(reg::FIXED_CTR0, 16, &i) && L.fixed(i)) return {Reg::fixed_ctr, i};
    if (L.version >= 2) {
        if (m == reg::FIXED_CTR_CTRL) return {Reg::fixed_ctrl, 0};
        if (m == reg::GLOBAL_STATUS) return {Reg::global_status, 0};
        if (m == reg::GLOBAL_CTRL) return {Reg::global_ctrl, 0};
        if (m == reg::GLOBAL_OVF_CTRL) return {Reg::ovf_ctrl, 0};
    }
    if (m == reg::PERF_METRICS && L.perf_metrics) return {Reg::perf_metrics, 0};
    if (L.version >= 4) {
        if (m == reg::GLOBAL_STATUS_SET) return {Reg::status_set, 0};
        if (m == reg::GLOBAL_INUSE) return {Reg::inuse, 0};
    }
    return {};
}

u64 IntelPmu::evtsel_writable_mask() const {
    u64 m = 0xffffffffull & ~evtsel::ANY;
    if (layout_.anythread_writable) m |= evtsel::ANY;
    if (layout_.eq) m |= evtsel::EQ;
    if (layout_.umask2) m |= 0xffull << 40;
    return m;
}

u64 IntelPmu::fixed_ctrl_writable_mask() const {
    // OS/USR/AnyThread/PMI groups exist for fixed counters 0-7 only; bits 32+4i and 33+4i
    // are FIXED_CTRi's adaptive-PEBS (PERF_CAPABILITIES[14] PEBS baseline) and RDPMC
    // user-disable (CPUID.23H.0:EBX[2]) bits. Counters >= 8 have no enable here.
    u64 m = 0;
    for (u32 i = 0; i < 8; ++i) {
        if (!layout_.fixed(i)) continue;
        m |= u64(layout_.anythread_writable ? 0xf : 0xb) << (4 * i);
        if ((layout_.perf_caps >> 14) & 1) m |= u64(1) << (32 + 4 * i);
        if (layout_.rdpmc_user_disable) m |= u64(1) << (33 + 4 * i);
    }
    return m;
}

u64 IntelPmu::global_ctrl_mask() const {
    // Bit 48: EN_PERF_METRICS in GLOBAL_CTRL, PERF_METRICS_OVF in STATUS/RESET/SET.
    return u64(layout_.gp_mask) | (u64(layout_.fixed_mask) << 32) | (layout_.perf_metrics ? bit(48) : 0);
}

u64 IntelPmu::ovf_ctrl_mask() const {
    u64 m = global_ctrl_mask() | kStatusOvfBuf | kStatusCondChgd;
    if (layout_.version >= 3) m |= kStatusUncore;
    if (layout_.version >= 4) m |= kStatusTopaPmi | kStatusLbrFrz | kStatusCtrFrz | kStatusAsci;
    return m;
}

u64 IntelPmu::status_set_mask() const {
    return global_ctrl_mask() | kStatusTopaPmi | kStatusLbrFrz | kStatusCtrFrz | kStatusAsci | kStatusUncore |
           kStatusOvfBuf;
}

u64 IntelPmu::inuse() const {
    // SDM §20.2.4.3: bit i = PERFEVTSELi[7:0] != 0; bit 32+i = FIXED_CTR_CTRL
    // enable field of counter i != 0; bit 63 = any PMI enabled.
    u64 v = 0;
    bool pmi = false;
    for (u32 i = 0; i < 32; ++i)
        if (layout_.gp(i)) {
            if (gp_[i].ctl & 0xff) v |= bit(i);
            pmi |= (gp_[i].ctl & evtsel::INT) != 0;
        }
    for (u32 i = 0; i < 8; ++i)
        if (layout_.fixed(i)) {
            if ((fixed_ctrl_ >> (4 * i)) & 3) v |= bit(32 + i);
            pmi |= ((fixed_ctrl_ >> (4 * i + 3)) & 1) != 0;
        }
    if (pmi) v |= bit(63);
    return v;
}

u8 IntelPmu::rdmsr(u32 msr, u64* out) const {
    if (pebs_.claims(msr)) return pebs_.rdmsr(msr, out);
    if (pt_.claims(msr)) return pt_.rdmsr(msr, out);
    Slot s = classify(msr);
    switch (s.reg) {
        case Reg::pmc:
        case Reg::a_pmc: *out = gp_[s.index].ctr; return 0;
        case Reg::evtsel: *out = gp_[s.index].ctl; return 0;
        case Reg::fixed_ctr: *out = fixed_ctr_[s.index]; return 0;
        case Reg::fixed_ctrl: *out = fixed_ctrl_; return 0;
        case Reg::global_status: *out = global_status_; return 0;
        case Reg::global_ctrl: *out = global_ctrl_; return 0;
        case Reg::ovf_ctrl:
        case Reg::status_set: *out = 0; return 0;  // write-only in effect: reads return 0
        case Reg::inuse: *out = inuse(); return 0;
        case Reg::perf_metrics: *out = perf_metrics_value(); return 0;
        case Reg::none: break;
    }
    return kVectorGP;
}

// The counters: PMCx (legacy and full-width) and FIXED_CTRx.
u8 IntelPmu::write_counter(Slot s, u32 msr, u64 v) {
    const PmuLayout& L = layout_;
    switch (s.reg) {
        case Reg::pmc:
            check_counter_write(msr, s.index, "IA32_PERFEVTSEL");
            // Legacy write: EAX[31:0] sign-extended to the counter width (SDM §20.2.6);
            // EDX is ignored.
            gp_[s.index].ctr = u64(int64_t(int32_t(u32(v)))) & width_mask(L.gp_width);
            return 0;
        case Reg::a_pmc:
            check_counter_write(msr, s.index, "IA32_PERFEVTSEL");
            return write_masked(&gp_[s.index].ctr, v, width_mask(L.gp_width));
        default: break;
    }
    // "Bits beyond the width of the fixed-function counter are reserved" (SDM §20.2.2).
    if (v & ~width_mask(L.fixed_width)) return kVectorGP;
    fixed_ctr_[s.index] = v;
    // SLOTS and PERF_METRICS are reset together (SDM "Performance Metrics").
    if (s.index == 3 && v == 0 && L.perf_metrics) write_perf_metrics(0);
    return 0;
}

u8 IntelPmu::wrmsr(u32 msr, u64 v) {
    if (pebs_.claims(msr)) return pebs_.wrmsr(msr, v);
    if (pt_.claims(msr)) return pt_.wrmsr(msr, v);
    Slot s = classify(msr);
    switch (s.reg) {
        case Reg::pmc:
        case Reg::a_pmc:
        case Reg::fixed_ctr: return write_counter(s, msr, v);
        case Reg::perf_metrics: return write_perf_metrics(v);
        case Reg::evtsel:
            if (v & ~evtsel_writable_mask()) return kVectorGP;
            gp_[s.index].ctl = v;
            gp_[s.index].prev = false;
            return 0;
        case Reg::fixed_ctrl: return write_masked(&fixed_ctrl_, v, fixed_ctrl_writable_mask());
        case Reg::global_ctrl: return write_masked(&global_ctrl_, v, global_ctrl_mask());
        case Reg::ovf_ctrl:
            if (v & ~ovf_ctrl_mask()) return kVectorGP;
            global_status_ &= ~v;
            return 0;
        case Reg::status_set:
            if (v & ~status_set_mask()) return kVectorGP;
            global_status_ |= v;
            return 0;
        case Reg::global_status:
        case Reg::inuse:
        case Reg::none: break;  // read-only
    }
    return kVectorGP;
}

bool IntelPmu::poke(u32 msr, u64 v) {
    if (pebs_.claims(msr)) return pebs_.wrmsr(msr, v) == 0;
    if (pt_.claims(msr)) return pt_.wrmsr(msr, v) == 0;
    Slot s = classify(msr);
    switch (s.reg) {
        case Reg::pmc:
        case Reg::a_pmc: gp_[s.index].ctr = v & width_mask(layout_.gp_width); return true;
        case Reg::evtsel: gp_[s.index].ctl = v; return true;
        case Reg::fixed_ctr: fixed_ctr_[s.index] = v & width_mask(layout_.fixed_width); return true;
        case Reg::fixed_ctrl: fixed_ctrl_ = v; return true;
        case Reg::global_status: global_status_ = v; return true;
        case Reg::global_ctrl: global_ctrl_ = v; return true;
        case Reg::perf_metrics: write_perf_metrics(v); return true;
        default: return false;
    }
}

u8 IntelPmu::rdpmc(u32 ecx, u64* out) const {
    const PmuLayout& L = layout_;
    // ECX[30] selects the fixed counters, ECX[29:0] the index (SDM RDPMC).
    // ECX[31] ("fast read" on some older parts) is not modelled: #GP.
    u32 idx = ecx & 0x3fffffff;
    bool fixed = (ecx >> 30) & 1;
    if (ecx >> 31) return kVectorGP;
    // ECX[29] (with ECX[30] clear and index 0): IA32_PERF_METRICS (SDM RDPMC).
    if (!fixed && ((ecx >> 29) & 1)) {
        if (!L.perf_metrics || (ecx & ~(u32(1) << 29))) return kVectorGP;
        *out = perf_metrics_value();
        return 0;
    }
    if (fixed ? !L.fixed(idx) : !L.gp(idx)) return kVectorGP;
    *out = fixed ? fixed_ctr_[idx] : gp_[idx].ctr;
    return 0;
}

void IntelPmu::state(PmuState* st) const {
    const PmuLayout& L = layout_;
    for (u32 i = 0; i < 32; ++i)
        if (L.gp(i)) {
            (*st)[reg::PMC0 + i] = gp_[i].ctr;
            (*st)[reg::PERFEVTSEL0 + i] = gp_[i].ctl;
        }
    for (u32 i = 0; i < 16; ++i)
        if (L.fixed(i)) (*st)[reg::FIXED_CTR0 + i] = fixed_ctr_[i];
    if (L.version >= 2) {
        (*st)[reg::FIXED_CTR_CTRL] = fixed_ctrl_;
        (*st)[reg::GLOBAL_CTRL] = global_ctrl_;
        (*st)[reg::GLOBAL_STATUS] = global_status_;
    }
    if (L.version >= 4) (*st)[reg::GLOBAL_INUSE] = inuse();
    if (L.perf_metrics) (*st)[reg::PERF_METRICS] = perf_metrics_value();
    pebs_.state(st);
    pt_.state(st);
}

// ---- counting ----

bool IntelPmu::gp_matches(u32 i, u16 event, u16 umask) const {
    u64 c = gp_[i].ctl;
    return (c & 0xff) == event && (((c >> 8) & 0xff) | (((c >> 40) & 0xff) << 8)) == umask;
}

bool IntelPmu::fixed_enabled(u32 i) const {
    if (i >= 8) return false;  // no enable field in FIXED_CTR_CTRL
    u64 field = (fixed_ctrl_ >> (4 * i)) & 3;
    if (!(field & (cpl_ == 0 ? 1 : 2)) || frozen()) return false;
    return (global_ctrl_ >> (32 + i)) & 1;
}

void IntelPmu::add_fixed(u32 i, u64 inc) {
    if (!inc) return;
    u64 mask = width_mask(layout_.fixed_width);
    u64 old = fixed_ctr_[i];
    bool ovf = inc > mask - old;
    fixed_ctr_[i] = (old + inc) & mask;
    if (!ovf || pebs_fixed_overflow(i)) return;
    global_status_ |= bit(32 + i);
    if (i == 3 && metrics_counting()) global_status_ |= bit(48);  // PERF_METRICS_OVF
    if (i < 8 && (fixed_ctrl_ >> (4 * i + 3)) & 1) raise_pmi();
}

bool IntelPmu::pmi_armed() const {
    if (gp_pmi_armed() || pebs_.armed()) return true;
    for (u32 i = 0; i < 8; ++i)
        if (layout_.fixed(i) && ((fixed_ctrl_ >> (4 * i)) & 3) && ((fixed_ctrl_ >> (4 * i + 3)) & 1)) return true;
    return false;
}

// SDM Vol. 3B §18.4.7 and §20.2.4.1: the legacy freeze (v2/v3) clears IA32_PERF_GLOBAL_CTRL
// (the LBR half, DEBUGCTL.LBR, is the CPU's); the v4 freeze sets CTR_FRZ/LBR_FRZ in
// IA32_PERF_GLOBAL_STATUS, cleared through IA32_PERF_GLOBAL_STATUS_RESET.
void IntelPmu::freeze_on_pmi(bool perfmon, bool lbrs) {
    if (layout_.version >= 4) return freeze_by_status(perfmon, lbrs);
    if (perfmon && !broken_freeze_ && layout_.version >= 2) global_ctrl_ = 0;
}

void IntelPmu::run_others(u64 cycles, const std::vector<Occurrence>& each) {
    for (u32 i = 0; i < 16; ++i) {
        if (!layout_.fixed(i) || !fixed_enabled(i)) continue;
        u64 c = fixed_key(i, 0x3C, 0x00) ? 1 : 0;
        for (const Occurrence& o : each)
            if (fixed_key(i, o.event, o.umask)) c += o.per_cycle;
        add_fixed(i, c * cycles);
    }
}

void IntelPmu::event_others(u16 event, u16 umask, u64 n) {
    for (u32 i = 0; i < 16; ++i)
        if (layout_.fixed(i) && fixed_key(i, event, umask) && fixed_enabled(i)) add_fixed(i, n);
}

namespace {

// Which cores count an event: a bit per IntelEvents.
constexpr u32 kAll = 0xF, kSkl = 1u << u32(IntelEvents::skylake);
constexpr u32 kGlc = 1u << u32(IntelEvents::golden_cove), kIcl = (1u << u32(IntelEvents::icelake)) | kGlc;
constexpr u32 kBig = kSkl | kIcl;
constexpr EventSource kExact = EventSource::exact, kModelled = EventSource::modelled;

u64 l2_miss(const Retired& r) { return r.load_served[2] + r.load_served[3]; }

// Intel SDM Table 20-1 (architectural) and Intel perfmon JSON (Skylake, Ice Lake, Golden
// Cove). BR_MISP_RETIRED (C5H) and everything not listed read 0: no branch predictor.
const RetireEvent kIntelEvents[] = {
    {0xC0, 0x00, kAll, kExact, nullptr},     // INST_RETIRED.ANY_P, fixed counter 0
    {0x3C, 0x00, kAll, kModelled, nullptr},  // CPU_CLK_UNHALTED.THREAD_P, fixed counter 1
    {0x3C, 0x01, kAll, kModelled, nullptr},  // reference cycles, fixed counter 2 (REF_TSC)
    {0x3C, 0x02, kSkl, kModelled, nullptr},  // CPU_CLK_UNHALTED.ONE_THREAD_ACTIVE (sim_pmu.h set_sibling_busy)
    {0xA4, 0x01, kAll, kModelled, nullptr},  // TOPDOWN.SLOTS, fixed counter 3
    {0xC4, 0x00, kAll, kExact, [](const Retired& r) { return r.branches; }},  // ALL_BRANCHES
    {0x2E, 0x4F, kAll, kModelled, l2_miss},                                   // LLC references: loads that looked up L3
    {0x2E, 0x41, kAll, kModelled, [](const Retired& r) { return r.load_served[3]; }},  // LLC misses
    // BR_INST_RETIRED: CONDITIONAL on Skylake, COND_TAKEN from Ice Lake on.
    {0xC4, 0x01, kSkl, kExact, [](const Retired& r) { return r.cond; }},
    {0xC4, 0x01, kIcl, kExact, [](const Retired& r) { return std::min(r.cond_taken, r.cond); }},
    {0xC4, 0x10, kBig, kExact, [](const Retired& r) { return r.cond - std::min(r.cond_taken, r.cond); }},  // NOT_TAKEN
    {0xC4, 0x11, kIcl, kExact, [](const Retired& r) { return r.cond; }},                                   // COND
    {0xC4, 0x80, kGlc, kExact, [](const Retired& r) { return r.indirect; }},                               // INDIRECT
    {0xC4, 0x02, kBig, kExact, [](const Retired& r) { return r.near_calls; }},                             // NEAR_CALL
    {0xC4, 0x08, kBig, kExact, [](const Retired& r) { return r.near_returns; }},       // NEAR_RETURN
    {0xC4, 0x20, kBig, kExact, [](const Retired& r) { return r.near_taken; }},         // NEAR_TAKEN
    {0xC4, 0x40, kBig, kExact, [](const Retired& r) { return r.far; }},                // FAR_BRANCH
    {0xC0, 0x01, kSkl, kExact, [](const Retired& r) { return r.instructions; }},       // INST_RETIRED.PREC_DIST
    {0xD0, 0x81, kBig, kExact, [](const Retired& r) { return r.loads; }},              // MEM_INST_RETIRED.ALL_LOADS
    {0xD0, 0x82, kBig, kExact, [](const Retired& r) { return r.stores; }},             // ALL_STORES
    {0xD1, 0x01, kBig, kModelled, [](const Retired& r) { return r.load_served[0]; }},  // MEM_LOAD_RETIRED.L1_HIT
    {0xD1, 0x02, kBig, kModelled, [](const Retired& r) { return r.load_served[1]; }},  // L2_HIT
    {0xD1, 0x04, kBig, kModelled, [](const Retired& r) { return r.load_served[2]; }},  // L3_HIT
    {0xD1, 0x08, kBig, kModelled, [](const Retired& r) { return r.load_served[1] + l2_miss(r); }},  // L1_MISS
    {0xD1, 0x10, kBig, kModelled, l2_miss},                                                         // L2_MISS
    {0xD1, 0x20, kBig, kModelled, [](const Retired& r) { return r.load_served[3]; }},               // L3_MISS
};

}  // namespace

// PEBS (sim_pebs.h): the record of the instruction retire() counts, the counter reloaded
// from the DS area, OvfBuffer and a PMI at the interrupt threshold. `b`: the counter's
// applicable/status bit (i for PMCi, 32 + i for fixed counter i).
void IntelPmu::pebs_record(u32 b, u16 event, u16 umask, u64* ctr, u32 width) {
    u64 reset = 0;
    bool threshold = false;
    if (pebs_.assist(b, event, umask, pebs_ctx_, &reset, &threshold)) *ctr = reset & width_mask(width);
    global_status_ |= bit(b);
    if (threshold) {
        global_status_ |= kStatusOvfBuf;
        raise_pmi();
    }
}

bool IntelPmu::pebs_overflow(u32 i) {
    if (!pebs_.enabled(i)) return false;
    const u64 ctl = gp_[i].ctl;
    pebs_record(i, u16(ctl & 0xff), u16((ctl >> 8) & 0xff), &gp_[i].ctr, layout_.gp_width);
    return true;
}

// Fixed counter i with PEBS (adaptive PEBS, IA32_PEBS_ENABLE bit 32+i). Fixed counter 0
// counts INST_RETIRED (C0H/00H): its record names no data address.
bool IntelPmu::pebs_fixed_overflow(u32 i) {
    if (!pebs_.fixed_enabled(i)) return false;
    pebs_record(32 + i, i == 0 ? 0xC0 : 0, 0, &fixed_ctr_[i], layout_.fixed_width);
    return true;
}

void IntelPmu::count_load_latency(SimCpu& cpu, const Retired& r) {
    if (!pebs_.available()) return;
    u64 served[4] = {r.load_served[0], r.load_served[1], r.load_served[2], r.load_served[3]};
    const u64 known = served[0] + served[1] + served[2] + served[3];
    if (r.loads > known) served[0] += r.loads - known;  // no cache model: L1D hits
    u64 n = 0;
    for (unsigned l = 0; l < 4; ++l)
        if (pebs_load_latency(l) > pebs_.ld_lat_threshold()) n += served[l];
    if (n) cpu.event(0xCD, 0x01, n);
}

void IntelPmu::retire(SimCpu& cpu, const Retired& r) {
    pebs_ctx_.insn = r.last.valid ? &r.last : nullptr;
    pebs_ctx_.guest = cpu.guest();
    pebs_ctx_.tsc = cpu.tsc();
    pebs_ctx_.pt = &pt_;
    // Core cycles (CPU_CLK_UNHALTED.THREAD_P 3CH/00H, fixed counter 1) come with every
    // cycle of run() and stall(); INST_RETIRED (C0H/00H, fixed counter 0) with the
    // instruction cycles only, one per cycle. TOPDOWN.SLOTS (A4H/01H, fixed counter 3):
    // CPUID.23H.0:ECX[7:0] slots in every cycle, else 4; where a test gave the CPU a TopDown
    // slot budget (sim_topdown.h), run() and stall() issue the slots and their categories.
    const bool budget = cpu.has_topdown_budget();
    const Occurrence slots{0xA4, 0x01, slots_per_cycle_};
    // The stall cycles come first, then the instructions retire: one instruction's batch
    // (the executor's per-instruction mode) waits for its load, then retires.
    cpu.stall(r.stall_cycles, budget ? std::vector<Occurrence>{} : std::vector<Occurrence>{slots});
    if (budget) cpu.run(r.instructions, {{0xC0, 0x00, 1}});
    else cpu.run(r.instructions, {{0xC0, 0x00, 1}, slots});
    // The rest in the core's encodings (all per-level counts 0 with the cache model off).
    count_retired(cpu, r, kIntelEvents, [this](const RetireEvent& e) { return (e.where >> u32(events_)) & 1; });
    count_load_latency(cpu, r);
    pebs_ctx_ = PebsUnit::Context();
}

EventSource IntelPmu::retire_source(u16 event, u16 umask) const {
    if (event == 0xCD && umask == 0x01 && pebs_.available()) return kModelled;  // MEM_TRANS_RETIRED.LOAD_LATENCY
    return retired_source(kIntelEvents, event, umask,
                          [this](const RetireEvent& e) { return (e.where >> u32(events_)) & 1; });
}

}  // namespace sim
