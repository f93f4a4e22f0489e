// Data sources of precise memory samples (mem_source.h).
#include "pmu/mem_source.h"

#include "x86/mem_source_regs.h"

namespace pmulab {

namespace {

constexpr const char* kNames[kMemSourceCount] = {"none", "unknown",   "L1",          "LFB",          "L2",
                                                 "L3",   "L3_snoop",  "L3_HITM",     "peer_cache",   "L4",
                                                 "DRAM", "remote_L4", "remote_DRAM", "remote_cache", "PMEM",
                                                 "CXL",  "IO",        "uncached"};

// The Data Source Encoding table, Skylake and Ice Lake client (mem_source_regs.h).
constexpr MemSource kPebsTable[16] = {MemSource::unknown,      MemSource::l1,           MemSource::lfb,
                                      MemSource::l2,           MemSource::l3,           MemSource::l3_snoop,
                                      MemSource::l3_snoop,     MemSource::l3_hitm,      MemSource::l4,
                                      MemSource::remote_l4,    MemSource::dram,         MemSource::remote_dram,
                                      MemSource::remote_cache, MemSource::remote_cache, MemSource::io,
                                      MemSource::uncached};

// Gracemont's (Linux ds.c __intel_pmu_pebs_data_source_grt over its base table): 5 an L3
// hit with a snoop hit, 6 and 7 a snoop HITM, 8 a line forwarded from another core's
// cache, 9 and B a remote cache, A and C local DRAM, D remote DRAM.
constexpr MemSource kGracemontTable[16] = {MemSource::unknown,      MemSource::l1,          MemSource::lfb,
                                           MemSource::l2,           MemSource::l3,          MemSource::l3_snoop,
                                           MemSource::l3_hitm,      MemSource::l3_hitm,     MemSource::peer_cache,
                                           MemSource::remote_cache, MemSource::dram,        MemSource::remote_cache,
                                           MemSource::dram,         MemSource::remote_dram, MemSource::io,
                                           MemSource::uncached};

// Crestmont's (Linux ds.c __intel_pmu_pebs_data_source_cmt over its base table): 5 and
// 6 an L3 hit with a snoop miss / hit, 7 a line forwarded from another core, 8 a snoop
// HITM, 9 a remote cache's HITM, A local DRAM, B and C remote DRAM, D a remote HITM.
constexpr MemSource kCrestmontTable[16] = {MemSource::unknown,      MemSource::l1,           MemSource::lfb,
                                           MemSource::l2,           MemSource::l3,           MemSource::l3_snoop,
                                           MemSource::l3_snoop,     MemSource::peer_cache,   MemSource::l3_hitm,
                                           MemSource::remote_cache, MemSource::dram,         MemSource::remote_dram,
                                           MemSource::remote_dram,  MemSource::remote_cache, MemSource::io,
                                           MemSource::uncached};

// IbsOpData2's DataSrc, with the Zen 4 extensions (32 values) and before them (8).
MemSource ibs_ext_source(unsigned v) {
    namespace r = regs::ibs;
    switch (v) {
        case r::kSrcExtLocalCache: return MemSource::l3;
        case r::kSrcExtNearCcx: return MemSource::peer_cache;
        case r::kSrcExtDram: return MemSource::dram;
        case r::kSrcExtFarCcx: return MemSource::remote_cache;
        case r::kSrcExtPmem: return MemSource::pmem;
        case r::kSrcExtIo: return MemSource::io;
        case r::kSrcExtExtMem: return MemSource::cxl;
        default: return MemSource::none;
    }
}
MemSource ibs_old_source(unsigned v) {
    namespace r = regs::ibs;
    switch (v) {
        case r::kSrcLocalCache: return MemSource::l3;
        case r::kSrcDram: return MemSource::dram;
        case r::kSrcRemoteCache: return MemSource::remote_cache;
        case r::kSrcIo: return MemSource::io;
        default: return MemSource::none;
    }
}

// RmtNode: memory on another node (DRAM, and with the extensions PMEM/CXL) is remote.
MemSource ibs_remote(MemSource s) { return s == MemSource::dram ? MemSource::remote_dram : s; }

}  // namespace

const char* mem_source_name(MemSource s) { return unsigned(s) < kMemSourceCount ? kNames[unsigned(s)] : "?"; }

MemSourceInfo pebs_mem_source(u64 dse, PebsDseTable table) {
    switch (table) {
        case PebsDseTable::client: {
            regs::pebs::DataSource d(dse);
            return MemSourceInfo{kPebsTable[d.source()], d.stlb_miss(), d.locked()};
        }
        case PebsDseTable::gracemont: {
            regs::pebs::GracemontDataSource g(dse);
            return MemSourceInfo{kGracemontTable[g.source()], g.stlb_miss(), g.locked()};
        }
        case PebsDseTable::crestmont: {
            regs::pebs::CrestmontDataSource c(dse);
            return MemSourceInfo{kCrestmontTable[c.source()], c.stlb_miss(), c.locked()};
        }
        default: return MemSourceInfo{};  // an unknown table: its flags' places are unknown too
    }
}

u8 pebs_dse_of(MemSource s) {
    for (u8 i = 0; i < 16; ++i)
        if (kPebsTable[i] == s) return i;
    return regs::pebs::kDseUnknownL3Miss;
}

MemSourceInfo ibs_mem_source(u64 op_data2, u64 op_data3, bool zen4) {
    regs::ibs::IbsOpData3 d3(op_data3);
    regs::ibs::IbsOpData2 d2(op_data2);
    MemSourceInfo out;
    if (!d3.ld_op() && !d3.st_op()) return out;
    out.stlb_miss = d3.dc_l2tlb_miss();
    out.locked = d3.dc_locked_op();
    const unsigned v = d2.source(zen4);
    const bool io = zen4 ? v == regs::ibs::kSrcExtIo : v == regs::ibs::kSrcIo;
    if (d3.dc_uc_mem_acc() && !io) out.source = MemSource::uncached;
    else if (!d3.dc_miss()) out.source = MemSource::l1;
    else if (!d3.l2_miss()) out.source = MemSource::l2;
    else if (d3.ld_op()) out.source = zen4 ? ibs_ext_source(v) : ibs_old_source(v);
    if (out.source == MemSource::none) out.source = d3.dc_miss_no_mab_alloc() ? MemSource::lfb : MemSource::unknown;
    else if (d2.rmt_node() && d3.ld_op() && d3.l2_miss()) out.source = ibs_remote(out.source);
    return out;
}

}  // namespace pmulab
