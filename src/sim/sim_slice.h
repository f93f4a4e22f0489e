// L3 slices of the simulated machine: which slice of a sliced last-level cache holds a
// physical address, and how many slices (and C-Boxes) a model has. docs/sim.md, "The
// memory hierarchy", "Slices", is the user's view.
//
// The hash is the "complex addressing" of Intel's client parts with 2, 4 or 8 cores
// (Sandy Bridge to Coffee Lake), as reverse-engineered by Maurice, Le Scouarnec, Neumann,
// Heen and Francillon, "Reverse Engineering Intel Last-Level Cache Complex Addressing Using
// Performance Counters", RAID 2015, Table 3 (the functions o0, o1, o2; Hund, Willems and
// Holz, "Practical Timing Side Channel Attacks Against Kernel Space ASLR", S&P 2013, found
// the first bit): output bit i of the slice number is the XOR (parity) of a fixed set of
// physical address bits. 2 slices use o0, 4 use o0 and o1, 8 use o0, o1 and o2.
#pragma once

#include "x86/cpuid.h"

namespace sim {

using pmulab::u32;
using pmulab::u64;

// The address bits of o0, o1, o2 (Maurice et al. 2015, Table 3), as masks.
inline constexpr u64 kSliceHashMasks[3] = {
    // o0: 6 10 12 14 16 17 18 20 22 24 25 26 27 28 30 32 33 35 36
    0x1B5F575440ull,
    // o1: 7 11 13 15 17 19 20 21 22 23 24 26 28 29 31 33 34 35 37
    0x2EB5FAA880ull,
    // o2: 8 12 13 16 19 22 23 26 27 30 31 34 35 36 37
    0x3CCCC93100ull,
};

// Which hash a sliced L3 uses: Intel's client complex addressing (above), or the stand-in
// of the simulated AMD parts (amd_standin_slice).
enum class SliceHash : pmulab::u8 { intel_client, amd_standin };

// The simulated AMD L3's slice of `phys` among `slices` (2, 4 or 8): AMD does not disclose
// its slice hash, so the simulator uses its own: the XOR of the physical address's 3-bit
// groups from bit 6 (bits 6-8, 9-11, ..., 45-47), its low log2(slices) bits. Every
// address bit from 6 to 47 moves the slice, as in the XOR hashes reverse-engineered on
// Intel parts; it is no claim about AMD's.
u32 amd_standin_slice(u64 phys, u32 slices);
// The slice by `hash`.
u32 slice_of_hash(u64 phys, u32 slices, SliceHash hash);

// A server part's L3 has one slice per CHA, often a count that is not a power of two
// (Skylake-SP up to 28, Ice Lake-SP 40, Sapphire Rapids 60). Intel has not disclosed its
// hash; the simulator's STAND-IN for 9 to 64 slices (its own, not Intel's) mixes the line
// number (phys >> 6) with a multiply-xorshift finalizer (MurmurHash3's fmix64) and maps it
// to a slice by the high half of a 64 x 64-bit product, (h * slices) >> 64: non-linear
// in the address bits, every slice about as likely.
inline constexpr u32 kMaxServerSlices = 64;

// 1, 2, 4 or 8 (the client hash) or 9 .. kMaxServerSlices (the server stand-in).
bool slice_count_ok(u32 slices);
// The slice of `phys` among `slices` (slice_count_ok); 0 when slices is 1.
u32 llc_slice(u64 phys, u32 slices);

// The number of L3 slices (= C-Boxes with lookup counters) of the model of `cpuid`: the
// cores of an Intel client part of Sandy Bridge .. Coffee Lake (family 6 models 2A, 3A,
// 3C, 45, 46, 3D, 47, 4E, 5E, 8E, 9E, A5, A6) from CPUID leaf 0BH (logical processors at
// the core level / at the SMT level), when it is 2, 4 or 8; 0 otherwise (no C-Box model:
// server parts with CHAs, AMD, other models, a core count the hash does not cover).
u32 client_llc_slices(const pmulab::CpuidSnapshot& cpuid);
// Skylake and later client parts (models 4E, 5E, 8E, 9E, A5, A6) have the uncore global
// control at E01H; Sandy Bridge .. Broadwell at 391H.
bool uncore_global_at_e01(const pmulab::CpuidSnapshot& cpuid);

// The CHAs (= L3 slices) of an Intel server part the simulator models (family 6 models
// 55H Skylake-SP/Cascade Lake: 18, 6AH/6CH Ice Lake-SP/-D: 28, 8FH/CFH Sapphire/Emerald
// Rapids: 30; the simulator's choice of part), 0 otherwise or in a hypervisor's guest
// (CPUID.01H:ECX[31]: the uncore is not virtualized). `gen` gets 0 (Skylake-SP), 1
// (Ice Lake-SP) or 2 (Sapphire Rapids).
u32 server_llc_slices(const pmulab::CpuidSnapshot& cpuid, u32* gen = nullptr);
// The L3 slice of a server part in the simulator: 2048 sets of 64-byte lines, 11 ways
// (Skylake-SP: 1.375 MiB), 12 (Ice Lake-SP: 1.5 MiB) or 15 (Sapphire Rapids: 1.875 MiB).
u32 server_slice_ways(u32 gen);
inline constexpr u32 kServerSetsPerSlice = 2048;

}  // namespace sim
