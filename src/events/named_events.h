// The named events of each dialect (events.h "NAME[:MODS]"): the tables and the parser
// of a name token. Internal to src/events (list_named_events is public, in events.h).
#pragma once

#include "events/spec_lexer.h"

namespace pmulab {

// Parses a NAME[:MODS] token (NetBurst: NAME[.MASK[+MASK]...][:MODS]) of site.dialect.
Status parse_named(const spec::SpecSite& site, StrView tok, Event* e);

// AMD's counters outside the PerfEvtSel/PerfCtr pairs (regs::amd::FixedLike):
// "IRPerfCount", "APERF", "MPERF"; "?" for anything else.
const char* amd_fixed_like_name(int counter);

}  // namespace pmulab
