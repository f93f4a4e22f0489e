// Errors are values: Result<T> carries either a T or an Error with a message a
// person can act on. No exceptions anywhere in pmulab.
//
//     Result<u64> read_counter(...);
//     u64 v = PMULAB_TRY(read_counter(...));              // yields the value, or returns the error
//     PMULAB_TRY(hw.wrmsr(msr, v));                       // Status: a statement
//     PMULAB_TRY_CTX(session.save(t), "CPU %u", cpu);     // on error: "CPU 3: <message>"
//     out.error(r.error().with_context("CPU %u", cpu));   // the same, reported
//
// A Result holds the value or the error, never both (a union): a successful
// Result<u64> constructs no Error, so success costs what the value costs.
#pragma once

#include <stdarg.h>

#include "base/base.h"

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
    // Holds the longest message pmulab builds (an unknown event name inside a spec
    // list with its context is ~330 characters; tests/unit/events checks that no
    // message from the fuzz corpora reaches this size).
    static constexpr usize kMsgMax = 512;
    Errc code = Errc::internal;
    // Hardware fault details where code == Errc::fault, or where has_vector says so
    // (user code that raised an exception: a usage error with its vector, run --code).
    u8 vector = 0;
    bool has_vector = false;
    char msg[kMsgMax] = {};

    static Error make(Errc c, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
    static Error vmake(Errc c, const char* fmt, va_list ap);
    // The same error with its message prefixed by a context and ": " ("CPU 3: WRMSR
    // 0x186 ... raised #GP"); code and vector are kept. The one way to add context.
    Error with_context(const char* fmt, ...) const __attribute__((format(printf, 2, 3)));
};

template <typename T> class [[nodiscard]] Result {
public:
    Result(const T& v) : ok_(true) { new (&value_) T(v); }         // NOLINT(implicit)
    Result(T&& v) : ok_(true) { new (&value_) T(move(v)); }        // NOLINT(implicit)
    Result(const Error& e) : ok_(false) { new (&err_) Error(e); }  // NOLINT(implicit)
    Result(const Result& o) requires requires(const T& t) { T(t); } : ok_(o.ok_) {
        if (ok_) new (&value_) T(o.value_);
        else new (&err_) Error(o.err_);
    }
    Result(Result&& o) : ok_(o.ok_) {
        if (ok_) new (&value_) T(move(o.value_));
        else new (&err_) Error(o.err_);
    }
    Result& operator=(const Result& o) requires requires(const T& t) { T(t); }
    {
        if (this != &o) {
            reset();
            ok_ = o.ok_;
            if (ok_) new (&value_) T(o.value_);
            else new (&err_) Error(o.err_);
        }
        return *this;
    }
    Result& operator=(Result&& o) {
        if (this != &o) {
            reset();
            ok_ = o.ok_;
            if (ok_) new (&value_) T(move(o.value_));
            else new (&err_) Error(o.err_);
        }
        return *this;
    }
    ~Result() { reset(); }

    bool ok() const { return ok_; }
    explicit operator bool() const { return ok_; }
    T& value() { return value_; }
    const T& value() const { return value_; }
    T& operator*() { return value_; }
    T* operator->() { return &value_; }
    // The error; only meaningful when !ok().
    const Error& error() const { return ok_ ? no_error() : err_; }
    T value_or(const T& d) const { return ok_ ? value_ : d; }
    // For PMULAB_TRY: moves the value out (copies it from a const Result).
    T release_value() { return move(value_); }
    const T& release_value() const { return value_; }

private:
    void reset() {
        if (ok_) value_.~T();
        ok_ = false;
    }
    static const Error& no_error() {
        static const Error e = {};
        return e;
    }
    union {
        T value_;
        Error err_;
    };
    bool ok_;
};

template <> class [[nodiscard]] Result<void> {
public:
    Result() : ok_(true) {}
    Result(const Error& e) : ok_(false) { new (&err_) Error(e); }  // NOLINT(implicit)
    Result(const Result& o) : ok_(o.ok_) {
        if (!ok_) new (&err_) Error(o.err_);
    }
    Result& operator=(const Result& o) {
        ok_ = o.ok_;
        if (!ok_) new (&err_) Error(o.err_);
        return *this;
    }
    bool ok() const { return ok_; }
    explicit operator bool() const { return ok_; }
    const Error& error() const { return ok_ ? no_error() : err_; }
    void release_value() const {}

private:
    static const Error& no_error() {
        static const Error e = {};
        return e;
    }
    union {
        char none_;
        Error err_;
    };
    bool ok_;
};

using Status = Result<void>;

inline Status ok_status() { return Status(); }

// An expression: the value of a successful Result (nothing for a Status), or, on
// failure, returns the error from the enclosing function (whose return type must be
// constructible from Error: a Result, a Status).
#define PMULAB_TRY(expr)                                                        \
    ({                                                                          \
        auto&& pmulab_try_r_ = (expr);                                          \
        if (!pmulab_try_r_.ok()) return ::pmulab::Error(pmulab_try_r_.error()); \
        pmulab_try_r_.release_value();                                          \
    })

// As PMULAB_TRY, adding a context to the error's message: PMULAB_TRY_CTX(r, "CPU %u", i).
#define PMULAB_TRY_CTX(expr, ...)                                                        \
    ({                                                                                   \
        auto&& pmulab_try_r_ = (expr);                                                   \
        if (!pmulab_try_r_.ok()) return pmulab_try_r_.error().with_context(__VA_ARGS__); \
        pmulab_try_r_.release_value();                                                   \
    })

}  // namespace pmulab
