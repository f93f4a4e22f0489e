// `pmulab run` option parsing (every error message), result records and tables,
// `bench list` and `selftest`, on the synthetic platform.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "support/measure_test_util.h"

using namespace pmulab;

namespace {

struct Parsed {
    Status status;
    RunOptions o;
};

// Parses a `run` argument string (split like a command line).
void parse(const std::string& line, Parsed* p) {
    static std::vector<ArgVec> keep;  // argv strings must outlive the views in RunOptions
    keep.emplace_back();
    ArgVec& av = keep.back();
    ASSERT_TRUE(split_command_line(StrView(line.c_str()), &av).ok());
    Args args(av.argc(), av.argv.data());
    p->status = parse_run_options(args, &p->o);
}

std::string err(const std::string& line) {
    Parsed p;
    parse(line, &p);
    if (p.status.ok()) return "OK";
    EXPECT_EQ(p.status.error().code, Errc::invalid_argument) << line;
    return p.status.error().msg;
}

const char kNames[] =
    "empty, nop, add_chain, add_indep, imul_chain, div_chain, pointer_chase, store_stream, load_stream, "
    "branch_pred, branch_random, lfence, mfence, cpuid, rdtsc, rdmsr, rdpmc";

}  // namespace

TEST(RunOptions, Defaults) {
    Parsed p;
    parse("--bench nop", &p);
    ASSERT_TRUE(p.status.ok()) << p.status.error().msg;
    const MeasureConfig& c = p.o.cfg;
    EXPECT_EQ(c.unroll, 100u);
    EXPECT_EQ(c.loop, 1u);
    EXPECT_EQ(c.reps, 11u);
    EXPECT_EQ(c.warmup, 3u);
    EXPECT_EQ(c.agg, Agg::median);
    EXPECT_FALSE(c.basic);
    EXPECT_EQ(c.irq, IrqMode::cli);
    EXPECT_EQ(c.serialize, SerializeMode::lfence);
    EXPECT_EQ(c.seed, kDefaultSeed);
    ASSERT_EQ(c.benches.size(), 1u);
    EXPECT_STREQ(c.benches[0].kernel->name, "nop");
    EXPECT_FALSE(c.benches[0].optional);
    ASSERT_EQ(p.o.events.size(), 1u);
    EXPECT_TRUE(p.o.events[0].eq(StrView("tsc")));
    EXPECT_TRUE(p.o.cpu.bsp);
    EXPECT_EQ(p.o.decimals, 2u);
    EXPECT_FALSE(p.o.raw);
}

TEST(RunOptions, EveryOption) {
    Parsed p;
    parse("--bench=pointer_chase,nop --events tsc --cpu 1 --unroll 1000 --loop 50 --reps 21 --warmup 0 --agg trimmed "
          "--basic --irq lvt --serialize cpuid --size 4K,48K,1M --seed 0x1234 --decimals 4 --raw --progress",
          &p);
    ASSERT_TRUE(p.status.ok()) << p.status.error().msg;
    const MeasureConfig& c = p.o.cfg;
    EXPECT_EQ(c.unroll, 1000u);
    EXPECT_EQ(c.loop, 50u);
    EXPECT_EQ(c.reps, 21u);
    EXPECT_EQ(c.warmup, 0u);
    EXPECT_EQ(c.agg, Agg::trimmed);
    EXPECT_TRUE(c.basic);
    EXPECT_EQ(c.irq, IrqMode::lvt);
    EXPECT_EQ(c.serialize, SerializeMode::cpuid);
    EXPECT_EQ(c.seed, 0x1234u);
    EXPECT_EQ(p.o.decimals, 4u);
    EXPECT_TRUE(p.o.raw);
    EXPECT_TRUE(p.o.progress);
    EXPECT_FALSE(p.o.cpu.bsp);
    EXPECT_EQ(p.o.cpu.index, 1u);
    // One instance per size for the buffer kernel, in order; one for nop.
    ASSERT_EQ(c.benches.size(), 4u);
    EXPECT_EQ(c.benches[0].size, 4096u);
    EXPECT_EQ(c.benches[1].size, 48u * 1024);
    EXPECT_EQ(c.benches[2].size, 1u << 20);
    EXPECT_STREQ(c.benches[3].kernel->name, "nop");
    EXPECT_EQ(c.benches[3].size, 0u);
}

TEST(RunOptions, AllIsEveryKernelAndOptional) {
    Parsed p;
    parse("--bench all", &p);
    ASSERT_TRUE(p.status.ok());
    ASSERT_EQ(p.o.cfg.benches.size(), size_t(kKernelCount));
    for (const BenchInstance& b : p.o.cfg.benches) EXPECT_TRUE(b.optional);
}

TEST(RunOptions, EveryErrorSaysWhatIsWrong) {
    EXPECT_EQ(err(""), std::string("run: --code HEX or --bench NAME is required; kernels: ") + kNames);
    EXPECT_EQ(err("--bench foo"), std::string("--bench: unknown kernel 'foo'; kernels: ") + kNames);
    EXPECT_EQ(err("--bench nop,foo,add_chain"), std::string("--bench: unknown kernel 'foo'; kernels: ") + kNames);
    EXPECT_EQ(err("--bench nop,,add_chain"), "--bench: empty item in 'nop,,add_chain'");
    EXPECT_EQ(err("--bench nop,nop"), "--bench: 'nop' is listed twice");
    EXPECT_EQ(err("--bench all,nop"), "--bench: 'all' cannot be combined with other names");
    EXPECT_EQ(err("--bench"), "option --bench needs a value");
    EXPECT_EQ(err("--bench="), "--bench needs a value");
    EXPECT_EQ(err("--bench nop --unroll 0"), "--unroll: 0 is out of range 1..1000000");
    EXPECT_EQ(err("--bench nop --unroll 1000001"), "--unroll: 1000001 is out of range 1..1000000");
    EXPECT_EQ(err("--bench nop --unroll 99999999999999999999999"),
              "--unroll: '99999999999999999999999' is too large (at most 1000000)");
    EXPECT_EQ(err("--bench nop --unroll abc"), "--unroll: 'abc' is not a number");
    EXPECT_EQ(err("--bench nop --unroll -5"), "--unroll: '-5' is not a number");
    EXPECT_EQ(err("--bench nop --unroll"), "option --unroll needs a value");
    EXPECT_EQ(err("--bench nop --loop 0"), "--loop: 0 is out of range 1..1000000000");
    EXPECT_EQ(err("--bench nop --reps 0"), "--reps: 0 is out of range 1..100000");
    EXPECT_EQ(err("--bench nop --warmup 100001"), "--warmup: 100001 is out of range 0..100000");
    EXPECT_EQ(err("--bench nop --agg mode"), "--agg: 'mode' is not one of min, median, avg, trimmed, max");
    EXPECT_EQ(err("--bench nop --irq nmi"), "--irq: 'nmi' is not 'cli' or 'lvt'");
    EXPECT_EQ(err("--bench nop --serialize mfence"), "--serialize: 'mfence' is not 'lfence' or 'cpuid'");
    EXPECT_EQ(err("--bench nop --seed 0"), "--seed: 0 is out of range 1..18446744073709551615");
    EXPECT_EQ(err("--bench nop --decimals 10"), "--decimals: 10 is out of range 0..9");
    EXPECT_EQ(err("--bench nop --cpu two"),
              "--cpu: 'two' is not a CPU index, list or range (0,2 or 1-3), 'all', 'bsp', 'core' or 'atom'");
    EXPECT_EQ(err("--bench nop --frobnicate"), "run: unknown option '--frobnicate' (see 'pmulab help run')");
    EXPECT_EQ(err("--bench nop extra"), "run: unexpected argument 'extra' (see 'pmulab help run')");
    EXPECT_EQ(err("--bench nop --events tsc,"), "--events: empty item in 'tsc,'");
    // --size
    EXPECT_EQ(err("--bench nop --size 4K"),
              "--size: none of the chosen kernels uses a buffer (pointer_chase, store_stream and load_stream do)");
    EXPECT_EQ(err("--bench pointer_chase --size 3000"),
              "--size 3000: pointer_chase needs a multiple of 4K between 4K and 256M bytes");
    EXPECT_EQ(err("--bench pointer_chase --size 0"), "--size: 0 is out of range 1..18446744073709551615");
    EXPECT_EQ(err("--bench pointer_chase --size 512M"),
              "--size 536870912: pointer_chase needs a multiple of 4K between 4K and 256M bytes");
    EXPECT_EQ(err("--bench load_stream --size 48K"),
              "--size 49152: load_stream needs a power of two (its offset wraps with a mask), e.g. 4K, 64K, 1M");
    EXPECT_EQ(err("--bench pointer_chase --size 4Q"), "--size: '4Q' is not a number (suffixes K, M, G allowed)");
    EXPECT_EQ(err("--bench pointer_chase --size 4K,4096"), "--size: 4096 is listed twice");
    EXPECT_EQ(err("--bench pointer_chase --size 4K,,8K"), "--size: empty item in '4K,,8K'");
    EXPECT_EQ(err("--bench pointer_chase --size 99999999999999999999K"),
              "--size: '99999999999999999999K' is too large (at most 18446744073709551615)");
    // Accepted edge values.
    EXPECT_EQ(err("--bench pointer_chase --size 256M --unroll 1000000 --loop 1000000000 --reps 100000 --warmup 0"),
              "OK");
    EXPECT_EQ(err("--bench load_stream,store_stream --size 4K,256M"), "OK");
}

// ---- commands on the synthetic platform

namespace {

struct Rig {
    mtest::FakeHw hw{2};
    mtest::FakeMeasure mp;
    mtest::FakePlatform p{hw, &mp};
    int run(const std::string& line) {
        p.out.clear();
        return mtest::run_cmd(p, line);
    }
};

}  // namespace

// --json output after its first line, which must be the meta record (issue #26 item 19).
static std::string after_meta(const std::string& out) {
    EXPECT_EQ(out.rfind("{\"type\":\"meta\",", 0), 0u) << out;
    return out.substr(out.find('\n') + 1);
}

TEST(RunCommand, JsonRecordHasEveryField) {
    Rig r;
    ASSERT_EQ(r.run("run --bench nop --events tsc --json --reps 3 --warmup 1"), 0) << r.p.out;
    EXPECT_EQ(
        after_meta(r.p.out),
        "{\"type\":\"result\",\"cpu\":0,\"apic_id\":0,\"bench\":\"nop\",\"event\":\"tsc\",\"counter\":\"TSC\","
        "\"run\":0,\"runs\":1,\"unroll\":100,\"loop\":1,\"reps\":3,\"warmup\":1,\"basic\":false,\"agg\":\"median\","
        "\"irq\":\"cli\",\"serialize\":\"lfence\",\"noise\":{\"smi_delta\":null,\"smi_absent\":\"not an Intel CPU: "
        "MSR_SMI_COUNT (34H) is "
        "Intel's\",\"aperf_delta\":null,\"mperf_delta\":null,\"effective_hz\":null,\"aperf_absent\":\"no CPUID leaf "
        "06H (maximum leaf 0H): APERF/MPERF not enumerated\",\"tsc_delta\":7,\"freeze_while_smm\":\"unsupported\","
        "\"freeze_absent\":\"not an Intel CPU: FREEZE_WHILE_SMM is Intel's IA32_DEBUGCTL[14]\"},\"smi_moved\":null,"
        "\"instructions_per_iteration\":1,\"iterations\":100,"
        "\"per_iteration\":128.00,\"fraction\":[128,1],\"min\":128.00,\"median\":128.00,\"avg\":128.00,"
        "\"trimmed\":128.00,\"max\":128.00,\"q1\":128.00,\"q3\":128.00,\"unit\":\"TSC ticks / iteration\","
        "\"package\":0,\"core\":0,\"thread\":0,\"sibling\":\"none\"}\n");
}

TEST(RunCommand, JsonRawSizeAndFractions) {
    Rig r;
    r.mp.noise = {0, 0, 0, 50, 0, 0};  // reps 3, warmup 0: long runs + {50, 0, 0}
    ASSERT_EQ(r.run("run --bench pointer_chase --size 8K --json --reps 3 --warmup 0 --unroll 3 --agg avg --raw "
                    "--decimals 3 --cpu 1"),
              0)
        << r.p.out;
    // avg: 128 + 50 / 3 / 3 = 133.555...
    EXPECT_NE(r.p.out.find("\"cpu\":1,\"apic_id\":2,\"bench\":\"pointer_chase\",\"size\":8192,"), std::string::npos)
        << r.p.out;
    EXPECT_NE(r.p.out.find("\"agg\":\"avg\""), std::string::npos);
    EXPECT_NE(r.p.out.find("\"per_iteration\":133.556,\"fraction\":[1202,9],"), std::string::npos) << r.p.out;
    EXPECT_NE(r.p.out.find("\"min\":128.000,\"median\":128.000,\"avg\":133.556,\"trimmed\":133.556,\"max\":144.667"),
              std::string::npos)
        << r.p.out;
    EXPECT_NE(r.p.out.find("\"short\":{\"copies\":3,\"counts\":[884,884,884]},"
                           "\"long\":{\"copies\":6,\"counts\":[1318,1268,1268]}"),
              std::string::npos)
        << r.p.out;
}

TEST(RunCommand, TextTable) {
    Rig r;
    ASSERT_EQ(r.run("run --bench nop,pointer_chase --cpu all"), 0) << r.p.out;
    EXPECT_EQ(r.p.out,
              "pmulab run: 100 and 200 copies (U/2U), loop 1, 11 reps + 3 warm-up, aggregate median, interrupts cli, "
              "serialise lfence\n"
              "per iteration: median = median(long runs) - median(short runs), over the iterations; q1..q3 = the "
              "interquartile range of the 11 per-run differences (the spread);\n"
              "  est(min), est(max) = the same estimate from the min and from the max of each version (not a range)\n"
              "bench            size event      counter   cpu  apic  run       median           q1           q3"
              "     est(min)     est(max)  unit\n"
              "nop                 - tsc        TSC         0     0    0       128.00       128.00       128.00"
              "       128.00       128.00  TSC ticks / iteration\n"
              "nop                 - tsc        TSC         1     2    0       128.00       128.00       128.00"
              "       128.00       128.00  TSC ticks / iteration\n"
              "pointer_chase      4K tsc        TSC         0     0    0       128.00       128.00       128.00"
              "       128.00       128.00  TSC ticks / iteration\n"
              "pointer_chase      4K tsc        TSC         1     2    0       128.00       128.00       128.00"
              "       128.00       128.00  TSC ticks / iteration\n");
}

TEST(RunCommand, ExitStatuses) {
    Rig r;
    // A PMU event on a CPU without a PMU (the message depends on how far the PMU
    // layer is wired in; the status and the event name do not).
    EXPECT_EQ(r.run("run --bench nop --events cycles"), 3);
    EXPECT_EQ(r.p.out.rfind("pmulab: error: ", 0), 0u) << r.p.out;
    EXPECT_NE(r.p.out.find("'cycles'"), std::string::npos) << r.p.out;
    EXPECT_EQ(r.run("run --bench nop --events cycles --json"), 3);
    EXPECT_EQ(after_meta(r.p.out).rfind("{\"type\":\"error\",\"code\":\"unsupported\",\"message\":", 0), 0u) << r.p.out;
    EXPECT_EQ(r.run("run --bench nop --cpu 5"), 2);
    EXPECT_EQ(r.p.out, "pmulab: error: --cpu 5: there are only 2 logical processors (0..1)\n");
    EXPECT_EQ(r.run("run --bench nop --unroll 0"), 2);
    EXPECT_EQ(r.run("run --bench rdpmc"), 3);
    EXPECT_NE(r.p.out.find("pmulab: error: kernel 'rdpmc' is not supported on CPU 0: RDPMC 0x0 raised #UD"),
              std::string::npos)
        << r.p.out;
    // 'all' skips what this CPU cannot run, with a warning, and succeeds.
    EXPECT_EQ(r.run("run --bench all --reps 1 --warmup 0"), 0);
    EXPECT_NE(r.p.out.find("pmulab: warning: kernel 'rdpmc' is not supported on CPU 0: RDPMC 0x0 raised #UD (invalid "
                           "opcode) (skipped)\n"),
              std::string::npos)
        << r.p.out;
    // A platform without a measurement engine.
    mtest::FakePlatform bare(r.hw, nullptr);
    EXPECT_EQ(mtest::run_cmd(bare, "run --bench nop"), 3);
    EXPECT_EQ(bare.out, "pmulab: error: run: this platform cannot execute generated code\n");
}

TEST(RunCommand, ProgressRecordsOnRequest) {
    Rig r;
    ASSERT_EQ(r.run("run --bench nop,empty --json --progress --reps 1 --warmup 0"), 0);
    EXPECT_NE(r.p.out.find("{\"type\":\"progress\",\"done\":0,\"total\":2,\"bench\":\"nop\",\"cpu\":0,\"run\":0}\n"),
              std::string::npos)
        << r.p.out;
    EXPECT_NE(r.p.out.find("{\"type\":\"progress\",\"done\":1,\"total\":2,\"bench\":\"empty\",\"cpu\":0,\"run\":0}\n"),
              std::string::npos);
    ASSERT_EQ(r.run("run --bench nop --progress --reps 1 --warmup 0"), 0);
    EXPECT_NE(r.p.out.find("pmulab: [1/1] measuring nop on CPU 0, run 0\n"), std::string::npos) << r.p.out;
    // Without --progress: none for small runs, text lines for buffers of 16 MiB or more.
    ASSERT_EQ(r.run("run --bench nop --json --reps 1 --warmup 0"), 0);
    EXPECT_EQ(r.p.out.find("progress"), std::string::npos);
    ASSERT_EQ(r.run("run --bench pointer_chase --size 16M --reps 1 --warmup 0"), 0);
    EXPECT_NE(r.p.out.find("pmulab: [1/1] measuring pointer_chase (16M) on CPU 0, run 0\n"), std::string::npos);
}

TEST(BenchList, JsonAndText) {
    Rig r;
    ASSERT_EQ(r.run("bench list --json"), 0);
    std::vector<std::string> lines;
    size_t pos = 0;
    while (pos < r.p.out.size()) {
        size_t e = r.p.out.find('\n', pos);
        lines.push_back(r.p.out.substr(pos, e - pos));
        pos = e + 1;
    }
    ASSERT_EQ(lines.size(), size_t(kKernelCount));
    EXPECT_EQ(lines[1], "{\"type\":\"kernel\",\"name\":\"nop\",\"instructions_per_iteration\":1,\"buffer\":\"none\","
                        "\"body\":\"nop\",\"description\":\"one-byte NOP: front-end / retire throughput\"}");
    EXPECT_EQ(lines[6].substr(0, 171),
              "{\"type\":\"kernel\",\"name\":\"pointer_chase\",\"instructions_per_iteration\":1,\"buffer\":\"chase\","
              "\"default_size\":4096,\"min_size\":4096,\"max_size\":268435456,\"size_power_of_two\":false,");
    EXPECT_NE(lines[16].find("\"name\":\"rdpmc\",\"instructions_per_iteration\":1,\"buffer\":\"none\",\"needs\":"
                             "\"rdpmc\""),
              std::string::npos);
    ASSERT_EQ(r.run("bench list"), 0);
    EXPECT_NE(r.p.out.find("add_indep          8  -       add $1, %r8; add $1, %r9;"), std::string::npos) << r.p.out;
    EXPECT_EQ(r.run("bench"), 2);
    EXPECT_EQ(r.p.out, "pmulab: error: bench: expected 'list', got '' (see 'pmulab help bench')\n");
    EXPECT_EQ(r.run("bench list extra"), 2);
    EXPECT_EQ(r.p.out, "pmulab: error: bench list: unexpected argument 'extra'\n");
}

TEST(Selftest, PassesAndSkipsOnAMachineWithoutPmu) {
    Rig r;
    ASSERT_EQ(r.run("selftest"), 0) << r.p.out;
    EXPECT_NE(r.p.out.find("PASS: TSC advances [CPU 0]"), std::string::npos) << r.p.out;
    EXPECT_NE(r.p.out.find("PASS: empty kernel measures 0 per iteration [CPU 0]: 0.00 TSC ticks per iteration\n"),
              std::string::npos);
    EXPECT_NE(r.p.out.find("PASS: U vs 2U linearity for nop (U = 1000 and 2000) [CPU 0]: 128.00 vs 128.00"),
              std::string::npos);
    EXPECT_NE(r.p.out.find("PASS: rdpmc kernel: RDPMC is probed before code generation [CPU 0]: reported "
                           "unsupported"),
              std::string::npos);
    EXPECT_NE(r.p.out.find("PASS: every CPU measures the nop kernel: 2 of 2 CPUs\n"), std::string::npos);
    EXPECT_NE(r.p.out.find(
                  "SKIP: reference cycles: fixed counter 2 vs the TSC (CPU 0: no architectural performance monitoring"),
              std::string::npos);
    EXPECT_EQ(r.p.out.find("FAIL"), std::string::npos);
    // 6 PMU checks, the 3 interrupt checks (selftest_pmi.cpp) and the LBR check SKIP: no PMU;
    // the PCI check too: this fake platform has no configuration space.
    EXPECT_NE(r.p.out.find("SUMMARY: 23 tests, 0 failures, 11 skipped\n"), std::string::npos) << r.p.out;
    ASSERT_EQ(r.run("selftest --json --cpu all"), 0);
    EXPECT_NE(r.p.out.find("{\"type\":\"check\",\"name\":\"TSC advances\",\"cpu\":1,\"status\":\"PASS\","),
              std::string::npos)
        << r.p.out;
    EXPECT_NE(r.p.out.find("{\"type\":\"summary\",\"tests\":32,\"passed\":20,\"failed\":0,\"skipped\":12}\n"),
              std::string::npos)
        << r.p.out;
    EXPECT_EQ(r.run("selftest --bogus"), 2);
    EXPECT_EQ(r.p.out, "pmulab: error: selftest: unknown option '--bogus' (see 'pmulab help selftest')\n");
}

// The PCI check: a host bridge answers (PASS with its IDs); all ones means the configuration
// access reached nothing (FAIL); a platform without configuration space SKIPs (above).
TEST(Selftest, PciCheckPassesOnAHostBridgeAndFailsOnAllOnes) {
    const char* name = "pci: configuration space reads the host bridge at 00:00.0";
    Rig r;
    r.hw.pci_present = true;
    r.hw.pci_dword = 0x29C08086;
    ASSERT_EQ(r.run("selftest"), 0) << r.p.out;
    EXPECT_NE(r.p.out.find(std::string("PASS: ") + name + ": vendor 8086 device 29c0\n"), std::string::npos) << r.p.out;
    r.hw.pci_dword = 0xFFFFFFFF;
    EXPECT_EQ(r.run("selftest"), 1);
    EXPECT_NE(r.p.out.find(std::string("FAIL: ") + name +
                           ": vendor ffff device ffff: nothing answered (the configuration access is broken)\n"),
              std::string::npos)
        << r.p.out;
}

TEST(Selftest, ANonLinearHarnessFails) {
    Rig r;
    r.mp.overhead = {500};
    // Every run gets +5000 ticks on one of every 2 executions: medians of U and 2U
    // shift differently, so the empty kernel is no longer 0.
    r.mp.noise = {0,    0,    0,    0,    0,    0,    0,    0,    0,    0,    0,    0,    0,    0,
                  5000, 5000, 5000, 5000, 5000, 5000, 5000, 5000, 5000, 5000, 5000, 5000, 5000, 5000};
    EXPECT_EQ(r.run("selftest"), 1);
    EXPECT_NE(r.p.out.find("FAIL: empty kernel measures 0 per iteration [CPU 0]: 50.00 TSC ticks per iteration\n"),
              std::string::npos)
        << r.p.out;
}

TEST(Selftest, LinearityToleranceIsAQuarterTickPlusTenPercent) {
    // Kernels cost nothing; every long run gets +D ticks: U = 1000 measures D/1000 and
    // U = 2000 measures D/2000 per iteration.
    for (auto [d, verdict] : {std::pair<i64, const char*>{400, "PASS"}, {1000, "FAIL"}}) {
        Rig r;
        r.mp.cost = {0};
        r.mp.noise.assign(14, 0);
        r.mp.noise.resize(28, d);
        r.run("selftest");
        char want[120];
        std::snprintf(want, sizeof want, "%s: U vs 2U linearity for nop (U = 1000 and 2000) [CPU 0]: %.2f vs %.2f",
                      verdict, double(d) / 1000, double(d) / 2000);
        EXPECT_NE(r.p.out.find(want), std::string::npos) << want << "\n" << r.p.out;
    }
}

TEST(RunOptions, RepeatedListOptionsAccumulate) {
    Parsed p;
    parse("--bench nop --bench add_chain --events tsc --events cycles:u --size 4K --size 64K --bench pointer_chase",
          &p);
    ASSERT_TRUE(p.status.ok()) << p.status.error().msg;
    const MeasureConfig& c = p.o.cfg;
    // nop, add_chain, then pointer_chase once per size.
    ASSERT_EQ(c.benches.size(), 4u);
    EXPECT_STREQ(c.benches[0].kernel->name, "nop");
    EXPECT_STREQ(c.benches[1].kernel->name, "add_chain");
    EXPECT_STREQ(c.benches[2].kernel->name, "pointer_chase");
    EXPECT_EQ(c.benches[2].size, 4096u);
    EXPECT_EQ(c.benches[3].size, 64u * 1024);
    ASSERT_EQ(p.o.events.size(), 2u);
    EXPECT_TRUE(p.o.events[0].eq(StrView("tsc")));
    EXPECT_TRUE(p.o.events[1].eq(StrView("cycles:u")));
    EXPECT_STREQ(p.o.events_arg, "tsc;cycles:u");
}

TEST(RunOptions, SizeIsNeverReadFromATruncatedCopy) {
    Parsed p;
    parse("--bench pointer_chase --size 00000000000000000000000000000000000000004KJUNK", &p);
    ASSERT_FALSE(p.status.ok());
    EXPECT_EQ(p.status.error().code, Errc::invalid_argument);
    EXPECT_NE(std::string(p.status.error().msg).find("is not a size"), std::string::npos) << p.status.error().msg;
}

TEST(RunOptions, CpuListsAndCoreTypes) {
    Parsed p;
    parse("--bench nop --cpu 0,2-3", &p);
    ASSERT_TRUE(p.status.ok()) << p.status.error().msg;
    EXPECT_EQ(p.o.cpu.nranges, 2u);
    EXPECT_EQ(p.o.cpu.index, 0u);
    Parsed q;
    parse("--bench nop --cpu atom", &q);
    ASSERT_TRUE(q.status.ok()) << q.status.error().msg;
    EXPECT_EQ(q.o.cpu.core_type, kCoreTypeAtom);
}
