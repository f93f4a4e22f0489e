// One CPU's PMU session: detection, the backend of the CPU's kind (Intel, AMD or
// NetBurst), and restore on close.
#pragma once

#include "pmu/amd_pmu.h"
#include "pmu/intel_pmu.h"
#include "pmu/netburst_pmu.h"

namespace pmulab {

// One CPU's PMU session: detection, the backend, restore on close (and on destruction).
// The forwarding methods are what callers use; without a PMU they fail with
// Errc::unsupported and info().absent (allocate() still places 'tsc').
class PmuSession {
public:
    PmuSession() = default;
    PmuSession(const PmuSession&) = delete;
    PmuSession& operator=(const PmuSession&) = delete;
    ~PmuSession() {
        Status s = close();
        (void)s;
    }

    // Detects the calling CPU's PMU and binds the matching backend.
    void open(Hw& hw);
    // Uses an already detected info (it must describe the calling CPU).
    void open(Hw& hw, const PmuInfo& info);
    // Binds the backend of `info` for planning only (allocate, access, control_writes:
    // pure functions of the info, any CPU); every operation on the CPU fails with
    // Errc::internal, and close() has nothing to restore.
    void plan(const PmuInfo& info);
    const PmuInfo& info() const { return info_; }
    // Null when the CPU has no PMU pmulab can program (info().absent says why).
    PmuBackend* backend() { return backend_; }
    // Restores everything the backend saved; safe to call more than once.
    Status close(RestoreReport* report = nullptr);

    // ---- PmuBackend, forwarded ----
    Status allocate(const Event* events, usize n, Allocation* out) const;
    CounterAccess access(CounterKind kind, u8 index) const;
    void control_writes(const Event* events, const CounterGroup& g, PmuWriteList* start, PmuWriteList* stop) const;
    Status save(const PmuTouch& t);
    Status program(const Event* events, const CounterGroup& g, const u64* presets = nullptr);
    Status start();
    Status stop();
    Result<u64> read(CounterKind kind, u8 index);
    Result<OverflowState> overflow();
    Status clear_overflow();
    bool saved() const;

private:
    void bind(Hw* hw, const PmuInfo& info);
    Status on_cpu() const;

    PmuInfo info_;
    IntelArchPmu intel_;
    AmdPmu amd_;
    NetBurstPmu netburst_;
    PmuBackend* backend_ = nullptr;
    bool planning_ = false;  // plan(): no Hw behind the backend
};

}  // namespace pmulab
