// LAVA output mode (`pmulab --lava`): test-case lines that a LAVA `monitors` test
// action (or LAVA's own test-signal parser) records without glue, one per selftest
// check and per measurement, beside the normal output. docs/lava.md has the pattern.
//
//   <LAVA_SIGNAL_TESTCASE TEST_CASE_ID=run/nop/-/tsc/cpu0 RESULT=pass MEASUREMENT=128.00 UNITS=ticks/iteration>
//   <LAVA_SIGNAL_TESTCASE TEST_CASE_ID=selftest/TSC_advances/cpu0 RESULT=pass>
//
// Values hold no spaces, '=', '<' or '>' (anything else is replaced by '_', runs of
// them squashed), so LAVA's key=value split and a `[^ >]+` group take them whole.
#pragma once

#include "base/fmt.h"
#include "base/value.h"

namespace pmulab {

// The LAVA line for one pmulab record ({"type":"result"} or {"type":"check"}),
// appended to `out` with its newline. Returns false (nothing appended) for records of
// other types or without the fields the line needs.
bool lava_line_for_record(const Value& rec, StrBuf* out);

// Around each command: "pmulab-lava: begin COMMAND" before it, and after it the
// command's exit status as a test case (COMMAND/exit-status, pass when 0) and
// "pmulab-lava: end COMMAND status N" (the monitor's start and end strings).
void lava_begin_line(const char* command, StrBuf* out);
void lava_end_lines(const char* command, int status, StrBuf* out);

}  // namespace pmulab
