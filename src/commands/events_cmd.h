// `pmulab events` (src/commands/cmd_events.cpp): the events each CPU can count, and
// `events --check SPEC,...`: where a set of events goes (counters, groups/runs).
#pragma once

#include "app/out.h"
#include "app/args.h"

namespace pmulab {

int cmd_events(Out& out, Args& args);
extern const char kEventsHelp[];

}  // namespace pmulab
