// Counter allocation: which counter measures which event, and in which run.
//
// Given a set of events (events.h) and a logical processor's PmuCaps, allocate_counters
// assigns every event to exactly one group; the events of a group are measured
// together in one run, the groups in successive runs (multiplexing by repetition, as
// nanoBench does, rather than by time slicing). Rules:
//
//  - tsc needs no counter; it is placed in group 0.
//  - A fixed-counter event goes to its fixed counter when the CPU has it
//    (PmuCaps::fixed_counter_mask()); when that counter is already taken in a group, or
//    absent, it goes to a free general-purpose counter with its GP-equivalent encoding
//    (Assignment::gp_fallback) if it has one.
//  - Other events go to free general-purpose counters (PmuCaps::gp_counter_mask(),
//    possibly non-contiguous under CPUID leaf 23H), restricted by `.CTR=n` pins and
//    Event::allowed_gp.
//  - A TakenAlone event is alone in its group (no other counter event; tsc aside).
//  - Placement is deterministic: events are placed most-constrained first (pinned, then
//    fewest candidate counters, then input order), each into the first group where it
//    fits, and within a group counters are matched by augmenting paths, so an event
//    only opens a new group when no reassignment within an existing group makes room.
//    Lowest free counter first.
//  - Events that cannot be counted on this CPU at all (check_event fails: pinned to a
//    counter that does not exist, unavailable architectural event, ...) fail the whole
//    allocation with that event's error, which names the counters that exist.
//
// The result lists, per group, the events in input order with the counter each uses.
#pragma once

#include "events/events.h"
#include "base/json.h"

namespace pmulab {

enum class CounterKind : u8 { gp, fixed, none };

struct Assignment {
    u32 event = 0;  // index into the events passed to allocate_counters
    CounterKind kind = CounterKind::none;
    u8 index = 0;              // PMCi / FIXED_CTRi
    bool gp_fallback = false;  // a fixed-counter event on a GP counter (its GP encoding)
    int8_t escr = -1;          // NetBurst: index in netburst::kEscrs of the ESCR feeding the counter
};

struct CounterGroup {
    Vec<Assignment> events;    // sorted by event index
    u32 gp_mask = 0;           // GP counters used (bit i = PMCi)
    u32 fixed_mask = 0;        // fixed counters used (bit i = FIXED_CTRi)
    bool taken_alone = false;  // holds a TakenAlone event
    // IA32_PERF_GLOBAL_CTRL value that enables exactly this group's counters.
    regs::PerfGlobalCtrl global_ctrl() const;
};

struct Allocation {
    Vec<CounterGroup> groups;
    // Per event (input order): its group and its assignment within it.
    Vec<u32> group_of;
    // The names of the family's fixed(-like) counters by index, set by its allocate hook
    // (AMD: IRPerfCount, APERF, MPERF); null: Intel's FIXED_CTRn.
    const char* (*fixed_name)(unsigned index) = nullptr;
    const Assignment* find(u32 event) const;
};

// Allocates counters for events[0..n) on a CPU with `caps` (core_type as in check_event).
// On error `out` is left empty.
Status allocate_counters(const Event* events, usize n, const PmuCaps& caps, Allocation* out,
                         u8 core_type = kCoreTypeNone);
inline Status allocate_counters(const Vec<Event>& events, const PmuCaps& caps, Allocation* out,
                                u8 core_type = kCoreTypeNone) {
    return allocate_counters(events.data(), events.size(), caps, out, core_type);
}

// The placement half of allocate_counters for backends that decide themselves which
// counters each event may use (AMD, NetBurst): counters[i] for every event that needs a
// counter (gp: programmable counters, fixed: fixed-like counters, preferred). The same
// grouping rules (TakenAlone, most constrained first, augmenting paths) apply.
Status place_counters(const Event* events, usize n, const EventCounters* counters, Allocation* out);

// The grouping rule every allocator shares (first fit in group order; a TakenAlone
// event opens a group of its own and nothing joins it): puts one event into the first
// group of `gs` where place(group) succeeds, else into a new one. place(G&) tries the
// placement and, when it fits, records it and counts the event in G::count. G has
// `count` (counter events) and `alone` (holds a TakenAlone event). False: the event does
// not fit an empty group either. *group: the group it joined.
template <typename G, typename Place> bool first_fit(Vec<G>& gs, bool taken_alone, Place&& place, u32* group) {
    for (usize g = 0; g < gs.size(); ++g) {
        G& x = gs[g];
        if (x.alone || (taken_alone && x.count > 0)) continue;
        if (place(x)) {
            *group = u32(g);
            return true;
        }
    }
    G& x = gs.emplace();
    x.alone = taken_alone;
    *group = u32(gs.size() - 1);
    return place(x);
}

// The common end of every allocation: as[i] is event i's counter (kind none for an
// event without one, such as 'tsc'; the event field is set here), group_of[i] its group
// (for events with a counter), alone[g] whether group g holds a TakenAlone event.
// Events without a counter join group 0 (opened when there is none); each group lists
// its events in input order.
void emit_allocation(Vec<Assignment>& as, Vec<u32>& group_of, Vec<bool>& alone, Allocation* out);

// "PMC3", "FIXED_CTR1", "TSC"; a fixed counter by `fixed_name` when given
// (Allocation::fixed_name: "IRPerfCount" on AMD).
void put_counter_name(StrBuf& out, CounterKind kind, u8 index, const char* (*fixed_name)(unsigned) = nullptr);
const char* counter_kind_name(CounterKind k);  // "gp", "fixed", "none"

// Text for pmulab to print, one line per event (groups in order, events in input order):
//   group 1/2: PMC0       UOPS_ISSUED.ANY (0E.01)
//   group 1/2: FIXED_CTR0 INST_RETIRED.ANY
//   group 1/2: PMC1       ref-cycles (3C.01; GP equivalent of fixed counter 2, counts at
//                         the reference clock, not at the TSC rate)     [one line]
//   group 1/2: TSC        tsc
//   group 2/2: PMC0       C6.01.MSR_PF=0x11.TakenAlone (C6.01.MSR_PF=0x11.TakenAlone)
// Fixed-counter events counting one privilege level only add " (USR only)"/" (OS only)".
void render_allocation_text(StrBuf& out, const Event* events, usize n, const Allocation& a);

// JSON fields for the current object:
//   "groups":N,"allocation":[{"group":0,"event":"NAME","counter":"PMC0","kind":"gp",
//   "index":0,"fallback":false},...]   (input order)
void write_allocation_json(JsonWriter& w, const Event* events, usize n, const Allocation& a);
// The fields of one event's placement, for per-event records:
//   "group":0,"counter":"PMC0","kind":"gp","index":0,"fallback":false
void write_assignment_json(JsonWriter& w, u32 group, const Assignment& as,
                           const char* (*fixed_name)(unsigned) = nullptr);

}  // namespace pmulab
