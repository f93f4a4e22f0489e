#include "measure/stats.h"

namespace pmulab {

namespace {

Error overflow_error() {
    return Error::make(Errc::internal,
                       "a measurement value is too large for exact 64-bit arithmetic (lower --unroll/--loop/--reps)");
}

}  // namespace

u64 gcd_u64(u64 a, u64 b) {
    while (b) {
        u64 t = a % b;
        a = b;
        b = t;
    }
    return a;
}

Frac frac_reduce(Frac f) {
    if (f.den == 0) return f;
    u64 g = gcd_u64(abs_u64(f.num), f.den);
    if (g > 1) {
        f.num = f.num < 0 ? -i64(abs_u64(f.num) / g) : i64(abs_u64(f.num) / g);
        f.den /= g;
    }
    if (f.num == 0) f.den = 1;
    return f;
}

int frac_cmp(Frac a, Frac b) {
    a = frac_reduce(a);
    b = frac_reduce(b);
    // a.num/a.den <=> b.num/b.den  <=>  a.num*b.den <=> b.num*a.den (dens > 0).
    // Widening signed multiplies (inline, no runtime library): every Frac pmulab
    // produces has den <= INT64_MAX, so both factors fit in i64.
    auto clamp = [](u64 d) { return i64(d > u64(INT64_MAX) ? u64(INT64_MAX) : d); };
    __int128 l = __int128(a.num) * __int128(clamp(b.den));
    __int128 r = __int128(b.num) * __int128(clamp(a.den));
    return l < r ? -1 : (l > r ? 1 : 0);
}

Result<Frac> frac_sub_div(Frac a, Frac b, u64 k) {
    if (a.den == 0 || b.den == 0 || k == 0)
        return Error::make(Errc::internal, "division by zero in a measurement aggregate");
    a = frac_reduce(a);
    b = frac_reduce(b);
    // a - b = (a.num*(L/a.den) - b.num*(L/b.den)) / L with L = lcm(a.den, b.den).
    u64 g = gcd_u64(a.den, b.den);
    u64 l;
    if (__builtin_mul_overflow(a.den / g, b.den, &l)) return overflow_error();
    i64 x, y, n;
    if (l > u64(INT64_MAX)) return overflow_error();
    if (__builtin_mul_overflow(a.num, i64(l / a.den), &x)) return overflow_error();
    if (__builtin_mul_overflow(b.num, i64(l / b.den), &y)) return overflow_error();
    if (__builtin_sub_overflow(x, y, &n)) return overflow_error();
    // Divide by k: reduce n/k first to keep the denominator small.
    u64 g2 = gcd_u64(abs_u64(n), k);
    if (g2 > 1) {
        n = n < 0 ? -i64(abs_u64(n) / g2) : i64(abs_u64(n) / g2);
        k /= g2;
    }
    u64 den;
    if (__builtin_mul_overflow(l, k, &den) || den > u64(INT64_MAX)) return overflow_error();
    return frac_reduce(Frac{n, den});
}

Frac frac_abs(Frac a) {
    if (a.num < 0) a.num = -a.num;
    return a;
}

bool frac_is_integer(Frac f) { return f.den != 0 && abs_u64(f.num) % f.den == 0; }

void put_frac(StrBuf& out, Frac f, unsigned decimals) { put_fixed(out, f.num, f.den, decimals); }

const char* agg_name(Agg a) {
    switch (a) {
        case Agg::min: return "min";
        case Agg::median: return "median";
        case Agg::avg: return "avg";
        case Agg::trimmed: return "trimmed";
        case Agg::max: return "max";
    }
    return "?";
}

bool parse_agg(StrView s, Agg* out) {
    static constexpr Agg all[] = {Agg::min, Agg::median, Agg::avg, Agg::trimmed, Agg::max};
    for (Agg a : all) {
        if (s.eq(StrView(agg_name(a)))) {
            *out = a;
            return true;
        }
    }
    if (s.eq(StrView("mean"))) {
        *out = Agg::avg;
        return true;
    }
    return false;
}

Frac Summary::get(Agg a) const {
    switch (a) {
        case Agg::min: return min;
        case Agg::median: return median;
        case Agg::avg: return avg;
        case Agg::trimmed: return trimmed;
        case Agg::max: return max;
    }
    return median;
}

void sort_i64(i64* a, usize n) {
    if (n < 2) return;
    auto sift = [a](usize root, usize end) {
        while (2 * root + 1 < end) {
            usize child = 2 * root + 1;
            if (child + 1 < end && a[child] < a[child + 1]) ++child;
            if (!(a[root] < a[child])) return;
            i64 t = a[root];
            a[root] = a[child];
            a[child] = t;
            root = child;
        }
    };
    for (usize i = n / 2; i-- > 0;) sift(i, n);
    for (usize end = n - 1; end > 0; --end) {
        i64 t = a[0];
        a[0] = a[end];
        a[end] = t;
        sift(0, end);
    }
}

Result<Summary> summarize(const i64* values, u32 n, i64* v) {
    if (n == 0) return Error::make(Errc::internal, "no measurements to summarise");
    for (u32 i = 0; i < n; ++i) v[i] = values[i];
    sort_i64(v, n);
    Summary s;
    s.n = n;
    s.min = Frac{v[0], 1};
    s.max = Frac{v[n - 1], 1};
    if (n % 2) {
        s.median = Frac{v[n / 2], 1};
    } else {
        i64 sum;
        if (__builtin_add_overflow(v[n / 2 - 1], v[n / 2], &sum)) return overflow_error();
        s.median = frac_reduce(Frac{sum, 2});
    }
    i64 total = 0;
    for (u32 i = 0; i < n; ++i)
        if (__builtin_add_overflow(total, v[i], &total)) return overflow_error();
    s.avg = frac_reduce(Frac{total, n});
    u32 drop = trimmed_drop(n);
    i64 tsum = 0;
    for (u32 i = drop; i < n - drop; ++i)
        if (__builtin_add_overflow(tsum, v[i], &tsum)) return overflow_error();
    s.trimmed = frac_reduce(Frac{tsum, u64(n - 2 * drop)});
    return s;
}

}  // namespace pmulab
