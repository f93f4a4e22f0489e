// Host-side definitions of the platform hooks the core expects.
#include <cstdio>
#include <cstdlib>

#include "base/base.h"

namespace pmulab {
[[noreturn]] void panic(const char* msg) {
    std::fprintf(stderr, "pmulab: fatal: %s\n", msg);
    std::abort();
}
}  // namespace pmulab
