// What pmulab reads on one logical processor, captured there once and decoded anywhere
// afterwards: the CPUID leaves (capture_cpuid), IA32_PERF_CAPABILITIES, IA32_MISC_ENABLE
// on NetBurst, and the RDPMC probe. pmu_probe (pmu/pmu.h) fills it on the CPU; the
// PMU detection (pmu_decode), the census and the event-file choice are pure functions
// of it, so one visit per CPU serves every consumer of a command.
#pragma once

#include "x86/cpuid.h"

namespace pmulab {

// One register read on the probed CPU: not attempted, its value, or its fault.
struct ProbeRead {
    bool attempted = false;
    bool ok = false;
    u64 value = 0;
    Error error;  // !ok && attempted: the fault (vector and message), e.g. "RDPMC 0x0 raised #UD ..."

    void set(const Result<u64>& r) {
        attempted = true;
        ok = r.ok();
        value = r.ok() ? r.value() : 0;
        if (!r.ok()) error = r.error();
    }
    bool faulted() const { return attempted && !ok; }
};

struct CpuProbe {
    CpuidSnapshot cpuid;
    // IA32_PERF_CAPABILITIES (SDM Vol. 4 Table 2-2): read only when CPUID.01H:ECX.PDCM[15]
    // = 1; hypervisors sometimes set PDCM without the MSR (a fault: treated as absent).
    ProbeRead perf_caps;
    // IA32_MISC_ENABLE, read only on NetBurst: bit 7 (Performance Monitoring Available)
    // says whether the ESCR/CCCR counters exist.
    ProbeRead misc_enable;
    // DE_CFG (C001_1029H), read on AMD/Hygon family >= 10H by the measurement's probe
    // (not by the census): bit 1 says whether LFENCE is dispatch-serialising.
    ProbeRead de_cfg;
    // RDPMC of an existing counter (ECX = 0 when there is none): works, or #UD/#GP.
    u32 rdpmc_index = 0;
    ProbeRead rdpmc;
};

}  // namespace pmulab
