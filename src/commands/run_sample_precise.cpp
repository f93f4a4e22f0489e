// Precise samples' data addresses and latencies per bucket (run_sample_precise.h).
#include "commands/run_sample_precise.h"

namespace pmulab {

namespace {

// The scratch area holding addr, and the offset from its register; -1 when none does.
i32 area_of(const MeasureResult& r, u64 addr, i64* offset) {
    for (unsigned a = 0; a < 5; ++a) {
        const u64 half = r.area_size[a] / 2;
        if (!r.area_size[a] || addr < r.area_reg[a] - half || addr - (r.area_reg[a] - half) >= r.area_size[a]) continue;
        *offset = i64(addr - r.area_reg[a]);
        return i32(a);
    }
    *offset = i64(addr);
    return -1;
}

// A place as one sortable key: the area (outside: after every area) then the offset.
struct Key {
    i32 area;
    i64 offset;
};
bool key_less(const Key& a, const Key& b) {
    const i32 aa = a.area < 0 ? 5 : a.area, ba = b.area < 0 ? 5 : b.area;
    if (aa != ba) return aa < ba;
    return a.area < 0 ? u64(a.offset) < u64(b.offset) : a.offset < b.offset;
}

// Heap sort of keys (no recursion; the log holds up to SampleCounts::kPreciseLog).
void sift(Key* k, usize n, usize i) {
    for (;;) {
        usize l = 2 * i + 1, m = i;
        if (l < n && key_less(k[m], k[l])) m = l;
        if (l + 1 < n && key_less(k[m], k[l + 1])) m = l + 1;
        if (m == i) return;
        Key t = k[i];
        k[i] = k[m];
        k[m] = t;
        i = m;
    }
}
void sort_keys(Key* k, usize n) {
    for (usize i = n / 2; i-- > 0;) sift(k, n, i);
    for (usize e = n; e > 1; --e) {
        Key t = k[0];
        k[0] = k[e - 1];
        k[e - 1] = t;
        sift(k, e - 1, 0);
    }
}

void put_place(StrBuf& t, const PreciseBucket::Place& p) {
    if (p.area < 0) t.printf("0x%llx", (unsigned long long)p.offset);
    else if (p.offset < 0) t.printf("%s-%llu", kDataAreaNames[p.area], (unsigned long long)abs_u64(p.offset));
    else t.printf("%s+%llu", kDataAreaNames[p.area], (unsigned long long)p.offset);
}

void count_source(const MemSourceInfo& m, PreciseBucket* out) {
    if (m.source == MemSource::none || unsigned(m.source) >= kMemSourceCount) return;
    ++out->source[unsigned(m.source)];
    ++out->with_source;
    out->stlb_miss += m.stlb_miss;
    out->locked += m.locked;
}

void source_json(JsonWriter& w, const PreciseBucket& b) {
    if (!b.with_source) return;
    w.key("data_source").begin_object();
    for (unsigned i = 0; i < kMemSourceCount; ++i)
        if (b.source[i]) w.field_u(mem_source_name(MemSource(i)), b.source[i]);
    w.end_object();
    if (b.stlb_miss) w.field_u("stlb_miss", b.stlb_miss);
    if (b.locked) w.field_u("locked", b.locked);
}

void source_text(StrBuf& t, const PreciseBucket& b) {
    if (!b.with_source) return;
    t.put(StrView("  source"));
    const char* sep = " ";
    for (unsigned i = 0; i < kMemSourceCount; ++i)
        if (b.source[i]) {
            t.printf("%s%s %llu", sep, mem_source_name(MemSource(i)), (unsigned long long)b.source[i]);
            sep = ", ";
        }
    if (b.stlb_miss) t.printf(", stlb_miss %llu", (unsigned long long)b.stlb_miss);
    if (b.locked) t.printf(", locked %llu", (unsigned long long)b.locked);
}

}  // namespace

Status precise_bucket(const SampleCounts& c, CodeBlock block, usize offset, const MeasureResult& r,
                      PreciseBucket* out) {
    *out = PreciseBucket();
    Vec<Key> keys;
    Vec<i64> lat, scratch;
    for (usize i = 0; i < c.log_n; ++i) {
        const PreciseEntry& e = c.log[i];
        if (e.block != block || e.offset != offset) continue;
        if (e.has_data) {
            Key& k = keys.emplace();
            k.area = area_of(r, e.data_addr, &k.offset);
        }
        if (e.has_latency) lat.push(i64(e.latency));
        count_source(e.source, out);
    }
    out->with_data = keys.size();
    sort_keys(keys.data(), keys.size());
    for (usize i = 0; i < keys.size();) {
        usize j = i;
        while (j < keys.size() && keys[j].area == keys[i].area && keys[j].offset == keys[i].offset) ++j;
        if (out->ndata < PreciseBucket::kMaxData) out->data[out->ndata++] = {keys[i].area, keys[i].offset, j - i};
        else ++out->data_more;
        i = j;
    }
    if (lat.size()) {
        scratch.resize(lat.size());
        Result<Summary> s = summarize(lat.data(), u32(lat.size()), scratch.data());
        if (!s.ok()) return s.error().with_context("precise samples: the latencies");
        out->latency = s.value();
    }
    return ok_status();
}

void precise_bucket_json(JsonWriter& w, const PreciseBucket& b) {
    if (b.with_data) {
        w.key("data").begin_array();
        for (usize i = 0; i < b.ndata; ++i) {
            const PreciseBucket::Place& p = b.data[i];
            w.begin_object();
            if (p.area < 0) w.field_hex("addr", u64(p.offset));
            else w.field("reg", kDataAreaNames[p.area]).field_i("offset", p.offset);
            w.field_u("count", p.count).end_object();
        }
        w.end_array();
        if (b.data_more) w.field_u("data_more", b.data_more);
    }
    if (b.latency.n) {
        w.key("latency").begin_object().field_u("n", b.latency.n);
        w.key("min").fixed(b.latency.min.num, b.latency.min.den, 0);
        w.key("median").fixed(b.latency.median.num, b.latency.median.den, 1);
        w.key("max").fixed(b.latency.max.num, b.latency.max.den, 0);
        w.end_object();
    }
    source_json(w, b);
}

void precise_bucket_text(StrBuf& t, const PreciseBucket& b) {
    for (usize i = 0; i < b.ndata && i < 3; ++i) {
        t.put(' ');
        put_place(t, b.data[i]);
        t.printf(" (%llu)", (unsigned long long)b.data[i].count);
    }
    if (b.ndata > 3 || b.data_more)
        t.printf(" +%llu more", (unsigned long long)(b.ndata - (b.ndata > 3 ? 3 : b.ndata) + b.data_more));
    if (b.latency.n) {
        t.put(StrView("  latency "));
        put_frac(t, b.latency.min, 0);
        t.put('/');
        put_frac(t, b.latency.median, 1);
        t.put('/');
        put_frac(t, b.latency.max, 0);
    }
    source_text(t, b);
}

}  // namespace pmulab
