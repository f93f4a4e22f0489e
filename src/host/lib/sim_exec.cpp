#include "sim_exec.h"

#include <cstdlib>

namespace pmulab {

SimExec::SimExec(sim::SimMachine& m) : m_(m), runner_(make_sim_runner()) {}

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
    std::free(p);
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

void SimExec::execute(const Region& region, RegionFrame* frame) {
    ++executions_;
    if (!masked_) problem("the engine ran a region with interrupts not masked");
    runner_->execute(region, frame, m_.cpu(m_.current_cpu()), *this);
}

}  // namespace pmulab
