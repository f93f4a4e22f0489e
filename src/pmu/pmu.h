// The per-CPU PMU programming layer: detection of a logical processor's PMU, counter
// allocation, programming, start/stop, reads, overflow, and exact save/restore of every
// PMU MSR pmulab writes.
//
// Structure
//   CpuProbe     what pmulab reads on one logical processor (x86/probe.h), taken there
//                once by pmu_probe (hybrid parts differ per core).
//   PmuInfo      what that processor has, backend-neutral: pmu_decode of its probe
//                (pure: no hardware access, any CPU).
//   PmuFamily    one description per PMU family (pmu_family.h, as Linux's struct
//                x86_pmu): decode, allocation, summary and programming hooks of Intel
//                architectural (intel_pmu.cpp: perfmon v1-v6), AMD (amd_pmu.cpp:
//                legacy, PerfCtrExtCore, PerfMonV2) and NetBurst (netburst_pmu.cpp:
//                ESCR/CCCR), listed once in pmu.cpp (kPmuFamilies).
//   PmuBackend   the programming interface (session.h), written once: its guards and
//                the MSR ledger around the family's hooks.
//   PmuSession   one CPU's session (session.h), a PmuBackend bound to the CPU's family
//                that guarantees restore (plan(): bound for planning only).
//
// Everything that touches the hardware runs on the CPU concerned (inside
// Hw::run_on_cpu) and is allocation-free: sessions and backends hold fixed arrays.
//
// Lifecycle on one CPU
//     PmuSession s;  s.open(hw, info);           // info: pmu_decode of this CPU's probe
//     s.backend();                               // null: no PMU (s.info().absent says why)
//     s.save(touch_set(events, alloc));          // RDMSR of every MSR the groups will write
//     for each group g:
//         s.program(events, g);                  // counting stays off
//         s.start(); ...measured code...; s.stop();
//         s.read(kind, index);                   // counter value (width bits)
//     s.close();                                 // restore(): exact, also after errors
//
// Intel programming sequence (SDM Vol. 3B §20.2, "Architectural Performance Monitoring";
// section numbers as in x86/intel_regs.h):
//   program:  v2+: IA32_PERF_GLOBAL_CTRL = 0.  Each GP counter of the group: EN cleared
//             in IA32_PERFEVTSELx if it was set (§20.2.1.1: "disabled ... before writing
//             to IA32_PMCx"), the preset written to IA32_A_PMCx (full-width writes,
//             PERF_CAPABILITIES.FW_WRITE[13], §20.2.6) or IA32_PMCx (legacy: bits 31:0
//             sign-extended), then IA32_PERFEVTSELx = the event (v2+ with EN, gated by
//             GLOBAL_CTRL; v1 without). Fixed counters: their IA32_FIXED_CTR_CTRL fields
//             cleared, IA32_FIXED_CTRx = preset (full width at its own address), then the
//             fields set (OS/USR per the event). v2+: the group's overflow bits cleared
//             through IA32_PERF_GLOBAL_OVF_CTRL (v2/v3) / _STATUS_RESET (v4+).
//   start:    v2+: IA32_PERF_GLOBAL_CTRL = the group's enables (one WRMSR);
//             v1: IA32_PERFEVTSELx.EN set, counter by counter.
//   stop:     the reverse (GLOBAL_CTRL = 0, or EN cleared).
//   restore:  GLOBAL_CTRL = 0 and EN cleared first; counters; controls (PERFEVTSELx,
//             FIXED_CTR_CTRL, model-specific aux MSRs); overflow bits; GLOBAL_CTRL last.
//             The bookkeeping (saved values, shadows, the ordered restore) is the
//             backend's MsrLedger (msr_ledger.h), shared by all three families.
#pragma once

#include "pmu/alloc.h"
#include "x86/hw.h"
#include "x86/probe.h"

namespace pmulab {

enum class PmuKind : u8 {
    none,        // no usable counters (only the TSC)
    intel_arch,  // Intel architectural performance monitoring, CPUID.0AH version 1..6
    amd,         // AMD core PMU: legacy / PerfCtrExtCore / PerfMonV2 (amd_pmu.h)
    netburst,    // Intel NetBurst ESCR/CCCR (netburst_pmu.h)
};
const char* pmu_kind_name(PmuKind k);  // "none", "intel_arch", "amd", "netburst"

// How counters are read: RDPMC when it works on this CPU, else RDMSR of the counter MSR.
enum class CounterMethod : u8 { rdpmc, rdmsr };
const char* counter_method_name(CounterMethod m);  // "rdpmc", "rdmsr"

// One counter read as generated code performs it (RDPMC with ECX = index, RDMSR with
// ECX = index, or RDTSC); values are taken modulo 2^width.
struct CounterAccess {
    enum Kind : u8 { rdpmc, rdmsr, rdtsc };
    Kind kind = rdtsc;
    u32 index = 0;
    u8 width = 64;
};

// Performs one read on the calling CPU (RDPMC, RDMSR or RDTSC), masked to its width.
Result<u64> perform_read(Hw& hw, const CounterAccess& a);
// The error of a backend asked to read a counter its CPU does not have.
Error absent_counter_error(CounterKind kind, u8 index);

// RDPMC selectors (SDM Vol. 2B, RDPMC): ECX[30] selects the fixed-function counters.
inline constexpr u32 kRdpmcFixed = 0x40000000u;

// The PMU MSR writes to perform at a given point (start or stop of counting); the same
// values start()/stop() write, for generated code.
struct PmuWriteList {
    static constexpr unsigned kMax = 20;
    MsrValue w[kMax];
    unsigned count = 0;
    void add(u32 msr, u64 value) {
        if (count < kMax) w[count++] = MsrValue{msr, value};
    }
};

// AMD LFENCE (issue 11, item 5): dispatch-serialising only when DE_CFG[1] is set, which
// Linux does at boot and firmware may not.
enum class LfenceSerializing : u8 {
    not_amd,  // Intel and others: LFENCE waits for all prior instructions (SDM LFENCE)
    yes,      // AMD, DE_CFG[1] = 1, or family 0FH/11H (always serialising)
    no,       // AMD, DE_CFG[1] = 0 (firmware left it clear)
    unknown,  // AMD, DE_CFG not probed (census) or its RDMSR faulted (a hypervisor)
};
// How a measurement must serialise around its counter reads on this CPU:
//   lfence               LFENCE is dispatch-serialising as it is;
//   lfence_after_de_cfg  set DE_CFG[1] for the measurement (WRMSR de_cfg_for_measurement(
//                        info.de_cfg)) and write info.de_cfg back afterwards, as the OS would;
//   cpuid                DE_CFG is not usable: serialise with CPUID instead of LFENCE.
// The engine records the choice (serialize_name) in its meta record.
enum class SerializeWith : u8 { lfence, lfence_after_de_cfg, cpuid };
const char* serialize_name(SerializeWith s);  // "lfence", "lfence_after_de_cfg", "cpuid"
struct PmuInfo;
SerializeWith serialize_choice(const PmuInfo& info);
// DE_CFG with LfenceSerializing (bit 1) set, the other bits as read.
u64 de_cfg_for_measurement(u64 de_cfg);
// AMD families 0FH and 11H: LFENCE is always dispatch-serialising, there is no DE_CFG bit
// to set (AMD, "Software Techniques for Managing Speculation on AMD Processors", 2018;
// Linux init_amd: "On families which don't have that MSR, LFENCE is already serializing").
constexpr bool amd_lfence_always_serialising(u32 family) { return family == 0x0F || family == 0x11; }
// Whether pmu_probe reads DE_CFG on an AMD/Hygon CPU of this family (10H and later, not 11H).
constexpr bool amd_reads_de_cfg(u32 family) { return family >= 0x10 && !amd_lfence_always_serialising(family); }

// What one logical processor has: pmu_decode of a probe taken on that processor.
struct PmuInfo {
    PmuKind kind = PmuKind::none;
    Vendor vendor = Vendor::other;
    char vendor_string[13] = {};
    bool hypervisor = false;
    u8 core_type = kCoreTypeNone;  // CPUID.1AH:EAX[31:24] on hybrid parts
    // CPUID.0AH / 23H decoded on this CPU, plus IA32_PERF_CAPABILITIES when PDCM is set.
    PmuCaps caps;
    bool perf_caps_fault = false;  // PDCM set, but RDMSR 0x345 faulted (treated as absent)

    // The counters pmulab programs (x86/intel_regs.h per-version rules; clipped to 16 + 16).
    u8 version = 0;
    u32 gp_mask = 0;     // bit i = IA32_PMCi (leaf 23H bitmap when enumerated)
    u32 fixed_mask = 0;  // bit i = IA32_FIXED_CTRi (ECX mask on v5+, Core 2 quirk)
    u8 gp_width = 0, fixed_width = 0;
    bool global_ctrl = false;        // v2+: IA32_PERF_GLOBAL_CTRL/STATUS/OVF_CTRL
    bool status_reset = false;       // v4+: STATUS_RESET/STATUS_SET
    bool full_width_writes = false;  // IA32_A_PMCx (PERF_CAPABILITIES.FW_WRITE)

    // The event-spec dialect of this PMU (events.h): what parse_event_list needs.
    EventDialect dialect = EventDialect::intel;

    CounterMethod method = CounterMethod::rdmsr;
    // Why RDMSR (empty when RDPMC works), e.g. "RDPMC 0x0 raised #UD (invalid opcode)".
    char method_note[120] = {};
    // kind == none: why there are no counters, e.g. "no architectural performance
    // monitoring: CPUID.0AH:EAX[7:0] = 0 (a hypervisor without PMU passthrough)".
    char absent[200] = {};

    // AMD: whether LFENCE is dispatch-serialising (DE_CFG C001_1029H[1], read by
    // pmu_probe on family >= 10H; not_amd elsewhere, where LFENCE is). See serialize_choice.
    LfenceSerializing lfence = LfenceSerializing::not_amd;
    u64 de_cfg = 0;  // the value read (lfence yes/no)

    // The same PMU in every respect that matters for planning (caps, widths, core type,
    // read method): CPUs that agree can share one plan and one generated region.
    bool same_pmu(const PmuInfo& o) const;
};

// Probes the calling logical processor (x86/probe.h): CPUID (capture_cpuid), then
// IA32_PERF_CAPABILITIES when CPUID.01H:ECX.PDCM = 1, IA32_MISC_ENABLE on NetBurst, then
// an RDPMC probe of the first counter pmu_decode will find (ECX = 0 when none).
// Allocation-free; runs on the CPU concerned (inside Hw::run_on_cpu). Never fails:
// faults are recorded in the probe. ProbeRdpmc::skip leaves the RDPMC probe out (the
// census reads only CPUID and the MSRs it reports; pmu_decode then picks RDMSR).
enum class ProbeRdpmc : u8 { probe, skip };
void pmu_probe(Hw& hw, CpuProbe* out, ProbeRdpmc rdpmc = ProbeRdpmc::probe);
// The PMU a probe describes (a #UD or #GP of the RDPMC probe selects RDMSR). Pure: no
// hardware access, any CPU; the same probe always decodes to the same info.
void pmu_decode(const CpuProbe& probe, PmuInfo* out);
// pmu_probe + pmu_decode of the calling logical processor.
void pmu_detect(Hw& hw, PmuInfo* out);

// One CPU of a command's CPU set, probed once (on it) and decoded: what every consumer
// of the command (planning, event files, reports) reads instead of visiting it again.
struct ProbedCpu {
    u32 cpu = 0;
    Status status;  // the run_on_cpu failure; probe and info are empty then
    CpuProbe probe;
    PmuInfo info;
};

// Probes every CPU of `cpus`, in order, and decodes each. run(cpu, fn) runs the
// callable fn on `cpu` (default: run_on(hw, ...); the selftest passes its measurement
// platform's dispatcher). A CPU that cannot be reached keeps its error in `status`.
template <typename Run> void probe_cpus(Hw& hw, const Vec<u32>& cpus, Vec<ProbedCpu>* out, Run&& run) {
    out->clear();
    out->resize(cpus.size());
    for (usize i = 0; i < cpus.size(); ++i) {
        ProbedCpu& c = (*out)[i];
        c.cpu = cpus[i];
        c.status = run(cpus[i], [&] { pmu_probe(hw, &c.probe); });
        if (c.status.ok()) pmu_decode(c.probe, &c.info);
    }
}
void probe_cpus(Hw& hw, const Vec<u32>& cpus, Vec<ProbedCpu>* out);

// Groups items 0..n-1 by an equivalence same(i, j) (i < j): each group lists its members
// in index order, the groups in order of their first member. The one grouping of CPUs
// by PMU (census tables, planning, the events command).
template <typename Same> Vec<Vec<u32>> group_indices(usize n, Same&& same) {
    Vec<Vec<u32>> groups;
    Vec<bool> done;
    done.resize(n);
    for (usize i = 0; i < n; ++i) {
        if (done[i]) continue;
        Vec<u32>& g = groups.emplace();
        for (usize j = i; j < n; ++j)
            if (!done[j] && (j == i || same(i, j))) {
                done[j] = true;
                g.push(u32(j));
            }
    }
    return groups;
}

// Indices of probed CPUs (ProbedCpu or a struct derived from it) grouped by
// PmuInfo::same_pmu, in first-seen order; a CPU that could not be probed is a group of
// its own. CPUs of one group share one plan and one generated region.
template <typename T> Vec<Vec<u32>> group_by_pmu(const Vec<T>& cpus) {
    return group_indices(cpus.size(), [&](usize i, usize j) {
        const ProbedCpu& a = cpus[i];
        const ProbedCpu& b = cpus[j];
        return a.status.ok() && b.status.ok() && a.info.same_pmu(b.info);
    });
}

// One-line human summary: "Intel architectural PMU v4: PMC0-3 (48 bits), FIXED_CTR0-2
// (48 bits), full-width writes, RDPMC" or "no PMU counters: <absent>".
void put_pmu_summary(StrBuf& out, const PmuInfo& info);

// Counter allocation on this PMU (alloc.h rules) plus the checks only the backend knows:
// architectural events that CPUID.23H.3:EAX marks unsupported are refused where they
// would need a general-purpose counter. Without a PMU only 'tsc' allocates.
Status pmu_allocate(const PmuInfo& info, const Event* events, usize n, Allocation* out);

// The registers an allocation will write: its GP and fixed counters (union over all
// groups) and the model-specific MSRs of its events (nanoBench MSR_* modifiers).
struct PmuTouch {
    static constexpr unsigned kMaxAux = 4;
    u32 gp = 0;
    u32 fixed = 0;
    u32 aux[kMaxAux] = {};
    unsigned aux_count = 0;
};
Result<PmuTouch> touch_set(const Event* events, usize n, const Allocation& a);
// One group only.
Result<PmuTouch> touch_set(const Event* events, usize n, const CounterGroup& g);

// The overflow state read after a group ran.
struct OverflowState {
    bool known = false;  // false on v1 (no IA32_PERF_GLOBAL_STATUS)
    u32 gp = 0;          // bit i: PMCi overflowed
    u32 fixed = 0;       // bit i: FIXED_CTRi overflowed
};

// Registers that restore() could not bring back exactly (legacy 32-bit counter writes,
// or overflow bits v2/v3 cannot set again); 0 everywhere on a normal close.
struct RestoreReport {
    u32 gp_counters_inexact = 0;  // PMCi held a value a legacy write cannot reproduce
    u64 status_bits_lost = 0;     // GLOBAL_STATUS bits that were set before (v2/v3)
};

// Width-aware difference of two readings of a counter (one wrap at most).
inline u64 pmu_delta(u64 before, u64 after, unsigned width) { return regs::counter_delta(before, after, width); }

}  // namespace pmulab
