// The TSC frequency (see tsc_freq.h).
#include "census/tsc_freq.h"

#include "base/fmt.h"

namespace pmulab {

u64 ref_step_from_cpuid(u32 max_leaf, const CpuidRegs& l15) {
    if (max_leaf < 0x15 || !l15.eax || !l15.ebx) return 0;
    return (u64(l15.ebx) + l15.eax - 1) / l15.eax;
}

TscFreq tsc_freq_from_cpuid(u32 max_leaf, const CpuidRegs& l15, const CpuidRegs& l16) {
    TscFreq f;
    f.ref_step = ref_step_from_cpuid(max_leaf, l15);
    if (max_leaf >= 0x15 && l15.eax && l15.ebx && l15.ecx) {
        // TSC = crystal Hz (ECX) x numerator (EBX) / denominator (EAX).
        f.hz = u64(l15.ecx) * l15.ebx / l15.eax;
        f.source = "cpuid_15h";
        format_to(f.detail, sizeof f.detail, "CPUID.15H: crystal %u Hz x %u/%u", l15.ecx, l15.ebx, l15.eax);
        return f;
    }
    if (max_leaf >= 0x16 && (l16.eax & 0xffff)) {
        f.hz = u64(l16.eax & 0xffff) * 1000000;
        f.source = "cpuid_16h";
        format_to(f.detail, sizeof f.detail, "CPUID.16H:EAX processor base frequency %u MHz (%s)", l16.eax & 0xffff,
                  max_leaf >= 0x15 && l15.eax && l15.ebx ? "CPUID.15H gives no crystal frequency"
                                                         : "CPUID.15H gives no TSC ratio");
        return f;
    }
    if (max_leaf < 0x15)
        format_to(f.detail, sizeof f.detail, "CPUID leaves 15H/16H absent (maximum basic leaf %xH)", max_leaf);
    else format_to(f.detail, sizeof f.detail, "CPUID.15H/16H do not enumerate the TSC or base frequency");
    return f;
}

TscFreq tsc_freq_from_cpuid(Hw& hw) {
    u32 max = hw.cpuid(0, 0).eax;
    CpuidRegs l15 = max >= 0x15 ? hw.cpuid(0x15, 0) : CpuidRegs{};
    CpuidRegs l16 = max >= 0x16 ? hw.cpuid(0x16, 0) : CpuidRegs{};
    return tsc_freq_from_cpuid(max, l15, l16);
}

TscFreq tsc_freq_measured(u64 ticks, u64 us, const char* source, const char* what) {
    TscFreq f;
    if (!us) return f;
    f.hz = ticks * 1000000 / us;
    f.source = source;
    format_to(f.detail, sizeof f.detail, "measured: %llu TSC ticks over %llu us of %s on the BSP",
              (unsigned long long)ticks, (unsigned long long)us, what);
    return f;
}

void put_tsc_freq(StrBuf& out, const TscFreq& f) {
    if (!f.hz) {
        out.printf("unknown (%s)", f.detail);
        return;
    }
    out.printf("%llu.%03llu MHz (%s: %s)", (unsigned long long)(f.hz / 1000000),
               (unsigned long long)(f.hz % 1000000 / 1000), f.source, f.detail);
}

void tsc_freq_fields(JsonWriter& w, const TscFreq& f) {
    if (f.hz) w.field_u("tsc_hz", f.hz).field("tsc_source", f.source);
    else w.key("tsc_hz").null().key("tsc_source").null();
    w.field("tsc_detail", f.detail);
}

}  // namespace pmulab
