// What kind of instruction the executor is about to run (sim_unicorn.cpp): the emulator
// (Unicorn) decodes and executes every instruction and says how long it is; this says
// which ones the simulated CPU services itself (RDPMC, RDMSR, WRMSR, RDTSC(P), CPUID,
// SERIALIZE, the cache-control instructions), which are branches and of what kind (the
// branch events), and which the emulator cannot execute (VEX/EVEX/XOP: Unicorn 2.0 has
// no AVX). Encodings: Intel SDM Vol. 2 chapter 2 (prefixes, REX, VEX, EVEX) and the
// opcode map, Vol. 2D Appendix A; AMD APM Vol. 3 §1.2 (XOP). Host-only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace pmulab::x86insn {

enum class Kind : uint8_t {
    plain,       // everything else: the emulator runs it
    rep_string,  // REP/REPcc MOVS, STOS, LODS, CMPS, SCAS, INS, OUTS: retires once
    jcc,         // Jcc, LOOP/LOOPcc, JrCXZ: a conditional near branch
    jmp,         // JMP rel8/rel32
    jmp_ind,     // JMP r/m (near, indirect)
    call,        // CALL rel32
    call_ind,    // CALL r/m (near, indirect)
    ret,         // RET, RET imm16 (near)
    far,         // far JMP/CALL/RET, IRET, INT n, INTO, SYSCALL, SYSRET, SYSENTER, SYSEXIT
    rdpmc,       // 0F 33
    rdmsr,       // 0F 32
    wrmsr,       // 0F 30
    rdtsc,       // 0F 31
    rdtscp,      // 0F 01 F9
    cpuid,       // 0F A2
    serialize,   // 0F 01 E8 (no prefix)
    hlt,         // F4
    wbinvd,      // 0F 09 (and WBNOINVD, F3 0F 09)
    invd,        // 0F 08
    clflush,     // 0F AE /7, memory operand (66: CLFLUSHOPT)
    vex,         // VEX (C4/C5), EVEX (62) or XOP (8F with ModRM.reg != 0) encoded
    trap,        // INT3, INT1, UD2: raise an exception by design (RIP must be exact)
};

// The offset of the first byte after the legacy prefixes (66, 67, F0, F2, F3, segments).
size_t prefixes_end(const uint8_t* p, size_t size);

// The instruction at p, `size` bytes long (as the emulator decoded it).
Kind classify(const uint8_t* p, size_t size);

// True for the kinds that are branches (the branch events count them).
inline bool is_branch(Kind k) { return k >= Kind::jcc && k <= Kind::far; }

// Code decoded linearly from its first byte (x86_length.h): the executor's fast path for
// a body of plain instructions and near branches, where it counts whole translation
// blocks instead of hooking every instruction. ok is false when an instruction cannot be
// decoded or is of a kind the executor must see one by one (serviced, REP strings, VEX,
// HLT, cache control, far transfers).
struct LinearCode {
    bool ok = false;
    std::vector<uint32_t> before;  // before[o]: instructions that start below offset o (o <= n)
    std::vector<uint8_t> size;     // at an instruction's first byte: its length; else 0
    std::vector<uint8_t> kind;     // at an instruction's first byte: its Kind
    uint32_t count(size_t from, size_t to) const { return before[to] - before[from]; }
    // The first byte of the instruction that ends at offset `end` (end > 0), or SIZE_MAX.
    size_t last_start(size_t end) const;
};
LinearCode decode_linear(const uint8_t* p, size_t n);

}  // namespace pmulab::x86insn
