// One CPU's PMU: PmuBackend, the family-neutral programming interface (its guards, the
// MSR ledger, restore), which calls the hooks of the CPU's PMU family (pmu_family.h);
// PmuSession binds it to a CPU and restores on close.
#pragma once

#include "pmu/pmu_family.h"

namespace pmulab {

// The programming interface of one CPU's PMU, written once for every family: each
// method checks what every family needs (guards below), then runs the family's hook.
// Every method that takes no Hw acts on the CPU the session was opened on and must be
// called there. Without a PMU (info().kind none) the operations on the CPU fail with
// Errc::unsupported and info().absent (allocate() still places 'tsc', access() is the
// TSC); bound for planning only (PmuSession::plan) they fail with Errc::internal.
class PmuBackend {
public:
    const PmuInfo& info() const { return core_.info; }

    // ---- planning (pure: no hardware access; any CPU) ----
    Status allocate(const Event* events, usize n, Allocation* out) const;
    // How generated code reads counter (kind, index) without faulting: the probed
    // method, the right selector or MSR, the counter width.
    CounterAccess access(CounterKind kind, u8 index) const;
    // The writes that start and stop counting of group g (what start()/stop() do).
    void control_writes(const Event* events, const CounterGroup& g, PmuWriteList* start, PmuWriteList* stop) const;

    // ---- on the CPU ----
    // Reads every register of `t` (and the global controls) that exists on this CPU.
    // Only reads; an aux MSR that faults fails the save (nothing was written yet).
    // Refused while a save is not restored.
    Status save(const PmuTouch& t);
    // Programs one group with counting off. presets (optional, indexed like g.events)
    // give each counter's starting value; default 0. Only after save() and on counters
    // it saved; on error everything saved is restored before returning.
    Status program(const Event* events, const CounterGroup& g, const u64* presets = nullptr);
    // Counting of the programmed group on / off (only after program()).
    Status start();
    Status stop();
    Result<u64> read(CounterKind kind, u8 index);
    // Overflow of the programmed group's counters since program().
    Result<OverflowState> overflow();
    // Clears the overflow bits of the programmed group's counters.
    Status clear_overflow();
    // Puts back every saved register (see the order at the top of pmu.h); idempotent;
    // continues past faults and returns the first.
    Status restore(RestoreReport* report = nullptr);
    bool saved() const { return core_.ledger.armed(); }

protected:
    PmuBackend() = default;
    ~PmuBackend() = default;
    // Binds the family of `info` to hw (null: planning only); forgets all state.
    void bind(Hw* hw, const PmuInfo& info);

private:
    // The guard of every operation on the CPU: a PMU, and hardware behind it.
    Status on_cpu() const;

    const PmuFamily* family_ = &kNoPmuFamily;
    PmuCore core_;
};

// One CPU's PMU session: detection, the family's backend, restore on close (and on
// destruction).
class PmuSession : public PmuBackend {
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
    // Null when the CPU has no PMU pmulab can program (info().absent says why).
    PmuBackend* backend() { return info().kind == PmuKind::none ? nullptr : this; }
    // Restores everything the backend saved; safe to call more than once.
    Status close(RestoreReport* report = nullptr) { return restore(report); }
};

}  // namespace pmulab
