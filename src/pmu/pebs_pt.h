// PEBS output to Intel PT for `run --sample EVENT[:P] --precise --pebs-output pt`
// (docs/sampling.md "PEBS output to Intel PT"; the registers and packets: x86/pt_regs.h).
//
// Where IA32_PERF_CAPABILITIES[16] (PEBS_OUTPUT_PT_AVAIL) says so, IA32_PEBS_ENABLE's
// output field (62:61 = 01B) sends each PEBS record into the Intel PT stream instead of the
// DS area's buffer: the record's groups as Block Begin / Block Item / Block End packets.
// The DS area's buffer and interrupt threshold are not used then; a counter reloads from
// MSR_RELOAD_PMCx (MSR_RELOAD_FIXED_CTRx) instead of the DS area's reset slots, and
// PMI_AFTER_EACH_RECORD (bit 60) asks for a PMI (GLOBAL_STATUS bit 62) after every record,
// as Linux sets it for PEBS-via-PT without large PEBS. pmulab owns the trace:
//   setup     RTIT_CTL, RTIT_STATUS, RTIT_OUTPUT_BASE, RTIT_OUTPUT_MASK_PTRS and the used
//             reload MSRs saved (TraceEn already 1: refused, someone else traces); the reload
//             MSRs = the DS area's reset values; single-range output into a 4 KiB page pmulab
//             owns (base = the page, mask FFFH, offset 0); RTIT_CTL = TraceEn | OS | User
//             (no BranchEn, TSCEn, MTCEn or CYCEn: only PSB+ and the PEBS blocks); the DS
//             area's PEBS buffer given no room (absolute maximum = base); PEBS_ENABLE gains
//             output = PT and PMI_AFTER_EACH_RECORD;
//   the PMI   (PebsSource::drain -> collect) TraceEn cleared (the output offset in
//             MASK_PTRS is current only then), the bytes up to it decoded back into adaptive
//             records (the DS layout PebsSource::parse reads), the offset rewound to 0,
//             TraceEn set again;
//   teardown  RTIT_CTL's TraceEn cleared, then STATUS, BASE, MASK_PTRS, the reload MSRs and
//             RTIT_CTL written back exactly (after PEBS_ENABLE, restored first).
// Single-range output (CPUID.(14H,0):ECX[2]) only: a CPU with ToPA alone is refused.
#pragma once

#include "pmu/pmu.h"
#include "x86/hw.h"
#include "x86/pebs_regs.h"
#include "x86/pt_regs.h"

namespace pmulab {

struct PebsCaps;

// Errc::unsupported naming the CPU and the reason where PEBS cannot go to Intel PT: no
// Intel PT (CPUID.(07H,0):EBX[25]), no leaf 14H, no single-range output, no
// IA32_PERF_CAPABILITIES[16], or a record format without adaptive PEBS (the blocks are its
// groups).
Status pebs_pt_check(Hw& hw, const PebsCaps& caps, const PmuInfo& info, u32 cpu);

// Appends PT packets to a caller's buffer (unit tests and examples; overflow() when full).
class PtWriter {
public:
    PtWriter(u8* buf, usize cap) : buf_(buf), cap_(cap) {}
    void psb();
    void psbend() { ext(regs::pt::kExtPsbEnd); }
    void pad() { put(regs::pt::kPad); }
    void cbr(u8 ratio);
    void bbp(u8 type, bool size4);
    void bip(u8 id, u64 value, bool size4);
    void bep() { ext(regs::pt::kExtBep); }
    usize size() const { return n_; }
    bool overflow() const { return overflow_; }

private:
    void put(u8 b);
    void ext(u8 b) { put(regs::pt::kExt), put(b); }
    u8* buf_;
    usize cap_, n_ = 0;
    bool overflow_ = false;
};

// What a decode saw besides the records.
struct PtDecodeStats {
    u64 records = 0;  // Block End packets that closed a record with a basic block
    u64 psbs = 0;
    u64 skipped = 0;  // other packets stepped over by their lengths (PAD, CBR, MODE, TSC, ...)
};
// The PEBS records in PT bytes `pt[0..n)`, rebuilt as adaptive records (the basic group,
// then the memory-info and GPR groups their blocks gave; BasicFormat's groups and size set)
// into out[0..cap); *used their bytes. invalid_argument at an unknown or cut packet, an item
// outside a block, or a record that does not fit (the records before it are in out).
Status pt_pebs_decode(const u8* pt, usize n, u8* out, usize cap, usize* used, PtDecodeStats* stats);

// The trace of each measuring CPU (pages the caller allocates on the BSP).
class PebsPt {
public:
    static constexpr usize kMaxCpus = 256;
    static constexpr usize kOutputBytes = 4096;  // one page, aligned to its size
    Status add_cpu(u32 cpu, void* page);
    // On the measuring CPU, PEBS_ENABLE not yet written: *en gains the PT output fields;
    // the reload MSRs take the reset values of ds, laid out as record `format` has it.
    Status on_setup(Hw& hw, regs::pebs::DsArea* ds, unsigned format, u64* en);
    // In the PMI: the records since the last one into out (allocation-free); their bytes.
    u64 collect(Hw& hw, u8* out, usize cap);
    Status on_teardown(Hw& hw);
    u64 decode_errors() const { return errors_; }
    u64 records() const { return stats_.records; }

private:
    struct Cpu {
        u32 cpu = 0;
        u8* out = nullptr;
    };
    static constexpr unsigned kSaved = 4 + 8 + 4;  // RTIT x4, reload PMC0-7, reload fixed 0-3
    u32 saved_msr_[kSaved] = {};
    u64 saved_[kSaved] = {};
    unsigned nsaved_ = 0;
    Cpu cpus_[kMaxCpus];
    usize ncpus_ = 0;
    Cpu* here_ = nullptr;
    u64 ctl_ = 0;  // RTIT_CTL while tracing
    u64 errors_ = 0;
    PtDecodeStats stats_;
};

}  // namespace pmulab
