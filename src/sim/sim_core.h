// The simulated logical processor (SimCpu) of the simulated machine for host tests (the
// machine implements the Hw seam, src/x86/hw.h), with a PMU model written from the Intel SDM (Vol. 3B
// ch. 20 "Performance Monitoring", Vol. 4 Table 2-2, Vol. 2A CPUID/RDPMC) and
// the AMD APM (Vol. 2 §13.2), independently of pmulab's own register headers:
// it is the oracle that pmulab's PMU programming code is tested against.
//
// What is modelled (see also sim_cpu.cpp, and tests/unit/sim/test_sim_cpu.cpp, which
// is the executable specification of every rule):
//
//  * CPUID answers from a per-CPU CpuidSnapshot. A leaf above the maximum basic
//    leaf (or above the maximum extended leaf, or in the hypervisor range when
//    the snapshot has no 4000_0000H) returns the highest basic leaf's data, the
//    sub-leaf honoured, as Intel documents for CPUID; a leaf in range that the
//    snapshot lacks reads as zeros. Leaves that are not sub-leaf indexed ignore ECX.
//  * MSR existence follows CPUID: IA32_PMCx/IA32_PERFEVTSELx for the GP counters
//    (CPUID.0AH:EAX[15:8], or the CPUID.23H.1:EAX bitmap when leaf 23H is
//    enumerated), IA32_A_PMCx only when PDCM and IA32_PERF_CAPABILITIES[13],
//    IA32_FIXED_CTRx for fixed counter i when (v2+) EDX[4:0] > i or (v5+) ECX[i],
//    or per the CPUID.23H.1:EBX bitmap; FIXED_CTR_CTRL and GLOBAL_CTRL/STATUS/
//    OVF_CTRL from v2, GLOBAL_STATUS_SET/INUSE from v4, PERF_CAPABILITIES only
//    with PDCM. Absent MSRs #GP (or, for a QEMU-TCG-like CPU, read as 0 and
//    swallow writes, as QEMU's TCG helpers do).
//  * Reserved bits #GP on WRMSR (PERFEVTSEL 63:32 except EQ/UMASK2 when leaf 23H
//    enumerates them; AnyThread bit 21 before v3; FIXED_CTR_CTRL fields of absent
//    counters; GLOBAL_CTRL bits of absent counters; counter values beyond the
//    width via IA32_A_PMCx/IA32_FIXED_CTRx; read-only MSRs).
//  * AnyThread (PERFEVTSEL bit 21, FIXED_CTR_CTRL bit 4i+2): writable from v3.
//    With CPUID.0AH:EDX[15] (AnyThread deprecation, SDM §20.2.5.1) the bit is
//    still accepted but ignored. Cross-thread counting is not modelled at all:
//    a counter counts the events of its own logical processor only.
//  * Counting: a GP counter counts an event when EN, the event select and unit
//    mask (and UMASK2) match exactly, the USR/OS filter matches the CPU's CPL,
//    and (v2+) its IA32_PERF_GLOBAL_CTRL bit is set. CMASK/INV/EDGE/EQ are
//    evaluated per cycle (see run()). Fixed counters count their architectural
//    event when their FIXED_CTR_CTRL enable field matches the CPL and (v2+) the
//    GLOBAL_CTRL bit 32+i is set. Overflow wraps at the width, sets the
//    GLOBAL_STATUS bit (GP i: bit i, fixed i: bit 32+i) and, when the counter's
//    INT/PMI bit is set, counts a PMI (no interrupt is delivered).
//  * RDPMC: ECX[30] selects the fixed counters, ECX[29:0] the index; other ECX
//    bits and absent counters #GP; CPL > 0 without CR4.PCE #GP; optionally #UD
//    always (QEMU TCG).
//  * AMD: legacy PERF_CTL/CTR0-3 (K7, family 6, and later), PerfCtrExtCore CTL/CTR0-5
//    (CPUID 8000_0001H:ECX[23]; the legacy addresses alias counters 0-3), PerfMonV2
//    global MSRs (8000_0022H:EAX[0]), 48-bit counters, 12-bit event selects. HG_ONLY
//    (PERF_CTL 41:40): the model runs as a host with EFER.SVME = 0, where 00b and 11b
//    count everything and HostOnly or GuestOnly alone count nothing (Linux's
//    amd_pmu_disable_virt note). IRPerfCount (CPUID 8000_0008H:EBX[1]) counts retired
//    instructions (C0h) at every CPL while HWCR[30] is set; MPERF/APERF (CPUID
//    06H:ECX[0]) advance by the cycles of run(), their C000_00E7/E8 aliases are
//    read-only. Counter writes while PERF_CTL.EN = 1 are recorded as violations.
//
//  * NetBurst (ESCR/CCCR): a CPU whose CpuSpec carries a NetBurstModel answers the
//    counter, CCCR and ESCR addresses and RDPMC from it (sim_netburst.h, shared by the
//    two logical processors of a Hyper-Threading package).
//
//  * TopDown: slot budgets and IA32_PERF_METRICS, see sim_topdown.h.
//
//  * Events of the execution (retire(), docs/sim.md "Events"): each family counts a batch
//    of retired instructions in its own encodings: instructions, branches by kind, loads,
//    stores, loads by the cache level that served them (Intel's architectural events, and
//    Skylake's or Ice Lake's by model; AMD's K7+ and Zen events; NetBurst's CRU and FSB
//    events). Cycles follow the cost model (sim_costs.h): one per instruction plus the
//    stall cycles the executor computed from the memory hierarchy's latencies; the TSC,
//    the reference clock and APERF/MPERF advance with them.
//
// How the model is organised: the logical processor here (CPUID, the MSRs every vendor
// has, the log, injected faults, the TSC, SMIs and the executor's API), its PMU one model
// per family behind PmuModel (sim_pmu.h), the machine in sim_machine.h and the builders
// of documented machines in sim_builders.h (sim_cpu.h includes all of them).
//
//  * Interrupts: a counter with its interrupt bit set (PERFEVTSEL/PERF_CTL INT, FIXED_CTR_
//    CTRL PMI) that overflows raises a PMI at the end of the cycle it overflowed in
//    (settle_pmi): IA32_DEBUGCTL.FREEZE_PERFMON_ON_PMI (bit 12) freezes the counters there
//    (v2/v3: GLOBAL_CTRL cleared; v4 and AMD LbrAndPmcFreeze: GLOBAL_STATUS.CTR_FRZ set,
//    SDM Vol. 3B §18.4.7), FREEZE_LBRS_ON_PMI (bit 11) the LBR stack (v2/v3: DEBUGCTL.LBR
//    cleared; v4/AMD: LBR_FRZ), whatever the local APIC does with it; then the local APIC's
//    LVT performance-counter entry (SDM Vol. 3A §11.5.1; lvt_perf()) delivers it unless
//    masked, and sets its mask bit, as the hardware does on delivery (SDM Vol. 3A §11.5.1
//    "Local Vector Table": "it automatically sets the mask flag"; Linux re-arms it in
//    every PMI handler). An
//    NMI delivery is pending for the executor (take_nmi), which runs pmulab's handler at
//    that instruction boundary; a fixed-vector delivery stays pending (interrupts are
//    masked while code runs) and is only counted. IBS (sim_ibs.h) interrupts through the
//    APIC extended LVT entry IBS_CTL names (APM Vol. 2 §16.4.5; lvt_ext(), not masked by
//    the delivery), the same way.
//
//  * PEBS (Skylake-class record format 3, Ice Lake-class format 4 with adaptive groups):
//    sim_pebs.h; the records go into the executor's guest memory (set_guest).
//
// Not modelled: branch prediction (every misprediction event reads 0), TLBs,
// TSX bits 32/33 of PERFEVTSEL (they
// #GP here), RDPMC metrics-clear (PERF_CAPABILITIES[19]), uncore, the sibling thread's
// own events in AnyThread counts (a busy sibling only takes turns, set_sibling_busy),
// unit-mask sub-event OR-ing (unit masks match exactly).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "census/census.h"
#include "sim/sim_ibs.h"
#include "sim/sim_lbr.h"
#include "sim/sim_pmu.h"
#include "sim/sim_rapl.h"
#include "sim/sim_regs.h"
#include "x86/cpuid.h"
#include "x86/hw.h"

namespace sim {

using pmulab::CpuidRegs;
using pmulab::CpuidSnapshot;
using pmulab::CpuTopology;
using pmulab::Error;
using pmulab::Result;
using pmulab::Status;
using pmulab::u16;
using pmulab::u32;
using pmulab::u64;
using pmulab::u8;

// How a CPU answers MSRs it does not implement.
enum class UnknownMsr : u8 {
    gp,         // real hardware: #GP
    read_zero,  // QEMU TCG: RDMSR returns 0, WRMSR is silently dropped
};

enum class Access : u8 { rdmsr, wrmsr, rdpmc };
const char* access_name(Access a);

// One RDMSR/WRMSR/RDPMC as the CPU saw it.
struct LogEntry {
    u64 seq = 0;  // machine-wide order of accesses
    u32 cpu = 0;
    Access kind = Access::rdmsr;
    u32 addr = 0;           // MSR address, or the RDPMC ECX value
    u64 value = 0;          // written value, or the value returned (0 when faulted)
    u8 vector = 0;          // 0 = completed, else the fault (#GP 13 / #UD 6)
    bool injected = false;  // the fault was injected by the test
};
std::string describe(const LogEntry& e);

// "" when equal, else one line per differing MSR ("0x186: 0x0 -> 0x43003c").
std::string diff_state(const PmuState& before, const PmuState& after);

class NetBurstModel;  // sim_netburst.h
class GuestAccess;    // sim_pebs.h

// Everything needed to build one simulated logical processor.
struct CpuSpec {
    CpuidSnapshot cpuid;
    CpuTopology topo;
    u64 perf_capabilities = 0;  // IA32_PERF_CAPABILITIES (exists only with PDCM)
    u32 microcode = 0x2a;       // IA32_BIOS_SIGN_ID[63:32]
    PmuOverrides pmu;
    UnknownMsr unknown = UnknownMsr::gp;
    bool rdpmc_ud = false;  // RDPMC always raises #UD (QEMU TCG)
    // NetBurst ESCR/CCCR PMU (sim_netburst.h): the package's register file and this
    // logical processor's thread number in it (0/1).
    std::shared_ptr<NetBurstModel> netburst;
    u32 netburst_thread = 0;
};

struct Shared;  // machine-wide sequence counter and fault countdown

class SimCpu {
public:
    SimCpu(u32 index, const CpuSpec& spec, std::shared_ptr<Shared> shared);
    SimCpu(SimCpu&&) noexcept;
    SimCpu& operator=(SimCpu&&) noexcept;
    ~SimCpu();

    u32 index() const { return index_; }
    const CpuidSnapshot& snapshot() const { return spec_.cpuid; }
    // What the CPU was built from (to rebuild a machine from some of its CPUs).
    const CpuSpec& spec() const { return spec_; }
    const PmuLayout& pmu() const { return model_->layout(); }
    // The NetBurst register file (null unless the CPU has one) and the thread number.
    NetBurstModel* netburst() const { return spec_.netburst.get(); }
    u32 netburst_thread() const { return spec_.netburst_thread; }
    CpuTopology& topology() { return spec_.topo; }
    const CpuTopology& topology() const { return spec_.topo; }

    // ---- reachability (what run_on_cpu reports) ----
    // MP Services cannot start this AP: run_on_cpu fails with the EFI status name.
    void set_unreachable(const char* efi_status = "EFI_TIMEOUT");
    bool unreachable() const { return !unreachable_status_.empty(); }
    const std::string& unreachable_status() const { return unreachable_status_; }
    // The firmware reports the processor disabled (StatusFlag without ENABLED).
    void set_enabled(bool on) { spec_.topo.enabled = on; }

    // ---- execution context ----
    void set_cpl(u8 cpl);
    u8 cpl() const { return cpl_; }
    void set_cr4_pce(bool on) { pce_ = on; }
    void set_rdpmc_ud(bool on) { spec_.rdpmc_ud = on; }
    void set_unknown_msr(UnknownMsr u) { spec_.unknown = u; }
    // Changes IA32_PERF_CAPABILITIES (and with it whether IA32_A_PMCx exist).
    void set_perf_capabilities(u64 v);

    // ---- the instructions: logged, may fault (the executor's API, with retire()) ----
    CpuidRegs cpuid(u32 leaf, u32 subleaf) const;
    Result<u64> rdmsr(u32 msr);
    Status wrmsr(u32 msr, u64 value);
    Result<u64> rdpmc(u32 ecx);
    u64 rdtsc();
    // A batch of retired instructions, counted as this CPU's PMU family counts them
    // (PmuModel::retire; docs/sim.md "Events"). The cost model (sim_costs.h): the batch
    // takes r.cycles() core cycles, first r.instructions cycles retiring one instruction
    // each, then r.stall_cycles cycles retiring none (stall()); the reference clock and
    // the TSC advance by r.cycles().
    void retire(const Retired& r);

    // ---- driving events ----
    // n occurrences of one event, one per cycle over n cycles of otherwise unmodelled
    // time: only counters selecting this event (and the fixed counter whose
    // architectural event it is) see them. CMASK/INV/EDGE/EQ are evaluated on
    // those n cycles (per-cycle count 1). Does not advance cycles or the TSC.
    void event(u16 event_select, u16 umask, u64 n);
    // `cycles` unhalted core cycles in each of which every listed event occurs
    // per_cycle times (plus the core-cycle event 3CH/00H once). Every enabled GP
    // counter is evaluated per cycle: count = sum of matching occurrences c;
    // CMASK = 0: +c per cycle (INV ignored, SDM); CMASK != 0: condition
    // c >= CMASK (c == CMASK with EQ), inverted by INV, +1 per cycle where it
    // holds; EDGE: +1 per false->true transition of the condition (CMASK = 0:
    // c > 0), the state carried across calls. Fixed counter 1 counts the cycles,
    // the others their listed events. Does not advance the TSC.
    void run(u64 cycles, std::initializer_list<Occurrence> each_cycle = {});
    void run(u64 cycles, const std::vector<Occurrence>& each_cycle);
    // `cycles` cycles in which no instruction retires, waiting on memory (the stall cycles
    // of a retire() batch): run() with the listed events, except that a TopDown budget
    // issues every slot as backend bound and memory bound (sim_topdown.h) and no SMI
    // comes in between (they belong to the batch's run).
    void stall(u64 cycles, const std::vector<Occurrence>& each_cycle);
    void cycles(u64 n) { run(n); }
    void instructions(u64 n) { event(0xC0, 0x00, n); }
    // Reference cycles: the model's reference clock is the TSC clock. Feeds
    // UnHalted Reference Cycles (3CH/01H) on GP counters, fixed counter 2
    // (CPU_CLK_UNHALTED.REF_TSC) and advances the TSC by n.
    void ref_cycles(u64 n);
    void slots(u64 n) { event(0xA4, 0x01, n); }
    u64 pmi_count() const { return model_->pmi_count(); }

    // ---- interrupts (see "Interrupts" above) ----
    // The local APIC's LVT performance-counter entry (vector 7:0, delivery mode 10:8, mask
    // 16); masked at reset. Not an MSR here: pmulab reaches it through its platform.
    u32 lvt_perf() const { return lvt_perf_; }
    void set_lvt_perf(u32 v) { lvt_perf_ = v & kLvtPerfWritable; }
    static constexpr u32 kLvtMasked = 1u << 16, kLvtDeliveryNmi = 4u << 8;
    static constexpr u32 kLvtPerfWritable = 0x1'07FF;
    // A delivered NMI the executor has not taken yet (taking it clears it).
    bool take_nmi() {
        bool p = nmi_pending_;
        nmi_pending_ = false;
        return p;
    }
    u64 nmis_delivered() const { return nmis_; }
    // PMIs delivered with a fixed vector (they stay pending: interrupts are masked).
    u64 fixed_pmis() const { return fixed_pmis_; }
    // The AMD extended LVT entries (APM Vol. 2 §16.4.5; APIC 500h + 10h * n), masked at
    // reset: kExtLvtCount on an AMD CPU, none elsewhere (no extended APIC space).
    static constexpr u32 kExtLvtCount = 4;
    u32 ext_lvt_count() const { return ibs_.present() || pmu().kind == PmuLayout::Kind::amd ? kExtLvtCount : 0; }
    u32 lvt_ext(u32 n) const { return n < kExtLvtCount ? lvt_ext_[n] : kLvtMasked; }
    void set_lvt_ext(u32 n, u32 v) {
        if (n < kExtLvtCount) lvt_ext_[n] = v & kLvtPerfWritable;
    }
    // Instruction-Based Sampling (sim_ibs.h); the executor reports each instruction before
    // the retire() of its one-instruction batch while IBS counts (needs_each_instruction).
    const IbsUnit& ibs() const { return ibs_; }
    void seed_ibs(u64 seed) { ibs_.seed(seed); }  // its randomisation (pmulab-sim --seed)
    void op(const OpInfo& o) {
        op_ = o;
        op_pending_ = true;
    }
    // The executor's guest memory and registers while it runs code on this CPU (null
    // otherwise): PEBS writes its records there (sim_pebs.h).
    void set_guest(GuestAccess* g) { guest_ = g; }
    GuestAccess* guest() const { return guest_; }
    // Whether the executor must retire instruction by instruction: a PMI can come (PEBS
    // included), the LBR stack records branches, or IBS counts ops.
    bool needs_each_instruction() const { return model_->pmi_armed() || lbr_recording() || ibs_.counting(); }
    // A taken branch retired (the executor, before the batch with the branch is retired):
    // the LBR stack records it (sim_lbr.h, when enabled and not frozen) when that batch
    // retires, with the core cycles from the last recorded branch's retirement to its own.
    void taken_branch(u64 from, u64 to, u8 kind);
    bool lbr_recording() const;
    // Core cycles since reset (unhalted, counted or not): LBR cycle counts.
    u64 core_cycles() const { return core_cycles_; }
    // A broken PMU for selftest's own tests: overflows raise no PMI; freeze freezes nothing;
    // the LBR stack records nothing.
    void break_pmi(bool on) { model_->break_pmi(on); }
    void break_freeze(bool on) { model_->break_freeze(on); }
    void break_lbr(bool on) { lbr_.set_broken(on); }
    // A PMU that miscounts, for the report's exact-count checks (docs/report.md): every 256th
    // instruction / branch retired is counted twice (the executor still runs each once).
    void break_instructions(bool on) { broken_instructions_ = on; }
    void break_branches(bool on) { broken_branches_ = on; }
    // The LBR facility this CPU has (sim_lbr.h).
    const LbrLayout& lbr() const { return lbr_.layout(); }
    // How this CPU's simulation produces the event (event select, unit mask) on a GP
    // counter (docs/sim.md "Events"): retire()'s events in its family's encodings, and,
    // modelled, those a TopDown budget or set_each_cycle adds. NetBurst's ESCR events are
    // not GP events: not_modelled here (docs/sim.md lists them).
    EventSource event_source(u16 event_select, u16 umask) const;

    // ---- TopDown (sim_topdown.h): the budget of run()'s cycles; the body budget while in body ----
    void set_topdown(const TopdownBudget& b);
    void set_topdown_body(const TopdownBudget& b);
    void set_in_body(bool on) { in_body_ = on; }
    // A test's model of further events of every run() cycle (sim_topdown.h): each occurs
    // per_cycle times per cycle besides the budget's (e.g. AMD PMCx0C2/0C3 branches and
    // PMCx064 L2 requests, for the derived metrics). Empty: none (the default).
    void set_each_cycle(const std::vector<Occurrence>& e) { each_cycle_ = e; }
    bool has_topdown_budget() const { return td_base_.slots_per_cycle != 0; }
    u64 topdown_count(unsigned i) const { return model_->topdown_count(i); }
    u64 perf_metrics_value() const { return model_->perf_metrics_value(); }

    // ---- the SMT sibling (docs/sim.md "SMT siblings") ----
    // The other thread of this core runs a load of its own (busy) or is halted (the default,
    // as pmulab keeps it on hardware). While it runs, the two threads take turns: every cycle
    // of run() this thread spends is followed by one in which the sibling owns the core's
    // slots (this thread unhalted, none of its events but the core cycles; APERF/MPERF and
    // the TSC advance too), so the same code takes twice the cycles with the same per-thread
    // events, CPU_CLK_UNHALTED.ONE_THREAD_ACTIVE (3C.02) stops and AnyThread cycle counts
    // equal this thread's (both threads run throughout).
    void set_sibling_busy(bool on) {
        sibling_busy_ = on;
        model_->set_sibling_busy(on);
    }
    bool sibling_busy() const { return sibling_busy_; }

    u64 tsc() const { return tsc_; }
    void set_tsc(u64 v) { tsc_ = v; }
    // The RAPL energy counters (sim_rapl.h; poke() presets a status counter).
    const SimRapl& rapl() const { return rapl_; }
    void set_rapl_interval(u64 ticks) { rapl_.set_interval(ticks); }
    // RDTSC returns the TSC, then advances it by `step` (0: time stands still).
    void set_rdtsc_step(u64 step) { rdtsc_step_ = step; }
    // System-management interrupts: every `every`-th call of run() (among the executor's
    // batches, retire(), the next one of the measured body) first runs `extra`
    // cycles of SMM code retiring one instruction per cycle. The PMU counts them unless
    // IA32_DEBUGCTL.FREEZE_WHILE_SMM (bit 14, where IA32_PERF_CAPABILITIES[12]) is set
    // (SDM Vol. 3B §20.8 "Freezing ... while in SMM"); MSR_SMI_COUNT counts each SMI, and so
    // does AMD's PMCx02B (ls_smi_rx) from family 17h;
    // APERF/MPERF advance (the core is in C0). The TSC does not advance (the model's time
    // is the measured instruction stream).
    void set_smi(u64 every, u64 extra) {
        smi_every_ = every;
        smi_extra_ = extra;
    }
    // The SMIs so far, whatever the vendor (the tests' oracle of MSR_SMI_COUNT and PMCx02B).
    u64 smis() const { return smis_; }
    // A coarse reference clock: REF_TSC (fixed counter 2, event 3C.01) advances by `step`
    // TSC ticks once per reference-clock tick (e.g. 100 for a 2.4 GHz TSC and a 24 MHz
    // crystal), `phase` ticks into the first period, as real parts do (perfmon: "the
    // counter update is done at a lower clock rate then the core clock"). The default is
    // CPUID.15H's EBX/EAX on Intel parts that enumerate it, else 1 (sim_cpu.cpp).
    void set_ref_clock(u64 step, u64 phase = 0) {
        ref_step_ = step ? step : 1;
        ref_phase_ = phase;
    }
    // KVM TSC scaling: the guest's TSC runs at den/num of the host's, while fixed counter 2
    // (REF_TSC) counts the host's TSC ticks, num/den of them per guest tick (the PMU is not
    // scaled with the TSC). 1/1 (none) by default.
    void set_host_tsc_scale(u64 num, u64 den) {
        ref_scale_num_ = num ? num : 1;
        ref_scale_den_ = den ? den : 1;
        ref_scale_acc_ = 0;
    }

    // ---- direct state access for tests: no log, no faults ----
    bool msr_exists(u32 msr) const;
    // What RDMSR would return; aborts the test binary for an MSR that does not exist.
    u64 peek(u32 msr) const;
    // Sets raw state (e.g. what firmware left behind) without the WRMSR checks;
    // counters are masked to their width. Aborts for an MSR that does not exist.
    void poke(u32 msr, u64 value);
    // Adds a plain read/write MSR (or a read-only one) to this CPU.
    void define_msr(u32 msr, u64 value, bool writable = true);

    // ---- fault injection (for error-path tests) ----
    // The k-th WRMSR from now on this CPU (k = 1: the next one) faults, once.
    void fail_nth_wrmsr(u64 k, u8 vector = pmulab::kVectorGP);
    // Every WRMSR / RDMSR to this MSR faults until clear_faults().
    void fail_wrmsr_to(u32 msr, u8 vector = pmulab::kVectorGP);
    void fail_rdmsr_to(u32 msr, u8 vector = pmulab::kVectorGP);
    void clear_faults();

    // ---- programming-rule checks (recorded, never faulted: hardware does not check) ----
    // SDM §20.2.1.1: "The event logic unit for a UMASK must be disabled by setting
    // IA32_PERFEVTSELx[bit 22] = 0, before writing to IA32_PMCx." Every WRMSR to
    // IA32_PMCx / IA32_A_PMCx while its PERFEVTSELx.EN is set adds a line here.
    const std::vector<std::string>& violations() const { return model_->violations(); }
    void clear_violations() { model_->clear_violations(); }

    // ---- inspection ----
    const std::vector<LogEntry>& log() const { return log_; }
    std::vector<LogEntry> writes() const;  // the WRMSR entries only
    void clear_log() { log_.clear(); }
    // Every PMU MSR that exists (counters, selectors, controls, status) -> value.
    PmuState pmu_state() const;

private:
    // The MSRs of the logical processor itself (the PMU's are its model's).
    enum class Reg : u8 {
        none,
        perf_caps,
        tsc,
        bios_sign,
        pkrs,
        misc_enable,
        debugctl,
        smi_count,
        aperf,
        mperf,
        aperf_ro,
        mperf_ro,
        lbr,             // the LBR stack's MSRs (sim_lbr.h)
        prefetch,        // the prefetcher control MSR (prefetch_bits)
        ecore_prefetch,  // the E cores' 1320H-1327H (ecore_prefetch_bits)
        uncore,          // the package's C-Box counters (sim_uncore.h)
        amd_l3,          // the L3 complex's PMU (sim_amd_l3.h)
        ibs,             // the IBS MSRs (sim_ibs.h)
        rapl,            // the RAPL energy MSRs (sim_rapl.h)
        extra,
    };
    // The writable bits of the hardware prefetcher control at `msr` on this model (1A4H on
    // Intel Nehalem..Broadwell, C000_0108H on AMD 19h/1Ah), 0 where it does not exist.
    u64 prefetch_bits(u32 msr) const;
    // The writable bits of E-core prefetcher MSR `msr` (1320H-1327H, Intel 357930 §4), 0
    // where it does not exist (P cores, other CPUs).
    u64 ecore_prefetch_bits(u32 msr) const;
    struct Extra {
        u64 value = 0;
        bool writable = true;
    };

    Reg classify(u32 msr) const;
    u64 read_reg(Reg r, u32 msr) const;
    // Returns 0 or the fault vector.
    u8 write_reg(Reg r, u32 msr, u64 value);
    // Returns false when the MSR has no state to set.
    bool poke_reg(Reg r, u32 msr, u64 value);
    u8 injected_wrmsr_fault(u32 msr);
    void record(Access kind, u32 addr, u64 value, u8 vector, bool injected);
    // TopDown: `each` plus the budget's events (in *buf).
    const std::vector<Occurrence>& topdown_cycles(u64 cycles, const std::vector<Occurrence>& each,
                                                  std::vector<Occurrence>* buf);
    void smi();
    // A PMI raised by the model: freeze (DEBUGCTL), then delivery through the LVT entry.
    void settle_pmi();
    // IBS's interrupt through the extended LVT entry IBS_CTL names.
    void settle_ibs();
    bool freeze_armed() const { return (debugctl_ >> 12) & 1; }
    // model_->run, cycle by cycle where a freeze on PMI can stop the counters mid-run.
    void count_cycles(u64 cycles, const std::vector<Occurrence>& each);

    u32 index_;
    CpuSpec spec_;
    std::unique_ptr<PmuModel> model_;
    LbrStack lbr_;
    IbsUnit ibs_{CpuidSnapshot()};
    OpInfo op_;
    bool op_pending_ = false;
    u32 lvt_ext_[kExtLvtCount] = {kLvtMasked, kLvtMasked, kLvtMasked, kLvtMasked};
    SimRapl rapl_;
    struct PendingBranch {
        u64 from = 0, to = 0;
        u8 kind = 0;
        bool valid = false;
    } lbr_pending_;  // taken_branch: recorded when its batch retires
    std::shared_ptr<Shared> shared_;
    std::string unreachable_status_;
    u8 cpl_ = 0;
    bool pce_ = false;
    u64 tsc_ = 0;
    u64 rdtsc_step_ = 0;
    u64 ref_step_ = 1, ref_phase_ = 0;
    u64 ref_scale_num_ = 1, ref_scale_den_ = 1, ref_scale_acc_ = 0;
    u64 smi_every_ = 0, smi_extra_ = 0, runs_ = 0;
    u64 smi_count_ = 0;  // MSR_SMI_COUNT
    u64 smis_ = 0;       // every SMI
    u64 debugctl_ = 0;   // IA32_DEBUGCTL
    u32 lvt_perf_ = kLvtMasked;
    bool nmi_pending_ = false;
    GuestAccess* guest_ = nullptr;
    u64 nmis_ = 0, fixed_pmis_ = 0, core_cycles_ = 0;
    bool in_smi_ = false;
    bool sibling_busy_ = false;
    bool in_retire_ = false;  // run() called by retire()
    bool broken_instructions_ = false, broken_branches_ = false;
    u64 instructions_seen_ = 0, branches_seen_ = 0;  // the broken counts' running totals
    void miscount(Retired* r);                       // applies the broken counts to a batch
    bool smi_due_ = false;
    u64 pkrs_ = 0;
    u64 misc_enable_ = 0;
    u64 prefetch_ctl_ = 0;  // MSR 1A4H / C000_0108H where prefetch_bits says it exists
    // 1320H-1327H at reset: the L2 next-line prefetcher off (1321H[40]; 357930 §1.3.4: "by
    // default, turned off"), the rest 0. Per logical processor (real ones: per module of four).
    u64 ecore_prefetch_[8] = {0, u64(1) << 40, 0, 0, 0, 0, 0, 0};
    u64 aperf_ = 0, mperf_ = 0;
    std::map<u32, Extra> extra_;
    TopdownBudget td_base_, td_body_;
    bool td_body_set_ = false, in_body_ = false, in_stall_ = false;
    std::vector<Occurrence> each_cycle_;
    u64 nth_wrmsr_ = 0;
    u8 nth_vector_ = 0;
    std::map<u32, u8> fail_wr_, fail_rd_;
    std::vector<LogEntry> log_;
};

}  // namespace sim
