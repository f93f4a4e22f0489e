#include "support/test_platform.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "census/cpuid_dump.h"

namespace pmutest {

std::vector<std::string> RunResult::lines() const {
    std::vector<std::string> v;
    size_t start = 0;
    while (start < out.size()) {
        size_t nl = out.find('\n', start);
        if (nl == std::string::npos) nl = out.size();
        v.push_back(out.substr(start, nl - start));
        start = nl + 1;
    }
    return v;
}

bool RunResult::has_line(const std::string& line) const {
    for (const std::string& l : lines())
        if (l == line) return true;
    return false;
}

RunResult run(TestPlatform& p, const std::vector<std::string>& args) {
    std::vector<const char*> argv;
    for (const std::string& a : args) argv.push_back(a.c_str());
    RunResult r;
    p.take_output();
    r.status = pmulab::app_run(p, int(argv.size()), argv.data(), &r.opts);
    r.out = p.take_output();
    return r;
}

RunResult run(TestPlatform& p, std::initializer_list<const char*> args) {
    return run(p, std::vector<std::string>(args.begin(), args.end()));
}

RunResult run(pmulab::Hw& hw, std::initializer_list<const char*> args) {
    TestPlatform p(hw);
    return run(p, args);
}

// ---------------------------------------------------------------- JSON

namespace {

const Json& null_json() {
    static const Json j;
    return j;
}

struct Parser {
    explicit Parser(const std::string& text) : t(text) {}
    const std::string& t;
    size_t i = 0;
    std::string err;

    void ws() {
        while (i < t.size() && (t[i] == ' ' || t[i] == '\n' || t[i] == '\r' || t[i] == '\t')) ++i;
    }
    bool fail(const char* what) {
        if (err.empty()) err = std::string(what) + " at offset " + std::to_string(i);
        return false;
    }
    bool lit(const char* w) {
        size_t n = std::char_traits<char>::length(w);
        if (t.compare(i, n, w) != 0) return fail("bad literal");
        i += n;
        return true;
    }
    bool str(std::string* out) {
        if (i >= t.size() || t[i] != '"') return fail("expected string");
        ++i;
        while (i < t.size() && t[i] != '"') {
            char c = t[i++];
            if (c != '\\') {
                out->push_back(c);
                continue;
            }
            if (i >= t.size()) return fail("bad escape");
            char e = t[i++];
            switch (e) {
                case '"': out->push_back('"'); break;
                case '\\': out->push_back('\\'); break;
                case '/': out->push_back('/'); break;
                case 'n': out->push_back('\n'); break;
                case 'r': out->push_back('\r'); break;
                case 't': out->push_back('\t'); break;
                case 'b': out->push_back('\b'); break;
                case 'f': out->push_back('\f'); break;
                case 'u': {
                    if (i + 4 > t.size()) return fail("bad \\u escape");
                    unsigned v = unsigned(std::strtoul(t.substr(i, 4).c_str(), nullptr, 16));
                    i += 4;
                    if (v < 0x80) out->push_back(char(v));
                    else out->push_back('?');  // pmulab only escapes ASCII controls and bytes >= 0x7f
                    break;
                }
                default: return fail("bad escape");
            }
        }
        if (i >= t.size()) return fail("unterminated string");
        ++i;
        return true;
    }
    bool value(Json* v) {
        ws();
        if (i >= t.size()) return fail("unexpected end");
        char c = t[i];
        if (c == '{') {
            v->type = Json::Type::object;
            ++i;
            ws();
            if (i < t.size() && t[i] == '}') return ++i, true;
            for (;;) {
                ws();
                std::string k;
                if (!str(&k)) return false;
                ws();
                if (i >= t.size() || t[i] != ':') return fail("expected ':'");
                ++i;
                Json f;
                if (!value(&f)) return false;
                v->names.push_back(k);
                v->values.push_back(std::move(f));
                ws();
                if (i < t.size() && t[i] == ',') {
                    ++i;
                    continue;
                }
                if (i < t.size() && t[i] == '}') return ++i, true;
                return fail("expected ',' or '}'");
            }
        }
        if (c == '[') {
            v->type = Json::Type::array;
            ++i;
            ws();
            if (i < t.size() && t[i] == ']') return ++i, true;
            for (;;) {
                Json e;
                if (!value(&e)) return false;
                v->items.push_back(std::move(e));
                ws();
                if (i < t.size() && t[i] == ',') {
                    ++i;
                    continue;
                }
                if (i < t.size() && t[i] == ']') return ++i, true;
                return fail("expected ',' or ']'");
            }
        }
        if (c == '"') {
            v->type = Json::Type::string;
            return str(&v->text);
        }
        if (c == 't') {
            v->type = Json::Type::boolean;
            v->b = true;
            return lit("true");
        }
        if (c == 'f') {
            v->type = Json::Type::boolean;
            return lit("false");
        }
        if (c == 'n') return lit("null");
        if (c == '-' || (c >= '0' && c <= '9')) {
            v->type = Json::Type::number;
            size_t s = i;
            ++i;
            while (i < t.size() && (isdigit((unsigned char)t[i]) || t[i] == '.' || t[i] == 'e' || t[i] == 'E' ||
                                    t[i] == '+' || t[i] == '-'))
                ++i;
            v->text = t.substr(s, i - s);
            return true;
        }
        return fail("unexpected character");
    }
};

}  // namespace

bool Json::has(const std::string& key) const {
    for (const std::string& n : names)
        if (n == key) return true;
    return false;
}

const Json& Json::operator[](const std::string& key) const {
    for (size_t i = 0; i < names.size(); ++i)
        if (names[i] == key) return values[i];
    ADD_FAILURE() << "JSON object has no field '" << key << "'";
    return null_json();
}

const Json& Json::operator[](size_t i) const {
    if (i < items.size()) return items[i];
    ADD_FAILURE() << "JSON array has no element " << i;
    return null_json();
}

pmulab::u64 Json::u() const {
    if (type != Type::number || text.empty() || text[0] == '-' || text.find_first_of(".eE") != std::string::npos) {
        ADD_FAILURE() << "not a non-negative integer: '" << text << "'";
        return 0;
    }
    return std::strtoull(text.c_str(), nullptr, 10);
}

std::vector<pmulab::u64> Json::u_list() const {
    std::vector<pmulab::u64> v;
    for (const Json& j : items) v.push_back(j.u());
    return v;
}

std::vector<std::string> Json::s_list() const {
    std::vector<std::string> v;
    for (const Json& j : items) v.push_back(j.text);
    return v;
}

std::vector<std::string> Json::keys() const { return names; }

Json parse_json(const std::string& text) {
    Parser p(text);
    Json v;
    if (p.value(&v)) {
        p.ws();
        if (p.i != text.size()) p.fail("trailing characters");
    }
    if (!p.err.empty()) {
        ADD_FAILURE() << "bad JSON (" << p.err << "): " << text;
        return Json();
    }
    return v;
}

std::vector<Json> parse_json_lines(const std::string& text) {
    std::vector<Json> v;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line))
        if (!line.empty()) v.push_back(parse_json(line));
    return v;
}

sim::SimMachine dump_machine(const std::string& name, pmulab::u64 perf_caps) {
    // __FILE__ is tests/support/test_platform.cpp, relative to the repository root or absolute.
    std::filesystem::path dir = std::filesystem::path(__FILE__).parent_path().parent_path() / "data" / "cpuid";
    std::ifstream f(dir / name, std::ios::binary);
    if (!f.good()) {
        ADD_FAILURE() << "cannot open " << (dir / name).string();
        std::abort();
    }
    std::stringstream ss;
    ss << f.rdbuf();
    std::string text = ss.str();
    pmulab::Vec<pmulab::CpuRecord> recs;
    pmulab::Status s = pmulab::parse_cpuid_dump(pmulab::StrView(text.data(), text.size()), name.c_str(), &recs);
    if (!s.ok()) {
        ADD_FAILURE() << s.error().msg;
        std::abort();
    }
    return sim::SimMachine::from_records(recs, perf_caps);
}

}  // namespace pmutest
