// `pmulab run` results: JSON records and the text table.
#include "base/json.h"
#include "commands/measure_cmd.h"
#include "events/event_files.h"
#include "measure/noise.h"

namespace pmulab {

namespace {

// Significant digits a value keeps beyond --decimals: JSON records are read by programs
// (six, as printf's %g), the table by people (three). An exact value stops earlier.
constexpr unsigned kJsonDigits = 6;
constexpr unsigned kTableDigits = 3;
constexpr unsigned kMaxDecimals = 18;

// Decimal places for f: at least `min_dec`, then more until the expansion ends or
// `digits` significant digits are shown (so 1/250 is 0.004, not 0.00; 1/3 is 0.333333).
unsigned decimals_for(Frac f, unsigned min_dec, unsigned digits) {
    if (f.den == 0) return min_dec;
    u64 mag = f.num < 0 ? u64(0) - u64(f.num) : u64(f.num);
    u64 den = f.den;
    while (den > (u64(1) << 59)) {  // as put_fixed: keep rem * 10 within 64 bits
        den >>= 1;
        mag >>= 1;
    }
    u64 ip = mag / den, rem = mag % den;
    unsigned sig = 0;
    for (u64 x = ip; x; x /= 10) ++sig;
    for (unsigned d = 0;; ++d) {
        if (d >= min_dec && (rem == 0 || sig >= digits)) return d;
        if (d == kMaxDecimals) return d;
        rem *= 10;
        u64 digit = rem / den;
        rem %= den;
        if (sig || digit) ++sig;
    }
}

void put_value(StrBuf& b, Frac f, unsigned min_dec, unsigned digits) {
    put_frac(b, f, decimals_for(f, min_dec, digits));
}

// The spread: the quartiles of the per-run differences (long run i - short run i) per
// iteration, by linear interpolation between order statistics (h = (n - 1) q, as
// numpy's default and Python's statistics.quantiles(method='inclusive')). Exact.
struct Spread {
    bool ok = false;
    Frac q1, q3;
};

Spread run_spread(const MeasureConfig& c, const MeasureResult& r) {
    Spread s;
    u32 n = c.reps;
    if (!n || !r.short_raw || !r.long_raw || !r.iterations) return s;
    Vec<i64> d;
    d.resize(n);
    for (u32 i = 0; i < n; ++i)
        if (__builtin_sub_overflow(r.long_raw[i], r.short_raw[i], &d[i])) return s;
    sort_i64(d.data(), n);
    for (int q = 1; q <= 3; q += 2) {
        u64 h4 = u64(n - 1) * u64(q);  // h in quarters
        u64 lo = h4 / 4, part = h4 % 4;
        i64 hi_v = lo + 1 < n ? d[lo + 1] : d[lo];
        i64 step, scaled, base, num;
        if (__builtin_sub_overflow(hi_v, d[lo], &step) || __builtin_mul_overflow(step, i64(part), &scaled) ||
            __builtin_mul_overflow(d[lo], i64(4), &base) || __builtin_add_overflow(base, scaled, &num))
            return s;
        Result<Frac> v = frac_sub_div(Frac{num, 4}, Frac{0, 1}, r.iterations);
        if (!v.ok()) return s;
        (q == 1 ? s.q1 : s.q3) = v.value();
    }
    s.ok = true;
    return s;
}

const char* unit_of(const CounterRead& read) {
    if (read.energy) return "J / iteration";
    return read.kind == CounterAccess::rdtsc ? "TSC ticks / iteration" : "counts / iteration";
}

// A value in the read's unit: a RAPL counter's counts are 2^-esu J each (exact: the
// denominator takes the power of two; halved precision only where it would overflow).
Frac in_unit(const CounterRead& read, Frac f) {
    if (!read.energy) return f;
    for (unsigned s = read.energy->esu; s; --s) {
        if (f.den >> 62) f.num /= 2;
        else f.den <<= 1;
    }
    return f;
}

bool no_value(const CounterRead& read) { return read.energy && read.energy->too_short; }

// The fields of a RAPL energy result (docs/measure.md "Energy (RAPL)").
void put_energy_json(JsonWriter& w, const EnergyReadInfo& e) {
    w.field("energy_domain", e.domain).field("energy_scope", e.scope).field_u("package", e.package);
    w.field("energy_msr_name", e.msr_name).field_hex("energy_msr", e.msr).field_u("energy_unit_exp", e.esu);
    w.field_u("update_interval_ticks", e.interval_ticks).field_u("updates", e.updates);
    w.field_u("min_updates", e.min_updates).field_u("units", e.units).field_u("min_units", e.min_units);
    w.field("loop_rule", e.loop_rule).field_b("too_short", e.too_short);
}

u32 len_of(const char* s) {
    u32 n = 0;
    while (s[n]) ++n;
    return n;
}

}  // namespace

void put_size_suffix(StrBuf& b, u64 bytes) {
    if (bytes && bytes % (u64(1) << 30) == 0) b.printf("%lluG", (unsigned long long)(bytes >> 30));
    else if (bytes && bytes % (u64(1) << 20) == 0) b.printf("%lluM", (unsigned long long)(bytes >> 20));
    else if (bytes && bytes % 1024 == 0) b.printf("%lluK", (unsigned long long)(bytes >> 10));
    else b.printf("%llu", (unsigned long long)bytes);
}

// x * num / den without 128-bit division (none in the EFI build): num and den are halved
// together until both fit 31 bits, a relative error below 2^-30 of the ratio.
static u64 scale_by_ratio(u64 x, u64 num, u64 den) {
    while (num >> 31 || den >> 31) {
        num >>= 1;
        den >>= 1;
    }
    if (!den) return 0;
    return x / den * num + x % den * num / den;
}

// How the job serialised and its noise provenance (measure/noise.h, docs/measure.md
// "Noise provenance"): every field is there, null with a reason when it cannot be known.
// --prefetchers off: what was off on this result's CPU, through which MSRs (docs/cache.md
// "Hardware prefetchers"): the first MSR as prefetch_msr/prefetch_bits, every one in
// prefetch_msrs (hybrid E cores and E-core-only parts write three).
static void put_prefetch_json(JsonWriter& w, const MeasureConfig& c, const MeasureResult& r) {
    const PrefetchPlan& p = c.prefetch[r.prefetch_plan < 2 ? r.prefetch_plan : 0];
    if (!p.count) return;
    w.field("prefetchers_off", p.names).field("prefetch_family", p.family);
    w.field_hex("prefetch_msr", p.msr[0]).field_hex("prefetch_bits", p.bits[0]);
    w.key("prefetch_msrs").begin_object();
    for (u8 i = 0; i < p.count; ++i) {
        char msr[16];
        format_to(msr, sizeof msr, "0x%x", p.msr[i]);
        w.field_hex(msr, p.bits[i]);
    }
    w.end_object();
}

static void put_noise_json(JsonWriter& w, const MeasureConfig& c, const NoiseRecord* n, u64 tsc_hz) {
    if (!n) {
        w.field("serialize", serialize_name(c.serialize));
        w.key("noise").null().key("smi_moved").null();
        return;
    }
    const NoiseCaps& caps = *n->caps;
    w.field("serialize", serialize_name(n->serialize));
    if (n->serialize != SerializeWith::lfence && caps.serialize_note[0]) w.field("serialize_note", caps.serialize_note);
    w.key("noise").begin_object();
    if (n->smi_known) w.field_u("smi_delta", n->smi_delta);
    else if (n->smi_note[0]) w.key("smi_delta").null().field("smi_absent", n->smi_note);
    else
        w.key("smi_delta")
            .null()
            .field("smi_absent", caps.smi_absent[0] ? caps.smi_absent : "MSR_SMI_COUNT read failed");
    if (n->smi_known && n->smi_pmc >= 0) {
        // AMD (noise.h): which counter counted PMCx02B, and what that took from the events.
        char ctr[8];
        format_to(ctr, sizeof ctr, "PMC%d", n->smi_pmc);
        w.field("smi_counter", ctr)
            .field("smi_counter_cost", "PMCx02B (ls_smi_rx) on a GP counter this group's events leave free: no event "
                                       "moved to another run, no instruction added to the measured code");
    }
    if (n->aperf_known) {
        w.field_u("aperf_delta", n->aperf_delta).field_u("mperf_delta", n->mperf_delta);
        // Effective frequency over the job: MPERF counts at the TSC's fixed rate, APERF at
        // the actual one (SDM Vol. 3B §15.2 "P-State Hardware Coordination"; APM Vol. 2 §17.3: TSC Hz x APERF/MPERF).
        if (!n->mperf_delta) w.key("effective_hz").null().field("effective_absent", "MPERF did not move");
        else if (!tsc_hz) w.key("effective_hz").null().field("effective_absent", "TSC frequency unknown");
        else w.field_u("effective_hz", scale_by_ratio(tsc_hz, n->aperf_delta, n->mperf_delta));
    } else {
        w.key("aperf_delta").null().key("mperf_delta").null().key("effective_hz").null();
        w.field("aperf_absent", caps.aperf_absent[0] ? caps.aperf_absent : "APERF/MPERF read failed");
    }
    w.field_u("tsc_delta", n->tsc_delta);
    w.field("freeze_while_smm", freeze_smm_name(n->freeze));
    if (n->freeze == FreezeSmm::unsupported) w.field("freeze_absent", caps.freeze_absent);
    if (n->note[0]) w.field("note", n->note);
    w.end_object();
    if (n->smi_known) w.field_b("smi_moved", n->smi_moved());
    else w.key("smi_moved").null();
}

void result_json(const RunOptions& o, const MeasureResult& r, Value* line) {
    const KernelInfo* k = r.bench->kernel;
    const UserCode* u = r.bench->user;
    const MeasureConfig& c = o.cfg;
    JsonWriter w(*line);
    w.begin_object().field("type", "result");
    w.field_u("cpu", r.cpu).field_u("apic_id", r.apic_id);
    w.field("bench", bench_name(*r.bench));
    if (k && k->buffer != KernelBuffer::none) w.field_u("size", r.bench->size);
    if (u) {
        char hash[24];
        format_to(hash, sizeof hash, "%016llx", (unsigned long long)u->hash);
        w.field("code", u->name).field_u("code_bytes", u->body.size()).field("code_fnv1a64", hash);
        if (!u->init.empty()) w.field_u("init_bytes", u->init.size());
        if (!u->late_init.empty()) w.field_u("late_init_bytes", u->late_init.size());
        if (!u->one_time_init.empty()) w.field_u("one_time_init_bytes", u->one_time_init.size());
        // R14's area: its physical address (UEFI memory is identity-mapped), size and alignment.
        w.field_u("r14", r.r14).field_u("r14_size", c.r14_size).field_u("r14_align", c.r14_align);
        if (c.align_offset) w.field_u("align_offset", c.align_offset);
        // --code-offset: where the measured region's code starts (UEFI: its physical address).
        if (c.code_offset && r.region)
            w.field_u("code_offset", c.code_offset)
                .field_hex("code_at", u64(reinterpret_cast<uintptr_t>(r.region->code)));
        if (c.drain_frontend) w.field_b("drain_frontend", true);
        if (c.no_mem) w.field_b("no_mem", true);
        if (c.initial_warmup) w.field_u("initial_warmup", c.initial_warmup);
    }
    w.field("event", r.read->event).field("counter", r.read->counter);
    if (r.read->kind != CounterAccess::rdtsc)
        w.field("counter_method", r.read->kind == CounterAccess::rdpmc ? "rdpmc" : "rdmsr");
    put_prefetch_json(w, c, r);
    w.field_u("run", r.run).field_u("runs", r.runs);
    w.field_u("unroll", c.unroll).field_u("loop", c.loop);
    w.field_u("reps", c.reps).field_u("warmup", c.warmup);
    w.field_b("basic", c.basic).field("agg", agg_name(c.agg));
    w.field("irq", irq_mode_name(c.irq));
    put_noise_json(w, c, r.noise, o.tsc_hz);
    if (k) w.field_u("instructions_per_iteration", k->instructions);
    w.field_u("iterations", r.iterations);
    auto value = [&](const char* key, Frac f) {
        f = in_unit(*r.read, f);
        if (no_value(*r.read)) w.key(key).null();
        else w.key(key).fixed(f.num, f.den, decimals_for(f, o.decimals, kJsonDigits));
    };
    Frac pi = frac_reduce(in_unit(*r.read, r.per_iter[unsigned(c.agg)]));
    value("per_iteration", r.per_iter[unsigned(c.agg)]);
    if (no_value(*r.read)) w.key("fraction").null();
    else w.key("fraction").begin_array().inum(pi.num).num(pi.den).end_array();
    static constexpr Agg order[] = {Agg::min, Agg::median, Agg::avg, Agg::trimmed, Agg::max};
    for (Agg a : order) value(agg_name(a), r.per_iter[unsigned(a)]);
    Spread sp = run_spread(c, r);
    if (sp.ok) {
        value("q1", sp.q1);
        value("q3", sp.q3);
    }
    w.field("unit", unit_of(*r.read));
    if (r.read->energy) put_energy_json(w, *r.read->energy);
    // Where it ran and what the core's SMT siblings did (docs/measure.md "SMT siblings").
    w.field_u("package", r.package).field_u("core", r.core).field_u("thread", r.thread);
    w.field("sibling", sibling_state_name(r.sibling));
    if (o.raw) {
        for (int which = 0; which < 2; ++which) {
            w.key(which ? "long" : "short").begin_object();
            w.field_u("copies", which ? r.long_copies : r.short_copies);
            w.key("counts").begin_array();
            const i64* v = which ? r.long_raw : r.short_raw;
            for (u32 i = 0; i < c.reps; ++i) w.inum(v[i]);
            w.end_array().end_object();
        }
    }
    w.end_object();
}

void emit_result(Out& out, const RunOptions& o, const MeasureResult& r) {
    Value line;
    result_json(o, r, &line);
    out.record(line);
    StrBuf row;
    result_table_row(o, r, &row);
    out.text_buf(row);
}

void result_table_fit(RunOptions& o, const Vec<ReadGroup>& groups) {
    auto widen = [](u32* w, const char* name) {
        u32 n = len_of(name);
        if (n > *w) *w = n;
    };
    for (const BenchInstance& b : o.cfg.benches) widen(&o.bench_width, bench_name(b));
    for (const ReadGroup& g : groups) {
        for (const CounterRead& rd : g.reads) {
            widen(&o.event_width, rd.event);
            widen(&o.counter_width, rd.counter);
        }
    }
}

void result_table_header(const RunOptions& o, StrBuf* b) {
    const MeasureConfig& c = o.cfg;
    b->printf("pmulab run: %llu and %llu copies (%s), loop %llu, %u reps + %u warm-up, aggregate %s, "
              "interrupts %s, serialise %s\n",
              (unsigned long long)(c.basic ? 0 : c.unroll), (unsigned long long)(c.basic ? c.unroll : 2 * c.unroll),
              c.basic ? "basic mode" : "U/2U", (unsigned long long)c.loop, c.reps, c.warmup, agg_name(c.agg),
              irq_mode_name(c.irq), serialize_name(c.serialize));
    const char* agg = agg_name(c.agg);
    b->printf("per iteration: %s = %s(long runs) - %s(short runs), over the iterations; q1..q3 = the interquartile "
              "range of the %u per-run differences (the spread);\n",
              agg, agg, agg, c.reps);
    b->put("  est(min), est(max) = the same estimate from the min and from the max of each version (not a range)\n");
    b->printf("%-*s %6s %-*s %-*s %4s %5s %4s %12s %12s %12s %12s %12s  unit\n", int(o.bench_width), "bench", "size",
              int(o.event_width), "event", int(o.counter_width), "counter", "cpu", "apic", "run", agg, "q1", "q3",
              "est(min)", "est(max)");
}

void result_table_row(const RunOptions& o, const MeasureResult& r, StrBuf* b) {
    const KernelInfo* k = r.bench->kernel;
    StrBuf size;
    if (k && k->buffer != KernelBuffer::none) put_size_suffix(size, r.bench->size);
    else size.put('-');
    b->printf("%-*s %6s %-*s %-*s %4u %5llu %4u", int(o.bench_width), bench_name(*r.bench), size.c_str(),
              int(o.event_width), r.read->event, int(o.counter_width), r.read->counter, r.cpu,
              (unsigned long long)r.apic_id, r.run);
    Spread sp = run_spread(o.cfg, r);
    const Frac* cols[5] = {&r.per_iter[unsigned(o.cfg.agg)], sp.ok ? &sp.q1 : nullptr, sp.ok ? &sp.q3 : nullptr,
                           &r.per_iter[unsigned(Agg::min)], &r.per_iter[unsigned(Agg::max)]};
    for (const Frac* f : cols) {
        StrBuf v;
        if (f && !no_value(*r.read)) put_value(v, in_unit(*r.read, *f), o.decimals, kTableDigits);
        else v.put('-');
        b->printf(" %12s", v.c_str());
    }
    b->printf("  %s", unit_of(*r.read));
    if (no_value(*r.read))
        b->printf("  TOO SHORT: %llu updates and %llu units of the counter (at least %llu and %llu needed)",
                  (unsigned long long)r.read->energy->updates, (unsigned long long)r.read->energy->units,
                  (unsigned long long)r.read->energy->min_updates, (unsigned long long)r.read->energy->min_units);
    // The flag of a disturbed result: the SMI count moved during its runs.
    if (r.noise && r.noise->smi_moved()) b->printf("  SMI+%llu", (unsigned long long)r.noise->smi_delta);
    b->put('\n');
}

}  // namespace pmulab
