// `pmulab selftest`'s nmi-path check: the NMI path of the PMU's interrupt (pmu/pmi.h) on the
// target, where no PMU is needed to exercise it. While code runs on the measuring CPU with a
// PmiHandler attached, another CPU sends that CPU NMIs one at a time
// (MeasurePlatform::run_with_nmis). Nothing overflowed, so the handler must see each NMI,
// call it foreign and pass it on, and the code must end with every register it uses as it
// would without NMIs; afterwards the LVT entry is what it was and NMIs no longer reach the
// handler.
//
// Each NMI also takes a #GP inside the handler, caught by the fault-safe MSR layer: the
// handler's status register is the x2APIC EOI MSR (80BH), write-only in x2APIC mode and
// absent in xAPIC mode, so its RDMSR raises #GP on hardware (SDM Vol. 3A §11.12.1.2);
// QEMU's TCG reads it as 0, and then the check's Hw layer (ProbeHw) adds a WRMSR of
// IA32_PKRS with a reserved bit (63:32), which raises #GP everywhere. Both are real
// accesses from the NMI, and --trace-msr shows them. After that #GP the handler tells the
// sender it runs (NmiProbe::inside), and the sender sends the next NMI into it: NMIs must
// stay blocked until the stub's IRETQ, so that one is taken after it, never nested (the
// platform counts nested entries: an error). Half of the NMIs come that way.
#include "commands/selftest.h"
#include "pmu/pmi.h"
#include "x86/apic_regs.h"
#include "x86/msr_addr.h"

namespace pmulab {

namespace {

constexpr u32 kNmis = 64;

// What the code reads and writes; RDI points at a RegionFrame whose gpr[0] holds its address.
struct alignas(16) NmiCodeData {
    u64 go, done;     // the addresses of NmiProbe::go and ::done
    u64 out[7];       // RAX (iterations), RCX (3 x RAX), RDX (-RAX), R8-R11 after the loop
    u64 rflags;       // RFLAGS after the loop (DF set by the code)
    u64 pad[2];       //
    u64 in[4];        // R8-R11 before the loop
    u64 xmm_in[32];   // XMM0-15 before the loop
    u64 xmm_out[32];  // ... and after it
};
static_assert(__builtin_offsetof(NmiCodeData, out) == 16 && __builtin_offsetof(NmiCodeData, rflags) == 72);
static_assert(__builtin_offsetof(NmiCodeData, in) == 96 && __builtin_offsetof(NmiCodeData, xmm_in) == 128);
static_assert(__builtin_offsetof(NmiCodeData, xmm_out) == 384);

// mov rdi,[rdi]; mov rsi,[rdi+8]; mov rax,[rdi]; mov qword [rax],1 (go); movdqa xmm0-15 from
// xmm_in; mov r8-r11 from in; xor eax,eax; xor ecx,ecx; xor edx,edx; std;
// L: inc rax; add rcx,3; dec rdx; cmp qword [rsi],0; jne out (done); bt rax,28; jnc L
// (at most 2^28 loops: kLoopBound); out:
// pushfq; pop [rdi+72]; cld; stores of RAX RCX RDX R8-R11 and XMM0-15; ret.
const u8 kCode[] = {
    0x48, 0x8b, 0x3f, 0x48, 0x8b, 0x77, 0x08, 0x48, 0x8b, 0x07, 0x48, 0xc7, 0x00, 0x01, 0x00, 0x00, 0x00, 0x66, 0x0f,
    0x6f, 0x87, 0x80, 0x00, 0x00, 0x00, 0x66, 0x0f, 0x6f, 0x8f, 0x90, 0x00, 0x00, 0x00, 0x66, 0x0f, 0x6f, 0x97, 0xa0,
    0x00, 0x00, 0x00, 0x66, 0x0f, 0x6f, 0x9f, 0xb0, 0x00, 0x00, 0x00, 0x66, 0x0f, 0x6f, 0xa7, 0xc0, 0x00, 0x00, 0x00,
    0x66, 0x0f, 0x6f, 0xaf, 0xd0, 0x00, 0x00, 0x00, 0x66, 0x0f, 0x6f, 0xb7, 0xe0, 0x00, 0x00, 0x00, 0x66, 0x0f, 0x6f,
    0xbf, 0xf0, 0x00, 0x00, 0x00, 0x66, 0x44, 0x0f, 0x6f, 0x87, 0x00, 0x01, 0x00, 0x00, 0x66, 0x44, 0x0f, 0x6f, 0x8f,
    0x10, 0x01, 0x00, 0x00, 0x66, 0x44, 0x0f, 0x6f, 0x97, 0x20, 0x01, 0x00, 0x00, 0x66, 0x44, 0x0f, 0x6f, 0x9f, 0x30,
    0x01, 0x00, 0x00, 0x66, 0x44, 0x0f, 0x6f, 0xa7, 0x40, 0x01, 0x00, 0x00, 0x66, 0x44, 0x0f, 0x6f, 0xaf, 0x50, 0x01,
    0x00, 0x00, 0x66, 0x44, 0x0f, 0x6f, 0xb7, 0x60, 0x01, 0x00, 0x00, 0x66, 0x44, 0x0f, 0x6f, 0xbf, 0x70, 0x01, 0x00,
    0x00, 0x4c, 0x8b, 0x47, 0x60, 0x4c, 0x8b, 0x4f, 0x68, 0x4c, 0x8b, 0x57, 0x70, 0x4c, 0x8b, 0x5f, 0x78, 0x31, 0xc0,
    0x31, 0xc9, 0x31, 0xd2, 0xfd, 0x48, 0xff, 0xc0, 0x48, 0x83, 0xc1, 0x03, 0x48, 0xff, 0xca, 0x48, 0x83, 0x3e, 0x00,
    0x75, 0x07, 0x48, 0x0f, 0xba, 0xe0, 0x1c, 0x73, 0xe9, 0x9c, 0x8f, 0x47, 0x48, 0xfc, 0x48, 0x89, 0x47, 0x10, 0x48,
    0x89, 0x4f, 0x18, 0x48, 0x89, 0x57, 0x20, 0x4c, 0x89, 0x47, 0x28, 0x4c, 0x89, 0x4f, 0x30, 0x4c, 0x89, 0x57, 0x38,
    0x4c, 0x89, 0x5f, 0x40, 0x66, 0x0f, 0x7f, 0x87, 0x80, 0x01, 0x00, 0x00, 0x66, 0x0f, 0x7f, 0x8f, 0x90, 0x01, 0x00,
    0x00, 0x66, 0x0f, 0x7f, 0x97, 0xa0, 0x01, 0x00, 0x00, 0x66, 0x0f, 0x7f, 0x9f, 0xb0, 0x01, 0x00, 0x00, 0x66, 0x0f,
    0x7f, 0xa7, 0xc0, 0x01, 0x00, 0x00, 0x66, 0x0f, 0x7f, 0xaf, 0xd0, 0x01, 0x00, 0x00, 0x66, 0x0f, 0x7f, 0xb7, 0xe0,
    0x01, 0x00, 0x00, 0x66, 0x0f, 0x7f, 0xbf, 0xf0, 0x01, 0x00, 0x00, 0x66, 0x44, 0x0f, 0x7f, 0x87, 0x00, 0x02, 0x00,
    0x00, 0x66, 0x44, 0x0f, 0x7f, 0x8f, 0x10, 0x02, 0x00, 0x00, 0x66, 0x44, 0x0f, 0x7f, 0x97, 0x20, 0x02, 0x00, 0x00,
    0x66, 0x44, 0x0f, 0x7f, 0x9f, 0x30, 0x02, 0x00, 0x00, 0x66, 0x44, 0x0f, 0x7f, 0xa7, 0x40, 0x02, 0x00, 0x00, 0x66,
    0x44, 0x0f, 0x7f, 0xaf, 0x50, 0x02, 0x00, 0x00, 0x66, 0x44, 0x0f, 0x7f, 0xb7, 0x60, 0x02, 0x00, 0x00, 0x66, 0x44,
    0x0f, 0x7f, 0xbf, 0x70, 0x02, 0x00, 0x00, 0xc3,
};

// The code's loop ends when the sender is done, or after this many loops: a sender that
// cannot run beside the code (seen under QEMU -icount with the BSP measuring, where the AP's
// NMIs did not arrive) must not hang the check.
constexpr u64 kLoopBound = u64(1) << 28;

constexpr u32 kProbeStatus = regs::x2apic_msr(regs::ApicReg::eoi);
constexpr u64 kPkrsReserved = u64(1) << 32;

// The handler's Hw: everything forwarded; the status read as described above.
class ProbeHw final : public Hw {
public:
    ProbeHw(Hw& inner, NmiProbe& probe) : inner_(inner), probe_(probe) {}
    CpuidRegs cpuid(u32 leaf, u32 subleaf) override { return inner_.cpuid(leaf, subleaf); }
    Result<u64> rdmsr(u32 msr) override {
        if (msr != kProbeStatus) return inner_.rdmsr(msr);
        Result<u64> r = inner_.rdmsr(msr);
        Status w = r.ok() ? inner_.wrmsr(msr::IA32_PKRS, kPkrsReserved) : Status(r.error());
        // After the fault, inside the NMI: the sender's second NMI comes now and must wait.
        __atomic_store_n(&probe_.inside, u64(1), __ATOMIC_RELEASE);
        for (u64 i = 0; i < (u64(1) << 26) && !__atomic_load_n(&probe_.second, __ATOMIC_ACQUIRE); ++i)
            asm volatile("pause");
        for (int i = 0; i < 1000; ++i) asm volatile("pause");  // time for it to arrive
        if (!w.ok()) return w.error();
        return r;
    }
    Status wrmsr(u32 msr, u64 value) override { return inner_.wrmsr(msr, value); }
    Result<u64> rdpmc(u32 index) override { return inner_.rdpmc(index); }
    u64 rdtsc() override { return inner_.rdtsc(); }
    u32 cpu_count() override { return inner_.cpu_count(); }
    u32 current_cpu() override { return inner_.current_cpu(); }
    Result<CpuTopology> topology(u32 cpu) override { return inner_.topology(cpu); }
    Status run_on_cpu(u32 cpu, CpuFn fn, void* ctx) override { return inner_.run_on_cpu(cpu, fn, ctx); }

private:
    Hw& inner_;
    NmiProbe& probe_;
};

struct NmiRun {
    Hw* hw = nullptr;
    MeasurePlatform* mp = nullptr;
    PmiHandler* h = nullptr;
    NmiProbe* probe = nullptr;
    const Region* region = nullptr;
    RegionFrame* frame = nullptr;
    Status err;
    u32 lvt_before = 0, lvt_during = 0, lvt_after = 0;
};

Status rearm(void* ctx, u32 v) { return static_cast<MeasurePlatform*>(ctx)->set_lvt_perf(v); }

// On the measuring CPU: the handler attached, the LVT entry set to deliver PMIs as NMIs,
// the code run with interrupts masked, then everything given back.
void measure_with_nmis(NmiRun& r) {
    MeasurePlatform& mp = *r.mp;
    Result<u32> before = mp.lvt_perf();
    Status s = before.ok() ? mp.pmi_attach(r.h) : Status(before.error());
    if (!s.ok()) {
        r.err = s;
        __atomic_store_n(&r.probe->go, u64(2), __ATOMIC_RELEASE);
        return;
    }
    r.lvt_before = before.value();
    s = mp.set_lvt_perf(kLvtPerfNmi);
    r.lvt_during = mp.lvt_perf().value_or(0);
    IrqSaved saved;
    if (s.ok()) s = mp.irq_mask(IrqMode::cli, &saved);
    if (s.ok()) {
        mp.execute(*r.region, r.frame);
        mp.irq_restore(saved);
    } else {
        __atomic_store_n(&r.probe->go, u64(2), __ATOMIC_RELEASE);
    }
    mp.pmi_detach();
    r.lvt_after = mp.lvt_perf().value_or(0);
    r.err = s;
}

PmiSetup probe_setup() {
    PmiSetup s;
    s.status_msr = kProbeStatus;
    s.freeze = true;  // nothing to stop: the handler only reads the status
    s.count = 1;
    s.counters[0].status_bit = 1;
    return s;
}

void fill_in(NmiCodeData& d, u32 cpu) {
    for (unsigned i = 0; i < 4; ++i) d.in[i] = 0x0808080808080808ull * (i + 1) + cpu;
    for (unsigned i = 0; i < 32; ++i) d.xmm_in[i] = 0x0123456789ABCDEFull ^ (u64(i) << 40) ^ cpu;
}

// The verdict's detail: empty when everything is as it must be.
void judge(const NmiCodeData& d, const NmiRun& r, const PmiHandler& h, u32 taken, StrBuf& bad) {
    const u64 n = d.out[0];
    if (r.frame->faulted) bad.printf("the code faulted (vector %llu) ", (unsigned long long)r.frame->fault_vector);
    if (taken != kNmis) bad.printf("%u of %u NMIs taken; ", taken, kNmis);
    if (h.foreign() != kNmis || h.pmis() != 0)
        bad.printf("the handler saw %llu foreign and %llu PMIs; ", (unsigned long long)h.foreign(),
                   (unsigned long long)h.pmis());
    if (n == 0 || d.out[1] != 3 * n || d.out[2] != u64(0) - n) bad.put("RAX/RCX/RDX disagree after the loop; ");
    for (unsigned i = 0; i < 4; ++i)
        if (d.out[3 + i] != d.in[i]) bad.printf("R%u changed; ", 8 + i);
    for (unsigned i = 0; i < 32; ++i)
        if (d.xmm_out[i] != d.xmm_in[i]) {
            bad.printf("XMM%u changed; ", i / 2);
            break;
        }
    if (!((d.rflags >> 10) & 1)) bad.put("RFLAGS.DF lost; ");
    if (r.lvt_during != kLvtPerfNmi)
        bad.printf("LVT entry 0x%x, not 0x%x, while attached; ", r.lvt_during, kLvtPerfNmi);
    if (r.lvt_after != r.lvt_before) bad.printf("LVT entry 0x%x after, 0x%x before; ", r.lvt_after, r.lvt_before);
}

void check_cpu(Checks& ck, Hw& hw, MeasurePlatform& mp, const Region& region, u32 cpu) {
    const char* name = "nmi-path";
    NmiCodeData d{};
    fill_in(d, cpu);
    NmiProbe probe;
    probe.count = kNmis;
    d.go = u64(uintptr_t(&probe.go));
    d.done = u64(uintptr_t(&probe.done));
    RegionFrame frame;
    frame.gpr[0] = u64(uintptr_t(&d));
    PmiHandler h;
    ProbeHw phw(hw, probe);
    h.arm(phw, probe_setup(), nullptr, rearm, &mp);
    NmiRun r;
    r.hw = &hw;
    r.mp = &mp;
    r.h = &h;
    r.probe = &probe;
    r.region = &region;
    r.frame = &frame;
    auto job = [&] { measure_with_nmis(r); };
    CpuCall c = cpu_call(job);
    Result<u32> taken = mp.run_with_nmis(hw, cpu, probe, c.fn, c.ctx);
    if (!taken.ok()) {
        if (taken.error().code == Errc::not_found) return;  // no NMI path on this platform: not listed
        ck.report(taken.error().code == Errc::unsupported ? Verdict::skip : Verdict::fail, name, cpu,
                  taken.error().msg);
        return;
    }
    if (!r.err.ok()) {
        ck.report(r.err.error().code == Errc::unsupported ? Verdict::skip : Verdict::fail, name, cpu,
                  r.err.error().msg);
        return;
    }
    if (d.out[0] >= kLoopBound && !r.frame->faulted) {
        ck.reportf(Verdict::skip, name, cpu,
                   "the other CPU did not send while the code ran: its NMIs came only after the code's 2^28 loops "
                   "(%u of %u taken then), so it could not run beside the measuring CPU (seen under QEMU -icount, "
                   "which runs one vCPU at a time)",
                   taken.value(), kNmis);
        return;
    }
    // Detached: the next NMI no longer reaches the handler.
    NmiProbe after;
    after.count = 1;
    auto idle = [&] {
        __atomic_store_n(&after.go, u64(1), __ATOMIC_RELEASE);
        for (u64 i = 0; i < (u64(1) << 32) && !__atomic_load_n(&after.done, __ATOMIC_ACQUIRE); ++i)
            asm volatile("pause");
    };
    CpuCall ci = cpu_call(idle);
    Result<u32> taken_after = mp.run_with_nmis(hw, cpu, after, ci.fn, ci.ctx);
    StrBuf bad;
    judge(d, r, h, taken.value(), bad);
    if (!taken_after.ok() || taken_after.value() != 1 || h.foreign() != kNmis)
        bad.put("an NMI after pmi_detach was not routed past the handler; ");
    // Every NMI took its #GP in the handler (the first one is kept).
    const Status& e = h.error();
    if (e.ok() || e.error().vector != kVectorGP)
        bad.printf("the handler's status read: %s, not #GP; ", e.ok() ? "no fault" : e.error().msg);
    if (bad.size()) {
        ck.reportf(Verdict::fail, name, cpu, "%s", bad.c_str());
        return;
    }
    // The access that faulted: its message up to " raised" (hw.h msr_fault_error).
    StrView m(e.error().msg);
    usize cut = 0;
    while (cut < m.len && !m.sub(cut).starts_with(" raised")) ++cut;
    StrView access = m.sub(0, cut);
    ck.reportf(
        Verdict::pass, name, cpu,
        "%u NMIs in %llu loops of the code, half sent into the running handler after its #GP (%.*s) and "
        "held until its IRETQ; each foreign, passed on; registers, XMM0-15, DF, LVT entry (0x%x), routing intact",
        kNmis, (unsigned long long)d.out[0], int(access.len), access.ptr, r.lvt_before);
}

}  // namespace

void check_nmi_path(Checks& ck, Hw& hw, MeasurePlatform* mp, const Vec<u32>& cpus) {
    if (!mp) return;
    Result<void*> page = mp->alloc_pages(4096, true);
    if (!page.ok()) {
        ck.report(Verdict::fail, "nmi-path", -1, page.error().msg);
        return;
    }
    u8* code = static_cast<u8*>(page.value());
    for (usize i = 0; i < sizeof kCode; ++i) code[i] = kCode[i];
    Region region;
    region.code = code;
    region.size = region.code_size = sizeof kCode;
    region.exit_offset = sizeof kCode - 1;
    region.block = CodeBlock::one_time_init;
    for (u32 cpu : cpus) check_cpu(ck, hw, *mp, region, cpu);
    mp->free_pages(code, 4096);
}

}  // namespace pmulab
