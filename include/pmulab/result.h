// Errors are values: Result<T> carries either a T or an Error with a message a
// person can act on. No exceptions anywhere in pmulab.
#pragma once

#include "pmulab/base.h"

namespace pmulab {

// Broad classes of failure; the exit status of a command is derived from these.
enum class Errc : u8 {
    ok = 0,
    invalid_argument,  // bad command line, event spec, config line, dump file
    unsupported,       // the CPU/firmware lacks the feature
    fault,             // #GP/#UD during MSR or PMC access
    io,                // file system / firmware service failure
    not_found,
    internal,
};

const char* errc_name(Errc c);

struct Error {
    Errc code = Errc::internal;
    char msg[240] = {};
    // Hardware fault details where code == Errc::fault.
    u8 vector = 0;

    static Error make(Errc c, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
};

template <typename T> class [[nodiscard]] Result {
public:
    Result(const T& v) : value_(v), ok_(true) {}  // NOLINT(implicit)
    Result(T&& v) : value_(move(v)), ok_(true) {}  // NOLINT(implicit)
    Result(const Error& e) : err_(e), ok_(false) {}  // NOLINT(implicit)
    bool ok() const { return ok_; }
    explicit operator bool() const { return ok_; }
    T& value() { return value_; }
    const T& value() const { return value_; }
    T& operator*() { return value_; }
    T* operator->() { return &value_; }
    const Error& error() const { return err_; }
    T value_or(const T& d) const { return ok_ ? value_ : d; }

private:
    T value_{};
    Error err_{};
    bool ok_ = false;
};

template <> class [[nodiscard]] Result<void> {
public:
    Result() : ok_(true) {}
    Result(const Error& e) : err_(e), ok_(false) {}  // NOLINT(implicit)
    bool ok() const { return ok_; }
    explicit operator bool() const { return ok_; }
    const Error& error() const { return err_; }

private:
    Error err_{};
    bool ok_ = true;
};

using Status = Result<void>;

inline Status ok_status() { return Status(); }

#define PMULAB_TRY(expr)                               \
    do {                                               \
        auto pmulab_try_r_ = (expr);                   \
        if (!pmulab_try_r_.ok()) return pmulab_try_r_.error(); \
    } while (0)

}  // namespace pmulab
