// `pmulab run --topdown [1|2] --metrics NAMES --metrics-file PATH`: the events derived
// metrics need, and the metrics themselves once a plan has been measured
// (measure/metrics.h, measure/topdown.h, docs/metrics.md).
#include "base/json.h"
#include "commands/measure_cmd.h"
#include "events/event_files.h"
#include "events/events.h"

namespace pmulab {

Status apply_metrics(RunOptions& o, const char* v) {
    if (!v[0]) return Error::make(Errc::invalid_argument, "--metrics needs metric or group names, e.g. IPC,TopdownL1");
    o.metrics_arg = v;
    return ok_status();
}

bool wants_metrics(const RunOptions& o) { return o.topdown || o.metrics_arg; }

namespace {

// Whether some dialect other than `except` (every dialect: none excepted) names `in`.
bool known_to_a_vendor(StrView in, int except = -1) {
    const EventDialect all[] = {EventDialect::intel, EventDialect::amd, EventDialect::amd_zen, EventDialect::netburst};
    for (EventDialect d : all)
        if (int(d) != except && parse_event_spec(in, d).ok()) return true;
    return false;
}

}  // namespace

Status load_run_metrics(Out& out, RunOptions& o) {
    o.metric_set.defs.clear();
    o.metric_names.clear();
    PMULAB_TRY(parse_metric_text(StrView(kBuiltinMetrics), "built-in metrics", &o.metric_set));
    if (o.metrics_file) {
        FileSource* fs = out.platform().files();
        if (!fs)
            return Error::make(Errc::unsupported, "--metrics-file: this platform has no boot volume to read '%s' from",
                               o.metrics_file);
        Result<Vec<char>> text = fs->read(o.metrics_file, usize(1) << 20);
        if (!text.ok()) return text.error().with_context("--metrics-file %s", o.metrics_file);
        PMULAB_TRY(parse_metric_text(StrView(text.value().data(), text.value().size()), o.metrics_file, &o.metric_set));
    }
    o.metric_list.clear();
    if (o.topdown) o.metric_list.put(StrView(o.topdown >= 2 ? "TopdownL1,TopdownL2" : "TopdownL1"));
    if (o.metrics_arg) {
        if (o.metric_list.size()) o.metric_list.put(',');
        o.metric_list.put(StrView(o.metrics_arg));
    }
    if (!o.metric_list.size()) return ok_status();
    PMULAB_TRY(select_metrics(o.metric_set, o.metric_list.view(), &o.metric_names));
    o.topdown_wanted = o.topdown > 0;
    for (StrView name : o.metric_names)
        for (const MetricDef& d : o.metric_set.defs)
            if (name.eq_nocase(StrView(d.name)) && d.method != TopdownMethod::none) o.topdown_wanted = true;
    return ok_status();
}

void metric_event_specs(const RunOptions& o, const PmuInfo& info, const CpuIdentity& id, TopdownSupport* td,
                        StrBuf* specs, StrBuf* why, bool smt_active) {
    *td = topdown_support(info, id);
    td->smt = smt_active && td->method == TopdownMethod::skylake_events;
    bool topdown_wanted = o.topdown_wanted;
    Vec<StrView> inputs;
    // Of a metric's definitions (not TopDown's: those come from the method), the first whose
    // inputs are all event names of this CPU's dialect (IPC: Intel's names, else the generic
    // instructions / cycles that AMD has too); the first definition when none is.
    const EventDialect dialect = event_dialect_for(id, info.caps);
    auto parses = [dialect](StrView in) {
        if (in.eq_nocase(StrView(kTscFrequencyInput)) || in.sub(0, 13).eq(StrView("PERF_METRICS."))) return true;
        return parse_event_spec(in, dialect).ok();
    };
    // A name no dialect knows is taken for an event-file name (UOPS_RETIRED.RETIRE_SLOTS);
    // one that only another vendor's dialect knows marks that vendor's definition, which is
    // not measured here (llc_miss_ratio on AMD, l2_miss_ratio on Intel: undefined, not an
    // error that stops the run).
    auto other_vendors = [dialect](StrView in) { return known_to_a_vendor(in, int(dialect)); };
    for (StrView name : o.metric_names) {
        const MetricDef* pick = nullptr;
        for (const MetricDef& d : o.metric_set.defs) {
            if (!name.eq_nocase(StrView(d.name)) || d.method != TopdownMethod::none) continue;
            Vec<StrView> mine;
            (void)formula_inputs(StrView(d.formula), &mine);
            bool all = true, mine_here = true;
            for (StrView in : mine) {
                bool p = parses(in);
                all = all && p;
                mine_here = mine_here && (p || !other_vendors(in));
            }
            if (!pick && mine_here) pick = &d;
            if (all) {
                pick = &d;
                break;
            }
        }
        if (pick) (void)formula_inputs(StrView(pick->formula), &inputs);
    }
    if (topdown_wanted) {
        if (td->method == TopdownMethod::none) {
            why->printf("TopDown is unavailable: %s", td->why);
        } else {
            if (o.topdown > td->max_level)
                why->printf("--topdown %u: this core has level %u only (TopDown method %s; level 2 needs "
                            "IA32_PERF_METRICS bytes 4-7, Golden Cove and later); level 2 metrics are left out",
                            o.topdown, td->max_level, topdown_method_name(td->method));
            if (o.topdown >= 2 && td->method == TopdownMethod::skylake_events)
                why->printf("--topdown 2: level 2 from GP events on Skylake-class cores is the frontend split "
                            "only (tma_fetch_latency, tma_fetch_bandwidth)");
            // The level: --topdown's, else the deepest selected TopDown metric's (--metrics TopdownL2).
            unsigned level = o.topdown;
            for (StrView name : o.metric_names)
                for (const MetricDef& d : o.metric_set.defs)
                    if (d.method == td->method && d.level > level && name.eq_nocase(StrView(d.name))) level = d.level;
            // --no-mem: R8-R13 hold the reads; TSC, SLOTS and the 4 bytes fill them, so
            // INT_MISC.UOP_DROPPING is left out (each byte's share, metrics.md).
            const bool no_drop = o.cfg.no_mem && td->method == TopdownMethod::perf_metrics && td->max_level >= 2;
            if (no_drop)
                why->printf("%s--no-mem: INT_MISC.UOP_DROPPING (AD.10) does not fit in R8-R13 with SLOTS and "
                            "PERF_METRICS; TopDown takes each PERF_METRICS byte's share, not Intel's Golden Cove "
                            "definitions",
                            why->size() ? "; " : "");
            StrBuf t;
            topdown_event_specs(*td, level, &t, no_drop);
            if (specs->size()) specs->put(';');
            specs->put(t.view());
        }
    }
    for (StrView in : inputs) {
        if (in.find('.', 0) < in.len && StrView(in).sub(0, 13).eq(StrView("PERF_METRICS."))) continue;
        if (in.eq_nocase(StrView(kTscFrequencyInput))) continue;  // the platform's, not an event
        if (specs->size()) specs->put(';');
        specs->put(in);
    }
}

Status check_metric_support(Out& out, const RunOptions& o, const Vec<EventsForCpus>& sets) {
    if (!o.topdown_wanted) return ok_status();
    usize with = 0;
    for (const EventsForCpus& set : sets) with += set.topdown.method != TopdownMethod::none;
    for (const EventsForCpus& set : sets) {
        if (!set.topdown_why[0]) continue;
        StrBuf where;
        put_cpu_list(where, set.cpus);
        bool none = set.topdown.method == TopdownMethod::none;
        if (none && with == 0)
            return Error::make(Errc::unsupported, "--topdown: %s: %s", where.c_str(), set.topdown_why);
        out.warn("--topdown: %s: %s%s", where.c_str(), set.topdown_why,
                 none ? "; the other events are measured there without TopDown" : "");
    }
    return ok_status();
}

Status prepare_metric_plans(const RunOptions& o, const EventsForCpus& set, Vec<Box<PmuPlan>>* plans) {
    if (!o.topdown_wanted || set.topdown.method != TopdownMethod::perf_metrics) return ok_status();
    unsigned level = o.topdown ? o.topdown : set.topdown.max_level;
    if (level > set.topdown.max_level) level = set.topdown.max_level;
    for (Box<PmuPlan>& pl : *plans) PMULAB_TRY(add_topdown_reads(pl.get(), level));
    return ok_status();
}

void MetricCollector::add(const RunOptions& o, const MeasureResult& r) {
    Item& it = items.emplace();
    it.cpu = r.cpu;
    it.apic_id = r.apic_id;
    it.sibling = r.sibling;
    it.bench = r.bench;
    str_copy(it.label, sizeof it.label, r.read->event);
    str_copy(it.counter, sizeof it.counter, r.read->counter);
    it.iterations = r.iterations;
    it.value = r.per_iter[unsigned(o.cfg.agg)];
    auto count = [](Frac f) { return f.num > 0 && f.den ? u64(f.num) / f.den : u64(0); };
    it.short_max = count(r.short_sum.max);
    it.long_max = count(r.long_sum.max);
}

namespace {

struct ItemInputs final : MetricInputs {
    const MetricCollector* c = nullptr;
    u32 cpu = 0;
    const BenchInstance* bench = nullptr;
    u64 tsc_hz = 0;  // 0: unknown
    bool get(StrView label, Frac* v) const override {
        if (label.eq_nocase(StrView(kTscFrequencyInput))) {
            if (!tsc_hz || tsc_hz > u64(INT64_MAX)) return false;
            *v = Frac{i64(tsc_hz), 1};
            return true;
        }
        for (const MetricCollector::Item& it : c->items)
            if (it.cpu == cpu && it.bench == bench && label.eq_nocase(StrView(it.label))) {
                *v = it.value;
                return true;
            }
        return false;
    }
};

// Why a metric is undefined where the generic "not measured" would mislead: a formula
// over an unknown TSC frequency, or one whose every definition reads other CPUs' events.
void explain_undefined(Vec<MetricValue>& vals, const ItemInputs& in, const TscFreq& tsc) {
    for (MetricValue& mv : vals) {
        // A formula over the TSC frequency where it is unknown: say why, not "not measured".
        if (mv.ok || mv.no_variant || !mv.def || tsc.hz) continue;
        Vec<StrView> names;
        (void)formula_inputs(StrView(mv.def->formula), &names);
        bool reads_tsc = false;
        for (StrView n : names) reads_tsc |= n.eq_nocase(StrView(kTscFrequencyInput));
        if (reads_tsc)
            format_to(mv.why, sizeof mv.why, "the TSC frequency is unknown (%s)",
                      tsc.detail[0] ? tsc.detail : "no CPUID.15H/16H and no timer");
    }
    for (MetricValue& mv : vals) {
        // Every definition reads another vendor's events (metric_event_specs measured
        // none of them): say so rather than "not measured".
        if (mv.ok || mv.no_variant || !mv.def || mv.def->method != TopdownMethod::none) continue;
        Vec<StrView> names;
        (void)formula_inputs(StrView(mv.def->formula), &names);
        for (StrView n : names) {
            Frac unused;
            if (n.eq_nocase(StrView(kTscFrequencyInput)) || in.get(n, &unused) || !known_to_a_vendor(n)) continue;
            format_to(mv.why, sizeof mv.why, "no definition over this CPU's events ('%.*s' is an event of other CPUs)",
                      int(n.len), n.ptr);
            break;
        }
    }
}

// CPU_CLK_UNHALTED.REF_TSC among a metric's inputs (issue 26 item 3). On fixed counter 2 it
// advances in steps of the TSC/crystal ratio (CPUID.15H EBX/EAX: TscFreq::ref_step), so each
// window's count is off by less than one step and a difference of two windows by less than
// two: the relative bound is 2 * step / (the ticks of the difference). On a GP counter its
// encoding 3C.01 is REF_XCLK, which counts the crystal (bus) clock, not TSC ticks.
struct RefTscNote {
    bool applies = false;  // the formula reads REF_TSC, measured
    bool on_gp = false;    // ... by 3C.01 on a GP counter
    char counter[16] = {};
    u64 step = 0;  // TSC ticks per step, 0 unknown
    u64 span = 0;  // REF_TSC ticks of the window difference
};

// The fixed-counter-2 event by any of its names (CPU_CLK_UNHALTED.REF_TSC, ref-cycles), not
// REF_XCLK asked for by name or as 3C.01, which a user may mean.
bool is_ref_tsc(StrView label) {
    Result<Event> e = parse_event_spec(label, EventDialect::intel);
    return e.ok() && e.value().kind == EventKind::fixed && e.value().fixed_counter == 2;
}

RefTscNote ref_tsc_note(const MetricCollector& c, const MetricCollector::Item& first, const MetricDef& d, u64 step) {
    RefTscNote n;
    Vec<StrView> names;
    (void)formula_inputs(StrView(d.formula), &names);
    for (StrView name : names)
        for (const MetricCollector::Item& it : c.items) {
            if (it.cpu != first.cpu || it.bench != first.bench || !name.eq_nocase(StrView(it.label))) continue;
            if (!is_ref_tsc(name)) continue;
            n.applies = true;
            n.on_gp = StrView(it.counter).sub(0, 3).eq(StrView("PMC"));
            str_copy(n.counter, sizeof n.counter, it.counter);
            n.step = step;
            Frac v = frac_reduce(it.value);
            n.span = v.den && v.num > 0 ? u64(v.num) * it.iterations / u64(v.den) : 0;
        }
    return n;
}

// "1.95%": the relative bound 2 * step / span in percent, two decimals.
void put_ref_tsc_bound(StrBuf& out, const RefTscNote& n) {
    u64 bp = 20000 * n.step / n.span;  // hundredths of a percent
    out.printf("%llu.%02llu%%", (unsigned long long)(bp / 100), (unsigned long long)(bp % 100));
}

// Marks `mv` by its REF_TSC input: undefined where 3C.01 counted the crystal clock instead,
// flagged where the steps make it uncertain by more than the validation tolerance (1/100).
void apply_ref_tsc_note(MetricValue& mv, const RefTscNote& n) {
    if (!n.applies || !mv.ok) return;
    if (n.on_gp) {
        mv.ok = false;
        format_to(mv.why, sizeof mv.why,
                  "CPU_CLK_UNHALTED.REF_TSC was counted by 3C.01 (REF_XCLK) on %s: crystal/bus-clock ticks, not TSC "
                  "ticks; leave fixed counter 2 free",
                  n.counter);
        return;
    }
    if (!n.step || mv.violation[0]) return;
    if (!n.span) {
        str_copy(mv.violation, sizeof mv.violation, "REF_TSC did not advance: the window is too short");
    } else if (200 * n.step > n.span) {
        StrBuf b;
        put_ref_tsc_bound(b, n);
        format_to(mv.violation, sizeof mv.violation,
                  "REF_TSC advances in steps of %llu TSC ticks (CPUID.15H): over %llu ticks it is uncertain by up to "
                  "%s; measure longer (--loop, --unroll)",
                  (unsigned long long)n.step, (unsigned long long)n.span, b.c_str());
    }
}

// The quantisation fields of a metric over REF_TSC on fixed counter 2: "ref_tsc_step" (null
// where unknown) and "quantisation", the relative bound 2 * step / span.
void ref_tsc_fields(JsonWriter& w, const RefTscNote& n) {
    if (!n.applies || n.on_gp) return;
    if (!n.step) {
        w.key("ref_tsc_step").null();
        return;
    }
    w.field_u("ref_tsc_step", n.step);
    if (n.span) w.key("quantisation").fixed(i64(2 * n.step), n.span, 4);
    else w.key("quantisation").null();
}

// The validation tolerance of one (bench, CPU): from its SLOTS where PERF_METRICS gave
// the TopDown inputs (their 1/255 quantisation, perf_metrics_tolerance), else 0.01.
Frac validation_tolerance(const MetricCollector& c, const MetricCollector::Item& at, TopdownMethod method) {
    if (method != TopdownMethod::perf_metrics) return kMetricTolerance;
    for (const MetricCollector::Item& it : c.items)
        if (it.cpu == at.cpu && it.bench == at.bench && StrView(it.label).eq(StrView("TOPDOWN.SLOTS")))
            return perf_metrics_tolerance(it.short_max, it.long_max);
    return kMetricTolerance;
}

// The metric record of one (bench, CPU).
Value metric_record(const MetricCollector::Item& it, const MetricValue& mv, const ItemInputs& in, const RunOptions& o,
                    const RefTscNote& ref, Frac tolerance) {
    const BenchInstance& b = *it.bench;
    const bool sized = b.kernel && b.kernel->buffer != KernelBuffer::none;
    const MetricDef& d = *mv.def;
    Value line;
    JsonWriter w(line);
    w.begin_object().field("type", "metric");
    w.field_u("cpu", it.cpu).field_u("apic_id", it.apic_id).field("bench", bench_name(b));
    if (sized) w.field_u("size", b.size);
    w.field("metric", d.name);
    if (d.groups[0]) w.field("groups", d.groups);
    if (d.level) w.field_u("level", d.level);
    if (d.parent[0]) w.field("parent", d.parent);
    if (d.unit[0]) w.field("unit", d.unit);
    if (d.method != TopdownMethod::none) w.field("method", topdown_method_name(d.method));
    w.field("formula", d.formula);
    w.field("agg", agg_name(o.cfg.agg));
    Frac f = frac_reduce(mv.value);
    if (mv.ok) {
        w.key("value").fixed(f.num, f.den, o.decimals < 4 ? 4 : o.decimals);
        w.key("fraction").begin_array().inum(f.num).num(f.den).end_array();
    } else {
        w.key("value").null();
        w.field("undefined", mv.why);
    }
    // Every input the formula reads, with its per-iteration value.
    Vec<StrView> names;
    (void)formula_inputs(StrView(d.formula), &names);
    w.key("inputs").begin_object();
    for (StrView n : names) {
        Frac v;
        StrBuf k;
        k.put(n);
        w.key(k.c_str());
        if (in.get(n, &v)) {
            Frac r = frac_reduce(v);
            w.fixed(r.num, r.den, o.decimals);
        } else {
            w.null();
        }
    }
    w.end_object();
    ref_tsc_fields(w, ref);
    w.field_b("valid", mv.ok && !mv.violation[0]);
    Frac t = frac_reduce(tolerance);
    w.key("tolerance").fixed(t.num, t.den, 4);
    if (mv.violation[0]) w.field("violation", mv.violation);
    w.field("sibling", sibling_state_name(it.sibling));  // docs/measure.md "SMT siblings"
    w.end_object();
    return line;
}

// The metric's row of the text table (and its header before the first row).
void metric_table_row(Out& out, StrBuf& table, bool* header, const MetricCollector::Item& it, const MetricValue& mv,
                      const RunOptions& o, const RefTscNote& ref) {
    const BenchInstance& b = *it.bench;
    const bool sized = b.kernel && b.kernel->buffer != KernelBuffer::none;
    const MetricDef& d = *mv.def;
    if (!*header) {
        table.printf("%-14s %6s %4s %-24s %10s  %s\n", "bench", "size", "cpu", "metric", "value", "formula");
        *header = true;
    }
    StrBuf size, val;
    if (sized) put_size_suffix(size, b.size);
    else size.put('-');
    if (mv.ok) put_frac(val, mv.value, o.decimals < 4 ? 4 : o.decimals);
    else val.put(StrView("-"));
    StrBuf bound;  // REF_TSC's quantisation: +- 2 steps over the window difference
    if (mv.ok && ref.applies && ref.step && ref.span) {
        bound.put(StrView("  (+-"));
        put_ref_tsc_bound(bound, ref);
        bound.printf(": REF_TSC steps of %llu ticks)", (unsigned long long)ref.step);
    }
    table.printf("%-14s %6s %4u %-24s %10s  %s%s%s%s%s\n", bench_name(b), size.c_str(), it.cpu, d.name, val.c_str(),
                 d.formula, mv.ok ? "" : "  (undefined: ", mv.ok ? "" : mv.why, mv.ok ? "" : ")", bound.c_str());
    if (mv.violation[0])
        out.warn("CPU %u %s: metric %s: %s (flagged in the record)", it.cpu, bench_name(b), d.name, mv.violation);
}

}  // namespace

void MetricCollector::emit(Out& out, const RunOptions& o, TopdownMethod method) {
    if (o.metric_names.empty()) {
        items.clear();
        return;
    }
    StrBuf table;
    bool header = false;
    for (usize i = 0; i < items.size(); ++i) {
        // The first item of each (bench, CPU).
        bool first = true;
        for (usize j = 0; j < i && first; ++j)
            first = !(items[j].cpu == items[i].cpu && items[j].bench == items[i].bench);
        if (!first) continue;
        ItemInputs in;
        in.c = this;
        in.cpu = items[i].cpu;
        in.bench = items[i].bench;
        const TscFreq& tsc = out.platform().tsc_frequency();
        in.tsc_hz = tsc.hz;
        Vec<MetricValue> vals;
        const Frac tol = validation_tolerance(*this, items[i], method);
        evaluate_metrics(o.metric_set, o.metric_names, method, in, &vals, tol);
        explain_undefined(vals, in, tsc);
        for (MetricValue& mv : vals) {
            if (mv.no_variant) continue;  // TopDown where this CPU has none (warned already)
            RefTscNote ref = ref_tsc_note(*this, items[i], *mv.def, tsc.ref_step);
            apply_ref_tsc_note(mv, ref);
            out.record(metric_record(items[i], mv, in, o, ref, tol));
            metric_table_row(out, table, &header, items[i], mv, o, ref);
        }
    }
    if (table.size()) {
        out.text_buf(table);
        out.simulated_mark();
    }
    items.clear();
}

}  // namespace pmulab
