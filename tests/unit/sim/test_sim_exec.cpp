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
}
