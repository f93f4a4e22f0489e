// `pmulab events` (src/core/cmd_events.cpp): the events each CPU can count, and
// `events --check SPEC,...`: where a set of events goes (counters, groups/runs).
#pragma once

#include "pmulab/app.h"
#include "pmulab/args.h"

namespace pmulab {

int cmd_events(Out& out, Args& args);
extern const char kEventsHelp[];

}  // namespace pmulab
