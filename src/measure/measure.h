// The measurement engine (`pmulab run`, `pmulab selftest`).
//
// Method (nanoBench's, Abel & Reineke, ISPASS 2020):
//  * The measured region is generated machine code: U copies of a kernel body
//    (optionally inside a loop of L iterations), bracketed by serialising
//    instructions and by a fixed, minimal sequence of counter reads:
//        SER; read_0..read_n-1; SER; <body x copies> [dec r15; jnz]; SER; read_0..read_n-1; SER
//  * Overhead cancellation: the region is generated twice, with U and 2U copies
//    (--basic: 0 and U). Both versions execute the same instructions around the
//    copies, so agg(long) - agg(short) is exactly the cost of U*L iterations and
//        per_iteration = (agg(long) - agg(short)) / (U * L)
//    for agg in min, median, avg, trimmed mean, max (stats.h). The difference can
//    be negative for noisy counters; it is reported as is.
//  * Each version runs W warm-up times (discarded), then R measured times, with
//    interrupts masked during every run (cli, or the local APIC LVT entries).
//  * More events than counters: the events are split into groups (one group per
//    run of the benchmark); records say which run measured which event.
//
// The portable core generates the code and does the bookkeeping; the platform
// (MeasurePlatform, implemented in src/efi/measure_efi.cpp) supplies executable
// pages, the kernel bodies (src/measure/kernel_bodies.S) and interrupt masking.
#pragma once

#include "x86/hw.h"
#include "x86/topology.h"
#include "pmu/pmu.h"
#include "measure/kernels.h"
#include "measure/stats.h"

namespace pmulab {

// ---------------------------------------------------------------- counters

// A RAPL energy counter read (`run --events energy-pkg`, commands/run_energy.cpp): what
// records and tables need to show it in joules (docs/measure.md "Energy (RAPL)").
struct EnergyReadInfo {
    u8 esu = 0;                    // the counter counts 2^-esu J
    bool too_short = false;        // fewer than min_updates updates or min_units units: no value
    u64 updates = 0;               // counter updates the long - short difference spans
    u64 min_updates = 0;           // the rule's minimum
    u64 units = 0, min_units = 0;  // counter units of the difference, and the rule's minimum
    u64 interval_ticks = 0;        // TSC ticks between two updates (measured)
    u32 package = 0;               // the package (AMD energy-core: the measuring CPU's core)
    u32 msr = 0;
    const char* domain = "";  // "pkg", "cores", "gpu", "dram", "psys"
    const char* scope = "";   // "package" or "core"
    const char* msr_name = "";
    const char* loop_rule = "";  // "auto" (chosen) or "given" (--loop)
};

// One counter read emitted into the measured region, at the start and at the end: how
// the counter is read (pmu.h CounterAccess: RDTSC, RDPMC with ECX = index or RDMSR of
// the MSR at index; differences are taken modulo 2^width), with the labels records carry.
struct CounterRead : CounterAccess {
    char event[48] = {};    // label: the event ("tsc", "INST_RETIRED.ANY")
    char counter[16] = {};  // label: the counter ("TSC", "FIXED0", "PMC3")
    // A read of IA32_PERF_METRICS (measure/topdown.h): 1..8 = its byte metric - 1, turned
    // into slots at each read with the TOPDOWN.SLOTS value of read slots_read of the same
    // group (topdown_slots), then differenced like every count.
    u8 metric = 0;
    u8 slots_read = 0;
    const EnergyReadInfo* energy = nullptr;  // a RAPL energy counter, else null
};

inline constexpr u32 kMaxReads = 16;

struct Region;  // below

// Hooks that run on the measuring CPU (inside Hw::run_on_cpu: only the per-CPU Hw
// operations; no allocation, no output). Any may be null. Order on each CPU: setup,
// then the probes of the group's reads and start/stop writes, the runs, teardown.
// teardown runs whenever setup was called, also after errors (setup's own included).
struct GroupHooks {
    Status (*setup)(Hw& hw, void* ctx) = nullptr;     // once per CPU, before the probes and runs
    Status (*start)(Hw& hw, void* ctx) = nullptr;     // before every run, interrupts masked
    Status (*stop)(Hw& hw, void* ctx) = nullptr;      // after every run, interrupts masked
    Status (*teardown)(Hw& hw, void* ctx) = nullptr;  // once per CPU, after the runs (also after errors)
    void* ctx = nullptr;
    // Before every run, before interrupts are masked: the region about to run (sampling
    // folds the PMI's RIPs by it, measure/sampling.h).
    void (*region)(const Region& r, void* ctx) = nullptr;
};

// The counters measured together in one run of a benchmark.
struct ReadGroup {
    Vec<CounterRead> reads;  // 1..kMaxReads, read in this order
    // WRMSRs emitted into the region (e.g. IA32_PERF_GLOBAL_CTRL enable/disable):
    // start writes come right before the start serialisation, stop writes right after
    // the end serialisation. They are probed with Hw::wrmsr on the measuring CPU first
    // (a fault inside generated code would not be caught).
    Vec<MsrValue> start_writes;
    Vec<MsrValue> stop_writes;
    GroupHooks hooks;
    // The GP counters the group's events take (bit i = PMCi; 0 for a TSC-only group): AMD's
    // SMI count takes the highest one left free (noise.h smi_counter_for).
    u32 gp_mask = 0;
};

// Builds the counter groups for event specs. Today only "tsc" (the time-stamp
// counter, always available); any other spec is Errc::unsupported:
// "event 'X': PMU events are not supported yet (only 'tsc')". Duplicates and empty
// specs are Errc::invalid_argument.
Status plan_event_groups(const Vec<StrView>& specs, Vec<ReadGroup>* groups);

// ---------------------------------------------------------------- code generation

enum class SerializeMode : u8 { lfence, cpuid };
const char* serialize_name(SerializeMode m);

// Shared between C++ and the generated code (offsets via offsetof).
// The generated code reads gpr and loop, writes start, end and (for the carried
// registers, RegionSpec::carry) gpr; the platform fills the fault fields when code in
// the region faulted (the call then returns early: under UEFI through pmulab_gen_abort,
// fault_stubs.S; in the simulator through the region's exit path).
struct RegionFrame {
    u64 gpr[kGprCount] = {};  // initial register values (RSP: a private stack, 0 = the caller's; R15 ignored)
    u64 loop = 1;             // iterations of the loop around the copies (>= 1)
    u64 start[kMaxReads] = {};
    u64 end[kMaxReads] = {};
    u64 faulted = 0;  // 1 when an exception interrupted the region (platform)
    u64 fault_vector = 0, fault_rip = 0, fault_error = 0, fault_cr2 = 0;
};

struct CodeSpan {
    const u8* data = nullptr;
    usize len = 0;
};

// Code blocks of the region: where each one sits (offsets from the region start).
enum class CodeBlock : u8 { init, late_init, body, one_time_init, harness };
const char* code_block_name(CodeBlock b);

// The user blocks as spans (for check_markers).
struct UserCodeBlocks {
    CodeSpan body, init, late_init, one_time_init;
};

struct RegionSpec {
    const u8* body = nullptr;
    usize body_len = 0;
    u64 copies = 0;
    bool loop = false;  // emit the dec r15 / jnz loop around the copies (frame->loop times)
    SerializeMode serialize = SerializeMode::lfence;
    const ReadGroup* group = nullptr;  // null: no reads at all (a one-time-init region)
    // User blocks: init runs before the start reads (not measured), late_init right
    // after them (measured in both versions, so it cancels), before the copies.
    CodeSpan init, late_init;
    u32 align_offset = 0;         // first copy at 64k + align_offset (0..63)
    bool drain_frontend = false;  // 128 x 15-byte NOPs after late_init (nanoBench -df)
    u16 carry = 0;                // bit r: write GPR r back to frame->gpr after the run (not RAX-RDX, RSP)
    // --no-mem: the start values stay in R8.. (one register per read, at most
    // kNoMemReads), the end reads subtract them in registers; no load or store by the
    // harness between the reads. RAX-RDX are then not carried from init to the body,
    // and the loop count is an immediate (no_mem_loop).
    bool no_mem = false;
    u64 no_mem_loop = 1;
    // Pause/resume markers in the body (kPauseMarker, kResumeMarker) become pause and
    // resume sequences; this many copies' worth of empty pairs (a pause right followed by
    // a resume) go after the copies, in the loop: the short version gets the long one's
    // extra copies' worth, so that the markers' own cost cancels in the U/2U difference.
    u64 marker_pad_copies = 0;
};
inline constexpr u32 kNoMemReads = 6;  // R8..R13

// Pause/resume markers inside user code's body (docs/measure.md "Pausing the count"):
// nanoBench's magic values as little-endian 64-bit words (.quad 0xF0B513B1C2813F04 and
// .quad 0xE0B513B1C2813F04). Counting stops at a pause and resumes at the next resume.
inline constexpr u64 kPauseMarker = 0xF0B513B1C2813F04ull;
inline constexpr u64 kResumeMarker = 0xE0B513B1C2813F04ull;
// Checks the body's markers: none in the other blocks, pause and resume alternating
// within each copy, starting with a pause and ending resumed; not with --no-mem. Returns
// the number of pause/resume pairs per copy.
Result<u32> check_markers(const UserCodeBlocks& blocks, bool no_mem);

struct RegionLayout {
    usize size = 0;         // total bytes, code and the data page
    usize code_size = 0;    // bytes of code (the data page starts at the next 4 KiB)
    usize body_offset = 0;  // first copy (64-byte aligned + align_offset, relative to the start)
    usize body_end = 0;     // after the last copy (before the loop branch)
    usize copy_len = 0;     // bytes of one emitted copy (the body, markers expanded)
    usize tail_offset = 0;  // end serialisation and reads: 64-byte aligned in every version
    usize init_offset = 0, late_init_offset = 0;
    usize exit_offset = 0;  // the exit path (the platform resumes here after a fault)
};

// Limit on one generated region.
inline constexpr usize kMaxRegionBytes = usize(16) << 20;

// Appends `void region(RegionFrame*)` (SysV ABI) to out; out must be placed at a
// 64-byte aligned address for the body alignment to hold. Errors: too many reads,
// code larger than kMaxRegionBytes.
Result<RegionLayout> emit_region(const RegionSpec& spec, Vec<u8>* out);

// ---------------------------------------------------------------- platform

enum class IrqMode : u8 { cli, lvt };
const char* irq_mode_name(IrqMode m);

// Opaque per-CPU state saved by MeasurePlatform::irq_mask.
struct IrqSaved {
    u64 word[16] = {};
};

struct Region {
    const void* code = nullptr;
    usize size = 0;
    usize body_len = 0;  // bytes of one copy of the kernel body
    u64 copies = 0;
    u64 loop = 1;
    usize code_size = 0;    // bytes of code (faults outside it are not the region's)
    usize exit_offset = 0;  // where to resume after a fault (RegionLayout::exit_offset)
    usize body_offset = 0;
    usize init_offset = 0, init_len = 0, late_init_offset = 0, late_init_len = 0;
    CodeBlock block = CodeBlock::body;  // a one-time-init region: its block is one_time_init
};

// Where a fault at `offset` from the region start lies: the block and the offset in it
// (for the body: in the copy, and which copy, 0-based).
struct FaultPlace {
    CodeBlock block = CodeBlock::harness;
    usize offset = 0;
    u64 copy = 0;
};
FaultPlace locate_fault(const Region& r, usize offset);

class PmiHandler;      // pmu/pmi.h
struct MemoryMapInfo;  // measure/memory.h

// MeasurePlatform::run_with_nmis: shared between the measuring CPU (fn and the code it
// runs), the CPU that sends the NMIs, and the check.
struct NmiProbe {
    u32 count = 0;          // NMIs to send
    volatile u64 go = 0;    // 1: the code runs, send; 2: it cannot, send none (the measuring CPU)
    volatile u64 done = 0;  // 1: every NMI was sent and taken, or the sender gave up (the sender)
    // NMI blocking: the measuring CPU's handler sets `inside` while it runs (after a fault in
    // it, whose return must not unblock NMIs) and waits for `second`; the sender then sends
    // the next NMI into the running handler and sets `second`. That NMI must wait for the
    // handler's IRETQ (SDM Vol. 3A §6.7.1). The sender clears both after each pair.
    volatile u64 inside = 0;
    volatile u64 second = 0;
};

// Vector state on the measuring CPU (platform-defined).
struct VectorSaved {
    u64 word[4] = {};
};

// What the engine needs from the platform beyond Hw.
class MeasurePlatform {
public:
    // --- on the BSP (may use firmware services) ---
    // Page-granular memory; `executable` memory can hold generated code
    // (EfiLoaderCode on UEFI), data memory holds kernel buffers (EfiLoaderData).
    virtual Result<void*> alloc_pages(usize bytes, bool executable) = 0;
    virtual void free_pages(void* p, usize bytes) = 0;
    // The machine code of a kernel body (kernel_bodies.S).
    virtual CodeSpan kernel_body(KernelId id) = 0;

    // --- on the measuring CPU (any CPU; no firmware services) ---
    // Masks interrupts on the calling CPU: cli (saving RFLAGS.IF), or masks the local
    // APIC LVT entries and raises the task priority (saving them).
    virtual Status irq_mask(IrqMode mode, IrqSaved* saved) = 0;
    virtual void irq_restore(const IrqSaved& saved) = 0;
    // A serialising instruction: run before executing code written by another CPU
    // (SDM Vol. 3A §9.1.3 "Handling Self- and Cross-Modifying Code").
    virtual void serialize() = 0;
    // Calls the region. A fault inside it is caught: frame->faulted and the fault
    // fields are set and the call returns early (the frame's start/end are then not read).
    virtual void execute(const Region& region, RegionFrame* frame) = 0;
    // Makes vector code runnable for the measurement and restores the firmware's
    // state afterwards (CR4.OSXSAVE, XCR0, the extended state), and loads the page tables
    // in which page 0 and the guard pages are not present (CR3, restored after); around
    // every run, with interrupts masked.
    virtual Status vector_enter(VectorSaved*) { return ok_status(); }
    virtual void vector_leave(const VectorSaved&) {}

    // --- the counter-overflow interrupt (pmu/pmi.h), on the measuring CPU ---
    // The calling CPU's LVT performance-counter entry (SDM Vol. 3A §11.5.1 "Local Vector
    // Table"): where a PMI goes (vector, delivery mode 10:8, mask 16). Errors: the
    // platform cannot reach the CPU's local APIC.
    virtual Result<u32> lvt_perf() { return Error::make(Errc::unsupported, "no local APIC on this platform"); }
    virtual Status set_lvt_perf(u32 value) {
        (void)value;
        return Error::make(Errc::unsupported, "no local APIC on this platform");
    }
    // The calling CPU's AMD extended LVT entry n (APM Vol. 2 §16.4.5 "Extended Interrupts":
    // APIC offset 500h + 10h * n, the layout of an LVT entry), where IBS's interrupt goes
    // (pmu/ibs.h, IBS_CTL.LVTOffset). Errors: no local APIC, no extended APIC space, or
    // fewer extended entries than n + 1.
    virtual Result<u32> lvt_ext(unsigned n) {
        (void)n;
        return Error::make(Errc::unsupported, "no local APIC on this platform");
    }
    virtual Status set_lvt_ext(unsigned n, u32 value) {
        (void)n, (void)value;
        return Error::make(Errc::unsupported, "no local APIC on this platform");
    }
    // From pmi_attach until pmi_detach every NMI on the calling CPU goes to h->on_nmi
    // first (with the interrupted RIP); one it does not claim goes where NMIs went before
    // (the watchdog's stop, the firmware). One CPU measures at a time. pmi_attach saves the
    // CPU's LVT entry and pmi_detach restores it (detach after the counters are stopped).
    virtual Status pmi_attach(PmiHandler* h) {
        (void)h;
        return Error::make(Errc::unsupported, "this platform cannot take the PMU's interrupt");
    }
    virtual void pmi_detach() {}
    // A test of the NMI path (selftest's nmi-path check): runs fn(ctx) on logical processor
    // `cpu` as run_on_cpu does while another CPU sends `cpu` probe.count NMIs, each once
    // probe.go is 1 and the previous one was taken (one that no attached handler claims is
    // then pmulab's own and dropped); then sets probe.done. With probe.go 2 (fn could not
    // start) none is sent. Returns the NMIs taken. Errors: unsupported, no other CPU can send
    // one (one CPU, no local APIC); not_found, the platform has no NMI path (the default).
    virtual Result<u32> run_with_nmis(Hw& hw, u32 cpu, NmiProbe& probe, CpuFn fn, void* ctx) {
        (void)hw, (void)cpu, (void)probe, (void)fn, (void)ctx;
        return Error::make(Errc::not_found, "this platform has no NMI path to test");
    }

    // --- the firmware's memory (measure/memory.h; docs/cache.md), on the BSP ---
    // The memory map's free regions. Errors: the platform has no memory map (the simulator;
    // R14's area is then at most kR14NoMap).
    virtual Status memory_map(MemoryMapInfo* out) {
        (void)out;
        return Error::make(Errc::unsupported, "this platform has no firmware memory map");
    }
    // Physically contiguous data pages [p, p + bytes) with p + offset aligned to `align`
    // (a power of two); freed with free_pages(p, bytes). UEFI: AllocatePages at an address
    // in a free region of the memory map.
    virtual Result<void*> alloc_aligned(usize bytes, u64 align, u64 offset) {
        if (align <= 4096) return alloc_pages(bytes, false);
        (void)offset;
        return Error::make(Errc::unsupported, "this platform cannot align memory beyond 4 KiB");
    }

    // --- on the BSP, once before a measure_run ---
    virtual Status prepare() { return ok_status(); }
    // Once after a measure_run: gives back what prepare() took (the firmware's memory map
    // is as before the run).
    virtual void finish() {}
    // The watchdog (--timeout): a job that runs longer than `seconds` is stopped where it
    // is (on UEFI by an NMI from another CPU) and the region ends like a fault with vector
    // 2 (kWatchdogVector). 0 restores the platform's default for other jobs.
    virtual void set_job_timeout(u32 seconds) {}
    // Whether the watchdog can stop code that never ends on logical processor `cpu`. Errors
    // say why not (UEFI: the BSP alone, and no HPET timer that can be routed as an NMI):
    // user code is refused there before it runs; built-in kernels end by themselves.
    virtual Status can_stop(Hw& hw, u32 cpu) {
        (void)hw, (void)cpu;
        return ok_status();
    }

    // --- on the BSP ---
    // Makes the pages of [p, p + bytes) not present while regions run (vector_enter to
    // vector_leave; page 0 is never present then): the guard pages around user code's
    // scratch areas. `on` false makes them ordinary again, before they are freed. A
    // platform without the protection (the simulator) ignores it.
    virtual Status guard_pages(const void* p, usize bytes, bool on) { return ok_status(); }
    // Runs fn on logical processor `cpu` (Hw::run_on_cpu semantics). A platform may
    // wait differently, e.g. halt the BSP until the AP is done so that the BSP does
    // not compete with the measurement (see measure_efi.cpp).
    virtual Status run_on_cpu(Hw& hw, u32 cpu, CpuFn fn, void* ctx) { return hw.run_on_cpu(cpu, fn, ctx); }
    // The SMT siblings of `cpu` (docs/measure.md "SMT siblings"): prepares them for jobs on
    // `cpu` through run_on_cpu and says what they do meanwhile. UEFI keeps them halted
    // (measure_efi.cpp); the simulator says what its model of them does. This default runs
    // nothing there: idle where the core has siblings (x86/topology.h), else none.
    virtual SiblingState prepare_siblings(Hw& hw, u32 cpu) {
        SmtSiblings s;
        return find_smt_siblings(hw, cpu, &s).ok() && s.count ? SiblingState::idle : SiblingState::none;
    }

protected:
    ~MeasurePlatform() = default;
};

// ---------------------------------------------------------------- the engine

// Machine code given by the user (`run --code`): the body and the optional blocks.
struct UserCode {
    char name[64] = {};  // --name, default "code"
    Vec<u8> body, init, late_init, one_time_init;
    u64 hash = 0;  // FNV-1a 64 of the body bytes
};
inline constexpr usize kUserCodeMax = usize(64) << 10;  // bytes per block
inline constexpr u64 kScratchBytes = u64(1) << 20;      // RDI, RSI, RBP, RSP areas
// --r14-size: what the options accept; the memory map decides (check_r14_area). Without a
// memory map (pmulab-sim) the area is at most kR14NoMap.
inline constexpr u64 kR14Max = u64(1) << 40;
inline constexpr u64 kR14NoMap = u64(1) << 30;
inline constexpr u64 kR14AlignMax = u64(1) << 30;  // --r14-align
u64 fnv1a64(const u8* p, usize n);
struct MeasureConfig;
// Whether R14's area (cfg.r14_size at cfg.r14_align, between its guard pages) fits the
// largest free region of the memory map: else an error (unsupported) that names the
// largest size that fits (measure/memory.cpp). On the BSP, before anything runs.
Status check_r14_area(MeasurePlatform& mp, const MeasureConfig& cfg);
inline constexpr u64 kScratchGuard = 4096;  // the guard page before and after each area

struct BenchInstance {
    const KernelInfo* kernel = nullptr;  // a built-in kernel, or null with `user`
    const UserCode* user = nullptr;
    u64 size = 0;           // buffer bytes (0 for kernels without a buffer)
    bool optional = false;  // from --bench all: skip (with a warning) where unsupported
};

inline constexpr u32 kTimeoutDefault = 10;
inline constexpr u32 kTimeoutMax = 86400;
// The fault vector a region reports when the watchdog stopped it (the NMI's).
inline constexpr u64 kWatchdogVector = 2;

// --prefetchers off on one core type (MeasureConfig::prefetch; x86/prefetch.h): the MSRs
// written in this order, the bits set in each, and the records' list of what is off.
struct PrefetchPlan {
    static constexpr usize kMsrs = 3;
    u32 msr[kMsrs] = {};
    u64 bits[kMsrs] = {};
    u8 count = 0;
    char family[24] = {};  // "skylake-and-later", "gracemont", ...
    char names[192] = {};  // "l2_hw,l2_adjacent_line,dcu,dcu_ip" (the records' list)
};

struct MeasureConfig {
    Vec<BenchInstance> benches;
    Vec<u32> cpus;
    u64 unroll = 100;
    u64 loop = 1;  // 1: no loop instructions at all
    u32 reps = 11;
    u32 warmup = 3;
    Agg agg = Agg::median;
    bool basic = false;
    IrqMode irq = IrqMode::cli;
    SerializeMode serialize = SerializeMode::lfence;
    u64 seed = kDefaultSeed;
    u32 align_offset = 0;    // --align-offset
    u32 code_offset = 0;     // --code-offset: each region's first byte this far past a 4 KiB boundary
    u32 initial_warmup = 0;  // --initial-warmup: runs of the short version before everything
    bool drain_frontend = false;
    u64 r14_size = kScratchBytes;  // --r14-size (user code)
    u64 r14_align = 4096;          // --r14-align: R14's area starts at a multiple of it
    // --prefetchers off (x86/prefetch.h): prefetch[0]'s bits set on the measuring CPU for
    // each job (prefetch[1]'s on a hybrid part's E cores), each MSR restored exactly
    // afterwards; prefetch[0].count 0: prefetchers as they are.
    bool prefetchers_off = false;
    PrefetchPlan prefetch[2];
    bool no_mem = false;              // --no-mem
    u32 timeout_s = kTimeoutDefault;  // --timeout: seconds a job may take (watchdog)
};

inline constexpr u64 kUnrollMax = 1000000;
inline constexpr u64 kLoopMax = 1000000000;
inline constexpr u32 kRepsMax = 100000;
inline constexpr u32 kWarmupMax = 100000;

struct NoiseRecord;  // measure/noise.h

struct MeasureResult {
    u32 cpu = 0;
    u64 apic_id = 0;
    // Where the CPU is (Hw::topology) and what its SMT siblings did meanwhile
    // (MeasurePlatform::prepare_siblings; docs/measure.md "SMT siblings").
    u32 package = 0, core = 0, thread = 0;
    SiblingState sibling = SiblingState::none;
    const BenchInstance* bench = nullptr;
    u32 run = 0;   // which group measured this event (0-based)
    u32 runs = 1;  // how many groups (runs of the benchmark) there are
    const CounterRead* read = nullptr;
    u64 short_copies = 0, long_copies = 0;
    u64 iterations = 0;  // (long_copies - short_copies) * loop
    Summary short_sum, long_sum;
    Frac per_iter[kAggCount];  // indexed by Agg
    // Raw counts per measured repetition (reps values each).
    const i64* short_raw = nullptr;
    const i64* long_raw = nullptr;
    u64 r14 = 0;  // user code: R14's area (its start; physical under UEFI identity mapping)
    // User code's scratch areas (RSP, RDI, RSI, RBP, R14: kDataAreaRegs): each register's
    // initial value, the middle of its area, and the area's size (0: no area).
    u64 area_reg[5] = {}, area_size[5] = {};
    // The job's noise provenance (SMIs, APERF/MPERF, FREEZE_WHILE_SMM, how it serialised);
    // null when the CPU could not be probed.
    const NoiseRecord* noise = nullptr;
    // --prefetchers off: which of MeasureConfig::prefetch this CPU took (1: a hybrid E core).
    u8 prefetch_plan = 0;
    // The long version's region: the one the last run of the job executed (run --lbr maps
    // addresses into the user's code with it).
    const Region* region = nullptr;
};
// The registers of MeasureResult::area_reg, and their names in records.
inline constexpr u8 kDataAreaRegs[5] = {4 /* RSP */, 7 /* RDI */, 6 /* RSI */, 5 /* RBP */, 14 /* R14 */};
inline constexpr const char* kDataAreaNames[5] = {"rsp", "rdi", "rsi", "rbp", "r14"};
// The name a record gives a benchmark: the kernel's or the user's label.
const char* bench_name(const BenchInstance& b);

// Where results go. failure() reports one (benchmark, CPU) that could not be
// measured; the run goes on with the rest.
class MeasureSink {
public:
    virtual void result(const MeasureConfig& cfg, const MeasureResult& r) = 0;
    virtual void failure(const Error& e) = 0;
    // An optional benchmark (from --bench all) that this CPU cannot run.
    virtual void skipped(const Error& e) = 0;
    // Before each (benchmark, CPU, group) job.
    virtual void progress(u32 done, u32 total, const BenchInstance& b, u32 cpu, u32 run) {}

protected:
    ~MeasureSink() = default;
};

// Runs every benchmark on every CPU with every group. Returns the worst class of
// failure seen (Errc::ok when everything was measured).
Errc measure_run(Hw& hw, MeasurePlatform& mp, const MeasureConfig& cfg, const Vec<ReadGroup>& groups,
                 MeasureSink& sink);

}  // namespace pmulab
