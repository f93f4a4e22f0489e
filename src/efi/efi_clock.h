// pmulab's one clock on UEFI: the TSC, at the rate Platform::tsc_frequency gives (the BSP's
// CPUID.15H/16H, else measured once per boot against EFI Stall(): app/tsc_clock.cpp). The
// serve links time their waits with it; EfiHw::rdtsc reads the same counter.
#pragma once

#include "base/result.h"
#include "census/tsc_freq.h"

namespace pmulab::efi {

// RDTSC (SDM Vol. 2B): the calling CPU's time-stamp counter.
inline u64 rdtsc_now() {
    u32 lo, hi;
    asm volatile("rdtsc" : "=a"(lo), "=d"(hi));
    return u64(hi) << 32 | lo;
}

class TscClock {
public:
    // Errors: the frequency is unknown (its detail says why).
    Status init(const TscFreq& f) {
        if (f.hz < 1000) return Error::make(Errc::unsupported, "no clock: the TSC frequency is unknown (%s)", f.detail);
        ticks_per_ms_ = f.hz / 1000;
        return ok_status();
    }
    u64 now_ms() const { return rdtsc_now() / ticks_per_ms_; }
    // A point `ms` milliseconds from now, for passed().
    u64 deadline(u32 ms) const { return rdtsc_now() + u64(ms) * ticks_per_ms_; }
    static bool passed(u64 deadline) { return rdtsc_now() >= deadline; }

private:
    u64 ticks_per_ms_ = 1;
};

}  // namespace pmulab::efi
