// Noise provenance of a measurement (docs/measure.md "Noise provenance", issue 11): for
// every measured (benchmark, CPU, group) job, what could have disturbed it and what
// pmulab did against it, read on the measuring CPU around all of the job's runs:
//   SMIs          MSR_SMI_COUNT (34H, Intel) before and after; on AMD family 17h and later
//                 PMCx02B (ls_smi_rx, "SMIs received") on the highest GP counter the
//                 group leaves free (on PerfMonV2 enabled by each run's own start write);
//                 a delta > 0 flags the result;
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
    // AMD family 17h on: PMCx02B on a free GP counter (smi_counter_for) instead. smi_gp: the
    // GP counters there are (bit i = PMCi); ext: PERF_CTL/CTR at C001_0200H + 2i; v2:
    // PerfCntrGlobalCtl gates the counter too.
    bool smi_pmc = false, smi_ext = false, smi_v2 = false;
    u32 smi_gp = 0;
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

// The GP counter AMD's SMI count takes beside a group that uses `group_gp` of the counters
// `avail` (bit i = PMCi): the highest free one, or -1 when the group uses them all.
constexpr int smi_counter_for(u32 avail, u32 group_gp) {
    for (int i = 31; i >= 0; --i)
        if (((avail >> i) & 1) && !((group_gp >> i) & 1)) return i;
    return -1;
}
static_assert(smi_counter_for(0x3F, 0x03) == 5 && smi_counter_for(0x3F, 0x21) == 4 &&
              smi_counter_for(0x3F, 0x3F) == -1);

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
    int smi_pmc = -1;                // AMD: the GP counter that counted PMCx02B (-1: MSR_SMI_COUNT, or none)
    char smi_note[kNoiseNote] = {};  // AMD: why no counter was free for PMCx02B
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
    // `group_gp`: the GP counters the group takes (ReadGroup::gp_mask): AMD's SMI count takes
    // a free one.
    Status begin(Hw& hw, const NoiseCaps& caps, SerializeMode mode, NoiseRecord* rec, u32 group_gp = 0);
    // Reads the end values into rec and restores DEBUGCTL and DE_CFG exactly.
    Status end(NoiseRecord* rec);

private:
    Hw* hw_ = nullptr;
    const NoiseCaps* caps_ = nullptr;
    FixedMsrLedger<2> ledger_;  // DE_CFG, DEBUGCTL
    // AMD's SMI counter (PERF_CTL, PERF_CTR, PerfCntrGlobalCtl): restored first, so that the
    // PMU registers nest inside DE_CFG and DEBUGCTL as the PMU session's do.
    FixedMsrLedger<3> smi_ledger_;
    void begin_smi_pmc(const NoiseCaps& caps, u32 group_gp, NoiseRecord* rec);
    u32 smi_msr_ = 0;  // MSR_SMI_COUNT, or AMD's PERF_CTR of the SMI counter
    u64 smi0_ = 0, aperf0_ = 0, mperf0_ = 0, tsc0_ = 0;
};

// --prefetchers off: the control of the calling CPU's model (the BSP's; x86/prefetch.h)
// into cfg->prefetch (on hybrid parts one plan per core type), or an error (unsupported)
// with the reason where none is documented.
Status choose_prefetch_control(Hw& hw, MeasureConfig* cfg);

// --prefetchers off around one job on the measuring CPU (MeasureConfig::prefetch): picks
// the plan of this CPU's core type (CPUID.1AH:EAX[31:24] on hybrid parts), sets its
// disable bits MSR by MSR in the plan's order, checks that they stick, and restores every
// MSR exactly (MsrLedger; 1A4H last). Nothing to do when the plan is empty.
class PrefetchGuard {
public:
    Status begin(Hw& hw, const MeasureConfig& cfg, u8* plan_taken);
    Status end();

private:
    Status fail(u32 msr, u64 bits, const Result<u64>& back);
    FixedMsrLedger<PrefetchPlan::kMsrs> ledger_;
};

}  // namespace pmulab
