// The NetBurst ESCR/CCCR family (see netburst_pmu.h): the kNetBurstFamily description.
#include "pmu/pmu_family.h"

namespace pmulab {

using netburst::Cccr;
using netburst::Escr;

namespace {

constexpr unsigned kN = NetBurstPmuState::kN;

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

// ---- decode ----

bool netburst_claims(Vendor, const PmuCaps& c) { return c.netburst; }

void netburst_decode(const CpuProbe& probe, const CpuDecoded&, PmuInfo* p) {
    // IA32_MISC_ENABLE[7] "Performance Monitoring Available" (SDM Vol. 4 Table 2-2).
    const ProbeRead& me = probe.misc_enable;
    if (!me.ok) {
        format_to(p->absent, sizeof p->absent,
                  "NetBurst processor, but RDMSR IA32_MISC_ENABLE (0x1A0) failed (%s): whether performance "
                  "monitoring is available (bit 7) is unknown",
                  me.error.msg);
        return;
    }
    if (!((me.value >> netburst::kMiscEnablePerfMonAvailable) & 1)) {
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

// ---- planning ----

void netburst_summary(StrBuf& out, const PmuInfo& p) {
    out.printf("NetBurst ESCR/CCCR PMU: 18 counters (BPU_COUNTER0-3, MS_COUNTER0-3, FLAME_COUNTER0-3, "
               "IQ_COUNTER0-5; %u bits), reads with %s",
               p.gp_width, p.method == CounterMethod::rdpmc ? "RDPMC" : "RDMSR");
}

// The counters each event may use (allowed[i]; events without a counter: 0).
Status netburst_candidates(const PmuInfo& info, const Event* events, usize n, Vec<u32>* allowed) {
    allowed->resize(n);
    for (usize i = 0; i < n; ++i) {
        const Event& e = events[i];
        if (!e.needs_counter()) continue;
        if (info.kind != PmuKind::netburst)
            return event_unsupported(e, "cannot be counted: %s", info.absent[0] ? info.absent : "no NetBurst PMU");
        if (e.dialect != EventDialect::netburst || e.netburst.event < 0 || e.netburst.event >= netburst::kEventCount)
            return event_unsupported(e, "is not a NetBurst event; this CPU has the NetBurst ESCR/CCCR PMU (see 'pmulab "
                                        "events')");
        (*allowed)[i] = event_counters_nb(e, info.caps.netburst_model);
        if (!(*allowed)[i]) {
            if (e.pinned_counter >= 0)
                return event_unsupported(e, "is pinned to counter %d, which none of its ESCRs feeds", e.pinned_counter);
            return event_unsupported(e, "has no ESCR on this model");
        }
    }
    return ok_status();
}

// One group of events being formed, with a placement of all of them.
struct NbGroup {
    u8 ev[kN];
    u32 al[kN];
    u32 idx[kN];
    netburst::Placement pl[kN];
    unsigned count = 0;
    bool alone = false;
};

// Adds event i to x when all its events still find a counter and an ESCR.
bool join(NbGroup& x, const Event& e, u32 allowed, u32 i, u32 model) {
    if (x.count >= kN) return false;
    x.ev[x.count] = u8(e.netburst.event);
    x.al[x.count] = allowed;
    netburst::Placement pl[kN];
    if (!netburst::place_events(x.ev, x.al, x.count + 1, model, pl)) return false;
    for (unsigned k = 0; k <= x.count; ++k) x.pl[k] = pl[k];
    x.idx[x.count++] = i;
    return true;
}

// Groups in input order: an event joins the first group where all still fit.
Status netburst_allocate(const PmuInfo& info, const Event* events, usize n, Allocation* out) {
    out->groups.clear();
    out->group_of.clear();
    Vec<u32> allowed;
    PMULAB_TRY(netburst_candidates(info, events, n, &allowed));
    Vec<NbGroup> gs;
    Vec<u32> group_of;
    group_of.resize(n);
    for (usize i = 0; i < n; ++i) {
        const Event& e = events[i];
        if (!e.needs_counter()) continue;
        auto fits = [&](NbGroup& x) { return join(x, e, allowed[i], u32(i), info.caps.netburst_model); };
        if (!first_fit(gs, e.taken_alone, fits, &group_of[i]))
            return Error::make(Errc::internal, "event '%s' does not fit an empty counter group", e.name);
    }
    Vec<Assignment> as;
    as.resize(n);
    Vec<bool> alone;
    for (const NbGroup& x : gs) {
        alone.push(x.alone);
        for (unsigned k = 0; k < x.count; ++k) {
            Assignment& a = as[x.idx[k]];
            a.kind = CounterKind::gp;
            a.index = x.pl[k].counter;
            a.escr = int8_t(x.pl[k].escr);
        }
    }
    emit_allocation(as, group_of, alone, out);
    return ok_status();
}

// The ESCR value of an event for logical processor `thread` (0/1).
u64 escr_value(const Event& e, unsigned thread) {
    const netburst::EventDef& d = netburst::kEvents[e.netburst.event];
    Escr v;
    v.set_event_select(d.event_select).set_event_mask(e.netburst.mask);
    if (thread == 0) v.set_t0_os(e.os).set_t0_usr(e.usr);
    else v.set_t1_os(e.os).set_t1_usr(e.usr);
    return v.raw();
}

// The CCCR of a counter fed by ESCR `escr` (ENABLE clear).
Cccr cccr_value(int escr) {
    Cccr c;
    c.set_escr_select(netburst::kEscrs[escr].select).set_active_thread(Cccr::kActiveThreadAny);
    return c;
}

CounterAccess netburst_access(const PmuInfo& info, CounterKind kind, u8 index) {
    CounterAccess a;
    if (kind != CounterKind::gp) {
        a.kind = CounterAccess::rdtsc;
        a.width = 64;
        return a;
    }
    bool rdpmc = info.method == CounterMethod::rdpmc;
    a.kind = rdpmc ? CounterAccess::rdpmc : CounterAccess::rdmsr;
    a.index = rdpmc ? index : netburst::counter_msr(index);  // full 40-bit read (ECX[31] clear)
    a.width = netburst::kCounterWidth;
    return a;
}

void netburst_control_writes(const PmuInfo&, const Event*, const CounterGroup& g, PmuWriteList* start,
                             PmuWriteList* stop) {
    for (const Assignment& as : g.events) {
        if (as.kind != CounterKind::gp || as.escr < 0) continue;
        Cccr c = cccr_value(as.escr);
        start->add(netburst::cccr_msr(as.index), Cccr(c).set_enable().raw());
        stop->add(netburst::cccr_msr(as.index), c.raw());
    }
}

// ---- on the CPU ----

void netburst_bind(PmuCore& core) {
    // With Hyper-Threading the two logical processors of a core share the ESCRs; the
    // second one (initial APIC ID bit 0) uses the T1 fields. Planning (no Hw) needs no
    // thread: it writes no ESCR.
    if (core.info.caps.netburst_ht && core.hw) core.netburst.thread = (core.hw->cpuid(1, 0).ebx >> 24) & 1;
}

// Restore order (ledger phases): the touched CCCRs disabled first, each read back
// before (the hardware may have set OVF since); counters pmulab wrote; ESCRs; CCCRs
// exactly as they were, last.
Status netburst_save(PmuCore& core, const PmuTouch& t) {
    if ((t.gp & ~core.info.gp_mask) || t.fixed || t.aux_count)
        return Error::make(Errc::internal, "registers requested that the NetBurst PMU does not have");
    for (unsigned i = 0; i < kN; ++i) {
        if (!has_bit(t.gp, i)) continue;
        MsrReg cccr = MsrReg::control(netburst::cccr_msr(i)).disabled_by(Cccr::enable_field::mask).reread_first();
        PMULAB_TRY(core.ledger.save(cccr));
        PMULAB_TRY(core.ledger.save(MsrReg::counter(netburst::counter_msr(i)).gated_by(netburst::cccr_msr(i))));
    }
    // The ESCRs are shared by both logical processors of a Hyper-Threading core: every one
    // of the model is saved (the T0 and T1 fields come back together).
    if (t.gp)
        for (unsigned i = 0; i < netburst::kEscrCount; ++i)
            if (netburst::escr_exists(netburst::kEscrs[i], core.info.caps.netburst_model))
                PMULAB_TRY(core.ledger.save(MsrReg::event_select(netburst::kEscrs[i].msr)));
    return ok_status();
}

Status netburst_check_presets(const PmuCore& core, const Event*, const CounterGroup& g, const u64* presets) {
    u64 mask = regs::counter_mask(netburst::kCounterWidth);
    for (usize k = 0; k < g.events.size(); ++k) {
        const Assignment& as = g.events[k];
        if (as.kind == CounterKind::none) continue;
        if (as.kind != CounterKind::gp || as.escr < 0 || !core.ledger.has(netburst::kEscrs[as.escr].msr))
            return Error::make(Errc::internal, "NetBurst assignment without a usable ESCR");
        u64 p = presets ? presets[k] : 0;
        if (p & ~mask)
            return Error::make(Errc::invalid_argument, "preset 0x%llX does not fit the 40-bit counter %s",
                               (unsigned long long)p, netburst::kCounterDefs[as.index].name);
    }
    return ok_status();
}

Status netburst_program(PmuCore& core, const Event* events, const CounterGroup& g, const u64* presets) {
    for (unsigned i = 0; i < kN; ++i) {
        if (!has_bit(core.touched_gp, i) || has_bit(g.gp_mask, i) || core.ledger.shadow(netburst::cccr_msr(i)) == 0)
            continue;
        PMULAB_TRY(core.write(netburst::cccr_msr(i), 0));
    }
    const u64 en = Cccr::enable_field::mask;
    for (usize k = 0; k < g.events.size(); ++k) {
        const Assignment& as = g.events[k];
        if (as.kind != CounterKind::gp) continue;
        unsigned i = as.index;
        u64 cccr = core.ledger.shadow(netburst::cccr_msr(i));
        if (cccr & en) PMULAB_TRY(core.write(netburst::cccr_msr(i), cccr & ~en));
        PMULAB_TRY(core.write(netburst::counter_msr(i), presets ? presets[k] : 0));
        PMULAB_TRY(core.write(netburst::kEscrs[as.escr].msr, escr_value(events[as.event], core.netburst.thread)));
        core.netburst.group_cccr[i] = cccr_value(as.escr).raw();
        PMULAB_TRY(core.write(netburst::cccr_msr(i), core.netburst.group_cccr[i]));
    }
    core.netburst.started_here = false;
    return ok_status();
}

// CCCR.OVF is the only record of an overflow and a WRMSR of the CCCR replaces it: start
// and stop read the CCCR and keep the flag the hardware set (a plain write of the group's
// value, as stop did, cleared it and overflow() after stop() reported nothing).
Status write_keep_ovf(PmuCore& core, unsigned i, u64 value) {
    Result<u64> cur = core.hw->rdmsr(netburst::cccr_msr(i));
    if (!cur.ok()) return cur.error();
    return core.write(netburst::cccr_msr(i), Cccr(value).set_ovf(Cccr(cur.value()).ovf()).raw());
}

Status netburst_start(PmuCore& core) {
    for (unsigned i = 0; i < kN; ++i)
        if (has_bit(core.group_gp, i))
            PMULAB_TRY(write_keep_ovf(core, i, Cccr(core.netburst.group_cccr[i]).set_enable().raw()));
    core.netburst.started_here = true;
    return ok_status();
}

Status netburst_stop(PmuCore& core) {
    for (unsigned i = 0; i < kN; ++i)
        if (has_bit(core.group_gp, i)) PMULAB_TRY(write_keep_ovf(core, i, core.netburst.group_cccr[i]));
    return ok_status();
}

// Generated code counts with the plain WRMSRs of control_writes (it cannot read-modify-
// write): its start and stop writes of the CCCR replace OVF, so after such a run a clear
// OVF proves nothing. The overflow is known only when start()/stop() (which keep OVF) did
// the counting since program(); otherwise it is reported unknown (a set OVF, which only
// the hardware can have set since, is still reported in gp).
Result<OverflowState> netburst_overflow(PmuCore& core) {
    OverflowState o;
    o.known = core.netburst.started_here;
    for (unsigned i = 0; i < kN; ++i) {
        if (!has_bit(core.group_gp, i)) continue;
        Result<u64> r = core.hw->rdmsr(netburst::cccr_msr(i));
        if (!r.ok()) return r.error();
        if (Cccr(r.value()).ovf()) o.gp |= 1u << i;
    }
    return o;
}

Status netburst_clear_overflow(PmuCore& core) {
    for (unsigned i = 0; i < kN; ++i) {
        if (!has_bit(core.group_gp, i)) continue;
        Result<u64> r = core.hw->rdmsr(netburst::cccr_msr(i));
        if (!r.ok()) return r.error();
        if (Cccr(r.value()).ovf()) PMULAB_TRY(core.write(netburst::cccr_msr(i), Cccr(r.value()).set_ovf(false).raw()));
    }
    return ok_status();
}

}  // namespace

extern const PmuFamily kNetBurstFamily = {
    .kind = PmuKind::netburst,
    .name = "netburst",
    .rdpmc_fixed = false,
    .claims = netburst_claims,
    .decode = netburst_decode,
    .explain_absent = nullptr,
    .allocate = netburst_allocate,
    .summary = netburst_summary,
    .access = netburst_access,
    .control_writes = netburst_control_writes,
    .bind = netburst_bind,
    .save = netburst_save,
    .check_presets = netburst_check_presets,
    .program = netburst_program,
    .start = netburst_start,
    .stop = netburst_stop,
    .overflow = netburst_overflow,
    .clear_overflow = netburst_clear_overflow,
};

}  // namespace pmulab
