// Intel PEBS (pebs.h): the capabilities, the per-model event tables, the DS area and the
// drain of the records.
#include "pmu/pebs.h"

#include "base/fmt.h"
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

namespace {

const PebsEvent kIceLakeHead[] = {
    {0xCD, 0x01, 0xFF, true, true, "MEM_TRANS_RETIRED.LOAD_LATENCY"},
};
const PebsEvent kIceLakeTail[] = {
    {0xD4, kAnyUmask, 0xF, true, false, "MEM_LOAD_MISC_RETIRED.*"},
    {0xD0, kAnyUmask, 0xF, false, false, "MEM_INST_RETIRED.*"},
};

struct Table {
    const PebsEvent* part[3];
    usize n[3];
};
template <usize A> constexpr Table table(const PebsEvent (&head)[A], const PebsEvent* tail = nullptr, usize ntail = 0) {
    return Table{{head, kMemEvents, tail}, {A, sizeof kMemEvents / sizeof kMemEvents[0], ntail}};
}
constexpr Table kSkylake = table(kSkylakeHead);
constexpr Table kIceLake = table(kIceLakeHead, kIceLakeTail, sizeof kIceLakeTail / sizeof kIceLakeTail[0]);

const Table& table_of(const PebsCaps& caps) { return caps.gen == PebsCaps::Gen::icelake ? kIceLake : kSkylake; }

// Display models (family 6) of each table (Linux intel_pmu_init's cases).
const u32 kSkylakeModels[] = {0x4E, 0x5E, 0x55, 0x8E, 0x9E, 0xA5, 0xA6, 0x66};
const u32 kIceLakeModels[] = {0x7D, 0x7E, 0x6A, 0x6C, 0x8C, 0x8D, 0xA7};

template <usize N> bool listed(const u32 (&models)[N], u32 m) {
    for (u32 x : models)
        if (x == m) return true;
    return false;
}

const PebsEvent* find(const Table& t, u16 event, u8 umask) {
    for (unsigned k = 0; k < 3; ++k)
        for (usize i = 0; i < t.n[k]; ++i) {
            const PebsEvent& e = t.part[k][i];
            if (e.event == event && (e.umask == kAnyUmask || e.umask == umask)) return &e;
        }
    return nullptr;
}

void put_names(StrBuf& b, const Table& t) {
    bool first = true;
    for (unsigned k = 0; k < 3; ++k)
        for (usize i = 0; i < t.n[k]; ++i, first = false) b.printf("%s%s", first ? "" : ", ", t.part[k][i].name);
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
    StrBuf sig;
    put_signature(sig, d.id);
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
    if (d.id.family == 6 && listed(kSkylakeModels, d.id.model)) out->gen = PebsCaps::Gen::skylake;
    if (d.id.family == 6 && listed(kIceLakeModels, d.id.model)) out->gen = PebsCaps::Gen::icelake;
    if (out->gen == PebsCaps::Gen::none)
        return Error::make(Errc::unsupported,
                           "CPU %u (%s): pmulab has no PEBS event table for this model (it has Skylake's and Ice "
                           "Lake's, from Linux's arch/x86/events/intel/ds.c)",
                           pc.cpu, out->model);
    if (out->gen == PebsCaps::Gen::icelake && !out->adaptive)
        return Error::make(
            Errc::unsupported,
            "CPU %u (%s): an Ice Lake-class core whose IA32_PERF_CAPABILITIES says PEBS format %u without "
            "adaptive PEBS (bit 14): not what the SDM describes for it",
            pc.cpu, out->model, out->format);
    return ok_status();
}

const PebsEvent* pebs_event(const PebsCaps& caps, u16 event, u8 umask) {
    return caps.gen == PebsCaps::Gen::none ? nullptr : find(table_of(caps), event, umask);
}

const PebsEvent* pebs_event_of(const PebsCaps& caps, const Event& e) {
    if (e.kind == EventKind::programmable) return pebs_event(caps, e.event_select, e.umask);
    const bool fixed0 = e.kind == EventKind::fixed && e.fixed_counter == 0;
    return fixed0 && caps.gen == PebsCaps::Gen::icelake && caps.format == 4 ? &kPebsFixed0 : nullptr;
}

namespace {

// Ice Lake: INST_RETIRED.PREC_DIST's encodings (C0H/01H, and 00H/01H from 2021's event
// lists) name fixed counter 0, as Linux's constraints place them. One with a modifier
// the fixed counter lacks (CMASK, INV, EDGE, AnyThread, UMASK2, .CTR=n, an MSR) stays
// where it is, and is refused: nothing is dropped silently.
void move_prec_dist(const PebsCaps& caps, Event* e) {
    const bool prec = (e->event_select == 0xC0 || e->event_select == 0x00) && e->umask == 0x01;
    const bool plain = !e->cmask && !e->inv && !e->edge && !e->intel.any && !e->intel.umask2 && !e->intel.eq &&
                       e->pinned_counter < 0 && !e->intel.aux_count;
    if (caps.gen != PebsCaps::Gen::icelake || e->kind != EventKind::programmable || !prec || !plain) return;
    e->kind = EventKind::fixed;
    e->fixed_counter = 0;
}

Status refuse(const PebsCaps& caps, u32 cpu, const Event& e) {
    const bool icl = caps.gen == PebsCaps::Gen::icelake;
    if (e.kind == EventKind::fixed && icl && e.fixed_counter == 3)
        return Error::make(Errc::unsupported,
                           "CPU %u (%s): pmulab does not arm fixed counter 3 ('%s', TOPDOWN.SLOTS) for PEBS: it "
                           "counts issue slots and feeds PERF_METRICS; fixed counter 0 (instructions, "
                           "INST_RETIRED.PREC_DIST) is the fixed counter PEBS takes here",
                           cpu, caps.model, e.name);
    if (e.kind == EventKind::fixed && icl)
        return Error::make(Errc::unsupported,
                           "CPU %u (%s): PEBS takes fixed counter 0 only (instructions, INST_RETIRED.PREC_DIST); "
                           "'%s' is fixed counter %d",
                           cpu, caps.model, e.name, int(e.fixed_counter));
    StrBuf names;
    if (icl) names.printf("%s, ", kPebsFixed0.name);
    put_names(names, table_of(caps));
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
        e->gp_equivalent = false;  // on fixed counter 0, whose PEBS bit is 32
        return ok_status();
    }
    if (pe->latency) {
        bool thr = false;
        for (unsigned a = 0; a < e->intel.aux_count; ++a) thr |= e->intel.aux[a].msr == regs::MSR_PEBS_LD_LAT_THRESHOLD;
        if (!thr)
            return Error::make(Errc::invalid_argument,
                               "'%s' (%s) counts the loads slower than MSR_PEBS_LD_LAT_THRESHOLD: give the threshold "
                               "in core cycles with the event, e.g. CD.01.MSR_3F6H=3",
                               e->name, pe->name);
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
    ds = DsArea();
    const u64 base = u64(reinterpret_cast<uintptr_t>(here_->buffer));
    ds.pebs_base = ds.pebs_index = base;
    ds.pebs_max = base + (4096 / record_bytes_) * record_bytes_;
    ds.pebs_threshold = base + record_bytes_;  // one record per PMI
    PebsEnable en;
    bool mem = false;
    for (unsigned i = 0; i < n_; ++i) {
        const Counter& c = counters_[i];
        u64* reset = c.fixed ? ds.fixed_reset : ds.pebs_reset;  // format 4's slots (pebs_event_of)
        if (c.index < 8) reset[c.index] = c.reload;
        if (c.fixed) en.set_fixed(c.index);
        else en.set_pmc(c.index);
        if (c.latency && caps_.version < 5) en.set_ll(c.index);
        mem |= c.data_la || c.latency;
    }
    PMULAB_TRY(hw.wrmsr(IA32_DS_AREA, u64(reinterpret_cast<uintptr_t>(here_->ds))));
    if (caps_.adaptive) PMULAB_TRY(hw.wrmsr(MSR_PEBS_DATA_CFG, PebsDataCfg().set_mem_info(mem).raw()));
    return hw.wrmsr(msr::IA32_PEBS_ENABLE, en.raw());
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
    if (s->has_latency) s->source = pebs_mem_source(dse);  // the load-latency data source
    return true;
}

bool PebsSource::drain(Hw& hw, u64 status, PmiSink& sink, u64* ack) {
    (void)hw;
    if (!here_) return false;
    DsArea& ds = *here_->ds;
    const u8* base = reinterpret_cast<const u8*>(uintptr_t(ds.pebs_base));
    const u64 used = ds.pebs_index > ds.pebs_base ? ds.pebs_index - ds.pebs_base : 0;
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
