// The NetBurst ESCR/CCCR backend (see netburst_pmu.h).
#include "pmu/netburst_pmu.h"

#include <stdarg.h>

namespace pmulab {

using netburst::Cccr;
using netburst::Escr;

namespace {

bool has(u32 mask, unsigned i) { return i < 32 && ((mask >> i) & 1); }

// Counters an event may use on this model: those fed by its existing ESCRs.
u32 event_counters_nb(const Event& e, u32 model) {
    const netburst::EventDef& d = netburst::kEvents[e.netburst.event];
    u32 c = 0;
    for (u8 x : d.escr)
        if (x < netburst::kEscrCount && netburst::escr_exists(netburst::kEscrs[x], model))
            c |= netburst::kEscrs[x].counters;
    c &= e.allowed_gp;
    if (e.pinned_counter >= 0) c &= 1u << e.pinned_counter;
    return c;
}

}  // namespace

void netburst_fill_info(PmuInfo* p, bool available) {
    if (!available) {
        format_to(p->absent, sizeof p->absent,
                  "NetBurst processor without performance monitoring: IA32_MISC_ENABLE[7] (Performance Monitoring "
                  "Available) is 0");
        return;
    }
    p->kind = PmuKind::netburst;
    p->gp_mask = u32(low_mask(netburst::kCounters));
    p->gp_width = netburst::kCounterWidth;
    p->full_width_writes = true;
    p->dialect = EventDialect::netburst;
}

void put_netburst_summary(StrBuf& out, const PmuInfo& p) {
    out.printf("NetBurst ESCR/CCCR PMU: 18 counters (BPU_COUNTER0-3, MS_COUNTER0-3, FLAME_COUNTER0-3, "
               "IQ_COUNTER0-5; %u bits), reads with %s",
               p.gp_width, p.method == CounterMethod::rdpmc ? "RDPMC" : "RDMSR");
}

Status netburst_allocate(const PmuInfo& info, const Event* events, usize n, Allocation* out) {
    out->groups.clear();
    out->group_of.clear();
    u32 model = info.caps.netburst_model;
    Vec<u32> allowed;
    allowed.resize(n);
    for (usize i = 0; i < n; ++i) {
        const Event& e = events[i];
        if (!e.needs_counter()) continue;
        if (info.kind != PmuKind::netburst)
            return event_unsupported(e, "cannot be counted: %s", info.absent[0] ? info.absent : "no NetBurst PMU");
        if (e.dialect != EventDialect::netburst || e.netburst.event < 0 || e.netburst.event >= netburst::kEventCount)
            return event_unsupported(e, "is not a NetBurst event; this CPU has the NetBurst ESCR/CCCR PMU (see 'pmulab "
                                        "events')");
        allowed[i] = event_counters_nb(e, model);
        if (!allowed[i]) {
            if (e.pinned_counter >= 0)
                return event_unsupported(e, "is pinned to counter %d, which none of its ESCRs feeds", e.pinned_counter);
            return event_unsupported(e, "has no ESCR on this model");
        }
    }
    // Groups in input order: an event joins the first group where all still fit.
    struct G {
        u8 ev[netburst::kCounters];
        u32 al[netburst::kCounters];
        u32 idx[netburst::kCounters];
        netburst::Placement pl[netburst::kCounters];
        unsigned count = 0;
        bool alone = false;
    };
    Vec<G> gs;
    Vec<u32> group_of;
    group_of.resize(n);
    for (usize i = 0; i < n; ++i) {
        const Event& e = events[i];
        if (!e.needs_counter()) continue;
        bool placed = false;
        for (usize g = 0; g < gs.size() && !placed; ++g) {
            G& x = gs[g];
            if (x.alone || (e.taken_alone && x.count) || x.count >= netburst::kCounters) continue;
            x.ev[x.count] = u8(e.netburst.event);
            x.al[x.count] = allowed[i];
            netburst::Placement pl[netburst::kCounters];
            if (netburst::place_events(x.ev, x.al, x.count + 1, model, pl)) {
                for (unsigned k = 0; k <= x.count; ++k) x.pl[k] = pl[k];
                x.idx[x.count++] = u32(i);
                group_of[i] = u32(g);
                placed = true;
            }
        }
        if (!placed) {
            G& x = gs.emplace();
            x.ev[0] = u8(e.netburst.event);
            x.al[0] = allowed[i];
            if (!netburst::place_events(x.ev, x.al, 1, model, x.pl))
                return Error::make(Errc::internal, "event '%s' does not fit an empty counter group", e.name);
            x.idx[0] = u32(i);
            x.count = 1;
            x.alone = e.taken_alone;
            group_of[i] = u32(gs.size() - 1);
        }
    }
    for (usize i = 0; i < n; ++i)
        if (!events[i].needs_counter()) {
            if (gs.empty()) gs.emplace();
            group_of[i] = 0;
        }
    for (usize g = 0; g < gs.size(); ++g) {
        CounterGroup& cg = out->groups.emplace();
        cg.taken_alone = gs[g].alone;
        for (usize i = 0; i < n; ++i) {
            if (group_of[i] != g) continue;
            Assignment a;
            a.event = u32(i);
            for (unsigned k = 0; k < gs[g].count; ++k)
                if (gs[g].idx[k] == i) {
                    a.kind = CounterKind::gp;
                    a.index = gs[g].pl[k].counter;
                    a.escr = int8_t(gs[g].pl[k].escr);
                    cg.gp_mask |= 1u << a.index;
                }
            cg.events.push(a);
        }
    }
    out->group_of = move(group_of);
    return ok_status();
}

// ---- the backend ----

void NetBurstPmu::init(Hw* hw, const PmuInfo& info) {
    *this = NetBurstPmu();
    hw_ = hw;
    info_ = info;
    ledger_.bind(hw);
    // With Hyper-Threading the two logical processors of a core share the ESCRs; the
    // second one (initial APIC ID bit 0) uses the T1 fields.
    if (info.caps.netburst_ht) thread_ = (hw->cpuid(1, 0).ebx >> 24) & 1;
}

Status NetBurstPmu::allocate(const Event* events, usize n, Allocation* out) const {
    return netburst_allocate(info_, events, n, out);
}

u64 NetBurstPmu::escr_value(const Event& e, unsigned thread) {
    const netburst::EventDef& d = netburst::kEvents[e.netburst.event];
    Escr v;
    v.set_event_select(d.event_select).set_event_mask(e.netburst.mask);
    if (thread == 0) v.set_t0_os(e.os).set_t0_usr(e.usr);
    else v.set_t1_os(e.os).set_t1_usr(e.usr);
    return v.raw();
}

CounterAccess NetBurstPmu::access(CounterKind kind, u8 index) const {
    CounterAccess a;
    if (kind != CounterKind::gp) {
        a.kind = CounterAccess::rdtsc;
        a.width = 64;
        return a;
    }
    bool rdpmc = info_.method == CounterMethod::rdpmc;
    a.kind = rdpmc ? CounterAccess::rdpmc : CounterAccess::rdmsr;
    a.index = rdpmc ? index : netburst::counter_msr(index);  // full 40-bit read (ECX[31] clear)
    a.width = netburst::kCounterWidth;
    return a;
}

void NetBurstPmu::control_writes(const Event* events, const CounterGroup& g, PmuWriteList* start,
                                 PmuWriteList* stop) const {
    start->count = stop->count = 0;
    for (const Assignment& as : g.events) {
        if (as.kind != CounterKind::gp || as.escr < 0) continue;
        Cccr c;
        c.set_escr_select(netburst::kEscrs[as.escr].select).set_active_thread(Cccr::kActiveThreadAny);
        start->add(netburst::cccr_msr(as.index), Cccr(c).set_enable().raw());
        stop->add(netburst::cccr_msr(as.index), c.raw());
    }
}

Status NetBurstPmu::save(const PmuTouch& t) {
    if (!hw_) return Error::make(Errc::internal, "PMU backend used before init");
    if (ledger_.armed()) return Error::make(Errc::internal, "PMU state saved twice without a restore in between");
    if ((t.gp & ~info_.gp_mask) || t.fixed || t.aux_count)
        return Error::make(Errc::internal, "registers requested that the NetBurst PMU does not have");
    touched_ = t.gp;
    programmed_ = false;
    // Restore order (ledger phases): the touched CCCRs disabled first, each read back
    // before (the hardware may have set OVF since); counters pmulab wrote; ESCRs; CCCRs
    // exactly as they were, last.
    ledger_.begin();
    for (unsigned i = 0; i < kN; ++i) {
        if (!has(t.gp, i)) continue;
        MsrReg cccr = MsrReg::control(netburst::cccr_msr(i)).disabled_by(Cccr::enable_field::mask).reread_first();
        PMULAB_TRY(ledger_.save(cccr));
        PMULAB_TRY(ledger_.save(MsrReg::counter(netburst::counter_msr(i)).gated_by(netburst::cccr_msr(i))));
    }
    // The ESCRs are shared by both logical processors of a Hyper-Threading core: every one
    // of the model is saved (the T0 and T1 fields come back together).
    if (t.gp)
        for (unsigned i = 0; i < netburst::kEscrCount; ++i)
            if (netburst::escr_exists(netburst::kEscrs[i], info_.caps.netburst_model))
                PMULAB_TRY(ledger_.save(MsrReg::event_select(netburst::kEscrs[i].msr)));
    ledger_.arm();
    return ok_status();
}

Status NetBurstPmu::program(const Event* events, const CounterGroup& g, const u64* presets) {
    if (!ledger_.armed()) return Error::make(Errc::internal, "PMU programmed before its state was saved");
    if (g.gp_mask & ~touched_)
        return Error::make(Errc::internal, "counter group uses counters whose state was not saved");
    u64 mask = regs::counter_mask(netburst::kCounterWidth);
    for (usize k = 0; k < g.events.size(); ++k) {
        const Assignment& as = g.events[k];
        if (as.kind == CounterKind::none) continue;
        if (as.kind != CounterKind::gp || as.escr < 0 || !ledger_.has(netburst::kEscrs[as.escr].msr))
            return Error::make(Errc::internal, "NetBurst assignment without a usable ESCR");
        u64 p = presets ? presets[k] : 0;
        if (p & ~mask)
            return Error::make(Errc::invalid_argument, "preset 0x%llX does not fit the 40-bit counter %s",
                               (unsigned long long)p, netburst::kCounterDefs[as.index].name);
    }
    programmed_ = false;
    group_ = g.gp_mask;
    auto fail = [&](const Status& s) -> Status {
        Error e = s.error();
        (void)restore();
        return e;
    };
    Status st = ok_status();
    for (unsigned i = 0; i < kN; ++i) {
        if (!has(touched_, i) || has(g.gp_mask, i) || ledger_.shadow(netburst::cccr_msr(i)) == 0) continue;
        st = write(netburst::cccr_msr(i), 0);
        if (!st.ok()) return fail(st);
    }
    const u64 en = Cccr::enable_field::mask;
    for (usize k = 0; k < g.events.size(); ++k) {
        const Assignment& as = g.events[k];
        if (as.kind != CounterKind::gp) continue;
        unsigned i = as.index;
        u64 cccr = ledger_.shadow(netburst::cccr_msr(i));
        if (cccr & en) {
            st = write(netburst::cccr_msr(i), cccr & ~en);
            if (!st.ok()) return fail(st);
        }
        st = write(netburst::counter_msr(i), presets ? presets[k] : 0);
        if (!st.ok()) return fail(st);
        st = write(netburst::kEscrs[as.escr].msr, escr_value(events[as.event], thread_));
        if (!st.ok()) return fail(st);
        Cccr c;
        c.set_escr_select(netburst::kEscrs[as.escr].select).set_active_thread(Cccr::kActiveThreadAny);
        group_cccr_[i] = c.raw();
        st = write(netburst::cccr_msr(i), c.raw());
        if (!st.ok()) return fail(st);
    }
    programmed_ = true;
    started_here_ = false;
    return ok_status();
}

// CCCR.OVF is the only record of an overflow and a WRMSR of the CCCR replaces it: start
// and stop read the CCCR and keep the flag the hardware set (a plain write of the group's
// value, as stop did, cleared it and overflow() after stop() reported nothing).
Status NetBurstPmu::write_keep_ovf(unsigned i, u64 value) {
    Result<u64> cur = hw_->rdmsr(netburst::cccr_msr(i));
    if (!cur.ok()) return cur.error();
    return write(netburst::cccr_msr(i), Cccr(value).set_ovf(Cccr(cur.value()).ovf()).raw());
}

Status NetBurstPmu::start() {
    if (!programmed_) return Error::make(Errc::internal, "PMU started before a group was programmed");
    for (unsigned i = 0; i < kN; ++i)
        if (has(group_, i)) PMULAB_TRY(write_keep_ovf(i, Cccr(group_cccr_[i]).set_enable().raw()));
    started_here_ = true;
    return ok_status();
}

Status NetBurstPmu::stop() {
    if (!programmed_) return Error::make(Errc::internal, "PMU stopped before a group was programmed");
    for (unsigned i = 0; i < kN; ++i)
        if (has(group_, i)) PMULAB_TRY(write_keep_ovf(i, group_cccr_[i]));
    return ok_status();
}

Result<u64> NetBurstPmu::read(CounterKind kind, u8 index) {
    if (kind != CounterKind::gp || index >= kN) return absent_counter_error(kind, index);
    return perform_read(*hw_, access(kind, index));
}

// Generated code counts with the plain WRMSRs of control_writes (it cannot read-modify-
// write): its start and stop writes of the CCCR replace OVF, so after such a run a clear
// OVF proves nothing. The overflow is known only when start()/stop() (which keep OVF) did
// the counting since program(); otherwise it is reported unknown (a set OVF, which only
// the hardware can have set since, is still reported in gp).
Result<OverflowState> NetBurstPmu::overflow() {
    OverflowState o;
    o.known = started_here_;
    for (unsigned i = 0; i < kN; ++i) {
        if (!has(group_, i)) continue;
        Result<u64> r = hw_->rdmsr(netburst::cccr_msr(i));
        if (!r.ok()) return r.error();
        if (Cccr(r.value()).ovf()) o.gp |= 1u << i;
    }
    return o;
}

Status NetBurstPmu::clear_overflow() {
    for (unsigned i = 0; i < kN; ++i) {
        if (!has(group_, i)) continue;
        Result<u64> r = hw_->rdmsr(netburst::cccr_msr(i));
        if (!r.ok()) return r.error();
        if (Cccr(r.value()).ovf()) PMULAB_TRY(write(netburst::cccr_msr(i), Cccr(r.value()).set_ovf(false).raw()));
    }
    return ok_status();
}

Status NetBurstPmu::restore(RestoreReport* report) {
    programmed_ = false;
    return ledger_.restore(report);
}

}  // namespace pmulab
