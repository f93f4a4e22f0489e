// AMD Instruction-Based Sampling (docs/sampling.md "Precise sampling (IBS)"): what a CPU
// has (CPUID Fn8000_001B), the control values of `run --sample ibs_op[:P]`,
// `ibs_op_cycles[:P]` and `ibs_fetch[:P]`, and the PreciseSource drained in the NMI.
//
// IBS has no counter: the op (or fetch) counter counts in the IBS unit itself; when it
// reaches IbsOpMaxCnt the next op is tagged, its RIP, data address and latencies go to the
// IbsOp* MSRs, IbsOpCtl.IbsOpVal is set and the interrupt goes out through the APIC's
// extended LVT entry that IBS_CTL.LVTOffset names (APM Vol. 2 §13.3). The handler
// (IbsSource::drain) reads the sample, hands it to the sink and re-arms the unit: the
// control value with IbsOpVal clear and the current count 0 (as Linux's
// arch/x86/events/amd/ibs.c does).
#pragma once

#include "base/result.h"
#include "pmu/pmi.h"
#include "x86/cpuid.h"
#include "x86/ibs_regs.h"

namespace pmulab {

// IBS of one CPU, from CPUID (ibs_decode).
struct IbsInfo {
    bool op = false, fetch = false;   // op / fetch sampling enumerated
    regs::ibs::IbsFeatures features;  // Fn8000_001B_EAX (0 where IBS is absent)
    char absent[200] = {};            // why there is no IBS ("" when there is)
    // The longest op period (with OpCntExt: 27 bits, else 20).
    u64 op_period_max() const;
};
void ibs_decode(const CpuidSnapshot& s, IbsInfo* out);

// The three sampling kinds `--sample` takes by name (they are not PMU events).
enum class IbsKind : u8 { none, op, op_cycles, fetch };
// The kind of a --sample event name (case-insensitive, without the period), none when it
// is not one of IBS's.
IbsKind ibs_kind(StrView event);
// "ibs_op", "ibs_op" (cycles) and "ibs_fetch": the samples record's "source".
const char* ibs_source_name(IbsKind k);
// The default periods: 0x10000 ops / cycles (Linux's perf default for ibs_op is
// 0x10000 as well), 0x10000 fetches.
inline constexpr u64 kIbsDefaultPeriod = 0x10000;

// A period's form, before any CPU is known: a multiple of 16 (IbsOpMaxCnt/IbsFetchMaxCnt
// hold the count without its low 4 bits), at least 16; Errc::invalid_argument naming the
// nearest valid periods otherwise (pmulab does not round).
Status ibs_check_period(IbsKind k, u64 period, StrView spec);
// The kind and period against a CPU: Errc::unsupported when the CPU lacks IBS or the kind
// (no op sampling, or ibs_op without OpCnt), Errc::invalid_argument for a period beyond
// the CPU's maximum count.
Status ibs_check(const IbsInfo& info, IbsKind k, u64 period, StrView spec);

// The controls `run --ibs-rand` and `--ibs-l3-miss-only` add (docs/sampling.md "IBS
// controls"):
//   rand          fetch: IbsFetchCtl.IbsRandEn (the hardware randomises bits 3:0 of the
//                 fetch counter each time it starts); ops: Linux's practice (its
//                 perf_ibs_handle_irq): the hardware randomises IbsOpCurCnt[6:0] when the
//                 counter rolls over, and the re-arm keeps those bits as the next period's
//                 start, where IbsOpCurCnt is writable (RdWrOpCnt) and ops are counted
//                 (IbsOpCntCtl); so a period shortens by 0..15 fetches or 0..127 ops;
//   l3_miss_only  IbsOpCtl[16] / IbsFetchCtl[59] L3MissOnly (the Zen 4 extensions, CPUID
//                 Fn8000_001B_EAX[11]): only ops (fetches) that missed L3 are reported.
struct IbsControls {
    bool rand = false;
    bool l3_miss_only = false;
};
// The controls against a CPU and kind: Errc::unsupported without L3MissOnly (no Zen 4
// extensions) or, for ops, without RdWrOpCnt; Errc::invalid_argument for --ibs-rand with
// ibs_op_cycles (Linux keeps the random bits only when counting ops).
Status ibs_check_controls(const IbsInfo& info, IbsKind k, const IbsControls& c, StrView spec);

// The control register value that enables sampling of kind k every `period`.
u64 ibs_op_ctl(IbsKind k, u64 period, const IbsControls& c = IbsControls());
u64 ibs_fetch_ctl(u64 period, const IbsControls& c = IbsControls());

// The IBS unit of the measuring CPU as the NMI handler sees it: the armed control values
// (0: that kind is not sampled) and the sink's slots. Allocation-free.
class IbsSource final : public PreciseSource {
public:
    u64 op_ctl = 0, fetch_ctl = 0;
    u32 op_slot = 0, fetch_slot = 0;
    // The measuring CPU's IBS has the Zen 4 extensions (IbsOpData2's 5-bit DataSrc); set
    // by the setup hook from CPUID.
    bool zen4 = false;
    // --ibs-rand on ops: the re-arm keeps IbsOpCurCnt[6:0] (IbsControls).
    bool op_rand = false;
    // Samples taken, and those dropped because their RIP was invalid (IbsOpData[38] where
    // RipInvalidChk is enumerated; the bit is reserved, 0, elsewhere).
    u64 taken = 0, rip_invalid = 0;

    bool drain(Hw& hw, u64 status, PmiSink& sink, u64* ack) override;
    // Starts the unit(s): the armed control values written (before each run).
    Status start(Hw& hw) const;
    // Stops them: IbsOpEn / IbsFetchEn cleared (after each run); the caller restores the
    // values it saved.
    Status stop(Hw& hw) const;

private:
    bool drain_op(Hw& hw, PmiSink& sink);
    bool drain_fetch(Hw& hw, PmiSink& sink);
};

}  // namespace pmulab
