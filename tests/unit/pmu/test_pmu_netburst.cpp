// The NetBurst backend (pmu_netburst.h) against the simulated NetBurst PMU
// (sim_netburst.h): detection on the real Prescott snapshot, ESCR/counter placement
// checked against the model's own wiring table, the programming sequence (exact WRMSR
// lists, ESCR before CCCR enable, counters written while disabled), counts, overflow,
// exact save/restore (also when a WRMSR faults), Hyper-Threading, and the commands.
#include <gtest/gtest.h>

#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include "x86/netburst_regs.h"
#include "pmu/session.h"
#include "sim/sim_netburst.h"
#include "support/test_platform.h"

using namespace pmulab;
using sim::SimCpu;
using sim::SimMachine;
namespace nb = sim::nb;

namespace {

std::vector<std::string> writes(const SimCpu& c) {
    std::vector<std::string> out;
    for (const sim::LogEntry& e : c.writes()) {
        char b[64];
        std::snprintf(b, sizeof b, "0x%x=0x%llx%s", e.addr, (unsigned long long)e.value, e.vector ? " #GP" : "");
        out.push_back(b);
    }
    return out;
}

std::vector<std::string> list(const PmuWriteList& l) {
    std::vector<std::string> out;
    for (unsigned i = 0; i < l.count; ++i) {
        char b[64];
        std::snprintf(b, sizeof b, "0x%x=0x%llx", l.w[i].msr, (unsigned long long)l.w[i].value);
        out.push_back(b);
    }
    return out;
}

Vec<Event> ev(const char* spec) {
    Vec<Event> v;
    Status s = parse_event_list(StrView(spec), &v, EventDialect::netburst);
    EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error().msg);
    return v;
}

// The model's event for a pmulab NetBurst event id.
nb::Event model_event(int id) {
    switch (id) {
        case netburst::kGlobalPowerEvents: return nb::kGlobalPowerEvents;
        case netburst::kInstrRetired: return nb::kInstrRetired;
        case netburst::kUopsRetired: return nb::kUopsRetired;
        case netburst::kBranchRetired: return nb::kBranchRetired;
        case netburst::kMispredBranchRetired: return nb::kMispredBranchRetired;
    }
    ADD_FAILURE() << "unknown NetBurst event " << id;
    return nb::kInstrRetired;
}

// Every assignment uses an ESCR that exists on the model, selects the event's unit and
// is wired to the counter, with pmulab's select value; no counter or ESCR twice in a group.
void expect_placement_valid(const SimCpu& c, const Vec<Event>& e, const Allocation& a) {
    for (usize g = 0; g < a.groups.size(); ++g) {
        std::set<u32> ctrs, escrs;
        for (const Assignment& as : a.groups[g].events) {
            if (as.kind == CounterKind::none) continue;
            ASSERT_EQ(as.kind, CounterKind::gp);
            ASSERT_GE(as.escr, 0);
            const netburst::EscrDef& d = netburst::kEscrs[as.escr];
            const nb::EscrInfo* x = nb::escr_at(d.msr);
            ASSERT_NE(x, nullptr) << d.name;
            EXPECT_TRUE(c.netburst()->escr_exists(*x)) << d.name;
            EXPECT_TRUE((x->counters >> as.index) & 1) << d.name << " does not feed counter " << unsigned(as.index);
            EXPECT_EQ(x->select, d.select) << d.name;
            EXPECT_EQ(x->unit, model_event(e[as.event].netburst.event).unit) << e[as.event].name << " in " << d.name;
            EXPECT_TRUE(ctrs.insert(as.index).second) << "counter " << unsigned(as.index) << " twice in group " << g;
            EXPECT_TRUE(escrs.insert(d.msr).second) << d.name << " twice in group " << g;
        }
    }
}

std::string placement(const Allocation& a) {
    std::string s;
    for (usize g = 0; g < a.groups.size(); ++g)
        for (const Assignment& as : a.groups[g].events) {
            char b[80];
            std::snprintf(b, sizeof b, "%s%zu:e%u@%u/%s", s.empty() ? "" : " ", g, as.event, unsigned(as.index),
                          as.escr >= 0 ? netburst::kEscrs[as.escr].name : "-");
            s += b;
        }
    return s;
}

// Opens a session on the current CPU, allocates `spec`, saves; one session per test.
struct Session {
    PmuSession s;
    // Through the session's forwarding methods: the core is built without RTTI, so the
    // sanitizer's vptr check cannot follow virtual calls made from this (RTTI) file.
    PmuSession* b = &s;
    Vec<Event> e;
    Allocation a;
    void open(SimMachine& m, const char* spec) {
        s.open(m);
        ASSERT_NE(s.backend(), nullptr) << s.info().absent;
        e = ev(spec);
        Status st = b->allocate(e.data(), e.size(), &a);
        ASSERT_TRUE(st.ok()) << st.error().msg;
        Result<PmuTouch> t = touch_set(e.data(), e.size(), a);
        ASSERT_TRUE(t.ok());
        st = b->save(t.value());
        ASSERT_TRUE(st.ok()) << st.error().msg;
    }
    u64 read(usize event) {
        const Assignment* as = a.find(u32(event));
        EXPECT_NE(as, nullptr);
        Result<u64> r = b->read(as->kind, as->index);
        EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().msg);
        return r.ok() ? r.value() : ~u64(0);
    }
};

// Firmware leftovers restore must bring back: ESCRs pmulab will rewrite, a counter it
// will reuse, a CCCR with OVF set, and an enabled CCCR on a counter pmulab takes over.
void poke_leftovers(SimCpu& c) {
    c.poke(nb::CRU_ESCR0, nb::escr(0x01, nb::BOGUS, nb::OS));
    c.poke(nb::CRU_ESCR2, nb::escr(0x09, 0x3, nb::USR | nb::TAG_ENABLE | nb::tag_value(5)));
    c.poke(nb::FSB_ESCR0, nb::escr(0x17, 0x3, nb::OS | nb::USR));
    c.poke(nb::COUNTER0 + nb::IQ0, 0x1234);
    c.poke(nb::COUNTER0 + nb::IQ2, 0xFF00000000ull);
    c.poke(nb::CCCR0 + nb::IQ0, nb::escr_select(5) | nb::THREAD_ANY | nb::OVF);
    c.poke(nb::CCCR0 + nb::BPU0, nb::ENABLE | nb::escr_select(7) | nb::THREAD_ANY | nb::COMPARE | nb::threshold(2));
    c.poke(nb::CCCR0 + nb::IQ5, nb::escr_select(6) | nb::THREAD_ANY);
}

constexpr const char* kFive = "global_power_events;instr_retired;branch_retired;uops_retired;mispred_branch_retired";

}  // namespace

// ---------------------------------------------------------------- detection

TEST(PmuNetBurst, DetectsThePrescottSnapshot) {
    SimMachine m = sim::netburst_p4();
    PmuInfo p;
    pmu_detect(m, &p);
    EXPECT_EQ(p.kind, PmuKind::netburst);
    EXPECT_EQ(p.vendor, Vendor::intel);
    EXPECT_TRUE(p.caps.netburst);
    EXPECT_EQ(p.caps.netburst_model, 4u);
    EXPECT_FALSE(p.caps.netburst_ht);
    EXPECT_EQ(p.version, 0u);
    EXPECT_EQ(p.gp_mask, 0x3FFFFu);
    EXPECT_EQ(p.gp_width, 40u);
    EXPECT_EQ(p.fixed_mask, 0u);
    EXPECT_TRUE(p.full_width_writes);
    EXPECT_EQ(p.dialect, EventDialect::netburst);
    EXPECT_EQ(p.method, CounterMethod::rdpmc);
    StrBuf b;
    put_pmu_summary(b, p);
    EXPECT_STREQ(b.c_str(), "NetBurst ESCR/CCCR PMU: 18 counters (BPU_COUNTER0-3, MS_COUNTER0-3, FLAME_COUNTER0-3, "
                            "IQ_COUNTER0-5; 40 bits), reads with RDPMC");
    // Detection only reads: CPUID, IA32_MISC_ENABLE and one RDPMC of counter 0.
    EXPECT_TRUE(m.cpu(0).writes().empty());
    // The accesses detection made, in order: IA32_MISC_ENABLE, then the RDPMC probe.
    std::vector<std::string> acc;
    for (const sim::LogEntry& e : m.cpu(0).log())
        acc.push_back(sim::describe(e).substr(sim::describe(e).find(' ') + 1));
    EXPECT_EQ(acc, (std::vector<std::string>{"cpu0 RDMSR 0x1a0 -> 0x20842081", "cpu0 RDPMC 0x0 -> 0x0"}));
}

TEST(PmuNetBurst, MiscEnableBit7ClearMeansNoPmu) {
    SimMachine m = sim::netburst_p4();
    m.cpu(0).poke(0x1A0, sim::kPrescottMiscEnable & ~0x80ull);
    PmuSession s;
    s.open(m);
    EXPECT_EQ(s.backend(), nullptr);
    EXPECT_EQ(s.info().kind, PmuKind::none);
    EXPECT_STREQ(s.info().absent,
                 "NetBurst processor without performance monitoring: IA32_MISC_ENABLE[7] (Performance Monitoring "
                 "Available) is 0");
    EXPECT_EQ(s.info().method, CounterMethod::rdmsr);
    Vec<Event> e = ev("instr_retired");
    Allocation a;
    Status st = s.allocate(e.data(), e.size(), &a);
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.error().code, Errc::unsupported);
}

// ---------------------------------------------------------------- tables vs the model

TEST(PmuNetBurst, EscrTableAgreesWithTheModel) {
    ASSERT_EQ(netburst::kEscrCount, nb::kEscrCount);
    for (unsigned i = 0; i < netburst::kEscrCount; ++i) {
        const netburst::EscrDef& d = netburst::kEscrs[i];
        const nb::EscrInfo* x = nb::escr_at(d.msr);
        ASSERT_NE(x, nullptr) << d.name;
        EXPECT_STREQ(d.name, x->name);
        EXPECT_EQ(d.select, x->select) << d.name;
        EXPECT_EQ(d.counters, x->counters) << d.name;
        EXPECT_EQ(d.early_only, x->early_only) << d.name;
    }
    // Every counter/select pair names the ESCR the model wires there (or none).
    for (unsigned i = 0; i < 18; ++i)
        for (unsigned sel = 0; sel < 8; ++sel) {
            int k = netburst::escr_for(i, sel);
            const nb::EscrInfo* want = nullptr;
            for (unsigned j = 0; j < nb::kEscrCount; ++j)
                if (nb::kEscrs[j].select == sel && ((nb::kEscrs[j].counters >> i) & 1)) want = &nb::kEscrs[j];
            if (!want) EXPECT_EQ(k, -1) << i << "/" << sel;
            else EXPECT_EQ(k >= 0 ? netburst::kEscrs[k].msr : 0u, want->msr) << i << "/" << sel;
        }
}

// SDM §18.15.5.6/.7: IQ counters 12 and 14 (13 and 15) cascade in either order, 16 only
// from 14, 17 only from 15; counters 16 and 17 cannot start a cascade with the CASCADE
// bit. netburst::cascade_source said 12 <- 16 and 13 <- 17 (fixed); the model's own
// cascading is tested in test_sim_netburst.cpp.
TEST(PmuNetBurst, CascadeSourcesAgreeWithTheModel) {
    for (unsigned i = 0; i < 18; ++i)
        EXPECT_EQ(int(netburst::cascade_source(i)), nb::cascade_partner(i)) << "counter " << i;
}

// ---------------------------------------------------------------- allocation

TEST(PmuNetBurst, AllocatesTheFiveEventsOnWiredCounterEscrPairs) {
    SimMachine m = sim::netburst_p4();
    Session t;
    t.open(m, kFive);
    // instr_retired, uops_retired and mispred_branch_retired all need CRU_ESCR0/1: the
    // third one goes to a second run.
    EXPECT_EQ(placement(t.a),
              "0:e0@0/FSB_ESCR0 0:e1@12/CRU_ESCR0 0:e2@13/CRU_ESCR2 0:e3@14/CRU_ESCR1 1:e4@12/CRU_ESCR0");
    EXPECT_EQ(t.a.groups[0].gp_mask, 0x7001u);
    EXPECT_EQ(t.a.groups[1].gp_mask, 0x1000u);
    expect_placement_valid(m.cpu(0), t.e, t.a);
    // Three branch_retired variants share CRU_ESCR2/3: two per run.
    Session u;
    u.open(m, "branch_retired.MMNP;branch_retired.MMTM;branch_retired.MMNM+MMTP;cycles;instructions");
    EXPECT_EQ(placement(u.a),
              "0:e0@12/CRU_ESCR2 0:e1@14/CRU_ESCR3 0:e3@0/FSB_ESCR0 0:e4@13/CRU_ESCR0 1:e2@12/CRU_ESCR2");
    expect_placement_valid(m.cpu(0), u.e, u.a);
}

// The NetBurst dialect has no counter-pin syntax; the allocator honours Event::pinned_counter
// all the same (set here directly).
TEST(PmuNetBurst, PinnedCountersAreHonouredOrRefused) {
    SimMachine m = sim::netburst_p4();
    PmuSession s;
    s.open(m);
    Vec<Event> e = ev("instr_retired;uops_retired");
    e[0].pinned_counter = 17;
    e[1].pinned_counter = 13;
    Allocation a;
    ASSERT_TRUE(s.allocate(e.data(), e.size(), &a).ok());
    EXPECT_EQ(placement(a), "0:e0@17/CRU_ESCR1 0:e1@13/CRU_ESCR0");
    expect_placement_valid(m.cpu(0), e, a);
    e[0].pinned_counter = 4;  // MS_COUNTER0: no CRU ESCR feeds it
    Status st = s.allocate(e.data(), e.size(), &a);
    ASSERT_FALSE(st.ok());
    EXPECT_STREQ(st.error().msg, "event 'instr_retired' is pinned to counter 4, which none of its ESCRs feeds");
}

// ---------------------------------------------------------------- programming

TEST(PmuNetBurst, WritesEscrBeforeCccrAndCountersWhileDisabled) {
    SimMachine m = sim::netburst_p4();
    SimCpu& c = m.cpu(0);
    Session t;
    t.open(m, kFive);
    c.clear_log();
    ASSERT_TRUE(t.b->program(t.e.data(), t.a.groups[0]).ok());
    // Per counter: the counter (CCCR still disabled), the ESCR (event select, mask,
    // OS|USR), the CCCR (ESCR select, active thread 11b, ENABLE clear).
    EXPECT_EQ(writes(c),
              (std::vector<std::string>{"0x300=0x0", "0x3a2=0x2600020c",
                                        "0x360=0x3c000",                                  // global_power_events.RUNNING
                                        "0x30c=0x0", "0x3b8=0x400060c", "0x36c=0x38000",  // instr_retired NBOGUS(N)TAG
                                        "0x30d=0x0", "0x3cc=0xc001e0c", "0x36d=0x3a000",  // branch_retired, all four
                                        "0x30e=0x0", "0x3b9=0x200020c", "0x36e=0x38000"}));  // uops_retired.NBOGUS
    c.clear_log();
    ASSERT_TRUE(t.b->start().ok());
    std::vector<std::string> start = writes(c);
    EXPECT_EQ(start, (std::vector<std::string>{"0x360=0x3d000", "0x36c=0x39000", "0x36d=0x3b000", "0x36e=0x39000"}));
    c.clear_log();
    ASSERT_TRUE(t.b->stop().ok());
    std::vector<std::string> stop = writes(c);
    EXPECT_EQ(stop, (std::vector<std::string>{"0x360=0x3c000", "0x36c=0x38000", "0x36d=0x3a000", "0x36e=0x38000"}));
    // The writes generated code performs are the same.
    PmuWriteList ws, wp;
    t.b->control_writes(t.e.data(), t.a.groups[0], &ws, &wp);
    EXPECT_EQ(list(ws), start);
    EXPECT_EQ(list(wp), stop);
    // The second run: the first run's counters are released, then the one counter of run 2.
    c.clear_log();
    ASSERT_TRUE(t.b->program(t.e.data(), t.a.groups[1]).ok());
    EXPECT_EQ(writes(c), (std::vector<std::string>{"0x360=0x0", "0x36d=0x0", "0x36e=0x0", "0x30c=0x0",
                                                   "0x3b8=0x600020c", "0x36c=0x38000"}));
    EXPECT_TRUE(c.netburst()->violations().empty());
    ASSERT_TRUE(t.s.close().ok());
    EXPECT_TRUE(c.netburst()->violations().empty());
}

TEST(PmuNetBurst, DisablesAFirmwareEnabledCounterBeforeTakingItOver) {
    SimMachine m = sim::netburst_p4();
    SimCpu& c = m.cpu(0);
    poke_leftovers(c);  // BPU_CCCR0 enabled (BSU_ESCR0, compare)
    sim::PmuState before = c.pmu_state();
    Session t;
    t.open(m, "cycles");
    c.clear_log();
    ASSERT_TRUE(t.b->program(t.e.data(), t.a.groups[0]).ok());
    EXPECT_EQ(writes(c),
              (std::vector<std::string>{"0x360=0x27e000", "0x300=0x0", "0x3a2=0x2600020c", "0x360=0x3c000"}));
    ASSERT_TRUE(t.b->start().ok());
    sim::nb_run(c, 777);
    ASSERT_TRUE(t.b->stop().ok());
    EXPECT_EQ(t.read(0), 777u);
    ASSERT_TRUE(t.s.close().ok());
    EXPECT_EQ(sim::diff_state(before, c.pmu_state()), "");
    EXPECT_TRUE(c.netburst()->violations().empty());
}

// ---------------------------------------------------------------- counts

TEST(PmuNetBurst, CountsTheDrivenEvents) {
    SimMachine m = sim::netburst_p4();
    SimCpu& c = m.cpu(0);
    Session t;
    t.open(m, kFive);
    ASSERT_TRUE(t.b->program(t.e.data(), t.a.groups[0]).ok());
    ASSERT_TRUE(t.b->start().ok());
    sim::nb_run(c, 1000, {{nb::kInstrRetired, nb::NBOGUSNTAG, 1}, {nb::kUopsRetired, nb::NBOGUS, 3}});
    sim::nb_event(c, nb::kInstrRetired, nb::NBOGUSTAG, 5);   // tagged non-bogus: counted
    sim::nb_event(c, nb::kInstrRetired, nb::BOGUSNTAG, 50);  // bogus: not in the default mask
    sim::nb_event(c, nb::kUopsRetired, nb::BOGUS, 60);       // likewise
    sim::nb_event(c, nb::kBranchRetired, nb::MMNP, 10);
    sim::nb_event(c, nb::kBranchRetired, nb::MMNM, 20);
    sim::nb_event(c, nb::kBranchRetired, nb::MMTP, 30);
    sim::nb_event(c, nb::kBranchRetired, nb::MMTM, 40);
    sim::nb_event(c, nb::kMachineClear, nb::CLEAR, 70);  // select 02H of CRU_ESCR2/3: not instr_retired
    c.set_cpl(3);
    sim::nb_run(c, 200, {{nb::kInstrRetired, nb::NBOGUSNTAG, 2}});  // OS and USR both set
    c.set_cpl(0);
    ASSERT_TRUE(t.b->stop().ok());
    sim::nb_run(c, 500, {{nb::kInstrRetired, nb::NBOGUSNTAG, 1}});  // after stop: not counted
    EXPECT_EQ(t.read(0), 1200u);                                    // global_power_events: the running cycles
    EXPECT_EQ(t.read(1), 1405u);                                    // instr_retired
    EXPECT_EQ(t.read(2), 100u);                                     // branch_retired
    EXPECT_EQ(t.read(3), 3000u);                                    // uops_retired
    // Run 2: mispred_branch_retired.
    ASSERT_TRUE(t.b->program(t.e.data(), t.a.groups[1]).ok());
    ASSERT_TRUE(t.b->start().ok());
    sim::nb_event(c, nb::kMispredBranchRetired, nb::NBOGUS, 17);
    sim::nb_event(c, nb::kInstrRetired, nb::NBOGUSNTAG, 9);  // CRU_ESCR0 now selects 03H
    ASSERT_TRUE(t.b->stop().ok());
    EXPECT_EQ(t.read(4), 17u);
    ASSERT_TRUE(t.s.close().ok());
    EXPECT_TRUE(c.netburst()->violations().empty());
}

TEST(PmuNetBurst, UserAndKernelModifiers) {
    SimMachine m = sim::netburst_p4();
    SimCpu& c = m.cpu(0);
    Session t;
    t.open(m, "instr_retired:u;uops_retired:k");
    ASSERT_TRUE(t.b->program(t.e.data(), t.a.groups[0]).ok());
    EXPECT_EQ(c.peek(nb::CRU_ESCR0), nb::escr(0x02, 0x3, nb::USR));
    EXPECT_EQ(c.peek(nb::CRU_ESCR1), nb::escr(0x01, 0x1, nb::OS));
    ASSERT_TRUE(t.b->start().ok());
    sim::nb_run(c, 10, {{nb::kInstrRetired, nb::NBOGUSNTAG, 1}, {nb::kUopsRetired, nb::NBOGUS, 1}});
    c.set_cpl(3);
    sim::nb_run(c, 7, {{nb::kInstrRetired, nb::NBOGUSNTAG, 1}, {nb::kUopsRetired, nb::NBOGUS, 1}});
    c.set_cpl(0);  // pmulab runs at ring 0 (RDPMC at CPL 3 #GPs without CR4.PCE)
    ASSERT_TRUE(t.b->stop().ok());
    EXPECT_EQ(t.read(0), 7u);
    EXPECT_EQ(t.read(1), 10u);
}

TEST(PmuNetBurst, BranchRetiredEveryMaskAndCombination) {
    struct Case {
        const char* spec;
        u64 want;
        const char* name;  // put_event_encoding
    } cases[] = {
        {"branch_retired.MMNP", 10, "branch_retired.MMNP"},
        {"branch_retired.MMNM", 20, "branch_retired.MMNM"},
        {"branch_retired.MMTP", 30, "branch_retired.MMTP"},
        {"branch_retired.MMTM", 40, "branch_retired.MMTM"},
        {"branch_retired.MMNP+MMNM", 30, "branch_retired.MMNP+MMNM"},  // not taken
        {"branch_retired.MMTP+MMTM", 70, "branch_retired.MMTP+MMTM"},  // taken
        {"branch_retired.MMNM+MMTM", 60, "branch_retired.MMNM+MMTM"},  // mispredicted
        {"branch_retired.MMNP+MMTP", 40, "branch_retired.MMNP+MMTP"},  // predicted
        {"branch_retired.MMNP+MMNM+MMTP", 60, "branch_retired.MMNP+MMNM+MMTP"},
        {"branch_retired.MMTM+MMNP+MMTP+MMNM", 100, "branch_retired"},
        {"branches", 100, "branch_retired"},
    };
    for (const Case& k : cases) {
        SimMachine m = sim::netburst_p4();
        SimCpu& c = m.cpu(0);
        Session t;
        t.open(m, k.spec);
        StrBuf enc;
        put_event_encoding(enc, t.e[0]);
        EXPECT_STREQ(enc.c_str(), k.name);
        ASSERT_TRUE(t.b->program(t.e.data(), t.a.groups[0]).ok());
        ASSERT_TRUE(t.b->start().ok());
        sim::nb_event(c, nb::kBranchRetired, nb::MMNP, 10);
        sim::nb_event(c, nb::kBranchRetired, nb::MMNM, 20);
        sim::nb_event(c, nb::kBranchRetired, nb::MMTP, 30);
        sim::nb_event(c, nb::kBranchRetired, nb::MMTM, 40);
        ASSERT_TRUE(t.b->stop().ok());
        EXPECT_EQ(t.read(0), k.want) << k.spec;
        sim::PmuState st = c.pmu_state();
        ASSERT_TRUE(t.s.close().ok());
        EXPECT_EQ(st[nb::CRU_ESCR2] >> 25, 0x06u) << k.spec;
    }
}

// ---------------------------------------------------------------- save/restore

TEST(PmuNetBurst, RestoresEveryRegisterExactly) {
    SimMachine m = sim::netburst_p4();
    SimCpu& c = m.cpu(0);
    poke_leftovers(c);
    sim::PmuState before = c.pmu_state();
    Session t;
    t.open(m, kFive);
    for (usize g = 0; g < t.a.groups.size(); ++g) {
        ASSERT_TRUE(t.b->program(t.e.data(), t.a.groups[g]).ok());
        ASSERT_TRUE(t.b->start().ok());
        sim::nb_run(c, 100, {{nb::kInstrRetired, nb::NBOGUSNTAG, 1}, {nb::kMispredBranchRetired, nb::NBOGUS, 1}});
        ASSERT_TRUE(t.b->stop().ok());
    }
    EXPECT_EQ(t.read(4), 100u);
    ASSERT_NE(sim::diff_state(before, c.pmu_state()), "");
    RestoreReport rep;
    ASSERT_TRUE(t.s.close(&rep).ok());
    EXPECT_EQ(rep.gp_counters_inexact, 0u);
    EXPECT_EQ(sim::diff_state(before, c.pmu_state()), "");
    EXPECT_TRUE(c.netburst()->violations().empty());
    // Closing again writes nothing.
    c.clear_log();
    ASSERT_TRUE(t.s.close().ok());
    EXPECT_TRUE(c.writes().empty());
}

TEST(PmuNetBurst, RestoresExactlyWhenAWrmsrFaultsMidProgramming) {
    // Count the WRMSRs of program + start for run 1 of the five events with leftovers.
    unsigned total = 0;
    {
        SimMachine m = sim::netburst_p4();
        SimCpu& c = m.cpu(0);
        poke_leftovers(c);
        Session t;
        t.open(m, kFive);
        c.clear_log();
        ASSERT_TRUE(t.b->program(t.e.data(), t.a.groups[0]).ok());
        ASSERT_TRUE(t.b->start().ok());
        total = unsigned(c.writes().size());
    }
    ASSERT_EQ(total, 17u);  // 12 + disabling BPU_CCCR0 first + 4 enables
    for (unsigned k = 1; k <= total; ++k) {
        SimMachine m = sim::netburst_p4();
        SimCpu& c = m.cpu(0);
        poke_leftovers(c);
        sim::PmuState before = c.pmu_state();
        Session t;
        t.open(m, kFive);
        c.fail_nth_wrmsr(k);
        Status p = t.b->program(t.e.data(), t.a.groups[0]);
        Status s = p.ok() ? t.b->start() : p;
        ASSERT_FALSE(s.ok()) << "WRMSR " << k;
        EXPECT_EQ(s.error().code, Errc::fault) << k;
        if (p.ok()) sim::nb_run(c, 50, {{nb::kInstrRetired, nb::NBOGUSNTAG, 1}});  // some counters run
        ASSERT_TRUE(t.s.close().ok()) << k;
        EXPECT_EQ(sim::diff_state(before, c.pmu_state()), "") << "fault on WRMSR " << k;
        EXPECT_TRUE(c.netburst()->violations().empty()) << k;
        EXPECT_FALSE(t.s.saved());
    }
}

TEST(PmuNetBurst, FaultsOnReadsInSaveAndStop) {
    // An ESCR that cannot be read fails save() before anything is written.
    {
        SimMachine m = sim::netburst_p4();
        SimCpu& c = m.cpu(0);
        c.fail_rdmsr_to(nb::CRU_ESCR3);
        PmuSession s;
        s.open(m);
        Vec<Event> e = ev("instr_retired");
        Allocation a;
        ASSERT_TRUE(s.allocate(e.data(), e.size(), &a).ok());
        Status st = s.save(touch_set(e.data(), e.size(), a).value());
        ASSERT_FALSE(st.ok());
        EXPECT_STREQ(st.error().msg,
                     "RDMSR 0x3cd raised #GP (general protection): the CPU does not implement this MSR");
        EXPECT_FALSE(s.saved());
        ASSERT_TRUE(s.close().ok());
        EXPECT_TRUE(c.writes().empty());
    }
    // stop() reads each CCCR to keep OVF: when a read faults, stop fails there, and close()
    // still disables and restores everything (from what pmulab last wrote).
    {
        SimMachine m = sim::netburst_p4();
        SimCpu& c = m.cpu(0);
        poke_leftovers(c);
        sim::PmuState before = c.pmu_state();
        Session t;
        t.open(m, kFive);
        u64 presets[4] = {0, 0xFFFFFFFFFFull, 0, 0};
        ASSERT_TRUE(t.b->program(t.e.data(), t.a.groups[0], presets).ok());
        ASSERT_TRUE(t.b->start().ok());
        sim::nb_run(c, 10, {{nb::kInstrRetired, nb::NBOGUSNTAG, 1}});  // IQ_COUNTER0 wraps: OVF
        c.fail_rdmsr_to(nb::CCCR0 + nb::IQ0);
        Status st = t.b->stop();
        ASSERT_FALSE(st.ok());
        EXPECT_STREQ(st.error().msg,
                     "RDMSR 0x36c raised #GP (general protection): the CPU does not implement this MSR");
        EXPECT_EQ(c.peek(nb::CCCR0 + nb::BPU0) & nb::ENABLE, 0u);  // stopped before the fault
        EXPECT_NE(c.peek(nb::CCCR0 + nb::IQ0) & nb::ENABLE, 0u);   // still running
        Status cl = t.s.close();
        EXPECT_TRUE(cl.ok()) << cl.error().msg;
        EXPECT_EQ(sim::diff_state(before, c.pmu_state()), "");
        EXPECT_TRUE(c.netburst()->violations().empty());
    }
}

TEST(PmuNetBurst, RestoresTheOvfFlagTheFirmwareLeft) {
    SimMachine m = sim::netburst_p4();
    SimCpu& c = m.cpu(0);
    c.poke(nb::CCCR0 + nb::IQ0, nb::escr_select(4) | nb::THREAD_ANY | nb::OVF);
    sim::PmuState before = c.pmu_state();
    Session t;
    t.open(m, "instr_retired");
    ASSERT_TRUE(t.b->program(t.e.data(), t.a.groups[0]).ok());
    EXPECT_EQ(c.peek(nb::CCCR0 + nb::IQ0), 0x38000u);  // programming clears OVF
    ASSERT_TRUE(t.s.close().ok());
    EXPECT_EQ(sim::diff_state(before, c.pmu_state()), "");
}

// ---------------------------------------------------------------- overflow, reads

TEST(PmuNetBurst, ReportsOverflowFromCccrOvf) {
    SimMachine m = sim::netburst_p4();
    SimCpu& c = m.cpu(0);
    sim::PmuState before = c.pmu_state();
    Session t;
    t.open(m, "instr_retired;uops_retired");
    u64 presets[2] = {0xFFFFFFFFFBull, 0xFFFFFFFF00ull};
    ASSERT_TRUE(t.b->program(t.e.data(), t.a.groups[0], presets).ok());
    ASSERT_TRUE(t.b->start().ok());
    sim::nb_event(c, nb::kInstrRetired, nb::NBOGUSNTAG, 10);
    sim::nb_event(c, nb::kUopsRetired, nb::NBOGUS, 10);
    ASSERT_TRUE(t.b->stop().ok());
    EXPECT_EQ(t.read(0), 5u);  // 40-bit wrap
    EXPECT_EQ(t.read(1), 0xFFFFFFFF0Aull);
    Result<OverflowState> o = t.b->overflow();
    ASSERT_TRUE(o.ok());
    EXPECT_TRUE(o.value().known);
    EXPECT_EQ(o.value().gp, 1u << 12);
    EXPECT_EQ(c.peek(nb::CCCR0 + nb::IQ0), 0x38000u | nb::OVF);
    ASSERT_TRUE(t.b->clear_overflow().ok());
    EXPECT_EQ(c.peek(nb::CCCR0 + nb::IQ0), 0x38000u);
    EXPECT_EQ(t.b->overflow().value().gp, 0u);
    // A preset beyond 40 bits is refused before anything is written.
    u64 bad[2] = {1ull << 40, 0};
    c.clear_log();
    Status st = t.b->program(t.e.data(), t.a.groups[0], bad);
    ASSERT_FALSE(st.ok());
    EXPECT_STREQ(st.error().msg, "preset 0x10000000000 does not fit the 40-bit counter IQ_COUNTER0");
    EXPECT_TRUE(c.writes().empty());
    ASSERT_TRUE(t.s.close().ok());
    EXPECT_EQ(sim::diff_state(before, c.pmu_state()), "");
}

// stop() wrote the group's CCCR value, which cleared the OVF flag the wrap had set, so
// overflow() after stop() never saw an overflow (fixed: start/stop keep OVF).
TEST(PmuNetBurst, StartAndStopKeepTheOverflowFlag) {
    SimMachine m = sim::netburst_p4();
    SimCpu& c = m.cpu(0);
    Session t;
    t.open(m, "instr_retired");
    u64 preset = 0xFFFFFFFFFFull;
    ASSERT_TRUE(t.b->program(t.e.data(), t.a.groups[0], &preset).ok());
    ASSERT_TRUE(t.b->start().ok());
    sim::nb_event(c, nb::kInstrRetired, nb::NBOGUSNTAG, 2);
    c.clear_log();
    ASSERT_TRUE(t.b->stop().ok());
    std::vector<std::string> acc;
    for (const sim::LogEntry& e : c.log()) {
        std::string d = sim::describe(e);
        acc.push_back(d.substr(d.find(' ') + 1));
    }
    EXPECT_EQ(acc, (std::vector<std::string>{"cpu0 RDMSR 0x36c -> 0x80039000", "cpu0 WRMSR 0x36c <- 0x80038000"}));
    EXPECT_EQ(t.b->overflow().value().gp, 1u << 12);
    // A second start/stop of the same group keeps it too: overflow since program().
    ASSERT_TRUE(t.b->start().ok());
    sim::nb_event(c, nb::kInstrRetired, nb::NBOGUSNTAG, 2);
    ASSERT_TRUE(t.b->stop().ok());
    EXPECT_EQ(t.read(0), 3u);
    EXPECT_EQ(t.b->overflow().value().gp, 1u << 12);
    // Programming the group again starts afresh.
    ASSERT_TRUE(t.b->program(t.e.data(), t.a.groups[0]).ok());
    EXPECT_EQ(t.b->overflow().value().gp, 0u);
    ASSERT_TRUE(t.s.close().ok());
}

TEST(PmuNetBurst, ReadsAllFortyBitsWithRdpmc) {
    SimMachine m = sim::netburst_p4();
    SimCpu& c = m.cpu(0);
    Session t;
    t.open(m, "uops_retired");
    CounterAccess acc = t.b->access(CounterKind::gp, 12);
    EXPECT_EQ(acc.kind, CounterAccess::rdpmc);
    EXPECT_EQ(acc.index, 12u);  // ECX[31] clear: the full read
    EXPECT_EQ(acc.width, 40u);
    u64 preset = 0xAB00000000ull;
    ASSERT_TRUE(t.b->program(t.e.data(), t.a.groups[0], &preset).ok());
    ASSERT_TRUE(t.b->start().ok());
    sim::nb_run(c, 3, {{nb::kUopsRetired, nb::NBOGUS, 4}});
    ASSERT_TRUE(t.b->stop().ok());
    c.clear_log();
    EXPECT_EQ(t.read(0), 0xAB0000000Cull);
    ASSERT_EQ(c.log().size(), 1u);
    EXPECT_EQ(c.log()[0].kind, sim::Access::rdpmc);
    EXPECT_EQ(c.log()[0].addr, 12u);
    // Where RDPMC is not used, RDMSR of the counter MSR.
    PmuInfo info = t.s.info();
    info.method = CounterMethod::rdmsr;
    PmuSession r;
    r.open(m, info);
    CounterAccess acc2 = r.access(CounterKind::gp, 12);
    EXPECT_EQ(acc2.kind, CounterAccess::rdmsr);
    EXPECT_EQ(acc2.index, 0x30Cu);
    EXPECT_EQ(r.read(CounterKind::gp, 12).value(), 0xAB0000000Cull);
}

// ---------------------------------------------------------------- Hyper-Threading

// Planning binds the family without hardware: on a Hyper-Threading package the thread
// (read with CPUID on the CPU itself when a session opens) is not needed and not read
// (it was, through a null Hw, before the family table).
TEST(PmuNetBurst, PlanningOnAHyperThreadingPackageNeedsNoHardware) {
    SimMachine m = sim::netburst_p4(2, true);
    PmuSession planner;
    {
        PmuInfo second;
        m.on(1, [&] { pmu_detect(m, &second); });
        ASSERT_TRUE(second.caps.netburst_ht);
        planner.plan(second);
    }
    const usize log_size = m.cpu(1).log().size();
    EXPECT_EQ(planner.access(CounterKind::gp, 12).width, netburst::kCounterWidth);
    EXPECT_EQ(planner.save(PmuTouch()).error().code, Errc::internal);
    EXPECT_EQ(planner.backend(), static_cast<PmuBackend*>(&planner));
    EXPECT_EQ(m.cpu(1).log().size(), log_size);
}

TEST(PmuNetBurst, SecondLogicalProcessorProgramsTheT1Bits) {
    SimMachine m = sim::netburst_p4(2, true);
    SimCpu& t1 = m.cpu(1);
    sim::PmuState before = t1.pmu_state();
    m.on(1, [&] {
        Session t;
        t.open(m, "instr_retired;branch_retired.MMTM:k");
        EXPECT_TRUE(t.s.info().caps.netburst_ht);
        ASSERT_TRUE(t.b->program(t.e.data(), t.a.groups[0]).ok());
        // SDM Example 18-2: instr_retired NBOGUSNTAG|NBOGUSTAG for logical processor 1.
        EXPECT_EQ(t1.peek(nb::CRU_ESCR0), 0x04000603u);
        EXPECT_EQ(t1.peek(nb::CRU_ESCR2), nb::escr(0x06, nb::MMTM, nb::T1_OS));
        ASSERT_TRUE(t.b->start().ok());
        sim::nb_event(m.cpu(0), nb::kInstrRetired, nb::NBOGUSNTAG, 100);  // the sibling's: not counted
        sim::nb_event(t1, nb::kInstrRetired, nb::NBOGUSNTAG, 7);
        sim::nb_event(t1, nb::kBranchRetired, nb::MMTM, 3);
        t1.set_cpl(3);
        sim::nb_event(t1, nb::kBranchRetired, nb::MMTM, 5);  // :k
        t1.set_cpl(0);
        ASSERT_TRUE(t.b->stop().ok());
        EXPECT_EQ(t.read(0), 7u);
        EXPECT_EQ(t.read(1), 3u);
        ASSERT_TRUE(t.s.close().ok());
    });
    EXPECT_EQ(sim::diff_state(before, t1.pmu_state()), "");
    EXPECT_EQ(sim::diff_state(before, m.cpu(0).pmu_state()), "");  // the same registers
    // Thread 0 of the same package uses the T0 bits.
    Session t;
    t.open(m, "instr_retired");
    ASSERT_TRUE(t.b->program(t.e.data(), t.a.groups[0]).ok());
    EXPECT_EQ(m.cpu(0).peek(nb::CRU_ESCR0), 0x0400060Cu);
    ASSERT_TRUE(t.s.close().ok());
}
// ---------------------------------------------------------------- commands

TEST(PmuNetBurstCommands, InfoShowsTheNetBurstBlock) {
    SimMachine m = sim::netburst_p4();
    pmutest::RunResult r = pmutest::run(m, {"info"});
    EXPECT_EQ(r.status, 0) << r.out;
    EXPECT_TRUE(r.has_line("    0      0  yes    0     0    0  -     p4    18x40")) << r.out;
    EXPECT_TRUE(r.has_line("  PMU              : NetBurst ESCR/CCCR (no leaf 0AH: maximum CPUID leaf 0x5)")) << r.out;
    EXPECT_TRUE(r.has_line("  counters         : 18 x 40 bits in 9 pairs: BPU 0-3, MS 4-7, FLAME 8-11, IQ 12-17"))
        << r.out;
    EXPECT_TRUE(r.has_line("  ESCRs            : 43 (IQ_ESCR0/1 exist on models 1-2 only)")) << r.out;
    EXPECT_TRUE(r.has_line("  Hyper-Threading  : no")) << r.out;
    // 43: the ESCRs the model answers on model 04H.
    unsigned escrs = 0;
    for (u32 a = nb::ESCR_FIRST; a <= nb::ESCR_LAST; ++a) escrs += m.cpu(0).msr_exists(a);
    EXPECT_EQ(escrs, 43u);
    EXPECT_TRUE(m.cpu(0).writes().empty());  // info only reads

    SimMachine h = sim::netburst_p4(2, true);
    r = pmutest::run(h, {"info"});
    EXPECT_EQ(r.status, 0) << r.out;
    EXPECT_TRUE(r.has_line("    1      1         0     0    1  -     p4    18x40")) << r.out;
    EXPECT_TRUE(r.has_line("PMU of CPU 0-1 (2 CPUs):")) << r.out;
    EXPECT_TRUE(r.has_line("  Hyper-Threading  : yes: the two logical processors share the ESCRs and CCCRs")) << r.out;
}

TEST(PmuNetBurstCommands, InfoJsonHasTheNetBurstRecord) {
    SimMachine m = sim::netburst_p4(2, true);
    pmutest::RunResult r = pmutest::run(m, {"info", "--json"});
    EXPECT_EQ(r.status, 0) << r.out;
    std::vector<pmutest::Json> recs = pmutest::parse_json_lines(r.out);
    ASSERT_EQ(recs.size(), 2u);
    for (u32 i = 0; i < 2; ++i) {
        const pmutest::Json& c = recs[i];
        EXPECT_EQ(c["type"].s(), "cpu");
        EXPECT_EQ(c["index"].u(), i);
        EXPECT_EQ(c["thread"].u(), i);
        EXPECT_EQ(c["signature"].s(), "0xf41");
        EXPECT_EQ(c["family"].u(), 15u);
        EXPECT_EQ(c["model"].u(), m.cpu(i).netburst()->model());
        EXPECT_EQ(c["max_leaf"].s(), "0x5");
        const pmutest::Json& p = c["pmu"];
        EXPECT_TRUE(p["present"].b);
        EXPECT_EQ(p["perfmon_version"].u(), 0u);
        EXPECT_EQ(p["gp_counters"].u(), 0u);  // no architectural counters
        const pmutest::Json& n = p["netburst"];
        EXPECT_EQ(n.keys(),
                  (std::vector<std::string>{"counters", "width", "escrs", "hyperthreading", "perfmon_available"}));
        EXPECT_TRUE(n["perfmon_available"].b);  // IA32_MISC_ENABLE[7] set in the dump's value
        EXPECT_EQ(n["counters"].u(), 18u);
        EXPECT_EQ(n["width"].u(), 40u);
        EXPECT_EQ(n["escrs"].u(), 43u);
        EXPECT_EQ(n["hyperthreading"].b, m.cpu(i).netburst()->ht());
    }
}

TEST(PmuNetBurstCommands, EventsCheckAllocatesNetBurstNames) {
    SimMachine m = sim::netburst_p4();
    pmutest::RunResult r = pmutest::run(m, {"events", "--check",
                                            "instr_retired,uops_retired,mispred_branch_retired,cycles"});
    EXPECT_EQ(r.status, 0) << r.out;
    EXPECT_EQ(r.lines(), (std::vector<std::string>{
                             "CPU 0: 4 events in 2 runs (NetBurst ESCR/CCCR PMU: 18 counters (BPU_COUNTER0-3, "
                             "MS_COUNTER0-3, FLAME_COUNTER0-3, IQ_COUNTER0-5; 40 bits), reads with RDPMC)",
                             "  group 1/2: PMC12      instr_retired (instr_retired)",
                             "  group 1/2: PMC14      uops_retired (uops_retired)",
                             "  group 1/2: PMC0       cycles (global_power_events)",
                             "  group 2/2: PMC12      mispred_branch_retired (mispred_branch_retired)"}));
    r = pmutest::run(m, {"events", "--check", "branch_retired.MMTM+MMNM:k;instr_retired", "--json"});
    EXPECT_EQ(r.status, 0) << r.out;
    std::vector<pmutest::Json> recs = pmutest::parse_json_lines(r.out);
    ASSERT_EQ(recs.size(), 1u);
    EXPECT_EQ(recs[0]["type"].s(), "allocation");
    EXPECT_EQ(recs[0]["pmu"].s(), "netburst");
    EXPECT_EQ(recs[0]["counter_method"].s(), "rdpmc");
    EXPECT_EQ(recs[0]["groups"].u(), 1u);
    const pmutest::Json& al = recs[0]["allocation"];
    ASSERT_EQ(al.items.size(), 2u);
    EXPECT_EQ(al[0]["event"].s(), "branch_retired.MMTM+MMNM:k");
    EXPECT_EQ(al[0]["index"].u(), 12u);
    EXPECT_EQ(al[1]["event"].s(), "instr_retired");
    EXPECT_EQ(al[1]["index"].u(), 13u);
    // IQ_COUNTER0 through CRU_ESCR2 and IQ_COUNTER1 through CRU_ESCR0: both wired (model).
    EXPECT_TRUE((nb::escr_at(nb::CRU_ESCR2)->counters >> 12) & 1);
    EXPECT_TRUE((nb::escr_at(nb::CRU_ESCR0)->counters >> 13) & 1);
    EXPECT_TRUE(m.cpu(0).writes().empty());  // --check programs nothing
    // Bad mask bits and Intel names are the NetBurst parser's errors (exit 2).
    r = pmutest::run(m, {"events", "--check", "instr_retired.MMTM"});
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(r.out,
              "pmulab: error: CPU 0: event list item 1: event spec 'instr_retired.MMTM': 'MMTM' is not "
              "an event-mask bit of instr_retired (known: NBOGUSNTAG, NBOGUSTAG, BOGUSNTAG, BOGUSTAG) (at offset "
              "14)\n");
    r = pmutest::run(m, {"events", "--check", "INST_RETIRED.ANY"});
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(r.out.rfind("pmulab: error: CPU 0: event list item 1: event spec 'INST_RETIRED.ANY': "
                          "unknown NetBurst event 'INST_RETIRED'",
                          0),
              0u)
        << r.out;
}

// ---------------------------------------------------------------- overflow after generated code

// Generated code starts and stops counting with the plain WRMSRs of control_writes: the
// stop write of the CCCR replaces the sticky OVF the hardware set (the simulator models
// that), so after such a run the overflow is unknowable and must be reported so, never
// as "no overflow" (issue 11, item 7).
TEST(PmuNetBurst, OverflowAfterGeneratedCodeIsUnknown) {
    SimMachine m = sim::netburst_p4();
    SimCpu& c = m.cpu(0);
    Session t;
    t.open(m, "instr_retired");
    const CounterGroup& g = t.a.groups[0];
    u64 preset = (u64(1) << 40) - 10;
    ASSERT_TRUE(t.b->program(t.e.data(), g, &preset).ok());
    PmuWriteList start, stop;
    t.s.control_writes(t.e.data(), g, &start, &stop);
    for (unsigned k = 0; k < start.count; ++k) ASSERT_TRUE(c.wrmsr(start.w[k].msr, start.w[k].value).ok());
    sim::nb_event(c, nb::kInstrRetired, nb::NBOGUSNTAG, 20);  // wraps: the hardware sets OVF
    for (unsigned k = 0; k < stop.count; ++k) ASSERT_TRUE(c.wrmsr(stop.w[k].msr, stop.w[k].value).ok());
    EXPECT_EQ(t.read(0), 10u);
    Result<OverflowState> o = t.b->overflow();
    ASSERT_TRUE(o.ok());
    EXPECT_FALSE(o.value().known);  // the stop write cleared OVF: "none" would be a lie
    // Through the backend's start()/stop() (read-modify-write keeping OVF) it is known.
    ASSERT_TRUE(t.b->program(t.e.data(), g, &preset).ok());
    ASSERT_TRUE(t.b->start().ok());
    sim::nb_event(c, nb::kInstrRetired, nb::NBOGUSNTAG, 20);
    ASSERT_TRUE(t.b->stop().ok());
    o = t.b->overflow();
    ASSERT_TRUE(o.ok());
    EXPECT_TRUE(o.value().known);
    EXPECT_EQ(o.value().gp, 1u << g.events[0].index);
    ASSERT_TRUE(t.s.close().ok());
}
