// Generation of the measured region (x86-64 machine code, SysV ABI).
//
// Encodings: Intel SDM Vol. 2, instruction reference (MOV 89/8B/B8+r, PUSH 50+r,
// POP 58+r, DEC FF /1, Jcc 0F 85, RDTSC 0F 31, RDMSR 0F 32, RDPMC 0F 33,
// WRMSR 0F 30, LFENCE 0F AE E8, CPUID 0F A2) and Vol. 2B "NOP" (the recommended
// multi-byte NOP sequences). ModR/M + SIB forms: Vol. 2A §2.1.5.
//
// Stack frame of the generated function (RSP-relative; the kernel never touches RSP):
//   [0]            the RegionFrame pointer (RDI on entry)
//   [8..40)        the kernel's initial RAX, RBX, RCX, RDX (reloaded after the start
//                  reads, which clobber them)
//   [40..40+8n)    start values of the n reads
//   [40+8n..40+16n) end values
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

private:
    Vec<u8>* out_;
};

constexpr i32 kLocFrame = 0;
constexpr u8 kReloaded[4] = {kRax, kRbx, kRcx, kRdx};
constexpr i32 loc_reloaded(unsigned i) { return 8 + 8 * i32(i); }
constexpr i32 kLocReads = 40;
constexpr i32 frame_gpr(unsigned r) { return i32(offsetof(RegionFrame, gpr) + 8 * r); }

// The reads (start or end) into stack slots starting at `slot0`.
void emit_reads(Emitter& e, const ReadGroup& g, i32 slot0) {
    for (usize i = 0; i < g.reads.size(); ++i) {
        const CounterRead& r = g.reads[i];
        switch (r.kind) {
            case CounterAccess::rdtsc: e.rdtsc(); break;
            case CounterAccess::rdpmc:
                e.mov_imm32(kRcx, r.index);
                e.rdpmc();
                break;
            case CounterAccess::rdmsr:
                e.mov_imm32(kRcx, r.index);
                e.rdmsr();
                break;
        }
        i32 slot = slot0 + 8 * i32(i);
        e.store32(kRax, kRsp, slot);
        e.store32(kRdx, kRsp, slot + 4);
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

// Everything from the start serialisation up to the first copy.
void emit_window_prefix(Emitter& e, const RegionSpec& s) {
    e.serialize(s.serialize);
    emit_reads(e, *s.group, kLocReads);
    e.serialize(s.serialize);
    for (unsigned i = 0; i < 4; ++i) e.load64(kReloaded[i], kRsp, loc_reloaded(i));
}

}  // namespace

const char* serialize_name(SerializeMode m) { return m == SerializeMode::cpuid ? "cpuid" : "lfence"; }

Result<RegionLayout> emit_region(const RegionSpec& s, Vec<u8>* out) {
    if (!s.group || s.group->reads.empty()) return Error::make(Errc::internal, "emit_region: no counter reads");
    usize n = s.group->reads.size();
    if (n > kMaxReads)
        return Error::make(Errc::invalid_argument, "a counter group has %u reads; at most %u fit in one run",
                           unsigned(n), unsigned(kMaxReads));
    if (s.copies && s.body_len && s.copies > (kMaxRegionBytes - 4096) / s.body_len)
        return Error::make(Errc::invalid_argument,
                           "%llu copies of a %u-byte body exceed the %u MiB limit for generated code "
                           "(lower --unroll, raise --loop)",
                           (unsigned long long)s.copies, unsigned(s.body_len), unsigned(kMaxRegionBytes >> 20));
    usize base = out->size();
    Emitter e(out);
    out->reserve(base + 512 + n * 64 + usize(s.copies) * s.body_len);
    u32 locals = u32((kLocReads + 16 * n + 15) & ~usize(15));

    // Prologue: callee-saved registers, locals, the kernel's registers.
    static constexpr u8 kSaved[6] = {kRbx, kRbp, kR12, kR13, kR14, kR15};
    for (u8 r : kSaved) e.push(r);
    e.sub_rsp(locals);
    e.store64(kRdi, kRsp, kLocFrame);
    for (unsigned i = 0; i < 4; ++i) {
        e.load64(kRax, kRdi, frame_gpr(kReloaded[i]));
        e.store64(kRax, kRsp, loc_reloaded(i));
    }
    e.load64(kR15, kRdi, i32(offsetof(RegionFrame, loop)));
    static constexpr u8 kLoaded[] = {kRbx, kRbp, kRsi, kR8, kR9, kR10, kR11, kR12, kR13, kR14};
    for (u8 r : kLoaded) e.load64(r, kRdi, frame_gpr(r));
    e.load64(kRdi, kRdi, frame_gpr(kRdi));
    emit_writes(e, s.group->start_writes);

    // Align the first copy to 64 bytes: the fill runs before the window opens.
    Vec<u8> scratch;
    Emitter probe(&scratch);
    emit_window_prefix(probe, s);
    usize at = e.pos() - base + scratch.size();
    e.nops((64 - at % 64) % 64);
    emit_window_prefix(e, s);

    RegionLayout lay;
    lay.body_offset = e.pos() - base;
    for (u64 c = 0; c < s.copies; ++c) e.bytes(s.body, s.body_len);
    lay.body_end = e.pos() - base;
    if (s.loop) {
        e.dec_r15();
        e.jnz_back(base + lay.body_offset);
    }
    e.serialize(s.serialize);
    emit_reads(e, *s.group, kLocReads + 8 * i32(n));
    e.serialize(s.serialize);
    emit_writes(e, s.group->stop_writes);

    // Epilogue: results into the frame, restore, return.
    e.load64(kRdi, kRsp, kLocFrame);
    for (usize i = 0; i < n; ++i) {
        e.load64(kRax, kRsp, kLocReads + 8 * i32(i));
        e.store64(kRax, kRdi, i32(offsetof(RegionFrame, start) + 8 * i));
        e.load64(kRax, kRsp, kLocReads + 8 * i32(n + i));
        e.store64(kRax, kRdi, i32(offsetof(RegionFrame, end) + 8 * i));
    }
    e.add_rsp(locals);
    for (int i = 5; i >= 0; --i) e.pop(kSaved[i]);
    e.ret();
    lay.size = e.pos() - base;
    return lay;
}

}  // namespace pmulab
