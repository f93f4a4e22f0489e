// The simulated NetBurst PMU: see sim_netburst.h for what is modelled and the sources.
#include "sim/sim_netburst.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>

namespace sim {

namespace nb {

namespace {
constexpr u32 kBpu01 = 0x3, kBpu23 = 0xC, kMs01 = 0x30, kMs23 = 0xC0, kFlame01 = 0x300, kFlame23 = 0xC00;
constexpr u32 kIq014 = (1u << 12) | (1u << 13) | (1u << 16);
constexpr u32 kIq235 = (1u << 14) | (1u << 15) | (1u << 17);
}  // namespace

// SDM Vol. 3B Table 18-63: every ESCR with its CCCR select value and the counters whose
// CCCRs can select it.
const EscrInfo kEscrs[] = {
    {"BSU_ESCR0", 0x3A0, Unit::bsu, 7, kBpu01, false},       {"BSU_ESCR1", 0x3A1, Unit::bsu, 7, kBpu23, false},
    {"FSB_ESCR0", 0x3A2, Unit::fsb, 6, kBpu01, false},       {"FSB_ESCR1", 0x3A3, Unit::fsb, 6, kBpu23, false},
    {"FIRM_ESCR0", 0x3A4, Unit::firm, 1, kFlame01, false},   {"FIRM_ESCR1", 0x3A5, Unit::firm, 1, kFlame23, false},
    {"FLAME_ESCR0", 0x3A6, Unit::flame, 0, kFlame01, false}, {"FLAME_ESCR1", 0x3A7, Unit::flame, 0, kFlame23, false},
    {"DAC_ESCR0", 0x3A8, Unit::dac, 5, kFlame01, false},     {"DAC_ESCR1", 0x3A9, Unit::dac, 5, kFlame23, false},
    {"MOB_ESCR0", 0x3AA, Unit::mob, 2, kBpu01, false},       {"MOB_ESCR1", 0x3AB, Unit::mob, 2, kBpu23, false},
    {"PMH_ESCR0", 0x3AC, Unit::pmh, 4, kBpu01, false},       {"PMH_ESCR1", 0x3AD, Unit::pmh, 4, kBpu23, false},
    {"SAAT_ESCR0", 0x3AE, Unit::saat, 2, kFlame01, false},   {"SAAT_ESCR1", 0x3AF, Unit::saat, 2, kFlame23, false},
    {"U2L_ESCR0", 0x3B0, Unit::u2l, 3, kFlame01, false},     {"U2L_ESCR1", 0x3B1, Unit::u2l, 3, kFlame23, false},
    {"BPU_ESCR0", 0x3B2, Unit::bpu, 0, kBpu01, false},       {"BPU_ESCR1", 0x3B3, Unit::bpu, 0, kBpu23, false},
    {"IS_ESCR0", 0x3B4, Unit::is, 1, kBpu01, false},         {"IS_ESCR1", 0x3B5, Unit::is, 1, kBpu23, false},
    {"ITLB_ESCR0", 0x3B6, Unit::itlb, 3, kBpu01, false},     {"ITLB_ESCR1", 0x3B7, Unit::itlb, 3, kBpu23, false},
    {"CRU_ESCR0", 0x3B8, Unit::cru01, 4, kIq014, false},     {"CRU_ESCR1", 0x3B9, Unit::cru01, 4, kIq235, false},
    {"IQ_ESCR0", 0x3BA, Unit::iq, 0, kIq014, true},          {"IQ_ESCR1", 0x3BB, Unit::iq, 0, kIq235, true},
    {"RAT_ESCR0", 0x3BC, Unit::rat, 2, kIq014, false},       {"RAT_ESCR1", 0x3BD, Unit::rat, 2, kIq235, false},
    {"SSU_ESCR0", 0x3BE, Unit::ssu, 3, kIq014, false},       {"MS_ESCR0", 0x3C0, Unit::ms, 0, kMs01, false},
    {"MS_ESCR1", 0x3C1, Unit::ms, 0, kMs23, false},          {"TBPU_ESCR0", 0x3C2, Unit::tbpu, 2, kMs01, false},
    {"TBPU_ESCR1", 0x3C3, Unit::tbpu, 2, kMs23, false},      {"TC_ESCR0", 0x3C4, Unit::tc, 1, kMs01, false},
    {"TC_ESCR1", 0x3C5, Unit::tc, 1, kMs23, false},          {"IX_ESCR0", 0x3C8, Unit::ix, 5, kBpu01, false},
    {"IX_ESCR1", 0x3C9, Unit::ix, 5, kBpu23, false},         {"ALF_ESCR0", 0x3CA, Unit::alf, 1, kIq014, false},
    {"ALF_ESCR1", 0x3CB, Unit::alf, 1, kIq235, false},       {"CRU_ESCR2", 0x3CC, Unit::cru23, 5, kIq014, false},
    {"CRU_ESCR3", 0x3CD, Unit::cru23, 5, kIq235, false},     {"CRU_ESCR4", 0x3E0, Unit::cru45, 6, kIq014, false},
    {"CRU_ESCR5", 0x3E1, Unit::cru45, 6, kIq235, false},
};
const unsigned kEscrCount = sizeof(kEscrs) / sizeof(kEscrs[0]);

const EscrInfo* escr_at(u32 msr) {
    for (const EscrInfo& e : kEscrs)
        if (e.msr == msr) return &e;
    return nullptr;
}

int cascade_partner(unsigned i) {
    if (i < 12) return int((i & ~3u) | ((i + 2) & 3u));  // 0<->2, 1<->3 in each group of four
    switch (i) {
        case IQ0: return IQ2;
        case IQ1: return IQ3;
        case IQ2: return IQ0;
        case IQ3: return IQ1;
        case IQ4: return IQ2;  // 16 only from 14
        case IQ5: return IQ3;  // 17 only from 15
        default: return -1;
    }
}

}  // namespace nb

namespace {

constexpr u64 kCounterMask = (u64(1) << nb::kWidth) - 1;

}  // namespace

NetBurstModel::NetBurstModel(const CpuidSnapshot& s) {
    CpuidRegs l1 = s.get(1);
    u32 family = (l1.eax >> 8) & 0xF;
    u32 model = (l1.eax >> 4) & 0xF;
    if (family == 0xF) model |= ((l1.eax >> 16) & 0xF) << 4;
    model_ = model;
    ht_ = ((l1.edx >> 28) & 1) && ((l1.ebx >> 16) & 0xFF) >= 2;
    if (!ht_) active_[1] = false;
    escr_.assign(nb::kEscrCount, 0);
}

bool NetBurstModel::escr_exists(const nb::EscrInfo& e) const { return !e.early_only || model_ == 1 || model_ == 2; }

bool NetBurstModel::owns(u32 m) {
    return (m >= nb::COUNTER0 && m < nb::COUNTER0 + nb::kCounters) ||
           (m >= nb::CCCR0 && m < nb::CCCR0 + nb::kCounters) || (m >= nb::ESCR_FIRST && m <= nb::ESCR_LAST);
}

int NetBurstModel::escr_index(u32 m) const {
    for (unsigned k = 0; k < nb::kEscrCount; ++k)
        if (nb::kEscrs[k].msr == m) return escr_exists(nb::kEscrs[k]) ? int(k) : -1;
    return -1;
}

bool NetBurstModel::exists(u32 m) const {
    if (m >= nb::COUNTER0 && m < nb::COUNTER0 + nb::kCounters) return true;
    if (m >= nb::CCCR0 && m < nb::CCCR0 + nb::kCounters) return true;
    return escr_index(m) >= 0;
}

u64 NetBurstModel::escr_writable() const { return 0x7FFFFFFCull | (ht_ ? 0x3ull : 0); }

u64 NetBurstModel::cccr_writable(unsigned i) const {
    u64 m = 0x07FFF000ull | nb::CASCADE | nb::OVF;  // 26:12, 30, 31
    if (ht_) m |= nb::OVF_PMI_T1;
    if (i >= nb::IQ0 && (model_ == 2 || model_ == 3 || model_ == 4 || model_ == 6)) m |= nb::EXT_CASCADE;
    return m;
}

void NetBurstModel::violation(const char* fmt, ...) {
    char buf[200];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    violations_.push_back(buf);
}

u8 NetBurstModel::rdmsr(u32 m, u64* out) const {
    if (!exists(m)) return pmulab::kVectorGP;
    *out = peek(m);
    return 0;
}

u8 NetBurstModel::wrmsr(u32 cpu, u32 thread, u32 m, u64 v) {
    (void)thread;
    if (m >= nb::COUNTER0 && m < nb::COUNTER0 + nb::kCounters) {
        unsigned i = m - nb::COUNTER0;
        if (v & ~kCounterMask) return pmulab::kVectorGP;  // bits 63:40 reserved
        if (ctr_[i].cccr & nb::ENABLE)
            violation("CPU %u: WRMSR 0x%x (counter %u) while its CCCR is enabled (disable the counter first)", cpu, m,
                      i);
        ctr_[i].value = v;
        return 0;
    }
    if (m >= nb::CCCR0 && m < nb::CCCR0 + nb::kCounters) {
        unsigned i = m - nb::CCCR0;
        if (v & ~cccr_writable(i)) return pmulab::kVectorGP;
        if (!ht_ && (v & nb::ENABLE) && ((v >> 16) & 3) != 3)
            violation("CPU %u: WRMSR 0x%x enables counter %u with active thread %llu (must be 11b without "
                      "Hyper-Threading)",
                      cpu, m, i, (unsigned long long)((v >> 16) & 3));
        ctr_[i].cccr = v;
        ctr_[i].prev = false;
        return 0;
    }
    int k = escr_index(m);
    if (k < 0) return pmulab::kVectorGP;  // a hole in 3A0H-3E1H, or IQ_ESCR0/1 on a later model
    if (v & ~escr_writable()) return pmulab::kVectorGP;
    if (v != escr_[k])
        for (unsigned i = 0; i < nb::kCounters; ++i)
            if ((ctr_[i].cccr & nb::ENABLE) && feeding_escr(i) == k)
                violation("CPU %u: WRMSR 0x%x (%s) changes the ESCR while counter %u counts through it", cpu, m,
                          nb::kEscrs[k].name, i);
    escr_[k] = v;
    return 0;
}

u8 NetBurstModel::rdpmc(u32 ecx, u64* out) const {
    u32 idx = ecx & 0x7FFFFFFFu;
    if (idx >= nb::kCounters) return pmulab::kVectorGP;
    u64 v = ctr_[idx].value;
    *out = (ecx & nb::RDPMC_FAST) ? (v & 0xFFFFFFFFull) : v;
    return 0;
}

u64 NetBurstModel::peek(u32 m) const {
    if (m >= nb::COUNTER0 && m < nb::COUNTER0 + nb::kCounters) return ctr_[m - nb::COUNTER0].value;
    if (m >= nb::CCCR0 && m < nb::CCCR0 + nb::kCounters) return ctr_[m - nb::CCCR0].cccr;
    int k = escr_index(m);
    if (k < 0) {
        std::fprintf(stderr, "sim_netburst: peek of MSR 0x%x, which does not exist\n", m);
        std::abort();
    }
    return escr_[k];
}

void NetBurstModel::poke(u32 m, u64 v) {
    if (m >= nb::COUNTER0 && m < nb::COUNTER0 + nb::kCounters) {
        ctr_[m - nb::COUNTER0].value = v & kCounterMask;
        return;
    }
    if (m >= nb::CCCR0 && m < nb::CCCR0 + nb::kCounters) {
        ctr_[m - nb::CCCR0].cccr = v;
        return;
    }
    int k = escr_index(m);
    if (k < 0) {
        std::fprintf(stderr, "sim_netburst: poke of MSR 0x%x, which does not exist\n", m);
        std::abort();
    }
    escr_[k] = v;
}

void NetBurstModel::state(PmuState* st) const {
    for (unsigned i = 0; i < nb::kCounters; ++i) {
        (*st)[nb::COUNTER0 + i] = ctr_[i].value;
        (*st)[nb::CCCR0 + i] = ctr_[i].cccr;
    }
    for (unsigned k = 0; k < nb::kEscrCount; ++k)
        if (escr_exists(nb::kEscrs[k])) (*st)[nb::kEscrs[k].msr] = escr_[k];
}

// ---- counting ----

int NetBurstModel::feeding_escr(unsigned i) const {
    u32 sel = u32((ctr_[i].cccr >> 13) & 7);
    for (unsigned k = 0; k < nb::kEscrCount; ++k) {
        const nb::EscrInfo& e = nb::kEscrs[k];
        if (e.select == sel && ((e.counters >> i) & 1)) return escr_exists(e) ? int(k) : -1;
    }
    return -1;
}

bool NetBurstModel::counting(unsigned i, u32 thread, u8 cpl) const {
    u64 cccr = ctr_[i].cccr;
    if (!(cccr & nb::ENABLE)) return false;
    u32 at = u32((cccr >> 16) & 3);
    if (!ht_) {
        if (at != 3) return false;
    } else {
        unsigned n = unsigned(active_[0]) + unsigned(active_[1]);
        bool ok = at == 1 ? n == 1 : at == 2 ? n == 2 : at == 3 ? n >= 1 : false;
        if (!ok) return false;
    }
    int k = feeding_escr(i);
    if (k < 0) return false;
    u64 e = escr_[k];
    u64 flag = thread == 0 ? (cpl == 0 ? nb::OS : nb::USR) : (cpl == 0 ? nb::T1_OS : nb::T1_USR);
    return (e & flag) != 0;
}

u64 NetBurstModel::input(unsigned i, const std::vector<NbOccurrence>& each) const {
    int k = feeding_escr(i);
    if (k < 0) return 0;
    u64 e = escr_[k];
    u32 sel = u32((e >> 25) & 0x3F);
    u32 mask = u32((e >> 9) & 0xFFFF);
    u64 c = 0;
    for (const NbOccurrence& o : each)
        if (o.event.unit == nb::kEscrs[k].unit && o.event.select == sel && (o.mask & mask)) c += o.per_cycle;
    return c > 15 ? 15 : c;  // four input lines
}

bool NetBurstModel::advance(unsigned i, u64 c, u64 cycles, u32 thread) {
    (void)thread;
    if (!cycles) return false;
    Ctr& x = ctr_[i];
    u64 inc;
    u64 counted_cycles;  // cycles with a non-zero increment (FORCE_OVF overflows in each)
    if (x.cccr & nb::COMPARE) {
        u64 thr = (x.cccr >> 20) & 0xF;
        bool cond = (x.cccr & nb::COMPLEMENT) ? c <= thr : c > thr;
        if (x.cccr & nb::EDGE) inc = (cond && !x.prev) ? 1 : 0;
        else inc = cond ? cycles : 0;
        x.prev = cond;
        counted_cycles = inc;
    } else {
        inc = c * cycles;
        counted_cycles = c ? cycles : 0;
    }
    if (!inc) return false;
    u64 sum = x.value + inc;  // inc < 2^60 for any run a test drives
    u64 wraps = sum >> nb::kWidth;
    x.value = sum & kCounterMask;
    u64 overflows = (x.cccr & nb::FORCE_OVF) ? counted_cycles : wraps;
    if (overflows) {
        x.cccr |= nb::OVF;
        if (x.cccr & nb::OVF_PMI_T0) pmis_[0] += overflows;
        if (x.cccr & nb::OVF_PMI_T1) pmis_[1] += overflows;
    }
    return wraps != 0;
}

void NetBurstModel::run(u32 thread, u8 cpl, u64 cycles, const std::vector<NbOccurrence>& each) {
    std::vector<NbOccurrence> all = each;
    all.push_back(NbOccurrence{nb::kGlobalPowerEvents, nb::RUNNING, 1});
    event_cycles(thread, cpl, cycles, all);
}

void NetBurstModel::event(u32 thread, u8 cpl, nb::Event e, u16 mask, u64 n) {
    event_cycles(thread, cpl, n, {NbOccurrence{e, mask, 1}});
}

void NetBurstModel::event_cycles(u32 thread, u8 cpl, u64 cycles, const std::vector<NbOccurrence>& each) {
    thread &= 1;
    u64 remaining = cycles;
    while (remaining) {
        bool act[nb::kCounters];
        u64 in[nb::kCounters];
        for (unsigned i = 0; i < nb::kCounters; ++i) {
            act[i] = counting(i, thread, cpl);
            in[i] = act[i] ? input(i, each) : 0;
        }
        // Split the run where a counter that starts a cascaded partner wraps, so that the
        // partner counts exactly the cycles after it.
        u64 seg = remaining;
        bool armed[nb::kCounters];
        for (unsigned y = 0; y < nb::kCounters; ++y) {
            const u64 cc = ctr_[y].cccr;
            armed[y] = (cc & nb::CASCADE) && !(cc & nb::ENABLE);
            int x = armed[y] ? nb::cascade_partner(y) : -1;
            if (x < 0 || !act[x]) continue;
            const Ctr& src = ctr_[x];
            u64 left = (kCounterMask - src.value) + 1;  // increments until the wrap
            u64 k = 0;                                  // cycles until the wrap, 0 = not in this run
            if (src.cccr & nb::COMPARE) {
                u64 thr = (src.cccr >> 20) & 0xF;
                bool cond = (src.cccr & nb::COMPLEMENT) ? in[x] <= thr : in[x] > thr;
                if (src.cccr & nb::EDGE) k = (cond && !src.prev && left == 1) ? 1 : 0;
                else k = cond ? left : 0;
            } else if (in[x]) {
                k = (left + in[x] - 1) / in[x];
            }
            if (k && k < seg) seg = k;
        }
        bool wrapped[nb::kCounters] = {};
        for (unsigned i = 0; i < nb::kCounters; ++i)
            if (act[i]) wrapped[i] = advance(i, in[i], seg, thread);
        for (unsigned y = 0; y < nb::kCounters; ++y) {
            int x = armed[y] ? nb::cascade_partner(y) : -1;
            if (x >= 0 && wrapped[x]) ctr_[y].cccr |= nb::ENABLE;  // the cascaded counter starts
        }
        remaining -= seg;
    }
}

// ---- the driver API and the PmuModel ----

void nb_run(SimCpu& c, u64 cycles, std::initializer_list<NbOccurrence> each) {
    NetBurstModel* m = c.netburst();
    if (!m) {
        std::fprintf(stderr, "sim_netburst: nb_run on CPU %u, which has no NetBurst PMU\n", c.index());
        std::abort();
    }
    m->run(c.netburst_thread(), c.cpl(), cycles, std::vector<NbOccurrence>(each));
}

void nb_event(SimCpu& c, nb::Event e, u16 mask, u64 n) {
    NetBurstModel* m = c.netburst();
    if (!m) {
        std::fprintf(stderr, "sim_netburst: nb_event on CPU %u, which has no NetBurst PMU\n", c.index());
        std::abort();
    }
    m->event(c.netburst_thread(), c.cpl(), e, mask, n);
}

bool NetBurstPmu::poke(u32 msr, u64 value) {
    if (!regs_->exists(msr)) return false;
    regs_->poke(msr, value);
    return true;
}

void NetBurstPmu::retire(SimCpu& cpu, const Retired& r) {
    (void)cpu;
    // The instruction cycles retire one instruction (one uop) each; global_power_events
    // RUNNING counts every cycle, the stall cycles included (NetBurstModel::run).
    regs_->run(thread_, cpl_, r.instructions,
               {{nb::kInstrRetired, nb::NBOGUSNTAG, 1}, {nb::kUopsRetired, nb::NBOGUS, 1}});
    regs_->run(thread_, cpl_, r.stall_cycles, {});
    // branch_retired: taken (MMTP) and not taken (MMNP), all predicted: the model has no
    // branch predictor, so MMNM/MMTM and mispred_branch_retired read 0. Only conditional
    // branches fall through.
    const u64 not_taken = std::min(r.cond - std::min(r.cond_taken, r.cond), r.branches);
    regs_->event(thread_, cpl_, nb::kBranchRetired, nb::MMTP, r.branches - not_taken);
    regs_->event(thread_, cpl_, nb::kBranchRetired, nb::MMNP, not_taken);
}

}  // namespace sim
