// Intel PEBS (pebs.h): the capabilities, the per-model event tables, the DS area and the
// drain of the records.
#include "pmu/pebs.h"

#include "base/fmt.h"
#include "pmu/pebs_pt.h"
#include "x86/intel_regs.h"
#include "x86/msr_addr.h"

namespace pmulab {

using namespace regs::pebs;

namespace {

// Linux arch/x86/events/intel/ds.c: intel_skl_pebs_event_constraints (Skylake .. Comet
// Lake) and intel_icl_pebs_event_constraints (Ice Lake, Tiger Lake, Rocket Lake), their
// listed events only (Skylake's catch-all "allow all events as PEBS with no flags" is left
// out: pmulab takes the events whose records the SDM describes). Ice Lake's
// INST_RETIRED.PREC_DIST is fixed counter 0 (kPebsFixed0); SLOTS, fixed counter 3, Linux
// lists too, pmulab does not arm. The memory events both have, then each model's own
// before and after them.
const PebsEvent kMemEvents[] = {
    {0xD0, 0x11, 0xF, true, false, "MEM_INST_RETIRED.STLB_MISS_LOADS"},
    {0xD0, 0x12, 0xF, true, false, "MEM_INST_RETIRED.STLB_MISS_STORES"},
    {0xD0, 0x21, 0xF, true, false, "MEM_INST_RETIRED.LOCK_LOADS"},
    {0xD0, 0x41, 0xF, true, false, "MEM_INST_RETIRED.SPLIT_LOADS"},
    {0xD0, 0x42, 0xF, true, false, "MEM_INST_RETIRED.SPLIT_STORES"},
    {0xD0, 0x81, 0xF, true, false, "MEM_INST_RETIRED.ALL_LOADS"},
    {0xD0, 0x82, 0xF, true, false, "MEM_INST_RETIRED.ALL_STORES"},
    {0xD1, kAnyUmask, 0xF, true, false, "MEM_LOAD_RETIRED.*"},
    {0xD2, kAnyUmask, 0xF, true, false, "MEM_LOAD_L3_HIT_RETIRED.*"},
    {0xD3, kAnyUmask, 0xF, true, false, "MEM_LOAD_L3_MISS_RETIRED.*"},
};
const PebsEvent kSkylakeHead[] = {
    {0xC0, 0x01, 0x2, false, false, "INST_RETIRED.PREC_DIST"},
    {0xCD, 0x01, 0xF, true, true, "MEM_TRANS_RETIRED.LOAD_LATENCY"},
    {0xD0, 0x22, 0xF, true, false, "MEM_INST_RETIRED.LOCK_STORES"},
};
}  // namespace

const PebsEvent kPebsFixed0 = {0xC0, 0x00, 0, false, false, "INST_RETIRED.PREC_DIST (fixed counter 0)"};
const PebsEvent kPebsSlots = {0xA4, 0x01, 0, false, false, "TOPDOWN.SLOTS (fixed counter 3)"};
const PebsEvent kPebsFixed0Any = {0xC0, 0x00, 0, false, false, "INST_RETIRED.ANY (fixed counter 0)"};

namespace {

const PebsEvent kIceLakeHead[] = {
    {0xCD, 0x01, 0xFF, true, true, "MEM_TRANS_RETIRED.LOAD_LATENCY"},
};
const PebsEvent kIceLakeTail[] = {
    {0xD4, kAnyUmask, 0xF, true, false, "MEM_LOAD_MISC_RETIRED.*"},
    {0xD0, kAnyUmask, 0xF, false, false, "MEM_INST_RETIRED.*"},
};
// intel_glc_pebs_event_constraints (Sapphire Rapids, Emerald Rapids, Granite Rapids; the
// P cores of Alder Lake, Raptor Lake, Meteor Lake): INST_RETIRED.* and load latency on
// PMC1-7, GP counter 0 left to the precise distribution (PDist) Linux gives `:ppp`
// events there. MEM_TRANS_RETIRED.STORE_SAMPLE (0x2cd, PMC0, PEBS_ENABLE bit 63) is not
// armed. Then the memory events and Ice Lake's tail.
const PebsEvent kGoldenCoveHead[] = {
    {0xC0, kAnyUmask, 0xFE, false, false, "INST_RETIRED.*"},
    {0xCD, 0x01, 0xFE, true, true, "MEM_TRANS_RETIRED.LOAD_LATENCY"},
};
// intel_lnc_pebs_event_constraints (Lunar Lake, Arrow Lake P cores): the memory events
// and Ice Lake's tail only (Linux takes the rest from the main table).
// intel_grt_pebs_event_constraints (Gracemont, Crestmont, Skymont E cores; Atom-only
// parts): Linux allows every event (PMU_FL_PEBS_ALL) and lists the load latency on PMC0-1;
// pmulab takes the latency event and the retired instructions, branches and memory
// operations whose records the SDM describes.
const PebsEvent kGracemont[] = {
    {0xD0, 0x05, 0x3, true, true, "MEM_UOPS_RETIRED.LOAD_LATENCY"},
    {0xC0, 0x00, 0xFF, false, false, "INST_RETIRED.ANY_P"},
    {0xC4, kAnyUmask, 0xFF, false, false, "BR_INST_RETIRED.*"},
    {0xC5, kAnyUmask, 0xFF, false, false, "BR_MISP_RETIRED.*"},
    {0xD0, 0x81, 0xFF, true, false, "MEM_UOPS_RETIRED.ALL_LOADS"},
    {0xD0, 0x82, 0xFF, true, false, "MEM_UOPS_RETIRED.ALL_STORES"},
    {0xD1, kAnyUmask, 0xFF, true, false, "MEM_LOAD_UOPS_RETIRED.*"},
};

struct Table {
    const PebsEvent* part[3];
    usize n[3];
    u32 fixed;  // fixed counters PEBS takes (bit i = fixed counter i)
};
template <usize N> constexpr usize count(const PebsEvent (&)[N]) { return N; }
constexpr Table kSkylake = {{kSkylakeHead, kMemEvents, nullptr}, {count(kSkylakeHead), count(kMemEvents), 0}, 0};
constexpr Table kIceLake = {{kIceLakeHead, kMemEvents, kIceLakeTail},
                            {count(kIceLakeHead), count(kMemEvents), count(kIceLakeTail)},
                            0x9};
constexpr Table kGoldenCove = {{kGoldenCoveHead, kMemEvents, kIceLakeTail},
                               {count(kGoldenCoveHead), count(kMemEvents), count(kIceLakeTail)},
                               0x9};
constexpr Table kLionCove = {{nullptr, kMemEvents, kIceLakeTail}, {0, count(kMemEvents), count(kIceLakeTail)}, 0x9};
constexpr Table kGracemontTable = {{kGracemont, nullptr, nullptr}, {count(kGracemont), 0, 0}, 0x1};

const Table& table_of(const PebsCaps& caps) {
    switch (caps.gen) {
        case PebsCaps::Gen::icelake: return kIceLake;
        case PebsCaps::Gen::golden_cove: return kGoldenCove;
        case PebsCaps::Gen::lion_cove: return kLionCove;
        case PebsCaps::Gen::gracemont: return kGracemontTable;
        default: return kSkylake;
    }
}

// Display models (family 6) of each table (Linux intel_pmu_init's cases). On the hybrid
// parts the core type (CPUID.1AH:EAX[31:24]) picks the E cores' table.
const u32 kSkylakeModels[] = {0x4E, 0x5E, 0x55, 0x8E, 0x9E, 0xA5, 0xA6, 0x66};
const u32 kIceLakeModels[] = {0x7D, 0x7E, 0x6A, 0x6C, 0x8C, 0x8D, 0xA7};
// Sapphire/Emerald/Granite Rapids; Alder Lake, Raptor Lake, Meteor Lake, Arrow Lake-U.
const u32 kGoldenCoveModels[] = {0x8F, 0xCF, 0xAD, 0xAE, 0x97, 0x9A, 0xB7, 0xBA, 0xBF, 0xAA, 0xAC, 0xB5};
const u32 kLionCoveModels[] = {0xBD, 0xC5, 0xC6};   // Lunar Lake, Arrow Lake
const u32 kGracemontModels[] = {0xBE, 0xAF, 0xB6};  // Alder Lake-N, Sierra Forest, Grand Ridge
// Whose E cores are Gracemont itself (its data source table): Alder/Raptor Lake, Alder Lake-N.
const u32 kGracemontCoreModels[] = {0x97, 0x9A, 0xB7, 0xBA, 0xBF, 0xBE};
// Whose E cores are Crestmont: Meteor Lake, Sierra Forest, Grand Ridge.
const u32 kCrestmontCoreModels[] = {0xAA, 0xAC, 0xAF, 0xB6};

template <usize N> bool listed(const u32 (&models)[N], u32 m) {
    for (u32 x : models)
        if (x == m) return true;
    return false;
}

// The data source table of a core's records (mem_source.h).
PebsDseTable dse_table(PebsCaps::Gen gen, u32 model) {
    switch (gen) {
        case PebsCaps::Gen::skylake:
        case PebsCaps::Gen::icelake:
        case PebsCaps::Gen::golden_cove: return PebsDseTable::client;
        case PebsCaps::Gen::gracemont:
            if (listed(kGracemontCoreModels, model)) return PebsDseTable::gracemont;
            return listed(kCrestmontCoreModels, model) ? PebsDseTable::crestmont : PebsDseTable::unknown;
        default: return PebsDseTable::unknown;
    }
}

PebsCaps::Gen gen_of(u32 family, u32 model, u8 core_type) {
    if (family != 6) return PebsCaps::Gen::none;
    if (listed(kSkylakeModels, model)) return PebsCaps::Gen::skylake;
    if (listed(kIceLakeModels, model)) return PebsCaps::Gen::icelake;
    if (listed(kGracemontModels, model)) return PebsCaps::Gen::gracemont;
    const bool big = listed(kGoldenCoveModels, model), lnc = listed(kLionCoveModels, model);
    if ((big || lnc) && core_type == kCoreTypeAtom) return PebsCaps::Gen::gracemont;  // the hybrid parts' E cores
    if (big) return PebsCaps::Gen::golden_cove;
    return lnc ? PebsCaps::Gen::lion_cove : PebsCaps::Gen::none;
}

const char* gen_name(PebsCaps::Gen g) {
    static const char* const kNames[] = {"no", "Skylake", "Ice Lake", "Golden Cove", "Lion Cove", "Gracemont"};
    return kNames[unsigned(g)];
}

const PebsEvent* find(const Table& t, u16 event, u8 umask) {
    for (unsigned k = 0; k < 3; ++k)
        for (usize i = 0; i < t.n[k]; ++i) {
            const PebsEvent& e = t.part[k][i];
            if (e.event == event && (e.umask == kAnyUmask || e.umask == umask)) return &e;
        }
    return nullptr;
}

// The length of `name`'s prefix up to and including its first '.', 0 without one.
usize prefix_len(const char* name) {
    for (usize i = 0; name[i]; ++i)
        if (name[i] == '.') return i + 1;
    return 0;
}

// The table's names, those after a name with the same prefix shortened to their unit
// mask ("MEM_INST_RETIRED.ALL_LOADS/ALL_STORES"), so a refusal's list fits its message.
void put_names(StrBuf& b, const Table& t) {
    const char* prev = nullptr;
    for (unsigned k = 0; k < 3; ++k)
        for (usize i = 0; i < t.n[k]; ++i) {
            const char* name = t.part[k][i].name;
            const usize p = prefix_len(name);
            const bool same = prev && p && p == prefix_len(prev) && StrView(prev, p).eq(StrView(name, p)) &&
                              name[p] != '*' && prev[p] != '*';
            if (same) b.printf("/%s", name + p);
            else b.printf("%s%s", prev ? ", " : "", name);
            prev = name;
        }
}

u64 read8(const u8* p) {
    u64 v = 0;
    for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
    return v;
}

}  // namespace

Status pebs_decode(const ProbedCpu& pc, PebsCaps* out) {
    *out = PebsCaps();
    const PmuInfo& info = pc.info;
    CpuDecoded d = decode_cpuid(pc.probe.cpuid);
    const u8 core_type = info.core_type != kCoreTypeNone ? info.core_type : d.id.core_type;
    StrBuf sig;
    put_signature(sig, d.id);
    if (core_type == kCoreTypeAtom) sig.printf(" E core");
    if (core_type == kCoreTypeCore) sig.printf(" P core");
    str_copy(out->model, sizeof out->model, sig.c_str());
    if (is_amd_family(info.vendor))
        return Error::make(Errc::unsupported,
                           "CPU %u: no PEBS: --precise is Intel's PEBS; AMD's precise samples are IBS: use --sample "
                           "ibs_op (or ibs_fetch) where CPUID 8000_0001H:ECX[10] enumerates it",
                           pc.cpu);
    if (info.kind != PmuKind::intel_arch || info.version < 2)
        return Error::make(Errc::unsupported, "CPU %u: no PEBS: %s", pc.cpu,
                           info.kind == PmuKind::none && info.absent[0]
                               ? info.absent
                               : "PEBS needs an Intel architectural PMU (version 2 or later)");
    if (!((pc.probe.cpuid.get(1).edx >> 21) & 1))
        return Error::make(Errc::unsupported, "CPU %u (%s): no PEBS: CPUID.01H:EDX[21] (DS, the debug store) is 0",
                           pc.cpu, out->model);
    if (!info.caps.perf_caps_read)
        return Error::make(Errc::unsupported,
                           "CPU %u (%s): no PEBS record format: IA32_PERF_CAPABILITIES is absent (CPUID.01H:ECX.PDCM)",
                           pc.cpu, out->model);
    regs::PerfCapabilities caps(info.caps.perf_caps);
    out->format = u8(caps.pebs_rec_fmt());
    out->adaptive = adaptive(out->format) && caps.pebs_baseline();
    out->version = info.version;
    if (!has_eventing_ip(out->format))
        return Error::make(Errc::unsupported,
                           "CPU %u (%s): PEBS record format %u has no eventing IP (formats 0 and 1 record the IP after "
                           "the instruction; Linux fixes it up with the LBR, pmulab does not guess): --precise needs "
                           "format 2 or later (Haswell on)",
                           pc.cpu, out->model, out->format);
    if (out->format > 6)
        return Error::make(Errc::unsupported,
                           "CPU %u (%s): PEBS record format %u is newer than pmulab knows (formats 2-6, SDM Vol. 3B "
                           "§20.6.2.2): its DS area and records are not described to it",
                           pc.cpu, out->model, out->format);
    out->gen = gen_of(d.id.family, d.id.model, core_type);
    out->dse = dse_table(out->gen, d.id.model);
    if (out->gen == PebsCaps::Gen::none)
        return Error::make(Errc::unsupported,
                           "CPU %u (%s): pmulab has no PEBS event table for this model (it has Skylake's, Ice Lake's, "
                           "Golden Cove's, Lion Cove's and Gracemont's, from Linux's arch/x86/events/intel/ds.c)",
                           pc.cpu, out->model);
    if (out->gen != PebsCaps::Gen::skylake && !out->adaptive)
        return Error::make(Errc::unsupported,
                           "CPU %u (%s): a core with %s's PEBS event table whose IA32_PERF_CAPABILITIES says PEBS "
                           "format %u without adaptive PEBS (bit 14): not what the SDM describes for it",
                           pc.cpu, out->model, gen_name(out->gen), out->format);
    return ok_status();
}

const PebsEvent* pebs_event(const PebsCaps& caps, u16 event, u8 umask) {
    return caps.gen == PebsCaps::Gen::none ? nullptr : find(table_of(caps), event, umask);
}

const PebsEvent* pebs_event_of(const PebsCaps& caps, const Event& e) {
    if (e.kind == EventKind::programmable) return pebs_event(caps, e.event_select, e.umask);
    if (e.kind != EventKind::fixed || caps.gen == PebsCaps::Gen::none || !caps.adaptive || e.fixed_counter < 0 ||
        e.fixed_counter >= int(ds_fixed_slots(caps.format)) || !((table_of(caps).fixed >> e.fixed_counter) & 1))
        return nullptr;
    if (e.fixed_counter == 3) return &kPebsSlots;
    return caps.gen == PebsCaps::Gen::gracemont ? &kPebsFixed0Any : &kPebsFixed0;
}

namespace {

// INST_RETIRED.PREC_DIST's encodings name fixed counter 0, as Linux's constraints place
// them: 00H/01H (Ice Lake's 2021 event lists, Golden Cove, Lion Cove) and on Ice Lake also
// C0H/01H (on Golden Cove C0H is INST_RETIRED.* on PMC1-7). One with a modifier the fixed
// counter lacks (CMASK, INV, EDGE, AnyThread, UMASK2, .CTR=n, an MSR) stays where it is,
// and is refused: nothing is dropped silently.
void move_prec_dist(const PebsCaps& caps, Event* e) {
    const bool icl = caps.gen == PebsCaps::Gen::icelake;
    const bool big = icl || caps.gen == PebsCaps::Gen::golden_cove || caps.gen == PebsCaps::Gen::lion_cove;
    const bool prec = ((icl && e->event_select == 0xC0) || e->event_select == 0x00) && e->umask == 0x01;
    const bool plain = !e->cmask && !e->inv && !e->edge && !e->intel.any && !e->intel.umask2 && !e->intel.eq &&
                       e->pinned_counter < 0 && !e->intel.aux_count;
    if (!big || e->kind != EventKind::programmable || !prec || !plain) return;
    e->kind = EventKind::fixed;
    e->fixed_counter = 0;
}

// The fixed counters PEBS takes on this model, for messages.
void put_fixed(StrBuf& b, const PebsCaps& caps) {
    const u32 fixed = table_of(caps).fixed;
    const char* f0 = caps.gen == PebsCaps::Gen::gracemont ? "INST_RETIRED.ANY" : "INST_RETIRED.PREC_DIST";
    if (fixed == 0x1) b.printf("fixed counter 0 only (instructions, %s)", f0);
    else b.printf("fixed counters 0 and 3 only (instructions, %s; slots, TOPDOWN.SLOTS)", f0);
}

Status refuse(const PebsCaps& caps, u32 cpu, const Event& e) {
    const Table& t = table_of(caps);
    StrBuf fixed;
    put_fixed(fixed, caps);
    if (e.kind == EventKind::fixed && t.fixed && caps.gen != PebsCaps::Gen::none)
        return Error::make(Errc::unsupported, "CPU %u (%s): PEBS takes %s; '%s' is fixed counter %d", cpu, caps.model,
                           fixed.c_str(), e.name, int(e.fixed_counter));
    StrBuf names;
    if (t.fixed & 1)
        names.printf("%s, ", caps.gen == PebsCaps::Gen::gracemont ? kPebsFixed0Any.name : kPebsFixed0.name);
    if (t.fixed & 8) names.printf("%s, ", kPebsSlots.name);
    put_names(names, t);
    return Error::make(Errc::unsupported,
                       "CPU %u (%s): PEBS cannot take '%s' (event 0x%02X, umask 0x%02X%s) on this model; its PEBS "
                       "events: %s",
                       cpu, caps.model, e.name, unsigned(e.event_select), unsigned(e.umask),
                       e.kind == EventKind::fixed ? ", a fixed counter's" : "", names.c_str());
}

}  // namespace

Status pebs_mark(const PebsCaps& caps, u32 cpu, Event* e) {
    move_prec_dist(caps, e);
    const PebsEvent* pe = pebs_event_of(caps, *e);
    if (!pe) return refuse(caps, cpu, *e);
    if (e->kind == EventKind::fixed) {
        e->pmi = false;            // FIXED_CTR_CTRL's PMI bit clear: the buffer's threshold interrupts
        e->gp_equivalent = false;  // on fixed counter i, whose PEBS bit is 32 + i
        return ok_status();
    }
    if (pe->latency) {
        bool thr = false;
        for (unsigned a = 0; a < e->intel.aux_count; ++a) thr |= e->intel.aux[a].msr == regs::MSR_PEBS_LD_LAT_THRESHOLD;
        if (!thr)
            return Error::make(Errc::invalid_argument,
                               "'%s' (%s) counts the loads slower than MSR_PEBS_LD_LAT_THRESHOLD: give the threshold "
                               "in core cycles with the event, e.g. %02X.%02X.MSR_3F6H=3",
                               e->name, pe->name, unsigned(pe->event), unsigned(pe->umask));
    }
    e->pmi = false;  // the buffer's threshold interrupts, not the counter (Linux clears EVENTSEL.INT)
    e->allowed_gp &= pe->counters;
    if (!e->allowed_gp || (e->pinned_counter >= 0 && !((pe->counters >> e->pinned_counter) & 1)))
        return Error::make(Errc::unsupported, "CPU %u (%s): %s takes PEBS only on counters 0x%x (bit i = PMCi)", cpu,
                           caps.model, pe->name, pe->counters);
    return ok_status();
}

void PebsSource::init(const PebsCaps& caps, PmiSetup* setup, const bool* data_la, const bool* latency) {
    caps_ = caps;
    n_ = 0;
    status_bits_ = 0;
    for (unsigned i = 0; i < setup->count && i < PmiSetup::kMax; ++i) {
        PmiCounter& c = setup->counters[i];
        if (c.kind != CounterKind::gp && c.kind != CounterKind::fixed) continue;
        c.precise = true;
        Counter& k = counters_[n_++];
        k.index = c.index, k.slot = c.slot, k.reload = c.reload;
        k.fixed = c.kind == CounterKind::fixed;
        k.data_la = data_la[i], k.latency = latency[i];
        status_bits_ |= c.status_bit;
    }
    bool mem = false;
    for (unsigned i = 0; i < n_; ++i) mem |= counters_[i].data_la || counters_[i].latency;
    record_bytes_ = caps.format < 4 ? kRecordSize[caps.format < 4 ? caps.format : 3]
                                    : kBasicBytes + (mem ? kMemBytes : 0);
}

Status PebsSource::add_cpu(u32 cpu, void* mem) {
    if (ncpus_ >= kMaxCpus)
        return Error::make(Errc::unsupported, "PEBS: more than %u measuring CPUs", unsigned(kMaxCpus));
    Cpu& c = cpus_[ncpus_++];
    c.cpu = cpu;
    c.ds = static_cast<DsArea*>(mem);
    c.buffer = static_cast<u8*>(mem) + 4096;
    return ok_status();
}

Status PebsSource::on_setup(Hw& hw) {
    here_ = nullptr;
    records_ = 0;
    const u32 me = hw.current_cpu();
    for (usize i = 0; i < ncpus_; ++i)
        if (cpus_[i].cpu == me) here_ = &cpus_[i];
    if (!here_) return Error::make(Errc::internal, "PEBS: no DS area was prepared for CPU %u", me);
    static constexpr u32 kMsrs[3] = {IA32_DS_AREA, msr::IA32_PEBS_ENABLE, MSR_PEBS_DATA_CFG};
    for (unsigned k = 0; k < 3; ++k) {
        saved_ok_[k] = false;
        if (k == 2 && !caps_.adaptive) continue;
        Result<u64> v = hw.rdmsr(kMsrs[k]);
        if (!v.ok()) return v.error().with_context("PEBS: saving the PEBS MSRs");
        saved_[k] = v.value();
        saved_ok_[k] = true;
    }
    DsArea& ds = *here_->ds;
    if (caps_.format >= 5) *reinterpret_cast<DsArea5*>(here_->ds) = DsArea5();
    else ds = DsArea();
    const u64 base = u64(reinterpret_cast<uintptr_t>(here_->buffer));
    ds.pebs_base = ds.pebs_index = base;
    ds.pebs_max = base + (4096 / record_bytes_) * record_bytes_;
    ds.pebs_threshold = base + record_bytes_;  // one record per PMI
    PebsEnable en;
    bool mem = false;
    for (unsigned i = 0; i < n_; ++i) {
        const Counter& c = counters_[i];
        u64* reset = reset_slot(here_->ds, caps_.format, c.fixed, c.index);
        if (!reset)
            return Error::make(Errc::internal, "PEBS: the format-%u DS area has no reset slot for %s counter %u",
                               unsigned(caps_.format), c.fixed ? "fixed" : "GP", unsigned(c.index));
        *reset = c.reload;
        if (c.fixed) en.set_fixed(c.index);
        else en.set_pmc(c.index);
        if (c.latency && caps_.version < 5) en.set_ll(c.index);
        mem |= c.data_la || c.latency;
    }
    PMULAB_TRY(hw.wrmsr(IA32_DS_AREA, u64(reinterpret_cast<uintptr_t>(here_->ds))));
    if (caps_.adaptive) PMULAB_TRY(hw.wrmsr(MSR_PEBS_DATA_CFG, PebsDataCfg().set_mem_info(mem).raw()));
    u64 raw = en.raw();
    if (pt_) PMULAB_TRY(pt_->on_setup(hw, &ds, caps_.format, &raw));  // the trace on; raw gains the PT output
    return hw.wrmsr(msr::IA32_PEBS_ENABLE, raw);
}

Status PebsSource::on_teardown(Hw& hw) {
    Status s = ok_status();
    static constexpr u32 kOrder[3] = {msr::IA32_PEBS_ENABLE, MSR_PEBS_DATA_CFG, IA32_DS_AREA};
    static constexpr unsigned kSlot[3] = {1, 2, 0};
    for (unsigned k = 0; k < 3; ++k) {
        if (!saved_ok_[kSlot[k]]) continue;
        Status w = hw.wrmsr(kOrder[k], saved_[kSlot[k]]);
        if (s.ok() && !w.ok()) s = w;
        saved_ok_[kSlot[k]] = false;
    }
    if (pt_) {
        Status p = pt_->on_teardown(hw);  // after PEBS_ENABLE: no record goes to a stopped trace
        if (s.ok() && !p.ok()) s = p;
    }
    here_ = nullptr;
    return s;
}

const PebsSource::Counter* PebsSource::counter_of(u64 applicable) const {
    for (unsigned i = 0; i < n_; ++i)
        if ((applicable >> (counters_[i].index + (counters_[i].fixed ? 32 : 0))) & 1) return &counters_[i];
    return nullptr;
}

bool PebsSource::parse(const u8* rec, u64 room, PreciseSample* s, u64* applicable, u64* size) const {
    *s = PreciseSample();
    u64 dla = 0, lat = 0, dse = 0;
    if (!adaptive(caps_.format)) {
        *size = kRecordSize[caps_.format];
        if (room < *size) return false;
        s->rip = read8(rec + kRecEventingIp);
        *applicable = read8(rec + kRecStatus);
        dla = read8(rec + kRecDla);
        lat = read8(rec + kRecLat);
        dse = read8(rec + kRecDse);
    } else {
        if (room < kBasicBytes) return false;
        BasicFormat f(read8(rec + kBasicFormatSize));
        *size = f.size();
        if (*size < kBasicBytes || *size > room) return false;
        s->rip = read8(rec + kBasicIp);
        *applicable = read8(rec + kBasicApplicable);
        if (PebsDataCfg(f.groups()).mem_info() && *size >= kBasicBytes + kMemBytes) {
            dla = read8(rec + kBasicBytes + kMemAddress);
            lat = read8(rec + kBasicBytes + kMemLatency) & 0xFFFFFFFFu;  // [63:32]: instruction latency (format 5)
            dse = read8(rec + kBasicBytes + kMemAux);
        }
    }
    const Counter* c = counter_of(*applicable);
    s->has_data = c && c->data_la;
    s->data_addr = s->has_data ? dla : 0;
    s->has_latency = c && c->latency;
    s->latency = s->has_latency ? u32(lat) : 0;
    if (s->has_latency) s->source = pebs_mem_source(dse, caps_.dse);  // the load-latency data source
    return true;
}

bool PebsSource::drain(Hw& hw, u64 status, PmiSink& sink, u64* ack) {
    if (!here_) return false;
    DsArea& ds = *here_->ds;
    const u8* base = reinterpret_cast<const u8*>(uintptr_t(ds.pebs_base));
    const u64 used = pt_ ? pt_->collect(hw, here_->buffer, 4096)  // decoded into the unused DS buffer
                     : ds.pebs_index > ds.pebs_base ? ds.pebs_index - ds.pebs_base
                                                    : 0;
    bool any = false;
    for (u64 at = 0; at < used;) {
        PreciseSample s;
        u64 applicable = 0, size = 0;
        if (!parse(base + at, used - at, &s, &applicable, &size)) break;
        if (const Counter* c = counter_of(applicable)) {
            sink.precise(c->slot, s);
            any = true;
        }
        ++records_;
        at += size;
    }
    ds.pebs_index = ds.pebs_base;
    const bool buffer = regs::PerfGlobalStatus(status).ovf_buf();
    if (!buffer && !any) return false;
    *ack |= regs::PerfGlobalStatus().set_ovf_buf().raw() | (status & status_bits_);
    return true;
}

}  // namespace pmulab
