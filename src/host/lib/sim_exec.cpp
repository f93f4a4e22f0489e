#include "sim_exec.h"

#include <cstdio>
#include <cstdlib>

#include "pmu/pmi.h"
#include "sim/sim_amd_l3.h"
#include "sim/sim_cache.h"
#include "sim/sim_regs.h"
#include "sim/sim_uncore.h"

namespace pmulab {

namespace {

// The memory hierarchy (sim_cache.h) as the executor sees it; an access that reaches the
// L3 is a lookup in its slice's C-Box (sim_uncore.h), where the machine has C-Boxes, or in
// the L3 PMU of an AMD model (sim_amd_l3.h), by this CPU's core and thread.
class CacheModel final : public SimDataCache {
public:
    CacheModel(const sim::CacheConfig& c, sim::SimUncore* uncore) : h_(c), uncore_(uncore) {}
    void set_amd_l3(sim::SimAmdL3* l3, u32 core, u32 thread) { l3_ = l3, core_ = core, thread_ = thread; }
    unsigned access(u64 addr, bool write) override {
        unsigned level = h_.access(addr, write);
        bool l3 = h_.memory_level() == 3 && level >= 2;
        if (uncore_ && l3) uncore_->llc_lookup(h_.slice_of(addr), level == 2, write);
        if (l3_ && l3) l3_->lookup(h_.slice_of(addr), core_, thread_, level == 2);
        return level;
    }
    void flush_line(u64 addr) override { h_.flush_line(addr); }
    void reset() override { h_.reset(); }
    unsigned levels() const override { return h_.memory_level(); }
    u32 line_bytes() const override { return h_.config().levels.empty() ? 64 : h_.config().levels[0].line; }

    sim::CacheHierarchy& hierarchy() { return h_; }

private:
    sim::CacheHierarchy h_;
    sim::SimUncore* uncore_;
    sim::SimAmdL3* l3_ = nullptr;
    u32 core_ = 0, thread_ = 0;
};

// CPU `cpu`'s hierarchy under `spec` ("" = its defaults); an AMD model's L3 is its L3 PMU's
// complex (sim_amd_l3.h).
Result<sim::CacheConfig> cache_config(const std::string& spec, const sim::SimCpu& cpu, const sim::SimAmdL3* l3) {
    sim::CacheConfig d = sim::default_cache_config(cpu.snapshot());
    if (l3) sim::amd_l3_defaults(&d, *l3);
    if (spec.empty()) return d;
    Result<sim::CacheConfig> c = sim::parse_cache_spec(spec, d);
    if (c.ok() && l3) PMULAB_TRY(sim::amd_l3_check(&c.value(), *l3));
    return c;
}

}  // namespace

SimExec::SimExec(sim::SimMachine& m) : m_(m), runner_(make_sim_runner()) {
    (void)set_cache("", 0);
    runner_->set_nmi_handler([this](sim::SimCpu& cpu, u64 rip) {
        auto it = pmi_.find(cpu.index());
        return it != pmi_.end() && it->second->on_nmi(rip);
    });
}

Result<u32> SimExec::lvt_perf() { return m_.cpu(m_.current_cpu()).lvt_perf(); }

Status SimExec::set_lvt_perf(u32 value) {
    m_.cpu(m_.current_cpu()).set_lvt_perf(value);
    return ok_status();
}

namespace {
Status no_ext_lvt(const sim::SimCpu& c, unsigned n) {
    if (n < c.ext_lvt_count()) return ok_status();
    if (!c.ext_lvt_count())
        return Error::make(Errc::unsupported,
                           "the local APIC has no extended register space (APIC version bit 31 is 0), so no extended "
                           "LVT entry");
    return Error::make(Errc::unsupported, "the local APIC has %u extended LVT entries; entry %u does not exist",
                       c.ext_lvt_count(), n);
}
}  // namespace

Result<u32> SimExec::lvt_ext(unsigned n) {
    const sim::SimCpu& c = m_.cpu(m_.current_cpu());
    PMULAB_TRY(no_ext_lvt(c, n));
    return c.lvt_ext(n);
}

Status SimExec::set_lvt_ext(unsigned n, u32 value) {
    sim::SimCpu& c = m_.cpu(m_.current_cpu());
    PMULAB_TRY(no_ext_lvt(c, n));
    c.set_lvt_ext(n, value);
    return ok_status();
}

// As on UEFI (EfiMeasure): pmi_attach saves the CPU's LVT entry, pmi_detach restores it.
Status SimExec::pmi_attach(PmiHandler* h) {
    const u32 cpu = m_.current_cpu();
    pmi_[cpu] = h;
    pmi_lvt_[cpu] = m_.cpu(cpu).lvt_perf();
    return ok_status();
}

void SimExec::pmi_detach() {
    const u32 cpu = m_.current_cpu();
    pmi_.erase(cpu);
    auto it = pmi_lvt_.find(cpu);
    if (it == pmi_lvt_.end()) return;
    m_.cpu(cpu).set_lvt_perf(it->second);
    pmi_lvt_.erase(it);
}

Status SimExec::set_cache(const std::string& spec, u64 seed) {
    sim::SimAmdL3* l3 = m_.amd_l3();
    for (u32 i = 0; i < m_.size(); ++i) {
        Result<sim::CacheConfig> c = cache_config(spec, m_.cpu(i), l3);
        if (!c.ok()) return c.error().with_context("CPU %u", unsigned(i));
    }
    sim::SimUncore* uncore = m_.uncore();
    // The C-Boxes follow the BSP's L3 slices (1 when --cache leaves none: nothing counts).
    Result<sim::CacheConfig> bsp = cache_config(spec, m_.cpu(m_.bsp()), l3);
    if (uncore && bsp.ok()) uncore->set_boxes(bsp.value().levels.size() == 3 ? bsp.value().levels[2].slices : 1);
    // A sliced L3 (a client part's) is shared by every CPU whose L3 is configured alike:
    // the first CPU's model made keeps it for the others (the runner makes them lazily).
    auto first = std::make_shared<std::vector<CacheModel*>>();
    runner_->set_data_cache([spec, seed, uncore, l3, first](const sim::SimCpu& cpu) -> std::unique_ptr<SimDataCache> {
        Result<sim::CacheConfig> c = cache_config(spec, cpu, l3);
        if (!c.ok() || c.value().levels.empty()) return nullptr;
        c.value().seed = seed;
        auto m = std::make_unique<CacheModel>(c.value(), uncore);
        if (l3) m->set_amd_l3(l3, cpu.topology().core, cpu.topology().thread);
        bool shared = false;
        for (CacheModel* o : *first) shared = shared || m->hierarchy().share_last_level(o->hierarchy());
        if (!shared) first->push_back(m.get());
        return m;
    });
    return ok_status();
}

SimExec::~SimExec() {
    for (auto& [p, bytes] : live_) std::free(p);
}

Result<void*> SimExec::alloc_pages(usize bytes, bool executable) {
    void* p = std::aligned_alloc(4096, (bytes + 4095) & ~usize(4095));
    if (!p) return Error::make(Errc::io, "out of host memory (%llu bytes)", (unsigned long long)bytes);
    live_[p] = bytes;
    runner_->map_pages(p, bytes, executable);
    return p;
}

void SimExec::free_pages(void* p, usize) {
    auto it = live_.find(p);
    if (it == live_.end()) return;
    runner_->unmap_pages(p, it->second);
    live_.erase(it);
    auto a = aligned_.find(p);
    if (a != aligned_.end()) {
        std::free(a->second);
        aligned_.erase(a);
        return;
    }
    std::free(p);
}

Result<void*> SimExec::alloc_aligned(usize bytes, u64 align, u64 offset) {
    if (align <= 4096) return alloc_pages(bytes, false);
    usize n = (bytes + 4095) & ~usize(4095);
    void* raw = std::aligned_alloc(4096, n + align);
    if (!raw) return Error::make(Errc::io, "out of host memory (%llu bytes)", (unsigned long long)(n + align));
    u64 at = (u64(uintptr_t(raw)) + offset + align - 1) & ~(align - 1);
    void* p = reinterpret_cast<void*>(uintptr_t(at - offset));
    live_[p] = bytes;
    aligned_[p] = raw;
    runner_->map_pages(p, bytes, false);
    return p;
}

Status SimExec::irq_mask(IrqMode, IrqSaved* saved) {
    saved->word[0] = 1;
    masked_ = true;
    return ok_status();
}

void SimExec::irq_restore(const IrqSaved&) { masked_ = false; }

void SimExec::problem(const std::string& msg) {
    problems_.push_back(msg);
    if (hook_) hook_(hook_ctx_, msg.c_str());
}

// The event selects of the enabled GP counters (Intel PERFEVTSELx, AMD PERF_CTL): each
// one the simulator does not model (it reads 0) is noted once (docs/sim.md "Events").
void SimExec::note_unmodelled(const sim::SimCpu& cpu) {
    const sim::PmuLayout& L = cpu.pmu();
    if (L.kind == sim::PmuLayout::Kind::none || cpu.netburst()) return;
    for (u32 i = 0; i < 32; ++i) {
        u32 msr = 0;
        if (L.kind == sim::PmuLayout::Kind::intel && L.gp(i)) msr = sim::reg::PERFEVTSEL0 + i;
        else if (L.kind == sim::PmuLayout::Kind::amd && i < L.amd_counters)
            msr = L.amd_ext_core ? sim::reg::AMD_EXT_CTL0 + 2 * i : sim::reg::AMD_PERF_CTL0 + i;
        if (!msr || !cpu.msr_exists(msr)) continue;
        u64 sel = cpu.peek(msr);
        if (!((sel >> 22) & 1)) continue;  // EN (SDM Vol. 3B §20.2.1.1; APM Vol. 2 §13.2.1)
        u16 event = u16(sel & 0xFF), umask = u16((sel >> 8) & 0xFF);
        if (L.kind == sim::PmuLayout::Kind::amd) event |= u16(((sel >> 32) & 0xF) << 8);
        u32 key = (u32(event) << 16) | umask;
        // Each (CPU, event) is looked up once: this runs before every measured region.
        if (!checked_.insert((u64(cpu.index()) << 32) | key).second) continue;
        if (cpu.event_source(event, umask) != sim::EventSource::not_modelled) continue;
        if (!noted_.insert(key).second) continue;
        char msg[200];
        std::snprintf(msg, sizeof msg,
                      L.kind == sim::PmuLayout::Kind::amd
                          ? "event %03X.%02X is not modelled by the simulator: it reads 0 (docs/sim.md \"Events\")"
                          : "event %02X.%02X is not modelled by the simulator: it reads 0 (docs/sim.md \"Events\")",
                      unsigned(event), unsigned(umask));
        if (note_hook_) note_hook_(hook_ctx_, msg);
    }
}

void SimExec::execute(const Region& region, RegionFrame* frame) {
    ++executions_;
    if (!masked_) problem("the engine ran a region with interrupts not masked");
    if (region.block == CodeBlock::body) note_unmodelled(m_.cpu(m_.current_cpu()));
    runner_->execute(region, frame, m_.cpu(m_.current_cpu()), *this);
}

SiblingState SimExec::prepare_siblings(Hw& hw, u32 cpu) {
    SmtSiblings s;
    if (!find_smt_siblings(hw, cpu, &s).ok() || !s.count || cpu >= m_.size()) return SiblingState::none;
    return m_.cpu(cpu).sibling_busy() ? SiblingState::busy : SiblingState::halted;
}

}  // namespace pmulab
