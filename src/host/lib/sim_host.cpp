#include "sim_host.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "sim/sim_topdown.h"

namespace pmulab {

namespace {

using sim::SimMachine;

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

// The machine of a dump (every CPU of it; the dump's corrections come with keep_cpus).
Status dump_machine(const SimMachineOptions& o, std::unique_ptr<SimMachine>* out) {
    std::string text;
    PMULAB_TRY(read_file(o.dump, &text));
    Vec<CpuRecord> recs;
    PMULAB_TRY(parse_cpuid_dump(StrView(text.data(), text.size()), o.dump.c_str(), o.format, &recs));
    if (recs.empty()) return bad("%s: no CPU in the dump", o.dump.c_str());
    *out = std::make_unique<SimMachine>(SimMachine::from_records(recs, o.perf_caps));
    return ok_status();
}

}  // namespace

Status build_sim_machine(const SimMachineOptions& o, std::unique_ptr<SimMachine>* out, std::string* what) {
    if (o.dump.empty() == o.model.empty()) return bad("give either --dump FILE or --model NAME%s", "");
    std::unique_ptr<SimMachine> base;
    if (!o.model.empty()) {
        const sim::NamedModel* named = sim::find_named_model(o.model);
        if (!named) return bad("unknown model '%s' (see pmulab-sim --list-models)", o.model.c_str());
        base = std::make_unique<SimMachine>(named->make());
        *what = "model " + o.model;
    } else {
        PMULAB_TRY(dump_machine(o, &base));
        *what = "dump " + o.dump;
    }
    std::vector<u32> keep;
    if (!o.cpus.empty()) PMULAB_TRY(parse_list(o.cpus, base->size(), &keep));
    else
        for (u32 i = 0; i < base->size(); ++i) keep.push_back(i);
    base = std::make_unique<SimMachine>(sim::keep_cpus(*base, keep, !o.dump.empty()));
    if (!o.cpus.empty()) *what += ", CPUs " + o.cpus;
    for (u32 i = 0; i < base->size(); ++i) {
        sim::SimCpu& c = base->cpu(i);
        if (o.have_perf_caps) c.set_perf_capabilities(o.perf_caps);
        if (o.have_misc_enable && c.msr_exists(sim::reg::MISC_ENABLE)) c.poke(sim::reg::MISC_ENABLE, o.misc_enable);
        // Time passes between two RDTSCs outside measured code too (the selftest's timing checks).
        c.set_rdtsc_step(3);
        c.seed_ibs(o.seed ^ (u64(i) << 32));  // IBS's randomisation (sim_ibs.h): one stream per CPU
    }
    // TopDown: the documented default slot budget (sim_topdown.h, docs/metrics.md).
    sim::apply_default_topdown(*base);
    if (o.sibling_busy) base->set_siblings_busy(true);
    *out = std::move(base);
    return ok_status();
}

SimHostPlatform::SimHostPlatform(SimMachine& m, std::string what, bool capture)
    : m_(m), what_(std::move(what)), capture_(capture), exec_(m) {}

void SimHostPlatform::write(StrView text) {
    if (capture_) out.append(text.ptr, text.len);
    else std::fwrite(text.ptr, 1, text.len, link_ ? stderr : stdout);
}

Result<ServeLink*> SimHostPlatform::open_serve_link(int port) {
    if (port >= 0)
        return Error::make(Errc::invalid_argument,
                           "serve: pmulab-sim serves on its stdin/stdout; --serial %d does not apply", port);
    if (capture_) return Platform::open_serve_link(port);
    std::fflush(stdout);
    link_ = std::make_unique<StdioServeLink>(0, 1);
    return static_cast<ServeLink*>(link_.get());
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
