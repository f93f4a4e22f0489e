// `pmulab selftest` (cmd_selftest.cpp: the harness checks and the command;
// selftest_pmu.cpp: the PMU checks): the check reporter they share.
#pragma once

#include "base/json.h"
#include "commands/measure_cmd.h"

namespace pmulab {

// unverified: the check could not be made on this PMU (e.g. NetBurst CCCR.OVF after
// generated code): reported distinctly from PASS and counted apart; it does not fail.
enum class Verdict : u8 { pass, fail, skip, unverified };

class Checks {
public:
    explicit Checks(Out& out) : out_(out) {}
    void report(Verdict v, const char* name, i64 cpu, const char* detail) {
        const char* tag = v == Verdict::pass   ? "PASS"
                          : v == Verdict::fail ? "FAIL"
                          : v == Verdict::skip ? "SKIP"
                                               : "NOT VERIFIED";
        ++total_;
        if (v == Verdict::fail) ++failed_;
        if (v == Verdict::skip) ++skipped_;
        if (v == Verdict::unverified) ++unverified_;
        Value line;
        JsonWriter w(line);
        w.begin_object().field("type", "check").field("name", name);
        if (cpu >= 0) w.field_u("cpu", u64(cpu));
        w.field("status", tag).field("detail", detail).end_object();
        out_.record(line);
        StrBuf t;
        t.printf("%s: %s", tag, name);
        if (cpu >= 0) t.printf(" [CPU %lld]", (long long)cpu);
        if (detail && detail[0]) t.printf(v == Verdict::skip ? " (%s)" : ": %s", detail);
        t.put('\n');
        out_.text_buf(t);
    }
    void reportf(Verdict v, const char* name, i64 cpu, const char* fmt, ...) __attribute__((format(printf, 5, 6))) {
        char d[240];
        va_list ap;
        va_start(ap, fmt);
        vformat_to(d, sizeof d, fmt, ap);
        va_end(ap);
        report(v, name, cpu, d);
    }
    // The summary; FAIL verdicts make the command fail (exit status 1).
    void finish() {
        Value line;
        JsonWriter w(line);
        w.begin_object()
            .field("type", "summary")
            .field_u("tests", total_)
            .field_u("passed", total_ - failed_ - skipped_ - unverified_);
        w.field_u("failed", failed_).field_u("skipped", skipped_);
        if (unverified_) w.field_u("not_verified", unverified_);
        w.end_object();
        out_.record(line);
        out_.text("SUMMARY: %u tests, %u failures, %u skipped", total_, failed_, skipped_);
        if (unverified_) out_.text(", %u not verified", unverified_);
        out_.text("\n");
        out_.simulated_mark();
        if (failed_) out_.fail(Errc::fault);
    }

private:
    Out& out_;
    u32 total_ = 0, failed_ = 0, skipped_ = 0, unverified_ = 0;
};

StrBuf fixed2(Frac f);
// Whether two per-iteration values agree within the selftest's tolerance (cmd_selftest.cpp).
bool agrees(Frac a, Frac b);

// Runs fn on `cpu` through the measurement platform where there is one: it waits for
// the AP without competing with it (a spinning BSP starves the AP under QEMU -icount;
// see MeasurePlatform::run_on_cpu); else through Hw::run_on_cpu.
template <typename F> Status run_on_measuring(Hw& hw, MeasurePlatform* mp, u32 cpu, F&& fn) {
    if (!mp) return run_on(hw, cpu, fn);
    CpuCall c = cpu_call(fn);
    return mp->run_on_cpu(hw, cpu, c.fn, c.ctx);
}

// The interrupt checks (selftest_pmi.cpp) on one CPU with a PMU (`info`: its PMU): an
// overflow's PMI, freeze on PMI, counter width; each SKIPs with the reason where the PMU
// or the platform cannot. skip_pmi_checks reports the three SKIPs (cpu -1: no CPU).
extern const char kPmiOvf[], kPmiFreeze[], kPmiWidth[];
void check_pmi(Checks& ck, Hw& hw, MeasurePlatform& mp, u32 cpu, const PmuInfo& info);
void skip_pmi_checks(Checks& ck, i64 cpu, const char* why);
// The counter-write half of the width checks (selftest_writes.cpp; Intel).
void check_pmc_writes(Checks& ck, Hw& hw, MeasurePlatform& mp, u32 cpu, const PmuInfo& info);

// The PMU checks (selftest_pmu.cpp) on `cpus`.
void check_pmu(Checks& ck, Hw& hw, MeasurePlatform* mp, const Vec<u32>& cpus);
// The NMI path of the PMU's interrupt (selftest_nmi.cpp, "nmi-path") on `cpus`: listed only
// where the platform has one (MeasurePlatform::run_with_nmis).
void check_nmi_path(Checks& ck, Hw& hw, MeasurePlatform* mp, const Vec<u32>& cpus);
// The LBR check (selftest_lbr.cpp) on `cpus`: SKIP where a CPU has no LBR.
void check_lbr(Checks& ck, Hw& hw, MeasurePlatform* mp, const Vec<u32>& cpus);

}  // namespace pmulab
