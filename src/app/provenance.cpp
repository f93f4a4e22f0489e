#include "app/provenance.h"

#include "measure/measure.h"
#include "x86/cpuid.h"

namespace pmulab {

namespace {

const char kTcgSignature[] = "TCGTCGTCGTCG";

// The per-iteration TSC ticks of the nop kernel (one instruction) in every aggregate.
class IcountCapture final : public MeasureSink {
public:
    void result(const MeasureConfig&, const MeasureResult& r) override {
        for (unsigned a = 0; a < kAggCount; ++a) per_iter[a] = r.per_iter[a];
        ++results;
    }
    void failure(const Error&) override {}
    void skipped(const Error&) override {}
    Frac per_iter[kAggCount];
    u32 results = 0;
};

// QEMU -icount shift=N: RDTSC advances exactly 2^N per guest instruction (the tests'
// exactness oracle, kernels.h), so the nop kernel measures 2^N TSC ticks per iteration in
// the min, the median and the max; with the host's clock behind the TSC it never does.
i32 measure_icount_shift(Platform& p) {
    MeasurePlatform* mp = p.measure();
    if (!mp) return -1;
    MeasureConfig cfg;
    cfg.benches.emplace().kernel = &kernel_info(KernelId::nop);
    cfg.cpus.push(p.hw().current_cpu());
    cfg.unroll = 100;
    cfg.reps = 5;
    cfg.warmup = 1;
    Vec<StrView> specs;
    specs.push(StrView("tsc"));
    Vec<ReadGroup> groups;
    if (!plan_event_groups(specs, &groups).ok()) return -1;
    IcountCapture cap;
    if (measure_run(p.hw(), *mp, cfg, groups, cap) != Errc::ok || cap.results != 1) return -1;
    const Frac& m = cap.per_iter[unsigned(Agg::median)];
    for (unsigned a = 0; a < kAggCount; ++a)
        if (frac_cmp(cap.per_iter[a], m) != 0) return -1;
    for (i32 s = 0; s <= 10; ++s)
        if (frac_cmp(m, Frac{i64(1) << s, 1}) == 0) return s;
    return -1;
}

// Measured once per boot (the first meta record under TCG).
struct IcountProbe {
    bool done;
    i32 shift;
};
IcountProbe g_icount = {false, -1};

}  // namespace

Provenance provenance(Platform& p) {
    Provenance pr;
    if (p.simulated()) {
        pr.source = "simulated";
        return pr;
    }
    Hw& hw = p.hw();
    // CPUID.01H:ECX[31]: a hypervisor is present; its name from leaf 4000_0000H.
    if (!((hw.cpuid(1, 0).ecx >> 31) & 1)) return pr;
    pr.source = "virtual_machine";
    hypervisor_signature(hw.cpuid(0x40000000u, 0), pr.hypervisor_vendor);
    pr.tcg = str_eq(pr.hypervisor_vendor, kTcgSignature);
    if (pr.tcg && !g_icount.done && p.measure()) g_icount = {true, measure_icount_shift(p)};
    if (pr.tcg) pr.icount_shift = g_icount.shift;
    return pr;
}

void provenance_json(JsonWriter& w, const Provenance& pr) {
    w.field("source", pr.source).field_b("tcg", pr.tcg);
    if (pr.icount_shift >= 0) w.field_u("icount_shift", u64(pr.icount_shift));
    else w.key("icount_shift").null();
}

void put_provenance(StrBuf& b, const Provenance& pr, const char* simulated_machine) {
    if (str_eq(pr.source, "simulated")) {
        b.printf("simulated: %s (the simulator's model, not hardware)", simulated_machine ? simulated_machine : "");
        return;
    }
    if (str_eq(pr.source, "hardware")) {
        b.put("hardware (no hypervisor: CPUID.01H:ECX[31] = 0)");
        return;
    }
    b.printf("virtual machine (%s", pr.hypervisor_vendor[0] ? pr.hypervisor_vendor : "unknown hypervisor");
    if (pr.tcg) {
        if (pr.icount_shift >= 0) b.printf(", QEMU TCG, -icount %d", pr.icount_shift);
        else b.put(", QEMU TCG without -icount");
    }
    b.put(')');
}

}  // namespace pmulab
