// Exact statistics over repeated measurements: no floating point anywhere.
//
// Every aggregate is a rational number num/den (Frac) computed with integer
// arithmetic and checked for overflow; it is printed as fixed-point decimal only
// at the very end (put_fixed / JsonWriter::fixed).
//
// Aggregates over n values v[0..n) sorted ascending:
//   min      v[0]
//   median   v[n/2] for odd n, (v[n/2-1] + v[n/2]) / 2 for even n
//   avg      the arithmetic mean, sum / n
//   trimmed  the mean of the values left after dropping the floor(n/5) smallest and
//            the floor(n/5) largest (nanoBench's "average of the 20-80 % range");
//            for n < 5 nothing is dropped and it equals avg
//   max      v[n-1]
#pragma once

#include "base/fmt.h"
#include "base/result.h"

namespace pmulab {

// An exact rational value num/den with den > 0.
struct Frac {
    i64 num = 0;
    u64 den = 1;
};

// The greatest common divisor (0 when both are 0), and |v| without overflow.
u64 gcd_u64(u64 a, u64 b);
constexpr u64 abs_u64(i64 v) { return v < 0 ? u64(0) - u64(v) : u64(v); }

// Lowest terms (den stays > 0).
Frac frac_reduce(Frac f);
// Exact comparison: -1, 0, 1. Uses 128-bit products (no division).
int frac_cmp(Frac a, Frac b);
inline bool frac_eq(Frac a, Frac b) { return frac_cmp(a, b) == 0; }
// a - b, then divided by k (k > 0). Errors on overflow.
Result<Frac> frac_sub_div(Frac a, Frac b, u64 k);
// |a|.
Frac frac_abs(Frac a);
// Whether the value is an integer (den divides num).
bool frac_is_integer(Frac f);
// Prints num/den as fixed-point with `decimals` digits (rounded half away from zero).
void put_frac(StrBuf& out, Frac f, unsigned decimals);

enum class Agg : u8 { min, median, avg, trimmed, max };
inline constexpr unsigned kAggCount = 5;
const char* agg_name(Agg a);
// Accepts min, median, avg (also mean), trimmed, max.
bool parse_agg(StrView s, Agg* out);

struct Summary {
    u32 n = 0;
    Frac min, median, avg, trimmed, max;
    Frac get(Agg a) const;
};

// How many values the trimmed mean drops at each end for n values.
constexpr u32 trimmed_drop(u32 n) { return n / 5; }

// Summarises n >= 1 signed values. `scratch` must hold n values (it receives the
// sorted copy); `values` is not modified. Errors: n == 0, sum overflow.
Result<Summary> summarize(const i64* values, u32 n, i64* scratch);

// In-place ascending sort (heap sort: O(n log n), no recursion, no allocation).
void sort_i64(i64* a, usize n);

}  // namespace pmulab
