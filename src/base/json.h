// JSON for pmulab's records: the one writer (a Value as one line of JSON) and the one
// reader (RFC 8259, strict), and JsonWriter, the builder the record producers use.
#pragma once

#include "base/fmt.h"
#include "base/result.h"
#include "base/value.h"

namespace pmulab {

// Appends `v` as JSON text: no whitespace, keys in order, strings escaped with
// json_escape, numbers as their text.
void json_write(StrBuf& out, const Value& v);
// json_write plus the newline that ends a JSON Lines record.
void json_write_line(StrBuf& out, const Value& v);

// Appends s as a JSON string literal (with quotes and escapes): \" \\ \n \r \t, other
// bytes below 0x20 and from 0x7f as \u00XX.
void json_escape(StrBuf& out, StrView s);

// A reading error: the byte offset (0-based) where the text went wrong and what was expected.
struct JsonError {
    usize offset = 0;
    char what[96] = {};
};

// Reads one JSON text (RFC 8259): one value with optional whitespace around it. Strings
// are decoded to UTF-8 (\uXXXX escapes with surrogate pairs; raw bytes must be UTF-8);
// numbers are checked against the grammar and kept as their text; every value records
// its offsets. Nesting deeper than kJsonDepthMax is refused. False (and *err) on error.
inline constexpr int kJsonDepthMax = 64;
bool json_read(StrView text, Value* out, JsonError* err);
// The same, reading one value from text[*pos] (leading whitespace skipped) and leaving
// *pos after it (trailing text is the caller's).
bool json_read_value(StrView text, usize* pos, Value* out, JsonError* err);
// json_read with the error as "JSON: <what> at offset N".
Status json_parse(StrView text, Value* out);

// Builds a record as a Value, call by call (the order of the calls is the order of the
// fields). Built into a Value given to the constructor, or into a StrBuf: then the
// value is printed with json_write when its outermost object or array closes.
class JsonWriter {
public:
    explicit JsonWriter(StrBuf& out) : text_(&out), root_(&own_) {}
    explicit JsonWriter(Value& root) : root_(&root) {}

    JsonWriter& begin_object() { return open(Value::object()); }
    JsonWriter& end_object() { return close(); }
    JsonWriter& begin_array() { return open(Value::array()); }
    JsonWriter& end_array() { return close(); }
    JsonWriter& key(const char* k);

    JsonWriter& str(StrView s) { return add(Value::string(s)); }
    JsonWriter& num(u64 v) { return add(Value::uint(v)); }
    JsonWriter& inum(i64 v) { return add(Value::sint(v)); }
    JsonWriter& boolean(bool b) { return add(Value::boolean(b)); }
    JsonWriter& null() { return add(Value()); }
    // A number already formatted (e.g. fixed-point); must be valid JSON number text.
    JsonWriter& raw_number(StrView text) { return add(Value::number(text)); }
    JsonWriter& fixed(i64 num, u64 den, unsigned decimals) { return add(Value::fixed(num, den, decimals)); }
    // Any value (a part built elsewhere).
    JsonWriter& value(Value v) { return add(move(v)); }

    // key + value shorthands
    JsonWriter& field(const char* k, StrView s) { return key(k).str(s); }
    JsonWriter& field(const char* k, const char* s) { return key(k).str(StrView(s)); }
    JsonWriter& field_u(const char* k, u64 v) { return key(k).num(v); }
    JsonWriter& field_i(const char* k, i64 v) { return key(k).inum(v); }
    JsonWriter& field_b(const char* k, bool b) { return key(k).boolean(b); }
    // Hex string "0x..." for register values (JSON numbers lose precision above 2^53 in many parsers).
    JsonWriter& field_hex(const char* k, u64 v) { return key(k).add(Value::hex(v)); }

private:
    JsonWriter& open(Value v);
    JsonWriter& close();
    JsonWriter& add(Value v);
    Value* place(Value v);

    StrBuf* text_ = nullptr;
    Value own_;
    Value* root_;
    Value* stack_[kJsonDepthMax] = {};
    int depth_ = 0;
    StrBuf key_;
    bool has_key_ = false;
};

}  // namespace pmulab
