// The data source of a precise memory sample: where the access was served from, decoded
// from PEBS's load-latency data source (Intel) and IBS's IbsOpData2/IbsOpData3 (AMD) into
// one vocabulary (docs/sampling.md "Data source per bucket"; the encodings:
// x86/mem_source_regs.h). Pure functions, allocation-free (they run in the NMI).
#pragma once

#include "base/base.h"

namespace pmulab {

// The names (mem_source_name) are what the samples record's "data_source" object counts.
enum class MemSource : u8 {
    none,          // the sample has no data source (not a memory sample, or not decoded)
    unknown,       // an access whose source the hardware did not say (PEBS 0H, IBS DataSrc 0)
    l1,            // "L1": the L1 data cache
    lfb,           // "LFB": a miss to a line already in flight (fill buffer; AMD's MAB)
    l2,            // "L2"
    l3,            // "L3": the local L3 (AMD: or another core's L1/L2 in the CCX), no snoop
    l3_snoop,      // "L3_snoop": L3, another core snooped, no modified copy
    l3_hitm,       // "L3_HITM": L3, another core held it modified (or forwarded it)
    peer_cache,    // "peer_cache": another CCX's cache on the same node (AMD Zen 4 on)
    l4,            // "L4": L3 miss, local L4 or persistent memory (Intel)
    dram,          // "DRAM": L3 miss, local DRAM
    remote_l4,     // "remote_L4"
    remote_dram,   // "remote_DRAM": another node's DRAM
    remote_cache,  // "remote_cache": another node's cache
    pmem,          // "PMEM": long-latency DIMMs (AMD Zen 4 on)
    cxl,           // "CXL": extension memory (AMD Zen 4 on)
    io,            // "IO": MMIO, I/O
    uncached,      // "uncached": uncacheable memory
    count
};
inline constexpr unsigned kMemSourceCount = unsigned(MemSource::count);
const char* mem_source_name(MemSource s);

// A decoded data source with the two bits both vendors give.
struct MemSourceInfo {
    MemSource source = MemSource::none;
    bool stlb_miss = false;  // PEBS: STLB miss; IBS: DcL2TlbMiss
    bool locked = false;     // a locked access
};

// Which Data Source Encoding table a core's PEBS load-latency records use: the Skylake /
// Ice Lake client table (also Golden Cove's, as Linux's ds.c takes it), Gracemont's
// (Alder/Raptor Lake E cores, Alder Lake-N: Linux's __intel_pmu_pebs_data_source_grt, its
// lock and STLB bits swapped), Crestmont's (Meteor Lake E cores, Sierra Forest, Grand
// Ridge: __intel_pmu_pebs_data_source_cmt, the bits one higher), or none pmulab knows
// (Lion Cove, Skymont: the source is not decoded, never guessed).
enum class PebsDseTable : u8 { client, gracemont, crestmont, unknown };
// PEBS's load-latency data source (formats 1-3's DSE, format 4+'s memory auxiliary info).
MemSourceInfo pebs_mem_source(u64 dse, PebsDseTable table = PebsDseTable::client);
// The PEBS data source field that says `s` (the table's first entry meaning it; the
// simulator's writer and the tests use it): 0 (unknown) for a source PEBS cannot say.
u8 pebs_dse_of(MemSource s);

// An IBS op sample's data source from IbsOpData2 and IbsOpData3 (`zen4`: the Zen 4
// extensions, CPUID Fn8000_001B_EAX[11]): none for an op that neither loads nor stores;
// uncached (DcUcMemAcc) before anything else; L1 without DcMiss; L2 without L2Miss; then
// (loads only: IbsOpData2 is a load's) DataSrc with RmtNode; unknown where DataSrc says
// nothing, or LFB when DcMissNoMabAlloc says the line was in flight.
MemSourceInfo ibs_mem_source(u64 op_data2, u64 op_data3, bool zen4);

}  // namespace pmulab
