// Results files: every command that measures or reads hardware also writes its
// records (the same JSON Lines as --json) and a CSV summary through a RecordSink
// (on EFI: \pmulab\results\NNNN-<what>.jsonl/.csv on the boot volume).
#pragma once

#include "base/fmt.h"
#include "base/result.h"

namespace pmulab {

class Platform;
class Out;

class RecordSink {
public:
    // Starts the files of one command (`what` names them, e.g. "info"). Returns false
    // (after a warning through `out`) when results cannot be written; records then go
    // to the console only. `out` stays valid until end().
    virtual bool begin(const char* what, Out& out) = 0;
    // One JSON object, newline-terminated.
    virtual void record(StrView json_line) = 0;
    // Flushes and closes; writes the CSV summary.
    virtual void end() = 0;
    // Where the last files went, e.g. "\pmulab\results\0003-info.jsonl" (empty if none).
    virtual const char* last_path() const = 0;

protected:
    ~RecordSink() = default;
};

// One flattened scalar of a JSON record: "pmu.gp_counters" -> "4"; arrays of
// scalars become "a;b;c"; strings are unquoted.
struct FlatField {
    StrBuf key;
    StrBuf value;
};

// Parses one JSON object (pmulab's own output subset: objects, arrays, strings,
// numbers, true/false/null) and flattens it. Fails on malformed input.
Status json_flatten(StrView json, Vec<FlatField>* out);

// CSV (RFC 4180) of the records of the first non-meta, non-diagnostic type
// ("cpu", "result", ...): header = union of flattened keys in order of first
// appearance. Records of other types are left out of the CSV (they stay in JSONL).
Status records_to_csv(const Vec<StrBuf>& json_lines, StrBuf* csv);

// The metadata record that starts every results file: version, CPU identity,
// microcode revision, firmware, time, command line, counter method, hypervisor.
void build_meta_record(Platform& p, const char* command_line, StrBuf* line);

}  // namespace pmulab
