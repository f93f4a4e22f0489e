#include "support/test_platform.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/json.h"
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

// The record as the tests see it, from pmulab's one JSON reader (base/json.h).
Json from_value(const pmulab::Value& v) {
    using K = pmulab::Value::Kind;
    Json j;
    switch (v.kind()) {
        case K::null: break;
        case K::boolean:
            j.type = Json::Type::boolean;
            j.b = v.as_bool();
            break;
        case K::string: j.type = Json::Type::string; break;
        case K::array: j.type = Json::Type::array; break;
        case K::object: j.type = Json::Type::object; break;
        default: j.type = Json::Type::number; break;
    }
    if (v.is_string() || v.is_number()) j.text.assign(v.text().ptr, v.text().len);
    for (pmulab::usize i = 0; i < v.size(); ++i) {
        if (v.is_array()) {
            j.items.push_back(from_value(v[i]));
        } else {
            j.names.emplace_back(v.key(i).ptr, v.key(i).len);
            j.values.push_back(from_value(v[i]));
        }
    }
    return j;
}

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
    pmulab::Value v;
    pmulab::JsonError e;
    if (!pmulab::json_read(pmulab::StrView(text.data(), text.size()), &v, &e)) {
        ADD_FAILURE() << "bad JSON (" << e.what << " at offset " << e.offset << "): " << text;
        return Json();
    }
    return from_value(v);
}

std::vector<Json> parse_json_lines(const std::string& text) {
    std::vector<Json> v;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line))
        if (!line.empty()) v.push_back(parse_json(line));
    // A command's --json output starts with the meta record (issue #26 item 19; its own
    // tests in test_meta_stdout.cpp): the records after it are what the tests judge.
    if (!v.empty() && v[0].has("type") && v[0]["type"].s() == "meta") v.erase(v.begin());
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
