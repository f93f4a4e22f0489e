// Cache geometry per level from CPUID: Intel leaf 04H, AMD Fn8000_001DH, and on AMD parts
// without Fn8000_001DH the older Fn8000_0005H/0006H descriptions (x86/cache_regs.h cites
// the sections). Pure decoding of a CpuidSnapshot (live or from a dump).
#pragma once

#include "base/json.h"
#include "x86/cpuid.h"

namespace pmulab {

enum class CacheType : u8 { none = 0, data = 1, instruction = 2, unified = 3 };
const char* cache_type_name(CacheType t);  // "data", "instruction", "unified"
// "L1d", "L1i", "L2", "L3" style short name.
void put_cache_name(StrBuf& out, u32 level, CacheType t);

// Where a description came from.
enum class CacheSource : u8 { leaf4, amd_8000001d, amd_80000005 };
const char* cache_source_name(CacheSource s);  // "cpuid_04h", "cpuid_8000001dh", "cpuid_80000005h_6h"

struct CacheLevel {
    CacheSource source = CacheSource::leaf4;
    CacheType type = CacheType::none;
    u32 level = 0;
    u32 sets = 0, ways = 0, line = 0;
    u32 partitions = 1;
    bool fully_associative = false;
    bool self_initializing = false;
    // Logical processors sharing the cache: the maximum number of IDs (EAX[25:14] + 1);
    // 0 unknown (Fn8000_0005/6). The sharers are the CPUs whose APIC ID agrees above
    // apic_id_shift bits (the count rounded up to a power of two, SDM Vol. 2A leaf 04H
    // note, APM E.4.15).
    u32 shared_by = 0;
    u32 apic_id_shift = 0;
    bool inclusive_known = false;  // Fn8000_0005/6 do not say
    bool inclusive = false;
    bool complex_indexing = false;  // Intel leaf 04H EDX[2]
    u64 size() const { return u64(sets) * ways * line * partitions; }
    // Whether the CPU with this APIC ID shares this cache with the one with `other`.
    bool shares(u64 apic_id, u64 other) const {
        return shared_by && (apic_id >> apic_id_shift) == (other >> apic_id_shift);
    }
};

struct CacheGeometry {
    static constexpr u32 kMax = 8;
    CacheLevel levels[kMax];
    u32 count = 0;
    // Where the levels came from, or why there are none ("no cache leaves": QEMU's
    // Intel-less AMD models, very old CPUs).
    const char* note = "";
    bool operator==(const CacheGeometry& o) const;
};

// Decodes the caches of one CPU, in CPUID's order (level 1 data, instruction, 2, 3, ...).
CacheGeometry decode_cache_geometry(const CpuidSnapshot& s);

// "L1d 32 KiB: 64 sets x 8 ways x 64 B, shared by 2, not inclusive" (no newline).
void put_cache_level(StrBuf& out, const CacheLevel& c);
// "caches": {"L1d": {...}, "L1i": ..., "L2": ...} as a field of the current object (the
// records' form, flattened in CSV as caches.L1d.sets; docs/cache.md "Cache geometry").
void cache_geometry_json(JsonWriter& w, const CacheGeometry& g);

}  // namespace pmulab
