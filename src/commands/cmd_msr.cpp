#include "commands/commands.h"
#include "base/json.h"
#include "x86/msr_addr.h"

namespace pmulab {

const char kMsrHelp[] = "usage: pmulab msr read ADDR [--cpu N|all|bsp]\n"
                        "       pmulab msr write ADDR VALUE [--cpu N|all|bsp] [--unsafe]\n"
                        "\n"
                        "Raw MSR access through the fault-safe layer: a #GP is reported as an error\n"
                        "naming the MSR, never a hang. ADDR and VALUE are hex (0x...) or decimal.\n"
                        "Writes outside the PMU MSR ranges need --unsafe.\n";

bool msr_is_pmu(u32 m) {
    using namespace msr;
    auto in = [m](u32 lo, u32 hi) { return m >= lo && m <= hi; };
    return in(IA32_PMC0, IA32_PMC0 + 7) || in(IA32_PERFEVTSEL0, IA32_PERFEVTSEL0 + 7) ||
           in(IA32_FIXED_CTR0, IA32_FIXED_CTR0 + 15) || m == MSR_PERF_METRICS ||
           in(IA32_FIXED_CTR_CTRL, IA32_PERF_GLOBAL_INUSE) || in(IA32_A_PMC0, IA32_A_PMC0 + 7) ||
           m == IA32_PEBS_ENABLE || in(AMD_PERF_EVT_SEL0, AMD_PERF_CTR0 + 3) ||
           in(AMD_PERF_CTL_EXT0, AMD_PERF_CTL_EXT0 + 11) ||
           in(AMD_PERF_CNTR_GLOBAL_STATUS, AMD_PERF_CNTR_GLOBAL_STATUS_SET) ||
           // NetBurst ESCRs, counters and CCCRs (SDM Vol. 3B Table 20-xx).
           in(0x300, 0x311) || in(0x360, 0x371) || in(0x3A0, 0x3E1);
}

namespace {

Result<u64> parse_reg_value(const char* what, const char* s) {
    u64 v;
    if (!s || !parse_u64(StrView(s), &v))
        return Error::make(Errc::invalid_argument, "msr: %s '%s' is not a number (use 0x... or decimal)", what,
                           s ? s : "");
    return v;
}

}  // namespace

Status cmd_msr(Out& out, Args& args) {
    const char* op = args.take();
    if (!op || (!str_eq(op, "read") && !str_eq(op, "write")))
        return Error::make(Errc::invalid_argument, "msr: expected 'read' or 'write', got '%s'", op ? op : "");
    bool write = str_eq(op, "write");
    const char* words[2] = {nullptr, nullptr};
    int nwords = 0;
    CpuSelection sel;
    bool unsafe = false;
    while (!args.done()) {
        Status err;
        if (take_cpu_option(args, &sel, &err)) {
            PMULAB_TRY(err);
        } else if (args.flag("--unsafe")) {
            unsafe = true;
        } else if (args.at_option()) {
            return Error::make(Errc::invalid_argument, "msr: unknown option '%s'", args.peek());
        } else if (nwords < (write ? 2 : 1)) {
            words[nwords++] = args.take();
        } else {
            return Error::make(Errc::invalid_argument, "msr %s: unexpected argument '%s'", op, args.peek());
        }
    }
    if (nwords < (write ? 2 : 1))
        return Error::make(Errc::invalid_argument, "msr %s: missing %s (see 'pmulab help msr')", op,
                           nwords == 0 ? "ADDR" : "VALUE");
    const u64 addr = PMULAB_TRY(parse_reg_value("ADDR", words[0]));
    if (addr > 0xffffffffull)
        return Error::make(Errc::invalid_argument, "msr: ADDR %s is wider than 32 bits", words[0]);
    u64 value = 0;
    if (write) {
        value = PMULAB_TRY(parse_reg_value("VALUE", words[1]));
        if (!unsafe && !msr_is_pmu(u32(addr)))
            return Error::make(Errc::invalid_argument,
                               "msr write: 0x%llx is not a PMU MSR; writing it could harm the machine. "
                               "Add --unsafe if you mean it",
                               (unsigned long long)addr);
    }
    Hw& hw = out.platform().hw();
    Vec<u32> cpus;
    PMULAB_TRY(expand_cpu_selection(hw, sel, &cpus));
    for (u32 cpu : cpus) {
        const u32 msr = u32(addr);
        Result<u64> result = u64(0);
        Status rs = run_on(hw, cpu, [&] {
            if (write) {
                Status s = hw.wrmsr(msr, value);
                result = s.ok() ? Result<u64>(value) : Result<u64>(s.error());
            } else {
                result = hw.rdmsr(msr);
            }
        });
        Result<u64> r = rs.ok() ? result : Result<u64>(rs.error());
        Result<CpuTopology> topo = hw.topology(cpu);
        u64 apic = topo.ok() ? topo.value().apic_id : 0;
        if (!r.ok()) {
            // Reported, and the next CPU goes on; the outcome keeps the first failure
            // (a later disabled CPU does not turn a fault into "unsupported").
            out.error(r.error().with_context("CPU %u", cpu));
            continue;
        }
        {
            StrBuf b;
            JsonWriter w(b);
            w.begin_object().field("type", "msr").field("op", op).field_u("cpu", cpu).field_u("apic_id", apic);
            w.field_hex("msr", addr).field_hex("value", r.value()).end_object();
            b.put('\n');
            out.record(b);
            out.text("CPU %u (APIC %llu): MSR 0x%llx %s 0x%016llx\n", cpu, (unsigned long long)apic,
                     (unsigned long long)addr, write ? "<-" : "=", (unsigned long long)r.value());
        }
    }
    return ok_status();
}

}  // namespace pmulab
