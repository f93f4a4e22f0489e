#include "app/args.h"

#include "base/fmt.h"

namespace pmulab {

bool Args::option(const char* name, const char** value, Status* err) {
    if (done()) return false;
    StrView w(argv_[i_]);
    StrView n(name);
    if (w.eq(n)) {
        ++i_;
        if (done()) {
            *value = nullptr;
            *err = Error::make(Errc::invalid_argument, "option %s needs a value", name);
            return true;
        }
        *value = argv_[i_++];
        return true;
    }
    if (w.len > n.len && w.starts_with(n) && w[n.len] == '=') {
        *value = argv_[i_++] + n.len + 1;
        return true;
    }
    return false;
}

bool Args::flag(const char* name) {
    if (done() || !str_eq(argv_[i_], name)) return false;
    ++i_;
    return true;
}

bool Args::at_option() const {
    if (done()) return false;
    StrView w(argv_[i_]);
    return w.starts_with("--") || w.eq("-h");
}

Result<u64> parse_uint_option(const char* option, const char* value, u64 min, u64 max, bool allow_suffix) {
    u64 v = 0;
    if (!value || !parse_u64(StrView(value), &v, allow_suffix))
        return Error::make(Errc::invalid_argument, "%s: '%s' is not a number%s", option, value ? value : "",
                           allow_suffix ? " (suffixes K, M, G allowed)" : "");
    if (v < min || v > max)
        return Error::make(Errc::invalid_argument, "%s: %llu is out of range %llu..%llu", option, (unsigned long long)v,
                           (unsigned long long)min, (unsigned long long)max);
    return v;
}

}  // namespace pmulab
