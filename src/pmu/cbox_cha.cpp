// The server uncore's CHA lookup counters (pmu/cbox.h, x86/uncore_regs.h): the generation,
// the CHA count (Linux's sources: CAPID6/7 in PCI configuration space on Skylake-SP and
// Ice Lake-SP, SPR_MSR_UNC_CBO_CONFIG on Sapphire Rapids) and the programming.
#include "pmu/cbox.h"

namespace pmulab {

namespace {

constexpr const char kEvsets[] = "; find slices by eviction sets instead (tools/pmulab-cache evset)";

u32 popcount64(u64 v) { return u32(__builtin_popcountll(v)); }

const char* gen_name(ChaGen g) {
    return g == ChaGen::skx ? "Skylake-SP" : g == ChaGen::icx ? "Ice Lake-SP" : "Sapphire Rapids";
}

// Skylake-SP and Ice Lake-SP: the PCU's device 30 function 3 (device ID 2083H / 345BH) on
// the first bus that has it (socket 0's; Linux's pci_get_device takes the first too), and
// the CHA bits of its CAPID6 (and CAPID7).
Result<u32> count_by_capid(Hw& hw, ChaGen g) {
    const u16 want = g == ChaGen::skx ? pci::kSkxPcuCr3 : pci::kIcxPcuCr3;
    for (u32 bus = 0; bus < 256; ++bus) {
        Result<u32> id = hw.pci_read32(bus, pci::kPcuDevice, pci::kPcuFunction, 0);
        if (!id.ok())
            return Error::make(Errc::unsupported,
                               "the %s CHA count is in PCI configuration space (CAPID6), which "
                               "cannot be read here: %s%s",
                               gen_name(g), id.error().msg, kEvsets);
        if (id.value() != (u32(want) << 16 | pci::kIntelVendor)) continue;
        Result<u32> lo = hw.pci_read32(bus, pci::kPcuDevice, pci::kPcuFunction, pci::kCapid6);
        if (!lo.ok()) return lo.error();
        if (g == ChaGen::skx) return popcount64(lo.value() & pci::kSkxChaMask);
        Result<u32> hi = hw.pci_read32(bus, pci::kPcuDevice, pci::kPcuFunction, pci::kCapid7);
        if (!hi.ok()) return hi.error();
        return popcount64(u64(hi.value()) << 32 | lo.value());
    }
    return Error::make(Errc::unsupported,
                       "no PCU device %04xH at device 30 function 3 of PCI segment 0 (CF8H/CFCH): the %s CHA count "
                       "(CAPID6) is not reachable%s",
                       want, gen_name(g), kEvsets);
}

}  // namespace

Status CboxPmu::detect_cha(Hw& hw, const CpuIdentity& id, ChaGen g) {
    u32 n = 0;
    if (g == ChaGen::spr) {
        Result<u64> v = hw.rdmsr(msr::SPR_MSR_UNC_CBO_CONFIG);
        if (!v.ok())
            return Error::make(Errc::unsupported, "SPR_MSR_UNC_CBO_CONFIG (0x2ffe) cannot be read: %s%s", v.error().msg,
                               kEvsets);
        if (v.value() == 0)
            return Error::make(Errc::unsupported,
                               "SPR_MSR_UNC_CBO_CONFIG (0x2ffe) reads 0 (model 0x%x: Emerald Rapids XCC does so); the "
                               "CHA count is then only in the uncore PMON discovery table, which pmulab does not "
                               "read%s",
                               id.model, kEvsets);
        n = u32(v.value() > msr::kMaxChas ? msr::kMaxChas + 1 : v.value());
    } else {
        Result<u32> c = count_by_capid(hw, g);
        if (!c.ok()) return c.error();
        n = c.value();
    }
    u32 max = g == ChaGen::skx ? 28 : g == ChaGen::icx ? 40 : msr::kMaxChas;
    if (n < 2 || n > max)
        return Error::make(Errc::unsupported, "the %s CHA count reads %u, not 2..%u%s", gen_name(g), n, max, kEvsets);
    boxes_ = n;
    gen_ = g;
    global_ = 0;
    return ok_status();
}

// Per CHA: the counter control 0 off, FILTER0's states all (Skylake-SP), the counter 0,
// the box unfrozen, then the control on. The box controls are saved as controls (put
// back after the selects and counters), the selects disabled first.
Status CboxPmu::begin_cha(Hw& hw) {
    hw_ = &hw;
    ledger_.bind(&hw);
    ledger_.begin();
    const u64 en = regs::ChaCtl().set_en(true).raw();
    for (u32 b = 0; b < boxes_; ++b) {
        PMULAB_TRY(ledger_.save(MsrReg::control(cha_box_ctl(gen_, b))));
        if (gen_ == ChaGen::skx) PMULAB_TRY(ledger_.save(MsrReg::control(cha_filter0(gen_, b))));
        PMULAB_TRY(ledger_.save(MsrReg::event_select(cha_ctl0(gen_, b)).disabled_by(en)));
        PMULAB_TRY(ledger_.save(MsrReg::counter(cha_ctr0(gen_, b)).gated_by(cha_ctl0(gen_, b))));
    }
    ledger_.arm();
    regs::ChaCtl sel = regs::ChaCtl().set_event(regs::kChaLlcLookup);
    if (gen_ == ChaGen::skx) sel.set_umask(regs::kSkxLookupAny);
    else sel.set_umask(regs::kIcxAllStates).set_umask_ext(regs::kIcxAllRequests);
    const u64 states = regs::SkxChaFilter0().set_state(regs::kSkxAllStates).raw();
    for (u32 b = 0; b < boxes_; ++b) {
        PMULAB_TRY(ledger_.write(cha_ctl0(gen_, b), sel.raw()));
        if (gen_ == ChaGen::skx) PMULAB_TRY(ledger_.write(cha_filter0(gen_, b), states));
        PMULAB_TRY(ledger_.write(cha_ctr0(gen_, b), 0));
        regs::ChaBoxCtl box(ledger_.saved_value(cha_box_ctl(gen_, b)));
        PMULAB_TRY(
            ledger_.write(cha_box_ctl(gen_, b), box.set_frz(false).set_rst_ctrl(false).set_rst_ctrs(false).raw()));
        PMULAB_TRY(ledger_.write(cha_ctl0(gen_, b), regs::ChaCtl(sel).set_en(true).raw()));
    }
    return ok_status();
}

}  // namespace pmulab
