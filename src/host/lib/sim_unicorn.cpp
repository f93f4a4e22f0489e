#include "sim_unicorn.h"

#include <unicorn/unicorn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "measure/kernel_bodies.h"
#include "sim/sim_costs.h"
#include "x86_insn.h"

namespace pmulab {

namespace {

using x86insn::Kind;
using Clock = std::chrono::steady_clock;

constexpr usize kPage = 4096;
// The runner's own pages: the frame copy (page 0), the return point (page 1: a HLT the
// emulation stops at), the caller's stack (the rest).
constexpr usize kOwnBytes = 64 * 1024;
constexpr usize kReturnAt = kPage;
constexpr u64 kRefusedVector = 255;                          // the fault vector of code the emulator cannot run
constexpr u64 kVectorBP = 3, kVectorOF = 4, kVectorPF = 14;  // #UD and #GP: x86/hw.h
// #PF error code bits (SDM Vol. 3A §4.7 "Page-Fault Exceptions").
constexpr u64 kPfPresent = 1, kPfWrite = 2, kPfFetch = 16;

usize page_round(usize n) { return (n + kPage - 1) & ~(kPage - 1); }
u64 addr_of(const void* p) { return u64(reinterpret_cast<uintptr_t>(p)); }
bool canonical(u64 a) {
    i64 top = i64(a) >> 47;
    return top == 0 || top == -1;
}

u64 checksum(const u8* p, usize n) {
    u64 h = 0xcbf29ce484222325ull ^ n;
    usize i = 0;
    for (; i + 8 <= n; i += 8) {
        u64 w;
        std::memcpy(&w, p + i, 8);
        h = (h ^ w) * 0x100000001b3ull;
    }
    for (; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

constexpr int kUcGpr[16] = {UC_X86_REG_RAX, UC_X86_REG_RCX, UC_X86_REG_RDX, UC_X86_REG_RBX,
                            UC_X86_REG_RSP, UC_X86_REG_RBP, UC_X86_REG_RSI, UC_X86_REG_RDI,
                            UC_X86_REG_R8,  UC_X86_REG_R9,  UC_X86_REG_R10, UC_X86_REG_R11,
                            UC_X86_REG_R12, UC_X86_REG_R13, UC_X86_REG_R14, UC_X86_REG_R15};

u64 reg(uc_engine* uc, int r) {
    u64 v = 0;
    uc_reg_read(uc, r, &v);
    return v;
}
void set_reg(uc_engine* uc, int r, u64 v) { uc_reg_write(uc, r, &v); }

// The memory operand of a ModRM instruction (CLFLUSH's line): SDM Vol. 2A §2.1.5 and §2.2.1
// (REX extensions, RIP-relative). p[at] is the ModRM byte; `next` the next instruction.
u64 memory_operand(uc_engine* uc, const u8* p, usize at, usize size, u8 rex, u64 next) {
    u8 m = p[at];
    unsigned mod = m >> 6, rm = m & 7;
    usize i = at + 1;
    u64 ea = 0;
    if (rm == 4 && i < size) {  // SIB
        u8 sib = p[i++];
        unsigned base = (sib & 7) | ((rex & 1) << 3), index = ((sib >> 3) & 7) | ((rex & 2) << 2);
        if (index != 4) ea += reg(uc, kUcGpr[index]) << (sib >> 6);
        if ((sib & 7) == 5 && mod == 0) {
            i32 d;
            std::memcpy(&d, p + i, 4);
            return ea + u64(i64(d));
        }
        ea += reg(uc, kUcGpr[base]);
    } else if (mod == 0 && rm == 5) {
        i32 d;
        std::memcpy(&d, p + i, 4);
        return next + u64(i64(d));
    } else {
        ea += reg(uc, kUcGpr[rm | ((rex & 1) << 3)]);
    }
    if (mod == 1) ea += u64(i64(static_cast<signed char>(p[i])));
    if (mod == 2) {
        i32 d;
        std::memcpy(&d, p + i, 4);
        ea += u64(i64(d));
    }
    return ea;
}

// CLFLUSH/CLFLUSHOPT's operand: prefixes and REX skipped, then 0F AE ModRM.
u64 clflush_address(uc_engine* uc, const u8* p, usize size, u64 next) {
    usize at = 0;
    while (at < size && (p[at] == 0x66 || p[at] == 0x2E || p[at] == 0x3E || p[at] == 0x26 || p[at] == 0x36 ||
                         p[at] == 0x64 || p[at] == 0x65 || p[at] == 0x67))
        ++at;
    u8 rex = at < size && (p[at] & 0xF0) == 0x40 ? p[at++] : 0;
    return memory_operand(uc, p, at + 2, size, rex, next);
}

}  // namespace

// One execute(): the hooks' state.
struct UnicornRunner::Run {
    UnicornRunner* self = nullptr;
    uc_engine* uc = nullptr;
    sim::SimCpu* cpu = nullptr;
    SimProblems* problems = nullptr;
    const Region* region = nullptr;
    SimDataCache* cache = nullptr;
    u64 code_lo = 0, body_lo = 0, body_hi = 0, stop = 0;
    u8* kinds = nullptr;  // the region's instruction kinds by offset (kind + 1), as decoded
    usize kinds_len = 0;
    // The instruction in flight (retired when the next one starts).
    struct Insn {
        u64 addr = 0;
        u32 size = 0;
        Kind kind = Kind::plain;
        bool valid = false, loaded = false, stored = false;
        bool redirected = false;  // serviced and skipped: its translation block ended there
        unsigned served = 0;      // the level that served its first load
    } cur;
    // Fast mode (CodeSeen::fast): the body's decoded instructions, and the part of a
    // translation block in the body that is pending (retired when the next block or a
    // hooked instruction past it starts).
    const x86insn::LinearCode* fast = nullptr;
    struct Block {
        u64 from = 0, end = 0;
        bool valid = false;
        bool after_harness = false;  // the block started in the harness before `from`
    } blk;
    u64 last_load_rip = ~u64(0), last_store_rip = ~u64(0);
    sim::Retired batch;
    bool faulted = false;
    u64 vector = 0, rip = 0, error = 0, cr2 = 0;
    std::string refused;
    u64 steps = 0;
    Clock::time_point deadline;

    void retire(u64 next);
    void count_branch(Kind k, bool taken);
    void settle_block(u64 next);
    bool in_block(u64 rip) const { return blk.valid && rip >= blk.from && rip < blk.end; }
    void cut_block(u64 rip);
    void on_block(u64 addr, u32 size);
    void count_load(unsigned served);
    void flush();
    void raise(u64 vec, u64 at, u64 err, u64 addr);
    void on_instruction(u64 addr, u32 size);
    void service(Kind k);
    void pmu_fault(const char* what, u32 arg, const Error& e);
    void refuse_vex();
    std::string where(u64 addr) const;
};

void UnicornRunner::Run::flush() {
    if (!batch.instructions) return;
    cpu->retire(batch);
    bool body = batch.body;
    batch = sim::Retired();
    batch.body = body;
}

// The instruction in flight retired; `next` is where execution went on.
void UnicornRunner::Run::retire(u64 next) {
    if (!cur.valid) return;
    if (cur.kind == Kind::rep_string && next == cur.addr) return;  // the next iteration of one instruction
    cur.valid = false;
    sim::Retired& b = batch;
    ++b.instructions;
    if (cur.loaded) count_load(cur.served);
    b.stores += cur.stored;
    if (x86insn::is_branch(cur.kind)) count_branch(cur.kind, next != cur.addr + cur.size);
}

void UnicornRunner::Run::count_branch(Kind k, bool taken) {
    sim::Retired& b = batch;
    ++b.branches;
    switch (k) {
        case Kind::jcc:
            ++b.cond;
            b.cond_taken += taken;
            b.near_taken += taken;
            break;
        case Kind::jmp: ++b.near_taken; break;
        case Kind::jmp_ind: ++b.near_taken, ++b.indirect; break;
        case Kind::call: ++b.near_taken, ++b.near_calls; break;
        case Kind::call_ind: ++b.near_taken, ++b.near_calls, ++b.indirect; break;
        case Kind::ret: ++b.near_taken, ++b.near_returns; break;
        default: ++b.far; break;
    }
}

// A load of the instruction in flight (the level that served its first access).
void UnicornRunner::Run::count_load(unsigned served) {
    sim::Retired& b = batch;
    ++b.loads;
    if (!cache) return;
    unsigned level = served >= cache->levels() || served > 3 ? 3 : served;  // load_served: L1D, L2, L3, memory
    u64 one[4] = {};
    one[level] = 1;
    ++b.load_served[level];
    b.stall_cycles += sim::memory_stall_cycles(one);  // docs/sim.md "Cost model"
}

// The pending body block retired whole; `next` is where execution went on.
void UnicornRunner::Run::settle_block(u64 next) {
    if (!blk.valid) return;
    blk.valid = false;
    // A block that started in the harness reached its body part only if the harness's
    // last instruction fell through into it (a serviced one ends the translation block).
    if (blk.after_harness && !(cur.valid && cur.addr + cur.size == blk.from && !cur.redirected)) return;
    retire(blk.from);  // the harness's instruction before the body part
    if (!batch.body) {
        flush();
        batch.body = true;
    }
    usize from = usize(blk.from - body_lo), end = usize(blk.end - body_lo);
    u32 n = fast->count(from, end);
    batch.instructions += n;
    steps += n;
    usize last = fast->last_start(end);
    if (last != SIZE_MAX && last >= from) {
        Kind k = Kind(fast->kind[last]);
        if (x86insn::is_branch(k)) count_branch(k, next != blk.end);
    }
}

// A fault at `rip` inside the pending block: the instructions before it retired.
void UnicornRunner::Run::cut_block(u64 rip) {
    if (!blk.valid) return;
    if (in_block(rip)) {
        u32 n = fast->count(usize(blk.from - body_lo), usize(rip - body_lo));
        batch.instructions += n;
        steps += n;
    }
    blk.valid = false;
}

// A translation block starts at addr: the pending one retired; the part of this one in
// a fast body is pending (the harness's instructions have their own hooks).
void UnicornRunner::Run::on_block(u64 addr, u32 size) {
    settle_block(addr);
    retire(addr);  // the hooked instruction before this block
    if (!fast) return;
    u64 from = addr > body_lo ? addr : body_lo, end = addr + size < body_hi ? addr + size : body_hi;
    if (from >= end) return;
    if ((steps & ~u64(0xFFFF)) != ((steps + (end - from)) & ~u64(0xFFFF)) && Clock::now() > deadline)
        return raise(kWatchdogVector, addr, 0, 0);
    blk = Block{from, end, true, from > addr};
    last_load_rip = last_store_rip = ~u64(0);
}

// A fault at `at`: recorded once, the instruction does not retire, the emulation stops
// (the region then resumes at its exit path).
void UnicornRunner::Run::raise(u64 vec, u64 at, u64 err, u64 addr) {
    cut_block(at);
    if (!faulted) {
        faulted = true;
        vector = vec;
        rip = at;
        error = err;
        cr2 = addr;
    }
    cur.valid = false;
    set_reg(uc, UC_X86_REG_RIP, stop);
    uc_emu_stop(uc);
}

std::string UnicornRunner::Run::where(u64 addr) const {
    FaultPlace f = locate_fault(*region, usize(addr - code_lo));
    char buf[120];
    if (f.block == CodeBlock::body)
        std::snprintf(buf, sizeof buf, "offset %zu of the body (copy %llu of %llu)", f.offset,
                      (unsigned long long)f.copy + 1, (unsigned long long)region->copies);
    else if (f.block == CodeBlock::harness)
        std::snprintf(buf, sizeof buf, "offset %llu of the harness", (unsigned long long)(addr - code_lo));
    else std::snprintf(buf, sizeof buf, "offset %zu of %s", f.offset, code_block_name(f.block));
    return buf;
}

void UnicornRunner::Run::pmu_fault(const char* what, u32 arg, const Error& e) {
    u8 vec = cpu->log().empty() ? u8(kVectorGP) : cpu->log().back().vector;
    if (!vec) vec = u8(kVectorGP);
    if (locate_fault(*region, usize(cur.addr - code_lo)).block == CodeBlock::harness) {
        char msg[300];
        std::snprintf(msg, sizeof msg, "generated code: %s 0x%x faulted on CPU %u: %s", what, arg, cpu->index(), e.msg);
        problems->problem(msg);
    }
    raise(vec, cur.addr, 0, 0);
}

// VEX/EVEX/XOP: the emulator has no AVX. Where the simulated CPU has the extension the
// code is refused (never guessed); without it the emulator's #UD is the hardware's.
void UnicornRunner::Run::refuse_vex() {
    const u8* p = reinterpret_cast<const u8*>(uintptr_t(cur.addr));
    CpuidRegs l1 = cpu->cpuid(1, 0), l7 = cpu->cpuid(7, 0), e1 = cpu->cpuid(0x80000001u, 0);
    bool avx = (l1.ecx >> 28) & 1, avx512 = (l7.ebx >> 16) & 1, xop = (e1.ecx >> 11) & 1;
    usize at = 0;
    while (at < cur.size && (p[at] == 0x66 || p[at] == 0xF2 || p[at] == 0xF3 || p[at] == 0x67)) ++at;
    u8 esc = at < cur.size ? p[at] : 0;
    bool has = esc == 0x62 ? avx512 : esc == 0x8F ? xop : avx;
    if (!has) return;
    char bytes[64] = "";
    for (u32 i = 0, n = 0; i < cur.size && n + 4 < sizeof bytes; ++i) n += std::snprintf(bytes + n, 4, " %02x", p[i]);
    refused = "the simulator cannot run the code: " + where(cur.addr) + " holds" + bytes + ", a " +
              (esc == 0x62   ? "EVEX (AVX-512)"
               : esc == 0x8F ? "XOP"
                             : "VEX (AVX)") +
              "-encoded instruction: the simulated CPU has it, but the simulator's x86 emulator (Unicorn 2.0) "
              "does not execute AVX (docs/sim.md)";
    raise(kRefusedVector, cur.addr, 0, 0);
}

void UnicornRunner::Run::service(Kind k) {
    u64 next = cur.addr + cur.size;
    u32 ecx = u32(reg(uc, UC_X86_REG_RCX));
    auto put = [&](u64 v) {
        set_reg(uc, UC_X86_REG_RAX, u32(v));
        set_reg(uc, UC_X86_REG_RDX, v >> 32);
    };
    flush();  // the counts up to this instruction
    switch (k) {
        case Kind::rdpmc:
        case Kind::rdmsr: {
            Result<u64> v = k == Kind::rdpmc ? cpu->rdpmc(ecx) : cpu->rdmsr(ecx);
            if (!v.ok()) return pmu_fault(k == Kind::rdpmc ? "RDPMC" : "RDMSR", ecx, v.error());
            put(v.value());
            break;
        }
        case Kind::wrmsr: {
            u64 v = (reg(uc, UC_X86_REG_RDX) << 32) | u32(reg(uc, UC_X86_REG_RAX));
            Status s = cpu->wrmsr(ecx, v);
            if (!s.ok()) return pmu_fault("WRMSR", ecx, s.error());
            break;
        }
        case Kind::rdtscp: set_reg(uc, UC_X86_REG_RCX, 0); [[fallthrough]];  // IA32_TSC_AUX: 0
        case Kind::rdtsc: put(cpu->rdtsc()); break;
        case Kind::cpuid: {
            CpuidRegs r = cpu->cpuid(u32(reg(uc, UC_X86_REG_RAX)), ecx);
            set_reg(uc, UC_X86_REG_RAX, r.eax), set_reg(uc, UC_X86_REG_RBX, r.ebx);
            set_reg(uc, UC_X86_REG_RCX, r.ecx), set_reg(uc, UC_X86_REG_RDX, r.edx);
            break;
        }
        case Kind::serialize:  // CPUID.(EAX=07H,ECX=0):EDX[14]
            if (!((cpu->cpuid(7, 0).edx >> 14) & 1)) return raise(kVectorUD, cur.addr, 0, 0);
            break;
        default: return;
    }
    set_reg(uc, UC_X86_REG_RIP, next);
    cur.redirected = true;
}

void UnicornRunner::Run::on_instruction(u64 addr, u32 size) {
    if (blk.valid && addr >= blk.end) settle_block(addr);  // (before it: the same block's harness part)
    retire(addr);
    if (cur.valid) return;  // a REP string instruction's next iteration
    if ((++steps & 0xFFFF) == 0 && Clock::now() > deadline) return raise(kWatchdogVector, addr, 0, 0);
    bool body = addr >= body_lo && addr < body_hi;
    if (body != batch.body) {
        flush();
        batch.body = body;
    }
    const u8* p = reinterpret_cast<const u8*>(uintptr_t(addr));
    u64 off = addr - code_lo;
    Kind k;
    if (off < kinds_len && kinds[off]) {
        k = Kind(kinds[off] - 1);
    } else {
        k = x86insn::classify(p, size);
        if (off < kinds_len) kinds[off] = u8(u8(k) + 1);
    }
    cur = Insn{addr, size, k, true};
    switch (cur.kind) {
        case Kind::plain:
        case Kind::rep_string: return;
        case Kind::hlt: return raise(kWatchdogVector, addr + size, 0, 0);  // only the watchdog's NMI ends it
        case Kind::wbinvd:
        case Kind::invd:
            if (cache) cache->reset();
            return;
        case Kind::clflush:
            if (cache) cache->flush_line(clflush_address(uc, p, size, addr + size));
            return;
        case Kind::vex: return refuse_vex();
        default: return service(cur.kind);
    }
}

namespace {

UnicornRunner::Run* run_of(void* user) { return static_cast<UnicornRunner*>(user)->active(); }

void hook_code(uc_engine*, u64 addr, u32 size, void* user) { run_of(user)->on_instruction(addr, size); }

void hook_block(uc_engine*, u64 addr, u32 size, void* user) { run_of(user)->on_block(addr, size); }

// The instruction an exception or access belongs to: in the pending body block (fast mode:
// RIP, which Unicorn keeps exact for hooks), else the hooked instruction in flight.
u64 current_rip(UnicornRunner::Run& r) {
    if (!r.blk.valid) return r.cur.addr;
    u64 rip = reg(r.uc, UC_X86_REG_RIP);
    return r.in_block(rip) ? rip : r.cur.addr;
}

void hook_mem(uc_engine*, uc_mem_type type, u64 addr, int size, i64, void* user) {
    UnicornRunner::Run& r = *run_of(user);
    bool write = type == UC_MEM_WRITE;
    u64 rip = r.blk.valid ? current_rip(r) : r.cur.addr;
    bool in_block = r.blk.valid && r.in_block(rip);
    bool first_load = false;
    if (in_block && write && rip != r.last_store_rip) {
        ++r.batch.stores;
        r.last_store_rip = rip;
    } else if (in_block && !write && rip != r.last_load_rip) {
        first_load = true;
        r.last_load_rip = rip;
    } else if (!in_block) {
        first_load = !write && !r.cur.loaded;
        (write ? r.cur.stored : r.cur.loaded) = true;
    }
    unsigned level = 0;
    if (r.cache) {
        u64 line = r.cache->line_bytes();
        level = r.cache->access(addr, write);
        if ((addr % line) + u64(size) > line) r.cache->access(addr - addr % line + line, write);
    }
    if (first_load && in_block) r.count_load(level);
    else if (first_load) r.cur.served = level;
}

void hook_intr(uc_engine*, u32 intno, void* user) {
    UnicornRunner::Run& r = *run_of(user);
    // Traps report the next instruction (SDM Vol. 3A §6.5 "Exception Classifications"):
    // in a body block Unicorn's RIP already points there.
    u64 rip = current_rip(r);
    bool trap = intno == kVectorBP || intno == kVectorOF;
    u64 at = r.in_block(rip) || !trap ? rip : r.cur.addr + r.cur.size;
    r.raise(intno, at, 0, 0);
}

bool hook_invalid_insn(uc_engine*, void* user) {
    UnicornRunner::Run& r = *run_of(user);
    r.raise(kVectorUD, current_rip(r), 0, 0);
    return false;
}

bool hook_bad_mem(uc_engine*, uc_mem_type type, u64 addr, int, i64, void* user) {
    UnicornRunner::Run& r = *run_of(user);
    u64 rip = current_rip(r);
    if (!canonical(addr)) {
        r.raise(kVectorGP, rip, 0, 0);
        return false;
    }
    bool prot = type == UC_MEM_READ_PROT || type == UC_MEM_WRITE_PROT || type == UC_MEM_FETCH_PROT;
    bool write = type == UC_MEM_WRITE_UNMAPPED || type == UC_MEM_WRITE_PROT;
    bool fetch = type == UC_MEM_FETCH_UNMAPPED || type == UC_MEM_FETCH_PROT;
    u64 err = (prot ? kPfPresent : 0) | (write ? kPfWrite : 0) | (fetch ? kPfFetch : 0);
    r.raise(kVectorPF, fetch ? addr : rip, err, addr);
    return false;
}

}  // namespace

UnicornRunner::UnicornRunner() = default;

UnicornRunner::~UnicornRunner() {
    // PMULAB_SIM_STATS=1: the executor's speed on stderr (make bench reads it).
    if (const char* s = std::getenv("PMULAB_SIM_STATS"); s && *s == '1' && executed_)
        std::fprintf(stderr,
                     "pmulab-sim: executor: %llu instructions in %.3f s (%.1f million per second), %llu regions\n",
                     (unsigned long long)executed_, seconds_, seconds_ > 0 ? double(executed_) / seconds_ / 1e6 : 0.0,
                     (unsigned long long)regions_);
    if (uc_) uc_close(uc_);
    std::free(own_);
}

bool UnicornRunner::start() {
    if (uc_) return true;
    if (!broken_.empty()) return false;
    uc_err e = uc_open(UC_ARCH_X86, UC_MODE_64, &uc_);
    if (e == UC_ERR_OK) e = uc_ctl_set_cpu_model(uc_, UC_CPU_X86_SKYLAKE_CLIENT);
    own_ = static_cast<u8*>(std::aligned_alloc(kPage, kOwnBytes));
    if (e == UC_ERR_OK && own_) {
        std::memset(own_, 0, kOwnBytes);
        own_[kReturnAt] = 0xF4;  // HLT: never executed, the emulation stops there
        e = uc_mem_map_ptr(uc_, addr_of(own_), kOwnBytes, UC_PROT_ALL, own_);
    }
    uc_hook h;
    // Code hooks are per region (set_code_hooks); blocks are seen everywhere.
    if (e == UC_ERR_OK) e = uc_hook_add(uc_, &h, UC_HOOK_BLOCK, (void*)hook_block, this, 1, 0);
    if (e == UC_ERR_OK) e = uc_hook_add(uc_, &h, UC_HOOK_MEM_READ | UC_HOOK_MEM_WRITE, (void*)hook_mem, this, 1, 0);
    if (e == UC_ERR_OK) e = uc_hook_add(uc_, &h, UC_HOOK_INTR, (void*)hook_intr, this, 1, 0);
    if (e == UC_ERR_OK) e = uc_hook_add(uc_, &h, UC_HOOK_INSN_INVALID, (void*)hook_invalid_insn, this, 1, 0);
    if (e == UC_ERR_OK) e = uc_hook_add(uc_, &h, UC_HOOK_MEM_INVALID, (void*)hook_bad_mem, this, 1, 0);
    if (e == UC_ERR_OK) return true;
    broken_ = std::string("the simulator's x86 emulator (Unicorn) could not be set up: ") + uc_strerror(e);
    if (uc_) uc_close(uc_);
    uc_ = nullptr;
    return false;
}

CodeSpan UnicornRunner::kernel_body(KernelId id) { return builtin_kernel_body(id); }

void UnicornRunner::map_pages(void* p, usize bytes, bool executable) {
    if (!start()) return;
    u32 perms = executable ? UC_PROT_ALL : UC_PROT_READ | UC_PROT_WRITE;
    if (uc_mem_map_ptr(uc_, addr_of(p), page_round(bytes), perms, p) != UC_ERR_OK) return;
    uc_ctl_remove_cache(uc_, addr_of(p), addr_of(p) + page_round(bytes));
}

void UnicornRunner::unmap_pages(void* p, usize bytes) {
    if (!uc_) return;
    u64 lo = addr_of(p), hi = lo + page_round(bytes);
    uc_ctl_remove_cache(uc_, lo, hi);
    uc_mem_unmap(uc_, lo, hi - lo);
    auto from = code_seen_.lower_bound(lo), to = code_seen_.lower_bound(hi);
    for (auto it = from; it != to; ++it)
        for (size_t h : it->second.hooks) uc_hook_del(uc_, uc_hook(h));
    code_seen_.erase(from, to);
}

SimDataCache* UnicornRunner::data_cache(u32 cpu) {
    auto it = caches_.find(cpu);
    return it == caches_.end() ? nullptr : it->second.get();
}

// The engine writes each region with host stores the emulator does not see: translations
// of the bytes that were there before are dropped whenever the bytes changed.
UnicornRunner::CodeSeen& UnicornRunner::refresh_code(const Region& r) {
    u64 lo = addr_of(r.code);
    usize n = r.code_size ? r.code_size : r.size;
    u64 sum = checksum(static_cast<const u8*>(r.code), n);
    CodeSeen& seen = code_seen_[lo];
    if (seen.sum == sum && seen.kinds.size() == n) return seen;
    seen.sum = sum;
    seen.kinds.assign(n, 0);
    set_code_hooks(seen, r);
    uc_ctl_remove_cache(uc_, lo, lo + page_round(r.size));
    return seen;
}

// The region's code hooks: every instruction (slow mode), or all but the body's when the
// body is plain code and near branches (fast mode: counted per translation block).
void UnicornRunner::set_code_hooks(CodeSeen& seen, const Region& r) {
    for (size_t h : seen.hooks) uc_hook_del(uc_, uc_hook(h));
    seen.hooks.clear();
    u64 lo = addr_of(r.code), hi = lo + (r.code_size ? r.code_size : r.size);
    u64 body_lo = lo + r.body_offset, body_hi = body_lo + r.copies * r.body_len;
    seen.fast = false;
    if (r.block == CodeBlock::body && body_hi > body_lo && body_hi <= hi) {
        seen.body = x86insn::decode_linear(static_cast<const u8*>(r.code) + r.body_offset, usize(body_hi - body_lo));
        seen.fast = seen.body.ok;
    }
    auto add = [&](u64 from, u64 to) {  // [from, to)
        uc_hook h;
        if (from < to && uc_hook_add(uc_, &h, UC_HOOK_CODE, (void*)hook_code, this, from, to - 1) == UC_ERR_OK)
            seen.hooks.push_back(size_t(h));
    };
    if (!seen.fast) return add(lo, hi);
    add(lo, body_lo);
    add(body_hi, hi);
}

namespace {

// The registers of the call `region(frame)` (SysV: RDI = frame), returning to `stop`.
void enter_region(uc_engine* uc, u8* own, u64 frame, u64 stop) {
    for (int r : kUcGpr) set_reg(uc, r, 0);
    u64 rsp = addr_of(own) + kOwnBytes - 16;
    std::memcpy(own + kOwnBytes - 16, &stop, 8);
    set_reg(uc, UC_X86_REG_RSP, rsp);
    set_reg(uc, UC_X86_REG_RDI, frame);
    set_reg(uc, UC_X86_REG_RFLAGS, 0x2);  // IF = 0: the engine masked interrupts
}

}  // namespace

void UnicornRunner::execute(const Region& region, RegionFrame* frame, sim::SimCpu& cpu, SimProblems& problems) {
    if (!start()) {
        problems.problem(broken_);
        frame->faulted = 1;
        frame->fault_vector = kRefusedVector;
        return;
    }
    Clock::time_point t0 = Clock::now();
    ++regions_;
    CodeSeen& seen = refresh_code(region);
    if (cache_factory_ && !caches_.count(cpu.index())) caches_[cpu.index()] = cache_factory_(cpu);
    Run r;
    r.self = this, r.uc = uc_, r.cpu = &cpu, r.problems = &problems, r.region = &region;
    r.cache = data_cache(cpu.index());
    r.code_lo = addr_of(region.code);
    r.kinds = seen.kinds.data();
    r.kinds_len = seen.kinds.size();
    if (seen.fast) r.fast = &seen.body;
    if (region.block == CodeBlock::body) {
        r.body_lo = r.code_lo + region.body_offset;
        r.body_hi = r.body_lo + region.copies * region.body_len;
    }
    r.stop = addr_of(own_) + kReturnAt;
    r.deadline = Clock::now() + std::chrono::seconds(timeout_s_);
    RegionFrame* guest = reinterpret_cast<RegionFrame*>(own_);
    std::memcpy(guest, frame, sizeof *frame);
    enter_region(uc_, own_, addr_of(guest), r.stop);
    run_ = &r;  // the hooks find the run through the runner (their user data)
    auto pass = [&](u64 from) {
        uc_err e = uc_emu_start(uc_, from, r.stop, 0, 0);
        r.settle_block(r.stop);
        r.retire(r.stop);
        r.flush();
        bool stopped_by_fault = e == UC_ERR_READ_UNMAPPED || e == UC_ERR_WRITE_UNMAPPED || e == UC_ERR_FETCH_UNMAPPED ||
                                e == UC_ERR_READ_PROT || e == UC_ERR_WRITE_PROT || e == UC_ERR_FETCH_PROT ||
                                e == UC_ERR_INSN_INVALID;
        if (e != UC_ERR_OK && !(stopped_by_fault && r.faulted)) {
            problems.problem(std::string("the simulator's x86 emulator stopped: ") + uc_strerror(e));
            r.raise(kRefusedVector, r.cur.addr, 0, 0);
        }
    };
    pass(r.code_lo);
    if (r.faulted) {  // the fault path, as on the target: the exit code restores the caller's state
        r.cur.valid = false;
        bool first = r.faulted;
        r.faulted = false;
        Run saved = r;
        pass(r.code_lo + region.exit_offset);
        if (r.faulted)
            problems.problem("generated code: its exit path faulted after a fault at " + saved.where(saved.rip));
        r.faulted = first, r.vector = saved.vector, r.rip = saved.rip, r.error = saved.error, r.cr2 = saved.cr2;
    }
    run_ = nullptr;
    executed_ += r.steps;
    seconds_ += std::chrono::duration<double>(Clock::now() - t0).count();
    std::memcpy(frame, guest, sizeof *frame);
    if (!r.refused.empty()) problems.problem(r.refused);
    if (r.faulted) {
        frame->faulted = 1;
        frame->fault_vector = r.vector;
        frame->fault_rip = r.rip;
        frame->fault_error = r.error;
        frame->fault_cr2 = r.cr2;
    }
}

std::unique_ptr<SimRunner> make_sim_runner() { return std::make_unique<UnicornRunner>(); }

}  // namespace pmulab
