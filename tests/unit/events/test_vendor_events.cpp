// Event specs in the AMD and NetBurst dialects (events.h), their encodings, and the
// NetBurst tables and placement (netburst.h).
#include <gtest/gtest.h>

#include <string>

#include "events/events.h"
#include "x86/netburst_regs.h"
#include "x86/amd_regs.h"

using namespace pmulab;

namespace {

Event ok(const char* spec, EventDialect d) {
    Result<Event> r = parse_event_spec(spec, d);
    EXPECT_TRUE(r.ok()) << spec << ": " << r.error().msg;
    return r.ok() ? r.value() : Event{};
}
std::string err(const char* spec, EventDialect d) {
    Result<Event> r = parse_event_spec(spec, d);
    EXPECT_FALSE(r.ok()) << spec << " parsed";
    return r.ok() ? "" : r.error().msg;
}
std::string enc(const Event& e) {
    StrBuf b;
    put_event_encoding(b, e);
    return std::string(b.c_str(), b.size());
}

constexpr EventDialect kZen = EventDialect::amd_zen;
constexpr EventDialect kK10 = EventDialect::amd;
constexpr EventDialect kNb = EventDialect::netburst;

TEST(AmdEvents, TwelveBitSelectsInEverySyntax) {
    Event a = ok("0C1.00", kZen);
    EXPECT_EQ(a.event_select, 0xC1);
    Event b = ok("1C1.02", kZen);
    EXPECT_EQ(b.event_select, 0x1C1);
    EXPECT_EQ(b.umask, 0x02);
    EXPECT_EQ(b.dialect, kZen);
    Event c = ok("event=0x1c1,umask=0x2", kZen);
    EXPECT_EQ(c.event_select, 0x1C1);
    Event d = ok("r1000002C1", kZen);  // event[11:8] in 35:32
    EXPECT_EQ(d.event_select, 0x1C1);
    EXPECT_EQ(d.umask, 0x02);
    EXPECT_EQ(enc(b), "1C1.02");
    EXPECT_EQ(enc(ok("0FFF.00.CMSK=2.INV.HostOnly.USR", kZen)), "FFF.00.CMSK=2.INV.HostOnly.USR");
    EXPECT_TRUE(ok("076.00.GuestOnly", kK10).amd.guest_only);
    EXPECT_TRUE(ok("event=0x76,hostonly", kZen).amd.host_only);
}

TEST(AmdEvents, RangesAndIntelOnlyFieldsHaveClearMessages) {
    EXPECT_EQ(
        err("1000.00", kZen),
        "event spec '1000.00': event select '1000' is out of range (AMD event selects are 000-FFF) (at offset 0)");
    EXPECT_EQ(err("event=0x1000", kZen),
              "event spec 'event=0x1000': event value '0x1000' is out of range (AMD event selects are 0x000-0xfff) "
              "(at offset 6)");
    // The Intel dialect keeps its messages.
    EXPECT_EQ(err("1C1.00", EventDialect::intel),
              "event spec '1C1.00': event select '1C1' is out of range (Intel event selects are 00-FF) (at offset 0)");
    EXPECT_EQ(err("0E.01.HostOnly", EventDialect::intel),
              "event spec '0E.01.HostOnly': modifier 'HostOnly' is an AMD modifier (PerfEvtSel HG_ONLY); this is an "
              "Intel CPU (at offset 6)");
    EXPECT_EQ(err("0C0.00.AnyT", kZen),
              "event spec '0C0.00.AnyT': modifier 'AnyT' is an Intel modifier; AMD PerfEvtSel has no such field (at "
              "offset 7)");
    EXPECT_EQ(err("event=0xc0,any", kZen),
              "event spec 'event=0xc0,any': term 'any' is an Intel field; AMD PerfEvtSel has no such field (at "
              "offset 11)");
    EXPECT_EQ(err("r2000C0", kZen),
              "event spec 'r2000C0': raw config 0x2000c0 sets bits 0x200000 outside the AMD event fields (event "
              "7:0 and 35:32, umask 15:8, edge 18, inv 23, cmask 31:24, guestonly 40, hostonly 41; use :u/:k for "
              "privilege) (at offset 1)");
}

TEST(AmdEvents, NamedEventsPerFamily) {
    Event i = ok("instructions", kZen);
    EXPECT_EQ(i.kind, EventKind::fixed);
    EXPECT_EQ(i.fixed_counter, regs::amd::kFixedIrPerf);
    EXPECT_TRUE(i.gp_equivalent);
    EXPECT_EQ(i.event_select, 0xC0);
    EXPECT_EQ(enc(i), "IRPerfCount=0C0.00");
    EXPECT_EQ(enc(ok("cycles", kZen)), "076.00");
    EXPECT_EQ(enc(ok("branches", kZen)), "0C2.00");
    EXPECT_EQ(enc(ok("branch-misses:u", kZen)), "0C3.00.USR");
    EXPECT_EQ(enc(ok("l1d-accesses", kZen)), "040.00");
    // L1D misses: PMCx041 changed meaning with family 17h; Zen uses PMCx060 umask C8h.
    EXPECT_EQ(enc(ok("l1d-misses", kZen)), "060.C8");
    EXPECT_EQ(enc(ok("l1d-misses", kK10)), "041.01");
    EXPECT_EQ(enc(ok("aperf", kZen)), "APERF");
    EXPECT_EQ(enc(ok("mperf", kK10)), "MPERF");
    EXPECT_EQ(err("ls_not_halted_cyc", kK10).substr(0, 60),
              "event spec 'ls_not_halted_cyc': unknown AMD event name 'ls_n");
    // A near miss among the names of this CPU's dialect.
    EXPECT_EQ(err("branch-mises", kZen).substr(0, 95),
              "event spec 'branch-mises': unknown AMD event name 'branch-mises'; did you mean 'branch-misses'?");
    EXPECT_EQ(event_dialect_name(kZen), std::string("amd_zen"));
}

TEST(AmdEvents, IntelCheckRefusesOtherDialects) {
    PmuCaps c;
    c.leaf_0a = true;
    c.version = 4;
    c.gp_counters = 4;
    c.gp_width = 48;
    Result<EventRoute> r = check_event(ok("0C0.00", kZen), c);
    ASSERT_FALSE(r.ok());
    EXPECT_STREQ(r.error().msg,
                 "event '0C0.00' was written for an AMD PMU; it cannot be counted on an Intel architectural PMU");
}

TEST(AmdRegs, EventSelectLayout) {
    using regs::amd::PerfEvtSel;
    EXPECT_EQ(PerfEvtSel().set_event_select(0xFFF).raw(), 0xF000000FFull);
    EXPECT_EQ(PerfEvtSel(0xF000000FFull).event_select(), 0xFFFu);
    EXPECT_EQ(PerfEvtSel().set_host_only().set_guest_only().raw(), 0x30000000000ull);
}

TEST(NetBurstEvents, NamesMasksAndAliases) {
    Event b = ok("branch_retired", kNb);
    EXPECT_EQ(b.netburst.event, netburst::kBranchRetired);
    EXPECT_EQ(b.netburst.mask, 0xF);
    EXPECT_EQ(b.event_select, 0x06);
    Event t = ok("branch_retired.MMTP+mmtm:u", kNb);
    EXPECT_EQ(t.netburst.mask, 0xC);
    EXPECT_TRUE(t.usr);
    EXPECT_FALSE(t.os);
    EXPECT_EQ(enc(t), "branch_retired.MMTP+MMTM:u");
    Event i = ok("instructions", kNb);
    EXPECT_EQ(i.netburst.event, netburst::kInstrRetired);
    EXPECT_EQ(i.netburst.mask, 0x3);
    EXPECT_EQ(enc(i), "instr_retired");
    EXPECT_EQ(enc(ok("instr_retired.BOGUSTAG", kNb)), "instr_retired.BOGUSTAG");
    EXPECT_EQ(ok("cycles", kNb).netburst.event, netburst::kGlobalPowerEvents);
    EXPECT_EQ(err("branch_retired.MMXX", kNb),
              "event spec 'branch_retired.MMXX': 'MMXX' is not an event-mask bit of branch_retired (known: MMNP, "
              "MMNM, MMTP, MMTM) (at offset 15)");
    EXPECT_EQ(err("0E.01", kNb),
              "event spec '0E.01': raw EE.UU events do not exist on NetBurst (Pentium 4): name the event, e.g. "
              "instr_retired or branch_retired.MMTM (see 'pmulab events') (at offset 0)");
    EXPECT_EQ(err("cycles.RUNNING", kNb),
              "event spec 'cycles.RUNNING': 'cycles' is a generic name and takes no event-mask bits (at offset 6)");
}

TEST(NetBurstTables, RegistersAndWiring) {
    using namespace netburst;
    EXPECT_EQ(Escr().set_event_select(0x06).set_event_mask(0xF).set_t0_os().set_t0_usr().raw(), 0x0C001E0Cull);
    EXPECT_EQ(escr_for(16, 4), escr_index(0x3B8));            // IQ_COUNTER4 select 4: CRU_ESCR0
    EXPECT_EQ(escr_for(14, 4), escr_index(0x3B9));            // IQ_COUNTER2 select 4: CRU_ESCR1
    EXPECT_EQ(escr_for(0, 6), escr_index(0x3A2));             // BPU_COUNTER0 select 6: FSB_ESCR0
    EXPECT_EQ(escr_for(4, 6), -1);                            // MS_COUNTER0 has no ESCR with select 6
    EXPECT_FALSE(escr_exists(kEscrs[escr_index(0x3BA)], 3));  // IQ_ESCR0 gone from model 3 on
    EXPECT_TRUE(escr_exists(kEscrs[escr_index(0x3BA)], 2));
}

TEST(NetBurstTables, PlacementHonoursEscrsAndCounters) {
    using namespace netburst;
    // Three CRU_ESCR0/1 events: only two ESCRs exist for them, so the third cannot fit.
    u8 ev3[] = {kInstrRetired, kUopsRetired, kMispredBranchRetired};
    u32 all[] = {0x3FFFF, 0x3FFFF, 0x3FFFF};
    Placement p[3];
    EXPECT_FALSE(place_events(ev3, all, 3, 4, p));
    EXPECT_TRUE(place_events(ev3, all, 2, 4, p));
    EXPECT_EQ(p[0].counter, 12);
    EXPECT_EQ(kEscrs[p[0].escr].msr, 0x3B8u);
    EXPECT_EQ(p[1].counter, 14);
    EXPECT_EQ(kEscrs[p[1].escr].msr, 0x3B9u);
    // Five events, one per ESCR group: all fit.
    u8 ev5[] = {kGlobalPowerEvents, kInstrRetired, kBranchRetired, kUopsRetired, kBranchRetired};
    u32 all5[] = {0x3FFFF, 0x3FFFF, 0x3FFFF, 0x3FFFF, 0x3FFFF};
    Placement q[5];
    ASSERT_TRUE(place_events(ev5, all5, 5, 4, q));
    EXPECT_EQ(q[0].counter, 0);   // FSB_ESCR0 -> BPU_COUNTER0
    EXPECT_EQ(q[1].counter, 12);  // CRU_ESCR0 -> IQ_COUNTER0
    EXPECT_EQ(q[2].counter, 13);  // CRU_ESCR2 -> IQ_COUNTER1
    EXPECT_EQ(q[3].counter, 14);  // CRU_ESCR1 -> IQ_COUNTER2
    EXPECT_EQ(q[4].counter, 15);  // CRU_ESCR3 -> IQ_COUNTER3
    // A pin to a counter no allowed ESCR feeds fails.
    u8 one[] = {kInstrRetired};
    u32 pin[] = {u32(1) << 4};
    EXPECT_FALSE(place_events(one, pin, 1, 4, p));
    EXPECT_EQ(cascade_source(16), 14u);
}

}  // namespace
