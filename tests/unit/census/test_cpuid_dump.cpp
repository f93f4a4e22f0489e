// The CPUID dump parser (cpuid_dump.cpp) on small inline inputs: both formats and
// their layouts, and every error path with its file:line message.
#include <gtest/gtest.h>

#include <string>

#include "census/cpuid_dump.h"

using namespace pmulab;

namespace {

struct Parsed {
    Status status;
    Vec<CpuRecord> cpus;
    std::string msg() const { return status.ok() ? "" : status.error().msg; }
};

Parsed parse(const std::string& text, DumpFormat f = DumpFormat::automatic) {
    Parsed p;
    p.status = parse_cpuid_dump(StrView(text.data(), text.size()), "dump.txt", f, &p.cpus);
    return p;
}

// Minimal valid CPU bodies.
const char* const kRawIntel = "   0x00000000 0x00: eax=0x0000000b ebx=0x756e6547 ecx=0x6c65746e edx=0x49656e69\n"
                              "   0x00000001 0x00: eax=0x000306a9 ebx=0x03100800 ecx=0x7fbae3ff edx=0xbfebfbff\n"
                              "   0x00000004 0x00: eax=0x1c004121 ebx=0x01c0003f ecx=0x0000003f edx=0x00000000\n"
                              "   0x00000007 0x00: eax=0x00000000 ebx=0x00000281 ecx=0x00000000 edx=0x00000000\n"
                              "   0x0000000a 0x00: eax=0x07300803 ebx=0x00000000 ecx=0x00000000 edx=0x00000603\n"
                              "   0x0000000b 0x00: eax=0x00000001 ebx=0x00000002 ecx=0x00000100 edx=0x00000003\n"
                              "   0x0000000b 0x01: eax=0x00000004 ebx=0x00000008 ecx=0x00000201 edx=0x00000003\n"
                              "   0x80000000 0x00: eax=0x80000000 ebx=0x00000000 ecx=0x00000000 edx=0x00000000\n";

// Leaf 0 reports maximum leaf `max`; the caller adds the leaves that enumerates.
std::string aida_cpu(int n, const char* extra = "", const char* max = "00000001") {
    return "------[ CPUID Registers / Logical CPU #" + std::to_string(n) + " ]------\n\nallcpu: Package 0 / Core " +
           std::to_string(n) +
           " / Thread 0: Valid\n\n"
           "CPUID 00000000: " +
           max +
           "-756E6547-6C65746E-49656E69 [GenuineIntel]\n"
           "CPUID 00000001: 000306A9-0" +
           std::to_string(n) + "100800-7FBAE3FF-BFEBFBFF\n" + extra + "\nL1 Data Cache: 32 KB\n\n";
}

}  // namespace

TEST(CpuidDump, FormatNames) {
    DumpFormat f;
    EXPECT_TRUE(parse_dump_format("cpuid-r", &f));
    EXPECT_EQ(f, DumpFormat::cpuid_r);
    EXPECT_TRUE(parse_dump_format("aida64", &f));
    EXPECT_EQ(f, DumpFormat::aida64);
    EXPECT_TRUE(parse_dump_format("auto", &f));
    EXPECT_EQ(f, DumpFormat::automatic);
    EXPECT_FALSE(parse_dump_format("AIDA", &f));
    EXPECT_STREQ(dump_format_name(DumpFormat::cpuid_r), "cpuid-r");
    EXPECT_EQ(detect_cpuid_dump_format("# c\nCPU 0:\n"), DumpFormat::cpuid_r);
    EXPECT_EQ(detect_cpuid_dump_format("------[ Versions ]------\n"), DumpFormat::aida64);
    EXPECT_EQ(detect_cpuid_dump_format("hello\n"), DumpFormat::automatic);
}

TEST(CpuidDump, CpuidRawTwoCpus) {
    std::string t = std::string("# source: test\nCPU 0:\n") + kRawIntel + "CPU 1:\n" + kRawIntel;
    Parsed p = parse(t);
    ASSERT_TRUE(p.status.ok()) << p.msg();
    ASSERT_EQ(p.cpus.size(), 2u);
    EXPECT_EQ(p.cpus[1].index, 1u);
    const CpuRecord& r = p.cpus[0];
    EXPECT_TRUE(r.collected);
    EXPECT_FALSE(r.topology_known);
    // 0, 1, 4.0 (the simulator's cache geometry), 7, 0A, 0B.0, 0B.1, 8000_0000 kept.
    EXPECT_EQ(r.raw.get(4).ebx, 0x01c0003fu);
    EXPECT_EQ(r.raw.count, 8u);
    EXPECT_EQ(r.raw.get(0xA).eax, 0x07300803u);
    EXPECT_EQ(r.raw.get(0xB, 1).ebx, 8u);
    EXPECT_EQ(r.dec.id.model, 0x3Au);
    EXPECT_EQ(r.dec.pmu.gp_counters, 8);
    // x2APIC 3 = 0BH EDX; SMT shift 1, core shift 4: thread 1, core 1, package 0.
    EXPECT_EQ(r.topo.apic_id, 3u);
    EXPECT_EQ(r.topo.thread, 1u);
    EXPECT_EQ(r.topo.core, 1u);
    EXPECT_EQ(r.topo.package, 0u);
}

TEST(CpuidDump, CpuidRawSingleCpuAndCrlf) {
    std::string body = kRawIntel;
    std::string crlf;
    for (char c : "CPU:\n" + body) {
        if (c == '\n') crlf += '\r';
        crlf += c;
    }
    Parsed p = parse(crlf);
    ASSERT_TRUE(p.status.ok()) << p.msg();
    ASSERT_EQ(p.cpus.size(), 1u);
    EXPECT_EQ(p.cpus[0].raw.get(0xA).edx, 0x603u);
    // Without any header: one implicit CPU.
    Parsed q = parse(body);
    ASSERT_TRUE(q.status.ok()) << q.msg();
    EXPECT_EQ(q.cpus.size(), 1u);
}

TEST(CpuidDump, CpuidRawOldFormatWithoutSubleaf) {
    // Old `cpuid -r` prints no sub-leaf: repeated lines are sub-leaves 0, 1, ...
    Parsed p = parse("CPU 0:\n"
                     "   0x00000000: eax=0x0000000b ebx=0x756e6547 ecx=0x6c65746e edx=0x49656e69\n"
                     "   0x00000001: eax=0x000106a5 ebx=0x00100800 ecx=0x0098e3bd edx=0xbfebfbff\n"
                     "   0x00000007: eax=0x00000000 ebx=0x00000000 ecx=0x00000000 edx=0x00000000\n"
                     "   0x0000000a: eax=0x07300403 ebx=0x00000000 ecx=0x00000000 edx=0x00000603\n"
                     "   0x0000000b: eax=0x00000001 ebx=0x00000002 ecx=0x00000100 edx=0x00000000\n"
                     "   0x0000000b: eax=0x00000004 ebx=0x00000004 ecx=0x00000201 edx=0x00000000\n"
                     "   0x0000000b: eax=0x00000000 ebx=0x00000000 ecx=0x00000002 edx=0x00000000\n");
    ASSERT_TRUE(p.status.ok()) << p.msg();
    EXPECT_EQ(p.cpus[0].raw.get(0xB, 0).eax, 1u);
    EXPECT_EQ(p.cpus[0].raw.get(0xB, 1).eax, 4u);
    EXPECT_FALSE(p.cpus[0].raw.has(0xB, 2));  // not read by capture_cpuid
}

TEST(CpuidDump, AidaNewLayout) {
    std::string t = "# source: test\n------[ Versions ]------\n\nProgram Version : AIDA64\n\n" +
                    aida_cpu(0,
                             "CPUID 00000007: 00000001-00000000-00000000-00008000 [SL 00]\n"
                             "CPUID 00000007: 00000100-00000000-00000000-00000000 [SL 01]\n"
                             "CPUID 00000007: 00000000-00000000-00000000-0000001F [SL 02]\n"
                             "CPUID 0000001A: 20000003-00000000-00000000-00000000 [Atom: Skymont]\n"
                             "CPUID 00000023: 0000000B-00000003-00000000-00000000 [SL 00]\n"
                             "CPUID 00000023: 000003FF-0000000F-00000000-00000000 [SL 01]\n"
                             "CPUID 0000000A: 07300805-00000000-00000007-00008603\n"
                             "CPUID 0000000B: 00000001-00000001-00000100-00000000 [SL 00]\n"
                             "CPUID 00000023: 00001DFF-00000000-00000000-00000000 [SL 03]\n",
                             "00000023") +
                    aida_cpu(1) +
                    "------[ All CPUs ]------\n\n"
                    "CPU   0: APICID    0 / Package 0 / Core   0 / Thread 0: Valid\n"
                    "CPU   1: APICID   16 / Package 0 / Core   1 / Thread 0: Valid\n\n"
                    "------[ MSR Registers / Logical CPU #0 ]------\n\n"
                    "MSR 00000017: 001C-0000-0000-0000 [PlatID = 7]\n"
                    "CPUID 00000000: 00000000-00000000-00000000-00000000\n";
    Parsed p = parse(t);
    ASSERT_TRUE(p.status.ok()) << p.msg();
    ASSERT_EQ(p.cpus.size(), 2u);
    const CpuRecord& a = p.cpus[0];
    EXPECT_TRUE(a.raw.has(0x23, 3));
    EXPECT_FALSE(a.raw.has(0x23, 2));
    EXPECT_FALSE(a.raw.has(7, 2));
    EXPECT_TRUE(a.dec.id.hybrid);
    EXPECT_EQ(a.dec.id.core_type, kCoreTypeAtom);
    EXPECT_TRUE(a.dec.pmu.leaf_23);
    EXPECT_EQ(a.dec.pmu.gp_bitmap, 0x3FFu);
    EXPECT_EQ(a.dec.pmu.arch_events_bitmap, 0x1DFFu);
    EXPECT_TRUE(a.topology_known);
    EXPECT_EQ(p.cpus[1].topo.core, 1u);
    // APIC IDs from "All CPUs" (CPU 1's leaf 1 says 1; the dump's APICID wins).
    EXPECT_EQ(p.cpus[1].dec.id.initial_apic_id, 1u);
    EXPECT_EQ(p.cpus[1].topo.apic_id, 16u);
    // The CPUID line inside the MSR section does not count.
    EXPECT_EQ(p.cpus[0].raw.get(0).eax, 0x23u);
}

TEST(CpuidDump, AidaOldLayoutRepeatedLeaves) {
    Parsed p = parse("------[ Logical CPU #0 ]------\n\nallcpu: Valid\n\n"
                     "CPUID 00000000: 0000000B-756E6547-6C65746E-49656E69\n"
                     "CPUID 00000001: 000106A5-00100800-0098E3BD-BFEBFBFF\n"
                     "CPUID 00000004: 1C004121-01C0003F-0000003F-00000000\n"
                     "CPUID 00000004: 1C004122-01C0003F-0000003F-00000000\n"
                     "CPUID 00000007: 00000000-00000000-00000000-00000000\n"
                     "CPUID 0000000A: 07300403-00000000-00000000-00000603\n"
                     "CPUID 0000000B: 00000001-00000002-00000100-00000001\n"
                     "CPUID 0000000B: 00000004-00000004-00000201-00000001\n");
    ASSERT_TRUE(p.status.ok()) << p.msg();
    const CpuRecord& r = p.cpus[0];
    EXPECT_FALSE(r.topology_known);  // "allcpu: Valid" gives no location
    EXPECT_EQ(r.raw.get(0xB, 1).eax, 4u);
    EXPECT_EQ(r.topo.apic_id, 1u);
    EXPECT_EQ(r.topo.thread, 1u);
}

TEST(CpuidDump, AidaAffMaskLayout) {
    Parsed p = parse("CPU#000 AffMask: 0x0000000000000001\n"
                     "CPUID 00000000: 00000001-68747541-444D4163-69746E65\n"
                     "CPUID 00000001: 00020FF0-00000800-00000001-078BFBFF\n"
                     "CPU#001 AffMask: 0x0000000000000002\n"
                     "CPUID 00000000: 00000001-68747541-444D4163-69746E65\n"
                     "CPUID 00000001: 00020FF0-01000800-00000001-078BFBFF\n");
    ASSERT_TRUE(p.status.ok()) << p.msg();
    ASSERT_EQ(p.cpus.size(), 2u);
    EXPECT_EQ(p.cpus[1].topo.apic_id, 1u);
    EXPECT_EQ(p.cpus[1].dec.id.vendor, Vendor::amd);
}

// ---- errors ----

TEST(CpuidDump, NotADump) {
    Parsed p = parse("hello world\nthis is not CPUID\n");
    EXPECT_FALSE(p.status.ok());
    EXPECT_EQ(p.status.error().code, Errc::invalid_argument);
    EXPECT_EQ(p.msg().rfind("dump.txt: not a CPUID dump: found neither `cpuid -r` output", 0), 0u) << p.msg();
    EXPECT_FALSE(parse("").status.ok());
    EXPECT_EQ(p.cpus.size(), 0u);
}

TEST(CpuidDump, NoCpuSection) {
    Parsed a = parse("------[ Versions ]------\n\nCPUID 00000000: 00000001-00000000-00000000-00000000\n");
    EXPECT_EQ(a.msg().rfind("dump.txt: no logical-CPU section found: expected an AIDA64 report", 0), 0u) << a.msg();
    // The wrong format forced.
    Parsed b = parse(aida_cpu(0), DumpFormat::cpuid_r);
    EXPECT_EQ(b.msg().rfind("dump.txt: no CPU section found: expected `cpuid -r` output", 0), 0u) << b.msg();
    Parsed c = parse(std::string("CPU 0:\n") + kRawIntel, DumpFormat::aida64);
    EXPECT_EQ(c.msg().rfind("dump.txt: no logical-CPU section found", 0), 0u) << c.msg();
}

TEST(CpuidDump, AidaMalformedRegisterLines) {
    auto err = [](const char* line) { return parse(aida_cpu(0, line)).msg(); };
    // Line 7 of aida_cpu's text is the extra line.
    EXPECT_EQ(err("CPUID 0000000A: 07300404-00000000-00000000\n"),
              "dump.txt:7: expected 4 hex registers after 'CPUID 0000000A:' (EAX-EBX-ECX-EDX, found 3)");
    EXPECT_EQ(err("CPUID 0000000A:\n"),
              "dump.txt:7: expected 4 hex registers after 'CPUID 0000000A:' (EAX-EBX-ECX-EDX, found 0)");
    EXPECT_EQ(err("CPUID 0000000A: 07300404-00000000-00000000-00008603-1\n"),
              "dump.txt:7: expected 4 hex registers after 'CPUID 0000000A:' (EAX-EBX-ECX-EDX, found 5)");
    EXPECT_EQ(err("CPUID 0000000A: 0730040G-00000000-00000000-00008603\n"),
              "dump.txt:7: bad hex digit 'G' in EAX value '0730040G' after 'CPUID 0000000A:'");
    EXPECT_EQ(err("CPUID 0000000A: 07300404-00000000-00000000-0000860\n"),
              "dump.txt:7: EDX value '0000860' after 'CPUID 0000000A:' is not 8 hex digits");
    EXPECT_EQ(err("CPUID 0000000X: 07300404-00000000-00000000-00008603\n"),
              "dump.txt:7: bad leaf number in 'CPUID 0000000X: 07300404-00000000-000000' (expected "
              "'CPUID' and 8 hex digits, then ':')");
    EXPECT_EQ(err("CPUID 0000000B: 00000001-00000002-00000100-00000000 [SL zz]\n"),
              "dump.txt:7: bad sub-leaf tag '[SL zz]' (expected '[SL' and hex digits, then ']')");
}

TEST(CpuidDump, CpuidRawMalformedRegisterLines) {
    auto err = [](const char* line) { return parse(std::string("CPU 0:\n") + line).msg(); };
    EXPECT_EQ(err("   0x0000000a 0x00: eax=0x07300404 ebx=0x00000000 ecx=0x00000000\n"),
              "dump.txt:2: expected 4 registers 'eax=0x... ebx=0x... ecx=0x... edx=0x...' after "
              "'0x0000000a 0x00:'");
    EXPECT_EQ(err("   0x0000000a 0x00: eax=0x0730040g ebx=0x00000000 ecx=0x00000000 edx=0x00000000\n"),
              "dump.txt:2: bad hex digit 'g' in eax value 'eax=0x0730040g' after '0x0000000a 0x00:'");
    EXPECT_EQ(err("   0x0000000a 0x00: eax=0x107300404 ebx=0x00000000 ecx=0x00000000 edx=0x00000000\n"),
              "dump.txt:2: eax value 'eax=0x107300404' after '0x0000000a 0x00:' is not 1 to 8 hex digits");
    EXPECT_EQ(err("   0xZZ 0x00: eax=0x07300404 ebx=0x00000000 ecx=0x00000000 edx=0x00000000\n"),
              "dump.txt:2: bad leaf number '0xZZ' (expected 0x and up to 8 hex digits)");
    EXPECT_EQ(err("   0x0000000a 0xq: eax=0x07300404 ebx=0x00000000 ecx=0x00000000 edx=0x00000000\n"),
              "dump.txt:2: bad sub-leaf number '0xq' after leaf 0x0000000a (expected 0x and up to 8 hex "
              "digits)");
    EXPECT_EQ(err("   0x0000000a 0x00 eax=0x07300404\n"),
              "dump.txt:2: expected '0xLEAF 0xSUB:' at the start of '0x0000000a 0x00 eax=0x07300404'");
    EXPECT_EQ(err("   0x0000000a 0x00: eax=0x0 ebx=0x0 ecx=0x0 edx=0x0 more\n"),
              "dump.txt:2: unexpected text 'more' after the edx value");
    // Decoded (non-raw) cpuid output.
    EXPECT_EQ(err("   vendor_id = \"GenuineIntel\"\n")
                  .rfind("dump.txt:2: 'vendor_id = \"GenuineIntel\"' is not "
                         "a raw register line",
                         0),
              0u);
    EXPECT_EQ(parse("CPU 99999999999:\n").msg(), "dump.txt:1: bad CPU number in 'CPU 99999999999:'");
}

TEST(CpuidDump, TruncatedSections) {
    // A section without leaf 0, named by its header line.
    std::string t = aida_cpu(0) + "------[ CPUID Registers / Logical CPU #1 ]------\n\nallcpu: Valid\n";
    Parsed p = parse(t);
    EXPECT_EQ(p.msg(), "dump.txt:10: logical CPU #1 has no CPUID leaf 0 line (truncated dump?)");
    EXPECT_EQ(p.cpus.size(), 0u);  // nothing half-parsed is returned
    Parsed q = parse("CPU 0:\n" + std::string(kRawIntel) +
                     "CPU 1:\n   0x00000000 0x00: eax=0x0000000b ebx=0x756e6547 ecx=0x6c65746e edx=0x49656e69\n");
    EXPECT_EQ(q.msg(), "dump.txt:10: CPU 1 has no CPUID leaf 1 line although leaf 0 reports maximum leaf 0xb "
                       "(truncated dump?)");
    // Cut in the middle of a register line.
    Parsed r = parse(std::string("CPU 0:\n") + kRawIntel + "   0x80000001 0x00: eax=0x000");
    EXPECT_EQ(r.msg(), "dump.txt:10: expected 4 registers 'eax=0x... ebx=0x... ecx=0x... edx=0x...' after "
                       "'0x80000001 0x00:'; the file ends in the middle of this line (truncated dump?)");
}

TEST(CpuidDump, MissingLeavesTheDecoderNeeds) {
    // Leaf 0 says 0AH exists (maximum 0AH) but the section has no 0AH line.
    Parsed p = parse(aida_cpu(0, "CPUID 00000007: 00000000-00000000-00000000-00000000\n", "0000000A"));
    EXPECT_EQ(p.msg(), "dump.txt:1: logical CPU #0 has no CPUID leaf 0x0000000A sub-leaf 0 line although its "
                       "leaves 0/1/7 enumerate it (truncated dump?)");
    // 8000_0000H reports 8000_0004H: the brand-string leaves must be there.
    std::string raw = kRawIntel;
    std::string cut = raw.substr(0, raw.find("   0x80000000"));
    Parsed q = parse("CPU 0:\n" + cut +
                     "   0x80000000 0x00: eax=0x80000004 ebx=0x00000000 ecx=0x00000000 edx=0x00000000\n");
    EXPECT_EQ(q.msg(), "dump.txt:1: CPU 0 has no CPUID leaf 0x80000001 sub-leaf 0 line although its leaves "
                       "0/1/7 enumerate it (truncated dump?)");
    // The last CPU cut before its extended leaves: CPU 0 has 8000_0000H, CPU 1 not.
    Parsed r = parse("CPU 0:\n" + raw + "CPU 1:\n" + cut);
    EXPECT_EQ(r.msg(), "dump.txt:10: CPU 1 has no CPUID leaf 0x80000000 line although CPU 0 has one "
                       "(truncated dump?)");
}

TEST(CpuidDump, Duplicates) {
    Parsed p = parse(aida_cpu(0) + aida_cpu(0));
    EXPECT_EQ(p.msg(), "dump.txt:10: logical CPU #0 appears twice (first at line 1)");
    Parsed q = parse(aida_cpu(0, "CPUID 0000000B: 00000001-00000002-00000100-00000000 [SL 00]\n"
                                 "CPUID 0000000B: 00000001-00000002-00000100-00000000 [SL 00]\n"));
    EXPECT_EQ(q.msg(), "dump.txt:8: 'CPUID 0000000B:' repeats leaf 0x0000000B sub-leaf 0 of logical CPU #0 "
                       "(first at line 7)");
    Parsed r = parse(aida_cpu(0) + "------[ All CPUs ]------\nCPU 0: APICID 0 / Package 0\nCPU 0: APICID 1\n");
    EXPECT_EQ(r.msg(), "dump.txt:12: CPU 0 is listed twice in the 'All CPUs' section");
}

TEST(CpuidDump, TooManyCpus) {
    std::string t;
    for (u32 i = 0; i <= kMaxDumpCpus; ++i)
        t += "CPU " + std::to_string(i) +
             ":\n   0x00000000 0x00: eax=0x00000000 ebx=0x756e6547 ecx=0x6c65746e edx=0x49656e69\n";
    Parsed p = parse(t);
    EXPECT_EQ(p.msg(), "dump.txt:8193: more than 4096 logical CPUs in the dump; not a real machine's dump?");
}

TEST(CpuidDump, BinaryJunk) {
    std::string t = "CPU 0:\n   0x000";
    t += '\0';
    t += "00000 0x00: eax=0x0\n";
    EXPECT_EQ(parse(t).msg(), "dump.txt:2: binary data (byte 0x00 at column 9); expected a text CPUID dump "
                              "(`cpuid -r` or AIDA64 report)");
    std::string u = "\x7f"
                    "ELF\x02\x01\x01";
    EXPECT_EQ(parse(u).msg().rfind("dump.txt:1: binary data (byte 0x7f at column 1)", 0), 0u);
    EXPECT_EQ(parse(std::string("\xFF\xFE-\0-\0", 6)).msg(),
              "dump.txt:1: UTF-16 text; convert the dump to ASCII/UTF-8 first (e.g. iconv -f UTF-16 -t UTF-8)");
    // A UTF-8 byte-order mark before "CPU 0:" is skipped.
    Parsed bom = parse("\xEF\xBB\xBF"
                       "CPU 3:\n" +
                       std::string(kRawIntel));
    ASSERT_TRUE(bom.status.ok()) << bom.msg();
    EXPECT_EQ(bom.cpus[0].index, 3u);
    // Non-ASCII text (UTF-8 in a motherboard name) is not junk.
    Parsed ok = parse("DMI: Caf\xc3\xa9\n" + aida_cpu(0));
    EXPECT_TRUE(ok.status.ok()) << ok.msg();
}

// Arbitrary bytes never crash, hang or read out of bounds (ASan/UBSan build).
TEST(CpuidDump, FuzzDoesNotCrash) {
    std::string base = aida_cpu(0, "CPUID 00000023: 0000000B-00000003-00000000-00000000 [SL 00]\n") + "CPU 0:\n" +
                       kRawIntel;
    u64 x = 0x9E3779B97F4A7C15ull;
    for (int iter = 0; iter < 3000; ++iter) {
        std::string t = base;
        int edits = 1 + iter % 8;
        for (int e = 0; e < edits; ++e) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            usize pos = usize(x % t.size());
            switch ((x >> 32) % 4) {
                case 0: t[pos] = char(x >> 40); break;
                case 1: t.erase(pos, usize((x >> 20) % 16)); break;
                case 2: t.insert(pos, std::string(1, "[]:-# \nSLx0F"[(x >> 24) % 13])); break;
                case 3: t.resize(pos); break;
            }
            if (t.empty()) t = "x";
        }
        for (DumpFormat f : {DumpFormat::automatic, DumpFormat::cpuid_r, DumpFormat::aida64}) {
            Parsed p = parse(t, f);
            if (!p.status.ok()) EXPECT_EQ(p.msg().rfind("dump.txt", 0), 0u) << p.msg();
        }
    }
}

// A real AIDA64 report cut at several places: never a partial census with status 0.
TEST(CpuidDump, RealAidaReportCutAnywhereIsRejected) {
    std::string path = std::string(__FILE__);
    path = path.substr(0, path.rfind("/unit/")) + "/data/cpuid/GenuineIntel0090672_AlderLake_02_CPUID.txt";
    FILE* f = fopen(path.c_str(), "rb");
    ASSERT_NE(f, nullptr) << path;
    std::string full;
    char buf[4096];
    for (size_t n; (n = fread(buf, 1, sizeof buf, f)) > 0;) full.append(buf, n);
    fclose(f);
    Parsed whole = parse(full);
    ASSERT_TRUE(whole.status.ok()) << whole.msg();
    ASSERT_EQ(whole.cpus.size(), 12u);

    auto at = [&](const std::string& needle) {
        size_t p = full.find(needle);
        EXPECT_NE(p, std::string::npos) << needle;
        return p;
    };
    struct Cut {
        const char* what;
        size_t len;
    };
    size_t cpu6 = at("------[ CPUID Registers / Logical CPU #6 ]");
    size_t all = at("------[ All CPUs ]");
    size_t cpu7line = at("CPU   7: APICID");
    const Cut cuts[] = {
        {"between two CPU sections (6 of 12 CPUs)", cpu6},
        {"after a whole line inside CPU #6's section", full.find('\n', cpu6 + 400) + 1},
        {"in the middle of a register line of CPU #6", cpu6 + 420},
        {"before the All CPUs section", all},
        {"right after the All CPUs title", full.find('\n', all) + 1},
        {"between two All CPUs lines", cpu7line},
        {"in the middle of an All CPUs line", cpu7line + 14},
    };
    for (const Cut& c : cuts) {
        Parsed p = parse(full.substr(0, c.len));
        EXPECT_FALSE(p.status.ok()) << c.what << ": " << p.cpus.size() << " CPUs decoded";
        EXPECT_NE(p.msg().find("truncated"), std::string::npos) << c.what << ": " << p.msg();
        EXPECT_EQ(p.cpus.size(), 0u) << c.what;
    }
}
