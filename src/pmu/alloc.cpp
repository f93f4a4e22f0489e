#include "pmu/alloc.h"

namespace pmulab {

namespace {

// Counter slots share the IA32_PERF_GLOBAL_CTRL layout: PMCi at bit i, FIXED_CTRi at 32+i.
constexpr unsigned kFixedSlot = regs::PerfGlobalCtrl::kFixedBase;
constexpr unsigned kSlots = 64;

struct Cand {
    u64 slots = 0;  // candidate counters
    u64 pref = 0;   // preferred among them (the fixed counter of a fixed event)
    bool counter = false;
};

struct GroupState {
    int32_t owner[kSlots];
    u32 count = 0;       // counter events
    bool alone = false;  // holds a TakenAlone event
    GroupState() {
        for (int32_t& o : owner) o = -1;
    }
    u64 occupied() const {
        u64 m = 0;
        for (unsigned s = 0; s < kSlots; ++s)
            if (owner[s] >= 0) m |= u64(1) << s;
        return m;
    }
};

unsigned lowest(u64 m) {
    unsigned i = 0;
    while (!((m >> i) & 1)) ++i;
    return i;
}

// Kuhn's augmenting path: gives event `ev` a slot, moving already placed events to
// other candidate slots when that makes room. Preferred slots are tried first, then
// the others in ascending order.
bool augment(GroupState& g, const Vec<Cand>& cand, u32 ev, u64* visited) {
    const Cand& c = cand[ev];
    u64 order[2] = {c.slots & c.pref, c.slots & ~c.pref};
    for (u64 set : order) {
        for (; set; set &= set - 1) {
            unsigned s = lowest(set);
            if (*visited & (u64(1) << s)) continue;
            *visited |= u64(1) << s;
            int32_t o = g.owner[s];
            if (o < 0 || augment(g, cand, u32(o), visited)) {
                g.owner[s] = int32_t(ev);
                return true;
            }
        }
    }
    return false;
}

bool place(GroupState& g, const Vec<Cand>& cand, u32 ev) {
    const Cand& c = cand[ev];
    u64 free = c.slots & ~g.occupied();
    if (free) {
        u64 pref_free = free & c.pref;
        g.owner[lowest(pref_free ? pref_free : free)] = int32_t(ev);
        return true;
    }
    u64 visited = 0;
    return augment(g, cand, ev, &visited);
}

}  // namespace

regs::PerfGlobalCtrl CounterGroup::global_ctrl() const {
    return regs::PerfGlobalCtrl(u64(gp_mask) | (u64(fixed_mask) << kFixedSlot));
}

const Assignment* Allocation::find(u32 event) const {
    if (event >= group_of.size() || group_of[event] >= groups.size()) return nullptr;
    for (const Assignment& a : groups[group_of[event]].events)
        if (a.event == event) return &a;
    return nullptr;
}

namespace {
Status place_all(const Event* events, usize n, Vec<Cand>& cand, Allocation* out);
}  // namespace

Status allocate_counters(const Event* events, usize n, const PmuCaps& caps, Allocation* out, u8 core_type) {
    out->groups.clear();
    out->group_of.clear();
    Vec<Cand> cand;
    cand.resize(n);
    for (usize i = 0; i < n; ++i) {
        const Event& e = events[i];
        if (!e.needs_counter()) continue;
        Result<EventRoute> r = check_event(e, caps, core_type);
        if (!r.ok()) return r.error();
        EventCounters ec = event_counters(e, caps);
        cand[i].counter = true;
        cand[i].slots = u64(ec.gp) | (u64(ec.fixed) << kFixedSlot);
        cand[i].pref = u64(ec.fixed) << kFixedSlot;
        if (!cand[i].slots)
            return Error::make(Errc::internal, "event '%s' passed the availability check but has no counter", e.name);
    }
    return place_all(events, n, cand, out);
}

Status place_counters(const Event* events, usize n, const EventCounters* counters, Allocation* out) {
    out->groups.clear();
    out->group_of.clear();
    Vec<Cand> cand;
    cand.resize(n);
    for (usize i = 0; i < n; ++i) {
        if (!events[i].needs_counter()) continue;
        cand[i].counter = true;
        cand[i].slots = u64(counters[i].gp) | (u64(counters[i].fixed) << kFixedSlot);
        cand[i].pref = u64(counters[i].fixed) << kFixedSlot;
        if (!cand[i].slots) return Error::make(Errc::internal, "event '%s' has no candidate counter", events[i].name);
    }
    return place_all(events, n, cand, out);
}

namespace {

// Most constrained first; TakenAlone events last (they open groups of their own).
Vec<u32> placement_order(const Event* events, usize n, const Vec<Cand>& cand) {
    Vec<u32> order;
    for (usize i = 0; i < n; ++i)
        if (cand[i].counter) order.push(u32(i));
    auto key_less = [&](u32 a, u32 b) {
        const Event& ea = events[a];
        const Event& eb = events[b];
        if (ea.taken_alone != eb.taken_alone) return !ea.taken_alone;
        bool pa = ea.pinned_counter >= 0, pb = eb.pinned_counter >= 0;
        if (pa != pb) return pa;
        unsigned ca = popcount64(cand[a].slots), cb = popcount64(cand[b].slots);
        if (ca != cb) return ca < cb;
        return a < b;
    };
    sort_small(order.data(), order.size(), key_less);
    return order;
}

// The counter of slot s (GLOBAL_CTRL layout) for event e.
Assignment slot_assignment(const Event& e, unsigned s) {
    Assignment a;
    if (s < kFixedSlot) {
        a.kind = CounterKind::gp;
        a.index = u8(s);
        a.gp_fallback = e.kind == EventKind::fixed;
    } else {
        a.kind = CounterKind::fixed;
        a.index = u8(s - kFixedSlot);
    }
    return a;
}

Status place_all(const Event* events, usize n, Vec<Cand>& cand, Allocation* out) {
    Vec<GroupState> gs;
    Vec<u32> group_of;
    group_of.resize(n);
    for (u32 ev : placement_order(events, n, cand)) {
        auto fits = [&](GroupState& g) {
            if (!place(g, cand, ev)) return false;
            ++g.count;
            return true;
        };
        if (!first_fit(gs, events[ev].taken_alone, fits, &group_of[ev]))
            return Error::make(Errc::internal, "event '%s' does not fit an empty counter group", events[ev].name);
    }
    Vec<Assignment> as;
    as.resize(n);
    Vec<bool> alone;
    for (const GroupState& g : gs) {
        alone.push(g.alone);
        for (unsigned s = 0; s < kSlots; ++s)
            if (g.owner[s] >= 0) as[u32(g.owner[s])] = slot_assignment(events[g.owner[s]], s);
    }
    emit_allocation(as, group_of, alone, out);
    return ok_status();
}

}  // namespace

void emit_allocation(Vec<Assignment>& as, Vec<u32>& group_of, Vec<bool>& alone, Allocation* out) {
    usize n = as.size();
    out->fixed_name = nullptr;  // Intel's names unless the family's allocate says otherwise
    for (usize i = 0; i < n; ++i) {
        if (as[i].kind != CounterKind::none) continue;
        if (alone.empty()) alone.push(false);
        group_of[i] = 0;
    }
    for (usize g = 0; g < alone.size(); ++g) {
        CounterGroup& cg = out->groups.emplace();
        cg.taken_alone = alone[g];
        for (usize i = 0; i < n; ++i) {
            if (group_of[i] != g) continue;
            Assignment a = as[i];
            a.event = u32(i);
            if (a.kind == CounterKind::gp) cg.gp_mask |= u32(1) << a.index;
            else if (a.kind == CounterKind::fixed) cg.fixed_mask |= u32(1) << a.index;
            cg.events.push(a);
        }
    }
    out->group_of = move(group_of);
}

const char* counter_kind_name(CounterKind k) {
    constexpr const char* kNames[] = {"gp", "fixed", "none"};  // CounterKind order
    return unsigned(k) < sizeof kNames / sizeof kNames[0] ? kNames[unsigned(k)] : "none";
}

void put_counter_name(StrBuf& out, CounterKind kind, u8 index, const char* (*fixed_name)(unsigned)) {
    switch (kind) {
        case CounterKind::gp: out.printf("PMC%u", unsigned(index)); break;
        case CounterKind::fixed:
            if (fixed_name) out.put(fixed_name(index));
            else out.printf("FIXED_CTR%u", unsigned(index));
            break;
        case CounterKind::none: out.put("TSC"); break;
    }
}

void render_allocation_text(StrBuf& out, const Event* events, usize n, const Allocation& a) {
    unsigned total = unsigned(a.groups.size());
    for (unsigned g = 0; g < total; ++g) {
        for (const Assignment& as : a.groups[g].events) {
            if (as.event >= n) continue;
            const Event& e = events[as.event];
            out.printf("group %u/%u: ", g + 1, total);
            usize col = out.size();
            put_counter_name(out, as.kind, as.index, a.fixed_name);
            out.pad_to(col, 10);
            out.put(' ');
            out.put(StrView(e.name));
            if (as.kind == CounterKind::gp) {
                Event gpe = e;
                gpe.kind = EventKind::programmable;
                out.put(" (");
                put_event_encoding(out, gpe);
                if (as.gp_fallback) {
                    out.printf("; GP equivalent of fixed counter %d", e.fixed_counter);
                    if (!e.gp_equivalent_exact) out.put(", counts at the reference clock, not at the TSC rate");
                }
                out.put(')');
            } else if (as.kind == CounterKind::fixed && e.usr != e.os) {
                out.put(e.usr ? " (USR only)" : " (OS only)");
            }
            out.put('\n');
        }
    }
}

void write_assignment_json(JsonWriter& w, u32 group, const Assignment& as, const char* (*fixed_name)(unsigned)) {
    StrBuf name;
    put_counter_name(name, as.kind, as.index, fixed_name);
    w.field_u("group", group);
    w.field("counter", name.view());
    w.field("kind", counter_kind_name(as.kind));
    w.field_u("index", as.index);
    w.field_b("fallback", as.gp_fallback);
}

void write_allocation_json(JsonWriter& w, const Event* events, usize n, const Allocation& a) {
    w.field_u("groups", a.groups.size());
    w.key("allocation").begin_array();
    for (usize i = 0; i < n; ++i) {
        const Assignment* as = a.find(u32(i));
        if (!as) continue;
        w.begin_object();
        w.field("event", events[i].name);
        write_assignment_json(w, a.group_of[i], *as, a.fixed_name);
        w.end_object();
    }
    w.end_array();
}

}  // namespace pmulab
