// Simulated multi-CPU machine for host tests: an implementation of the Hw seam
// (src/x86/hw.h) with a PMU model written from the Intel SDM (Vol. 3B
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
// Not modelled: PEBS, LBR, freeze-on-PMI, TSX bits 32/33 of PERFEVTSEL (they
// #GP here), RDPMC metrics-clear (PERF_CAPABILITIES[19]), uncore, sibling-thread (AnyThread) counting,
// unit-mask sub-event OR-ing (unit masks match exactly).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "census/census.h"
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

// One kind of event occurring `per_cycle` times in every cycle of a run().
// umask bits 15:8 are the UMASK2 field (PERFEVTSEL 47:40) where enumerated.
struct Occurrence {
    u16 event = 0;
    u16 umask = 0;
    u64 per_cycle = 0;
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

// All PMU MSR values of one CPU as RDMSR would return them (address -> value).
using PmuState = std::map<u32, u64>;
// "" when equal, else one line per differing MSR ("0x186: 0x0 -> 0x43003c").
std::string diff_state(const PmuState& before, const PmuState& after);

// Hardware truths CPUID does not tell (the Core 2 erratum), and "no PMU at all".
struct PmuOverrides {
    int fixed_count = -1;  // >= 0: the hardware has this many fixed counters
    int fixed_width = -1;  // >= 0: ... of this width
    bool none = false;     // no PMU whatever CPUID says (QEMU TCG)
    int topdown_l2 = -1;   // PERF_METRICS bytes 4-7: -1 by model (Golden Cove+), 0 no, 1 yes
};

// Slots of every cycle (sim_topdown.h): level 1 sums to slots_per_cycle, level 2 <= parent.
struct TopdownBudget {
    u64 slots_per_cycle = 0, retiring = 0, bad_spec = 0, fe_bound = 0, be_bound = 0;
    u64 heavy_ops = 0, br_mispredict = 0, fetch_lat = 0, mem_bound = 0;
    u64 part(unsigned i) const;  // 0..7 in PERF_METRICS byte order
};

// The PMU the model derived from CPUID (its own decoding, not pmulab's).
struct PmuLayout {
    enum class Kind : u8 { none, intel, amd };
    Kind kind = Kind::none;
    u8 version = 0;   // Intel architectural perfmon version
    u32 gp_mask = 0;  // GP counters that exist (bit i = counter i)
    u32 gp_width = 0;
    u32 fixed_mask = 0;  // fixed counters that exist
    u32 fixed_width = 0;
    bool anythread_writable = false;  // v3+
    bool anythread_ignored = false;   // CPUID.0AH:EDX[15]
    bool leaf23 = false;
    bool umask2 = false;              // PERFEVTSEL 47:40 writable
    bool rdpmc_user_disable = false;  // CPUID.23H.0:EBX[2]: FIXED_CTR_CTRL bits 33+4i
    bool eq = false;                  // PERFEVTSEL 36 writable
    bool vendor_intel = false;        // GenuineIntel (IA32_MISC_ENABLE exists)
    bool pdcm = false;                // IA32_PERF_CAPABILITIES exists
    u64 perf_caps = 0;
    bool full_width_writes = false;                      // IA32_A_PMCx exist
    bool perf_metrics = false, perf_metrics_l2 = false;  // IA32_PERF_METRICS (bytes 4-7: l2)
    // AMD
    bool amd_legacy = false;    // PERF_CTL/CTR0-3 at C001_0000/C001_0004
    bool amd_ext_core = false;  // CTL/CTR at C001_0200 + 2i
    bool amd_v2 = false;        // global control MSRs C000_0300..0303
    u32 amd_counters = 0;
    bool amd_irperf = false;  // IRPerfCount C000_00E9 (CPUID 8000_0008H:EBX[1])
    // Family 17h models 00h-2Fh: erratum 1054, IRPerfCount "may be inaccurate"; the
    // simulator makes it over-count by 1/8 so that code trusting it gets wrong counts.
    bool amd_irperf_erratum1054 = false;
    bool amd_efffreq = false;     // MPERF/APERF E7H/E8H (CPUID 06H:ECX[0])
    bool amd_efffreq_ro = false;  // the C000_00E7/E8 read-only aliases (8000_0007H:EDX[10])
    bool amd_de_cfg = false;      // DE_CFG C001_1029 (family >= 10h)
    // Intel IA32_DEBUGCTL (every Intel CPU the model knows), with FREEZE_WHILE_SMM (bit 14)
    // writable only where IA32_PERF_CAPABILITIES[12] enumerates it (else #GP).
    bool debugctl = false;
    bool freeze_while_smm = false;
    bool smi_count = false;  // MSR_SMI_COUNT (34H): Intel architectural PMU v3 and later (Nehalem on)
    bool efffreq = false;    // IA32_MPERF/APERF (E7H/E8H) on Intel: CPUID.06H:ECX[0]

    bool gp(u32 i) const { return i < 32 && ((gp_mask >> i) & 1); }
    bool fixed(u32 i) const { return i < 16 && ((fixed_mask >> i) & 1); }
};
PmuLayout derive_layout(const CpuidSnapshot& s, u64 perf_capabilities, const PmuOverrides& ov);

class NetBurstModel;  // sim_netburst.h

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

    u32 index() const { return index_; }
    const CpuidSnapshot& snapshot() const { return spec_.cpuid; }
    // What the CPU was built from (to rebuild a machine from some of its CPUs).
    const CpuSpec& spec() const { return spec_; }
    const PmuLayout& pmu() const { return layout_; }
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
    void set_cpl(u8 cpl) { cpl_ = cpl; }
    u8 cpl() const { return cpl_; }
    void set_cr4_pce(bool on) { pce_ = on; }
    void set_rdpmc_ud(bool on) { spec_.rdpmc_ud = on; }
    void set_unknown_msr(UnknownMsr u) { spec_.unknown = u; }
    // Changes IA32_PERF_CAPABILITIES (and with it whether IA32_A_PMCx exist).
    void set_perf_capabilities(u64 v);

    // ---- the instructions: logged, may fault ----
    CpuidRegs cpuid(u32 leaf, u32 subleaf) const;
    Result<u64> rdmsr(u32 msr);
    Status wrmsr(u32 msr, u64 value);
    Result<u64> rdpmc(u32 ecx);
    u64 rdtsc();

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
    void cycles(u64 n) { run(n); }
    void instructions(u64 n) { event(0xC0, 0x00, n); }
    // Reference cycles: the model's reference clock is the TSC clock. Feeds
    // UnHalted Reference Cycles (3CH/01H) on GP counters, fixed counter 2
    // (CPU_CLK_UNHALTED.REF_TSC) and advances the TSC by n.
    void ref_cycles(u64 n);
    void slots(u64 n) { event(0xA4, 0x01, n); }
    u64 pmi_count() const { return pmis_; }

    // ---- TopDown (sim_topdown.h): the budget of run()'s cycles; the body budget while in body ----
    void set_topdown(const TopdownBudget& b);
    void set_topdown_body(const TopdownBudget& b);
    void set_in_body(bool on) { in_body_ = on; }
    // A test's model of further events of every run() cycle (sim_topdown.h): each occurs
    // per_cycle times per cycle besides the budget's (e.g. AMD PMCx0C2/0C3 branches and
    // PMCx064 L2 requests, for the derived metrics). Empty: none (the default).
    void set_each_cycle(const std::vector<Occurrence>& e) { each_cycle_ = e; }
    bool has_topdown_budget() const { return td_base_.slots_per_cycle != 0; }
    u64 topdown_count(unsigned i) const { return i < 8 ? td_[i] : 0; }
    u64 perf_metrics_value() const;

    u64 tsc() const { return tsc_; }
    void set_tsc(u64 v) { tsc_ = v; }
    // RDTSC returns the TSC, then advances it by `step` (0: time stands still).
    void set_rdtsc_step(u64 step) { rdtsc_step_ = step; }
    // System-management interrupts: every `every`-th call of run() first runs `extra`
    // cycles of SMM code retiring one instruction per cycle. The PMU counts them unless
    // IA32_DEBUGCTL.FREEZE_WHILE_SMM (bit 14, where IA32_PERF_CAPABILITIES[12]) is set
    // (SDM Vol. 3B §20.8 "Freezing ... while in SMM"); MSR_SMI_COUNT counts each SMI;
    // APERF/MPERF advance (the core is in C0). The TSC does not advance (the model's time
    // is the measured instruction stream).
    void set_smi(u64 every, u64 extra) {
        smi_every_ = every;
        smi_extra_ = extra;
    }
    // A coarse reference clock: REF_TSC (fixed counter 2, event 3C.01) advances by `step`
    // TSC ticks once per reference-clock tick (e.g. 100 for a 2.4 GHz TSC and a 24 MHz
    // crystal), `phase` ticks into the first period, as real parts do (perfmon: "the
    // counter update is done at a lower clock rate then the core clock").
    void set_ref_clock(u64 step, u64 phase = 0) {
        ref_step_ = step ? step : 1;
        ref_phase_ = phase;
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
    const std::vector<std::string>& violations() const { return violations_; }
    void clear_violations() { violations_.clear(); }

    // ---- inspection ----
    const std::vector<LogEntry>& log() const { return log_; }
    std::vector<LogEntry> writes() const;  // the WRMSR entries only
    void clear_log() { log_.clear(); }
    // Every PMU MSR that exists (counters, selectors, controls, status) -> value.
    PmuState pmu_state() const;

private:
    enum class Kind : u8 {
        none,
        pmc,
        a_pmc,
        evtsel,
        fixed_ctr,
        fixed_ctrl,
        global_status,
        global_ctrl,
        ovf_ctrl,
        status_set,
        inuse,
        perf_caps,
        tsc,
        bios_sign,
        pkrs,
        misc_enable,
        amd_ctl,
        amd_ctr,
        amd_gstatus,
        amd_gctl,
        amd_gclr,
        amd_gset,
        amd_hwcr,
        amd_de_cfg,
        amd_irperf,
        aperf,
        mperf,
        aperf_ro,
        mperf_ro,
        perf_metrics,
        smi_count,
        debugctl,
        extra,
    };
    struct Slot {
        Kind kind = Kind::none;
        u32 index = 0;
    };
    struct Gp {
        u64 ctl = 0;
        u64 ctr = 0;
        bool prev = false;  // EDGE: the condition in the last evaluated cycle
    };
    struct Extra {
        u64 value = 0;
        bool writable = true;
    };

    Slot classify(u32 msr) const;
    u64 read_slot(Slot s) const;
    // Returns 0 or the fault vector.
    u8 write_slot(Slot s, u64 value);
    u64 evtsel_writable_mask() const;
    u64 fixed_ctrl_writable_mask() const;
    u64 global_ctrl_mask() const;
    u64 ovf_ctrl_mask() const;
    u64 status_set_mask() const;
    u64 inuse() const;
    bool gp_enabled(u32 i) const;
    bool gp_matches(u32 i, u16 event_select, u16 umask) const;
    bool fixed_enabled(u32 i) const;
    u64 gp_increment(Gp& g, u64 per_cycle, u64 cycles);
    void add_gp(u32 i, u64 inc);
    void add_fixed(u32 i, u64 inc);
    void deliver(u16 event_select, u16 umask, u64 n);
    void record(Access kind, u32 addr, u64 value, u8 vector, bool injected);
    // TopDown: `each` plus the budget's events (in *buf), PERF_METRICS accumulated.
    const std::vector<Occurrence>& topdown_cycles(u64 cycles, const std::vector<Occurrence>& each,
                                                  std::vector<Occurrence>* buf);
    u8 write_perf_metrics(u64 v);
    bool metrics_counting() const;

    u32 index_;
    CpuSpec spec_;
    PmuLayout layout_;
    std::shared_ptr<Shared> shared_;
    std::string unreachable_status_;
    u8 cpl_ = 0;
    bool pce_ = false;
    u64 tsc_ = 0;
    u64 rdtsc_step_ = 0;
    u64 ref_step_ = 1, ref_phase_ = 0;
    u64 smi_every_ = 0, smi_extra_ = 0, runs_ = 0;
    u64 smi_count_ = 0;  // MSR_SMI_COUNT
    u64 debugctl_ = 0;   // IA32_DEBUGCTL
    bool in_smi_ = false;
    u64 pmis_ = 0;
    Gp gp_[32];
    u64 fixed_ctr_[16] = {};
    u64 fixed_ctrl_ = 0;
    u64 global_ctrl_ = 0;
    u64 global_status_ = 0;
    u64 pkrs_ = 0;
    u64 misc_enable_ = 0;
    u64 hwcr_ = 0, irperf_ = 0, aperf_ = 0, mperf_ = 0;
    // DE_CFG: firmware may leave bit 1 (LfenceSerializing) clear; Linux sets it at boot.
    u64 de_cfg_ = 0;
    std::map<u32, Extra> extra_;
    TopdownBudget td_base_, td_body_;
    bool td_body_set_ = false, in_body_ = false;
    std::vector<Occurrence> each_cycle_;
    u64 td_[8] = {};
    u64 nth_wrmsr_ = 0;
    u8 nth_vector_ = 0;
    std::map<u32, u8> fail_wr_, fail_rd_;
    std::vector<LogEntry> log_;
    std::vector<std::string> violations_;
};

class SimMachine final : public pmulab::Hw {
public:
    explicit SimMachine(const std::vector<CpuSpec>& cpus);
    // One CPU per snapshot; topology from CPUID (APIC ID from leaf 0BH or 01H,
    // package/core/thread from the leaf 0BH shifts), CPU 0 is the BSP.
    static SimMachine from_snapshots(const std::vector<CpuidSnapshot>& snaps, u64 perf_capabilities = 0);
    // One CPU per record of a parsed dump (pmulab/cpuid_dump.h): its raw leaves, and
    // its APIC ID and location where the dump gives them.
    static SimMachine from_records(const pmulab::Vec<pmulab::CpuRecord>& recs, u64 perf_capabilities = 0);

    SimCpu& cpu(u32 i) { return cpus_.at(i); }
    const SimCpu& cpu(u32 i) const { return cpus_.at(i); }
    u32 size() const { return u32(cpus_.size()); }
    u32 bsp() const { return bsp_; }
    // Makes CPU i the BSP (topology flags, and the CPU top-level code runs on).
    void set_bsp(u32 i);
    // Runs fn with `cpu` current (like run_on_cpu, without the reachability rules).
    template <typename F> void on(u32 cpu_index, F&& fn) {
        u32 saved = current_;
        current_ = cpu_index;
        fn();
        current_ = saved;
    }

    // The k-th WRMSR from now on any CPU faults, once.
    void fail_nth_wrmsr(u64 k, u8 vector = pmulab::kVectorGP);
    // Every CPU's log merged in access order.
    std::vector<LogEntry> log_all() const;
    void clear_logs();
    u64 run_on_cpu_calls() const { return run_calls_; }

    // ---- Hw ----
    CpuidRegs cpuid(u32 leaf, u32 subleaf) override;
    Result<u64> rdmsr(u32 msr) override;
    Status wrmsr(u32 msr, u64 value) override;
    Result<u64> rdpmc(u32 index) override;
    u64 rdtsc() override;
    u32 cpu_count() override { return size(); }
    u32 current_cpu() override { return current_; }
    Result<CpuTopology> topology(u32 cpu) override;
    Status run_on_cpu(u32 cpu, pmulab::CpuFn fn, void* ctx) override;

private:
    std::shared_ptr<Shared> shared_;
    std::vector<SimCpu> cpus_;
    u32 bsp_ = 0;
    u32 current_ = 0;
    bool in_ap_ = false;
    u64 run_calls_ = 0;
};

// ---------------------------------------------------------------------------
// Builders: synthetic CPUs of every architectural perfmon version.

// The leaves of a synthetic Intel CPU; intel_snapshot() fills leaves 0, 1, 7,
// 0AH, 0BH, 1AH, 23H and 8000_0000H..8000_0004H from it.
struct IntelCpuidSpec {
    u32 max_leaf = 0x16;
    u32 signature = 0x000906EA;
    bool pdcm = true;
    bool hypervisor = false;
    const char* brand = "pmulab simulated Intel CPU";
    CpuidRegs leaf_0a;     // EAX version/GP/width/EBX length, EBX, ECX fixed mask, EDX
    bool hybrid = false;   // CPUID.(7,0):EDX[15]
    u32 leaf_1a_eax = 0;   // core type [31:24] and native model id
    bool leaf_23 = false;  // CPUID.(7,1):EAX[8] and leaf 23H
    CpuidRegs leaf_23_sub[4];
    // Leaves set only when nonzero (and within max_leaf): 06H (ECX[0]: APERF/MPERF),
    // 15H (TSC/crystal ratio EBX/EAX, crystal Hz in ECX), 16H (base MHz in EAX).
    u32 leaf_06_ecx = 0;
    CpuidRegs leaf_15, leaf_16;
};

// Where each logical processor sits; APIC ID = pkg:core:thread packed in the
// fewest bits, like QEMU and most firmware.
struct TopoSpec {
    u32 packages = 1;
    u32 cores = 1;    // per package
    u32 threads = 1;  // per core
    u32 count() const { return packages * cores * threads; }
};

CpuidSnapshot intel_snapshot(const IntelCpuidSpec& spec, u32 apic_id, const TopoSpec& topo);
// Builds a machine of identical CPUs (CPU 0 the BSP).
SimMachine intel_machine(const IntelCpuidSpec& spec, const TopoSpec& topo, u64 perf_capabilities = 0,
                         const PmuOverrides& ov = {});

// v1: Core Duo (Yonah)-like, 2 GP x 40 bits, no fixed counters, no PDCM.
SimMachine intel_v1(u32 ncpus = 2);
// v2: Core 2 (Penryn)-like, 2 GP x 40, 3 fixed x 40 (CPUID.0AH:EDX = 0x503), PDCM.
SimMachine intel_v2(u32 ncpus = 2, u64 perf_capabilities = 0);
// v2 with the Conroe erratum: CPUID.0AH:EDX = 0 though the hardware has 3 fixed x 40.
SimMachine intel_v2_conroe(u32 ncpus = 2);
// v3: Nehalem/Sandy Bridge-like, 4 GP x 48, 3 fixed x 48, 2 threads per core.
SimMachine intel_v3(u32 ncpus = 4, u64 perf_capabilities = 0);
// v4: Goldmont Plus-like (CPUID.0AH EAX=07300404 EDX=00008603): 4 GP x 48,
// 3 fixed x 48, AnyThread deprecated, PERF_CAPABILITIES with full-width writes.
SimMachine intel_v4_goldmont_plus(u32 ncpus = 4);
inline constexpr u64 kGoldmontPlusPerfCaps = 0x33c5;
// v5: 4 GP x 48 with fixed counters from CPUID.0AH:ECX (mask) and EDX[4:0].
SimMachine intel_v5(u32 fixed_ecx_mask = 0b1001, u32 fixed_edx_count = 0, u32 ncpus = 2);
// v6 with leaf 23H: GP and fixed bitmaps from sub-leaf 1, UMASK2 and EQ enumerated.
SimMachine intel_v6(u32 gp_bitmap = 0x3ff, u32 fixed_bitmap = 0x77, u32 ncpus = 2);
// Hybrid (Alder Lake-like): CPUs 0-3 are 2 P cores x 2 threads (8 GP, fixed 0-3),
// CPUs 4-7 are 4 E cores (6 GP, fixed 0-2).
SimMachine intel_hybrid();
// QEMU TCG with the default qemu64 model: AuthenticAMD family 0Fh, no PMU,
// unknown MSRs read 0 and drop writes, RDPMC #UD, IA32_PKRS #GP with EDX != 0.
SimMachine qemu_tcg(u32 ncpus = 4);
// QEMU TCG with an Intel model (Skylake-Client): CPUID.0AH = 0, otherwise as above.
SimMachine qemu_tcg_intel(u32 ncpus = 2);
// AMD Zen-like: PerfCtrExtCore (6 counters); with perfmon_v2 also the global MSRs.
SimMachine amd_zen(u32 ncpus = 2, bool perfmon_v2 = true);
// Snapshots built from documented CPUID values (no dump of these parts is in
// tests/data/cpuid): Zen 3 (family 19h model 21h, Vermeer: PerfCtrExtCore, no leaf
// 8000_0022H), Zen 4 (family 19h model 61h, Raphael: PerfMonV2 with 6 core counters),
// both with IRPerfCount (8000_0008H:EBX[1]) and EffFreq (06H:ECX[0]); and a family 10h
// K10 (4 legacy counters only, no IRPerfCount; EffFreq without the EffFreqRO aliases).
// Zen 3/4 enumerate EffFreqRO (8000_0007H:EDX[10]). Zen 1 (family 17h model 01h, Summit
// Ridge): PerfCtrExtCore, IRPerfCount enumerated but hit by erratum 1054 (the simulated
// IRPerfCount over-counts).
SimMachine amd_zen1(u32 ncpus = 2);
SimMachine amd_zen3(u32 ncpus = 2);
SimMachine amd_zen4(u32 ncpus = 2);
SimMachine amd_k10(u32 ncpus = 2);

}  // namespace sim
