// The shared pieces of the event parsers (spec_lexer.h, event_terms.h) and the event-
// syntax help (event_syntax.h): what `pmulab events` prints, what docs/pmu.md quotes
// and what the parsers accept are the same.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "events/event_syntax.h"
#include "events/event_terms.h"
#include "sim/sim_cpu.h"
#include "sim/sim_netburst.h"
#include "support/test_platform.h"

using namespace pmulab;
using namespace pmulab::spec;

namespace {

std::string repo_file(const std::string& rel) {
    auto root = std::filesystem::path(__FILE__).parent_path().parent_path().parent_path().parent_path();
    std::ifstream f(root / rel, std::ios::binary);
    EXPECT_TRUE(f.good()) << "cannot open " << rel;
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

std::string indented(const std::string& text) {
    std::string out;
    size_t pos = 0;
    while (pos < text.size()) {
        size_t nl = text.find('\n', pos);
        out += "    " + text.substr(pos, nl - pos) + "\n";
        pos = nl + 1;
    }
    return out;
}

const EventDialect kDialects[] = {EventDialect::intel, EventDialect::amd, EventDialect::amd_zen,
                                  EventDialect::netburst};

std::string err_of(Status s) { return s.ok() ? std::string("ok") : std::string(s.error().msg); }

}  // namespace

// ---- the help text ----

TEST(EventSyntaxHelp, IntelTextIsUnchanged) {
    // The text `pmulab events` printed before the help had a dialect (test_pmu_events.cpp).
    EXPECT_STREQ(
        event_syntax_help(EventDialect::intel),
        "Event syntax (run --events, events --check; events separated by ',' or ';'):\n"
        "  NAME[:u|:k]            a named event above, by its Intel, perf or pmulab name: instructions,\n"
        "                         cycles:u, INST_RETIRED.ANY, branch-misses (u: CPL > 0 only, k: CPL 0 only)\n"
        "  EE.UU[.MOD...] [NAME]  nanoBench: event select and unit mask in hex, e.g. 0E.01, D1.01.CMSK=1.INV,\n"
        "                         C0.00.CTR=2; MOD: CMSK=n INV EDG AnyT CTR=n TakenAlone USR OS EQ UMASK2=n\n"
        "                         MSR_RSP0=v MSR_RSP1=v MSR_3F6H=v MSR_PF=v\n"
        "  event=0x3c,umask=0x01  perf terms: umask= cmask= umask2= name= and the flags inv edge any eq usr os\n"
        "  rHHHH[:u|:k]           perf raw config (IA32_PERFEVTSELx bits), e.g. r01c2\n"
        "  cpu/TERMS/ cpu_core/TERMS/ cpu_atom/TERMS/   perf PMU prefix (hybrid: P or E cores only)\n"
        "  tsc                    the time-stamp counter (RDTSC; needs no PMU counter)\n"
        "Events count in both USR and OS mode unless a modifier says otherwise (pmulab runs at ring 0).\n");
    EXPECT_EQ(event_syntax_help(EventDialect::amd), event_syntax_help(EventDialect::amd_zen));
}

TEST(EventSyntaxHelp, DocsQuoteEachDialectVerbatim) {
    std::string doc = repo_file("docs/pmu.md");
    for (EventDialect d : kDialects)
        EXPECT_NE(doc.find(indented(event_syntax_help(d))), std::string::npos)
            << "docs/pmu.md does not quote the " << event_dialect_name(d) << " syntax help:\n"
            << indented(event_syntax_help(d));
}

TEST(EventSyntaxHelp, EveryModifierOfTheDialectIsNamed) {
    // The help names each nanoBench modifier the dialect's parser accepts, and no other.
    for (EventDialect d : {EventDialect::intel, EventDialect::amd_zen}) {
        std::string help = event_syntax_help(d);
        for (usize i = 0; i < kTermCount; ++i) {
            const TermDef& t = kTerms[i];
            if (!t.nb) continue;
            std::string word = std::string(" ") + t.nb + (t.value ? "=" : "");
            bool on = (t.on & dialect_format(d).on) != 0;
            EXPECT_EQ(help.find(word) != std::string::npos, on) << event_dialect_name(d) << ": " << t.nb;
        }
    }
}

TEST(EventSyntaxHelp, ExamplesParseInTheirDialect) {
    const std::vector<std::pair<EventDialect, std::vector<const char*>>> examples = {
        {EventDialect::intel,
         {"instructions", "cycles:u", "INST_RETIRED.ANY", "branch-misses", "0E.01", "D1.01.CMSK=1.INV", "C0.00.CTR=2",
          "event=0x3c,umask=0x01", "r01c2", "r01c2:u", "cpu/event=0x3c/", "cpu_core/event=0x3c/", "tsc"}},
        {EventDialect::amd_zen,
         {"instructions", "cycles:u", "branch-misses", "l1d-misses", "aperf", "0C0.00", "1C1.02", "076.00.CTR=2",
          "event=0xc0,umask=0x00", "event=0xc0,hostonly,guestonly", "r1000000c1", "cpu/event=0xc0/", "tsc"}},
        {EventDialect::amd, {"instructions", "0C0.00", "076.00.CTR=2", "r1000000c1", "l1d-misses"}},
        {EventDialect::netburst,
         {"instr_retired", "branch_retired.MMTP+MMTM", "uops_retired:u", "instructions", "cycles", "branches",
          "branch-misses", "uops", "tsc"}},
    };
    for (const auto& [d, specs] : examples)
        for (const char* s : specs) {
            Result<Event> r = parse_event_spec(StrView(s), d);
            EXPECT_TRUE(r.ok()) << event_dialect_name(d) << ": " << s << ": " << (r.ok() ? "" : r.error().msg);
        }
    // What the NetBurst help says does not exist.
    for (const char* s : {"0E.01", "event=0x3c", "r01c2"})
        EXPECT_FALSE(parse_event_spec(StrView(s), EventDialect::netburst).ok()) << s;
}

TEST(EventSyntaxHelp, ListingEndsWithTheDialectsOfItsCpus) {
    struct Case {
        sim::SimMachine m;
        EventDialect d;
    };
    Case cases[] = {{sim::intel_v4_goldmont_plus(1), EventDialect::intel},
                    {sim::amd_zen(1), EventDialect::amd_zen},
                    {sim::amd_k10(1), EventDialect::amd},
                    {sim::netburst_p4(1), EventDialect::netburst},
                    // No counters: still the vendor's dialect (QEMU's default CPU is an AMD family 0FH).
                    {sim::qemu_tcg(1), EventDialect::amd},
                    {sim::qemu_tcg_intel(1), EventDialect::intel}};
    for (Case& c : cases) {
        pmutest::RunResult r = pmutest::run(c.m, {"events"});
        EXPECT_EQ(r.status, 0) << r.out;
        std::string help = event_syntax_help(c.d);
        ASSERT_GE(r.out.size(), help.size());
        EXPECT_EQ(r.out.substr(r.out.size() - help.size()), help) << event_dialect_name(c.d);
        EXPECT_EQ(r.out.find("Event syntax"), r.out.size() - help.size()) << "one syntax block";
    }
}

// ---- the lexer ----

TEST(SpecLexer, ClassifiesTokensByShape) {
    EXPECT_EQ(classify_token("tsc"), TokenForm::tsc);
    EXPECT_EQ(classify_token("TSC"), TokenForm::tsc);
    EXPECT_EQ(classify_token("0E.01"), TokenForm::nanobench);
    EXPECT_EQ(classify_token("FE.DSB_MISS"), TokenForm::nanobench);  // hex before the dot
    EXPECT_EQ(classify_token("cpu/event=1/"), TokenForm::pmu);
    EXPECT_EQ(classify_token("event=1,umask=2"), TokenForm::perf_terms);
    EXPECT_EQ(classify_token("inv,edge"), TokenForm::perf_terms);
    EXPECT_EQ(classify_token("r01c2:u"), TokenForm::perf_raw);
    EXPECT_EQ(classify_token("r"), TokenForm::name);
    EXPECT_EQ(classify_token("rZZ"), TokenForm::name);
    EXPECT_EQ(classify_token("INST_RETIRED.ANY"), TokenForm::name);
    EXPECT_EQ(classify_token("cycles:u"), TokenForm::name);
}

TEST(SpecLexer, CharactersAndNumbers) {
    EXPECT_TRUE(all_hex("09afAF"));
    EXPECT_FALSE(all_hex(""));
    EXPECT_FALSE(all_hex("0x1"));
    EXPECT_TRUE(all_digits("0123"));
    EXPECT_FALSE(all_digits("1a"));
    EXPECT_FALSE(all_digits(""));
    for (char c : std::string("azAZ09_.-:+@()[]")) EXPECT_TRUE(name_char(c)) << c;
    for (char c : std::string(",;/=# \t")) EXPECT_FALSE(name_char(c)) << c;
    u32 v = 0;
    EXPECT_TRUE(parse_hex_u32("0x1F", 0xFF, &v));
    EXPECT_EQ(v, 0x1Fu);
    EXPECT_TRUE(parse_hex_u32("ff", 0xFF, &v));
    EXPECT_FALSE(parse_hex_u32("100", 0xFF, &v));
    EXPECT_FALSE(parse_hex_u32("0x", 0xFF, &v));
    char buf[48];
    clip(StrView(std::string(60, 'a').c_str()), buf, sizeof buf);
    EXPECT_EQ(std::string(buf), std::string(37, 'a') + "...");
    clip(StrView("a\x01z", 3), buf, sizeof buf);
    EXPECT_STREQ(buf, "a?z");
    StrView w[3];
    EXPECT_EQ(split_words("  a  bb\tc ", w, 3), 3u);
    EXPECT_EQ(std::string(w[1].ptr, w[1].len), "bb");
    EXPECT_EQ(split_words("a b c d", w, 3), 4u);
}

TEST(SpecLexer, SitesFormatErrorsForSpecsAndFiles) {
    Error e = SpecSite::of_spec("0E.1G", EventDialect::intel).fail(3, "UMASK '%s' is not hex", "1G");
    EXPECT_EQ(e.code, Errc::invalid_argument);
    EXPECT_STREQ(e.msg, "event spec '0E.1G': UMASK '1G' is not hex (at offset 3)");
    e = SpecSite::of_line("\\pmulab\\events\\x.evt", 12).fail(7, "CMSK value '%s' is not a number in 0-255", "999");
    EXPECT_STREQ(e.msg, "\\pmulab\\events\\x.evt:12: CMSK value '999' is not a number in 0-255");
}

TEST(SpecLexer, SplitsTheDisplayName) {
    SpecSite site = SpecSite::of_spec("0E.01  UOPS", EventDialect::intel);
    SpecWords w;
    ASSERT_TRUE(split_spec_words(site, "0E.01  UOPS", &w).ok());
    EXPECT_EQ(std::string(w.tok.ptr, w.tok.len), "0E.01");
    EXPECT_EQ(std::string(w.name.ptr, w.name.len), "UOPS");
    EXPECT_EQ(w.name_off, 7u);
    ASSERT_TRUE(split_spec_words(site, "cycles", &w).ok());
    EXPECT_TRUE(w.name.empty());
    EXPECT_EQ(err_of(split_spec_words(SpecSite::of_spec("a b c", EventDialect::intel), "a b c", &w)),
              "event spec 'a b c': unexpected 'c' after the event name 'b' (at offset 4)");
    EXPECT_EQ(err_of(split_spec_words(SpecSite::of_spec("a b/c", EventDialect::intel), "a b/c", &w)),
              "event spec 'a b/c': event name 'b/c' contains '/' (names use letters, digits and _ . - : + @ ( ) [ ]) "
              "(at offset 3)");
}

TEST(SpecLexer, PrivilegeModifiers) {
    SpecSite site = SpecSite::of_spec("x:uk", EventDialect::intel);
    Event e;
    ASSERT_TRUE(parse_priv_mods(site, "u", 2, true, &e).ok());
    EXPECT_TRUE(e.usr);
    EXPECT_FALSE(e.os);
    ASSERT_TRUE(parse_priv_mods(site, "", 2, false, &e).ok());  // after '/': none given, unchanged
    EXPECT_TRUE(e.usr);
    EXPECT_FALSE(e.os);
    EXPECT_EQ(err_of(parse_priv_mods(site, "", 2, true, &e)),
              "event spec 'x:uk': empty modifier list after ':' (expected u or k) (at offset 2)");
    EXPECT_EQ(err_of(parse_priv_mods(site, "up", 2, true, &e)),
              "event spec 'x:uk': unsupported modifier 'p' (pmulab accepts u and k) (at offset 3)");
}

// ---- the term table ----

TEST(EventTerms, TableDeclaresEachDialectsFields) {
    EXPECT_EQ(dialect_format(EventDialect::intel).event_max, 0xFFu);
    EXPECT_EQ(dialect_format(EventDialect::amd).event_max, 0xFFFu);
    EXPECT_EQ(dialect_format(EventDialect::amd_zen).event_max, 0xFFFu);
    // nanoBench and perf spell the same field differently; both find the same row.
    EXPECT_EQ(find_term(TermSyntax::nanobench, "cmsk"), find_term(TermSyntax::perf, "CMASK"));
    EXPECT_EQ(find_term(TermSyntax::nanobench, "AnyT"), find_term(TermSyntax::perf, "any"));
    EXPECT_EQ(find_term(TermSyntax::nanobench, "EDG"), find_term(TermSyntax::perf, "edge"));
    EXPECT_EQ(find_term(TermSyntax::nanobench, "HostOnly"), find_term(TermSyntax::perf, "hostonly"));
    EXPECT_EQ(find_term(TermSyntax::nanobench, "event"), nullptr);  // perf only
    EXPECT_EQ(find_term(TermSyntax::perf, "CTR"), nullptr);         // nanoBench only
    // Event files: no privilege or AMD modifiers.
    EXPECT_NE(find_term(TermSyntax::nanobench, "USR"), nullptr);
    EXPECT_EQ(find_term(TermSyntax::event_file, "USR"), nullptr);
    EXPECT_EQ(find_term(TermSyntax::event_file, "HostOnly"), nullptr);
    EXPECT_NE(find_term(TermSyntax::event_file, "MSR_PF"), nullptr);
    // Vendor fields.
    for (const char* k : {"AnyT", "EQ", "UMASK2", "MSR_RSP0", "MSR_RSP1", "MSR_3F6H", "MSR_PF"})
        EXPECT_EQ(find_term(TermSyntax::nanobench, k)->on, kOnIntel) << k;
    for (const char* k : {"HostOnly", "GuestOnly"}) EXPECT_EQ(find_term(TermSyntax::nanobench, k)->on, kOnAmd) << k;
    // Each row has a name in some syntax and a distinct (field, msr).
    for (usize i = 0; i < kTermCount; ++i) {
        EXPECT_TRUE(kTerms[i].nb || kTerms[i].perf) << i;
        for (usize j = i + 1; j < kTermCount; ++j)
            EXPECT_FALSE(kTerms[i].field == kTerms[j].field && kTerms[i].msr == kTerms[j].msr) << i << " " << j;
    }
}

TEST(EventTerms, OneTableForModifiersAndTerms) {
    // The same fields through either syntax give the same Event.
    SpecSite site = SpecSite::of_spec("x", EventDialect::intel);
    Event a, b;
    TermState sa, sb;
    ASSERT_TRUE(parse_terms(site, TermSyntax::nanobench, "CMSK=3.INV.EDG.AnyT.EQ.UMASK2=0x12.OS", 0, &sa, &a).ok());
    ASSERT_TRUE(finish_terms(site, 0, sa, &a).ok());
    ASSERT_TRUE(parse_terms(site, TermSyntax::perf, "cmask=3,inv,edge=1,any,eq,umask2=0x12,os", 0, &sb, &b).ok());
    ASSERT_TRUE(finish_terms(site, 0, sb, &b).ok());
    EXPECT_EQ(a.perfevtsel().raw(), b.perfevtsel().raw());
    EXPECT_EQ(a.cmask, 3u);
    EXPECT_EQ(a.intel.umask2, 0x12u);
    EXPECT_TRUE(a.inv && a.edge && a.intel.any && a.intel.eq && a.os && !a.usr);
    EXPECT_TRUE(sa.has(EventField::cmask));
    EXPECT_FALSE(sa.has(EventField::event));

    // Values: specs pin CTR=n; event files take a set of counters.
    Event p, f;
    TermState sp, sf;
    ASSERT_TRUE(parse_terms(site, TermSyntax::nanobench, "CTR=2", 0, &sp, &p).ok());
    EXPECT_EQ(p.pinned_counter, 2);
    EXPECT_EQ(p.allowed_gp, 0xFFFFFFFFu);
    ASSERT_TRUE(parse_terms(SpecSite::of_line("f", 1), TermSyntax::event_file, "CTR=1-3", 0, &sf, &f).ok());
    EXPECT_EQ(f.pinned_counter, -1);
    EXPECT_EQ(f.allowed_gp, 0xEu);

    // MSR_* rows: the MSR of the row, and alone.
    Event m;
    TermState sm;
    ASSERT_TRUE(parse_terms(site, TermSyntax::nanobench, "MSR_RSP1=0x10001", 0, &sm, &m).ok());
    ASSERT_EQ(m.intel.aux_count, 1u);
    EXPECT_EQ(m.intel.aux[0].msr, regs::MSR_OFFCORE_RSP_1);
    EXPECT_EQ(m.intel.aux[0].value, 0x10001u);
    EXPECT_TRUE(m.taken_alone);
}

TEST(EventTerms, DialectValidityComesFromTheTable) {
    Event e;
    TermState st;
    SpecSite amd = SpecSite::of_spec("x", EventDialect::amd_zen);
    EXPECT_EQ(err_of(parse_terms(amd, TermSyntax::nanobench, "EQ", 6, &st, &e)),
              "event spec 'x': modifier 'EQ' is an Intel modifier; AMD PerfEvtSel has no such field (at offset 6)");
    st = TermState();
    EXPECT_EQ(err_of(parse_terms(amd, TermSyntax::perf, "umask2=1", 0, &st, &e)),
              "event spec 'x': term 'umask2' is an Intel field; AMD PerfEvtSel has no such field (at offset 0)");
    st = TermState();
    SpecSite intel = SpecSite::of_spec("x", EventDialect::intel);
    EXPECT_EQ(err_of(parse_terms(intel, TermSyntax::perf, "guestonly", 0, &st, &e)),
              "event spec 'x': term 'guestonly' is an AMD field (PerfEvtSel HG_ONLY); this is an Intel CPU (at "
              "offset 0)");
    st = TermState();
    EXPECT_EQ(err_of(parse_terms(amd, TermSyntax::perf, "event=0x1c1", 0, &st, &e)), "ok");
    EXPECT_EQ(e.event_select, 0x1C1u);
    st = TermState();
    EXPECT_EQ(err_of(parse_terms(intel, TermSyntax::perf, "event=0x1c1", 0, &st, &e)),
              "event spec 'x': event value '0x1c1' is out of range (Intel event selects are 0x00-0xff) (at offset "
              "6)");
    st = TermState();
    EXPECT_EQ(err_of(parse_terms(SpecSite::of_line("f.evt", 4), TermSyntax::event_file_fixed, "AnyT.INV", 0, &st, &e)),
              "f.evt:4: modifier 'INV' cannot be used on a fixed counter (only AnyT, TakenAlone)");
    st = TermState();
    Event u;
    ASSERT_TRUE(parse_terms(intel, TermSyntax::perf, "usr=0,os=0", 0, &st, &u).ok());
    EXPECT_EQ(err_of(finish_terms(intel, 5, st, &u)),
              "event spec 'x': usr and os are both off: the event would never count (at offset 5)");
}

TEST(EventTerms, UnknownItemMessagesNameTheTable) {
    // The "known: ..." lists of the messages name every row of their syntax and dialect
    // (perf's list predates hostonly/guestonly and leaves them out: kept as it was).
    struct Case {
        TermSyntax syn;
        EventDialect d;
    };
    for (Case c : {Case{TermSyntax::nanobench, EventDialect::intel}, Case{TermSyntax::nanobench, EventDialect::amd_zen},
                   Case{TermSyntax::event_file, EventDialect::intel}, Case{TermSyntax::perf, EventDialect::intel}}) {
        bool file = c.syn == TermSyntax::event_file;
        SpecSite site = file ? SpecSite::of_line("f", 1) : SpecSite::of_spec("x", c.d);
        Event e;
        TermState st;
        std::string msg = err_of(parse_terms(site, c.syn, "NOPE", 0, &st, &e));
        ASSERT_NE(msg.find("unknown"), std::string::npos) << msg;
        for (usize i = 0; i < kTermCount; ++i) {
            const TermDef& t = kTerms[i];
            const char* k = c.syn == TermSyntax::perf ? t.perf : t.nb;
            if (!k || !(t.on & dialect_format(c.d).on) || (file && !t.in_files)) continue;
            if (c.syn == TermSyntax::perf && t.on == kOnAmd) continue;
            std::string word = std::string(k) + (t.value && c.syn != TermSyntax::perf ? "=" : "");
            EXPECT_NE(msg.find(" " + word), std::string::npos) << msg << " lacks " << word;
        }
    }
}
