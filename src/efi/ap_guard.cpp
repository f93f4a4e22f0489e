#include "ap_guard.h"

namespace pmulab::efi {

namespace {
volatile u32 g_guard_on = 0;
u64 g_guard_count = 0;
alignas(64) u8 g_arena[64 * 1024];
u64 g_arena_used = 0;
}  // namespace

u64 ap_guard_begin() {
    u64 before = __atomic_load_n(&g_guard_count, __ATOMIC_ACQUIRE);
    __atomic_store_n(&g_guard_on, u32(1), __ATOMIC_RELEASE);
    return before;
}

u64 ap_guard_end(u64 before) {
    __atomic_store_n(&g_guard_on, u32(0), __ATOMIC_RELEASE);
    return __atomic_load_n(&g_guard_count, __ATOMIC_ACQUIRE) - before;
}

void* ap_guard_alloc(usize bytes) {
    if (!__atomic_load_n(&g_guard_on, __ATOMIC_ACQUIRE)) return nullptr;
    __atomic_add_fetch(&g_guard_count, 1, __ATOMIC_RELEASE);
    u64 size = (u64(bytes) + 63) & ~u64(63);
    u64 at = __atomic_fetch_add(&g_arena_used, size, __ATOMIC_RELAXED);
    // Out of reserve: stop this CPU; the BSP's timeout reports the job (and the count).
    if (at + size > sizeof g_arena)
        for (;;) asm volatile("cli; hlt");
    return g_arena + at;
}

bool ap_guard_owns(const void* p) {
    auto a = reinterpret_cast<uintptr_t>(p);
    auto lo = reinterpret_cast<uintptr_t>(g_arena);
    return a >= lo && a < lo + sizeof g_arena;
}

}  // namespace pmulab::efi
