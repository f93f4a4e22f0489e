#include "app/cpu_select.h"

#include "base/fmt.h"

namespace pmulab {

Result<CpuSelection> parse_cpu_selection(const char* value) {
    CpuSelection s;
    if (!value || !value[0])
        return Error::make(Errc::invalid_argument, "--cpu needs a value: N, a list or range (0,2 or 1-3), all, bsp, "
                                                   "core or atom");
    if (str_eq(value, "all")) {
        s.all = true;
        s.bsp = false;
        return s;
    }
    if (str_eq(value, "bsp")) return s;
    if (str_eq(value, "core") || str_eq(value, "atom")) {
        s.bsp = false;
        s.core_type = str_eq(value, "core") ? kCoreTypeCore : kCoreTypeAtom;
        return s;
    }
    StrView v(value);
    for (usize pos = 0; pos <= v.len;) {
        usize end = v.find(',', pos);
        StrView item = v.sub(pos, end - pos);
        usize dash = item.find('-');
        u64 lo, hi;
        bool ok = parse_u64(item.sub(0, dash), &lo) && lo <= 0xffffffffull;
        if (ok && dash < item.len) ok = parse_u64(item.sub(dash + 1), &hi) && hi <= 0xffffffffull && hi >= lo;
        else hi = lo;
        if (!ok)
            return Error::make(Errc::invalid_argument,
                               "--cpu: '%.*s' is not a CPU index, list or range (0,2 or 1-3), 'all', 'bsp', 'core' "
                               "or 'atom'",
                               int(item.len), item.ptr);
        if (s.nranges == CpuSelection::kMaxRanges)
            return Error::make(Errc::invalid_argument, "--cpu: at most %u items in a list", CpuSelection::kMaxRanges);
        s.ranges[s.nranges++] = CpuSelection::Range{u32(lo), u32(hi)};
        pos = end + 1;
    }
    s.bsp = false;
    s.index = s.ranges[0].lo;
    return s;
}

Status expand_cpu_selection(Hw& hw, const CpuSelection& sel, Vec<u32>* cpus) {
    u32 n = hw.cpu_count();
    cpus->clear();
    if (sel.all) {
        for (u32 i = 0; i < n; ++i) cpus->push(i);
        return ok_status();
    }
    if (sel.bsp) {
        for (u32 i = 0; i < n; ++i) {
            Result<CpuTopology> t = hw.topology(i);
            if (t.ok() && t.value().bsp) {
                cpus->push(i);
                return ok_status();
            }
        }
        cpus->push(hw.current_cpu());
        return ok_status();
    }
    if (sel.core_type) {
        // The core type of every CPU, read there (CPUID.1AH exists only on hybrid parts).
        for (u32 i = 0; i < n; ++i) {
            CpuidRegs r0, r1a;
            Status st = run_on(hw, i, [&] {
                r0 = hw.cpuid(0, 0);
                if (r0.eax >= 0x1A) r1a = hw.cpuid(0x1A, 0);
            });
            if (st.ok() && u8(r1a.eax >> 24) == sel.core_type) cpus->push(i);  // CPUID.1AH:EAX[31:24]
        }
        if (cpus->empty())
            return Error::make(Errc::unsupported,
                               "--cpu %s: no logical processor reports that core type "
                               "(CPUID.1AH:EAX[31:24]; only hybrid parts have core types)",
                               sel.core_type == kCoreTypeCore ? "core" : "atom");
        return ok_status();
    }
    for (unsigned k = 0; k < sel.nranges; ++k) {
        const CpuSelection::Range& r = sel.ranges[k];
        if (r.hi >= n) {
            if (r.lo == r.hi)
                return Error::make(Errc::invalid_argument, "--cpu %u: there are only %u logical processors (0..%u)",
                                   r.hi, n, n - 1);
            return Error::make(Errc::invalid_argument, "--cpu %u-%u: there are only %u logical processors (0..%u)",
                               r.lo, r.hi, n, n - 1);
        }
        for (u32 c = r.lo; c <= r.hi; ++c) {
            bool dup = false;
            for (u32 x : *cpus) dup = dup || x == c;
            if (dup) return Error::make(Errc::invalid_argument, "--cpu: CPU %u is listed twice", c);
            cpus->push(c);
        }
    }
    return ok_status();
}

}  // namespace pmulab
