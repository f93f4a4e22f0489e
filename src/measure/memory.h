// The memory of an experiment (docs/cache.md "The memory of an experiment"): the
// firmware's free memory as its memory map says (EfiConventionalMemory on UEFI), and where
// a physically contiguous, aligned area of a given size fits. Pure: the platform reads the
// map (MeasurePlatform::memory_map), these functions only look at it.
#pragma once

#include "base/base.h"

namespace pmulab {

// One free region of the map: [start, start + bytes), 4 KiB-aligned.
struct FreeRegion {
    u64 start = 0;
    u64 bytes = 0;
};

// What the map says, in a fixed array (the map is read on the BSP into it).
struct MemoryMapInfo {
    static constexpr usize kMaxRegions = 256;  // the largest ones when there are more
    FreeRegion regions[kMaxRegions];
    usize count = 0;
    u64 free_bytes = 0;    // all free memory, every region counted
    u64 free_regions = 0;  // how many free regions the map has
    u64 descriptors = 0;   // the map's entries, free or not
    // The largest free region (bytes 0 when there is none).
    FreeRegion largest() const;
    // Adds a free region; when the array is full, the smallest one gives way.
    void add(u64 start, u64 bytes);
};

// The largest `bytes` (a multiple of 4 KiB) for which an area [a, a + bytes) with `a`
// aligned to `align` (a power of two >= 4 KiB) and `lead` bytes free before it and `tail`
// after it (the guard pages) fits into one free region; *at gets a. 0 when none fits.
u64 largest_aligned_fit(const MemoryMapInfo& m, u64 align, u64 lead, u64 tail, u64* at);

// Where an area of `bytes` with that alignment and those margins fits, the lowest such
// address (first region that holds it, lowest address in it); false when none does.
bool find_aligned_fit(const MemoryMapInfo& m, u64 bytes, u64 align, u64 lead, u64 tail, u64* at);

class JsonWriter;
class StrBuf;
class MeasurePlatform;
// "memory": {"free_bytes", "free_regions", "largest_free", "largest_free_at", "descriptors"}
// as a field of the current object; null where the platform has no memory map.
void memory_map_json(JsonWriter& w, MeasurePlatform* mp);
// `info`'s line: "memory map: N bytes free in K regions; the largest: L bytes at 0xA\n";
// nothing without a map.
void put_memory_map(StrBuf& out, MeasurePlatform* mp);

}  // namespace pmulab
