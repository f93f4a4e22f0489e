#include "x86/msr_trace.h"

#include "x86/amd_l3_regs.h"
#include "x86/amd_regs.h"
#include "x86/ibs_regs.h"
#include "x86/intel_regs.h"
#include "x86/lbr_regs.h"
#include "x86/netburst_regs.h"
#include "x86/uncore_regs.h"
#include "x86/pebs_regs.h"
#include "x86/prefetch_regs.h"
#include "x86/pt_regs.h"

namespace pmulab {

const char* trace_op_name(TraceOp op) {
    static constexpr const char* kNames[] = {"RDMSR", "WRMSR", "RDPMC"};  // in TraceOp's order
    return unsigned(op) < 3 ? kNames[unsigned(op)] : "?";
}

TraceNames trace_names(const CpuDecoded& d) {
    TraceNames n;
    n.vendor = d.id.vendor;
    n.pmu = d.pmu;
    n.family = d.id.family;
    n.model = d.id.model;
    return n;
}

namespace {

// The prefetcher controls of run --prefetchers off (x86/prefetch_regs.h): SDM Vol. 4's
// MSR_MISC_FEATURE_CONTROL, the E cores' 1320H-1327H (357930 §4.2-§4.9 names them by
// address), AMD's PrefetchControl (the family 19h/1Ah PPRs).
const char* prefetch_name(const TraceNames& n, u32 m) {
    static constexpr const char* kEcore[] = {"ECORE_PREFETCH_1320H", "ECORE_PREFETCH_1321H", "ECORE_PREFETCH_1322H",
                                             "ECORE_PREFETCH_1323H", "ECORE_PREFETCH_1324H", "ECORE_PREFETCH_1325H",
                                             "ECORE_PREFETCH_1326H", "ECORE_PREFETCH_1327H"};
    if (is_amd_family(n.vendor)) return m == regs::kMsrAmdPrefetchControl ? "PrefetchControl" : nullptr;
    if (n.pmu.netburst) return nullptr;
    if (m == regs::kMsrMiscFeatureControl) return "MSR_MISC_FEATURE_CONTROL";
    if (m >= regs::kMsrEcorePrefetchFirst && m <= regs::kMsrEcorePrefetchLast)
        return kEcore[m - regs::kMsrEcorePrefetchFirst];
    return nullptr;
}

// Names outside the architectural PMU tables (SDM Vol. 4 Table 2-2; APM Vol. 2 §13.2; PPRs).
const char* other_name(const TraceNames& n, u32 m) {
    if (const char* ibs = is_amd_family(n.vendor) ? regs::ibs::msr_name(m) : nullptr) return ibs;  // APM §13.3
    switch (m) {
        case msr::IA32_TIME_STAMP_COUNTER: return "IA32_TIME_STAMP_COUNTER";
        case msr::IA32_APIC_BASE: return "IA32_APIC_BASE";
        case msr::IA32_BIOS_SIGN_ID: return is_amd_family(n.vendor) ? "PATCH_LEVEL" : "IA32_BIOS_SIGN_ID";
        case msr::IA32_MPERF: return "IA32_MPERF";
        case msr::IA32_APERF: return "IA32_APERF";
        case msr::IA32_MISC_ENABLE: return "IA32_MISC_ENABLE";
        case msr::IA32_DEBUGCTL: return "IA32_DEBUGCTL";
        case msr::MSR_SMI_COUNT: return is_amd_family(n.vendor) ? nullptr : "MSR_SMI_COUNT";
        case msr::IA32_PEBS_ENABLE: return "IA32_PEBS_ENABLE";
        case regs::pebs::IA32_DS_AREA: return is_amd_family(n.vendor) ? nullptr : "IA32_DS_AREA";
        case regs::pebs::MSR_PEBS_DATA_CFG: return is_amd_family(n.vendor) ? nullptr : "MSR_PEBS_DATA_CFG";
        case regs::MSR_PEBS_LD_LAT_THRESHOLD: return is_amd_family(n.vendor) ? nullptr : "MSR_PEBS_LD_LAT_THRESHOLD";
        case msr::IA32_PKRS: return "IA32_PKRS";
        case msr::AMD_PERF_CNTR_GLOBAL_STATUS: return "PerfCntrGlobalStatus";
        case msr::AMD_PERF_CNTR_GLOBAL_CTL: return "PerfCntrGlobalCtl";
        case msr::AMD_PERF_CNTR_GLOBAL_STATUS_CLR: return "PerfCntrGlobalStatusClr";
        case msr::AMD_PERF_CNTR_GLOBAL_STATUS_SET: return "PerfCntrGlobalStatusSet";
        case msr::AMD_HWCR: return "HWCR";
        case msr::AMD_DE_CFG: return "DE_CFG";
        case msr::AMD_IRPERF_COUNT: return "IRPerfCount";
        case msr::AMD_MPERF_RO: return "MPERF_RO";
        case msr::AMD_APERF_RO: return "APERF_RO";
        default: return prefetch_name(n, m);
    }
}

// The client uncore's C-Box MSRs (x86/uncore_regs.h: Sandy Bridge on, PMU version 3 and
// later); 391H only at version 3 (from Skylake on it is IA32_PERF_GLOBAL_STATUS_SET).
// The server uncore's CHA MSRs (x86/uncore_regs.h: Skylake-SP .. Emerald Rapids), by the
// uncore guides' names: Cn_MSR_PMON_BOX_CTL, _CTLx, _CTRx, _BOX_FILTER0.
bool cha_name(const TraceNames& n, u32 m, StrBuf& out) {
    ChaGen g = n.vendor == Vendor::intel ? cha_generation(n.family, n.model) : ChaGen::none;
    if (g == ChaGen::none) return false;
    if (g == ChaGen::spr && m == msr::SPR_MSR_UNC_CBO_CONFIG) return out.put("SPR_MSR_UNC_CBO_CONFIG"), true;
    u32 ctl0 = cha_ctl0(g, 0) - cha_box_ctl(g, 0), filter0 = cha_filter0(g, 0) - cha_box_ctl(g, 0);
    const u32 boxes = g == ChaGen::skx ? 28 : g == ChaGen::icx ? 40 : 60;  // each layout's room
    for (u32 b = 0; b < boxes; ++b) {
        u32 base = cha_box_ctl(g, b);
        if (m < base || m >= base + (g == ChaGen::icx ? msr::ICX_CHA_STRIDE : 0x10)) continue;
        u32 off = m - base;
        if (off == 0) out.printf("C%u_MSR_PMON_BOX_CTL", b);
        else if (off >= ctl0 && off < ctl0 + 4) out.printf("C%u_MSR_PMON_CTL%u", b, off - ctl0);
        else if (off >= msr::kChaCtr0 && off < msr::kChaCtr0 + 4)
            out.printf("C%u_MSR_PMON_CTR%u", b, off - msr::kChaCtr0);
        else if (off == filter0) out.printf("C%u_MSR_PMON_BOX_FILTER0", b);
        else return false;
        return true;
    }
    return false;
}

bool uncore_name(const TraceNames& n, u32 m, StrBuf& out) {
    if (cha_name(n, m, out)) return true;
    if (n.vendor != Vendor::intel || n.pmu.netburst || n.pmu.version < 3) return false;
    if (m == msr::MSR_UNC_CBO_CONFIG) out.put("MSR_UNC_CBO_CONFIG");
    else if (m == msr::MSR_UNC_PERF_GLOBAL_CTRL_SKL || (m == msr::MSR_UNC_PERF_GLOBAL_CTRL_SNB && n.pmu.version < 4))
        out.put("MSR_UNC_PERF_GLOBAL_CTRL");
    else if (m >= msr::MSR_UNC_CBO_0_PERFEVTSEL0 && m < msr::MSR_UNC_CBO_0_PERFEVTSEL0 + 0x80) {
        u32 box = (m - msr::MSR_UNC_CBO_0_PERFEVTSEL0) / msr::MSR_UNC_CBO_STRIDE, off = m % msr::MSR_UNC_CBO_STRIDE;
        if (off < 2) out.printf("MSR_UNC_CBO_%u_PERFEVTSEL%u", box, off);
        else if (off >= 6 && off < 8) out.printf("MSR_UNC_CBO_%u_PERFCTR%u", box, off - 6);
        else return false;
    } else return false;
    return true;
}

// Intel PT's output MSRs and PEBS-via-PT's reload MSRs (x86/pt_regs.h).
bool pt_name(const TraceNames& n, u32 m, StrBuf& out) {
    using namespace regs::pt;
    if (n.vendor != Vendor::intel || n.pmu.netburst) return false;
    if (m == IA32_RTIT_CTL) out.put("IA32_RTIT_CTL");
    else if (m == IA32_RTIT_STATUS) out.put("IA32_RTIT_STATUS");
    else if (m == IA32_RTIT_OUTPUT_BASE) out.put("IA32_RTIT_OUTPUT_BASE");
    else if (m == IA32_RTIT_OUTPUT_MASK_PTRS) out.put("IA32_RTIT_OUTPUT_MASK_PTRS");
    else if (m >= MSR_RELOAD_PMC0 && m < MSR_RELOAD_PMC0 + 8) out.printf("MSR_RELOAD_PMC%u", m - MSR_RELOAD_PMC0);
    else if (m >= MSR_RELOAD_FIXED_CTR0 && m < MSR_RELOAD_FIXED_CTR0 + 4)
        out.printf("MSR_RELOAD_FIXED_CTR%u", m - MSR_RELOAD_FIXED_CTR0);
    else return false;
    return true;
}

// The LBR MSRs (x86/lbr_regs.h): legacy (Intel SDM Vol. 4 Table 2-2 and the model tables),
// architectural (Vol. 3B "Architectural Last Branch Records"), AMD LbrExtV2 (APM Vol. 2).
bool lbr_name(const TraceNames& n, u32 m, StrBuf& out) {
    auto in = [m](u32 base, u32 count, u32* i) {
        if (m < base || m >= base + count) return false;
        *i = m - base;
        return true;
    };
    u32 i = 0;
    if (is_amd_family(n.vendor)) {
        if (m == msr::AMD_LBR_SELECT) out.put("LBR_SELECT");
        else if (m == msr::AMD_DBG_EXTN_CFG) out.put("DBG_EXTN_CFG");
        else if (in(msr::AMD_LBR_FROM_0, 32, &i)) out.printf("LBR_%s_%u", i % 2 ? "TO" : "FROM", i / 2);
        else return false;
        return true;
    }
    if (m == msr::MSR_LBR_SELECT) out.put("MSR_LBR_SELECT");
    else if (m == msr::MSR_LASTBRANCH_TOS) out.put("MSR_LASTBRANCH_TOS");
    else if (in(msr::MSR_LBR_NHM_FROM, 32, &i)) out.printf("MSR_LASTBRANCH_%u_FROM_IP", i);
    else if (in(msr::MSR_LBR_NHM_TO, 32, &i)) out.printf("MSR_LASTBRANCH_%u_TO_IP", i);
    else if (in(msr::MSR_LBR_INFO_0, 32, &i)) out.printf("MSR_LBR_INFO_%u", i);
    else if (m == msr::IA32_LBR_CTL) out.put("IA32_LBR_CTL");
    else if (m == msr::IA32_LBR_DEPTH) out.put("IA32_LBR_DEPTH");
    else if (in(msr::IA32_LBR_0_FROM_IP, 32, &i)) out.printf("IA32_LBR_%u_FROM_IP", i);
    else if (in(msr::IA32_LBR_0_TO_IP, 32, &i)) out.printf("IA32_LBR_%u_TO_IP", i);
    else if (in(msr::IA32_LBR_0_INFO, 32, &i)) out.printf("IA32_LBR_%u_INFO", i);
    else return false;
    return true;
}

bool netburst_name(u32 m, StrBuf& out) {
    using namespace netburst;
    if (m >= kCounterBase && m < kCounterBase + kCounters) {
        out.printf("MSR_%s", kCounterDefs[m - kCounterBase].name);
        return true;
    }
    if (m >= kCccrBase && m < kCccrBase + kCounters) {
        out.printf("MSR_%s", kCounterDefs[m - kCccrBase].cccr_name);
        return true;
    }
    int e = escr_index(m);
    if (e >= 0) {
        out.printf("MSR_%s", kEscrs[e].name);
        return true;
    }
    return false;
}

bool amd_name(u32 m, StrBuf& out) {
    using namespace regs::amd;
    if (m >= msr::AMD_PERF_EVT_SEL0 && m < msr::AMD_PERF_EVT_SEL0 + kLegacyCounters) {
        out.printf("PerfEvtSel%u", m - msr::AMD_PERF_EVT_SEL0);
        return true;
    }
    if (m >= msr::AMD_PERF_CTR0 && m < msr::AMD_PERF_CTR0 + kLegacyCounters) {
        out.printf("PerfCtr%u", m - msr::AMD_PERF_CTR0);
        return true;
    }
    if (m >= msr::AMD_PERF_CTL_EXT0 && m < msr::AMD_PERF_CTL_EXT0 + 2 * kMaxCounters) {
        unsigned i = (m - msr::AMD_PERF_CTL_EXT0) / 2;
        out.printf("%s%u", (m - msr::AMD_PERF_CTL_EXT0) % 2 ? "PERF_CTR" : "PERF_CTL", i);
        return true;
    }
    return false;
}

// AMD's L3 PMU (x86/amd_l3_regs.h): ChL3PmcCfg n = C001_0230H + 2n, ChL3Pmc n = + 1.
bool amd_l3_name(const TraceNames& n, u32 m, StrBuf& out) {
    if (!is_amd_family(n.vendor) || m < msr::AMD_CH_L3_PMC_CFG0 ||
        m >= msr::AMD_CH_L3_PMC_CFG0 + 2 * msr::kAmdL3Counters)
        return false;
    u32 i = (m - msr::AMD_CH_L3_PMC_CFG0) / 2;
    out.printf("%s%u", (m - msr::AMD_CH_L3_PMC_CFG0) % 2 ? "ChL3Pmc" : "ChL3PmcCfg", i);
    return true;
}

bool is_amd_ctl(u32 m) {
    using namespace regs::amd;
    if (m >= msr::AMD_PERF_EVT_SEL0 && m < msr::AMD_PERF_EVT_SEL0 + kLegacyCounters) return true;
    return m >= msr::AMD_PERF_CTL_EXT0 && m < msr::AMD_PERF_CTL_EXT0 + 2 * kMaxCounters &&
           (m - msr::AMD_PERF_CTL_EXT0) % 2 == 0;
}

// A register's flags: `names` (space-separated) of the bits in on[], in order; each
// set one written after `first` (the first written) or `sep` (the others).
template <usize N>
void put_flags(StrBuf& out, const char* names, const bool (&on)[N], const char* first, const char* sep) {
    StrView rest(names);
    bool any = false;
    for (usize i = 0; i < N; ++i) {
        usize sp = rest.find(' ');
        StrView name = rest.sub(0, sp);
        rest = rest.sub(sp + 1);
        if (!on[i]) continue;
        out.put(StrView(any ? sep : first)).put(name);
        any = true;
    }
}
// The set flags, each after a space.
template <usize N> void flags(StrBuf& out, const char* names, const bool (&on)[N]) {
    put_flags(out, names, on, " ", " ");
}

// Intel GLOBAL_CTRL / STATUS / OVF_CTRL / INUSE: the counter bits (SDM §20.2.2, Figure 20-3).
void intel_counter_bits(u64 v, StrBuf& out) {
    regs::PerfGlobalCtrl g(v);
    u32 gp = u32(g.pmc_enables()), fx = u32(g.fixed_enables());
    if (!gp && !fx) {
        out.put("none");
    } else {
        if (gp) regs::put_counter_set(out, gp, "PMC");
        if (gp && fx) out.put(',');
        if (fx) regs::put_counter_set(out, fx, "FIXED_CTR");
    }
    u64 rest = v & ~(regs::PerfGlobalCtrl::pmc_enables_field::mask | regs::PerfGlobalCtrl::fixed_enables_field::mask);
    if (rest) out.printf(" other=0x%llx", (unsigned long long)rest);
}

// IA32_PERF_GLOBAL_STATUS and the registers with its layout (OVF_CTRL/STATUS_RESET,
// STATUS_SET): the counter bits, then the named flags (SDM §20.2.4, Figure 20-30).
void intel_status_bits(u64 v, StrBuf& out) {
    using S = regs::PerfGlobalStatus;
    const u64 counters = S::pmc_ovf_field::mask | S::fixed_ovf_field::mask;
    intel_counter_bits(v & counters, out);
    S s(v);
    flags(out, "PERF_METRICS_OVF TOPA_PMI LBR_FRZ CTR_FRZ ASCI OVF_UNCORE OVF_BUF COND_CHGD",
          {s.perf_metrics_ovf(), s.trace_topa_pmi(), s.lbr_frz(), s.ctr_frz(), s.asci(), s.ovf_uncore(), s.ovf_buf(),
           s.cond_chgd()});
    const u64 named = S::perf_metrics_ovf_field::mask | S::trace_topa_pmi_field::mask | S::lbr_frz_field::mask |
                      S::ctr_frz_field::mask | S::asci_field::mask | S::ovf_uncore_field::mask |
                      S::ovf_buf_field::mask | S::cond_chgd_field::mask;
    if (u64 rest = v & ~(counters | named)) out.printf(" other=0x%llx", (unsigned long long)rest);
}

}  // namespace

void trace_reg_name(const TraceNames& n, TraceOp op, u32 addr, StrBuf& out) {
    if (op == TraceOp::rdpmc) {
        if (n.pmu.netburst) {
            u32 i = addr & 0x1F;
            if (i < netburst::kCounters) out.printf("MSR_%s", netburst::kCounterDefs[i].name);
            else out.printf("counter %u", i);
            if (addr & netburst::kRdpmcFast) out.put(" (fast read)");
        } else if (is_amd_family(n.vendor)) {
            out.printf("PERF_CTR%u", addr);
        } else if (addr & (1u << 30)) {
            out.printf("FIXED_CTR%u", addr & ~(1u << 30));
        } else {
            out.printf("PMC%u", addr);
        }
        return;
    }
    if (n.pmu.netburst && netburst_name(addr, out)) return;
    if (amd_name(addr, out)) return;
    if (amd_l3_name(n, addr, out)) return;
    if (lbr_name(n, addr, out)) return;
    if (uncore_name(n, addr, out)) return;
    if (pt_name(n, addr, out)) return;
    const char* o = other_name(n, addr);
    if (o) {
        out.put(o);
        return;
    }
    StrBuf tmp;
    if (!n.pmu.netburst && regs::pmu_msr_name(n.pmu, addr, tmp)) {
        out.put(tmp.view());
        return;
    }
    out.printf("MSR 0x%x", addr);
}

namespace {

// NetBurst CCCRs and ESCRs (SDM Vol. 3B §20.15).
void netburst_fields(u32 m, u64 v, StrBuf& out) {
    using namespace netburst;
    if (m >= kCccrBase && m < kCccrBase + kCounters) {
        Cccr c(v);  // SDM Vol. 3B §20.15.3
        out.printf("escr_select=%llu active_thread=%llu", (unsigned long long)c.escr_select(),
                   (unsigned long long)c.active_thread());
        if (c.threshold()) out.printf(" threshold=%llu", (unsigned long long)c.threshold());
        flags(out, "compare complement edge force_ovf ovf_pmi ovf_pmi_t1 cascade ovf enable",
              {c.compare(), c.complement(), c.edge(), c.force_ovf(), c.ovf_pmi(), c.ovf_pmi_t1(), c.cascade(), c.ovf(),
               c.enable()});
    } else if (escr_index(m) >= 0) {
        Escr e(v);  // SDM Vol. 3B §20.15.1
        out.printf("event_select=0x%02llx event_mask=0x%04llx", (unsigned long long)e.event_select(),
                   (unsigned long long)e.event_mask());
        if (e.tag_enable()) out.printf(" tag=%llu", (unsigned long long)e.tag_value());
        flags(out, "t0_os t0_usr t1_os t1_usr", {e.t0_os(), e.t0_usr(), e.t1_os(), e.t1_usr()});
    }
}

// AMD PerfEvtSel / PERF_CTL (APM Vol. 2 §13.2.1 Figure 13-7).
void amd_ctl_fields(u64 v, StrBuf& out) {
    regs::amd::PerfEvtSel s(v);
    out.printf("event=0x%03llx umask=0x%02llx", (unsigned long long)s.event_select(), (unsigned long long)s.umask());
    if (s.cmask()) out.printf(" cmask=%llu", (unsigned long long)s.cmask());
    flags(out, "usr os edge int inv guest host en",
          {s.usr(), s.os(), s.edge(), s.intr(), s.inv(), s.guest_only(), s.host_only(), s.en()});
}

// AMD's other PMU-related MSRs; false when m is none of them.
bool amd_other_fields(u32 m, u64 v, StrBuf& out) {
    switch (m) {
        case msr::AMD_PERF_CNTR_GLOBAL_CTL:
        case msr::AMD_PERF_CNTR_GLOBAL_STATUS:
        case msr::AMD_PERF_CNTR_GLOBAL_STATUS_CLR:
        case msr::AMD_PERF_CNTR_GLOBAL_STATUS_SET: {
            regs::amd::GlobalCtl g(v);  // APM Vol. 2 §13.2.2
            regs::put_counter_set(out, u32(g.counters()), "PERF_CTR");
            u64 rest = v & ~regs::amd::GlobalCtl::counters_field::mask;
            if (rest) out.printf(" other=0x%llx", (unsigned long long)rest);
            return true;
        }
        case msr::AMD_HWCR: out.printf("IRPerfEn=%d", regs::amd::Hwcr(v).ir_perf_en() ? 1 : 0); return true;
        case msr::AMD_DE_CFG:
            out.printf("LfenceSerializing=%d", regs::amd::DeCfg(v).lfence_serializing() ? 1 : 0);
            return true;
        default: return false;
    }
}

// IA32_PERFEVTSELx (SDM Vol. 3B §20.2.1.1 Figure 20-1).
void intel_evtsel_fields(u64 v, StrBuf& out) {
    regs::PerfEvtSel s(v);
    out.printf("event=0x%02llx umask=0x%02llx", (unsigned long long)s.event_select(), (unsigned long long)s.umask());
    if (s.umask2()) out.printf(" umask2=0x%02llx", (unsigned long long)s.umask2());
    if (s.cmask()) out.printf(" cmask=%llu", (unsigned long long)s.cmask());
    flags(out, "usr os edge pc int any inv eq en",
          {s.usr(), s.os(), s.edge(), s.pc(), s.intr(), s.any_thread(), s.inv(), s.eq(), s.en()});
}

// IA32_FIXED_CTR_CTRL (SDM Vol. 3B §20.2.2 Figure 20-2).
void fixed_ctr_ctrl_fields(u64 v, StrBuf& out) {
    regs::FixedCtrCtrl c(v);
    bool any = false;
    for (unsigned i = 0; i < regs::FixedCtrCtrl::kGroups; ++i) {
        if (!c.group(i)) continue;
        out.printf("%sFIXED_CTR%u=", any ? " " : "", i);
        any = true;
        put_flags(out, "os usr any pmi", {c.os(i), c.usr(i), c.any_thread(i), c.pmi(i)}, "", "+");
    }
    if (!any) out.put("none");
}

// Intel's other PMU-related MSRs.
void intel_other_fields(u32 m, u64 v, StrBuf& out) {
    switch (m) {
        case msr::IA32_FIXED_CTR_CTRL: fixed_ctr_ctrl_fields(v, out); return;
        case msr::IA32_PERF_GLOBAL_CTRL:
        case msr::IA32_PERF_GLOBAL_INUSE: intel_counter_bits(v, out); return;
        case msr::IA32_PERF_GLOBAL_STATUS:
        case msr::IA32_PERF_GLOBAL_OVF_CTRL:
        case msr::IA32_PERF_GLOBAL_STATUS_SET: intel_status_bits(v, out); return;
        case msr::IA32_DEBUGCTL: {
            regs::DebugCtl d(v);  // SDM Vol. 3B §18.4.1
            put_flags(out, "LBR BTF FREEZE_LBRS_ON_PMI FREEZE_PERFMON_ON_PMI FREEZE_WHILE_SMM",
                      {d.lbr(), d.btf(), d.freeze_lbrs_on_pmi(), d.freeze_perfmon_on_pmi(), d.freeze_while_smm()}, "",
                      " ");
            return;
        }
        default: return;
    }
}

bool is_intel_evtsel(u32 m) { return m >= msr::IA32_PERFEVTSEL0 && m < msr::IA32_PERFEVTSEL0 + regs::kMaxGpCounters; }

}  // namespace

void trace_fields(const TraceNames& n, u32 m, u64 v, StrBuf& out) {
    bool selector = is_intel_evtsel(m) || is_amd_ctl(m) ||
                    (n.pmu.netburst && ((m >= netburst::kCccrBase && m < netburst::kCccrBase + netburst::kCounters) ||
                                        netburst::escr_index(m) >= 0));
    if (selector && v == 0) {
        out.put("clear");
        return;
    }
    if (n.pmu.netburst) {
        netburst_fields(m, v, out);
        return;
    }
    if (is_amd_ctl(m)) {
        amd_ctl_fields(v, out);
        return;
    }
    if (amd_other_fields(m, v, out) || is_amd_family(n.vendor)) return;
    if (is_intel_evtsel(m)) intel_evtsel_fields(v, out);
    else intel_other_fields(m, v, out);
}

// ---------------------------------------------------------------- the tracer

MsrTrace::MsrTrace(Hw& inner, TraceSink& sink, u32 capacity)
    : inner_(inner),
      sink_(sink),
      buf_(make_box_array<TraceEntry>(capacity ? capacity : 1)),
      cap_(capacity ? capacity : 1),
      bsp_(inner.current_cpu()) {}

// The tracer's state changes only inside enter()/leave(). The only thing that can run in
// between on the same CPU is an NMI (PmiHandler::on_nmi through the platform's stub), and it
// runs to its end before the interrupted call goes on: so an entry recorded while busy_ is
// parked by the NMI and appended by the call it interrupted, and an NMI that finds the
// tracer idle records directly. Parked entries are always older than the call's next one.
bool MsrTrace::enter() {
    if (__atomic_load_n(&busy_, __ATOMIC_RELAXED)) return false;
    __atomic_store_n(&busy_, true, __ATOMIC_RELAXED);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    unpark();
    return true;
}

void MsrTrace::leave() {
    unpark();
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    __atomic_store_n(&busy_, false, __ATOMIC_RELAXED);
}

void MsrTrace::unpark() {
    u32 head = __atomic_load_n(&park_head_, __ATOMIC_ACQUIRE);
    for (u32 t = park_tail_; t != head; ++t) append(parked_[t % kParked]);
    __atomic_store_n(&park_tail_, head, __ATOMIC_RELEASE);
    u64 lost = __atomic_exchange_n(&park_dropped_, u64(0), __ATOMIC_RELAXED);
    dropped_ += lost;
}

void MsrTrace::append(const TraceEntry& e) {
    if (count_ >= cap_) ++dropped_;
    else buf_[count_++] = e;
}

void MsrTrace::record(TraceOp op, u32 addr, u64 value, u8 vector, bool code) {
    const bool entered = enter();
    u32 cpu = inner_.current_cpu();
    TraceEntry e{.cpu = cpu, .op = op, .vector = vector, .code = code, .addr = addr, .value = value};
    if (!entered) {
        u32 head = park_head_;
        if (head - __atomic_load_n(&park_tail_, __ATOMIC_ACQUIRE) >= kParked) {
            park_dropped_ = park_dropped_ + 1;
            return;
        }
        parked_[head % kParked] = e;
        __atomic_store_n(&park_head_, head + 1, __ATOMIC_RELEASE);
        return;
    }
    append(e);
    // The BSP outside any run_on_cpu: print now, so that the trace stays next to the
    // output it belongs to; never while a PMI handler may be recording from its NMI.
    bool now = depth_ == 0 && !in_run_ && !held_ && cpu == bsp_;
    leave();
    if (now) flush();
}

void MsrTrace::hold(bool on) {
    held_ = on;
    if (!on && depth_ == 0 && inner_.current_cpu() == bsp_) flush();
}

Result<u64> MsrTrace::rdmsr(u32 msr) {
    Result<u64> r = inner_.rdmsr(msr);
    record(TraceOp::rdmsr, msr, r.ok() ? r.value() : 0, r.ok() ? 0 : (r.error().vector ? r.error().vector : kVectorGP),
           false);
    return r;
}

Status MsrTrace::wrmsr(u32 msr, u64 value) {
    Status s = inner_.wrmsr(msr, value);
    record(TraceOp::wrmsr, msr, value, s.ok() ? 0 : (s.error().vector ? s.error().vector : kVectorGP), false);
    return s;
}

Result<u64> MsrTrace::rdpmc(u32 index) {
    Result<u64> r = inner_.rdpmc(index);
    record(TraceOp::rdpmc, index, r.ok() ? r.value() : 0,
           r.ok() ? 0 : (r.error().vector ? r.error().vector : kVectorGP), false);
    return r;
}

Status MsrTrace::run_on_cpu(u32 cpu, CpuFn fn, void* ctx) {
    ++depth_;
    Status s = inner_.run_on_cpu(cpu, fn, ctx);
    --depth_;
    if (depth_ == 0 && inner_.current_cpu() == bsp_) flush();
    return s;
}

void MsrTrace::code(TraceOp op, u32 addr, u64 value) { record(op, addr, op == TraceOp::wrmsr ? value : 0, 0, true); }

void MsrTrace::run_begin() {
    if (!enter()) return;
    in_run_ = true;
    run_start_ = count_;
    leave();
}

bool MsrTrace::same_run(u32 a, u32 b, u32 len) const {
    for (u32 i = 0; i < len; ++i) {
        const TraceEntry& x = buf_[a + i];
        const TraceEntry& y = buf_[b + i];
        if (x.cpu != y.cpu || x.op != y.op || x.addr != y.addr || x.vector != y.vector || x.code != y.code)
            return false;
        if (x.op == TraceOp::wrmsr && x.value != y.value) return false;
    }
    return true;
}

void MsrTrace::run_end() {
    if (!enter()) return;
    fold_run();
    leave();
}

void MsrTrace::fold_run() {
    in_run_ = false;
    if (run_start_ > count_ || dropped_) return;
    u32 len = count_ - run_start_;
    if (len == 0) return;
    if (have_block_ && block_len_ == len && block_start_ + block_len_ == run_start_ &&
        same_run(block_start_, run_start_, len)) {
        for (u32 i = 0; i < len; ++i) ++buf_[block_start_ + i].runs;
        count_ = run_start_;  // the repeat is only counted
        return;
    }
    have_block_ = true;
    block_start_ = run_start_;
    block_len_ = len;
    for (u32 i = 0; i < len; ++i) buf_[run_start_ + i].runs = 1;
    buf_[run_start_].block_first = true;
}

void MsrTrace::flush() {
    if (in_run_ || !enter()) return;
    // Busy while printing: an NMI meanwhile parks its entries (they follow these).
    u32 n = count_;
    u64 dropped = dropped_;
    for (u32 i = 0; i < n; ++i) sink_.trace(buf_[i]);
    if (dropped) sink_.trace_dropped(dropped);
    count_ = 0;
    dropped_ = 0;
    have_block_ = false;
    leave();
}

}  // namespace pmulab
