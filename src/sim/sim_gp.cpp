// The machinery Intel's and AMD's general-purpose counters share (sim_families.h): which
// counters see an event, CMASK/INV/EDGE/EQ per cycle, width, wrap, overflow status, PMIs.
// See sim_cpu.h (run(), event()) for the rules and their sources.
#include <cstdio>

#include "sim/sim_families.h"

namespace sim {

GpPmu::GpPmu(u32 cpu, const PmuLayout& layout) : PmuModel(cpu, layout) {
    // At RESET the GP enable bits of the global control are set so that software
    // written for v1 counts (SDM §20.2.2; AMD PerfMonV2 likewise).
    if ((layout.kind == PmuLayout::Kind::intel && layout.version >= 2) ||
        (layout.kind == PmuLayout::Kind::amd && layout.amd_v2))
        global_ctrl_ = layout.gp_mask;
}

bool GpPmu::gp_enabled(u32 i) const {
    const Gp& g = gp_[i];
    if (!(g.ctl & evtsel::EN) || frozen()) return false;
    if (!(g.ctl & (cpl_ == 0 ? evtsel::OS : evtsel::USR))) return false;
    return !has_global() || ((global_ctrl_ >> i) & 1);
}

u64 GpPmu::gp_increment(Gp& g, u64 c, u64 cycles) {
    if (!cycles) return 0;
    u32 cmask = (g.ctl >> 24) & 0xff;
    bool inv = g.ctl & evtsel::INV;
    bool edge = g.ctl & evtsel::EDGE;
    bool eq = layout_.eq && (g.ctl & evtsel::EQ);
    bool cond;
    if (cmask == 0) {
        if (!edge) return c * cycles;  // INV is ignored with CMASK = 0
        cond = c > 0;
    } else {
        cond = eq ? c == cmask : c >= cmask;
        if (inv) cond = !cond;
    }
    u64 inc = edge ? (cond && !g.prev ? 1 : 0) : (cond ? cycles : 0);
    g.prev = cond;
    return inc;
}

void GpPmu::add_gp(u32 i, u64 inc) {
    if (!inc) return;
    u64 mask = width_mask(layout_.gp_width);
    u64 old = gp_[i].ctr;
    bool ovf = inc > mask - old;
    gp_[i].ctr = (old + inc) & mask;
    if (!ovf) return;
    if (pebs_overflow(i)) return;
    if (has_global()) global_status_ |= bit(i);
    if (gp_[i].ctl & evtsel::INT) raise_pmi();
}

void GpPmu::run(u64 cycles, const std::vector<Occurrence>& each) {
    run_others(cycles, each);
    for (u32 i = 0; i < 32; ++i) {
        if (!layout_.gp(i) || !gp_enabled(i)) continue;
        u64 c = gp_matches(i, 0x3C, 0x00) ? 1 : 0;
        for (const Occurrence& o : each)
            if (gp_matches(i, o.event, o.umask)) c += o.per_cycle;
        add_gp(i, gp_increment(gp_[i], c, cycles));
    }
}

void GpPmu::event(u16 event, u16 umask, u64 n) {
    event_others(event, umask, n);
    for (u32 i = 0; i < 32; ++i)
        if (layout_.gp(i) && gp_enabled(i) && gp_matches(i, event, umask)) add_gp(i, gp_increment(gp_[i], 1, n));
}

void GpPmu::ref_clock(u64 tsc, u64 crystal) {
    event_others(0x3C, 0x01, tsc);  // fixed counter 2 (Intel): TSC ticks
    const bool alone = layout_.kind == PmuLayout::Kind::intel && !sibling_busy_;
    for (u32 i = 0; i < 32; ++i) {
        if (!layout_.gp(i) || !gp_enabled(i)) continue;
        if (gp_matches(i, 0x3C, 0x01) || (alone && gp_matches(i, 0x3C, 0x02)))
            add_gp(i, gp_increment(gp_[i], 1, crystal));
    }
}

// INT alone arms it, EN or not: where EN is the only enable (Intel v1, AMD without
// PerfMonV2) the measured region's own start write sets it, after the executor chose how to
// retire the region.
bool GpPmu::gp_pmi_armed() const {
    for (u32 i = 0; i < 32; ++i)
        if (layout_.gp(i) && (gp_[i].ctl & evtsel::INT)) return true;
    return false;
}

// Freeze on PMI with a status bit (Intel v4 "streamlined" freeze, AMD LbrAndPmcFreeze):
// CTR_FRZ/LBR_FRZ (bits 59/58) set; the counters count again when software clears it.
void GpPmu::freeze_by_status(bool perfmon, bool lbrs) {
    if (broken_freeze_) return;
    if (perfmon) global_status_ |= kStatusCtrFrz;
    if (lbrs) global_status_ |= kStatusLbrFrz;
}

void GpPmu::check_counter_write(u32 msr, u32 i, const char* what) {
    if (!(gp_[i].ctl & evtsel::EN)) return;
    // Not counting: frozen on a PMI, or stopped by the global control (a PMI handler
    // reloads the counter there, SDM Vol. 3B §20.2.4.1, Linux's x86_perf_event_set_period).
    if (frozen() || (has_global() && !((global_ctrl_ >> i) & 1))) return;
    char buf[160];
    std::snprintf(buf, sizeof buf, "CPU %u: WRMSR 0x%x while %s%u.EN = 1 (clear EN before writing the counter)", cpu_,
                  msr, what, i);
    violations_.push_back(buf);
}

u8 GpPmu::write_masked(u64* reg, u64 v, u64 writable) {
    if (v & ~writable) return kVectorGP;
    *reg = v;
    return 0;
}

}  // namespace sim
