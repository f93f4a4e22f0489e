// Where a sampled memory access was served from, as PEBS and IBS encode it
// (docs/sampling.md "Data source per bucket").
//   Intel SDM Vol. 3B §20.3.4.4 "Load Latency Performance Monitoring Facility", Table
//     "Data Source Encoding for Load Latency Record" (Sandy Bridge on; Skylake and Ice Lake
//     re-define 8H-DH for L4/persistent memory and remote caches, as Linux's ds.c
//     intel_pmu_pebs_data_source_skl): the record's data source field (formats 1-3,
//     offset A0H) and, in adaptive PEBS (format 4+), the memory-info group's
//     "memory auxiliary info" quadword: [3:0] the source, [4] STLB miss, [5] locked access.
//   AMD APM Vol. 2 §13.3.2 and the family 19h PPR: IbsOpData2's DataSrc values (the
//     register and IbsOpData3's bits: ibs_regs.h), 5 bits with the Zen 4 extensions (CPUID
//     Fn8000_001B_EAX[11]).
#pragma once

#include "x86/ibs_regs.h"

namespace pmulab::regs::pebs {

// The load-latency data source ("DSE") of a PEBS record.
class DataSource : public RegValue<DataSource> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FIELD(DataSource, source, 3, 0)  // the Data Source Encoding table's entry
    PMULAB_REG_FLAG(DataSource, stlb_miss, 4)   // the access missed the STLB
    PMULAB_REG_FLAG(DataSource, locked, 5)      // a locked access
};
static_assert(DataSource().set_source(0xA).set_stlb_miss().raw() == 0x1A && DataSource(0x21).locked());
// Gracemont's memory auxiliary info (Linux ds.c grt_latency_data's dse union): the same
// 4-bit source, then the lock and STLB-miss bits the other way round.
class GracemontDataSource : public RegValue<GracemontDataSource> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FIELD(GracemontDataSource, source, 3, 0)  // Gracemont's table's entry
    PMULAB_REG_FLAG(GracemontDataSource, locked, 4)      // a locked access
    PMULAB_REG_FLAG(GracemontDataSource, stlb_miss, 5)   // the access missed the STLB
};
static_assert(GracemontDataSource(0x18).locked() && !GracemontDataSource(0x18).stlb_miss());
// Crestmont's (Linux ds.c cmt_latency_data's mtl_* fields): a 5-bit source field of which
// the table takes bits 3:0, then the lock and STLB-miss bits.
class CrestmontDataSource : public RegValue<CrestmontDataSource> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FIELD(CrestmontDataSource, source, 3, 0)  // Crestmont's table's entry (bit 4 unused)
    PMULAB_REG_FLAG(CrestmontDataSource, locked, 5)      // a locked access
    PMULAB_REG_FLAG(CrestmontDataSource, stlb_miss, 6)   // the access missed the STLB
};
static_assert(CrestmontDataSource(0x31).locked() && !CrestmontDataSource(0x31).stlb_miss());

// The Data Source Encoding table's entries (Skylake and Ice Lake client meanings).
inline constexpr u8 kDseUnknownL3Miss = 0x0;  // an L3 miss of unknown source
inline constexpr u8 kDseL1 = 0x1;             // the L1 data cache
inline constexpr u8 kDseLfb = 0x2;            // a pending miss to the same line (fill buffer)
inline constexpr u8 kDseL2 = 0x3;             // L2
inline constexpr u8 kDseL3 = 0x4;             // L3, no snoop needed
inline constexpr u8 kDseL3SnoopMiss = 0x5;    // L3, another core snooped, missed
inline constexpr u8 kDseL3SnoopHit = 0x6;     // L3, another core snooped, clean copy
inline constexpr u8 kDseL3Hitm = 0x7;         // L3, another core held it modified (or forwarded)
inline constexpr u8 kDseL4 = 0x8;             // L3 miss: local L4 / persistent memory
inline constexpr u8 kDseRemoteL4 = 0x9;       // L3 miss: remote L4 / persistent memory
inline constexpr u8 kDseDram = 0xA;           // L3 miss: local DRAM
inline constexpr u8 kDseRemoteDram = 0xB;     // L3 miss: remote DRAM
inline constexpr u8 kDseRemoteFwd = 0xC;      // L3 miss: a remote cache forwarded it
inline constexpr u8 kDseRemoteHitm = 0xD;     // L3 miss: a remote cache held it modified
inline constexpr u8 kDseIo = 0xE;             // I/O
inline constexpr u8 kDseUncached = 0xF;       // uncacheable memory

}  // namespace pmulab::regs::pebs

namespace pmulab::regs::ibs {

// DataSrc before the Zen 4 extensions (family 10h .. 19h without them).
inline constexpr u8 kSrcLocalCache = 0x2, kSrcDram = 0x3, kSrcRemoteCache = 0x4, kSrcIo = 0x7;
// With the Zen 4 extensions (CPUID Fn8000_001B_EAX[11]).
inline constexpr u8 kSrcExtLocalCache = 0x1;  // local L3, or another core's L1/L2 in the CCX
inline constexpr u8 kSrcExtNearCcx = 0x2;     // another CCX's cache, same node
inline constexpr u8 kSrcExtDram = 0x3;
inline constexpr u8 kSrcExtFarCcx = 0x5;  // another CCX's cache, another node
inline constexpr u8 kSrcExtPmem = 0x6;    // long-latency DIMM
inline constexpr u8 kSrcExtIo = 0x7;      // MMIO, configuration, PCI, APIC
inline constexpr u8 kSrcExtExtMem = 0x8;  // extension memory (CXL and the like)

}  // namespace pmulab::regs::ibs
