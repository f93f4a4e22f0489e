// `pmulab selftest`: the LBR check of kvm-unit-tests' x86/pmu_lbr.c ("an LBR records a
// known taken jump"): a body of one JMP over a NOP (EB 01 90) measured once with --lbr's
// hooks; the stack must hold a record from the JMP to the byte after the NOP.
#include "commands/measure_cmd.h"
#include "commands/selftest.h"

namespace pmulab {

namespace {

const char kLbrJump[] = "lbr: an LBR records a known taken jump";

class LbrCapture final : public MeasureSink {
public:
    explicit LbrCapture(const LbrRun& run) : run_(run) {}
    void result(const MeasureConfig&, const MeasureResult& r) override {
        if (r.read != run_.first_read || !run_.have || !r.region) return;
        const Region& rg = *r.region;
        u64 body = u64(reinterpret_cast<uintptr_t>(rg.code)) + rg.body_offset;
        seen = true;
        records = run_.last.n;
        for (u32 i = 0; i < run_.last.n; ++i) {
            const LbrEntry& e = run_.last.e[i];
            for (u64 c = 0; c < rg.copies; ++c)
                found |= e.from == body + c * rg.body_len && e.to == body + c * rg.body_len + 3;
        }
    }
    void failure(const Error& e) override {
        if (!failed) err = e;
        failed = true;
    }
    void skipped(const Error& e) override { failure(e); }
    bool seen = false, found = false, failed = false;
    u32 records = 0;
    Error err;

private:
    const LbrRun& run_;
};

void check_lbr_cpu(Checks& ck, Hw& hw, MeasurePlatform& mp, u32 cpu) {
    Vec<u32> one;
    one.push(cpu);
    Vec<ProbedCpu> probed;
    probe_cpus(hw, one, &probed, [&](u32 c, auto&& fn) { return run_on_measuring(hw, &mp, c, fn); });
    if (!probed[0].status.ok()) return ck.report(Verdict::fail, kLbrJump, cpu, probed[0].status.error().msg);
    LbrInfo info;
    lbr_decode(probed[0].probe, probed[0].info, &info);
    if (info.kind == LbrKind::none) return ck.reportf(Verdict::skip, kLbrJump, cpu, "CPU %u: %s", cpu, info.absent);
    LbrRun run;
    Status s = prepare_run_lbr(hw, one, &run);
    if (!s.ok()) return ck.report(Verdict::fail, kLbrJump, cpu, s.error().msg);
    UserCode code;
    str_copy(code.name, sizeof code.name, "lbr_jump");
    static const u8 kJmpOverNop[] = {0xEB, 0x01, 0x90};  // jmp +1; nop
    for (u8 b : kJmpOverNop) code.body.push(b);
    MeasureConfig cfg;
    cfg.benches.push(BenchInstance{.user = &code});
    cfg.cpus.push(cpu);
    cfg.unroll = 1;
    cfg.reps = 1;
    cfg.warmup = 0;
    Vec<ReadGroup> groups;
    Vec<StrView> tsc;
    tsc.push(StrView("tsc"));
    s = plan_event_groups(tsc, &groups);
    if (!s.ok()) return ck.report(Verdict::fail, kLbrJump, cpu, s.error().msg);
    attach_run_lbr(&run, &groups[0]);
    LbrCapture cap(run);
    measure_run(hw, mp, cfg, groups, cap);
    const LbrInfo& l = run.infos[0];
    if (cap.failed) return ck.report(Verdict::fail, kLbrJump, cpu, cap.err.msg);
    if (!cap.seen) return ck.report(Verdict::fail, kLbrJump, cpu, "the measurement gave no result");
    ck.reportf(cap.found ? Verdict::pass : Verdict::fail, kLbrJump, cpu, "%s LBR (%s, %u entries): %u records, %s",
               lbr_kind_name(l.kind), l.model, l.depth, cap.records,
               cap.found ? "one from the JMP to its target" : "none from the JMP (EB 01) to its target");
}

}  // namespace

void check_lbr(Checks& ck, Hw& hw, MeasurePlatform* mp, const Vec<u32>& cpus) {
    if (!mp) {
        ck.report(Verdict::skip, kLbrJump, -1, "this platform cannot execute generated code");
        return;
    }
    for (u32 cpu : cpus) check_lbr_cpu(ck, hw, *mp, cpu);
}

}  // namespace pmulab
