#include "base/value.h"

namespace pmulab {

Value Value::boolean(bool b) {
    Value v(Kind::boolean);
    v.b_ = b;
    return v;
}

Value Value::uint(u64 x) {
    Value v(Kind::uint);
    v.u_ = x;
    v.text_.printf("%llu", (unsigned long long)x);
    return v;
}

Value Value::sint(i64 x) {
    Value v(Kind::sint);
    v.text_.printf("%lld", (long long)x);
    return v;
}

Value Value::number(StrView text) {
    Value v(Kind::number);
    v.text_.put(text);
    return v;
}

Value Value::fixed(i64 numerator, u64 denominator, unsigned decimals) {
    Value v(Kind::number);
    put_fixed(v.text_, numerator, denominator, decimals);
    return v;
}

Value Value::string(StrView s) {
    Value v(Kind::string);
    v.text_.put(s);
    return v;
}

Value Value::hex(u64 x) {
    Value v(Kind::string);
    v.text_.printf("0x%llx", (unsigned long long)x);
    return v;
}

Value Value::array() { return Value(Kind::array); }

Value Value::object() { return Value(Kind::object); }

Value Value::clone() const {
    Value v(kind_);
    v.b_ = b_;
    v.u_ = u_;
    v.offset = offset, v.end_offset = end_offset;
    v.key_offset = key_offset, v.key_end = key_end;
    v.text_.put(text_.view());
    for (const Value& x : items_) v.items_.push(x.clone());
    for (const StrBuf& k : keys_) v.keys_.emplace().put(k.view());
    return v;
}

bool Value::to_u64(u64* v) const {
    if (kind_ == Kind::uint) {
        *v = u_;
        return true;
    }
    if (kind_ != Kind::number) return false;
    StrView t = text_.view();
    if (t.empty() || t.len > 20) return false;
    u64 x = 0;
    for (usize i = 0; i < t.len; ++i) {
        if (t[i] < '0' || t[i] > '9') return false;
        u64 d = u64(t[i] - '0');
        if (x > (~u64(0) - d) / 10) return false;
        x = x * 10 + d;
    }
    *v = x;
    return true;
}

StrView Value::text() const {
    if (kind_ == Kind::boolean) return b_ ? StrView("true") : StrView("false");
    return text_.view();
}

Value& Value::set(StrView key, Value v) {
    keys_.emplace().put(key);
    return items_.push(move(v));
}

Value& Value::set_first(StrView key, Value v) {
    Vec<Value> items;
    Vec<StrBuf> keys;
    keys.emplace().put(key);
    items.push(move(v));
    for (usize i = 0; i < items_.size(); ++i) {
        items.push(move(items_[i]));
        keys.push(move(keys_[i]));
    }
    items_ = move(items);
    keys_ = move(keys);
    return items_[0];
}

const Value* Value::get(StrView key) const {
    for (usize i = 0; i < keys_.size(); ++i)
        if (keys_[i].view().eq(key)) return &items_[i];
    return nullptr;
}

Value& Value::push(Value v) { return items_.push(move(v)); }

}  // namespace pmulab
