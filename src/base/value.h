// A record as data: the value every pmulab record is built as, before a sink writes it
// (JSON Lines, CSV, LAVA, serve), and what the JSON reader (base/json.h) returns.
//
// An object keeps its keys in the order they were added (records print in that order).
// Numbers are integers (u64 / i64) or decimal text as it is printed (a fixed-point
// result "1.2500", a number read from JSON): pmulab has no floating point, and a number
// read back prints exactly as it was written.
#pragma once

#include "base/fmt.h"

namespace pmulab {

class Value {
public:
    enum class Kind : u8 { null, boolean, uint, sint, number, string, array, object };

    Value() = default;
    Value(Value&&) noexcept = default;
    Value& operator=(Value&&) noexcept = default;
    Value(const Value&) = delete;
    Value& operator=(const Value&) = delete;

    static Value boolean(bool b);
    static Value uint(u64 v);
    static Value sint(i64 v);
    // `text` must be a JSON number (e.g. "1.2500", "-3", "1e9").
    static Value number(StrView text);
    static Value fixed(i64 numerator, u64 denominator, unsigned decimals);  // put_fixed
    static Value string(StrView s);
    static Value hex(u64 v);  // the string "0x..." (register values: exact in every reader)
    static Value array();
    static Value object();
    Value clone() const;

    Kind kind() const { return kind_; }
    bool is_null() const { return kind_ == Kind::null; }
    bool is_object() const { return kind_ == Kind::object; }
    bool is_array() const { return kind_ == Kind::array; }
    bool is_string() const { return kind_ == Kind::string; }
    bool is_number() const { return kind_ == Kind::uint || kind_ == Kind::sint || kind_ == Kind::number; }

    bool as_bool() const { return b_; }
    // The integer of a uint value, or of a number whose text is a non-negative integer
    // that fits; false otherwise.
    bool to_u64(u64* v) const;
    // String: its text. Number: its text as printed. Bool: "true"/"false". Null: "".
    // (uint/sint are printed into a buffer that lives as long as the value.)
    StrView text() const;

    // Arrays and objects: the elements (an object's values, in key order).
    usize size() const { return items_.size(); }
    const Value& operator[](usize i) const { return items_[i]; }
    Value& operator[](usize i) { return items_[i]; }
    StrView key(usize i) const { return keys_[i].view(); }
    const Value* begin() const { return items_.begin(); }
    const Value* end() const { return items_.end(); }

    // Object: appends `key` (no check for a repeated key: the builder's order is kept).
    Value& set(StrView key, Value v);
    // Object: inserts `key` as the first field.
    Value& set_first(StrView key, Value v);
    // Object: the first field called `key`, or null.
    const Value* get(StrView key) const;
    // Array: appends.
    Value& push(Value v);

    // Where the value began and ended in the JSON text it was read from (the reader
    // sets them; 0 for built values). end is one past its last byte.
    u32 offset = 0;
    u32 end_offset = 0;
    // A member of an object: where its key (the string token) began and ended.
    u32 key_offset = 0;
    u32 key_end = 0;

private:
    explicit Value(Kind k) : kind_(k) {}
    Kind kind_ = Kind::null;
    bool b_ = false;
    u64 u_ = 0;
    StrBuf text_;  // string, number text, and uint/sint as text
    Vec<Value> items_;
    Vec<StrBuf> keys_;  // object: one per item
};

}  // namespace pmulab
