// Generation of the measured region (x86-64 machine code, SysV ABI).
//
// Encodings: Intel SDM Vol. 2, instruction reference (MOV 89/8B/B8+r, PUSH 50+r,
// POP 58+r, DEC FF /1, Jcc 0F 85, RDTSC 0F 31, RDMSR 0F 32, RDPMC 0F 33,
// WRMSR 0F 30, LFENCE 0F AE E8, CPUID 0F A2) and Vol. 2B "NOP" (the recommended
// multi-byte NOP sequences). ModR/M + SIB forms: Vol. 2A §2.1.5.
//
// Layout of a region (docs/measure.md "your own code"):
//   prologue (push callee-saved, pushfq, frame and RSP into the data page,
//   RSP := frame->gpr[RSP] when nonzero, GPRs from the frame), init, [save RAX-RDX],
//   fill, start writes, SER, reads, SER, [reload RAX-RDX], late-init,
//   [drain], [R15 := loop], copies (64k + align_offset), [dec r15; jnz], jmp to the
//   64-byte aligned tail: SER, reads, SER, stop writes, carried registers, exit
//   (RSP, popfq, reads into the frame, pops, ret), then a 4 KiB data page that the
//   code addresses RIP-relative (no register survives user code).
#include <stddef.h>

#include "measure/measure.h"

namespace pmulab {

namespace {

class Emitter {
public:
    explicit Emitter(Vec<u8>* out) : out_(out) {}
    usize pos() const { return out_->size(); }
    void b(u8 v) { out_->push(v); }
    void bytes(const u8* p, usize n) {
        out_->reserve(out_->size() + n);
        for (usize i = 0; i < n; ++i) out_->push(p[i]);
    }
    void d32(u32 v) {
        for (int i = 0; i < 4; ++i) b(u8(v >> (8 * i)));
    }
    void patch32(usize at, u32 v) {
        for (int i = 0; i < 4; ++i) (*out_)[at + i] = u8(v >> (8 * i));
    }

    // opcode with a [base + disp32] memory operand and register `reg`.
    void modrm_mem(u8 opcode, bool w, u8 reg, u8 base, i32 disp) {
        u8 rex = u8(0x40 | (w ? 8 : 0) | ((reg & 8) ? 4 : 0) | ((base & 8) ? 1 : 0));
        if (rex != 0x40) b(rex);
        b(opcode);
        b(u8(0x80 | ((reg & 7) << 3) | (base & 7)));  // mod=10: [base + disp32]
        if ((base & 7) == 4) b(0x24);                 // SIB: no index, base=RSP/R12
        d32(u32(disp));
    }
    void store64(u8 reg, u8 base, i32 disp) { modrm_mem(0x89, true, reg, base, disp); }
    void store32(u8 reg, u8 base, i32 disp) { modrm_mem(0x89, false, reg, base, disp); }
    void load64(u8 reg, u8 base, i32 disp) { modrm_mem(0x8B, true, reg, base, disp); }
    // mov $imm32, %r32 (zero-extends into the 64-bit register).
    void mov_imm32(u8 reg, u32 imm) {
        if (reg & 8) b(0x41);
        b(u8(0xB8 + (reg & 7)));
        d32(imm);
    }
    void push(u8 reg) {
        if (reg & 8) b(0x41);
        b(u8(0x50 + (reg & 7)));
    }
    void pop(u8 reg) {
        if (reg & 8) b(0x41);
        b(u8(0x58 + (reg & 7)));
    }
    void sub_rsp(u32 imm) { b(0x48), b(0x81), b(0xEC), d32(imm); }
    void add_rsp(u32 imm) { b(0x48), b(0x81), b(0xC4), d32(imm); }
    void dec_r15() { b(0x49), b(0xFF), b(0xCF); }
    // jnz to an earlier position.
    void jnz_back(usize target) {
        b(0x0F), b(0x85);
        usize at = pos();
        d32(0);
        patch32(at, u32(i32(i64(target) - i64(at + 4))));
    }
    void lfence() { b(0x0F), b(0xAE), b(0xE8); }
    void cpuid() { b(0x0F), b(0xA2); }
    void xor_eax() { b(0x31), b(0xC0); }
    void rdtsc() { b(0x0F), b(0x31); }
    void rdmsr() { b(0x0F), b(0x32); }
    void rdpmc() { b(0x0F), b(0x33); }
    void wrmsr() { b(0x0F), b(0x30); }
    void ret() { b(0xC3); }

    void serialize(SerializeMode m) {
        if (m == SerializeMode::cpuid) {
            xor_eax();
            cpuid();
        } else {
            lfence();
        }
    }

    // n bytes of NOPs, in the recommended multi-byte forms (at most 9 bytes each).
    void nops(usize n) {
        static constexpr u8 k[9][9] = {
            {0x90},
            {0x66, 0x90},
            {0x0F, 0x1F, 0x00},
            {0x0F, 0x1F, 0x40, 0x00},
            {0x0F, 0x1F, 0x44, 0x00, 0x00},
            {0x66, 0x0F, 0x1F, 0x44, 0x00, 0x00},
            {0x0F, 0x1F, 0x80, 0x00, 0x00, 0x00, 0x00},
            {0x0F, 0x1F, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00},
            {0x66, 0x0F, 0x1F, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00},
        };
        while (n) {
            usize m = n > 9 ? 9 : n;
            bytes(k[m - 1], m);
            n -= m;
        }
    }

    // opcode with a [rip + disp32] operand addressing `data_off` in the data page;
    // fixed up by fix_rip once the code size is known.
    void rip_mem(u8 opcode, bool w, u8 reg, i32 data_off) {
        u8 rex = u8(0x40 | (w ? 8 : 0) | ((reg & 8) ? 4 : 0));
        if (rex != 0x40) b(rex);
        b(opcode);
        b(u8(((reg & 7) << 3) | 5));  // mod=00 rm=101: RIP-relative
        fix_.push(Fix{pos(), data_off});
        d32(0);
    }
    void fix_rip(usize base, usize data_rel) {
        for (const Fix& f : fix_) patch32(f.at, u32(i32(i64(base + data_rel + usize(f.off)) - i64(f.at + 4))));
    }
    void pushfq() { b(0x9C); }
    void popfq() { b(0x9D); }
    void test_rcx() { b(0x48), b(0x85), b(0xC9); }
    void cmovnz_rsp_rcx() { b(0x48), b(0x0F), b(0x45), b(0xE1); }
    usize jmp_fwd() {
        b(0xE9);
        usize at = pos();
        d32(0);
        return at;
    }
    void patch_jmp(usize at, usize target) { patch32(at, u32(i32(i64(target) - i64(at + 4)))); }

private:
    struct Fix {
        usize at;
        i32 off;
    };
    Vec<u8>* out_;
    Vec<Fix> fix_;
};

// The data page after the code (RIP-relative; user code may clobber every register,
// so the harness reaches its state without one):
constexpr i32 kDataFrame = 0;    // the RegionFrame pointer (RDI on entry)
constexpr i32 kDataHostRsp = 8;  // the caller's RSP after the prologue's pushes
constexpr i32 kDataSaved = 16;   // RAX, RBX, RCX, RDX across the start reads (CPUID clobbers RBX)
constexpr i32 kDataReads = 48;   // start values of the n reads, then the end values
constexpr u8 kSavedAcrossReads[4] = {kRax, kRbx, kRcx, kRdx};
constexpr i32 kDataMarkSave = 512;  // RAX, RBX, RCX, RDX, flags across a pause/resume sequence
constexpr i32 kDataMarkAcc = 576;   // per read: the sum of (resume - pause) values of a run
constexpr i32 frame_gpr(unsigned r) { return i32(offsetof(RegionFrame, gpr) + 8 * r); }

// One counter read into EDX:EAX (RDTSC, or ECX = index and RDPMC / RDMSR).
void emit_read(Emitter& e, const CounterRead& r) {
    if (r.kind == CounterAccess::rdtsc) {
        e.rdtsc();
        return;
    }
    e.mov_imm32(kRcx, r.index);
    if (r.kind == CounterAccess::rdpmc) e.rdpmc();
    else e.rdmsr();
}

// One counter read combined into RAX (EDX:EAX -> RAX; RDX clobbered).
void emit_read_rax(Emitter& e, const CounterRead& r) {
    emit_read(e, r);
    e.b(0x48), e.b(0xC1), e.b(0xE2), e.b(0x20);  // shl $32, %rdx
    e.b(0x48), e.b(0x09), e.b(0xD0);             // or %rdx, %rax
}

// The reads (start or end) into data slots starting at `slot0`.
void emit_reads(Emitter& e, const ReadGroup& g, i32 slot0) {
    for (usize i = 0; i < g.reads.size(); ++i) {
        emit_read(e, g.reads[i]);
        i32 slot = slot0 + 8 * i32(i);
        e.rip_mem(0x89, false, kRax, slot);
        e.rip_mem(0x89, false, kRdx, slot + 4);
    }
}

// --no-mem reads: read i combined into RAX, then kept in R8+i (start) or replaced
// by end - start in R8+i (end). No memory access. A PERF_METRICS read (metric != 0) is
// not a count: its bytes are fractions of the slots since the reset, so its end value
// stays as read (absolute; the start is stored as 0, topdown_read_delta scales the end
// bytes by the window's SLOTS, docs/metrics.md "--no-mem").
void emit_reads_no_mem(Emitter& e, const ReadGroup& g, bool end) {
    for (usize i = 0; i < g.reads.size(); ++i) {
        emit_read_rax(e, g.reads[i]);
        u8 reg = u8(i);                                                                   // R8 + i
        if (end && !g.reads[i].metric) e.b(0x4C), e.b(0x29), e.b(u8(0xC0 | (reg << 3)));  // sub %r(8+i), %rax
        e.b(0x49), e.b(0x89), e.b(u8(0xC0 | reg));                                        // mov %rax, %r(8+i)
    }
}

void emit_writes(Emitter& e, const Vec<MsrValue>& ws) {
    for (const MsrValue& w : ws) {
        e.mov_imm32(kRcx, w.msr);
        e.mov_imm32(kRax, u32(w.value));
        e.mov_imm32(kRdx, u32(w.value >> 32));
        e.wrmsr();
    }
}

// nanoBench's -df: 128 NOPs of 15 bytes (66 x6, CS prefix, 0F 1F 84 00 disp32).
void emit_drain(Emitter& e) {
    static constexpr u8 k15[15] = {0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x2E, 0x0F,
                                   0x1F, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00};
    for (int i = 0; i < 128; ++i) e.bytes(k15, 15);
}

// A pause (or resume) marker's replacement: the registers and flags the reads clobber
// saved in the data page, SER, each read's value subtracted from (pause) or added to
// (resume) its accumulator, SER, everything restored. LAHF/SETO and CMP/SAHF keep the
// arithmetic flags without a stack (nanoBench's way). Same instructions both ways, so a
// pause followed by a resume costs the same wherever it is.
void emit_marker(Emitter& e, const RegionSpec& s, bool resume) {
    for (unsigned i = 0; i < 4; ++i) e.rip_mem(0x89, true, kSavedAcrossReads[i], kDataMarkSave + 8 * i32(i));
    e.b(0x9F);                        // lahf
    e.b(0x0F), e.b(0x90), e.b(0xC0);  // seto al
    e.rip_mem(0x89, true, kRax, kDataMarkSave + 32);
    e.serialize(s.serialize);
    const ReadGroup& g = *s.group;
    for (usize i = 0; i < g.reads.size(); ++i) {
        emit_read_rax(e, g.reads[i]);
        e.rip_mem(resume ? 0x01 : 0x29, true, kRax, kDataMarkAcc + 8 * i32(i));  // add/sub %rax, acc[i]
    }
    e.serialize(s.serialize);
    e.rip_mem(0x8B, true, kRax, kDataMarkSave + 32);
    e.b(0x3C), e.b(0x81);  // cmp $-127, %al: OF = the saved OF (SETO's 1 - (-127) overflows)
    e.b(0x9E);             // sahf
    for (unsigned i = 0; i < 4; ++i) e.rip_mem(0x8B, true, kSavedAcrossReads[i], kDataMarkSave + 8 * i32(i));
}

u64 le64(const u8* p) {
    u64 v = 0;
    for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
    return v;
}

// Markers in [p, p + n): each at its offset, in order (kind 0 pause, 1 resume).
template <typename F> void scan_markers(const u8* p, usize n, F&& f) {
    for (usize i = 0; i + 8 <= n;) {
        u64 v = le64(p + i);
        if (v == kPauseMarker || v == kResumeMarker) {
            f(i, v == kResumeMarker);
            i += 8;
        } else {
            ++i;
        }
    }
}

// One copy of the body, markers replaced (only with counter reads in memory).
void emit_copy(Emitter& e, const RegionSpec& s, bool markers) {
    if (!markers) {
        e.bytes(s.body, s.body_len);
        return;
    }
    usize done = 0;
    scan_markers(s.body, s.body_len, [&](usize at, bool resume) {
        e.bytes(s.body + done, at - done);
        emit_marker(e, s, resume);
        done = at + 8;
    });
    e.bytes(s.body + done, s.body_len - done);
}

// Everything from the start writes up to the first copy. The start writes (with
// --topdown the SLOTS/PERF_METRICS reset, then counting on) come after init, right
// before the start reads: PERF_METRICS's fractions cover every slot since the reset, so
// init's slots must not be among them. They clobber RAX, RCX and RDX, which memory
// mode saved after init and reloads after the reads (--no-mem: RAX-RDX do not reach the
// body from init, docs/measure.md).
void emit_window_prefix(Emitter& e, const RegionSpec& s, usize* late_at) {
    if (s.group) {
        emit_writes(e, s.group->start_writes);
        e.serialize(s.serialize);
        if (s.no_mem) emit_reads_no_mem(e, *s.group, false);
        else emit_reads(e, *s.group, kDataReads);
        e.serialize(s.serialize);
        if (!s.no_mem)
            for (unsigned i = 0; i < 4; ++i) e.rip_mem(0x8B, true, kSavedAcrossReads[i], kDataSaved + 8 * i32(i));
    }
    *late_at = e.pos();
    e.bytes(s.late_init.data, s.late_init.len);
    if (s.drain_frontend) emit_drain(e);
    if (s.loop && s.no_mem) {                             // the loop counter (late-init may use R15 freely)
        e.b(0x41), e.b(0xBF), e.d32(u32(s.no_mem_loop));  // mov $L, %r15d
    } else if (s.loop) {
        e.rip_mem(0x8B, true, kR15, kDataFrame);
        e.load64(kR15, kR15, i32(offsetof(RegionFrame, loop)));
    }
}

}  // namespace

const char* serialize_name(SerializeMode m) { return m == SerializeMode::cpuid ? "cpuid" : "lfence"; }

const char* code_block_name(CodeBlock b) {
    switch (b) {
        case CodeBlock::init: return "init";
        case CodeBlock::late_init: return "late-init";
        case CodeBlock::body: return "body";
        case CodeBlock::one_time_init: return "one-time-init";
        case CodeBlock::harness: break;
    }
    return "harness";
}

FaultPlace locate_fault(const Region& r, usize off) {
    FaultPlace p;
    if (r.block == CodeBlock::one_time_init) {
        if (off >= r.init_offset && off - r.init_offset < r.init_len) {
            p.block = CodeBlock::one_time_init;
            p.offset = off - r.init_offset;
        }
        return p;
    }
    if (off >= r.init_offset && off - r.init_offset < r.init_len) {
        p.block = CodeBlock::init;
        p.offset = off - r.init_offset;
    } else if (off >= r.late_init_offset && off - r.late_init_offset < r.late_init_len) {
        p.block = CodeBlock::late_init;
        p.offset = off - r.late_init_offset;
    } else if (r.body_len && off >= r.body_offset && off - r.body_offset < r.copies * r.body_len) {
        p.block = CodeBlock::body;
        p.offset = (off - r.body_offset) % r.body_len;
        p.copy = (off - r.body_offset) / r.body_len;
    }
    return p;
}

Result<u32> check_markers(const UserCodeBlocks& b, bool no_mem) {
    const CodeSpan* others[3] = {&b.init, &b.late_init, &b.one_time_init};
    static const char* const kName[3] = {"--init", "--late-init", "--one-time-init"};
    for (unsigned k = 0; k < 3; ++k) {
        usize first = ~usize(0);
        scan_markers(others[k]->data, others[k]->len, [&](usize at, bool) {
            if (first == ~usize(0)) first = at;
        });
        if (first != ~usize(0))
            return Error::make(Errc::invalid_argument,
                               "%s: a pause/resume marker at offset %u: markers pause the count only in the body "
                               "(--code)",
                               kName[k], unsigned(first));
    }
    u32 pairs = 0;
    bool paused = false;
    usize at_pause = 0;
    Status bad = ok_status();
    scan_markers(b.body.data, b.body.len, [&](usize at, bool resume) {
        if (!bad.ok()) return;
        if (resume && !paused)
            bad = Error::make(Errc::invalid_argument,
                              "--code: a resume marker at offset %u without a pause marker before it", unsigned(at));
        else if (!resume && paused)
            bad = Error::make(Errc::invalid_argument,
                              "--code: a second pause marker at offset %u (the one at offset %u is not resumed yet)",
                              unsigned(at), unsigned(at_pause));
        else if (resume) ++pairs;
        paused = !resume;
        at_pause = at;
    });
    PMULAB_TRY(bad);
    if (paused)
        return Error::make(Errc::invalid_argument,
                           "--code: the pause marker at offset %u is not resumed in the body (each copy must resume "
                           "counting before it ends)",
                           unsigned(at_pause));
    if (pairs && no_mem)
        return Error::make(Errc::invalid_argument,
                           "--no-mem: pause/resume markers keep their sums in the harness's memory; drop --no-mem");
    return pairs;
}

namespace {

// The sizes a region's checks establish, used while emitting it.
struct RegionSizes {
    usize n = 0;         // counter reads
    u64 pairs = 0;       // pause/resume marker pairs in one copy of the body
    usize copy_len = 0;  // one copy, markers expanded
    usize pair_len = 0;  // one expanded marker pair
    u64 pad_pairs = 0;   // marker pairs emitted after the copies (the short version)
};

// The checks that guard the generated code's size and the harness's registers.
Status check_region_limits(const RegionSpec& s, const RegionSizes& z) {
    if (z.pad_pairs && z.pad_pairs > (kMaxRegionBytes - 8192) / z.pair_len)
        return Error::make(Errc::invalid_argument,
                           "the pause/resume markers of %llu copies exceed the %u MiB limit "
                           "for generated code (lower --unroll, raise --loop)",
                           (unsigned long long)s.marker_pad_copies, unsigned(kMaxRegionBytes >> 20));
    if (s.copies && z.copy_len && s.copies > (kMaxRegionBytes - 8192 - z.pad_pairs * z.pair_len) / z.copy_len)
        return Error::make(Errc::invalid_argument,
                           "%llu copies of a %u-byte body exceed the %u MiB limit for generated code "
                           "(lower --unroll, raise --loop)",
                           (unsigned long long)s.copies, unsigned(s.body_len), unsigned(kMaxRegionBytes >> 20));
    if (s.no_mem && z.n > kNoMemReads)
        return Error::make(Errc::invalid_argument,
                           "--no-mem keeps the counter values in R8-R13: at most %u reads per run, this group has %u "
                           "(measure fewer events)",
                           unsigned(kNoMemReads), unsigned(z.n));
    if (s.no_mem && s.no_mem_loop > 0xFFFFFFFFull)
        return Error::make(Errc::invalid_argument, "--no-mem: the loop count must fit in 32 bits");
    if (s.carry & ((1u << kRax) | (1u << kRbx) | (1u << kRcx) | (1u << kRdx) | (1u << kRsp)))
        return Error::make(Errc::internal, "emit_region: RAX, RBX, RCX, RDX and RSP cannot be carried");
    return ok_status();
}

Result<RegionSizes> region_sizes(const RegionSpec& s) {
    RegionSizes z;
    z.n = s.group ? s.group->reads.size() : 0;
    if (s.group && z.n == 0) return Error::make(Errc::internal, "emit_region: no counter reads");
    if (z.n > kMaxReads)
        return Error::make(Errc::invalid_argument, "a counter group has %u reads; at most %u fit in one run",
                           unsigned(z.n), unsigned(kMaxReads));
    if (s.group && !s.no_mem) scan_markers(s.body, s.body_len, [&](usize, bool resume) { z.pairs += resume; });
    if (z.pairs)
        for (const CounterRead& r : s.group->reads)
            if (r.metric)
                return Error::make(Errc::invalid_argument,
                                   "--topdown: pause/resume markers cannot pause IA32_PERF_METRICS: its bytes are "
                                   "fractions of every slot since the reset (SDM Vol. 3B \"Performance Metrics\"), "
                                   "so the paused slots cannot be taken out of them; drop the markers, or measure "
                                   "without --topdown");
    z.copy_len = s.body_len;
    if (z.pairs) {
        Vec<u8> tmp;
        Emitter t(&tmp);
        emit_marker(t, s, false);
        emit_marker(t, s, true);
        z.pair_len = tmp.size();
        z.copy_len = s.body_len + usize(z.pairs) * (z.pair_len - 16);
    }
    z.pad_pairs = z.pairs * s.marker_pad_copies;
    PMULAB_TRY(check_region_limits(s, z));
    return z;
}

constexpr u8 kSaved[6] = {kRbx, kRbp, kR12, kR13, kR14, kR15};

// Prologue: callee-saved registers and flags, the frame pointer and the caller's
// RSP into the data page, the code's registers.
void emit_prologue(Emitter& e, const RegionSpec& s, const RegionSizes& z) {
    for (u8 r : kSaved) e.push(r);
    e.pushfq();
    e.rip_mem(0x89, true, kRdi, kDataFrame);
    if (z.pairs) {  // the accumulators start at 0 in every run
        e.xor_eax();
        for (usize i = 0; i < z.n; ++i) e.rip_mem(0x89, true, kRax, kDataMarkAcc + 8 * i32(i));
    }
    e.rip_mem(0x89, true, kRsp, kDataHostRsp);
    // RSP: the frame's private stack when it has one (cmovnz: no branch).
    e.load64(kRcx, kRdi, frame_gpr(kRsp));
    e.test_rcx();
    e.cmovnz_rsp_rcx();
    static constexpr u8 kLoaded[] = {kRax, kRbx, kRcx, kRdx, kRbp, kRsi, kR8, kR9, kR10, kR11, kR12, kR13, kR14, kR15};
    for (u8 r : kLoaded) e.load64(r, kRdi, frame_gpr(r));
    e.load64(kRdi, kRdi, frame_gpr(kRdi));
}

// The init block, then the window's start with the first copy 64-byte aligned
// (+ align_offset): the fill runs before the window opens.
void emit_init_and_window_start(Emitter& e, const RegionSpec& s, usize base, RegionLayout* lay) {
    lay->init_offset = e.pos() - base;
    e.bytes(s.init.data, s.init.len);
    if (s.group && !s.no_mem)
        for (unsigned i = 0; i < 4; ++i) e.rip_mem(0x89, true, kSavedAcrossReads[i], kDataSaved + 8 * i32(i));
    Vec<u8> scratch;
    Emitter probe(&scratch);
    usize late_probe = 0;
    emit_window_prefix(probe, s, &late_probe);
    usize at = e.pos() - base + scratch.size();
    e.nops((64 + (s.align_offset % 64) - at % 64) % 64);
    usize late_at = 0;
    emit_window_prefix(e, s, &late_at);
    lay->late_init_offset = late_at - base;
}

// The copies of the body, the markers' padding and the loop, then a jump over the
// fill to a 64-byte aligned tail.
void emit_copies(Emitter& e, const RegionSpec& s, const RegionSizes& z, usize base, RegionLayout* lay) {
    lay->body_offset = e.pos() - base;
    for (u64 c = 0; c < s.copies; ++c) emit_copy(e, s, z.pairs != 0);
    lay->body_end = e.pos() - base;
    lay->copy_len = z.copy_len;
    for (u64 k = 0; k < z.pad_pairs; ++k) {  // the markers' cost, for the U/2U difference
        emit_marker(e, s, false);
        emit_marker(e, s, true);
    }
    if (s.loop) {
        e.dec_r15();
        e.jnz_back(base + lay->body_offset);
    }
    // Everything after the copies starts 64-byte aligned in every version: a jump over
    // the fill (the same instruction in both versions, so it cancels).
    usize jmp_at = e.jmp_fwd();
    e.nops((64 - (e.pos() - base) % 64) % 64);
    e.patch_jmp(jmp_at, e.pos());
    lay->tail_offset = e.pos() - base;
}

// The window's end: the end reads and the stop writes, then the carried registers.
void emit_window_end(Emitter& e, const RegionSpec& s, usize n) {
    if (s.group) {
        e.serialize(s.serialize);
        if (s.no_mem) emit_reads_no_mem(e, *s.group, true);
        else emit_reads(e, *s.group, kDataReads + 8 * i32(n));
        e.serialize(s.serialize);
        if (s.no_mem) {  // the window is closed: start = 0, end = the difference
            e.xor_eax();
            for (usize i = 0; i < n; ++i) {
                e.rip_mem(0x89, true, kRax, kDataReads + 8 * i32(i));
                e.rip_mem(0x89, true, u8(kR8 + i), kDataReads + 8 * i32(n + i));
            }
        }
        emit_writes(e, s.group->stop_writes);
    }
    for (unsigned r = 0; r < kGprCount; ++r) {
        if (!(s.carry & (1u << r))) continue;
        e.rip_mem(0x8B, true, kRax, kDataFrame);
        e.store64(u8(r), kRax, frame_gpr(r));
    }
}

// Exit (also the resume point after a fault): the caller's stack and flags, the
// reads into the frame, the callee-saved registers.
void emit_exit(Emitter& e, const RegionSpec& s, const RegionSizes& z) {
    e.rip_mem(0x8B, true, kRsp, kDataHostRsp);
    e.popfq();
    if (s.group) {
        e.rip_mem(0x8B, true, kRdi, kDataFrame);
        for (usize i = 0; i < z.n; ++i) {
            e.rip_mem(0x8B, true, kRax, kDataReads + 8 * i32(i));
            e.store64(kRax, kRdi, i32(offsetof(RegionFrame, start) + 8 * i));
            e.rip_mem(0x8B, true, kRax, kDataReads + 8 * i32(z.n + i));
            if (z.pairs) e.rip_mem(0x2B, true, kRax, kDataMarkAcc + 8 * i32(i));  // sub acc[i], %rax: the pauses
            e.store64(kRax, kRdi, i32(offsetof(RegionFrame, end) + 8 * i));
        }
    }
    for (int i = 5; i >= 0; --i) e.pop(kSaved[i]);
    e.ret();
}

}  // namespace

Result<RegionLayout> emit_region(const RegionSpec& s, Vec<u8>* out) {
    Result<RegionSizes> zr = region_sizes(s);
    if (!zr.ok()) return zr.error();
    const RegionSizes& z = zr.value();
    usize base = out->size();
    Emitter e(out);
    out->reserve(base + 8192 + z.n * 64 + s.init.len + s.late_init.len + usize(s.copies) * z.copy_len +
                 usize(z.pad_pairs) * z.pair_len);
    RegionLayout lay;
    emit_prologue(e, s, z);
    emit_init_and_window_start(e, s, base, &lay);
    emit_copies(e, s, z, base, &lay);
    emit_window_end(e, s, z.n);
    lay.exit_offset = e.pos() - base;
    emit_exit(e, s, z);
    lay.code_size = e.pos() - base;
    // The data page: its own 4 KiB page, so that the harness's stores never share a
    // page with code in flight (self-modifying-code detection).
    usize data = (lay.code_size + 4095) & ~usize(4095);
    e.fix_rip(base, data);
    out->resize(base + data + 4096);
    for (usize i = base + lay.code_size; i < out->size(); ++i) (*out)[i] = 0;
    lay.size = out->size() - base;
    return lay;
}

}  // namespace pmulab
