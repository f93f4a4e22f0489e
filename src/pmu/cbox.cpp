#include "pmu/cbox.h"

namespace pmulab {

namespace {

// Client parts of Sandy Bridge .. Coffee Lake (family 6 display models), whose C-Boxes
// count UNC_CBO_CACHE_LOOKUP (SDM Vol. 3B uncore sections; uncore_snb.c's model table).
constexpr u32 kSnbToBdwClient[] = {0x2A, 0x3A, 0x3C, 0x45, 0x46, 0x3D, 0x47};
constexpr u32 kSklClient[] = {0x4E, 0x5E, 0x8E, 0x9E, 0xA5, 0xA6};
constexpr const char kEvsets[] = "; find slices by eviction sets instead (tools/pmulab-cache evset)";

template <usize N> bool in(const u32 (&list)[N], u32 m) {
    for (u32 x : list)
        if (x == m) return true;
    return false;
}

u32 evtsel(u32 box) { return msr::MSR_UNC_CBO_0_PERFEVTSEL0 + msr::MSR_UNC_CBO_STRIDE * box; }
u32 cbo_ctr(u32 box) { return msr::MSR_UNC_CBO_0_PERFCTR0 + msr::MSR_UNC_CBO_STRIDE * box; }

}  // namespace

CboxSupport cbox_support(const CpuIdentity& id) {
    CboxSupport s;
    if (id.hypervisor) {
        s.why_not = "a hypervisor's guest: the uncore's C-Box MSRs are not virtualized";
    } else if (id.vendor != Vendor::intel) {
        s.why_not = "the C-Box lookup counters are Intel's (AMD counts L3 lookups in its L3 PMU, not modelled)";
    } else if (id.family == 6 && in(kSnbToBdwClient, id.model)) {
        s.global_msr = msr::MSR_UNC_PERF_GLOBAL_CTRL_SNB;
    } else if (id.family == 6 && in(kSklClient, id.model)) {
        s.global_msr = msr::MSR_UNC_PERF_GLOBAL_CTRL_SKL;
    } else {
        s.why_not = "pmulab knows the C-Box lookup counters of Intel's client parts of Sandy Bridge .. Coffee Lake "
                    "and the CHAs of Skylake-SP .. Emerald Rapids only (newer clients count elsewhere)";
    }
    return s;
}

u32 CboxPmu::ctr(u32 box) const { return gen_ == ChaGen::none ? cbo_ctr(box) : cha_ctr0(gen_, box); }

Status CboxPmu::detect(Hw& hw, const CpuIdentity& id) {
    CboxSupport s = cbox_support(id);
    gen_ = ChaGen::none;
    if (!s.global_msr && !id.hypervisor && id.vendor == Vendor::intel && cha_generation(id) != ChaGen::none)
        return detect_cha(hw, id, cha_generation(id));
    if (!s.global_msr && !id.hypervisor && id.vendor == Vendor::intel && id.family == 6 &&
        (id.model == 0xAD || id.model == 0xAE))
        s.why_not = "Granite Rapids' CHA registers are found only through the uncore PMON discovery table (PCI "
                    "DVSEC 23H), which pmulab does not read";
    if (!s.global_msr)
        return Error::make(Errc::unsupported, "no L3 slice lookup on this CPU (%s family 0x%x model 0x%x): %s%s",
                           id.vendor_string, id.family, id.model, s.why_not, kEvsets);
    Result<u64> cfg = hw.rdmsr(msr::MSR_UNC_CBO_CONFIG);
    if (!cfg.ok())
        return Error::make(Errc::unsupported, "MSR_UNC_CBO_CONFIG (0x396) cannot be read: %s%s", cfg.error().msg,
                           kEvsets);
    u32 units = u32(regs::UncCboConfig(cfg.value()).units());
    if (units < 2 || units - 1 > msr::kMaxCboxes)
        return Error::make(Errc::unsupported, "MSR_UNC_CBO_CONFIG (0x396) reports %u C-Box units, not 2..%u%s", units,
                           msr::kMaxCboxes + 1, kEvsets);
    boxes_ = units - 1;
    global_ = s.global_msr;
    return ok_status();
}

Status CboxPmu::begin(Hw& hw) {
    if (gen_ != ChaGen::none) return begin_cha(hw);
    hw_ = &hw;
    ledger_.bind(&hw);
    ledger_.begin();
    const u64 en = regs::UncCboEvtSel().set_en(true).raw();
    PMULAB_TRY(ledger_.save(MsrReg::global(global_).disabled_by(regs::UncPerfGlobalCtrl().set_en(true).raw())));
    for (u32 b = 0; b < boxes_; ++b) {
        PMULAB_TRY(ledger_.save(MsrReg::event_select(evtsel(b)).disabled_by(en)));
        PMULAB_TRY(ledger_.save(MsrReg::counter(cbo_ctr(b)).gated_by(evtsel(b))));
    }
    ledger_.arm();
    // Counters are written while disabled (SDM Vol. 3B §20.2.1.1): the global enable
    // and the selects' EN go off first, on last.
    regs::UncPerfGlobalCtrl g(ledger_.saved_value(global_));
    PMULAB_TRY(ledger_.write(global_, g.set_en(false).raw()));
    regs::UncCboEvtSel sel = regs::UncCboEvtSel().set_event(regs::kCboLlcLookup).set_umask(regs::kCboLookupAny);
    for (u32 b = 0; b < boxes_; ++b) {
        PMULAB_TRY(ledger_.write(evtsel(b), sel.raw()));
        PMULAB_TRY(ledger_.write(cbo_ctr(b), 0));
        PMULAB_TRY(ledger_.write(evtsel(b), regs::UncCboEvtSel(sel).set_en(true).raw()));
    }
    return ledger_.write(global_, g.set_en(true).raw());
}

Status CboxPmu::read(Hw& hw, u64* out) const {
    for (u32 b = 0; b < boxes_; ++b) {
        Result<u64> v = hw.rdmsr(ctr(b));
        if (!v.ok()) return v.error();
        out[b] = v.value() & low_mask(counter_bits());
    }
    return ok_status();
}

Status CboxPmu::end() { return ledger_.armed() ? ledger_.restore() : ok_status(); }

}  // namespace pmulab
