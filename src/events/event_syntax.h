// The summary of the event syntax that `pmulab events` prints after its tables: one text
// per dialect, written once here. docs/pmu.md ("Event syntax") quotes each verbatim and
// a host test (tests/unit/events/test_event_syntax.cpp) checks that it still does, so the
// help, the tests and the documentation read the same text.
#pragma once

#include "events/events.h"

namespace pmulab {

// "Event syntax (...):\n  ...\n", ending in a newline. amd and amd_zen share one text.
const char* event_syntax_help(EventDialect d);

}  // namespace pmulab
