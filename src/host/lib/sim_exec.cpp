#include "sim_exec.h"

#include <cstdlib>
#include <cstring>

#include "sim/sim_netburst.h"
#include "x86_length.h"

namespace pmulab {

namespace {

constexpr u8 kInsn = 0xCC;         // one kernel instruction
constexpr u8 kBranch = 0xCB;       // one kernel branch instruction
constexpr u8 kUnfollowable = 255;  // fault vector of code the executor cannot follow

// Branches per iteration of a built-in kernel, from its AT&T text: the conditional jumps
// (the branch kernels are counted on their taken path, where the JMP is skipped).
u32 kernel_branches(const KernelInfo& k) {
    u32 n = 0;
    const char* s = k.body;
    while (s && *s) {
        while (*s == ' ' || *s == ';') ++s;
        const char* w = s;
        while (*s && *s != ';') ++s;
        // Skip a label ("1: nop").
        const char* colon = static_cast<const char*>(std::memchr(w, ':', usize(s - w)));
        if (colon) {
            w = colon + 1;
            while (*w == ' ') ++w;
        }
        if (s - w >= 2 && w[0] == 'j' && std::strncmp(w, "jmp", 3) != 0) ++n;
    }
    return n;
}

u32 imm32(const u8* c) { return u32(c[0]) | (u32(c[1]) << 8) | (u32(c[2]) << 16) | (u32(c[3]) << 24); }

}  // namespace

SimExec::SimExec(sim::SimMachine& m) : m_(m) {}

SimExec::~SimExec() {
    for (auto& [p, bytes] : live_) std::free(p);
}

Result<void*> SimExec::alloc_pages(usize bytes, bool) {
    void* p = std::aligned_alloc(4096, (bytes + 4095) & ~usize(4095));
    if (!p) return Error::make(Errc::io, "out of host memory (%llu bytes)", (unsigned long long)bytes);
    live_[p] = bytes;
    return p;
}

void SimExec::free_pages(void* p, usize) {
    live_.erase(p);
    std::free(p);
}

CodeSpan SimExec::kernel_body(KernelId id) {
    const KernelInfo& k = kernel_info(id);
    u8* b = bodies_[unsigned(id)];
    u32 n = k.instructions < 64 ? k.instructions : 64;
    u32 br = kernel_branches(k);
    for (u32 i = 0; i < n; ++i) b[i] = i < br ? kBranch : kInsn;
    return CodeSpan{b, n};
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

bool SimExec::count_body(const u8* body, usize len, BodyCount* out) {
    *out = BodyCount();
    bool model = true;
    for (usize i = 0; i < len && model; ++i) model = body[i] == kInsn || body[i] == kBranch;
    if (model) {
        out->instructions = len;
        for (usize i = 0; i < len; ++i) out->branches += body[i] == kBranch;
        return true;
    }
    usize at = 0;
    while (at < len) {
        x86len::Insn in;
        if (!x86len::decode(body + at, len - at, &in)) {
            out->bad_offset = at;
            out->why = "an instruction the simulator's decoder does not know (or one cut off by the end of the body)";
            return false;
        }
        ++out->instructions;
        usize next = at + in.len;
        switch (in.flow) {
            case x86len::Flow::none: at = next; continue;
            case x86len::Flow::jmp_rel: {
                i64 target = i64(next) + in.rel;
                ++out->branches;
                if (target < i64(next) || target > i64(len)) {
                    out->bad_offset = at;
                    out->why =
                        "a JMP backwards or out of the body (the simulator follows forward jumps inside it only)";
                    return false;
                }
                at = usize(target);
                continue;
            }
            case x86len::Flow::jcc_rel:
                out->bad_offset = at;
                out->why = "a conditional branch (Jcc/LOOP/JrCXZ): its direction depends on data the simulator does "
                           "not model";
                return false;
            case x86len::Flow::call_rel:
            case x86len::Flow::ret:
            case x86len::Flow::indirect:
                out->bad_offset = at;
                out->why = "a CALL, RET or indirect jump: the simulator does not model the stack or register values";
                return false;
            case x86len::Flow::syscall:
                out->bad_offset = at;
                out->why = "an instruction that leaves the code (INT, UD2, SYSCALL, HLT, far transfer)";
                return false;
        }
    }
    return true;
}

// One run() of the simulated CPU per call (its SMI model counts the calls); the branches
// are delivered as events of their own within those cycles.
void SimExec::retire(sim::SimCpu& cpu, u64 instructions, u64 branches) {
    if (!instructions) return;
    if (branches > instructions) branches = instructions;
    if (cpu.netburst()) {
        namespace nb = sim::nb;
        sim::nb_run(cpu, instructions, {{nb::kInstrRetired, nb::NBOGUSNTAG, 1}, {nb::kUopsRetired, nb::NBOGUS, 1}});
        if (branches) sim::nb_event(cpu, nb::kBranchRetired, nb::MMTP, branches);
    } else if (cpu.pmu().kind == sim::PmuLayout::Kind::amd) {
        cpu.run(instructions, {{0xC0, 0x00, 1}, {0x76, 0x00, 1}});
        if (branches) cpu.event(0xC2, 0x00, branches);
    } else {
        // TOPDOWN.SLOTS (A4H/01H, fixed counter 3): CPUID.23H.0:ECX[7:0] slots per cycle, else 4;
        // where a test gave the CPU a TopDown slot budget (sim_topdown.h), run() issues the
        // slots and their categories from it instead.
        if (cpu.has_topdown_budget()) {
            cpu.run(instructions, {{0xC0, 0x00, 1}});
        } else {
            u64 slots = 4;
            CpuidRegs l23;
            if (cpu.snapshot().find(0x23, 0, &l23) && (l23.ecx & 0xFF)) slots = l23.ecx & 0xFF;
            cpu.run(instructions, {{0xC0, 0x00, 1}, {0xA4, 0x01, slots}});
        }
        if (branches) cpu.event(0xC4, 0x00, branches);
    }
    cpu.ref_cycles(instructions);
}

void SimExec::execute(const Region& region, RegionFrame* frame) {
    ++executions_;
    const u8* c = static_cast<const u8*>(region.code);
    sim::SimCpu& cpu = m_.cpu(m_.current_cpu());
    if (!masked_) problem("the engine ran a region with interrupts not masked");

    // The body first: code the executor cannot follow does not run at all.
    BodyCount body;
    usize body_bytes = usize(region.copies) * region.body_len;
    if (region.block == CodeBlock::body && region.body_len && region.copies &&
        !count_body(c + region.body_offset, region.body_len, &body)) {
        char msg[400];
        std::snprintf(msg, sizeof msg, "the simulator cannot run the code: offset %zu of the body holds %s",
                      body.bad_offset, body.why.c_str());
        problem(msg);
        frame->faulted = 1;
        frame->fault_vector = kUnfollowable;
        frame->fault_rip = u64(reinterpret_cast<uintptr_t>(c + region.body_offset + body.bad_offset));
        return;
    }

    // The harness: everything outside the user blocks and the copies, in order.
    struct Range {
        usize from, to;
    };
    Range skip[3] = {{region.init_offset, region.init_offset + region.init_len},
                     {region.late_init_offset, region.late_init_offset + region.late_init_len},
                     {region.body_offset, region.body_offset + body_bytes}};
    if (region.block != CodeBlock::body) skip[2] = {0, 0};
    struct Op {
        enum Kind { rdpmc, rdmsr, wrmsr, rdtsc, lfence, body } kind;
        u32 arg = 0;
        u64 value = 0;
    };
    std::vector<Op> ops;
    usize n = region.code_size ? region.code_size : region.size;
    bool body_done = false;
    for (usize i = 0; i < n;) {
        bool skipped = false;
        for (int k = 0; k < 3; ++k)
            if (skip[k].to > skip[k].from && i >= skip[k].from && i < skip[k].to) {
                if (k == 2 && !body_done) {
                    ops.push_back({Op::body});
                    body_done = true;
                }
                i = skip[k].to;
                skipped = true;
            }
        if (skipped) continue;
        if (region.block == CodeBlock::body && i == region.body_offset && !body_done) {
            ops.push_back({Op::body});  // zero copies
            body_done = true;
        }
        if (i + 7 <= n && c[i] == 0xB9 && c[i + 5] == 0x0F && (c[i + 6] == 0x33 || c[i + 6] == 0x32)) {
            ops.push_back({c[i + 6] == 0x33 ? Op::rdpmc : Op::rdmsr, imm32(c + i + 1)});
            i += 7;
        } else if (i + 17 <= n && c[i] == 0xB9 && c[i + 5] == 0xB8 && c[i + 10] == 0xBA && c[i + 15] == 0x0F &&
                   c[i + 16] == 0x30) {
            ops.push_back({Op::wrmsr, imm32(c + i + 1), u64(imm32(c + i + 6)) | (u64(imm32(c + i + 11)) << 32)});
            i += 17;
        } else if (i + 2 <= n && c[i] == 0x0F && c[i + 1] == 0x31) {
            ops.push_back({Op::rdtsc});
            i += 2;
        } else if (i + 3 <= n && c[i] == 0x0F && c[i + 1] == 0xAE && c[i + 2] == 0xE8) {
            ops.push_back({Op::lfence});
            i += 3;
        } else {
            ++i;
        }
    }
    usize reads = 0;
    for (const Op& o : ops) reads += o.kind == Op::rdpmc || o.kind == Op::rdmsr || o.kind == Op::rdtsc;
    usize half = reads / 2, k = 0;
    auto store = [&](u64 v) {
        if (k < half && k < kMaxReads) frame->start[k] = v;
        else if (k >= half && k - half < kMaxReads) frame->end[k - half] = v;
        ++k;
    };
    auto fault = [&](const char* what, u32 arg, const Error& e) {
        char msg[300];
        std::snprintf(msg, sizeof msg, "generated code: %s 0x%x faulted on CPU %u: %s", what, arg, m_.current_cpu(),
                      e.msg);
        problem(msg);
    };
    for (const Op& o : ops) {
        switch (o.kind) {
            case Op::rdpmc: {
                Result<u64> r = m_.rdpmc(o.arg);
                if (!r.ok()) fault("RDPMC", o.arg, r.error());
                store(r.ok() ? r.value() : 0);
                break;
            }
            case Op::rdmsr: {
                Result<u64> r = m_.rdmsr(o.arg);
                if (!r.ok()) fault("RDMSR", o.arg, r.error());
                store(r.ok() ? r.value() : 0);
                break;
            }
            case Op::rdtsc: store(m_.rdtsc()); break;
            case Op::lfence: break;
            case Op::wrmsr: {
                Status s = m_.wrmsr(o.arg, o.value);
                if (!s.ok()) fault("WRMSR", o.arg, s.error());
                break;
            }
            case Op::body: {
                u64 loop = region.loop ? region.loop : 1;
                // The loop around the copies (dec r15; jnz) is the same in both versions and
                // cancels; like the rest of the harness outside the decoded accesses, it is
                // not counted.
                // The kernel's own TopDown slot budget applies inside it, where a test gave one.
                cpu.set_in_body(true);
                retire(cpu, region.copies * loop * body.instructions, region.copies * loop * body.branches);
                cpu.set_in_body(false);
                continue;
            }
        }
        retire(cpu, 1, 0);
    }
}

}  // namespace pmulab
