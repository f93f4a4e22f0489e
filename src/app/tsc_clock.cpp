// Platform::tsc_frequency: the TSC frequency once per boot (census/tsc_freq.h).
#include "app/platform.h"

namespace pmulab {

namespace {
constexpr u32 kStallUs = 50000;  // 50 ms: 1 ppm of a 1 GHz TSC is 50 ticks
}

const TscFreq& Platform::measured_tsc_frequency() {
    if (tsc_freq_done_) return tsc_freq_;
    tsc_freq_done_ = true;
    Hw& h = hw();
    tsc_freq_ = tsc_freq_from_cpuid(h);
    if (tsc_freq_.hz) return tsc_freq_;
    char why[sizeof tsc_freq_.detail];
    str_copy(why, sizeof why, tsc_freq_.detail);
    u64 t0 = h.rdtsc();
    Status s = stall_us(kStallUs);
    u64 t1 = h.rdtsc();
    if (!s.ok()) {
        format_to(tsc_freq_.detail, sizeof tsc_freq_.detail, "%s; %s", why, s.error().msg);
        return tsc_freq_;
    }
    const u64 ref_step = tsc_freq_.ref_step;  // CPUID.15H's ratio without its crystal frequency
    tsc_freq_ = tsc_freq_measured(t1 - t0, kStallUs, stall_source(), stall_what());
    tsc_freq_.ref_step = ref_step;
    return tsc_freq_;
}

}  // namespace pmulab
