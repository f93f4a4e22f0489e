// PEBS output to Intel PT (pebs_pt.h): the checks, the packet writer and decoder, and the
// trace pmulab owns while it samples.
#include "pmu/pebs_pt.h"

#include "base/fmt.h"
#include "pmu/pebs.h"

namespace pmulab {

using namespace regs::pt;

Status pebs_pt_check(Hw& hw, const PebsCaps& caps, const PmuInfo& info, u32 cpu) {
    const u32 max = hw.cpuid(0, 0).eax;
    if (max < 7 || !(hw.cpuid(7, 0).ebx & kLeaf7EbxPt))
        return Error::make(Errc::unsupported,
                           "CPU %u (%s): --pebs-output pt: no Intel PT (CPUID.(07H,0):EBX[25] is 0); use "
                           "--pebs-output ds (the default)",
                           cpu, caps.model);
    if (max < kLeaf)
        return Error::make(Errc::unsupported, "CPU %u (%s): --pebs-output pt: CPUID leaf 14H (Intel PT) is absent", cpu,
                           caps.model);
    if (!PtLeafEcx(hw.cpuid(kLeaf, 0).ecx).single_range())
        return Error::make(Errc::unsupported,
                           "CPU %u (%s): --pebs-output pt: Intel PT without single-range output "
                           "(CPUID.(14H,0):ECX[2] is 0); pmulab writes the trace to one range, not a ToPA table",
                           cpu, caps.model);
    if (!info.caps.perf_caps_read || !(info.caps.perf_caps & kPerfCapsPebsOutputPt))
        return Error::make(Errc::unsupported,
                           "CPU %u (%s): --pebs-output pt: PEBS cannot write to Intel PT here "
                           "(IA32_PERF_CAPABILITIES[16] PEBS_OUTPUT_PT_AVAIL is 0); use --pebs-output ds",
                           cpu, caps.model);
    if (!caps.adaptive)
        return Error::make(Errc::unsupported,
                           "CPU %u (%s): --pebs-output pt: the PT blocks are adaptive PEBS's groups, and PEBS "
                           "format %u is not adaptive",
                           cpu, caps.model, caps.format);
    return ok_status();
}

// ---------------------------------------------------------------------------
// Packets

void PtWriter::put(u8 b) {
    if (n_ < cap_) buf_[n_++] = b;
    else overflow_ = true;
}

void PtWriter::psb() {
    for (unsigned i = 0; i < kPsbBytes / 2; ++i) ext(kExtPsb);
}

void PtWriter::cbr(u8 ratio) {
    ext(kExtCbr);
    put(ratio), put(0);
}

void PtWriter::bbp(u8 type, bool size4) {
    ext(kExtBbp);
    put(u8(BbpByte().set_type(type).set_size4(size4).raw()));
}

void PtWriter::bip(u8 id, u64 value, bool size4) {
    put(u8(BipHeader().set_tag(kBipTag).set_id(id).raw()));
    for (unsigned i = 0; i < (size4 ? 4u : 8u); ++i) put(u8(value >> (8 * i)));
}

namespace {

// The reset value the DS area holds for a counter (0 where the format has no slot).
u64 reset_value(regs::pebs::DsArea* ds, unsigned format, bool fixed, unsigned i) {
    const u64* slot = regs::pebs::reset_slot(ds, format, fixed, i);
    return slot ? *slot : 0;
}

u64 read_le(const u8* p, unsigned n) {
    u64 v = 0;
    for (unsigned i = n; i-- > 0;) v = (v << 8) | p[i];
    return v;
}

// FUP/TIP/TIP.PGE/TIP.PGD: IPBytes [7:5] -> the packet's length (0: reserved).
usize ip_packet_length(u8 b) {
    static constexpr u8 kLen[8] = {1, 3, 5, 7, 7, 0, 9, 0};
    return kLen[b >> 5];
}

// The length of an ext (02H) packet other than the block packets; 0 when unknown.
usize ext_length(const u8* p, usize n) {
    if (n < 2) return 0;
    const u8 b = p[1];
    if ((b & 0x1F) == 0x12) {  // PTWRITE: PayloadBytes [6:5] 0 (4 bytes) or 1 (8 bytes)
        const unsigned size = (b >> 5) & 3;
        return size == 0 ? 6 : size == 1 ? 10 : 0;
    }
    switch (b) {
        case kExtPsb: return kPsbBytes;
        case kExtPsbEnd:
        case 0xF3:
        case 0x83:
        case 0x62:
        case 0xE2: return 2;  // OVF, TraceStop, EXSTOP
        case kExtCbr:
        case 0x22: return 4;  // CBR, PWRE
        case 0x73:
        case 0xC8:
        case 0xA2: return 7;  // TMA, VMCS, PWRX
        case 0x43:
        case 0xA3: return 8;   // PIP, long TNT
        case 0xC2: return 10;  // MWAIT
        case 0xC3: return 11;  // MNT
        default: return 0;
    }
}

// The length of a packet that is not a block packet; 0 when unknown.
usize packet_length(const u8* p, usize n) {
    const u8 b = p[0];
    if (b == kExt) return ext_length(p, n);
    if (!(b & 1)) return 1;  // PAD, short TNT
    if (b & 2) {             // CYC: more bytes while the previous one's continuation bit is set
        usize len = 1;
        for (bool more = (b >> 2) & 1; more; ++len) {
            if (len >= n || len > 9) return 0;
            more = p[len] & 1;
        }
        return len;
    }
    switch (b & 0x1F) {
        case 0x0D:
        case 0x11:
        case 0x01:
        case 0x1D: return ip_packet_length(b);  // TIP, PGE, PGD, FUP
        default: break;
    }
    if (b == 0x19) return 8;               // TSC
    if (b == 0x59 || b == 0x99) return 2;  // MTC, MODE
    return 0;
}

// One record's blocks as they arrive.
struct Blocks {
    u64 basic[3] = {}, mem[4] = {}, gprs[kGprItems] = {};
    bool has_basic = false, has_mem = false, has_gprs = false;
    int type = -1;  // the open block's type (-1: none)
    bool size4 = false;
    void item(u8 id, u64 v) {
        if (type == kBlockBasic && id < 3) basic[id] = v, has_basic = true;
        if (type == kBlockMemory && id < 4) mem[id] = v, has_mem = true;
        if (type == kBlockGprs && id < kGprItems) gprs[id] = v, has_gprs = true;
    }
};

void put_le(u8* p, u64 v) {
    for (unsigned i = 0; i < 8; ++i) p[i] = u8(v >> (8 * i));
}

// The record in the adaptive DS layout (regs::pebs); false when it does not fit.
bool emit(const Blocks& b, u8* out, usize cap, usize* used) {
    using namespace regs::pebs;
    const u64 size = kBasicBytes + (b.has_mem ? kMemBytes : 0) + (b.has_gprs ? kGprBytes : 0);
    if (*used + size > cap) return false;
    u8* r = out + *used;
    const u64 groups = PebsDataCfg().set_mem_info(b.has_mem).set_gprs(b.has_gprs).raw();
    put_le(r + kBasicFormatSize, BasicFormat().set_groups(groups).set_size(size).raw());
    put_le(r + kBasicIp, b.basic[kBasicItemIp]);
    put_le(r + kBasicApplicable, b.basic[kBasicItemApplicable]);
    put_le(r + kBasicTsc, b.basic[kBasicItemTsc]);
    u64 at = kBasicBytes;
    if (b.has_mem)
        for (unsigned i = 0; i < 4; ++i, at += 8) put_le(r + at, b.mem[i]);
    if (b.has_gprs)
        for (unsigned i = 0; i < kGprItems; ++i, at += 8) put_le(r + at, b.gprs[i]);
    *used += size;
    return true;
}

Status bad(usize at, const char* what) {
    return Error::make(Errc::invalid_argument, "Intel PT output at byte %llu: %s", (unsigned long long)at, what);
}

}  // namespace

Status pt_pebs_decode(const u8* pt, usize n, u8* out, usize cap, usize* used, PtDecodeStats* st) {
    *used = 0;
    Blocks b;
    for (usize at = 0; at < n;) {
        const u8* p = pt + at;
        if (b.type >= 0 && BipHeader(p[0]).tag() == kBipTag) {  // a Block Item (only inside a block)
            const usize len = 1 + (b.size4 ? 4 : 8);
            if (n - at < len) return bad(at, "a Block Item Packet is cut short");
            b.item(u8(BipHeader(p[0]).id()), read_le(p + 1, unsigned(len - 1)));
            at += len;
            continue;
        }
        if (p[0] == kExt && n - at >= 3 && p[1] == kExtBbp) {
            b.type = int(BbpByte(p[2]).type());
            b.size4 = BbpByte(p[2]).size4();
            at += 3;
            continue;
        }
        if (p[0] == kExt && n - at >= 2 && (p[1] == kExtBep || p[1] == kExtBepIp)) {
            if (b.has_basic) {
                if (!emit(b, out, cap, used)) return bad(at, "more PEBS records than the decode buffer holds");
                ++st->records;
            }
            b = Blocks();
            at += 2;  // BEP.IP's FUP follows as a packet of its own
            continue;
        }
        const usize len = packet_length(p, n - at);
        if (!len || len > n - at) return bad(at, "an unknown or cut packet");
        if (p[0] == kExt && p[1] == kExtPsb) {
            ++st->psbs;
            b = Blocks();  // a PSB ends any block
        } else {
            ++st->skipped;
        }
        at += len;
    }
    return ok_status();
}

// ---------------------------------------------------------------------------
// The trace

Status PebsPt::add_cpu(u32 cpu, void* page) {
    if (ncpus_ >= kMaxCpus)
        return Error::make(Errc::unsupported, "PEBS via PT: more than %u measuring CPUs", unsigned(kMaxCpus));
    cpus_[ncpus_++] = Cpu{cpu, static_cast<u8*>(page)};
    return ok_status();
}

Status PebsPt::on_setup(Hw& hw, regs::pebs::DsArea* ds, unsigned format, u64* en) {
    here_ = nullptr;
    nsaved_ = 0;
    stats_ = PtDecodeStats();
    errors_ = 0;
    const u32 me = hw.current_cpu();
    for (usize i = 0; i < ncpus_; ++i)
        if (cpus_[i].cpu == me) here_ = &cpus_[i];
    if (!here_) return Error::make(Errc::internal, "PEBS via PT: no trace page was prepared for CPU %u", me);
    Result<u64> ctl = hw.rdmsr(IA32_RTIT_CTL);
    if (!ctl.ok()) return ctl.error().with_context("PEBS via PT: reading IA32_RTIT_CTL");
    if (RtitCtl(ctl.value()).trace_en())
        return Error::make(Errc::unsupported,
                           "CPU %u: Intel PT is already tracing (IA32_RTIT_CTL = 0x%llx, TraceEn set by firmware or "
                           "a debugger); pmulab leaves it alone: use --pebs-output ds",
                           me, (unsigned long long)ctl.value());
    const regs::pebs::PebsEnable want(*en);
    u32 msrs[kSaved] = {IA32_RTIT_CTL, IA32_RTIT_STATUS, IA32_RTIT_OUTPUT_BASE, IA32_RTIT_OUTPUT_MASK_PTRS};
    u64 reload[kSaved] = {};
    unsigned n = 4;
    for (unsigned i = 0; i < 8; ++i)
        if ((want.pmc_bits() >> i) & 1) msrs[n] = MSR_RELOAD_PMC0 + i, reload[n++] = reset_value(ds, format, false, i);
    for (unsigned i = 0; i < 4; ++i)  // bits 32+i: fixed counter i (v5; PEBS via PT needs adaptive PEBS)
        if ((want.ll_bits() >> i) & 1)
            msrs[n] = MSR_RELOAD_FIXED_CTR0 + i, reload[n++] = reset_value(ds, format, true, i);
    saved_msr_[0] = IA32_RTIT_CTL, saved_[0] = ctl.value(), nsaved_ = 1;
    for (unsigned k = 1; k < n; ++k) {
        Result<u64> v = hw.rdmsr(msrs[k]);
        if (!v.ok()) return v.error().with_context("PEBS via PT: saving the trace MSRs");
        saved_msr_[nsaved_] = msrs[k];
        saved_[nsaved_++] = v.value();
    }
    for (unsigned k = 4; k < n; ++k) PMULAB_TRY(hw.wrmsr(msrs[k], reload[k]));
    ds->pebs_max = ds->pebs_threshold = ds->pebs_index = ds->pebs_base;  // the DS buffer: no room
    PMULAB_TRY(hw.wrmsr(IA32_RTIT_STATUS, 0));
    PMULAB_TRY(hw.wrmsr(IA32_RTIT_OUTPUT_BASE, u64(reinterpret_cast<uintptr_t>(here_->out))));
    PMULAB_TRY(hw.wrmsr(IA32_RTIT_OUTPUT_MASK_PTRS, kOutputBytes - 1));
    ctl_ = RtitCtl().set_trace_en().set_os().set_user().raw();  // single-range output, no branches
    PMULAB_TRY(hw.wrmsr(IA32_RTIT_CTL, ctl_));
    *en = PebsEnablePt(*en).set_output(kPebsOutputPt).set_pmi_after_each_record().raw();
    return ok_status();
}

u64 PebsPt::collect(Hw& hw, u8* out, usize cap) {
    if (!here_) return 0;
    usize used = 0;
    const bool stopped = hw.wrmsr(IA32_RTIT_CTL, RtitCtl(ctl_).set_trace_en(false).raw()).ok();
    Result<u64> mask = hw.rdmsr(IA32_RTIT_OUTPUT_MASK_PTRS);
    Result<u64> status = hw.rdmsr(IA32_RTIT_STATUS);
    if (!stopped || !mask.ok() || !status.ok() || RtitStatus(status.value()).error()) {
        ++errors_;
    } else {
        const u64 end = RtitOutputMask(mask.value()).output_offset();
        if (end > kOutputBytes || !pt_pebs_decode(here_->out, usize(end), out, cap, &used, &stats_).ok()) ++errors_;
    }
    (void)hw.wrmsr(IA32_RTIT_STATUS, 0);
    (void)hw.wrmsr(IA32_RTIT_OUTPUT_MASK_PTRS, kOutputBytes - 1);  // the offset back to 0
    (void)hw.wrmsr(IA32_RTIT_CTL, ctl_);
    return used;
}

Status PebsPt::on_teardown(Hw& hw) {
    if (!nsaved_) return ok_status();
    Status s = hw.wrmsr(IA32_RTIT_CTL, RtitCtl(ctl_).set_trace_en(false).raw());  // the others #GP while tracing
    for (unsigned k = nsaved_; k-- > 0;) {  // reload MSRs, MASK_PTRS, BASE, STATUS, then RTIT_CTL
        Status w = hw.wrmsr(saved_msr_[k], saved_[k]);
        if (s.ok() && !w.ok()) s = w;
    }
    nsaved_ = 0;
    here_ = nullptr;
    return s;
}

}  // namespace pmulab
