#include <gtest/gtest.h>

#include <random>
#include <set>
#include <string>

#include "pmu/alloc.h"

using namespace pmulab;

namespace {

std::string S(const StrBuf& b) { return std::string(b.c_str(), b.size()); }

Vec<Event> events(const char* list) {
    Vec<Event> v;
    Status st = parse_event_list(list, &v);
    EXPECT_TRUE(st.ok()) << list << ": " << (st.ok() ? "" : st.error().msg);
    return v;
}

PmuCaps caps(u8 version, u8 gp, u8 fixed, u8 ebx_length = 7, u32 ebx = 0) {
    PmuCaps c;
    c.leaf_0a = true;
    c.version = version;
    c.gp_counters = gp;
    c.gp_width = 48;
    c.ebx_length = ebx_length;
    c.ebx = ebx;
    if (version >= 2) {
        c.fixed_counters = fixed;
        c.fixed_width = 48;
        c.fixed_effective = u32(low_mask(fixed));
    }
    return c;
}

// v5 with non-contiguous fixed counters: CPUID.0AH:ECX = 0b1001, EDX[4:0] = 0.
PmuCaps caps_v5_sparse_fixed() {
    PmuCaps c = caps(5, 8, 0, 8);
    c.fixed_mask = 0b1001;
    c.fixed_effective = 0b1001;
    return c;
}

// v6 with leaf 23H counter bitmaps: GP 0b11110011, fixed 0b111.
PmuCaps caps_v6_bitmap() {
    PmuCaps c = caps(6, 8, 3, 13);
    c.leaf_23 = true;
    c.leaf23_subleaves = 0b10;
    c.gp_bitmap = 0b11110011;
    c.fixed_bitmap = 0b111;
    return c;
}

// Hybrid parts: P-core (8 GP, fixed 0-3) and E-core (6 GP, fixed 0-2, no topdown slots).
PmuCaps caps_pcore() { return caps(5, 8, 4, 8); }
PmuCaps caps_ecore() { return caps(5, 6, 3, 8, 1u << kArchTopdownSlots); }

// Compact layout: "1: a@PMC0 b@FIXED_CTR1* | 2: c@PMC0" (* = GP fallback), events in input order.
std::string layout(const Vec<Event>& ev, const Allocation& a) {
    std::string out;
    for (usize g = 0; g < a.groups.size(); ++g) {
        if (g) out += " |";
        out += " " + std::to_string(g + 1) + ":";
        for (const Assignment& as : a.groups[g].events) {
            StrBuf c;
            put_counter_name(c, as.kind, as.index);
            out += std::string(" ") + ev[as.event].name + "@" + S(c) + (as.gp_fallback ? "*" : "");
        }
    }
    return out.empty() ? out : out.substr(1);
}

std::string alloc_layout(const char* list, const PmuCaps& c, u8 core_type = kCoreTypeNone) {
    Vec<Event> ev = events(list);
    Allocation a;
    Status st = allocate_counters(ev, c, &a, core_type);
    EXPECT_TRUE(st.ok()) << list << ": " << (st.ok() ? "" : st.error().msg);
    return layout(ev, a);
}

std::string alloc_err(const char* list, const PmuCaps& c, u8 core_type = kCoreTypeNone) {
    Vec<Event> ev = events(list);
    Allocation a;
    Status st = allocate_counters(ev, c, &a, core_type);
    EXPECT_FALSE(st.ok()) << list;
    EXPECT_TRUE(a.groups.empty());
    return st.ok() ? "" : st.error().msg;
}

// Every invariant an allocation must satisfy.
void check_invariants(const Vec<Event>& ev, const PmuCaps& c, const Allocation& a) {
    ASSERT_EQ(a.group_of.size(), ev.size());
    std::vector<int> seen(ev.size(), 0);
    for (usize g = 0; g < a.groups.size(); ++g) {
        const CounterGroup& grp = a.groups[g];
        std::set<std::pair<int, int>> used;
        u32 gp_mask = 0, fixed_mask = 0;
        int counter_events = 0;
        u32 prev = 0;
        for (usize k = 0; k < grp.events.size(); ++k) {
            const Assignment& as = grp.events[k];
            ASSERT_LT(as.event, ev.size());
            if (k) EXPECT_LT(prev, as.event) << "events of a group are in input order";
            prev = as.event;
            seen[as.event]++;
            EXPECT_EQ(a.group_of[as.event], g);
            EXPECT_EQ(a.find(as.event), &as);
            const Event& e = ev[as.event];
            if (as.kind == CounterKind::none) {
                EXPECT_EQ(e.kind, EventKind::tsc);
                EXPECT_EQ(g, 0u) << "tsc is in group 0";
                continue;
            }
            ++counter_events;
            EXPECT_TRUE(used.insert({int(as.kind), as.index}).second) << "counter used twice in a group";
            EventCounters cand = event_counters(e, c);
            if (as.kind == CounterKind::gp) {
                EXPECT_TRUE((cand.gp >> as.index) & 1) << e.name;
                EXPECT_EQ(as.gp_fallback, e.kind == EventKind::fixed);
                gp_mask |= 1u << as.index;
            } else {
                EXPECT_TRUE((cand.fixed >> as.index) & 1) << e.name;
                EXPECT_FALSE(as.gp_fallback);
                fixed_mask |= 1u << as.index;
            }
        }
        EXPECT_EQ(grp.gp_mask, gp_mask);
        EXPECT_EQ(grp.fixed_mask, fixed_mask);
        EXPECT_EQ(grp.global_ctrl().raw(), u64(gp_mask) | (u64(fixed_mask) << 32));
        if (grp.taken_alone) EXPECT_EQ(counter_events, 1) << "TakenAlone group " << g;
    }
    for (usize i = 0; i < ev.size(); ++i) EXPECT_EQ(seen[i], 1) << "event " << i << " in exactly one group";
}

}  // namespace

TEST(Alloc, V1HasNoFixedCounters) {
    EXPECT_EQ(alloc_layout("instructions,cycles,branches", caps(1, 2, 0)),
              "1: instructions@PMC0* cycles@PMC1* | 2: branches@PMC0");
}

TEST(Alloc, V2FixedAndGpSplit) {
    EXPECT_EQ(alloc_layout("instructions,cycles,ref-cycles,0E.01,C4.00,C5.00", caps(2, 2, 3)),
              "1: instructions@FIXED_CTR0 cycles@FIXED_CTR1 ref-cycles@FIXED_CTR2 0E.01@PMC0 C4.00@PMC1 | "
              "2: C5.00@PMC0");
}

TEST(Alloc, V3FourCountersFitInOneRun) {
    EXPECT_EQ(alloc_layout("0E.01,C4.00,C5.00,2E.41,tsc,cycles", caps(3, 4, 3)),
              "1: 0E.01@PMC0 C4.00@PMC1 C5.00@PMC2 2E.41@PMC3 tsc@TSC cycles@FIXED_CTR1");
}

TEST(Alloc, V4BusyFixedCounter) {
    // A second INST_RETIRED.ANY takes a GP counter with C0.00 (exact equivalent); a
    // second ref-cycles waits for a run of its own (3C.01 is not at the TSC rate).
    EXPECT_EQ(alloc_layout("instructions,INST_RETIRED.ANY,ref-cycles,ref-cycles", caps(4, 4, 3)),
              "1: instructions@FIXED_CTR0 INST_RETIRED.ANY@PMC0* ref-cycles@FIXED_CTR2 | 2: ref-cycles@FIXED_CTR2");
    // With the GP counters full, the second fixed event waits too.
    EXPECT_EQ(alloc_layout("instructions,INST_RETIRED.ANY,0E.01,0E.02,0E.04,0E.08", caps(4, 4, 3)),
              "1: instructions@FIXED_CTR0 0E.01@PMC0 0E.02@PMC1 0E.04@PMC2 0E.08@PMC3 | "
              "2: INST_RETIRED.ANY@FIXED_CTR0");
}

TEST(Alloc, V5NonContiguousFixedCounters) {
    Vec<Event> ev = events("INST_RETIRED.ANY,cycles,ref-cycles,TOPDOWN.SLOTS");
    Allocation a;
    ASSERT_TRUE(allocate_counters(ev, caps_v5_sparse_fixed(), &a).ok());
    EXPECT_EQ(layout(ev, a), "1: INST_RETIRED.ANY@FIXED_CTR0 cycles@PMC0* ref-cycles@PMC1* TOPDOWN.SLOTS@FIXED_CTR3");
    EXPECT_EQ(a.groups[0].global_ctrl().raw(), 0x0000000900000003ull);
    StrBuf t;
    render_allocation_text(t, ev.data(), ev.size(), a);
    EXPECT_EQ(S(t),
              "group 1/1: FIXED_CTR0 INST_RETIRED.ANY\n"
              "group 1/1: PMC0       cycles (3C.00; GP equivalent of fixed counter 1)\n"
              "group 1/1: PMC1       ref-cycles (3C.01; GP equivalent of fixed counter 2, counts at the reference "
              "clock, not at the TSC rate)\n"
              "group 1/1: FIXED_CTR3 TOPDOWN.SLOTS\n");
    check_invariants(ev, caps_v5_sparse_fixed(), a);
}

TEST(Alloc, V6GpBitmap) {
    EXPECT_EQ(alloc_layout("0E.01,0E.02,0E.04,0E.08,0E.10,0E.20,0E.40", caps_v6_bitmap()),
              "1: 0E.01@PMC0 0E.02@PMC1 0E.04@PMC4 0E.08@PMC5 0E.10@PMC6 0E.20@PMC7 | 2: 0E.40@PMC0");
    EXPECT_EQ(alloc_layout("0E.01.CTR=4,0E.02", caps_v6_bitmap()), "1: 0E.01.CTR=4@PMC4 0E.02@PMC0");
    EXPECT_EQ(alloc_err("0E.02,0E.01.CTR=2", caps_v6_bitmap()),
              "event '0E.01.CTR=2' is pinned to PMC2 (.CTR=2), but this CPU has PMC0,1,4-7");
}

TEST(Alloc, PinnedEventsArePlacedFirst) {
    EXPECT_EQ(alloc_layout("0E.01,D1.01.CTR=0,C4.00.CTR=0", caps(4, 4, 3)),
              "1: 0E.01@PMC1 D1.01.CTR=0@PMC0 | 2: C4.00.CTR=0@PMC0");
    EXPECT_EQ(alloc_err("0E.01.CTR=7", caps(4, 4, 3)),
              "event '0E.01.CTR=7' is pinned to PMC7 (.CTR=7), but this CPU has PMC0-3");
}

TEST(Alloc, AllowedMasksUseAugmentingPaths) {
    Vec<Event> ev = events("0E.01 A,0E.02 B,0E.04 C");
    ev[0].allowed_gp = 0b011;
    ev[1].allowed_gp = 0b110;
    ev[2].allowed_gp = 0b011;
    Allocation a;
    ASSERT_TRUE(allocate_counters(ev, caps(4, 4, 3), &a).ok());
    // Greedy would put A on PMC0, B on PMC1 and leave C without a counter; moving B to
    // PMC2 and A to PMC1 fits all three in one run.
    EXPECT_EQ(layout(ev, a), "1: A@PMC1 B@PMC2 C@PMC0");
    check_invariants(ev, caps(4, 4, 3), a);
    // Restricted events go first: D may only use PMC3.
    Vec<Event> ev2 = events("0E.01 X,0E.02 Y,0E.04 Z,0E.08 W,0E.10 D");
    ev2[4].allowed_gp = 0b1000;
    ASSERT_TRUE(allocate_counters(ev2, caps(4, 4, 3), &a).ok());
    EXPECT_EQ(layout(ev2, a), "1: X@PMC0 Y@PMC1 Z@PMC2 D@PMC3 | 2: W@PMC0");
    ev2[4].allowed_gp = 0xF0;
    Status st = allocate_counters(ev2, caps(4, 4, 3), &a);
    ASSERT_FALSE(st.ok());
    EXPECT_STREQ(st.error().msg, "event 'D' may only use PMC4-7, but this CPU has PMC0-3");
}

TEST(Alloc, TakenAloneGetsItsOwnGroup) {
    Vec<Event> ev = events("C6.01.MSR_PF=0x11 FE,0E.01,B7.01.MSR_RSP0=0x10001 OCR,tsc,cycles");
    Allocation a;
    ASSERT_TRUE(allocate_counters(ev, caps(4, 4, 3), &a).ok());
    EXPECT_EQ(layout(ev, a), "1: 0E.01@PMC0 tsc@TSC cycles@FIXED_CTR1 | 2: FE@PMC0 | 3: OCR@PMC0");
    EXPECT_FALSE(a.groups[0].taken_alone);
    EXPECT_TRUE(a.groups[1].taken_alone);
    EXPECT_TRUE(a.groups[2].taken_alone);
    check_invariants(ev, caps(4, 4, 3), a);
    // Only TakenAlone events and tsc: tsc joins the first group.
    EXPECT_EQ(alloc_layout("C6.01.TakenAlone,tsc", caps(4, 4, 3)), "1: C6.01.TakenAlone@PMC0 tsc@TSC");
}

TEST(Alloc, HybridCores) {
    const char* list = "0E.01,0E.02,0E.04,0E.08,0E.10,0E.20,0E.40,instructions";
    EXPECT_EQ(alloc_layout(list, caps_pcore(), kCoreTypeCore),
              "1: 0E.01@PMC0 0E.02@PMC1 0E.04@PMC2 0E.08@PMC3 0E.10@PMC4 0E.20@PMC5 0E.40@PMC6 "
              "instructions@FIXED_CTR0");
    EXPECT_EQ(alloc_layout(list, caps_ecore(), kCoreTypeAtom),
              "1: 0E.01@PMC0 0E.02@PMC1 0E.04@PMC2 0E.08@PMC3 0E.10@PMC4 0E.20@PMC5 instructions@FIXED_CTR0 | "
              "2: 0E.40@PMC0");
    EXPECT_EQ(alloc_layout("TOPDOWN.SLOTS", caps_pcore(), kCoreTypeCore), "1: TOPDOWN.SLOTS@FIXED_CTR3");
    EXPECT_EQ(alloc_err("TOPDOWN.SLOTS", caps_ecore(), kCoreTypeAtom),
              "event 'TOPDOWN.SLOTS' cannot be counted: fixed counter 3 is absent (this CPU has FIXED_CTR0-2) and "
              "its GP equivalent A4.01 is unavailable: CPUID.0AH:EBX[7] = 1");
    EXPECT_EQ(alloc_layout("cpu_atom/event=0xc0/,cpu/event=0x3c/", caps_ecore(), kCoreTypeAtom),
              "1: cpu_atom/event=0xc0/@PMC0 cpu/event=0x3c/@PMC1");
    EXPECT_EQ(alloc_err("cpu/event=0x3c/,cpu_atom/event=0xc0/", caps_pcore(), kCoreTypeCore),
              "event 'cpu_atom/event=0xc0/' is for PMU cpu_atom, but this logical processor is a P-core (cpu_core)");
}

TEST(Alloc, NoPmu) {
    // QEMU TCG reports CPUID.0AH = 0: only tsc can be measured.
    EXPECT_EQ(alloc_layout("tsc", PmuCaps{}), "1: tsc@TSC");
    EXPECT_EQ(alloc_err("tsc,cycles", PmuCaps{}),
              "event 'cycles' cannot be counted: no architectural performance monitoring (CPUID.0AH:EAX[7:0] = 0)");
    Vec<Event> none;
    Allocation a;
    ASSERT_TRUE(allocate_counters(none, caps(4, 4, 3), &a).ok());
    EXPECT_EQ(a.groups.size(), 0u);
}

TEST(Alloc, ErrorClearsPreviousResult) {
    Vec<Event> ev = events("0E.01");
    Allocation a;
    ASSERT_TRUE(allocate_counters(ev, caps(4, 4, 3), &a).ok());
    EXPECT_EQ(a.groups.size(), 1u);
    Vec<Event> bad = events("0E.01.CTR=9");
    EXPECT_FALSE(allocate_counters(bad, caps(4, 4, 3), &a).ok());
    EXPECT_EQ(a.groups.size(), 0u);
    EXPECT_EQ(a.group_of.size(), 0u);
}

TEST(Alloc, TextAndJson) {
    Vec<Event> ev = events("0E.01 UOPS_ISSUED.ANY;cycles:u;C6.01.MSR_PF=0x11 FE;tsc");
    Allocation a;
    ASSERT_TRUE(allocate_counters(ev, caps(4, 4, 3), &a).ok());
    StrBuf t;
    render_allocation_text(t, ev.data(), ev.size(), a);
    EXPECT_EQ(S(t), "group 1/2: PMC0       UOPS_ISSUED.ANY (0E.01)\n"
                    "group 1/2: FIXED_CTR1 cycles:u (USR only)\n"
                    "group 1/2: TSC        tsc\n"
                    "group 2/2: PMC0       FE (C6.01.MSR_PF=0x11.TakenAlone)\n");
    StrBuf j;
    JsonWriter w(j);
    w.begin_object();
    write_allocation_json(w, ev.data(), ev.size(), a);
    w.end_object();
    EXPECT_EQ(S(j),
              "{\"groups\":2,\"allocation\":["
              "{\"event\":\"UOPS_ISSUED.ANY\",\"group\":0,\"counter\":\"PMC0\",\"kind\":\"gp\",\"index\":0,"
              "\"fallback\":false},"
              "{\"event\":\"cycles:u\",\"group\":0,\"counter\":\"FIXED_CTR1\",\"kind\":\"fixed\",\"index\":1,"
              "\"fallback\":false},"
              "{\"event\":\"FE\",\"group\":1,\"counter\":\"PMC0\",\"kind\":\"gp\",\"index\":0,\"fallback\":false},"
              "{\"event\":\"tsc\",\"group\":0,\"counter\":\"TSC\",\"kind\":\"none\",\"index\":0,\"fallback\":false}"
              "]}");
    StrBuf one;
    JsonWriter w1(one);
    w1.begin_object();
    write_assignment_json(w1, 0, *a.find(1));
    w1.end_object();
    EXPECT_EQ(S(one), "{\"group\":0,\"counter\":\"FIXED_CTR1\",\"kind\":\"fixed\",\"index\":1,\"fallback\":false}");
    EXPECT_EQ(a.find(99), nullptr);
}

TEST(Alloc, RandomSetsKeepInvariantsAndAreDeterministic) {
    const char* pool[] = {"instructions",
                          "INST_RETIRED.ANY",
                          "cycles",
                          "ref-cycles",
                          "TOPDOWN.SLOTS",
                          "branches",
                          "branch-misses",
                          "0E.01",
                          "0E.01.CTR=0",
                          "0E.02.CTR=1",
                          "0E.04.CTR=3",
                          "C6.01.TakenAlone",
                          "B7.01.MSR_RSP0=1",
                          "tsc",
                          "A3.05.CMSK=5",
                          "D1.01",
                          "D1.02",
                          "D1.04",
                          "INST_RETIRED.ANY_P",
                          "cycles:u"};
    const PmuCaps all_caps[] = {caps(2, 2, 3, 8), caps(3, 4, 3, 8), caps(4, 8, 3, 8), caps_v5_sparse_fixed(),
                                caps_pcore()};
    std::mt19937 rng(12345);
    for (int iter = 0; iter < 400; ++iter) {
        const PmuCaps& c = all_caps[iter % 5];
        std::string list;
        int n = 1 + int(rng() % 24);
        for (int k = 0; k < n; ++k) {
            const char* p = pool[rng() % (sizeof pool / sizeof pool[0])];
            // TOPDOWN.SLOTS and pins beyond the GP counters are impossible on some caps.
            if (std::string(p) == "TOPDOWN.SLOTS" && !((regs::fixed_counters(c) >> 3) & 1)) continue;
            if (std::string(p).find("CTR=3") != std::string::npos && !((regs::gp_counters(c) >> 3) & 1)) continue;
            if (!list.empty()) list += ";";
            list += p;
        }
        if (list.empty()) continue;
        Vec<Event> ev = events(list.c_str());
        Allocation a, b;
        Status st = allocate_counters(ev, c, &a);
        ASSERT_TRUE(st.ok()) << list << ": " << st.error().msg;
        check_invariants(ev, c, a);
        ASSERT_TRUE(allocate_counters(ev, c, &b).ok());
        EXPECT_EQ(layout(ev, a), layout(ev, b)) << list;
        // A group is only opened for an event that fits nowhere else: never more groups
        // than counter events.
        usize counter_events = 0;
        for (const Event& e : ev) counter_events += e.needs_counter();
        EXPECT_LE(a.groups.size(), counter_events ? counter_events : 1);
    }
}
