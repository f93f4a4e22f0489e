#include "sim_host.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "sim/sim_netburst.h"
#include "sim/sim_topdown.h"

namespace pmulab {

namespace {

using sim::SimMachine;

// Skylake client (06_5EH): perfmon v4, 4 GP counters x 48 bits per thread (HT on), 3 fixed
// x 48, IA32_PERF_CAPABILITIES 33C5H (full-width writes, PEBS format 3, LBR format 5).
SimMachine skylake() {
    sim::IntelCpuidSpec s;
    s.signature = 0x000506E3;
    s.brand = "pmulab simulated Intel Core (Skylake-like)";
    s.leaf_0a = {0x07300404, 0x00000000, 0x00000000, 0x00000603};
    return sim::intel_machine(s, {1, 2, 2}, 0x33c5);
}

struct ModelDef {
    SimModel info;
    SimMachine (*make)();
};

const ModelDef kModels[] = {
    {{"skylake", "Intel Skylake-like: perfmon v4, 4 GP + 3 fixed x 48, 2 cores x 2 threads"}, skylake},
    {{"intel_v1", "Intel v1 (Core Duo-like): 2 GP x 40, no fixed counters"}, [] { return sim::intel_v1(); }},
    {{"intel_v2", "Intel v2 (Core 2-like): 2 GP + 3 fixed x 40"}, [] { return sim::intel_v2(); }},
    {{"intel_v2_conroe", "Intel v2 with the Conroe erratum (CPUID.0AH:EDX = 0, 3 fixed counters)"},
     [] { return sim::intel_v2_conroe(); }},
    {{"intel_v3", "Intel v3 (Nehalem-like): 4 GP + 3 fixed x 48, 2 threads per core"}, [] { return sim::intel_v3(); }},
    {{"intel_v4", "Intel v4 (Goldmont Plus-like): 4 GP + 3 fixed x 48, full-width writes"},
     [] { return sim::intel_v4_goldmont_plus(); }},
    {{"intel_v5", "Intel v5: 4 GP x 48, fixed counters 0 and 3 from CPUID.0AH:ECX"}, [] { return sim::intel_v5(); }},
    {{"intel_v6", "Intel v6 with leaf 23H: 10 GP, fixed 0-2,4-6, UMASK2 and EQ"}, [] { return sim::intel_v6(); }},
    {{"hybrid", "Intel hybrid (Alder Lake-like): 2 P cores x 2 threads (8 GP) + 4 E cores (6 GP)"},
     [] { return sim::intel_hybrid(); }},
    {{"icelake",
      "Intel Ice Lake client (06_7EH): perfmon v5, 8 GP + 4 fixed, PERF_METRICS level 1, TSC 1497.6 MHz (CPUID.15H)"},
     [] {
         return sim::with_tsc_leaf15(sim::intel_icelake(), {2, 156, 19200000, 0});
     }},
    {{"sapphire_rapids", "Intel Sapphire Rapids (06_8FH): PERF_METRICS levels 1 and 2"},
     [] { return sim::intel_sapphire_rapids(); }},
    {{"alder_lake", "hybrid with PERF_METRICS on the P cores (Gracemont E cores)"},
     [] { return sim::intel_alder_lake(); }},
    {{"qemu_tcg", "QEMU TCG, qemu64 model: no PMU, RDPMC #UD, unknown MSRs read 0"}, [] { return sim::qemu_tcg(); }},
    {{"qemu_tcg_intel", "QEMU TCG, Skylake-Client model: CPUID.0AH = 0"}, [] { return sim::qemu_tcg_intel(); }},
    {{"zen1", "AMD Zen 1 (17h/01h): PerfCtrExtCore, IRPerfCount erratum 1054"}, [] { return sim::amd_zen1(); }},
    {{"zen3", "AMD Zen 3 (19h/21h): PerfCtrExtCore, 6 counters, no PerfMonV2"}, [] { return sim::amd_zen3(); }},
    {{"zen4", "AMD Zen 4 (19h/61h): PerfMonV2, 6 core counters"}, [] { return sim::amd_zen4(); }},
    {{"k10", "AMD family 10h: 4 legacy counters"}, [] { return sim::amd_k10(); }},
    {{"prescott", "Intel Pentium 4 Prescott (NetBurst ESCR/CCCR), 1 CPU"}, [] { return sim::netburst_p4(1); }},
    {{"prescott_ht", "Prescott with Hyper-Threading: 2 threads sharing one ESCR/CCCR file"},
     [] { return sim::netburst_p4(2, true); }},
};

Status bad(const char* fmt, const char* arg) { return Error::make(Errc::invalid_argument, fmt, arg); }

// "0,2,4-7" -> indices (each < n, in the given order, no repeats).
Status parse_list(const std::string& s, u32 n, std::vector<u32>* out) {
    out->clear();
    const char* p = s.c_str();
    if (!*p) return bad("--cpus: empty list%s", "");
    while (*p) {
        char* end = nullptr;
        errno = 0;
        unsigned long lo = std::strtoul(p, &end, 10);
        if (end == p || errno) return bad("--cpus: '%s' is not a list of CPU numbers (e.g. 0,2,4-7)", s.c_str());
        unsigned long hi = lo;
        p = end;
        if (*p == '-') {
            ++p;
            hi = std::strtoul(p, &end, 10);
            if (end == p || hi < lo) return bad("--cpus: bad range in '%s' (e.g. 4-7)", s.c_str());
            p = end;
        }
        if (*p == ',') ++p;
        else if (*p) return bad("--cpus: '%s' is not a list of CPU numbers (e.g. 0,2,4-7)", s.c_str());
        for (unsigned long i = lo; i <= hi; ++i) {
            if (i >= n) {
                Error e = Error::make(Errc::invalid_argument, "--cpus: there is no CPU %lu (the machine has %u: 0-%u)",
                                      i, n, n - 1);
                return e;
            }
            for (u32 x : *out)
                if (x == i) return Error::make(Errc::invalid_argument, "--cpus: CPU %lu is listed twice", i);
            out->push_back(u32(i));
        }
    }
    return ok_status();
}

bool is_netburst(const CpuidSnapshot& s) {
    CpuidRegs v = s.get(0), l1 = s.get(1);
    bool intel = v.ebx == 0x756e6547 && v.edx == 0x49656e69 && v.ecx == 0x6c65746e;  // "GenuineIntel"
    return intel && ((l1.eax >> 8) & 0xF) == 0xF;
}

Status read_file(const std::string& path, std::string* text) {
    std::FILE* f = std::fopen(path.c_str(), "rb");
    if (!f) return Error::make(Errc::io, "cannot open '%s': %s", path.c_str(), std::strerror(errno));
    char buf[65536];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) {
        text->append(buf, n);
        if (text->size() > (size_t(256) << 20)) {
            std::fclose(f);
            return Error::make(Errc::invalid_argument, "%s: larger than 256 MiB; not a CPUID dump", path.c_str());
        }
    }
    bool err = std::ferror(f);
    std::fclose(f);
    if (err) return Error::make(Errc::io, "cannot read '%s': %s", path.c_str(), std::strerror(errno));
    return ok_status();
}

}  // namespace

const std::vector<SimModel>& sim_models() {
    static const std::vector<SimModel> v = [] {
        std::vector<SimModel> r;
        for (const ModelDef& d : kModels) r.push_back(d.info);
        return r;
    }();
    return v;
}

Status build_sim_machine(const SimMachineOptions& o, std::unique_ptr<SimMachine>* out, std::string* what) {
    if (o.dump.empty() == o.model.empty()) return bad("give either --dump FILE or --model NAME%s", "");
    std::unique_ptr<SimMachine> base;
    if (!o.model.empty()) {
        for (const ModelDef& d : kModels)
            if (o.model == d.info.name) base = std::make_unique<SimMachine>(d.make());
        if (!base) return bad("unknown model '%s' (see pmulab-sim --list-models)", o.model.c_str());
        *what = "model " + o.model;
    } else {
        std::string text;
        PMULAB_TRY(read_file(o.dump, &text));
        Vec<CpuRecord> recs;
        PMULAB_TRY(parse_cpuid_dump(StrView(text.data(), text.size()), o.dump.c_str(), o.format, &recs));
        if (recs.empty()) return bad("%s: no CPU in the dump", o.dump.c_str());
        base = std::make_unique<SimMachine>(SimMachine::from_records(recs, o.perf_caps));
        *what = "dump " + o.dump;
    }
    // The CPUs to keep, and NetBurst register files (one per package, shared by its threads).
    std::vector<u32> keep;
    if (!o.cpus.empty()) PMULAB_TRY(parse_list(o.cpus, base->size(), &keep));
    else
        for (u32 i = 0; i < base->size(); ++i) keep.push_back(i);
    {
        std::vector<sim::CpuSpec> specs;
        std::vector<std::pair<u32, std::shared_ptr<sim::NetBurstModel>>> packages;
        for (u32 k = 0; k < keep.size(); ++k) {
            const sim::SimCpu& c = base->cpu(keep[k]);
            sim::CpuSpec s = c.spec();
            s.topo.bsp = k == 0;
            if (!o.dump.empty()) {
                // Core 2 (perfmon v2) on bare metal has three fixed counters even where
                // CPUID.0AH:EDX reports none (the Conroe erratum; Linux assumes 3 too).
                CpuidRegs a = s.cpuid.get(0xA), l1 = s.cpuid.get(1);
                bool hv = (l1.ecx >> 31) & 1;
                if ((a.eax & 0xFF) == 2 && (a.edx & 0x1F) < 3 && !hv) {
                    s.pmu.fixed_count = 3;
                    s.pmu.fixed_width = int((a.eax >> 16) & 0xFF);
                }
            }
            if (!o.dump.empty() && is_netburst(s.cpuid)) {
                std::shared_ptr<sim::NetBurstModel> pkg;
                for (auto& [p, m] : packages)
                    if (p == s.topo.package) pkg = m;
                if (!pkg) {
                    pkg = std::make_shared<sim::NetBurstModel>(s.cpuid);
                    packages.push_back({s.topo.package, pkg});
                }
                s.netburst = pkg;
                s.netburst_thread = pkg->ht() ? (s.topo.thread & 1) : 0;
            }
            specs.push_back(s);
        }
        bool had_misc = base->cpu(keep[0]).msr_exists(sim::reg::MISC_ENABLE);
        u64 misc = had_misc ? base->cpu(keep[0]).peek(sim::reg::MISC_ENABLE) : 0;
        base = std::make_unique<SimMachine>(specs);
        // NetBurst: performance monitoring available (IA32_MISC_ENABLE[7]), as the
        // Prescott dump records it, unless --misc-enable says otherwise.
        for (u32 i = 0; i < base->size(); ++i) {
            sim::SimCpu& c = base->cpu(i);
            if (!c.msr_exists(sim::reg::MISC_ENABLE)) continue;
            if (c.netburst()) c.poke(sim::reg::MISC_ENABLE, o.model.empty() ? sim::kPrescottMiscEnable : misc);
        }
        if (!o.cpus.empty()) *what += ", CPUs " + o.cpus;
    }
    for (u32 i = 0; i < base->size(); ++i) {
        sim::SimCpu& c = base->cpu(i);
        if (o.have_perf_caps) c.set_perf_capabilities(o.perf_caps);
        if (o.have_misc_enable && c.msr_exists(sim::reg::MISC_ENABLE)) c.poke(sim::reg::MISC_ENABLE, o.misc_enable);
        // Time passes between two RDTSCs outside measured code too (the selftest's timing checks).
        c.set_rdtsc_step(3);
    }
    // TopDown: the documented default slot budget (sim_topdown.h, docs/metrics.md).
    sim::apply_default_topdown(*base);
    *out = std::move(base);
    return ok_status();
}

SimHostPlatform::SimHostPlatform(SimMachine& m, std::string what, bool capture)
    : m_(m), what_(std::move(what)), capture_(capture), exec_(m) {}

void SimHostPlatform::write(StrView text) {
    if (capture_) out.append(text.ptr, text.len);
    else std::fwrite(text.ptr, 1, text.len, stdout);
}

void SimHostPlatform::write_diag(StrView text) {
    if (capture_) {
        out.append(text.ptr, text.len);
        return;
    }
    std::fflush(stdout);
    std::fwrite(text.ptr, 1, text.len, stderr);
}

}  // namespace pmulab
