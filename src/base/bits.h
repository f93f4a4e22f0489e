// Typed register fields: the facility behind every register layout (x86/intel_regs.h,
// x86/amd_regs.h, x86/netburst_regs.h).
//
// A register value is a small class over the raw 64-bit contents, derived from
// RegValue<Self>, with a get/set accessor pair per field declared by PMULAB_REG_FIELD /
// PMULAB_REG_FLAG; each field is a Bits<Hi, Lo> whose mask the layouts pin with
// static_assert. Setters return the object so that values chain, and store only the bits
// of the field (a too-wide value is truncated; callers validate with Bits<>::fits).
#pragma once

#include "base/base.h"

namespace pmulab::regs {

// Field [Hi:Lo] of a 64-bit register.
template <unsigned Hi, unsigned Lo> struct Bits {
    static_assert(Lo <= Hi && Hi < 64, "bit range out of a 64-bit register");
    static constexpr unsigned hi = Hi;
    static constexpr unsigned lo = Lo;
    static constexpr unsigned width = Hi - Lo + 1;
    static constexpr u64 max = low_mask(width);  // largest value the field holds
    static constexpr u64 mask = max << Lo;       // the field's bits in place
    static constexpr u64 get(u64 raw) { return (raw & mask) >> Lo; }
    static constexpr u64 put(u64 raw, u64 v) { return (raw & ~mask) | ((v << Lo) & mask); }
    static constexpr bool fits(u64 v) { return v <= max; }
};
template <unsigned B> using Bit = Bits<B, B>;

// Base of every register value class (CRTP so that setters return the derived type).
template <typename Self> class RegValue {
public:
    constexpr RegValue() = default;
    constexpr explicit RegValue(u64 raw) : raw_(raw) {}
    constexpr u64 raw() const { return raw_; }
    constexpr Self& set_raw(u64 v) {
        raw_ = v;
        return static_cast<Self&>(*this);
    }
    constexpr bool operator==(const RegValue& o) const { return raw_ == o.raw_; }

protected:
    template <typename F> constexpr u64 get_field() const { return F::get(raw_); }
    template <typename F> constexpr Self& set_field(u64 v) {
        raw_ = F::put(raw_, v);
        return static_cast<Self&>(*this);
    }
    // Indexed single bits (per-counter enables and overflow flags).
    constexpr bool get_bit(unsigned b) const { return b < 64 && ((raw_ >> b) & 1); }
    constexpr Self& set_bit(unsigned b, bool v) {
        if (b < 64) raw_ = v ? (raw_ | (u64(1) << b)) : (raw_ & ~(u64(1) << b));
        return static_cast<Self&>(*this);
    }
    u64 raw_ = 0;
};

// Declares field `name` at [hi:lo]: the type `name##_field` (a Bits<hi, lo>), the
// getter name() and the chaining setter set_name(v).
#define PMULAB_REG_FIELD(Self, name, hi, lo)                                   \
    using name##_field = ::pmulab::regs::Bits<hi, lo>;                         \
    constexpr ::pmulab::u64 name() const { return get_field<name##_field>(); } \
    constexpr Self& set_##name(::pmulab::u64 v) { return set_field<name##_field>(v); }

// Declares the single-bit flag `name` at bit `b`.
#define PMULAB_REG_FLAG(Self, name, b)                                     \
    using name##_field = ::pmulab::regs::Bit<b>;                           \
    constexpr bool name() const { return get_field<name##_field>() != 0; } \
    constexpr Self& set_##name(bool v = true) { return set_field<name##_field>(v ? 1 : 0); }

// The facility itself, pinned here once (the layouts pin their own fields).
static_assert(Bits<7, 0>::mask == 0xFFull && Bits<7, 0>::width == 8 && Bits<7, 0>::max == 0xFF);
static_assert(Bits<63, 0>::mask == ~0ull && Bits<63, 0>::max == ~0ull);
static_assert(Bit<63>::mask == 1ull << 63 && Bit<0>::width == 1);
static_assert(Bits<15, 8>::get(0x1234) == 0x12 && Bits<15, 8>::put(0x1234, 0xAB) == 0xAB34);
static_assert(Bits<15, 8>::put(0, 0x1FF) == 0xFF00);  // too wide: truncated to the field
static_assert(Bits<15, 8>::fits(0xFF) && !Bits<15, 8>::fits(0x100));

}  // namespace pmulab::regs
