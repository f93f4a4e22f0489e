// Replays the event-parser fuzz corpus and every crasher the fuzzer found
// (tests/fuzz/corpus/events/, tests/fuzz/crashers/) through the fuzz target's checks.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "fuzz/fuzz_events_body.h"

namespace fs = std::filesystem;

namespace {

// tests/fuzz, found from the working directory (make, run_tests.py from the root) or
// from the test binary's location (build/test/unit-tests).
fs::path fuzz_dir() {
    std::error_code ec;
    if (fs::is_directory("tests/fuzz/corpus/events", ec)) return "tests/fuzz";
    fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    if (!ec) {
        fs::path root = exe.parent_path().parent_path().parent_path();
        if (fs::is_directory(root / "tests/fuzz/corpus/events", ec)) return root / "tests/fuzz";
    }
    return {};
}

std::vector<fs::path> files_in(const fs::path& dir) {
    std::vector<fs::path> out;
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) return out;
    for (const auto& e : fs::directory_iterator(dir))
        if (e.is_regular_file() && e.path().filename().string()[0] != '.') out.push_back(e.path());
    std::sort(out.begin(), out.end());
    return out;
}

std::string replay(const fs::path& p) {
    std::ifstream f(p, std::ios::binary);
    std::string data((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    return fuzz_events::check_input(reinterpret_cast<const uint8_t*>(data.data()), data.size());
}

}  // namespace

TEST(FuzzReplay, SeedCorpus) {
    fs::path dir = fuzz_dir();
    ASSERT_FALSE(dir.empty()) << "tests/fuzz/corpus/events not found (run from the repository root)";
    std::vector<fs::path> files = files_in(dir / "corpus/events");
    EXPECT_GE(files.size(), 20u);
    for (const fs::path& p : files) EXPECT_EQ(replay(p), "") << p;
}

TEST(FuzzReplay, Crashers) {
    fs::path dir = fuzz_dir();
    ASSERT_FALSE(dir.empty());
    for (const fs::path& p : files_in(dir / "crashers")) EXPECT_EQ(replay(p), "") << p;
}

TEST(FuzzReplay, ChecksCatchBrokenContracts) {
    // The checks are not vacuous: a well-formed list passes, and the allocation checks
    // see every event (a list of 40 GP events needs several groups on every PMU).
    std::string many;
    for (int i = 0; i < 40; ++i) many += (i ? "," : "") + std::string("0E.01");
    EXPECT_EQ(fuzz_events::check_input(reinterpret_cast<const uint8_t*>(many.data()), many.size()), "");
    pmulab::Vec<pmulab::Event> ev;
    ASSERT_TRUE(pmulab::parse_event_list(many.c_str(), &ev).ok());
    pmulab::Allocation a;
    ASSERT_TRUE(pmulab::allocate_counters(ev, fuzz_events::make_caps(2), &a).ok());
    EXPECT_EQ(a.groups.size(), 10u);
    ev[0].name[0] = 0;
    EXPECT_EQ(fuzz_events::check_events(ev), "empty event name");
}
