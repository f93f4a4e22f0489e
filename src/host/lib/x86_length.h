// A length decoder for 64-bit x86 machine code (Intel SDM Vol. 2 chapter 2, "Instruction
// Format"; AMD APM Vol. 3 chapter 1): legacy prefixes, REX, VEX (C4/C5), EVEX (62), the
// one-byte map and the 0F, 0F38, 0F3A maps, ModRM/SIB/displacement and immediates. It
// says how long an instruction is and whether it transfers control, which is all the
// simulator's executor needs to count the instructions and branches of user code. Not a
// disassembler: operands are not decoded. Host-only (pmulab-sim and the tests).
#pragma once

#include <cstddef>
#include <cstdint>

namespace pmulab::x86len {

enum class Flow : uint8_t {
    none,      // falls through
    jmp_rel,   // JMP rel8/rel32: target = next + rel
    jcc_rel,   // Jcc, LOOP*, JrCXZ: conditional, target = next + rel
    call_rel,  // CALL rel32
    ret,       // RET, IRET
    indirect,  // JMP/CALL r/m, far transfers
    syscall,   // SYSCALL, SYSENTER, INT n, UD2 and other control transfers out of the code
};

struct Insn {
    size_t len = 0;
    Flow flow = Flow::none;
    int64_t rel = 0;  // for jmp_rel / jcc_rel / call_rel
};

// Decodes the instruction at p (at most n bytes). Returns false for bytes it does not
// know or an instruction cut off by the end.
bool decode(const uint8_t* p, size_t n, Insn* out);

}  // namespace pmulab::x86len
