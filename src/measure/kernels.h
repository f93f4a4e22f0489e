// The built-in microbenchmark kernels (`pmulab bench list`, `pmulab run --bench`).
//
// A kernel is a straight-line body of machine code (src/measure/kernel_bodies.S, between
// the labels pmulab_kb_NAME_start and pmulab_kb_NAME_end) that the engine copies U
// (or 2U) times into the measured region. "One iteration" is one copy of the body;
// `instructions` is the exact number of instructions one copy retires, whatever
// the data (both directions of the branch kernels execute the same number), so
// that under QEMU -icount every kernel measures exactly 2^shift * instructions TSC
// ticks per iteration.
//
// Register contract of every body: it may use every general-purpose register
// except RSP and R15 (the engine's loop counter), must not touch the stack, and
// must not jump outside itself. Initial register values come from
// kernel_init_registers() and are loaded before every measured run, except the
// carried ones (kernel_carried_registers), which continue where the last run stopped.
#pragma once

#include "base/fmt.h"
#include "base/result.h"

namespace pmulab {

// X-macro over all kernels in catalogue order; the name is both the command-line
// name and the kernel_bodies.S label stem.
#define PMULAB_KERNEL_LIST(X) \
    X(empty)                  \
    X(nop)                    \
    X(add_chain)              \
    X(add_indep)              \
    X(imul_chain)             \
    X(div_chain)              \
    X(pointer_chase)          \
    X(store_stream)           \
    X(load_stream)            \
    X(branch_pred)            \
    X(branch_random)          \
    X(lfence)                 \
    X(mfence)                 \
    X(cpuid)                  \
    X(rdtsc)                  \
    X(rdmsr)                  \
    X(rdpmc)

enum class KernelId : u8 {
#define PMULAB_KERNEL_ENUM(n) n,
    PMULAB_KERNEL_LIST(PMULAB_KERNEL_ENUM)
#undef PMULAB_KERNEL_ENUM
        count
};
inline constexpr unsigned kKernelCount = unsigned(KernelId::count);

// What memory a kernel works on.
enum class KernelBuffer : u8 {
    none,
    chase,   // random cyclic pointer chain over 64-byte nodes, --size bytes
    stream,  // --size bytes walked with a 64-byte stride (power-of-two size)
};

// What must work on the measuring CPU before the kernel's code is generated.
enum class KernelNeeds : u8 {
    nothing,
    rdmsr_tsc,  // RDMSR IA32_TIME_STAMP_COUNTER
    rdpmc0,     // RDPMC with ECX = 0 (raises #UD without a PMU, e.g. QEMU TCG)
};

struct KernelInfo {
    KernelId id;
    const char* name;
    u32 instructions;  // per iteration (one copy of the body), exact
    KernelBuffer buffer;
    KernelNeeds needs;
    const char* body;         // the body in AT&T syntax, ';'-separated
    const char* description;  // what it measures
};

// The catalogue, indexed by KernelId.
extern const KernelInfo kKernels[kKernelCount];

inline const KernelInfo& kernel_info(KernelId id) { return kKernels[unsigned(id)]; }
const KernelInfo* find_kernel(StrView name);
// "empty, nop, add_chain, ..." for error messages.
void put_kernel_names(StrBuf& out);

// Buffer sizes (--size): multiples of 4 KiB from 4 KiB to 256 MiB; stream kernels
// need a power of two (their offset wraps with a mask).
inline constexpr u64 kBufferMin = 4096;
inline constexpr u64 kBufferMax = u64(256) << 20;
inline constexpr u64 kBufferDefault = 4096;
inline constexpr u64 kChaseNodeBytes = 64;  // one cache line per pointer-chase node
inline constexpr u64 kStreamStride = 64;    // one cache line per stream access
// Checks a --size value for a kernel; the message names the option and the kernel.
Status check_buffer_size(const KernelInfo& k, u64 size);

// Default seed of the pseudo-random kernels (pointer_chase permutation, branch_random).
inline constexpr u64 kDefaultSeed = 0x9E3779B97F4A7C15ull;

// xorshift64* (Vigna 2016): the deterministic generator for every pseudo-random
// choice pmulab makes, so that runs are reproducible from the seed.
struct XorShift64Star {
    u64 state;
    explicit XorShift64Star(u64 seed) : state(seed ? seed : kDefaultSeed) {}
    u64 next() {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        return state * 0x2545F4914F6CDD1Dull;
    }
    // In [0, bound) for bound > 0: the high half of next() * bound (Lemire's
    // multiply-shift, no division); the bias is below bound / 2^64 (< 2^-40 for the
    // at most 2^22 pointer-chase nodes).
    u64 below(u64 bound) { return u64((unsigned __int128)next() * bound >> 64); }
};

// Fills `bytes` (a multiple of kChaseNodeBytes, >= 2 nodes) at `buf` with a single
// random cycle through every node (Sattolo's algorithm): the first 8 bytes of each
// node hold the address of the next node, where `base` is the address the buffer
// has when the kernel runs (normally buf itself). Deterministic for a seed.
void build_pointer_chase(u8* buf, u64 bytes, u64 base, u64 seed);
// Follows the chain from node 0; returns the number of steps until it returns to
// node 0 (== nodes for a valid single cycle), or 0 when it leaves the buffer or
// exceeds `bytes / kChaseNodeBytes` steps.
u64 walk_pointer_chase(const u8* buf, u64 bytes, u64 base);

// Register numbers in x86-64 encoding order.
enum Gpr : u8 {
    kRax = 0,
    kRcx,
    kRdx,
    kRbx,
    kRsp,
    kRbp,
    kRsi,
    kRdi,
    kR8,
    kR9,
    kR10,
    kR11,
    kR12,
    kR13,
    kR14,
    kR15,
    kGprCount
};

struct KernelParams {
    u64 buffer = 0;  // address of the buffer (chase, stream), 0 when none
    u64 size = 0;    // its size in bytes
    u64 seed = kDefaultSeed;
};

// The registers the kernel expects at the start of a benchmark.
void kernel_init_registers(const KernelInfo& k, const KernelParams& p, u64 regs[kGprCount]);
// Registers that continue from one run to the next instead of restarting (bit r for
// GPR r): the pointer chase's node (RSI) and the streams' offset (RSI), so that the
// runs together walk the whole working set rather than its first lines every time.
u16 kernel_carried_registers(const KernelInfo& k);

// The LCG that drives the branch kernels (Knuth's MMIX constants); branch_pred uses
// a=1, c=2^63 instead so that its branch alternates taken / not taken.
inline constexpr u64 kLcgMul = 6364136223846793005ull;
inline constexpr u64 kLcgAdd = 1442695040888963407ull;

}  // namespace pmulab
