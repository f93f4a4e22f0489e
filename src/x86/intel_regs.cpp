#include "x86/intel_regs.h"

namespace pmulab::regs {

namespace {

constexpr u32 kGpClip = u32(low_mask(kMaxGpCounters));
constexpr u32 kFixedClip = u32(low_mask(kMaxFixedCounters));

bool bit_set(u32 mask, unsigned i) { return i < 32 && ((mask >> i) & 1); }

// Counter enables / overflow bits of this PMU in the GLOBAL_* layout.
u64 counter_bits(const PmuCaps& c) {
    return u64(gp_counters(c)) | (u64(fixed_counters(c)) << PerfGlobalCtrl::kFixedBase);
}

// Where an address falls among the indexed PMU MSRs.
enum class Kind : u8 { none, pmc, a_pmc, evtsel, fixed_ctr, single };

struct Where {
    Kind kind = Kind::none;
    unsigned index = 0;
};

Where classify(u32 m) {
    if (m >= msr::IA32_PMC0 && m < msr::IA32_PMC0 + kMaxGpCounters) return {Kind::pmc, m - msr::IA32_PMC0};
    if (m >= msr::IA32_A_PMC0 && m < msr::IA32_A_PMC0 + kMaxGpCounters) return {Kind::a_pmc, m - msr::IA32_A_PMC0};
    if (m >= msr::IA32_PERFEVTSEL0 && m < msr::IA32_PERFEVTSEL0 + kMaxGpCounters)
        return {Kind::evtsel, m - msr::IA32_PERFEVTSEL0};
    if (m >= msr::IA32_FIXED_CTR0 && m < msr::IA32_FIXED_CTR0 + kMaxFixedCounters)
        return {Kind::fixed_ctr, m - msr::IA32_FIXED_CTR0};
    switch (m) {
        case msr::IA32_PERF_CAPABILITIES:
        case msr::IA32_FIXED_CTR_CTRL:
        case msr::IA32_PERF_GLOBAL_STATUS:
        case msr::IA32_PERF_GLOBAL_CTRL:
        case msr::IA32_PERF_GLOBAL_OVF_CTRL:
        case msr::IA32_PERF_GLOBAL_STATUS_SET:
        case msr::IA32_PERF_GLOBAL_INUSE:
        case msr::MSR_PERF_METRICS: return {Kind::single, 0};
        default: return {};
    }
}

Error missing(const PmuCaps& c, u32 m, const char* why) {
    StrBuf name;
    pmu_msr_name(c, m, name);
    return Error::make(Errc::unsupported, "%s (0x%X) does not exist: %s", name.c_str(), m, why);
}

}  // namespace

u32 gp_counters(const PmuCaps& c) { return c.version >= 1 ? c.gp_counter_mask() & kGpClip : 0; }

// Fixed counters >= 8 have no control group in IA32_FIXED_CTR_CTRL (see FixedCtrCtrl):
// not programmable, so not offered.
u32 fixed_counters(const PmuCaps& c) {
    return c.version >= 2 ? c.fixed_counter_mask() & kFixedClip & u32(low_mask(FixedCtrCtrl::kGroups)) : 0;
}

unsigned gp_counter_width(const PmuCaps& c) { return gp_counters(c) ? c.gp_width : 0; }

unsigned fixed_counter_width(const PmuCaps& c) {
    if (!fixed_counters(c)) return 0;
    return c.fixed_width ? c.fixed_width : c.gp_width;
}

bool has_global_ctrl(const PmuCaps& c) { return c.version >= 2; }
bool has_global_status_reset_set(const PmuCaps& c) { return c.version >= 4; }
bool has_anythread(const PmuCaps& c) { return c.version >= 3 && !c.anythread_deprecated; }
bool has_perf_capabilities(const PmuCaps& c) { return c.perf_caps_read; }
bool has_full_width_writes(const PmuCaps& c) {
    return c.version >= 1 && c.perf_caps_read && PerfCapabilities(c.perf_caps).fw_write();
}
bool has_perf_metrics(const PmuCaps& c) {
    return c.perf_caps_read && PerfCapabilities(c.perf_caps).perf_metrics() && bit_set(fixed_counters(c), 3);
}

u64 perfevtsel_writable_mask(const PmuCaps& c) {
    if (c.version < 1) return 0;
    PerfEvtSel m;
    m.set_event_select(0xFF).set_umask(0xFF).set_usr().set_os().set_edge().set_pc().set_intr().set_en().set_inv();
    m.set_cmask(0xFF);
    if (has_anythread(c)) m.set_any_thread();
    if (c.leaf_23 && c.eq_bit) m.set_eq();
    if (c.leaf_23 && c.umask2) m.set_umask2(0xFF);
    return m.raw();
}

u64 fixed_ctr_ctrl_writable_mask(const PmuCaps& c) {
    if (!has_global_ctrl(c)) return 0;
    FixedCtrCtrl m;
    u32 f = fixed_counters(c);
    for (unsigned i = 0; i < kMaxFixedCounters; ++i) {
        if (!bit_set(f, i)) continue;
        m.set_os(i).set_usr(i).set_pmi(i);
        if (has_anythread(c)) m.set_any_thread(i);
    }
    return m.raw();
}

u64 global_ctrl_writable_mask(const PmuCaps& c) {
    if (!has_global_ctrl(c)) return 0;
    PerfGlobalCtrl m(counter_bits(c));
    if (has_perf_metrics(c)) m.set_en_perf_metrics();
    return m.raw();
}

u64 global_status_bits(const PmuCaps& c) {
    if (!has_global_ctrl(c)) return 0;
    PerfGlobalStatus m(counter_bits(c));
    m.set_ovf_buf().set_cond_chgd();
    if (c.version >= 3) m.set_ovf_uncore();
    if (c.version >= 4) m.set_trace_topa_pmi().set_lbr_frz().set_ctr_frz().set_asci();
    if (has_perf_metrics(c)) m.set_perf_metrics_ovf();
    return m.raw();
}

u64 global_ovf_ctrl_writable_mask(const PmuCaps& c) { return global_status_bits(c); }

u64 global_status_set_writable_mask(const PmuCaps& c) {
    if (!has_global_status_reset_set(c)) return 0;
    return PerfGlobalStatus(global_status_bits(c)).set_cond_chgd(false).raw();
}

u64 global_inuse_bits(const PmuCaps& c) {
    if (!has_global_status_reset_set(c)) return 0;
    PerfGlobalInUse m(counter_bits(c));
    return m.raw() | PerfGlobalInUse::pmi_in_use_field::mask;
}

bool pmu_msr_name(const PmuCaps& c, u32 m, StrBuf& out) {
    Where w = classify(m);
    switch (w.kind) {
        case Kind::pmc: out.printf("IA32_PMC%u", w.index); return true;
        case Kind::a_pmc: out.printf("IA32_A_PMC%u", w.index); return true;
        case Kind::evtsel: out.printf("IA32_PERFEVTSEL%u", w.index); return true;
        case Kind::fixed_ctr: out.printf("IA32_FIXED_CTR%u", w.index); return true;
        case Kind::single: break;
        case Kind::none: out.printf("MSR 0x%X", m); return false;
    }
    switch (m) {
        case msr::IA32_PERF_CAPABILITIES: out.put("IA32_PERF_CAPABILITIES"); break;
        case msr::IA32_FIXED_CTR_CTRL: out.put("IA32_FIXED_CTR_CTRL"); break;
        case msr::IA32_PERF_GLOBAL_STATUS: out.put("IA32_PERF_GLOBAL_STATUS"); break;
        case msr::IA32_PERF_GLOBAL_CTRL: out.put("IA32_PERF_GLOBAL_CTRL"); break;
        case msr::IA32_PERF_GLOBAL_OVF_CTRL:
            out.put(c.version >= 4 ? "IA32_PERF_GLOBAL_STATUS_RESET" : "IA32_PERF_GLOBAL_OVF_CTRL");
            break;
        case msr::IA32_PERF_GLOBAL_STATUS_SET: out.put("IA32_PERF_GLOBAL_STATUS_SET"); break;
        case msr::IA32_PERF_GLOBAL_INUSE: out.put("IA32_PERF_GLOBAL_INUSE"); break;
        case msr::MSR_PERF_METRICS: out.put("MSR_PERF_METRICS"); break;
        default: break;
    }
    return true;
}

Status pmu_msr_check(const PmuCaps& c, u32 m) {
    Where w = classify(m);
    if (w.kind == Kind::none)
        return Error::make(Errc::invalid_argument, "MSR 0x%X is not an architectural performance-monitoring MSR", m);
    if (w.kind != Kind::single || m != msr::IA32_PERF_CAPABILITIES) {
        if (c.version == 0) return missing(c, m, "no architectural performance monitoring (CPUID.0AH:EAX[7:0] = 0)");
    }
    StrBuf why;
    switch (w.kind) {
        case Kind::pmc:
        case Kind::evtsel:
        case Kind::a_pmc: {
            u32 gp = gp_counters(c);
            if (!bit_set(gp, w.index)) {
                why.put("this CPU has general-purpose counters ");
                put_counter_set(why, gp, "PMC");
                return missing(c, m, why.c_str());
            }
            if (w.kind == Kind::a_pmc && !has_full_width_writes(c))
                return missing(c, m,
                               c.perf_caps_read ? "IA32_PERF_CAPABILITIES.FW_WRITE[13] = 0"
                                                : "no IA32_PERF_CAPABILITIES (CPUID.01H:ECX.PDCM[15] = 0), "
                                                  "so no full-width writes");
            return ok_status();
        }
        case Kind::fixed_ctr: {
            if (!has_global_ctrl(c)) return missing(c, m, "architectural PMU version 1 has no fixed-function counters");
            u32 f = fixed_counters(c);
            if (!bit_set(f, w.index)) {
                why.put("this CPU has fixed counters ");
                put_counter_set(why, f, "FIXED_CTR");
                return missing(c, m, why.c_str());
            }
            return ok_status();
        }
        case Kind::single: break;
        case Kind::none: break;
    }
    switch (m) {
        case msr::IA32_PERF_CAPABILITIES:
            if (!c.perf_caps_read) return missing(c, m, "CPUID.01H:ECX.PDCM[15] = 0");
            return ok_status();
        case msr::IA32_FIXED_CTR_CTRL:
        case msr::IA32_PERF_GLOBAL_STATUS:
        case msr::IA32_PERF_GLOBAL_CTRL:
        case msr::IA32_PERF_GLOBAL_OVF_CTRL:
            if (!has_global_ctrl(c)) {
                why.printf("architectural PMU version %u (it needs version 2 or later)", c.version);
                return missing(c, m, why.c_str());
            }
            return ok_status();
        case msr::IA32_PERF_GLOBAL_STATUS_SET:
        case msr::IA32_PERF_GLOBAL_INUSE:
            if (!has_global_status_reset_set(c)) {
                why.printf("architectural PMU version %u (it needs version 4 or later)", c.version);
                return missing(c, m, why.c_str());
            }
            return ok_status();
        case msr::MSR_PERF_METRICS:
            if (!c.perf_caps_read) return missing(c, m, "no IA32_PERF_CAPABILITIES (CPUID.01H:ECX.PDCM[15] = 0)");
            if (!PerfCapabilities(c.perf_caps).perf_metrics())
                return missing(c, m, "IA32_PERF_CAPABILITIES.PERF_METRICS[15] = 0");
            if (!bit_set(fixed_counters(c), 3)) return missing(c, m, "fixed counter 3 (TOPDOWN.SLOTS) is absent");
            return ok_status();
        default: break;
    }
    return Error::make(Errc::internal, "pmu_msr_check: unhandled MSR 0x%X", m);
}

u64 pmu_msr_writable_mask(const PmuCaps& c, u32 m) {
    if (!pmu_msr_exists(c, m)) return 0;
    Where w = classify(m);
    switch (w.kind) {
        case Kind::pmc: return ~u64(0);  // legacy write: any value, bits 31:0 used (sign-extended)
        case Kind::a_pmc: return counter_mask(gp_counter_width(c));
        case Kind::evtsel: return perfevtsel_writable_mask(c);
        case Kind::fixed_ctr: return counter_mask(fixed_counter_width(c));
        default: break;
    }
    switch (m) {
        case msr::IA32_FIXED_CTR_CTRL: return fixed_ctr_ctrl_writable_mask(c);
        case msr::IA32_PERF_GLOBAL_CTRL: return global_ctrl_writable_mask(c);
        case msr::IA32_PERF_GLOBAL_OVF_CTRL: return global_ovf_ctrl_writable_mask(c);
        case msr::IA32_PERF_GLOBAL_STATUS_SET: return global_status_set_writable_mask(c);
        case msr::MSR_PERF_METRICS: return ~u64(0);  // software clears it together with FIXED_CTR3
        default: return 0;                           // read-only
    }
}

void put_counter_set(StrBuf& out, u32 mask, const char* prefix) {
    if (!mask) {
        out.put("none");
        return;
    }
    out.put(prefix);
    bool first = true;
    for (unsigned i = 0; i < 32;) {
        if (!bit_set(mask, i)) {
            ++i;
            continue;
        }
        unsigned j = i;
        while (j + 1 < 32 && bit_set(mask, j + 1)) ++j;
        if (!first) out.put(',');
        first = false;
        if (j == i) out.printf("%u", i);
        else if (j == i + 1) out.printf("%u,%u", i, j);
        else out.printf("%u-%u", i, j);
        i = j + 1;
    }
}

}  // namespace pmulab::regs
