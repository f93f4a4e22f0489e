// The memory hierarchy's configuration (sim_cache.h): the defaults from CPUID, the
// --cache syntax and its one-line description.
#include <cstdio>

#include "base/bits.h"
#include "sim/sim_cache.h"
#include "sim/sim_slice.h"

namespace sim {

using pmulab::Errc;
using pmulab::Error;
using pmulab::Result;
using pmulab::Status;

namespace {

// Deterministic Cache Parameters, CPUID.(04H, n) (Intel SDM Vol. 2A, CPUID, Table 3-8) and
// its AMD twin CPUID.(8000_001DH, n) (AMD APM Vol. 3, E.4.15): the same fields.
class CacheParamsEax : public pmulab::regs::RegValue<CacheParamsEax> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FIELD(CacheParamsEax, type, 4, 0)  // 0 none (the end), 1 data, 2 instruction, 3 unified
    PMULAB_REG_FIELD(CacheParamsEax, level, 7, 5)
};
class CacheParamsEbx : public pmulab::regs::RegValue<CacheParamsEbx> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FIELD(CacheParamsEbx, line_minus1, 11, 0)
    PMULAB_REG_FIELD(CacheParamsEbx, partitions_minus1, 21, 12)
    PMULAB_REG_FIELD(CacheParamsEbx, ways_minus1, 31, 22)
};
static_assert(CacheParamsEbx::ways_minus1_field::mask == 0xFFC00000u);
static_assert(CacheParamsEax::level_field::mask == 0xE0u);
enum : u32 { kCacheTypeNone = 0, kCacheTypeData = 1, kCacheTypeUnified = 3 };

constexpr u64 KiB = 1024, MiB = 1024 * KiB, GiB = 1024 * MiB;
const char* const kLevelNames[3] = {"L1D", "L2", "L3"};

// Default policies, per vendor (docs/sim.md, "The memory hierarchy"): what nanoBench's
// cacheSim.py names for Intel cores (PLRU for L1, its CFL L2 and CFL L3 QLRU variants);
// LRU where nothing is measured (AMD, NetBurst, other vendors). See intel_l1_policy for
// L1s whose ways are not a power of two.
struct PolicySet {
    const char* level[3];
};
constexpr PolicySet kIntelPolicies = {{"PLRU", "QLRU_H00_M1_R2_U1", "QLRU_H11_M1_R0_U0"}};
constexpr PolicySet kLruPolicies = {{"LRU", "LRU", "LRU"}};

// Geometry where CPUID has no leaf 4 / 8000_001DH (size 0: no such level).
struct Geometry {
    u64 size[3];
    u32 ways[3];
};
// Intel Pentium 4 Prescott (NetBurst, family 0FH): 16 KiB 8-way L1D, 1 MiB 8-way L2.
constexpr Geometry kNetBurst = {{16 * KiB, 1 * MiB, 0}, {8, 8, 0}};
// Skylake client, the generic Intel (and other vendors') fallback: 32 KiB 8-way L1D,
// 256 KiB 4-way L2, 8 MiB 16-way L3 (Intel Optimization Reference Manual, Skylake).
constexpr Geometry kSkylake = {{32 * KiB, 256 * KiB, 8 * MiB}, {8, 4, 16}};
// AMD K8 (family 0FH, BKDG): 64 KiB 2-way L1D, 1 MiB 16-way L2, no L3.
constexpr Geometry kK8 = {{64 * KiB, 1 * MiB, 0}, {2, 16, 0}};
// AMD K10 (family 10H-16H): 64 KiB 2-way L1D, 512 KiB 16-way L2, 6 MiB 48-way L3.
constexpr Geometry kK10 = {{64 * KiB, 512 * KiB, 6 * MiB}, {2, 16, 48}};
// AMD Zen (family 17H and later): 32 KiB 8-way L1D, 512 KiB 8-way L2, 16 MiB 16-way L3.
constexpr Geometry kZen = {{32 * KiB, 512 * KiB, 16 * MiB}, {8, 8, 16}};

// The data and unified caches of levels 1-3 from leaf 4 / 8000_001DH; empty when the
// snapshot lacks the leaf (or its sub-leaf 0 says "no cache", as KVM's leaf 4 on AMD).
// cacheSim.py's PLRU over ways that are not a power of two clamps the tree's extra leaves
// to the last way: a working set of 6 lines in a 12-way set then never settles (it misses
// forever). The 12-way L1Ds since Ice Lake get PLRUl, the same tree filling empty ways
// first, where K <= ways lines hit after warm-up as on the hardware.
const char* intel_l1_policy(u32 ways) { return (ways & (ways - 1)) == 0 ? "PLRU" : "PLRUl"; }

std::vector<CacheLevelSpec> from_cache_leaf(const pmulab::CpuidSnapshot& s, u32 leaf, const PolicySet& p) {
    std::vector<CacheLevelSpec> out;
    for (u32 sub = 0; sub < 16; ++sub) {
        pmulab::CpuidRegs r;
        if (!s.find(leaf, sub, &r)) break;
        CacheParamsEax a(r.eax);
        CacheParamsEbx b(r.ebx);
        if (a.type() == kCacheTypeNone) break;
        if (a.type() != kCacheTypeData && a.type() != kCacheTypeUnified) continue;
        if (a.level() < 1 || a.level() > 3) continue;
        CacheLevelSpec l;
        l.name = kLevelNames[a.level() - 1];
        l.line = u32(b.line_minus1() + 1);
        l.ways = u32(b.ways_minus1() + 1);
        l.size_bytes = u64(l.ways) * (b.partitions_minus1() + 1) * l.line * (u64(r.ecx) + 1);
        l.policy = p.level[a.level() - 1];
        if (a.level() == 1 && &p == &kIntelPolicies) l.policy = intel_l1_policy(l.ways);
        if (check_cache_level(l).ok() && (out.empty() ? a.level() == 1 : a.level() == out.size() + 1)) out.push_back(l);
    }
    return out;
}

std::vector<CacheLevelSpec> from_geometry(const Geometry& g, const PolicySet& p) {
    std::vector<CacheLevelSpec> out;
    for (unsigned i = 0; i < 3 && g.size[i]; ++i) out.push_back({kLevelNames[i], g.size[i], g.ways[i], 64, p.level[i]});
    return out;
}

}  // namespace

CacheConfig default_cache_config(const pmulab::CpuidSnapshot& cpuid) {
    pmulab::CpuDecoded d = pmulab::decode_cpuid(cpuid);
    bool amd = pmulab::is_amd_family(d.id.vendor);
    bool intel = d.id.vendor == pmulab::Vendor::intel;
    bool netburst = intel && d.id.family == 0xF;
    const PolicySet& p = intel && !netburst ? kIntelPolicies : kLruPolicies;
    CacheConfig c;
    c.levels = from_cache_leaf(cpuid, amd ? 0x8000001Du : 4u, p);
    // A client part's L3 is one slice per core (sim_slice.h), where the sets split.
    u32 slices = client_llc_slices(cpuid);
    if (c.levels.size() == 3 && slices > 1 && c.levels[2].sets() % slices == 0) c.levels[2].slices = slices;
    if (c.levels.empty()) {
        const Geometry* g = &kSkylake;
        if (netburst) g = &kNetBurst;
        if (amd) g = d.id.family <= 0xF ? &kK8 : d.id.family < 0x17 ? &kK10 : &kZen;
        c.levels = from_geometry(*g, p);
    }
    // A server part's L3: one slice of 2048 sets per CHA (sim_slice.h), whatever leaf 4 says.
    u32 gen = 0;
    if (u32 chas = server_llc_slices(cpuid, &gen); chas && c.levels.size() == 3) {
        CacheLevelSpec& l3 = c.levels[2];
        l3.ways = server_slice_ways(gen);
        l3.line = 64;
        l3.size_bytes = u64(chas) * kServerSetsPerSlice * l3.ways * 64;
        l3.slices = chas;
    }
    return c;
}

// ---- --cache ----

namespace {

// Bytes, or a number with K, M or G (powers of 1024; "KiB"/"KB" also read).
bool parse_size(const std::string& s, u64* out) {
    size_t i = 0;
    u64 v = 0;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
        if (v > (~0ull - 9) / 10) return false;
        v = v * 10 + u64(s[i++] - '0');
    }
    if (i == 0) return false;
    std::string suf = s.substr(i);
    for (char& ch : suf) ch = char(ch >= 'a' && ch <= 'z' ? ch - 32 : ch);
    u64 mul = 1;
    if (suf == "K" || suf == "KB" || suf == "KIB") mul = KiB;
    else if (suf == "M" || suf == "MB" || suf == "MIB") mul = MiB;
    else if (suf == "G" || suf == "GB" || suf == "GIB") mul = GiB;
    else if (!suf.empty()) return false;
    if (v > ~0ull / mul) return false;
    *out = v * mul;
    return true;
}

bool parse_ways(const std::string& s, u32* out) {
    if (s.empty() || s.size() > 4) return false;
    u32 v = 0;
    for (char ch : s) {
        if (ch < '0' || ch > '9') return false;
        v = v * 10 + u32(ch - '0');
    }
    *out = v;
    return true;
}

int level_index(const std::string& name) {
    for (int i = 0; i < 3; ++i)
        if (name == kLevelNames[i]) return i;
    return -1;
}

// One "LEVEL:SIZE[:WAYS[:POLICY]]" (L3: "[:SLICES]") or "LEVEL:off" item applied to *c.
Status apply_item(const std::string& item, CacheConfig* c) {
    std::vector<std::string> f;
    for (size_t start = 0;;) {
        size_t p = item.find(':', start);
        f.push_back(item.substr(start, p == std::string::npos ? p : p - start));
        if (p == std::string::npos) break;
        start = p + 1;
    }
    const char* it = item.c_str();
    int li = level_index(f[0]);
    if (li < 0)
        return Error::make(Errc::invalid_argument, "'%.60s': unknown cache level '%.20s' (L1D, L2 or L3)", it,
                           f[0].c_str());
    if (f.size() < 2 || f.size() > (li == 2 ? 5u : 4u))
        return Error::make(Errc::invalid_argument,
                           "'%.60s': %zu fields; the form is LEVEL:SIZE[:WAYS[:POLICY]] (L3: [:POLICY[:SLICES]])", it,
                           f.size());
    if (f.size() == 2 && f[1] == "off") {  // this level and those below it go
        if (size_t(li) < c->levels.size()) c->levels.resize(size_t(li));
        return Status();
    }
    if (size_t(li) > c->levels.size())
        return Error::make(Errc::invalid_argument, "'%.60s': %s needs %s (this machine has %zu levels)", it,
                           kLevelNames[li], kLevelNames[li - 1], c->levels.size());
    bool added = size_t(li) == c->levels.size();
    if (added) c->levels.push_back({kLevelNames[li], 0, 0, 64, ""});
    CacheLevelSpec& l = c->levels[li];
    if (!f[1].empty() && !parse_size(f[1], &l.size_bytes))
        return Error::make(Errc::invalid_argument, "'%.60s': bad size '%.20s' (bytes, or with K, M or G: 32K)", it,
                           f[1].c_str());
    if (f.size() > 2 && !f[2].empty() && !parse_ways(f[2], &l.ways))
        return Error::make(Errc::invalid_argument, "'%.60s': bad ways '%.20s' (a number, 1 to 256)", it, f[2].c_str());
    if (f.size() > 3 && !f[3].empty()) l.policy = f[3];
    if (f.size() > 4 && !f[4].empty() && !parse_ways(f[4], &l.slices))
        return Error::make(Errc::invalid_argument, "'%.60s': bad slices '%.20s' (1, 2, 4 or 8)", it, f[4].c_str());
    if (added && (l.size_bytes == 0 || l.ways == 0 || l.policy.empty()))
        return Error::make(Errc::invalid_argument, "'%.60s': this machine has no %s by default: give SIZE:WAYS:POLICY",
                           it, kLevelNames[li]);
    return check_cache_level(l);
}

}  // namespace

Result<CacheConfig> parse_cache_spec(const std::string& spec, const CacheConfig& defaults) {
    CacheConfig c = defaults;
    if (spec == "off") {
        c.levels.clear();
        return c;
    }
    if (spec.empty())
        return Error::make(Errc::invalid_argument, "empty cache spec: give 'off' or LEVEL:SIZE[:WAYS[:POLICY]],...");
    bool seen[3] = {};
    for (size_t start = 0;;) {
        size_t p = spec.find(',', start);
        std::string item = spec.substr(start, p == std::string::npos ? p : p - start);
        int li = level_index(item.substr(0, item.find(':')));
        if (li >= 0 && seen[li])
            return Error::make(Errc::invalid_argument, "cache level %s given twice in '%.100s'", kLevelNames[li],
                               spec.c_str());
        if (li >= 0) seen[li] = true;
        PMULAB_TRY_CTX(apply_item(item, &c), "--cache");
        if (p == std::string::npos) break;
        start = p + 1;
    }
    return c;
}

namespace {

std::string size_text(u64 b) {
    char buf[48];
    if (b % MiB == 0) std::snprintf(buf, sizeof buf, "%llu MiB", (unsigned long long)(b / MiB));
    else if (b % KiB == 0) std::snprintf(buf, sizeof buf, "%llu KiB", (unsigned long long)(b / KiB));
    else std::snprintf(buf, sizeof buf, "%llu bytes", (unsigned long long)b);
    return buf;
}

}  // namespace

std::string describe(const CacheConfig& c) {
    if (c.levels.empty()) return "off";
    std::string out;
    for (const CacheLevelSpec& l : c.levels) {
        if (!out.empty()) out += ", ";
        char buf[160];
        std::snprintf(buf, sizeof buf, "%s %s %u-way %llu %s %s", l.name.c_str(), size_text(l.size_bytes).c_str(),
                      l.ways, (unsigned long long)l.sets(), l.sets() == 1 ? "set" : "sets", l.policy.c_str());
        out += buf;
        if (l.slices > 1) {
            std::snprintf(buf, sizeof buf, " (%u slices of %llu sets)", l.slices,
                          (unsigned long long)l.sets_per_slice());
            out += buf;
        }
    }
    return out;
}

}  // namespace sim
