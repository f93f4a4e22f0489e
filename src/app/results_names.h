// Names of results files: NNNN-<what>.jsonl / .csv in \pmulab\results, numbered
// one above the highest number already in the folder, so that a number is never
// used by two commands (pure logic: the EFI sink feeds it the folder's names).
#pragma once

#include "base/base.h"

namespace pmulab {

// The number prefix of "0042-info.jsonl" (42); -1 when `name` has none.
i64 result_number(StrView name);

// Collects the folder's names and hands out the next free number.
class ResultNumbering {
public:
    void see(StrView name);
    // One above the highest number seen (1 for an empty folder); -1 when the
    // numbers are exhausted (a folder with a 18-digit number in it).
    i64 next() const;

private:
    i64 highest_ = 0;
};

// "0042-info" into `out` (at least 4 digits, zero-padded).
void result_base_name(i64 number, StrView what, char* out, usize cap);

}  // namespace pmulab
