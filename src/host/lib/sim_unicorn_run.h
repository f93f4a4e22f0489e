// The executor's state during one execute() and its Unicorn hooks (sim_unicorn.h says
// what the executor does; sim_unicorn_run.cpp implements this). Private to the executor.
#pragma once

#include <unicorn/unicorn.h>

#include <chrono>
#include <string>

#include "sim_unicorn.h"
#include "x86_insn.h"

namespace pmulab::uc_exec {

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

inline usize page_round(usize n) { return (n + kPage - 1) & ~(kPage - 1); }
inline u64 addr_of(const void* p) { return u64(reinterpret_cast<uintptr_t>(p)); }

inline constexpr int kUcGpr[16] = {UC_X86_REG_RAX, UC_X86_REG_RCX, UC_X86_REG_RDX, UC_X86_REG_RBX,
                                   UC_X86_REG_RSP, UC_X86_REG_RBP, UC_X86_REG_RSI, UC_X86_REG_RDI,
                                   UC_X86_REG_R8,  UC_X86_REG_R9,  UC_X86_REG_R10, UC_X86_REG_R11,
                                   UC_X86_REG_R12, UC_X86_REG_R13, UC_X86_REG_R14, UC_X86_REG_R15};

inline u64 reg(uc_engine* uc, int r) {
    u64 v = 0;
    uc_reg_read(uc, r, &v);
    return v;
}
inline void set_reg(uc_engine* uc, int r, u64 v) { uc_reg_write(uc, r, &v); }

// The hooks, registered with the runner as user data (UnicornRunner::active() is the run).
void hook_code(uc_engine*, u64 addr, u32 size, void* user);
void hook_block(uc_engine*, u64 addr, u32 size, void* user);
void hook_mem(uc_engine*, uc_mem_type type, u64 addr, int size, i64, void* user);
void hook_intr(uc_engine*, u32 intno, void* user);
bool hook_invalid_insn(uc_engine*, void* user);
bool hook_bad_mem(uc_engine*, uc_mem_type type, u64 addr, int, i64, void* user);

}  // namespace pmulab::uc_exec

namespace pmulab {

// One execute(): the hooks' state.
struct UnicornRunner::Run {
    using Kind = uc_exec::Kind;
    using Clock = uc_exec::Clock;
    UnicornRunner* self = nullptr;
    uc_engine* uc = nullptr;
    sim::SimCpu* cpu = nullptr;
    SimProblems* problems = nullptr;
    const Region* region = nullptr;
    SimDataCache* cache = nullptr;
    // The cache's line size and memory level, read once per region (the hooks run per access).
    u64 line = 64;
    unsigned memory_level = 0;
    u64 code_lo = 0, body_lo = 0, body_hi = 0, stop = 0;
    u8* kinds = nullptr;  // the region's instruction kinds by offset (kind + 1), as decoded
    usize kinds_len = 0;
    // The instruction in flight (retired when the next one starts).
    struct Insn {
        u64 addr = 0;
        u32 size = 0;
        Kind kind = Kind::plain;
        bool valid = false, loaded = false, stored = false;
        bool redirected = false;            // serviced and skipped: its translation block ended there
        unsigned served = 0;                // the level that served its first load
        u64 data_addr = 0;                  // its first memory access (load or store; IBS)
        u64 load_addr = 0, store_addr = 0;  // its first load's and store's linear address (PEBS)
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
    bool each = false;  // retire instruction by instruction, NMIs at each boundary

    void retire(u64 next);
    void count_branch(Kind k, bool taken);
    void settle_block(u64 next);
    bool in_block(u64 rip) const { return blk.valid && rip >= blk.from && rip < blk.end; }
    void cut_block(u64 rip);
    void on_block(u64 addr, u32 size);
    void count_load(unsigned served);
    unsigned served_index(unsigned served) const;
    // Each instruction: the retiring one handed to the CPU (SimCpu::op, IBS).
    void report_op();
    void flush();
    // An NMI the CPU delivered: the runner's handler at this boundary (`next`: the
    // interrupted RIP).
    void take_nmi(u64 next);
    void raise(u64 vec, u64 at, u64 err, u64 addr);
    void on_instruction(u64 addr, u32 size);
    void service(Kind k);
    void pmu_fault(const char* what, u32 arg, const Error& e);
    void refuse_vex();
    std::string where(u64 addr) const;
};

}  // namespace pmulab
