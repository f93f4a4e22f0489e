// Result<T>, Status, PMULAB_TRY / PMULAB_TRY_CTX and Error::with_context.
#include <gtest/gtest.h>

#include "base/result.h"

using namespace pmulab;

namespace {

Result<u64> half(u64 v) {
    if (v & 1) return Error::make(Errc::invalid_argument, "%llu is odd", (unsigned long long)v);
    return v / 2;
}

Result<u64> quarter(u64 v) {
    u64 h = PMULAB_TRY(half(v));  // an expression: yields the value
    return PMULAB_TRY(half(h));
}

Status check_even(u64 v) {
    PMULAB_TRY(half(v));  // a statement, value ignored
    return ok_status();
}

Result<u64> quarter_on_cpu(u64 v, u32 cpu) {
    u64 h = PMULAB_TRY_CTX(half(v), "CPU %u", cpu);
    return h / 2;
}

Status status_chain(Status s) {
    PMULAB_TRY(s);  // a const lvalue Status
    return ok_status();
}

struct MoveOnly {
    Vec<int> v;
};

Result<MoveOnly> make_move_only(int n) {
    MoveOnly m;
    for (int i = 0; i < n; ++i) m.v.push(i);
    return m;
}

Result<usize> size_of_move_only(int n) {
    MoveOnly m = PMULAB_TRY(make_move_only(n));
    return m.v.size();
}

}  // namespace

TEST(Result, TryYieldsTheValueOrReturnsTheError) {
    Result<u64> ok = quarter(12);
    ASSERT_TRUE(ok.ok());
    EXPECT_EQ(ok.value(), 3u);
    Result<u64> bad = quarter(6);  // 6 -> 3 -> odd
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.error().code, Errc::invalid_argument);
    EXPECT_STREQ(bad.error().msg, "3 is odd");
    EXPECT_TRUE(check_even(4).ok());
    EXPECT_STREQ(check_even(5).error().msg, "5 is odd");
}

TEST(Result, TryWorksOnMoveOnlyValuesAndConstStatuses) {
    Result<usize> n = size_of_move_only(5);
    ASSERT_TRUE(n.ok());
    EXPECT_EQ(n.value(), 5u);
    const Status failed = Error::make(Errc::io, "disk gone");
    Status s = status_chain(failed);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.error().code, Errc::io);
    EXPECT_TRUE(status_chain(ok_status()).ok());
}

TEST(Result, ContextPrefixesTheMessageAndKeepsCodeAndVector) {
    Result<u64> r = quarter_on_cpu(7, 3);
    ASSERT_FALSE(r.ok());
    EXPECT_STREQ(r.error().msg, "CPU 3: 7 is odd");
    EXPECT_EQ(r.error().code, Errc::invalid_argument);

    Error fault = Error::make(Errc::fault, "WRMSR 0x186 raised #GP");
    fault.vector = 13;
    Error c = fault.with_context("CPU %u", 2u);
    EXPECT_STREQ(c.msg, "CPU 2: WRMSR 0x186 raised #GP");
    EXPECT_EQ(c.code, Errc::fault);
    EXPECT_EQ(c.vector, 13);
    EXPECT_STREQ(fault.msg, "WRMSR 0x186 raised #GP");  // the original is untouched
}

TEST(Result, ContextOnALongMessageStaysTerminatedWithinTheBuffer) {
    char longmsg[Error::kMsgMax];
    memset(longmsg, 'x', sizeof longmsg - 1);
    longmsg[sizeof longmsg - 1] = 0;
    Error e = Error::make(Errc::internal, "%s", longmsg);
    Error c = e.with_context("CPU %u", 1u);
    EXPECT_EQ(strlen(c.msg), Error::kMsgMax - 1);
    EXPECT_EQ(strncmp(c.msg, "CPU 1: xxx", 10), 0);
}

TEST(Result, AssignmentReplacesValueAndError) {
    Result<u64> r = u64(5);
    r = Error::make(Errc::not_found, "gone");
    ASSERT_FALSE(r.ok());
    EXPECT_STREQ(r.error().msg, "gone");
    r = u64(9);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r.value(), 9u);
    Result<u64> copy = r;
    EXPECT_EQ(copy.value(), 9u);
}

TEST(Result, ASuccessfulResultHoldsNoError) {
    // Value and error share storage (a union): a Result is the larger of the two plus
    // its flag, not a value and a whole Error side by side.
    struct Big {
        u8 bytes[1000];
    };
    EXPECT_LE(sizeof(Result<u64>), sizeof(Error) + alignof(u64) + sizeof(u64) - 1);
    EXPECT_LE(sizeof(Result<Big>), sizeof(Big) + 8);
    EXPECT_LE(sizeof(Status), sizeof(Error) + 8);
}
