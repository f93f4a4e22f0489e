// TopDown: which method a CPU offers, the events it needs, the PERF_METRICS reads
// (see topdown.h).
#include "measure/topdown.h"

#include "x86/msr_addr.h"
#include "x86/uarch.h"

namespace pmulab {

namespace {

// RDPMC ECX[29]: IA32_PERF_METRICS (SDM Vol. 2B RDPMC, "Performance Metrics").
constexpr u32 kRdpmcMetrics = u32(1) << 29;

// E cores (Atom) by microarchitecture (x86/uarch.h). Hybrid parts: the E cores (core type
// 0x20); Atom-only parts: every core.
AtomUarch atom_core(const CpuIdentity& id) {
    if (id.vendor != Vendor::intel) return AtomUarch::none;
    bool atom = id.core_type == kCoreTypeAtom || id.leaf_1a_core_type == kCoreTypeAtom ||
                intel_atom_only_model(id.family, id.model);
    return atom ? intel_atom_uarch(id.family, id.model, id.native_model_id) : AtomUarch::none;
}

// AMD Zen 4 and Zen 5 (x86/uarch.h, Linux bsp_init_amd): the PMCx1A0 dispatch-slot events
// exist (Zen 3 has none; Zen 6's TopDown events are not published yet).
unsigned zen_generation(const CpuIdentity& id) {
    if (id.vendor != Vendor::amd) return 0;
    unsigned zen = amd_zen_generation(id.family, id.model);
    return zen == 4 || zen == 5 ? zen : 0;
}

constexpr const char* kMethodNames[kTopdownMethods] = {"none",           "perf_metrics",     "skylake_events",
                                                       "arch_events",    "gracemont_events", "crestmont_events",
                                                       "skymont_events", "atom_fixed",       "zen4_pipeline",
                                                       "zen5_pipeline"};

}  // namespace

const char* topdown_method_name(TopdownMethod m) {
    return unsigned(m) < kTopdownMethods ? kMethodNames[unsigned(m)] : "none";
}

bool topdown_method_from_name(StrView name, TopdownMethod* m) {
    for (unsigned i = 1; i < kTopdownMethods; ++i)
        if (name.eq(StrView(kMethodNames[i]))) {
            *m = TopdownMethod(i);
            return true;
        }
    return false;
}

unsigned topdown_level1_parts(TopdownMethod m) {
    return m == TopdownMethod::zen4_pipeline || m == TopdownMethod::zen5_pipeline ? 5 : 4;
}

TopdownSupport topdown_support(const PmuInfo& info, const CpuIdentity& id) {
    TopdownSupport s;
    if (info.kind == PmuKind::none) {
        format_to(s.why, sizeof s.why, "no performance counters: %s", info.absent);
        return s;
    }
    if (info.kind == PmuKind::amd) {
        unsigned zen = zen_generation(id);
        if (zen) {
            s.method = zen == 5 ? TopdownMethod::zen5_pipeline : TopdownMethod::zen4_pipeline;
            s.max_level = 2;
            s.slots_per_cycle = zen == 5 ? 8 : 6;
            return s;
        }
        format_to(s.why, sizeof s.why,
                  "no TopDown on this AMD core (family 0x%x model 0x%x, %s): the dispatch-slot events (PMCx1A0) "
                  "are known on Zen 4 (family 19h models 10h-1Fh, 60h-AFh) and Zen 5 (family 1Ah models 00h-2Fh, "
                  "40h-4Fh, 60h-7Fh)",
                  id.family, id.model,
                  amd_zen_generation(id.family, id.model) == 6 ? "Zen 6: its PPR events are not in pmulab yet"
                                                               : "not Zen 4 or 5");
        return s;
    }
    if (info.kind != PmuKind::intel_arch) {
        format_to(s.why, sizeof s.why, "TopDown is implemented for Intel and AMD Zen 4/5 cores only (this is %s)",
                  id.vendor_string);
        return s;
    }
    if (AtomUarch a = atom_core(id); a != AtomUarch::none && info.caps.version >= 2) {
        // E cores: fixed counters 4-6 where leaf 23H enumerates them, else their GP events.
        const u32 fixed456 = u32(0x7) << 4;
        s.max_level = 1;
        if (a == AtomUarch::skymont && (regs::fixed_counters(info.caps) & fixed456) == fixed456 &&
            popcount64(info.gp_mask) >= 1) {
            s.method = TopdownMethod::atom_fixed;
            s.slots_per_cycle = 8;
            return s;
        }
        if (popcount64(info.gp_mask) >= 4) {
            s.method = a == AtomUarch::gracemont   ? TopdownMethod::gracemont_events
                       : a == AtomUarch::crestmont ? TopdownMethod::crestmont_events
                                                   : TopdownMethod::skymont_events;
            s.slots_per_cycle = a == AtomUarch::gracemont ? 5 : a == AtomUarch::crestmont ? 6 : 8;
            return s;
        }
    }
    if (regs::has_perf_metrics(info.caps)) {
        s.method = TopdownMethod::perf_metrics;
        s.max_level = intel_topdown_l2_model(id.family, id.model) ? 2 : 1;
        return s;
    }
    const u32 arch = (u32(1) << kArchTopdownSlots) | (u32(1) << kArchTopdownBackendBound) |
                     (u32(1) << kArchTopdownBadSpeculation) | (u32(1) << kArchTopdownFrontendBound) |
                     (u32(1) << kArchTopdownRetiring);
    if ((info.caps.events_available & arch) == arch) {
        s.method = TopdownMethod::arch_events;
        s.max_level = 1;
        return s;
    }
    // Skylake-class: decided by the model (its events exist on every such core) and 4 GP
    // counters for them, not by the perfmon version: KVM guests of these cores enumerate v2.
    if (intel_skylake_class_model(id.family, id.model) && popcount64(info.gp_mask) >= 4) {
        s.method = TopdownMethod::skylake_events;
        s.max_level = 2;  // the frontend split only (topdown_event_specs)
        s.slots_per_cycle = 4;
        s.anythread = regs::has_anythread(info.caps);
        return s;
    }
    format_to(s.why, sizeof s.why,
              "no TopDown on this core (family 0x%x model 0x%x): no IA32_PERF_METRICS (IA32_PERF_CAPABILITIES[15] "
              "and fixed counter 3), no architectural TopDown events (CPUID.0AH:EBX bits 7-11), not a Skylake-class "
              "core or a known E core",
              id.family, id.model);
    return s;
}

void topdown_event_specs(const TopdownSupport& s, unsigned level, StrBuf* specs, bool no_uop_dropping) {
    switch (s.method) {
        case TopdownMethod::perf_metrics:
            specs->put(StrView("TOPDOWN.SLOTS"));
            // Golden Cove and later: INT_MISC.UOP_DROPPING (AD.10, Sapphire Rapids / Alder Lake
            // cpu_core event lists), which Intel's metrics take off the frontend (metrics_builtin.cpp).
            if (s.max_level >= 2 && !no_uop_dropping) specs->put(StrView(";AD.10"));
            break;
        case TopdownMethod::arch_events:
            specs->put(StrView("topdown_slots;topdown_retiring;topdown_bad_speculation;topdown_frontend_bound;"
                               "topdown_backend_bound"));
            break;
        case TopdownMethod::skylake_events:
            // Raw encodings (Skylake's event list): 9C.01 IDQ_UOPS_NOT_DELIVERED.CORE, 0E.01
            // UOPS_ISSUED.ANY, C2.02 UOPS_RETIRED.RETIRE_SLOTS, 0D.01 INT_MISC.RECOVERY_CYCLES.
            specs->put(StrView("CPU_CLK_UNHALTED.THREAD;9C.01;0E.01;C2.02;0D.01"));
            // The SMT forms (Linux skl-metrics.json TopdownL1_SMT): 3C.02 CPU_CLK_UNHALTED.
            // ONE_THREAD_ACTIVE and REF_XCLK in one run (their ratio), 0D.01 with AnyThread
            // INT_MISC.RECOVERY_CYCLES_ANY where the core has AnyThread.
            if (s.smt)
                specs->put(StrView(s.anythread ? ";CPU_CLK_UNHALTED.REF_XCLK;3C.02;0D.01.AnyT"
                                               : ";CPU_CLK_UNHALTED.REF_XCLK;3C.02"));
            // Level 2, the frontend split: IDQ_UOPS_NOT_DELIVERED.CYCLES_0_UOPS_DELIV.CORE, 9C.01
            // with CMASK = 4 (Skylake's event list; Linux skylake/skl-metrics.json
            // tma_fetch_latency = 4 * that / slots): the cycles no uop was delivered.
            if (level >= 2) specs->put(StrView(";9C.01.CMSK=4"));
            break;
        case TopdownMethod::gracemont_events:
            // Intel perfmon ADL/ADL-N E-core events (Linux tools/perf/pmu-events/arch/x86/
            // alderlaken/pipeline.json): 71.00 TOPDOWN_FE_BOUND.ALL, 73.00
            // TOPDOWN_BAD_SPECULATION.ALL, 74.00 TOPDOWN_BE_BOUND.ALL, C2.00 TOPDOWN_RETIRING.ALL.
            specs->put(StrView("CPU_CLK_UNHALTED.CORE;71.00;73.00;74.00;C2.00"));
            break;
        case TopdownMethod::crestmont_events:
            // Intel perfmon MTL cpu_atom (meteorlake/pipeline.json): as Gracemont's, but
            // TOPDOWN_RETIRING.ALL is 72.00.
            specs->put(StrView("CPU_CLK_UNHALTED.CORE;71.00;73.00;74.00;72.00"));
            break;
        case TopdownMethod::skymont_events:
            // Intel perfmon LNL cpu_atom (lunarlake/pipeline.json) GP forms (.ALL_P): 9C.01
            // FE bound, 73.00 bad speculation, A4.02 BE bound, C2.02 retiring.
            specs->put(StrView("CPU_CLK_UNHALTED.CORE;9C.01;73.00;A4.02;C2.02"));
            break;
        case TopdownMethod::atom_fixed:
            // Fixed counters 4-6 (named_events.cpp) and TOPDOWN_BE_BOUND.ALL_P on a GP counter.
            specs->put(StrView("CPU_CLK_UNHALTED.CORE;TOPDOWN_BAD_SPECULATION.ALL;TOPDOWN_FE_BOUND.ALL;"
                               "TOPDOWN_RETIRING.ALL;A4.02"));
            break;
        case TopdownMethod::zen4_pipeline:
        case TopdownMethod::zen5_pipeline:
            // AMD PPR event names (named_events.cpp kAmdNamed; Linux amdzen4/amdzen5 pipeline.json).
            specs->put(StrView("ls_not_halted_cyc;de_no_dispatch_per_slot.no_ops_from_frontend;"
                               "de_no_dispatch_per_slot.backend_stalls;de_no_dispatch_per_slot.smt_contention;"
                               "de_src_op_disp.all;ex_ret_ops"));
            // Level 2 (the same pipeline.json): microcode ops, mispredicts vs. restarts, and
            // the no-retire cycles waiting for loads among those waiting for any op.
            if (level >= 2) {
                // Pipeline restarts: PMCx096 on Zen 4, PMCx09F unit mask 01h on Zen 5.
                specs->put(StrView(s.method == TopdownMethod::zen4_pipeline ? ";resyncs_or_nc_redirects"
                                                                            : ";bp_redirects.resync"));
                specs->put(StrView(";ex_ret_ucode_ops;ex_ret_brn_misp;ex_no_retire.not_complete;"
                                   "ex_no_retire.load_not_complete"));
                // The frontend split: no_ops_from_frontend with CntMask = the slots per cycle
                // (APM Vol. 2 13.2.1 PERF_CTL CntMask: cycles in which the count is >= CntMask),
                // i.e. the cycles in which no op came from the frontend in any slot.
                specs->put(StrView(s.method == TopdownMethod::zen4_pipeline ? ";1A0.01.CMSK=6" : ";1A0.01.CMSK=8"));
            }
            break;
        case TopdownMethod::none: break;
    }
}

u64 topdown_slots(u64 metrics, unsigned byte, u64 slots) {
    u64 b = (metrics >> (8 * (byte & 7))) & 0xff;
    // slots < 2^56 (counters are at most 48 bits wide on parts with PERF_METRICS).
    return b * (slots & low_mask(56)) / 255;
}

u64 topdown_read_delta(const ReadGroup& g, usize r, const u64* start, const u64* end) {
    const CounterRead& m = g.reads[r];
    const CounterRead& sl = g.reads[m.slots_read];
    unsigned byte = unsigned(m.metric - 1);
    u64 a = topdown_slots(start[r], byte, start[m.slots_read] & low_mask(sl.width));
    u64 b = topdown_slots(end[r], byte, end[m.slots_read] & low_mask(sl.width));
    return b - a;  // negative (a wrap) stays visible as a huge value, like any count
}

Status add_topdown_reads(PmuPlan* plan, unsigned level) {
    const unsigned bytes = level >= 2 ? 8 : 4;
    const CounterAccess slots_pmc{CounterAccess::rdpmc, kRdpmcFixed | 3, 0};
    const CounterAccess slots_msr{CounterAccess::rdmsr, regs::fixed_ctr_msr(3), 0};
    for (ReadGroup& g : plan->groups) {
        usize at = g.reads.size();
        for (usize i = 0; i < g.reads.size(); ++i) {
            const CounterRead& r = g.reads[i];
            if ((r.kind == slots_pmc.kind && r.index == slots_pmc.index) ||
                (r.kind == slots_msr.kind && r.index == slots_msr.index))
                at = i;
        }
        if (at == g.reads.size()) continue;
        if (g.reads.size() + bytes > kMaxReads)
            return Error::make(Errc::invalid_argument,
                               "--topdown: the run that reads TOPDOWN.SLOTS would read %u counters; at most %u fit "
                               "(list fewer events)",
                               unsigned(g.reads.size() + bytes), unsigned(kMaxReads));
        const CounterRead slots = g.reads[at];
        for (unsigned b = 0; b < bytes; ++b) {
            CounterRead& r = g.reads.emplace();
            r.kind = slots.kind;
            r.index = slots.kind == CounterAccess::rdpmc ? kRdpmcMetrics : msr::MSR_PERF_METRICS;
            r.width = 64;
            r.metric = u8(b + 1);
            r.slots_read = u8(at);
            str_copy(r.event, sizeof r.event, kPerfMetricsNames[b]);
            str_copy(r.counter, sizeof r.counter, "METRICS");
        }
        // Reset both before every run, while counting is still off: the fractions then
        // cover this run only (perf: "reset regularly", 8-bit precision).
        Vec<MsrValue> writes;
        writes.push(MsrValue{regs::fixed_ctr_msr(3), 0});
        writes.push(MsrValue{msr::MSR_PERF_METRICS, 0});
        for (const MsrValue& w : g.start_writes) writes.push(w);
        g.start_writes.clear();
        for (const MsrValue& w : writes) g.start_writes.push(w);
        return ok_status();
    }
    return Error::make(Errc::internal, "--topdown: no run of the plan reads TOPDOWN.SLOTS on FIXED_CTR3");
}

}  // namespace pmulab
