// The executor's instruction classifier (src/host/lib/x86_insn.h): which instructions the
// simulated CPU services, which are branches and of what kind.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "x86_insn.h"

using namespace pmulab;
using x86insn::Kind;

namespace {

Kind kind(std::vector<std::uint8_t> b) { return x86insn::classify(b.data(), b.size()); }

}  // namespace

TEST(X86Insn, ServicedInstructions) {
    EXPECT_EQ(kind({0x0F, 0x33}), Kind::rdpmc);
    EXPECT_EQ(kind({0x0F, 0x32}), Kind::rdmsr);
    EXPECT_EQ(kind({0x0F, 0x30}), Kind::wrmsr);
    EXPECT_EQ(kind({0x0F, 0x31}), Kind::rdtsc);
    EXPECT_EQ(kind({0x48, 0x0F, 0x31}), Kind::rdtsc);  // REX.W does not change it
    EXPECT_EQ(kind({0x0F, 0x01, 0xF9}), Kind::rdtscp);
    EXPECT_EQ(kind({0x0F, 0xA2}), Kind::cpuid);
    EXPECT_EQ(kind({0x0F, 0x01, 0xE8}), Kind::serialize);
    EXPECT_EQ(kind({0xF4}), Kind::hlt);
    EXPECT_EQ(kind({0x0F, 0x09}), Kind::wbinvd);
    EXPECT_EQ(kind({0x0F, 0x08}), Kind::invd);
    EXPECT_EQ(kind({0x0F, 0xAE, 0x38}), Kind::clflush);        // clflush (rax)
    EXPECT_EQ(kind({0x66, 0x0F, 0xAE, 0x38}), Kind::clflush);  // clflushopt (rax)
    EXPECT_EQ(kind({0x0F, 0xAE, 0xF8}), Kind::plain);          // sfence
    EXPECT_EQ(kind({0x0F, 0xAE, 0xE8}), Kind::plain);          // lfence
}

TEST(X86Insn, Branches) {
    EXPECT_EQ(kind({0x74, 0x01}), Kind::jcc);
    EXPECT_EQ(kind({0x0F, 0x85, 0, 0, 0, 0}), Kind::jcc);
    EXPECT_EQ(kind({0xE2, 0xFE}), Kind::jcc);  // loop
    EXPECT_EQ(kind({0xE3, 0x00}), Kind::jcc);  // jrcxz
    EXPECT_EQ(kind({0xEB, 0xFE}), Kind::jmp);
    EXPECT_EQ(kind({0xE9, 0, 0, 0, 0}), Kind::jmp);
    EXPECT_EQ(kind({0xE8, 0, 0, 0, 0}), Kind::call);
    EXPECT_EQ(kind({0xFF, 0xD0}), Kind::call_ind);  // call rax
    EXPECT_EQ(kind({0xFF, 0xE0}), Kind::jmp_ind);   // jmp rax
    EXPECT_EQ(kind({0x41, 0xFF, 0xE7}), Kind::jmp_ind);
    EXPECT_EQ(kind({0xC3}), Kind::ret);
    EXPECT_EQ(kind({0xC2, 8, 0}), Kind::ret);
    EXPECT_EQ(kind({0xF3, 0xC3}), Kind::ret);  // rep ret
    EXPECT_EQ(kind({0x0F, 0x05}), Kind::far);  // syscall
    EXPECT_EQ(kind({0xFF, 0x18}), Kind::far);  // call far [rax]
    EXPECT_TRUE(x86insn::is_branch(Kind::jcc));
    EXPECT_TRUE(x86insn::is_branch(Kind::far));
    EXPECT_FALSE(x86insn::is_branch(Kind::rep_string));
    EXPECT_FALSE(x86insn::is_branch(Kind::rdpmc));
}

TEST(X86Insn, VectorAndStrings) {
    EXPECT_EQ(kind({0xC5, 0xFD, 0xFE, 0xC1}), Kind::vex);              // vpaddd ymm0, ymm0, ymm1
    EXPECT_EQ(kind({0xC4, 0xE2, 0x7D, 0x58, 0xC0}), Kind::vex);        // vpbroadcastd
    EXPECT_EQ(kind({0x62, 0xF1, 0x7D, 0x48, 0xFE, 0xC1}), Kind::vex);  // vpaddd zmm
    EXPECT_EQ(kind({0x8F, 0xC0}), Kind::plain);                        // pop rax (8F /0)
    EXPECT_EQ(kind({0x8F, 0xE9, 0x78, 0xC2, 0xC0}), Kind::vex);        // XOP
    EXPECT_EQ(kind({0xF3, 0x48, 0xA5}), Kind::rep_string);             // rep movsq
    EXPECT_EQ(kind({0xF3, 0xAA}), Kind::rep_string);                   // rep stosb
    EXPECT_EQ(kind({0xA5}), Kind::plain);                              // movsd without rep
    EXPECT_EQ(kind({0x0F, 0x58, 0xC1}), Kind::plain);                  // addps
    EXPECT_EQ(kind({0xCC}), Kind::trap);                               // int3
    EXPECT_EQ(kind({0x0F, 0x0B}), Kind::trap);                         // ud2
}

// The length decoder behind the executor's fast path (x86_length.h) and the linear decode
// of a body (x86_insn.h, LinearCode).
#include "x86_length.h"

namespace {

size_t len_of(std::vector<std::uint8_t> b) {
    x86len::Insn in;
    if (!x86len::decode(b.data(), b.size(), &in)) return 0;
    return in.len;
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
    EXPECT_EQ(len_of({0xF7, 0xC0, 1, 0, 0, 0}), 6u);               // test eax, imm32
    EXPECT_EQ(len_of({0x48, 0x8B}), 0u);                           // cut off
    EXPECT_EQ(len_of({0x06}), 0u);                                 // push es: invalid in 64-bit mode
}

TEST(X86Insn, LinearCodeCountsStartsAndFindsTheLastInstruction) {
    // add rax, rax; mov rax, [rsp+8]; jnz -2; nop
    std::vector<std::uint8_t> b = {0x48, 0x01, 0xC0, 0x48, 0x8B, 0x44, 0x24, 0x08, 0x75, 0xFE, 0x90};
    x86insn::LinearCode c = x86insn::decode_linear(b.data(), b.size());
    ASSERT_TRUE(c.ok);
    EXPECT_EQ(c.count(0, b.size()), 4u);
    EXPECT_EQ(c.count(3, 10), 2u);
    EXPECT_EQ(c.count(4, 10), 1u);  // from inside the mov: only the jnz starts there
    EXPECT_EQ(c.last_start(10), 8u);
    EXPECT_EQ(Kind(c.kind[8]), Kind::jcc);
    EXPECT_EQ(c.last_start(11), 10u);
    // Bodies the executor must see instruction by instruction are not linear code.
    std::vector<std::uint8_t> rdtsc = {0x90, 0x0F, 0x31};
    EXPECT_FALSE(x86insn::decode_linear(rdtsc.data(), rdtsc.size()).ok);
    std::vector<std::uint8_t> movs = {0xF3, 0xA4};
    EXPECT_FALSE(x86insn::decode_linear(movs.data(), movs.size()).ok);
    std::vector<std::uint8_t> cut = {0x90, 0x48, 0x8B};
    EXPECT_FALSE(x86insn::decode_linear(cut.data(), cut.size()).ok);
}
