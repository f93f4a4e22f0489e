// Small engine helpers with no CPU state: names, the code hash and the plan
// that splits --events into groups of counters read together (see measure.h).
#include "measure/measure.h"

#include "base/fmt.h"

namespace pmulab {

const char* irq_mode_name(IrqMode m) { return m == IrqMode::lvt ? "lvt" : "cli"; }

u64 fnv1a64(const u8* p, usize n) {
    u64 h = 0xCBF29CE484222325ull;  // FNV-1a 64 offset basis and prime (Fowler, Noll, Vo)
    for (usize i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001B3ull;
    return h;
}

const char* bench_name(const BenchInstance& b) {
    if (b.user) return b.user->name[0] ? b.user->name : "code";
    return b.kernel ? b.kernel->name : "?";
}

Status plan_event_groups(const Vec<StrView>& specs, Vec<ReadGroup>* groups) {
    groups->clear();
    for (usize i = 0; i < specs.size(); ++i) {
        StrView s = specs[i];
        if (s.empty()) return Error::make(Errc::invalid_argument, "--events: empty event name");
        for (usize j = 0; j < i; ++j)
            if (specs[j].eq_nocase(s))
                return Error::make(Errc::invalid_argument, "--events: '%.*s' is listed twice", int(s.len), s.ptr);
        if (!s.eq_nocase(StrView("tsc")))
            return Error::make(Errc::unsupported, "event '%.*s': PMU events are not supported yet (only 'tsc')",
                               int(s.len), s.ptr);
    }
    // Every event so far is the TSC: one group with one read.
    if (!specs.empty()) {
        ReadGroup& g = groups->emplace();
        CounterRead& r = g.reads.emplace();
        r.kind = CounterAccess::rdtsc;
        r.width = 64;
        str_copy(r.event, sizeof r.event, "tsc");
        str_copy(r.counter, sizeof r.counter, "TSC");
    }
    return ok_status();
}

}  // namespace pmulab
