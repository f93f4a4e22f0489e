// The bit-field facility (base/bits.h) on its own, with a made-up register; the real
// layouts are pinned in tests/unit/x86/test_regs.cpp and in their headers.
#include <gtest/gtest.h>

#include "base/bits.h"

using namespace pmulab;
using namespace pmulab::regs;

namespace {

class Demo : public RegValue<Demo> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FIELD(Demo, low, 7, 0)
    PMULAB_REG_FLAG(Demo, flag, 8)
    PMULAB_REG_FIELD(Demo, top, 63, 60)
    constexpr bool bit(unsigned b) const { return get_bit(b); }
    constexpr Demo& set_bit_at(unsigned b, bool v) { return set_bit(b, v); }
};
static_assert(Demo::low_field::mask == 0xFFull && Demo::flag_field::mask == 1ull << 8);
static_assert(Demo::top_field::mask == 0xF000000000000000ull);
static_assert(Demo().set_low(0x5A).set_flag().set_top(0xC).raw() == 0xC00000000000015Aull);

}  // namespace

TEST(Bits, FieldGeometry) {
    using F = Bits<23, 16>;
    EXPECT_EQ(F::hi, 23u);
    EXPECT_EQ(F::lo, 16u);
    EXPECT_EQ(F::width, 8u);
    EXPECT_EQ(F::max, 0xFFull);
    EXPECT_EQ(F::mask, 0xFF0000ull);
    EXPECT_EQ(Bit<5>::mask, 0x20ull);
    EXPECT_EQ((Bits<63, 0>::mask), ~0ull);
}

TEST(Bits, GetPutFits) {
    using F = Bits<11, 4>;
    EXPECT_EQ(F::get(0xABCDull), 0xBCull);
    EXPECT_EQ(F::put(0xABCDull, 0x12), 0xA12Dull);
    // A too-wide value keeps only the field's bits; the rest of the register is untouched.
    EXPECT_EQ(F::put(0xF00Full, 0x3FF), 0xFFFFull);
    EXPECT_TRUE(F::fits(0xFF));
    EXPECT_FALSE(F::fits(0x100));
}

TEST(Bits, RegValueFieldsChainAndCompare) {
    Demo d;
    EXPECT_EQ(d.raw(), 0u);
    d.set_low(0x1FF).set_flag(true).set_top(0x3);
    EXPECT_EQ(d.low(), 0xFFu);  // truncated to 8 bits
    EXPECT_TRUE(d.flag());
    EXPECT_EQ(d.top(), 0x3u);
    EXPECT_EQ(d.raw(), 0x30000000000001FFull);
    d.set_flag(false);
    EXPECT_FALSE(d.flag());
    EXPECT_EQ(d.raw(), 0x30000000000000FFull);
    EXPECT_TRUE(Demo(0x30000000000000FFull) == d);
    EXPECT_FALSE(Demo(0) == d);
    EXPECT_EQ(Demo(0x1234).set_raw(0x99).raw(), 0x99u);
}

TEST(Bits, IndexedBitsIgnoreOutOfRange) {
    Demo d;
    d.set_bit_at(0, true).set_bit_at(63, true).set_bit_at(64, true).set_bit_at(200, true);
    EXPECT_EQ(d.raw(), 0x8000000000000001ull);
    EXPECT_TRUE(d.bit(63));
    EXPECT_FALSE(d.bit(64));
    d.set_bit_at(0, false);
    EXPECT_EQ(d.raw(), 0x8000000000000000ull);
}
