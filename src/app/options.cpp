#include "app/options.h"

#include "base/fmt.h"
#include "base/json.h"

namespace pmulab {

const char* option_value_name(OptValue v) {
    switch (v) {
        case OptValue::flag: return "flag";
        case OptValue::count: return "count";
        case OptValue::size: return "size";
        case OptValue::level: return "level";
        case OptValue::choice: return "choice";
        case OptValue::hex: return "hex";
        case OptValue::string: return "string";
        case OptValue::path: return "path";
        case OptValue::list: return "list";
        case OptValue::events: return "events";
        case OptValue::cpu: return "cpu";
        case OptValue::address: return "address";
    }
    return "?";
}

// clang-format off
const OptionSpec kGlobalOptions[kGlobalOptionCount] = {
    {.name = "--json", .help = "JSON Lines output: one object per line, nothing else"},
    {.name = "--lava", .help = "also LAVA test-case lines (<LAVA_SIGNAL_TESTCASE ...>) for checks and results"},
    {.name = "--shutdown", .help = "power off when done (what run-qemu.sh passes)"},
    {.name = "--trace-msr", .help = "print every RDMSR/WRMSR/RDPMC pmulab performs, in order, decoded"},
    {.name = "--help", .alias = "-h", .help = "help for the command"},
};
// clang-format on

bool is_global_option(const char* word) {
    for (const OptionSpec& s : kGlobalOptions)
        if (str_eq(s.name, word) || (s.alias && str_eq(s.alias, word))) return true;
    return false;
}

const OptionSpec* find_option(const CommandOptions& c, StrView name) {
    for (u32 i = 0; i < c.count; ++i)
        if (name.eq(StrView(c.options[i].name))) return &c.options[i];
    return nullptr;
}

const OptionHit* ParsedOptions::find(const char* name) const {
    for (const OptionHit& h : hits)
        if (str_eq(h.spec->name, name)) return &h;
    return nullptr;
}

namespace {

// Digits (decimal, or hex after 0x) and at most one size suffix: a number, only too large
// for parse_u64 when it does not parse.
bool looks_numeric(StrView s) {
    usize i = 0;
    bool hex = s.len > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
    if (hex) i = 2;
    usize digits = 0;
    for (; i < s.len; ++i) {
        char c = s[i];
        bool d = (c >= '0' && c <= '9') || (hex && ((c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')));
        if (!d) break;
        ++digits;
    }
    if (digits == 0) return false;
    if (i == s.len) return true;
    char c = s[i];
    return i + 1 == s.len && (c == 'K' || c == 'k' || c == 'M' || c == 'm' || c == 'G' || c == 'g');
}

Result<u64> parse_level(const OptionSpec& s, const char* v) {
    u64 x = 0;
    if (parse_u64(StrView(v), &x) && x >= s.min && x <= s.max) return x;
    if (s.max == s.min + 1)
        return Error::make(Errc::invalid_argument, "%s: '%s' is not a level (%llu or %llu)", s.name, v,
                           (unsigned long long)s.min, (unsigned long long)s.max);
    return Error::make(Errc::invalid_argument, "%s: '%s' is not a level (%llu..%llu)", s.name, v,
                       (unsigned long long)s.min, (unsigned long long)s.max);
}

// The index of `v` among the choices "a|b|c".
Result<u64> parse_choice(const OptionSpec& s, const char* v) {
    StrView all(s.choices), want(v);
    u64 index = 0, n = 1;
    for (usize i = 0; i < all.len; ++i) n += all[i] == '|';
    for (usize pos = 0; pos <= all.len; ++index) {
        usize bar = all.find('|', pos);
        if (all.sub(pos, bar - pos).eq(want)) return index;
        if (bar >= all.len) break;
        pos = bar + 1;
    }
    StrBuf list;
    if (n == 2) {
        usize bar = all.find('|');
        list.printf("'%.*s' or '%s'", int(bar), all.ptr, all.ptr + bar + 1);
        return Error::make(Errc::invalid_argument, "%s: '%s' is not %s", s.name, v, list.c_str());
    }
    for (usize i = 0; i < all.len; ++i) {
        if (all[i] == '|') list.put(StrView(", "));
        else list.put(all[i]);
    }
    return Error::make(Errc::invalid_argument, "%s: '%s' is not one of %s", s.name, v, list.c_str());
}

}  // namespace

Result<u64> parse_option_number(const OptionSpec& s, const char* v) {
    if (s.value == OptValue::level) return parse_level(s, v);
    if (s.value == OptValue::choice) return parse_choice(s, v);
    bool suffix = s.value == OptValue::size;
    u64 x = 0;
    if (parse_u64(StrView(v), &x, suffix)) {
        if (x < s.min || x > s.max)
            return Error::make(Errc::invalid_argument, "%s: %llu is out of range %llu..%llu", s.name,
                               (unsigned long long)x, (unsigned long long)s.min, (unsigned long long)s.max);
        return x;
    }
    if (looks_numeric(StrView(v)))
        return Error::make(Errc::invalid_argument, "%s: '%s' is too large (at most %llu)", s.name, v,
                           (unsigned long long)s.max);
    return Error::make(Errc::invalid_argument, "%s: '%s' is not a number%s", s.name, v,
                       suffix ? " (suffixes K, M, G allowed)" : "");
}

namespace {

bool numeric(OptValue v) {
    return v == OptValue::count || v == OptValue::size || v == OptValue::level || v == OptValue::choice;
}

// The value of the option word just taken (`word`, its '=' at `eq`): after '=', the next
// word, or for an optional value nothing when the next word is an option.
Status take_value(const OptionSpec& s, Args& args, StrView word, usize eq, OptionHit* hit) {
    if (s.value == OptValue::flag) {
        if (eq < word.len) return Error::make(Errc::invalid_argument, "%s takes no value", s.name);
        return ok_status();
    }
    if (eq < word.len) hit->value = word.ptr + eq + 1;
    else if (!(s.flags & kOptOptionalValue) || (!args.done() && !StrView(args.peek()).starts_with("--")))
        hit->value = args.take();
    if (!hit->value && !(s.flags & kOptOptionalValue))
        return Error::make(Errc::invalid_argument, "option %s needs a value", s.name);
    const char* v = hit->value ? hit->value : s.choices;
    if (numeric(s.value)) hit->num = PMULAB_TRY(parse_option_number(s, v));
    return ok_status();
}

// A repeated option that may not be: an error (never "the last one wins").
Status check_repeat(const CommandOptions& c, const ParsedOptions& p, const OptionHit& hit) {
    const OptionSpec& s = *hit.spec;
    if (s.flags & (kOptRepeatable | kOptGroupStart)) return ok_status();
    for (const OptionHit& h : p.hits) {
        if (h.spec != &s) continue;
        if (!(s.flags & kOptInGroup))
            return Error::make(Errc::invalid_argument, "%s: %s is given more than once (it is not repeatable)",
                               c.command, s.name);
        if (h.group == hit.group)
            return Error::make(Errc::invalid_argument, "%s: %s is given more than once for one %s (one per %s)",
                               c.command, s.name, c.group, c.group);
    }
    return ok_status();
}

}  // namespace

Status parse_options(const CommandOptions& c, Args& args, ParsedOptions* out) {
    out->hits.clear();
    out->positionals.clear();
    out->groups = 0;
    while (!args.done()) {
        if (!args.at_option()) {
            if (out->positionals.size() >= c.positionals)
                return Error::make(Errc::invalid_argument, "%s: unexpected argument '%s' (see 'pmulab help %s')",
                                   c.command, args.peek(), c.command);
            out->positionals.push(args.take());
            continue;
        }
        StrView word(args.peek());
        usize eq = word.find('=');
        const OptionSpec* s = find_option(c, word.sub(0, eq));
        if (!s)
            return Error::make(Errc::invalid_argument, "%s: unknown option '%s' (see 'pmulab help %s')", c.command,
                               args.peek(), c.command);
        args.take();
        OptionHit hit;
        hit.spec = s;
        PMULAB_TRY(take_value(*s, args, word, eq, &hit));
        if (s->flags & kOptGroupStart) hit.group = out->groups++;
        else hit.group = out->groups ? out->groups - 1 : 0;
        PMULAB_TRY(check_repeat(c, *out, hit));
        out->hits.push(hit);
    }
    return ok_status();
}

Status apply_options(const ParsedOptions& p, void* target) {
    for (const OptionHit& h : p.hits)
        if (h.spec->apply) PMULAB_TRY(h.spec->apply(target, h));
    return ok_status();
}

Status read_options(const CommandOptions& c, Args& args, void* target, ParsedOptions* out) {
    PMULAB_TRY(parse_options(c, args, out));
    return apply_options(*out, target);
}

namespace {

void put_option_line(StrBuf& b, const OptionSpec& s, u32 column) {
    usize start = b.size();
    b.put(StrView("  "));
    b.put(StrView(s.name));
    if (s.alias) {
        b.put(StrView(", "));
        b.put(StrView(s.alias));
    }
    if (s.metavar) {
        b.put(' ');
        b.put(StrView(s.metavar));
    }
    usize width = b.size() - start - 2;
    if (width < column)
        for (; width < column; ++width) b.put(' ');
    else b.put(StrView("  "));
    for (const char* p = s.help; *p; ++p) {
        b.put(*p);
        if (*p == '\n')
            for (u32 i = 0; i < column + 2; ++i) b.put(' ');
    }
    b.put('\n');
}

}  // namespace

void put_command_help(StrBuf& b, const CommandOptions& c) {
    u8 section = 0;
    for (const char* p = c.help; *p; ++p) {
        if (*p != '\x01') {
            b.put(*p);
            continue;
        }
        for (u32 i = 0; i < c.count; ++i)
            if (c.options[i].help && c.options[i].section == section) put_option_line(b, c.options[i], c.column);
        ++section;
    }
}

namespace {

void put_option_json(JsonWriter& w, const OptionSpec& s, const char* group) {
    w.begin_object().field("name", s.name);
    if (s.alias) w.field("alias", s.alias);
    w.field("value", option_value_name(s.value));
    if (s.metavar) w.field("metavar", s.metavar);
    if (s.value == OptValue::count || s.value == OptValue::size || s.value == OptValue::level)
        w.field_u("min", s.min).field_u("max", s.max);
    if (s.value == OptValue::choice) {
        w.key("choices").begin_array();
        StrView all(s.choices);
        for (usize pos = 0; pos <= all.len;) {
            usize bar = all.find('|', pos);
            w.str(all.sub(pos, bar - pos));
            if (bar >= all.len) break;
            pos = bar + 1;
        }
        w.end_array();
    }
    if (s.flags & kOptOptionalValue) w.field_b("optional", true).field("default", s.choices);
    w.field_b("repeatable", (s.flags & (kOptRepeatable | kOptGroupStart)) != 0);
    if (s.flags & (kOptGroupStart | kOptInGroup)) {
        w.field("group", group);
        w.field_b("starts_group", (s.flags & kOptGroupStart) != 0);
    }
    if (s.host_asm) w.field("asm", s.host_asm);
    StrBuf help;  // the help's lines as one
    for (const char* p = s.help ? s.help : s.brief ? s.brief : ""; *p; ++p) help.put(*p == '\n' ? ' ' : *p);
    w.field("help", help.view()).end_object();
}

}  // namespace

void command_json(Value& rec, const CommandOptions& c) {
    JsonWriter w(rec);
    w.begin_object().field("type", "command").field("command", c.command).key("options").begin_array();
    for (u32 i = 0; i < c.count; ++i) put_option_json(w, c.options[i], c.group);
    w.end_array().end_object();
}

}  // namespace pmulab
