#include "sim_scan.h"

#include <cstdio>
#include <cstring>
#include <vector>

#include "x86_length.h"

namespace pmulab {

namespace {

constexpr u8 kInsn = 0xCC;         // one kernel instruction
constexpr u8 kBranch = 0xCB;       // one kernel branch instruction
constexpr u8 kUnfollowable = 255;  // fault vector of code the runner cannot follow

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

// One step of the harness, in order.
struct Op {
    enum Kind { rdpmc, rdmsr, wrmsr, rdtsc, lfence, body } kind;
    u32 arg = 0;
    u64 value = 0;
};

// The harness access at c[i] (at most n bytes): its length, 0 for none.
usize decode_access(const u8* c, usize i, usize n, Op* op) {
    if (i + 7 <= n && c[i] == 0xB9 && c[i + 5] == 0x0F && (c[i + 6] == 0x33 || c[i + 6] == 0x32)) {
        *op = {c[i + 6] == 0x33 ? Op::rdpmc : Op::rdmsr, imm32(c + i + 1)};
        return 7;
    }
    if (i + 17 <= n && c[i] == 0xB9 && c[i + 5] == 0xB8 && c[i + 10] == 0xBA && c[i + 15] == 0x0F &&
        c[i + 16] == 0x30) {
        *op = {Op::wrmsr, imm32(c + i + 1), u64(imm32(c + i + 6)) | (u64(imm32(c + i + 11)) << 32)};
        return 17;
    }
    if (i + 2 <= n && c[i] == 0x0F && c[i + 1] == 0x31) {
        *op = {Op::rdtsc};
        return 2;
    }
    if (i + 3 <= n && c[i] == 0x0F && c[i + 1] == 0xAE && c[i + 2] == 0xE8) {
        *op = {Op::lfence};
        return 3;
    }
    return 0;
}

// The harness's steps: everything outside the user blocks and the copies, in order, with
// the body (the copies, or where they would be) as one step.
std::vector<Op> scan_harness(const Region& region) {
    const u8* c = static_cast<const u8*>(region.code);
    usize body_bytes = usize(region.copies) * region.body_len;
    struct Range {
        usize from, to;
    };
    Range skip[3] = {{region.init_offset, region.init_offset + region.init_len},
                     {region.late_init_offset, region.late_init_offset + region.late_init_len},
                     {region.body_offset, region.body_offset + body_bytes}};
    if (region.block != CodeBlock::body) skip[2] = {0, 0};
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
        Op op{Op::body};
        usize len = decode_access(c, i, n, &op);
        if (len) ops.push_back(op);
        i += len ? len : 1;
    }
    return ops;
}

// Performs the steps on the CPU: the reads fill the frame's start values (the first
// half), then its end values.
void perform(const std::vector<Op>& ops, const Region& region, const ScanRunner::BodyCount& body, RegionFrame* frame,
             sim::SimCpu& cpu, SimProblems& problems) {
    usize reads = 0;
    for (const Op& o : ops) reads += o.kind == Op::rdpmc || o.kind == Op::rdmsr || o.kind == Op::rdtsc;
    usize half = reads / 2, k = 0;
    auto store = [&](u64 v) {
        if (k < half && k < kMaxReads) frame->start[k] = v;
        else if (k >= half && k - half < kMaxReads) frame->end[k - half] = v;
        ++k;
    };
    auto checked = [&](const char* what, u32 arg, const Error* e) {
        if (!e) return;
        char msg[300];
        std::snprintf(msg, sizeof msg, "generated code: %s 0x%x faulted on CPU %u: %s", what, arg, cpu.index(), e->msg);
        problems.problem(msg);
    };
    for (const Op& o : ops) {
        if (o.kind == Op::body) {
            // The loop around the copies (dec r15; jnz) is the same in both versions and
            // cancels; like the rest of the harness outside the decoded accesses, it is
            // not counted.
            u64 times = region.copies * (region.loop ? region.loop : 1);
            cpu.retire({times * body.instructions, times * body.branches, true});
            continue;
        }
        if (o.kind == Op::rdpmc || o.kind == Op::rdmsr) {
            Result<u64> r = o.kind == Op::rdpmc ? cpu.rdpmc(o.arg) : cpu.rdmsr(o.arg);
            checked(o.kind == Op::rdpmc ? "RDPMC" : "RDMSR", o.arg, r.ok() ? nullptr : &r.error());
            store(r.ok() ? r.value() : 0);
        } else if (o.kind == Op::rdtsc) {
            store(cpu.rdtsc());
        } else if (o.kind == Op::wrmsr) {
            Status s = cpu.wrmsr(o.arg, o.value);
            checked("WRMSR", o.arg, s.ok() ? nullptr : &s.error());
        }
        cpu.retire({1, 0});
    }
}

}  // namespace

CodeSpan ScanRunner::kernel_body(KernelId id) {
    const KernelInfo& k = kernel_info(id);
    u8* b = bodies_[unsigned(id)];
    u32 n = k.instructions < 64 ? k.instructions : 64;
    u32 br = kernel_branches(k);
    for (u32 i = 0; i < n; ++i) b[i] = i < br ? kBranch : kInsn;
    return CodeSpan{b, n};
}

bool ScanRunner::count_body(const u8* body, usize len, BodyCount* out) {
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

void ScanRunner::execute(const Region& region, RegionFrame* frame, sim::SimCpu& cpu, SimProblems& problems) {
    // The body first: code the runner cannot follow does not run at all.
    const u8* c = static_cast<const u8*>(region.code);
    BodyCount body;
    if (region.block == CodeBlock::body && region.body_len && region.copies &&
        !count_body(c + region.body_offset, region.body_len, &body)) {
        char msg[400];
        std::snprintf(msg, sizeof msg, "the simulator cannot run the code: offset %zu of the body holds %s",
                      body.bad_offset, body.why.c_str());
        problems.problem(msg);
        frame->faulted = 1;
        frame->fault_vector = kUnfollowable;
        frame->fault_rip = u64(reinterpret_cast<uintptr_t>(c + region.body_offset + body.bad_offset));
        return;
    }
    perform(scan_harness(region), region, body, frame, cpu, problems);
}

std::unique_ptr<SimRunner> make_sim_runner() { return std::make_unique<ScanRunner>(); }

}  // namespace pmulab
