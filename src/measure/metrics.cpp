// Derived metrics: definitions, exact formula evaluation, validation (metrics.h).
#include "measure/metrics.h"

#include "base/fmt.h"

namespace pmulab {

const char kBuiltinMetrics[] =
    "# pmulab's built-in metrics (docs/metrics.md). One definition per line.\n"
    "name=IPC; groups=Basic; unit=instructions/cycle; range=0..; desc=instructions retired per core cycle; "
    "formula=INST_RETIRED.ANY / CPU_CLK_UNHALTED.THREAD\n"
    "name=CPI; groups=Basic; unit=cycles/instruction; range=0..; desc=core cycles per instruction retired; "
    "formula=CPU_CLK_UNHALTED.THREAD / INST_RETIRED.ANY\n"
    "name=branch_miss_rate; groups=Branches; range=0..1; desc=mispredicted share of retired branches; "
    "formula=BR_MISP_RETIRED.ALL_BRANCHES / BR_INST_RETIRED.ALL_BRANCHES\n"
    "name=uops_per_instruction; groups=Pipeline; unit=uops/instruction; range=0..; desc=needs an event file; "
    "formula=UOPS_RETIRED.RETIRE_SLOTS / INST_RETIRED.ANY\n"
    "name=llc_miss_ratio; groups=Cache; range=0..1; desc=last-level cache misses per reference; "
    "formula=LONGEST_LAT_CACHE.MISS / LONGEST_LAT_CACHE.REFERENCE\n"
    "name=frequency_ratio; groups=Clock; unit=core cycles/TSC tick; range=0..; "
    "desc=times the TSC frequency: the core clock; formula=CPU_CLK_UNHALTED.THREAD / CPU_CLK_UNHALTED.REF_TSC\n"
    "name=frequency; groups=Clock; unit=Hz; range=0..; desc=the core clock while unhalted; "
    "formula=CPU_CLK_UNHALTED.THREAD / CPU_CLK_UNHALTED.REF_TSC * TSC_FREQUENCY\n"
    "# The same with the generic names AMD has too (APERF/MPERF: actual / P0 clocks in C0; the\n"
    "# TSC of AMD parts runs at the P0 frequency)\n"
    "name=IPC; groups=Basic; unit=instructions/cycle; range=0..; desc=instructions retired per core cycle; "
    "formula=instructions / cycles\n"
    "name=CPI; groups=Basic; unit=cycles/instruction; range=0..; desc=core cycles per instruction retired; "
    "formula=cycles / instructions\n"
    "name=frequency_ratio; groups=Clock; unit=core cycles/P0 cycle; range=0..; desc=APERF / MPERF; "
    "formula=aperf / mperf\n"
    "name=frequency; groups=Clock; unit=Hz; range=0..; desc=the core clock in C0 (APERF/MPERF); "
    "formula=aperf / mperf * TSC_FREQUENCY\n"
    "# TopDown level 1 from IA32_PERF_METRICS (Ice Lake and later P cores)\n"
    "name=tma_retiring; groups=TopdownL1; level=1; range=0..1; method=perf_metrics; "
    "formula=PERF_METRICS.RETIRING / TOPDOWN.SLOTS\n"
    "name=tma_bad_speculation; groups=TopdownL1; level=1; range=0..1; method=perf_metrics; "
    "formula=PERF_METRICS.BAD_SPECULATION / TOPDOWN.SLOTS\n"
    "name=tma_frontend_bound; groups=TopdownL1; level=1; range=0..1; method=perf_metrics; "
    "formula=PERF_METRICS.FRONTEND_BOUND / TOPDOWN.SLOTS\n"
    "name=tma_backend_bound; groups=TopdownL1; level=1; range=0..1; method=perf_metrics; "
    "formula=PERF_METRICS.BACKEND_BOUND / TOPDOWN.SLOTS\n"
    "# TopDown level 2 from IA32_PERF_METRICS bytes 4-7 (Golden Cove and later)\n"
    "name=tma_heavy_operations; groups=TopdownL2; level=2; parent=tma_retiring; range=0..1; method=perf_metrics; "
    "formula=PERF_METRICS.HEAVY_OPERATIONS / TOPDOWN.SLOTS\n"
    "name=tma_light_operations; groups=TopdownL2; level=2; parent=tma_retiring; range=0..1; method=perf_metrics; "
    "formula=(PERF_METRICS.RETIRING - PERF_METRICS.HEAVY_OPERATIONS) / TOPDOWN.SLOTS\n"
    "name=tma_branch_mispredicts; groups=TopdownL2; level=2; parent=tma_bad_speculation; range=0..1; "
    "method=perf_metrics; formula=PERF_METRICS.BRANCH_MISPREDICTS / TOPDOWN.SLOTS\n"
    "name=tma_machine_clears; groups=TopdownL2; level=2; parent=tma_bad_speculation; range=0..1; "
    "method=perf_metrics; formula=(PERF_METRICS.BAD_SPECULATION - PERF_METRICS.BRANCH_MISPREDICTS) / TOPDOWN.SLOTS\n"
    "name=tma_fetch_latency; groups=TopdownL2; level=2; parent=tma_frontend_bound; range=0..1; method=perf_metrics; "
    "formula=PERF_METRICS.FETCH_LATENCY / TOPDOWN.SLOTS\n"
    "name=tma_fetch_bandwidth; groups=TopdownL2; level=2; parent=tma_frontend_bound; range=0..1; "
    "method=perf_metrics; formula=(PERF_METRICS.FRONTEND_BOUND - PERF_METRICS.FETCH_LATENCY) / TOPDOWN.SLOTS\n"
    "name=tma_memory_bound; groups=TopdownL2; level=2; parent=tma_backend_bound; range=0..1; method=perf_metrics; "
    "formula=PERF_METRICS.MEMORY_BOUND / TOPDOWN.SLOTS\n"
    "name=tma_core_bound; groups=TopdownL2; level=2; parent=tma_backend_bound; range=0..1; method=perf_metrics; "
    "formula=(PERF_METRICS.BACKEND_BOUND - PERF_METRICS.MEMORY_BOUND) / TOPDOWN.SLOTS\n"
    "# TopDown level 1 on Skylake-class cores: Intel's TMA formulas, 4 slots per cycle\n"
    "name=tma_frontend_bound; groups=TopdownL1; level=1; range=0..1; method=skylake_events; "
    "formula=[9C.01] / (4 * CPU_CLK_UNHALTED.THREAD)\n"
    "name=tma_bad_speculation; groups=TopdownL1; level=1; range=0..1; method=skylake_events; "
    "formula=([0E.01] - [C2.02] + 4 * [0D.01]) / (4 * CPU_CLK_UNHALTED.THREAD)\n"
    "name=tma_retiring; groups=TopdownL1; level=1; range=0..1; method=skylake_events; "
    "formula=[C2.02] / (4 * CPU_CLK_UNHALTED.THREAD)\n"
    "name=tma_backend_bound; groups=TopdownL1; level=1; range=0..1; method=skylake_events; "
    "formula=1 - ([9C.01] + [0E.01] + 4 * [0D.01]) / (4 * CPU_CLK_UNHALTED.THREAD)\n"
    "# TopDown level 1 from the architectural TopDown events (CPUID.0AH:EBX bits 7-11)\n"
    "name=tma_retiring; groups=TopdownL1; level=1; range=0..1; method=arch_events; "
    "formula=topdown_retiring / topdown_slots\n"
    "name=tma_bad_speculation; groups=TopdownL1; level=1; range=0..1; method=arch_events; "
    "formula=topdown_bad_speculation / topdown_slots\n"
    "name=tma_frontend_bound; groups=TopdownL1; level=1; range=0..1; method=arch_events; "
    "formula=topdown_frontend_bound / topdown_slots\n"
    "name=tma_backend_bound; groups=TopdownL1; level=1; range=0..1; method=arch_events; "
    "formula=topdown_backend_bound / topdown_slots\n"
    "# TopDown level 1 on E cores: Intel's E-core TMA formulas (perfmon metrics JSON:\n"
    "# slots = 5 (Gracemont, adln-metrics), 6 (Crestmont, mtl-metrics), 8 (Skymont) per cycle)\n"
    "name=tma_retiring; groups=TopdownL1; level=1; range=0..1; method=gracemont_events; "
    "formula=[C2.00] / (5 * CPU_CLK_UNHALTED.CORE)\n"
    "name=tma_bad_speculation; groups=TopdownL1; level=1; range=0..1; method=gracemont_events; "
    "formula=[73.00] / (5 * CPU_CLK_UNHALTED.CORE)\n"
    "name=tma_frontend_bound; groups=TopdownL1; level=1; range=0..1; method=gracemont_events; "
    "formula=[71.00] / (5 * CPU_CLK_UNHALTED.CORE)\n"
    "name=tma_backend_bound; groups=TopdownL1; level=1; range=0..1; method=gracemont_events; "
    "formula=[74.00] / (5 * CPU_CLK_UNHALTED.CORE)\n"
    "name=tma_retiring; groups=TopdownL1; level=1; range=0..1; method=crestmont_events; "
    "formula=[72.00] / (6 * CPU_CLK_UNHALTED.CORE)\n"
    "name=tma_bad_speculation; groups=TopdownL1; level=1; range=0..1; method=crestmont_events; "
    "formula=[73.00] / (6 * CPU_CLK_UNHALTED.CORE)\n"
    "name=tma_frontend_bound; groups=TopdownL1; level=1; range=0..1; method=crestmont_events; "
    "formula=[71.00] / (6 * CPU_CLK_UNHALTED.CORE)\n"
    "name=tma_backend_bound; groups=TopdownL1; level=1; range=0..1; method=crestmont_events; "
    "formula=[74.00] / (6 * CPU_CLK_UNHALTED.CORE)\n"
    "name=tma_retiring; groups=TopdownL1; level=1; range=0..1; method=skymont_events; "
    "formula=[C2.02] / (8 * CPU_CLK_UNHALTED.CORE)\n"
    "name=tma_bad_speculation; groups=TopdownL1; level=1; range=0..1; method=skymont_events; "
    "formula=[73.00] / (8 * CPU_CLK_UNHALTED.CORE)\n"
    "name=tma_frontend_bound; groups=TopdownL1; level=1; range=0..1; method=skymont_events; "
    "formula=[9C.01] / (8 * CPU_CLK_UNHALTED.CORE)\n"
    "name=tma_backend_bound; groups=TopdownL1; level=1; range=0..1; method=skymont_events; "
    "formula=[A4.02] / (8 * CPU_CLK_UNHALTED.CORE)\n"
    "# E cores with fixed counters 4-6 (leaf 23H): bad speculation, frontend bound, retiring\n"
    "name=tma_retiring; groups=TopdownL1; level=1; range=0..1; method=atom_fixed; "
    "formula=TOPDOWN_RETIRING.ALL / (8 * CPU_CLK_UNHALTED.CORE)\n"
    "name=tma_bad_speculation; groups=TopdownL1; level=1; range=0..1; method=atom_fixed; "
    "formula=TOPDOWN_BAD_SPECULATION.ALL / (8 * CPU_CLK_UNHALTED.CORE)\n"
    "name=tma_frontend_bound; groups=TopdownL1; level=1; range=0..1; method=atom_fixed; "
    "formula=TOPDOWN_FE_BOUND.ALL / (8 * CPU_CLK_UNHALTED.CORE)\n"
    "name=tma_backend_bound; groups=TopdownL1; level=1; range=0..1; method=atom_fixed; "
    "formula=[A4.02] / (8 * CPU_CLK_UNHALTED.CORE)\n"
    "# AMD Zen 4: pipeline utilisation, 6 dispatch slots per cycle (Linux amdzen4/pipeline.json)\n"
    "name=tma_retiring; groups=TopdownL1; level=1; range=0..1; method=zen4_pipeline; "
    "formula=ex_ret_ops / (6 * ls_not_halted_cyc)\n"
    "name=tma_bad_speculation; groups=TopdownL1; level=1; range=0..1; method=zen4_pipeline; "
    "formula=(de_src_op_disp.all - ex_ret_ops) / (6 * ls_not_halted_cyc)\n"
    "name=tma_frontend_bound; groups=TopdownL1; level=1; range=0..1; method=zen4_pipeline; "
    "formula=de_no_dispatch_per_slot.no_ops_from_frontend / (6 * ls_not_halted_cyc)\n"
    "name=tma_backend_bound; groups=TopdownL1; level=1; range=0..1; method=zen4_pipeline; "
    "formula=de_no_dispatch_per_slot.backend_stalls / (6 * ls_not_halted_cyc)\n"
    "name=tma_smt_contention; groups=TopdownL1; level=1; range=0..1; method=zen4_pipeline; "
    "desc=slots the other thread took; formula=de_no_dispatch_per_slot.smt_contention / (6 * ls_not_halted_cyc)\n"
    "name=tma_heavy_operations; groups=TopdownL2; level=2; parent=tma_retiring; range=0..1; method=zen4_pipeline; "
    "desc=retired microcode ops; formula=ex_ret_ucode_ops / (6 * ls_not_halted_cyc)\n"
    "name=tma_light_operations; groups=TopdownL2; level=2; parent=tma_retiring; range=0..1; method=zen4_pipeline; "
    "desc=retired fastpath ops; formula=(ex_ret_ops - ex_ret_ucode_ops) / (6 * ls_not_halted_cyc)\n"
    "name=tma_branch_mispredicts; groups=TopdownL2; level=2; parent=tma_bad_speculation; range=0..1; "
    "method=zen4_pipeline; "
    "formula=(de_src_op_disp.all - ex_ret_ops) / (6 * ls_not_halted_cyc) * ex_ret_brn_misp / (ex_ret_brn_misp + "
    "resyncs_or_nc_redirects)\n"
    "name=tma_machine_clears; groups=TopdownL2; level=2; parent=tma_bad_speculation; range=0..1; method=zen4_pipeline; "
    "desc=pipeline restarts; formula=(de_src_op_disp.all - ex_ret_ops) / (6 * ls_not_halted_cyc) * "
    "resyncs_or_nc_redirects / (ex_ret_brn_misp + resyncs_or_nc_redirects)\n"
    "name=tma_memory_bound; groups=TopdownL2; level=2; parent=tma_backend_bound; range=0..1; method=zen4_pipeline; "
    "formula=de_no_dispatch_per_slot.backend_stalls / (6 * ls_not_halted_cyc) * ex_no_retire.load_not_complete / "
    "ex_no_retire.not_complete\n"
    "name=tma_core_bound; groups=TopdownL2; level=2; parent=tma_backend_bound; range=0..1; method=zen4_pipeline; "
    "formula=de_no_dispatch_per_slot.backend_stalls / (6 * ls_not_halted_cyc) * (1 - ex_no_retire.load_not_complete / "
    "ex_no_retire.not_complete)\n"
    "# AMD Zen 5: pipeline utilisation, 8 dispatch slots per cycle (Linux amdzen5/pipeline.json)\n"
    "name=tma_retiring; groups=TopdownL1; level=1; range=0..1; method=zen5_pipeline; "
    "formula=ex_ret_ops / (8 * ls_not_halted_cyc)\n"
    "name=tma_bad_speculation; groups=TopdownL1; level=1; range=0..1; method=zen5_pipeline; "
    "formula=(de_src_op_disp.all - ex_ret_ops) / (8 * ls_not_halted_cyc)\n"
    "name=tma_frontend_bound; groups=TopdownL1; level=1; range=0..1; method=zen5_pipeline; "
    "formula=de_no_dispatch_per_slot.no_ops_from_frontend / (8 * ls_not_halted_cyc)\n"
    "name=tma_backend_bound; groups=TopdownL1; level=1; range=0..1; method=zen5_pipeline; "
    "formula=de_no_dispatch_per_slot.backend_stalls / (8 * ls_not_halted_cyc)\n"
    "name=tma_smt_contention; groups=TopdownL1; level=1; range=0..1; method=zen5_pipeline; "
    "desc=slots the other thread took; formula=de_no_dispatch_per_slot.smt_contention / (8 * ls_not_halted_cyc)\n"
    "name=tma_heavy_operations; groups=TopdownL2; level=2; parent=tma_retiring; range=0..1; method=zen5_pipeline; "
    "desc=retired microcode ops; formula=ex_ret_ucode_ops / (8 * ls_not_halted_cyc)\n"
    "name=tma_light_operations; groups=TopdownL2; level=2; parent=tma_retiring; range=0..1; method=zen5_pipeline; "
    "desc=retired fastpath ops; formula=(ex_ret_ops - ex_ret_ucode_ops) / (8 * ls_not_halted_cyc)\n"
    "name=tma_branch_mispredicts; groups=TopdownL2; level=2; parent=tma_bad_speculation; range=0..1; "
    "method=zen5_pipeline; "
    "formula=(de_src_op_disp.all - ex_ret_ops) / (8 * ls_not_halted_cyc) * ex_ret_brn_misp / (ex_ret_brn_misp + "
    "resyncs_or_nc_redirects)\n"
    "name=tma_machine_clears; groups=TopdownL2; level=2; parent=tma_bad_speculation; range=0..1; method=zen5_pipeline; "
    "desc=pipeline restarts; formula=(de_src_op_disp.all - ex_ret_ops) / (8 * ls_not_halted_cyc) * "
    "resyncs_or_nc_redirects / (ex_ret_brn_misp + resyncs_or_nc_redirects)\n"
    "name=tma_memory_bound; groups=TopdownL2; level=2; parent=tma_backend_bound; range=0..1; method=zen5_pipeline; "
    "formula=de_no_dispatch_per_slot.backend_stalls / (8 * ls_not_halted_cyc) * ex_no_retire.load_not_complete / "
    "ex_no_retire.not_complete\n"
    "name=tma_core_bound; groups=TopdownL2; level=2; parent=tma_backend_bound; range=0..1; method=zen5_pipeline; "
    "formula=de_no_dispatch_per_slot.backend_stalls / (8 * ls_not_halted_cyc) * (1 - ex_no_retire.load_not_complete / "
    "ex_no_retire.not_complete)\n";

namespace {

// ---- exact arithmetic on Frac (num/den, den > 0), reduced after every step ----

u64 gcd(u64 a, u64 b) {
    while (b) {
        u64 t = a % b;
        a = b;
        b = t;
    }
    return a ? a : 1;
}

u64 uabs(i64 v) { return v < 0 ? u64(0) - u64(v) : u64(v); }

Frac reduce(i64 num, u64 den) {
    u64 g = gcd(uabs(num), den);
    return Frac{num / i64(g), den / g};
}

Error overflow() { return Error::make(Errc::unsupported, "a step of the formula overflows 64 bits"); }

Result<Frac> f_mul(Frac a, Frac b) {
    // Cross-reduce first so that exact results stay in range.
    u64 g1 = gcd(uabs(a.num), b.den), g2 = gcd(uabs(b.num), a.den);
    i64 n = 0;
    u64 d = 0;
    if (__builtin_mul_overflow(a.num / i64(g1), b.num / i64(g2), &n)) return overflow();
    if (__builtin_mul_overflow(a.den / g2, b.den / g1, &d)) return overflow();
    return reduce(n, d);
}

Result<Frac> f_div(Frac a, Frac b) {
    if (b.num == 0) return Error::make(Errc::unsupported, "division by zero");
    Frac inv{b.num < 0 ? -i64(b.den) : i64(b.den), uabs(b.num)};
    if (b.den > u64(INT64_MAX)) return overflow();
    return f_mul(a, inv);
}

Result<Frac> f_add(Frac a, Frac b, bool sub) {
    u64 g = gcd(a.den, b.den);
    u64 da = a.den / g, db = b.den / g;
    i64 x = 0, y = 0, n = 0;
    u64 d = 0;
    if (da > u64(INT64_MAX) || db > u64(INT64_MAX)) return overflow();
    if (__builtin_mul_overflow(a.num, i64(db), &x) || __builtin_mul_overflow(b.num, i64(da), &y)) return overflow();
    if (sub ? __builtin_sub_overflow(x, y, &n) : __builtin_add_overflow(x, y, &n)) return overflow();
    if (__builtin_mul_overflow(a.den, db, &d)) return overflow();
    return reduce(n, d);
}

// ---- the formula language: recursive descent, evaluating as it parses ----

bool name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
           c == ':';
}

class Parser {
public:
    // in == null: syntax only, names collected into *names (when given).
    Parser(StrView s, const MetricInputs* in, Vec<StrView>* names) : s_(s), in_(in), names_(names) {}

    Result<Frac> run() {
        Result<Frac> v = expr(0);
        if (!v.ok()) return v;
        skip();
        if (pos_ < s_.len) return syntax("unexpected '%c'", s_[pos_]);
        return v;
    }

private:
    Error syntax(const char* fmt, char c = 0) {
        StrBuf b;
        b.printf(fmt, c);
        return Error::make(Errc::invalid_argument, "formula '%.*s': %s at column %u", int(s_.len), s_.ptr, b.c_str(),
                           unsigned(pos_ + 1));
    }
    void skip() {
        while (pos_ < s_.len && (s_[pos_] == ' ' || s_[pos_] == '\t')) ++pos_;
    }
    Result<Frac> expr(int depth) {
        if (depth > 32) return syntax("nested too deeply");
        Result<Frac> a = term(depth);
        if (!a.ok()) return a;
        Frac v = a.value();
        for (;;) {
            skip();
            if (pos_ >= s_.len || (s_[pos_] != '+' && s_[pos_] != '-')) return v;
            bool sub = s_[pos_++] == '-';
            Result<Frac> b = term(depth);
            if (!b.ok()) return b;
            if (in_) {
                Result<Frac> r = f_add(v, b.value(), sub);
                if (!r.ok()) return r;
                v = r.value();
            }
        }
    }
    Result<Frac> term(int depth) {
        Result<Frac> a = factor(depth);
        if (!a.ok()) return a;
        Frac v = a.value();
        for (;;) {
            skip();
            if (pos_ >= s_.len || (s_[pos_] != '*' && s_[pos_] != '/')) return v;
            bool div = s_[pos_++] == '/';
            Result<Frac> b = factor(depth);
            if (!b.ok()) return b;
            if (in_) {
                Result<Frac> r = div ? f_div(v, b.value()) : f_mul(v, b.value());
                if (!r.ok()) return r;
                v = r.value();
            }
        }
    }
    Result<Frac> factor(int depth) {
        skip();
        if (pos_ >= s_.len) return syntax("an operand is missing");
        char c = s_[pos_];
        if (c == '(') {
            ++pos_;
            Result<Frac> v = expr(depth + 1);
            if (!v.ok()) return v;
            skip();
            if (pos_ >= s_.len || s_[pos_] != ')') return syntax("')' is missing");
            ++pos_;
            return v;
        }
        if (c == '-') {
            ++pos_;
            Result<Frac> v = factor(depth + 1);
            if (!v.ok() || !in_) return v;
            return f_add(Frac{0, 1}, v.value(), true);
        }
        if (c >= '0' && c <= '9') return number();
        StrView name;
        if (c == '[') {
            usize close = s_.find(']', pos_);
            if (close >= s_.len) return syntax("']' is missing");
            name = s_.sub(pos_ + 1, close - pos_ - 1).trim();
            pos_ = close + 1;
        } else if (name_char(c)) {
            usize b = pos_;
            while (pos_ < s_.len && name_char(s_[pos_])) ++pos_;
            name = s_.sub(b, pos_ - b);
        } else {
            return syntax("unexpected '%c'", c);
        }
        if (name.empty()) return syntax("empty name");
        if (names_) {
            bool dup = false;
            for (StrView n : *names_) dup |= n.eq_nocase(name);
            if (!dup) names_->push(name);
        }
        if (!in_) return Frac{1, 1};
        Frac v;
        if (!in_->get(name, &v))
            return Error::make(Errc::not_found, "input '%.*s' was not measured", int(name.len), name.ptr);
        return v;
    }
    Result<Frac> number() {
        i64 n = 0;
        u64 d = 1;
        bool frac = false;
        while (pos_ < s_.len && ((s_[pos_] >= '0' && s_[pos_] <= '9') || (s_[pos_] == '.' && !frac))) {
            if (s_[pos_] == '.') {
                frac = true;
            } else {
                if (__builtin_mul_overflow(n, i64(10), &n) || __builtin_add_overflow(n, i64(s_[pos_] - '0'), &n))
                    return syntax("number too large");
                if (frac && __builtin_mul_overflow(d, u64(10), &d)) return syntax("too many decimals");
            }
            ++pos_;
        }
        if (pos_ < s_.len && name_char(s_[pos_])) return syntax("a name cannot start with a digit (use [..])");
        return reduce(n, d);
    }

    StrView s_;
    const MetricInputs* in_;
    Vec<StrView>* names_;
    usize pos_ = 0;
};

bool parse_bound(StrView s, Frac* out) {
    Parser p(s, nullptr, nullptr);
    struct None final : MetricInputs {
        bool get(StrView, Frac*) const override { return false; }
    } none;
    Parser q(s, &none, nullptr);
    (void)p;
    Result<Frac> r = q.run();
    if (!r.ok()) return false;
    *out = r.value();
    return true;
}

bool list_has(const char* list, StrView item) {
    StrView l(list);
    usize pos = 0;
    while (pos <= l.len) {
        usize c = l.find(',', pos);
        if (l.sub(pos, c - pos).trim().eq_nocase(item)) return true;
        if (c >= l.len) break;
        pos = c + 1;
    }
    return false;
}

Status field_copy(char* dst, usize cap, StrView v, const char* key) {
    if (v.len >= cap)
        return Error::make(Errc::invalid_argument, "%s is longer than %u characters", key, unsigned(cap - 1));
    format_to(dst, cap, "%.*s", int(v.len), v.ptr);
    return ok_status();
}

Status parse_def(StrView line, MetricDef* d) {
    usize pos = 0;
    bool any = false;
    while (pos < line.len) {
        usize semi = line.find(';', pos);
        StrView field = line.sub(pos, semi - pos).trim();
        pos = semi >= line.len ? line.len : semi + 1;
        if (field.empty()) continue;
        usize eq = field.find('=', 0);
        if (eq >= field.len)
            return Error::make(Errc::invalid_argument, "'%.*s' is not key=value", int(field.len), field.ptr);
        StrView k = field.sub(0, eq).trim(), v = field.sub(eq + 1, field.len - eq - 1).trim();
        any = true;
        if (k.eq(StrView("name"))) {
            if (v.empty()) return Error::make(Errc::invalid_argument, "empty name");
            for (usize i = 0; i < v.len; ++i)
                if (!name_char(v[i]) || v[i] == ':')
                    return Error::make(Errc::invalid_argument, "name '%.*s': letters, digits, '_' and '.' only",
                                       int(v.len), v.ptr);
            PMULAB_TRY(field_copy(d->name, sizeof d->name, v, "name"));
        } else if (k.eq(StrView("formula"))) {
            PMULAB_TRY(field_copy(d->formula, sizeof d->formula, v, "formula"));
            Parser p(StrView(d->formula), nullptr, nullptr);
            Result<Frac> r = p.run();
            if (!r.ok()) return r.error();
        } else if (k.eq(StrView("groups"))) {
            PMULAB_TRY(field_copy(d->groups, sizeof d->groups, v, "groups"));
        } else if (k.eq(StrView("unit"))) {
            PMULAB_TRY(field_copy(d->unit, sizeof d->unit, v, "unit"));
        } else if (k.eq(StrView("desc"))) {
            PMULAB_TRY(field_copy(d->desc, sizeof d->desc, v, "desc"));
        } else if (k.eq(StrView("parent"))) {
            PMULAB_TRY(field_copy(d->parent, sizeof d->parent, v, "parent"));
        } else if (k.eq(StrView("level"))) {
            if (!v.eq(StrView("1")) && !v.eq(StrView("2")))
                return Error::make(Errc::invalid_argument, "level must be 1 or 2, not '%.*s'", int(v.len), v.ptr);
            d->level = u8(v[0] - '0');
        } else if (k.eq(StrView("method"))) {
            if (!topdown_method_from_name(v, &d->method)) {
                StrBuf known;
                for (unsigned i = 1; i < kTopdownMethods; ++i)
                    known.printf("%s%s", i > 1 ? ", " : "", topdown_method_name(TopdownMethod(i)));
                return Error::make(Errc::invalid_argument, "method '%.*s' is not one of %s", int(v.len), v.ptr,
                                   known.c_str());
            }
        } else if (k.eq(StrView("range"))) {
            usize dots = v.find('.', 0);
            if (dots + 1 >= v.len || v[dots + 1] != '.')
                return Error::make(Errc::invalid_argument, "range '%.*s' is not LO..HI", int(v.len), v.ptr);
            StrView lo = v.sub(0, dots).trim(), hi = v.sub(dots + 2, v.len - dots - 2).trim();
            d->has_lo = !lo.empty();
            d->has_hi = !hi.empty();
            if ((d->has_lo && !parse_bound(lo, &d->lo)) || (d->has_hi && !parse_bound(hi, &d->hi)))
                return Error::make(Errc::invalid_argument, "range '%.*s': bounds are numbers", int(v.len), v.ptr);
        } else {
            return Error::make(Errc::invalid_argument,
                               "unknown key '%.*s' (name, formula, groups, unit, range, level, parent, method, desc)",
                               int(k.len), k.ptr);
        }
    }
    if (!any) return ok_status();
    if (!d->name[0]) return Error::make(Errc::invalid_argument, "a definition needs name=");
    if (!d->formula[0]) return Error::make(Errc::invalid_argument, "metric '%s' needs formula=", d->name);
    if (d->level == 2 && !d->parent[0])
        return Error::make(Errc::invalid_argument, "metric '%s': level 2 needs parent=", d->name);
    return ok_status();
}

}  // namespace

Status parse_metric_text(StrView text, const char* origin, MetricSet* out) {
    usize pos = 0;
    unsigned line_no = 0;
    while (pos < text.len) {
        usize nl = text.find('\n', pos);
        StrView line = text.sub(pos, nl - pos);
        pos = nl >= text.len ? text.len : nl + 1;
        ++line_no;
        usize hash = line.find('#', 0);
        line = line.sub(0, hash).trim();
        if (line.empty()) continue;
        MetricDef d;
        Status s = parse_def(line, &d);
        if (!s.ok()) return Error::make(Errc::invalid_argument, "%s:%u: %s", origin, line_no, s.error().msg);
        if (d.name[0]) out->defs.push(d);
    }
    return ok_status();
}

bool metric_or_group_known(const MetricSet& set, StrView name) {
    for (const MetricDef& d : set.defs)
        if (name.eq_nocase(StrView(d.name)) || list_has(d.groups, name)) return true;
    return false;
}

Status formula_inputs(StrView formula, Vec<StrView>* out) {
    Parser p(formula, nullptr, out);
    Result<Frac> r = p.run();
    return r.ok() ? ok_status() : Status(r.error());
}

Result<Frac> eval_formula(StrView formula, const MetricInputs& in) {
    Parser p(formula, &in, nullptr);
    return p.run();
}

Status select_metrics(const MetricSet& set, StrView list, Vec<StrView>* names) {
    usize pos = 0;
    while (pos <= list.len) {
        usize c = list.find(',', pos);
        StrView item = list.sub(pos, c - pos).trim();
        if (item.empty())
            return Error::make(Errc::invalid_argument, "--metrics: empty item in '%.*s'", int(list.len), list.ptr);
        if (!metric_or_group_known(set, item)) {
            StrBuf known;
            for (const MetricDef& d : set.defs) {
                bool seen = false;
                for (const MetricDef& e : set.defs) {
                    if (&e == &d) break;
                    seen |= StrView(e.name).eq(StrView(d.name));
                }
                if (!seen) known.printf("%s%s", known.size() ? ", " : "", d.name);
            }
            return Error::make(Errc::invalid_argument, "--metrics: unknown metric or group '%.*s'; metrics: %s",
                               int(min_of<usize>(item.len, 40)), item.ptr, known.c_str());
        }
        for (const MetricDef& d : set.defs) {
            if (!item.eq_nocase(StrView(d.name)) && !list_has(d.groups, item)) continue;
            bool dup = false;
            for (StrView n : *names) dup |= n.eq_nocase(StrView(d.name));
            if (!dup) names->push(StrView(d.name));
        }
        if (c >= list.len) break;
        pos = c + 1;
    }
    return ok_status();
}

void evaluate_metrics(const MetricSet& set, const Vec<StrView>& names, TopdownMethod method, const MetricInputs& in,
                      Vec<MetricValue>* out) {
    for (StrView name : names) {
        MetricValue& mv = out->emplace();
        const MetricDef* first = nullptr;
        // Of the variants that miss inputs, the one that misses fewest (the first on ties):
        // its formula and reason are reported (frequency on AMD: the APERF/MPERF variant,
        // "the TSC frequency is unknown", not Intel's names "not measured").
        const MetricDef* closest = nullptr;
        usize closest_missing = 0;
        Error last;
        bool have_last = false;
        for (const MetricDef& d : set.defs) {
            if (!name.eq_nocase(StrView(d.name))) continue;
            if (d.method != TopdownMethod::none && d.method != method) continue;
            if (!first) first = &d;
            Result<Frac> r = eval_formula(StrView(d.formula), in);
            if (r.ok()) {
                mv.def = &d;
                mv.ok = true;
                mv.value = r.value();
                break;
            }
            // A missing input: try the next variant; a division by zero or overflow is the answer.
            if (r.error().code != Errc::not_found) {
                mv.def = &d;
                last = r.error();
                have_last = true;
                break;
            }
            Vec<StrView> ins;
            (void)formula_inputs(StrView(d.formula), &ins);
            usize missing = 0;
            for (StrView n : ins) {
                Frac unused;
                missing += !in.get(n, &unused);
            }
            if (!closest || missing < closest_missing) {
                closest = &d;
                closest_missing = missing;
                last = r.error();
                have_last = true;
            }
        }
        if (mv.ok) continue;
        if (!mv.def) mv.def = closest ? closest : first;
        if (!first) {
            // No variant for this CPU's TopDown method: name the first definition anyway.
            for (const MetricDef& d : set.defs)
                if (name.eq_nocase(StrView(d.name))) {
                    mv.def = &d;
                    break;
                }
            mv.no_variant = true;
            format_to(mv.why, sizeof mv.why, "no definition for this CPU (TopDown method %s)",
                      topdown_method_name(method));
        } else {
            format_to(mv.why, sizeof mv.why, "%s", have_last ? last.msg : "not evaluated");
        }
    }
    validate_metrics(out, topdown_level1_parts(method));
}

void validate_metrics(Vec<MetricValue>* values, unsigned level1_parts) {
    // Range of each metric.
    for (MetricValue& v : *values) {
        if (!v.ok || !v.def) continue;
        const MetricDef& d = *v.def;
        StrBuf val;
        put_frac(val, v.value, 4);
        Result<Frac> lo_t = f_add(d.lo, kMetricTolerance, true), hi_t = f_add(d.hi, kMetricTolerance, false);
        if (d.has_lo && lo_t.ok() && frac_cmp(v.value, lo_t.value()) < 0) {
            StrBuf lo;
            put_frac(lo, d.lo, 4);
            format_to(v.violation, sizeof v.violation, "%s is below its range (minimum %s, tolerance 0.01)",
                      val.c_str(), lo.c_str());
        } else if (d.has_hi && hi_t.ok() && frac_cmp(v.value, hi_t.value()) > 0) {
            StrBuf hi;
            put_frac(hi, d.hi, 4);
            format_to(v.violation, sizeof v.violation, "%s is above its range (maximum %s, tolerance 0.01)",
                      val.c_str(), hi.c_str());
        }
    }
    // Level 1 parts sum to 1.
    Frac sum{0, 1};
    unsigned n1 = 0;
    bool sum_ok = true;
    for (const MetricValue& v : *values)
        if (v.ok && v.def && v.def->level == 1) {
            Result<Frac> s = f_add(sum, v.value, false);
            if (!s.ok()) sum_ok = false;
            else sum = s.value();
            ++n1;
        }
    if (n1 == level1_parts && sum_ok) {
        Result<Frac> dev = f_add(sum, Frac{1, 1}, true);
        if (dev.ok() && frac_cmp(frac_abs(dev.value()), kMetricTolerance) > 0) {
            StrBuf s;
            put_frac(s, sum, 4);
            for (MetricValue& v : *values)
                if (v.ok && v.def && v.def->level == 1 && !v.violation[0])
                    format_to(v.violation, sizeof v.violation, "the level-1 parts sum to %s, not 1 (tolerance 0.01)",
                              s.c_str());
        }
    }
    // Level 2 <= its parent.
    for (MetricValue& v : *values) {
        if (!v.ok || !v.def || v.def->level != 2 || v.violation[0]) continue;
        for (const MetricValue& p : *values) {
            if (!p.ok || !p.def || !StrView(p.def->name).eq_nocase(StrView(v.def->parent))) continue;
            Result<Frac> lim = f_add(p.value, kMetricTolerance, false);
            if (lim.ok() && frac_cmp(v.value, lim.value()) > 0) {
                StrBuf a, b;
                put_frac(a, v.value, 4);
                put_frac(b, p.value, 4);
                format_to(v.violation, sizeof v.violation, "%s exceeds its parent %s (%s)", a.c_str(), p.def->name,
                          b.c_str());
            }
        }
    }
}

}  // namespace pmulab
