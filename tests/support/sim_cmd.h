// One pmulab command line on a simulated platform (simm::SimPlatform), for the
// command-level unit tests: its exit status, its output, and with --json its records.
#pragma once

#include <string>
#include <vector>

#include "support/sim_measure.h"
#include "support/test_platform.h"

namespace simm {

struct Cmd {
    int status = -1;
    std::string out;
    std::vector<pmutest::Json> recs;  // with --json: every record, in order
};

inline Cmd run_line(SimPlatform& p, const std::string& line) {
    p.out.clear();
    ArgVec av;
    EXPECT_TRUE(split_command_line(StrView(line.c_str()), &av).ok()) << line;
    GlobalOptions g;
    Cmd c;
    c.status = app_run(p, av.argc(), av.argv.data(), &g);
    c.out = p.out;
    if (g.json) c.recs = pmutest::parse_json_lines(c.out);
    return c;
}

// The records of one type ("result", "metric", "error", ...).
inline std::vector<pmutest::Json> of_type(const Cmd& c, const char* type) {
    std::vector<pmutest::Json> r;
    for (const pmutest::Json& j : c.recs)
        if (j["type"].s() == type) r.push_back(j);
    return r;
}
inline std::vector<pmutest::Json> results(const Cmd& c) { return of_type(c, "result"); }

// The first record of `v` whose `key` is `value`, on CPU `cpu` (null when none is).
inline const pmutest::Json* find(const std::vector<pmutest::Json>& v, const char* key, const char* value, u64 cpu = 0) {
    for (const pmutest::Json& j : v)
        if (j[key].s() == value && j["cpu"].u() == cpu) return &j;
    return nullptr;
}

}  // namespace simm
