// Intel Processor Trace of the simulated Intel cores, as much as PEBS output to Intel PT
// needs (docs/sim.md "PEBS output to Intel PT"), written from the Intel SDM Vol. 3C chapter
// "Intel Processor Trace" (the RTIT MSRs, CPUID leaf 14H, single-range output, the packet
// definitions) and Vol. 3B "PEBS Output to Intel Processor Trace", independently of
// pmulab's x86/ headers.
//
// What is modelled:
//  * Where: CPUID.(07H,0):EBX[25] (the model's IntelCpuidSpec::pt, with leaf 14H). PEBS
//    output to PT besides where IA32_PERF_CAPABILITIES[16] (PEBS_OUTPUT_PT_AVAIL) is set
//    with adaptive PEBS (sim_pebs.h).
//  * The MSRs: IA32_RTIT_CTL (570H), IA32_RTIT_STATUS (571H), IA32_RTIT_OUTPUT_BASE (560H),
//    IA32_RTIT_OUTPUT_MASK_PTRS (561H); with PEBS output to PT MSR_RELOAD_PMCx (14C1H + x,
//    the GP counters' width) and MSR_RELOAD_FIXED_CTRx (1309H + x). #GP: reserved bits;
//    RTIT_CTL bits leaf 14H does not enumerate (CYCEn, PSBFreq and CycThresh without
//    EBX[1]; CR3Filter without EBX[0]; MTCEn/MTCFreq without EBX[3]; PTWEn/FUPonPTW without
//    EBX[4]; PwrEvtEn without EBX[5]; FabricEn without ECX[3]; ToPA without ECX[0];
//    ADDRn_CFG for n >= leaf 14H.1 EAX[2:0]); PSBFreq, MTCFreq, CycThresh encodings not in
//    14H.1's bitmaps; setting TraceEn with single-range output (ToPA = 0) where ECX[2] is 0;
//    while TraceEn is 1, any write to RTIT_CTL other than clearing TraceEn alone, and any
//    write to the other three; OUTPUT_BASE bits 6:0 or at/above MAXPHYADDR (CPUID
//    80000008H:EAX[7:0], 52 where the model gives none); RTIT_STATUS bits 3 and 6+ other
//    than PacketByteCnt (48:32). RTIT_STATUS's FilterEn/ContextEn/TriggerEn are read-only
//    (writes ignored); MASK_PTRS bits 6:0 read as 1s.
//  * Tracing: TriggerEn = TraceEn; ContextEn = OS (the simulated code runs at CPL 0);
//    FilterEn = 1 (no address ranges). Packets are generated only while all three are set
//    and neither Error nor Stopped. BranchEn, TSCEn, MTCEn, CYCEn change nothing: the only
//    packets are PSB+ and the PEBS blocks.
//  * Single-range output: bytes at OUTPUT_BASE + offset, the offset wrapping at
//    (MASK_PTRS[31:0] | 7FH) + 1; the offset is kept inside and written to MASK_PTRS
//    [63:32] when TraceEn is cleared (reads while tracing give the value last written, as
//    the SDM says the MSR is current only with TraceEn clear). A write that fails (memory
//    the executor does not map) sets RTIT_STATUS.Error and stops the packets. ToPA is
//    enumerated by the model but its output is not modelled: TraceEn with ToPA = 1 sets
//    Error at once.
//  * PSB+: before the first packet after TraceEn is set and before the next packet once
//    2^(11 + PSBFreq) bytes went out since the last PSB: PSB (02 82 x 8), CBR (02 03 ratio
//    00), MODE.Exec 64-bit (99 01), PSBEND (02 23).
//  * A PEBS record (an adaptive record the PEBS unit built, sim_pebs.h): Block Begin
//    (02 63 type, SZ = 8-byte items) and Block Items (header id << 3 | 100b, 8 bytes) for
//    the basic group (type 04H: 0 IP, 1 applicable counters, 2 TSC), the memory-info group
//    (05H: 0 address, 1 aux, 2 latency, 3 TSX) and the GPR group (01H: 0 RFLAGS, 1 RIP,
//    2.. RAX..R15) the record holds, then Block End (02 33).
// Not modelled: branch packets, timing packets, ToPA output, address and CR3 filtering,
// the trace transport subsystem, PacketByteCnt.
#pragma once

#include "sim/sim_pmu.h"

namespace sim {

class GuestAccess;  // sim_pebs.h

class PtUnit {
public:
    PtUnit() = default;
    PtUnit(const PmuLayout& L, const CpuidSnapshot& s);
    bool available() const { return pt_; }
    // PEBS_OUTPUT_PT_AVAIL: PERF_CAPABILITIES[16] with Intel PT and adaptive PEBS.
    bool pebs_output() const { return pebs_out_; }
    bool claims(u32 msr) const;
    u8 rdmsr(u32 msr, u64* out) const;
    u8 wrmsr(u32 msr, u64 v);
    void state(PmuState* out) const;
    // The reload value of counter b (i: PMCi; 32 + i: fixed counter i).
    u64 reload(u32 b) const;
    // One adaptive PEBS record (rec[0..size), the DS layout) as packets; false when it was
    // not traced (tracing off, or a failed write: Error).
    bool pebs_record(GuestAccess& g, const u8* rec, u64 size);
    u64 bytes() const { return bytes_; }  // written since reset

private:
    bool tracing() const;
    u64 ctl_writable() const;
    bool encodings_ok(u64 v) const;
    u8 write_ctl(u64 v);
    bool emit(GuestAccess& g, const u8* p, u64 n);
    bool psb_plus(GuestAccess& g);
    bool pt_ = false, pebs_out_ = false;
    u32 ebx0_ = 0, ecx0_ = 0, eax1_ = 0, ebx1_ = 0;
    u32 maxphys_ = 52;
    u32 gp_mask_ = 0, fixed_mask_ = 0, gp_width_ = 48, fixed_width_ = 48;
    u64 ctl_ = 0, status_ = 0, base_ = 0, mask_ = 0x7F;
    u64 offset_ = 0;  // the write offset while tracing
    u64 since_psb_ = 0;
    bool psb_due_ = false;
    u64 bytes_ = 0;
    u64 reload_[8] = {}, reload_fixed_[4] = {};
};

}  // namespace sim
