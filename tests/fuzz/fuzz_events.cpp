// libFuzzer target over the event-list and event-file parsers and the counter
// allocator (`make fuzz`). The checks live in fuzz_events_body.h so that
// tests/unit/events/test_fuzz_replay.cpp can replay the corpus and every crasher.
#include <cstdio>
#include <cstdlib>

#include "fuzz_events_body.h"

namespace pmulab {
// The platform hook the core expects (out of memory and other fatal errors).
[[noreturn]] void panic(const char* msg) {
    std::fprintf(stderr, "pmulab: fatal: %s\n", msg);
    std::abort();
}
}  // namespace pmulab

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string broken = fuzz_events::check_input(data, size);
    if (!broken.empty()) {
        std::fprintf(stderr, "fuzz_events: contract broken: %s\n", broken.c_str());
        std::abort();
    }
    return 0;
}
