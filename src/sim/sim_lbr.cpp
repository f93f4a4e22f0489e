// The simulated LBR stack (sim_lbr.h): which parts have which LBR, the MSRs, recording.
#include "sim/sim_lbr.h"

#include "sim/sim_internal.h"

namespace sim {

namespace {

// Legacy LBR by family 06H display model (SDM Vol. 3B, the per-microarchitecture LBR
// sections; Vol. 4 tables of MSR_LASTBRANCH_x): depth and where FROM/TO/INFO live.
struct LegacyModel {
    u8 model;
    u8 depth;
    bool nhm_bases;  // 680H/6C0H (else Core's 40H/60H)
    bool info;       // MSR_LBR_INFO_x at DC0H
    bool select;     // MSR_LBR_SELECT
};
constexpr LegacyModel kLegacy[] = {
    // Core 2 (Merom, Penryn, Dunnington): 4 entries at 40H/60H, no LBR_SELECT.
    {0x0F, 4, false, false, false},
    {0x16, 4, false, false, false},
    {0x17, 4, false, false, false},
    {0x1D, 4, false, false, false},
    // Atom Bonnell/Saltwell: 8 at 40H/60H; Silvermont/Airmont: with LBR_SELECT.
    {0x1C, 8, false, false, false},
    {0x26, 8, false, false, false},
    {0x27, 8, false, false, false},
    {0x35, 8, false, false, false},
    {0x36, 8, false, false, false},
    {0x37, 8, false, false, true},
    {0x4A, 8, false, false, true},
    {0x4C, 8, false, false, true},
    {0x4D, 8, false, false, true},
    {0x5A, 8, false, false, true},
    {0x5D, 8, false, false, true},
    // Nehalem, Westmere, Sandy Bridge, Ivy Bridge, Haswell, Broadwell: 16 at 680H/6C0H.
    {0x1A, 16, true, false, true},
    {0x1E, 16, true, false, true},
    {0x1F, 16, true, false, true},
    {0x2E, 16, true, false, true},
    {0x25, 16, true, false, true},
    {0x2C, 16, true, false, true},
    {0x2F, 16, true, false, true},
    {0x2A, 16, true, false, true},
    {0x2D, 16, true, false, true},
    {0x3A, 16, true, false, true},
    {0x3E, 16, true, false, true},
    {0x3C, 16, true, false, true},
    {0x3F, 16, true, false, true},
    {0x45, 16, true, false, true},
    {0x46, 16, true, false, true},
    {0x3D, 16, true, false, true},
    {0x47, 16, true, false, true},
    {0x4F, 16, true, false, true},
    {0x56, 16, true, false, true},
    // Knights Landing/Mill: 8 at 680H/6C0H.
    {0x57, 8, true, false, true},
    {0x85, 8, true, false, true},
    // Skylake .. Comet Lake, Cannon Lake, Ice Lake, Tiger Lake, Rocket Lake, and the
    // Goldmont/Goldmont Plus/Tremont Atoms: 32 at 680H/6C0H with MSR_LBR_INFO_x.
    {0x4E, 32, true, true, true},
    {0x5E, 32, true, true, true},
    {0x55, 32, true, true, true},
    {0x8E, 32, true, true, true},
    {0x9E, 32, true, true, true},
    {0xA5, 32, true, true, true},
    {0xA6, 32, true, true, true},
    {0x66, 32, true, true, true},
    {0x7D, 32, true, true, true},
    {0x7E, 32, true, true, true},
    {0x6A, 32, true, true, true},
    {0x6C, 32, true, true, true},
    {0x8C, 32, true, true, true},
    {0x8D, 32, true, true, true},
    {0xA7, 32, true, true, true},
    {0x5C, 32, true, true, true},
    {0x5F, 32, true, true, true},
    {0x7A, 32, true, true, true},
    {0x86, 32, true, true, true},
    {0x96, 32, true, true, true},
    {0x9C, 32, true, true, true},
};

bool is_vendor(const CpuidSnapshot& s, u32 ebx) { return s.get(0).ebx == ebx; }
constexpr u32 kGenu = 0x756E6547, kAuth = 0x68747541;

// LBR_SELECT (legacy and AMD) suppress bits and LBR_CTL enable bits by branch kind.
constexpr u32 select_bit(BranchKind k) {
    switch (k) {
        case BranchKind::jcc: return 2;
        case BranchKind::call: return 3;
        case BranchKind::call_ind: return 4;
        case BranchKind::ret: return 5;
        case BranchKind::jmp_ind: return 6;
        case BranchKind::jmp: return 7;
        case BranchKind::far: return 8;
    }
    return 8;
}
constexpr u32 ctl_bit(BranchKind k) {
    switch (k) {
        case BranchKind::jcc: return 16;
        case BranchKind::jmp: return 17;
        case BranchKind::jmp_ind: return 18;
        case BranchKind::call: return 19;
        case BranchKind::call_ind: return 20;
        case BranchKind::ret: return 21;
        case BranchKind::far: return 22;
    }
    return 22;
}
// IA32_LBR_x_INFO.BR_TYPE (59:56): JCC 0, indirect JMP 1, relative JMP 2, indirect CALL 3,
// relative CALL 4, RET 5, other 8.
constexpr u64 br_type(BranchKind k) {
    switch (k) {
        case BranchKind::jcc: return 0;
        case BranchKind::jmp_ind: return 1;
        case BranchKind::jmp: return 2;
        case BranchKind::call_ind: return 3;
        case BranchKind::call: return 4;
        case BranchKind::ret: return 5;
        case BranchKind::far: return 8;
    }
    return 8;
}

constexpr u64 kArchCtlWritable = bit(0) | bit(1) | bit(2) | bit(3) | (u64(0x7F) << 16);
constexpr u64 kLbrV2En = bit(6);  // DBG_EXTN_CFG.LBRV2EN

}  // namespace

LbrLayout lbr_layout(const CpuidSnapshot& s, u64 perf_caps) {
    LbrLayout l;
    u32 max = s.get(0).eax, sig = s.get(1).eax;
    u32 family = (sig >> 8) & 0xF, model = ((sig >> 4) & 0xF) | (((sig >> 16) & 0xF) << 4);
    if (is_vendor(s, kGenu) && max >= 0x1C && ((s.get(7).edx >> 19) & 1) && (s.get(0x1C).eax & 0xFF)) {
        CpuidRegs c = s.get(0x1C);
        l.kind = LbrLayout::Kind::arch;
        l.arch_depths = u8(c.eax & 0xFF);
        for (u32 n = 0; n < 8; ++n)
            if ((c.eax >> n) & 1) l.depth = 8 * (n + 1);
        l.arch_cpl = c.ebx & 1, l.arch_filter = (c.ebx >> 1) & 1, l.arch_call_stack = (c.ebx >> 2) & 1;
        l.arch_mispred = c.ecx & 1, l.arch_timed = (c.ecx >> 1) & 1, l.arch_br_type = (c.ecx >> 2) & 1;
        return l;
    }
    if (is_vendor(s, kGenu) && family == 6) {
        for (const LegacyModel& m : kLegacy) {
            if (m.model != model) continue;
            l.kind = LbrLayout::Kind::legacy;
            l.depth = m.depth;
            l.from = m.nhm_bases ? reg::LBR_NHM_FROM : reg::LBR_CORE_FROM;
            l.to = m.nhm_bases ? reg::LBR_NHM_TO : reg::LBR_CORE_TO;
            l.info = m.info ? reg::LBR_INFO_0 : 0;
            l.select = m.select;
            l.format = ((s.get(1).ecx >> 15) & 1) ? u8(perf_caps & 0x3F) : 0;
            return l;
        }
        return l;
    }
    u32 emax = s.get(0x80000000).eax;
    if (is_vendor(s, kAuth) && emax >= 0x80000022 && ((s.get(0x80000022).eax >> 1) & 1)) {
        l.kind = LbrLayout::Kind::amd;
        l.depth = (s.get(0x80000022).ebx >> 4) & 0x3F;
        if (!l.depth) l.kind = LbrLayout::Kind::none;
    }
    return l;
}

LbrStack::LbrStack(const LbrLayout& l) : layout_(l), e_(l.depth), arch_depth_(l.depth) {}

int LbrStack::index(u32 msr, u32 base, u32 n, u32 stride) {
    if (msr < base || msr >= base + n * stride) return -1;
    return int((msr - base) / stride);
}

bool LbrStack::claims(u32 msr) const {
    const LbrLayout& l = layout_;
    u32 n = l.depth;
    switch (l.kind) {
        case LbrLayout::Kind::none: return false;
        case LbrLayout::Kind::legacy:
            return msr == reg::LASTBRANCH_TOS || (l.select && msr == reg::LBR_SELECT) || index(msr, l.from, n) >= 0 ||
                   (l.format != 0 && index(msr, l.to, n) >= 0) || (l.info && index(msr, l.info, n) >= 0);
        case LbrLayout::Kind::arch:
            return msr == reg::ARCH_LBR_CTL || msr == reg::ARCH_LBR_DEPTH || index(msr, reg::ARCH_LBR_FROM_0, n) >= 0 ||
                   index(msr, reg::ARCH_LBR_TO_0, n) >= 0 || index(msr, reg::ARCH_LBR_INFO_0, n) >= 0;
        case LbrLayout::Kind::amd:
            return msr == reg::AMD_LBR_SELECT || msr == reg::AMD_DBG_EXTN_CFG ||
                   index(msr, reg::AMD_LBR_FROM_0, 2 * n) >= 0;
    }
    return false;
}

u8 LbrStack::rdmsr(u32 msr, u64* v) const {
    const LbrLayout& l = layout_;
    u32 n = l.depth;
    int i;
    *v = 0;
    if (msr == reg::LASTBRANCH_TOS && l.kind == LbrLayout::Kind::legacy) *v = tos_;
    else if (msr == reg::LBR_SELECT || msr == reg::AMD_LBR_SELECT) *v = select_;
    else if (msr == reg::ARCH_LBR_CTL || msr == reg::AMD_DBG_EXTN_CFG) *v = ctl_;
    else if (msr == reg::ARCH_LBR_DEPTH) *v = arch_depth_;
    else if (l.kind == LbrLayout::Kind::amd && (i = index(msr, reg::AMD_LBR_FROM_0, 2 * n)) >= 0)
        *v = (i & 1) ? e_[i / 2].to : e_[i / 2].from;
    else if (l.kind == LbrLayout::Kind::arch && (i = index(msr, reg::ARCH_LBR_FROM_0, n)) >= 0)
        *v = u32(i) < arch_depth_ ? e_[i].from : 0;
    else if (l.kind == LbrLayout::Kind::arch && (i = index(msr, reg::ARCH_LBR_TO_0, n)) >= 0)
        *v = u32(i) < arch_depth_ ? e_[i].to : 0;
    else if (l.kind == LbrLayout::Kind::arch && (i = index(msr, reg::ARCH_LBR_INFO_0, n)) >= 0)
        *v = u32(i) < arch_depth_ ? e_[i].info : 0;
    else if ((i = index(msr, l.from, n)) >= 0) *v = e_[i].from;
    else if ((i = index(msr, l.to, n)) >= 0) *v = e_[i].to;
    else if (l.info && (i = index(msr, l.info, n)) >= 0) *v = e_[i].info;
    else return pmulab::kVectorGP;
    return 0;
}

u8 LbrStack::wrmsr(u32 msr, u64 v) {
    const LbrLayout& l = layout_;
    u32 n = l.depth;
    int i;
    if (msr == reg::LASTBRANCH_TOS && l.kind == LbrLayout::Kind::legacy) {
        if (v >= n) return pmulab::kVectorGP;
        tos_ = u32(v);
    } else if (msr == reg::LBR_SELECT || msr == reg::AMD_LBR_SELECT) {
        if (v >> (l.kind == LbrLayout::Kind::amd ? 9 : 10)) return pmulab::kVectorGP;  // 8:0 (AMD), 9:0 (Intel)
        select_ = v;
    } else if (msr == reg::ARCH_LBR_CTL) {
        if (v & ~kArchCtlWritable) return pmulab::kVectorGP;
        ctl_ = v;
    } else if (msr == reg::AMD_DBG_EXTN_CFG) {
        ctl_ = v;
    } else if (msr == reg::ARCH_LBR_DEPTH) {
        // Only the enumerated depths; a write clears every entry (SDM "IA32_LBR_DEPTH").
        if (v == 0 || v % 8 || v > 64 || !((l.arch_depths >> (v / 8 - 1)) & 1)) return pmulab::kVectorGP;
        arch_depth_ = u32(v);
        for (Entry& e : e_) e = Entry();
    } else if (l.kind == LbrLayout::Kind::amd && (i = index(msr, reg::AMD_LBR_FROM_0, 2 * n)) >= 0) {
        ((i & 1) ? e_[i / 2].to : e_[i / 2].from) = v;
    } else if (l.kind == LbrLayout::Kind::arch && (i = index(msr, reg::ARCH_LBR_FROM_0, n)) >= 0) {
        e_[i].from = v;
    } else if (l.kind == LbrLayout::Kind::arch && (i = index(msr, reg::ARCH_LBR_TO_0, n)) >= 0) {
        e_[i].to = v;
    } else if (l.kind == LbrLayout::Kind::arch && (i = index(msr, reg::ARCH_LBR_INFO_0, n)) >= 0) {
        e_[i].info = v;
    } else if ((i = index(msr, l.from, n)) >= 0) {
        e_[i].from = v;
    } else if ((i = index(msr, l.to, n)) >= 0) {
        e_[i].to = v;
    } else if (l.info && (i = index(msr, l.info, n)) >= 0) {
        e_[i].info = v;
    } else {
        return pmulab::kVectorGP;
    }
    return 0;
}

bool LbrStack::recording(u64 debugctl, bool frozen) const {
    if (broken_ || frozen) return false;
    switch (layout_.kind) {
        case LbrLayout::Kind::none: return false;
        case LbrLayout::Kind::legacy: return debugctl & 1;
        case LbrLayout::Kind::arch: return ctl_ & 1;
        case LbrLayout::Kind::amd: return (ctl_ & kLbrV2En) != 0;
    }
    return false;
}

bool LbrStack::wanted(BranchKind kind, u8 cpl) const {
    switch (layout_.kind) {
        case LbrLayout::Kind::arch:
            // LBR_CTL: OS (bit 1) records at CPL 0, USR (bit 2) above; the type bits enable.
            if (!((ctl_ >> (cpl == 0 ? 1 : 2)) & 1)) return false;
            return (ctl_ >> ctl_bit(kind)) & 1;
        case LbrLayout::Kind::legacy:
            if (!layout_.select) return true;
            [[fallthrough]];
        case LbrLayout::Kind::amd:
            // LBR_SELECT: CPL_EQ_0 (bit 0) and CPL_NEQ_0 (bit 1) and the type bits suppress.
            if ((select_ >> (cpl == 0 ? 0 : 1)) & 1) return false;
            return !((select_ >> select_bit(kind)) & 1);
        case LbrLayout::Kind::none: break;
    }
    return false;
}

// One entry as the format stores it (SDM "LBR Stack" format table; Linux lbr.c agrees).
LbrStack::Entry LbrStack::encode(u64 from, u64 to, u64 cycles) const {
    const LbrLayout& l = layout_;
    const u64 cyc = cycles > 0xFFFF ? 0xFFFF : cycles;  // saturating 16-bit CYC_CNT
    const u64 addr61 = width_mask(61), addr48 = width_mask(48);
    Entry e;
    switch (l.kind) {
        case LbrLayout::Kind::arch:
            e.from = from, e.to = to;
            e.info = l.arch_timed ? cyc | bit(60) : 0;  // CYC_CNT 15:0, CYC_CNT_VALID 60
            return e;
        case LbrLayout::Kind::amd:
            // FROM: 63 mispredict; TO: 63 valid, 62 speculative (APM LbrExtV2).
            e.from = from & width_mask(63), e.to = (to & width_mask(62)) | bit(63);
            return e;
        case LbrLayout::Kind::legacy: break;
        case LbrLayout::Kind::none: return e;
    }
    switch (l.format) {
        case 0: e.from = (from & 0xFFFFFFFF) | (to << 32); break;  // 32-bit: from 31:0, to 63:32
        case 3: e.from = from & width_mask(63), e.to = to; break;  // FROM 63 MISPRED
        case 4: e.from = from & addr61, e.to = to; break;          // FROM 63/62/61 flags
        case 5:
        case 7: e.from = from & addr61, e.to = to, e.info = cyc; break;  // flags in LBR_INFO
        case 6: e.from = from & width_mask(63), e.to = (to & addr48) | (cyc << 48); break;
        default: e.from = from, e.to = to; break;  // 1, 2: 64-bit LIP/EIP
    }
    return e;
}

void LbrStack::push(const Entry& e) {
    if (layout_.kind == LbrLayout::Kind::legacy) {
        tos_ = (tos_ + 1) % layout_.depth;
        e_[tos_] = e;
        return;
    }
    // Architectural LBR and LbrExtV2: entry 0 is the youngest.
    u32 n = layout_.kind == LbrLayout::Kind::arch ? arch_depth_ : layout_.depth;
    for (u32 i = n - 1; i > 0; --i) e_[i] = e_[i - 1];
    e_[0] = e;
}

void LbrStack::record(u64 from, u64 to, BranchKind kind, u8 cpl, u64 now) {
    if (layout_.kind == LbrLayout::Kind::none || !wanted(kind, cpl)) return;
    Entry e = encode(from, to, now - last_);
    if (layout_.kind == LbrLayout::Kind::arch && layout_.arch_br_type) e.info |= br_type(kind) << 56;
    last_ = now;
    push(e);
}

}  // namespace sim
