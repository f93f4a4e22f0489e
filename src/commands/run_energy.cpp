// `pmulab run --events energy-pkg,...`: joules per iteration from the RAPL energy counters
// (x86/rapl.h; docs/measure.md "Energy (RAPL)").
//
// The counters count the whole package (AMD's energy-core: one core), update about once
// per millisecond and wrap at 32 bits. So:
//  * one CPU per package measures (the first selected CPU of each); the others are named;
//  * before anything runs, every requested domain is checked on that CPU: the model must
//    have it (Linux's table), MSR_RAPL_POWER_UNIT must read non-zero (QEMU TCG reads 0)
//    and the package counter must move: the TSC ticks between two of its updates are the
//    update interval;
//  * the measurement is the engine's U/2U difference with the energy counters read by
//    RDMSR (32 bits wide: one wrap per run is taken modulo 2^32) and the TSC in one group;
//    its loop count is chosen (unless --loop is given) so that the long - short
//    difference spans at least kMinUpdates updates and kMinUnits units of every counter.
//    Each run's reading lags the energy by less than one update's energy and one unit at
//    either end, so a difference of two runs is within 2 updates' energy and 2 units:
//    2 % + 2 % of the value. A result spanning fewer is reported too short, with no value.
#include "commands/measure_cmd.h"

namespace pmulab {

namespace {

constexpr u64 kMinUpdates = 100;
constexpr u64 kMinUnits = 100;            // and at least this many units of the counter
constexpr u64 kMaxUpdates = 2000;         // the automatic loop stops growing here (about 2 s per run)
constexpr u64 kPollStep = u64(1) << 14;   // TSC ticks between two reads while waiting for an update
constexpr u32 kPollReads = u32(1) << 14;  // reads before the counter is declared stuck
constexpr unsigned kCalibrationRounds = 5;
const char* const kDomainKeys[kRaplDomains] = {"pkg", "cores", "gpu", "dram", "psys"};
const char* const kCounterLabels[kRaplDomains] = {"RAPL_PKG", "RAPL_PP0", "RAPL_PP1", "RAPL_DRAM", "RAPL_PSYS"};

void put_cpu(StrBuf& b, u32 cpu, const CpuIdentity& id) {
    b.printf("CPU %u (%s, ", cpu, id.brand[0] ? id.brand : id.vendor_string);
    put_signature(b, id);
    b.put(')');
}

void put_domains(StrBuf& b, const RaplSupport& s) {
    bool first = true;
    for (unsigned d = 0; d < kRaplDomains; ++d) {
        if (!s.has(RaplDomain(d))) continue;
        b.printf("%s%s", first ? "" : ", ", rapl_event_name(RaplDomain(d), s.amd));
        first = false;
    }
}

// What the measuring CPU reads before anything runs (no allocation there).
struct OnCpu {
    Hw* hw = nullptr;
    u32 unit_msr = 0, poll_msr = 0;
    u32 msrs[kRaplDomains] = {};
    unsigned n = 0;
    bool unit_faulted = false, stuck = false;
    int faulted = -1;  // index into msrs
    u64 unit = 0, interval = 0;
};

// Waits for the next update of the counter at `msr`; *at: the TSC then. False when it
// faults or does not move in kPollReads reads kPollStep ticks apart.
bool wait_update(Hw& hw, u32 msr, u64* at) {
    Result<u64> v0 = hw.rdmsr(msr);
    if (!v0.ok()) return false;
    const u64 was = regs::rapl::EnergyStatus(v0.value()).energy();
    for (u32 i = 0; i < kPollReads; ++i) {
        // At most kPollStep RDTSCs (each takes a tick or more); a TSC that stands still
        // (a test's machine) cannot time an update.
        const u64 t0 = hw.rdtsc();
        for (u64 k = 0; k < kPollStep && hw.rdtsc() - t0 < kPollStep; ++k) {
        }
        if (hw.rdtsc() == t0) return false;
        Result<u64> v = hw.rdmsr(msr);
        if (!v.ok()) return false;
        if (regs::rapl::EnergyStatus(v.value()).energy() != was) {
            *at = hw.rdtsc();
            return true;
        }
    }
    return false;
}

void probe_on_cpu(OnCpu* c) {
    Hw& hw = *c->hw;
    Result<u64> u = hw.rdmsr(c->unit_msr);
    if (!u.ok()) {
        c->unit_faulted = true;
        return;
    }
    c->unit = u.value();
    if (!c->unit) return;
    for (unsigned i = 0; i < c->n; ++i) {
        if (!hw.rdmsr(c->msrs[i]).ok()) {
            c->faulted = int(i);
            return;
        }
    }
    u64 t1 = 0, t2 = 0;
    c->stuck = !wait_update(hw, c->poll_msr, &t1) || !wait_update(hw, c->poll_msr, &t2);
    c->interval = t2 - t1;
}

// The checks of one package's measuring CPU (see the top of the file).
Status check_package(Hw& hw, const RunOptions& o, const CpuIdentity& id, EnergyPackage* pk) {
    const RaplSupport& s = pk->support;
    StrBuf cpu;
    put_cpu(cpu, pk->cpu, id);
    for (RaplDomain d : o.energy) {
        if (s.has(d)) continue;
        StrBuf have;
        put_domains(have, s);
        return Error::make(Errc::unsupported, "%s: %s has no %s energy domain (Linux's %s: %s)",
                           rapl_event_name(d, s.amd), cpu.c_str(), kDomainKeys[unsigned(d)], s.table, have.c_str());
    }
    OnCpu c;
    c.hw = &hw;
    c.unit_msr = rapl_unit_msr(s.amd);
    c.poll_msr = rapl_status_msr(RaplDomain::pkg, s.amd);
    for (RaplDomain d : o.energy) c.msrs[c.n++] = rapl_status_msr(d, s.amd);
    PMULAB_TRY(run_on(hw, pk->cpu, [&] { probe_on_cpu(&c); }));
    const char* first = rapl_event_name(o.energy[0], s.amd);
    const char* vm = id.hypervisor ? "; this is a virtual machine, and hypervisors rarely pass RAPL through" : "";
    if (c.unit_faulted || !c.unit)
        return Error::make(Errc::unsupported, "%s: RAPL is unavailable on %s: RDMSR %XH (the energy unit) %s%s", first,
                           cpu.c_str(), c.unit_msr,
                           c.unit_faulted ? "faulted" : "reads 0 (QEMU TCG reads unknown MSRs as 0)", vm);
    if (c.faulted >= 0)
        return Error::make(Errc::unsupported, "%s: RDMSR %XH faulted on %s: the domain is absent there%s",
                           rapl_event_name(o.energy[usize(c.faulted)], s.amd), c.msrs[c.faulted], cpu.c_str(), vm);
    if (c.stuck)
        return Error::make(
            Errc::unsupported,
            "%s: RAPL is unavailable on %s: the package energy counter (MSR %XH) did not move in %u reads "
            "%llu TSC ticks apart%s",
            first, cpu.c_str(), c.poll_msr, kPollReads, (unsigned long long)kPollStep, vm);
    for (unsigned d = 0; d < kRaplDomains; ++d)
        pk->esu[d] = rapl_domain_esu(s, RaplDomain(d), regs::rapl::PowerUnit(c.unit));
    pk->interval_ticks = c.interval ? c.interval : 1;
    return ok_status();
}

}  // namespace

Status energy_split(RunOptions* o) {
    Vec<StrView> rest;
    for (StrView e : o->events) {
        RaplDomain d;
        if (!parse_energy_event(e, &d)) {
            rest.push(e);
            continue;
        }
        for (RaplDomain have : o->energy)
            if (have == d)
                return Error::make(Errc::invalid_argument, "--events: the energy domain of '%.*s' is listed twice",
                                   int(e.len), e.ptr);
        o->energy.push(d);
    }
    if (o->energy.empty()) return ok_status();
    o->events.clear();
    for (StrView e : rest) {
        if (o->events_rest.size()) o->events_rest.put(';');
        o->events_rest.put(e);
    }
    for (StrView e : rest) o->events.push(e);
    o->events_arg = o->events_rest.size() ? o->events_rest.c_str() : nullptr;
    return ok_status();
}

Status energy_prepare(Out& out, const RunOptions& o, EnergyRun* run) {
    if (o.cycle_by_cycle || !o.samples.empty())
        return Error::make(Errc::invalid_argument, "--events %s: energy counters cannot be %s",
                           rapl_event_name(o.energy[0], false),
                           o.cycle_by_cycle ? "measured cycle by cycle" : "sampled");
    Hw& hw = out.platform().hw();
    Vec<u32> cpus;
    PMULAB_TRY(expand_cpu_selection(hw, o.cpu, &cpus));
    Vec<u32> firsts;
    for (u32 cpu : cpus) {
        Result<CpuTopology> t = hw.topology(cpu);
        if (!t.ok()) return t.error().with_context("CPU %u", cpu);
        EnergyPackage* pk = nullptr;
        for (EnergyPackage& p : run->packages)
            if (p.package == t.value().package) pk = &p;
        if (pk) {
            pk->others.push(cpu);
            continue;
        }
        pk = &run->packages.emplace();
        pk->cpu = cpu;
        pk->package = t.value().package;
        pk->apic_id = t.value().apic_id;
        firsts.push(cpu);
    }
    Vec<ProbedCpu> probed;
    probe_cpus(hw, firsts, &probed);
    for (usize i = 0; i < probed.size(); ++i) {
        if (!probed[i].status.ok()) return probed[i].status.error().with_context("CPU %u", firsts[i]);
        const CpuidSnapshot& snap = probed[i].probe.cpuid;
        const CpuIdentity id = decode_cpuid(snap).id;
        EnergyPackage& pk = run->packages[i];
        pk.support = rapl_support(id, snap.get(0x80000007).edx);
        if (!pk.support.present) {
            StrBuf cpu;
            put_cpu(cpu, pk.cpu, id);
            return Error::make(Errc::unsupported, "%s: %s has no RAPL energy counters: %s",
                               rapl_event_name(o.energy[0], false), cpu.c_str(), pk.support.why);
        }
        PMULAB_TRY(check_package(hw, o, id, &pk));
    }
    return ok_status();
}

namespace {

// The reads of one package: the TSC first, then each requested domain's counter.
struct EnergyGroup {
    Vec<ReadGroup> groups;
    EnergyReadInfo info[kRaplDomains];
};

void build_group(const RunOptions& o, const EnergyPackage& pk, EnergyGroup* g) {
    ReadGroup& rg = g->groups.emplace();
    CounterRead& tsc = rg.reads.emplace();
    tsc.kind = CounterAccess::rdtsc;
    str_copy(tsc.event, sizeof tsc.event, "tsc");
    str_copy(tsc.counter, sizeof tsc.counter, "TSC");
    for (usize i = 0; i < o.energy.size(); ++i) {
        const RaplDomain d = o.energy[i];
        const bool amd = pk.support.amd;
        EnergyReadInfo& e = g->info[i];
        e.esu = pk.esu[unsigned(d)];
        e.min_updates = kMinUpdates;
        e.min_units = kMinUnits;
        e.interval_ticks = pk.interval_ticks;
        e.package = pk.package;
        e.msr = rapl_status_msr(d, amd);
        e.domain = kDomainKeys[unsigned(d)];
        e.scope = amd && d == RaplDomain::cores ? "core" : "package";
        e.msr_name = rapl_msr_name(d, amd);
        e.loop_rule = o.loop_given ? "given" : "auto";
        CounterRead& r = rg.reads.emplace();
        r.kind = CounterAccess::rdmsr;
        r.index = e.msr;
        r.width = regs::rapl::kEnergyWidth;
        str_copy(r.event, sizeof r.event, rapl_event_name(d, amd));
        str_copy(r.counter, sizeof r.counter,
                 amd && d == RaplDomain::cores ? "RAPL_CORE" : kCounterLabels[unsigned(d)]);
        r.energy = &e;
    }
}

// The long - short difference of the medians: TSC ticks, or a counter's units.
u64 median_difference(const MeasureResult& r) {
    const Frac l = r.long_sum.median, s = r.short_sum.median;
    const i64 d = (l.den ? l.num / i64(l.den) : 0) - (s.den ? s.num / i64(s.den) : 0);
    return d > 0 ? u64(d) : 0;
}

// The calibration runs' sink: the TSC difference, or the first failure.
class TicksSink final : public MeasureSink {
public:
    void result(const MeasureConfig&, const MeasureResult& r) override {
        const u64 d = median_difference(r);
        if (!r.read->energy) ticks = d, have = true;
        else if (d < units) units = d;
    }
    void failure(const Error& e) override {
        if (ok) err = e, ok = false;
    }
    void skipped(const Error& e) override { failure(e); }
    u64 ticks = 0, units = ~u64(0);  // the TSC's, the smallest energy counter's
    bool have = false, ok = true;
    Error err;
};

// How much longer a run must be to span `needed` from `got` (a quarter more for margin).
u64 growth(u64 needed, u64 got) {
    if (got >= needed) return 1;
    const u64 t = got ? got : 1;
    return needed / t + (needed / t) / 4 + 1;
}

// The loop count (see the top of the file): scaled by what is missing until a run of one
// repetition spans `needed` ticks and kMinUnits units of every counter, at least doubled
// each round; not beyond kMaxUpdates updates (a domain that barely moves: too short).
Status choose_loop(Hw& hw, MeasurePlatform& mp, RunOptions& o, const Vec<ReadGroup>& groups, u64 needed, u64 interval) {
    const u32 reps = o.cfg.reps, warmup = o.cfg.warmup;
    o.cfg.reps = 1;
    o.cfg.warmup = 1;
    Status st = ok_status();
    for (unsigned round = 0; round < kCalibrationRounds; ++round) {
        TicksSink sink;
        measure_run(hw, mp, o.cfg, groups, sink);
        if (!sink.ok || !sink.have) {
            st = sink.ok ? Error::make(Errc::internal, "energy: the calibration run gave no TSC difference") : sink.err;
            break;
        }
        u64 factor = growth(needed, sink.ticks);
        const u64 by_units = growth(kMinUnits, sink.units);
        const u64 room = growth(kMaxUpdates * interval, sink.ticks);
        if (by_units > factor) factor = by_units < room ? by_units : room;
        if (factor <= 1 || o.cfg.loop >= kLoopMax) break;
        if (factor < 2) factor = 2;
        o.cfg.loop = o.cfg.loop > kLoopMax / factor ? kLoopMax : o.cfg.loop * factor;
    }
    o.cfg.reps = reps;
    o.cfg.warmup = warmup;
    return st;
}

// The measured runs' sink: each energy read's result in joules, or too short.
class EnergySink final : public MeasureSink {
public:
    EnergySink(Out& out, const RunOptions& o) : out_(out), o_(o) {}
    void result(const MeasureConfig&, const MeasureResult& r) override {
        if (!r.read->energy) {
            ticks_ = median_difference(r);
            return;
        }
        EnergyReadInfo e = *r.read->energy;
        e.updates = ticks_ / (e.interval_ticks ? e.interval_ticks : 1);
        e.units = median_difference(r);
        e.too_short = e.updates < e.min_updates || e.units < e.min_units;
        CounterRead rd = *r.read;
        rd.energy = &e;
        MeasureResult shown = r;
        shown.read = &rd;
        emit_result(out_, o_, shown);
    }
    void failure(const Error& e) override { out_.error(e); }
    void skipped(const Error& e) override { out_.warn("%s (skipped)", e.msg); }

private:
    Out& out_;
    const RunOptions& o_;
    u64 ticks_ = 0;
};

Status measure_package(Out& out, RunOptions& o, MeasurePlatform& mp, const EnergyPackage& pk) {
    Hw& hw = out.platform().hw();
    EnergyGroup g;
    build_group(o, pk, &g);
    o.cfg.cpus.clear();
    o.cfg.cpus.push(pk.cpu);
    const u64 needed = kMinUpdates * pk.interval_ticks;
    if (!o.loop_given) PMULAB_TRY(choose_loop(hw, mp, o, g.groups, needed, pk.interval_ticks));
    StrBuf head;
    head.printf("pmulab run: energy of package %u measured on CPU %u", pk.package, pk.cpu);
    if (!pk.others.empty()) {
        head.put(" (energy is per package: it covers ");
        put_cpu_list(head, pk.others);
        head.put(" too, not measured separately)");
    }
    head.printf("; the counters update every %llu TSC ticks (measured); loop %llu ",
                (unsigned long long)pk.interval_ticks, (unsigned long long)o.cfg.loop);
    if (o.loop_given)
        head.printf("(--loop: a difference under %llu updates or %llu units of a counter is too short)\n",
                    (unsigned long long)kMinUpdates, (unsigned long long)kMinUnits);
    else
        head.printf(
            "(chosen: the long - short difference spans at least %llu updates and %llu units of each counter)\n",
            (unsigned long long)kMinUpdates, (unsigned long long)kMinUnits);
    result_table_fit(o, g.groups);
    result_table_header(o, &head);
    out.text_buf(head);
    EnergySink sink(out, o);
    out.fail(measure_run(hw, mp, o.cfg, g.groups, sink));
    out.simulated_mark();
    return ok_status();
}

}  // namespace

Status energy_measure(Out& out, RunOptions& o, EnergyRun& run) {
    MeasurePlatform* mp = out.platform().measure();
    if (!mp) return Error::make(Errc::unsupported, "run: this platform cannot execute generated code");
    Vec<BenchInstance> all;
    for (const BenchInstance& b : o.cfg.benches) all.push(b);
    const u64 loop = o.cfg.loop;
    Status st = ok_status();
    for (usize i = 0; i < all.size() && st.ok(); ++i) {
        for (usize k = 0; k < run.packages.size() && st.ok(); ++k) {
            o.cfg.benches.clear();
            o.cfg.benches.push(all[i]);
            o.cfg.loop = loop;
            st = measure_package(out, o, *mp, run.packages[k]);
        }
    }
    o.cfg.benches.clear();
    for (const BenchInstance& b : all) o.cfg.benches.push(b);
    o.cfg.loop = loop;
    return st;
}

}  // namespace pmulab
