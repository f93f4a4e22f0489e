// AMD Instruction-Based Sampling (ibs.h).
#include "pmu/ibs.h"

#include "base/fmt.h"

namespace pmulab {

using regs::ibs::IbsFeatures;
using regs::ibs::IbsFetchCtl;
using regs::ibs::IbsOpCtl;
using regs::ibs::IbsOpData;
using regs::ibs::IbsOpData3;

u64 IbsInfo::op_period_max() const {
    return features.op_cnt_ext() ? regs::ibs::kOpPeriodMaxExt : regs::ibs::kOpPeriodMax;
}

void ibs_decode(const CpuidSnapshot& s, IbsInfo* out) {
    *out = IbsInfo();
    CpuDecoded d = decode_cpuid(s);
    const CpuIdentity& id = d.id;
    if (!is_amd_family(id.vendor)) {
        format_to(out->absent, sizeof out->absent,
                  "IBS (Instruction-Based Sampling) is AMD's; this CPU is %s: on Intel, precise samples come from "
                  "PEBS (--sample EVENT --precise)",
                  id.vendor_string[0] ? id.vendor_string : "not AMD");
        return;
    }
    const bool ext1 = id.max_ext_leaf >= 0x80000001 && (s.get(0x80000001).ecx & regs::ibs::kExt1EcxIbs);
    if (!ext1) {
        format_to(out->absent, sizeof out->absent, "this AMD CPU has no IBS: CPUID Fn8000_0001_ECX[10] (IBS) is 0");
        return;
    }
    if (id.max_ext_leaf < regs::ibs::kFeatureLeaf) {
        format_to(out->absent, sizeof out->absent,
                  "this AMD CPU enumerates IBS but not its features: CPUID Fn8000_001B is beyond the maximum "
                  "extended leaf %08XH",
                  id.max_ext_leaf);
        return;
    }
    IbsFeatures f(s.get(regs::ibs::kFeatureLeaf).eax);
    if (!f.ffv()) {
        format_to(out->absent, sizeof out->absent,
                  "this AMD CPU has no usable IBS: CPUID Fn8000_001B_EAX[0] (IBSFFV, the feature flags are valid) "
                  "is 0 (EAX = 0x%llx)",
                  (unsigned long long)f.raw());
        return;
    }
    out->features = f;
    out->op = f.op_sam();
    out->fetch = f.fetch_sam();
}

IbsKind ibs_kind(StrView event) {
    if (event.eq_nocase(StrView("ibs_op"))) return IbsKind::op;
    if (event.eq_nocase(StrView("ibs_op_cycles"))) return IbsKind::op_cycles;
    if (event.eq_nocase(StrView("ibs_fetch"))) return IbsKind::fetch;
    return IbsKind::none;
}

const char* ibs_source_name(IbsKind k) { return k == IbsKind::fetch ? "ibs_fetch" : "ibs_op"; }

Status ibs_check(const IbsInfo& info, IbsKind k, u64 period, StrView spec) {
    const int n = int(spec.len);
    if (!info.op && !info.fetch) return Error::make(Errc::unsupported, "--sample %.*s: %s", n, spec.ptr, info.absent);
    const bool fetch = k == IbsKind::fetch;
    if (fetch && !info.fetch)
        return Error::make(
            Errc::unsupported,
            "--sample %.*s: this CPU's IBS has no fetch sampling (CPUID Fn8000_001B_EAX[1] FetchSam = 0)", n, spec.ptr);
    if (!fetch && !info.op)
        return Error::make(Errc::unsupported,
                           "--sample %.*s: this CPU's IBS has no op sampling (CPUID Fn8000_001B_EAX[2] OpSam = 0)", n,
                           spec.ptr);
    if (k == IbsKind::op && !info.features.op_cnt())
        return Error::make(Errc::unsupported,
                           "--sample %.*s: this CPU's IBS counts cycles only, not dispatched ops (CPUID "
                           "Fn8000_001B_EAX[4] OpCnt = 0): sample with ibs_op_cycles",
                           n, spec.ptr);
    const u64 max = fetch ? regs::ibs::kFetchPeriodMax : info.op_period_max();
    if (period > max)
        return Error::make(Errc::invalid_argument,
                           "--sample %.*s: the period %llu exceeds this CPU's IBS maximum %llu%s", n, spec.ptr,
                           (unsigned long long)period, (unsigned long long)max,
                           !fetch && !info.features.op_cnt_ext() ? " (no OpCntExt: 20-bit counts)" : "");
    return ok_status();
}

Status ibs_check_period(IbsKind k, u64 period, StrView spec) {
    if (period % 16 == 0) return ok_status();  // (0 is refused by the period's parser)
    const u64 lo = period / 16 * 16;
    StrBuf nearest;
    if (lo) nearest.printf("%llu or ", (unsigned long long)lo);
    nearest.printf("%llu", (unsigned long long)(lo + 16));
    return Error::make(Errc::invalid_argument,
                       "--sample %.*s:%llu: IBS periods are multiples of 16 (%s ignores the low 4 bits); pmulab "
                       "does not round: write %s",
                       int(spec.len), spec.ptr, (unsigned long long)period,
                       k == IbsKind::fetch ? "IbsFetchMaxCnt" : "IbsOpMaxCnt", nearest.c_str());
}

Status ibs_check_controls(const IbsInfo& info, IbsKind k, const IbsControls& c, StrView spec) {
    const int n = int(spec.len);
    if (c.l3_miss_only && !info.features.zen4_ext())
        return Error::make(Errc::unsupported,
                           "--ibs-l3-miss-only (--sample %.*s): this CPU's IBS has no L3 miss filtering: CPUID "
                           "Fn8000_001B_EAX[11] (the Zen 4 IBS extensions: L3MissOnly in IbsOpCtl[16] and "
                           "IbsFetchCtl[59]) is 0 (EAX = 0x%llx)",
                           n, spec.ptr, (unsigned long long)info.features.raw());
    if (!c.rand || k == IbsKind::fetch) return ok_status();
    if (k == IbsKind::op_cycles)
        return Error::make(Errc::invalid_argument,
                           "--ibs-rand (--sample %.*s): op randomisation keeps the hardware's random IbsOpCurCnt[6:0] "
                           "as the next period's start, which Linux does only when counting ops: use ibs_op, or "
                           "ibs_fetch (IbsRandEn)",
                           n, spec.ptr);
    if (!info.features.rd_wr_op_cnt())
        return Error::make(Errc::unsupported,
                           "--ibs-rand (--sample %.*s): this CPU's IbsOpCurCnt is not writable (CPUID "
                           "Fn8000_001B_EAX[3] RdWrOpCnt = 0), so the random start cannot be kept",
                           n, spec.ptr);
    return ok_status();
}

u64 ibs_op_ctl(IbsKind k, u64 period, const IbsControls& c) {
    return IbsOpCtl().set_period(period).set_cnt_ctl(k == IbsKind::op).set_l3_miss_only(c.l3_miss_only).set_en().raw();
}

u64 ibs_fetch_ctl(u64 period, const IbsControls& c) {
    return IbsFetchCtl().set_period(period).set_rand_en(c.rand).set_l3_miss_only(c.l3_miss_only).set_en().raw();
}

// ---- in the NMI: allocation-free ----

namespace {

// IbsOpCurCnt's bits the hardware randomises when the op counter rolls over (Linux's
// IBS_OP_CUR_CNT_RAND).
constexpr u64 kOpCurCntRand = 0x7F;

u64 read_or_zero(Hw& hw, u32 m) {
    Result<u64> v = hw.rdmsr(m);
    return v.ok() ? v.value() : 0;
}

}  // namespace

bool IbsSource::drain_op(Hw& hw, PmiSink& sink) {
    const IbsOpCtl ctl(op_ctl ? read_or_zero(hw, msr::AMD_IBS_OP_CTL) : 0);
    if (!ctl.val()) return false;
    PreciseSample s;
    s.rip = read_or_zero(hw, msr::AMD_IBS_OP_RIP);
    IbsOpData d1(read_or_zero(hw, msr::AMD_IBS_OP_DATA));
    IbsOpData3 d3(read_or_zero(hw, msr::AMD_IBS_OP_DATA3));
    if (d3.dc_lin_addr_valid() && (d3.ld_op() || d3.st_op())) {
        s.data_addr = read_or_zero(hw, msr::AMD_IBS_DC_LINAD);
        s.has_data = true;
    }
    if (d3.ld_op() || d3.st_op()) s.source = ibs_mem_source(read_or_zero(hw, msr::AMD_IBS_OP_DATA2), d3.raw(), zen4);
    // The DC miss latency is a load's (Linux reports it as the sample's weight only for a
    // load that missed).
    if (d3.ld_op() && d3.dc_miss()) {
        s.latency = u32(d3.dc_miss_lat());
        s.has_latency = true;
    }
    if (d1.rip_invalid()) ++rip_invalid;
    else {
        sink.precise(op_slot, s);
        ++taken;
    }
    // Re-armed: IbsOpVal clear, the current count 0 (the counter restarts from it), or
    // with --ibs-rand the random IbsOpCurCnt[6:0] the rollover left (IbsControls).
    const u64 start = op_rand ? ctl.cur_cnt() & kOpCurCntRand : 0;
    (void)hw.wrmsr(msr::AMD_IBS_OP_CTL, IbsOpCtl(op_ctl).set_cur_cnt(start).raw());
    return true;
}

bool IbsSource::drain_fetch(Hw& hw, PmiSink& sink) {
    if (!fetch_ctl) return false;
    IbsFetchCtl c(read_or_zero(hw, msr::AMD_IBS_FETCH_CTL));
    if (!c.val()) return false;
    PreciseSample s;
    s.rip = read_or_zero(hw, msr::AMD_IBS_FETCH_LINAD);
    if (c.comp()) {
        s.latency = u32(c.lat());
        s.has_latency = true;
    }
    sink.precise(fetch_slot, s);
    ++taken;
    (void)hw.wrmsr(msr::AMD_IBS_FETCH_CTL, fetch_ctl);
    return true;
}

bool IbsSource::drain(Hw& hw, u64 status, PmiSink& sink, u64* ack) {
    (void)status;
    (void)ack;  // IBS has no bit in the global status
    const bool op = drain_op(hw, sink);
    const bool fetch = drain_fetch(hw, sink);
    return op || fetch;
}

Status IbsSource::start(Hw& hw) const {
    if (op_ctl) PMULAB_TRY(hw.wrmsr(msr::AMD_IBS_OP_CTL, op_ctl));
    if (fetch_ctl) PMULAB_TRY(hw.wrmsr(msr::AMD_IBS_FETCH_CTL, fetch_ctl));
    return ok_status();
}

Status IbsSource::stop(Hw& hw) const {
    Status s = ok_status();
    if (op_ctl) s = hw.wrmsr(msr::AMD_IBS_OP_CTL, IbsOpCtl(op_ctl).set_en(false).raw());
    if (fetch_ctl) {
        Status t = hw.wrmsr(msr::AMD_IBS_FETCH_CTL, IbsFetchCtl(fetch_ctl).set_en(false).raw());
        if (s.ok()) s = t;
    }
    return s;
}

}  // namespace pmulab
