// `pmulab selftest`: kvm-unit-tests-style checks of the measurement harness.
#include "commands/selftest.h"

namespace pmulab {

namespace {

struct SelftestArgs {
    CpuSelection sel;
};

// clang-format off
const OptionSpec kSelftestOptionTable[] = {
    {.name = "--cpu", .metavar = "N|all|bsp", .value = OptValue::cpu,
     .brief = "the CPUs of the per-CPU checks (default bsp)", .apply = apply_cpu_option<SelftestArgs>},
};
// clang-format on

}  // namespace

const CommandOptions kSelftestCommand = {
    .command = "selftest",
    .options = kSelftestOptionTable,
    .count = 1,
    .help = "usage: pmulab selftest [--cpu N|all|bsp]\n"
            "\n"
            "Checks the measurement harness and reports PASS, FAIL or SKIP per check:\n"
            "the TSC, the pointer-chase chain, PCI configuration reads (the host bridge at\n"
            "00:00.0), overhead cancellation (empty kernel = 0, U vs 2U\n"
            "linearity, --basic, --loop, --irq lvt), fault-safe RDPMC probing, every CPU, and the\n"
            "PMU checks. Intel architectural PMU: instructions retired on fixed counter 0 and\n"
            "GP C0H.00H within 1% of the kernel's count, core cycles fixed 1 vs GP 3CH.00H,\n"
            "reference cycles (fixed 2) vs the TSC over 10^6 iterations, wrap and overflow flags\n"
            "at the enumerated width, IA32_PERF_GLOBAL_CTRL gating, and every GP and fixed counter\n"
            "on its own. AMD: PMCx0C0 on every PERF_CTR, IRPerfCount vs PMCx0C0, 48-bit wrap (and\n"
            "PerfMonV2 GLOBAL_STATUS), EN / GLOBAL_CTL gating. NetBurst: instr_retired on an IQ\n"
            "counter, 40-bit wrap, CCCR.Enable gating; CCCR.OVF is NOT VERIFIED (generated code\n"
            "clears it). The interrupt checks (kvm-unit-tests x86/pmu.c): an overflow sets its\n"
            "GLOBAL_STATUS bit and delivers exactly one PMI (a GP and a fixed counter), freeze-on-PMI\n"
            "stops every counter, counters wrap at their enumerated width (legacy and full-width\n"
            "writes, counting past 2^width - 1). They SKIP, with the reason, where there is no PMU\n"
            "(e.g. QEMU without PMU passthrough) or the platform cannot take the PMI. nmi-path:\n"
            "another CPU sends NMIs while code runs with the PMU interrupt's handler attached; each\n"
            "must be seen and passed on, and registers, the LVT entry and the NMI routing come out\n"
            "intact (SKIP with one CPU).\n"
            "Per-CPU checks run on --cpu (default bsp).\n"
            "Exit status 0 when nothing FAILs, 1 otherwise. With --json: {\"type\":\"check\",...}\n"
            "records and one {\"type\":\"summary\",...}.\n",
};

namespace {

// Captures the per-iteration values of one measurement.
class Capture final : public MeasureSink {
public:
    void result(const MeasureConfig&, const MeasureResult& r) override {
        for (unsigned a = 0; a < kAggCount; ++a) per_iter[a] = r.per_iter[a];
        ++results;
    }
    void failure(const Error& e) override { err = e; }
    void skipped(const Error& e) override { err = e; }
    Frac per_iter[kAggCount];
    u32 results = 0;
    Error err;
};

struct MeasureArgs {
    KernelId kernel = KernelId::nop;
    u32 cpu = 0;
    u64 unroll = 100;
    u64 loop = 1;
    bool basic = false;
    IrqMode irq = IrqMode::cli;
    u64 size = 0;
};

// Median per iteration of one kernel on one CPU, counting the TSC.
Result<Frac> measure_tsc(Hw& hw, MeasurePlatform& mp, const MeasureArgs& a, Errc* code = nullptr) {
    MeasureConfig cfg;
    BenchInstance& b = cfg.benches.emplace();
    b.kernel = &kernel_info(a.kernel);
    b.size = a.size;
    cfg.cpus.push(a.cpu);
    cfg.unroll = a.unroll;
    cfg.loop = a.loop;
    cfg.basic = a.basic;
    cfg.irq = a.irq;
    Vec<StrView> specs;
    specs.push(StrView("tsc"));
    Vec<ReadGroup> groups;
    PMULAB_TRY(plan_event_groups(specs, &groups));
    Capture cap;
    Errc e = measure_run(hw, mp, cfg, groups, cap);
    if (code) *code = e;
    if (e != Errc::ok || cap.results != 1) {
        if (cap.err.msg[0]) return cap.err;
        return Error::make(Errc::internal, "no result");
    }
    return cap.per_iter[unsigned(Agg::median)];
}

}  // namespace

StrBuf fixed2(Frac f) {
    StrBuf b;
    put_frac(b, f, 2);
    return b;
}

// |a - b| <= 1/4 + max(|a|, |b|) / 10 ticks per iteration: exact agreement under
// QEMU -icount (a == b); on hardware the median noise over U = 1000 copies is a few
// hundredths of a tick, far inside it, while a nop costs a fraction of a tick, so
// the absolute part stays small.
bool agrees(Frac a, Frac b) {
    Result<Frac> d = frac_sub_div(a, b, 1);
    if (!d.ok()) return false;
    Frac ad = frac_abs(d.value());
    Frac big = frac_cmp(frac_abs(a), frac_abs(b)) >= 0 ? frac_abs(a) : frac_abs(b);
    // tolerance = 1/4 + big/10 = (5*big.den + 2*big.num) / (20*big.den)
    i64 tn, t2;
    u64 td;
    if (__builtin_mul_overflow(i64(big.den), i64(5), &tn) || __builtin_mul_overflow(big.num, i64(2), &t2) ||
        __builtin_add_overflow(tn, t2, &tn) || __builtin_mul_overflow(big.den, u64(20), &td))
        return false;
    return frac_cmp(ad, Frac{tn, td}) <= 0;
}

namespace {

void check_tsc(Checks& ck, Hw& hw, MeasurePlatform* mp, u32 cpu) {
    bool advanced = false, monotonic = true;
    u64 first = 0, last = 0;
    Status s = run_on_measuring(hw, mp, cpu, [&] {
        u64 t0 = hw.rdtsc();
        u64 prev = t0;
        for (u32 i = 0; i < 10000; ++i) {
            u64 t = hw.rdtsc();
            if (t < prev) monotonic = false;
            prev = t;
        }
        first = t0;
        last = prev;
        advanced = prev > t0;
    });
    if (!s.ok()) {
        ck.report(Verdict::fail, "TSC advances", cpu, s.error().msg);
        return;
    }
    ck.reportf(advanced ? Verdict::pass : Verdict::fail, "TSC advances", cpu, "%llu ticks over 10000 reads",
               (unsigned long long)(last - first));
    ck.report(monotonic ? Verdict::pass : Verdict::fail, "TSC is monotonic over 10000 reads", cpu,
              monotonic ? "" : "a read returned less than the one before");
}

void check_chase(Checks& ck) {
    static constexpr u64 sizes[] = {4096, 65536, 1 << 20};
    for (u64 size : sizes) {
        Vec<u8> a, b;
        a.resize(size);
        b.resize(size);
        u64 base = u64(reinterpret_cast<uintptr_t>(a.data()));
        build_pointer_chase(a.data(), size, base, kDefaultSeed);
        build_pointer_chase(b.data(), size, base, kDefaultSeed);
        u64 steps = walk_pointer_chase(a.data(), size, base);
        bool same = true;
        for (u64 i = 0; i < size; ++i) same &= a[i] == b[i];
        u64 nodes = size / kChaseNodeBytes;
        char name[80];
        format_to(name, sizeof name, "pointer chase is one cycle over all %llu nodes (%llu KiB)",
                  (unsigned long long)nodes, (unsigned long long)(size >> 10));
        if (steps == nodes && same) ck.report(Verdict::pass, name, -1, "deterministic for the seed");
        else
            ck.reportf(Verdict::fail, name, -1, "cycle length %llu, same chain for the same seed: %s",
                       (unsigned long long)steps, same ? "yes" : "no");
    }
}

// A variant's measurement of nop against U/2U's (`ref`); `unsupported` is the verdict
// when the variant cannot run here.
void report_agrees(Checks& ck, const char* name, u32 cpu, const Result<Frac>& r, Frac ref,
                   Verdict unsupported = Verdict::fail) {
    if (!r.ok()) ck.report(r.error().code == Errc::unsupported ? unsupported : Verdict::fail, name, cpu, r.error().msg);
    else
        ck.reportf(agrees(r.value(), ref) ? Verdict::pass : Verdict::fail, name, cpu, "%s vs %s",
                   fixed2(r.value()).c_str(), fixed2(ref).c_str());
}

// Basic mode, the loop and --irq lvt each measure nop like U/2U (`u1`, U = 1000) does.
void check_variants(Checks& ck, Hw& hw, MeasurePlatform& mp, MeasureArgs a, Frac u1) {
    a.unroll = 1000;
    a.basic = true;
    report_agrees(ck, "basic mode (0 and U copies) agrees with U/2U for nop", a.cpu, measure_tsc(hw, mp, a), u1);
    a.basic = false;
    a.unroll = 100;
    a.loop = 10;
    report_agrees(ck, "loop overhead cancels: nop with --loop 10 agrees with U/2U", a.cpu, measure_tsc(hw, mp, a), u1);
    a.loop = 1;
    a.unroll = 1000;
    a.irq = IrqMode::lvt;
    report_agrees(ck, "interrupts masked via the local APIC LVT (--irq lvt) agree with cli for nop", a.cpu,
                  measure_tsc(hw, mp, a), u1, Verdict::skip);
}

void check_measurements(Checks& ck, Hw& hw, MeasurePlatform& mp, u32 cpu) {
    MeasureArgs a;
    a.cpu = cpu;
    a.kernel = KernelId::empty;
    Result<Frac> e = measure_tsc(hw, mp, a);
    const char* n_empty = "empty kernel measures 0 per iteration";
    if (!e.ok()) ck.report(Verdict::fail, n_empty, cpu, e.error().msg);
    else {
        // Exactly 0 under QEMU -icount; within one tick per iteration on hardware.
        bool ok = frac_cmp(frac_abs(e.value()), Frac{1, 1}) < 0;
        ck.reportf(ok ? Verdict::pass : Verdict::fail, n_empty, cpu, "%s TSC ticks per iteration",
                   fixed2(e.value()).c_str());
    }

    a.kernel = KernelId::nop;
    a.unroll = 1000;
    Result<Frac> u1 = measure_tsc(hw, mp, a);
    a.unroll = 2000;
    Result<Frac> u2 = measure_tsc(hw, mp, a);
    const char* n_lin = "U vs 2U linearity for nop (U = 1000 and 2000)";
    if (!u1.ok() || !u2.ok()) ck.report(Verdict::fail, n_lin, cpu, (!u1.ok() ? u1 : u2).error().msg);
    else
        ck.reportf(agrees(u1.value(), u2.value()) ? Verdict::pass : Verdict::fail, n_lin, cpu,
                   "%s vs %s TSC ticks per iteration", fixed2(u1.value()).c_str(), fixed2(u2.value()).c_str());

    if (u1.ok()) check_variants(ck, hw, mp, a, u1.value());

    // RDPMC: either it works, or the probe catches the fault and the kernel is
    // reported unsupported (QEMU TCG raises #UD) - never a crash.
    a.kernel = KernelId::rdpmc;
    a.unroll = 100;
    Errc code = Errc::ok;
    Result<Frac> r = measure_tsc(hw, mp, a, &code);
    const char* n_pmc = "rdpmc kernel: RDPMC is probed before code generation";
    if (r.ok()) ck.reportf(Verdict::pass, n_pmc, cpu, "RDPMC works: %s TSC ticks per RDPMC", fixed2(r.value()).c_str());
    else if (code == Errc::unsupported)
        ck.reportf(Verdict::pass, n_pmc, cpu, "reported unsupported: %s", r.error().msg);
    else ck.report(Verdict::fail, n_pmc, cpu, r.error().msg);
}

void check_every_cpu(Checks& ck, Hw& hw, MeasurePlatform& mp) {
    u32 n = hw.cpu_count();
    u32 ok = 0, disabled = 0;
    char first_err[200] = {};
    for (u32 cpu = 0; cpu < n; ++cpu) {
        // A processor the firmware reports disabled (MP Services StatusFlag without
        // PROCESSOR_ENABLED_BIT) cannot run code: skipped and counted apart.
        Result<CpuTopology> t = hw.topology(cpu);
        if (t.ok() && !t.value().enabled) {
            ++disabled;
            continue;
        }
        MeasureArgs a;
        a.cpu = cpu;
        Result<Frac> r = measure_tsc(hw, mp, a);
        if (r.ok()) ++ok;
        else if (!first_err[0]) format_to(first_err, sizeof first_err, "CPU %u: %s", cpu, r.error().msg);
    }
    char skipped[64] = {};
    if (disabled) format_to(skipped, sizeof skipped, " (%u disabled by the firmware, skipped)", disabled);
    ck.reportf(ok == n - disabled ? Verdict::pass : Verdict::fail, "every CPU measures the nop kernel", -1,
               "%u of %u CPUs%s%s%s", ok, n - disabled, skipped, first_err[0] ? "; " : "", first_err);
}

// The PCI configuration seam (Hw::pci_read32; on EFI configuration mechanism #1, the
// ports the server CHA count is read through): the host bridge at 00:00.0, which every
// PC has, answers with a vendor ID (not all ones, not zero).
void check_pci(Checks& ck, Hw& hw) {
    const char* n = "pci: configuration space reads the host bridge at 00:00.0";
    Result<u32> id = hw.pci_read32(0, 0, 0, 0);
    if (!id.ok()) {
        ck.report(id.error().code == Errc::unsupported ? Verdict::skip : Verdict::fail, n, -1, id.error().msg);
        return;
    }
    const u32 vendor = id.value() & 0xFFFF, device = id.value() >> 16;
    const bool ok = vendor != 0xFFFF && vendor != 0;
    ck.reportf(ok ? Verdict::pass : Verdict::fail, n, -1, "vendor %04x device %04x%s", vendor, device,
               ok ? "" : ": nothing answered (the configuration access is broken)");
}

}  // namespace

Status cmd_selftest(Out& out, Args& args) {
    const SelftestArgs a = PMULAB_TRY(read_options_as<SelftestArgs>(kSelftestCommand, args));
    const CpuSelection& sel = a.sel;
    Platform& p = out.platform();
    Hw& hw = p.hw();
    Vec<u32> cpus;
    PMULAB_TRY(expand_cpu_selection(hw, sel, &cpus));
    MeasurePlatform* mp = p.measure();
    Checks ck(out);
    for (u32 cpu : cpus) check_tsc(ck, hw, mp, cpu);
    check_chase(ck);
    check_pci(ck, hw);
    if (!mp) {
        ck.report(Verdict::skip, "measurement checks", -1, "this platform cannot execute generated code");
    } else {
        for (u32 cpu : cpus) check_measurements(ck, hw, *mp, cpu);
        check_every_cpu(ck, hw, *mp);
    }
    check_pmu(ck, hw, mp, cpus);
    check_nmi_path(ck, hw, mp, cpus);
    check_lbr(ck, hw, mp, cpus);
    ck.finish();
    return ok_status();
}

}  // namespace pmulab
