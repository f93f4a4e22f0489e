// The simulated machine: the Hw seam over several SimCpus (sim_machine.h).
#include <cstdio>

#include "sim/sim_internal.h"
#include "sim/sim_netburst.h"
#include "sim/sim_slice.h"

namespace sim {

// ---------------------------------------------------------------------------
// SimMachine

SimMachine::SimMachine(const std::vector<CpuSpec>& cpus) : shared_(std::make_shared<Shared>()) {
    if (cpus.empty()) die("a machine needs at least one CPU");
    // A client part's C-Boxes, one per L3 slice (sim_slice.h), shared by its CPUs.
    u32 gen = 0;
    if (u32 boxes = client_llc_slices(cpus[0].cpuid))
        shared_->uncore = std::make_unique<SimUncore>(boxes, uncore_global_at_e01(cpus[0].cpuid));
    else if (u32 chas = server_llc_slices(cpus[0].cpuid, &gen)) {
        const UncoreKind kinds[] = {UncoreKind::skx, UncoreKind::icx, UncoreKind::spr};
        shared_->uncore = std::make_unique<SimUncore>(chas, kinds[gen]);
    }
    cpus_.reserve(cpus.size());
    for (u32 i = 0; i < cpus.size(); ++i) cpus_.emplace_back(i, cpus[i], shared_);
    bsp_ = 0;
    for (u32 i = 0; i < cpus_.size(); ++i)
        if (cpus_[i].topology().bsp) {
            bsp_ = i;
            break;
        }
    current_ = bsp_;
}

SimUncore* SimMachine::uncore() { return shared_->uncore.get(); }

void SimMachine::enable_amd_l3(bool f17) { shared_->amd_l3 = std::make_unique<SimAmdL3>(f17); }

SimAmdL3* SimMachine::amd_l3() const { return shared_->amd_l3.get(); }
pmulab::Result<u32> SimMachine::pci_read32(u32 bus, u32 dev, u32 fn, u32 offset) {
    if (bus > 255 || dev > 31 || fn > 7 || offset > 0xFC || (offset & 3))
        return pmulab::Error::make(pmulab::Errc::invalid_argument,
                                   "PCI %x:%x.%x offset 0x%x is not a configuration dword", bus, dev, fn, offset);
    if (bus == 0 && dev == 0 && fn == 0) {
        // Every PC's host bridge: the simulator's choice of IDs is QEMU q35's MCH (8086:29C0)
        // on Intel and the Zen root complex (1022:1450) on AMD; its other registers read 0.
        const bool amd = cpus_[0].cpuid(0, 0).ebx == 0x68747541;  // "Auth"enticAMD
        return offset ? 0u : amd ? 0x14501022u : 0x29C08086u;
    }
    return shared_->uncore ? shared_->uncore->pci_read32(bus, dev, fn, offset) : 0xFFFFFFFFu;
}

void SimMachine::set_bsp(u32 i) {
    for (u32 k = 0; k < size(); ++k) cpus_[k].topology().bsp = k == i;
    bsp_ = current_ = i;
}

void SimMachine::fail_nth_wrmsr(u64 k, u8 vector) {
    shared_->nth_wrmsr = k;
    shared_->nth_vector = vector;
}

std::vector<LogEntry> SimMachine::log_all() const {
    std::vector<LogEntry> all;
    for (const SimCpu& c : cpus_) all.insert(all.end(), c.log().begin(), c.log().end());
    std::sort(all.begin(), all.end(), [](const LogEntry& a, const LogEntry& b) { return a.seq < b.seq; });
    return all;
}

void SimMachine::clear_logs() {
    for (SimCpu& c : cpus_) c.clear_log();
}

CpuidRegs SimMachine::cpuid(u32 leaf, u32 sub) { return cpus_[current_].cpuid(leaf, sub); }
Result<u64> SimMachine::rdmsr(u32 msr) { return cpus_[current_].rdmsr(msr); }
Status SimMachine::wrmsr(u32 msr, u64 v) { return cpus_[current_].wrmsr(msr, v); }
Result<u64> SimMachine::rdpmc(u32 index) { return cpus_[current_].rdpmc(index); }
u64 SimMachine::rdtsc() { return cpus_[current_].rdtsc(); }

Result<CpuTopology> SimMachine::topology(u32 cpu) {
    if (cpu >= size()) return Error::make(pmulab::Errc::invalid_argument, "no logical processor %u", cpu);
    return cpus_[cpu].topology();
}

Status SimMachine::run_on_cpu(u32 cpu, pmulab::CpuFn fn, void* ctx) {
    using pmulab::Errc;
    ++run_calls_;
    // The same checks, in the same order and words, as the EFI implementation.
    if (cpu >= size())
        return Error::make(Errc::invalid_argument, "no logical processor %u (there are %u)", cpu, size());
    if (in_ap_)
        return Error::make(Errc::internal,
                           "run_on_cpu(%u) called on CPU %u: MP Services may only be used "
                           "from the BSP",
                           cpu, current_);
    if (cpu == current_) {
        fn(ctx);
        return pmulab::ok_status();
    }
    SimCpu& c = cpus_[cpu];
    if (!c.topology().enabled)
        return Error::make(Errc::unsupported, "logical processor %u is disabled by the firmware", cpu);
    if (c.unreachable())
        return Error::make(Errc::io, "MP Services StartupThisAP(CPU %u) failed: %s", cpu,
                           c.unreachable_status().c_str());
    u32 saved = current_;
    current_ = cpu;
    in_ap_ = true;
    fn(ctx);
    in_ap_ = false;
    current_ = saved;
    return pmulab::ok_status();
}

u32 SimMachine::set_siblings_busy(bool on) {
    u32 with = 0;
    for (SimCpu& c : cpus_) {
        bool sibling = false;
        for (const SimCpu& o : cpus_)
            sibling = sibling || (&o != &c && o.topology().package == c.topology().package &&
                                  o.topology().core == c.topology().core);
        c.set_sibling_busy(on && sibling);
        with += sibling;
    }
    return with;
}

}  // namespace sim
