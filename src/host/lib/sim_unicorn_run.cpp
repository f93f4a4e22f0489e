#include "sim_unicorn_run.h"

#include <cstdio>
#include <cstring>

#include "sim/sim_costs.h"

namespace pmulab {

using namespace uc_exec;

namespace {

// SimCpu::taken_branch takes the kind as sim::BranchKind (sim_lbr.h): the same values.
static_assert(u8(Kind::jcc) == u8(sim::BranchKind::jcc) && u8(Kind::jmp) == u8(sim::BranchKind::jmp) &&
              u8(Kind::jmp_ind) == u8(sim::BranchKind::jmp_ind) && u8(Kind::call) == u8(sim::BranchKind::call) &&
              u8(Kind::call_ind) == u8(sim::BranchKind::call_ind) && u8(Kind::ret) == u8(sim::BranchKind::ret) &&
              u8(Kind::far) == u8(sim::BranchKind::far));

bool canonical(u64 a) {
    i64 top = i64(a) >> 47;
    return top == 0 || top == -1;
}

// The memory operand of a ModRM instruction (CLFLUSH's line): SDM Vol. 2A §2.1.5 and §2.2.1
// (REX extensions, RIP-relative). p[at] is the ModRM byte; `next` the next instruction.
u64 memory_operand(uc_engine* uc, const u8* p, usize at, usize size, u8 rex, u64 next) {
    u8 m = p[at];
    unsigned mod = m >> 6, rm = m & 7;
    usize i = at + 1;
    u64 ea = 0;
    if (rm == 4 && i < size) {  // SIB
        u8 sib = p[i++];
        unsigned base = (sib & 7) | ((rex & 1) << 3), index = ((sib >> 3) & 7) | ((rex & 2) << 2);
        if (index != 4) ea += reg(uc, kUcGpr[index]) << (sib >> 6);
        if ((sib & 7) == 5 && mod == 0) {
            i32 d;
            std::memcpy(&d, p + i, 4);
            return ea + u64(i64(d));
        }
        ea += reg(uc, kUcGpr[base]);
    } else if (mod == 0 && rm == 5) {
        i32 d;
        std::memcpy(&d, p + i, 4);
        return next + u64(i64(d));
    } else {
        ea += reg(uc, kUcGpr[rm | ((rex & 1) << 3)]);
    }
    if (mod == 1) ea += u64(i64(static_cast<signed char>(p[i])));
    if (mod == 2) {
        i32 d;
        std::memcpy(&d, p + i, 4);
        ea += u64(i64(d));
    }
    return ea;
}

// CLFLUSH/CLFLUSHOPT's operand: prefixes and REX skipped, then 0F AE ModRM.
u64 clflush_address(uc_engine* uc, const u8* p, usize size, u64 next) {
    usize at = x86insn::prefixes_end(p, size);
    u8 rex = at < size && (p[at] & 0xF0) == 0x40 ? p[at++] : 0;
    return memory_operand(uc, p, at + 2, size, rex, next);
}

}  // namespace

void UnicornRunner::Run::flush() {
    if (!batch.instructions) return;
    // The stalls of the batch's loads (docs/sim.md "Cost model"): linear in the counts, so
    // the batch's sum equals the sum over its loads.
    if (cache) batch.stall_cycles = sim::memory_stall_cycles(batch.load_served);
    cpu->retire(batch);
    bool body = batch.body;
    batch = sim::Retired();  // (last: the next batch's own)
    batch.body = body;
}

// The instruction in flight retired; `next` is where execution went on.
void UnicornRunner::Run::retire(u64 next) {
    if (!cur.valid) return;
    if (cur.kind == Kind::rep_string && next == cur.addr) return;  // the next iteration of one instruction
    cur.valid = false;
    sim::Retired& b = batch;
    ++b.instructions;
    if (cur.loaded) count_load(cur.served);
    b.stores += cur.stored;
    if (each) report_op();
    const unsigned level = cur.served >= memory_level || cur.served > 3 ? 3 : cur.served;  // as count_load
    b.last = sim::RetiredInsn{cur.addr,          next, cur.load_addr, cur.store_addr,
                              cache ? level : 0, true, cur.loaded,    cur.stored};
    if (x86insn::is_branch(cur.kind)) {
        bool taken = next != cur.addr + cur.size;
        count_branch(cur.kind, taken);
        if (taken && each) cpu->taken_branch(cur.addr, next, u8(cur.kind));
    }
}

void UnicornRunner::Run::take_nmi(u64 next) {
    if (!cpu->take_nmi()) return;
    const SimRunner::NmiHandler& h = self->nmi_handler();
    if (h && h(*cpu, next)) return;
    char msg[200];
    std::snprintf(msg, sizeof msg,
                  "CPU %u: an NMI (the PMU's interrupt through the LVT entry) came at %s with no handler for it",
                  cpu->index(), where(next).c_str());
    problems->problem(msg);
}

void UnicornRunner::Run::count_branch(Kind k, bool taken) {
    sim::Retired& b = batch;
    ++b.branches;
    switch (k) {
        case Kind::jcc:
            ++b.cond;
            b.cond_taken += taken;
            b.near_taken += taken;
            break;
        case Kind::jmp: ++b.near_taken; break;
        case Kind::jmp_ind: ++b.near_taken, ++b.indirect; break;
        case Kind::call: ++b.near_taken, ++b.near_calls; break;
        case Kind::call_ind: ++b.near_taken, ++b.near_calls, ++b.indirect; break;
        case Kind::ret: ++b.near_taken, ++b.near_returns; break;
        default: ++b.far; break;
    }
}

// The level of Retired::load_served (L1D, L2, L3, memory) of a cache level.
unsigned UnicornRunner::Run::served_index(unsigned served) const {
    return served >= memory_level || served > 3 ? 3 : served;
}

// A load of the instruction in flight (the level that served its first access).
void UnicornRunner::Run::count_load(unsigned served) {
    sim::Retired& b = batch;
    ++b.loads;
    if (cache) ++b.load_served[served_index(served)];
}

// The retiring instruction as IBS sees it (sim_ibs.h), with the cost model's latency of
// the level that served its load.
void UnicornRunner::Run::report_op() {
    sim::OpInfo op;
    op.rip = cur.addr;
    op.load = cur.loaded, op.store = cur.stored;
    op.data_addr = cur.data_addr;
    if (cache && cur.loaded) {
        op.served = served_index(cur.served);
        u64 served[4] = {};
        served[op.served] = 1;
        op.miss_latency = u32(sim::memory_stall_cycles(served));
    }
    cpu->op(op);
}

// The pending body block retired whole; `next` is where execution went on.
void UnicornRunner::Run::settle_block(u64 next) {
    if (!blk.valid) return;
    blk.valid = false;
    // A block that started in the harness reached its body part only if the harness's
    // last instruction fell through into it (a serviced one ends the translation block).
    if (blk.after_harness && !(cur.valid && cur.addr + cur.size == blk.from && !cur.redirected)) return;
    retire(blk.from);  // the harness's instruction before the body part
    if (!batch.body) {
        flush();
        batch.body = true;
    }
    usize from = usize(blk.from - body_lo), end = usize(blk.end - body_lo);
    u32 n = fast->count(from, end);
    batch.instructions += n;
    steps += n;
    usize last = fast->last_start(end);
    if (last != SIZE_MAX && last >= from) {
        Kind k = Kind(fast->kind[last]);
        if (x86insn::is_branch(k)) count_branch(k, next != blk.end);
    }
}

// A fault at `rip` inside the pending block: the instructions before it retired.
void UnicornRunner::Run::cut_block(u64 rip) {
    if (!blk.valid) return;
    if (in_block(rip)) {
        u32 n = fast->count(usize(blk.from - body_lo), usize(rip - body_lo));
        batch.instructions += n;
        steps += n;
    }
    blk.valid = false;
}

// A translation block starts at addr: the pending one retired; the part of this one in
// a fast body is pending (the harness's instructions have their own hooks).
void UnicornRunner::Run::on_block(u64 addr, u32 size) {
    settle_block(addr);
    retire(addr);  // the hooked instruction before this block
    if (!fast) return;
    u64 from = addr > body_lo ? addr : body_lo, end = addr + size < body_hi ? addr + size : body_hi;
    if (from >= end) return;
    if ((steps & ~u64(0xFFFF)) != ((steps + (end - from)) & ~u64(0xFFFF)) && Clock::now() > deadline)
        return raise(kWatchdogVector, addr, 0, 0);
    blk = Block{from, end, true, from > addr};
    last_load_rip = last_store_rip = ~u64(0);
}

// A fault at `at`: recorded once, the instruction does not retire, the emulation stops
// (the region then resumes at its exit path).
void UnicornRunner::Run::raise(u64 vec, u64 at, u64 err, u64 addr) {
    cut_block(at);
    if (!faulted) {
        faulted = true;
        vector = vec;
        rip = at;
        error = err;
        cr2 = addr;
    }
    cur.valid = false;
    set_reg(uc, UC_X86_REG_RIP, stop);
    uc_emu_stop(uc);
}

std::string UnicornRunner::Run::where(u64 addr) const {
    FaultPlace f = locate_fault(*region, usize(addr - code_lo));
    char buf[120];
    if (f.block == CodeBlock::body)
        std::snprintf(buf, sizeof buf, "offset %zu of the body (copy %llu of %llu)", f.offset,
                      (unsigned long long)f.copy + 1, (unsigned long long)region->copies);
    else if (f.block == CodeBlock::harness)
        std::snprintf(buf, sizeof buf, "offset %llu of the harness", (unsigned long long)(addr - code_lo));
    else std::snprintf(buf, sizeof buf, "offset %zu of %s", f.offset, code_block_name(f.block));
    return buf;
}

void UnicornRunner::Run::pmu_fault(const char* what, u32 arg, const Error& e) {
    u8 vec = cpu->log().empty() ? u8(kVectorGP) : cpu->log().back().vector;
    if (!vec) vec = u8(kVectorGP);
    if (locate_fault(*region, usize(cur.addr - code_lo)).block == CodeBlock::harness) {
        char msg[300];
        std::snprintf(msg, sizeof msg, "generated code: %s 0x%x faulted on CPU %u: %s", what, arg, cpu->index(), e.msg);
        problems->problem(msg);
    }
    raise(vec, cur.addr, 0, 0);
}

// VEX/EVEX/XOP: the emulator has no AVX. Where the simulated CPU has the extension the
// code is refused (never guessed); without it the emulator's #UD is the hardware's.
void UnicornRunner::Run::refuse_vex() {
    const u8* p = reinterpret_cast<const u8*>(uintptr_t(cur.addr));
    CpuidRegs l1 = cpu->cpuid(1, 0), l7 = cpu->cpuid(7, 0), e1 = cpu->cpuid(0x80000001u, 0);
    bool avx = (l1.ecx >> 28) & 1, avx512 = (l7.ebx >> 16) & 1, xop = (e1.ecx >> 11) & 1;
    usize at = x86insn::prefixes_end(p, cur.size);
    u8 esc = at < cur.size ? p[at] : 0;
    bool has = esc == 0x62 ? avx512 : esc == 0x8F ? xop : avx;
    if (!has) return;
    char bytes[64] = "";
    for (u32 i = 0, n = 0; i < cur.size && n + 4 < sizeof bytes; ++i) n += std::snprintf(bytes + n, 4, " %02x", p[i]);
    refused = "the simulator cannot run the code: " + where(cur.addr) + " holds" + bytes + ", a " +
              (esc == 0x62   ? "EVEX (AVX-512)"
               : esc == 0x8F ? "XOP"
                             : "VEX (AVX)") +
              "-encoded instruction: the simulated CPU has it, but the simulator's x86 emulator (Unicorn 2.0) "
              "does not execute AVX (docs/sim.md)";
    raise(kRefusedVector, cur.addr, 0, 0);
}

void UnicornRunner::Run::service(Kind k) {
    u64 next = cur.addr + cur.size;
    u32 ecx = u32(reg(uc, UC_X86_REG_RCX));
    auto put = [&](u64 v) {
        set_reg(uc, UC_X86_REG_RAX, u32(v));
        set_reg(uc, UC_X86_REG_RDX, v >> 32);
    };
    flush();  // the counts up to this instruction
    switch (k) {
        case Kind::rdpmc:
        case Kind::rdmsr: {
            Result<u64> v = k == Kind::rdpmc ? cpu->rdpmc(ecx) : cpu->rdmsr(ecx);
            if (!v.ok()) return pmu_fault(k == Kind::rdpmc ? "RDPMC" : "RDMSR", ecx, v.error());
            put(v.value());
            break;
        }
        case Kind::wrmsr: {
            u64 v = (reg(uc, UC_X86_REG_RDX) << 32) | u32(reg(uc, UC_X86_REG_RAX));
            Status s = cpu->wrmsr(ecx, v);
            if (!s.ok()) return pmu_fault("WRMSR", ecx, s.error());
            break;
        }
        case Kind::rdtscp: set_reg(uc, UC_X86_REG_RCX, 0); [[fallthrough]];  // IA32_TSC_AUX: 0
        case Kind::rdtsc: put(cpu->rdtsc()); break;
        case Kind::cpuid: {
            CpuidRegs r = cpu->cpuid(u32(reg(uc, UC_X86_REG_RAX)), ecx);
            set_reg(uc, UC_X86_REG_RAX, r.eax), set_reg(uc, UC_X86_REG_RBX, r.ebx);
            set_reg(uc, UC_X86_REG_RCX, r.ecx), set_reg(uc, UC_X86_REG_RDX, r.edx);
            break;
        }
        case Kind::serialize:  // CPUID.(EAX=07H,ECX=0):EDX[14]
            if (!((cpu->cpuid(7, 0).edx >> 14) & 1)) return raise(kVectorUD, cur.addr, 0, 0);
            break;
        default: return;
    }
    set_reg(uc, UC_X86_REG_RIP, next);
    cur.redirected = true;
}

void UnicornRunner::Run::on_instruction(u64 addr, u32 size) {
    if (blk.valid && addr >= blk.end) settle_block(addr);  // (before it: the same block's harness part)
    retire(addr);
    if (cur.valid) return;  // a REP string instruction's next iteration
    if (each) {             // the instruction before retired alone; a PMI it raised is taken here
        flush();
        take_nmi(addr);
    }
    if ((++steps & 0xFFFF) == 0 && Clock::now() > deadline) return raise(kWatchdogVector, addr, 0, 0);
    bool body = addr >= body_lo && addr < body_hi;
    if (body != batch.body) {
        flush();
        batch.body = body;
    }
    const u8* p = reinterpret_cast<const u8*>(uintptr_t(addr));
    u64 off = addr - code_lo;
    Kind k;
    if (off < kinds_len && kinds[off]) {
        k = Kind(kinds[off] - 1);
    } else {
        k = x86insn::classify(p, size);
        if (off < kinds_len) kinds[off] = u8(u8(k) + 1);
    }
    cur = Insn{addr, size, k, true};
    switch (cur.kind) {
        case Kind::plain:
        case Kind::trap:
        case Kind::rep_string: return;
        case Kind::hlt: return raise(kWatchdogVector, addr + size, 0, 0);  // only the watchdog's NMI ends it
        case Kind::wbinvd:
        case Kind::invd:
            if (cache) cache->reset();
            return;
        case Kind::clflush:
            if (cache) cache->flush_line(clflush_address(uc, p, size, addr + size));
            return;
        case Kind::vex: return refuse_vex();
        default: return service(cur.kind);
    }
}

namespace uc_exec {

namespace {

UnicornRunner::Run* run_of(void* user) { return static_cast<UnicornRunner*>(user)->active(); }

}  // namespace

void hook_code(uc_engine*, u64 addr, u32 size, void* user) { run_of(user)->on_instruction(addr, size); }

void hook_block(uc_engine*, u64 addr, u32 size, void* user) { run_of(user)->on_block(addr, size); }

// The instruction an exception or access belongs to: in the pending body block (fast mode:
// RIP, which Unicorn keeps exact for hooks), else the hooked instruction in flight.
u64 current_rip(UnicornRunner::Run& r) {
    if (!r.blk.valid) return r.cur.addr;
    u64 rip = reg(r.uc, UC_X86_REG_RIP);
    return r.in_block(rip) ? rip : r.cur.addr;
}

void hook_mem(uc_engine*, uc_mem_type type, u64 addr, int size, i64, void* user) {
    UnicornRunner::Run& r = *run_of(user);
    bool write = type == UC_MEM_WRITE;
    u64 rip = r.blk.valid ? current_rip(r) : r.cur.addr;
    bool in_block = r.blk.valid && r.in_block(rip);
    bool first_load = false;
    if (in_block && write && rip != r.last_store_rip) {
        ++r.batch.stores;
        r.last_store_rip = rip;
    } else if (in_block && !write && rip != r.last_load_rip) {
        first_load = true;
        r.last_load_rip = rip;
    } else if (!in_block) {
        first_load = !write && !r.cur.loaded;
        if (!r.cur.loaded && !r.cur.stored) r.cur.data_addr = addr;  // its first access (IBS)
        if (write && !r.cur.stored) r.cur.store_addr = addr;
        if (first_load) r.cur.load_addr = addr;
        (write ? r.cur.stored : r.cur.loaded) = true;
    }
    unsigned level = 0;
    if (r.cache) {
        level = r.cache->access(addr, write);
        u64 in_line = (r.line & (r.line - 1)) == 0 ? addr & (r.line - 1) : addr % r.line;  // no division for 64
        if (in_line + u64(size) > r.line) r.cache->access(addr - in_line + r.line, write);
    }
    if (first_load && in_block) r.count_load(level);
    else if (first_load) r.cur.served = level;
}

void hook_intr(uc_engine*, u32 intno, void* user) {
    UnicornRunner::Run& r = *run_of(user);
    // Traps report the next instruction (SDM Vol. 3A §6.5 "Exception Classifications"):
    // in a body block Unicorn's RIP already points there.
    u64 rip = current_rip(r);
    bool trap = intno == kVectorBP || intno == kVectorOF;
    u64 at = r.in_block(rip) || !trap ? rip : r.cur.addr + r.cur.size;
    r.raise(intno, at, 0, 0);
}

bool hook_invalid_insn(uc_engine*, void* user) {
    UnicornRunner::Run& r = *run_of(user);
    r.raise(kVectorUD, current_rip(r), 0, 0);
    return false;
}

bool hook_bad_mem(uc_engine*, uc_mem_type type, u64 addr, int, i64, void* user) {
    UnicornRunner::Run& r = *run_of(user);
    u64 rip = current_rip(r);
    if (!canonical(addr)) {
        r.raise(kVectorGP, rip, 0, 0);
        return false;
    }
    // A guard page (MeasurePlatform::guard_pages) is mapped without access: not present.
    bool prot = (type == UC_MEM_READ_PROT || type == UC_MEM_WRITE_PROT || type == UC_MEM_FETCH_PROT) &&
                !r.self->guarded(addr);
    bool write = type == UC_MEM_WRITE_UNMAPPED || type == UC_MEM_WRITE_PROT;
    bool fetch = type == UC_MEM_FETCH_UNMAPPED || type == UC_MEM_FETCH_PROT;
    u64 err = (prot ? kPfPresent : 0) | (write ? kPfWrite : 0) | (fetch ? kPfFetch : 0);
    r.raise(kVectorPF, fetch ? addr : rip, err, addr);
    return false;
}

}  // namespace uc_exec

}  // namespace pmulab
