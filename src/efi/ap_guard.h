// The allocation guard of the AP workers (ap_worker.h): the firmware's pool allocator
// belongs to the BSP (it raises the global TPL), and code on an AP must not allocate.
// While the BSP waits for a job, operator new (runtime.cpp) serves from a fixed arena and
// counts; a job that allocated fails with an internal error naming the CPU, so the bug
// shows in every test instead of as a rare TPL corruption.
#pragma once

#include "base/base.h"

namespace pmulab::efi {

// Turns the guard on; returns the count of guarded allocations so far.
u64 ap_guard_begin();
// Turns it off; returns the allocations since ap_guard_begin returned `before`.
u64 ap_guard_end(u64 before);
// runtime.cpp's operator new/delete:
void* ap_guard_alloc(usize bytes);  // nullptr when the guard is off
bool ap_guard_owns(const void* p);  // memory from the guard's arena (never freed)

}  // namespace pmulab::efi
