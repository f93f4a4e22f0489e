// Intel Processor Trace for PEBS output (docs/sampling.md "PEBS output to Intel PT"): the
// RTIT MSRs, CPUID 14H, the PEBS-to-PT fields of IA32_PEBS_ENABLE and the packets.
//   SDM Vol. 3C ch. "Intel Processor Trace": "Trace Output" (single-range, ToPA), "IA32_RTIT_CTL MSR",
//   "IA32_RTIT_STATUS MSR", "CPUID Leaf 14H", "Packet Definitions" (PSB, PSBEND, PAD, BBP, BIP, BEP);
//   SDM Vol. 3B "PEBS Output to Intel Processor Trace" (IA32_PERF_CAPABILITIES[16], IA32_PEBS_ENABLE[62:60],
//   MSR_RELOAD_PMCx / MSR_RELOAD_FIXED_CTRx).
#pragma once

#include "base/bits.h"

namespace pmulab::regs::pt {

inline constexpr u32 IA32_RTIT_OUTPUT_BASE = 0x560;
inline constexpr u32 IA32_RTIT_OUTPUT_MASK_PTRS = 0x561;
inline constexpr u32 IA32_RTIT_CTL = 0x570;
inline constexpr u32 IA32_RTIT_STATUS = 0x571;
// With PEBS output to PT a counter reloads from these, not from the DS area.
inline constexpr u32 MSR_RELOAD_PMC0 = 0x14C1;        // + i, i < 8
inline constexpr u32 MSR_RELOAD_FIXED_CTR0 = 0x1309;  // + i, i < 4

// CPUID.(07H,0):EBX[25]: Intel PT; leaf 14H its capabilities.
inline constexpr u32 kLeaf7EbxPt = 1u << 25;
inline constexpr u32 kLeaf = 0x14;
// CPUID.(14H,0):ECX: the output schemes.
class PtLeafEcx : public RegValue<PtLeafEcx> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FLAG(PtLeafEcx, topa, 0)             // ToPA output
    PMULAB_REG_FLAG(PtLeafEcx, topa_multi, 1)       // ToPA tables of more than one entry
    PMULAB_REG_FLAG(PtLeafEcx, single_range, 2)     // single-range output
    PMULAB_REG_FLAG(PtLeafEcx, trace_transport, 3)  // output to the trace transport subsystem
    PMULAB_REG_FLAG(PtLeafEcx, lip, 31)             // IPs are linear (CS base included)
};

// IA32_PERF_CAPABILITIES[16] PEBS_OUTPUT_PT_AVAIL.
inline constexpr u64 kPerfCapsPebsOutputPt = 1ull << 16;

// IA32_PEBS_ENABLE's PEBS-to-PT fields (the counter enables: pebs_regs.h PebsEnable).
class PebsEnablePt : public RegValue<PebsEnablePt> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FLAG(PebsEnablePt, pmi_after_each_record, 60)  // a PMI after every record (no threshold)
    PMULAB_REG_FIELD(PebsEnablePt, output, 62, 61)            // 00: DS area, 01: Intel PT, others reserved
};
inline constexpr u64 kPebsOutputDs = 0, kPebsOutputPt = 1;
static_assert(PebsEnablePt().set_output(kPebsOutputPt).set_pmi_after_each_record().raw() == 0x3000000000000000ull);

// IA32_RTIT_CTL.
class RtitCtl : public RegValue<RtitCtl> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FLAG(RtitCtl, trace_en, 0)
    PMULAB_REG_FLAG(RtitCtl, cyc_en, 1)
    PMULAB_REG_FLAG(RtitCtl, os, 2)    // trace at CPL 0
    PMULAB_REG_FLAG(RtitCtl, user, 3)  // trace at CPL > 0
    PMULAB_REG_FLAG(RtitCtl, pwr_evt_en, 4)
    PMULAB_REG_FLAG(RtitCtl, fup_on_ptw, 5)
    PMULAB_REG_FLAG(RtitCtl, fabric_en, 6)
    PMULAB_REG_FLAG(RtitCtl, cr3_filter, 7)
    PMULAB_REG_FLAG(RtitCtl, topa, 8)  // 0: single-range output
    PMULAB_REG_FLAG(RtitCtl, mtc_en, 9)
    PMULAB_REG_FLAG(RtitCtl, tsc_en, 10)
    PMULAB_REG_FLAG(RtitCtl, dis_retc, 11)
    PMULAB_REG_FLAG(RtitCtl, ptw_en, 12)
    PMULAB_REG_FLAG(RtitCtl, branch_en, 13)
    PMULAB_REG_FIELD(RtitCtl, mtc_freq, 17, 14)
    PMULAB_REG_FIELD(RtitCtl, cyc_thresh, 22, 19)
    PMULAB_REG_FIELD(RtitCtl, psb_freq, 27, 24)  // a PSB every 2^(11 + n) output bytes
    PMULAB_REG_FIELD(RtitCtl, addr_cfg, 47, 32)  // ADDR0..3_CFG, 4 bits each
};
static_assert(RtitCtl().set_trace_en().set_os().set_user().raw() == 0xD);

// IA32_RTIT_STATUS.
class RtitStatus : public RegValue<RtitStatus> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FLAG(RtitStatus, filter_en, 0)   // read-only
    PMULAB_REG_FLAG(RtitStatus, context_en, 1)  // read-only
    PMULAB_REG_FLAG(RtitStatus, trigger_en, 2)  // read-only
    PMULAB_REG_FLAG(RtitStatus, error, 4)       // an operational error: tracing stopped
    PMULAB_REG_FLAG(RtitStatus, stopped, 5)     // a ToPA STOP entry was reached
    PMULAB_REG_FIELD(RtitStatus, packet_byte_cnt, 48, 32)
};

// IA32_RTIT_OUTPUT_MASK_PTRS. Single-range output: the region's size - 1 in [31:0] (bits
// 6:0 always 1s), the write offset in [63:32] (current only while TraceEn is 0).
class RtitOutputMask : public RegValue<RtitOutputMask> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FIELD(RtitOutputMask, lower_mask, 6, 0)  // reads 7FH
    PMULAB_REG_FIELD(RtitOutputMask, mask_or_table_offset, 31, 7)
    PMULAB_REG_FIELD(RtitOutputMask, output_offset, 63, 32)
};
static_assert(RtitOutputMask().set_lower_mask(0x7F).set_mask_or_table_offset(0xFFF >> 7).raw() == 0xFFF);

// The packets pmulab writes or reads (all little-endian; "ext" packets start with 02H).
inline constexpr u8 kPad = 0x00, kExt = 0x02;
inline constexpr u8 kExtPsb = 0x82, kExtPsbEnd = 0x23, kExtCbr = 0x03, kExtBbp = 0x63, kExtBep = 0x33, kExtBepIp = 0xB3;
inline constexpr unsigned kPsbBytes = 16;  // 02 82 repeated 8 times
// Block Begin Packet 02 63 B: B[7] SZ (1: the items are 4 bytes, 0: 8), B[4:0] the block type.
class BbpByte : public RegValue<BbpByte> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FIELD(BbpByte, type, 4, 0)
    PMULAB_REG_FLAG(BbpByte, size4, 7)
};
// Block Item Packet: header [7:3] the item's ID, [2:0] = 100b; then 4 or 8 bytes (BBP's SZ).
class BipHeader : public RegValue<BipHeader> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FIELD(BipHeader, tag, 2, 0)
    PMULAB_REG_FIELD(BipHeader, id, 7, 3)
};
inline constexpr u64 kBipTag = 4;
// The block types of a PEBS record and their items (an adaptive record's groups).
inline constexpr u8 kBlockGprs = 0x01, kBlockBasic = 0x04, kBlockMemory = 0x05;
inline constexpr u8 kBasicItemIp = 0, kBasicItemApplicable = 1, kBasicItemTsc = 2;
inline constexpr u8 kMemItemAddress = 0, kMemItemAux = 1, kMemItemLatency = 2, kMemItemTsx = 3;
// GPR block: 0 RFLAGS, 1 RIP, 2.. RAX RCX RDX RBX RSP RBP RSI RDI R8..R15 (the DS group's order).
inline constexpr u8 kGprItems = 18;

}  // namespace pmulab::regs::pt
