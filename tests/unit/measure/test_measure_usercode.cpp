// User code (`run --code`): hex parsing and option errors, the record, fault
// placement, and generated regions with init blocks executed for real on the host.
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cstring>
#include <string>
#include <vector>

#include "support/measure_test_util.h"
#include "../../../include/pmulab/user_code.h"

using namespace pmulab;

namespace {

struct Parsed {
    Status status;
    RunOptions o;
};

void parse(const std::string& line, Parsed* p) {
    static std::vector<ArgVec> keep;
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

std::vector<u8> hex(const char* s) {
    Vec<u8> v;
    Status st = parse_code_hex("--code", s, &v);
    EXPECT_TRUE(st.ok()) << (st.ok() ? "" : st.error().msg);
    return std::vector<u8>(v.data(), v.data() + v.size());
}

}  // namespace

TEST(UserCode, HexForms) {
    EXPECT_EQ(hex("4801d8"), (std::vector<u8>{0x48, 0x01, 0xD8}));
    EXPECT_EQ(hex("0x4801D8"), (std::vector<u8>{0x48, 0x01, 0xD8}));
    EXPECT_EQ(hex("48 01_d8:90"), (std::vector<u8>{0x48, 0x01, 0xD8, 0x90}));
}

TEST(UserCode, OptionErrors) {
    EXPECT_EQ(err("--code 4801dz"),
              "--code: 'z' at position 6 is not a hex digit (machine code as hex bytes, e.g. 4801d8 for add rax, rbx)");
    EXPECT_EQ(err("--code 4801d"), "--code: an odd number of hex digits (two per byte, e.g. 4801d8)");
    EXPECT_EQ(err("--code 0x"), "--code: empty code (give at least one byte, e.g. 90)");
    EXPECT_EQ(err("--code 90 --init zz"),
              "--init: 'z' at position 1 is not a hex digit (machine code as hex bytes, e.g. 4801d8 for add rax, rbx)");
    EXPECT_EQ(err("--code 90 --bench nop"), "run: --code and --bench cannot be combined");
    EXPECT_EQ(err("--init 90"), "run: the init blocks need a body: --code HEX or --code-file PATH");
    EXPECT_EQ(err("--code 90 --code-file a.bin"), "--code and --code-file cannot be combined");
    EXPECT_EQ(err("--late-init-file x --late-init 90 --code 90"),
              "--late-init and --late-init-file cannot be combined");
    EXPECT_EQ(err("--code 90 --size 4K"), "--size is for the built-in kernels; user code has R14's area (--r14-size)");
    EXPECT_EQ(err("--bench nop --name x"), "--name labels user code (--code); kernels have names");
    EXPECT_EQ(err("--bench nop --no-mem"),
              "--no-mem is for user code (--code): the built-in kernels use R8-R13 themselves");
    EXPECT_EQ(err("--code 90 --align-offset 64"), "--align-offset: 64 is out of range 0..63");
    EXPECT_EQ(err("--code 90 --r14-size 1000"), "--r14-size: 1000 is out of range 4096..1099511627776");
    EXPECT_EQ(err("--code 90 --r14-size 5000"), "--r14-size: 5000 is not a multiple of 4K");
    EXPECT_EQ(err("--code 90 --r14-size 6K"), "--r14-size: 6144 is not a multiple of 4K");
    std::string big(2 * kUserCodeMax + 2, '9');
    EXPECT_EQ(err("--code " + big), "--code: more than 65536 bytes of code (at most 65536 per block)");
}

TEST(UserCode, OptionsFillTheConfig) {
    Parsed p;
    parse("--code 4801d8 --init 90 --late-init 9090 --one-time-init 909090 --name chain --r14-size 2M "
          "--align-offset 7 --initial-warmup 4 --drain-frontend --cpu 1 --loop 3 --basic",
          &p);
    ASSERT_TRUE(p.status.ok()) << p.status.error().msg;
    const MeasureConfig& c = p.o.cfg;
    ASSERT_EQ(c.benches.size(), 1u);
    EXPECT_EQ(c.benches[0].kernel, nullptr);
    ASSERT_EQ(p.o.codes.size(), 1u);
    EXPECT_EQ(c.benches[0].user, &p.o.codes[0]);
    EXPECT_STREQ(bench_name(c.benches[0]), "chain");
    EXPECT_EQ(p.o.codes[0].body.size(), 3u);
    EXPECT_EQ(p.o.codes[0].init.size(), 1u);
    EXPECT_EQ(p.o.codes[0].late_init.size(), 2u);
    EXPECT_EQ(p.o.codes[0].one_time_init.size(), 3u);
    EXPECT_EQ(c.r14_size, u64(2) << 20);
    EXPECT_EQ(c.align_offset, 7u);
    EXPECT_EQ(c.initial_warmup, 4u);
    EXPECT_TRUE(c.drain_frontend);
    EXPECT_EQ(c.loop, 3u);
    EXPECT_TRUE(c.basic);
    Parsed d;
    parse("--code 90", &d);
    ASSERT_TRUE(d.status.ok());
    EXPECT_STREQ(bench_name(d.o.cfg.benches[0]), "code");
}

TEST(UserCode, Fnv1a64IsTheStandardOne) {
    EXPECT_EQ(fnv1a64(nullptr, 0), 0xCBF29CE484222325ull);
    const u8 a[] = {'a'};
    EXPECT_EQ(fnv1a64(a, 1), 0xAF63DC4C8601EC8Cull);  // the FNV reference value for "a"
    const u8 add[] = {0x48, 0x01, 0xD8};
    EXPECT_EQ(fnv1a64(add, 3), 0x48F39C19CD4ACF2Eull);  // what the QEMU test expects for --code 4801d8
}

TEST(UserCode, FaultsAreLocatedInTheirBlock) {
    Region r;
    r.init_offset = 100;
    r.init_len = 10;
    r.late_init_offset = 300;
    r.late_init_len = 4;
    r.body_offset = 320;
    r.body_len = 3;
    r.copies = 100;
    FaultPlace p = locate_fault(r, 105);
    EXPECT_EQ(p.block, CodeBlock::init);
    EXPECT_EQ(p.offset, 5u);
    p = locate_fault(r, 303);
    EXPECT_EQ(p.block, CodeBlock::late_init);
    EXPECT_EQ(p.offset, 3u);
    p = locate_fault(r, 320 + 3 * 41 + 2);
    EXPECT_EQ(p.block, CodeBlock::body);
    EXPECT_EQ(p.offset, 2u);
    EXPECT_EQ(p.copy, 41u);
    EXPECT_EQ(locate_fault(r, 320 + 300).block, CodeBlock::harness);
    EXPECT_EQ(locate_fault(r, 5).block, CodeBlock::harness);
    r.block = CodeBlock::one_time_init;
    EXPECT_EQ(locate_fault(r, 101).block, CodeBlock::one_time_init);
    EXPECT_STREQ(code_block_name(CodeBlock::late_init), "late-init");
}

TEST(UserCode, EngineGivesScratchAreasAndPointersIntoTheirMiddle) {
    mtest::FakeHw hw;
    mtest::FakeMeasure mp;
    mtest::FakePlatform p(hw, &mp);
    int rc = mtest::run_cmd(p, "run --code 4801d8 --name add --r14-size 64K --json");
    EXPECT_EQ(rc, 0) << p.out;
    ASSERT_EQ(mp.frame_gprs.size(), size_t(kGprCount));
    EXPECT_EQ(mp.data_allocs, 5);  // RSP, RDI, RSI, RBP (1 MiB each) and R14
    // Each register points to the middle of its own page-aligned area: R14 to the
    // record's r14 + 32K, the others 512K into 1 MiB areas that do not overlap.
    std::string key = "\"r14\":";
    size_t at = p.out.find(key);
    ASSERT_NE(at, std::string::npos) << p.out;
    u64 r14 = std::stoull(p.out.substr(at + key.size()));
    EXPECT_EQ(mp.frame_gprs[kR14], r14 + 32768);
    std::vector<u64> mids;
    for (u8 r : {kRsp, kRdi, kRsi, kRbp}) {
        EXPECT_EQ(mp.frame_gprs[r] % 4096, 0u) << int(r);
        mids.push_back(mp.frame_gprs[r]);
    }
    mids.push_back(r14 + 32768);
    for (size_t i = 0; i < mids.size(); ++i)
        for (size_t j = 0; j < i; ++j) {
            u64 d = mids[i] > mids[j] ? mids[i] - mids[j] : mids[j] - mids[i];
            EXPECT_GE(d, u64(1) << 19) << i << " " << j;
        }
    EXPECT_NE(p.out.find("\"bench\":\"add\",\"code\":\"add\",\"code_bytes\":3,\"code_fnv1a64\":\"48f39c19cd4acf2e\""),
              std::string::npos)
        << p.out;
    EXPECT_NE(p.out.find("\"r14_size\":65536"), std::string::npos) << p.out;
    EXPECT_EQ(p.out.find("instructions_per_iteration"), std::string::npos) << p.out;
    EXPECT_TRUE(mp.live.empty());
}

TEST(UserCode, PublicHeaderAgreesWithTheEngine) {
    EXPECT_EQ(u64(PMULAB_SCRATCH_SIZE), kScratchBytes);
    EXPECT_EQ(u64(PMULAB_R14_SIZE), MeasureConfig().r14_size);
    EXPECT_EQ(u64(PMULAB_R14_MAX), kR14Max);
    EXPECT_EQ(usize(PMULAB_USER_CODE_MAX), kUserCodeMax);
    EXPECT_EQ(u32(PMULAB_NO_MEM_REGS), kNoMemReads);
    EXPECT_EQ(u32(PMULAB_TIMEOUT), MeasureConfig().timeout_s);
    EXPECT_EQ(u64(PMULAB_PAUSE_MARKER), kPauseMarker);
    EXPECT_EQ(u64(PMULAB_RESUME_MARKER), kResumeMarker);
}

// --timeout: the engine arms the platform's watchdog for the run and restores the
// default after it; a run the watchdog stopped (vector 2) is an error naming the time
// limit and the place, and the command goes on with the next CPU.
TEST(UserCode, WatchdogStopIsReportedWithTheTimeLimitAndThePlace) {
    mtest::FakeHw hw;
    mtest::FakeMeasure mp;
    mtest::FakePlatform p(hw, &mp);
    mp.stop_at = 5;  // the 5th run on CPU 0 (a measured run of the short version)
    int rc = mtest::run_cmd(p, "run --code 4801d8 --name spin --timeout 3 --cpu all --json");
    EXPECT_EQ(rc, 2) << p.out;  // user code at fault, as for exceptions
    EXPECT_EQ(mp.timeouts, (std::vector<u32>{3, 0}));
    EXPECT_NE(p.out.find("spin on CPU 0 (run 0): code did not finish within 3 s (--timeout): pmulab's watchdog "
                         "stopped it (NMI) at offset 2 of the body (copy 1 of 100), RIP 0x"),
              std::string::npos)
        << p.out;
    EXPECT_NE(p.out.find("\"type\":\"result\",\"cpu\":1"), std::string::npos) << p.out;  // CPU 1 measured
    EXPECT_NE(p.out.find("{\"type\":\"error\",\"code\":\"invalid argument\",\"message\":\"spin on CPU 0"),
              std::string::npos)
        << p.out;
    EXPECT_NE(p.out.find("RIP 0x"), std::string::npos);
    EXPECT_NE(p.out.find("\",\"vector\":2}"), std::string::npos) << p.out;
    EXPECT_TRUE(mp.live.empty());

    mtest::FakeMeasure mp2;
    mtest::FakePlatform p2(hw, &mp2);
    EXPECT_EQ(mtest::run_cmd(p2, "run --code 90 --json"), 0) << p2.out;
    EXPECT_EQ(mp2.timeouts, (std::vector<u32>{10, 0}));  // the default
    EXPECT_EQ(err("--code 90 --timeout 0"), "--timeout: 0 is out of range 1..86400");
    EXPECT_EQ(err("--code 90 --timeout 86401"), "--timeout: 86401 is out of range 1..86400");
}

// Pause/resume markers: only in the body, alternating from a pause, resumed in each copy,
// not with --no-mem; the header line counts the pairs.
TEST(UserCode, PauseResumeMarkersAreChecked) {
    const std::string P = "043f81c2b113b5f0", R = "043f81c2b113b5e0";
    auto run_err = [&](const std::string& line) {
        mtest::FakeHw hw;
        mtest::FakeMeasure mp;
        mtest::FakePlatform p(hw, &mp);
        int rc = mtest::run_cmd(p, "run " + line);
        return std::to_string(rc) + " " + p.out;
    };
    EXPECT_EQ(run_err("--code " + P + "90"),
              "2 pmulab: error: --code: the pause marker at offset 0 is not resumed in the body (each copy must resume "
              "counting before it ends)\n");
    EXPECT_EQ(run_err("--code 90" + R), "2 pmulab: error: --code: a resume marker at offset 1 without a pause marker "
                                        "before it\n");
    EXPECT_EQ(run_err("--code " + P + P + R),
              "2 pmulab: error: --code: a second pause marker at offset 8 (the one at offset 0 is not resumed yet)\n");
    EXPECT_EQ(run_err("--code 90 --late-init 90" + P),
              "2 pmulab: error: --late-init: a pause/resume marker at offset 1: markers pause the count only in the "
              "body (--code)\n");
    EXPECT_EQ(run_err("--code " + P + R + " --no-mem"),
              "2 pmulab: error: --no-mem: pause/resume markers keep their sums in the harness's memory; drop "
              "--no-mem\n");
    std::string ok = run_err("--code " + P + "90" + R + "4801d8" + P + R);
    EXPECT_EQ(ok.rfind("0 pmulab run: code 'code': 36 bytes, FNV-1a 64 ", 0), 0u) << ok;
    EXPECT_NE(ok.find(", 2 pause/resume marker pairs per copy\n"), std::string::npos) << ok;
}

// Issue 26 item 8: several --code, each with the --name after it, are each measured as
// their own bench (before: only the last code was kept, exit 0).
TEST(UserCode, EveryCodeIsMeasuredWithItsOwnName) {
    Parsed p;
    parse("--code 4801d8 --name chain --init 90 --code 480fafc0 --name b --reps 3", &p);
    ASSERT_TRUE(p.status.ok()) << p.status.error().msg;
    std::vector<std::string> names;
    for (const BenchInstance& b : p.o.cfg.benches) names.push_back(bench_name(b));
    EXPECT_EQ(names, (std::vector<std::string>{"chain", "b"}));
    EXPECT_EQ(p.o.cfg.benches[0].user->body.size(), 3u);
    EXPECT_EQ(p.o.cfg.benches[1].user->body.size(), 4u);
    EXPECT_EQ(p.o.cfg.benches[1].user->init.size(), 1u);  // the init blocks are every code's
    Parsed d;
    parse("--code 90 --code 91 --code 92 --name last", &d);
    ASSERT_TRUE(d.status.ok()) << d.status.error().msg;
    names.clear();
    for (const BenchInstance& b : d.o.cfg.benches) names.push_back(bench_name(b));
    EXPECT_EQ(names, (std::vector<std::string>{"code1", "code2", "last"}));
    EXPECT_EQ(err("--code 90 --name a --name b"), "run: --name is given more than once for one code (one per code)");
    EXPECT_EQ(err("--code 90 --name a --code 91 --name a"), "--name: 'a' names two codes (each needs its own)");
    EXPECT_EQ(err("--code 90 --code-file x.bin"), "--code and --code-file cannot be combined");

    mtest::FakeHw hw;
    mtest::FakeMeasure mp;
    mtest::FakePlatform plat(hw, &mp);
    int rc = mtest::run_cmd(plat, "run --code 4801d8 --name chain --code 480fafc0 --name b --reps 3 --json");
    EXPECT_EQ(rc, 0) << plat.out;
    EXPECT_NE(plat.out.find("\"bench\":\"chain\",\"code\":\"chain\",\"code_bytes\":3,"), std::string::npos) << plat.out;
    EXPECT_NE(plat.out.find("\"bench\":\"b\",\"code\":\"b\",\"code_bytes\":4,"), std::string::npos) << plat.out;
}

// Repeating an option that takes one value is a usage error (exit 2), never "the last
// one wins".
TEST(UserCode, RepeatedOptionIsAUsageError) {
    EXPECT_EQ(err("--code 90 --unroll 5 --unroll 6"), "run: --unroll is given more than once (it is not repeatable)");
    EXPECT_EQ(err("--code 90 --init 90 --init 91"), "run: --init is given more than once (it is not repeatable)");
    EXPECT_EQ(err("--bench nop --cpu 0 --cpu 1"), "run: --cpu is given more than once (it is not repeatable)");
    EXPECT_EQ(err("--bench nop --raw --raw"), "run: --raw is given more than once (it is not repeatable)");
    EXPECT_EQ(err("--bench nop --events tsc --events tsc"), "OK");  // lists accumulate (perf's -e a -e b)
    mtest::FakeHw hw;
    mtest::FakeMeasure mp;
    mtest::FakePlatform plat(hw, &mp);
    EXPECT_EQ(mtest::run_cmd(plat, "run --bench nop --reps 3 --reps 5"), 2);
    EXPECT_EQ(plat.out, "pmulab: error: run: --reps is given more than once (it is not repeatable)\n");
}

// Issue 26 item 13: --topdown's level is optional (default 1), also before another option.
TEST(UserCode, TopdownLevelIsOptional) {
    Parsed p;
    parse("--bench nop --topdown --metrics ipc", &p);
    ASSERT_TRUE(p.status.ok()) << p.status.error().msg;
    EXPECT_EQ(p.o.topdown, 1u);
    EXPECT_STREQ(p.o.metrics_arg, "ipc");
    Parsed q;
    parse("--bench nop --topdown 2", &q);
    ASSERT_TRUE(q.status.ok());
    EXPECT_EQ(q.o.topdown, 2u);
    Parsed r;
    parse("--bench nop --topdown", &r);
    ASSERT_TRUE(r.status.ok());
    EXPECT_EQ(r.o.topdown, 1u);
    EXPECT_EQ(err("--bench nop --topdown 3"), "--topdown: '3' is not a level (1 or 2)");
}
