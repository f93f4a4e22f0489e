// Results files: every command that measures or reads hardware also writes its
// records (the same JSON Lines as --json) and a CSV summary through a RecordSink
// (on EFI: \pmulab\results\NNNN-<what>.jsonl/.csv on the boot volume).
#pragma once

#include "base/fmt.h"
#include "base/result.h"
#include "base/value.h"

namespace pmulab {

class Platform;
class Out;

class RecordSink {
public:
    // Starts the files of one command (`what` names them, e.g. "info"). Returns false
    // (after a warning through `out`) when results cannot be written; records then go
    // to the console only. `out` stays valid until end().
    virtual bool begin(const char* what, Out& out) = 0;
    // One record (an object); the sink writes it as a JSON Lines record.
    virtual void record(const Value& rec) = 0;
    // Flushes and closes; writes the CSV summary.
    virtual void end() = 0;
    // Where the last files went, e.g. "\pmulab\results\0003-info.jsonl" (empty if none).
    virtual const char* last_path() const = 0;
    // A text file beside the command's records, NNNN-<what>.<ext> with the number of its
    // .jsonl (the report's "summary.txt": docs/report.md), written whole and flushed; only
    // between a successful begin() and end(). False when there is none (after a warning
    // through `out` when writing failed).
    virtual bool write_text(const char* ext, StrView text) {
        (void)ext, (void)text;
        return false;
    }

protected:
    ~RecordSink() = default;
};

// One flattened scalar of a JSON record: "pmu.gp_counters" -> "4"; arrays of
// scalars become "a;b;c"; strings are unquoted.
struct FlatField {
    StrBuf key;
    StrBuf value;
};

// Flattens one record (an object): nested objects give dotted keys, null an empty
// value. Fails on a record that is not an object or holds an array of arrays/objects.
Status record_flatten(const Value& rec, Vec<FlatField>* out);

// The CSV (RFC 4180) summary of a command's records, fed record by record: the records
// of the first non-meta, non-diagnostic type ("cpu", "result", ...); header = union of
// flattened keys in order of first appearance. Records of other types are left out
// (they stay in JSONL).
class CsvSummary {
public:
    void add(const Value& rec);
    // The CSV text, or the first record that could not be flattened.
    Status write(StrBuf* csv) const;
    void clear();

private:
    Vec<Vec<FlatField>> rows_;
    StrBuf type_;
    bool failed_ = false;
    Error error_;
};

// The metadata record that starts every results file: version, CPU identity,
// microcode revision, firmware, time, command line, counter method, hypervisor.
Value build_meta_record(Platform& p, const char* command_line);

}  // namespace pmulab
