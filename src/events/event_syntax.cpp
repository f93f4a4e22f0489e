// The event-syntax summaries of `pmulab events`; see event_syntax.h. Each text states
// what the parsers of its dialect accept (events.h, event_terms.cpp, named_events.cpp).
#include "events/event_syntax.h"

namespace pmulab {

namespace {

const char kIntelSyntax[] =
    "Event syntax (run --events, events --check; events separated by ',' or ';'):\n"
    "  NAME[:u|:k]            a named event above, by its Intel, perf or pmulab name: instructions,\n"
    "                         cycles:u, INST_RETIRED.ANY, branch-misses (u: CPL > 0 only, k: CPL 0 only)\n"
    "  EE.UU[.MOD...] [NAME]  nanoBench: event select and unit mask in hex, e.g. 0E.01, D1.01.CMSK=1.INV,\n"
    "                         C0.00.CTR=2; MOD: CMSK=n INV EDG AnyT CTR=n TakenAlone USR OS EQ UMASK2=n\n"
    "                         MSR_RSP0=v MSR_RSP1=v MSR_3F6H=v MSR_PF=v\n"
    "  event=0x3c,umask=0x01  perf terms: umask= cmask= umask2= name= and the flags inv edge any eq usr os\n"
    "  rHHHH[:u|:k]           perf raw config (IA32_PERFEVTSELx bits), e.g. r01c2\n"
    "  cpu/TERMS/ cpu_core/TERMS/ cpu_atom/TERMS/   perf PMU prefix (hybrid: P or E cores only)\n"
    "  tsc                    the time-stamp counter (RDTSC; needs no PMU counter)\n"
    "Events count in both USR and OS mode unless a modifier says otherwise (pmulab runs at ring 0).\n";

const char kAmdSyntax[] =
    "Event syntax (run --events, events --check; events separated by ',' or ';'):\n"
    "  NAME[:u|:k]            a named event above, by its perf or AMD name: instructions, cycles:u,\n"
    "                         branch-misses, l1d-misses, aperf (u: CPL > 0 only, k: CPL 0 only)\n"
    "  EEE.UU[.MOD...] [NAME] nanoBench: 12-bit event select and unit mask in hex, e.g. 0C0.00, 1C1.02,\n"
    "                         076.00.CTR=2; MOD: CMSK=n INV EDG CTR=n TakenAlone USR OS HostOnly GuestOnly\n"
    "  event=0xc0,umask=0x00  perf terms: umask= cmask= name= and the flags inv edge usr os hostonly guestonly\n"
    "  rHHHHHHHHH[:u|:k]      perf raw config (PerfEvtSel bits: event 7:0 and 35:32, umask 15:8, edge 18,\n"
    "                         inv 23, cmask 31:24, guestonly 40, hostonly 41), e.g. r1000000c1\n"
    "  cpu/TERMS/             perf PMU prefix\n"
    "  tsc                    the time-stamp counter (RDTSC; needs no PMU counter)\n"
    "Events count in both USR and OS mode unless a modifier says otherwise (pmulab runs at ring 0).\n";

const char kNetBurstSyntax[] =
    "Event syntax (run --events, events --check; events separated by ',' or ';'):\n"
    "  NAME[.MASK[+MASK]...][:u|:k]   a NetBurst event above with event-mask bits (default: the event's\n"
    "                         default mask), e.g. instr_retired, branch_retired.MMTP+MMTM, uops_retired:u\n"
    "                         (u: CPL > 0 only, k: CPL 0 only)\n"
    "  instructions cycles branches branch-misses uops   generic names of NetBurst events\n"
    "  tsc                    the time-stamp counter (RDTSC; needs no PMU counter)\n"
    "NetBurst has no raw event selects, perf terms or raw configs: name the event.\n"
    "Events count in both USR and OS mode unless a modifier says otherwise (pmulab runs at ring 0).\n";

}  // namespace

const char* event_syntax_help(EventDialect d) {
    switch (d) {
        case EventDialect::intel: return kIntelSyntax;
        case EventDialect::amd:
        case EventDialect::amd_zen: return kAmdSyntax;
        case EventDialect::netburst: return kNetBurstSyntax;
    }
    return kIntelSyntax;
}

}  // namespace pmulab
