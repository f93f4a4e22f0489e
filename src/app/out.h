// Command output: human text in text mode, JSON records in JSON mode and to the
// results files, errors and warnings in both; the documented exit statuses.
#pragma once

#include "app/platform.h"

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

// How a command ended, from every failure it reported: the first failure decides,
// except that "unsupported" (this CPU lacks the feature) yields to a later real
// failure (a fault, a usage error). Errc::ok when nothing failed.
class Outcome {
public:
    void note(Errc c) {
        if (c == Errc::ok) return;
        if (worst_ == Errc::ok || (worst_ == Errc::unsupported && c != Errc::unsupported)) worst_ = c;
    }
    Errc worst() const { return worst_; }
    int exit_status() const { return exit_status_for(worst_); }

private:
    Errc worst_ = Errc::ok;
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
    // Text mode on a simulated machine (Platform::simulated, pmulab-sim) only: the line
    // that closes a block of measured output (a run table, a TopDown table, selftest's
    // SUMMARY), "SIMULATED <machine>: counts above come from the simulator's model, not
    // from hardware". JSON records carry it in the meta record ("simulated": true).
    void simulated_mark();
    // A record (an object): always to the results files, to the console in JSON mode
    // (Platform::write_record), and as a LAVA line with --lava. Commands emit their
    // records in both modes and their human text with text().
    void record(const Value& rec);
    // --lava: results and checks also as LAVA test-case lines on the console (app/lava.h).
    void set_lava(bool on) { lava_ = on; }
    bool lava() const { return lava_; }
    void set_sink(RecordSink* s) { sink_ = s; }
    // Prefix for errors and warnings, e.g. "\pmulab\pmulab.cfg:3" (null: none).
    void set_context(const char* c) { context_ = c; }
    // Both modes: "pmulab: error: ..." or {"type":"error",...}. Every error reported
    // counts towards the command's outcome (and so its exit status).
    void error(const Error& e);
    void error_msg(Errc c, const char* fmt, ...) __attribute__((format(printf, 3, 4)));
    // A failure reported in another form (a FAIL verdict, a census row that says why a
    // CPU could not be read): counts towards the outcome, prints nothing.
    void fail(Errc c) { outcome_.note(c); }
    const Outcome& outcome() const { return outcome_; }
    // Both modes: a warning that does not change the exit status.
    void warn(const char* fmt, ...) __attribute__((format(printf, 2, 3)));
    Platform& platform() { return p_; }

private:
    Platform& p_;

    bool json_;
    bool lava_ = false;
    RecordSink* sink_ = nullptr;
    const char* context_ = nullptr;
    Outcome outcome_;
};

}  // namespace pmulab
