// Data sources of the simulated PEBS and IBS units (sim_memsrc.h).
#include "sim/sim_memsrc.h"

namespace sim {

namespace {

// SDM Vol. 3B, Data Source Encoding for Load Latency Record (Skylake, Ice Lake).
constexpr u64 kDseL1Hit = 0x1, kDseL2Hit = 0x3, kDseL3HitNoSnoop = 0x4, kDseLocalDram = 0xA;
// IbsOpData2 DataSrc (APM §13.3.2; family 19h PPR with the Zen 4 extensions).
constexpr u64 kIbsLocalCache = 0x2, kIbsExtLocalCache = 0x1, kIbsDram = 0x3;

}  // namespace

u64 pebs_data_source(unsigned level) {
    constexpr u64 kByLevel[4] = {kDseL1Hit, kDseL2Hit, kDseL3HitNoSnoop, kDseLocalDram};
    return kByLevel[level > 3 ? 3 : level];
}

u64 ibs_op_data2(unsigned level, bool zen4_ext) {
    if (level < 2) return 0;
    // DataSrc[2:0] in bits 2:0 (every value here fits; DataSrcHi, bits 7:6, is 0).
    return level >= 3 ? kIbsDram : zen4_ext ? kIbsExtLocalCache : kIbsLocalCache;
}

}  // namespace sim
