// The PMU of one simulated logical processor: one model per PMU family behind one
// interface (PmuModel). The logical processor (sim_cpu.h) owns CPUID, the log, injected
// faults, the time-stamp counter and the MSRs every vendor has; it asks its PmuModel first
// about every MSR and RDPMC, and hands it the events of every cycle it runs and every
// batch of instructions the executor retires (Retired; each family's events of a batch
// are in docs/sim.md "Events", the cycles it costs in sim_costs.h).
//
// clang-format off
//   family                     model (source)                   registers
//   Intel architectural v1-v6  IntelPmu (sim_intel.cpp)         PMCx/PERFEVTSELx, fixed, GLOBAL_*, PERF_METRICS
//   AMD K7 .. Zen 5            AmdPmu (sim_amd.cpp)             PERF_CTL/CTR, PerfCtrExtCore, PerfMonV2, HWCR, IRPerfCount
//   NetBurst (family 0FH)      NetBurstPmu (sim_netburst.cpp)   ESCR/CCCR, over the package's NetBurstModel
//   none (QEMU TCG, v0)        NoPmu (sim_pmu.cpp)              nothing
// clang-format on
//
// Intel and AMD share their general-purpose counters' machinery (GpPmu, sim_gp.cpp): the
// event match per cycle with CMASK/INV/EDGE/EQ, width and wrap, overflow status and PMIs.
// A new PMU family is a new PmuModel (and a case in make_pmu_model); a new model of a
// known family is a builder (sim_builders.h) with the CPUID that describes it.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "sim/sim_regs.h"
#include "x86/cpuid.h"
#include "x86/hw.h"

namespace sim {

using pmulab::CpuidRegs;
using pmulab::CpuidSnapshot;
using pmulab::u16;
using pmulab::u32;
using pmulab::u64;
using pmulab::u8;

// One kind of event occurring `per_cycle` times in every cycle of a run().
// umask bits 15:8 are the UMASK2 field (PERFEVTSEL 47:40) where enumerated.
struct Occurrence {
    u16 event = 0;
    u16 umask = 0;
    u64 per_cycle = 0;
};

// All PMU MSR values of one CPU as RDMSR would return them (address -> value).
using PmuState = std::map<u32, u64>;

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

// The last instruction of a batch (the executor's per-instruction mode: the batch's only
// one), for PEBS records (sim_pebs.h): its address, the next instruction's, and the linear
// address of its first load and store, and the level that served the load.
struct RetiredInsn {
    u64 rip = 0, next = 0, load_addr = 0, store_addr = 0;
    unsigned served = 0;
    bool valid = false, loaded = false, stored = false;
};

// A batch of retired instructions, as the executor reports them (SimCpu::retire): each
// PMU family turns it into its own events (docs/sim.md "Events": Intel's architectural and
// Skylake encodings, AMD's Zen encodings, NetBurst's ESCR events). Every count is of
// retired instructions of the batch, so each is <= instructions. Cycles: the cost model
// is one core cycle per instruction plus stall_cycles (the memory hierarchy's latencies,
// computed by the executor); the TSC and the reference clock advance with the cycles.
struct Retired {
    u64 instructions = 0;
    u64 branches = 0;      // branch instructions of any kind (taken or not, near or far)
    u64 cond = 0;          // conditional branches: Jcc, LOOP/LOOPcc, JrCXZ
    u64 cond_taken = 0;    // ... of them taken
    u64 near_taken = 0;    // near branches taken: JMP, CALL, RET, taken Jcc/LOOP/JrCXZ
    u64 near_calls = 0;    // near CALL (direct and indirect)
    u64 near_returns = 0;  // near RET
    u64 indirect = 0;      // indirect near JMP and CALL (not RET)
    u64 far = 0;           // far branches (far JMP/CALL/RET, INT, IRET, SYSCALL)
    u64 loads = 0;         // instructions that loaded from memory (once per instruction)
    u64 stores = 0;        // instructions that stored to memory (once per instruction)
    // Retired loads by the level that served their first access (0: L1, 1: L2, 2: L3,
    // 3: memory); sums to `loads` when the cache model is on, all 0 when it is off.
    u64 load_served[4] = {};
    u64 stall_cycles = 0;   // cycles beyond one per instruction
    bool body = false;      // the measured body: the body's TopDown budget applies (sim_topdown.h)
    RetiredInsn last = {};  // the batch's last instruction (valid: reported by the executor)
    u64 cycles() const { return instructions + stall_cycles; }
    void add(const Retired& o);
};

// Which model-specific encodings an Intel core's retire() events use (docs/sim.md
// "Events"): the architectural events on every core; Skylake's BR_INST_RETIRED,
// MEM_INST_RETIRED and MEM_LOAD_RETIRED on Sandy Bridge .. Comet Lake big cores; Ice Lake's
// (BR_INST_RETIRED C4H/01H is COND_TAKEN, 10H COND_NTAKEN, 11H COND) on Ice Lake and later
// big cores, with Golden Cove's C4H/80H INDIRECT from Golden Cove on; only the
// architectural ones on Atom-family cores (their own encodings are not modelled), on
// cores before Sandy Bridge and on unknown models.
enum class IntelEvents : u8 { architectural, skylake, icelake, golden_cove };
IntelEvents intel_events(const CpuidSnapshot& s);

// How the simulator produces an event (docs/sim.md "Events"): not at all (it reads 0),
// exactly from the executed instructions, or from a model (the cost model, the cache
// model, a TopDown budget).
enum class EventSource : u8 { not_modelled, exact, modelled };
const char* event_source_name(EventSource s);  // "not modelled", "exact", "modelled"

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
    bool amd_pmc_freeze = false;  // LbrAndPmcFreeze (8000_0022H:EAX[2]): DEBUGCTL[12]/[11] freeze on PMI
    // Intel IA32_DEBUGCTL (every Intel CPU the model knows), with FREEZE_WHILE_SMM (bit 14)
    // writable only where IA32_PERF_CAPABILITIES[12] enumerates it (else #GP).
    bool debugctl = false;
    bool freeze_while_smm = false;
    bool smi_count = false;  // MSR_SMI_COUNT (34H): Intel architectural PMU v3 and later (Nehalem on)
    // PMCx02B (LsSmiRx, "SMIs received"; Zen PPRs, Linux amdzen1-5 ls_smi_rx): AMD family 17h on.
    bool amd_smi_event = false;
    bool efffreq = false;  // IA32_MPERF/APERF (E7H/E8H) on Intel: CPUID.06H:ECX[0]

    bool gp(u32 i) const { return i < 32 && ((gp_mask >> i) & 1); }
    bool fixed(u32 i) const { return i < 16 && ((fixed_mask >> i) & 1); }
};
PmuLayout derive_layout(const CpuidSnapshot& s, u64 perf_capabilities, const PmuOverrides& ov);

class SimCpu;
struct CpuSpec;

// One PMU family's registers and counting, for one logical processor.
class PmuModel {
public:
    PmuModel(u32 cpu, const PmuLayout& layout) : cpu_(cpu), layout_(layout) {}
    virtual ~PmuModel() = default;
    PmuModel(const PmuModel&) = delete;
    PmuModel& operator=(const PmuModel&) = delete;

    const PmuLayout& layout() const { return layout_; }
    // IA32_PERF_CAPABILITIES changed: the same registers, some of them now (not) there.
    void set_layout(const PmuLayout& layout) { layout_ = layout; }
    // The privilege level the USR/OS filters see.
    void set_cpl(u8 cpl) { cpl_ = cpl; }

    // ---- MSRs and RDPMC ----
    // Whether the model answers `msr` (else the CPU's own MSRs, then its UnknownMsr rule).
    virtual bool claims(u32 msr) const { return exists(msr); }
    virtual bool exists(u32 msr) const = 0;
    // An MSR the model claims: 0 or the fault vector (#GP 13).
    virtual u8 rdmsr(u32 msr, u64* out) const = 0;
    virtual u8 wrmsr(u32 msr, u64 value) = 0;
    // Raw state without the WRMSR checks; false when the MSR has no state to set.
    virtual bool poke(u32 msr, u64 value) = 0;
    virtual u8 rdpmc(u32 ecx, u64* out) const = 0;
    virtual void state(PmuState* out) const = 0;

    // ---- counting (SimCpu::run/event document the rules) ----
    virtual void run(u64 cycles, const std::vector<Occurrence>& each) { (void)cycles, (void)each; }
    virtual void event(u16 event_select, u16 umask, u64 n) { (void)event_select, (void)umask, (void)n; }
    // The reference clock advanced by `crystal` ticks of the crystal (bus) clock, `tsc` TSC
    // ticks: REF_TSC (fixed counter 2) counts the TSC ticks, a GP counter's 3C.01
    // (REF_XCLK, SDM Vol. 3B Table 20-1 "UnHalted Reference Cycles") the crystal ticks.
    virtual void ref_clock(u64 tsc, u64 crystal) { (void)crystal, event(0x3C, 0x01, tsc); }
    // The SMT sibling runs (SimCpu::set_sibling_busy): Intel's 3C.02 CPU_CLK_UNHALTED.
    // ONE_THREAD_ACTIVE (crystal ticks while this thread runs and its sibling is halted,
    // Skylake event list) stops counting.
    void set_sibling_busy(bool on) { sibling_busy_ = on; }
    // The events a TopDown slot budget issues in each of `cycles` cycles, appended to *out.
    virtual void topdown_events(const TopdownBudget& b, u64 cycles, std::vector<Occurrence>* out) {
        (void)b, (void)cycles, (void)out;
    }
    // The family's events of a batch of retired instructions, driven through the CPU's
    // run()/event() (so that SMIs, APERF/MPERF and TopDown budgets apply).
    virtual void retire(SimCpu& cpu, const Retired& r) { (void)cpu, (void)r; }
    // How retire() produces the GP-counter event (event select, unit mask).
    virtual EventSource retire_source(u16 event_select, u16 umask) const {
        return (void)event_select, (void)umask, EventSource::not_modelled;
    }
    virtual u64 perf_metrics_value() const { return 0; }
    // PEBS exists (sim_pebs.h): IA32_MISC_ENABLE[12] (PEBS unavailable) reads 0.
    virtual bool pebs_available() const { return false; }
    virtual u64 topdown_count(unsigned i) const { return (void)i, 0; }

    // ---- the interrupt half (sim_cpu.h "Interrupts") ----
    // Whether a counter whose interrupt bit is set overflowed since the last call.
    bool take_pmi() {
        bool p = pmi_raised_;
        pmi_raised_ = false;
        return p;
    }
    // Whether an enabled counter has its interrupt bit set (INT, FIXED_CTR_CTRL PMI): the
    // executor then retires instruction by instruction, so that a PMI comes right after
    // the instruction whose retirement overflowed the counter.
    virtual bool pmi_armed() const { return false; }
    // DEBUGCTL freeze on a PMI (SDM Vol. 3B §18.4.7 "Freezing LBR and Performance Counters
    // on PMI"): `perfmon` stops the counters, `lbrs` reports the LBR stack frozen.
    // Returns true when the LBR stack must stop (the caller owns it): v4 and AMD set
    // GLOBAL_STATUS.LBR_FRZ, the legacy form clears DEBUGCTL.LBR (the caller's).
    virtual void freeze_on_pmi(bool perfmon, bool lbrs) { (void)perfmon, (void)lbrs; }
    // Whether the LBR stack is frozen by the status bit (v4 LBR_FRZ, AMD).
    virtual bool lbrs_frozen() const { return false; }
    // A test's broken PMU (selftest must tell): overflows raise no PMI / freeze freezes nothing.
    void break_pmi(bool on) { broken_pmi_ = on; }
    void break_freeze(bool on) { broken_freeze_ = on; }

    u64 pmi_count() const { return pmis_; }
    const std::vector<std::string>& violations() const { return violations_; }
    void clear_violations() { violations_.clear(); }

protected:
    u32 cpu_;
    PmuLayout layout_;
    bool sibling_busy_ = false;
    u8 cpl_ = 0;
    u64 pmis_ = 0;
    bool pmi_raised_ = false;
    bool broken_pmi_ = false, broken_freeze_ = false;
    // A counter with its interrupt bit overflowed.
    void raise_pmi() {
        ++pmis_;
        if (!broken_pmi_) pmi_raised_ = true;
    }
    std::vector<std::string> violations_;
};

// The model for a logical processor: NetBurst where the spec carries a register file,
// else by the layout's kind.
std::unique_ptr<PmuModel> make_pmu_model(u32 cpu, const CpuSpec& spec, const PmuLayout& layout);

}  // namespace sim
