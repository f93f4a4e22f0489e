// pmulab-sim's executor (src/host/lib/sim_exec.h) and its x86 length decoder: what it
// counts in a body, and what it refuses instead of guessing.
#include <gtest/gtest.h>

#include <vector>

#include "sim_exec.h"
#include "x86_length.h"

using namespace pmulab;

namespace {

size_t len_of(std::vector<u8> b) {
    x86len::Insn in;
    if (!x86len::decode(b.data(), b.size(), &in)) return 0;
    return in.len;
}

SimExec::BodyCount count(std::vector<u8> b, bool* ok) {
    SimExec::BodyCount c;
    *ok = SimExec::count_body(b.data(), b.size(), &c);
    return c;
}

}  // namespace

TEST(X86Length, DecodesCommonEncodings) {
    EXPECT_EQ(len_of({0x48, 0x01, 0xC0}), 3u);                     // add rax, rax
    EXPECT_EQ(len_of({0x48, 0x8B, 0x04, 0x25, 0, 0, 0, 0}), 8u);   // mov rax, [abs32]
    EXPECT_EQ(len_of({0x48, 0x8B, 0x44, 0x24, 0x08}), 5u);         // mov rax, [rsp+8]
    EXPECT_EQ(len_of({0x48, 0xB8, 1, 2, 3, 4, 5, 6, 7, 8}), 10u);  // mov rax, imm64
    EXPECT_EQ(len_of({0x66, 0x05, 1, 2}), 4u);                     // add ax, imm16
    EXPECT_EQ(len_of({0x0F, 0x1F, 0x44, 0x00, 0x00}), 5u);         // nopl 0(rax,rax)
    EXPECT_EQ(len_of({0x66, 0x0F, 0x3A, 0x0F, 0xC1, 0x08}), 6u);   // palignr xmm0, xmm1, 8
    EXPECT_EQ(len_of({0xC4, 0xE2, 0x7D, 0x58, 0xC0}), 5u);         // vpbroadcastd ymm0, xmm0
    EXPECT_EQ(len_of({0xC5, 0xFD, 0xFE, 0xC1}), 4u);               // vpaddd ymm0, ymm0, ymm1
    EXPECT_EQ(len_of({0x62, 0xF1, 0x7D, 0x48, 0xFE, 0xC1}), 6u);   // vpaddd zmm0, zmm0, zmm1
    EXPECT_EQ(len_of({0xF7, 0xC0, 1, 0, 0, 0}), 6u);               // test eax, imm32
    EXPECT_EQ(len_of({0xF7, 0xE0}), 2u);                           // mul eax
    EXPECT_EQ(len_of({0x0F, 0x31}), 2u);                           // rdtsc
    EXPECT_EQ(len_of({0x48, 0x8B}), 0u);                           // cut off
    EXPECT_EQ(len_of({0x06}), 0u);                                 // push es: invalid in 64-bit mode
}

TEST(SimExec, CountsStraightCodeAndFollowsForwardJumps) {
    bool ok = false;
    SimExec::BodyCount c = count({0x48, 0x01, 0xC0, 0x48, 0x01, 0xC3, 0xC5, 0xFD, 0xFC, 0xC1}, &ok);
    ASSERT_TRUE(ok) << c.why;
    EXPECT_EQ(c.instructions, 3u);
    EXPECT_EQ(c.branches, 0u);
    c = count({0xEB, 0x01, 0x90, 0x90}, &ok);  // jmp over one nop
    ASSERT_TRUE(ok) << c.why;
    EXPECT_EQ(c.instructions, 2u);
    EXPECT_EQ(c.branches, 1u);
    c = count({0xE9, 1, 0, 0, 0, 0x90, 0x90}, &ok);  // jmp rel32 over one nop
    ASSERT_TRUE(ok) << c.why;
    EXPECT_EQ(c.instructions, 2u);
    // The built-in kernels' model bodies: one byte per instruction, 0xCB for a branch.
    c = count({0xCB, 0xCC, 0xCC}, &ok);
    ASSERT_TRUE(ok);
    EXPECT_EQ(c.instructions, 3u);
    EXPECT_EQ(c.branches, 1u);
}

TEST(SimExec, RefusesWhatItCannotFollow) {
    bool ok = true;
    SimExec::BodyCount c = count({0x90, 0x74, 0x01, 0x90, 0x90}, &ok);  // je
    EXPECT_FALSE(ok);
    EXPECT_EQ(c.bad_offset, 1u);
    EXPECT_NE(c.why.find("conditional branch"), std::string::npos) << c.why;
    c = count({0xEB, 0xFE}, &ok);  // jmp to itself
    EXPECT_FALSE(ok);
    EXPECT_NE(c.why.find("backwards"), std::string::npos) << c.why;
    c = count({0xC3}, &ok);
    EXPECT_FALSE(ok);
    c = count({0x0F, 0x0B}, &ok);  // ud2
    EXPECT_FALSE(ok);
    c = count({0x90, 0x48, 0x8B}, &ok);  // cut off by the end of the body
    EXPECT_FALSE(ok);
    EXPECT_EQ(c.bad_offset, 1u);
}
