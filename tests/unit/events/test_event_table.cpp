// Event files (pmulab/event_table.h): the parser on the checked-in sample files and
// every error path, the choice of file per CPU (family/model, stepping ranges, hybrid
// core type and native model ID, on real CPUID dumps), and name resolution through a
// file before the architectural names.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "events/event_files.h"
#include "pmu/pmu.h"
#include "support/sim_measure.h"
#include "support/test_platform.h"

using namespace pmulab;

namespace {

std::string events_dir() {
    return (std::filesystem::path(__FILE__).parent_path().parent_path().parent_path() / "data" / "events").string();
}

std::string read_text(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    EXPECT_TRUE(f.good()) << "cannot open " << path;
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

std::string sample(const std::string& name) { return read_text(events_dir() + "/" + name); }

// An in-memory boot volume.
class MemFiles final : public FileSource {
public:
    std::map<std::string, std::string> files;  // full path -> contents
    bool list_fails = false;
    int probe_reads = 0, whole_reads = 0;  // with a byte limit, without

    Result<Vec<char>> read(const char* path, usize max_bytes) override {
        auto it = files.find(path);
        if (it == files.end()) return Error::make(Errc::not_found, "%s: no such file", path);
        Vec<char> v;
        usize n = it->second.size() < max_bytes ? it->second.size() : max_bytes;
        (max_bytes == ~usize(0) ? whole_reads : probe_reads)++;
        for (usize i = 0; i < n; ++i) v.push(it->second[i]);
        return v;
    }
    Status list(const char* dir, const char* suffix, Vec<FileName>* out) override {
        if (list_fails) return Error::make(Errc::io, "device error");
        std::string prefix = std::string(dir) + "\\";
        bool any_dir = false;
        for (auto& [path, text] : files) {
            if (path.rfind(prefix, 0) != 0) continue;
            any_dir = true;
            std::string name = path.substr(prefix.size());
            std::string suf = suffix;
            if (name.size() < suf.size()) continue;
            std::string tail = name.substr(name.size() - suf.size());
            for (auto& c : tail) c = char(std::tolower(c));
            if (tail != suf || name.find('\\') != std::string::npos) continue;
            FileName& fn = out->emplace();
            str_copy(fn.name, sizeof fn.name, name.c_str());
        }
        if (!any_dir) return Error::make(Errc::not_found, "%s: no such directory", dir);
        return ok_status();
    }
    void add(const std::string& name, const std::string& text) { files["\\pmulab\\events\\" + name] = text; }
    void add_samples() {
        for (const char* n : {"skylake_core.evt", "alderlake_goldencove_core.evt", "alderlake_gracemont_core.evt"})
            add(n, sample(n));
    }
};

CpuIdentity cpu(u32 family, u32 model, u32 stepping = 0, u8 core_type = kCoreTypeNone, u32 native = 0,
                const char* vendor = "GenuineIntel") {
    CpuIdentity id;
    str_copy(id.vendor_string, sizeof id.vendor_string, vendor);
    id.vendor = str_eq(vendor, "GenuineIntel") ? Vendor::intel : Vendor::other;
    id.family = family;
    id.model = model;
    id.stepping = stepping;
    id.core_type = core_type;
    id.hybrid = core_type != kCoreTypeNone;
    id.native_model_id = native;
    return id;
}

const CpuIdentity kSkylakeClient = cpu(6, 0x5E, 3);  // QEMU -cpu Skylake-Client
const CpuIdentity kAdlP = cpu(6, 0x97, 2, kCoreTypeCore, 1);
const CpuIdentity kAdlE = cpu(6, 0x97, 2, kCoreTypeAtom, 1);

EventTable parse_ok(const std::string& text, const char* path = "t.evt") {
    EventTable t;
    Status s = parse_event_table(StrView(text.data(), text.size()), path, &t);
    EXPECT_TRUE(s.ok()) << s.error().msg;
    return t;
}

std::string parse_err(const std::string& text) {
    EventTable t;
    Status s = parse_event_table(StrView(text.data(), text.size()), "t.evt", &t);
    EXPECT_FALSE(s.ok()) << text;
    if (s.ok()) return "";
    EXPECT_EQ(s.error().code, Errc::invalid_argument);
    return s.error().msg;
}

std::string enc(const Event& e) {
    StrBuf b;
    put_event_encoding(b, e);
    return std::string(b.c_str(), b.size());
}

const Event& ev(const EventTable& t, const char* name) {
    const Event* e = t.find(name);
    EXPECT_NE(e, nullptr) << name;
    static Event none;
    return e ? *e : none;
}

const char kHead[] = "@match GenuineIntel 06_5E\n";

// ---------------------------------------------------------------- the parser

TEST(EventTable, SkylakeSampleFile) {
    EventTable t = parse_ok(sample("skylake_core.evt"), "\\pmulab\\events\\skylake_core.evt");
    EXPECT_STREQ(t.path, "\\pmulab\\events\\skylake_core.evt");
    ASSERT_EQ(t.matches.size(), 6u);
    EXPECT_EQ(t.matches[1].model, 0x5Eu);
    EXPECT_EQ(t.matches[1].line, 6u);
    EXPECT_EQ(t.events.size(), 39u);
    EXPECT_EQ(t.first_event_line, 11u);

    const Event& uops = ev(t, "UOPS_ISSUED.ANY");
    EXPECT_EQ(enc(uops), "0E.01");
    EXPECT_EQ(uops.kind, EventKind::programmable);
    EXPECT_EQ(uops.allowed_gp, 0xFFFFFFFFu);
    EXPECT_EQ(uops.pinned_counter, -1);
    EXPECT_FALSE(uops.taken_alone);
    EXPECT_TRUE(uops.usr && uops.os);
    EXPECT_EQ(uops.arch_bit, -1);

    EXPECT_EQ(enc(ev(t, "CYCLE_ACTIVITY.STALLS_TOTAL")), "A3.04.CMSK=4");
    EXPECT_EQ(enc(ev(t, "RS_EVENTS.EMPTY_END")), "5E.01.CMSK=1.EDG.INV");
    EXPECT_EQ(enc(ev(t, "L1D_PEND_MISS.PENDING_CYCLES_ANY")), "48.01.CMSK=1.AnyT");
    const Event& mem_any = ev(t, "CYCLE_ACTIVITY.STALLS_MEM_ANY");
    EXPECT_EQ(mem_any.cmask, 20);
    EXPECT_EQ(mem_any.allowed_gp, 0xFu);
    EXPECT_EQ(ev(t, "INST_RETIRED.PREC_DIST").allowed_gp, 0x2u);
    const Event& tot = ev(t, "INST_RETIRED.TOTAL_CYCLES_PS");
    EXPECT_EQ(enc(tot), "C0.01.CMSK=10.INV");
    EXPECT_EQ(tot.allowed_gp, 0xDu);

    const Event& dsb = ev(t, "FRONTEND_RETIRED.DSB_MISS");
    EXPECT_EQ(enc(dsb), "C6.01.MSR_PF=0x11.TakenAlone");
    EXPECT_EQ(dsb.intel.aux_count, 1);
    EXPECT_EQ(dsb.intel.aux[0].msr, 0x3F7u);
    EXPECT_EQ(dsb.allowed_gp, 0xFu);
    const Event& ll = ev(t, "MEM_TRANS_RETIRED.LOAD_LATENCY_GT_64");
    EXPECT_EQ(ll.intel.aux[0].msr, 0x3F6u);
    EXPECT_EQ(ll.intel.aux[0].value, 0x40u);
    EXPECT_TRUE(ll.taken_alone);
    const Event& ocr = ev(t, "OFFCORE_RESPONSE.DEMAND_DATA_RD.SUPPLIER_NONE.SNOOP_MISS");
    EXPECT_EQ(enc(ocr), "B7.01.MSR_RSP0=0x200020001.TakenAlone");
    EXPECT_EQ(ocr.intel.aux[0].msr, 0x1A6u);

    // Fixed counters take the architectural event's GP equivalent and availability bit.
    const Event& inst = ev(t, "INST_RETIRED.ANY");
    EXPECT_EQ(inst.kind, EventKind::fixed);
    EXPECT_EQ(enc(inst), "FIXED_CTR0=C0.00");
    EXPECT_TRUE(inst.gp_equivalent && inst.gp_equivalent_exact);
    EXPECT_EQ(inst.arch_bit, kArchInstructionsRetired);
    const Event& any = ev(t, "CPU_CLK_UNHALTED.THREAD_ANY");
    EXPECT_EQ(enc(any), "FIXED_CTR1=3C.00.AnyT");
    const Event& ref = ev(t, "CPU_CLK_UNHALTED.REF_TSC");
    EXPECT_EQ(enc(ref), "FIXED_CTR2=3C.01");
    EXPECT_FALSE(ref.gp_equivalent_exact);

    // Case-insensitive lookup, tokens as written.
    EXPECT_EQ(t.find("uops_issued.any"), &uops);
    EXPECT_EQ(t.find("UOPS_ISSUED"), nullptr);
    EXPECT_EQ(std::string(t.token(0).ptr, t.token(0).len), "FIXED_CTR0");
    EXPECT_EQ(std::string(t.token(20).ptr, t.token(20).len), "A3.04.CMSK=4");
    EXPECT_STREQ(t.events[20].name, "CYCLE_ACTIVITY.STALLS_TOTAL");
}

TEST(EventTable, HybridSampleFiles) {
    EventTable gc = parse_ok(sample("alderlake_goldencove_core.evt"));
    EventTable gm = parse_ok(sample("alderlake_gracemont_core.evt"));
    EXPECT_EQ(gc.events.size(), 16u);
    EXPECT_EQ(gm.events.size(), 10u);
    EXPECT_TRUE(gc.matches[0].has_core_type && gc.matches[0].core_type == 0x40 && gc.matches[0].native_model_id == 1);
    EXPECT_EQ(gm.matches.size(), 6u);
    EXPECT_FALSE(gm.matches[5].has_core_type);  // 06_BE
    EXPECT_EQ(enc(ev(gc, "UOPS_ISSUED.ANY")), "AE.01");
    EXPECT_EQ(enc(ev(gm, "UOPS_ISSUED.ANY")), "0E.00");
    EXPECT_EQ(enc(ev(gc, "TOPDOWN.SLOTS")), "FIXED_CTR3=A4.01");
    const Event& ocr = ev(gc, "OCR.DEMAND_DATA_RD.ANY_RESPONSE");
    EXPECT_EQ(enc(ocr), "2A.01.MSR_RSP0=0x10001.TakenAlone");
    EXPECT_EQ(ocr.allowed_gp, 0xFu);
}

TEST(EventTable, SyntaxDetails) {
    EventTable t = parse_ok(std::string("# comment\n\n  ") + kHead +
                            "@match GenuineIntel 6_5 stepping=3 core=0x40 native=0x1  # trailing\r\n"
                            "0e.01 a.b   # lower-case hex, comment\r\n"
                            "FIXED_CTR5.TakenAlone F5\n"
                            "d1.20.cmsk=0x10.inv.edg.anyt.eq.umask2=3.ctr=2-5.msr_rsp1=12.msr_3f6h=0x3 X.Y\n"
                            "0E.01.CTR=0x80000001.takenalone Z-1\n"
                            "00.00.CTR=31 last");
    ASSERT_EQ(t.matches.size(), 2u);
    const EventTableMatch& m = t.matches[1];
    EXPECT_EQ(m.family, 6u);
    EXPECT_EQ(m.model, 5u);
    EXPECT_TRUE(m.has_stepping && m.stepping_min == 3 && m.stepping_max == 3);
    EXPECT_EQ(m.score(), 7u);
    EXPECT_EQ(t.matches[0].score(), 0u);
    EXPECT_EQ(enc(ev(t, "A.B")), "0E.01");
    const Event& f5 = ev(t, "F5");
    EXPECT_EQ(f5.kind, EventKind::fixed);
    EXPECT_EQ(f5.fixed_counter, 5);
    EXPECT_FALSE(f5.gp_equivalent);
    EXPECT_TRUE(f5.taken_alone);
    const Event& xy = ev(t, "X.Y");
    EXPECT_EQ(enc(xy), "D1.20.CMSK=16.AnyT.EDG.INV.EQ.UMASK2=0x03.MSR_RSP1=0xC.MSR_3F6H=0x3.TakenAlone");
    EXPECT_EQ(xy.allowed_gp, 0x3Cu);
    EXPECT_EQ(ev(t, "Z-1").allowed_gp, 0x80000001u);
    EXPECT_EQ(ev(t, "last").allowed_gp, 0x80000000u);
    EXPECT_EQ(t.events.size(), 5u);

    // Header only: stops at the first event.
    EventTable h;
    std::string ht = std::string(kHead) + "0E.01 A\nbogus\n";
    ASSERT_TRUE(parse_event_table(StrView(ht.data(), ht.size()), "t.evt", &h, true).ok());
    EXPECT_EQ(h.matches.size(), 1u);
    EXPECT_EQ(h.events.size(), 0u);
    EXPECT_EQ(h.first_event_line, 2u);
}

TEST(EventTable, EveryErrorNamesTheLine) {
    const std::string h = kHead;
    EXPECT_EQ(parse_err(""), "t.evt: no @match line (an event file starts with the CPUs it is for, e.g. '@match "
                             "GenuineIntel 06_5E')");
    EXPECT_EQ(parse_err("# only a comment\n"), parse_err(""));
    EXPECT_EQ(parse_err(h), "t.evt: no events");
    EXPECT_EQ(parse_err("0E.01 A\n"), "t.evt:1: event before any @match line (an event file starts with the CPUs "
                                      "it is for, e.g. '@match GenuineIntel 06_5E')");
    EXPECT_EQ(parse_err(h + "@include x\n"), "t.evt:2: unknown directive '@include' (known: @match)");
    EXPECT_EQ(parse_err(h + "0E.01 A\n" + h), "t.evt:3: @match after the first event (the @match lines come first)");
    EXPECT_EQ(parse_err(h + "0E.01 A\n\x01\n"), "t.evt:3: not a text line (byte 0x01 at column 1)");
    EXPECT_EQ(parse_err(h + "0E.01 A\xC3\xA9\n"), "t.evt:2: not a text line (byte 0xC3 at column 8)");
    parse_ok(h + "0E.01 A  # comments may say anything: \xC3\xA9\x01\n");

    struct Case {
        const char* match;
        const char* msg;
    };
    for (const Case& c : std::vector<Case>{
             {"@match", "@match needs a vendor and FAMILY_MODEL, e.g. '@match GenuineIntel 06_5E'"},
             {"@match GenuineIntel", "@match needs a vendor and FAMILY_MODEL, e.g. '@match GenuineIntel 06_5E'"},
             {"@match GenuineIntel 06_5E stepping=1 core=0x40 native=1 x=1",
              "@match has too many words (vendor FAMILY_MODEL [stepping=] [core=] [native=])"},
             {"@match GenuineIntelX 06_5E",
              "vendor 'GenuineIntelX' is longer than 12 characters (CPUID.0 vendor string)"},
             {"@match GenuineIntel 065E", "'065E' is not FAMILY_MODEL in hex, e.g. 06_5E"},
             {"@match GenuineIntel 06-5E", "'06-5E' is not FAMILY_MODEL in hex, e.g. 06_5E"},
             {"@match GenuineIntel 006_5E", "'006_5E' is not FAMILY_MODEL in hex, e.g. 06_5E"},
             {"@match GenuineIntel 06_", "'06_' is not FAMILY_MODEL in hex, e.g. 06_5E"},
             {"@match GenuineIntel 06_5G", "'06_5G' is not FAMILY_MODEL in hex, e.g. 06_5E"},
             {"@match GenuineIntel _5E", "'_5E' is not FAMILY_MODEL in hex, e.g. 06_5E"},
             {"@match GenuineIntel 06_5E stepping", "'stepping' is not KEY=VALUE (stepping=, core=, native=)"},
             {"@match GenuineIntel 06_5E stepping=G", "stepping 'G' is not a stepping or range in hex (0-F), e.g. 5-F"},
             {"@match GenuineIntel 06_5E stepping=10",
              "stepping '10' is not a stepping or range in hex (0-F), e.g. 5-F"},
             {"@match GenuineIntel 06_5E stepping=1-",
              "stepping '1-' is not a stepping or range in hex (0-F), e.g. 5-F"},
             {"@match GenuineIntel 06_5E stepping=", "stepping '' is not a stepping or range in hex (0-F), e.g. 5-F"},
             {"@match GenuineIntel 06_5E stepping=5-4", "stepping range '5-4' is empty (5 > 4)"},
             {"@match GenuineIntel 06_5E stepping=1 stepping=2", "stepping= given twice"},
             {"@match GenuineIntel 06_5E core=P",
              "core 'P' is not a hybrid core type in hex (CPUID.1AH:EAX[31:24]: 0x40 P-core, 0x20 E-core)"},
             {"@match GenuineIntel 06_5E core=0",
              "core '0' is not a hybrid core type in hex (CPUID.1AH:EAX[31:24]: 0x40 P-core, 0x20 E-core)"},
             {"@match GenuineIntel 06_5E core=0x100",
              "core '0x100' is not a hybrid core type in hex (CPUID.1AH:EAX[31:24]: 0x40 P-core, 0x20 E-core)"},
             {"@match GenuineIntel 06_5E core=0x40 core=0x20", "core= given twice"},
             {"@match GenuineIntel 06_5E core=0x40 native=0x1000000",
              "native '0x1000000' is not a native model ID in hex (CPUID.1AH:EAX[23:0])"},
             {"@match GenuineIntel 06_5E core=0x40 native=1 native=1", "native= given twice"},
             {"@match GenuineIntel 06_5E native=1", "native= needs core= (the native model ID is per core type)"},
             {"@match GenuineIntel 06_5E model=1", "unknown @match key 'model' (known: stepping, core, native)"},
         })
        EXPECT_EQ(parse_err(std::string(c.match) + "\n0E.01 A\n"), std::string("t.evt:1: ") + c.msg) << c.match;

    for (const Case& c : std::vector<Case>{
             {"0E.01", "'0E.01' has no event name (expected 'EE.UU[.MOD]... NAME')"},
             {"0E.01 A B", "unexpected text after the event name 'A'"},
             {"0E.01 A=B", "event name 'A=B' contains '=' (names use letters, digits and _ . - : + @ ( ) [ ])"},
             {"0E.01 AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
              "event name 'AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA...' is longer than 63 characters"},
             {"0E A", "'0E' is not EE.UU[.MOD]... or FIXED_CTRn (e.g. 0E.01 or FIXED_CTR0)"},
             {"UOPS A", "'UOPS' is not EE.UU[.MOD]... or FIXED_CTRn (e.g. 0E.01 or FIXED_CTR0)"},
             {"0G.01 A", "event select '0G' is not 2 hex digits"},
             {"10E.01 A", "event select '10E' is not 2 hex digits"},
             {".01 A", "event select '' is not 2 hex digits"},
             {"0E.1G A", "UMASK '1G' is not 2 hex digits"},
             {"0E. A", "UMASK '' is not 2 hex digits"},
             {"0E.101 A", "UMASK '101' is not 2 hex digits"},
             {"FIXED_CTR16 A", "'FIXED_CTR16' is not FIXED_CTRn with n in 0-15"},
             {"FIXED_CTRx A", "'FIXED_CTRx' is not FIXED_CTRn with n in 0-15"},
             {"FIXED_CTR01 A", "'FIXED_CTR01' is not FIXED_CTRn with n in 0-15"},
             {"FIXED_CTR1.CMSK=1 A", "modifier 'CMSK' cannot be used on a fixed counter (only AnyT, TakenAlone)"},
             {"FIXED_CTR1.CTR=1 A", "modifier 'CTR' cannot be used on a fixed counter (only AnyT, TakenAlone)"},
             {"0E.01.FOO A", "unknown modifier 'FOO' (known: CMSK=n, INV, EDG, AnyT, EQ, UMASK2=n, CTR=n|a-b|0xMASK, "
                             "TakenAlone, MSR_RSP0=v, MSR_RSP1=v, MSR_3F6H=v, MSR_PF=v)"},
             {"0E.01..INV A", "empty modifier (two dots in a row, or a trailing dot)"},
             {"0E.01. A", "empty modifier (two dots in a row, or a trailing dot)"},
             {"0E.01.INV.inv A", "modifier 'INV' given twice"},
             {"0E.01.INV=1 A", "modifier 'INV' takes no value"},
             {"0E.01.CMSK A", "modifier 'CMSK' needs a value (CMSK=...)"},
             {"0E.01.CMSK=256 A", "CMSK value '256' is not a number in 0-255"},
             {"0E.01.CMSK=x A", "CMSK value 'x' is not a number in 0-255"},
             {"0E.01.UMASK2=0x100 A", "UMASK2 value '0x100' is not a number in 0-255"},
             {"0E.01.CTR=32 A", "CTR value '32' is not a counter (0-31), a range a-b or a mask 0xMASK"},
             {"0E.01.CTR=3-1 A", "CTR value '3-1' is not a counter (0-31), a range a-b or a mask 0xMASK"},
             {"0E.01.CTR=0-32 A", "CTR value '0-32' is not a counter (0-31), a range a-b or a mask 0xMASK"},
             {"0E.01.CTR=0x0 A", "CTR value '0x0' is not a counter (0-31), a range a-b or a mask 0xMASK"},
             {"0E.01.CTR=0x100000000 A",
              "CTR value '0x100000000' is not a counter (0-31), a range a-b or a mask 0xMASK"},
             {"0E.01.CTR= A", "CTR value '' is not a counter (0-31), a range a-b or a mask 0xMASK"},
             {"0E.01.MSR_PF=z A", "MSR_PF value 'z' is not a number"},
             {"0E.01.MSR_PF=1.MSR_RSP0=1.MSR_RSP1=1 A", "at most 2 MSR_* modifiers per event"},
         })
        EXPECT_EQ(parse_err(h + c.match + "\n"), std::string("t.evt:2: ") + c.msg) << c.match;

    EXPECT_EQ(parse_err(h + "0E.01 A\n0E.02 a\n"), "t.evt:3: event 'a' is defined twice in this file");
    std::string big = h;
    for (int i = 0; i <= 8192; ++i) big += "0E.01 E" + std::to_string(i) + "\n";
    EXPECT_EQ(parse_err(big), "t.evt:8194: too many events (at most 8192 per file)");
}

// Mutated sample files: every outcome is a clean parse or an error naming the file.
TEST(EventTable, MutationsNeverCrash) {
    std::string base = sample("skylake_core.evt");
    u64 seed = 0x9E3779B97F4A7C15ull;
    auto next = [&]() {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        return seed;
    };
    int errors = 0;
    for (int i = 0; i < 3000; ++i) {
        std::string t = base;
        int edits = 1 + int(next() % 4);
        for (int k = 0; k < edits; ++k) {
            usize at = usize(next() % t.size());
            switch (next() % 4) {
                case 0: t[at] = char(next() & 0xFF); break;                    // any byte
                case 1: t[at] = ".=-x0F_#@ \n"[next() % 11]; break;            // a syntax character
                case 2: t.erase(at, usize(next() % 8)); break;                 // a cut
                default: t.insert(at, t.substr(usize(next() % t.size()), 6));  // a repeat
            }
        }
        EventTable out;
        Status s = parse_event_table(StrView(t.data(), t.size()), "m.evt", &out, (i & 1) != 0);
        if (!s.ok()) {
            ++errors;
            EXPECT_TRUE(str_starts_with(s.error().msg, "m.evt")) << s.error().msg;
        } else if (!(i & 1)) {
            for (const Event& e : out.events) EXPECT_NE(e.name[0], 0);
        }
    }
    EXPECT_GT(errors, 1000);
}

// ---------------------------------------------------------------- choosing a file

TEST(EventTableMatch, RulesAndScores) {
    EventTable t = parse_ok(std::string("@match GenuineIntel 06_55 stepping=5-F\n"
                                        "@match GenuineIntel 06_97 core=0x20 native=0x000001\n"
                                        "@match GenuineIntel 06_97 core=0x40\n"
                                        "@match GenuineIntel 06_97\n0E.01 A\n"));
    EXPECT_EQ(t.match_score(cpu(6, 0x55, 4)), -1);
    EXPECT_EQ(t.match_score(cpu(6, 0x55, 5)), 1);
    EXPECT_EQ(t.match_score(cpu(6, 0x55, 0xF)), 1);
    EXPECT_EQ(t.match_score(cpu(6, 0x55, 7, kCoreTypeNone, 0, "AuthenticAMD")), -1);
    EXPECT_EQ(t.match_score(cpu(0xF, 0x55, 7)), -1);
    EXPECT_EQ(t.match_score(cpu(6, 0x97, 2, kCoreTypeAtom, 1)), 6);
    EXPECT_EQ(t.match_score(cpu(6, 0x97, 2, kCoreTypeAtom, 2)), 0);  // other native model: the plain line
    EXPECT_EQ(t.match_score(cpu(6, 0x97, 2, kCoreTypeCore, 7)), 4);
    EXPECT_EQ(t.match_score(cpu(6, 0x97, 2)), 0);
    EXPECT_EQ(t.match_score(cpu(6, 0x9A, 2)), -1);
}

std::string table_for(EventTables& tables, const CpuIdentity& id) {
    Result<const EventTable*> r = tables.for_cpu(id);
    EXPECT_TRUE(r.ok()) << r.error().msg;
    if (!r.ok()) return "error";
    return r.value() ? r.value()->path : "none";
}

TEST(EventTables, SampleFilesPerCpu) {
    MemFiles fs;
    fs.add_samples();
    fs.files["\\pmulab\\events\\README.txt"] = "not an event file";
    fs.files["\\pmulab\\other.evt"] = "elsewhere";
    EventTables tables(&fs);
    EXPECT_EQ(table_for(tables, kSkylakeClient), "\\pmulab\\events\\skylake_core.evt");
    EXPECT_EQ(tables.file_count(), 3u);
    EXPECT_EQ(table_for(tables, cpu(6, 0x4E, 3)), "\\pmulab\\events\\skylake_core.evt");
    EXPECT_EQ(table_for(tables, kAdlP), "\\pmulab\\events\\alderlake_goldencove_core.evt");
    EXPECT_EQ(table_for(tables, kAdlE), "\\pmulab\\events\\alderlake_gracemont_core.evt");
    EXPECT_EQ(table_for(tables, cpu(6, 0xBE, 0)), "\\pmulab\\events\\alderlake_gracemont_core.evt");
    EXPECT_EQ(table_for(tables, cpu(6, 0x97, 2)), "none");  // core type unknown (leaf 1AH absent)
    EXPECT_EQ(table_for(tables, cpu(6, 0x55, 4)), "none");
    EXPECT_EQ(table_for(tables, cpu(0x19, 0x21, 0, kCoreTypeNone, 0, "AuthenticAMD")), "none");
    // Three headers probed, the three files that were needed read in full, once.
    EXPECT_EQ(fs.probe_reads, 3);
    EXPECT_EQ(fs.whole_reads, 3);
    EXPECT_EQ(table_for(tables, kSkylakeClient), "\\pmulab\\events\\skylake_core.evt");
    EXPECT_EQ(fs.whole_reads, 3);
}

TEST(EventTables, SteppingRangesAndSpecificity) {
    MemFiles fs;
    fs.add("a_skx.evt", "@match GenuineIntel 06_55 stepping=0-4\n0E.01 SKX\n");
    fs.add("b_clx.evt", "@match GenuineIntel 06_55 stepping=5-F\n0E.01 CLX\n");
    fs.add("c_any.evt", "@match GenuineIntel 06_55\n@match GenuineIntel 06_56\n0E.01 ANY\n");
    EventTables tables(&fs);
    EXPECT_EQ(table_for(tables, cpu(6, 0x55, 4)), "\\pmulab\\events\\a_skx.evt");
    EXPECT_EQ(table_for(tables, cpu(6, 0x55, 0)), "\\pmulab\\events\\a_skx.evt");
    EXPECT_EQ(table_for(tables, cpu(6, 0x55, 5)), "\\pmulab\\events\\b_clx.evt");
    EXPECT_EQ(table_for(tables, cpu(6, 0x55, 7)), "\\pmulab\\events\\b_clx.evt");
    EXPECT_EQ(table_for(tables, cpu(6, 0x56, 7)), "\\pmulab\\events\\c_any.evt");
}

TEST(EventTables, TwoFilesForTheSameCpuIsAnError) {
    MemFiles fs;
    fs.add_samples();
    fs.add("copy.EVT", sample("alderlake_goldencove_core.evt"));
    EventTables tables(&fs);
    EXPECT_EQ(table_for(tables, kAdlE), "\\pmulab\\events\\alderlake_gracemont_core.evt");
    Result<const EventTable*> r = tables.for_cpu(kAdlP);
    ASSERT_FALSE(r.ok());
    EXPECT_STREQ(r.error().msg, "event files \\pmulab\\events\\alderlake_goldencove_core.evt and "
                                "\\pmulab\\events\\copy.EVT are both for 06_97H P-cores; keep one of them");
    EXPECT_EQ(r.error().code, Errc::invalid_argument);
}

TEST(EventTables, LongHeadersAreReadInFull) {
    MemFiles fs;
    std::string text;
    for (int m = 0; m < 200; ++m) {
        char line[64];
        snprintf(line, sizeof line, "@match GenuineIntel 06_%02X   # a padded comment\n", m);
        text += line;
    }
    ASSERT_GT(text.size(), 4096u);
    fs.add("long.evt", text + "0E.01 X\n");
    EventTables tables(&fs);
    EXPECT_EQ(table_for(tables, cpu(6, 0xC7, 1)), "\\pmulab\\events\\long.evt");
    EXPECT_EQ(fs.probe_reads, 1);
    EXPECT_EQ(fs.whole_reads, 2);  // the rest of the header, then the events
}

TEST(EventTables, FileErrors) {
    {
        MemFiles fs;
        fs.add_samples();
        fs.add("broken.evt", "@match GenuineIntel 06_5E stepping=9-1\n0E.01 X\n");
        EventTables tables(&fs);
        Result<const EventTable*> r = tables.for_cpu(kAdlP);  // every header is read
        ASSERT_FALSE(r.ok());
        EXPECT_STREQ(r.error().msg, "\\pmulab\\events\\broken.evt:1: stepping range '9-1' is empty (9 > 1)");
    }
    {
        MemFiles fs;  // a bad event in the chosen file
        fs.add("sk.evt", std::string(kHead) + "0E.01 A\n0E.01.CMSK=999 B\n");
        fs.add("other.evt", "@match GenuineIntel 06_97\nnot an event line at all\n");
        EventTables tables(&fs);
        Result<const EventTable*> o = tables.for_cpu(cpu(6, 0x97, 0));
        ASSERT_FALSE(o.ok());
        EXPECT_STREQ(o.error().msg, "\\pmulab\\events\\other.evt:2: unexpected text after the event name 'an'");
        Result<const EventTable*> r = tables.for_cpu(kSkylakeClient);
        ASSERT_FALSE(r.ok());
        EXPECT_STREQ(r.error().msg, "\\pmulab\\events\\sk.evt:3: CMSK value '999' is not a number in 0-255");
    }
    {
        MemFiles fs;
        fs.add_samples();
        fs.list_fails = true;
        EventTables tables(&fs);
        Result<const EventTable*> r = tables.for_cpu(kSkylakeClient);
        ASSERT_FALSE(r.ok());
        EXPECT_EQ(r.error().code, Errc::io);
        EXPECT_STREQ(r.error().msg, "cannot list the event files in \\pmulab\\events: device error");
    }
    {
        MemFiles fs;  // no \pmulab\events at all: no tables, no error
        EventTables tables(&fs);
        EXPECT_EQ(table_for(tables, kSkylakeClient), "none");
        EXPECT_EQ(tables.file_count(), 0u);
    }
    {
        EventTables tables(nullptr);
        EXPECT_EQ(table_for(tables, kSkylakeClient), "none");
    }
}

// The identity of logical processor `cpu` as commands see it: decoded from its probe.
Status probed_identity(sim::SimMachine& m, u32 cpu, CpuDecoded* out) {
    CpuProbe probe;
    Status s = run_on(m, cpu, [&] { pmu_probe(m, &probe); });
    if (s.ok()) *out = decode_cpuid(probe.cpuid);
    return s;
}

// Real hybrid parts: the file per logical processor from its own CPUID.
TEST(EventTables, ArrowLakeDumpPicksByCoreTypeAndNativeModel) {
    sim::SimMachine m = pmutest::dump_machine("GenuineIntel00C0652_ArrowLakeH_04_CPUID.txt");
    MemFiles fs;
    fs.add("arrowlake_lioncove_core.evt", "@match GenuineIntel 06_C5 core=0x40 native=0x000003\n0E.01 P\n");
    fs.add("arrowlake_skymont_core.evt", "@match GenuineIntel 06_C5 core=0x20 native=0x000003\n0E.01 E\n");
    fs.add("arrowlake_crestmont_core.evt", "@match GenuineIntel 06_C5 core=0x20 native=0x000002\n0E.01 LPE\n");
    EventTables tables(&fs);
    std::map<std::string, int> count;
    for (u32 i = 0; i < m.cpu_count(); ++i) {
        CpuDecoded d;
        ASSERT_TRUE(probed_identity(m, i, &d).ok());
        EXPECT_EQ(d.id.model, 0xC5u);
        count[table_for(tables, d.id)]++;
    }
    EXPECT_EQ(count, (std::map<std::string, int>{{"\\pmulab\\events\\arrowlake_crestmont_core.evt", 2},
                                                 {"\\pmulab\\events\\arrowlake_lioncove_core.evt", 6},
                                                 {"\\pmulab\\events\\arrowlake_skymont_core.evt", 8}}));
}

TEST(EventTables, RaptorLakeDumpUsesTheGoldenCoveFile) {
    sim::SimMachine m = pmutest::dump_machine("GenuineIntel00B06A2_RaptorLakeP_02_CPUID.txt");
    MemFiles fs;
    fs.add_samples();
    EventTables tables(&fs);
    CpuDecoded d;
    ASSERT_TRUE(probed_identity(m, 0, &d).ok());
    EXPECT_EQ(table_for(tables, d.id), "\\pmulab\\events\\alderlake_goldencove_core.evt");
    Result<Event> e = tables.resolve("UOPS_ISSUED.ANY", d.id);
    ASSERT_TRUE(e.ok()) << e.error().msg;
    EXPECT_EQ(enc(e.value()), "AE.01");
}

// ---------------------------------------------------------------- name resolution

std::string resolve_enc(EventTables& t, const char* spec, const CpuIdentity& id) {
    Result<Event> r = t.resolve(spec, id);
    EXPECT_TRUE(r.ok()) << spec << ": " << r.error().msg;
    return r.ok() ? enc(r.value()) + " " + r.value().name : "";
}

std::string resolve_err(EventTables& t, const char* spec, const CpuIdentity& id, EventDialect d = EventDialect::intel) {
    Result<Event> r = t.resolve(spec, id, d);
    EXPECT_FALSE(r.ok()) << spec;
    return r.ok() ? "" : r.error().msg;
}

TEST(EventResolve, NamesGoThroughTheCpusFileFirst) {
    MemFiles fs;
    fs.add_samples();
    EventTables t(&fs);
    EXPECT_EQ(resolve_enc(t, "UOPS_ISSUED.ANY", kSkylakeClient), "0E.01 UOPS_ISSUED.ANY");
    EXPECT_EQ(resolve_enc(t, "  uops_issued.any  ", kSkylakeClient), "0E.01 UOPS_ISSUED.ANY");
    EXPECT_EQ(resolve_enc(t, "MEM_LOAD_RETIRED.L3_MISS", kSkylakeClient), "D1.20 MEM_LOAD_RETIRED.L3_MISS");
    EXPECT_EQ(resolve_enc(t, "UOPS_ISSUED.ANY:u", kSkylakeClient), "0E.01.USR UOPS_ISSUED.ANY");
    EXPECT_EQ(resolve_enc(t, "UOPS_ISSUED.ANY:k uops", kSkylakeClient), "0E.01.OS uops");
    EXPECT_EQ(resolve_enc(t, "UOPS_ISSUED.ANY:uk", kSkylakeClient), "0E.01 UOPS_ISSUED.ANY");
    EXPECT_EQ(resolve_enc(t, "CYCLE_ACTIVITY.STALLS_MEM_ANY", kSkylakeClient),
              "A3.14.CMSK=20 CYCLE_ACTIVITY.STALLS_MEM_ANY");
    EXPECT_EQ(t.resolve("CYCLE_ACTIVITY.STALLS_MEM_ANY", kSkylakeClient).value().allowed_gp, 0xFu);
    // Names only the architectural table knows; raw and perf specs as parse_event_spec.
    EXPECT_EQ(resolve_enc(t, "cycles", kSkylakeClient), "FIXED_CTR1=3C.00 cycles");
    EXPECT_EQ(resolve_enc(t, "LONGEST_LAT_CACHE.MISS", kSkylakeClient), "2E.41 LONGEST_LAT_CACHE.MISS");
    EXPECT_EQ(resolve_enc(t, "0E.01 UOPS_ISSUED.ANY", kSkylakeClient), "0E.01 UOPS_ISSUED.ANY");
    EXPECT_EQ(resolve_enc(t, "event=0xd1,umask=0x20", kSkylakeClient), "D1.20 event=0xd1,umask=0x20");
    EXPECT_EQ(resolve_enc(t, "tsc", kSkylakeClient), "tsc tsc");
    // The same name, one encoding per core type.
    EXPECT_EQ(resolve_enc(t, "UOPS_ISSUED.ANY", kAdlP), "AE.01 UOPS_ISSUED.ANY");
    EXPECT_EQ(resolve_enc(t, "UOPS_ISSUED.ANY", kAdlE), "0E.00 UOPS_ISSUED.ANY");
    EXPECT_EQ(resolve_enc(t, "TOPDOWN.SLOTS", kAdlE), "FIXED_CTR3=A4.01 TOPDOWN.SLOTS");  // architectural
}

TEST(EventResolve, UnknownNamesSayWhereTheyWereLookedFor) {
    MemFiles fs;
    fs.add_samples();
    EventTables t(&fs);
    EXPECT_EQ(resolve_err(t, "NOT_AN.EVENT", kSkylakeClient),
              "event 'NOT_AN.EVENT' is not in the event file for 06_5EH (\\pmulab\\events\\skylake_core.evt) nor an "
              "architectural event");
    EXPECT_EQ(resolve_err(t, "ARITH.DIV_ACTIVE:u", kAdlE),
              "event 'ARITH.DIV_ACTIVE' is not in the event file for 06_97H E-cores "
              "(\\pmulab\\events\\alderlake_gracemont_core.evt) nor an architectural event");
    EXPECT_EQ(resolve_err(t, "UOPS_ISSUED.ANY", cpu(6, 0x55, 4)),
              "event 'UOPS_ISSUED.ANY' is not an architectural event, and none of the 3 event files in "
              "\\pmulab\\events is for 06_55H (GenuineIntel)");
    EXPECT_EQ(resolve_err(t, "UOPS_ISSUED.ANY", cpu(6, 0x97, 2, 0x30, 1)),
              "event 'UOPS_ISSUED.ANY' is not an architectural event, and none of the 3 event files in "
              "\\pmulab\\events is for 06_97H core type 0x30 (GenuineIntel)");
    MemFiles empty;
    EventTables te(&empty);
    EXPECT_EQ(resolve_err(te, "UOPS_ISSUED.ANY", kSkylakeClient),
              "event 'UOPS_ISSUED.ANY' is not an architectural event, and \\pmulab\\events has no event files (for "
              "model-specific names put the file for 06_5EH there; see docs/events.md)");
    EventTables tn(nullptr);
    EXPECT_EQ(resolve_err(tn, "UOPS_ISSUED.ANY", kSkylakeClient),
              "event 'UOPS_ISSUED.ANY' is not an architectural event (no event files here)");
    // The parser's own messages where they say more.
    EXPECT_EQ(resolve_err(t, "cycles:x", kSkylakeClient),
              "event spec 'cycles:x': unsupported modifier 'x' (pmulab accepts u and k) (at offset 7)");
    EXPECT_EQ(resolve_err(t, "0E", kSkylakeClient),
              "event spec '0E': '0E' is not an event name; a raw event needs its UMASK too: EE.UU, e.g. 0E.01 "
              "(at offset 0)");
    EXPECT_EQ(resolve_err(t, "0E.1G", kSkylakeClient), "event spec '0E.1G': UMASK '1G' is not hex (at offset 3)");
    EXPECT_EQ(resolve_err(t, "", kSkylakeClient), "empty event spec");
    // Other vendors' dialects are left to the parser.
    CpuIdentity zen = cpu(0x19, 0x21, 0, kCoreTypeNone, 0, "AuthenticAMD");
    Result<Event> z = t.resolve("cycles", zen, EventDialect::amd_zen);
    ASSERT_TRUE(z.ok()) << z.error().msg;
    EXPECT_EQ(z.value().event_select, 0x76);
    Result<Event> zu = t.resolve("UOPS_ISSUED.ANY", zen, EventDialect::amd_zen);
    ASSERT_FALSE(zu.ok());
    EXPECT_TRUE(str_starts_with(zu.error().msg, "event spec 'UOPS_ISSUED.ANY': unknown AMD event name"))
        << zu.error().msg;
}

// Names whose first part is hex look like nanoBench's EE.UU; they are names only when
// they do not parse as EE.UU and the CPU's file has them.
TEST(EventResolve, HexLookingNames) {
    MemFiles fs;
    fs.add("x.evt", std::string(kHead) + "C6.01 FE.DSB_MISS\n0E.01 ADD.ALL\n");
    EventTables t(&fs);
    EXPECT_EQ(resolve_enc(t, "FE.DSB_MISS", kSkylakeClient), "C6.01 FE.DSB_MISS");
    EXPECT_EQ(resolve_enc(t, "fe.dsb_miss:u d", kSkylakeClient), "C6.01.USR d");
    EXPECT_EQ(resolve_enc(t, "ADD.ALL", kSkylakeClient), "0E.01 ADD.ALL");
    EXPECT_EQ(resolve_enc(t, "FE.01", kSkylakeClient), "FE.01 FE.01");  // EE.UU stays raw
    EXPECT_EQ(resolve_err(t, "FE.DSB_HIT", kSkylakeClient),
              "event spec 'FE.DSB_HIT': UMASK 'DSB_HIT' is not hex (at offset 3)");
    EXPECT_EQ(resolve_err(t, "FE.DSB_MISS", kAdlP),
              "event spec 'FE.DSB_MISS': UMASK 'DSB_MISS' is not hex (at offset 3)");
    EXPECT_TRUE(check_event_list_syntax("FE.DSB_MISS,ADD.ALL:k").ok());
    EXPECT_FALSE(check_event_list_syntax("FE.1G").ok());
}

TEST(EventResolve, ModifierAndDisplayNameErrors) {
    MemFiles fs;
    fs.add_samples();
    EventTables t(&fs);
    EXPECT_EQ(resolve_err(t, "UOPS_ISSUED.ANY:", kSkylakeClient),
              "event spec 'UOPS_ISSUED.ANY:': empty modifier list after ':' (expected u or k) (at offset 16)");
    EXPECT_EQ(resolve_err(t, "UOPS_ISSUED.ANY:ux", kSkylakeClient),
              "event spec 'UOPS_ISSUED.ANY:ux': unsupported modifier 'x' (pmulab accepts u and k) (at offset 17)");
    EXPECT_EQ(resolve_err(t, "UOPS_ISSUED.ANY:uu", kSkylakeClient),
              "event spec 'UOPS_ISSUED.ANY:uu': modifier 'u' given twice (at offset 17)");
    EXPECT_EQ(resolve_err(t, "UOPS_ISSUED.ANY a b", kSkylakeClient),
              "event spec 'UOPS_ISSUED.ANY a b': unexpected 'b' after the event name 'a' (at offset 18)");
    EXPECT_EQ(resolve_err(t, "UOPS_ISSUED.ANY a#b", kSkylakeClient),
              "event spec 'UOPS_ISSUED.ANY a#b': event name 'a#b' contains '#' (names use letters, digits and _ . - "
              ": + @ ( ) [ ]) (at offset 17)");
    EXPECT_EQ(resolve_err(t, "UOPS_ISSUED.ANY AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
                          kSkylakeClient),
              "event spec 'UOPS_ISSUED.ANY AAAAAAAAAAAAAAAAAAAAA...': event name is too long (64 characters; at "
              "most 63) (at offset 16)");
}

TEST(EventResolve, ListsAndEventListFiles) {
    MemFiles fs;
    fs.add_samples();
    EventTables t(&fs);
    Vec<Event> v;
    ASSERT_TRUE(t.resolve_list("UOPS_ISSUED.ANY,MEM_LOAD_RETIRED.L3_MISS;cycles", kSkylakeClient, &v).ok());
    ASSERT_EQ(v.size(), 3u);
    EXPECT_EQ(enc(v[0]), "0E.01");
    EXPECT_EQ(enc(v[1]), "D1.20");
    EXPECT_STREQ(v[2].name, "cycles");
    v.clear();
    ASSERT_TRUE(t.resolve_list("event=0x0e,umask=0x01,inv,cmask=1,UOPS_ISSUED.STALL_CYCLES,cpu/event=0x3c,umask=0/",
                               kSkylakeClient, &v)
                    .ok());
    ASSERT_EQ(v.size(), 3u);
    EXPECT_EQ(enc(v[0]), "0E.01.CMSK=1.INV");
    EXPECT_EQ(enc(v[1]), "0E.01.CMSK=1.INV");
    EXPECT_STREQ(v[1].name, "UOPS_ISSUED.STALL_CYCLES");
    EXPECT_EQ(enc(v[2]), "3C.00");

    auto list_err = [&](const char* text, const CpuIdentity& id) {
        Vec<Event> out;
        Status s = t.resolve_list(text, id, &out);
        EXPECT_FALSE(s.ok()) << text;
        return s.ok() ? std::string() : std::string(s.error().msg);
    };
    EXPECT_EQ(list_err("UOPS_ISSUED.ANY, BOGUS.X", kSkylakeClient),
              "event list item 2: event 'BOGUS.X' is not in the event file for 06_5EH "
              "(\\pmulab\\events\\skylake_core.evt) nor an architectural event");
    EXPECT_EQ(list_err("UOPS_ISSUED.ANY,,cycles", kSkylakeClient),
              "event list item 2 is empty (at offset 16): two separators in a row, or one at the start or end");
    EXPECT_EQ(list_err("  ", kSkylakeClient), "empty event list");
    std::string many;
    for (int i = 0; i <= 256; ++i) many += "tsc,";
    many += "tsc";
    EXPECT_EQ(list_err(many.c_str(), kSkylakeClient), "too many events in the list (at most 256)");
    // Errors of the event files are not blamed on an item.
    fs.add("dup.evt", sample("skylake_core.evt"));
    EventTables t2(&fs);
    Vec<Event> out;
    Status s = t2.resolve_list("cycles,UOPS_ISSUED.ANY", kSkylakeClient, &out);
    ASSERT_FALSE(s.ok());
    EXPECT_STREQ(s.error().msg, "event files \\pmulab\\events\\dup.evt and \\pmulab\\events\\skylake_core.evt are "
                                "both for 06_5EH; keep one of them");

    // nanoBench-style event list files: raw lines and names.
    fs.files["\\pmulab\\my.cfg"] = "# nanoBench config\n0E.01 UOPS_ISSUED.ANY\nA3.04.CMSK=4 STALLS\n\n"
                                   "MEM_LOAD_RETIRED.L3_MISS  # by name\r\ncycles:u\n";
    fs.files["\\pmulab\\bad.cfg"] = "0E.01 A\n\nNOPE.NOPE\n";
    fs.files["\\pmulab\\empty.cfg"] = "# nothing\n";
    out.clear();
    Status fsr = t.resolve_file("\\pmulab\\my.cfg", kSkylakeClient, &out);
    ASSERT_TRUE(fsr.ok()) << fsr.error().msg;
    ASSERT_EQ(out.size(), 4u);
    EXPECT_EQ(enc(out[1]) + " " + out[1].name, "A3.04.CMSK=4 STALLS");
    EXPECT_EQ(enc(out[2]) + " " + out[2].name, "D1.20 MEM_LOAD_RETIRED.L3_MISS");
    EXPECT_EQ(enc(out[3]), "FIXED_CTR1=3C.00.USR");
    Status b = t.resolve_file("\\pmulab\\bad.cfg", kSkylakeClient, &out);
    EXPECT_STREQ(b.error().msg, "\\pmulab\\bad.cfg:3: event 'NOPE.NOPE' is not in the event file for 06_5EH "
                                "(\\pmulab\\events\\skylake_core.evt) nor an architectural event");
    EXPECT_STREQ(t.resolve_file("\\pmulab\\empty.cfg", kSkylakeClient, &out).error().msg,
                 "\\pmulab\\empty.cfg: no events (only comments and blank lines)");
    Status nf = t.resolve_file("\\pmulab\\none.cfg", kSkylakeClient, &out);
    EXPECT_EQ(nf.error().code, Errc::invalid_argument);
    EXPECT_STREQ(nf.error().msg, "event list file \\pmulab\\none.cfg: no such file on the boot volume");
    EventTables tn(nullptr);
    EXPECT_EQ(tn.resolve_file("\\pmulab\\my.cfg", kSkylakeClient, &out).error().code, Errc::unsupported);
    EXPECT_STREQ(t.resolve_file_text("0E.01 A\n0E.1G B\n", "x.cfg", kSkylakeClient, &out).error().msg,
                 "x.cfg:2: event spec '0E.1G B': UMASK '1G' is not hex (at offset 3)");
}

// Without names in them, lists resolve exactly as parse_event_list parses them: the
// same events and the same messages (the fuzz corpus plus perf-continuation cases).
TEST(EventResolve, AgreesWithParseEventList) {
    std::vector<std::string> lists = {
        "cycles,instructions",
        "0E.01;D1.01.CMSK=1.INV",
        "event=0x0e,umask=0x01,inv,cmask=1,cycles,0E.01",
        "event=0x3c,name=a,event=0xc0",
        "cpu/event=0x3c,umask=0/u,tsc",
        "cpu_core/event=0x3c/;cpu_atom/event=0xc0/",
        "event=0x0e,usr,os=0,edge=1,any,eq",
        "event=0x0e,hostonly",
        "r01c2:u,r3c",
        "event=0x0e,umask",
        "cycles,,tsc",
        ",tsc",
        "INST_RETIRED.ANY:uk X",
        "0E.01 a b",
        "bogus_name",
        "0E.1G",
        "cpu/event=0x3c",
        "event=0x100",
        "cycles;inv",
        "event=0x0e;inv",
    };
    std::filesystem::path corpus = std::filesystem::path(__FILE__).parent_path().parent_path().parent_path() / "fuzz" /
                                   "corpus" / "events";
    for (auto& p : std::filesystem::directory_iterator(corpus)) lists.push_back(read_text(p.path().string()));
    EventTables t(nullptr);
    for (const std::string& text : lists) {
        Vec<Event> a, b;
        Status sa = parse_event_list(StrView(text.data(), text.size()), &a);
        Status sb = t.resolve_list(StrView(text.data(), text.size()), kSkylakeClient, &b);
        ASSERT_EQ(sa.ok(), sb.ok()) << text << " | " << (sa.ok() ? sb.error().msg : sa.error().msg);
        if (!sa.ok()) {
            std::string ma = sa.error().msg, mb = sb.error().msg;
            if (ma != mb) {  // only an unknown name may be worded differently
                EXPECT_NE(ma.find("unknown event name"), std::string::npos) << text << "\n" << ma << "\n" << mb;
                EXPECT_NE(mb.find("is not an architectural event (no event files here)"), std::string::npos) << mb;
            }
            continue;
        }
        ASSERT_EQ(a.size(), b.size()) << text;
        for (usize i = 0; i < a.size(); ++i) {
            EXPECT_EQ(enc(a[i]), enc(b[i])) << text;
            EXPECT_STREQ(a[i].name, b[i].name) << text;
            EXPECT_EQ(a[i].core_type, b[i].core_type) << text;
        }
    }
}

TEST(EventTables, ListingAFile) {
    EventTable t = parse_ok(std::string(kHead) + "0E.01 UOPS_ISSUED.ANY\nA3.14.CMSK=20.CTR=0-3 X\nFIXED_CTR0 I\n");
    StrBuf b;
    list_table_events(b, t);
    EXPECT_EQ(std::string(b.c_str()),
              "  UOPS_ISSUED.ANY                                                 0E.01\n"
              "  X                                                               A3.14.CMSK=20.CTR=0-3\n"
              "  I                                                               FIXED_CTR0\n");
}

}  // namespace

// ---------------------------------------------------------------- `pmulab events` with event files

namespace cmd {

// A platform with a boot volume (TestPlatform has none).
class FilesPlatform final : public Platform {
public:
    FilesPlatform(Hw& hw, FileSource* files) : hw_(hw), files_(files) {}
    Hw& hw() override { return hw_; }
    void write(StrView text) override { out.append(text.ptr, text.len); }
    FileSource* files() override { return files_; }
    std::string out;

private:
    Hw& hw_;
    FileSource* files_;
};

struct Ran {
    int status;
    std::string out;
};

Ran run(Hw& hw, FileSource* files, std::vector<const char*> args) {
    FilesPlatform p(hw, files);
    GlobalOptions g;
    int st = app_run(p, int(args.size()), args.data(), &g);
    return Ran{st, p.out};
}

std::vector<std::string> lines_of(const std::string& s) {
    std::vector<std::string> v;
    std::stringstream ss(s);
    std::string l;
    while (std::getline(ss, l)) v.push_back(l);
    return v;
}

bool has(const std::string& out, const std::string& line) {
    for (const std::string& l : lines_of(out))
        if (l == line) return true;
    return false;
}

TEST(EventsCmdFiles, SkylakeClientUnderTcgNamesResolveButThereIsNoPmu) {
    sim::SimMachine m = sim::qemu_tcg_intel(2);
    MemFiles fs;
    fs.add_samples();
    Ran r = run(m, &fs, {"events", "--check", "UOPS_ISSUED.ANY,MEM_LOAD_RETIRED.L3_MISS"});
    EXPECT_EQ(r.status, 3);
    EXPECT_EQ(r.out, "pmulab: error: CPU 0: event 'UOPS_ISSUED.ANY' cannot be counted: no architectural performance "
                     "monitoring (CPUID.0AH:EAX[7:0] = 0)\n");
    r = run(m, &fs, {"events", "--cpu", "all", "--check", "tsc,BOGUS.EVENT"});
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(r.out, "pmulab: error: CPUs 0-1: event list item 2: event 'BOGUS.EVENT' is not in the "
                     "event file for 06_5EH (\\pmulab\\events\\skylake_core.evt) nor an architectural event\n");
    // Syntax errors still come before any CPU is touched, names or not.
    u64 calls = m.run_on_cpu_calls();
    r = run(m, &fs, {"events", "--check", "UOPS_ISSUED.ANY,0E.1G"});
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(r.out, "pmulab: error: event list item 2: event spec '0E.1G': UMASK '1G' is not hex (at "
                     "offset 3)\n");
    r = run(m, &fs, {"events", "--check", "cycles:x"});
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(r.out, "pmulab: error: event list item 1: event spec 'cycles:x': unsupported modifier 'x' "
                     "(pmulab accepts u and k) (at offset 7)\n");
    r = run(m, &fs, {"events", "--check", "UOPS_ISSUED.ANY a b"});
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(m.run_on_cpu_calls(), calls);
}

TEST(EventsCmdFiles, HybridCoresGetTheirOwnEncodings) {
    sim::SimMachine m = sim::intel_hybrid();
    MemFiles fs;
    fs.add_samples();
    Ran r = run(m, &fs,
                {"events", "--cpu", "all", "--check", "UOPS_ISSUED.ANY,LONGEST_LAT_CACHE.MISS,INST_RETIRED.ANY"});
    EXPECT_EQ(r.status, 0) << r.out;
    std::vector<std::string> l = lines_of(r.out);
    ASSERT_EQ(l.size(), 8u) << r.out;
    EXPECT_EQ(l[1], "  group 1/1: PMC0       UOPS_ISSUED.ANY (AE.01)");
    EXPECT_EQ(l[2], "  group 1/1: PMC1       LONGEST_LAT_CACHE.MISS (2E.41)");
    EXPECT_EQ(l[3], "  group 1/1: FIXED_CTR0 INST_RETIRED.ANY");
    EXPECT_EQ(l[5], "  group 1/1: PMC0       UOPS_ISSUED.ANY (0E.00)");
    EXPECT_TRUE(l[0].rfind("CPUs 0-3: 3 events in 1 run", 0) == 0) << l[0];
    EXPECT_TRUE(l[4].rfind("CPUs 4-7: 3 events in 1 run", 0) == 0) << l[4];
    // A name only the P-core file has: the E-cores say so.
    r = run(m, &fs, {"events", "--cpu", "all", "--check", "ARITH.DIV_ACTIVE"});
    EXPECT_EQ(r.status, 2);
    EXPECT_TRUE(has(r.out, "pmulab: error: CPUs 4-7: event list item 1: event 'ARITH.DIV_ACTIVE' is not "
                           "in the event file for 06_97H E-cores (\\pmulab\\events\\alderlake_gracemont_core.evt) nor "
                           "an architectural event"))
        << r.out;
    EXPECT_TRUE(has(r.out, "  group 1/1: PMC0       ARITH.DIV_ACTIVE (B0.09.CMSK=1)")) << r.out;
}

TEST(EventsCmdFiles, CounterRestrictionsTakenAloneAndExtraMsrsAllocate) {
    sim::SimMachine m = sim::intel_v3(2);  // 06_2AH, v3: 4 GP counters, AnyThread
    MemFiles fs;
    // The Skylake events, declared for this CPU.
    std::string sk = sample("skylake_core.evt"), body = "@match GenuineIntel 06_2A\n";
    for (const std::string& l : lines_of(sk))
        if (l.rfind("@match", 0) != 0) body += l + "\n";
    fs.add("sandy.evt", body);
    Ran r = run(m, &fs,
                {"events", "--check",
                 "INST_RETIRED.PREC_DIST,INST_RETIRED.TOTAL_CYCLES_PS,FRONTEND_RETIRED.DSB_MISS,"
                 "CPU_CLK_UNHALTED.THREAD_ANY"});
    EXPECT_EQ(r.status, 0) << r.out;
    std::vector<std::string> l = lines_of(r.out);
    ASSERT_EQ(l.size(), 5u) << r.out;
    EXPECT_EQ(l[1], "  group 1/2: PMC1       INST_RETIRED.PREC_DIST (C0.01)");
    EXPECT_EQ(l[2], "  group 1/2: PMC0       INST_RETIRED.TOTAL_CYCLES_PS (C0.01.CMSK=10.INV)");
    EXPECT_EQ(l[3], "  group 1/2: FIXED_CTR1 CPU_CLK_UNHALTED.THREAD_ANY");
    EXPECT_EQ(l[4], "  group 2/2: PMC0       FRONTEND_RETIRED.DSB_MISS (C6.01.MSR_PF=0x11.TakenAlone)");
}

TEST(EventsCmdFiles, AnyThreadIsRefusedWhereDeprecated) {
    sim::SimMachine m = sim::intel_v4_goldmont_plus(1);  // 06_7AH, CPUID.0AH:EDX[15] = 1
    MemFiles fs;
    fs.add("goldmontplus_core.evt", "@match GenuineIntel 06_7A\nFIXED_CTR1.AnyT CPU_CLK_UNHALTED.CORE_ANY\n"
                                    "3C.00.AnyT X.ANY\n3C.00 X.THREAD\n");
    Ran r = run(m, &fs, {"events", "--check", "X.THREAD,X.ANY"});
    EXPECT_EQ(r.status, 3);
    EXPECT_EQ(r.out, "pmulab: error: CPU 0: event 'X.ANY' uses AnyThread, which this CPU deprecates "
                     "(CPUID.0AH:EDX[15] = 1)\n");
}

TEST(EventsCmdFiles, ListingShowsEachCpusFile) {
    sim::SimMachine m = sim::qemu_tcg_intel(2);
    MemFiles fs;
    fs.add("skylake_core.evt", std::string(kHead) + "0E.01 UOPS_ISSUED.ANY\nA3.14.CMSK=20.CTR=0-3 X\n");
    Ran r = run(m, &fs, {"events", "--cpu", "all"});
    EXPECT_EQ(r.status, 0) << r.out;
    std::string block = "Model-specific events of CPUs 0-1 (06_5EH, \\pmulab\\events\\skylake_core.evt, 2 events):\n"
                        "  UOPS_ISSUED.ANY                                                 0E.01\n"
                        "  X                                                               A3.14.CMSK=20.CTR=0-3\n"
                        "\n"
                        "Event syntax";
    EXPECT_NE(r.out.find(block), std::string::npos) << r.out;
    Ran j = run(m, &fs, {"events", "--cpu", "all", "--json"});
    EXPECT_EQ(j.status, 0);
    std::vector<std::string> jl = lines_of(j.out);
    EXPECT_EQ(jl.back(), "{\"type\":\"event_file\",\"cpus\":[0,1],\"cpu_model\":\"06_5EH\",\"path\":"
                         "\"\\\\pmulab\\\\events\\\\skylake_core.evt\",\"events\":[{\"name\":\"UOPS_ISSUED.ANY\","
                         "\"code\":\"0E.01\"},{\"name\":\"X\",\"code\":\"A3.14.CMSK=20.CTR=0-3\"}]}");

    // No file for this CPU (QEMU's default AMD model); a broken file is an error.
    sim::SimMachine amd = sim::qemu_tcg(1);
    r = run(amd, &fs, {"events"});
    EXPECT_EQ(r.status, 0);
    EXPECT_TRUE(has(r.out, "CPU 0 (0F_6BH): no event file in \\pmulab\\events is for this CPU; model-specific names "
                           "need one (docs/events.md)"))
        << r.out;
    j = run(amd, &fs, {"events", "--json"});
    EXPECT_EQ(lines_of(j.out).back(),
              "{\"type\":\"event_file\",\"cpus\":[0],\"cpu_model\":\"0F_6BH\",\"path\":null,\"events\":[]}");
    fs.add("broken.evt", "@match GenuineIntel 06_5E core=1x\n");
    r = run(m, &fs, {"events"});
    EXPECT_EQ(r.status, 2);
    EXPECT_TRUE(has(r.out, "pmulab: error: CPU 0: \\pmulab\\events\\broken.evt:1: core '1x' is not a hybrid core "
                           "type in hex (CPUID.1AH:EAX[31:24]: 0x40 P-core, 0x20 E-core)"))
        << r.out;
    r = run(m, &fs, {"events", "--check", "cycles"});
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(r.out, "pmulab: error: CPU 0: \\pmulab\\events\\broken.evt:1: core '1x' is not a hybrid core type in "
                     "hex (CPUID.1AH:EAX[31:24]: 0x40 P-core, 0x20 E-core)\n");
}

TEST(EventsCmdFiles, SyntaxCheckWithoutCpu) {
    EXPECT_TRUE(check_event_list_syntax("UOPS_ISSUED.ANY,NOT.KNOWN:u x,cycles:u,0E.01").ok());
    EXPECT_STREQ(check_event_list_syntax("NOT.KNOWN,0E.1G").error().msg,
                 "event list item 2: event spec '0E.1G': UMASK '1G' is not hex (at offset 3)");
    EXPECT_STREQ(check_event_list_syntax("instructions:q").error().msg,
                 "event list item 1: event spec 'instructions:q': unsupported modifier 'q' (pmulab "
                 "accepts u and k) (at offset 13)");
    EXPECT_STREQ(check_event_list_syntax("0E").error().msg,
                 "event list item 1: event spec '0E': '0E' is not an event name; a raw event needs its "
                 "UMASK too: EE.UU, e.g. 0E.01 (at offset 0)");
}

}  // namespace cmd

// ---------------------------------------------------------------- `pmulab run` with event files

namespace runcmd {

class SimFilesPlatform final : public Platform {
public:
    SimFilesPlatform(sim::SimMachine& m, FileSource* files) : m_(m), mp_(m), files_(files) {}
    Hw& hw() override { return m_; }
    void write(StrView text) override { out.append(text.ptr, text.len); }
    MeasurePlatform* measure() override { return &mp_; }
    FileSource* files() override { return files_; }
    std::string out;

private:
    sim::SimMachine& m_;
    simm::SimMeasure mp_;
    FileSource* files_;
};

cmd::Ran run_line(sim::SimMachine& m, FileSource* files, const std::string& line) {
    SimFilesPlatform p(m, files);
    ArgVec av;
    EXPECT_TRUE(split_command_line(StrView(line.c_str()), &av).ok());
    GlobalOptions g;
    int st = app_run(p, av.argc(), av.argv.data(), &g);
    return cmd::Ran{st, p.out};
}

const char kFast[] = " --reps 1 --warmup 0 --unroll 2";

TEST(RunEventFiles, HybridCoresCountTheirOwnEncodings) {
    sim::SimMachine m = sim::intel_hybrid();
    MemFiles fs;
    fs.add_samples();
    cmd::Ran r = run_line(m, &fs,
                          std::string("run --bench nop --cpu all --events UOPS_ISSUED.ANY,INST_RETIRED.ANY") + kFast);
    ASSERT_EQ(r.status, 0) << r.out;
    std::vector<std::string> l = cmd::lines_of(r.out);
    ASSERT_GE(l.size(), 6u);
    EXPECT_EQ(l[0].substr(0, 46), "pmulab run: CPUs 0-3: 2 events in 1 run per be");
    EXPECT_EQ(l[1], "  group 1/1: PMC0       UOPS_ISSUED.ANY (AE.01)");
    EXPECT_EQ(l[2], "  group 1/1: FIXED_CTR0 INST_RETIRED.ANY");
    EXPECT_EQ(l[3].substr(0, 46), "pmulab run: CPUs 4-7: 2 events in 1 run per be");
    EXPECT_EQ(l[4], "  group 1/1: PMC0       UOPS_ISSUED.ANY (0E.00)");
    // A name only the P-core file has.
    r = run_line(m, &fs, std::string("run --bench nop --cpu all --events ARITH.DIV_ACTIVE") + kFast);
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(r.out, "pmulab: error: --events: CPUs 4-7: event list item 1: event 'ARITH.DIV_ACTIVE' is "
                     "not in the event file for 06_97H E-cores (\\pmulab\\events\\alderlake_gracemont_core.evt) nor an "
                     "architectural event\n");
}

TEST(RunEventFiles, SkylakeClientUnderTcg) {
    sim::SimMachine m = sim::qemu_tcg_intel(1);
    MemFiles fs;
    fs.add_samples();
    // The name resolves (0E.01); what is missing is the PMU.
    cmd::Ran r = run_line(m, &fs, "run --bench nop --events UOPS_ISSUED.ANY");
    EXPECT_EQ(r.status, 3);
    EXPECT_EQ(r.out, "pmulab: error: CPU 0: cannot count 'UOPS_ISSUED.ANY': no architectural performance monitoring: "
                     "CPUID.0AH:EAX[7:0] = 0 (a hypervisor without PMU passthrough)\n");
    r = run_line(m, &fs, "run --bench nop --events BOGUS.EVENT");
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(r.out, "pmulab: error: --events: event list item 1: event 'BOGUS.EVENT' is not in the "
                     "event file for 06_5EH (\\pmulab\\events\\skylake_core.evt) nor an architectural event\n");
    u64 calls = m.run_on_cpu_calls();
    r = run_line(m, &fs, "run --bench nop --events UOPS_ISSUED.ANY,0E.1G");
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(r.out, "pmulab: error: --events: event list item 2: event spec '0E.1G': UMASK '1G' is "
                     "not hex (at offset 3)\n");
    EXPECT_EQ(m.run_on_cpu_calls(), calls);
}

TEST(RunEventFiles, EventListFiles) {
    sim::SimMachine m = sim::intel_v4_goldmont_plus(1);  // 06_7AH
    MemFiles fs;
    fs.add("goldmontplus_core.evt", "@match GenuineIntel 06_7A\n0E.00 UOPS_ISSUED.ANY\nC0.00.CTR=1 INST.P1\n");
    fs.files["\\pmulab\\my.cfg"] = "# nanoBench style\nC4.00 BRANCHES\nUOPS_ISSUED.ANY\n";
    fs.files["\\pmulab\\bad.cfg"] = "C4.00 BRANCHES\n\nNOT.THERE\n";
    cmd::Ran r = run_line(m, &fs,
                          std::string("run --bench nop --events INST.P1 --events-file \\pmulab\\my.cfg") + kFast);
    ASSERT_EQ(r.status, 0) << r.out;
    std::vector<std::string> l = cmd::lines_of(r.out);
    EXPECT_EQ(l[1], "  group 1/1: PMC1       INST.P1 (C0.00)");
    EXPECT_EQ(l[2], "  group 1/1: PMC0       BRANCHES (C4.00)");
    EXPECT_EQ(l[3], "  group 1/1: PMC2       UOPS_ISSUED.ANY (0E.00)");
    // Without --events: the file's events only (no default tsc).
    r = run_line(m, &fs, std::string("run --bench nop --events-file \\pmulab\\my.cfg") + kFast);
    ASSERT_EQ(r.status, 0) << r.out;
    EXPECT_EQ(cmd::lines_of(r.out)[0].substr(0, 40), "pmulab run: CPU 0: 2 events in 1 run per");
    r = run_line(m, &fs, "run --bench nop --events-file \\pmulab\\bad.cfg");
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(r.out, "pmulab: error: --events-file: \\pmulab\\bad.cfg:3: event 'NOT.THERE' is not in the event file "
                     "for 06_7AH (\\pmulab\\events\\goldmontplus_core.evt) nor an architectural event\n");
    r = run_line(m, &fs, "run --bench nop --events-file \\pmulab\\none.cfg");
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(r.out, "pmulab: error: --events-file: event list file \\pmulab\\none.cfg: no such file on the boot "
                     "volume\n");
    r = run_line(m, &fs, "run --bench nop --events UOPS_ISSUED.ANY --events-file \\pmulab\\my.cfg");
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(r.out, "pmulab: error: --events: 'UOPS_ISSUED.ANY' is listed twice\n");
    r = run_line(m, &fs, "run --bench nop --events-file \"\"");
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(r.out, "pmulab: error: --events-file needs a path, e.g. \\pmulab\\my.cfg\n");
}

}  // namespace runcmd

namespace runcmd {

// An event with an extra MSR: the PMU layer writes it with the event and puts the old
// value back afterwards, like the counters; a CPU without the MSR says so.
TEST(RunEventFiles, ExtraMsrsAreProgrammedAndRestored) {
    const char table[] = "@match GenuineIntel 06_7A\nC6.01.MSR_PF=0x11.TakenAlone FE.DSB_MISS\n"
                         "B7.01.MSR_RSP0=0x10001 OCR.ANY\n";
    sim::SimMachine m = sim::intel_v4_goldmont_plus(1);
    m.cpu(0).define_msr(0x3F7, 0x5);
    m.cpu(0).define_msr(0x1A6, 0xABC);
    MemFiles fs;
    fs.add("goldmontplus_core.evt", table);
    cmd::Ran r = run_line(m, &fs, std::string("run --bench nop --events FE.DSB_MISS,OCR.ANY") + kFast);
    ASSERT_EQ(r.status, 0) << r.out;
    std::vector<std::string> l = cmd::lines_of(r.out);
    EXPECT_EQ(l[1], "  group 1/2: PMC0       FE.DSB_MISS (C6.01.MSR_PF=0x11.TakenAlone)");
    EXPECT_EQ(l[2], "  group 2/2: PMC0       OCR.ANY (B7.01.MSR_RSP0=0x10001.TakenAlone)");
    bool wrote_pf = false, wrote_rsp = false;
    for (const sim::LogEntry& e : m.log_all()) {
        if (e.kind == sim::Access::wrmsr && e.addr == 0x3F7 && e.value == 0x11 && !e.vector) wrote_pf = true;
        if (e.kind == sim::Access::wrmsr && e.addr == 0x1A6 && e.value == 0x10001 && !e.vector) wrote_rsp = true;
    }
    EXPECT_TRUE(wrote_pf && wrote_rsp);
    EXPECT_EQ(m.cpu(0).peek(0x3F7), 0x5u);
    EXPECT_EQ(m.cpu(0).peek(0x1A6), 0xABCu);

    sim::SimMachine bare = sim::intel_v4_goldmont_plus(1);
    r = run_line(bare, &fs, std::string("run --bench nop --events FE.DSB_MISS") + kFast);
    EXPECT_EQ(r.status, 3);
    EXPECT_TRUE(cmd::has(r.out, "pmulab: error: nop on CPU 0 (run 0): model-specific MSR 0x3F7 (programmed with the "
                                "event) cannot be used on this CPU: RDMSR 0x3f7 raised #GP (general protection): the "
                                "CPU does not implement this MSR"))
        << r.out;
}

}  // namespace runcmd
