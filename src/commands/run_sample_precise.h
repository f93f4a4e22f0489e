// The precise half of the samples records (`run --sample ... --precise`, IBS;
// docs/sampling.md "Precise sampling"): per bucket, the data addresses its samples
// touched and their latencies, from SampleCounts::log.
#pragma once

#include "base/json.h"
#include "measure/sampling.h"

namespace pmulab {

// The precise samples of one bucket (block, offset), aggregated on the BSP.
struct PreciseBucket {
    static constexpr usize kMaxData = 16;  // distinct data places listed per bucket
    struct Place {
        i32 area = -1;   // index into kDataAreaNames, -1: outside every scratch area (addr)
        i64 offset = 0;  // from the area's register; the address itself when area < 0
        u64 count = 0;
    };
    Place data[kMaxData];
    usize ndata = 0;
    u64 data_more = 0;  // distinct places past kMaxData
    u64 with_data = 0;  // samples that had a data address
    Summary latency;    // latency.n == 0: none had one
    // Samples per data source (mem_source.h; [MemSource::none] unused), and of them
    // those whose access missed the STLB and those that were locked.
    u64 source[kMemSourceCount] = {};
    u64 with_source = 0, stlb_miss = 0, locked = 0;
};

// Aggregates the log's entries of (block, offset): data places in ascending order
// (area, then offset) and the latency summary. Allocates (BSP only).
Status precise_bucket(const SampleCounts& c, CodeBlock block, usize offset, const MeasureResult& r, PreciseBucket* out);
// "data": [{"reg":"r14","offset":-64,"count":3} | {"addr":"0x..","count":1}, ...],
// "data_more", "latency": {"n","min","median","max"}, "data_source": {"L1":n,"DRAM":n,...}
// (mem_source_name order, sources with samples only) with "stlb_miss" and "locked" counts
// when non-zero (each omitted when absent).
void precise_bucket_json(JsonWriter& w, const PreciseBucket& b);
// " r14-64 (3) ... latency 4/4.5/9  source L1 3, DRAM 1" for the text table's last column.
void precise_bucket_text(StrBuf& t, const PreciseBucket& b);

}  // namespace pmulab
