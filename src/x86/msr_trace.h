// `--trace-msr`: a tracing layer around the Hw seam (hw.h) that records every RDMSR,
// WRMSR and RDPMC the PMU and measurement layers perform, in order, with the CPU, the
// value and the result (completed, #GP, #UD), and hands them to a TraceSink to print.
//
// No allocation and no output on an AP: the accesses go into fixed storage (allocated
// once, on the BSP, when the tracer is made) and are printed on the BSP, right away for
// accesses the BSP makes outside run_on_cpu, else when run_on_cpu returns (or at
// flush()). Callers never run two CPUs at once (run_on_cpu is synchronous), so one
// buffer in access order serves every CPU.
//
// Accesses the measured region performs itself (generated code: the start/stop WRMSRs and
// the counter reads, MsrTrace::code) and the accesses of each run (between run_begin and
// run_end) are folded: a run whose accesses are those of the run before (same CPUs, MSRs,
// written values and results; read values may differ) only adds one to that block's run
// count, so a measurement of 28 runs shows its per-run sequence once, "each of 28 runs".
#pragma once

#include "base/box.h"
#include "base/fmt.h"
#include "x86/cpuid.h"
#include "x86/hw.h"

namespace pmulab {

enum class TraceOp : u8 { rdmsr, wrmsr, rdpmc };
const char* trace_op_name(TraceOp op);  // "RDMSR", "WRMSR", "RDPMC"

struct TraceEntry {
    u32 cpu = 0;
    TraceOp op = TraceOp::rdmsr;
    u8 vector = 0;             // 0: completed; else the fault (kVectorGP, kVectorUD)
    bool code = false;         // performed by generated code (value unknown for reads)
    bool block_first = false;  // first access of a run block (runs valid)
    u32 addr = 0;              // MSR address, or RDPMC's ECX
    u64 value = 0;             // written value, or the value read (0 when faulted)
    u32 runs = 0;              // in a run block: how many runs performed it; 0 outside runs
};

// Where the tracer's entries go (on the BSP).
class TraceSink {
public:
    virtual void trace(const TraceEntry& e) = 0;
    // `n` accesses were not recorded (the fixed storage filled up inside one call).
    virtual void trace_dropped(u64 n) = 0;

protected:
    ~TraceSink() = default;
};

// How the tracer names registers: the BSP's vendor and PMU (NetBurst reuses addresses
// 300H-311H that later Intel processors give to IA32_FIXED_CTRx, and the name of 390H
// depends on the perfmon version).
struct TraceNames {
    Vendor vendor = Vendor::other;
    PmuCaps pmu;
    u32 family = 0, model = 0;  // the server uncore's CHA MSRs are named by model
};
TraceNames trace_names(const CpuDecoded& d);

// The register's name ("IA32_PERFEVTSEL0", "PERF_CTL2", "MSR_IQ_CCCR0"), or "MSR 0x..."
// for one the tracer does not know; for RDPMC the counter ECX selects ("PMC0",
// "FIXED_CTR1", "PERF_CTR3", "MSR_IQ_COUNTER4").
void trace_reg_name(const TraceNames& n, TraceOp op, u32 addr, StrBuf& out);
// The decoded fields of a control register value, e.g. "event=0x0e umask=0x01 usr os en"
// for an event select, "PMC0-3,FIXED_CTR0-2" for a global control; nothing for counters
// and registers without fields.
void trace_fields(const TraceNames& n, u32 msr, u64 value, StrBuf& out);

class MsrTrace final : public Hw {
public:
    static constexpr u32 kDefaultCapacity = 4096;
    // Wraps `inner`; made on the BSP, which it takes from inner.current_cpu(). Entries go
    // to `sink`; `capacity` entries of fixed storage.
    MsrTrace(Hw& inner, TraceSink& sink, u32 capacity = kDefaultCapacity);
    MsrTrace(const MsrTrace&) = delete;
    MsrTrace& operator=(const MsrTrace&) = delete;

    // ---- Hw: forwarded, RDMSR/WRMSR/RDPMC recorded ----
    CpuidRegs cpuid(u32 leaf, u32 subleaf) override { return inner_.cpuid(leaf, subleaf); }
    Result<u64> rdmsr(u32 msr) override;
    Status wrmsr(u32 msr, u64 value) override;
    Result<u64> rdpmc(u32 index) override;
    u64 rdtsc() override { return inner_.rdtsc(); }
    u32 cpu_count() override { return inner_.cpu_count(); }
    u32 current_cpu() override { return inner_.current_cpu(); }
    Result<CpuTopology> topology(u32 cpu) override { return inner_.topology(cpu); }
    Status run_on_cpu(u32 cpu, CpuFn fn, void* ctx) override;
    Result<u32> pci_read32(u32 bus, u32 dev, u32 fn, u32 offset) override {
        return inner_.pci_read32(bus, dev, fn, offset);
    }
    MsrTrace* msr_trace() override { return this; }

    // ---- from the measurement engine (any CPU) ----
    // One run of a measured region: everything between these two is one run.
    void run_begin();
    void run_end();
    // An access the generated code performs (value: what a WRMSR writes; reads 0).
    void code(TraceOp op, u32 addr, u64 value);

    // On the BSP: hands every recorded entry to the sink.
    void flush();
    // A PMI handler is attached on the measuring CPU (MeasurePlatform::pmi_attach): its NMI
    // may record at any instruction. While held, record() prints nothing itself (so nothing
    // is printed from the NMI); the accesses wait for flush() or hold(false) on the BSP.
    // An NMI that interrupts the tracer itself parks its entries, which the interrupted call
    // (or the next one) appends in order; see record().
    void hold(bool on);
    Hw& inner() { return inner_; }

private:
    void record(TraceOp op, u32 addr, u64 value, u8 vector, bool code);
    void append(const TraceEntry& e);
    bool enter();  // false: an NMI interrupted the tracer on this CPU (one CPU at a time)
    void leave();
    void unpark();
    void fold_run();
    bool same_run(u32 a, u32 b, u32 len) const;

    Hw& inner_;
    TraceSink& sink_;
    Box<TraceEntry[]> buf_;
    u32 cap_;
    u32 count_ = 0;
    u64 dropped_ = 0;
    u32 bsp_;
    u32 depth_ = 0;        // run_on_cpu nesting
    bool in_run_ = false;  // between run_begin and run_end
    u32 run_start_ = 0;
    bool have_block_ = false;  // [block_start_, block_start_ + block_len_) is the last run block
    u32 block_start_ = 0, block_len_ = 0;
    // The NMI's side (hold): busy_ while a call is inside the tracer; entries recorded then
    // (by an NMI) go into a ring that only the NMI writes at its head and only the tracer's
    // calls read at its tail.
    static constexpr u32 kParked = 64;
    volatile bool busy_ = false;
    volatile bool held_ = false;
    TraceEntry parked_[kParked];
    volatile u32 park_head_ = 0, park_tail_ = 0;
    volatile u64 park_dropped_ = 0;
};

}  // namespace pmulab
