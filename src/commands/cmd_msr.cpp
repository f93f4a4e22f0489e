#include "commands/commands.h"
#include "base/json.h"
#include "x86/amd_regs.h"
#include "x86/intel_regs.h"
#include "x86/msr_addr.h"

namespace pmulab {

namespace {

struct MsrArgs {
    CpuSelection sel;
    bool unsafe = false;
    bool write = false;
    const char* op = nullptr;
    u64 addr = 0, value = 0;
};

// clang-format off
const OptionSpec kMsrOptionTable[] = {
    {.name = "--cpu", .metavar = "N|all|bsp", .value = OptValue::cpu, .brief = "the CPUs to access (default bsp)",
     .apply = apply_cpu_option<MsrArgs>},
    {.name = "--unsafe", .brief = "allow writes outside the PMU MSR ranges and to IA32_PEBS_ENABLE",
     .apply = [](void* t, const OptionHit&) { static_cast<MsrArgs*>(t)->unsafe = true; return ok_status(); }},
};
// clang-format on

}  // namespace

const CommandOptions kMsrCommand = {
    .command = "msr",
    .options = kMsrOptionTable,
    .count = count_of(kMsrOptionTable),
    .help = "usage: pmulab msr read ADDR [--cpu N|all|bsp]\n"
            "       pmulab msr write ADDR VALUE [--cpu N|all|bsp] [--unsafe]\n"
            "\n"
            "Raw MSR access through the fault-safe layer: a #GP is reported as an error\n"
            "naming the MSR, never a hang. ADDR and VALUE are hex (0x...) or decimal.\n"
            "Writes outside the PMU MSR ranges need --unsafe, and so does IA32_PEBS_ENABLE\n"
            "(0x3F1: the CPU then writes PEBS records to memory). Values with reserved bits\n"
            "set in a register pmulab knows are refused. A PMU MSR is read back after the\n"
            "write: a CPU that ignored or changed the write is an error (exit status 1).\n",
    .positionals = 4,  // read|write ADDR [VALUE], and a word too many (reported by parse_msr_args)
};

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

// Counters: a value that may have moved on between the write and the read back.
bool is_counter_msr(u32 m) {
    using namespace msr;
    auto in = [m](u32 lo, u32 hi) { return m >= lo && m <= hi; };
    if (in(IA32_PMC0, IA32_PMC0 + 7) || in(IA32_A_PMC0, IA32_A_PMC0 + 7) || in(IA32_FIXED_CTR0, IA32_FIXED_CTR0 + 15))
        return true;
    if (in(AMD_PERF_CTR0, AMD_PERF_CTR0 + 3)) return true;
    if (in(AMD_PERF_CTL_EXT0, AMD_PERF_CTL_EXT0 + 11)) return (m - AMD_PERF_CTL_EXT0) % 2 == 1;
    return in(0x300, 0x311);  // NetBurst counters (SDM Vol. 3B Table 20-xx)
}

// Registers whose read back is not the value written: write-1-to-clear/set, read-only.
bool readback_not_comparable(u32 m) {
    using namespace msr;
    return m == IA32_PERF_GLOBAL_STATUS || m == IA32_PERF_GLOBAL_STATUS_RESET || m == IA32_PERF_GLOBAL_STATUS_SET ||
           m == IA32_PERF_GLOBAL_INUSE || m == MSR_PERF_METRICS || m == AMD_PERF_CNTR_GLOBAL_STATUS ||
           m == AMD_PERF_CNTR_GLOBAL_STATUS_CLR || m == AMD_PERF_CNTR_GLOBAL_STATUS_SET;
}

bool is_amd_perf_ctl(u32 m) {
    using namespace msr;
    return (m >= AMD_PERF_EVT_SEL0 && m < AMD_PERF_EVT_SEL0 + 4) ||
           (m >= AMD_PERF_CTL_EXT0 && m < AMD_PERF_CTL_EXT0 + 12 && (m - AMD_PERF_CTL_EXT0) % 2 == 0);
}

}  // namespace

Status msr_write_check(const CpuDecoded& cpu, u32 m, u64 value, bool unsafe) {
    if (unsafe) return ok_status();
    if (!msr_is_pmu(m))
        return Error::make(Errc::invalid_argument,
                           "msr write: 0x%x is not a PMU MSR; writing it could harm the machine. Add --unsafe if "
                           "you mean it",
                           m);
    if (m == msr::IA32_PEBS_ENABLE)
        return Error::make(Errc::invalid_argument,
                           "msr write: IA32_PEBS_ENABLE (0x3f1) makes the CPU write PEBS records to memory (the DS "
                           "area pmulab does not set up). Add --unsafe if you mean it");
    bool intel_like = cpu.id.vendor == Vendor::intel || cpu.id.vendor == Vendor::zhaoxin;
    bool amd_like = is_amd_family(cpu.id.vendor);
    if (intel_like && !cpu.pmu.netburst) {
        StrBuf name;
        if (regs::pmu_msr_name(cpu.pmu, m, name)) {
            Status exists = regs::pmu_msr_check(cpu.pmu, m);
            if (!exists.ok()) return exists.error().with_context("msr write");
            u64 writable = regs::pmu_msr_writable_mask(cpu.pmu, m);
            if (value & ~writable)
                return Error::make(Errc::invalid_argument,
                                   "msr write: 0x%llx sets reserved bits 0x%llx of %s (0x%x); its writable bits on "
                                   "this PMU are 0x%llx",
                                   (unsigned long long)value, (unsigned long long)(value & ~writable), name.c_str(), m,
                                   (unsigned long long)writable);
        }
    } else if (amd_like && is_amd_perf_ctl(m) && (value & ~regs::amd::kPerfEvtSelWritable)) {
        return Error::make(Errc::invalid_argument,
                           "msr write: 0x%llx sets reserved bits 0x%llx of PerfEvtSel/PerfCtl 0x%x (writable bits: "
                           "0x%llx, APM Vol. 2 §13.2.1)",
                           (unsigned long long)value, (unsigned long long)(value & ~regs::amd::kPerfEvtSelWritable), m,
                           (unsigned long long)regs::amd::kPerfEvtSelWritable);
    }
    return ok_status();
}

bool msr_readback_matches(const CpuDecoded& cpu, u32 m, u64 written, u64 read) {
    if (readback_not_comparable(m)) return true;
    if (!is_counter_msr(m)) return read == written;
    u64 expect = written;
    unsigned width = 48;
    bool intel_like = cpu.id.vendor == Vendor::intel || cpu.id.vendor == Vendor::zhaoxin;
    if (intel_like && !cpu.pmu.netburst) {
        bool fixed = m >= msr::IA32_FIXED_CTR0 && m < msr::IA32_FIXED_CTR0 + 16;
        unsigned w = fixed ? regs::fixed_counter_width(cpu.pmu) : regs::gp_counter_width(cpu.pmu);
        if (w) width = w;
        if (m >= msr::IA32_PMC0 && m < msr::IA32_PMC0 + 8) expect = regs::legacy_pmc_write_result(written, width);
    }
    u64 mask = width >= 64 ? ~u64(0) : (u64(1) << width) - 1;
    expect &= mask;
    u64 ahead = (read - expect) & mask;  // a counting counter moved on
    return ahead < (u64(1) << 32);
}

namespace {

// read|write ADDR [VALUE] and the options.
Status parse_msr_args(Args& args, MsrArgs* a) {
    ParsedOptions parsed;
    PMULAB_TRY(read_options(kMsrCommand, args, a, &parsed));
    const Vec<const char*>& words = parsed.positionals;
    const char* op = words.empty() ? nullptr : words[0];
    if (!op || (!str_eq(op, "read") && !str_eq(op, "write")))
        return Error::make(Errc::invalid_argument, "msr: expected 'read' or 'write', got '%s'", op ? op : "");
    a->op = op;
    a->write = str_eq(op, "write");
    usize need = a->write ? 3 : 2;
    if (words.size() > need)
        return Error::make(Errc::invalid_argument, "msr %s: unexpected argument '%s'", op, words[need]);
    if (words.size() < need)
        return Error::make(Errc::invalid_argument, "msr %s: missing %s (see 'pmulab help msr')", op,
                           words.size() == 1 ? "ADDR" : "VALUE");
    a->addr = PMULAB_TRY(parse_reg_value("ADDR", words[1]));
    if (a->addr > 0xffffffffull)
        return Error::make(Errc::invalid_argument, "msr: ADDR %s is wider than 32 bits", words[1]);
    if (a->write) a->value = PMULAB_TRY(parse_reg_value("VALUE", words[2]));
    return ok_status();
}

// One CPU's access: the record and text line, and the read back of a PMU MSR write.
void msr_on_cpu(Out& out, Hw& hw, const MsrArgs& a, const CpuDecoded& this_cpu, u32 cpu) {
    const u32 msr = u32(a.addr);
    const bool read_back = a.write && msr_is_pmu(msr);  // a CPU (or hypervisor) may ignore it
    Result<u64> result = u64(0);
    Result<u64> back = u64(0);
    Status rs = run_on(hw, cpu, [&] {
        if (a.write) {
            Status s = hw.wrmsr(msr, a.value);
            result = s.ok() ? Result<u64>(a.value) : Result<u64>(s.error());
            if (s.ok() && read_back) back = hw.rdmsr(msr);
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
        return;
    }
    Value b;
    JsonWriter w(b);
    w.begin_object().field("type", "msr").field("op", a.op).field_u("cpu", cpu).field_u("apic_id", apic);
    w.field_hex("msr", a.addr).field_hex("value", r.value());
    if (read_back && back.ok()) w.field_hex("read_back", back.value());
    w.end_object();
    out.record(b);
    out.text("CPU %u (APIC %llu): MSR 0x%llx %s 0x%016llx\n", cpu, (unsigned long long)apic, (unsigned long long)a.addr,
             a.write ? "<-" : "=", (unsigned long long)r.value());
    if (!read_back) return;
    if (!back.ok()) {
        out.error(back.error().with_context("CPU %u: reading MSR 0x%x back after the write", cpu, msr));
    } else if (!msr_readback_matches(this_cpu, msr, a.value, back.value())) {
        out.error_msg(Errc::io,
                      "CPU %u: MSR 0x%x reads back 0x%llx after writing 0x%llx: the CPU (or hypervisor) "
                      "ignored or changed the write",
                      cpu, msr, (unsigned long long)back.value(), (unsigned long long)a.value);
    }
}

}  // namespace

Status cmd_msr(Out& out, Args& args) {
    MsrArgs a;
    PMULAB_TRY(parse_msr_args(args, &a));
    Hw& hw = out.platform().hw();
    CpuDecoded this_cpu{};
    if (a.write) {
        CpuidSnapshot snap;
        capture_cpuid(hw, &snap);
        this_cpu = decode_cpuid(snap);
        PMULAB_TRY(msr_write_check(this_cpu, u32(a.addr), a.value, a.unsafe));
    }
    Vec<u32> cpus;
    PMULAB_TRY(expand_cpu_selection(hw, a.sel, &cpus));
    for (u32 cpu : cpus) msr_on_cpu(out, hw, a, this_cpu, cpu);
    return ok_status();
}

}  // namespace pmulab
