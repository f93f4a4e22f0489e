// The ledger of the PMU MSRs a backend saves, writes and restores: the one place that
// keeps "what the register held before pmulab" (saved), "what pmulab last wrote to it"
// (shadow) and "whether pmulab wrote it" (written), and that puts everything back in a
// declared order. The save hooks of the three PMU families (intel_pmu, amd_pmu,
// netburst_pmu; pmu_family.h) list their registers and how each is restored; the
// bookkeeping is here, in the PmuCore that PmuBackend (session.h) owns.
//
// Restore order (restore()):
//   disable pass  every register with enable bits, in the order saved: those bits
//                 cleared (only when set, unless always_disable), so that nothing counts
//                 while counters are written (SDM Vol. 3B §20.2.1.1: a counter is
//                 written while disabled; APM Vol. 2 §13.2.1; SDM §20.15 for CCCRs).
//   then the phases of RestorePhase in order; inside a phase, the order saved:
//     counter       values pmulab wrote, only if the gating register was disabled
//     event_select  registers whose shadow differs from the saved value
//     control
//     status        overflow bits of the owned counters back as they were
//     global        the global enable, last
// Every write goes on after a fault; the first error is returned. restore() disarms the
// ledger: a second call does nothing.
//
// Fixed capacity and allocation-free: it runs on the measured CPU (Hw::run_on_cpu).
#pragma once

#include "pmu/pmu.h"

namespace pmulab {

// When restore() writes a register back (see the top); the disable pass comes first.
enum class RestorePhase : u8 {
    counter,       // counter values (IA32_PMCx, FIXED_CTRx, PERF_CTR, NetBurst counters)
    event_select,  // what is counted (IA32_PERFEVTSELx, PERF_CTL, NetBurst ESCRs)
    control,       // controls after the selects (FIXED_CTR_CTRL, aux MSRs, HWCR, CCCRs)
    status,        // overflow status (GLOBAL_STATUS via its clear/set MSRs)
    global,        // the global enable (GLOBAL_CTRL, PerfCntrGlobalCtl)
};
inline constexpr unsigned kRestorePhases = 5;

// One register as a backend declares it. Built with the named constructors and the
// modifiers, e.g. MsrReg::counter(pmc).gated_by(evtsel).written_at(a_pmc).
struct MsrReg {
    u32 msr = 0;  // read by save(); written back by restore() (unless write_msr)
    RestorePhase phase = RestorePhase::control;
    u64 enable = 0;               // bits cleared by the disable pass; 0: not disabled
    bool always_disable = false;  // disable pass writes even when no enable bit is set
    bool reread = false;          // disable pass reads the register first (hardware-set flags)
    // counter phase
    u32 write_msr = 0;    // the address writes go to (IA32_A_PMCx); also tracked; 0: msr
    u32 gate = 0;         // the register whose disable must succeed before the write; 0: none
    u8 legacy_width = 0;  // nonzero: the write is 32 bits sign-extended to this width
    u8 report_bit = 0;    // RestoreReport::gp_counters_inexact bit when it cannot be exact
    // status phase
    u32 clear_msr = 0, set_msr = 0;  // set_msr 0: bits cannot be set again (reported lost)
    u64 owned = 0;                   // the status bits of the counters pmulab touches

    static MsrReg counter(u32 msr) { return at(msr, RestorePhase::counter); }
    static MsrReg event_select(u32 msr) { return at(msr, RestorePhase::event_select); }
    static MsrReg control(u32 msr) { return at(msr, RestorePhase::control); }
    static MsrReg global(u32 msr) { return at(msr, RestorePhase::global); }
    static MsrReg status(u32 msr, u32 clear_msr, u32 set_msr, u64 owned) {
        MsrReg r = at(msr, RestorePhase::status);
        r.clear_msr = clear_msr;
        r.set_msr = set_msr;
        r.owned = owned;
        return r;
    }

    MsrReg& disabled_by(u64 enable_bits) { return enable = enable_bits, *this; }
    MsrReg& disabled_always() { return always_disable = true, *this; }
    MsrReg& reread_first() { return reread = true, *this; }
    MsrReg& gated_by(u32 m) { return gate = m, *this; }
    MsrReg& written_at(u32 m) { return write_msr = m, *this; }
    MsrReg& legacy_write(u8 width, u8 bit) { return legacy_width = width, report_bit = bit, *this; }

private:
    static MsrReg at(u32 msr, RestorePhase p) {
        MsrReg r;
        r.msr = msr;
        r.phase = p;
        return r;
    }
};

// The bookkeeping; the entries live in FixedMsrLedger<N>.
class MsrLedger {
public:
    // A saved register, packed (a ledger holds up to ~80 of them and lives in each
    // session): the MsrReg fields a phase does not use share storage.
    struct Entry {
        u64 saved = 0;
        u64 shadow = 0;  // the value the register holds as far as pmulab knows
        u64 mask = 0;    // enable bits (disable pass), or the owned bits (status)
        u32 msr = 0;
        u32 alt = 0;    // write_msr (counter), or clear_msr (status)
        u32 other = 0;  // gate (counter), or set_msr (status)
        RestorePhase phase = RestorePhase::control;
        u8 legacy_width = 0, report_bit = 0;
        u8 flags = 0;  // kAlways | kReread | kWritten | kOff
    };

    void bind(Hw* hw) { hw_ = hw; }
    // Forgets every register (start of a save).
    void begin();
    // RDMSR of r.msr, recorded with that value as saved and shadow. A fault records
    // nothing and returns the fault; a register saved twice keeps its first entry.
    Status save(const MsrReg& r);
    // Every register is saved: restore() now puts them back.
    void arm() { armed_ = true; }
    bool armed() const { return armed_; }

    bool has(u32 msr) const { return find(msr) != nullptr; }
    // The last value pmulab knows the register at msr holds; 0 for one not saved.
    u64 shadow(u32 msr) const;
    u64 saved_value(u32 msr) const;
    bool written(u32 msr) const;
    unsigned size() const { return count_; }
    bool wrote_any() const { return wrote_any_; }

    // WRMSR; when it completes, the shadow and written flag of the register at msr (or
    // written at msr) follow it. Registers not in the ledger are written as they are.
    Status write(u32 msr, u64 value);

    // Puts back every saved register in the order at the top; continues past faults and
    // returns the first; idempotent (disarms). report: what could not be exact.
    Status restore(RestoreReport* report = nullptr);

protected:
    MsrLedger() = default;
    MsrLedger(const MsrLedger&) = default;
    MsrLedger& operator=(const MsrLedger&) = default;
    ~MsrLedger() = default;
    virtual Entry* slots() = 0;
    virtual const Entry* slots() const = 0;
    virtual unsigned capacity() const = 0;

private:
    enum : u8 {
        kAlways = 1,   // MsrReg::always_disable
        kReread = 2,   // MsrReg::reread
        kWritten = 4,  // a WRMSR of pmulab completed since save
        kOff = 8,      // disable pass: its enable bits are known clear
    };
    const Entry* find(u32 msr) const;
    Entry* find(u32 msr) { return const_cast<Entry*>(static_cast<const MsrLedger*>(this)->find(msr)); }
    bool put(u32 msr, u64 value, Status* first);
    void restore_entry(Entry& e, RestoreReport* rep, Status* first);

    Hw* hw_ = nullptr;
    u16 count_ = 0;
    bool armed_ = false;
    bool wrote_any_ = false;  // a WRMSR completed since begin()
};

// A ledger for up to N registers (the entries are held in place: copyable, no allocation).
template <unsigned N> class FixedMsrLedger final : public MsrLedger {
public:
    static constexpr unsigned kCapacity = N;

private:
    Entry* slots() override { return slots_; }
    const Entry* slots() const override { return slots_; }
    unsigned capacity() const override { return N; }
    Entry slots_[N];
};

}  // namespace pmulab
