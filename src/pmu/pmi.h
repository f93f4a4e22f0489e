// The counter-overflow interrupt (PMI), the portable half: what pmulab does on the
// measuring CPU when a counter it armed overflows. The same code runs in the EFI binary
// (the NMI stub calls PmiHandler::on_nmi, src/efi/) and in pmulab-sim (the executor calls
// it at the instruction boundary where the simulated CPU takes the NMI).
//
// Sources: Intel SDM Vol. 3B §20.2.2 (GLOBAL_STATUS/OVF_CTRL, v2), §20.2.4.1 (v4
// STATUS_RESET, CTR_FRZ/LBR_FRZ), §18.4.7 "Freezing LBR and Performance Counters on PMI",
// Vol. 3A §11.5.1 "Local Vector Table" (the APIC sets the LVT entry's mask bit when it
// delivers a PMI); AMD APM Vol. 2 §13.2 (PerfCntrGlobalStatus/StatusClr on PerfMonV2; a
// counter without it overflowed when it wrapped, Linux amd_pmu_handle_irq's sign test).
//
// What the handler does, in order (PmiHandler::on_nmi):
//   1. without a freeze on PMI: counting stopped first thing (GLOBAL_CTRL = 0, or each
//      armed counter's EN cleared), so that the handler's own work is not counted;
//   2. which armed counters overflowed: GLOBAL_STATUS (Intel v2+, AMD PerfMonV2), else a
//      counter whose top bit is clear again (it wrapped from 2^width - period); the
//      precise source (PEBS, IBS) drained; none of them: the NMI is not the PMU's (the
//      watchdog's, another CPU's IPI): returns false;
//   3. per overflowed counter: one sample (PmiSink::sample, with the interrupted RIP) and
//      the counter reloaded with 2^width - period;
//   4. the overflow bits (and CTR_FRZ/LBR_FRZ) acknowledged through OVF_CTRL /
//      STATUS_RESET / PerfCntrGlobalStatusClr;
//   5. counting on again (GLOBAL_CTRL; the legacy v2/v3 freeze cleared it too);
//   6. the LVT entry re-armed (unmasked: the delivery set its mask bit).
// Everything it writes is restored by the measurement's PMU session (the counters,
// GLOBAL_*) and by the platform (the LVT entry).
#pragma once

#include "pmu/mem_source.h"
#include "pmu/pmu.h"

namespace pmulab {

// One precise record (PEBS, AMD IBS; docs/sampling.md "Precise sampling"): the eventing
// instruction itself (no skid) and, for a memory operation, its data address and latency.
struct PreciseSample {
    u64 rip = 0;        // the eventing instruction
    u64 data_addr = 0;  // its linear data address (physical under UEFI's identity map); has_data
    u32 latency = 0;    // core cycles (PEBS load latency, IBS DC miss latency); has_latency
    bool has_data = false;
    bool has_latency = false;
    // Where the access was served from (PEBS load latency, IBS ops; mem_source.h): none
    // when the record does not say.
    MemSourceInfo source;
};

// Where samples go (measure/sampling.h). Called from the NMI: no allocation, no output.
class PmiSink {
public:
    virtual void sample(u32 slot, u64 rip) = 0;
    // A precise record of slot's event (PreciseSource::drain).
    virtual void precise(u32 slot, const PreciseSample& s) = 0;

protected:
    ~PmiSink() = default;
};

// Records the hardware writes by itself (PEBS's DS buffer, IBS's registers), drained in
// the NMI by the handler (step 2, counting stopped): every ready record goes to
// sink.precise. `status` is the global status the handler read (0 where there is none).
// Returns true when the NMI was (also) this source's; *ack gets the global-status bits it
// handled (acknowledged with the counters', step 4). Allocation-free.
class PreciseSource {
public:
    virtual bool drain(Hw& hw, u64 status, PmiSink& sink, u64* ack) = 0;

protected:
    ~PreciseSource() = default;
};

// One armed counter.
struct PmiCounter {
    CounterKind kind = CounterKind::none;
    u8 index = 0;
    u32 slot = 0;        // the sink's stream (the sampled event)
    u32 write_msr = 0;   // where the reload is written (IA32_A_PMCx / PMCx / FIXED_CTRx / PERF_CTRx)
    u32 read_msr = 0;    // where it is read (its own address)
    u32 ctl_msr = 0;     // its enable (PERFEVTSELx / PERF_CTLx) where nothing global stops it
    u64 ctl_on = 0;      // ... its value with EN
    u64 reload = 0;      // 2^width - period
    u64 status_bit = 0;  // its overflow bit in the global status (0: the sign test)
    u8 width = 0;
    // Sampled by a PreciseSource (PEBS): the handler neither samples nor reloads it (the
    // hardware reloads it from its reset value), and ignores its overflow bit.
    bool precise = false;
};

// One CPU's PMI arming: made by pmi_setup before the runs (no hardware access).
struct PmiSetup {
    static constexpr unsigned kMax = 16;
    PmuKind kind = PmuKind::none;
    u32 status_msr = 0;          // IA32_PERF_GLOBAL_STATUS / PerfCntrGlobalStatus; 0: none (sign test)
    u32 ack_msr = 0;             // OVF_CTRL (v2/v3) / STATUS_RESET (v4) / PerfCntrGlobalStatusClr
    u64 ack_extra = 0;           // CTR_FRZ | LBR_FRZ (v4, AMD LbrAndPmcFreeze): cleared with the overflows
    u32 ctrl_msr = 0;            // IA32_PERF_GLOBAL_CTRL / PerfCntrGlobalCtl; 0: per-counter EN
    u64 ctrl_on = 0;             // the group's enables
    bool freeze = false;         // DEBUGCTL.FREEZE_PERFMON_ON_PMI is set for the runs
    bool legacy_freeze = false;  // ... and the freeze clears GLOBAL_CTRL (Intel v2/v3)
    PmiCounter counters[kMax];
    unsigned count = 0;
};

// The period of a counter as its reload value: 2^width - period. Errors: a period of 0,
// or one the counter cannot hold (>= 2^width; above 2^31 without full-width writes).
Result<u64> pmi_reload(const PmuInfo& info, CounterKind kind, u64 period);
// Whether this PMU can interrupt on overflow at all, and freeze counters on a PMI:
// "" when it can, else why not (used in refusals: "cannot sample: ...").
const char* pmi_unsupported(const PmuInfo& info);
const char* freeze_unsupported(const PmuInfo& info);

// The arming of group g: periods[k] for g.events[k] (0: counted, not armed), slots[k] the
// sink stream of each armed one. `freeze`: DEBUGCTL.FREEZE_PERFMON_ON_PMI will be set.
Status pmi_setup(const PmuInfo& info, const CounterGroup& g, const u64* periods, const u32* slots, bool freeze,
                 PmiSetup* out);

// The LVT entry the handler re-arms (platform): writes `value` to the calling CPU's LVT
// performance-counter entry.
using PmiRearm = Status (*)(void* ctx, u32 value);
// The LVT value that delivers the PMI as an NMI, unmasked (SDM Vol. 3A Figure 11-8:
// delivery mode 100b; the vector is ignored for NMI).
inline constexpr u32 kLvtPerfNmi = 0x400;
inline constexpr u32 kLvtMask = 1u << 16;

class PmiHandler {
public:
    // Armed for the runs on this CPU; `hw` is the CPU's (its MSR accesses).
    // `precise` (may be null): the source drained in every NMI (PreciseSource).
    void arm(Hw& hw, const PmiSetup& setup, PmiSink* sink, PmiRearm rearm, void* rearm_ctx,
             PreciseSource* precise = nullptr);
    void disarm() { armed_ = false; }
    bool armed() const { return armed_; }
    // The NMI, on the measuring CPU, `rip` the interrupted instruction pointer: true when
    // an armed counter overflowed (handled), false when the NMI is not the PMU's.
    bool on_nmi(u64 rip);
    u64 pmis() const { return pmis_; }        // NMIs handled
    u64 foreign() const { return foreign_; }  // NMIs that were not the PMU's
    u64 samples() const { return samples_; }  // counter samples recorded (a PreciseSource's: the sink's count)
    // The first MSR access that failed in the handler (ok when none did).
    const Status& error() const { return error_; }

private:
    void write(u32 msr, u64 v);
    void set_counting(bool on);
    u64 read(u32 msr);

    Hw* hw_ = nullptr;
    PmiSetup setup_;
    PmiSink* sink_ = nullptr;
    PreciseSource* precise_ = nullptr;
    PmiRearm rearm_ = nullptr;
    void* rearm_ctx_ = nullptr;
    bool armed_ = false;
    u64 pmis_ = 0, foreign_ = 0, samples_ = 0;
    Status error_;
};

}  // namespace pmulab
