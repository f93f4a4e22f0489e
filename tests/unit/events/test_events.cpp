#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "events/events.h"
#include "events/spec_lexer.h"

using namespace pmulab;

namespace {

std::string S(const StrBuf& b) { return std::string(b.c_str(), b.size()); }

Event parse_ok(const char* spec) {
    Result<Event> r = parse_event_spec(spec);
    EXPECT_TRUE(r.ok()) << spec << ": " << r.error().msg;
    return r.ok() ? r.value() : Event{};
}

std::string parse_err(const char* spec) {
    Result<Event> r = parse_event_spec(spec);
    EXPECT_FALSE(r.ok()) << spec << " parsed";
    if (r.ok()) return "";
    EXPECT_EQ(r.error().code, Errc::invalid_argument) << spec;
    return r.error().msg;
}

std::string list_err(const char* text) {
    Vec<Event> v;
    Status st = parse_event_list(text, &v);
    EXPECT_FALSE(st.ok()) << text;
    return st.ok() ? "" : st.error().msg;
}

std::string encoding(const Event& e) {
    StrBuf b;
    put_event_encoding(b, e);
    return S(b);
}

u64 evtsel(const char* spec) { return parse_ok(spec).perfevtsel().raw(); }

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

std::string check_err(const char* spec, const PmuCaps& c, u8 core_type = kCoreTypeNone) {
    Result<EventRoute> r = check_event(parse_ok(spec), c, core_type);
    EXPECT_FALSE(r.ok()) << spec;
    if (r.ok()) return "";
    EXPECT_EQ(r.error().code, Errc::unsupported);
    return r.error().msg;
}

EventRoute route(const char* spec, const PmuCaps& c, u8 core_type = kCoreTypeNone) {
    Result<EventRoute> r = check_event(parse_ok(spec), c, core_type);
    EXPECT_TRUE(r.ok()) << spec << ": " << r.error().msg;
    return r.ok() ? r.value() : EventRoute::none;
}

}  // namespace

// ---- the seeds' worked values ----

TEST(Events, SeedEncodings) {
    // UOPS_ISSUED.ANY (0E.01) with USR and EN.
    EXPECT_EQ(parse_ok("0E.01.USR").perfevtsel().set_en().raw(), 0x0041010Eu);
    EXPECT_EQ(parse_ok("event=0x0e,umask=0x01,usr").perfevtsel().set_en().raw(), 0x0041010Eu);
    EXPECT_EQ(parse_ok("r010e:u").perfevtsel().set_en().raw(), 0x0041010Eu);
    // DTLB_MISSES.ANY (08.01): the default privilege filter is USR+OS.
    EXPECT_EQ(evtsel("08.01"), 0x00030108u);
    EXPECT_EQ(parse_ok("08.01 DTLB_MISSES.ANY").perfevtsel().set_en().raw(), 0x00430108u);
}

// ---- named events ----

TEST(Events, ArchitecturalEventTable) {
    // SDM Vol. 3B Table 20-1: bit, event select, umask.
    struct Row {
        const char* key;
        int bit;
        u16 evsel;
        u8 umask;
    };
    const Row rows[] = {
        {"core_cycles", kArchCoreCycles, 0x3C, 0x00},
        {"instructions_retired", kArchInstructionsRetired, 0xC0, 0x00},
        {"reference_cycles", kArchReferenceCycles, 0x3C, 0x01},
        {"llc_references", kArchLlcReferences, 0x2E, 0x4F},
        {"llc_misses", kArchLlcMisses, 0x2E, 0x41},
        {"branch_instructions_retired", kArchBranchInstructionsRetired, 0xC4, 0x00},
        {"branch_mispredicts_retired", kArchBranchMispredictsRetired, 0xC5, 0x00},
        {"topdown_slots", kArchTopdownSlots, 0xA4, 0x01},
        {"topdown_backend_bound", kArchTopdownBackendBound, 0xA4, 0x02},
        {"topdown_bad_speculation", kArchTopdownBadSpeculation, 0x73, 0x00},
        {"topdown_frontend_bound", kArchTopdownFrontendBound, 0x9C, 0x01},
        {"topdown_retiring", kArchTopdownRetiring, 0xC2, 0x02},
        {"lbr_inserts", kArchLbrInserts, 0xE4, 0x01},
    };
    for (const Row& r : rows) {
        Event e = parse_ok(r.key);
        EXPECT_EQ(e.kind, EventKind::programmable) << r.key;
        EXPECT_EQ(e.arch_bit, r.bit) << r.key;
        EXPECT_EQ(e.event_select, r.evsel) << r.key;
        EXPECT_EQ(e.umask, r.umask) << r.key;
        EXPECT_EQ(e.syntax, EventSyntax::name);
        EXPECT_TRUE(e.usr && e.os);
        // The key names are the snake_case keys census JSON uses.
        EXPECT_STREQ(arch_event_key(unsigned(r.bit)), r.key);
    }
}

TEST(Events, IntelPerfLikwidAliases) {
    struct Row {
        const char* name;
        u16 evsel;
        u8 umask;
        int fixed;  // -1: general-purpose
        int bit;
    };
    const Row rows[] = {
        {"INST_RETIRED.ANY", 0xC0, 0x00, 0, kArchInstructionsRetired},
        {"instructions", 0xC0, 0x00, 0, kArchInstructionsRetired},
        {"INSTR_RETIRED_ANY", 0xC0, 0x00, 0, kArchInstructionsRetired},
        {"INST_RETIRED.ANY_P", 0xC0, 0x00, -1, kArchInstructionsRetired},
        {"CPU_CLK_UNHALTED.THREAD", 0x3C, 0x00, 1, kArchCoreCycles},
        {"CPU_CLK_UNHALTED.CORE", 0x3C, 0x00, 1, kArchCoreCycles},
        {"cycles", 0x3C, 0x00, 1, kArchCoreCycles},
        {"cpu-cycles", 0x3C, 0x00, 1, kArchCoreCycles},
        {"CPU_CLK_UNHALTED_CORE", 0x3C, 0x00, 1, kArchCoreCycles},
        {"CPU_CLK_UNHALTED.THREAD_P", 0x3C, 0x00, -1, kArchCoreCycles},
        {"CPU_CLK_UNHALTED.CORE_P", 0x3C, 0x00, -1, kArchCoreCycles},
        {"CPU_CLK_UNHALTED.REF_TSC", 0x3C, 0x01, 2, kArchReferenceCycles},
        {"ref-cycles", 0x3C, 0x01, 2, kArchReferenceCycles},
        {"CPU_CLK_UNHALTED_REF", 0x3C, 0x01, 2, kArchReferenceCycles},
        {"CPU_CLK_UNHALTED.REF_XCLK", 0x3C, 0x01, -1, kArchReferenceCycles},
        {"bus-cycles", 0x3C, 0x01, -1, kArchReferenceCycles},
        {"TOPDOWN.SLOTS", 0xA4, 0x01, 3, kArchTopdownSlots},
        {"slots", 0xA4, 0x01, 3, kArchTopdownSlots},
        {"topdown-slots", 0xA4, 0x01, 3, kArchTopdownSlots},
        {"TOPDOWN.SLOTS_P", 0xA4, 0x01, -1, kArchTopdownSlots},
        {"TOPDOWN.BACKEND_BOUND_SLOTS", 0xA4, 0x02, -1, kArchTopdownBackendBound},
        {"LONGEST_LAT_CACHE.REFERENCE", 0x2E, 0x4F, -1, kArchLlcReferences},
        {"cache-references", 0x2E, 0x4F, -1, kArchLlcReferences},
        {"LONGEST_LAT_CACHE.MISS", 0x2E, 0x41, -1, kArchLlcMisses},
        {"cache-misses", 0x2E, 0x41, -1, kArchLlcMisses},
        {"BR_INST_RETIRED.ALL_BRANCHES", 0xC4, 0x00, -1, kArchBranchInstructionsRetired},
        {"branches", 0xC4, 0x00, -1, kArchBranchInstructionsRetired},
        {"branch-instructions", 0xC4, 0x00, -1, kArchBranchInstructionsRetired},
        {"BR_MISP_RETIRED.ALL_BRANCHES", 0xC5, 0x00, -1, kArchBranchMispredictsRetired},
        {"branch-misses", 0xC5, 0x00, -1, kArchBranchMispredictsRetired},
        {"LBR_INSERTS.ANY", 0xE4, 0x01, -1, kArchLbrInserts},
    };
    for (const Row& r : rows) {
        Event e = parse_ok(r.name);
        EXPECT_STREQ(e.name, r.name);
        EXPECT_EQ(e.event_select, r.evsel) << r.name;
        EXPECT_EQ(e.umask, r.umask) << r.name;
        EXPECT_EQ(e.arch_bit, r.bit) << r.name;
        EXPECT_EQ(e.fixed_counter, r.fixed) << r.name;
        EXPECT_EQ(e.kind, r.fixed >= 0 ? EventKind::fixed : EventKind::programmable) << r.name;
        EXPECT_EQ(e.gp_equivalent, r.fixed >= 0) << r.name;
        EXPECT_EQ(e.gp_equivalent_exact, r.fixed != 2) << r.name;  // REF_TSC's 3C.01 runs at another rate
    }
}

TEST(Events, NamesAreCaseInsensitiveAndKeepTheirSpelling) {
    Event e = parse_ok("inst_retired.any");
    EXPECT_EQ(e.kind, EventKind::fixed);
    EXPECT_STREQ(e.name, "inst_retired.any");
    EXPECT_EQ(parse_ok("CYCLES").fixed_counter, 1);
    EXPECT_STREQ(parse_ok("cycles MyCycles").name, "MyCycles");
}

TEST(Events, PerfPrivilegeModifiers) {
    Event u = parse_ok("cycles:u");
    EXPECT_TRUE(u.usr);
    EXPECT_FALSE(u.os);
    EXPECT_STREQ(u.name, "cycles:u");
    EXPECT_EQ(u.fixed_ctrl_group(), 0x2u);
    Event k = parse_ok("instructions:k");
    EXPECT_FALSE(k.usr);
    EXPECT_TRUE(k.os);
    EXPECT_EQ(k.fixed_ctrl_group(), 0x1u);
    Event uk = parse_ok("branches:ku");
    EXPECT_TRUE(uk.usr && uk.os);
    EXPECT_EQ(parse_ok("cycles").fixed_ctrl_group(), 0x3u);
}

TEST(Events, Tsc) {
    Event t = parse_ok("tsc");
    EXPECT_EQ(t.kind, EventKind::tsc);
    EXPECT_FALSE(t.needs_counter());
    EXPECT_STREQ(t.name, "tsc");
    EXPECT_EQ(parse_ok("TSC").kind, EventKind::tsc);
    EXPECT_EQ(encoding(t), "tsc");
}

// ---- nanoBench syntax ----

TEST(Events, NanoBenchBasicAndName) {
    Event e = parse_ok("0E.01 UOPS_ISSUED.ANY");
    EXPECT_EQ(e.syntax, EventSyntax::nanobench);
    EXPECT_EQ(e.kind, EventKind::programmable);
    EXPECT_EQ(e.event_select, 0x0E);
    EXPECT_EQ(e.umask, 0x01);
    EXPECT_STREQ(e.name, "UOPS_ISSUED.ANY");
    EXPECT_EQ(e.arch_bit, -1);  // raw specs are never checked against EBX
    EXPECT_STREQ(parse_ok("0E.01").name, "0E.01");
    EXPECT_STREQ(parse_ok("  \tD1.08   MEM_LOAD_RETIRED.L1_MISS \r\n").name, "MEM_LOAD_RETIRED.L1_MISS");
    EXPECT_EQ(parse_ok("e.1").event_select, 0x0E);  // one hex digit is enough, any case
}

TEST(Events, NanoBenchModifiers) {
    Event e = parse_ok("A3.05.CMSK=5.INV.EDG.AnyT.CTR=2 CYCLE_ACTIVITY.X");
    EXPECT_EQ(e.cmask, 5);
    EXPECT_TRUE(e.inv && e.edge && e.intel.any);
    EXPECT_EQ(e.pinned_counter, 2);
    EXPECT_FALSE(e.taken_alone);
    EXPECT_EQ(e.perfevtsel().raw(), 0x05A705A3u);
    EXPECT_EQ(encoding(e), "A3.05.CMSK=5.AnyT.EDG.INV.CTR=2");
    // Case-insensitive modifiers, hex CMSK.
    EXPECT_EQ(parse_ok("0e.01.cmsk=0x10.inv").cmask, 0x10);
    Event ta = parse_ok("C6.01.TakenAlone");
    EXPECT_TRUE(ta.taken_alone);
    EXPECT_EQ(ta.intel.aux_count, 0);
    // Privilege extensions.
    Event usr = parse_ok("0E.01.USR");
    EXPECT_TRUE(usr.usr);
    EXPECT_FALSE(usr.os);
    Event os = parse_ok("0E.01.OS");
    EXPECT_FALSE(os.usr);
    EXPECT_TRUE(os.os);
    Event both = parse_ok("0E.01.OS.USR");
    EXPECT_TRUE(both.usr && both.os);
    // v6 fields.
    Event v6 = parse_ok("D0.01.EQ.UMASK2=0x21.CMSK=2");
    EXPECT_TRUE(v6.intel.eq);
    EXPECT_EQ(v6.intel.umask2, 0x21);
    EXPECT_EQ(v6.perfevtsel().raw(), 0x00002110020301D0ull);
}

TEST(Events, NanoBenchAuxMsrsAreTakenAlone) {
    Event e = parse_ok("B7.01.MSR_RSP0=0x10001.MSR_RSP1=65536 OCR.X");
    EXPECT_TRUE(e.taken_alone);
    ASSERT_EQ(e.intel.aux_count, 2);
    EXPECT_EQ(e.intel.aux[0].msr, 0x1A6u);
    EXPECT_EQ(e.intel.aux[0].value, 0x10001u);
    EXPECT_EQ(e.intel.aux[1].msr, 0x1A7u);
    EXPECT_EQ(e.intel.aux[1].value, 0x10000u);
    Event ld = parse_ok("CD.01.MSR_3F6H=4");
    EXPECT_EQ(ld.intel.aux[0].msr, 0x3F6u);
    Event fe = parse_ok("C6.01.MSR_PF=0x11");
    EXPECT_EQ(fe.intel.aux[0].msr, 0x3F7u);
    EXPECT_EQ(encoding(fe), "C6.01.MSR_PF=0x11.TakenAlone");
    EXPECT_EQ(encoding(e), "B7.01.MSR_RSP0=0x10001.MSR_RSP1=0x10000.TakenAlone");
}

// ---- perf syntax ----

TEST(Events, PerfTerms) {
    Event e = parse_ok("event=0x0e,umask=0x01,cmask=1,inv,edge,any,usr,os");
    EXPECT_EQ(e.syntax, EventSyntax::perf_terms);
    EXPECT_EQ(e.perfevtsel().raw(), 0x01A7010Eu);
    EXPECT_STREQ(e.name, "event=0x0e,umask=0x01,cmask=1,inv,edge,any,usr,os");
    Event f = parse_ok("event=14,umask=1,inv=1,edge=0,name=my_uops");
    EXPECT_EQ(f.event_select, 14);
    EXPECT_TRUE(f.inv);
    EXPECT_FALSE(f.edge);
    EXPECT_STREQ(f.name, "my_uops");
    Event k = parse_ok("event=0xc0,os");
    EXPECT_FALSE(k.usr);
    EXPECT_TRUE(k.os);
    Event u = parse_ok("EVENT=0xC0,USR=1,OS=0");
    EXPECT_TRUE(u.usr);
    EXPECT_FALSE(u.os);
    Event v6 = parse_ok("event=0xd0,umask=0x01,umask2=0x21,eq");
    EXPECT_EQ(v6.intel.umask2, 0x21);
    EXPECT_TRUE(v6.intel.eq);
}

TEST(Events, PerfPmuPrefix) {
    Event e = parse_ok("cpu/event=0x3c,umask=0x00/");
    EXPECT_EQ(e.event_select, 0x3C);
    EXPECT_EQ(e.core_type, kCoreTypeNone);
    EXPECT_TRUE(e.usr && e.os);
    Event u = parse_ok("cpu/event=0x3c/u");
    EXPECT_TRUE(u.usr);
    EXPECT_FALSE(u.os);
    EXPECT_EQ(parse_ok("cpu_core/event=0xc0/").core_type, kCoreTypeCore);
    EXPECT_EQ(parse_ok("cpu_atom/event=0xc0/k").core_type, kCoreTypeAtom);
    EXPECT_STREQ(parse_ok("cpu/event=0xc0,name=ret/").name, "ret");
    EXPECT_STREQ(parse_ok("cpu/event=0xc0/ RET").name, "RET");
}

TEST(Events, PerfRaw) {
    Event e = parse_ok("r010e");
    EXPECT_EQ(e.syntax, EventSyntax::perf_raw);
    EXPECT_EQ(e.event_select, 0x0E);
    EXPECT_EQ(e.umask, 0x01);
    EXPECT_EQ(e.perfevtsel().raw(), 0x0003010Eu);
    Event full = parse_ok("r1A2405A3");  // cmask 0x1A, edge (bit 18), any (bit 21)
    EXPECT_EQ(full.cmask, 0x1A);
    EXPECT_TRUE(full.inv == false && full.intel.any == true && full.edge == true);
    EXPECT_EQ(full.umask, 0x05);
    Event v6 = parse_ok("r2110000001D0");
    EXPECT_EQ(v6.intel.umask2, 0x21);
    EXPECT_TRUE(v6.intel.eq);
    Event k = parse_ok("r00c0:k");
    EXPECT_FALSE(k.usr);
    EXPECT_TRUE(k.os);
}

// ---- encodings round-trip ----

TEST(Events, EncodingRoundTrips) {
    const char* specs[] = {"0E.01",
                           "A3.05.CMSK=5.INV.EDG.AnyT.CTR=2",
                           "event=0xc0,os",
                           "r1A2405A3",
                           "C6.01.MSR_PF=0x11",
                           "D0.01.EQ.UMASK2=0x21",
                           "0E.01.USR"};
    for (const char* s : specs) {
        Event a = parse_ok(s);
        std::string enc = encoding(a);
        Event b = parse_ok(enc.c_str());
        EXPECT_EQ(a.perfevtsel().raw(), b.perfevtsel().raw()) << s << " -> " << enc;
        EXPECT_EQ(a.pinned_counter, b.pinned_counter) << s;
        EXPECT_EQ(a.taken_alone, b.taken_alone) << s;
        EXPECT_EQ(a.intel.aux_count, b.intel.aux_count) << s;
    }
    EXPECT_EQ(encoding(parse_ok("instructions")), "FIXED_CTR0=C0.00");
    EXPECT_EQ(encoding(parse_ok("cycles:u")), "FIXED_CTR1=3C.00.USR");
}

// ---- single-spec errors (exact text) ----

TEST(Events, SpecErrorsNanoBench) {
    EXPECT_EQ(parse_err("0E.1G"), "event spec '0E.1G': UMASK '1G' is not hex (at offset 3)");
    EXPECT_EQ(parse_err("1FF.01"),
              "event spec '1FF.01': event select '1FF' is out of range (Intel event selects are 00-FF) (at offset 0)");
    EXPECT_EQ(parse_err("0E.100"), "event spec '0E.100': UMASK '100' is out of range (00-FF) (at offset 3)");
    EXPECT_EQ(parse_err("0E..01"), "event spec '0E..01': UMASK is missing (expected EE.UU, e.g. 0E.01) (at offset 3)");
    EXPECT_EQ(parse_err("0E."), "event spec '0E.': UMASK is missing (expected EE.UU, e.g. 0E.01) (at offset 3)");
    EXPECT_EQ(parse_err("0E.01."),
              "event spec '0E.01.': empty modifier (two dots in a row, or a trailing dot) (at offset 6)");
    EXPECT_EQ(parse_err("0E.01.CMSK=256"),
              "event spec '0E.01.CMSK=256': CMSK value 256 is out of range (0-255) (at offset 11)");
    EXPECT_EQ(parse_err("0E.01.CMSK=x1"), "event spec '0E.01.CMSK=x1': CMSK value 'x1' is not a number (at offset 11)");
    EXPECT_EQ(parse_err("0E.01.CMSK"),
              "event spec '0E.01.CMSK': modifier 'CMSK' needs a value (CMSK=...) (at offset 6)");
    EXPECT_EQ(parse_err("0E.01.CMSK="), "event spec '0E.01.CMSK=': CMSK needs a value (at offset 11)");
    EXPECT_EQ(parse_err("0E.01.INV=1"), "event spec '0E.01.INV=1': modifier 'INV' takes no value (at offset 6)");
    EXPECT_EQ(parse_err("0E.01.INV.inv"), "event spec '0E.01.INV.inv': modifier 'INV' given twice (at offset 10)");
    EXPECT_EQ(parse_err("0E.01.CTR=32"),
              "event spec '0E.01.CTR=32': CTR value 32 is out of range (0-31) (at offset 10)");
    EXPECT_EQ(parse_err("0E.01.FOO"),
              "event spec '0E.01.FOO': unknown modifier 'FOO' (known: CMSK=n, CTR=n, AnyT, EDG, INV, TakenAlone, "
              "USR, OS, EQ, UMASK2=n, MSR_RSP0=v, MSR_RSP1=v, MSR_3F6H=v, MSR_PF=v) (at offset 6)");
    EXPECT_EQ(parse_err("0E.01 UOPS_ISSUED.ANY junk"),
              "event spec '0E.01 UOPS_ISSUED.ANY junk': unexpected 'junk' after the event name 'UOPS_ISSUED.ANY' (at "
              "offset 22)");
    EXPECT_EQ(parse_err("0E"),
              "event spec '0E': '0E' is not an event name; a raw event needs its UMASK too: EE.UU, e.g. 0E.01 (at "
              "offset 0)");
}

TEST(Events, SpecErrorsPerf) {
    EXPECT_EQ(parse_err("event=0x100"),
              "event spec 'event=0x100': event value '0x100' is out of range (Intel event selects are 0x00-0xff) (at "
              "offset 6)");
    EXPECT_EQ(parse_err("event=0x0e,umask=0x01,foo=1"),
              "event spec 'event=0x0e,umask=0x01,foo=1': unknown term 'foo' (known: event, umask, cmask, umask2, "
              "inv, edge, any, eq, usr, os, name) (at offset 22)");
    EXPECT_EQ(parse_err("umask=1"), "event spec 'umask=1': missing event= term (at offset 0)");
    EXPECT_EQ(parse_err("event=0x0e,,umask=1"),
              "event spec 'event=0x0e,,umask=1': empty term (two commas in a row, or a trailing comma) (at offset 11)");
    EXPECT_EQ(parse_err("event=0x0e,inv=2"),
              "event spec 'event=0x0e,inv=2': flag 'inv' takes 0 or 1, not '2' (at offset 15)");
    EXPECT_EQ(parse_err("event=1,event=2"), "event spec 'event=1,event=2': term 'event' given twice (at offset 8)");
    EXPECT_EQ(parse_err("event=1,umask"),
              "event spec 'event=1,umask': term 'umask' needs a value (umask=...) (at offset 8)");
    EXPECT_EQ(parse_err("event=1,cmask=300"),
              "event spec 'event=1,cmask=300': cmask value 300 is out of range (0-255) (at offset 14)");
    EXPECT_EQ(parse_err("event=0x0e,usr=0,os=0"),
              "event spec 'event=0x0e,usr=0,os=0': usr and os are both off: the event would never count (at offset 0)");
    EXPECT_EQ(parse_err("r10000"),
              "event spec 'r10000': raw config 0x10000 sets bits 0x10000 outside the event fields (event 7:0, umask "
              "15:8, edge 18, any 21, inv 23, cmask 31:24, eq 36, umask2 47:40; use :u/:k for privilege) (at offset "
              "1)");
    EXPECT_EQ(parse_err("r11112222333344445"),
              "event spec 'r11112222333344445': raw config '11112222333344445' is longer than 16 hex digits (at "
              "offset 1)");
    EXPECT_EQ(parse_err("gpu/event=1/"),
              "event spec 'gpu/event=1/': unknown PMU 'gpu' (pmulab knows cpu, cpu_core and cpu_atom) (at offset 0)");
    EXPECT_EQ(parse_err("cpu/event=1"), "event spec 'cpu/event=1': missing closing '/' after the terms (at offset 11)");
    EXPECT_EQ(parse_err("cpu//"), "event spec 'cpu//': no terms (expected event=...,umask=...) (at offset 4)");
    EXPECT_EQ(parse_err("/event=1/"),
              "event spec '/event=1/': PMU name before '/' is missing (expected cpu/.../) (at offset 0)");
    EXPECT_EQ(parse_err("cpu/event=1/p"),
              "event spec 'cpu/event=1/p': unsupported modifier 'p' (pmulab accepts u and k) (at offset 12)");
    EXPECT_EQ(parse_err("cpu/event=1/uu"), "event spec 'cpu/event=1/uu': modifier 'u' given twice (at offset 13)");
    EXPECT_EQ(parse_err("cpu/event=1/u/"),
              "event spec 'cpu/event=1/u/': unsupported modifier '/' (pmulab accepts u and k) (at offset 13)");
    EXPECT_EQ(parse_err("cycles:x"),
              "event spec 'cycles:x': unsupported modifier 'x' (pmulab accepts u and k) (at offset 7)");
    EXPECT_EQ(parse_err("cycles:"),
              "event spec 'cycles:': empty modifier list after ':' (expected u or k) (at offset 7)");
}

TEST(Events, SpecErrorsValues) {
    EXPECT_EQ(parse_err("0E.01.MSR_RSP0=1.MSR_RSP1=2.MSR_PF=3"),
              "event spec '0E.01.MSR_RSP0=1.MSR_RSP1=2.MSR_PF=3': at most 2 MSR_* modifiers per event (at offset 28)");
    EXPECT_EQ(parse_err("0E.01.MSR_RSP0=zz"),
              "event spec '0E.01.MSR_RSP0=zz': MSR_RSP0 value 'zz' is not a number (at offset 15)");
    EXPECT_EQ(parse_err("0E.01.MSR_RSP0=0x10000000000000000"),
              "event spec '0E.01.MSR_RSP0=0x10000000000000000': MSR_RSP0 value '0x10000000000000000' is not a "
              "number (at offset 15)");
    EXPECT_EQ(parse_err("0E.01.UMASK2=0x100"),
              "event spec '0E.01.UMASK2=0x100': UMASK2 value 0x100 is out of range (0-255) (at offset 13)");
    EXPECT_EQ(parse_err("event="), "event spec 'event=': event needs a value (at offset 6)");
    EXPECT_EQ(parse_err("event=ten"), "event spec 'event=ten': event value 'ten' is not a number (at offset 6)");
    EXPECT_EQ(parse_err("event=1,name="), "event spec 'event=1,name=': name needs a value (at offset 13)");
    std::string long_name = "event=1,name=" + std::string(64, 'n');
    EXPECT_EQ(parse_err(long_name.c_str()),
              "event spec 'event=1,name=nnnnnnnnnnnnnnnnnnnnnnnn...': name is too long (64 characters; at most 63) "
              "(at offset 13)");
    EXPECT_EQ(parse_err("event=1,umask2=256"),
              "event spec 'event=1,umask2=256': umask2 value 256 is out of range (0-255) (at offset 15)");
    EXPECT_EQ(parse_err("r010e:"),
              "event spec 'r010e:': empty modifier list after ':' (expected u or k) (at offset 6)");
    EXPECT_EQ(parse_err("r010e:uk:"),
              "event spec 'r010e:uk:': unsupported modifier ':' (pmulab accepts u and k) (at offset 8)");
}

TEST(Events, NamesCannotSwallowListItems) {
    EXPECT_EQ(parse_err("0E.01 UOPS/ANY"),
              "event spec '0E.01 UOPS/ANY': event name 'UOPS/ANY' contains '/' (names use letters, digits and _ . - "
              ": + @ ( ) [ ]) (at offset 10)");
    EXPECT_EQ(parse_err("event=1,name=a=b"),
              "event spec 'event=1,name=a=b': event name 'a=b' contains '=' (names use letters, digits and _ . - : + "
              "@ ( ) [ ]) (at offset 14)");
    // In a list, a '/' in a name would otherwise keep the next comma from separating.
    EXPECT_EQ(list_err("0E.01 UOPS/ANY,C0.00"),
              "event list item 1: event spec '0E.01 UOPS/ANY,C0.00': event name 'UOPS/ANY,C0.00' "
              "contains '/' (names use letters, digits and _ . - : + @ ( ) [ ]) (at offset 10)");
    EXPECT_STREQ(parse_ok("0E.01 a-b:c+d@e(f)[g]_h.i").name, "a-b:c+d@e(f)[g]_h.i");
    EXPECT_EQ(list_err("event=0x0e, umask=0x01"),
              "event list item 1: event spec 'event=0x0e, umask=0x01': space after ',' in perf terms; "
              "write them without spaces (event=0x0e,umask=0x01) (at offset 11)");
    Vec<Event> v;
    ASSERT_TRUE(parse_event_list("0E.01, C0.00 ;  cycles", &v).ok());
    EXPECT_EQ(v.size(), 3u);
}

TEST(Events, EditDistanceNocase) {
    using spec::edit_distance_nocase;
    EXPECT_EQ(edit_distance_nocase("cycles", "CYCLES", 3), 0u);
    EXPECT_EQ(edit_distance_nocase("cylces", "cycles", 3), 2u);  // a swap is two edits
    EXPECT_EQ(edit_distance_nocase("instructons", "instructions", 3), 1u);
    EXPECT_EQ(edit_distance_nocase("", "abc", 3), 3u);
    EXPECT_EQ(edit_distance_nocase("kitten", "sitting", 3), 3u);
    EXPECT_EQ(edit_distance_nocase("kitten", "sitting", 2), 3u);  // past the limit: limit + 1
    EXPECT_EQ(edit_distance_nocase("foo", "branch-misses", 3), 4u);
    std::string long_a(65, 'a');
    EXPECT_EQ(edit_distance_nocase(long_a.c_str(), long_a.c_str(), 3), 4u);
}

TEST(Events, UnknownNameSuggestsANearMiss) {
    auto tail = [](const char* spec) {
        std::string m = parse_err(spec);
        return m.substr(0, m.find(" (named"));
    };
    EXPECT_EQ(tail("instructons"), "event spec 'instructons': unknown event name 'instructons'; did you mean "
                                   "'instructions'?");
    EXPECT_EQ(tail("INST_RETIRED.AN"), "event spec 'INST_RETIRED.AN': unknown event name 'INST_RETIRED.AN'; did "
                                       "you mean 'INST_RETIRED.ANY'?");
    EXPECT_EQ(tail("cylces:u"), "event spec 'cylces:u': unknown event name 'cylces'; did you mean 'cycles'?");
    EXPECT_EQ(tail("tsx"), "event spec 'tsx': unknown event name 'tsx'; did you mean 'tsc'?");
    EXPECT_EQ(tail("foo"), "event spec 'foo': unknown event name 'foo'");  // nothing near
}

TEST(Events, SpecErrorsGeneral) {
    EXPECT_EQ(parse_err(""), "empty event spec");
    EXPECT_EQ(parse_err(" \t "), "empty event spec");
    EXPECT_EQ(parse_err("foo"),
              "event spec 'foo': unknown event name 'foo' (named events are the architectural ones, e.g. "
              "INST_RETIRED.ANY, cycles; raw events are EE.UU, e.g. 0E.01, or event=0x0e,umask=0x01) (at offset 0)");
    EXPECT_EQ(parse_err("0E.01\x01"), "event spec '0E.01?': non-printable character 0x01 (at offset 5)");
    EXPECT_EQ(parse_err("0E.01 \xff"), "event spec '0E.01 ?': non-printable character 0xFF (at offset 6)");
    std::string long_name(64, 'N');
    EXPECT_EQ(parse_err(("0E.01 " + long_name).c_str()),
              "event spec '0E.01 " + std::string(31, 'N') +
                  "...': event name is too long (64 characters; at most 63) (at offset 6)");
    std::string ok_name(63, 'N');
    EXPECT_EQ(std::string(parse_ok(("0E.01 " + ok_name).c_str()).name), ok_name);
    // A spec token longer than a name becomes the name shortened with "...".
    std::string long_spec = "event=0x0e,umask=0x01,cmask=0x01,inv=1,edge=1,any=0,usr=1,os=1,eq=0";
    ASSERT_GT(long_spec.size(), 63u);
    Event e = parse_ok(long_spec.c_str());
    EXPECT_EQ(std::string(e.name), long_spec.substr(0, 60) + "...");
    EXPECT_STREQ(parse_ok("event=0x0e,name=xxxxxxxxxxxxxxxxxxxx").name, "xxxxxxxxxxxxxxxxxxxx");
}

// ---- lists ----

TEST(Events, ListSplitsPerfTermsAndPmuPrefixes) {
    Vec<Event> v;
    ASSERT_TRUE(parse_event_list("event=0x0e,umask=0x01,inv,cmask=1,cycles,0E.01", &v).ok());
    ASSERT_EQ(v.size(), 3u);
    EXPECT_EQ(v[0].perfevtsel().raw(), 0x0183010Eu);
    EXPECT_STREQ(v[0].name, "event=0x0e,umask=0x01,inv,cmask=1");
    EXPECT_STREQ(v[1].name, "cycles");
    EXPECT_STREQ(v[2].name, "0E.01");

    v.clear();
    ASSERT_TRUE(parse_event_list("cpu/event=0x3c,umask=0x00/u,cpu/event=0xc0,umask=0/, instructions ; tsc", &v).ok());
    ASSERT_EQ(v.size(), 4u);
    EXPECT_STREQ(v[0].name, "cpu/event=0x3c,umask=0x00/u");
    EXPECT_FALSE(v[0].os);
    EXPECT_STREQ(v[1].name, "cpu/event=0xc0,umask=0/");
    EXPECT_STREQ(v[2].name, "instructions");
    EXPECT_EQ(v[3].kind, EventKind::tsc);

    // Each event= starts a new item; ';' always separates.
    v.clear();
    ASSERT_TRUE(parse_event_list("event=0x3c,umask=0,event=0xc0,umask=0;event=0xc4,name=br", &v).ok());
    ASSERT_EQ(v.size(), 3u);
    EXPECT_EQ(v[0].event_select, 0x3C);
    EXPECT_EQ(v[1].event_select, 0xC0);
    EXPECT_STREQ(v[2].name, "br");

    // nanoBench specs with names, separated by commas.
    v.clear();
    ASSERT_TRUE(parse_event_list("0E.01 UOPS_ISSUED.ANY,A1.01.CTR=0 PORT_0", &v).ok());
    ASSERT_EQ(v.size(), 2u);
    EXPECT_STREQ(v[1].name, "PORT_0");
    EXPECT_EQ(v[1].pinned_counter, 0);

    // Appends to what is there.
    ASSERT_TRUE(parse_event_list("tsc", &v).ok());
    EXPECT_EQ(v.size(), 3u);
}

TEST(Events, ListErrors) {
    EXPECT_EQ(list_err("cycles,0E.1G"), "event list item 2: event spec '0E.1G': UMASK '1G' is not hex (at offset 3)");
    EXPECT_EQ(list_err("cycles,,instructions"),
              "event list item 2 is empty (at offset 7): two separators in a row, or one at the start or end");
    EXPECT_EQ(list_err("cycles;"),
              "event list item 2 is empty (at offset 7): two separators in a row, or one at the start or end");
    EXPECT_EQ(list_err(",cycles"),
              "event list item 1 is empty (at offset 0): two separators in a row, or one at the start or end");
    EXPECT_EQ(list_err(""), "empty event list");
    EXPECT_EQ(list_err("  "), "empty event list");
    // A continuation term after a non-perf item is its own (bad) item.
    EXPECT_EQ(list_err("cycles,umask=1"), "event list item 2: event spec 'umask=1': missing event= term (at offset 0)");
    EXPECT_EQ(list_err("event=0x3c,bogus=1"),
              "event list item 2: event spec 'bogus=1': unknown term 'bogus' (known: event, umask, "
              "cmask, umask2, inv, edge, any, eq, usr, os, name) (at offset 0)");
    std::string many;
    for (int i = 0; i < 257; ++i) many += i ? ",tsc" : "tsc";
    EXPECT_EQ(list_err(many.c_str()), "too many events in the list (at most 256)");
    std::string max;
    for (int i = 0; i < 256; ++i) max += i ? ";cycles" : "cycles";
    Vec<Event> v;
    EXPECT_TRUE(parse_event_list(max.c_str(), &v).ok());
    EXPECT_EQ(v.size(), 256u);
}

// ---- event files ----

TEST(Events, EventFile) {
    const char* text = "# Performance monitoring events for a test CPU.\n"
                       "\n"
                       "3C.00 CORE_CYCLES\n"
                       "C0.00 INST_RETIRED   # trailing comment\r\n"
                       "   # indented comment\n"
                       "A3.05.CMSK=5 CYCLE_ACTIVITY.STALLS_L2_MISS\n"
                       "C6.01.MSR_PF=0x11.TakenAlone FRONTEND_RETIRED.DSB_MISS\n"
                       "cpu/event=0xc4,umask=0x00/ BR\n"
                       "instructions\n"
                       "tsc";  // no final newline
    Vec<Event> v;
    Status st = parse_event_file(text, "cfg.txt", &v);
    ASSERT_TRUE(st.ok()) << st.error().msg;
    ASSERT_EQ(v.size(), 7u);
    EXPECT_STREQ(v[0].name, "CORE_CYCLES");
    EXPECT_STREQ(v[1].name, "INST_RETIRED");
    EXPECT_EQ(v[2].cmask, 5);
    EXPECT_TRUE(v[3].taken_alone);
    EXPECT_EQ(v[3].intel.aux[0].value, 0x11u);
    EXPECT_STREQ(v[4].name, "BR");
    EXPECT_EQ(v[5].kind, EventKind::fixed);
    EXPECT_EQ(v[6].kind, EventKind::tsc);
}

TEST(Events, EventFileErrors) {
    Vec<Event> v;
    Status st = parse_event_file("# header\n3C.00 CORE_CYCLES\n\nC0.0G INST_RETIRED\n", "cfg_test.txt", &v);
    ASSERT_FALSE(st.ok());
    EXPECT_STREQ(st.error().msg,
                 "cfg_test.txt:4: event spec 'C0.0G INST_RETIRED': UMASK '0G' is not hex (at offset 3)");
    st = parse_event_file("# nothing\n\n   \n# here\n", "empty.txt", &v);
    ASSERT_FALSE(st.ok());
    EXPECT_STREQ(st.error().msg, "empty.txt: no events (only comments and blank lines)");
    st = parse_event_file("", "zero.txt", &v);
    EXPECT_STREQ(st.error().msg, "zero.txt: no events (only comments and blank lines)");
    std::string big;
    for (int i = 0; i < 4097; ++i) big += "0E.01\n";
    st = parse_event_file(big.c_str(), "big.cfg", &v);
    EXPECT_STREQ(st.error().msg, "big.cfg:4097: too many events (at most 4096 per file)");
    st = parse_event_file("3C.00 A B\n", "x", &v);
    EXPECT_STREQ(st.error().msg, "x:1: event spec '3C.00 A B': unexpected 'B' after the event name 'A' (at offset 8)");
}

// ---- availability ----

TEST(Events, AvailabilityRoutes) {
    PmuCaps v4 = caps(4, 4, 3);
    EXPECT_EQ(route("instructions", v4), EventRoute::fixed);
    EXPECT_EQ(route("INST_RETIRED.ANY_P", v4), EventRoute::gp);
    EXPECT_EQ(route("0E.01", v4), EventRoute::gp);
    EXPECT_EQ(route("tsc", v4), EventRoute::none);
    EXPECT_EQ(route("tsc", PmuCaps{}), EventRoute::none);
    // v1: no fixed counters at all; fixed events fall back to their GP equivalents.
    PmuCaps v1 = caps(1, 2, 0);
    EXPECT_EQ(route("instructions", v1), EventRoute::gp_fallback);
    EXPECT_EQ(route("ref-cycles", v1), EventRoute::gp_fallback);
    EXPECT_STREQ(event_route_name(EventRoute::gp_fallback), "gp_fallback");
}

TEST(Events, ArchitecturalAvailability) {
    // EBX bit 6 set: branch mispredicts retired unavailable.
    PmuCaps c = caps(3, 4, 3, 7, 1u << 6);
    EXPECT_EQ(check_err("branch-misses", c),
              "event 'branch-misses' (Branch Mispredicts Retired, C5.00) is not available on this CPU: "
              "CPUID.0AH:EBX[6] = 1");
    // Raw specs are not checked against EBX.
    EXPECT_EQ(route("C5.00", c), EventRoute::gp);
    // Beyond the EBX vector length.
    EXPECT_EQ(check_err("TOPDOWN.BACKEND_BOUND_SLOTS", c),
              "event 'TOPDOWN.BACKEND_BOUND_SLOTS' (Topdown Backend Bound, A4.02) is not available on this CPU: "
              "CPUID.0AH:EAX[31:24] = 7 enumerates architectural events 0-6 only (this is event 8)");
    PmuCaps none = caps(2, 2, 3, 0);
    EXPECT_EQ(check_err("llc_misses", none),
              "event 'llc_misses' (LLC Misses, 2E.41) is not available on this CPU: CPUID.0AH:EAX[31:24] = 0 "
              "enumerates no architectural events");
    // A fixed event with its counter present does not need its GP equivalent.
    PmuCaps noinst = caps(4, 4, 3, 7, 1u << 1);
    EXPECT_EQ(route("instructions", noinst), EventRoute::fixed);
}

TEST(Events, FixedFallback) {
    // v5, fixed counters 0 and 3 only (ECX = 0b1001, EDX[4:0] = 0).
    PmuCaps c = caps(5, 8, 0, 8);
    c.fixed_mask = 0b1001;
    c.fixed_effective = 0b1001;
    EXPECT_EQ(route("INST_RETIRED.ANY", c), EventRoute::fixed);
    EXPECT_EQ(route("cycles", c), EventRoute::gp_fallback);
    EXPECT_EQ(route("ref-cycles", c), EventRoute::gp_fallback);
    EXPECT_EQ(route("TOPDOWN.SLOTS", c), EventRoute::fixed);
    // v4 without fixed counter 3 and with only 7 arch events: no fallback for slots.
    PmuCaps v4 = caps(4, 4, 3);
    EXPECT_EQ(check_err("TOPDOWN.SLOTS", v4),
              "event 'TOPDOWN.SLOTS' cannot be counted: fixed counter 3 is absent (this CPU has FIXED_CTR0-2) and "
              "its GP equivalent A4.01 is unavailable: CPUID.0AH:EAX[31:24] = 7 enumerates architectural events "
              "0-6 only (this is event 7)");
    PmuCaps v1 = caps(1, 2, 0, 7, 1u << 1);
    EXPECT_EQ(check_err("instructions", v1),
              "event 'instructions' cannot be counted: fixed counter 0 is absent (this CPU has no fixed counters) "
              "and its GP equivalent C0.00 is unavailable: CPUID.0AH:EBX[1] = 1");
}

TEST(Events, NoCountersForTheRoute) {
    // No GP counters: neither GP events nor fixed fallbacks can be counted.
    PmuCaps nogp = caps(2, 0, 0);
    EXPECT_EQ(check_err("instructions", nogp),
              "event 'instructions' cannot be counted: fixed counter 0 is absent (this CPU has no fixed counters) and "
              "there are no general-purpose counters");
    EXPECT_EQ(check_err("0E.01", nogp), "event '0E.01' cannot be counted: this CPU has no general-purpose counters");
    // A fixed event restricted to GP counters that do not exist.
    Event e = parse_ok("cycles");
    e.allowed_gp = 0xF0;
    Result<EventRoute> r = check_event(e, caps(1, 2, 0));
    ASSERT_FALSE(r.ok());
    EXPECT_STREQ(r.error().msg,
                 "event 'cycles' cannot be counted: fixed counter 1 is absent and its allowed general-purpose "
                 "counters do not exist");
    // A hand-built fixed event without a GP equivalent.
    Event f;
    f.kind = EventKind::fixed;
    f.fixed_counter = 5;
    snprintf(f.name, sizeof f.name, "FIXED5");
    r = check_event(f, caps(4, 4, 3));
    ASSERT_FALSE(r.ok());
    EXPECT_STREQ(r.error().msg, "event 'FIXED5' needs fixed counter 5, which is absent (this CPU has FIXED_CTR0-2)");
}

TEST(Events, CountersAndFeatures) {
    PmuCaps v3 = caps(3, 4, 3);
    EXPECT_EQ(check_err("0E.01.CTR=4", v3), "event '0E.01.CTR=4' is pinned to PMC4 (.CTR=4), but this CPU has PMC0-3");
    Event e = parse_ok("0E.01 X");
    e.allowed_gp = 0xF0;
    Result<EventRoute> r = check_event(e, v3);
    ASSERT_FALSE(r.ok());
    EXPECT_STREQ(r.error().msg, "event 'X' may only use PMC4-7, but this CPU has PMC0-3");
    e.allowed_gp = 0x3;
    e.pinned_counter = 2;
    r = check_event(e, v3);
    EXPECT_STREQ(r.error().msg, "event 'X' is pinned to PMC2 but may only use PMC0,1");

    PmuCaps v2 = caps(2, 2, 3);
    EXPECT_EQ(check_err("0E.01.AnyT", v2),
              "event '0E.01.AnyT' uses AnyThread, which needs architectural PMU version 3 or later (this CPU has "
              "version 2)");
    EXPECT_EQ(route("0E.01.AnyT", v3), EventRoute::gp);
    PmuCaps v5 = caps(5, 8, 4, 8);
    v5.anythread_deprecated = true;
    EXPECT_EQ(check_err("0E.01.AnyT", v5),
              "event '0E.01.AnyT' uses AnyThread, which this CPU deprecates (CPUID.0AH:EDX[15] = 1)");
    EXPECT_EQ(check_err("D0.01.EQ", v5),
              "event 'D0.01.EQ' uses EQ, which this CPU does not enumerate (CPUID.23H.0:EBX[1] = 0)");
    EXPECT_EQ(check_err("D0.01.UMASK2=1", v5),
              "event 'D0.01.UMASK2=1' uses UMASK2, which this CPU does not enumerate (CPUID.23H.0:EBX[0] = 0)");
    PmuCaps v6 = v5;
    v6.version = 6;
    v6.leaf_23 = true;
    v6.umask2 = true;
    v6.eq_bit = true;
    EXPECT_EQ(route("D0.01.EQ.UMASK2=1", v6), EventRoute::gp);
}

TEST(Events, NoPmuHybridAndAmd) {
    // QEMU TCG: CPUID.0AH = 0.
    EXPECT_EQ(check_err("cycles", PmuCaps{}),
              "event 'cycles' cannot be counted: no architectural performance monitoring (CPUID.0AH:EAX[7:0] = 0)");
    PmuCaps amd;
    amd.amd_core_counters = 6;
    EXPECT_EQ(check_err("0E.01", amd),
              "event '0E.01' cannot be counted: pmulab programs Intel architectural counters and this CPU has an AMD "
              "PMU");
    PmuCaps p = caps(5, 8, 4, 8);
    EXPECT_EQ(route("cpu_core/event=0xc0/", p, kCoreTypeCore), EventRoute::gp);
    EXPECT_EQ(check_err("cpu_atom/event=0xc0/", p, kCoreTypeCore),
              "event 'cpu_atom/event=0xc0/' is for PMU cpu_atom, but this logical processor is a P-core (cpu_core)");
    EXPECT_EQ(check_err("cpu_core/event=0xc0/", p, kCoreTypeAtom),
              "event 'cpu_core/event=0xc0/' is for PMU cpu_core, but this logical processor is an E-core (cpu_atom)");
    EXPECT_EQ(check_err("cpu_core/event=0xc0/", p),
              "event 'cpu_core/event=0xc0/' is for PMU cpu_core, but this CPU is not hybrid (use cpu/.../)");
    EXPECT_EQ(route("cpu/event=0xc0/", p, kCoreTypeAtom), EventRoute::gp);
    Event wide = parse_ok("0E.01");
    wide.event_select = 0x1C0;  // AMD-style 12-bit select
    Result<EventRoute> r = check_event(wide, p);
    EXPECT_STREQ(r.error().msg, "event '0E.01' has event select 0x1C0; Intel event selects are 8 bits");
}

TEST(Events, CounterCandidates) {
    PmuCaps v4 = caps(4, 4, 3);
    EventCounters c = event_counters(parse_ok("instructions"), v4);
    EXPECT_EQ(c.fixed, 0x1u);
    EXPECT_EQ(c.gp, 0xFu);  // exact GP equivalent: may share work with GP counters
    c = event_counters(parse_ok("ref-cycles"), v4);
    EXPECT_EQ(c.fixed, 0x4u);
    EXPECT_EQ(c.gp, 0u);  // not at the TSC rate: only when fixed counter 2 is absent
    c = event_counters(parse_ok("ref-cycles"), caps(1, 2, 0));
    EXPECT_EQ(c.fixed, 0u);
    EXPECT_EQ(c.gp, 0x3u);
    c = event_counters(parse_ok("0E.01.CTR=2"), v4);
    EXPECT_EQ(c.gp, 0x4u);
    c = event_counters(parse_ok("tsc"), v4);
    EXPECT_EQ(c.gp | c.fixed, 0u);
    PmuCaps v6 = caps(6, 8, 3, 13);
    v6.leaf_23 = true;
    v6.leaf23_subleaves = 0b10;
    v6.gp_bitmap = 0b11110011;
    v6.fixed_bitmap = 0b111;
    EXPECT_EQ(event_counters(parse_ok("0E.01"), v6).gp, 0xF3u);
}

TEST(Events, NamedEventListing) {
    StrBuf b;
    list_named_events(b);
    std::string s = S(b);
    EXPECT_NE(s.find(
                  "INST_RETIRED.ANY              C0.00  fixed counter 0, else GP equivalent; Instructions Retired\n"),
              std::string::npos);
    EXPECT_NE(s.find("ref-cycles                    3C.01  fixed counter 2, else GP fallback; UnHalted Reference "
                     "Cycles\n"),
              std::string::npos);
    EXPECT_NE(s.find("topdown_bad_speculation       73.00  Topdown Bad Speculation\n"), std::string::npos);
    EXPECT_NE(s.find("tsc "), std::string::npos);
    // Every named event parses.
    usize pos = 0;
    int n = 0;
    while (pos < s.size()) {
        usize nl = s.find('\n', pos);
        std::string line = s.substr(pos, nl - pos);
        std::string name = line.substr(0, line.find(' '));
        // Names are unique (case-insensitively): each parses to the row it is listed on.
        Event e = parse_ok(name.c_str());
        usize f = line.find("fixed counter ");
        EXPECT_EQ(e.fixed_counter, f == std::string::npos ? -1 : line[f + 14] - '0') << line;
        if (e.kind != EventKind::tsc) {
            char code[8];
            snprintf(code, sizeof code, "%02X.%02X", unsigned(e.event_select), unsigned(e.umask));
            EXPECT_EQ(line.substr(30, 5), code) << line;
        }
        ++n;
        pos = nl + 1;
    }
    EXPECT_EQ(n, 48);  // with TOPDOWN_BAD_SPECULATION/FE_BOUND/RETIRING.ALL (fixed counters 4-6)
}
