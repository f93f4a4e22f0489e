// `pmulab run --sample EVENT[:PERIOD]` (docs/sampling.md "Sampling"): the option, the
// checks before anything runs, and the {"type":"samples"} records and their table. The
// engine's half is measure/sampling.h.
#include "base/json.h"
#include "commands/measure_cmd.h"
#include "commands/run_sample_precise.h"

namespace pmulab {

namespace {

bool all_digits(StrView s) {
    if (s.empty()) return false;
    for (usize i = 0; i < s.len; ++i)
        if (s[i] < '0' || s[i] > '9') return false;
    return true;
}

bool name_is(StrView base, const char* const* names) {
    for (; *names; ++names)
        if (base.eq_nocase(StrView(*names))) return true;
    return false;
}

bool contains_nocase(StrView s, const char* needle) {
    StrView n(needle);
    for (usize i = 0; i + n.len <= s.len; ++i)
        if (s.sub(i, n.len).eq_nocase(n)) return true;
    return false;
}

}  // namespace

Status parse_sample_spec(StrView spec, SampleSpec* out) {
    *out = SampleSpec();
    spec = spec.trim();
    usize colon = spec.len;
    for (usize i = spec.len; i > 0; --i)
        if (spec[i - 1] == ':') {
            colon = i - 1;
            break;
        }
    StrView tail = colon < spec.len ? spec.sub(colon + 1, spec.len - colon - 1) : StrView();
    if (colon < spec.len && all_digits(tail)) {
        u64 v = 0;
        for (usize i = 0; i < tail.len; ++i)
            if (__builtin_mul_overflow(v, u64(10), &v) || __builtin_add_overflow(v, u64(tail[i] - '0'), &v))
                return Error::make(Errc::invalid_argument, "--sample '%.*s': the period %.*s does not fit 64 bits",
                                   int(spec.len), spec.ptr, int(tail.len), tail.ptr);
        if (v == 0)
            return Error::make(Errc::invalid_argument,
                               "--sample '%.*s': a period of 0; the period counts events between samples, at least 1",
                               int(spec.len), spec.ptr);
        out->period = v;
        out->given = true;
        spec = spec.sub(0, colon).trim();
    }
    if (spec.empty())
        return Error::make(Errc::invalid_argument,
                           "--sample needs an event, e.g. --sample instructions or --sample cycles:100019");
    out->event = spec;
    if (!out->given) out->period = sample_default_period(spec);
    return ok_status();
}

u64 sample_default_period(StrView event) {
    usize end = event.find(':', 0);
    StrView base = event.sub(0, end < event.len ? end : event.len);
    static const char* const kInstructions[] = {"instructions", "inst_retired.any", "inst_retired.any_p",
                                                "ex_ret_instr", nullptr};
    static const char* const kCycles[] = {"cycles",
                                          "cpu-cycles",
                                          "ref-cycles",
                                          "cpu_clk_unhalted.thread",
                                          "cpu_clk_unhalted.core",
                                          "cpu_clk_unhalted.thread_p",
                                          "cpu_clk_unhalted.ref_tsc",
                                          "ls_not_halted_cyc",
                                          nullptr};
    static const char* const kBranches[] = {"branches", "branch-instructions", "br_inst_retired.all_branches",
                                            "ex_ret_brn", nullptr};
    if (name_is(base, kInstructions)) return 100003;
    if (name_is(base, kCycles)) return 100019;
    if (name_is(base, kBranches)) return 10007;
    if (contains_nocase(base, "miss")) return 1009;
    return 10007;
}

Status finish_samples(RunOptions* o) {
    o->samples.clear();
    if (!o->samples_joined.size()) return ok_status();
    StrView all = o->samples_joined.view();
    StrBuf events;
    for (usize pos = 0; pos <= all.len;) {
        usize semi = all.find(';', pos);
        if (semi > all.len) semi = all.len;
        SampleSpec& sp = o->samples.emplace();
        PMULAB_TRY(parse_sample_spec(all.sub(pos, semi - pos), &sp));
        PMULAB_TRY(ibs_sample_spec(&sp));
        for (usize k = 0; k + 1 < o->samples.size(); ++k)
            if (o->samples[k].event.eq_nocase(sp.event))
                return Error::make(Errc::invalid_argument, "--sample: '%.*s' is sampled twice", int(sp.event.len),
                                   sp.event.ptr);
        if (events.size()) events.put(';');
        if (sp.ibs != IbsKind::none) events.put(StrView("tsc "));  // IBS: no counter (run_ibs.cpp)
        events.put(sp.event);
        pos = semi + 1;
    }
    // The sampled events first (the plan's events 0..n-1), then what --events counts.
    if (o->events_joined.size()) {
        events.put(';');
        events.put(o->events_joined.view());
    }
    o->events_joined = move(events);
    return ok_status();
}

Status sample_mark(const RunOptions& o, EventsForCpus& set) {
    if (o.samples.empty()) return ok_status();
    PMULAB_TRY(ibs_sample_mark(o, set));
    const SampleSpec* counted = nullptr;  // the first sample on a PMU counter
    for (const SampleSpec& sp : o.samples)
        if (!counted && sp.ibs == IbsKind::none) counted = &sp;
    for (const ProbedCpu& pc : set.probed) {
        const char* why = counted ? pmi_unsupported(pc.info) : "";
        if (*why)
            return Error::make(Errc::unsupported, "CPU %u: cannot sample '%.*s': %s", pc.cpu, int(counted->event.len),
                               counted->event.ptr, why);
    }
    if (set.events.size() < o.samples.size())
        return Error::make(Errc::internal, "--sample: %u sampled events resolved to %u", unsigned(o.samples.size()),
                           unsigned(set.events.size()));
    const bool amd = !set.probed.empty() && set.probed[0].info.kind == PmuKind::amd;
    for (usize i = 0; i < o.samples.size(); ++i) {
        if (o.samples[i].ibs != IbsKind::none) continue;  // not a counter
        Event& e = set.events[i];
        e.pmi = !o.precise;  // --precise: PEBS's buffer threshold interrupts, not the counter (pebs.h)
        // AMD's fixed-like counters cannot interrupt: an event that has a PERF_CTR
        // encoding (instructions: PMCx0C0) is sampled there; APERF/MPERF are refused
        // by pmi_setup.
        if (amd && e.kind == EventKind::fixed && e.gp_equivalent) e.kind = EventKind::programmable;
    }
    return ok_status();
}

namespace {

// The longest block of any benchmark: what each SampleCounts holds.
Status block_sizes(const RunOptions& o, MeasurePlatform& mp, usize len[3]) {
    len[0] = len[1] = len[2] = 0;
    for (const BenchInstance& b : o.cfg.benches) {
        usize l[3] = {0, 0, 0};
        if (b.user) {
            const UserCode& u = *b.user;
            UserCodeBlocks blocks{CodeSpan{u.body.data(), u.body.size()}, CodeSpan{u.init.data(), u.init.size()},
                                  CodeSpan{u.late_init.data(), u.late_init.size()},
                                  CodeSpan{u.one_time_init.data(), u.one_time_init.size()}};
            Result<u32> pairs = check_markers(blocks, o.cfg.no_mem);
            if (pairs.ok() && pairs.value())
                return Error::make(Errc::invalid_argument,
                                   "--sample: the body of '%s' has pause/resume markers; sampling reports offsets in "
                                   "the body as written, which the markers' expansion would shift (remove them)",
                                   u.name);
            l[0] = u.body.size(), l[1] = u.init.size(), l[2] = u.late_init.size();
        } else if (b.kernel) {
            l[0] = mp.kernel_body(b.kernel->id).len;
        }
        for (int k = 0; k < 3; ++k) len[k] = max_of(len[k], l[k]);
    }
    return ok_status();
}

}  // namespace

Status sample_prepare(const RunOptions& o, MeasurePlatform& mp, Vec<Box<PmuPlan>>& plans, RunSampling* out) {
    out->groups.clear();
    if (o.samples.empty()) return ok_status();
    usize len[3];
    PMULAB_TRY(block_sizes(o, mp, len));
    // The platform must reach the LVT entry (checked on the BSP: the measuring CPUs have
    // the same local APIC).
    Result<u32> lvt = mp.lvt_perf();
    if (!lvt.ok())
        return Error::make(Errc::unsupported, "cannot sample: %s (the PMI is delivered through the LVT entry)",
                           lvt.error().msg);
    for (Box<PmuPlan>& pl : plans) {
        Vec<u64> periods;
        periods.resize(pl->events.size());
        for (usize i = 0; i < pl->events.size(); ++i)
            periods[i] = i < o.samples.size() && o.samples[i].ibs == IbsKind::none ? o.samples[i].period : 0;
        usize first = out->groups.size();
        PMULAB_TRY(sampling_prepare(mp, *pl, periods.data(), &out->groups));
        PMULAB_TRY(ibs_sample_prepare(o, mp, *pl, out));
        for (usize g = first; g < out->groups.size(); ++g)
            for (u32 s = 0; s < out->groups[g]->nslots; ++s) out->groups[g]->counts[s].size(len[0], len[1], len[2]);
    }
    return ok_status();
}

bool samples_only(const RunOptions& o, const Vec<Box<PmuPlan>>& plans) {
    if (o.samples.empty()) return false;
    for (const Box<PmuPlan>& pl : plans)
        if (pl->events.size() > o.samples.size()) return false;
    return true;
}

void sample_header(const RunOptions& o, StrBuf* out) {
    const MeasureConfig& c = o.cfg;
    out->printf("pmulab run: sampled over every run: %llu and %llu copies (%s), loop %llu, %u reps + %u warm-up of "
                "each version\n",
                (unsigned long long)(c.basic ? 0 : c.unroll), (unsigned long long)(c.basic ? c.unroll : 2 * c.unroll),
                c.basic ? "basic mode" : "U/2U", (unsigned long long)c.loop, c.reps, c.warmup);
}

namespace {

struct Bucket {
    const char* block;
    CodeBlock which;
    usize offset;
    u64 count;
};

// Calls fn(Bucket) for every nonzero bucket, by block (body, init, late_init) then offset.
template <typename Fn> void each_bucket(const SampleCounts& c, Fn fn) {
    const Vec<u64>* v[3] = {&c.body, &c.init, &c.late_init};
    static const char* const kName[3] = {"body", "init", "late_init"};
    static constexpr CodeBlock kBlock[3] = {CodeBlock::body, CodeBlock::init, CodeBlock::late_init};
    for (int k = 0; k < 3; ++k)
        for (usize i = 0; i < v[k]->size(); ++i)
            if ((*v[k])[i]) fn(Bucket{kName[k], kBlock[k], i, (*v[k])[i]});
}

// Each nonzero bucket's precise data, in each_bucket's order (BSP: allocates). On an
// error, the buckets from the failing one on have none.
Status precise_buckets(const SampleCounts& c, const MeasureResult& r, Vec<PreciseBucket>* out) {
    Status st = ok_status();
    each_bucket(c, [&](const Bucket& b) {
        if (st.ok()) st = precise_bucket(c, b.which, b.offset, r, &out->emplace());
    });
    if (!st.ok()) out->pop();
    return st;
}

// pbs: the buckets' precise data (precise_buckets; null when not precise).
void samples_json(const MeasureResult& r, const SampleSpec& sp, const SampleCounts& c, const Vec<PreciseBucket>* pbs,
                  Value* rec) {
    JsonWriter w(*rec);
    w.begin_object().field("type", "samples").field_u("cpu", r.cpu).field("bench", bench_name(*r.bench));
    w.field("event", sp.event).field_u("period", sp.period).field_u("samples", c.samples);
    if (sp.precise) w.field_b("precise", true);
    if (sp.pebs_pt) w.field("pebs_output", "pt");
    if (sp.source) w.field("source", sp.source);
    usize k = 0;
    w.key("buckets").begin_array();
    each_bucket(c, [&](const Bucket& b) {
        w.begin_object().field("block", b.block).field_u("offset", b.offset).field_u("count", b.count);
        if (pbs && k < pbs->size()) precise_bucket_json(w, (*pbs)[k]);
        ++k;
        w.end_object();
    });
    w.end_array().field_u("harness", c.harness);
    if (sp.precise && c.log_dropped) w.field_u("precise_unlogged", c.log_dropped);
    w.end_object();
}

void put_share(StrBuf& t, u64 count, u64 total) {
    u64 bp = total ? (count * 10000 + total / 2) / total : 0;  // hundredths of a percent
    t.printf("%3llu.%02llu%%", (unsigned long long)(bp / 100), (unsigned long long)(bp % 100));
}

void samples_text(const MeasureResult& r, const SampleSpec& sp, const SampleCounts& c, const Vec<PreciseBucket>* pbs,
                  StrBuf* t) {
    t->printf("samples of %.*s every %llu on CPU %u, %s: %llu samples, %llu in the harness\n", int(sp.event.len),
              sp.event.ptr, (unsigned long long)sp.period, r.cpu, bench_name(*r.bench), (unsigned long long)c.samples,
              (unsigned long long)c.harness);
    if (!c.samples) return;
    t->printf("  %-10s %8s %10s %8s\n", "block", "offset", "samples", "share");
    usize k = 0;
    each_bucket(c, [&](const Bucket& b) {
        t->printf("  %-10s %8llu %10llu  ", b.block, (unsigned long long)b.offset, (unsigned long long)b.count);
        put_share(*t, b.count, c.samples);
        if (pbs && k < pbs->size()) precise_bucket_text(*t, (*pbs)[k]);
        ++k;
        t->put('\n');
    });
    t->printf("  %-10s %8s %10llu  ", "harness", "-", (unsigned long long)c.harness);
    put_share(*t, c.harness, c.samples);
    t->put('\n');
}

}  // namespace

bool sample_result(RunSampling& s, Out& out, const RunOptions& o, const MeasureResult& r) {
    for (Box<SampleGroup>& g : s.groups) {
        for (u32 slot = 0; slot < g->nslots; ++slot) {
            if (r.read != &g->group->reads[g->read_of_slot[slot]]) continue;
            const u32 ev = g->event_of_slot[slot];
            if (ev >= o.samples.size()) return false;
            SampleCounts& c = g->counts[slot];
            const SampleSpec& sp = o.samples[ev];
            Vec<PreciseBucket> pbs;
            if (sp.precise) {
                Status st = precise_buckets(c, r, &pbs);
                if (!st.ok()) out.error(st.error());
            }
            Value rec;
            samples_json(r, sp, c, sp.precise ? &pbs : nullptr, &rec);
            out.record(rec);
            StrBuf t;
            samples_text(r, sp, c, sp.precise ? &pbs : nullptr, &t);
            out.text_buf(t);
            c.clear();
            return true;
        }
    }
    return false;
}

}  // namespace pmulab
