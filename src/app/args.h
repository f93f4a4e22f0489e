// The words of a command line, one at a time; app/options.h reads them against a
// command's declared options ("--name value", "--name=value", flags, positionals).
#pragma once

#include "base/result.h"

namespace pmulab {

class Args {
public:
    Args(int argc, const char* const* argv) : argc_(argc), argv_(argv) {}

    // Iterates over words: done() at the end.
    bool done() const { return i_ >= argc_; }
    const char* peek() const { return done() ? nullptr : argv_[i_]; }
    const char* take() { return done() ? nullptr : argv_[i_++]; }

    // The current word starts with "--" (or is "-h").
    bool at_option() const;

private:
    int argc_;
    const char* const* argv_;
    int i_ = 0;
};

}  // namespace pmulab
