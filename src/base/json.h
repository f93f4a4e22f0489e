// Minimal JSON writer for the records pmulab emits (one object per line).
#pragma once

#include "base/fmt.h"

namespace pmulab {

class JsonWriter {
public:
    explicit JsonWriter(StrBuf& out) : out_(out) {}

    JsonWriter& begin_object();
    JsonWriter& end_object();
    JsonWriter& begin_array();
    JsonWriter& end_array();
    JsonWriter& key(const char* k);

    JsonWriter& str(StrView s);
    JsonWriter& num(u64 v);
    JsonWriter& inum(i64 v);
    JsonWriter& boolean(bool b);
    JsonWriter& null();
    // A number already formatted (e.g. fixed-point); must be valid JSON number text.
    JsonWriter& raw_number(StrView text);
    JsonWriter& fixed(i64 num, u64 den, unsigned decimals);

    // key + value shorthands
    JsonWriter& field(const char* k, StrView s) { return key(k).str(s); }
    JsonWriter& field(const char* k, const char* s) { return key(k).str(StrView(s)); }
    JsonWriter& field_u(const char* k, u64 v) { return key(k).num(v); }
    JsonWriter& field_i(const char* k, i64 v) { return key(k).inum(v); }
    JsonWriter& field_b(const char* k, bool b) { return key(k).boolean(b); }
    // Hex string "0x..." for register values (JSON numbers lose precision above 2^53 in many parsers).
    JsonWriter& field_hex(const char* k, u64 v);

private:
    void sep();
    StrBuf& out_;
    // Per nesting level: whether a value was written yet.
    bool first_[16] = {true};
    int depth_ = 0;
    bool after_key_ = false;
};

// Appends s as a JSON string literal (with quotes and escapes).
void json_escape(StrBuf& out, StrView s);

}  // namespace pmulab
