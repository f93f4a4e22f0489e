// Command-level tests: a pmulab::Platform over any Hw (normally a sim::SimMachine)
// that captures the console, a one-call runner for app_run, and a view of the
// records pmulab prints (read with pmulab's own JSON reader, base/json.h).
#pragma once

#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "commands/commands.h"
#include "sim/sim_cpu.h"

namespace pmutest {

class TestPlatform final : public pmulab::Platform {
public:
    explicit TestPlatform(pmulab::Hw& hw) : hw_(&hw) {}

    pmulab::Hw& hw() override { return *hw_; }
    void write(pmulab::StrView text) override { out_.append(text.ptr, text.len); }
    const char* firmware_vendor() override { return vendor_.c_str(); }
    pmulab::u32 firmware_revision() override { return revision_; }

    void set_firmware(const std::string& vendor, pmulab::u32 revision) {
        vendor_ = vendor;
        revision_ = revision;
    }
    const std::string& output() const { return out_; }
    // Returns everything written so far and starts afresh.
    std::string take_output() { return std::exchange(out_, std::string()); }

private:
    pmulab::Hw* hw_;
    std::string out_;
    std::string vendor_ = "pmulab test firmware";
    pmulab::u32 revision_ = 0x10000;
};

struct RunResult {
    int status = -1;
    std::string out;
    pmulab::GlobalOptions opts;
    // The output split at '\n' (a trailing newline does not add an empty line).
    std::vector<std::string> lines() const;
    bool has_line(const std::string& line) const;
};

// Runs one command line (the words after the program name) and returns its exit
// status and everything it wrote.
RunResult run(TestPlatform& p, std::initializer_list<const char*> args);
RunResult run(TestPlatform& p, const std::vector<std::string>& args);
RunResult run(pmulab::Hw& hw, std::initializer_list<const char*> args);

// ---- a record as the tests see it (numbers kept as text so 64-bit values stay exact) ----
struct Json {
    enum class Type { null, boolean, number, string, array, object };
    Type type = Type::null;
    bool b = false;
    std::string text;  // string value, or the number as written
    std::vector<Json> items;
    std::vector<std::string> names;  // object: field names, in order
    std::vector<Json> values;        // ... and their values

    bool has(const std::string& key) const;
    // The field (a null Json, and a test failure, when missing).
    const Json& operator[](const std::string& key) const;
    const Json& operator[](size_t i) const;
    pmulab::u64 u() const;  // a non-negative integer number
    const std::string& s() const { return text; }
    bool is_null() const { return type == Type::null; }
    std::vector<pmulab::u64> u_list() const;  // an array of numbers
    std::vector<std::string> s_list() const;  // an array of strings
    std::vector<std::string> keys() const;
};

// Parses one JSON text; on error records a test failure naming the position.
Json parse_json(const std::string& text);
// One value per non-empty line (JSON Lines), without the meta record that starts a
// command's --json output (when the first line is one).
std::vector<Json> parse_json_lines(const std::string& text);

// A machine from a CPUID dump in tests/data/cpuid.
sim::SimMachine dump_machine(const std::string& name, pmulab::u64 perf_capabilities = 0);

}  // namespace pmutest
