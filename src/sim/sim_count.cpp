// The simulated CPU, counting: what each counter counts in run(), the test hooks
// (peek/poke, injected faults) and the state snapshot. See sim_cpu.h.
#include <cstdio>

#include "sim/sim_internal.h"
#include "sim/sim_netburst.h"

namespace sim {

// ---- counting ----

bool SimCpu::gp_enabled(u32 i) const {
    const Gp& g = gp_[i];
    if (!(g.ctl & evtsel::EN)) return false;
    if (!(g.ctl & (cpl_ == 0 ? evtsel::OS : evtsel::USR))) return false;
    if (layout_.kind == PmuLayout::Kind::intel && layout_.version >= 2 && !((global_ctrl_ >> i) & 1)) return false;
    if (layout_.kind == PmuLayout::Kind::amd && layout_.amd_v2 && !((global_ctrl_ >> i) & 1)) return false;
    // HG_ONLY with EFER.SVME = 0: HostOnly or GuestOnly alone counts nothing.
    if (layout_.kind == PmuLayout::Kind::amd && (((g.ctl >> 40) & 3) == 1 || ((g.ctl >> 40) & 3) == 2)) return false;
    return true;
}

bool SimCpu::gp_matches(u32 i, u16 event, u16 umask) const {
    u64 c = gp_[i].ctl;
    if (layout_.kind == PmuLayout::Kind::amd)
        return ((c & 0xff) | (((c >> 32) & 0xf) << 8)) == event && ((c >> 8) & 0xff) == umask;
    return (c & 0xff) == event && (((c >> 8) & 0xff) | (((c >> 40) & 0xff) << 8)) == umask;
}

bool SimCpu::fixed_enabled(u32 i) const {
    if (i >= 8) return false;  // no enable field in FIXED_CTR_CTRL
    u64 field = (fixed_ctrl_ >> (4 * i)) & 3;
    if (!(field & (cpl_ == 0 ? 1 : 2))) return false;
    return (global_ctrl_ >> (32 + i)) & 1;
}

u64 SimCpu::gp_increment(Gp& g, u64 c, u64 cycles) {
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

void SimCpu::add_gp(u32 i, u64 inc) {
    if (!inc) return;
    u64 mask = width_mask(layout_.gp_width);
    u64 old = gp_[i].ctr;
    bool ovf = inc > mask - old;
    gp_[i].ctr = (old + inc) & mask;
    if (!ovf) return;
    bool has_status = (layout_.kind == PmuLayout::Kind::intel && layout_.version >= 2) ||
                      (layout_.kind == PmuLayout::Kind::amd && layout_.amd_v2);
    if (has_status) global_status_ |= bit(i);
    if (gp_[i].ctl & evtsel::INT) ++pmis_;
}

void SimCpu::add_fixed(u32 i, u64 inc) {
    if (!inc) return;
    u64 mask = width_mask(layout_.fixed_width);
    u64 old = fixed_ctr_[i];
    bool ovf = inc > mask - old;
    fixed_ctr_[i] = (old + inc) & mask;
    if (!ovf) return;
    global_status_ |= bit(32 + i);
    if (i == 3 && metrics_counting()) global_status_ |= bit(48);  // PERF_METRICS_OVF
    if (i < 8 && (fixed_ctrl_ >> (4 * i + 3)) & 1) ++pmis_;
}

void SimCpu::deliver(u16 event, u16 umask, u64 n) {
    if (!n || layout_.kind == PmuLayout::Kind::none) return;
    // IRPerfCount: every retired instruction, every CPL, while HWCR.IRPerfEn.
    if (layout_.amd_irperf && event == 0xC0 && umask == 0 && ((hwcr_ >> 30) & 1))
        irperf_ = (irperf_ + n + (layout_.amd_irperf_erratum1054 ? n / 8 : 0)) & width_mask(48);
    for (u32 i = 0; i < 32; ++i)
        if (layout_.gp(i) && gp_enabled(i) && gp_matches(i, event, umask)) add_gp(i, gp_increment(gp_[i], 1, n));
    for (u32 i = 0; i < 16; ++i)
        if (layout_.fixed(i) && fixed_key(i, event, umask) && fixed_enabled(i)) add_fixed(i, n);
}

void SimCpu::event(u16 event, u16 umask, u64 n) { deliver(event, umask, n); }

void SimCpu::ref_cycles(u64 n) {
    // CPU_CLK_UNHALTED.REF_TSC advances at the reference (crystal/bus) clock, by
    // ref_step_ TSC ticks at a time, whenever the TSC (offset by ref_phase_) crosses a
    // multiple of ref_step_ (step 1: every tick, the default).
    u64 before = (tsc_ + ref_phase_) / ref_step_;
    tsc_ += n;
    u64 after = (tsc_ + ref_phase_) / ref_step_;
    deliver(0x3C, 0x01, (after - before) * ref_step_);
}

void SimCpu::run(u64 cycles, std::initializer_list<Occurrence> each) { run(cycles, std::vector<Occurrence>(each)); }

void SimCpu::run(u64 cycles, const std::vector<Occurrence>& each_in) {
    if (!cycles || layout_.kind == PmuLayout::Kind::none) return;
    std::vector<Occurrence> td_buf;
    const std::vector<Occurrence>& each = topdown_cycles(cycles, each_in, &td_buf);
    // An SMI during every smi_every_-th run: the SMM handler's instructions and cycles are
    // counted like the measured code's, unless IA32_DEBUGCTL.FREEZE_WHILE_SMM is set (the
    // counters are then frozen in SMM; APERF/MPERF still advance).
    if (smi_every_ && !in_smi_ && ++runs_ % smi_every_ == 0) {
        if (layout_.smi_count) ++smi_count_;
        if (layout_.freeze_while_smm && ((debugctl_ >> 14) & 1)) {
            if (layout_.amd_efffreq || layout_.efffreq) {
                aperf_ += smi_extra_;
                mperf_ += smi_extra_;
            }
        } else {
            in_smi_ = true;
            run(smi_extra_, {{0xC0, 0x00, 1}});
            in_smi_ = false;
        }
    }
    if (layout_.amd_efffreq || layout_.efffreq) {
        aperf_ += cycles;
        mperf_ += cycles;
    }
    if (layout_.amd_irperf)
        for (const Occurrence& o : each)
            if (o.event == 0xC0 && o.umask == 0 && ((hwcr_ >> 30) & 1))
                irperf_ = (irperf_ + o.per_cycle * cycles +
                           (layout_.amd_irperf_erratum1054 ? o.per_cycle * cycles / 8 : 0)) &
                          width_mask(48);
    for (u32 i = 0; i < 32; ++i) {
        if (!layout_.gp(i) || !gp_enabled(i)) continue;
        u64 c = gp_matches(i, 0x3C, 0x00) ? 1 : 0;
        for (const Occurrence& o : each)
            if (gp_matches(i, o.event, o.umask)) c += o.per_cycle;
        add_gp(i, gp_increment(gp_[i], c, cycles));
    }
    for (u32 i = 0; i < 16; ++i) {
        if (!layout_.fixed(i) || !fixed_enabled(i)) continue;
        u64 c = fixed_key(i, 0x3C, 0x00) ? 1 : 0;
        for (const Occurrence& o : each)
            if (fixed_key(i, o.event, o.umask)) c += o.per_cycle;
        add_fixed(i, c * cycles);
    }
}

// ---- direct access ----

u64 SimCpu::peek(u32 msr) const {
    if (netburst() && NetBurstModel::owns(msr)) {
        if (!netburst()->exists(msr)) die("peek: CPU %u has no MSR 0x%x", index_, msr);
        return netburst()->peek(msr);
    }
    Slot s = classify(msr);
    if (s.kind == Kind::none) die("peek: CPU %u has no MSR 0x%x", index_, msr);
    if (s.kind == Kind::extra) return extra_.at(msr).value;
    return read_slot(s);
}

void SimCpu::poke(u32 msr, u64 v) {
    if (netburst() && NetBurstModel::owns(msr)) {
        if (!netburst()->exists(msr)) die("poke: CPU %u has no MSR 0x%x", index_, msr);
        netburst()->poke(msr, v);
        return;
    }
    Slot s = classify(msr);
    switch (s.kind) {
        case Kind::pmc:
        case Kind::a_pmc:
        case Kind::amd_ctr: gp_[s.index].ctr = v & width_mask(layout_.gp_width); return;
        case Kind::evtsel:
        case Kind::amd_ctl: gp_[s.index].ctl = v; return;
        case Kind::fixed_ctr: fixed_ctr_[s.index] = v & width_mask(layout_.fixed_width); return;
        case Kind::fixed_ctrl: fixed_ctrl_ = v; return;
        case Kind::global_status:
        case Kind::amd_gstatus: global_status_ = v; return;
        case Kind::global_ctrl:
        case Kind::amd_gctl: global_ctrl_ = v; return;
        case Kind::tsc: tsc_ = v; return;
        case Kind::pkrs: pkrs_ = v; return;
        case Kind::misc_enable: misc_enable_ = v; return;
        case Kind::amd_hwcr: hwcr_ = v; return;
        case Kind::amd_de_cfg: de_cfg_ = v; return;
        case Kind::amd_irperf: irperf_ = v & width_mask(48); return;
        case Kind::aperf:
        case Kind::aperf_ro: aperf_ = v; return;
        case Kind::mperf:
        case Kind::mperf_ro: mperf_ = v; return;
        case Kind::smi_count: smi_count_ = v; return;
        case Kind::debugctl: debugctl_ = v; return;
        case Kind::perf_caps: set_perf_capabilities(v); return;
        case Kind::perf_metrics: write_perf_metrics(v); return;
        case Kind::extra: extra_.at(msr).value = v; return;
        default: die("poke: CPU %u MSR 0x%x has no state to set", index_, msr);
    }
}

void SimCpu::define_msr(u32 msr, u64 value, bool writable) { extra_[msr] = Extra{value, writable}; }

void SimCpu::fail_nth_wrmsr(u64 k, u8 vector) {
    nth_wrmsr_ = k;
    nth_vector_ = vector;
}
void SimCpu::fail_wrmsr_to(u32 msr, u8 vector) { fail_wr_[msr] = vector; }
void SimCpu::fail_rdmsr_to(u32 msr, u8 vector) { fail_rd_[msr] = vector; }
void SimCpu::clear_faults() {
    nth_wrmsr_ = 0;
    fail_wr_.clear();
    fail_rd_.clear();
}

std::vector<LogEntry> SimCpu::writes() const {
    std::vector<LogEntry> w;
    for (const LogEntry& e : log_)
        if (e.kind == Access::wrmsr) w.push_back(e);
    return w;
}

PmuState SimCpu::pmu_state() const {
    PmuState st;
    const PmuLayout& L = layout_;
    if (L.kind == PmuLayout::Kind::intel) {
        for (u32 i = 0; i < 32; ++i)
            if (L.gp(i)) {
                st[reg::PMC0 + i] = gp_[i].ctr;
                st[reg::PERFEVTSEL0 + i] = gp_[i].ctl;
            }
        for (u32 i = 0; i < 16; ++i)
            if (L.fixed(i)) st[reg::FIXED_CTR0 + i] = fixed_ctr_[i];
        if (L.version >= 2) {
            st[reg::FIXED_CTR_CTRL] = fixed_ctrl_;
            st[reg::GLOBAL_CTRL] = global_ctrl_;
            st[reg::GLOBAL_STATUS] = global_status_;
        }
        if (L.version >= 4) st[reg::GLOBAL_INUSE] = inuse();
        if (L.perf_metrics) st[reg::PERF_METRICS] = perf_metrics_value();
    } else if (L.kind == PmuLayout::Kind::amd) {
        for (u32 i = 0; i < L.amd_counters && i < 32; ++i) {
            u32 ctl = L.amd_ext_core ? reg::AMD_EXT_CTL0 + 2 * i : reg::AMD_PERF_CTL0 + i;
            u32 ctr = L.amd_ext_core ? reg::AMD_EXT_CTL0 + 2 * i + 1 : reg::AMD_PERF_CTR0 + i;
            st[ctl] = gp_[i].ctl;
            st[ctr] = gp_[i].ctr;
        }
        if (L.amd_v2) {
            st[reg::AMD_GLOBAL_CTL] = global_ctrl_;
            st[reg::AMD_GLOBAL_STATUS] = global_status_;
        }
        if (L.amd_irperf) {
            st[reg::AMD_HWCR] = hwcr_;
            st[reg::AMD_IRPERF] = irperf_;
        }
    }
    if (netburst()) netburst()->state(&st);
    return st;
}

}  // namespace sim
