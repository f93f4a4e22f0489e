// Availability of an event on a CPU (check_event, event_counters), and the dialect of a
// CPU (event_dialect_for); see events.h.
#include "events/spec_lexer.h"

#include <stdarg.h>

namespace pmulab {

using spec::is_amd;

const char* event_route_name(EventRoute r) {
    switch (r) {
        case EventRoute::fixed: return "fixed";
        case EventRoute::gp: return "gp";
        case EventRoute::gp_fallback: return "gp_fallback";
        case EventRoute::none: return "none";
    }
    return "none";
}

namespace {

// Whether architectural event `bit` is enumerated as available; else writes why not.
bool arch_available(const PmuCaps& c, int bit, StrBuf* why) {
    if (bit < 0) return true;
    if (unsigned(bit) >= c.ebx_length) {
        if (c.ebx_length == 0) why->printf("CPUID.0AH:EAX[31:24] = 0 enumerates no architectural events");
        else
            why->printf("CPUID.0AH:EAX[31:24] = %u enumerates architectural events 0-%u only (this is event %d)",
                        c.ebx_length, c.ebx_length - 1u, bit);
        return false;
    }
    if ((c.ebx >> bit) & 1) {
        why->printf("CPUID.0AH:EBX[%d] = 1", bit);
        return false;
    }
    return true;
}

void put_gp_code(StrBuf& b, const Event& e) { b.printf("%02X.%02X", unsigned(e.event_select), unsigned(e.umask)); }

// Whether the CPU has counters for the event's dialect at all.
Status check_pmu_kind(const Event& e, const PmuCaps& c) {
    // No counters at all: say so first, whatever dialect the event was written in.
    if (c.version == 0 && !c.amd_core_counters && is_amd(e.dialect))
        return event_unsupported(e, "cannot be counted: no AMD core counters enumerated (CPUID 8000_0001H:ECX[23] = 0, "
                                    "no PerfMonV2; a hypervisor without PMU passthrough)");
    if (c.version == 0 && !c.amd_core_counters)
        return event_unsupported(e,
                                 "cannot be counted: no architectural performance monitoring (CPUID.0AH:EAX[7:0] = 0)");
    if (e.dialect != EventDialect::intel)
        return event_unsupported(e, "was written for a%s %s PMU; it cannot be counted on an Intel architectural PMU",
                                 is_amd(e.dialect) ? "n" : "", is_amd(e.dialect) ? "AMD" : "NetBurst");
    if (c.version == 0) {
        if (c.amd_core_counters)
            return event_unsupported(e, "cannot be counted: pmulab programs Intel architectural counters and this CPU "
                                        "has an AMD PMU");
        return event_unsupported(e,
                                 "cannot be counted: no architectural performance monitoring (CPUID.0AH:EAX[7:0] = 0)");
    }
    return ok_status();
}

// A hybrid PMU's event (cpu_core/cpu_atom) on this logical processor.
Status check_core_type(const Event& e, u8 core_type) {
    if (e.core_type == kCoreTypeNone) return ok_status();
    const char* want = e.core_type == kCoreTypeCore ? "cpu_core" : "cpu_atom";
    if (core_type == kCoreTypeNone)
        return event_unsupported(e, "is for PMU %s, but this CPU is not hybrid (use cpu/.../)", want);
    if (core_type != e.core_type)
        return event_unsupported(e, "is for PMU %s, but this logical processor is %s", want,
                                 core_type == kCoreTypeCore   ? "a P-core (cpu_core)"
                                 : core_type == kCoreTypeAtom ? "an E-core (cpu_atom)"
                                                              : "of an unknown core type");
    return ok_status();
}

// The event select's width and the event select register's optional bits.
Status check_modifiers(const Event& e, const PmuCaps& c) {
    if (e.event_select > 0xFF)
        return event_unsupported(e, "has event select 0x%X; Intel event selects are 8 bits", unsigned(e.event_select));
    if (e.intel.any && !regs::has_anythread(c)) {
        if (c.version < 3)
            return event_unsupported(
                e, "uses AnyThread, which needs architectural PMU version 3 or later (this CPU has version %u)",
                c.version);
        return event_unsupported(e, "uses AnyThread, which this CPU deprecates (CPUID.0AH:EDX[15] = 1)");
    }
    if (e.intel.eq && !(c.leaf_23 && c.eq_bit))
        return event_unsupported(e, "uses EQ, which this CPU does not enumerate (CPUID.23H.0:EBX[1] = 0)");
    if (e.intel.umask2 && !(c.leaf_23 && c.umask2))
        return event_unsupported(e, "uses UMASK2, which this CPU does not enumerate (CPUID.23H.0:EBX[0] = 0)");
    return ok_status();
}

// A fixed-counter event: its fixed counter, or else its GP equivalent.
Result<EventRoute> fixed_route(const Event& e, const PmuCaps& c, u32 gp, u32 fx) {
    if (e.fixed_counter >= 0 && ((fx >> e.fixed_counter) & 1)) return EventRoute::fixed;
    StrBuf fixed_set, why;
    if (fx) {
        fixed_set.put("this CPU has ");
        regs::put_counter_set(fixed_set, fx, "FIXED_CTR");
    } else {
        fixed_set.put("this CPU has no fixed counters");
    }
    StrBuf code;
    put_gp_code(code, e);
    if (!e.gp_equivalent)
        return event_unsupported(e, "needs fixed counter %d, which is absent (%s)", e.fixed_counter, fixed_set.c_str());
    if (!gp)
        return event_unsupported(e,
                                 "cannot be counted: fixed counter %d is absent (%s) and there are no "
                                 "general-purpose counters",
                                 e.fixed_counter, fixed_set.c_str());
    if (!arch_available(c, e.arch_bit, &why))
        return event_unsupported(e,
                                 "cannot be counted: fixed counter %d is absent (%s) and its GP equivalent %s is "
                                 "unavailable: %s",
                                 e.fixed_counter, fixed_set.c_str(), code.c_str(), why.c_str());
    if (!(gp & e.allowed_gp))
        return event_unsupported(e,
                                 "cannot be counted: fixed counter %d is absent and its allowed general-purpose "
                                 "counters do not exist",
                                 e.fixed_counter);
    return EventRoute::gp_fallback;
}

// A general-purpose counter event: its architectural bit, pinned counter and allowed set.
Result<EventRoute> gp_route(const Event& e, const PmuCaps& c, u32 gp) {
    StrBuf gp_set, why;
    regs::put_counter_set(gp_set, gp, "PMC");
    if (!gp) return event_unsupported(e, "cannot be counted: this CPU has no general-purpose counters");
    if (e.arch_bit >= 0 && !arch_available(c, e.arch_bit, &why)) {
        StrBuf code;
        put_gp_code(code, e);
        return event_unsupported(e, "(%s, %s) is not available on this CPU: %s", arch_event_title(unsigned(e.arch_bit)),
                                 code.c_str(), why.c_str());
    }
    if (e.pinned_counter >= 0 && !((gp >> e.pinned_counter) & 1))
        return event_unsupported(e, "is pinned to PMC%d (.CTR=%d), but this CPU has %s", e.pinned_counter,
                                 e.pinned_counter, gp_set.c_str());
    StrBuf allowed;
    regs::put_counter_set(allowed, e.allowed_gp, "PMC");
    if (!(gp & e.allowed_gp))
        return event_unsupported(e, "may only use %s, but this CPU has %s", allowed.c_str(), gp_set.c_str());
    if (e.pinned_counter >= 0 && !((e.allowed_gp >> e.pinned_counter) & 1))
        return event_unsupported(e, "is pinned to PMC%d but may only use %s", e.pinned_counter, allowed.c_str());
    return EventRoute::gp;
}

}  // namespace

Result<EventRoute> check_event(const Event& e, const PmuCaps& c, u8 core_type) {
    if (e.kind == EventKind::tsc) return EventRoute::none;
    PMULAB_TRY(check_pmu_kind(e, c));
    PMULAB_TRY(check_core_type(e, core_type));
    PMULAB_TRY(check_modifiers(e, c));
    u32 gp = regs::gp_counters(c);
    if (e.kind == EventKind::fixed) return fixed_route(e, c, gp, regs::fixed_counters(c));
    return gp_route(e, c, gp);
}

EventCounters event_counters(const Event& e, const PmuCaps& c) {
    EventCounters r;
    if (e.kind == EventKind::tsc || !c.version) return r;
    u32 gp = regs::gp_counters(c) & e.allowed_gp;
    if (e.pinned_counter >= 0) gp &= u32(1) << e.pinned_counter;
    if (e.kind == EventKind::fixed) {
        u32 fx = regs::fixed_counters(c);
        bool present = e.fixed_counter >= 0 && ((fx >> e.fixed_counter) & 1);
        if (present) r.fixed = u32(1) << e.fixed_counter;
        StrBuf why;
        bool gp_ok = e.gp_equivalent && (!present || e.gp_equivalent_exact) && arch_available(c, e.arch_bit, &why);
        if (gp_ok) r.gp = gp;
        return r;
    }
    r.gp = gp;
    return r;
}

const char* event_dialect_name(EventDialect d) {
    switch (d) {
        case EventDialect::intel: return "intel";
        case EventDialect::amd: return "amd";
        case EventDialect::amd_zen: return "amd_zen";
        case EventDialect::netburst: return "netburst";
    }
    return "intel";
}

EventDialect event_dialect_for(const CpuIdentity& id, const PmuCaps& caps) {
    if (is_amd_family(id.vendor)) return id.family >= 0x17 ? EventDialect::amd_zen : EventDialect::amd;
    if (id.vendor == Vendor::intel && id.family == 0xF && caps.version == 0) return EventDialect::netburst;
    return EventDialect::intel;
}

Error event_unsupported(const Event& e, const char* fmt, ...) {
    char msg[sizeof(Error::msg)];
    va_list ap;
    va_start(ap, fmt);
    vformat_to(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return Error::make(Errc::unsupported, "event '%s' %s", e.name, msg);
}

}  // namespace pmulab
