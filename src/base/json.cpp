#include "base/json.h"

namespace pmulab {

void json_escape(StrBuf& out, StrView s) {
    out.put('"');
    for (usize i = 0; i < s.len; ++i) {
        unsigned char c = static_cast<unsigned char>(s[i]);
        switch (c) {
            case '"': out.put("\\\""); break;
            case '\\': out.put("\\\\"); break;
            case '\n': out.put("\\n"); break;
            case '\r': out.put("\\r"); break;
            case '\t': out.put("\\t"); break;
            default:
                if (c < 0x20 || c >= 0x7f) out.printf("\\u%04x", c);
                else out.put(char(c));
        }
    }
    out.put('"');
}

void JsonWriter::sep() {
    if (after_key_) {
        after_key_ = false;
        return;
    }
    if (depth_ > 0) {
        if (!first_[depth_]) out_.put(',');
        first_[depth_] = false;
    }
}

JsonWriter& JsonWriter::begin_object() {
    sep();
    out_.put('{');
    if (depth_ < 15) ++depth_;
    first_[depth_] = true;
    return *this;
}

JsonWriter& JsonWriter::end_object() {
    out_.put('}');
    if (depth_ > 0) --depth_;
    return *this;
}

JsonWriter& JsonWriter::begin_array() {
    sep();
    out_.put('[');
    if (depth_ < 15) ++depth_;
    first_[depth_] = true;
    return *this;
}

JsonWriter& JsonWriter::end_array() {
    out_.put(']');
    if (depth_ > 0) --depth_;
    return *this;
}

JsonWriter& JsonWriter::key(const char* k) {
    sep();
    json_escape(out_, StrView(k));
    out_.put(':');
    after_key_ = true;
    return *this;
}

JsonWriter& JsonWriter::str(StrView s) {
    sep();
    json_escape(out_, s);
    return *this;
}

JsonWriter& JsonWriter::num(u64 v) {
    sep();
    out_.printf("%llu", (unsigned long long)v);
    return *this;
}

JsonWriter& JsonWriter::inum(i64 v) {
    sep();
    out_.printf("%lld", (long long)v);
    return *this;
}

JsonWriter& JsonWriter::boolean(bool b) {
    sep();
    out_.put(b ? "true" : "false");
    return *this;
}

JsonWriter& JsonWriter::null() {
    sep();
    out_.put("null");
    return *this;
}

JsonWriter& JsonWriter::raw_number(StrView text) {
    sep();
    out_.put(text);
    return *this;
}

JsonWriter& JsonWriter::fixed(i64 n, u64 d, unsigned decimals) {
    sep();
    put_fixed(out_, n, d, decimals);
    return *this;
}

JsonWriter& JsonWriter::field_hex(const char* k, u64 v) {
    key(k);
    sep();
    out_.printf("\"0x%llx\"", (unsigned long long)v);
    return *this;
}

}  // namespace pmulab
