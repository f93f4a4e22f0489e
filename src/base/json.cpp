#include "base/json.h"

#include <stdarg.h>

namespace pmulab {

// ---- the writer ----

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

void json_write(StrBuf& out, const Value& v) {
    switch (v.kind()) {
        case Value::Kind::null: out.put("null"); return;
        case Value::Kind::string: json_escape(out, v.text()); return;
        case Value::Kind::array:
        case Value::Kind::object: {
            bool obj = v.is_object();
            out.put(obj ? '{' : '[');
            for (usize i = 0; i < v.size(); ++i) {
                if (i) out.put(',');
                if (obj) {
                    json_escape(out, v.key(i));
                    out.put(':');
                }
                json_write(out, v[i]);
            }
            out.put(obj ? '}' : ']');
            return;
        }
        default: out.put(v.text()); return;  // bool, numbers
    }
}

void json_write_line(StrBuf& out, const Value& v) {
    json_write(out, v);
    out.put('\n');
}

// ---- the builder ----

Value* JsonWriter::place(Value v) {
    if (depth_ == 0) {
        *root_ = move(v);
        return root_;
    }
    Value* top = stack_[depth_ - 1];
    if (top->is_object()) {
        Value* p = &top->set(has_key_ ? key_.view() : StrView(), move(v));
        has_key_ = false;
        key_.clear();
        return p;
    }
    return &top->push(move(v));
}

JsonWriter& JsonWriter::open(Value v) {
    Value* p = place(move(v));
    if (depth_ < kJsonDepthMax) stack_[depth_++] = p;
    return *this;
}

JsonWriter& JsonWriter::close() {
    if (depth_ == 0) return *this;
    if (--depth_ == 0 && text_) {
        json_write(*text_, own_);
        own_ = Value();
    }
    return *this;
}

JsonWriter& JsonWriter::add(Value v) {
    bool print = depth_ == 0 && text_;
    place(move(v));
    if (print) {
        json_write(*text_, own_);
        own_ = Value();
    }
    return *this;
}

JsonWriter& JsonWriter::key(const char* k) {
    key_.clear();
    key_.put(StrView(k));
    has_key_ = true;
    return *this;
}

// ---- the reader ----

namespace {

struct Reader {
    StrView s;
    usize i = 0;
    JsonError* e;

    bool fail(usize at, const char* fmt, ...) __attribute__((format(printf, 3, 4))) {
        if (e) {
            e->offset = at;
            va_list ap;
            va_start(ap, fmt);
            vformat_to(e->what, sizeof e->what, fmt, ap);
            va_end(ap);
        }
        return false;
    }
    void ws() {
        while (i < s.len && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')) ++i;
    }
    bool digits(usize* n) {
        usize b = i;
        while (i < s.len && s[i] >= '0' && s[i] <= '9') ++i;
        *n = i - b;
        return i > b;
    }
    bool number(Value* v) {
        usize b = i, n;
        if (i < s.len && s[i] == '-') ++i;
        if (!digits(&n)) return fail(i, "expected a digit");
        if (n > 1 && s[i - n] == '0') return fail(i - n, "a number has no leading zero");
        if (i < s.len && s[i] == '.') {
            ++i;
            if (!digits(&n)) return fail(i, "expected a digit after '.'");
        }
        if (i < s.len && (s[i] == 'e' || s[i] == 'E')) {
            ++i;
            if (i < s.len && (s[i] == '+' || s[i] == '-')) ++i;
            if (!digits(&n)) return fail(i, "expected a digit in the exponent");
        }
        *v = Value::number(s.sub(b, i - b));
        return true;
    }
    bool hex4(u32* cp) {
        u32 x = 0;
        for (usize k = 0; k < 4; ++k) {
            char c = i + k < s.len ? s[i + k] : 0;
            int d = hex_digit(c);
            if (d < 0) return fail(i, "expected 4 hex digits after \\u");
            x = x << 4 | u32(d);
        }
        i += 4;
        *cp = x;
        return true;
    }
    static void put_utf8(StrBuf& b, u32 cp) {
        if (cp < 0x80) {
            b.put(char(cp));
        } else if (cp < 0x800) {
            b.put(char(0xc0 | (cp >> 6))).put(char(0x80 | (cp & 0x3f)));
        } else if (cp < 0x10000) {
            b.put(char(0xe0 | (cp >> 12))).put(char(0x80 | ((cp >> 6) & 0x3f))).put(char(0x80 | (cp & 0x3f)));
        } else {
            b.put(char(0xf0 | (cp >> 18))).put(char(0x80 | ((cp >> 12) & 0x3f)));
            b.put(char(0x80 | ((cp >> 6) & 0x3f))).put(char(0x80 | (cp & 0x3f)));
        }
    }
    bool unicode_escape(StrBuf& b) {
        usize at = i - 2;
        u32 cp;
        if (!hex4(&cp)) return false;
        if (cp >= 0xdc00 && cp <= 0xdfff) return fail(at, "a low surrogate \\u%04x without a high one", unsigned(cp));
        if (cp >= 0xd800 && cp <= 0xdbff) {
            u32 lo;
            if (i + 2 > s.len || s[i] != '\\' || s[i + 1] != 'u')
                return fail(at, "a high surrogate \\u%04x without a low one", unsigned(cp));
            i += 2;
            if (!hex4(&lo)) return false;
            if (lo < 0xdc00 || lo > 0xdfff) return fail(at, "a high surrogate \\u%04x without a low one", unsigned(cp));
            cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
        }
        put_utf8(b, cp);
        return true;
    }
    bool escape(StrBuf& b) {
        if (i >= s.len) return fail(i, "unterminated string");
        char c = s[i++];
        switch (c) {
            case '"':
            case '\\':
            case '/': b.put(c); return true;
            case 'b': b.put('\b'); return true;
            case 'f': b.put('\f'); return true;
            case 'n': b.put('\n'); return true;
            case 'r': b.put('\r'); return true;
            case 't': b.put('\t'); return true;
            case 'u': return unicode_escape(b);
            default: return fail(i - 1, "bad escape '\\%c'", c);
        }
    }
    // One UTF-8 sequence starting at s[i] (a byte from 0x80), copied to b.
    bool utf8(StrBuf& b) {
        u8 c = u8(s[i]);
        usize n = c >= 0xc2 && c <= 0xdf ? 1 : c >= 0xe0 && c <= 0xef ? 2 : c >= 0xf0 && c <= 0xf4 ? 3 : 0;
        if (n == 0 || i + n >= s.len) return fail(i, "byte 0x%02x is not UTF-8", c);
        u32 cp = c & (0x3f >> n);
        for (usize k = 1; k <= n; ++k) {
            u8 d = u8(s[i + k]);
            if ((d & 0xc0) != 0x80) return fail(i, "byte 0x%02x is not UTF-8", c);
            cp = cp << 6 | (d & 0x3f);
        }
        bool overlong = (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000);
        if (overlong || (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff) return fail(i, "byte 0x%02x is not UTF-8", c);
        b.put(s.sub(i, n + 1));
        i += n + 1;
        return true;
    }
    bool string(StrBuf& b) {
        if (i >= s.len || s[i] != '"') return fail(i, "expected a string");
        usize open = i++;
        for (;;) {
            if (i >= s.len) return fail(open, "unterminated string");
            u8 c = u8(s[i]);
            if (c == '"') break;
            if (c < 0x20) return fail(i, "control character 0x%02x in a string (escape it)", c);
            if (c == '\\') {
                ++i;
                if (!escape(b)) return false;
            } else if (c >= 0x80) {
                if (!utf8(b)) return false;
            } else {
                b.put(char(c));
                ++i;
            }
        }
        ++i;
        return true;
    }
    bool literal(const char* word, Value v, Value* out) {
        StrView w(word);
        if (i + w.len > s.len || !s.sub(i, w.len).eq(w)) return fail(i, "expected a value");
        i += w.len;
        *out = move(v);
        return true;
    }
    // One member of an object: "key": value.
    bool member(Value* obj, int depth) {
        ws();
        StrBuf k;
        usize key_at = i;
        if (!string(k)) return false;
        usize key_end = i;
        ws();
        if (i >= s.len || s[i] != ':') return fail(i, "expected ':' after a key");
        ++i;
        Value x;
        if (!value(&x, depth)) return false;
        x.key_offset = u32(key_at);
        x.key_end = u32(key_end);
        obj->set(k.view(), move(x));
        return true;
    }
    // An object or an array, from its opening bracket at s[i].
    bool container(Value* v, int depth) {
        bool obj = s[i] == '{';
        char close = obj ? '}' : ']';
        *v = obj ? Value::object() : Value::array();
        ++i;
        ws();
        if (i < s.len && s[i] == close) return ++i, true;
        for (;;) {
            Value x;
            if (obj ? !member(v, depth) : !value(&x, depth)) return false;
            if (!obj) v->push(move(x));
            ws();
            if (i < s.len && s[i] == ',') {
                ++i;
                continue;
            }
            if (i < s.len && s[i] == close) return ++i, true;
            return fail(i, obj ? "expected ',' or '}'" : "expected ',' or ']'");
        }
    }
    bool value(Value* v, int depth) {
        ws();
        if (i >= s.len) return fail(i, "expected a value, found the end");
        usize b = i;
        char c = s[i];
        bool ok;
        if (c == '{' || c == '[') {
            if (depth >= kJsonDepthMax) return fail(i, "nested deeper than %d", kJsonDepthMax);
            ok = container(v, depth + 1);
        } else if (c == '"') {
            StrBuf t;
            ok = string(t);
            if (ok) *v = Value::string(t.view());
        } else if (c == '-' || (c >= '0' && c <= '9')) {
            ok = number(v);
        } else if (c == 't') {
            ok = literal("true", Value::boolean(true), v);
        } else if (c == 'f') {
            ok = literal("false", Value::boolean(false), v);
        } else if (c == 'n') {
            ok = literal("null", Value(), v);
        } else {
            return fail(i, "expected a value");
        }
        v->offset = u32(b);
        v->end_offset = u32(i);
        return ok;
    }
};

}  // namespace

bool json_read_value(StrView text, usize* pos, Value* out, JsonError* err) {
    Reader r{text, *pos, err};
    bool ok = r.value(out, 0);
    *pos = r.i;
    return ok;
}

bool json_read(StrView text, Value* out, JsonError* err) {
    usize pos = 0;
    if (!json_read_value(text, &pos, out, err)) return false;
    Reader r{text, pos, err};
    r.ws();
    if (r.i != text.len) return r.fail(r.i, "text after the value");
    return true;
}

Status json_parse(StrView text, Value* out) {
    JsonError e;
    if (json_read(text, out, &e)) return ok_status();
    return Error::make(Errc::invalid_argument, "JSON: %s at offset %u", e.what, unsigned(e.offset));
}

}  // namespace pmulab
