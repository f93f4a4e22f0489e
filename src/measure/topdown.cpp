// TopDown: which method a CPU offers, the events it needs, the PERF_METRICS reads
// (see topdown.h).
#include "measure/topdown.h"

#include "x86/msr_addr.h"

namespace pmulab {

namespace {

// RDPMC ECX[29]: IA32_PERF_METRICS (SDM Vol. 2B RDPMC, "Performance Metrics").
constexpr u32 kRdpmcMetrics = u32(1) << 29;

bool in(u32 model, const u8* list, usize n) {
    for (usize i = 0; i < n; ++i)
        if (list[i] == model) return true;
    return false;
}

// Golden Cove and later P cores: PERF_METRICS bytes 4-7 (Linux intel_pmu_init_glc:
// num_topdown_events = 8): Sapphire/Emerald/Granite Rapids, Alder/Raptor/Meteor/Arrow/
// Lunar/Panther Lake.
constexpr u8 kLevel2Models[] = {0x8F, 0xCF, 0xAD, 0xAE, 0x97, 0x9A, 0xB7, 0xBA,
                                0xBF, 0xAA, 0xAC, 0xC5, 0xC6, 0xBD, 0xCC};
// Skylake-class client and server cores (4 slots per cycle, Intel's TMA formulas over
// IDQ_UOPS_NOT_DELIVERED / UOPS_ISSUED / UOPS_RETIRED / INT_MISC): Skylake, Kaby/Coffee/
// Whiskey/Comet Lake, Skylake-SP/Cascade Lake/Cooper Lake.
constexpr u8 kSkylakeModels[] = {0x4E, 0x5E, 0x55, 0x8E, 0x9E, 0xA5, 0xA6};

}  // namespace

const char* topdown_method_name(TopdownMethod m) {
    switch (m) {
        case TopdownMethod::perf_metrics: return "perf_metrics";
        case TopdownMethod::skylake_events: return "skylake_events";
        case TopdownMethod::arch_events: return "arch_events";
        case TopdownMethod::none: break;
    }
    return "none";
}

TopdownSupport topdown_support(const PmuInfo& info, const CpuIdentity& id) {
    TopdownSupport s;
    if (info.kind == PmuKind::none) {
        format_to(s.why, sizeof s.why, "no performance counters: %s", info.absent);
        return s;
    }
    if (info.kind != PmuKind::intel_arch) {
        format_to(s.why, sizeof s.why,
                  "TopDown is implemented for Intel cores only (this is %s; AMD's pipeline-utilisation formulas are "
                  "not built in yet)",
                  id.vendor_string);
        return s;
    }
    if (regs::has_perf_metrics(info.caps)) {
        s.method = TopdownMethod::perf_metrics;
        s.max_level = id.family == 6 && in(id.model, kLevel2Models, sizeof kLevel2Models) ? 2 : 1;
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
    if (id.family == 6 && in(id.model, kSkylakeModels, sizeof kSkylakeModels) && info.caps.version >= 4 &&
        popcount64(info.gp_mask) >= 4) {
        s.method = TopdownMethod::skylake_events;
        s.max_level = 1;
        return s;
    }
    format_to(s.why, sizeof s.why,
              "no TopDown on this core (family 0x%x model 0x%x): no IA32_PERF_METRICS (IA32_PERF_CAPABILITIES[15] "
              "and fixed counter 3), no architectural TopDown events (CPUID.0AH:EBX bits 7-11), not a Skylake-class "
              "core",
              id.family, id.model);
    return s;
}

void topdown_event_specs(const TopdownSupport& s, unsigned level, StrBuf* specs) {
    (void)level;
    switch (s.method) {
        case TopdownMethod::perf_metrics: specs->put(StrView("TOPDOWN.SLOTS")); break;
        case TopdownMethod::arch_events:
            specs->put(StrView("topdown_slots;topdown_retiring;topdown_bad_speculation;topdown_frontend_bound;"
                               "topdown_backend_bound"));
            break;
        case TopdownMethod::skylake_events:
            // Raw encodings (Skylake's event list): 9C.01 IDQ_UOPS_NOT_DELIVERED.CORE, 0E.01
            // UOPS_ISSUED.ANY, C2.02 UOPS_RETIRED.RETIRE_SLOTS, 0D.01 INT_MISC.RECOVERY_CYCLES.
            specs->put(StrView("CPU_CLK_UNHALTED.THREAD;9C.01;0E.01;C2.02;0D.01"));
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
