#include "app/cpu_select.h"

#include "base/fmt.h"

namespace pmulab {

Result<CpuSelection> parse_cpu_selection(const char* value) {
    CpuSelection s;
    if (!value) return Error::make(Errc::invalid_argument, "--cpu needs a value: N, all or bsp");
    if (str_eq(value, "all")) {
        s.all = true;
        s.bsp = false;
        return s;
    }
    if (str_eq(value, "bsp")) return s;
    u64 v;
    if (!parse_u64(StrView(value), &v) || v > 0xffffffffull)
        return Error::make(Errc::invalid_argument, "--cpu: '%s' is not a CPU index, 'all' or 'bsp'", value);
    s.bsp = false;
    s.index = u32(v);
    return s;
}

bool take_cpu_option(Args& args, CpuSelection* sel, Status* err) {
    const char* v = nullptr;
    if (!args.option("--cpu", &v, err)) return false;
    if (!err->ok()) return true;
    Result<CpuSelection> s = parse_cpu_selection(v);
    if (s.ok()) *sel = s.value();
    else *err = s.error();
    return true;
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
    if (sel.index >= n)
        return Error::make(Errc::invalid_argument, "--cpu %u: there are only %u logical processors (0..%u)", sel.index,
                           n, n - 1);
    cpus->push(sel.index);
    return ok_status();
}

}  // namespace pmulab
