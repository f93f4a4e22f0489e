// The data source the simulated PEBS and IBS units report for a load (docs/sim.md "Data
// source"), from the level of the cache model that served it, written from the Intel SDM
// Vol. 3B §20.3.4.4 ("Load Latency Performance Monitoring Facility", the Data Source
// Encoding table as Skylake and Ice Lake define it) and the AMD APM Vol. 2 §13.3.2 /
// family 19h PPR (IbsOpData2, IbsOpData3), independently of pmulab's x86/ headers.
//
// The model has one core per hierarchy, no L4, no other node, no fill buffers and no TLB,
// so the sources it reports are exactly four (level: 0 L1D, 1 L2, 2 L3, 3 memory):
//   PEBS (the record's data source field / memory auxiliary info, bits 3:0):
//     L1D 1H (L1 hit), L2 3H (L2 hit), L3 4H (L3 hit, no snoop needed), memory AH (L3 miss,
//     local DRAM); the STLB-miss (bit 4) and lock (bit 5) bits are 0.
//   IBS (IbsOpData3 DcMiss 7 / L2Miss 20, IbsOpData2 DataSrc): L1D neither miss bit; L2
//     DcMiss; L3 DcMiss, L2Miss and DataSrc "local cache" (1 with the Zen 4 extensions,
//     CPUID Fn8000_001B_EAX[11], else 2); memory the same with DataSrc 3 (DRAM); RmtNode
//     and CacheHitSt 0.
#pragma once

#include "sim/sim_pmu.h"

namespace sim {

// PEBS's data source field for a load served by `level`.
u64 pebs_data_source(unsigned level);
// IbsOpData2 for a load served by `level` (0 for L1D and L2 hits: the register describes
// accesses beyond L2).
u64 ibs_op_data2(unsigned level, bool zen4_ext);

}  // namespace sim
