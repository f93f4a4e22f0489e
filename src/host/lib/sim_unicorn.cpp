#include "sim_unicorn.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "measure/kernel_bodies.h"
#include "sim/sim_pebs.h"
#include "sim_unicorn_run.h"

namespace pmulab {

using namespace uc_exec;

namespace {

u64 checksum(const u8* p, usize n) {
    u64 h = 0xcbf29ce484222325ull ^ n;
    usize i = 0;
    for (; i + 8 <= n; i += 8) {
        u64 w;
        std::memcpy(&w, p + i, 8);
        h = (h ^ w) * 0x100000001b3ull;
    }
    for (; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

}  // namespace

UnicornRunner::UnicornRunner() = default;

UnicornRunner::~UnicornRunner() {
    // PMULAB_SIM_STATS=1: the executor's speed on stderr (make bench reads it).
    if (const char* s = std::getenv("PMULAB_SIM_STATS"); s && *s == '1' && executed_)
        std::fprintf(stderr,
                     "pmulab-sim: executor: %llu instructions in %.3f s (%.1f million per second), %llu regions\n",
                     (unsigned long long)executed_, seconds_, seconds_ > 0 ? double(executed_) / seconds_ / 1e6 : 0.0,
                     (unsigned long long)regions_);
    if (uc_) uc_close(uc_);
    std::free(own_);
}

bool UnicornRunner::start() {
    if (uc_) return true;
    if (!broken_.empty()) return false;
    uc_err e = uc_open(UC_ARCH_X86, UC_MODE_64, &uc_);
    if (e == UC_ERR_OK) e = uc_ctl_set_cpu_model(uc_, UC_CPU_X86_SKYLAKE_CLIENT);
    own_ = static_cast<u8*>(std::aligned_alloc(kPage, kOwnBytes));
    if (e == UC_ERR_OK && own_) {
        std::memset(own_, 0, kOwnBytes);
        own_[kReturnAt] = 0xF4;  // HLT: never executed, the emulation stops there
        e = uc_mem_map_ptr(uc_, addr_of(own_), kOwnBytes, UC_PROT_ALL, own_);
    }
    uc_hook h;
    // Code hooks are per region (set_code_hooks); blocks are seen everywhere.
    if (e == UC_ERR_OK) e = uc_hook_add(uc_, &h, UC_HOOK_BLOCK, (void*)hook_block, this, 1, 0);
    if (e == UC_ERR_OK) e = uc_hook_add(uc_, &h, UC_HOOK_MEM_READ | UC_HOOK_MEM_WRITE, (void*)hook_mem, this, 1, 0);
    if (e == UC_ERR_OK) e = uc_hook_add(uc_, &h, UC_HOOK_INTR, (void*)hook_intr, this, 1, 0);
    if (e == UC_ERR_OK) e = uc_hook_add(uc_, &h, UC_HOOK_INSN_INVALID, (void*)hook_invalid_insn, this, 1, 0);
    if (e == UC_ERR_OK) e = uc_hook_add(uc_, &h, UC_HOOK_MEM_INVALID, (void*)hook_bad_mem, this, 1, 0);
    if (e == UC_ERR_OK) return true;
    broken_ = std::string("the simulator's x86 emulator (Unicorn) could not be set up: ") + uc_strerror(e);
    if (uc_) uc_close(uc_);
    uc_ = nullptr;
    return false;
}

CodeSpan UnicornRunner::kernel_body(KernelId id) { return builtin_kernel_body(id); }

void UnicornRunner::map_pages(void* p, usize bytes, bool executable) {
    if (!start()) return;
    u32 perms = executable ? UC_PROT_ALL : UC_PROT_READ | UC_PROT_WRITE;
    if (uc_mem_map_ptr(uc_, addr_of(p), page_round(bytes), perms, p) != UC_ERR_OK) return;
    uc_ctl_remove_cache(uc_, addr_of(p), addr_of(p) + page_round(bytes));
}

void UnicornRunner::unmap_pages(void* p, usize bytes) {
    if (!uc_) return;
    u64 lo = addr_of(p), hi = lo + page_round(bytes);
    uc_ctl_remove_cache(uc_, lo, hi);
    uc_mem_unmap(uc_, lo, hi - lo);
    auto from = code_seen_.lower_bound(lo), to = code_seen_.lower_bound(hi);
    for (auto it = from; it != to; ++it)
        for (size_t h : it->second.hooks) uc_hook_del(uc_, uc_hook(h));
    code_seen_.erase(from, to);
}

void UnicornRunner::guard(const void* p, usize bytes, bool on) {
    if (!start()) return;
    u64 lo = addr_of(p), n = page_round(bytes);
    if (on) {
        guards_[lo] = lo + n;
        uc_mem_protect(uc_, lo, n, UC_PROT_NONE);
    } else {
        guards_.erase(lo);
        uc_mem_protect(uc_, lo, n, UC_PROT_READ | UC_PROT_WRITE);
    }
    uc_ctl_remove_cache(uc_, lo, lo + n);
}

bool UnicornRunner::guarded(u64 addr) const {
    auto it = guards_.upper_bound(addr);
    if (it == guards_.begin()) return false;
    --it;
    return addr >= it->first && addr < it->second;
}

SimDataCache* UnicornRunner::data_cache(u32 cpu) {
    auto it = caches_.find(cpu);
    return it == caches_.end() ? nullptr : it->second.get();
}

// The engine writes each region with host stores the emulator does not see: translations
// of the bytes that were there before are dropped whenever the bytes changed.
UnicornRunner::CodeSeen& UnicornRunner::refresh_code(const Region& r, bool each) {
    u64 lo = addr_of(r.code);
    usize n = r.code_size ? r.code_size : r.size;
    u64 sum = checksum(static_cast<const u8*>(r.code), n);
    CodeSeen& seen = code_seen_[lo];
    if (seen.sum == sum && seen.kinds.size() == n && seen.each == each) return seen;
    seen.sum = sum;
    seen.kinds.assign(n, 0);
    set_code_hooks(seen, r, each);
    uc_ctl_remove_cache(uc_, lo, lo + page_round(r.size));
    return seen;
}

// The region's code hooks: every instruction (slow mode), or all but the body's when the
// body is plain code and near branches (fast mode: counted per translation block).
void UnicornRunner::set_code_hooks(CodeSeen& seen, const Region& r, bool each) {
    for (size_t h : seen.hooks) uc_hook_del(uc_, uc_hook(h));
    seen.hooks.clear();
    u64 lo = addr_of(r.code), hi = lo + (r.code_size ? r.code_size : r.size);
    u64 body_lo = lo + r.body_offset, body_hi = body_lo + r.copies * r.body_len;
    seen.fast = false;
    seen.each = each;
    if (!each && r.block == CodeBlock::body && body_hi > body_lo && body_hi <= hi) {
        seen.body = x86insn::decode_linear(static_cast<const u8*>(r.code) + r.body_offset, usize(body_hi - body_lo));
        seen.fast = seen.body.ok;
    }
    auto add = [&](u64 from, u64 to) {  // [from, to)
        uc_hook h;
        if (from < to && uc_hook_add(uc_, &h, UC_HOOK_CODE, (void*)hook_code, this, from, to - 1) == UC_ERR_OK)
            seen.hooks.push_back(size_t(h));
    };
    if (!seen.fast) return add(lo, hi);
    add(lo, body_lo);
    add(body_hi, hi);
}

namespace {

// The CPU's view of the emulator's memory and registers (SimCpu::set_guest; PEBS).
class UcGuest final : public sim::GuestAccess {
public:
    explicit UcGuest(uc_engine* uc) : uc_(uc) {}
    bool read(u64 addr, void* out, u64 n) override { return uc_mem_read(uc_, addr, out, n) == UC_ERR_OK; }
    bool write(u64 addr, const void* p, u64 n) override { return uc_mem_write(uc_, addr, p, n) == UC_ERR_OK; }
    void gprs(u64 out[16], u64* rflags) override {
        for (int i = 0; i < 16; ++i) out[i] = reg(uc_, kUcGpr[i]);
        *rflags = reg(uc_, UC_X86_REG_RFLAGS);
    }

private:
    uc_engine* uc_;
};

// The registers of the call `region(frame)` (SysV: RDI = frame), returning to `stop`.
void enter_region(uc_engine* uc, u8* own, u64 frame, u64 stop) {
    for (int r : kUcGpr) set_reg(uc, r, 0);
    u64 rsp = addr_of(own) + kOwnBytes - 16;
    std::memcpy(own + kOwnBytes - 16, &stop, 8);
    set_reg(uc, UC_X86_REG_RSP, rsp);
    set_reg(uc, UC_X86_REG_RDI, frame);
    set_reg(uc, UC_X86_REG_RFLAGS, 0x2);  // IF = 0: the engine masked interrupts
}

}  // namespace

void UnicornRunner::execute(const Region& region, RegionFrame* frame, sim::SimCpu& cpu, SimProblems& problems) {
    if (!start()) {
        problems.problem(broken_);
        frame->faulted = 1;
        frame->fault_vector = kRefusedVector;
        return;
    }
    Clock::time_point t0 = Clock::now();
    ++regions_;
    const bool each = cpu.needs_each_instruction();
    CodeSeen& seen = refresh_code(region, each);
    if (cache_factory_ && !caches_.count(cpu.index())) caches_[cpu.index()] = cache_factory_(cpu);
    Run r;
    r.self = this, r.uc = uc_, r.cpu = &cpu, r.problems = &problems, r.region = &region;
    r.cache = data_cache(cpu.index());
    if (r.cache) r.line = r.cache->line_bytes(), r.memory_level = r.cache->levels();
    r.code_lo = addr_of(region.code);
    r.kinds = seen.kinds.data();
    r.kinds_len = seen.kinds.size();
    if (seen.fast) r.fast = &seen.body;
    r.each = each;
    if (region.block == CodeBlock::body) {
        r.body_lo = r.code_lo + region.body_offset;
        r.body_hi = r.body_lo + region.copies * region.body_len;
    }
    r.stop = addr_of(own_) + kReturnAt;
    r.deadline = Clock::now() + std::chrono::seconds(timeout_s_);
    RegionFrame* guest = reinterpret_cast<RegionFrame*>(own_);
    std::memcpy(guest, frame, sizeof *frame);
    enter_region(uc_, own_, addr_of(guest), r.stop);
    run_ = &r;  // the hooks find the run through the runner (their user data)
    UcGuest guest_view(uc_);
    cpu.set_guest(&guest_view);
    auto pass = [&](u64 from) {
        uc_err e = uc_emu_start(uc_, from, r.stop, 0, 0);
        r.settle_block(r.stop);
        r.retire(r.stop);
        r.flush();
        if (r.each && !r.faulted) r.take_nmi(r.stop);  // after the region's last instruction
        bool stopped_by_fault = e == UC_ERR_READ_UNMAPPED || e == UC_ERR_WRITE_UNMAPPED || e == UC_ERR_FETCH_UNMAPPED ||
                                e == UC_ERR_READ_PROT || e == UC_ERR_WRITE_PROT || e == UC_ERR_FETCH_PROT ||
                                e == UC_ERR_INSN_INVALID;
        if (e != UC_ERR_OK && !(stopped_by_fault && r.faulted)) {
            problems.problem(std::string("the simulator's x86 emulator stopped: ") + uc_strerror(e));
            r.raise(kRefusedVector, r.cur.addr, 0, 0);
        }
    };
    pass(r.code_lo);
    if (r.faulted) {  // the fault path, as on the target: the exit code restores the caller's state
        r.cur.valid = false;
        bool first = r.faulted;
        r.faulted = false;
        Run saved = r;
        pass(r.code_lo + region.exit_offset);
        if (r.faulted)
            problems.problem("generated code: its exit path faulted after a fault at " + saved.where(saved.rip));
        r.faulted = first, r.vector = saved.vector, r.rip = saved.rip, r.error = saved.error, r.cr2 = saved.cr2;
    }
    run_ = nullptr;
    cpu.set_guest(nullptr);
    executed_ += r.steps;
    seconds_ += std::chrono::duration<double>(Clock::now() - t0).count();
    std::memcpy(frame, guest, sizeof *frame);
    if (!r.refused.empty()) problems.problem(r.refused);
    if (r.faulted) {
        frame->faulted = 1;
        frame->fault_vector = r.vector;
        frame->fault_rip = r.rip;
        frame->fault_error = r.error;
        frame->fault_cr2 = r.cr2;
    }
}

std::unique_ptr<SimRunner> make_sim_runner() { return std::make_unique<UnicornRunner>(); }

}  // namespace pmulab
