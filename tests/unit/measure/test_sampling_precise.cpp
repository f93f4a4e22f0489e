// Precise samples (PreciseSample, SampleCounts::add_precise, commands/run_sample_precise.h):
// the eventing RIP is folded like any sample, and each bucket's data addresses (as offsets
// from the scratch areas' registers) and latencies are aggregated exactly.
#include <gtest/gtest.h>

#include <string>

#include "base/json.h"
#include "commands/run_sample_precise.h"

using namespace pmulab;

namespace {

PreciseSample load_at(u64 rip, u64 addr, u32 lat) {
    PreciseSample s;
    s.rip = rip;
    s.data_addr = addr;
    s.has_data = true;
    s.latency = lat;
    s.has_latency = true;
    return s;
}

std::string json_of(const PreciseBucket& b) {
    Value v;
    JsonWriter w(v);
    w.begin_object();
    precise_bucket_json(w, b);
    w.end_object();
    StrBuf out;
    json_write(out, v);
    return std::string(out.c_str());
}

}  // namespace

TEST(SamplePrecise, BucketsListDataPlacesFromTheAreasAndLatencies) {
    u8 code[256] = {};
    Region r;
    r.code = code;
    r.size = r.code_size = 256;
    r.body_offset = 64, r.body_len = 8, r.copies = 4;
    const u64 base = u64(reinterpret_cast<uintptr_t>(code));
    MeasureResult res;
    const u64 r14 = 0x40000000, rdi = 0x10080000;
    res.area_reg[4] = r14, res.area_size[4] = u64(1) << 20;
    res.area_reg[1] = rdi, res.area_size[1] = u64(1) << 20;
    SampleCounts c;
    c.size(8, 0, 0);
    c.add_precise(&r, load_at(base + 64 + 8 * 2 + 3, r14 + 64, 4));  // copy 2, offset 3
    c.add_precise(&r, load_at(base + 64 + 3, r14 + 64, 5));          // copy 0, offset 3
    c.add_precise(&r, load_at(base + 64 + 8 + 3, r14 - 4096, 200));  // below R14: negative
    c.add_precise(&r, load_at(base + 64 + 3, rdi + 8, 9));
    c.add_precise(&r, load_at(base + 64 + 3, 0x1234, 7));  // outside every area
    c.add_precise(&r, load_at(base + 64 + 5, r14, 3));     // another bucket
    PreciseSample alu;                                     // no address, no latency
    alu.rip = base + 64 + 3;
    c.add_precise(&r, alu);
    EXPECT_EQ(c.samples, 7u);
    EXPECT_EQ(c.body[3], 6u);
    EXPECT_EQ(c.body[5], 1u);
    EXPECT_EQ(c.log_n, 7u);
    PreciseBucket b;
    ASSERT_TRUE(precise_bucket(c, CodeBlock::body, 3, res, &b).ok());
    EXPECT_EQ(b.with_data, 5u);
    ASSERT_EQ(b.ndata, 4u);
    EXPECT_EQ(json_of(b),
              "{\"data\":[{\"reg\":\"rdi\",\"offset\":8,\"count\":1},{\"reg\":\"r14\",\"offset\":-4096,\"count\":1},"
              "{\"reg\":\"r14\",\"offset\":64,\"count\":2},{\"addr\":\"0x1234\",\"count\":1}],"
              "\"latency\":{\"n\":5,\"min\":4,\"median\":7.0,\"max\":200}}");
    StrBuf t;
    precise_bucket_text(t, b);
    EXPECT_STREQ(t.c_str(), " rdi+8 (1) r14-4096 (1) r14+64 (2) +1 more  latency 4/7.0/200");
    PreciseBucket other;
    ASSERT_TRUE(precise_bucket(c, CodeBlock::body, 5, res, &other).ok());
    EXPECT_EQ(json_of(other),
              "{\"data\":[{\"reg\":\"r14\",\"offset\":0,\"count\":1}],\"latency\":{\"n\":1,\"min\":3,\"median\":3.0,"
              "\"max\":3}}");
    PreciseBucket none;
    ASSERT_TRUE(precise_bucket(c, CodeBlock::body, 4, res, &none).ok());
    EXPECT_EQ(json_of(none), "{}");
}

TEST(SamplePrecise, TheLogIsBoundedAndCountsWhatItDrops) {
    u8 code[64] = {};
    Region r;
    r.code = code;
    r.size = r.code_size = 64;
    r.body_offset = 0, r.body_len = 4, r.copies = 16;
    const u64 base = u64(reinterpret_cast<uintptr_t>(code));
    SampleCounts c;
    c.size(4, 0, 0);
    const usize n = SampleCounts::kPreciseLog + 5;
    for (usize i = 0; i < n; ++i) c.add_precise(&r, load_at(base + 1, 0x1000, 1));
    EXPECT_EQ(c.body[1], n) << "every sample is counted in its bucket";
    EXPECT_EQ(c.log_n, SampleCounts::kPreciseLog);
    EXPECT_EQ(c.log_dropped, 5u);
    c.clear();
    EXPECT_EQ(c.log_n, 0u);
    EXPECT_EQ(c.log_dropped, 0u);
}

// The data source per bucket (pmu/mem_source.h): the sources counted in mem_source_name
// order, STLB misses and locked accesses when any; a sample without one counts in none.
TEST(SamplePrecise, BucketsCountDataSourcesStlbMissesAndLocks) {
    u8 code[64] = {};
    const u64 base = u64(reinterpret_cast<uintptr_t>(code));
    Region r;
    r.code = code, r.size = r.code_size = 64, r.body_offset = 0, r.body_len = 8, r.copies = 1;
    SampleCounts c;
    c.size(8, 0, 0);
    for (u64 dse : {0xAull, 0x1ull, 0x1Aull, 0x21ull, 0x1ull, ~0ull}) {
        PreciseSample s;
        s.rip = base + 2;
        if (dse != ~0ull) s.source = pebs_mem_source(dse);  // ~0: no source (not load latency)
        c.add_precise(&r, s);
    }
    PreciseBucket b;
    ASSERT_TRUE(precise_bucket(c, CodeBlock::body, 2, MeasureResult(), &b).ok());
    EXPECT_EQ(b.with_source, 5u);
    EXPECT_EQ(json_of(b), "{\"data_source\":{\"L1\":3,\"DRAM\":2},\"stlb_miss\":1,\"locked\":1}");
    StrBuf t;
    precise_bucket_text(t, b);
    EXPECT_STREQ(t.c_str(), "  source L1 3, DRAM 2, stlb_miss 1, locked 1");
}
