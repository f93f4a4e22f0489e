// Processor event-based sampling (PEBS) of the simulated Intel cores (docs/sim.md "PEBS"),
// written from the Intel SDM Vol. 3B §20.6.2 (the DS save area, the PEBS records, their
// formats), §20.9 (Ice Lake's adaptive PEBS, MSR_PEBS_DATA_CFG) and §20.3.4.4 (load
// latency, MSR_PEBS_LD_LAT_THRESHOLD), independently of pmulab's x86/ headers.
//
// What is modelled:
//  * The MSRs: IA32_DS_AREA (600H, where CPUID.01H:EDX[21] DS), IA32_PEBS_ENABLE (3F1H:
//    bit i per GP counter; before perfmon v5 bits 32+i are the load-latency enables
//    LL_EN), MSR_PEBS_DATA_CFG (3F2H, adaptive PEBS: PERF_CAPABILITIES[14]; bit 0 memory
//    info, bit 1 GPRs, others #GP) and MSR_PEBS_LD_LAT_THRESHOLD (3F6H, bits 15:0).
//    They exist where PEBS does: PERF_CAPABILITIES[11:8] (the record format) is 3, 4 or 5
//    (Skylake-class, Ice Lake-class and Sapphire Rapids/Alder Lake-class records) and
//    CPUID.01H:EDX[21]; IA32_MISC_ENABLE[12] (PEBS unavailable) is clear there. Only on
//    the big cores whose events the simulator models (intel_events) and, with format 5,
//    on the Gracemont-class E cores (their architectural events), not on older Atoms.
//  * The assist: a GP counter whose IA32_PEBS_ENABLE bit is set and that overflows on a
//    retired instruction (the executor's per-instruction mode; its PERFEVTSEL INT bit is
//    not needed, pmi_armed() says so) writes one record at the DS area's PEBS index,
//    through the executor's guest memory (GuestAccess): format 3 (200 bytes: RFLAGS, the
//    IP after the instruction, the 16 GPRs, the applicable counters, the data linear
//    address, the data source (sim_memsrc.h), the load latency, the eventing IP, TSX 0, the TSC) or format
//    4's groups (basic: format/size, the eventing IP, applicable counters, TSC; memory
//    info: address, aux (the data source), latency, TSX 0; GPRs: RFLAGS, the IP after, RAX..R15). The
//    index advances by the record's size; the counter is reloaded from the DS area's
//    reset value of that counter and its GLOBAL_STATUS bit set; when the index reaches
//    the interrupt threshold, GLOBAL_STATUS bit 62 (OvfBuffer) is set and a PMI raised.
//    A full buffer (index + record > absolute maximum) takes no record.
//  * Fixed-counter PEBS (adaptive PEBS, perfmon v5: IA32_PEBS_ENABLE bit 32+i for fixed
//    counter i, SDM Vol. 3B §20.9): the same assist when fixed counter i overflows at an
//    instruction's retirement (fixed counter 0, INST_RETIRED.PREC_DIST: the record at that
//    instruction, no skid); applicable counters bit 32+i; the reset value from the DS
//    area's fixed-counter slots at 80H + 8i (after the eight GP slots of format 4).
//    Fixed counter 3 (TOPDOWN.SLOTS) takes PEBS the same way: its record is at the
//    instruction whose slots made it overflow.
//  * Format 5 (SDM Vol. 3B §20.6.2.1): the records are format 4's; the DS area's reset
//    array has 32 GP slots, so fixed counter j's reset value is read at 140H + 8j.
//  * Data addresses: for the DataLA events (D0H-D4H, and CDH load latency) the linear
//    address of the instruction's first load (its store for a store event), 0 otherwise.
//  * Load latency: MEM_TRANS_RETIRED.LOAD_LATENCY (CDH/01H) counts the loads whose
//    latency exceeds MSR_PEBS_LD_LAT_THRESHOLD; the latency of a load is
//    kL1LoadToUse (4 cycles) plus the cost model's stall of the level that served it
//    (sim_costs.h): L1 4, L2 16, L3 44, memory 204. Records of other events carry
//    latency 0.
// Not modelled: XMM/LBR groups (DATA_CFG bits 2-3 #GP), data sources beyond sim_memsrc.h's,
// the skid of formats 0-2 (formats 3 to 5 only). PEBS-via-PT is sim_pt.h's.
#pragma once

#include "sim/sim_pmu.h"

namespace sim {

class PtUnit;  // sim_pt.h: PEBS output to Intel PT

// The executor's guest memory and registers (the simulated CPU's view of its memory).
class GuestAccess {
public:
    virtual bool read(u64 addr, void* out, u64 n) = 0;
    virtual bool write(u64 addr, const void* p, u64 n) = 0;
    // RAX, RCX, RDX, RBX, RSP, RBP, RSI, RDI, R8..R15 and RFLAGS after the instruction.
    virtual void gprs(u64 out[16], u64* rflags) = 0;

protected:
    ~GuestAccess() = default;
};

inline constexpr u32 kL1LoadToUse = 4;  // cycles of an L1D hit (Skylake/Ice Lake: 4-5)
// The load latency the model reports for a load served by `level` (0 L1D .. 3 memory).
u32 pebs_load_latency(unsigned level);

class PebsUnit {
public:
    PebsUnit() = default;
    // PEBS where the core is a Skylake-, Ice Lake- or Golden Cove-class big core
    // (intel_events) with format 3, 4 or 5, or a format-5 E core, and DS.
    PebsUnit(const PmuLayout& L, const CpuidSnapshot& s, IntelEvents events);
    bool available() const { return format_ != 0; }
    u8 format() const { return format_; }
    bool claims(u32 msr) const;
    u8 rdmsr(u32 msr, u64* out) const;
    u8 wrmsr(u32 msr, u64 v);
    void state(PmuState* out) const;
    // A PEBS-enabled counter (IA32_PEBS_ENABLE bit i).
    bool enabled(u32 i) const { return i < 32 && ((enable_ >> i) & 1); }
    // Fixed counter i with PEBS (bit 32+i, adaptive PEBS only).
    bool fixed_enabled(u32 i) const { return adaptive_ && i < 16 && ((enable_ >> (32 + i)) & 1); }
    bool armed() const { return enable_ & (u64(gp_mask_) | (adaptive_ ? u64(fixed_mask_) << 32 : 0)); }
    u64 ld_lat_threshold() const { return ld_lat_ & 0xFFFF; }
    bool ll_enabled(u32 i) const;
    // Counter i (counting `event`/`umask`; i = 32 + j for fixed counter j) overflowed on
    // `insn`: its record written. Returns
    // false when no record could be taken (no DS area, a full buffer, unmapped memory).
    // *reset gets the DS area's reset value of counter i; *threshold whether the index
    // reached the interrupt threshold.
    struct Context {
        const RetiredInsn* insn = nullptr;
        GuestAccess* guest = nullptr;
        u64 tsc = 0;
        u64 status = 0;  // GLOBAL_STATUS before (applicable counters: its counter bits)
        // The core's Intel PT (PEBS output to PT, sim_pt.h).
        PtUnit* pt = nullptr;
    };
    bool assist(u32 i, u16 event, u16 umask, const Context& c, u64* reset, bool* threshold);
    u64 records() const { return records_; }
    // PEBS output to Intel PT (sim_pt.h): IA32_PEBS_ENABLE[62:60] writable (output 01B = PT,
    // 1xB reserved) where PERF_CAPABILITIES[16] says so.
    void set_pt_output(bool avail) { pt_output_ = avail; }
    bool output_pt() const { return pt_output_ && ((enable_ >> 61) & 3) == 1; }

private:
    bool assist_pt(u32 i, u16 event, u16 umask, const Context& c, u64* reset, bool* threshold);  // sim_pt.cpp
    bool pt_output_ = false;
    u64 write_format3(u8* rec, u32 i, u16 event, u16 umask, const Context& c) const;
    u64 write_adaptive(u8* rec, u32 i, u16 event, u16 umask, const Context& c) const;
    u64 reset_value(const u64* ds, u32 i) const;
    u8 format_ = 0;
    bool adaptive_ = false;
    u8 version_ = 0;
    u32 gp_mask_ = 0, fixed_mask_ = 0;
    u64 ds_area_ = 0, enable_ = 0, data_cfg_ = 0, ld_lat_ = 0;
    u64 records_ = 0;
};

}  // namespace sim
