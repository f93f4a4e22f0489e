// NetBurst ESCR/CCCR tables, events and placement (see netburst_regs.h).
#include "x86/netburst_regs.h"

namespace pmulab::netburst {

namespace {

constexpr u8 esc(u32 msr) {
    for (unsigned i = 0; i < kEscrCount; ++i)
        if (kEscrs[i].msr == msr) return u8(i);
    return 0xFF;
}
constexpr u8 kFsb0 = esc(0x3A2), kFsb1 = esc(0x3A3);
constexpr u8 kCru0 = esc(0x3B8), kCru1 = esc(0x3B9);
constexpr u8 kCru2 = esc(0x3CC), kCru3 = esc(0x3CD);
static_assert(kFsb0 == 2 && kCru0 == 24 && kCru2 == 41);

}  // namespace

// SDM Vol. 3B, NetBurst event tables: ESCR restrictions, event select, event mask bits.
const EventDef kEvents[kEventCount] = {
    // Non-retirement: the processor is not stopped (RUNNING, bit 0). FSB_ESCR0/1.
    {"global_power_events", 0x13, {kFsb0, kFsb1}, {{"RUNNING", 0}}, 1, 0x1, "cycles the processor is not stopped"},
    // At-retirement: instructions retired. CRU_ESCR0/1. Bits: non-bogus untagged/tagged,
    // bogus untagged/tagged.
    {"instr_retired",
     0x02,
     {kCru0, kCru1},
     {{"NBOGUSNTAG", 0}, {"NBOGUSTAG", 1}, {"BOGUSNTAG", 2}, {"BOGUSTAG", 3}},
     4,
     0x3,
     "instructions retired (non-bogus)"},
    // uops retired. CRU_ESCR0/1.
    {"uops_retired", 0x01, {kCru0, kCru1}, {{"NBOGUS", 0}, {"BOGUS", 1}}, 2, 0x1, "uops retired (non-bogus)"},
    // Retired branches by prediction and direction. CRU_ESCR2/3.
    {"branch_retired",
     0x06,
     {kCru2, kCru3},
     {{"MMNP", 0}, {"MMNM", 1}, {"MMTP", 2}, {"MMTM", 3}},
     4,
     0xF,
     "branches retired (not-taken/taken, predicted/mispredicted)"},
    // Retired mispredicted branches. CRU_ESCR0/1.
    {"mispred_branch_retired", 0x03, {kCru0, kCru1}, {{"NBOGUS", 0}}, 1, 0x1, "mispredicted branches retired"},
};

const AliasDef kAliases[5] = {
    {"instructions", kInstrRetired, 0x3}, {"cycles", kGlobalPowerEvents, 0x1},
    {"branches", kBranchRetired, 0xF},    {"branch-misses", kMispredBranchRetired, 0x1},
    {"uops", kUopsRetired, 0x1},
};

const EventDef* find_event(StrView name) {
    for (const EventDef& d : kEvents)
        if (name.eq_nocase(StrView(d.name))) return &d;
    return nullptr;
}

int escr_index(u32 msr) {
    for (unsigned i = 0; i < kEscrCount; ++i)
        if (kEscrs[i].msr == msr) return int(i);
    return -1;
}

int escr_for(unsigned counter, unsigned select) {
    if (counter >= kCounters) return -1;
    for (unsigned i = 0; i < kEscrCount; ++i)
        if (kEscrs[i].select == select && ((kEscrs[i].counters >> counter) & 1)) return int(i);
    return -1;
}

bool escr_exists(const EscrDef& e, u32 model) { return !e.early_only || model <= 2; }

void put_event_name(StrBuf& out, unsigned event, u16 mask) {
    if (event >= kEventCount) {
        out.put("?");
        return;
    }
    const EventDef& d = kEvents[event];
    out.put(d.name);
    if (mask == d.default_mask) return;
    char sep = '.';
    for (unsigned k = 0; k < d.mask_count; ++k)
        if ((mask >> d.masks[k].bit) & 1) {
            out.put(sep);
            out.put(d.masks[k].name);
            sep = '+';
        }
}

namespace {

struct Search {
    const u8* events;
    const u32* allowed;
    unsigned n;
    u32 model;
    Placement* out;
    u32 used_counters = 0;
    u64 used_escrs = 0;

    bool go(unsigned k) {
        if (k == n) return true;
        const EventDef& d = kEvents[events[k]];
        for (u8 e : d.escr) {
            if (e >= kEscrCount || ((used_escrs >> e) & 1) || !escr_exists(kEscrs[e], model)) continue;
            u32 c = kEscrs[e].counters & allowed[k] & ~used_counters;
            for (unsigned i = 0; i < kCounters; ++i) {
                if (!((c >> i) & 1)) continue;
                used_counters |= u32(1) << i;
                used_escrs |= u64(1) << e;
                out[k] = Placement{u8(i), e};
                if (go(k + 1)) return true;
                used_counters &= ~(u32(1) << i);
                used_escrs &= ~(u64(1) << e);
            }
        }
        return false;
    }
};

}  // namespace

bool place_events(const u8* events, const u32* allowed, unsigned n, u32 model, Placement* out) {
    if (n > kCounters) return false;
    for (unsigned k = 0; k < n; ++k)
        if (events[k] >= kEventCount) return false;
    Search s{events, allowed, n, model, out};
    return s.go(0);
}

}  // namespace pmulab::netburst
