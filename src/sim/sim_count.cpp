// The simulated logical processor, driving events: run() (SMIs, APERF/MPERF, then the
// PMU model), event(), the reference clock, the executor's retire(); the test hooks
// (peek/poke, injected faults) and the state snapshot. See sim_cpu.h.
#include "sim/sim_internal.h"

namespace sim {

// ---- counting ----

void SimCpu::event(u16 event, u16 umask, u64 n) {
    if (!n || pmu().kind == PmuLayout::Kind::none) return;
    model_->event(event, umask, n);
}

void SimCpu::ref_cycles(u64 n) {
    // CPU_CLK_UNHALTED.REF_TSC advances at the reference (crystal/bus) clock, by
    // ref_step_ TSC ticks at a time, whenever the TSC (offset by ref_phase_) crosses a
    // multiple of ref_step_ (the default: CPUID.15H EBX/EAX where it is enumerated, else
    // every tick); REF_XCLK (3C.01 on a GP counter) by 1 per crystal tick.
    u64 before = (tsc_ + ref_phase_) / ref_step_;
    tsc_ += n;
    u64 after = (tsc_ + ref_phase_) / ref_step_;
    if (after == before || pmu().kind == PmuLayout::Kind::none) return;
    u64 ticks = (after - before) * ref_step_;
    if (ref_scale_num_ != ref_scale_den_) {  // set_host_tsc_scale: the host's ticks
        ref_scale_acc_ += ticks * ref_scale_num_;
        ticks = ref_scale_acc_ / ref_scale_den_;
        ref_scale_acc_ %= ref_scale_den_;
    }
    model_->ref_clock(ticks, after - before);
}

void SimCpu::run(u64 cycles, std::initializer_list<Occurrence> each) { run(cycles, std::vector<Occurrence>(each)); }

// An SMI during every smi_every_-th run: the SMM handler's instructions and cycles are
// counted like the measured code's, unless IA32_DEBUGCTL.FREEZE_WHILE_SMM is set (the
// counters are then frozen in SMM; APERF/MPERF still advance).
void SimCpu::smi() {
    const PmuLayout& L = pmu();
    ++smis_;
    if (L.smi_count) ++smi_count_;
    if (L.amd_smi_event) event(0x2B, 0x00, 1);  // PMCx02B: counted when the SMI arrives
    if (L.freeze_while_smm && ((debugctl_ >> 14) & 1)) {
        if (L.amd_efffreq || L.efffreq) {
            aperf_ += smi_extra_;
            mperf_ += smi_extra_;
        }
        return;
    }
    in_smi_ = true;
    run(smi_extra_, {{0xC0, 0x00, 1}});
    in_smi_ = false;
}

void SimCpu::run(u64 cycles, const std::vector<Occurrence>& each_in) {
    const PmuLayout& L = pmu();
    if (!cycles || L.kind == PmuLayout::Kind::none) return;
    std::vector<Occurrence> td_buf;
    const std::vector<Occurrence>& each = topdown_cycles(cycles, each_in, &td_buf);
    // An SMI is due every smi_every_-th call of run() (stall cycles never bring one);
    // among the executor's batches (retire) it waits for the next one of the measured
    // body, where it matters.
    if (smi_every_ && !in_smi_ && !in_stall_ && ++runs_ % smi_every_ == 0) smi_due_ = true;
    if (smi_due_ && !in_smi_ && !in_stall_ && (!in_retire_ || in_body_)) {
        smi_due_ = false;
        smi();
    }
    // A busy SMT sibling takes every other cycle (set_sibling_busy): this thread's cycles
    // double, its events do not.
    const u64 turns = sibling_busy_ && !in_smi_ ? 2 : 1;
    if (L.amd_efffreq || L.efffreq) {
        aperf_ += cycles * turns;
        mperf_ += cycles * turns;
    }
    count_cycles(cycles, each);
    if (turns == 2) count_cycles(cycles, {});
}

void SimCpu::count_cycles(u64 cycles, const std::vector<Occurrence>& each) {
    settle_pmi();  // one raised in an earlier cycle (an event() of the last batch)
    if (!freeze_armed() || !model_->pmi_armed()) {
        model_->run(cycles, each);
        core_cycles_ += cycles;
        return;
    }
    // A PMI at the end of cycle k freezes cycles k+1..: counted one cycle at a time.
    for (u64 i = 0; i < cycles; ++i) {
        if (i) settle_pmi();
        model_->run(1, each);
        ++core_cycles_;
    }
}

// The LBR stack (sim_lbr.h): frozen by LBR_FRZ (v4, AMD) or stopped by DEBUGCTL.LBR cleared
// on a PMI (v2/v3, settle_pmi); cycle counts from the core cycles of the cost model.
void SimCpu::taken_branch(u64 from, u64 to, u8 kind) {
    if (lbr_recording()) lbr_pending_ = PendingBranch{from, to, kind, true};
}
bool SimCpu::lbr_recording() const { return lbr_.recording(debugctl_, model_->lbrs_frozen()); }

void SimCpu::settle_pmi() {
    if (!model_->take_pmi()) return;
    const bool perfmon = (debugctl_ >> 12) & 1, lbrs = (debugctl_ >> 11) & 1;
    if (perfmon || lbrs) model_->freeze_on_pmi(perfmon, lbrs);
    // The legacy LBR freeze (v2/v3 Intel): DEBUGCTL.LBR cleared (SDM Vol. 3B §18.4.7).
    if (lbrs && pmu().kind == PmuLayout::Kind::intel && pmu().version < 4) debugctl_ &= ~u64(1);
    if (lvt_perf_ & kLvtMasked) return;
    lvt_perf_ |= kLvtMasked;  // set by the delivery; the handler unmasks it again
    if (((lvt_perf_ >> 8) & 7) == 4) {
        nmi_pending_ = true;
        ++nmis_;
    } else {
        ++fixed_pmis_;
    }
}

void SimCpu::settle_ibs() {
    const u32 lvt = lvt_ext(ibs_.lvt_offset());
    if (lvt & kLvtMasked) return;  // the sample stays valid; no interrupt
    if (((lvt >> 8) & 7) == 4) {
        nmi_pending_ = true;
        ++nmis_;
    } else {
        ++fixed_pmis_;
    }
}

void SimCpu::stall(u64 cycles, const std::vector<Occurrence>& each) {
    in_stall_ = true;
    run(cycles, each);
    in_stall_ = false;
}

// --break instructions / branches: every 256th one counted twice (0.4%: inside
// selftest's 1% tolerance, outside the report's exact counts) (running totals, so
// that batches of any size miscount alike).
void SimCpu::miscount(Retired* r) {
    auto twice = [](u64 n, u64* seen) {
        u64 extra = (*seen + n) / 256 - *seen / 256;
        *seen += n;
        return extra;
    };
    if (broken_instructions_) r->instructions += twice(r->instructions, &instructions_seen_);
    if (broken_branches_) {
        u64 extra = twice(r->branches, &branches_seen_);
        r->branches += extra;
        r->near_taken += r->near_taken ? extra : 0;
    }
}

void SimCpu::retire(const Retired& r) {
    // The kernel's own TopDown slot budget applies inside the body, where a test gave one.
    if (r.body) in_body_ = true;
    in_retire_ = true;
    if (r.cycles()) {
        Retired batch = r;
        if (batch.branches > batch.instructions) batch.branches = batch.instructions;
        const u64 cycles = batch.cycles();
        miscount(&batch);
        model_->retire(*this, batch);
        // The TSC runs with the core: one tick per cycle (the sibling's turns included).
        const u64 t0 = tsc_;
        ref_cycles(cycles * (sibling_busy_ ? 2 : 1));
        rapl_.retire(t0, tsc_, r.instructions);
    }
    in_retire_ = false;
    if (lbr_pending_.valid) {  // the branch retired with this batch (the executor's last instruction)
        lbr_.record(lbr_pending_.from, lbr_pending_.to, BranchKind(lbr_pending_.kind), cpl_, core_cycles_);
        lbr_pending_.valid = false;
    }
    if (op_pending_) {  // IBS: the executor's one instruction of this batch
        op_pending_ = false;
        if (ibs_.retire(op_, r.cycles())) settle_ibs();
    }
    settle_pmi();  // a PMI of the batch's last cycle (its instruction's events included)
    if (r.body) in_body_ = false;
}

EventSource SimCpu::event_source(u16 event, u16 umask) const {
    const EventSource s = model_->retire_source(event, umask);
    if (s != EventSource::not_modelled) return s;
    std::vector<Occurrence> more = each_cycle_;
    if (td_base_.slots_per_cycle) model_->topdown_events(td_base_, 0, &more);
    if (td_body_set_ && td_body_.slots_per_cycle) model_->topdown_events(td_body_, 0, &more);
    for (const Occurrence& o : more)
        if (o.event == event && o.umask == umask) return EventSource::modelled;
    return EventSource::not_modelled;
}

// ---- direct access ----

u64 SimCpu::peek(u32 msr) const {
    u64 v = 0;
    Reg r = classify(msr);
    if (r != Reg::extra && model_->claims(msr)) {
        if (!model_->exists(msr)) die("peek: CPU %u has no MSR 0x%x", index_, msr);
        model_->rdmsr(msr, &v);
        return v;
    }
    if (r == Reg::none) die("peek: CPU %u has no MSR 0x%x", index_, msr);
    return read_reg(r, msr);
}

void SimCpu::poke(u32 msr, u64 v) {
    Reg r = classify(msr);
    if (r != Reg::extra && model_->claims(msr)) {
        if (!model_->exists(msr)) die("poke: CPU %u has no MSR 0x%x", index_, msr);
        if (model_->poke(msr, v)) return;
    } else if (poke_reg(r, msr, v)) {
        return;
    }
    die("poke: CPU %u MSR 0x%x has no state to set", index_, msr);
}

void SimCpu::define_msr(u32 msr, u64 value, bool writable) { extra_[msr] = Extra{value, writable}; }

void SimCpu::fail_nth_wrmsr(u64 k, u8 vector) {
    nth_wrmsr_ = k;
    nth_vector_ = vector;
}
void SimCpu::fail_wrmsr_to(u32 msr, u8 vector) { fail_wr_[msr] = vector; }
void SimCpu::fail_rdmsr_to(u32 msr, u8 vector) { fail_rd_[msr] = vector; }
void SimCpu::clear_faults() {
    nth_wrmsr_ = 0;
    fail_wr_.clear();
    fail_rd_.clear();
}

std::vector<LogEntry> SimCpu::writes() const {
    std::vector<LogEntry> w;
    for (const LogEntry& e : log_)
        if (e.kind == Access::wrmsr) w.push_back(e);
    return w;
}

PmuState SimCpu::pmu_state() const {
    PmuState st;
    model_->state(&st);
    ibs_.state(&st);
    return st;
}

}  // namespace sim
