// pmulab.cfg: one pmulab command line per line; '#' starts a comment (outside
// quotes); blank lines are ignored.
#pragma once

#include "pmulab/app.h"

namespace pmulab {

struct ConfigLine {
    u32 line_no = 0;
    ArgVec args;
};

// Parses the whole file; the first bad line fails the parse with "NAME:LINE: reason".
Status parse_config(StrView text, const char* name, Vec<ConfigLine>* out);

}  // namespace pmulab
