// pmulab.cfg: one pmulab command line per line; '#' starts a comment (outside
// quotes); blank lines are ignored.
#pragma once

#include "app/command_line.h"

namespace pmulab {

struct ConfigLine {
    u32 line_no = 0;
    ArgVec args;
    bool directive = false;  // global options only, e.g. "--shutdown"
    // Set when the line cannot be split into words (e.g. an unterminated quote).
    bool bad = false;
    char error[200] = {};
};

// Parses the whole file. A line that cannot be split into words is kept with
// bad = true and its reason (so that every bad line can be reported); the parse
// itself fails only for a file that is not text (NUL bytes, non-ASCII), naming
// the line: "NAME:LINE: reason".
Status parse_config(StrView text, const char* name, Vec<ConfigLine>* out);

}  // namespace pmulab
