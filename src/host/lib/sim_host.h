// What pmulab-sim runs commands on (and what tests can use): a simulated machine built
// from a CPUID dump or a named synthetic model (src/sim), and a Platform over it with the
// simulator's executor (sim_exec.h), writing to stdout/stderr or capturing its output.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "app/platform.h"
#include "census/cpuid_dump.h"
#include "sim_exec.h"
#include "sim_results.h"
#include "sim_serve.h"
#include "sim/sim_cpu.h"

namespace pmulab {

struct SimMachineOptions {
    std::string dump;   // a CPUID dump (the formats pmulab-cpuid reads)
    std::string model;  // or a named model (sim::named_models(), sim_builders.h)
    std::string cpus;   // "0,2", "0-3": the dump's CPUs to keep (empty: all)
    DumpFormat format = DumpFormat::automatic;
    bool have_perf_caps = false;
    u64 perf_caps = 0;  // IA32_PERF_CAPABILITIES of every CPU (where PDCM makes it exist)
    bool have_misc_enable = false;
    u64 misc_enable = 0;  // IA32_MISC_ENABLE of every Intel CPU
    // The cache model (docs/sim.md): "L1D:32K:8:LRU,L2:256K:4:PLRU,..." (empty: the
    // defaults of the machine); checked here only for being non-empty when given.
    std::string cache;
    u64 seed = 0;  // the seed of the RANDOM replacement policy and IBS's randomisation (--seed N)
    bool seed_set = false;
    // --sibling busy: every CPU with an SMT sibling has a busy one (docs/sim.md "SMT siblings").
    bool sibling_busy = false;
};

// Builds the machine. Errors: Errc::io when the dump cannot be read (exit 1), else
// invalid_argument (a malformed dump "FILE:LINE: reason", an unknown model, a bad --cpus
// list; exit 2). *what describes the machine ("dump FILE (N CPUs)" / "model NAME").
Status build_sim_machine(const SimMachineOptions& o, std::unique_ptr<sim::SimMachine>* out, std::string* what);

// A Platform over a SimMachine: console text to stdout (or a string), diagnostics to
// stderr (or the same string), the executor as measurement services, marked simulated.
class SimHostPlatform final : public Platform {
public:
    SimHostPlatform(sim::SimMachine& m, std::string what, bool capture = false);
    Hw& hw() override { return m_; }
    void write(StrView text) override;
    void write_diag(StrView text) override;
    const char* firmware_vendor() override { return "pmulab-sim"; }
    MeasurePlatform* measure() override { return &exec_; }
    const char* simulated() override { return what_.c_str(); }
    // `serve`: the agent protocol on stdin/stdout (sim_serve.h); from then on the
    // console's own lines go to stderr, so that stdout carries the protocol only.
    Result<ServeLink*> open_serve_link(int port) override;
    // Results files (pmulab-sim --results DIR, sim_results.h); none by default.
    void set_results_dir(const std::string& dir) { sink_ = std::make_unique<HostRecordSink>(dir); }
    RecordSink* record_sink() override { return sink_.get(); }
    SimExec& exec() { return exec_; }
    // Captured output (capture = true).
    std::string out;

private:
    sim::SimMachine& m_;
    std::string what_;
    bool capture_;
    SimExec exec_;
    std::unique_ptr<StdioServeLink> link_;
    std::unique_ptr<HostRecordSink> sink_;
};

}  // namespace pmulab
