// libFuzzer target over pmulab's other input parsers: campaign configs, JSON
// records, CPUID dumps (`make fuzz`). Checks in fuzz_inputs_body.h, replayed by
// tests/unit/app/test_fuzz_inputs_replay.cpp.
#include <cstdio>
#include <cstdlib>

#include "fuzz_inputs_body.h"

namespace pmulab {
[[noreturn]] void panic(const char* msg) {
    std::fprintf(stderr, "pmulab: fatal: %s\n", msg);
    std::abort();
}
}  // namespace pmulab

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string broken = fuzz_inputs::check_input(data, size);
    if (!broken.empty()) {
        std::fprintf(stderr, "fuzz_inputs: contract broken: %s\n", broken.c_str());
        std::abort();
    }
    return 0;
}
