#include "app/results_names.h"

#include "base/fmt.h"

namespace pmulab {

namespace {

constexpr i64 kMaxNumber = 999999999999999999;  // 18 digits: fits an i64 with room
constexpr usize kMaxDigits = 18;

// Digits before the '-': their count (0 when none or no '-'), the value in *n
// when the count is at most kMaxDigits.
usize number_prefix(StrView name, i64* n) {
    *n = 0;
    usize i = 0;
    for (; i < name.len && name[i] >= '0' && name[i] <= '9'; ++i)
        if (i < kMaxDigits) *n = *n * 10 + (name[i] - '0');
    if (i == 0 || i >= name.len || name[i] != '-') return 0;
    return i;
}

}  // namespace

i64 result_number(StrView name) {
    i64 n = 0;
    usize digits = number_prefix(name, &n);
    return digits == 0 || digits > kMaxDigits ? -1 : n;
}

void ResultNumbering::see(StrView name) {
    i64 n = 0;
    usize digits = number_prefix(name, &n);
    if (digits > kMaxDigits) n = kMaxNumber;  // no number above it is known to be free
    if (digits && n > highest_) highest_ = n;
}

i64 ResultNumbering::next() const { return highest_ >= kMaxNumber ? -1 : highest_ + 1; }

void result_base_name(i64 number, StrView what, char* out, usize cap) {
    format_to(out, cap, "%04lld-%.*s", (long long)number, int(what.len), what.ptr);
}

}  // namespace pmulab
