// `--trace-msr`: a Platform that runs a command against an MsrTrace (x86/msr_trace.h)
// around the real hardware seam and prints what it records, in the command's output
// mode: text lines "msr: CPU 0 WRMSR IA32_PERFEVTSEL0 (0x186) <- 0x43003c: event=0x3c
// umask=0x00 usr os en", or {"type":"msr_trace",...} records (also in the results files).
// The measurement services are wrapped too, so that what an AP recorded is printed as
// soon as the BSP has it back. Everything else is the inner platform's (ForwardingPlatform).
#pragma once

#include "app/measure_forward.h"
#include "app/out.h"
#include "x86/msr_trace.h"

namespace pmulab {

class TracePlatform final : public ForwardingPlatform, private TraceSink {
public:
    explicit TracePlatform(Platform& inner);
    ~TracePlatform();
    TracePlatform(const TracePlatform&) = delete;
    TracePlatform& operator=(const TracePlatform&) = delete;

    // Where the trace goes (set before the command runs).
    void set_out(Out* out) { out_ = out; }
    // Prints whatever is still buffered (at the end of the command).
    void flush() { trace_.flush(); }
    // The platform it traces: what pmulab does on its own behalf (the meta record) is not
    // the command's, and stays out of the trace.
    Platform& untraced() { return inner(); }

    Hw& hw() override { return trace_; }
    MeasurePlatform* measure() override;

private:
    void trace(const TraceEntry& e) override;
    void trace_dropped(u64 n) override;

    class Measure;
    MsrTrace trace_;
    TraceNames names_;
    Out* out_ = nullptr;
    Measure* measure_ = nullptr;
};

}  // namespace pmulab
