// Cycle-by-cycle measurements: the plan and the hooks on the measuring CPU (see
// cycle_by_cycle.h; the driver is cycle_by_cycle_run.cpp).
#include "measure/cycle_by_cycle.h"

#include "measure/cycle_by_cycle_ctx.h"
#include "x86/apic_regs.h"
#include "x86/intel_regs.h"
#include "x86/msr_addr.h"

namespace pmulab {

namespace {

// The internal events: instructions retired (never armed) and core cycles (armed).
Result<Event> internal_event(const PmuInfo& info, bool cycles) {
    const bool amd = info.kind == PmuKind::amd;
    // AMD: both on PERF_CTRs (IRPerfCount, the named 'instructions' there, is an MSR
    // outside the PMCs that LbrAndPmcFreeze is not documented to freeze).
    const char* spec = amd ? (cycles ? "76.00" : "C0.00") : (cycles ? "cycles" : "instructions");
    Result<Event> e = parse_event_spec(StrView(spec), info.dialect);
    if (!e.ok()) return e.error();
    Event ev = e.value();
    ev.pmi = cycles;
    return ev;
}

// Whether two events count the same thing on the same kind of counter.
bool same_counting(const Event& a, const Event& b) {
    if (a.kind != b.kind || a.usr != b.usr || a.os != b.os || a.intel.any != b.intel.any) return false;
    if (a.kind == EventKind::fixed) return a.fixed_counter == b.fixed_counter;
    return a.event_select == b.event_select && a.umask == b.umask && a.cmask == b.cmask && a.inv == b.inv &&
           a.edge == b.edge && a.intel.umask2 == b.intel.umask2 && a.intel.eq == b.intel.eq && a.intel.aux_count == 0 &&
           b.intel.aux_count == 0;
}

// nanoBench perform_measurements_for_cycle: "on several microarchitectures, the counters 0
// or 1 do not freeze at the same time as the other counters"; "the higher counters don't
// count some of the events properly". The PMCs left usable, and why others are not.
u32 usable_gp(const PmuInfo& info, u32 family, u32 model, char* why, usize cap) {
    if (info.kind != PmuKind::intel_arch) return ~u32(0);
    u32 avoid = 0;
    if (family == 6 && model == 0x97) {
        avoid = 1u << 0;
        format_to(why, cap, "PMC0 left out: it does not freeze with the others on Alder Lake (06_97H)");
    } else if (family == 6 && (info.version == 3 || info.version == 4) && model >= 0x3A) {
        avoid = 1u << 1;
        format_to(why, cap, "PMC1 left out: it does not freeze with the others on this model (perfmon v%u, 06_%02XH)",
                  unsigned(info.version), model);
    }
    return 0xFu & ~avoid;
}

// The user's event as the plan counts it. AMD's fixed-like counters are MSRs outside
// the PMCs: instructions (IRPerfCount) goes to its PERF_CTR equivalent, the others refuse.
Result<Event> user_event(const PmuInfo& info, const Event& in, u32 gp_allowed) {
    Event e = in;
    if (e.kind == EventKind::tsc)
        return Error::make(Errc::invalid_argument,
                           "--cycle-by-cycle: 'tsc' does not freeze on a PMI: list PMU events (e.g. instructions)");
    if (info.kind == PmuKind::amd && e.kind == EventKind::fixed) {
        if (!e.gp_equivalent)
            return Error::make(Errc::unsupported,
                               "--cycle-by-cycle: '%s' is counted by an MSR outside the PERF_CTR counters, which "
                               "LbrAndPmcFreeze does not freeze",
                               e.name);
        e.kind = EventKind::programmable;
        e.fixed_counter = -1;
    }
    if (e.kind == EventKind::programmable) e.allowed_gp &= gp_allowed;
    return e;
}

// Whether `evs` (internal first) fits one run.
bool fits_one_run(const PmuInfo& info, const Vec<Event>& evs) {
    Allocation a;
    return pmu_allocate(info, evs.data(), evs.size(), &a).ok() && a.groups.size() == 1;
}

// Groups the events greedily (input order, first fit), the internal events in every run.
Status group_events(const PmuInfo& info, const Event internal[2], const Vec<Event>& users, const Vec<i32>& shared,
                    Vec<Vec<u32>>* runs) {
    for (usize i = 0; i < users.size(); ++i) {
        if (shared[i] >= 0) continue;
        bool placed = false;
        for (Vec<u32>& run : *runs) {
            Vec<Event> evs;
            evs.push(internal[0]), evs.push(internal[1]);
            for (u32 k : run) evs.push(users[k]);
            evs.push(users[i]);
            if (fits_one_run(info, evs)) {
                run.push(u32(i));
                placed = true;
                break;
            }
        }
        if (placed) continue;
        Vec<Event> alone;
        alone.push(internal[0]), alone.push(internal[1]), alone.push(users[i]);
        if (!fits_one_run(info, alone)) {
            Allocation a;
            PMULAB_TRY(pmu_allocate(info, alone.data(), alone.size(), &a));
            return Error::make(Errc::unsupported,
                               "--cycle-by-cycle: '%s' cannot be counted in the same run as the armed cycles counter "
                               "and the instructions counter (every run needs both)",
                               users[i].name);
        }
        runs->emplace().push(u32(i));
    }
    if (runs->empty()) runs->emplace();  // only shared events: one run reads them
    return ok_status();
}

}  // namespace

CbcPlan::CbcPlan() = default;
CbcPlan::~CbcPlan() = default;

const char* cbc_unsupported(const PmuInfo& info) {
    if (const char* why = freeze_unsupported(info); *why) return why;
    if (info.kind == PmuKind::intel_arch && (info.fixed_mask & 3) != 3)
        return "cycle-by-cycle arms fixed counter 1 (unhalted core cycles) and reads fixed counter 0 (instructions "
               "retired), as nanoBench does; this PMU does not have both (CPUID.0AH)";
    return "";
}

Status cbc_plan(const PmuInfo& info, u32 family, u32 model, const Vec<Event>& events, const Vec<u32>& cpus,
                CbcPlan* out) {
    StrBuf where;
    put_cpu_list(where, cpus);
    if (const char* why = cbc_unsupported(info); *why)
        return Error::make(Errc::unsupported, "%s: cannot measure cycle by cycle: %s", where.c_str(), why);
    out->info = info;
    out->cpus.clear();
    for (u32 c : cpus) out->cpus.push(c);
    const u32 gp_allowed = usable_gp(info, family, model, out->quirk, sizeof out->quirk);
    out->avoided_gp = info.kind == PmuKind::intel_arch ? info.gp_mask & ~gp_allowed : 0;
    Event internal[2];
    for (int k = 0; k < 2; ++k) {
        Result<Event> e = internal_event(info, k == 1);
        if (!e.ok()) return e.error();
        internal[k] = e.value();
    }
    Vec<Event> users;
    Vec<i32> shared;  // the internal event a user event is (-1: none)
    for (const Event& in : events) {
        Result<Event> e = user_event(info, in, gp_allowed);
        if (!e.ok()) return e.error();
        users.push(e.value());
        shared.push(same_counting(e.value(), internal[0]) ? 0 : same_counting(e.value(), internal[1]) ? 1 : -1);
    }
    Vec<Vec<u32>> runs;
    PMULAB_TRY_CTX(group_events(info, internal, users, shared, &runs), "%s", where.c_str());
    return cbc_plan_runs(info, internal, users, shared, runs, out);
}

}  // namespace pmulab
