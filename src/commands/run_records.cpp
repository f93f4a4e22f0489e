// `pmulab run` results: JSON records and the text table.
#include "base/json.h"
#include "commands/measure_cmd.h"
#include "events/event_files.h"
#include "measure/noise.h"

namespace pmulab {

void put_size_suffix(StrBuf& b, u64 bytes) {
    if (bytes && bytes % (u64(1) << 30) == 0) b.printf("%lluG", (unsigned long long)(bytes >> 30));
    else if (bytes && bytes % (u64(1) << 20) == 0) b.printf("%lluM", (unsigned long long)(bytes >> 20));
    else if (bytes && bytes % 1024 == 0) b.printf("%lluK", (unsigned long long)(bytes >> 10));
    else b.printf("%llu", (unsigned long long)bytes);
}

// How the job serialised and its noise provenance (measure/noise.h, docs/measure.md
// "Noise provenance"): every field is there, null with a reason when it cannot be known.
static void put_noise_json(JsonWriter& w, const MeasureConfig& c, const NoiseRecord* n) {
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
    else
        w.key("smi_delta")
            .null()
            .field("smi_absent", caps.smi_absent[0] ? caps.smi_absent : "MSR_SMI_COUNT read failed");
    if (n->aperf_known) {
        w.field_u("aperf_delta", n->aperf_delta).field_u("mperf_delta", n->mperf_delta);
    } else {
        w.key("aperf_delta").null().key("mperf_delta").null();
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

void result_json(const RunOptions& o, const MeasureResult& r, StrBuf* line) {
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
        w.field_u("r14", r.r14).field_u("r14_size", c.r14_size);
        if (c.align_offset) w.field_u("align_offset", c.align_offset);
        if (c.drain_frontend) w.field_b("drain_frontend", true);
        if (c.no_mem) w.field_b("no_mem", true);
        if (c.initial_warmup) w.field_u("initial_warmup", c.initial_warmup);
    }
    w.field("event", r.read->event).field("counter", r.read->counter);
    if (r.read->kind != CounterAccess::rdtsc)
        w.field("counter_method", r.read->kind == CounterAccess::rdpmc ? "rdpmc" : "rdmsr");
    w.field_u("run", r.run).field_u("runs", r.runs);
    w.field_u("unroll", c.unroll).field_u("loop", c.loop);
    w.field_u("reps", c.reps).field_u("warmup", c.warmup);
    w.field_b("basic", c.basic).field("agg", agg_name(c.agg));
    w.field("irq", irq_mode_name(c.irq));
    put_noise_json(w, c, r.noise);
    if (k) w.field_u("instructions_per_iteration", k->instructions);
    w.field_u("iterations", r.iterations);
    Frac pi = frac_reduce(r.per_iter[unsigned(c.agg)]);
    w.key("per_iteration").fixed(pi.num, pi.den, o.decimals);
    w.key("fraction").begin_array().inum(pi.num).num(pi.den).end_array();
    static constexpr Agg order[] = {Agg::min, Agg::median, Agg::avg, Agg::trimmed, Agg::max};
    for (Agg a : order) {
        Frac f = r.per_iter[unsigned(a)];
        w.key(agg_name(a)).fixed(f.num, f.den, o.decimals);
    }
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
    line->put('\n');
}

void result_table_header(const RunOptions& o, StrBuf* b) {
    const MeasureConfig& c = o.cfg;
    b->printf("pmulab run: %llu and %llu copies (%s), loop %llu, %u reps + %u warm-up, aggregate %s, "
              "interrupts %s, serialise %s\n",
              (unsigned long long)(c.basic ? 0 : c.unroll), (unsigned long long)(c.basic ? c.unroll : 2 * c.unroll),
              c.basic ? "basic mode" : "U/2U", (unsigned long long)c.loop, c.reps, c.warmup, agg_name(c.agg),
              irq_mode_name(c.irq), serialize_name(c.serialize));
    b->printf("%-14s %6s %-10s %-8s %4s %5s %4s %12s %12s %12s %12s\n", "bench", "size", "event", "counter", "cpu",
              "apic", "run", "per-iter", "min", "median", "max");
}

void result_table_row(const RunOptions& o, const MeasureResult& r, StrBuf* b) {
    const KernelInfo* k = r.bench->kernel;
    StrBuf size;
    if (k && k->buffer != KernelBuffer::none) put_size_suffix(size, r.bench->size);
    else size.put('-');
    b->printf("%-14s %6s %-10s %-8s %4u %5llu %4u", bench_name(*r.bench), size.c_str(), r.read->event, r.read->counter,
              r.cpu, (unsigned long long)r.apic_id, r.run);
    Frac cols[4] = {r.per_iter[unsigned(o.cfg.agg)], r.per_iter[unsigned(Agg::min)], r.per_iter[unsigned(Agg::median)],
                    r.per_iter[unsigned(Agg::max)]};
    for (Frac f : cols) {
        StrBuf v;
        put_frac(v, f, o.decimals);
        b->printf(" %12s", v.c_str());
    }
    // The flag of a disturbed result: the SMI count moved during its runs.
    if (r.noise && r.noise->smi_moved()) b->printf("  SMI+%llu", (unsigned long long)r.noise->smi_delta);
    b->put('\n');
}

}  // namespace pmulab
