// The simulated CPU, TopDown: slot budgets, the category events they issue, and
// IA32_PERF_METRICS (0x329). See sim_cpu.h "TopDown" for the rules and their sources.
#include "sim/sim_topdown.h"

#include "sim/sim_families.h"

namespace sim {

bool topdown_l2_model(u32 eax) {
    u32 family = (eax >> 8) & 0xf;
    if (family != 6) return false;
    u32 model = ((eax >> 4) & 0xf) | (((eax >> 16) & 0xf) << 4);
    // Sapphire/Emerald/Granite Rapids, Alder/Raptor/Meteor/Arrow Lake (Arrow Lake-U B5H),
    // Lunar/Panther/Wildcat Lake (D5H): Linux intel_pmu_init, intel_pmu_init_glc and later.
    static const u32 k[] = {0x8F, 0xCF, 0xAD, 0xAE, 0x97, 0x9A, 0xB7, 0xBA, 0xBF,
                            0xAA, 0xAC, 0xB5, 0xC5, 0xC6, 0xBD, 0xCC, 0xD5};
    return std::find(std::begin(k), std::end(k), model) != std::end(k);
}

u64 TopdownBudget::part(unsigned i) const {
    const u64 v[8] = {retiring, bad_spec, fe_bound, be_bound, heavy_ops, br_mispredict, fetch_lat, mem_bound};
    return i < 8 ? v[i] : 0;
}

static void check_budget(const TopdownBudget& b) {
    if (!b.slots_per_cycle) return;
    if (b.retiring + b.bad_spec + b.fe_bound + b.be_bound != b.slots_per_cycle)
        die("TopdownBudget: retiring + bad_spec + fe_bound + be_bound must equal slots_per_cycle (%llu)",
            (unsigned long long)b.slots_per_cycle);
    for (unsigned i = 0; i < 4; ++i)
        if (b.part(4 + i) > b.part(i)) die("TopdownBudget: level-2 part %u exceeds its level-1 parent", i);
}

void SimCpu::set_topdown(const TopdownBudget& b) {
    check_budget(b);
    td_base_ = b;
}

void SimCpu::set_topdown_body(const TopdownBudget& b) {
    check_budget(b);
    td_body_ = b;
    td_body_set_ = true;
}

bool IntelPmu::metrics_counting() const {
    return layout_.perf_metrics && fixed_enabled(3) && ((global_ctrl_ >> 48) & 1);
}

SimAtom sim_atom_core(const CpuidSnapshot& s) {
    CpuidRegs l1, l1a;
    if (!s.find(1, 0, &l1) || ((l1.eax >> 8) & 0xf) != 6) return SimAtom::none;
    const u32 model = ((l1.eax >> 4) & 0xf) | (((l1.eax >> 16) & 0xf) << 4);
    const bool has_1a = s.find(0x1A, 0, &l1a);
    const u32 core_type = has_1a ? l1a.eax >> 24 : 0, native = has_1a ? l1a.eax & 0xFFFFFF : 0;
    // Atom-only SoCs: Alder Lake-N, Sierra Forest, Grand Ridge, Clearwater Forest.
    const bool atom_only = model == 0xBE || model == 0xAF || model == 0xB6 || model == 0xDD;
    if (core_type != 0x20 && !atom_only) return SimAtom::none;
    switch (model) {
        case 0x97:
        case 0x9A:
        case 0xB7:
        case 0xBA:
        case 0xBF:
        case 0xBE: return SimAtom::gracemont;
        case 0xAA:
        case 0xAC:
        case 0xB5:  // Arrow Lake-U: Meteor Lake's E cores
        case 0xAF:
        case 0xB6: return SimAtom::crestmont;
        case 0xBD:
        case 0xCC:
        case 0xD5:  // Wildcat Lake: Panther Lake's (Darkmont) E cores
        case 0xDD: return SimAtom::skymont;
        case 0xC5:
        case 0xC6: return native == 2 ? SimAtom::crestmont : SimAtom::skymont;  // Arrow Lake LP E / E
        default: return SimAtom::none;
    }
}

const std::vector<Occurrence>& SimCpu::topdown_cycles(u64 cycles, const std::vector<Occurrence>& each,
                                                      std::vector<Occurrence>* buf) {
    const TopdownBudget& b = in_body_ && td_body_set_ ? td_body_ : td_base_;
    if (!b.slots_per_cycle && each_cycle_.empty()) return each;
    *buf = each;
    buf->insert(buf->end(), each_cycle_.begin(), each_cycle_.end());
    if (!b.slots_per_cycle) return *buf;
    if (!in_stall_) {
        model_->topdown_events(b, cycles, buf);
        return *buf;
    }
    // Stall cycles (a load waiting on the memory hierarchy): nothing issues or retires, every
    // slot is backend bound and, at level 2, memory bound.
    TopdownBudget s;
    s.slots_per_cycle = s.be_bound = s.mem_bound = b.slots_per_cycle;
    model_->topdown_events(s, cycles, buf);
    return *buf;
}

void AmdPmu::topdown_events(const TopdownBudget& b, u64 cycles, std::vector<Occurrence>* buf) {
    (void)cycles;
    // Zen 4/5 pipeline utilisation (PPR PMCx1A0, PMCx0AA, PMCx0C1): empty dispatch slots by
    // cause, ops dispatched (those that retire and those that do not) and ops retired.
    // This model has no SMT sibling: PMCx1A0 unit mask 60h (SMT contention) stays 0.
    buf->push_back({0x1A0, 0x01, b.fe_bound});               // no_ops_from_frontend
    buf->push_back({0x1A0, 0x1E, b.be_bound});               // backend_stalls
    buf->push_back({0x0AA, 0x07, b.retiring + b.bad_spec});  // de_src_op_disp.all
    buf->push_back({0x0C1, 0x00, b.retiring});               // ex_ret_ops
    // Level 2: microcode ops among the retiring (PMCx1C2), mispredicted branches and other
    // restarts making up bad speculation (PMCx0C3; the restarts: PMCx096 on Zen 4, PMCx09F
    // unit mask 01h bp_redirects.resync on Zen 5, where PMCx096 is not documented), and no-retire cycles: waiting
    // for any op (PMCx0D6 unit mask 02h) = the backend slots, for load data (A2h) = the
    // memory-bound ones (a model of counts per cycle, not of which cycles).
    buf->push_back({0x1C2, 0x00, b.heavy_ops});
    buf->push_back({0x0C3, 0x00, b.br_mispredict});
    if (family_1ah_) buf->push_back({0x09F, 0x01, b.bad_spec - b.br_mispredict});
    else buf->push_back({0x096, 0x00, b.bad_spec - b.br_mispredict});
    buf->push_back({0x0D6, 0x02, b.be_bound});
    buf->push_back({0x0D6, 0xA2, b.mem_bound});
}

void IntelPmu::topdown_events(const TopdownBudget& b, u64 cycles, std::vector<Occurrence>* buf) {
    // E cores: their own encodings besides the architectural ones below (Intel perfmon
    // JSON: Gracemont 71.00/74.00/C2.00, Crestmont 71.00/74.00/72.00; 73.00 on both).
    if (atom_ == SimAtom::gracemont || atom_ == SimAtom::crestmont) {
        buf->push_back({0x71, 0x00, b.fe_bound});
        buf->push_back({0x74, 0x00, b.be_bound});
        buf->push_back({u16(atom_ == SimAtom::gracemont ? 0xC2 : 0x72), 0x00, b.retiring});
    }
    buf->push_back({0xA4, 0x01, b.slots_per_cycle});        // TOPDOWN.SLOTS
    buf->push_back({0xA4, 0x02, b.be_bound});               // topdown backend bound (arch)
    buf->push_back({0x73, 0x00, b.bad_spec});               // TOPDOWN_BAD_SPECULATION
    buf->push_back({0x9C, 0x01, b.fe_bound});               // TOPDOWN_FE_BOUND / IDQ_UOPS_NOT_DELIVERED.CORE
    buf->push_back({0xC2, 0x02, b.retiring});               // TOPDOWN_RETIRING / UOPS_RETIRED.RETIRE_SLOTS
    buf->push_back({0x0E, 0x01, b.retiring + b.bad_spec});  // UOPS_ISSUED.ANY
    if (metrics_counting())
        for (unsigned i = 0; i < 8; ++i) td_[i] += b.part(i) * cycles;
}

u64 IntelPmu::perf_metrics_value() const {
    if (!layout_.perf_metrics) return 0;
    unsigned __int128 total = 0;
    for (unsigned i = 0; i < 4; ++i) total += td_[i];
    if (!total) return 0;
    // Level 1: floor(255 * c / total), the remaining units to the largest remainders
    // (lowest byte first on ties), so that the four bytes sum to exactly 0xFF.
    u64 byte[8] = {};
    unsigned __int128 rem[4];
    u64 sum = 0;
    for (unsigned i = 0; i < 4; ++i) {
        unsigned __int128 x = (unsigned __int128)td_[i] * 255;
        byte[i] = u64(x / total);
        rem[i] = x % total;
        sum += byte[i];
    }
    while (sum < 255) {
        unsigned best = 0;
        for (unsigned i = 1; i < 4; ++i)
            if (rem[i] > rem[best]) best = i;
        ++byte[best];
        rem[best] = 0;
        ++sum;
    }
    if (layout_.perf_metrics_l2)
        for (unsigned i = 4; i < 8; ++i) {
            u64 v = u64(((unsigned __int128)td_[i] * 255 + total / 2) / total);
            byte[i] = std::min(v, byte[i - 4]);
        }
    u64 v = 0;
    for (unsigned i = 0; i < 8; ++i) v |= byte[i] << (8 * i);
    return v;
}

u8 IntelPmu::write_perf_metrics(u64 v) {
    if (!layout_.perf_metrics_l2 && (v >> 32)) return kVectorGP;  // bytes 4-7 reserved
    for (unsigned i = 0; i < 8; ++i) td_[i] = (v >> (8 * i)) & 0xff;
    return 0;
}

}  // namespace sim

namespace sim {

u64 default_topdown_width(const SimCpu& c) {
    const PmuLayout& L = c.pmu();
    CpuidRegs l1;
    if (!c.snapshot().find(1, 0, &l1)) return 0;
    const u32 family = ((l1.eax >> 8) & 0xf) + (((l1.eax >> 8) & 0xf) == 0xf ? ((l1.eax >> 20) & 0xff) : 0);
    const u32 model = ((l1.eax >> 4) & 0xf) | (((l1.eax >> 16) & 0xf) << 4);
    if (L.kind == PmuLayout::Kind::amd) {
        // Linux bsp_init_amd: Zen 5 is family 1Ah models 00h-2Fh, 40h-4Fh, 60h-7Fh (50h-5Fh,
        // 80h-AFh, C0h-EFh are Zen 6, whose TopDown events this model does not know); Zen 4
        // is family 19h models 10h-1Fh, 60h-AFh.
        if (family == 0x1A && (model <= 0x2F || (model >= 0x40 && model <= 0x4F) || (model >= 0x60 && model <= 0x7F)))
            return 8;
        if (family == 0x19 && ((model >= 0x10 && model <= 0x1F) || (model >= 0x60 && model <= 0xAF))) return 6;
        return 0;
    }
    if (L.kind != PmuLayout::Kind::intel || L.version < 2 || c.netburst()) return 0;
    switch (sim_atom_core(c.snapshot())) {
        case SimAtom::gracemont: return 5;
        case SimAtom::crestmont: return 6;
        case SimAtom::skymont: return 8;
        default: break;
    }
    CpuidRegs l23;
    if (c.snapshot().find(0x23, 0, &l23) && (l23.ecx & 0xFF)) return l23.ecx & 0xFF;
    return 4;
}

TopdownBudget default_topdown_budget(u64 w) {
    TopdownBudget b;
    if (w < 4) return b;
    b.slots_per_cycle = w;
    b.retiring = w / 2;
    b.bad_spec = 1;
    b.fe_bound = 1;
    b.be_bound = w - w / 2 - 2;
    b.heavy_ops = 1;
    b.br_mispredict = 1;
    b.fetch_lat = 1;
    b.mem_bound = (b.be_bound + 1) / 2;
    return b;
}

void apply_default_topdown(SimMachine& m) {
    for (u32 i = 0; i < m.size(); ++i) {
        TopdownBudget b = default_topdown_budget(default_topdown_width(m.cpu(i)));
        // AMD: no mispredicted branches (PMCx0C3 is branch-misses too): bad speculation is
        // pipeline restarts (PMCx096 on Zen 4, PMCx09F unit mask 01h on Zen 5).
        if (m.cpu(i).pmu().kind == PmuLayout::Kind::amd) b.br_mispredict = 0;
        if (b.slots_per_cycle) m.cpu(i).set_topdown(b);
    }
}

}  // namespace sim
