// CPUID.1AH on non-hybrid parts (issue 11, item 9): the raw core type and native model ID
// are decoded and reported whenever the leaf exists, and event-file choice can match
// them. Through the offline decoder on the real dumps in tests/data/cpuid.
#include <gtest/gtest.h>

#include <string>

#include "census/census.h"
#include "events/event_files.h"
#include "sim/sim_cpu.h"
#include "support/test_platform.h"

using namespace pmulab;

namespace {

CpuRecord record_of(const CpuidSnapshot& s) {
    CpuRecord r;
    r.raw = s;
    r.collected = true;
    census_decode(r);
    return r;
}

std::string table(const CpuRecord& r) {
    Vec<CpuRecord> v;
    v.push(r);
    StrBuf b;
    census_table(v, b);
    return b.c_str();
}

std::string json(const CpuRecord& r) {
    StrBuf b;
    census_json(r, b);
    return b.c_str();
}

}  // namespace

TEST(CensusLeaf1A, NonHybridAlderLakeReportsTheLeaf) {
    // 0x90672 with CPUID.(7,0):EDX[15] = 0 (P-cores only); leaf 1AH present, all zero.
    sim::SimMachine m = pmutest::dump_machine("GenuineIntel0090672_AlderLake_02_CPUID.txt");
    CpuRecord r = record_of(m.cpu(0).snapshot());
    EXPECT_FALSE(r.dec.id.hybrid);
    EXPECT_TRUE(r.dec.id.leaf_1a);
    EXPECT_EQ(r.dec.id.leaf_1a_core_type, 0u);
    EXPECT_EQ(r.dec.id.core_type, kCoreTypeNone);
    EXPECT_NE(table(r).find("  core type        : not reported (0x00 from CPUID.1AH), native model id 0x000000\n"),
              std::string::npos)
        << table(r);
    pmutest::Json j = pmutest::parse_json(json(r));
    EXPECT_TRUE(j["leaf_1a"].b);
    EXPECT_EQ(j["leaf_1a_core_type_id"].u(), 0u);
}

TEST(CensusLeaf1A, AtomOnlySocReportsItsCoreType) {
    // The same part with the leaf an Atom-only SoC returns (core type 0x20, native model 1):
    // reported although the part is not hybrid, and an event file for E-cores matches it.
    sim::SimMachine m = pmutest::dump_machine("GenuineIntel0090672_AlderLake_02_CPUID.txt");
    CpuidSnapshot s = m.cpu(0).snapshot();
    s.set(0x1A, 0, {0x20000001, 0, 0, 0});
    CpuRecord r = record_of(s);
    EXPECT_FALSE(r.dec.id.hybrid);
    EXPECT_EQ(r.dec.id.leaf_1a_core_type, kCoreTypeAtom);
    EXPECT_EQ(r.dec.id.native_model_id, 1u);
    EXPECT_EQ(r.dec.id.core_type, kCoreTypeNone);  // the PMU is not per core type
    EXPECT_NE(table(r).find("  core type        : atom (0x20 from CPUID.1AH), native model id 0x000001"
                            "\n"),
              std::string::npos)
        << table(r);
    pmutest::Json j = pmutest::parse_json(json(r));
    EXPECT_EQ(j["leaf_1a_core_type_id"].u(), 0x20u);
    EXPECT_EQ(j["native_model_id"].s(), "0x1");
    EventTableMatch atom;
    str_copy(atom.vendor, sizeof atom.vendor, "GenuineIntel");
    atom.family = 6;
    atom.model = 0x97;
    atom.has_core_type = true;
    atom.core_type = kCoreTypeAtom;
    atom.has_native = true;
    atom.native_model_id = 1;
    EXPECT_TRUE(atom.matches(r.dec.id));
    atom.core_type = kCoreTypeCore;
    EXPECT_FALSE(atom.matches(r.dec.id));
}

TEST(CensusLeaf1A, HybridPartsKeepTheirCoreType) {
    sim::SimMachine m = pmutest::dump_machine("GenuineIntel00B06A2_RaptorLakeP_02_CPUID.txt");
    CpuRecord r = record_of(m.cpu(0).snapshot());
    EXPECT_TRUE(r.dec.id.hybrid);
    EXPECT_EQ(r.dec.id.core_type, kCoreTypeCore);
    EXPECT_EQ(r.dec.id.leaf_1a_core_type, kCoreTypeCore);
    EXPECT_EQ(r.dec.id.native_model_id, 1u);
}
