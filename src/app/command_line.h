// Command lines: splitting a line into words (campaign files, the UEFI shell, the
// boot entry) and the global options every command takes.
#pragma once

#include "base/result.h"

namespace pmulab {

// Global options that apply to the whole invocation.
struct GlobalOptions {
    bool json = false;
    bool lava = false;  // --lava: LAVA test-case lines (app/lava.h)
    bool shutdown = false;
    bool help = false;
    bool trace_msr = false;  // --trace-msr
};

// Splits a command line into words: whitespace-separated, double quotes group,
// backslash escapes a quote. Returns false (with a message) on an unterminated quote.
struct ArgVec {
    Vec<char*> argv;
    Vec<char> storage;
    int argc() const { return int(argv.size()); }
};
Status split_command_line(StrView line, ArgVec* out);

}  // namespace pmulab
