#include "measure/memory.h"

#include "base/box.h"
#include "base/json.h"
#include "measure/measure.h"

namespace pmulab {

namespace {

constexpr u64 kPage = 4096;

// The aligned start in region r with `lead` bytes before it; false when there is none.
bool aligned_start(const FreeRegion& r, u64 align, u64 lead, u64* a) {
    if (r.start > ~u64(0) - lead - align) return false;
    *a = (r.start + lead + align - 1) & ~(align - 1);
    return *a <= r.start + r.bytes;
}

}  // namespace

FreeRegion MemoryMapInfo::largest() const {
    FreeRegion best;
    for (usize i = 0; i < count; ++i)
        if (regions[i].bytes > best.bytes) best = regions[i];
    return best;
}

void MemoryMapInfo::add(u64 start, u64 bytes) {
    free_bytes += bytes;
    ++free_regions;
    if (count < kMaxRegions) {
        regions[count++] = FreeRegion{start, bytes};
        return;
    }
    usize small = 0;
    for (usize i = 1; i < count; ++i)
        if (regions[i].bytes < regions[small].bytes) small = i;
    if (regions[small].bytes < bytes) regions[small] = FreeRegion{start, bytes};
}

u64 largest_aligned_fit(const MemoryMapInfo& m, u64 align, u64 lead, u64 tail, u64* at) {
    u64 best = 0;
    for (usize i = 0; i < m.count; ++i) {
        const FreeRegion& r = m.regions[i];
        u64 a = 0;
        if (!aligned_start(r, align, lead, &a)) continue;
        u64 end = r.start + r.bytes;
        if (end - a <= tail) continue;
        u64 fit = (end - a - tail) & ~(kPage - 1);
        if (fit > best) {
            best = fit;
            if (at) *at = a;
        }
    }
    return best;
}

bool find_aligned_fit(const MemoryMapInfo& m, u64 bytes, u64 align, u64 lead, u64 tail, u64* at) {
    bool found = false;
    for (usize i = 0; i < m.count; ++i) {
        const FreeRegion& r = m.regions[i];
        u64 a = 0;
        if (!aligned_start(r, align, lead, &a)) continue;
        u64 end = r.start + r.bytes;
        if (end - a < tail || end - a - tail < bytes) continue;
        if (!found || a < *at) *at = a;
        found = true;
    }
    return found;
}

void memory_map_json(JsonWriter& w, MeasurePlatform* mp) {
    Box<MemoryMapInfo> m = make_box<MemoryMapInfo>();
    if (!mp || !mp->memory_map(m.get()).ok()) {
        w.key("memory").null();
        return;
    }
    FreeRegion big = m->largest();
    w.key("memory").begin_object().field_u("free_bytes", m->free_bytes).field_u("free_regions", m->free_regions);
    w.field_u("largest_free", big.bytes).field_hex("largest_free_at", big.start).field_u("descriptors", m->descriptors);
    w.end_object();
}

void put_memory_map(StrBuf& out, MeasurePlatform* mp) {
    Box<MemoryMapInfo> m = make_box<MemoryMapInfo>();
    if (!mp || !mp->memory_map(m.get()).ok()) return;
    FreeRegion big = m->largest();
    out.printf("\nmemory map: %llu bytes free in %llu regions; the largest: %llu bytes (%llu MiB) at 0x%llx\n",
               (unsigned long long)m->free_bytes, (unsigned long long)m->free_regions, (unsigned long long)big.bytes,
               (unsigned long long)(big.bytes >> 20), (unsigned long long)big.start);
}

Status check_r14_area(MeasurePlatform& mp, const MeasureConfig& cfg) {
    Box<MemoryMapInfo> m = make_box<MemoryMapInfo>();
    Status s = mp.memory_map(m.get());
    if (!s.ok()) {
        if (cfg.r14_size <= kR14NoMap) return ok_status();
        return Error::make(Errc::unsupported, "--r14-size %llu: %s; without one R14's area is at most %llu bytes (1G)",
                           (unsigned long long)cfg.r14_size, s.error().msg, (unsigned long long)kR14NoMap);
    }
    u64 at = 0;
    u64 fit = largest_aligned_fit(*m, cfg.r14_align, kScratchGuard, kScratchGuard, &at);
    if (cfg.r14_size <= fit) return ok_status();
    return Error::make(Errc::unsupported,
                       "--r14-size %llu is more than the memory map allows: the largest R14 area at alignment %llu is "
                       "%llu bytes (--r14-size %lluK, at 0x%llx; %llu bytes free in %llu regions)",
                       (unsigned long long)cfg.r14_size, (unsigned long long)cfg.r14_align, (unsigned long long)fit,
                       (unsigned long long)(fit >> 10), (unsigned long long)at, (unsigned long long)m->free_bytes,
                       (unsigned long long)m->free_regions);
}

}  // namespace pmulab
