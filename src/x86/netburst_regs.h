// Intel NetBurst (Pentium 4 / Xeon, family 0FH) performance monitoring: the ESCR/CCCR
// model, typed registers, the counter/ESCR tables and the events pmulab knows.
//
// Reference: Intel SDM Vol. 3B §20.15 (§18.15 in editions before 2023) "Performance
// Monitoring (Processors Based on Intel NetBurst Microarchitecture)": §20.15.1 ESCR
// MSRs, §20.15.2 performance counters, §20.15.3 CCCR MSRs, §20.15.5.6 cascading,
// Table 20-xx "Performance Counter MSRs and Associated CCCR and ESCR MSRs", and the
// NetBurst event tables of SDM Vol. 3B (non-retirement and at-retirement events).
//
// The model in one paragraph: 18 40-bit counters (MSR_BPU_COUNTER0 300H ...
// MSR_IQ_COUNTER5 311H) in 9 pairs and four groups (BPU 0-3, MS 4-7, FLAME 8-11, IQ
// 12-17). Each counter has a CCCR (360H + i) and counts what an ESCR selects; the CCCR's
// ESCR-select field names which of the ESCRs wired to that counter feeds it. An ESCR
// (3A0H-3E1H) holds the event select, the event mask, tagging and the OS/USR flags (if
// neither is set nothing is counted); writing an ESCR does not start counting: the
// CCCR must be enabled too. Every event can only be selected in a few ESCRs, and every
// ESCR feeds only two or three counters.
#pragma once

#include "base/bits.h"
#include "base/fmt.h"

namespace pmulab::netburst {

using regs::RegValue;

inline constexpr unsigned kCounters = 18;
inline constexpr unsigned kCounterWidth = 40;  // §20.15.2: "Each performance counter is 40-bits wide"
inline constexpr u32 kCounterBase = 0x300;     // MSR_BPU_COUNTER0
inline constexpr u32 kCccrBase = 0x360;        // MSR_BPU_CCCR0
inline constexpr u32 IA32_MISC_ENABLE = 0x1A0;
inline constexpr unsigned kMiscEnablePerfMonAvailable = 7;  // IA32_MISC_ENABLE[7] (read-only)
inline constexpr unsigned kMiscEnablePebsUnavailable = 12;  // IA32_MISC_ENABLE[12] (read-only)
// RDPMC on NetBurst (SDM Vol. 2B RDPMC): ECX[4:0] the counter, ECX[31] "fast read"
// (only bits 31:0 returned, EDX = 0).
inline constexpr u32 kRdpmcFast = 0x80000000u;

constexpr u32 counter_msr(unsigned i) { return kCounterBase + i; }
constexpr u32 cccr_msr(unsigned i) { return kCccrBase + i; }
static_assert(counter_msr(17) == 0x311 && cccr_msr(17) == 0x371);

// ESCR (SDM Vol. 3B §20.15.1, Figure "Event Selection Control Register (ESCR) for
// Pentium 4 and Intel Xeon Processors without Intel HT Technology Support" and the HT
// variant). Without HT, bit 3 is OS and bit 2 USR; with HT, bits 3/2 are T0_OS/T0_USR
// and bits 1/0 T1_OS/T1_USR.
class Escr : public RegValue<Escr> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FLAG(Escr, t1_usr, 0)
    PMULAB_REG_FLAG(Escr, t1_os, 1)
    PMULAB_REG_FLAG(Escr, t0_usr, 2)  // USR without HT
    PMULAB_REG_FLAG(Escr, t0_os, 3)   // OS without HT
    PMULAB_REG_FLAG(Escr, tag_enable, 4)
    PMULAB_REG_FIELD(Escr, tag_value, 8, 5)
    PMULAB_REG_FIELD(Escr, event_mask, 24, 9)
    PMULAB_REG_FIELD(Escr, event_select, 30, 25)
};
static_assert(Escr::t0_os_field::mask == 0x8 && Escr::t0_usr_field::mask == 0x4 && Escr::t1_os_field::mask == 0x2);
static_assert(Escr::tag_enable_field::mask == 0x10 && Escr::tag_value_field::mask == 0x1E0);
static_assert(Escr::event_mask_field::mask == 0x01FFFE00 && Escr::event_select_field::mask == 0x7E000000);
inline constexpr u64 kEscrWritable = 0x7FFFFFFFull;  // bits 63:31 reserved

// CCCR (SDM Vol. 3B §20.15.3, Figure "Counter Configuration Control Register (CCCR)").
// Bits 17:16 ("active thread", HT section): 00 never count, 01 one thread active, 10
// both active, 11 any thread active; on a processor without HT they must be 11.
class Cccr : public RegValue<Cccr> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FLAG(Cccr, enable, 12)
    PMULAB_REG_FIELD(Cccr, escr_select, 15, 13)
    PMULAB_REG_FIELD(Cccr, active_thread, 17, 16)
    PMULAB_REG_FLAG(Cccr, compare, 18)
    PMULAB_REG_FLAG(Cccr, complement, 19)
    PMULAB_REG_FIELD(Cccr, threshold, 23, 20)
    PMULAB_REG_FLAG(Cccr, edge, 24)
    PMULAB_REG_FLAG(Cccr, force_ovf, 25)
    PMULAB_REG_FLAG(Cccr, ovf_pmi, 26)  // OVF_PMI_T0 with HT
    PMULAB_REG_FLAG(Cccr, ovf_pmi_t1, 27)
    PMULAB_REG_FLAG(Cccr, cascade, 30)
    PMULAB_REG_FLAG(Cccr, ovf, 31)  // sticky overflow flag, cleared by software
    static constexpr u64 kActiveThreadAny = 3;
};
static_assert(Cccr::enable_field::mask == 1ull << 12 && Cccr::escr_select_field::mask == 0xE000);
static_assert(Cccr::active_thread_field::mask == 0x30000 && Cccr::compare_field::mask == 1ull << 18);
static_assert(Cccr::complement_field::mask == 1ull << 19 && Cccr::threshold_field::mask == 0xF00000);
static_assert(Cccr::edge_field::mask == 1ull << 24 && Cccr::force_ovf_field::mask == 1ull << 25);
static_assert(Cccr::ovf_pmi_field::mask == 1ull << 26 && Cccr::ovf_pmi_t1_field::mask == 1ull << 27);
static_assert(Cccr::cascade_field::mask == 1ull << 30 && Cccr::ovf_field::mask == 1ull << 31);
// Writable: 12-27, 30, 31 (11:0, 29:28 and 63:32 reserved).
inline constexpr u64 kCccrWritable = 0xCFFFF000ull;
// CCCR of instr_retired on IQ_COUNTER4 (ESCR select 4 = CRU_ESCR0/1), enabled, any thread.
static_assert(Cccr().set_enable().set_escr_select(4).set_active_thread(Cccr::kActiveThreadAny).raw() == 0x39000);

// ---- tables ----

// Counter groups (§20.15.2): BPU, MS, FLAME, IQ.
enum class Group : u8 { bpu, ms, flame, iq };

// One counter: MSR_<name> at 300H + index, MSR_<cccr_name> at 360H + index.
struct CounterDef {
    const char* name;       // "BPU_COUNTER0"
    const char* cccr_name;  // "BPU_CCCR0"
    Group group;
};
inline constexpr CounterDef kCounterDefs[kCounters] = {
    {"BPU_COUNTER0", "BPU_CCCR0", Group::bpu},       {"BPU_COUNTER1", "BPU_CCCR1", Group::bpu},
    {"BPU_COUNTER2", "BPU_CCCR2", Group::bpu},       {"BPU_COUNTER3", "BPU_CCCR3", Group::bpu},
    {"MS_COUNTER0", "MS_CCCR0", Group::ms},          {"MS_COUNTER1", "MS_CCCR1", Group::ms},
    {"MS_COUNTER2", "MS_CCCR2", Group::ms},          {"MS_COUNTER3", "MS_CCCR3", Group::ms},
    {"FLAME_COUNTER0", "FLAME_CCCR0", Group::flame}, {"FLAME_COUNTER1", "FLAME_CCCR1", Group::flame},
    {"FLAME_COUNTER2", "FLAME_CCCR2", Group::flame}, {"FLAME_COUNTER3", "FLAME_CCCR3", Group::flame},
    {"IQ_COUNTER0", "IQ_CCCR0", Group::iq},          {"IQ_COUNTER1", "IQ_CCCR1", Group::iq},
    {"IQ_COUNTER2", "IQ_CCCR2", Group::iq},          {"IQ_COUNTER3", "IQ_CCCR3", Group::iq},
    {"IQ_COUNTER4", "IQ_CCCR4", Group::iq},          {"IQ_COUNTER5", "IQ_CCCR5", Group::iq},
};
inline constexpr unsigned kPebsCounter = 16;  // IQ_COUNTER4 supports PEBS (§20.15.2)

// The counter whose overflow can start counter i when i's CCCR.CASCADE is set
// (§20.15.5.6): the first counters of two pairs of a group start each other, as do the
// second counters (BPU_COUNTER0 <-> 2, 1 <-> 3; MS and FLAME likewise). In the IQ group
// of three pairs, IQ_COUNTER0 <-> 2 and 1 <-> 3 likewise, IQ_COUNTER4 only from 2 and 5
// only from 3: "counter 16 can only be cascaded from counter 14 (not from 12); counter
// 14 cannot be cascaded from counter 16", and counters 16 and 17 cannot initiate a
// cascade with the CASCADE bit (§20.15.5.7; extended cascading uses CCCR bit 11).
constexpr unsigned cascade_source(unsigned i) {
    if (i < 12) return (i & ~3u) | ((i + 2) & 3u);
    if (i >= 16) return i - 2;        // 16 <- 14, 17 <- 15
    return 12 + ((i - 12 + 2) & 3u);  // 12 <-> 14, 13 <-> 15
}
static_assert(cascade_source(0) == 2 && cascade_source(2) == 0 && cascade_source(1) == 3 && cascade_source(7) == 5);
static_assert(cascade_source(12) == 14 && cascade_source(14) == 12 && cascade_source(13) == 15 &&
              cascade_source(15) == 13 && cascade_source(16) == 14 && cascade_source(17) == 15);

// One ESCR: its MSR, the ESCR-select value CCCRs use for it, and the counters it feeds.
struct EscrDef {
    const char* name;  // "CRU_ESCR0"
    u32 msr;
    u8 select;        // CCCR[15:13]
    u32 counters;     // bit i = counter i
    bool early_only;  // IQ_ESCR0/1: only on family 0FH models 01H-02H
};
inline constexpr EscrDef kEscrs[] = {
    {"BSU_ESCR0", 0x3A0, 7, 0x3, false},     {"BSU_ESCR1", 0x3A1, 7, 0xC, false},
    {"FSB_ESCR0", 0x3A2, 6, 0x3, false},     {"FSB_ESCR1", 0x3A3, 6, 0xC, false},
    {"FIRM_ESCR0", 0x3A4, 1, 0x300, false},  {"FIRM_ESCR1", 0x3A5, 1, 0xC00, false},
    {"FLAME_ESCR0", 0x3A6, 0, 0x300, false}, {"FLAME_ESCR1", 0x3A7, 0, 0xC00, false},
    {"DAC_ESCR0", 0x3A8, 5, 0x300, false},   {"DAC_ESCR1", 0x3A9, 5, 0xC00, false},
    {"MOB_ESCR0", 0x3AA, 2, 0x3, false},     {"MOB_ESCR1", 0x3AB, 2, 0xC, false},
    {"PMH_ESCR0", 0x3AC, 4, 0x3, false},     {"PMH_ESCR1", 0x3AD, 4, 0xC, false},
    {"SAAT_ESCR0", 0x3AE, 2, 0x300, false},  {"SAAT_ESCR1", 0x3AF, 2, 0xC00, false},
    {"U2L_ESCR0", 0x3B0, 3, 0x300, false},   {"U2L_ESCR1", 0x3B1, 3, 0xC00, false},
    {"BPU_ESCR0", 0x3B2, 0, 0x3, false},     {"BPU_ESCR1", 0x3B3, 0, 0xC, false},
    {"IS_ESCR0", 0x3B4, 1, 0x3, false},      {"IS_ESCR1", 0x3B5, 1, 0xC, false},
    {"ITLB_ESCR0", 0x3B6, 3, 0x3, false},    {"ITLB_ESCR1", 0x3B7, 3, 0xC, false},
    {"CRU_ESCR0", 0x3B8, 4, 0x13000, false}, {"CRU_ESCR1", 0x3B9, 4, 0x2C000, false},
    {"IQ_ESCR0", 0x3BA, 0, 0x13000, true},   {"IQ_ESCR1", 0x3BB, 0, 0x2C000, true},
    {"RAT_ESCR0", 0x3BC, 2, 0x13000, false}, {"RAT_ESCR1", 0x3BD, 2, 0x2C000, false},
    {"SSU_ESCR0", 0x3BE, 3, 0x13000, false}, {"MS_ESCR0", 0x3C0, 0, 0x30, false},
    {"MS_ESCR1", 0x3C1, 0, 0xC0, false},     {"TBPU_ESCR0", 0x3C2, 2, 0x30, false},
    {"TBPU_ESCR1", 0x3C3, 2, 0xC0, false},   {"TC_ESCR0", 0x3C4, 1, 0x30, false},
    {"TC_ESCR1", 0x3C5, 1, 0xC0, false},     {"IX_ESCR0", 0x3C8, 5, 0x3, false},
    {"IX_ESCR1", 0x3C9, 5, 0xC, false},      {"ALF_ESCR0", 0x3CA, 1, 0x13000, false},
    {"ALF_ESCR1", 0x3CB, 1, 0x2C000, false}, {"CRU_ESCR2", 0x3CC, 5, 0x13000, false},
    {"CRU_ESCR3", 0x3CD, 5, 0x2C000, false}, {"CRU_ESCR4", 0x3E0, 6, 0x13000, false},
    {"CRU_ESCR5", 0x3E1, 6, 0x2C000, false},
};
inline constexpr unsigned kEscrCount = sizeof(kEscrs) / sizeof(kEscrs[0]);
static_assert(kEscrCount == 45);

// Index in kEscrs of the ESCR at `msr`, or -1.
int escr_index(u32 msr);
// The ESCR that CCCR select value `select` wires to counter `counter`, or -1.
int escr_for(unsigned counter, unsigned select);
// Whether the ESCR exists on this model (IQ_ESCR0/1 only on models 01H-02H).
bool escr_exists(const EscrDef& e, u32 model);

// ---- events ----

struct MaskDef {
    const char* name;  // "MMTM"
    u8 bit;            // bit of the 16-bit event mask (ESCR bit 9 + bit)
};
struct EventDef {
    const char* name;  // SDM event name, lower case: "branch_retired"
    u8 event_select;   // ESCR[30:25]
    u8 escr[2];        // indices into kEscrs of the ESCRs that can select it
    MaskDef masks[4];
    u8 mask_count;
    u16 default_mask;  // what the bare name counts
    const char* title;
};
// SDM Vol. 3B NetBurst event tables (non-retirement: global_power_events; at-retirement:
// instr_retired, uops_retired, branch_retired, mispred_branch_retired).
enum EventId : u8 {
    kGlobalPowerEvents,
    kInstrRetired,
    kUopsRetired,
    kBranchRetired,
    kMispredBranchRetired,
    kEventCount,
};
extern const EventDef kEvents[kEventCount];
const EventDef* find_event(StrView name);

// Generic names mapped onto NetBurst events (perf's P4 mapping): instructions,
// cycles, branches, branch-misses, uops.
struct AliasDef {
    const char* name;
    u8 event;
    u16 mask;
};
extern const AliasDef kAliases[5];

// Writes "branch_retired.MMNP+MMTM" for an event and mask.
void put_event_name(StrBuf& out, unsigned event, u16 mask);

// ---- allocation ----

// One event's placement: the counter and the ESCR feeding it.
struct Placement {
    u8 counter = 0;
    u8 escr = 0;  // index into kEscrs
};
// Places `n` events (kEvents ids) on distinct counters fed by distinct ESCRs that can
// select them (allowed counters per event in `allowed`, bit i = counter i). Returns
// false when no placement exists. Exhaustive search; n is small (at most 18).
bool place_events(const u8* events, const u32* allowed, unsigned n, u32 model, Placement* out);

}  // namespace pmulab::netburst
