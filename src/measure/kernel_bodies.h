// The kernel bodies assembled from src/measure/kernel_bodies.S, by KernelId. Shared by the
// EFI platform (measure_efi.cpp) and the host unit tests, which assemble the same
// file into the test binary.
#pragma once

#include "measure/measure.h"

extern "C" {
#define PMULAB_KB_DECLARE(n) extern const pmulab::u8 pmulab_kb_##n##_start[], pmulab_kb_##n##_end[];
PMULAB_KERNEL_LIST(PMULAB_KB_DECLARE)
#undef PMULAB_KB_DECLARE
}

namespace pmulab {

inline CodeSpan builtin_kernel_body(KernelId id) {
    switch (id) {
#define PMULAB_KB_CASE(n) \
    case KernelId::n: return CodeSpan{pmulab_kb_##n##_start, usize(pmulab_kb_##n##_end - pmulab_kb_##n##_start)};
        PMULAB_KERNEL_LIST(PMULAB_KB_CASE)
#undef PMULAB_KB_CASE
        case KernelId::count: break;
    }
    return CodeSpan{};
}

}  // namespace pmulab
