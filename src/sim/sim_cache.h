// The simulator's memory hierarchy: set-associative data caches (L1D, L2, L3) with one
// replacement policy per level, as the executor's loads, stores, CLFLUSH/CLFLUSHOPT and
// WBINVD/INVD drive them. docs/sim.md, "The memory hierarchy", is the user's view.
//
// Model (chosen to be simple to reason about; docs/sim.md says the same):
//  * Lines of `line` bytes (64), indexed by physical address: set = (addr / line) % sets.
//    Set hashing and sectored lines are not modelled; any set count works. A sliced
//    level (slices > 1, L3 only) is `slices` independent caches of sets / slices sets
//    each: the slice is sim_slice.h's complex-addressing hash of the address, the set
//    within it (addr / line) % (sets / slices).
//  * An access walks the levels from L1D down until one holds the line; that level
//    served it. Every level it missed in fills the line (its policy's miss path, which may
//    evict); the serving level sees a hit; the levels below it are not touched. Each level
//    is thus exactly one cacheSim.py policy simulator per set, accessed in order.
//  * Non-inclusive, non-exclusive: an eviction never invalidates the line elsewhere and
//    never moves it to another level. Stores are write-allocate and behave as loads (no
//    dirty state, no write-back traffic).
//  * CLFLUSH/CLFLUSHOPT invalidate the line in every level the way cacheSim.py's flush
//    does (the way becomes empty, the policy's state is unchanged). WBINVD/INVD empty
//    every level and put every set back into the policy's initial state.
//  * Only data accesses: no L1I, code fetches never touch the caches.
//
// Replacement policies are those of nanoBench's tools/CacheAnalyzer/cacheSim.py (A. Abel,
// https://github.com/andreas-abel/nanoBench), by the same names and with the same
// behaviour, plus RANDOM (seeded); sim_cache.cpp implements each, citing its class.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/result.h"
#include "sim/sim_slice.h"
#include "x86/cpuid.h"

namespace sim {

using pmulab::u32;
using pmulab::u64;
using pmulab::u8;

struct CacheLevelSpec {
    std::string name;  // "L1D", "L2", "L3"
    u64 size_bytes = 0;
    u32 ways = 0;
    u32 line = 64;
    std::string policy;                        // a cacheSim.py policy name (cache_policy_names()) or RANDOM
    u32 slices = 1;                            // L3 only: 1, 2, 4 or 8 (sim_slice.h)
    SliceHash hash = SliceHash::intel_client;  // the slice hash of a sliced L3 (sim_slice.h)
    u64 sets() const { return size_bytes / (u64(ways) * line); }
    u64 sets_per_slice() const { return sets() / slices; }
};

// No levels: the model is off (every access is served by memory).
struct CacheConfig {
    std::vector<CacheLevelSpec> levels;
    u64 seed = 0;  // for the randomized policies
};

// The geometry from CPUID leaf 4 (Intel) / 8000_001DH (AMD) where the snapshot has it,
// else a documented geometry per vendor and family; the default policy per level.
CacheConfig default_cache_config(const pmulab::CpuidSnapshot& cpuid);

// "--cache" syntax: "off", or a comma-separated list of LEVEL:SIZE[:WAYS[:POLICY]]
// (LEVEL L1D/L2/L3; SIZE in bytes or with a K/M/G suffix; an empty field keeps the
// default; L3 takes a fifth field, its slices: L3:6M:12:LRU:4) or LEVEL:off (that level and those below it removed).
// Levels not named keep their defaults; a level the defaults lack needs all fields. Errors are invalid_argument.
pmulab::Result<CacheConfig> parse_cache_spec(const std::string& spec, const CacheConfig& defaults);

// One line: "L1D 32 KiB 8-way 64 sets PLRU, L2 ...", or "off"; a sliced level ends in
// " (4 slices of 2048 sets)".
std::string describe(const CacheConfig& c);

// Checks one level: a known policy, ways >= 1, size a non-zero multiple of ways * line,
// the policy's constraints on the ways, slices (L3 only) 1, 2, 4 or 8 dividing the sets.
// An error message names the level.
pmulab::Status check_cache_level(const CacheLevelSpec& l);

class CachePolicy;  // sim_cache.cpp

// One logical processor's caches (a simulated machine has one per CPU; a sliced L3 is the
// one of another CPU's hierarchy: share_last_level). Movable, not copyable; not
// thread-safe.
class CacheHierarchy {
public:
    // Every level of c must pass check_cache_level (parse_cache_spec and
    // default_cache_config guarantee it). Sets are allocated on first touch.
    explicit CacheHierarchy(const CacheConfig& c);
    ~CacheHierarchy();
    CacheHierarchy(CacheHierarchy&&) noexcept;
    CacheHierarchy& operator=(CacheHierarchy&&) noexcept;

    // One data access to the line holding phys_addr (callers split accesses crossing a
    // line). Returns the level that served it: 0 = L1D, 1 = L2, 2 = L3, levels().size()
    // = memory.
    unsigned access(u64 phys_addr, bool write);
    // CLFLUSH / CLFLUSHOPT: invalidates the line in every level.
    void flush_line(u64 phys_addr);
    // WBINVD / INVD: empties every level, every set back in the policy's initial state
    // (the randomized policies' generators are reseeded: a reset hierarchy behaves as a
    // new one).
    void reset();
    const CacheConfig& config() const { return config_; }
    unsigned memory_level() const { return unsigned(config_.levels.size()); }
    // The L3 slice holding phys_addr (0 without a sliced L3).
    u32 slice_of(u64 phys_addr) const;
    // Makes this hierarchy's L3 the very one of `other` (a sliced last level is shared by
    // the cores of a client part): both must have a sliced L3 of the same geometry and
    // policy; false (and nothing changed) otherwise.
    bool share_last_level(const CacheHierarchy& other);

    struct Level;

private:
    CacheConfig config_;
    std::vector<std::shared_ptr<Level>> levels_;
};

}  // namespace sim
