// Replays the fuzz_inputs corpus and crashers (tests/fuzz/corpus/inputs,
// tests/fuzz/crashers/inputs-*) through the same checks as the fuzzer (run from
// the repository root, as tests/run_tests.py does).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "fuzz/fuzz_inputs_body.h"

namespace fs = std::filesystem;

static void replay_dir(const fs::path& dir, const std::string& prefix, int* count) {
    if (!fs::exists(dir)) return;
    for (const auto& e : fs::directory_iterator(dir)) {
        if (!e.is_regular_file()) continue;
        if (!prefix.empty() && e.path().filename().string().rfind(prefix, 0) != 0) continue;
        std::ifstream f(e.path(), std::ios::binary);
        std::string data((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
        EXPECT_EQ(fuzz_inputs::check_input(reinterpret_cast<const uint8_t*>(data.data()), data.size()), "") << e.path();
        ++*count;
    }
}

TEST(FuzzInputsReplay, CorpusAndCrashers) {
    int n = 0;
    replay_dir("tests/fuzz/corpus/inputs", "", &n);
    replay_dir("tests/fuzz/crashers", "inputs-", &n);
    EXPECT_GE(n, 6);
}
