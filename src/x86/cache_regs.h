// Typed CPUID cache-description registers: the deterministic cache parameters of Intel's
// leaf 04H and AMD's Fn8000_001DH (the same layout; AMD leaves some fields reserved), and
// AMD's older L1/L2/L3 descriptions in Fn8000_0005H/Fn8000_0006H.
//
// References: Intel SDM Vol. 2A, CPUID, "Deterministic Cache Parameters Leaf (EAX = 04H)";
// AMD APM Vol. 3 Appendix E.4.4 (Fn8000_0005 "L1 Cache and TLB Identifiers"), E.4.5
// (Fn8000_0006 "L2 Cache and TLB and L3 Cache Identifiers"), E.4.15 (Fn8000_001D "Cache
// Topology Information").
#pragma once

#include "base/bits.h"

namespace pmulab::regs {

// Leaf 04H / Fn8000_001D EAX: what the cache is and who shares it.
class CacheLeafEax : public RegValue<CacheLeafEax> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FIELD(CacheLeafEax, cache_type, 4, 0)   // 0 none (end), 1 data, 2 instruction, 3 unified
    PMULAB_REG_FIELD(CacheLeafEax, cache_level, 7, 5)  // 1-based
    PMULAB_REG_FLAG(CacheLeafEax, self_initializing, 8)
    PMULAB_REG_FLAG(CacheLeafEax, fully_associative, 9)
    PMULAB_REG_FIELD(CacheLeafEax, sharing_ids, 25, 14)  // logical processor IDs sharing it, minus 1
    PMULAB_REG_FIELD(CacheLeafEax, core_ids, 31, 26)     // Intel: core IDs in the package, minus 1
};
static_assert(CacheLeafEax::cache_type_field::mask == 0x1Full);
static_assert(CacheLeafEax::cache_level_field::mask == 0xE0ull);
static_assert(CacheLeafEax::sharing_ids_field::mask == 0x03FFC000ull);
static_assert(CacheLeafEax::core_ids_field::mask == 0xFC000000ull);

// Leaf 04H / Fn8000_001D EBX: line size, physical line partitions, ways (each minus 1).
class CacheLeafEbx : public RegValue<CacheLeafEbx> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FIELD(CacheLeafEbx, line_size, 11, 0)
    PMULAB_REG_FIELD(CacheLeafEbx, partitions, 21, 12)
    PMULAB_REG_FIELD(CacheLeafEbx, ways, 31, 22)
};
static_assert(CacheLeafEbx::line_size_field::mask == 0xFFFull);
static_assert(CacheLeafEbx::partitions_field::mask == 0x3FF000ull);
static_assert(CacheLeafEbx::ways_field::mask == 0xFFC00000ull);
// ECX is the number of sets minus 1 (all 32 bits).

// Leaf 04H / Fn8000_001D EDX.
class CacheLeafEdx : public RegValue<CacheLeafEdx> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FLAG(CacheLeafEdx, wbinvd_not_lower, 0)  // WBINVD/INVD need not act on lower caches' sharers
    PMULAB_REG_FLAG(CacheLeafEdx, inclusive, 1)         // inclusive of the lower levels
    PMULAB_REG_FLAG(CacheLeafEdx, complex_indexing, 2)  // Intel: a hash of the address picks the set
};
static_assert(CacheLeafEdx::inclusive_field::mask == 2ull);
static_assert(CacheLeafEdx::complex_indexing_field::mask == 4ull);

// Fn8000_0005 ECX (L1 data) / EDX (L1 instruction).
class AmdL1Cache : public RegValue<AmdL1Cache> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FIELD(AmdL1Cache, line_size, 7, 0)
    PMULAB_REG_FIELD(AmdL1Cache, lines_per_tag, 15, 8)
    PMULAB_REG_FIELD(AmdL1Cache, assoc, 23, 16)  // ways; FFh fully associative
    PMULAB_REG_FIELD(AmdL1Cache, size_kb, 31, 24)
};
static_assert(AmdL1Cache::assoc_field::mask == 0xFF0000ull && AmdL1Cache::size_kb_field::mask == 0xFF000000ull);

// Fn8000_0006 ECX (L2): size in KiB; associativity encoded (amd_assoc_ways).
class AmdL2Cache : public RegValue<AmdL2Cache> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FIELD(AmdL2Cache, line_size, 7, 0)
    PMULAB_REG_FIELD(AmdL2Cache, lines_per_tag, 11, 8)
    PMULAB_REG_FIELD(AmdL2Cache, assoc, 15, 12)
    PMULAB_REG_FIELD(AmdL2Cache, size_kb, 31, 16)
};
static_assert(AmdL2Cache::assoc_field::mask == 0xF000ull && AmdL2Cache::size_kb_field::mask == 0xFFFF0000ull);

// Fn8000_0006 EDX (L3): size in 512 KiB units; associativity encoded as L2's.
class AmdL3Cache : public RegValue<AmdL3Cache> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FIELD(AmdL3Cache, line_size, 7, 0)
    PMULAB_REG_FIELD(AmdL3Cache, lines_per_tag, 11, 8)
    PMULAB_REG_FIELD(AmdL3Cache, assoc, 15, 12)
    PMULAB_REG_FIELD(AmdL3Cache, size_512kb, 31, 18)
};
static_assert(AmdL3Cache::assoc_field::mask == 0xF000ull && AmdL3Cache::size_512kb_field::mask == 0xFFFC0000ull);

}  // namespace pmulab::regs
