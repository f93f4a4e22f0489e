// Derived metrics: definitions, exact formula evaluation, validation (metrics.h).
#include "measure/metrics.h"

#include "base/fmt.h"

namespace pmulab {

namespace {

// ---- exact arithmetic on Frac (num/den, den > 0), reduced after every step ----

// Never 0, so that it can always divide.
u64 gcd(u64 a, u64 b) { return max_of<u64>(gcd_u64(a, b), 1); }

Frac reduce(i64 num, u64 den) {
    u64 g = gcd(abs_u64(num), den);
    return Frac{num / i64(g), den / g};
}

// A tolerance as the messages print it: 4 decimals, trailing zeros dropped down to 2
// ("0.01", "0.0374").
void put_tolerance(StrBuf& b, Frac t) {
    StrBuf f;
    put_frac(f, t, 4);
    usize n = f.size();
    while (n > 4 && f.c_str()[n - 1] == '0') --n;
    b.put(StrView(f.c_str(), n));
}

Error overflow() { return Error::make(Errc::unsupported, "a step of the formula overflows 64 bits"); }

Result<Frac> f_mul(Frac a, Frac b) {
    // Cross-reduce first so that exact results stay in range.
    u64 g1 = gcd(abs_u64(a.num), b.den), g2 = gcd(abs_u64(b.num), a.den);
    i64 n = 0;
    u64 d = 0;
    if (__builtin_mul_overflow(a.num / i64(g1), b.num / i64(g2), &n)) return overflow();
    if (__builtin_mul_overflow(a.den / g2, b.den / g1, &d)) return overflow();
    return reduce(n, d);
}

Result<Frac> f_div(Frac a, Frac b) {
    if (b.num == 0) return Error::make(Errc::unsupported, "division by zero");
    Frac inv{b.num < 0 ? -i64(b.den) : i64(b.den), abs_u64(b.num)};
    if (b.den > u64(INT64_MAX)) return overflow();
    return f_mul(a, inv);
}

Result<Frac> f_add(Frac a, Frac b, bool sub) {
    u64 g = gcd(a.den, b.den);
    u64 da = a.den / g, db = b.den / g;
    i64 x = 0, y = 0, n = 0;
    u64 d = 0;
    if (da > u64(INT64_MAX) || db > u64(INT64_MAX)) return overflow();
    if (__builtin_mul_overflow(a.num, i64(db), &x) || __builtin_mul_overflow(b.num, i64(da), &y)) return overflow();
    if (sub ? __builtin_sub_overflow(x, y, &n) : __builtin_add_overflow(x, y, &n)) return overflow();
    if (__builtin_mul_overflow(a.den, db, &d)) return overflow();
    return reduce(n, d);
}

// ---- the formula language: recursive descent, evaluating as it parses ----

bool name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
           c == ':';
}

class Parser {
public:
    // in == null: syntax only, names collected into *names (when given).
    Parser(StrView s, const MetricInputs* in, Vec<StrView>* names) : s_(s), in_(in), names_(names) {}

    Result<Frac> run() {
        Result<Frac> v = expr(0);
        if (!v.ok()) return v;
        skip();
        if (pos_ < s_.len) return syntax("unexpected '%c'", s_[pos_]);
        return v;
    }

private:
    Error syntax(const char* fmt, char c = 0) {
        StrBuf b;
        b.printf(fmt, c);
        return Error::make(Errc::invalid_argument, "formula '%.*s': %s at column %u", int(s_.len), s_.ptr, b.c_str(),
                           unsigned(pos_ + 1));
    }
    void skip() {
        while (pos_ < s_.len && (s_[pos_] == ' ' || s_[pos_] == '\t')) ++pos_;
    }
    // Skips blanks, then `c` when it comes next.
    bool eat(char c) {
        skip();
        if (pos_ >= s_.len || s_[pos_] != c) return false;
        ++pos_;
        return true;
    }
    // A left-associative chain of `next` operands joined by the operators o1 and o2;
    // apply(v, operand, whether it was o2) combines them while evaluating.
    template <typename Apply>
    Result<Frac> chain(int depth, char o1, char o2, Result<Frac> (Parser::*next)(int), Apply apply) {
        Result<Frac> a = (this->*next)(depth);
        if (!a.ok()) return a;
        Frac v = a.value();
        for (;;) {
            skip();
            if (pos_ >= s_.len || (s_[pos_] != o1 && s_[pos_] != o2)) return v;
            bool second = s_[pos_++] == o2;
            Result<Frac> b = (this->*next)(depth);
            if (!b.ok()) return b;
            if (in_) {
                Result<Frac> r = apply(v, b.value(), second);
                if (!r.ok()) return r;
                v = r.value();
            }
        }
    }
    Result<Frac> expr(int depth) {
        if (depth > 32) return syntax("nested too deeply");
        return chain(depth, '+', '-', &Parser::term, [](Frac x, Frac y, bool sub) { return f_add(x, y, sub); });
    }
    Result<Frac> term(int depth) {
        return chain(depth, '*', '/', &Parser::factor,
                     [](Frac x, Frac y, bool div) { return div ? f_div(x, y) : f_mul(x, y); });
    }
    Result<Frac> factor(int depth) {
        skip();
        if (pos_ >= s_.len) return syntax("an operand is missing");
        char c = s_[pos_];
        if (c == '(') {
            ++pos_;
            Result<Frac> v = expr(depth + 1);
            if (!v.ok()) return v;
            if (!eat(')')) return syntax("')' is missing");
            return v;
        }
        if (c == '-') {
            ++pos_;
            Result<Frac> v = factor(depth + 1);
            if (!v.ok() || !in_) return v;
            return f_add(Frac{0, 1}, v.value(), true);
        }
        if (c >= '0' && c <= '9') return number();
        StrView name;
        if (c == '[') {
            usize close = s_.find(']', pos_);
            if (close >= s_.len) return syntax("']' is missing");
            name = s_.sub(pos_ + 1, close - pos_ - 1).trim();
            pos_ = close + 1;
        } else if (name_char(c)) {
            usize b = pos_;
            while (pos_ < s_.len && name_char(s_[pos_])) ++pos_;
            name = s_.sub(b, pos_ - b);
        } else {
            return syntax("unexpected '%c'", c);
        }
        if (name.empty()) return syntax("empty name");
        if (c != '[' && (name.eq_nocase(StrView("max")) || name.eq_nocase(StrView("min")))) {
            skip();
            if (pos_ < s_.len && s_[pos_] == '(') return extremum(depth, name.eq_nocase(StrView("max")));
        }
        if (names_) {
            bool dup = false;
            for (StrView n : *names_) dup |= n.eq_nocase(name);
            if (!dup) names_->push(name);
        }
        if (!in_) return Frac{1, 1};
        Frac v;
        if (!in_->get(name, &v))
            return Error::make(Errc::not_found, "input '%.*s' was not measured", int(name.len), name.ptr);
        return v;
    }
    // max(a, b) / min(a, b), as Intel's metrics write them (the name is followed by '(').
    Result<Frac> extremum(int depth, bool is_max) {
        ++pos_;  // '('
        Result<Frac> a = expr(depth + 1);
        if (!a.ok()) return a;
        if (!eat(',')) return syntax("',' is missing (max(a, b) and min(a, b) take two)");
        Result<Frac> b = expr(depth + 1);
        if (!b.ok()) return b;
        if (!eat(')')) return syntax("')' is missing");
        if (!in_) return a;
        bool a_first = is_max ? frac_cmp(a.value(), b.value()) >= 0 : frac_cmp(a.value(), b.value()) <= 0;
        return a_first ? a : b;
    }
    Result<Frac> number() {
        i64 n = 0;
        u64 d = 1;
        bool frac = false;
        while (pos_ < s_.len && ((s_[pos_] >= '0' && s_[pos_] <= '9') || (s_[pos_] == '.' && !frac))) {
            if (s_[pos_] == '.') {
                frac = true;
            } else {
                if (__builtin_mul_overflow(n, i64(10), &n) || __builtin_add_overflow(n, i64(s_[pos_] - '0'), &n))
                    return syntax("number too large");
                if (frac && __builtin_mul_overflow(d, u64(10), &d)) return syntax("too many decimals");
            }
            ++pos_;
        }
        if (pos_ < s_.len && name_char(s_[pos_])) return syntax("a name cannot start with a digit (use [..])");
        return reduce(n, d);
    }

    StrView s_;
    const MetricInputs* in_;
    Vec<StrView>* names_;
    usize pos_ = 0;
};

bool parse_bound(StrView s, Frac* out) {
    Parser p(s, nullptr, nullptr);
    struct None final : MetricInputs {
        bool get(StrView, Frac*) const override { return false; }
    } none;
    Parser q(s, &none, nullptr);
    (void)p;
    Result<Frac> r = q.run();
    if (!r.ok()) return false;
    *out = r.value();
    return true;
}

bool list_has(const char* list, StrView item) {
    StrView l(list);
    usize pos = 0;
    while (pos <= l.len) {
        usize c = l.find(',', pos);
        if (l.sub(pos, c - pos).trim().eq_nocase(item)) return true;
        if (c >= l.len) break;
        pos = c + 1;
    }
    return false;
}

Status field_copy(char* dst, usize cap, StrView v, const char* key) {
    if (v.len >= cap)
        return Error::make(Errc::invalid_argument, "%s is longer than %u characters", key, unsigned(cap - 1));
    format_to(dst, cap, "%.*s", int(v.len), v.ptr);
    return ok_status();
}

Status parse_def(StrView line, MetricDef* d) {
    usize pos = 0;
    bool any = false;
    while (pos < line.len) {
        usize semi = line.find(';', pos);
        StrView field = line.sub(pos, semi - pos).trim();
        pos = semi >= line.len ? line.len : semi + 1;
        if (field.empty()) continue;
        usize eq = field.find('=', 0);
        if (eq >= field.len)
            return Error::make(Errc::invalid_argument, "'%.*s' is not key=value", int(field.len), field.ptr);
        StrView k = field.sub(0, eq).trim(), v = field.sub(eq + 1, field.len - eq - 1).trim();
        any = true;
        if (k.eq(StrView("name"))) {
            if (v.empty()) return Error::make(Errc::invalid_argument, "empty name");
            for (usize i = 0; i < v.len; ++i)
                if (!name_char(v[i]) || v[i] == ':')
                    return Error::make(Errc::invalid_argument, "name '%.*s': letters, digits, '_' and '.' only",
                                       int(v.len), v.ptr);
            PMULAB_TRY(field_copy(d->name, sizeof d->name, v, "name"));
        } else if (k.eq(StrView("formula"))) {
            PMULAB_TRY(field_copy(d->formula, sizeof d->formula, v, "formula"));
            Parser p(StrView(d->formula), nullptr, nullptr);
            Result<Frac> r = p.run();
            if (!r.ok()) return r.error();
        } else if (k.eq(StrView("groups"))) {
            PMULAB_TRY(field_copy(d->groups, sizeof d->groups, v, "groups"));
        } else if (k.eq(StrView("unit"))) {
            PMULAB_TRY(field_copy(d->unit, sizeof d->unit, v, "unit"));
        } else if (k.eq(StrView("desc"))) {
            PMULAB_TRY(field_copy(d->desc, sizeof d->desc, v, "desc"));
        } else if (k.eq(StrView("parent"))) {
            PMULAB_TRY(field_copy(d->parent, sizeof d->parent, v, "parent"));
        } else if (k.eq(StrView("level"))) {
            if (!v.eq(StrView("1")) && !v.eq(StrView("2")))
                return Error::make(Errc::invalid_argument, "level must be 1 or 2, not '%.*s'", int(v.len), v.ptr);
            d->level = u8(v[0] - '0');
        } else if (k.eq(StrView("method"))) {
            if (!topdown_method_from_name(v, &d->method)) {
                StrBuf known;
                for (unsigned i = 1; i < kTopdownMethods; ++i)
                    known.printf("%s%s", i > 1 ? ", " : "", topdown_method_name(TopdownMethod(i)));
                return Error::make(Errc::invalid_argument, "method '%.*s' is not one of %s", int(v.len), v.ptr,
                                   known.c_str());
            }
        } else if (k.eq(StrView("range"))) {
            usize dots = v.find('.', 0);
            if (dots + 1 >= v.len || v[dots + 1] != '.')
                return Error::make(Errc::invalid_argument, "range '%.*s' is not LO..HI", int(v.len), v.ptr);
            StrView lo = v.sub(0, dots).trim(), hi = v.sub(dots + 2, v.len - dots - 2).trim();
            d->has_lo = !lo.empty();
            d->has_hi = !hi.empty();
            if ((d->has_lo && !parse_bound(lo, &d->lo)) || (d->has_hi && !parse_bound(hi, &d->hi)))
                return Error::make(Errc::invalid_argument, "range '%.*s': bounds are numbers", int(v.len), v.ptr);
        } else {
            return Error::make(Errc::invalid_argument,
                               "unknown key '%.*s' (name, formula, groups, unit, range, level, parent, method, desc)",
                               int(k.len), k.ptr);
        }
    }
    if (!any) return ok_status();
    if (!d->name[0]) return Error::make(Errc::invalid_argument, "a definition needs name=");
    if (!d->formula[0]) return Error::make(Errc::invalid_argument, "metric '%s' needs formula=", d->name);
    if (d->level == 2 && !d->parent[0])
        return Error::make(Errc::invalid_argument, "metric '%s': level 2 needs parent=", d->name);
    return ok_status();
}

}  // namespace

Status parse_metric_text(StrView text, const char* origin, MetricSet* out) {
    usize pos = 0;
    unsigned line_no = 0;
    while (pos < text.len) {
        usize nl = text.find('\n', pos);
        StrView line = text.sub(pos, nl - pos);
        pos = nl >= text.len ? text.len : nl + 1;
        ++line_no;
        usize hash = line.find('#', 0);
        line = line.sub(0, hash).trim();
        if (line.empty()) continue;
        MetricDef d;
        Status s = parse_def(line, &d);
        if (!s.ok()) return Error::make(Errc::invalid_argument, "%s:%u: %s", origin, line_no, s.error().msg);
        if (d.name[0]) out->defs.push(d);
    }
    return ok_status();
}

bool metric_or_group_known(const MetricSet& set, StrView name) {
    for (const MetricDef& d : set.defs)
        if (name.eq_nocase(StrView(d.name)) || list_has(d.groups, name)) return true;
    return false;
}

Status formula_inputs(StrView formula, Vec<StrView>* out) {
    Parser p(formula, nullptr, out);
    Result<Frac> r = p.run();
    return r.ok() ? ok_status() : Status(r.error());
}

Result<Frac> eval_formula(StrView formula, const MetricInputs& in) {
    Parser p(formula, &in, nullptr);
    return p.run();
}

Status select_metrics(const MetricSet& set, StrView list, Vec<StrView>* names) {
    usize pos = 0;
    while (pos <= list.len) {
        usize c = list.find(',', pos);
        StrView item = list.sub(pos, c - pos).trim();
        if (item.empty())
            return Error::make(Errc::invalid_argument, "--metrics: empty item in '%.*s'", int(list.len), list.ptr);
        if (!metric_or_group_known(set, item)) {
            StrBuf known;
            for (const MetricDef& d : set.defs) {
                bool seen = false;
                for (const MetricDef& e : set.defs) {
                    if (&e == &d) break;
                    seen |= StrView(e.name).eq(StrView(d.name));
                }
                if (!seen) known.printf("%s%s", known.size() ? ", " : "", d.name);
            }
            return Error::make(Errc::invalid_argument, "--metrics: unknown metric or group '%.*s'; metrics: %s",
                               int(min_of<usize>(item.len, 40)), item.ptr, known.c_str());
        }
        for (const MetricDef& d : set.defs) {
            if (!item.eq_nocase(StrView(d.name)) && !list_has(d.groups, item)) continue;
            bool dup = false;
            for (StrView n : *names) dup |= n.eq_nocase(StrView(d.name));
            if (!dup) names->push(StrView(d.name));
        }
        if (c >= list.len) break;
        pos = c + 1;
    }
    return ok_status();
}

void evaluate_metrics(const MetricSet& set, const Vec<StrView>& names, TopdownMethod method, const MetricInputs& in,
                      Vec<MetricValue>* out, Frac tolerance) {
    for (StrView name : names) {
        MetricValue& mv = out->emplace();
        const MetricDef* first = nullptr;
        // Of the variants that miss inputs, the one that misses fewest (the first on ties):
        // its formula and reason are reported (frequency on AMD: the APERF/MPERF variant,
        // "the TSC frequency is unknown", not Intel's names "not measured").
        const MetricDef* closest = nullptr;
        usize closest_missing = 0;
        Error last;
        bool have_last = false;
        for (const MetricDef& d : set.defs) {
            if (!name.eq_nocase(StrView(d.name))) continue;
            if (d.method != TopdownMethod::none && d.method != method) continue;
            if (!first) first = &d;
            Result<Frac> r = eval_formula(StrView(d.formula), in);
            if (r.ok()) {
                mv.def = &d;
                mv.ok = true;
                mv.value = r.value();
                break;
            }
            // A missing input: try the next variant; a division by zero or overflow is the answer.
            if (r.error().code != Errc::not_found) {
                mv.def = &d;
                last = r.error();
                have_last = true;
                break;
            }
            Vec<StrView> ins;
            (void)formula_inputs(StrView(d.formula), &ins);
            usize missing = 0;
            for (StrView n : ins) {
                Frac unused;
                missing += !in.get(n, &unused);
            }
            if (!closest || missing < closest_missing) {
                closest = &d;
                closest_missing = missing;
                last = r.error();
                have_last = true;
            }
        }
        if (mv.ok) continue;
        if (!mv.def) mv.def = closest ? closest : first;
        if (!first) {
            // No variant for this CPU's TopDown method: name the first definition anyway.
            for (const MetricDef& d : set.defs)
                if (name.eq_nocase(StrView(d.name))) {
                    mv.def = &d;
                    break;
                }
            mv.no_variant = true;
            format_to(mv.why, sizeof mv.why, "no definition for this CPU (TopDown method %s)",
                      topdown_method_name(method));
        } else {
            format_to(mv.why, sizeof mv.why, "%s", have_last ? last.msg : "not evaluated");
        }
    }
    validate_metrics(out, topdown_level1_parts(method), tolerance);
    validate_level2_sums(set, method, out, tolerance);
}

Frac perf_metrics_tolerance(u64 slots_short, u64 slots_long) {
    if (slots_long <= slots_short || slots_long > (u64(1) << 56)) return kMetricTolerance;
    // 2 * ((S_U + S_2U) / 255 + 4) / (S_2U - S_U) = 2 * (S_U + S_2U + 1020) / (255 * (S_2U - S_U))
    Frac q = reduce(i64(2 * (slots_short + slots_long + 1020)), 255 * (slots_long - slots_short));
    return frac_cmp(q, kMetricTolerance) > 0 ? q : kMetricTolerance;
}

void validate_level2_sums(const MetricSet& set, TopdownMethod method, Vec<MetricValue>* values, Frac tolerance) {
    for (const MetricValue& p : *values) {
        if (!p.ok || !p.def || p.def->level != 1) continue;
        const StrView parent(p.def->name);
        // The distinct level-2 names this method (or every CPU) defines under `parent`.
        usize defined = 0;
        for (const MetricDef& d : set.defs) {
            if (d.level != 2 || !parent.eq_nocase(StrView(d.parent))) continue;
            if (d.method != TopdownMethod::none && d.method != method) continue;
            bool seen = false;
            for (const MetricDef& e : set.defs) {
                if (&e == &d) break;
                seen |= e.level == 2 && StrView(e.name).eq_nocase(StrView(d.name)) &&
                        (e.method == TopdownMethod::none || e.method == method);
            }
            defined += !seen;
        }
        Frac sum{0, 1};
        usize got = 0;
        bool sum_ok = true;
        for (const MetricValue& v : *values)
            if (v.ok && v.def && v.def->level == 2 && parent.eq_nocase(StrView(v.def->parent))) {
                Result<Frac> s = f_add(sum, v.value, false);
                if (!s.ok()) sum_ok = false;
                else sum = s.value();
                ++got;
            }
        if (defined < 2 || got != defined || !sum_ok) continue;
        Result<Frac> dev = f_add(sum, p.value, true);
        if (!dev.ok() || frac_cmp(frac_abs(dev.value()), tolerance) <= 0) continue;
        StrBuf a, b, t;
        put_frac(a, sum, 4);
        put_frac(b, p.value, 4);
        put_tolerance(t, tolerance);
        for (MetricValue& v : *values)
            if (v.ok && v.def && v.def->level == 2 && parent.eq_nocase(StrView(v.def->parent)) && !v.violation[0])
                format_to(v.violation, sizeof v.violation,
                          "the level-2 parts of %s sum to %s, not its %s (tolerance %s)", p.def->name, a.c_str(),
                          b.c_str(), t.c_str());
    }
}

void validate_metrics(Vec<MetricValue>* values, unsigned level1_parts, Frac tolerance) {
    StrBuf t;
    put_tolerance(t, tolerance);
    // Range of each metric.
    for (MetricValue& v : *values) {
        if (!v.ok || !v.def) continue;
        const MetricDef& d = *v.def;
        StrBuf val;
        put_frac(val, v.value, 4);
        Result<Frac> lo_t = f_add(d.lo, tolerance, true), hi_t = f_add(d.hi, tolerance, false);
        if (d.has_lo && lo_t.ok() && frac_cmp(v.value, lo_t.value()) < 0) {
            StrBuf lo;
            put_frac(lo, d.lo, 4);
            format_to(v.violation, sizeof v.violation, "%s is below its range (minimum %s, tolerance %s)", val.c_str(),
                      lo.c_str(), t.c_str());
        } else if (d.has_hi && hi_t.ok() && frac_cmp(v.value, hi_t.value()) > 0) {
            StrBuf hi;
            put_frac(hi, d.hi, 4);
            format_to(v.violation, sizeof v.violation, "%s is above its range (maximum %s, tolerance %s)", val.c_str(),
                      hi.c_str(), t.c_str());
        }
    }
    // Level 1 parts sum to 1.
    Frac sum{0, 1};
    unsigned n1 = 0;
    bool sum_ok = true;
    for (const MetricValue& v : *values)
        if (v.ok && v.def && v.def->level == 1) {
            Result<Frac> s = f_add(sum, v.value, false);
            if (!s.ok()) sum_ok = false;
            else sum = s.value();
            ++n1;
        }
    if (n1 == level1_parts && sum_ok) {
        Result<Frac> dev = f_add(sum, Frac{1, 1}, true);
        if (dev.ok() && frac_cmp(frac_abs(dev.value()), tolerance) > 0) {
            StrBuf s;
            put_frac(s, sum, 4);
            for (MetricValue& v : *values)
                if (v.ok && v.def && v.def->level == 1 && !v.violation[0])
                    format_to(v.violation, sizeof v.violation, "the level-1 parts sum to %s, not 1 (tolerance %s)",
                              s.c_str(), t.c_str());
        }
    }
    // Level 2 <= its parent.
    for (MetricValue& v : *values) {
        if (!v.ok || !v.def || v.def->level != 2 || v.violation[0]) continue;
        for (const MetricValue& p : *values) {
            if (!p.ok || !p.def || !StrView(p.def->name).eq_nocase(StrView(v.def->parent))) continue;
            Result<Frac> lim = f_add(p.value, tolerance, false);
            if (lim.ok() && frac_cmp(v.value, lim.value()) > 0) {
                StrBuf a, b;
                put_frac(a, v.value, 4);
                put_frac(b, p.value, 4);
                format_to(v.violation, sizeof v.violation, "%s exceeds its parent %s (%s)", a.c_str(), p.def->name,
                          b.c_str());
            }
        }
    }
}

}  // namespace pmulab
