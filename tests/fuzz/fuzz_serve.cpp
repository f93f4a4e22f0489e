// libFuzzer target over the `pmulab serve` request parser (`make fuzz`). Checks in
// fuzz_serve_body.h, replayed by tests/unit/app/test_serve_fuzz_replay.cpp.
#include <cstdio>
#include <cstdlib>

#include "fuzz_serve_body.h"

namespace pmulab {
[[noreturn]] void panic(const char* msg) {
    std::fprintf(stderr, "pmulab: fatal: %s\n", msg);
    std::abort();
}
}  // namespace pmulab

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string broken = fuzz_serve::check_input(data, size);
    if (!broken.empty()) {
        std::fprintf(stderr, "fuzz_serve: contract broken: %s\n", broken.c_str());
        std::abort();
    }
    return 0;
}
