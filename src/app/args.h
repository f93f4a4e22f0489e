// Option parsing for commands: "--name value", "--name=value", flags, positionals.
// Every unknown option or bad value is an error naming it.
#pragma once

#include "base/result.h"

namespace pmulab {

class Args {
public:
    Args(int argc, const char* const* argv) : argc_(argc), argv_(argv) {}

    // Iterates over words. next() returns false at the end.
    bool done() const { return i_ >= argc_; }
    const char* peek() const { return done() ? nullptr : argv_[i_]; }
    const char* take() { return done() ? nullptr : argv_[i_++]; }

    // If the current word is option `name` (e.g. "--cpu"), consumes it and its value
    // ("--cpu 3" or "--cpu=3") and returns true; *value is null and *err set when the
    // value is missing.
    bool option(const char* name, const char** value, Status* err);
    // If the current word is the flag `name`, consumes it.
    bool flag(const char* name);
    // The current word starts with "--" (or is "-h").
    bool at_option() const;

private:
    int argc_;
    const char* const* argv_;
    int i_ = 0;
};

// Value parsers with errors naming the option.
Result<u64> parse_uint_option(const char* option, const char* value, u64 min, u64 max, bool allow_suffix = false);

}  // namespace pmulab
