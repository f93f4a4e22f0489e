// The command layer: parses a pmulab command line and runs it against a
// Platform (the EFI application, or the host tests' simulated machine).
#pragma once

#include "pmulab/fmt.h"
#include "pmulab/hw.h"
#include "pmulab/records.h"

namespace pmulab {

// Documented exit statuses (README "Exit status").
enum ExitStatus : int {
    kExitOk = 0,
    kExitFailure = 1,      // the command ran and failed (hardware fault, measurement error)
    kExitUsage = 2,        // bad command line, option value, event spec or config line
    kExitUnsupported = 3,  // the CPU or firmware lacks what the command needs
    kExitInternal = 4,     // a bug in pmulab
};

int exit_status_for(Errc c);

class MeasurePlatform;  // pmulab/measure.h
class FileSource;       // pmulab/event_table.h

class Platform {
public:
    virtual Hw& hw() = 0;
    // Console text (and its mirrors: debug port, serial). Must accept any length.
    virtual void write(StrView text) = 0;
    // Firmware identity for metadata records; empty strings when unknown.
    virtual const char* firmware_vendor() { return ""; }
    virtual u32 firmware_revision() { return 0; }
    // The measurement engine's services (executable pages, kernel bodies, interrupt
    // masking); null where generated code cannot run.
    virtual MeasurePlatform* measure() { return nullptr; }
    // Wall-clock time as "YYYY-MM-DDTHH:MM:SS" (empty when unknown).
    virtual void now(char* buf, usize cap) {
        if (cap) buf[0] = 0;
    }
    // Results files; null when there are none (host tools, tests without files).
    virtual RecordSink* record_sink() { return nullptr; }
    // Files on pmulab's boot volume (event files, event lists); null when there are none.
    virtual FileSource* files() { return nullptr; }

protected:
    ~Platform() = default;
};

// Global options that apply to the whole invocation.
struct GlobalOptions {
    bool json = false;
    bool shutdown = false;
    bool help = false;
};

// Output helper: human text only in text mode, records only in JSON mode, errors in both.
class Out {
public:
    Out(Platform& p, bool json) : p_(p), json_(json) {}
    bool json() const { return json_; }
    // Text mode only.
    void text(const char* fmt, ...) __attribute__((format(printf, 2, 3)));
    void text_buf(const StrBuf& b) {
        if (!json_) p_.write(b.view());
    }
    // A JSON record (one complete line ending in '\n'): always to the results
    // files, and to the console in JSON mode. Commands emit their records in both
    // modes and their human text with text().
    void record(const StrBuf& line) {
        if (sink_) sink_->record(line.view());
        if (json_) p_.write(line.view());
    }
    void set_sink(RecordSink* s) { sink_ = s; }
    // Prefix for errors and warnings, e.g. "\pmulab\pmulab.cfg:3" (null: none).
    void set_context(const char* c) { context_ = c; }
    // Both modes: "pmulab: error: ..." or {"type":"error",...}.
    void error(const Error& e);
    void error_msg(Errc c, const char* fmt, ...) __attribute__((format(printf, 3, 4)));
    // Both modes: a warning that does not change the exit status.
    void warn(const char* fmt, ...) __attribute__((format(printf, 2, 3)));
    Platform& platform() { return p_; }

private:
    Platform& p_;
    bool json_;
    RecordSink* sink_ = nullptr;
    const char* context_ = nullptr;
};

// Runs one command line (argv[0] is the first word after the program name, i.e.
// the command). Global options (--json, --shutdown, --help) may appear anywhere.
// Returns an ExitStatus; sets *opts to the global options seen.
// `origin` (e.g. "\pmulab\pmulab.cfg:3") prefixes every error and warning.
int app_run(Platform& p, int argc, const char* const* argv, GlobalOptions* opts,
            const char* origin = nullptr);

// Checks a command line without running it: the command exists (global options
// are skipped). Used to reject a bad campaign before any of it runs.
Status app_check(int argc, const char* const* argv);

// Splits a command line into words: whitespace-separated, double quotes group,
// backslash escapes a quote. Returns false (with a message) on an unterminated quote.
struct ArgVec {
    Vec<char*> argv;
    Vec<char> storage;
    int argc() const { return int(argv.size()); }
};
Status split_command_line(StrView line, ArgVec* out);

}  // namespace pmulab
