// `pmulab selftest`: the interrupt checks, as a vPMU tester runs them (kvm-unit-tests
// x86/pmu.c check_counter_overflow; freeze on PMI; counters counting past their width;
// the counter-write half, check_gp_counters_write_width, is selftest_writes.cpp).
//
// Each check runs generated code (emit_region: add_indep copies between the group's
// start and stop writes, the measurement engine's region) on the measuring CPU, with the
// counters programmed by the engine's PMU plan (pmu_plan.h) and pmulab's own PMI handler
// (pmu/pmi.h) attached through the platform: the LVT performance-counter entry set to
// deliver an NMI (kLvtPerfNmi), then the entry, DEBUGCTL and every PMU register put back
// exactly as they were.
//
// Sources: Intel SDM Vol. 3B §20.2.2 (GLOBAL_STATUS), §20.2.4.1 (v4 CTR_FRZ), §20.2.6
// (full-width writes), §18.4.7 (freezing counters on PMI), Vol. 3A §11.5.1 (the LVT entry
// is masked on delivery); AMD APM Vol. 2 §13.2 (48-bit PERF_CTR, PerfMonV2 status,
// LbrAndPmcFreeze).
#include "commands/selftest.h"
#include "measure/noise.h"
#include "measure/pmu_plan.h"
#include "pmu/pmi.h"
#include "x86/amd_regs.h"
#include "x86/intel_regs.h"
#include "x86/msr_addr.h"

namespace pmulab {

const char kPmiOvf[] = "an overflow sets its GLOBAL_STATUS bit and delivers exactly one PMI";
const char kPmiFreeze[] = "freeze-on-PMI stops every counter";
const char kPmiWidth[] = "counters wrap at their enumerated width";

namespace {

using regs::DebugCtl;
using regs::PerfGlobalStatus;

// The code: kCopies copies of add_indep (8 instructions each) between the start and
// stop writes. An armed counter's period is 3/4 of them: one overflow, well inside the
// body, and the rest (a quarter plus the harness) too short for a second one.
constexpr u64 kCopies = 500;
constexpr u64 kWrapBelow = 16;       // the wrap runs' presets: 2^width - 16
constexpr u32 kNmiWaitReads = 1000;  // TSC reads waiting for a PMI still in flight after the code

u64 body_instructions() { return kCopies * kernel_info(KernelId::add_indep).instructions; }

struct PmiCtx {
    Checks& ck;
    Hw& hw;
    MeasurePlatform& mp;
    u32 cpu;
    const PmuInfo& info;
};

// What the handler saw at the first PMI, before it reloaded and acknowledged anything.
struct PmiSnapshot {
    bool taken = false;
    u64 rip = 0, status = 0, ctrl = 0;
    u32 lvt = 0;
    u64 values[kMaxReads] = {};
};

// One run of the code with one counter group, and what it left.
struct PmiRun {
    // what to run
    const char* spec = nullptr;  // the events, in counter order (one group)
    int armed = -1;              // the event armed with a PMI (-1: none)
    u64 period = 0;
    bool freeze = false;  // DEBUGCTL.FREEZE_PERFMON_ON_PMI, left frozen until the end
    u64 below_top = 0;    // every counter preset to 2^width - below_top (0: 0)
    // what it left
    PmiSetup setup;
    usize n = 0;
    CounterKind kind[kMaxReads] = {};
    u8 index[kMaxReads] = {}, width[kMaxReads] = {};
    u64 pmis = 0, foreign = 0, samples = 0;
    Status handler;
    PmiSnapshot at;
    u32 lvt_before = 0, lvt_rearmed = 0, lvt_after = 0;
    u64 debugctl_before = 0, debugctl_after = 0;
    u64 end[kMaxReads] = {};
    u64 status_end = 0;
    u64 body_start = 0, body_end = 0;
    usize copy_len = 0;
};

void put_counter(StrBuf& b, const PmuInfo& info, CounterKind kind, u8 index) {
    if (info.kind == PmuKind::amd) b.printf("PERF_CTR%u", unsigned(index));
    else put_counter_name(b, kind, index);
}

// The sink: reads the state at the first PMI (in the NMI: no allocation, no output).
class PmiProbe final : public PmiSink {
public:
    PmiProbe(const PmiCtx& c, PmuSession& s, PmiRun* r) : c_(c), s_(s), r_(r) {}
    void sample(u32, u64 rip) override {
        PmiSnapshot& at = r_->at;
        if (at.taken) return;
        at.taken = true;
        at.rip = rip;
        if (r_->setup.status_msr) at.status = value(c_.hw.rdmsr(r_->setup.status_msr));
        if (r_->setup.ctrl_msr) at.ctrl = value(c_.hw.rdmsr(r_->setup.ctrl_msr));
        Result<u32> lvt = c_.mp.lvt_perf();
        at.lvt = lvt.ok() ? lvt.value() : 0;
        for (usize k = 0; k < r_->n; ++k) at.values[k] = value(s_.read(r_->kind[k], r_->index[k]));
    }
    // No precise source is armed by the check.
    void precise(u32 slot, const PreciseSample& s) override { sample(slot, s.rip); }

private:
    static u64 value(const Result<u64>& v) { return v.ok() ? v.value() : ~u64(0); }
    const PmiCtx& c_;
    PmuSession& s_;
    PmiRun* r_;
};

Status rearm_lvt(void* ctx, u32 value) { return static_cast<MeasurePlatform*>(ctx)->set_lvt_perf(value); }

// The engine's plan of r->spec as one group, the armed counter's PMI set up.
Status plan_run(const PmiCtx& c, PmiRun* r, PmuPlan* plan) {
    Vec<Event> events;
    PMULAB_TRY(parse_event_list(StrView(r->spec), &events, c.info.dialect));
    if (r->armed >= 0) events[usize(r->armed)].pmi = true;
    Vec<u32> cpus;
    cpus.push(c.cpu);
    PmuRunOptions opts;
    opts.preset_below_top = r->below_top;
    PMULAB_TRY(plan_pmu_groups(c.info, events, cpus, opts, plan));
    if (plan->groups.size() != 1 || !plan->groups[0].hooks.setup)
        return Error::make(Errc::internal, "'%s' does not fit one run of the counters", r->spec);
    const CounterGroup& g = plan->alloc.groups[0];
    PmuGroupState& st = *plan->state[0];
    r->n = g.events.size();
    u64 periods[kMaxReads] = {};
    for (usize k = 0; k < r->n; ++k) {
        r->kind[k] = g.events[k].kind;
        r->index[k] = g.events[k].index;
        r->width[k] = plan->groups[0].reads[k].width;
        if (int(g.events[k].event) == r->armed) periods[k] = r->period;
    }
    if (r->armed < 0) return ok_status();
    PMULAB_TRY(pmi_setup(c.info, g, periods, nullptr, r->freeze, &r->setup));
    for (usize k = 0; k < r->n; ++k)
        if (periods[k]) st.presets[k] = r->setup.counters[0].reload;
    st.opts.preset_below_top = r->period;  // nonzero: the setup hook programs st.presets
    // The freeze check leaves the counters frozen after the PMI (the handler acknowledges
    // the overflow only), so that the counts at the end show whether anything moved.
    if (r->freeze) {
        r->setup.ack_extra = 0;
        r->setup.legacy_freeze = false;
    }
    return ok_status();
}

// The region, interrupts masked; a PMI still in flight after it is waited for briefly.
Status execute_masked(const PmiCtx& c, const Region& reg, const PmiHandler* h) {
    IrqSaved saved;
    PMULAB_TRY(c.mp.irq_mask(IrqMode::cli, &saved));
    RegionFrame f;
    c.mp.execute(reg, &f);
    for (u32 i = 0; h && i < kNmiWaitReads && h->pmis() + h->foreign() == 0; ++i) (void)c.hw.rdtsc();
    c.mp.irq_restore(saved);
    if (f.faulted)
        return Error::make(Errc::fault, "the code faulted: vector %llu at RIP 0x%llx",
                           (unsigned long long)f.fault_vector, (unsigned long long)f.fault_rip);
    return ok_status();
}

// On the measuring CPU, the group programmed: the LVT entry and DEBUGCTL set, the
// handler attached, the code run, and all of it put back.
Status interrupt_run(const PmiCtx& c, PmuGroupState& st, const Region& reg, PmiRun* r) {
    if (r->armed < 0) return execute_masked(c, reg, nullptr);
    Result<u32> lvt = c.mp.lvt_perf();
    if (!lvt.ok()) return lvt.error();
    r->lvt_before = lvt.value();
    PmiProbe probe(c, st.session, r);
    PmiHandler h;
    h.arm(c.hw, r->setup, &probe, rearm_lvt, &c.mp);
    Status s = c.mp.set_lvt_perf(kLvtPerfNmi);
    if (s.ok()) s = c.mp.pmi_attach(&h);
    if (!s.ok()) {
        (void)c.mp.set_lvt_perf(r->lvt_before);
        return s;
    }
    if (r->freeze) {
        Result<u64> d = c.hw.rdmsr(msr::IA32_DEBUGCTL);
        if (!d.ok()) s = d.error();
        r->debugctl_before = d.ok() ? d.value() : 0;
        if (s.ok()) s = c.hw.wrmsr(msr::IA32_DEBUGCTL, DebugCtl(r->debugctl_before).set_freeze_perfmon_on_pmi().raw());
    }
    if (s.ok()) s = execute_masked(c, reg, &h);
    if (r->freeze) {
        Status d = c.hw.wrmsr(msr::IA32_DEBUGCTL, r->debugctl_before);
        Result<u64> now = c.hw.rdmsr(msr::IA32_DEBUGCTL);
        r->debugctl_after = now.ok() ? now.value() : ~u64(0);
        if (s.ok()) s = d;
    }
    c.mp.pmi_detach();
    r->pmis = h.pmis();
    r->foreign = h.foreign();
    r->samples = h.samples();
    r->handler = h.error();
    Result<u32> rearmed = c.mp.lvt_perf();
    r->lvt_rearmed = rearmed.ok() ? rearmed.value() : 0;
    Status back = c.mp.set_lvt_perf(r->lvt_before);
    Result<u32> after = c.mp.lvt_perf();
    r->lvt_after = after.ok() ? after.value() : ~u32(0);
    return s.ok() ? back : s;
}

// The counters after the run; a freeze the run left is cleared (it was not there before).
Status read_end(const PmiCtx& c, PmuGroupState& st, PmiRun* r) {
    for (usize k = 0; k < r->n; ++k) r->end[k] = PMULAB_TRY(st.session.read(r->kind[k], r->index[k]));
    if (!r->setup.status_msr) return ok_status();
    r->status_end = PMULAB_TRY(c.hw.rdmsr(r->setup.status_msr));
    const u64 frz = PerfGlobalStatus().set_ctr_frz().set_lbr_frz().raw();
    if ((r->status_end & frz) && r->setup.ack_msr) return c.hw.wrmsr(r->setup.ack_msr, r->status_end & frz);
    return ok_status();
}

// Under the measurements' noise guard (FREEZE_WHILE_SMM where enumerated): an SMI's own
// instructions would otherwise overflow the armed counter early and bring more PMIs.
Status on_cpu(const PmiCtx& c, PmuPlan& plan, const Region& reg, PmiRun* r) {
    const GroupHooks& h = plan.groups[0].hooks;
    PmuGroupState& st = *plan.state[0];
    NoiseCaps caps;
    noise_probe(c.hw, &caps);
    NoiseRecord rec;
    NoiseGuard guard;
    // DEBUGCTL as the check found it and left it (the guard's FREEZE_WHILE_SMM is its own).
    const Result<u64> before = c.hw.rdmsr(msr::IA32_DEBUGCTL);
    Status s = guard.begin(c.hw, caps, SerializeMode::lfence, &rec, plan.groups[0].gp_mask);
    if (!s.ok()) return s;
    s = h.setup(c.hw, h.ctx);
    if (s.ok()) s = interrupt_run(c, st, reg, r);
    if (s.ok()) s = read_end(c, st, r);
    Status t = h.teardown(c.hw, h.ctx);
    Status g = guard.end(&rec);
    const Result<u64> after = c.hw.rdmsr(msr::IA32_DEBUGCTL);
    if (before.ok() && r->freeze) {
        r->debugctl_before = before.value();
        r->debugctl_after = after.ok() ? after.value() : ~u64(0);
    }
    return !s.ok() ? s : !t.ok() ? t : g;
}

// Plans, generates and places the code, runs it on the measuring CPU.
Status run_region(const PmiCtx& c, PmiRun* r) {
    PmuPlan plan;
    PMULAB_TRY(plan_run(c, r, &plan));
    CodeSpan body = c.mp.kernel_body(KernelId::add_indep);
    RegionSpec spec;
    spec.body = body.data;
    spec.body_len = body.len;
    spec.copies = kCopies;
    spec.group = &plan.groups[0];
    Vec<u8> code;
    const RegionLayout lay = PMULAB_TRY(emit_region(spec, &code));
    const usize bytes = (code.size() + 4095) & ~usize(4095);
    PMULAB_TRY(c.mp.prepare());
    void* pages = PMULAB_TRY(c.mp.alloc_pages(bytes, true));
    u8* dst = static_cast<u8*>(pages);
    for (usize i = 0; i < code.size(); ++i) dst[i] = code[i];
    Region reg;
    reg.code = pages;
    reg.size = code.size();
    reg.code_size = lay.code_size;
    reg.exit_offset = lay.exit_offset;
    reg.body_offset = lay.body_offset;
    reg.body_len = lay.copy_len;
    reg.copies = kCopies;
    r->body_start = u64(reinterpret_cast<uintptr_t>(dst)) + lay.body_offset;
    r->body_end = u64(reinterpret_cast<uintptr_t>(dst)) + lay.body_end;
    r->copy_len = lay.copy_len;
    Status on = ok_status();
    Status s = run_on_measuring(c.hw, &c.mp, c.cpu, [&] { on = on_cpu(c, plan, reg, r); });
    c.mp.free_pages(pages, bytes);
    return s.ok() ? on : s;
}

// A run that could not be made: SKIP where the platform or PMU cannot, else FAIL.
void report_error(const PmiCtx& c, const char* name, const Error& e) {
    c.ck.report(e.code == Errc::unsupported ? Verdict::skip : Verdict::fail, name, c.cpu, e.msg);
}

// ---------------------------------------------------------------- 1. overflow and PMI

void put_rip(StrBuf& d, const PmiRun& r) {
    if (r.at.rip >= r.body_start && r.at.rip < r.body_end && r.copy_len) {
        u64 off = r.at.rip - r.body_start;
        d.printf("; RIP in the body at copy %llu + %llu", (unsigned long long)(off / r.copy_len),
                 (unsigned long long)(off % r.copy_len));
    } else {
        d.put("; RIP outside the body");
    }
}

// Whether the armed counter's overflow was flagged at the PMI: its GLOBAL_STATUS bit, or
// without a global status its value wrapped past 0 (top bit clear again).
bool flagged_at_pmi(const PmiRun& r, usize armed) {
    const PmiCounter& pc = r.setup.counters[0];
    if (!r.at.taken) return false;
    if (pc.status_bit) return (r.at.status & pc.status_bit) != 0;
    return ((r.at.values[armed] >> (pc.width - 1)) & 1) == 0;
}

void judge_overflow(const PmiCtx& c, const char* name, const PmiRun& r) {
    const PmiCounter& pc = r.setup.counters[0];
    const bool one = r.pmis == 1 && r.foreign == 0 && r.samples == 1;
    const bool flagged = flagged_at_pmi(r, 0);
    const bool acked = !pc.status_bit || (r.status_end & pc.status_bit) == 0;
    const bool masked = r.at.lvt == (kLvtPerfNmi | kLvtMask);
    const bool lvt = r.lvt_rearmed == kLvtPerfNmi && r.lvt_after == r.lvt_before;
    const bool ok = one && flagged && acked && masked && lvt && r.handler.ok();
    StrBuf d;
    d.printf("period %llu of %llu instructions: %llu PMI%s", (unsigned long long)r.period,
             (unsigned long long)body_instructions(), (unsigned long long)r.pmis, r.pmis == 1 ? "" : "s (expected 1)");
    if (r.foreign) d.printf(", %llu other NMIs", (unsigned long long)r.foreign);
    const unsigned bit = pc.status_bit ? unsigned(__builtin_ctzll(pc.status_bit)) : 0;
    if (r.at.taken) {
        if (pc.status_bit)
            d.printf("; GLOBAL_STATUS bit %u %s at it, %s after the handler", bit, flagged ? "set" : "NOT set",
                     acked ? "clear" : "still set");
        else d.printf("; counter %s past 0 at it (no global status: its sign)", flagged ? "wrapped" : "NOT wrapped");
        d.printf("; counter %llu at it", (unsigned long long)r.at.values[0]);
        put_rip(d, r);
        d.printf("; LVT 0x%x at it (%s), re-armed 0x%x", r.at.lvt,
                 masked ? "masked by the delivery" : "expected 0x10400", r.lvt_rearmed);
    } else {
        if (pc.status_bit)
            d.printf("; GLOBAL_STATUS bit %u %s", bit,
                     (r.status_end & pc.status_bit) ? "set after the run (the counter overflowed)"
                                                    : "NOT set after the run");
        d.printf("; counter %llu after the run: no NMI came through the LVT entry (0x%x after the run)",
                 (unsigned long long)r.end[0], r.lvt_rearmed);
    }
    d.printf("; LVT restored 0x%x (was 0x%x)", r.lvt_after, r.lvt_before);
    if (!r.handler.ok()) d.printf("; handler: %s", r.handler.error().msg);
    c.ck.report(ok ? Verdict::pass : Verdict::fail, name, c.cpu, d.c_str());
}

void check_overflow(const PmiCtx& c, const char* counter, const char* spec) {
    char name[160];
    format_to(name, sizeof name, "%s: %s", kPmiOvf, counter);
    PmiRun r;
    r.spec = spec;
    r.armed = 0;
    r.period = body_instructions() * 3 / 4;
    Status s = run_region(c, &r);
    if (!s.ok()) return report_error(c, name, s.error());
    judge_overflow(c, name, r);
}

// ---------------------------------------------------------------- the counter set

// Every GP counter counting instructions retired, and Intel's fixed counters 0-2 (their
// architectural events): the freeze and wrap runs. *fixed0: its event index (-1: none).
struct CounterSet {
    StrBuf spec;
    bool instr[kMaxReads] = {};
    int fixed0 = -1;
    usize n = 0;
};
void counter_set(const PmuInfo& info, CounterSet* s) {
    auto add = [&](const char* fmt, unsigned i, bool instr) {
        if (s->n >= kMaxReads) return;
        if (s->n) s->spec.put(",");
        s->spec.printf(fmt, i, i);
        s->instr[s->n++] = instr;
    };
    const bool amd = info.kind == PmuKind::amd;
    for (unsigned i = 0; i < 32; ++i)
        if ((info.gp_mask >> i) & 1) add(amd ? "0C0.00.CTR=%u PERF_CTR%u" : "C0.00.CTR=%u PMC%u", i, true);
    if (amd) return;
    static const char* const fixed[] = {"INST_RETIRED.ANY", "CPU_CLK_UNHALTED.THREAD", "CPU_CLK_UNHALTED.REF_TSC"};
    for (unsigned i = 0; i < 3; ++i) {
        if (!((info.fixed_mask >> i) & 1)) continue;
        if (i == 0) s->fixed0 = int(s->n);
        if (s->n >= kMaxReads) return;
        if (s->n) s->spec.put(",");
        s->spec.put(fixed[i]);
        s->instr[s->n++] = i == 0;
    }
}

// A counter value; one in the top half of its width as 2^width-N (a preset or reload).
void put_count(StrBuf& d, u64 v, u8 width) {
    const u64 top = regs::counter_mask(width) + 1;
    if (width && width < 64 && v >= top / 2 && v < top)
        d.printf("2^%u-%llu", unsigned(width), (unsigned long long)(top - v));
    else d.printf("%llu", (unsigned long long)v);
}

void put_values(StrBuf& d, const PmiCtx& c, const PmiRun& r, const u64* v) {
    for (usize k = 0; k < r.n; ++k) {
        if (k) d.put(", ");
        put_counter(d, c.info, r.kind[k], r.index[k]);
        d.put(" ");
        put_count(d, v[k], r.width[k]);
    }
}

// ---------------------------------------------------------------- 2. freeze on PMI

// Whether the PMU says it froze (v4, AMD: GLOBAL_STATUS.CTR_FRZ; v2/v3: GLOBAL_CTRL 0).
bool froze(const PmiCtx& c, const PmiRun& r, StrBuf& d) {
    if (c.info.kind == PmuKind::amd || c.info.status_reset) {
        bool f = (r.at.status & PerfGlobalStatus().set_ctr_frz().raw()) != 0;
        d.printf("GLOBAL_STATUS.CTR_FRZ %s at the PMI", f ? "set" : "NOT set");
        return f;
    }
    d.printf("GLOBAL_CTRL 0x%llx at the PMI%s", (unsigned long long)r.at.ctrl, r.at.ctrl ? " (not cleared)" : "");
    return r.at.ctrl == 0;
}

void judge_freeze(const PmiCtx& c, const PmiRun& r, const CounterSet& set, usize armed) {
    StrBuf d;
    bool ok = r.pmis == 1 && r.foreign == 0 && r.handler.ok();
    d.printf("%llu PMI%s; ", (unsigned long long)r.pmis, r.pmis == 1 ? "" : "s (expected 1)");
    if (!r.at.taken) {
        c.ck.reportf(Verdict::fail, kPmiFreeze, c.cpu, "%sno PMI came, so nothing could freeze", d.c_str());
        return;
    }
    ok &= froze(c, r, d);
    StrBuf moved;
    for (usize k = 0; k < r.n; ++k) {
        const u64 want = k == armed ? r.setup.counters[0].reload : r.at.values[k];
        // Instructions counted up to the PMI: the period plus the armed counter's count past 0.
        const bool same = !set.instr[k] || k == armed || r.at.values[k] == r.period + r.at.values[armed];
        if (r.end[k] == want && same) continue;
        ok = false;
        if (moved.size()) moved.put(", ");
        put_counter(moved, c.info, r.kind[k], r.index[k]);
        moved.put(" ");
        put_count(moved, r.at.values[k], r.width[k]);
        moved.put(" -> ");
        put_count(moved, r.end[k], r.width[k]);
    }
    if (moved.size()) d.printf("; counters moved after it (at the PMI -> at the end): %s", moved.c_str());
    else {
        d.put("; no counter moved after it: ");
        put_values(d, c, r, r.at.values);
    }
    ok &= r.debugctl_after == r.debugctl_before && r.lvt_after == r.lvt_before;
    d.printf("; DEBUGCTL restored 0x%llx, LVT 0x%x", (unsigned long long)r.debugctl_after, r.lvt_after);
    c.ck.report(ok ? Verdict::pass : Verdict::fail, kPmiFreeze, c.cpu, d.c_str());
}

void check_freeze(const PmiCtx& c) {
    if (const char* why = freeze_unsupported(c.info); *why) return c.ck.report(Verdict::skip, kPmiFreeze, c.cpu, why);
    CounterSet set;
    counter_set(c.info, &set);
    PmiRun r;
    r.spec = set.spec.c_str();
    r.armed = set.fixed0 >= 0 ? set.fixed0 : 0;
    r.period = body_instructions() * 3 / 4;
    r.freeze = true;
    Status s = run_region(c, &r);
    if (!s.ok()) return report_error(c, kPmiFreeze, s.error());
    usize armed = 0;
    for (usize k = 0; k < r.n; ++k)
        if (r.kind[k] == r.setup.counters[0].kind && r.index[k] == r.setup.counters[0].index) armed = k;
    judge_freeze(c, r, set, armed);
}

// ---------------------------------------------------------------- 3. width

// Every counter from 2^width - 16 over the code: each must read its count past 0, and
// every instruction counter the same value.
void judge_wrap(const PmiCtx& c, const PmiRun& r, const CounterSet& set, CounterKind kind, const char* name) {
    StrBuf d;
    bool all = true;
    u64 instr = ~u64(0);  // the first instruction counter's value, once seen
    usize seen = 0;
    unsigned w = 0;
    for (usize k = 0; k < r.n; ++k) {
        if (r.kind[k] != kind) continue;
        if (!seen++) w = r.width[k];
        const u64 preset = regs::counter_mask(r.width[k]) + 1 - kWrapBelow;
        bool ok = r.end[k] < preset && r.end[k] + kWrapBelow >= (set.instr[k] ? body_instructions() : 1);
        if (set.instr[k]) {
            if (instr == ~u64(0)) instr = r.end[k];
            ok &= r.end[k] == instr;
        }
        if (seen > 1) d.put(", ");
        put_counter(d, c.info, r.kind[k], r.index[k]);
        d.printf(" %llu", (unsigned long long)r.end[k]);
        all &= ok;
    }
    c.ck.reportf(all ? Verdict::pass : Verdict::fail, name, c.cpu, "from 2^%u-%llu over %llu instructions: %s%s", w,
                 (unsigned long long)kWrapBelow, (unsigned long long)body_instructions(), d.c_str(),
                 all ? "" : " (expected each past 0, the instruction counters alike)");
}

void check_count_wrap(const PmiCtx& c) {
    CounterSet set;
    counter_set(c.info, &set);
    char gp[160], fx[160];
    format_to(gp, sizeof gp, "%s: GP counters count past 2^width - 1 to 0", kPmiWidth);
    format_to(fx, sizeof fx, "%s: fixed counters count past 2^width - 1 to 0", kPmiWidth);
    const bool fixed = c.info.kind != PmuKind::amd && c.info.fixed_mask;
    PmiRun r;
    r.spec = set.spec.c_str();
    r.below_top = kWrapBelow;
    Status s = run_region(c, &r);
    if (!s.ok()) {
        report_error(c, gp, s.error());
        if (fixed) report_error(c, fx, s.error());
        return;
    }
    judge_wrap(c, r, set, CounterKind::gp, gp);
    if (c.info.kind == PmuKind::amd) return;
    if (!fixed) return c.ck.report(Verdict::skip, fx, c.cpu, "no fixed counters (CPUID.0AH:EDX[4:0] = 0)");
    judge_wrap(c, r, set, CounterKind::fixed, fx);
}

}  // namespace

void skip_pmi_checks(Checks& ck, i64 cpu, const char* why) {
    static const char* const names[] = {kPmiOvf, kPmiFreeze, kPmiWidth};
    for (const char* n : names) ck.report(Verdict::skip, n, cpu, why);
}

void check_pmi(Checks& ck, Hw& hw, MeasurePlatform& mp, u32 cpu, const PmuInfo& info) {
    if (const char* why = pmi_unsupported(info); *why) {
        ck.report(Verdict::skip, kPmiOvf, cpu, why);
        ck.report(Verdict::skip, kPmiFreeze, cpu, why);
        return ck.report(Verdict::skip, kPmiWidth, cpu,
                         info.kind == PmuKind::netburst
                             ? "the NetBurst counters' 40-bit wrap is the check 'counter wraps at the enumerated width'"
                             : why);
    }
    const PmiCtx c{ck, hw, mp, cpu, info};
    if (info.kind == PmuKind::amd) {
        check_overflow(c, "PERF_CTR0", "0C0.00.CTR=0 PERF_CTR0");
    } else {
        if (info.gp_mask & 1) check_overflow(c, "PMC0", "C0.00.CTR=0 PMC0");
        if (info.fixed_mask & 1) check_overflow(c, "FIXED_CTR0", "INST_RETIRED.ANY");
    }
    check_freeze(c);
    if (info.kind != PmuKind::amd) check_pmc_writes(ck, hw, mp, cpu, info);
    check_count_wrap(c);
}

}  // namespace pmulab
