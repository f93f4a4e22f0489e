// `pmulab events` and `info` on the vendor PMUs: the AMD named events of the CPU's
// dialect (the real Zen 5 dump), the NetBurst events with their masks and ESCR/counter
// pairs (the simulated Prescott), and a NetBurst CPU whose firmware left
// IA32_MISC_ENABLE[7] (Performance Monitoring Available) clear.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "pmu/session.h"
#include "sim/sim_cpu.h"
#include "sim/sim_netburst.h"
#include "support/test_platform.h"

using namespace pmulab;
using sim::SimMachine;

namespace {

using Lines = std::vector<std::string>;

// The lines of `out` from `first` up to (not including) the first empty line after it.
Lines block(const pmutest::RunResult& r, const std::string& first) {
    Lines all = r.lines(), out;
    size_t i = 0;
    while (i < all.size() && all[i] != first) ++i;
    for (; i < all.size() && !all[i].empty(); ++i) out.push_back(all[i]);
    return out;
}

SimMachine netburst_perfmon_off() {
    SimMachine m = sim::netburst_p4(1, false);
    m.cpu(0).poke(0x1A0, sim::kPrescottMiscEnable & ~0x80ull);  // bit 7 clear
    return m;
}

}  // namespace

TEST(EventsVendors, Zen5ListsTheAmdNamedEvents) {
    SimMachine m = pmutest::dump_machine("AuthenticAMD0B40F40_K20_GraniteRidge_02_CPUID.txt");
    pmutest::RunResult r = pmutest::run(m, {"events"});
    EXPECT_EQ(r.status, 0) << r.out;
    EXPECT_EQ(block(r, "CPU 0: AMD core PMU (PerfMonV2): PMC0-5 (48 bits), fixed-like IRPerfCount,APERF,MPERF, reads "
                       "with RDPMC"),
              (Lines{
                  "CPU 0: AMD core PMU (PerfMonV2): PMC0-5 (48 bits), fixed-like IRPerfCount,APERF,MPERF, reads with "
                  "RDPMC",
                  "  counter reads: RDPMC",
              }));
    EXPECT_EQ(block(r, "  EVENT                     CODE    COUNTER          AVAILABLE"),
              (Lines{
                  "  EVENT                     CODE    COUNTER          AVAILABLE",
                  "  instructions              0C0.00  IRPerfCount      yes",
                  "      retired instructions",
                  "      also: ex_ret_instr, retired_instructions",
                  "  aperf                     -       APERF            yes",
                  "      APERF: actual clocks in C0 (MSR 0xC00000E8)",
                  "  mperf                     -       MPERF            yes",
                  "      MPERF: P0-frequency clocks in C0 (MSR 0xC00000E7)",
                  "  cycles                    076.00  PMC0-5           yes",
                  "      cycles not in halt (PMCx076)",
                  "      also: cpu-cycles, ls_not_halted_cyc, cycles_not_in_halt",
                  "  instructions_retired      0C0.00  PMC0-5           yes",
                  "      retired instructions (PMCx0C0)",
                  "  branches                  0C2.00  PMC0-5           yes",
                  "      retired branch instructions (PMCx0C2)",
                  "      also: branch-instructions, ex_ret_brn",
                  "  branch-misses             0C3.00  PMC0-5           yes",
                  "      retired mispredicted branch instructions (PMCx0C3)",
                  "      also: ex_ret_brn_misp",
                  "  l1d-accesses              040.00  PMC0-5           yes",
                  "      L1 data cache accesses (PMCx040)",
                  "      also: L1-dcache-loads, ls_dc_accesses",
                  "  l1d-misses                060.C8  PMC0-5           yes",
                  "      L2 cache accesses from L1 data cache misses (PMCx060, unit mask C8h)",
                  "      also: L1-dcache-load-misses",
                  "  de_no_dispatch_per_slot.no_ops_from_frontend 1A0.01 PMC0-5 yes",
                  "      dispatch slots left empty: no ops from the frontend (PMCx1A0, unit mask 01h)",
                  "  de_no_dispatch_per_slot.backend_stalls 1A0.1E PMC0-5 yes",
                  "      dispatch slots left empty: backend stalls (PMCx1A0, unit mask 1Eh)",
                  "  de_no_dispatch_per_slot.smt_contention 1A0.60 PMC0-5 yes",
                  "      dispatch slots left empty: the other thread was selected (PMCx1A0, unit mask 60h)",
                  "  de_src_op_disp.all        0AA.07  PMC0-5           yes",
                  "      ops dispatched from any source (PMCx0AA, unit mask 07h)",
                  "  ex_ret_ops                0C1.00  PMC0-5           yes",
                  "      retired macro-ops (PMCx0C1)",
                  "  ex_ret_ucode_ops          1C2.00  PMC0-5           yes",
                  "      retired microcode ops (PMCx1C2)",
                  "  resyncs_or_nc_redirects   096.00  PMC0-5           yes",
                  "      pipeline restarts not caused by branch mispredicts (PMCx096, Zen 4: Linux amdzen4/other.json)",
                  "  bp_redirects.resync       09F.01  PMC0-5           yes",
                  "      branch predictor redirects caused by resyncs (PMCx09F, unit mask 01h, Zen 5)",
                  "  ls_smi_rx                 02B.00  PMC0-5           yes",
                  "      SMIs received (PMCx02B)",
                  "  ex_no_retire.not_complete 0D6.02  PMC0-5           yes",
                  "      cycles with no retire while the oldest op is waiting to be executed (PMCx0D6, unit mask 02h)",
                  "  ex_no_retire.load_not_complete 0D6.A2 PMC0-5       yes",
                  "      cycles with no retire while the oldest op is waiting for load data (PMCx0D6, unit mask A2h)",
                  "  l2_cache_req_stat.ic_dc_miss_in_l2 064.09 PMC0-5   yes",
                  "      L2 requests from instruction and data cache misses that miss in L2 (PMCx064, unit mask 09h)",
                  "  l2_cache_req_stat.ic_dc_hit_in_l2 064.F6 PMC0-5    yes",
                  "      L2 requests from instruction and data cache misses that hit in L2 (PMCx064, unit mask F6h)",
                  "  tsc                       -       TSC              yes",
                  "      time-stamp counter (RDTSC), no PMU counter",
              }));
    // No Intel architectural event is listed on an AMD PMU.
    EXPECT_EQ(r.out.find("\n  INST_RETIRED.ANY "), std::string::npos) << r.out;

    r = pmutest::run(m, {"events", "--json"});
    EXPECT_EQ(r.status, 0) << r.out;
    std::vector<pmutest::Json> recs = pmutest::parse_json_lines(r.out);
    ASSERT_EQ(recs.size(), 24u);  // pmu + 23 events (10 of them the Zen 4/5 TopDown inputs, 2 L2 requests, SMIs)
    EXPECT_EQ(recs[0]["pmu"].s(), "amd");
    const pmutest::Json& ins = recs[1];
    EXPECT_EQ(ins.keys(), (Lines{"type", "cpu", "apic_id", "name", "alias", "code", "kind", "arch_bit", "fixed_counter",
                                 "available", "route", "counter", "reason", "counter_method", "description"}));
    EXPECT_EQ(ins["type"].s(), "event");
    EXPECT_EQ(ins["name"].s(), "instructions");
    EXPECT_EQ(ins["alias"].s(), "ex_ret_instr, retired_instructions");
    EXPECT_EQ(ins["code"].s(), "0C0.00");
    EXPECT_EQ(ins["kind"].s(), "fixed");
    EXPECT_TRUE(ins["arch_bit"].is_null());
    EXPECT_EQ(ins["fixed_counter"].u(), 0u);
    EXPECT_TRUE(ins["available"].b);
    EXPECT_EQ(ins["route"].s(), "fixed");
    EXPECT_EQ(ins["counter"].s(), "IRPerfCount");
    EXPECT_EQ(ins["reason"].s(), "");
    EXPECT_EQ(ins["counter_method"].s(), "rdpmc");
    EXPECT_EQ(ins["description"].s(), "retired instructions");
    const pmutest::Json& mis = recs[9];
    EXPECT_EQ(mis["name"].s(), "l1d-misses");
    EXPECT_EQ(mis["code"].s(), "060.C8");
    EXPECT_EQ(mis["kind"].s(), "named");
    EXPECT_TRUE(mis["fixed_counter"].is_null());
    EXPECT_EQ(mis["route"].s(), "gp");
    EXPECT_EQ(mis["counter"].s(), "PMC0-5");
    EXPECT_EQ(recs[10]["name"].s(), "de_no_dispatch_per_slot.no_ops_from_frontend");
    EXPECT_EQ(recs[10]["code"].s(), "1A0.01");
    EXPECT_EQ(recs[21]["name"].s(), "l2_cache_req_stat.ic_dc_miss_in_l2");
    EXPECT_EQ(recs[21]["code"].s(), "064.09");
    EXPECT_EQ(recs[22]["code"].s(), "064.F6");
    EXPECT_EQ(recs[23]["name"].s(), "tsc");
    EXPECT_EQ(recs[23]["counter"].s(), "TSC");
}

TEST(EventsVendors, AmdWithoutIrPerfCountFallsBackForInstructions) {
    SimMachine m = sim::amd_k10(1);
    pmutest::RunResult r = pmutest::run(m, {"events"});
    EXPECT_EQ(r.status, 0) << r.out;
    EXPECT_TRUE(r.has_line("  instructions              0C0.00  PMC0-3           yes: IRPerfCount is absent: counted "
                           "on a general-purpose counter with 0C0.00"))
        << r.out;
    // Before Zen: l1d-misses is PMCx041 unit mask 01h.
    EXPECT_TRUE(r.has_line("  l1d-misses                041.01  PMC0-3           yes")) << r.out;
}

TEST(EventsVendors, NetBurstListsTheNetBurstEvents) {
    SimMachine m = sim::netburst_p4(1, false);
    pmutest::RunResult r = pmutest::run(m, {"events"});
    EXPECT_EQ(r.status, 0) << r.out;
    EXPECT_EQ(block(r, "  EVENT                     CODE    COUNTER          AVAILABLE"),
              (Lines{
                  "  EVENT                     CODE    COUNTER          AVAILABLE",
                  "  global_power_events       13      PMC0-3           yes",
                  "      cycles the processor is not stopped",
                  "      also: cycles",
                  "      event mask: RUNNING (default RUNNING)",
                  "      FSB_ESCR0 (0x3A2) -> BPU_COUNTER0 (PMC0), BPU_COUNTER1 (PMC1)",
                  "      FSB_ESCR1 (0x3A3) -> BPU_COUNTER2 (PMC2), BPU_COUNTER3 (PMC3)",
                  "  instr_retired             02      PMC12-17         yes",
                  "      instructions retired (non-bogus)",
                  "      also: instructions",
                  "      event mask: NBOGUSNTAG NBOGUSTAG BOGUSNTAG BOGUSTAG (default NBOGUSNTAG+NBOGUSTAG)",
                  "      CRU_ESCR0 (0x3B8) -> IQ_COUNTER0 (PMC12), IQ_COUNTER1 (PMC13), IQ_COUNTER4 (PMC16)",
                  "      CRU_ESCR1 (0x3B9) -> IQ_COUNTER2 (PMC14), IQ_COUNTER3 (PMC15), IQ_COUNTER5 (PMC17)",
                  "  uops_retired              01      PMC12-17         yes",
                  "      uops retired (non-bogus)",
                  "      also: uops",
                  "      event mask: NBOGUS BOGUS (default NBOGUS)",
                  "      CRU_ESCR0 (0x3B8) -> IQ_COUNTER0 (PMC12), IQ_COUNTER1 (PMC13), IQ_COUNTER4 (PMC16)",
                  "      CRU_ESCR1 (0x3B9) -> IQ_COUNTER2 (PMC14), IQ_COUNTER3 (PMC15), IQ_COUNTER5 (PMC17)",
                  "  branch_retired            06      PMC12-17         yes",
                  "      branches retired (not-taken/taken, predicted/mispredicted)",
                  "      also: branches",
                  "      event mask: MMNP MMNM MMTP MMTM (default MMNP+MMNM+MMTP+MMTM)",
                  "      CRU_ESCR2 (0x3CC) -> IQ_COUNTER0 (PMC12), IQ_COUNTER1 (PMC13), IQ_COUNTER4 (PMC16)",
                  "      CRU_ESCR3 (0x3CD) -> IQ_COUNTER2 (PMC14), IQ_COUNTER3 (PMC15), IQ_COUNTER5 (PMC17)",
                  "  mispred_branch_retired    03      PMC12-17         yes",
                  "      mispredicted branches retired",
                  "      also: branch-misses",
                  "      event mask: NBOGUS (default NBOGUS)",
                  "      CRU_ESCR0 (0x3B8) -> IQ_COUNTER0 (PMC12), IQ_COUNTER1 (PMC13), IQ_COUNTER4 (PMC16)",
                  "      CRU_ESCR1 (0x3B9) -> IQ_COUNTER2 (PMC14), IQ_COUNTER3 (PMC15), IQ_COUNTER5 (PMC17)",
                  "  tsc                       -       TSC              yes",
                  "      time-stamp counter (RDTSC), no PMU counter",
              }));
    EXPECT_EQ(r.out.find("not a NetBurst event"), std::string::npos) << r.out;
    EXPECT_TRUE(m.cpu(0).writes().empty());  // listing programs nothing

    r = pmutest::run(m, {"events", "--json"});
    EXPECT_EQ(r.status, 0) << r.out;
    std::vector<pmutest::Json> recs = pmutest::parse_json_lines(r.out);
    ASSERT_EQ(recs.size(), 7u);  // pmu + 5 events + tsc
    EXPECT_EQ(recs[0]["pmu"].s(), "netburst");
    const pmutest::Json& ir = recs[2];
    EXPECT_EQ(ir.keys(), (Lines{"type", "cpu", "apic_id", "name", "alias", "code", "kind", "arch_bit", "fixed_counter",
                                "available", "route", "counter", "reason", "counter_method", "description", "masks",
                                "default_mask", "escrs"}));
    EXPECT_EQ(ir["name"].s(), "instr_retired");
    EXPECT_EQ(ir["alias"].s(), "instructions");
    EXPECT_EQ(ir["code"].s(), "02");
    EXPECT_EQ(ir["kind"].s(), "netburst");
    EXPECT_TRUE(ir["available"].b);
    EXPECT_EQ(ir["route"].s(), "gp");
    EXPECT_EQ(ir["counter"].s(), "PMC12-17");
    EXPECT_EQ(ir["masks"].s_list(), (Lines{"NBOGUSNTAG", "NBOGUSTAG", "BOGUSNTAG", "BOGUSTAG"}));
    EXPECT_EQ(ir["default_mask"].s(), "0x3");
    ASSERT_EQ(ir["escrs"].items.size(), 2u);
    EXPECT_EQ(ir["escrs"][0]["escr"].s(), "CRU_ESCR0");
    EXPECT_EQ(ir["escrs"][0]["msr"].s(), "0x3b8");
    EXPECT_EQ(ir["escrs"][0]["counters"].u_list(), (std::vector<u64>{12, 13, 16}));
    EXPECT_EQ(ir["escrs"][1]["escr"].s(), "CRU_ESCR1");
    EXPECT_EQ(ir["escrs"][1]["counters"].u_list(), (std::vector<u64>{14, 15, 17}));
    // The model agrees on the wiring: CRU_ESCR0 feeds IQ_COUNTER0/1/4.
    EXPECT_EQ(sim::nb::escr_at(sim::nb::CRU_ESCR0)->counters, (1u << 12) | (1u << 13) | (1u << 16));
}

TEST(EventsVendors, NetBurstWithPerfmonDisabledByFirmware) {
    SimMachine m = netburst_perfmon_off();
    pmutest::RunResult r = pmutest::run(m, {"events"});
    EXPECT_EQ(r.status, 0) << r.out;
    EXPECT_EQ(block(r, "CPU 0: no PMU counters: NetBurst processor without performance monitoring: IA32_MISC_ENABLE[7] "
                       "(Performance Monitoring Available) is 0"),
              (Lines{
                  "CPU 0: no PMU counters: NetBurst processor without performance monitoring: IA32_MISC_ENABLE[7] "
                  "(Performance Monitoring Available) is 0",
                  "  counter reads: RDMSR (no counters to read)",
                  "  Only 'tsc' (the time-stamp counter, read with RDTSC) can be measured here.",
              }));

    r = pmutest::run(m, {"events", "--check", "instructions"});
    EXPECT_EQ(r.status, 3);
    EXPECT_EQ(r.out,
              "pmulab: error: CPU 0: event 'instructions' cannot be counted: NetBurst processor without performance "
              "monitoring: IA32_MISC_ENABLE[7] (Performance Monitoring Available) is 0\n");
    r = pmutest::run(m, {"events", "--check", "tsc"});
    EXPECT_EQ(r.status, 0) << r.out;

    // Allocation through the session gives the same reason.
    PmuSession s;
    s.open(m);
    Vec<Event> ev;
    ASSERT_TRUE(parse_event_list(StrView("instr_retired"), &ev, EventDialect::netburst).ok());
    Allocation a;
    Status st = s.allocate(ev.data(), ev.size(), &a);
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.error().code, Errc::unsupported);
    EXPECT_STREQ(st.error().msg,
                 "event 'instr_retired' cannot be counted: NetBurst processor without performance monitoring: "
                 "IA32_MISC_ENABLE[7] (Performance Monitoring Available) is 0");
    EXPECT_TRUE(m.cpu(0).writes().empty());
}

TEST(EventsVendors, InfoSaysTheFirmwareDisabledNetBurstPerfmon) {
    SimMachine m = netburst_perfmon_off();
    pmutest::RunResult r = pmutest::run(m, {"info"});
    EXPECT_EQ(r.status, 0) << r.out;
    EXPECT_TRUE(r.has_line("    0      0  yes    0     0    0  -     p4    off")) << r.out;
    EXPECT_EQ(block(r, "PMU of CPU 0 (1 CPU):"),
              (Lines{
                  "PMU of CPU 0 (1 CPU):",
                  "  PMU              : NetBurst ESCR/CCCR (no leaf 0AH: maximum CPUID leaf 0x5)",
                  "  counters         : 18 x 40 bits in 9 pairs: BPU 0-3, MS 4-7, FLAME 8-11, IQ 12-17",
                  "  ESCRs            : 43 (IQ_ESCR0/1 exist on models 1-2 only)",
                  "  Hyper-Threading  : no",
                  "  perfmon          : disabled by the firmware: IA32_MISC_ENABLE[7] (Performance Monitoring "
                  "Available) is 0, so no counter can be used (only the TSC)",
              }));
    EXPECT_TRUE(m.cpu(0).writes().empty());

    r = pmutest::run(m, {"info", "--json"});
    EXPECT_EQ(r.status, 0) << r.out;
    std::vector<pmutest::Json> recs = pmutest::parse_json_lines(r.out);
    ASSERT_EQ(recs.size(), 1u);
    const pmutest::Json& p = recs[0]["pmu"];
    EXPECT_FALSE(p["present"].b);
    EXPECT_EQ(p["netburst"].keys(), (Lines{"counters", "width", "escrs", "hyperthreading", "perfmon_available"}));
    EXPECT_EQ(p["netburst"]["perfmon_available"].type, pmutest::Json::Type::boolean);
    EXPECT_FALSE(p["netburst"]["perfmon_available"].b);

    // With the bit set (the dump's value) no perfmon line is shown.
    SimMachine ok = sim::netburst_p4(1, false);
    r = pmutest::run(ok, {"info"});
    EXPECT_EQ(r.status, 0) << r.out;
    EXPECT_EQ(r.out.find("  perfmon  "), std::string::npos) << r.out;
    EXPECT_TRUE(r.has_line("    0      0  yes    0     0    0  -     p4    18x40")) << r.out;
}
