#include "x86/cache_geometry.h"

#include "x86/cache_regs.h"

namespace pmulab {

namespace {

constexpr u32 kLeafCache = 0x4;
constexpr u32 kLeafAmdCache = 0x8000001D;
constexpr u32 kLeafAmdL1 = 0x80000005;
constexpr u32 kLeafAmdL2L3 = 0x80000006;

// One sub-leaf of 04H / 8000_001DH (SDM Vol. 2A leaf 04H; APM E.4.15).
CacheLevel from_deterministic(const CpuidRegs& r, CacheSource src) {
    regs::CacheLeafEax a(r.eax);
    regs::CacheLeafEbx b(r.ebx);
    regs::CacheLeafEdx d(r.edx);
    CacheLevel c;
    c.source = src;
    c.type = CacheType(a.cache_type());
    c.level = u32(a.cache_level());
    c.self_initializing = a.self_initializing();
    c.fully_associative = a.fully_associative();
    c.line = u32(b.line_size()) + 1;
    c.partitions = u32(b.partitions()) + 1;
    c.ways = u32(b.ways()) + 1;
    c.sets = r.ecx + 1;
    c.shared_by = u32(a.sharing_ids()) + 1;
    c.apic_id_shift = ceil_log2(c.shared_by);
    c.inclusive_known = true;
    c.inclusive = d.inclusive();
    c.complex_indexing = src == CacheSource::leaf4 && d.complex_indexing();
    return c;
}

// Fn8000_0006's associativity code (APM E.4.5): ways; 0 for disabled or reserved codes,
// ~0 for fully associative.
u32 amd_assoc_ways(u64 code) {
    static constexpr u32 kWays[16] = {0, 1, 2, 3, 4, 6, 8, 0, 16, 0, 32, 48, 64, 96, 128, ~u32(0)};
    return kWays[code & 0xF];
}

// From size, ways (~0: fully associative) and line size: a level with sets computed.
bool amd_level(CacheLevel* c, u32 level, CacheType t, u64 bytes, u32 ways, u32 line) {
    if (!bytes || !ways || !line) return false;
    c->source = CacheSource::amd_80000005;
    c->type = t;
    c->level = level;
    c->line = line;
    c->fully_associative = ways == ~u32(0);
    c->ways = c->fully_associative ? u32(bytes / line) : ways;
    c->sets = u32(bytes / (u64(c->ways) * line));
    return c->sets != 0;
}

void decode_amd_legacy(const CpuidSnapshot& s, CacheGeometry* g) {
    CpuidRegs l1 = s.get(kLeafAmdL1), l23 = s.get(kLeafAmdL2L3);
    auto add = [&](u32 level, CacheType t, u64 bytes, u32 ways, u32 line) {
        if (g->count < CacheGeometry::kMax && amd_level(&g->levels[g->count], level, t, bytes, ways, line)) ++g->count;
    };
    regs::AmdL1Cache d(l1.ecx), i(l1.edx);
    auto l1_ways = [](u64 a) { return a == 0xFF ? ~u32(0) : u32(a); };
    add(1, CacheType::data, d.size_kb() << 10, l1_ways(d.assoc()), u32(d.line_size()));
    add(1, CacheType::instruction, i.size_kb() << 10, l1_ways(i.assoc()), u32(i.line_size()));
    regs::AmdL2Cache l2(l23.ecx);
    add(2, CacheType::unified, l2.size_kb() << 10, amd_assoc_ways(l2.assoc()), u32(l2.line_size()));
    regs::AmdL3Cache l3(l23.edx);
    add(3, CacheType::unified, l3.size_512kb() << 19, amd_assoc_ways(l3.assoc()), u32(l3.line_size()));
}

}  // namespace

const char* cache_type_name(CacheType t) {
    switch (t) {
        case CacheType::data: return "data";
        case CacheType::instruction: return "instruction";
        case CacheType::unified: return "unified";
        default: return "none";
    }
}

const char* cache_source_name(CacheSource s) {
    switch (s) {
        case CacheSource::leaf4: return "cpuid_04h";
        case CacheSource::amd_8000001d: return "cpuid_8000001dh";
        case CacheSource::amd_80000005: return "cpuid_80000005h_6h";
    }
    return "unknown";
}

void put_cache_name(StrBuf& out, u32 level, CacheType t) {
    out.printf("L%u%s", level, t == CacheType::data ? "d" : t == CacheType::instruction ? "i" : "");
}

bool CacheGeometry::operator==(const CacheGeometry& o) const {
    if (count != o.count) return false;
    for (u32 i = 0; i < count; ++i) {
        const CacheLevel &a = levels[i], &b = o.levels[i];
        if (a.type != b.type || a.level != b.level || a.sets != b.sets || a.ways != b.ways || a.line != b.line ||
            a.partitions != b.partitions || a.shared_by != b.shared_by || a.inclusive != b.inclusive ||
            a.inclusive_known != b.inclusive_known || a.source != b.source)
            return false;
    }
    return true;
}

CacheGeometry decode_cache_geometry(const CpuidSnapshot& s) {
    CacheGeometry g;
    CpuidRegs l0 = s.get(0);
    // AMD APM Vol. 3 App. E: "AuthenticAMD" / "HygonGenuine" (EBX "Auth" / "Hygo").
    bool amd_like = l0.ebx == 0x68747541u || l0.ebx == 0x6F677948u;
    u32 leaf = amd_like ? kLeafAmdCache : kLeafCache;
    CacheSource src = amd_like ? CacheSource::amd_8000001d : CacheSource::leaf4;
    CpuidRegs r;
    for (u32 sub = 0; g.count < CacheGeometry::kMax && s.find(leaf, sub, &r); ++sub) {
        if (regs::CacheLeafEax(r.eax).cache_type() == 0) break;
        g.levels[g.count++] = from_deterministic(r, src);
    }
    if (g.count) {
        g.note = amd_like ? "CPUID 8000_001DH" : "CPUID 04H";
        return g;
    }
    if (amd_like && s.has(kLeafAmdL1)) decode_amd_legacy(s, &g);
    g.note = g.count ? "CPUID 8000_0005H/0006H (no sharing or inclusiveness data)"
                     : (amd_like ? "no cache leaves (8000_001DH, 8000_0005H/0006H)" : "no cache leaf (04H)");
    return g;
}

void put_cache_level(StrBuf& out, const CacheLevel& c) {
    put_cache_name(out, c.level, c.type);
    u64 kib = c.size() >> 10;
    if (kib >= 1024 && kib % 1024 == 0) out.printf(" %llu MiB: ", (unsigned long long)(kib >> 10));
    else out.printf(" %llu KiB: ", (unsigned long long)kib);
    out.printf("%u sets x %u ways x %u B", c.sets, c.ways, c.line);
    if (c.partitions != 1) out.printf(" x %u partitions", c.partitions);
    if (c.fully_associative) out.put(StrView(", fully associative"));
    if (c.shared_by) out.printf(", shared by %u", c.shared_by);
    if (c.inclusive_known) out.put(StrView(c.inclusive ? ", inclusive" : ", not inclusive"));
    if (c.complex_indexing) out.put(StrView(", complex indexing"));
}

void cache_geometry_json(JsonWriter& w, const CacheGeometry& g) {
    w.key("caches").begin_object();
    for (u32 i = 0; i < g.count; ++i) {
        const CacheLevel& c = g.levels[i];
        StrBuf name;
        put_cache_name(name, c.level, c.type);
        w.key(name.c_str()).begin_object().field_u("level", c.level).field("type", cache_type_name(c.type));
        w.field_u("size", c.size()).field_u("sets", c.sets).field_u("ways", c.ways).field_u("line_size", c.line);
        w.field_u("partitions", c.partitions).field_b("fully_associative", c.fully_associative);
        if (c.shared_by) w.field_u("shared_by", c.shared_by).field_u("apic_id_shift", c.apic_id_shift);
        else w.key("shared_by").null();
        if (c.inclusive_known) w.field_b("inclusive", c.inclusive);
        else w.key("inclusive").null();
        w.field_b("complex_indexing", c.complex_indexing).field("source", cache_source_name(c.source));
        w.end_object();
    }
    w.end_object();
}

}  // namespace pmulab
