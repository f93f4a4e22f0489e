// The freestanding runtime C++ needs in the EFI binary: mem* functions the
// compiler may emit calls to, operator new/delete over boot-services pool, and
// the pure-virtual trap. No global constructors exist in pmulab (the linker
// script asserts .init_array is empty).
#include "ap_guard.h"
#include "efi_defs.h"
#include "base/base.h"
#include "efi_platform.h"

extern "C" {

void* memcpy(void* dst, const void* src, size_t n) {
    auto* d = static_cast<unsigned char*>(dst);
    auto* s = static_cast<const unsigned char*>(src);
    while (n--) *d++ = *s++;
    return dst;
}

void* memmove(void* dst, const void* src, size_t n) {
    auto* d = static_cast<unsigned char*>(dst);
    auto* s = static_cast<const unsigned char*>(src);
    if (d < s) {
        while (n--) *d++ = *s++;
    } else if (d > s) {
        d += n;
        s += n;
        while (n--) *--d = *--s;
    }
    return dst;
}

void* memset(void* dst, int c, size_t n) {
    auto* d = static_cast<unsigned char*>(dst);
    while (n--) *d++ = static_cast<unsigned char>(c);
    return dst;
}

int memcmp(const void* a, const void* b, size_t n) {
    auto* x = static_cast<const unsigned char*>(a);
    auto* y = static_cast<const unsigned char*>(b);
    for (; n; --n, ++x, ++y)
        if (*x != *y) return *x < *y ? -1 : 1;
    return 0;
}

void __cxa_pure_virtual() { pmulab::panic("pure virtual function called"); }

}  // extern "C"

// While the BSP waits for a job on an AP, allocations come from the AP guard's
// reserve and are counted (ap_guard.h): the pool allocator is the BSP's alone.
void* operator new(size_t n) {
    void* p = pmulab::efi::ap_guard_alloc(n);
    if (p) return p;
    if (pmulab::efi::gBS->AllocatePool(EfiLoaderData, n ? n : 1, &p) != EFI_SUCCESS || !p)
        pmulab::panic("out of memory (boot-services pool)");
    return p;
}
void* operator new[](size_t n) { return operator new(n); }
void operator delete(void* p) noexcept {
    if (p && !pmulab::efi::ap_guard_owns(p)) pmulab::efi::gBS->FreePool(p);
}
void operator delete[](void* p) noexcept { operator delete(p); }
void operator delete(void* p, size_t) noexcept { operator delete(p); }
void operator delete[](void* p, size_t) noexcept { operator delete(p); }
