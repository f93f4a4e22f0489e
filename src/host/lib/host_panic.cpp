// Host definition of the platform hook the portable core expects (pmulab::panic),
// linked into the host tools. Weak, so that the unit-test binary's own definition
// (tests/support/host_runtime.cpp) takes precedence there.
#include <cstdio>
#include <cstdlib>

#include "base/base.h"

namespace pmulab {
[[noreturn]] __attribute__((weak)) void panic(const char* msg) {
    std::fprintf(stderr, "pmulab: fatal: %s\n", msg);
    std::abort();
}
}  // namespace pmulab
