// `--trace-msr`: a Platform that runs a command against an MsrTrace (x86/msr_trace.h)
// around the real hardware seam and prints what it records, in the command's output
// mode: text lines "msr: CPU 0 WRMSR IA32_PERFEVTSEL0 (0x186) <- 0x43003c: event=0x3c
// umask=0x00 usr os en", or {"type":"msr_trace",...} records (also in the results files).
// The measurement services are wrapped too, so that what an AP recorded is printed as
// soon as the BSP has it back.
#pragma once

#include "app/out.h"
#include "measure/measure.h"
#include "x86/msr_trace.h"

namespace pmulab {

class TracePlatform final : public Platform, private TraceSink {
public:
    explicit TracePlatform(Platform& inner);
    ~TracePlatform();
    TracePlatform(const TracePlatform&) = delete;
    TracePlatform& operator=(const TracePlatform&) = delete;

    // Where the trace goes (set before the command runs).
    void set_out(Out* out) { out_ = out; }
    // Prints whatever is still buffered (at the end of the command).
    void flush() { trace_.flush(); }

    Hw& hw() override { return trace_; }
    void write(StrView text) override { inner_.write(text); }
    void write_record(const Value& rec) override { inner_.write_record(rec); }
    void write_diag(StrView text) override { inner_.write_diag(text); }
    const char* firmware_vendor() override { return inner_.firmware_vendor(); }
    u32 firmware_revision() override { return inner_.firmware_revision(); }
    MeasurePlatform* measure() override;
    void now(char* buf, usize cap) override { inner_.now(buf, cap); }
    RecordSink* record_sink() override { return inner_.record_sink(); }
    FileSource* files() override { return inner_.files(); }
    const char* simulated() override { return inner_.simulated(); }

private:
    void trace(const TraceEntry& e) override;
    void trace_dropped(u64 n) override;

    class Measure;
    Platform& inner_;
    MsrTrace trace_;
    TraceNames names_;
    Out* out_ = nullptr;
    Measure* measure_ = nullptr;
};

}  // namespace pmulab
