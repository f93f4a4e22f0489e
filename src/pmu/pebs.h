// Intel PEBS for `run --sample EVENT[:PERIOD] --precise` (docs/sampling.md "Precise
// sampling (PEBS)"; the registers and record formats: x86/pebs_regs.h).
//
// pmulab owns the DS save area and the PEBS buffer of every measuring CPU (memory the
// caller allocates on the BSP, PebsSource::add_cpu). On the measuring CPU, after the PMU
// is programmed (counting off):
//   setup     IA32_DS_AREA, IA32_PEBS_ENABLE and (adaptive PEBS) MSR_PEBS_DATA_CFG saved;
//             the DS area filled: buffer base = index, absolute maximum, the interrupt
//             threshold one record past the base (one record per PMI, as Linux's
//             non-large PEBS), each PEBS counter's reset value = its reload
//             (2^width - period); DS_AREA, DATA_CFG (memory info) and PEBS_ENABLE (the
//             counters, and LL_EN for load latency before perfmon v5) written;
//             fixed counter i (0: INST_RETIRED.PREC_DIST, 3: SLOTS; adaptive PEBS): its
//             reset value in the DS area's fixed slot (80H + 8i in format 4, 140H + 8i
//             from format 5: DsArea5), PEBS_ENABLE bit 32+i, the records' applicable-
//             counters bit 32+i; its FIXED_CTR_CTRL PMI bit is clear;
//   the PMI   (the threshold reached: GLOBAL_STATUS bit 62) PmiHandler::on_nmi drains the
//             buffer (PreciseSource::drain): each record's eventing IP, data linear
//             address and load latency to PmiSink::precise; the index back to the base;
//             bit 62 and the PEBS counters' overflow bits acknowledged;
//   teardown  PEBS_ENABLE, DATA_CFG and DS_AREA written back exactly (in that order).
// MSR_PEBS_LD_LAT_THRESHOLD is the event's own MSR_3F6H=v (programmed and restored by the
// PMU session with the event, events.h).
#pragma once

#include "pmu/pmi.h"
#include "pmu/pmu.h"
#include "x86/pebs_regs.h"

namespace pmulab {

class PebsPt;  // pebs_pt.h: PEBS output to Intel PT

// The PEBS of one class of CPUs, decoded from its probe (no hardware access).
struct PebsCaps {
    // Whose PEBS event table applies: Skylake's, Ice Lake's, Golden Cove's (Sapphire
    // Rapids, Alder Lake/Raptor Lake/Meteor Lake P cores), Lion Cove's (Lunar Lake, Arrow
    // Lake P cores) or Gracemont's (the E cores from Alder Lake on, Atom-only parts).
    enum class Gen : u8 { none, skylake, icelake, golden_cove, lion_cove, gracemont };
    u8 format = 0;          // IA32_PERF_CAPABILITIES[11:8]
    bool adaptive = false;  // [14] PEBS baseline (format >= 4): MSR_PEBS_DATA_CFG
    u8 version = 0;         // architectural perfmon version (LL_EN bits before v5)
    Gen gen = Gen::none;
    PebsDseTable dse = PebsDseTable::unknown;  // how its load-latency data source reads
    char model[24] = {};                       // "06_7EH (Ice Lake)" for messages
};
// Errc::unsupported with the reason where pmulab cannot use PEBS on this CPU: not Intel
// (AMD: "use --sample ibs_op"), no DS (CPUID.01H:EDX[21]), no IA32_PERF_CAPABILITIES,
// record format 0 or 1 (no eventing IP: the IP after the instruction, which Linux fixes up
// with the LBR; pmulab refuses rather than guess), a format newer than 6, or a model
// without a PEBS event table (the core type, CPUID.1AH, picks it on hybrid parts).
Status pebs_decode(const ProbedCpu& pc, PebsCaps* out);

// One PEBS-capable event of a model (Linux arch/x86/events/intel/ds.c,
// intel_skl_pebs_event_constraints / intel_icl_pebs_event_constraints).
struct PebsEvent {
    u16 event;
    u16 umask;         // kAnyUmask: every unit mask of the event
    u32 counters;      // GP counters that take it (bit i = PMCi)
    bool data_la;      // the record has its data linear address
    bool latency;      // load latency (MEM_TRANS_RETIRED.LOAD_LATENCY): the record has it
    const char* name;  // Intel's name
};
inline constexpr u16 kAnyUmask = 0xFFFF;
// The model's entry for (event, umask), null when PEBS cannot take it.
const PebsEvent* pebs_event(const PebsCaps& caps, u16 event, u8 umask);
// Fixed-counter PEBS (adaptive PEBS, formats 4 on). Ice Lake, Golden Cove and Lion Cove
// (Linux's tables: 0x0100, and on Ice Lake 0x01c0, on fixed counter 0; 0x0400 on fixed
// counter 3): INST_RETIRED.PREC_DIST, taken by `instructions` (fixed counter 0) and by
// the raw encodings pebs_mark moves there (00.01; C0.01 on Ice Lake only), and SLOTS
// (TOPDOWN.SLOTS, `slots`, fixed counter 3). Gracemont (Linux's PMU_FL_PEBS_ALL): fixed
// counter 0, INST_RETIRED.ANY.
extern const PebsEvent kPebsFixed0;
extern const PebsEvent kPebsSlots;
extern const PebsEvent kPebsFixed0Any;
// The entry of `e` (a programmable event's from the table, a fixed counter's where the
// model's table has it), null when PEBS cannot take it.
const PebsEvent* pebs_event_of(const PebsCaps& caps, const Event& e);
// Checks one sampled event for --precise on `cpu` and marks it (Event::pmi cleared: PEBS
// counters interrupt through the buffer threshold, as Linux clears EVENTSEL.INT and the
// FIXED_CTR_CTRL PMI bit; allowed_gp narrowed to the table's counters; Ice Lake's
// PREC_DIST put on fixed counter 0). Errc::unsupported naming the event and the model; a
// load-latency event without its threshold (MSR_3F6H=v) is invalid_argument.
Status pebs_mark(const PebsCaps& caps, u32 cpu, Event* e);

// The PEBS records of one sampled group, drained in its PMIs.
class PebsSource final : public PreciseSource {
public:
    static constexpr usize kMaxCpus = 256;
    static constexpr usize kBytesPerCpu = 2 * 4096;  // the DS area's page, the buffer's page
    // On the BSP: the caps, the group's PMI arming (its PEBS counters are marked precise
    // here), and which of them are memory and load-latency events.
    void init(const PebsCaps& caps, PmiSetup* setup, const bool* data_la, const bool* latency);
    // On the BSP: `mem` (kBytesPerCpu, page aligned) is CPU cpu's DS area and buffer.
    Status add_cpu(u32 cpu, void* mem);
    Status on_setup(Hw& hw);
    Status on_teardown(Hw& hw);
    bool drain(Hw& hw, u64 status, PmiSink& sink, u64* ack) override;
    u64 records() const { return records_; }  // drained since on_setup
    u64 record_bytes() const { return record_bytes_; }
    // --pebs-output pt (pebs_pt.h): the records go through `pt`'s trace, not the DS buffer.
    void set_pt(PebsPt* pt) { pt_ = pt; }

private:
    struct Counter {
        u8 index = 0;  // PMCi, or fixed counter i
        bool fixed = false;
        u32 slot = 0;
        u64 reload = 0;
        bool data_la = false, latency = false;
    };
    struct Cpu {
        u32 cpu = 0;
        regs::pebs::DsArea* ds = nullptr;
        u8* buffer = nullptr;
    };
    const Counter* counter_of(u64 applicable) const;
    bool parse(const u8* rec, u64 room, PreciseSample* s, u64* applicable, u64* size) const;

    PebsCaps caps_;
    Counter counters_[PmiSetup::kMax];
    unsigned n_ = 0;
    u64 status_bits_ = 0;  // the PEBS counters' GLOBAL_STATUS bits
    u64 record_bytes_ = 0;
    Cpu cpus_[kMaxCpus];
    usize ncpus_ = 0;
    Cpu* here_ = nullptr;  // the measuring CPU's (on_setup)
    u64 saved_[3] = {};    // DS_AREA, PEBS_ENABLE, DATA_CFG
    bool saved_ok_[3] = {};
    u64 records_ = 0;
    PebsPt* pt_ = nullptr;
};

}  // namespace pmulab
