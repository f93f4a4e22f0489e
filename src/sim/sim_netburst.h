// Simulated NetBurst (Pentium 4 / NetBurst Xeon, family 0FH) performance-monitoring
// hardware for host tests: the ESCR/CCCR model, written from the Intel SDM Vol. 3B
// §18.15 (§20.15 in 2023+ editions) "Performance Monitoring (Processors Based on Intel
// NetBurst Microarchitecture)", Table 18-63 "Performance Counter MSRs and Associated CCCR
// and ESCR MSRs", and Vol. 2B RDPMC, independently of pmulab's own netburst.h: it is the
// oracle pmulab's NetBurst backend is tested against. tests/unit/sim/test_sim_netburst.cpp is
// the executable specification of every rule below.
//
// What is modelled
//  * 18 counters MSR_<unit>_COUNTERn at 300H-311H, 40 bits wide (a WRMSR with bits 63:40
//    set #GPs); 18 CCCRs at 360H-371H; the ESCRs at 3A0H-3E1H. An address in 3A0H-3E1H
//    that is no ESCR (3BFH, 3C6H/3C7H, 3CEH-3DFH, and IQ_ESCR0/1 3BAH/3BBH on models
//    other than 01H/02H) #GPs on RDMSR and WRMSR.
//  * ESCR: event select 30:25, event mask 24:9, tag value 8:5, tag enable 4, OS 3 / USR 2
//    (T0_OS/T0_USR with Hyper-Threading), T1_OS 1 / T1_USR 0 (Hyper-Threading only; on a
//    processor without it bits 1:0 are reserved). Bits 63:31 reserved. Reserved bits #GP.
//  * CCCR: enable 12, ESCR select 15:13, active thread 17:16, compare 18, complement 19,
//    threshold 23:20, edge 24, FORCE_OVF 25, OVF_PMI(_T0) 26, OVF_PMI_T1 27 (HT only),
//    cascade 30, OVF 31 (sticky; software may write it either way). Bits 11:0 (except
//    bit 11 of the IQ CCCRs on models 02H/03H/04H/06H: extended cascading, stored but
//    without effect here), 29:28 and 63:32 reserved: #GP.
//  * Counting, per counter, in every cycle of a run: the counter counts only when its
//    CCCR is enabled, the active-thread field allows it (00 never, 01 exactly one logical
//    processor active, 10 both, 11 any; without Hyper-Threading the field must be 11b, any
//    other value counts nothing and is recorded as a violation), the CCCR's ESCR select
//    names an ESCR that exists and is wired to this counter (anything else counts
//    nothing), and that ESCR's OS/USR bit of the driving logical processor matches its
//    CPL (neither set: nothing). The input of a cycle is the number of occurrences of
//    events of the ESCR's unit whose event select equals the ESCR's and whose mask bits
//    intersect the ESCR's event mask (one occurrence counts once however many of its bits
//    are selected), capped at 15 (four input lines, §18.15.5.2). Without compare the
//    counter adds the input; with compare it adds 1 in each cycle where input > threshold
//    (complement clear) or input <= threshold (complement set); edge (active only with
//    compare) adds 1 only on a false-to-true transition of that comparison, the state
//    carried across runs and reset by a CCCR write. Events of one unit's select are one
//    event whichever of the unit's ESCRs selects them; the same select in another unit's
//    ESCR is another event (CRU_ESCR2 select 02H is machine_clear, not instr_retired).
//  * A carry out of bit 39 wraps the counter and sets CCCR.OVF; with FORCE_OVF every
//    increment sets OVF. OVF with OVF_PMI (T0, or T1 for the second logical processor)
//    counts a PMI for that logical processor (nothing is delivered).
//  * Cascading (§18.15.5.6): a counter whose CCCR has CASCADE set and ENABLE clear is
//    started (the hardware sets its ENABLE) when its partner wraps: BPU/MS/FLAME counters
//    0<->2 and 1<->3 of each group; IQ 12<->14, 13<->15, 16 from 14, 17 from 15 (counters
//    16 and 17 start nothing). It counts from the cycle after the wrap; runs are split at
//    the wrap so counts stay exact.
//  * Hyper-Threading: the two logical processors of a package share one register file
//    (ESCRs, CCCRs, counters); events driven on logical processor t are seen through the
//    T<t> bits of the ESCRs.
//  * RDPMC: ECX[30:0] the counter (0-17; anything else #GP), ECX[31] fast read: bits 31:0
//    only (EDX = 0); without it all 40 bits.
//  * Programming-rule checks (recorded, never faulted): a counter written while its CCCR
//    is enabled; an ESCR written while an enabled CCCR counts through it; a CCCR enabled
//    with an active-thread field other than 11b without Hyper-Threading.
// Not modelled: tagging (the tag fields are stored; a test drives tagged occurrences
// directly with the TAG mask bits), extended cascading, PEBS, thread-independent (TI)
// versus thread-specific (TS) events, the BPU_CCCR1 enable erratum, the counter-write
// erratum N15, cascade starts by FORCE_OVF.
#pragma once

#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "sim/sim_cpu.h"

namespace sim {

// The model's own register constants (SDM Vol. 3B Table 18-63 and Figures 18-44/45/46).
namespace nb {

inline constexpr unsigned kCounters = 18;
inline constexpr unsigned kWidth = 40;
inline constexpr u32 COUNTER0 = 0x300;  // MSR_BPU_COUNTER0; counter i at 300H + i
inline constexpr u32 CCCR0 = 0x360;     // MSR_BPU_CCCR0;    CCCR i at 360H + i
inline constexpr u32 ESCR_FIRST = 0x3A0, ESCR_LAST = 0x3E1;

// Counter numbers (Table 18-63).
enum : u32 {
    BPU0 = 0,
    BPU1,
    BPU2,
    BPU3,
    MS0 = 4,
    MS1,
    MS2,
    MS3,
    FLAME0 = 8,
    FLAME1,
    FLAME2,
    FLAME3,
    IQ0 = 12,
    IQ1,
    IQ2,
    IQ3,
    IQ4,
    IQ5,
};

// ESCR addresses used by the tests.
inline constexpr u32 BSU_ESCR0 = 0x3A0, FSB_ESCR0 = 0x3A2, FSB_ESCR1 = 0x3A3, MOB_ESCR0 = 0x3AA;
inline constexpr u32 BPU_ESCR0 = 0x3B2, CRU_ESCR0 = 0x3B8, CRU_ESCR1 = 0x3B9, IQ_ESCR0 = 0x3BA;
inline constexpr u32 IQ_ESCR1 = 0x3BB, RAT_ESCR0 = 0x3BC, SSU_ESCR0 = 0x3BE, MS_ESCR0 = 0x3C0;
inline constexpr u32 TC_ESCR0 = 0x3C4, IX_ESCR0 = 0x3C8, ALF_ESCR0 = 0x3CA;
inline constexpr u32 CRU_ESCR2 = 0x3CC, CRU_ESCR3 = 0x3CD, CRU_ESCR4 = 0x3E0, CRU_ESCR5 = 0x3E1;

// ESCR fields (Figure 18-44 / 18-45).
inline constexpr u64 T1_USR = 1ull << 0, T1_OS = 1ull << 1;
inline constexpr u64 USR = 1ull << 2, OS = 1ull << 3;  // T0_USR / T0_OS with HT
inline constexpr u64 TAG_ENABLE = 1ull << 4;
constexpr u64 tag_value(u32 v) { return u64(v & 0xF) << 5; }
constexpr u64 escr(u32 event_select, u32 event_mask, u64 flags) {
    return (u64(event_select & 0x3F) << 25) | (u64(event_mask & 0xFFFF) << 9) | flags;
}

// CCCR fields (Figure 18-46).
inline constexpr u64 ENABLE = 1ull << 12;
constexpr u64 escr_select(u32 s) { return u64(s & 7) << 13; }
inline constexpr u64 THREAD_NONE = 0, THREAD_SINGLE = 1ull << 16, THREAD_BOTH = 2ull << 16, THREAD_ANY = 3ull << 16;
inline constexpr u64 COMPARE = 1ull << 18, COMPLEMENT = 1ull << 19;
constexpr u64 threshold(u32 t) { return u64(t & 0xF) << 20; }
inline constexpr u64 EDGE = 1ull << 24, FORCE_OVF = 1ull << 25;
inline constexpr u64 OVF_PMI_T0 = 1ull << 26, OVF_PMI_T1 = 1ull << 27;
inline constexpr u64 EXT_CASCADE = 1ull << 11;  // IQ CCCRs, models 02H/03H/04H/06H
inline constexpr u64 CASCADE = 1ull << 30, OVF = 1ull << 31;

// RDPMC ECX[31]: fast (32-bit) read.
inline constexpr u32 RDPMC_FAST = 0x80000000u;

// The units whose ESCRs select events (an ESCR's name without its number; the CRU's
// three ESCR pairs select different event sets and are three units here).
enum class Unit : u8 {
    bsu,
    fsb,
    firm,
    flame,
    dac,
    mob,
    pmh,
    saat,
    u2l,
    bpu,
    is,
    itlb,
    cru01,
    iq,
    rat,
    ssu,
    ms,
    tbpu,
    tc,
    ix,
    alf,
    cru23,
    cru45,
};

struct EscrInfo {
    const char* name;
    u32 msr;
    Unit unit;
    u8 select;        // the CCCR ESCR-select value that names it
    u32 counters;     // bit i: counter i can count through it
    bool early_only;  // exists on models 01H-02H only (IQ_ESCR0/1)
};
extern const EscrInfo kEscrs[];
extern const unsigned kEscrCount;
// The ESCR at `msr` or null (whether it exists on a model: escr_exists).
const EscrInfo* escr_at(u32 msr);

// An event: the unit whose ESCRs select it and its event select (SDM Vol. 3B NetBurst
// event tables).
struct Event {
    Unit unit;
    u8 select;
};
inline constexpr Event kGlobalPowerEvents{Unit::fsb, 0x13};  // FSB_ESCR0/1
inline constexpr Event kInstrRetired{Unit::cru01, 0x02};     // CRU_ESCR0/1
inline constexpr Event kUopsRetired{Unit::cru01, 0x01};      // CRU_ESCR0/1
inline constexpr Event kMispredBranchRetired{Unit::cru01, 0x03};
inline constexpr Event kBranchRetired{Unit::cru23, 0x06};  // CRU_ESCR2/3
inline constexpr Event kMachineClear{Unit::cru23, 0x02};   // CRU_ESCR2/3
inline constexpr Event kTcDeliverMode{Unit::tc, 0x01};     // TC_ESCR0/1

// Event-mask bits.
inline constexpr u16 RUNNING = 1 << 0;  // global_power_events
inline constexpr u16 NBOGUSNTAG = 1 << 0, NBOGUSTAG = 1 << 1, BOGUSNTAG = 1 << 2, BOGUSTAG = 1 << 3;  // instr_retired
inline constexpr u16 NBOGUS = 1 << 0, BOGUS = 1 << 1;  // uops_retired, mispred_branch_retired
inline constexpr u16 MMNP = 1 << 0, MMNM = 1 << 1, MMTP = 1 << 2, MMTM = 1 << 3;  // branch_retired
inline constexpr u16 CLEAR = 1 << 0;                                              // machine_clear

// The counter whose wrap starts counter i when i's CCCR has CASCADE (and not ENABLE);
// -1 for none.
int cascade_partner(unsigned i);

}  // namespace nb

// Occurrences of one event in every cycle of a run: `per_cycle` occurrences each
// carrying the mask bits `mask`.
struct NbOccurrence {
    nb::Event event;
    u16 mask = 0;
    u64 per_cycle = 1;
};

// One package's register file (shared by both logical processors with HT).
class NetBurstModel {
public:
    // The model number (IQ_ESCR0/1, extended cascading) and Hyper-Threading (CPUID.01H:
    // EDX[28] with EBX[23:16] >= 2) come from the snapshot.
    explicit NetBurstModel(const CpuidSnapshot& cpuid);

    u32 model() const { return model_; }
    bool ht() const { return ht_; }
    bool escr_exists(const nb::EscrInfo& e) const;

    // Whether this model answers `msr` (counters, CCCRs and the whole ESCR range).
    static bool owns(u32 msr);
    bool exists(u32 msr) const;
    // The instructions, for logical processor `thread` (0/1) of SimCpu `cpu`: 0 or the
    // fault vector.
    u8 rdmsr(u32 msr, u64* out) const;
    u8 wrmsr(u32 cpu, u32 thread, u32 msr, u64 value);
    u8 rdpmc(u32 ecx, u64* out) const;

    // Direct state access (no checks): what RDMSR returns / raw state.
    u64 peek(u32 msr) const;
    void poke(u32 msr, u64 value);
    // Every counter, CCCR and existing ESCR.
    void state(PmuState* out) const;

    // ---- driving events ----
    // `cycles` cycles on logical processor `thread` at `cpl`, with the listed occurrences
    // in each (plus global_power_events.RUNNING once per cycle: the processor runs).
    void run(u32 thread, u8 cpl, u64 cycles, const std::vector<NbOccurrence>& each);
    // n occurrences of one event, one per cycle over n cycles of otherwise unmodelled
    // time (no RUNNING): only counters selecting this event see them.
    void event(u32 thread, u8 cpl, nb::Event e, u16 mask, u64 n);
    // Whether a logical processor is active (not halted) for the CCCR active-thread
    // field; both are active by default (one without HT).
    void set_thread_active(u32 thread, bool on) { active_[thread & 1] = on; }
    u64 pmi_count(u32 thread) const { return pmis_[thread & 1]; }

    const std::vector<std::string>& violations() const { return violations_; }
    void clear_violations() { violations_.clear(); }

private:
    struct Ctr {
        u64 value = 0;
        u64 cccr = 0;
        bool prev = false;  // edge: the comparison output in the last evaluated cycle
    };
    // The ESCR feeding counter i (index in nb::kEscrs), or -1.
    int feeding_escr(unsigned i) const;
    bool counting(unsigned i, u32 thread, u8 cpl) const;
    u64 input(unsigned i, const std::vector<NbOccurrence>& each) const;
    // `cycles` cycles with the listed occurrences in each, split at cascade starts.
    void event_cycles(u32 thread, u8 cpl, u64 cycles, const std::vector<NbOccurrence>& each);
    // Adds `cycles` cycles of per-cycle input c to counter i; true when it wrapped.
    bool advance(unsigned i, u64 c, u64 cycles, u32 thread);
    u64 cccr_writable(unsigned i) const;
    u64 escr_writable() const;
    int escr_index(u32 msr) const;  // index in kEscrs of an existing ESCR, else -1
    void violation(const char* fmt, ...);

    u32 model_ = 0;
    bool ht_ = false;
    bool active_[2] = {true, true};
    Ctr ctr_[nb::kCounters];
    std::vector<u64> escr_;  // indexed like nb::kEscrs
    u64 pmis_[2] = {0, 0};
    std::vector<std::string> violations_;
};

// The test-driver API on one simulated logical processor (its NetBurst model, its
// thread number and its current CPL).
void nb_run(SimCpu& c, u64 cycles, std::initializer_list<NbOccurrence> each = {});
void nb_event(SimCpu& c, nb::Event e, u16 mask, u64 n);

// The NetBurst PMU of one logical processor (sim_pmu.h): the package's register file seen
// from thread `thread`. run()/event() of the SimCpu do not reach it (its events are
// NetBurst's own: nb_run, nb_event); retire() drives instr_retired NBOGUSNTAG,
// uops_retired NBOGUS (one uop per instruction), branch_retired MMTP (taken) and MMNP
// (not taken), and global_power_events RUNNING over the stall cycles too. Replay tagging
// (replay_event, front_end_event, PEBS_ENABLE, PEBS_MATRIX_VERT) is not modelled.
class NetBurstPmu final : public PmuModel {
public:
    NetBurstPmu(u32 cpu, const PmuLayout& layout, std::shared_ptr<NetBurstModel> regs, u32 thread)
        : PmuModel(cpu, layout), regs_(std::move(regs)), thread_(thread) {}
    bool claims(u32 msr) const override { return NetBurstModel::owns(msr); }
    bool exists(u32 msr) const override { return regs_->exists(msr); }
    u8 rdmsr(u32 msr, u64* out) const override { return regs_->rdmsr(msr, out); }
    u8 wrmsr(u32 msr, u64 value) override { return regs_->wrmsr(cpu_, thread_, msr, value); }
    bool poke(u32 msr, u64 value) override;
    u8 rdpmc(u32 ecx, u64* out) const override { return regs_->rdpmc(ecx, out); }
    void state(PmuState* out) const override { regs_->state(out); }
    void retire(SimCpu& cpu, const Retired& r) override;

private:
    std::shared_ptr<NetBurstModel> regs_;
    u32 thread_;
};

}  // namespace sim
