// Replays the fuzz_serve corpus and crashers (tests/fuzz/corpus/serve,
// tests/fuzz/crashers/serve-*) through the same checks as the fuzzer.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "fuzz/fuzz_serve_body.h"

namespace fs = std::filesystem;

static void replay(const fs::path& dir, const std::string& prefix, int* count) {
    if (!fs::exists(dir)) return;
    for (const auto& e : fs::directory_iterator(dir)) {
        if (!e.is_regular_file()) continue;
        if (!prefix.empty() && e.path().filename().string().rfind(prefix, 0) != 0) continue;
        std::ifstream f(e.path(), std::ios::binary);
        std::string data((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
        EXPECT_EQ(fuzz_serve::check_input(reinterpret_cast<const uint8_t*>(data.data()), data.size()), "") << e.path();
        ++*count;
    }
}

TEST(FuzzServeReplay, CorpusAndCrashers) {
    int n = 0;
    replay("tests/fuzz/corpus/serve", "", &n);
    replay("tests/fuzz/crashers", "serve-", &n);
    EXPECT_GE(n, 8);
}
