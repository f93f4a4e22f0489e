#include "measure/kernels.h"

#include "base/fmt.h"
#include "x86/msr_addr.h"

namespace pmulab {

// Keep in step with src/measure/kernel_bodies.S: the body text here is what the .S file holds,
// and `instructions` is what QEMU -icount measures (tests/py/test_qemu_measure.py).
constexpr KernelInfo kKernels[kKernelCount] = {
    {KernelId::empty, "empty", 0, KernelBuffer::none, KernelNeeds::nothing, "",
     "nothing at all: measures the harness itself; must come out exactly 0 per iteration"},
    {KernelId::nop, "nop", 1, KernelBuffer::none, KernelNeeds::nothing, "nop",
     "one-byte NOP: front-end / retire throughput"},
    {KernelId::add_chain, "add_chain", 1, KernelBuffer::none, KernelNeeds::nothing, "add $1, %rax",
     "dependent ADD chain: latency of a 64-bit register ADD"},
    {KernelId::add_indep, "add_indep", 8, KernelBuffer::none, KernelNeeds::nothing,
     "add $1, %r8; add $1, %r9; add $1, %r10; add $1, %r11; add $1, %r12; add $1, %r13; add $1, %r14; "
     "add $1, %rbx",
     "eight independent ADD chains: ADD throughput"},
    {KernelId::imul_chain, "imul_chain", 1, KernelBuffer::none, KernelNeeds::nothing, "imul %rax, %rax",
     "dependent IMUL chain (RAX = 1): latency of a 64-bit IMUL"},
    {KernelId::div_chain, "div_chain", 1, KernelBuffer::none, KernelNeeds::nothing, "div %rcx",
     "dependent 64-bit DIV chain (RDX:RAX = 0:0x0123456789ABCDEF, RCX = 1): DIV latency"},
    {KernelId::pointer_chase, "pointer_chase", 1, KernelBuffer::chase, KernelNeeds::nothing, "mov (%rsi), %rsi",
     "load-to-use latency: a random cyclic pointer chain over 64-byte nodes of --size bytes "
     "(cache and TLB staircase)"},
    {KernelId::store_stream, "store_stream", 3, KernelBuffer::stream, KernelNeeds::nothing,
     "mov %rax, (%rbx,%rsi); add $64, %rsi; and %rdi, %rsi",
     "one 8-byte store per 64-byte line, streaming through --size bytes (power of two)"},
    {KernelId::load_stream, "load_stream", 3, KernelBuffer::stream, KernelNeeds::nothing,
     "mov (%rbx,%rsi), %rax; add $64, %rsi; and %rdi, %rsi",
     "one 8-byte load per 64-byte line, streaming through --size bytes (power of two)"},
    {KernelId::branch_pred, "branch_pred", 6, KernelBuffer::none, KernelNeeds::nothing,
     "imul %r9, %r8; add %r10, %r8; test %r8, %r8; js 1f; nop; jmp 2f; 1: nop; nop; 2:",
     "conditional branch alternating taken / not taken (predictable); both paths execute 6 "
     "instructions"},
    {KernelId::branch_random, "branch_random", 6, KernelBuffer::none, KernelNeeds::nothing,
     "imul %r9, %r8; add %r10, %r8; test %r8, %r8; js 1f; nop; jmp 2f; 1: nop; nop; 2:",
     "conditional branch on bit 63 of a seeded LCG (unpredictable, the same sequence every run); "
     "both paths execute 6 instructions"},
    {KernelId::lfence, "lfence", 1, KernelBuffer::none, KernelNeeds::nothing, "lfence", "LFENCE cost"},
    {KernelId::mfence, "mfence", 1, KernelBuffer::none, KernelNeeds::nothing, "mfence", "MFENCE cost"},
    {KernelId::cpuid, "cpuid", 2, KernelBuffer::none, KernelNeeds::nothing, "xor %eax, %eax; cpuid",
     "CPUID leaf 0 cost (a VM exit under a hypervisor)"},
    {KernelId::rdtsc, "rdtsc", 1, KernelBuffer::none, KernelNeeds::nothing, "rdtsc", "RDTSC cost"},
    {KernelId::rdmsr, "rdmsr", 1, KernelBuffer::none, KernelNeeds::rdmsr_tsc, "rdmsr",
     "RDMSR cost, of IA32_TIME_STAMP_COUNTER (ECX = 0x10)"},
    {KernelId::rdpmc, "rdpmc", 1, KernelBuffer::none, KernelNeeds::rdpmc0, "rdpmc",
     "RDPMC cost, of counter 0 (ECX = 0); unsupported where RDPMC faults"},
};

namespace {
constexpr bool catalogue_in_order() {
    unsigned i = 0;
    const KernelId ids[] = {
#define PMULAB_KERNEL_ID(n) KernelId::n,
        PMULAB_KERNEL_LIST(PMULAB_KERNEL_ID)
#undef PMULAB_KERNEL_ID
    };
    for (KernelId id : ids) {
        if (unsigned(id) != i || unsigned(kKernels[i].id) != i) return false;
        ++i;
    }
    return i == kKernelCount;
}
static_assert(catalogue_in_order(), "PMULAB_KERNEL_LIST and KernelId disagree");
}  // namespace

const KernelInfo* find_kernel(StrView name) {
    for (const KernelInfo& k : kKernels)
        if (name.eq(StrView(k.name))) return &k;
    return nullptr;
}

void put_kernel_names(StrBuf& out) {
    for (unsigned i = 0; i < kKernelCount; ++i) {
        if (i) out.put(StrView(", "));
        out.put(StrView(kKernels[i].name));
    }
}

Status check_buffer_size(const KernelInfo& k, u64 size) {
    if (k.buffer == KernelBuffer::none) return ok_status();
    if (size < kBufferMin || size > kBufferMax || size % kBufferMin)
        return Error::make(Errc::invalid_argument, "--size %llu: %s needs a multiple of 4K between 4K and 256M bytes",
                           (unsigned long long)size, k.name);
    if (k.buffer == KernelBuffer::stream && (size & (size - 1)))
        return Error::make(Errc::invalid_argument,
                           "--size %llu: %s needs a power of two (its offset wraps with a mask), e.g. 4K, 64K, 1M",
                           (unsigned long long)size, k.name);
    return ok_status();
}

namespace {

inline u64 load_u64(const u8* p) {
    u64 v;
    __builtin_memcpy(&v, p, sizeof v);
    return v;
}
inline void store_u64(u8* p, u64 v) { __builtin_memcpy(p, &v, sizeof v); }

}  // namespace

void build_pointer_chase(u8* buf, u64 bytes, u64 base, u64 seed) {
    u64 n = bytes / kChaseNodeBytes;
    // Sattolo's algorithm on the node indices, kept in the nodes themselves: the
    // result is a permutation with a single cycle, so the chase visits every node.
    for (u64 i = 0; i < n; ++i) store_u64(buf + i * kChaseNodeBytes, i);
    XorShift64Star rng(seed);
    for (u64 i = n - 1; i > 0; --i) {
        u64 j = rng.below(i);
        u8* a = buf + i * kChaseNodeBytes;
        u8* b = buf + j * kChaseNodeBytes;
        u64 t = load_u64(a);
        store_u64(a, load_u64(b));
        store_u64(b, t);
    }
    for (u64 i = 0; i < n; ++i) {
        u8* p = buf + i * kChaseNodeBytes;
        store_u64(p, base + load_u64(p) * kChaseNodeBytes);
    }
}

u64 walk_pointer_chase(const u8* buf, u64 bytes, u64 base) {
    u64 n = bytes / kChaseNodeBytes;
    u64 cur = 0, steps = 0;
    do {
        u64 next = load_u64(buf + cur * kChaseNodeBytes);
        if (next < base || next - base >= bytes || (next - base) % kChaseNodeBytes) return 0;
        cur = (next - base) / kChaseNodeBytes;
        if (++steps > n) return 0;
    } while (cur != 0);
    return steps;
}

void kernel_init_registers(const KernelInfo& k, const KernelParams& p, u64 regs[kGprCount]) {
    for (unsigned i = 0; i < kGprCount; ++i) regs[i] = 0;
    switch (k.id) {
        case KernelId::imul_chain: regs[kRax] = 1; break;
        case KernelId::div_chain:
            regs[kRax] = 0x0123456789ABCDEFull;
            regs[kRdx] = 0;
            regs[kRcx] = 1;
            break;
        case KernelId::pointer_chase: regs[kRsi] = p.buffer; break;
        case KernelId::store_stream:
        case KernelId::load_stream:
            regs[kRbx] = p.buffer;
            regs[kRsi] = 0;
            regs[kRdi] = p.size - 1;
            break;
        case KernelId::branch_pred:
            regs[kR8] = 0;
            regs[kR9] = 1;
            regs[kR10] = u64(1) << 63;
            break;
        case KernelId::branch_random:
            regs[kR8] = p.seed;
            regs[kR9] = kLcgMul;
            regs[kR10] = kLcgAdd;
            break;
        case KernelId::rdmsr: regs[kRcx] = msr::IA32_TIME_STAMP_COUNTER; break;
        case KernelId::rdpmc: regs[kRcx] = 0; break;
        default: break;
    }
}

u16 kernel_carried_registers(const KernelInfo& k) {
    switch (k.id) {
        case KernelId::pointer_chase: return u16(1u << kRsi);
        case KernelId::store_stream:
        case KernelId::load_stream: return u16(1u << kRsi);
        default: return 0;
    }
}

}  // namespace pmulab
