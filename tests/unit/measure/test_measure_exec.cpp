// The generated measurement code, executed for real on the host CPU (user mode:
// RDTSC, LFENCE, CPUID and the kernel bodies work there; RDMSR/RDPMC do not and are
// only checked byte by byte). The kernel bodies are src/measure/kernel_bodies.S itself,
// assembled into this test.
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cstring>
#include <string>
#include <vector>

#include "measure/kernel_bodies.h"
#include "support/measure_test_util.h"

// The same bodies as the EFI binary (make runs the compiler from the repository root).
__asm__(".pushsection .text\n.include \"src/measure/kernel_bodies.S\"\n.popsection\n");

// Calls code(frame) with known values in the callee-saved registers and stores what
// they hold afterwards in out[0..5] (RBX, RBP, R12, R13, R14, R15).
extern "C" void pmulab_test_call_checked(const void* code, pmulab::RegionFrame* frame, pmulab::u64* out);
__asm__(R"(
    .pushsection .text
    .globl pmulab_test_call_checked
pmulab_test_call_checked:
    push %rbx
    push %rbp
    push %r12
    push %r13
    push %r14
    push %r15
    push %rdx
    movabs $0x1111111111111111, %rbx
    movabs $0x2222222222222222, %rbp
    movabs $0x3333333333333333, %r12
    movabs $0x4444444444444444, %r13
    movabs $0x5555555555555555, %r14
    movabs $0x6666666666666666, %r15
    mov %rdi, %rax
    mov %rsi, %rdi
    call *%rax
    pop %rdx
    mov %rbx, 0(%rdx)
    mov %rbp, 8(%rdx)
    mov %r12, 16(%rdx)
    mov %r13, 24(%rdx)
    mov %r14, 32(%rdx)
    mov %r15, 40(%rdx)
    pop %r15
    pop %r14
    pop %r13
    pop %r12
    pop %rbp
    pop %rbx
    ret
    .popsection
)");

using namespace pmulab;

namespace {

constexpr u64 kMagic[6] = {0x1111111111111111ull, 0x2222222222222222ull, 0x3333333333333333ull,
                           0x4444444444444444ull, 0x5555555555555555ull, 0x6666666666666666ull};

// Executable pages from mmap; the region is called through the checking wrapper.
class HostExec final : public MeasurePlatform {
public:
    Result<void*> alloc_pages(usize bytes, bool executable) override {
        void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE | (executable ? PROT_EXEC : 0),
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) return Error::make(Errc::io, "mmap failed");
        return p;
    }
    void free_pages(void* p, usize bytes) override { munmap(p, bytes); }
    CodeSpan kernel_body(KernelId id) override { return builtin_kernel_body(id); }
    Status irq_mask(IrqMode, IrqSaved*) override { return ok_status(); }
    void irq_restore(const IrqSaved&) override {}
    void serialize() override {}
    void execute(const Region& region, RegionFrame* frame) override {
        u64 after[6];
        pmulab_test_call_checked(region.code, frame, after);
        for (int i = 0; i < 6; ++i)
            if (after[i] != kMagic[i]) ++clobbers;
        ++executions;
    }
    int clobbers = 0;
    int executions = 0;
};

std::vector<u8> bytes_of(KernelId id) {
    CodeSpan s = builtin_kernel_body(id);
    return std::vector<u8>(s.data, s.data + s.len);
}

Vec<ReadGroup> tsc_group() {
    Vec<StrView> specs;
    specs.push(StrView("tsc"));
    Vec<ReadGroup> g;
    EXPECT_TRUE(plan_event_groups(specs, &g).ok());
    return g;
}

// Generates a region into executable memory.
struct Gen {
    void* mem = nullptr;
    usize len = 0;
    RegionLayout lay;
    std::vector<u8> code;
    Gen(const RegionSpec& spec) {
        Vec<u8> out;
        Result<RegionLayout> r = emit_region(spec, &out);
        EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().msg);
        lay = r.value();
        code.assign(out.data(), out.data() + out.size());
        len = (out.size() + 4095) & ~usize(4095);
        mem = mmap(nullptr, len, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        std::memcpy(mem, out.data(), out.size());
    }
    ~Gen() { munmap(mem, len); }
    void call(RegionFrame* f, int* clobbers) {
        u64 after[6];
        pmulab_test_call_checked(mem, f, after);
        for (int i = 0; i < 6; ++i)
            if (after[i] != kMagic[i]) ++*clobbers;
    }
};

bool contains(const std::vector<u8>& hay, std::vector<u8> needle) {
    return std::search(hay.begin(), hay.end(), needle.begin(), needle.end()) != hay.end();
}

}  // namespace

TEST(MeasureExec, KernelBodiesAreTheDocumentedInstructions) {
    using V = std::vector<u8>;
    EXPECT_EQ(bytes_of(KernelId::empty), V{});
    EXPECT_EQ(bytes_of(KernelId::nop), (V{0x90}));
    EXPECT_EQ(bytes_of(KernelId::add_chain), (V{0x48, 0x83, 0xC0, 0x01}));
    EXPECT_EQ(bytes_of(KernelId::add_indep).size(), 32u);  // eight 4-byte ADDs
    EXPECT_EQ(bytes_of(KernelId::imul_chain), (V{0x48, 0x0F, 0xAF, 0xC0}));
    EXPECT_EQ(bytes_of(KernelId::div_chain), (V{0x48, 0xF7, 0xF1}));
    EXPECT_EQ(bytes_of(KernelId::pointer_chase), (V{0x48, 0x8B, 0x36}));  // mov (%rsi), %rsi
    EXPECT_EQ(bytes_of(KernelId::store_stream), (V{0x48, 0x89, 0x04, 0x33, 0x48, 0x83, 0xC6, 0x40, 0x48, 0x21, 0xFE}));
    EXPECT_EQ(bytes_of(KernelId::load_stream), (V{0x48, 0x8B, 0x04, 0x33, 0x48, 0x83, 0xC6, 0x40, 0x48, 0x21, 0xFE}));
    // imul r9,r8; add r10,r8; test r8,r8; js +3; nop; jmp +2; nop; nop
    V branch{0x4D, 0x0F, 0xAF, 0xC1, 0x4D, 0x01, 0xD0, 0x4D, 0x85, 0xC0, 0x78, 0x03, 0x90, 0xEB, 0x02, 0x90, 0x90};
    EXPECT_EQ(bytes_of(KernelId::branch_pred), branch);
    EXPECT_EQ(bytes_of(KernelId::branch_random), branch);
    EXPECT_EQ(bytes_of(KernelId::lfence), (V{0x0F, 0xAE, 0xE8}));
    EXPECT_EQ(bytes_of(KernelId::mfence), (V{0x0F, 0xAE, 0xF0}));
    EXPECT_EQ(bytes_of(KernelId::cpuid), (V{0x31, 0xC0, 0x0F, 0xA2}));
    EXPECT_EQ(bytes_of(KernelId::rdtsc), (V{0x0F, 0x31}));
    EXPECT_EQ(bytes_of(KernelId::rdmsr), (V{0x0F, 0x32}));
    EXPECT_EQ(bytes_of(KernelId::rdpmc), (V{0x0F, 0x33}));
}

TEST(MeasureExec, LayoutAlignsTheBodyAndCopiesItVerbatim) {
    Vec<ReadGroup> g = tsc_group();
    for (u64 copies : {0, 1, 7, 100}) {
        for (bool loop : {false, true}) {
            RegionSpec s;
            CodeSpan body = builtin_kernel_body(KernelId::branch_random);
            s.body = body.data;
            s.body_len = body.len;
            s.copies = copies;
            s.loop = loop;
            s.group = &g[0];
            Gen gen(s);
            EXPECT_EQ(gen.lay.body_offset % 64, 0u);
            EXPECT_EQ(gen.lay.body_end - gen.lay.body_offset, copies * body.len);
            EXPECT_EQ(gen.lay.size, gen.code.size());
            for (u64 c = 0; c < copies; ++c)
                EXPECT_EQ(0, std::memcmp(&gen.code[gen.lay.body_offset + c * body.len], body.data, body.len));
            // The loop is dec r15; jnz back to the first copy.
            std::vector<u8> tail(gen.code.begin() + gen.lay.body_end, gen.code.begin() + gen.lay.body_end + 9);
            if (loop) {
                i32 rel = i32(gen.lay.body_offset) - i32(gen.lay.body_end + 9);
                std::vector<u8> want{0x49, 0xFF, 0xCF, 0x0F, 0x85, u8(rel), u8(rel >> 8), u8(rel >> 16), u8(rel >> 24)};
                EXPECT_EQ(tail, want);
            }
            // Then a jump to the 64-byte aligned tail, which starts with lfence (0F AE E8).
            usize j = gen.lay.body_end + (loop ? 9 : 0);
            EXPECT_EQ(gen.code[j], 0xE9);
            i32 rel = i32(gen.code[j + 1] | gen.code[j + 2] << 8 | gen.code[j + 3] << 16 | gen.code[j + 4] << 24);
            EXPECT_EQ(usize(i64(j + 5) + rel), gen.lay.tail_offset);
            EXPECT_EQ(gen.lay.tail_offset % 64, 0u);
            EXPECT_EQ(gen.code[gen.lay.tail_offset], 0x0F);
            EXPECT_EQ(gen.code[gen.lay.tail_offset + 1], 0xAE);
            EXPECT_EQ(gen.code[gen.lay.tail_offset + 2], 0xE8);
        }
    }
}

TEST(MeasureExec, CounterReadsAndWritesAreEncodedInOrder) {
    Vec<ReadGroup> groups;
    ReadGroup& g = groups.emplace();
    CounterRead a;
    a.kind = CounterAccess::rdpmc;
    a.index = 0x40000001;
    CounterRead b;
    b.kind = CounterAccess::rdmsr;
    b.index = 0x309;
    CounterRead c;
    c.kind = CounterAccess::rdtsc;
    g.reads.push(a);
    g.reads.push(b);
    g.reads.push(c);
    g.start_writes.push(MsrValue{0x38F, 0x70000000Full});
    g.stop_writes.push(MsrValue{0x38F, 0});
    RegionSpec s;
    s.group = &g;
    s.serialize = SerializeMode::cpuid;
    Gen gen(s);
    // The reads store into the data page (RIP-relative, the page after the code):
    // start values at data + 48 + 8i, end values at data + 48 + 8(n + i).
    usize data = (gen.lay.code_size + 4095) & ~usize(4095);
    auto rip_target = [&](usize modrm_at) {
        usize d = modrm_at + 1;
        i32 rel = i32(gen.code[d] | gen.code[d + 1] << 8 | gen.code[d + 2] << 16 | gen.code[d + 3] << 24);
        return i64(d + 4) + rel - i64(data);
    };
    auto find = [&](std::vector<u8> needle, usize from = 0) {
        auto it = std::search(gen.code.begin() + from, gen.code.end(), needle.begin(), needle.end());
        return it == gen.code.end() ? usize(-1) : usize(it - gen.code.begin());
    };
    // mov $0x40000001,%ecx; rdpmc; mov %eax,48(data); mov %edx,52(data)
    usize a0 = find({0xB9, 0x01, 0x00, 0x00, 0x40, 0x0F, 0x33, 0x89, 0x05});
    ASSERT_NE(a0, usize(-1));
    EXPECT_EQ(rip_target(a0 + 8), 48);
    EXPECT_EQ(gen.code[a0 + 13], 0x89);
    EXPECT_EQ(gen.code[a0 + 14], 0x15);
    EXPECT_EQ(rip_target(a0 + 14), 52);
    // mov $0x309,%ecx; rdmsr; stores to 56/60
    usize b0 = find({0xB9, 0x09, 0x03, 0, 0, 0x0F, 0x32, 0x89, 0x05});
    ASSERT_NE(b0, usize(-1));
    EXPECT_EQ(rip_target(b0 + 8), 56);
    // rdtsc; stores to 64/68 (start) and, at the end, 88/92 (48 + 8*3 + 16)
    usize c0 = find({0x0F, 0x31, 0x89, 0x05});
    ASSERT_NE(c0, usize(-1));
    EXPECT_EQ(rip_target(c0 + 3), 64);
    usize c1 = find({0x0F, 0x31, 0x89, 0x05}, c0 + 1);
    ASSERT_NE(c1, usize(-1));
    EXPECT_EQ(rip_target(c1 + 3), 88);
    // wrmsr 0x38F <- 0x70000000F: ecx, eax, edx, wrmsr
    EXPECT_TRUE(contains(gen.code, {0xB9, 0x8F, 0x03, 0, 0, 0xB8, 0x0F, 0, 0, 0, 0xBA, 0x07, 0, 0, 0, 0x0F, 0x30}));
    EXPECT_TRUE(contains(gen.code, {0xB9, 0x8F, 0x03, 0, 0, 0xB8, 0, 0, 0, 0, 0xBA, 0, 0, 0, 0, 0x0F, 0x30}));
    // Serialisation by CPUID leaf 0 around the reads.
    EXPECT_TRUE(contains(gen.code, {0x31, 0xC0, 0x0F, 0xA2, 0xB9, 0x01, 0x00, 0x00, 0x40, 0x0F, 0x33}));
    (void)contains;
}

TEST(MeasureExec, TooManyReadsIsAnError) {
    Vec<ReadGroup> groups;
    ReadGroup& g = groups.emplace();
    for (u32 i = 0; i <= kMaxReads; ++i) g.reads.push(CounterRead{});
    RegionSpec s;
    s.group = &g;
    Vec<u8> out;
    Result<RegionLayout> r = emit_region(s, &out);
    ASSERT_FALSE(r.ok());
    EXPECT_STREQ(r.error().msg, "a counter group has 17 reads; at most 16 fit in one run");
}

TEST(MeasureExec, EveryHostRunnableKernelRunsAndKeepsTheRegisterContract) {
    Vec<ReadGroup> g = tsc_group();
    std::vector<u8> buf(1 << 16);
    for (const KernelInfo& k : kKernels) {
        if (k.id == KernelId::rdmsr || k.id == KernelId::rdpmc) continue;  // ring 0 only
        for (SerializeMode ser : {SerializeMode::lfence, SerializeMode::cpuid}) {
            KernelParams p;
            p.buffer = u64(reinterpret_cast<uintptr_t>(buf.data()));
            p.size = buf.size();
            if (k.buffer == KernelBuffer::chase) build_pointer_chase(buf.data(), buf.size(), p.buffer, 1);
            RegionSpec s;
            CodeSpan body = builtin_kernel_body(k.id);
            s.body = body.data;
            s.body_len = body.len;
            s.copies = 50;
            s.loop = true;
            s.serialize = ser;
            s.group = &g[0];
            Gen gen(s);
            RegionFrame f;
            kernel_init_registers(k, p, f.gpr);
            f.loop = 3;
            int clobbers = 0;
            gen.call(&f, &clobbers);
            EXPECT_EQ(clobbers, 0) << k.name;
            EXPECT_GT(f.end[0], f.start[0]) << k.name << ": the TSC read after the body";
            EXPECT_EQ(f.loop, 3u) << "the frame's inputs are not written";
        }
    }
}

TEST(MeasureExec, KernelRegistersComeFromTheFrameAndTheLoopRunsLTimes) {
    // store_stream writes RAX to buffer + RSI, RSI += 64 (mod size): with 5 copies and
    // a loop of 3 it must write exactly the first 15 lines.
    Vec<ReadGroup> g = tsc_group();
    std::vector<u64> buf(65536 / 8, 0);
    KernelParams p;
    p.buffer = u64(reinterpret_cast<uintptr_t>(buf.data()));
    p.size = 65536;
    RegionSpec s;
    CodeSpan body = builtin_kernel_body(KernelId::store_stream);
    s.body = body.data;
    s.body_len = body.len;
    s.copies = 5;
    s.loop = true;
    s.group = &g[0];
    Gen gen(s);
    RegionFrame f;
    kernel_init_registers(kernel_info(KernelId::store_stream), p, f.gpr);
    f.gpr[kRax] = 0xC0FFEE;
    f.loop = 3;
    int clobbers = 0;
    gen.call(&f, &clobbers);
    EXPECT_EQ(clobbers, 0);
    for (usize line = 0; line < 20; ++line) EXPECT_EQ(buf[line * 8], line < 15 ? 0xC0FFEEu : 0u) << line;
    // The offset wraps at the size: 4K buffer, 70 stores -> lines 0..63 then 0..5 again.
    std::vector<u64> small(4096 / 8, 0);
    p.buffer = u64(reinterpret_cast<uintptr_t>(small.data()));
    p.size = 4096;
    RegionSpec s2 = s;
    s2.copies = 70;
    s2.loop = false;
    Gen gen2(s2);
    kernel_init_registers(kernel_info(KernelId::store_stream), p, f.gpr);
    f.gpr[kRax] = 7;
    f.loop = 1;
    gen2.call(&f, &clobbers);
    for (usize line = 0; line < 64; ++line) EXPECT_EQ(small[line * 8], 7u);
}

TEST(MeasureExec, RunCommandEndToEndOnTheHost) {
    mtest::FakeHw hw;
    HostExec exec;
    mtest::FakePlatform p(hw, &exec);
    int rc = mtest::run_cmd(
        p, "run --bench empty,nop,add_chain,pointer_chase,load_stream,store_stream,branch_random,cpuid --size 4K,64K "
           "--reps 5 --warmup 2 --json");
    EXPECT_EQ(rc, 0) << p.out;
    EXPECT_EQ(exec.clobbers, 0);
    // 2 versions x 7 runs x (5 + 3 x 2 sizes) benchmark instances.
    EXPECT_EQ(exec.executions, 2 * 7 * 11);
    size_t lines = 0;
    for (size_t pos = 0; (pos = p.out.find("{\"type\":\"result\"", pos)) != std::string::npos; ++pos) ++lines;
    EXPECT_EQ(lines, 11u) << p.out;
}

TEST(MeasureExec, InitBlocksSetTheBodysRegistersAcrossTheReads) {
    // init: mov $7, %rbx; late-init: add $1, %rbx; body: mov %rbx, (%r14); add $8, %r14;
    // push %rbx; pop %rax (on the frame's private stack). CPUID serialisation clobbers
    // RBX between init and late-init: the harness must reload it.
    const u8 init[] = {0x48, 0xC7, 0xC3, 0x07, 0x00, 0x00, 0x00};
    const u8 late[] = {0x48, 0x83, 0xC3, 0x01};
    const u8 body[] = {0x49, 0x89, 0x1E, 0x49, 0x83, 0xC6, 0x08, 0x53, 0x58};
    Vec<ReadGroup> g = tsc_group();
    for (SerializeMode ser : {SerializeMode::lfence, SerializeMode::cpuid}) {
        for (u32 align : {0u, 13u}) {
            RegionSpec s;
            s.body = body;
            s.body_len = sizeof body;
            s.copies = 3;
            s.init = CodeSpan{init, sizeof init};
            s.late_init = CodeSpan{late, sizeof late};
            s.serialize = ser;
            s.align_offset = align;
            s.drain_frontend = align != 0;
            s.group = &g[0];
            Gen gen(s);
            EXPECT_EQ(gen.lay.body_offset % 64, align);
            EXPECT_EQ(std::memcmp(&gen.code[gen.lay.init_offset], init, sizeof init), 0);
            EXPECT_EQ(std::memcmp(&gen.code[gen.lay.late_init_offset], late, sizeof late), 0);
            std::vector<u64> out(8, 0), stack(512, 0);
            RegionFrame f;
            f.gpr[kR14] = u64(reinterpret_cast<uintptr_t>(out.data()));
            f.gpr[kRsp] = u64(reinterpret_cast<uintptr_t>(&stack[256]));
            int clobbers = 0;
            gen.call(&f, &clobbers);
            EXPECT_EQ(clobbers, 0);
            EXPECT_EQ(out[0], 8u);
            EXPECT_EQ(out[2], 8u);
            EXPECT_EQ(out[3], 0u);
            EXPECT_EQ(stack[255], 8u) << "push %rbx went to the private stack";
            EXPECT_GT(f.end[0], f.start[0]);
        }
    }
}

TEST(MeasureExec, NoMemKeepsTheCountsInRegistersBetweenTheReads) {
    // With --no-mem nothing between the two reads touches memory except the body:
    // the window holds only register instructions, and the difference lands in the frame.
    const u8 body[] = {0x48, 0x01, 0xD8};  // add %rbx, %rax
    Vec<ReadGroup> g = tsc_group();
    for (bool loop : {false, true}) {
        RegionSpec s;
        s.body = body;
        s.body_len = sizeof body;
        s.copies = 10;
        s.loop = loop;
        s.no_mem = true;
        s.no_mem_loop = 5;
        s.group = &g[0];
        Gen gen(s);
        // rdtsc; shl $32,%rdx; or %rdx,%rax; mov %rax,%r8 ... rdtsc; ...; sub %r8,%rax; mov %rax,%r8
        EXPECT_TRUE(contains(gen.code, {0x0F, 0x31, 0x48, 0xC1, 0xE2, 0x20, 0x48, 0x09, 0xD0, 0x49, 0x89, 0xC0}));
        EXPECT_TRUE(contains(gen.code, {0x0F, 0x31, 0x48, 0xC1, 0xE2, 0x20, 0x48, 0x09, 0xD0, 0x4C, 0x29, 0xC0, 0x49,
                                        0x89, 0xC0}));
        if (loop) EXPECT_TRUE(contains(gen.code, {0x41, 0xBF, 5, 0, 0, 0}));  // mov $5, %r15d
        RegionFrame f;
        int clobbers = 0;
        gen.call(&f, &clobbers);
        EXPECT_EQ(clobbers, 0);
        EXPECT_EQ(f.start[0], 0u);
        EXPECT_GT(f.end[0], 0u);
        EXPECT_LT(f.end[0], u64(1) << 40);
    }
    Vec<ReadGroup> many;
    ReadGroup& big = many.emplace();
    for (u32 i = 0; i <= kNoMemReads; ++i) big.reads.push(CounterRead{});
    RegionSpec s;
    s.group = &big;
    s.no_mem = true;
    Vec<u8> out;
    Result<RegionLayout> r = emit_region(s, &out);
    ASSERT_FALSE(r.ok());
    EXPECT_STREQ(r.error().msg,
                 "--no-mem keeps the counter values in R8-R13: at most 6 reads per run, this group has 7 (measure "
                 "fewer events)");
}
