// Noise provenance of a measurement (docs/measure.md "Noise provenance", issue 11): for
// every measured (benchmark, CPU, group) job, what could have disturbed it and what
// pmulab did against it, read on the measuring CPU around all of the job's runs:
//   SMIs          MSR_SMI_COUNT (34H, Intel) before and after; a delta > 0 flags the result;
//   frequency     APERF/MPERF deltas (CPUID.06H:ECX[0]; on AMD the read-only aliases
//                 C000_00E8H/E7H where CPUID 8000_0007H:EDX[10] EffFreqRO) and the TSC
//                 delta of the same window: effective frequency = TSC Hz x APERF/MPERF;
//   SMM freeze    IA32_DEBUGCTL.FREEZE_WHILE_SMM (bit 14) set for the job where
//                 IA32_PERF_CAPABILITIES[12] enumerates it, so that an SMI does not count
//                 (SDM Vol. 3B §20.8.1); restored exactly afterwards (MsrLedger);
//   serialising   LFENCE as it is, LFENCE after setting DE_CFG (C001_1029H)[1] for the job
//                 (AMD, restored afterwards, as Linux sets it at boot), or CPUID where
//                 DE_CFG cannot be read or set (serialize_choice, pmu/pmu.h).
// noise_probe runs once per CPU and command; NoiseGuard around each job. Both run on the
// measuring CPU and are allocation-free.
#pragma once

#include "measure/measure.h"
#include "pmu/msr_ledger.h"

namespace pmulab {

inline constexpr usize kNoiseNote = 200;

// What one CPU offers, probed on it (every field says why when it is absent).
struct NoiseCaps {
    bool probed = false;
    bool smi = false;  // MSR_SMI_COUNT readable: Intel, bare metal, RDMSR 34H works
    bool aperf_mperf = false;
    u32 aperf_msr = 0, mperf_msr = 0;
    bool freeze = false;                              // FREEZE_WHILE_SMM enumerated
    SerializeWith serialize = SerializeWith::lfence;  // serialize_choice, after a trial write of DE_CFG
    u64 de_cfg = 0;                                   // DE_CFG as read (AMD)
    char smi_absent[kNoiseNote] = {};
    char aperf_absent[kNoiseNote] = {};
    char freeze_absent[kNoiseNote] = {};
    char serialize_note[kNoiseNote] = {};  // why CPUID (or why DE_CFG is set)
};
// Probes the calling CPU. A DE_CFG whose bit 1 is clear is set once and put back at once
// (a write the CPU drops, as under QEMU TCG, or one that faults, means CPUID).
void noise_probe(Hw& hw, NoiseCaps* out);

// How the code for a CPU serialises: CPUID when asked to or when LFENCE cannot be made
// dispatch-serialising there, else LFENCE.
SerializeMode effective_serialize(SerializeMode requested, const NoiseCaps& caps);

// What became of FREEZE_WHILE_SMM in a job.
enum class FreezeSmm : u8 {
    unsupported,  // not enumerated (NoiseCaps::freeze_absent says why)
    set,          // set by pmulab for the job, restored after
    already_set,  // the firmware had set it
    failed,       // enumerated, but the WRMSR faulted or did not stick (NoiseRecord::note)
};
const char* freeze_smm_name(FreezeSmm f);  // "unsupported", "set", "already set", "failed"

// The provenance of one job.
struct NoiseRecord {
    const NoiseCaps* caps = nullptr;
    bool smi_known = false;
    u64 smi_delta = 0;
    bool aperf_known = false;
    u64 aperf_delta = 0, mperf_delta = 0;
    u64 tsc_delta = 0;  // TSC ticks over the same window as the deltas above
    FreezeSmm freeze = FreezeSmm::unsupported;
    // "lfence", "lfence_after_de_cfg" (DE_CFG[1] set by pmulab for the job) or "cpuid".
    SerializeWith serialize = SerializeWith::lfence;
    char note[kNoiseNote] = {};  // FREEZE_WHILE_SMM failure, a read that faulted afterwards
    bool smi_moved() const { return smi_known && smi_delta != 0; }
};

// Around one job on the measuring CPU.
class NoiseGuard {
public:
    // Sets FREEZE_WHILE_SMM and DE_CFG[1] as the caps and mode say, then reads the start
    // values. Fails only when LFENCE was chosen on the strength of DE_CFG[1] and the bit
    // cannot be set now (nothing stays changed then).
    Status begin(Hw& hw, const NoiseCaps& caps, SerializeMode mode, NoiseRecord* rec);
    // Reads the end values into rec and restores DEBUGCTL and DE_CFG exactly.
    Status end(NoiseRecord* rec);

private:
    Hw* hw_ = nullptr;
    const NoiseCaps* caps_ = nullptr;
    FixedMsrLedger<2> ledger_;
    u64 smi0_ = 0, aperf0_ = 0, mperf0_ = 0, tsc0_ = 0;
};

// --prefetchers off around one job on the measuring CPU (MeasureConfig::prefetch_msr,
// x86/prefetch.h): sets the disable bits, checks that they stick, and restores the MSR
// exactly (MsrLedger). Nothing to do when prefetch_msr is 0.
// --prefetchers off: the control of the calling CPU's model (the BSP's; x86/prefetch.h)
// into cfg, or an error (unsupported) with the reason where none is documented.
Status choose_prefetch_control(Hw& hw, MeasureConfig* cfg);

class PrefetchGuard {
public:
    Status begin(Hw& hw, const MeasureConfig& cfg);
    Status end();

private:
    FixedMsrLedger<1> ledger_;
};

}  // namespace pmulab
