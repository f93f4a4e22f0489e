// The memory hierarchy (sim_cache.h): replacement policies, the levels, the defaults from
// CPUID and the --cache syntax.
//
// Every policy is a port of the class of nanoBench's tools/CacheAnalyzer/cacheSim.py that
// bears its name (cited per class below), operating on one set: `blocks` holds the ways
// (0 = empty, cacheSim.py's None; otherwise the line number + 1), `meta` the policy's
// bytes. The order of `blocks` matters exactly as in cacheSim.py: LRU and FIFO keep their
// list ordered from most to least recent and an empty way ages like a full one.
#include "sim/sim_cache.h"

#include "sim/sim_slice.h"

#include <algorithm>
#include <cstring>

namespace sim {

using pmulab::Errc;
using pmulab::Error;

namespace {

constexpr u64 kEmpty = 0;

// The first way holding `tag`, or -1. Every way is compared, backwards, without an early
// exit: the hit way of a random access pattern is unpredictable, and a mispredicted loop
// exit cost more than the compares (make bench, pointer_chase).
int find_way(const u64* blocks, u32 ways, u64 tag) {
    int found = -1;
    for (u32 i = ways; i-- > 0;) found = blocks[i] == tag ? int(i) : found;
    return found;
}

// splitmix64 (Steele, Lea, Flood 2014): the randomized policies' generator, one per level.
struct Rng {
    u64 s = 0;
    u64 next() {
        u64 z = (s += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }
    u32 below(u32 n) { return u32(next() % n); }  // uniform enough for n <= 256
};

}  // namespace

// One level's policy; the per-set state lives in the level's storage (blocks + meta).
class CachePolicy {
public:
    explicit CachePolicy(u32 ways) : ways_(ways) {}
    virtual ~CachePolicy() = default;
    virtual u32 meta_bytes() const { return 0; }
    // Initial state of one set: blocks are already empty.
    virtual void init(u8* meta) const { (void)meta; }
    // cacheSim.py's acc(): true on a hit; on a miss the line is filled (maybe evicting).
    virtual bool access(u64* blocks, u8* meta, u64 tag) = 0;
    // cacheSim.py's ReplPolicySim.flush: the way becomes empty, the state is unchanged.
    virtual void flush(u64* blocks, u8* meta, u64 tag) {
        (void)meta;
        int i = find_way(blocks, ways_, tag);
        if (i >= 0) blocks[i] = kEmpty;
    }
    void reseed(u64 seed) { rng_.s = seed; }

protected:
    u32 ways_;
    Rng rng_;
};

namespace {

// cacheSim.py LRUSim: blocks = [block] + [b for b in blocks if b != block][:assoc-1].
class LruPolicy final : public CachePolicy {
public:
    using CachePolicy::CachePolicy;
    bool access(u64* blocks, u8*, u64 tag) override {
        int hit = find_way(blocks, ways_, tag);
        u32 pos = hit >= 0 ? u32(hit) : ways_ - 1;
        std::memmove(blocks + 1, blocks, pos * sizeof(u64));
        blocks[0] = tag;
        return hit >= 0;
    }
};

// cacheSim.py FIFOSim: a miss pushes the block in front and drops the last way.
class FifoPolicy final : public CachePolicy {
public:
    using CachePolicy::CachePolicy;
    bool access(u64* blocks, u8*, u64 tag) override {
        if (find_way(blocks, ways_, tag) >= 0) return true;
        std::memmove(blocks + 1, blocks, (ways_ - 1) * sizeof(u64));
        blocks[0] = tag;
        return false;
    }
};

// RANDOM (not in cacheSim.py): a miss fills the first empty way, else a uniformly random
// way; hits change nothing.
class RandomPolicy final : public CachePolicy {
public:
    using CachePolicy::CachePolicy;
    bool access(u64* blocks, u8*, u64 tag) override {
        if (find_way(blocks, ways_, tag) >= 0) return true;
        int e = find_way(blocks, ways_, kEmpty);
        blocks[e >= 0 ? u32(e) : rng_.below(ways_)] = tag;
        return false;
    }
};

// The tree of cacheSim.py PLRUSim over `ways` leaves: ceil(log2 ways) levels, level l
// with 2^l bits (all 0 initially), stored level after level at meta[2^l - 1 + i].
struct PlruTree {
    u32 ways = 0, levels = 0;
    explicit PlruTree(u32 w) : ways(w) {
        while ((1u << levels) < w) ++levels;
    }
    u32 bytes() const { return (1u << levels) - 1; }
    static u8& bit(u8* meta, u32 level, u32 idx) { return meta[(1u << level) - 1 + idx]; }
    // getIndexForBits; rand_leaf / rand_root as PLRURandSim / RandPLRUSim.
    u32 victim(u8* meta, Rng& rng, bool rand_leaf, bool rand_root) const {
        u32 level = 0, idx = 0;
        for (;;) {
            if (level == levels - 1) {
                u32 ret = 2 * idx + (rand_leaf ? rng.below(2) : bit(meta, level, idx));
                return std::min(ways - 1, ret);
            }
            if (level == 0 && rand_root) {
                idx = rng.below(3);  // random.randint(0, 2), then two levels down
                level = 2;
            } else {
                idx = 2 * idx + bit(meta, level, idx);
                ++level;
            }
        }
    }
    // updateIndexBits: every node on the path points away from the accessed way.
    void touch(u8* meta, u32 way) const {
        u32 last = way;
        for (u32 l = levels; l-- > 0;) {
            u32 cur = last / 2;
            bit(meta, l, cur) = u8(1 - last % 2);
            last = cur;
        }
    }
};

// cacheSim.py PLRUSim (PLRU: a miss follows the tree even when a way is empty),
// PLRUlSim (PLRUl: linearInit, the first empty way first), PLRURandSim (PLRURand: random
// leaf bit), RandPLRUSim (RandPLRU: random subtree at the root).
class PlruPolicy final : public CachePolicy {
public:
    PlruPolicy(u32 ways, bool linear, bool rand_leaf, bool rand_root)
        : CachePolicy(ways), tree_(ways), linear_(linear), rand_leaf_(rand_leaf), rand_root_(rand_root) {}
    u32 meta_bytes() const override { return tree_.bytes(); }
    bool access(u64* blocks, u8* meta, u64 tag) override {
        int hit = find_way(blocks, ways_, tag);
        u32 idx;
        if (hit >= 0) {
            idx = u32(hit);
        } else {
            int e = linear_ ? find_way(blocks, ways_, kEmpty) : -1;
            idx = e >= 0 ? u32(e) : tree_.victim(meta, rng_, rand_leaf_, rand_root_);
            blocks[idx] = tag;
        }
        tree_.touch(meta, idx);
        return hit >= 0;
    }

private:
    PlruTree tree_;
    bool linear_, rand_leaf_, rand_root_;
};

// cacheSim.py LRU_PLRU4Sim: ways/4 groups of 4 ways, each a PLRUl over its 4 ways, the
// groups in LRU order. meta: the groups' trees (3 bytes each), then the order (MRU first).
class LruPlru4Policy final : public CachePolicy {
public:
    explicit LruPlru4Policy(u32 ways) : CachePolicy(ways), groups_(ways / 4), tree_(4) {}
    u32 meta_bytes() const override { return groups_ * 4; }
    void init(u8* meta) const override {
        for (u32 g = 0; g < groups_; ++g) meta[3 * groups_ + g] = u8(g);
    }
    bool access(u64* blocks, u8* meta, u64 tag) override {
        u8* order = meta + 3 * groups_;
        int hit = find_way(blocks, groups_ * 4, tag);
        u32 g = order[groups_ - 1];
        if (hit >= 0) {
            g = u32(hit) / 4;
        } else {
            int e = find_way(blocks, groups_ * 4, kEmpty);  // the first group with an empty way
            if (e >= 0) g = u32(e) / 4;
        }
        u64* gb = blocks + 4 * g;
        u8* gm = meta + 3 * g;
        int in = find_way(gb, 4, tag);
        if (in < 0) {
            int e = find_way(gb, 4, kEmpty);
            in = e >= 0 ? e : int(tree_.victim(gm, rng_, false, false));
            gb[in] = tag;
        }
        tree_.touch(gm, u32(in));
        u8* pos = std::find(order, order + groups_, u8(g));
        std::memmove(order + 1, order, size_t(pos - order));
        order[0] = u8(g);
        return hit >= 0;
    }

private:
    u32 groups_;
    PlruTree tree_;
};

// cacheSim.py MRUSim (MRU, upd_if_not_full) and MRUNSim (MRU_N: no update while the set
// is not full). meta: one bit per way, 1 initially.
class MruPolicy final : public CachePolicy {
public:
    MruPolicy(u32 ways, bool upd_if_not_full) : CachePolicy(ways), upd_(upd_if_not_full) {}
    u32 meta_bytes() const override { return ways_; }
    void init(u8* meta) const override { std::memset(meta, 1, ways_); }
    bool access(u64* blocks, u8* bits, u64 tag) override {
        int hit = find_way(blocks, ways_, tag);
        int empty = find_way(blocks, ways_, kEmpty);
        bool full = empty < 0;
        u32 idx;
        if (hit >= 0) {
            idx = u32(hit);
        } else {
            idx = full ? first_one(bits) : u32(empty);
            blocks[idx] = tag;
        }
        if (full || upd_) bits[idx] = 0;
        if (std::find(bits, bits + ways_, u8(1)) == bits + ways_)
            for (u32 i = 0; i < ways_; ++i) bits[i] = i != idx;
        return hit >= 0;
    }

private:
    // bits.index(1); a 1 always exists when the set is full and ways >= 2.
    u32 first_one(const u8* bits) const { return u32(std::find(bits, bits + ways_, u8(1)) - bits) % ways_; }
    bool upd_;
};

// cacheSim.py NRUSim ("according to ISCA'10 paper"): a miss takes the first way whose bit
// is 1 (after setting all bits when none is), empty or not.
class NruPolicy final : public CachePolicy {
public:
    using CachePolicy::CachePolicy;
    u32 meta_bytes() const override { return ways_; }
    void init(u8* meta) const override { std::memset(meta, 1, ways_); }
    bool access(u64* blocks, u8* bits, u64 tag) override {
        int hit = find_way(blocks, ways_, tag);
        if (hit >= 0) {
            bits[hit] = 0;
            return true;
        }
        u8* one = std::find(bits, bits + ways_, u8(1));
        if (one == bits + ways_) {
            std::memset(bits, 1, ways_);
            one = bits;
        }
        u32 idx = u32(one - bits);
        blocks[idx] = tag;
        bits[idx] = 0;
        return false;
    }
};

// The parts of a QLRU_H.._M.._R.._U..[_UMO] name (cacheSim.py QLRUSim and its tables).
struct QlruSpec {
    u8 hit[4] = {};    // QLRUHitFuncs: age after a hit, per age
    u8 miss = 0;       // QLRUMissFuncs: age of an inserted line; MR: the common one
    u8 miss_rare = 0;  // QLRUMissRandFuncs: the age taken with probability 1/16
    bool miss_random = false;
    u8 repl = 0;       // QLRUReplIdxFuncs R0..R2
    u8 upd = 0;        // QLRUUpdFuncs U0..U3
    bool umo = false;  // updOnMissOnly
};

// cacheSim.py QLRUSim: two-bit ages (3 initially); SRRIP is QLRU_H00_M2_R0_U0_UMO.
class QlruPolicy final : public CachePolicy {
public:
    QlruPolicy(u32 ways, const QlruSpec& q) : CachePolicy(ways), q_(q) {}
    u32 meta_bytes() const override { return ways_; }
    void init(u8* meta) const override { std::memset(meta, 3, ways_); }
    bool access(u64* blocks, u8* ages, u64 tag) override {
        int idx = find_way(blocks, ways_, tag);
        bool hit = idx >= 0;
        if (hit) {
            ages[idx] = q_.hit[ages[idx]];
        } else {
            if (q_.umo) update(ages, -1);
            idx = int(replace_index(ages, blocks));
            blocks[idx] = tag;
            ages[idx] = q_.miss_random && rng_.below(16) == 0 ? q_.miss_rare : q_.miss;
        }
        if (!q_.umo) update(ages, idx);
        return hit;
    }

private:
    u32 first_age3(const u8* ages) const {
        const u8* p = std::find(ages, ages + ways_, u8(3));
        return p == ages + ways_ ? ways_ : u32(p - ages);
    }
    // R0: the first empty way, else the first of age 3 (one exists for every combination
    // cacheSim.py allows, with ways >= 2); R1 (IVB): ... else way 0; R2 (CFL L2): the
    // last empty way, else the first of age 3.
    u32 replace_index(const u8* ages, const u64* blocks) const {
        if (q_.repl == 2) {
            for (u32 i = ways_; i-- > 0;)
                if (blocks[i] == kEmpty) return i;
        } else {
            int e = find_way(blocks, ways_, kEmpty);
            if (e >= 0) return u32(e);
        }
        u32 i = first_age3(ages);
        return i == ways_ ? 0 : i;
    }
    // U0 (CFL L3): all ages shift so that the oldest is 3. U1 (CFL L2): the same over the
    // other ways (all of them when idx is -1, as cacheSim.py's slices make it). U2 (IVB):
    // all +1 when none is 3. U3: the others +1 when none is 3.
    void update(u8* ages, int idx) const {
        if (q_.upd == 0 || q_.upd == 1) {
            bool skip = q_.upd == 1;
            u8 mx = 0;
            bool any = false;
            for (u32 i = 0; i < ways_; ++i)
                if (!skip || int(i) != idx) mx = std::max(mx, ages[i]), any = true;
            if (!any) return;
            for (u32 i = 0; i < ways_; ++i)
                if (!skip || int(i) != idx) ages[i] = u8(ages[i] + 3 - mx);
            return;
        }
        if (first_age3(ages) != ways_) return;
        for (u32 i = 0; i < ways_; ++i)
            if (q_.upd == 2 || int(i) != idx) ages[i] = u8(ages[i] + 1);
    }
    QlruSpec q_;
};

// ---- Policy names ----

struct HitMap {
    const char* name;
    u8 age[4];  // new age for ages 0..3
};
constexpr HitMap kHitFuncs[] = {
    {"H21", {0, 0, 1, 2}}, {"H20", {0, 0, 0, 2}}, {"H11", {0, 0, 1, 1}}, {"H10", {0, 0, 0, 1}}, {"H00", {0, 0, 0, 0}},
};
struct MissRand {
    const char* name;
    u8 rare, common;
};
constexpr MissRand kMissRand[] = {{"MR32", 2, 3}, {"MR31", 1, 3}, {"MR30", 0, 3},
                                  {"MR21", 1, 2}, {"MR20", 0, 2}, {"MR10", 0, 1}};

bool parse_miss(const std::string& s, QlruSpec* q) {
    if (s.size() == 2 && s[0] == 'M' && s[1] >= '0' && s[1] <= '3') {
        q->miss = u8(s[1] - '0');
        return true;
    }
    for (const MissRand& m : kMissRand)
        if (s == m.name) {
            q->miss_random = true;
            q->miss_rare = m.rare;
            q->miss = m.common;
            return true;
        }
    return false;
}

std::vector<std::string> split(const std::string& s, char sep) {
    std::vector<std::string> out;
    size_t start = 0;
    for (;;) {
        size_t p = s.find(sep, start);
        out.push_back(s.substr(start, p == std::string::npos ? std::string::npos : p - start));
        if (p == std::string::npos) return out;
        start = p + 1;
    }
}

// "QLRU_H11_M1_R0_U0", optionally "_UMO"; R0 and R2 only with U0/U1 (as cacheSim.py).
bool parse_qlru(const std::string& name, QlruSpec* q) {
    if (name == "SRRIP") return parse_qlru("QLRU_H00_M2_R0_U0_UMO", q);
    std::vector<std::string> f = split(name, '_');
    if (f.size() < 5 || f.size() > 6 || f[0] != "QLRU") return false;
    if (f.size() == 6 && f[5] != "UMO") return false;
    q->umo = f.size() == 6;
    const HitMap* h = nullptr;
    for (const HitMap& m : kHitFuncs)
        if (f[1] == m.name) h = &m;
    if (!h || !parse_miss(f[2], q)) return false;
    std::memcpy(q->hit, h->age, 4);
    if (f[3].size() != 2 || f[3][0] != 'R' || f[3][1] < '0' || f[3][1] > '2') return false;
    if (f[4].size() != 2 || f[4][0] != 'U' || f[4][1] < '0' || f[4][1] > '3') return false;
    q->repl = u8(f[3][1] - '0');
    q->upd = u8(f[4][1] - '0');
    return !(q->repl != 1 && q->upd >= 2);
}

// nullptr for an unknown name (check_cache_level has said so before).
std::unique_ptr<CachePolicy> make_policy(const std::string& n, u32 ways) {
    if (n == "LRU") return std::make_unique<LruPolicy>(ways);
    if (n == "FIFO") return std::make_unique<FifoPolicy>(ways);
    if (n == "RANDOM") return std::make_unique<RandomPolicy>(ways);
    if (n == "PLRU") return std::make_unique<PlruPolicy>(ways, false, false, false);
    if (n == "PLRUl") return std::make_unique<PlruPolicy>(ways, true, false, false);
    if (n == "PLRURand") return std::make_unique<PlruPolicy>(ways, false, true, false);
    if (n == "RandPLRU") return std::make_unique<PlruPolicy>(ways, false, false, true);
    if (n == "LRU_PLRU4") return std::make_unique<LruPlru4Policy>(ways);
    if (n == "MRU") return std::make_unique<MruPolicy>(ways, true);
    if (n == "MRU_N") return std::make_unique<MruPolicy>(ways, false);
    if (n == "NRU") return std::make_unique<NruPolicy>(ways);
    QlruSpec q;
    if (parse_qlru(n, &q)) return std::make_unique<QlruPolicy>(ways, q);
    return nullptr;
}

const char kPolicyList[] =
    "LRU, FIFO, PLRU, PLRUl, PLRURand, RandPLRU, LRU_PLRU4, MRU, MRU_N, NRU, SRRIP, RANDOM, "
    "QLRU_<H21|H20|H11|H10|H00>_<M0..M3|MR32|MR31|MR30|MR21|MR20|MR10>_<R0|R1|R2>_<U0..U3>[_UMO] "
    "(R0 and R2 only with U0 or U1), e.g. QLRU_H11_M1_R0_U0";

}  // namespace

pmulab::Status check_cache_level(const CacheLevelSpec& l) {
    const char* n = l.name.c_str();
    if (l.ways == 0 || l.ways > 256) return Error::make(Errc::invalid_argument, "%s: %u ways (1 to 256)", n, l.ways);
    if (l.line < 8 || (l.line & (l.line - 1)) != 0)
        return Error::make(Errc::invalid_argument, "%s: line size %u is not a power of two >= 8", n, l.line);
    constexpr u64 kMaxSize = 4ull << 30;  // above any real cache (Genoa-X: 1152 MiB of L3)
    if (l.size_bytes > kMaxSize)
        return Error::make(Errc::invalid_argument, "%s: size %llu bytes is above the model's limit of 4 GiB", n,
                           (unsigned long long)l.size_bytes);
    u64 unit = u64(l.ways) * l.line;
    if (l.size_bytes == 0 || l.size_bytes % unit != 0)
        return Error::make(Errc::invalid_argument,
                           "%s: size %llu bytes is not a non-zero multiple of ways * line (%u * %u = %llu bytes)", n,
                           (unsigned long long)l.size_bytes, l.ways, l.line, (unsigned long long)unit);
    if (!make_policy(l.policy, 1))
        return Error::make(Errc::invalid_argument, "%s: unknown replacement policy '%.60s'; known: %s", n,
                           l.policy.c_str(), kPolicyList);
    if (!slice_count_ok(l.slices) || (l.slices > 1 && l.name != "L3"))
        return Error::make(Errc::invalid_argument,
                           "%s: %u slices (L3 only: 1, 2, 4 or 8 by the client hash, 9 to %u by the server stand-in)",
                           n, l.slices, kMaxServerSlices);
    if (l.sets() % l.slices != 0)
        return Error::make(Errc::invalid_argument, "%s: %llu sets do not split into %u slices", n,
                           (unsigned long long)l.sets(), l.slices);
    if (l.policy == "LRU_PLRU4" && l.ways % 4 != 0)
        return Error::make(Errc::invalid_argument, "%s: LRU_PLRU4 needs a multiple of 4 ways, not %u", n, l.ways);
    if (l.policy == "RandPLRU" && (l.ways == 3 || l.ways == 4))
        return Error::make(Errc::invalid_argument,
                           "%s: RandPLRU picks one of 3 subtrees two levels below the root: it needs 1, 2 or "
                           "at least 5 ways, not %u",
                           n, l.ways);
    return pmulab::Status();
}

// ---- The levels ----

// One level: the policy and the sets, allocated in chunks of kChunkSets on first touch
// (an L3 of hundreds of MiB costs only what is used). A set is `ways` blocks then the
// policy's meta bytes, rounded up to whole u64. A sliced level keeps slice k's sets at
// k * per_slice .. (k + 1) * per_slice - 1.
struct CacheHierarchy::Level {
    static constexpr u64 kChunkSets = 64;
    CacheLevelSpec spec;
    u64 sets = 0, per_slice = 0;
    u32 ways = 0, line_shift = 0, stride = 0, slices = 1;
    std::unique_ptr<CachePolicy> policy;
    std::vector<std::unique_ptr<u64[]>> chunks;

    Level(const CacheLevelSpec& s, u64 seed)
        : spec(s), sets(s.sets()), per_slice(s.sets_per_slice()), ways(s.ways), slices(s.slices) {
        while ((1u << line_shift) < s.line) ++line_shift;
        policy = make_policy(s.policy, ways);  // checked: check_cache_level
        if (!policy) policy = std::make_unique<LruPolicy>(ways);
        stride = ways + (policy->meta_bytes() + 7) / 8;
        policy->reseed(seed);
        chunks.resize((sets + kChunkSets - 1) / kChunkSets);
    }
    u64 set_index(u64 line_no) const {
        if (slices > 1)
            return slice_of_hash(line_no << line_shift, slices, spec.hash) * per_slice + line_no % per_slice;
        return (sets & (sets - 1)) == 0 ? line_no & (sets - 1) : line_no % sets;
    }
    u64* set_of(u64 line_no) {
        u64 set = set_index(line_no);
        std::unique_ptr<u64[]>& c = chunks[set / kChunkSets];
        if (!c) {
            c = std::make_unique<u64[]>(kChunkSets * stride);  // zeroed: every way empty
            for (u64 i = 0; i < kChunkSets; ++i) policy->init(meta(c.get() + i * stride));
        }
        return c.get() + (set % kChunkSets) * stride;
    }
    u8* meta(u64* set) const { return reinterpret_cast<u8*>(set + ways); }
    bool access(u64 addr) {
        u64 line_no = addr >> line_shift;
        u64* s = set_of(line_no);
        u64 tag = line_no + 1;
        if (ways == 1) {  // one way: every policy keeps the last line (cacheSim.py fails on some)
            bool hit = s[0] == tag;
            s[0] = tag;
            return hit;
        }
        return policy->access(s, meta(s), tag);
    }
    void flush(u64 addr) {
        u64 line_no = addr >> line_shift;
        if (!chunks[set_index(line_no) / kChunkSets]) return;  // never touched: nothing to flush
        u64* s = set_of(line_no);
        policy->flush(s, meta(s), line_no + 1);
    }
};

CacheHierarchy::CacheHierarchy(const CacheConfig& c) : config_(c) {
    for (size_t i = 0; i < c.levels.size(); ++i)
        levels_.push_back(std::make_shared<Level>(c.levels[i], c.seed * 0x100000001B3ull + i));
}

CacheHierarchy::~CacheHierarchy() = default;
CacheHierarchy::CacheHierarchy(CacheHierarchy&&) noexcept = default;
CacheHierarchy& CacheHierarchy::operator=(CacheHierarchy&&) noexcept = default;

unsigned CacheHierarchy::access(u64 phys_addr, bool write) {
    (void)write;  // write-allocate, no dirty state: a store is a load to the model
    for (size_t i = 0; i < levels_.size(); ++i)
        if (levels_[i]->access(phys_addr)) return unsigned(i);
    return unsigned(levels_.size());
}

u32 CacheHierarchy::slice_of(u64 phys_addr) const {
    for (const auto& l : levels_)
        if (l->slices > 1) return slice_of_hash(phys_addr, l->slices, l->spec.hash);
    return 0;
}

bool CacheHierarchy::share_last_level(const CacheHierarchy& other) {
    if (levels_.size() < 3 || other.levels_.size() < 3) return false;
    const CacheLevelSpec &a = levels_[2]->spec, &b = other.levels_[2]->spec;
    if (a.slices < 2 || a.size_bytes != b.size_bytes || a.ways != b.ways || a.line != b.line || a.policy != b.policy ||
        a.slices != b.slices || a.hash != b.hash)
        return false;
    levels_[2] = other.levels_[2];
    return true;
}

void CacheHierarchy::flush_line(u64 phys_addr) {
    for (auto& l : levels_) l->flush(phys_addr);
}

void CacheHierarchy::reset() {
    for (size_t i = 0; i < levels_.size(); ++i) {
        for (auto& c : levels_[i]->chunks) c.reset();
        levels_[i]->policy->reseed(config_.seed * 0x100000001B3ull + i);
    }
}

}  // namespace sim
