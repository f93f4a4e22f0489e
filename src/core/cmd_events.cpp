// `pmulab events [--cpu N|all|bsp] [--check SPEC[,SPEC...]]`
#include "pmulab/commands.h"
#include "pmulab/event_table.h"
#include "pmulab/events_cmd.h"
#include "pmulab/json.h"
#include "pmulab/pmu.h"

namespace pmulab {

const char kEventsHelp[] =
    "usage: pmulab events [--cpu N|all|bsp]\n"
    "       pmulab events --check SPEC[,SPEC...] [--cpu N|all|bsp]\n"
    "\n"
    "Lists what each CPU can count (default: the BSP): the fixed-counter events with their\n"
    "counters (or the general-purpose fallback where a fixed counter is absent), the\n"
    "architectural events with their availability (CPUID.0AH:EBX, CPUID.23H), 'tsc', how\n"
    "counters are read (RDPMC, or RDMSR where RDPMC faults), and the event syntax.\n"
    "CPUs with the same PMU share one table; hybrid parts show one per core type.\n"
    "The model-specific events of each CPU's event file in \\pmulab\\events (docs/events.md)\n"
    "follow; their names work in --check and 'pmulab run --events' like the others.\n"
    "\n"
    "--check parses the event specs (the syntax of 'pmulab run --events') and allocates\n"
    "them on each CPU: which counter counts which event, and in which run (group) when\n"
    "there are more events than counters.\n"
    "\n"
    "With --json: {\"type\":\"pmu\",...} per CPU, then {\"type\":\"event\",...} per event and CPU\n"
    "(with --check: {\"type\":\"allocation\",...} per CPU).\n"
    "Exit status: 0 ok; 2 bad option or event spec (the parser's message with the offset);\n"
    "3 an event of --check cannot be counted on a CPU.\n";

namespace {

const char kSyntax[] =
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

// The events listed: fixed-counter events, then architectural events by CPUID.0AH:EBX
// bit (SDM Vol. 3B Table 20-1), each under its Intel name and a perf/pmulab alias.
struct Row {
    const char* name;
    const char* alias;
};
constexpr Row kFixedRows[] = {
    {"INST_RETIRED.ANY", "instructions"},
    {"CPU_CLK_UNHALTED.THREAD", "cycles"},
    {"CPU_CLK_UNHALTED.REF_TSC", "ref-cycles"},
    {"TOPDOWN.SLOTS", "slots"},
};
constexpr Row kArchRows[kArchEventCount] = {
    {"CPU_CLK_UNHALTED.THREAD_P", "core_cycles"},
    {"INST_RETIRED.ANY_P", "instructions_retired"},
    {"CPU_CLK_UNHALTED.REF_XCLK", "reference_cycles"},
    {"LONGEST_LAT_CACHE.REFERENCE", "cache-references"},
    {"LONGEST_LAT_CACHE.MISS", "cache-misses"},
    {"BR_INST_RETIRED.ALL_BRANCHES", "branches"},
    {"BR_MISP_RETIRED.ALL_BRANCHES", "branch-misses"},
    {"TOPDOWN.SLOTS_P", "topdown_slots"},
    {"TOPDOWN.BACKEND_BOUND_SLOTS", "topdown_backend_bound"},
    {"topdown_bad_speculation", ""},
    {"topdown_frontend_bound", ""},
    {"topdown_retiring", ""},
    {"LBR_INSERTS.ANY", "lbr_inserts"},
};
constexpr usize kRows = sizeof kFixedRows / sizeof kFixedRows[0] + kArchEventCount + 1;

struct CpuPmu {
    u32 cpu = 0;
    u64 apic_id = 0;
    PmuInfo info;
    Status status;  // run_on_cpu failure
};

struct DetectCtx {
    Hw* hw;
    PmuInfo* info;
};

void detect_on_cpu(void* p) {
    auto* c = static_cast<DetectCtx*>(p);
    pmu_detect(*c->hw, c->info);
}

// One listed event on one PMU.
struct EventLine {
    const char* name = "";
    const char* alias = "";
    const char* kind = "";  // "fixed", "architectural", "tsc"
    char code[8] = {};
    int arch_bit = -1;
    int fixed_counter = -1;
    bool available = false;
    const char* route = "none";
    char counter[40] = {};
    char reason[sizeof(Error::msg)] = {};
};

void describe_event(const PmuInfo& info, const Row& row, const char* kind, EventLine* out) {
    *out = EventLine();
    out->name = row.name;
    out->alias = row.alias;
    out->kind = kind;
    Result<Event> pe = parse_event_spec(StrView(row.name));
    if (!pe.ok()) {  // cannot happen: the rows are names of the event table
        str_copy(out->reason, sizeof out->reason, pe.error().msg);
        return;
    }
    const Event& e = pe.value();
    out->arch_bit = e.arch_bit;
    out->fixed_counter = e.kind == EventKind::fixed ? e.fixed_counter : -1;
    if (e.kind == EventKind::tsc) {
        str_copy(out->code, sizeof out->code, "-");
        out->available = true;
        out->route = "none";
        str_copy(out->counter, sizeof out->counter, "TSC");
        return;
    }
    format_to(out->code, sizeof out->code, "%02X.%02X", unsigned(e.event_select), unsigned(e.umask));
    if (info.kind == PmuKind::none) {
        str_copy(out->reason, sizeof out->reason, info.absent);
        return;
    }
    Allocation a;
    Status s = pmu_allocate(info, &e, 1, &a);
    if (!s.ok()) {
        str_copy(out->reason, sizeof out->reason, s.error().msg);
        return;
    }
    out->available = true;
    const Assignment* as = a.find(0);
    EventCounters ec = event_counters(e, info.caps);
    StrBuf ctr;
    if (as && as->kind == CounterKind::fixed) {
        out->route = "fixed";
        put_counter_name(ctr, as->kind, as->index);
    } else {
        out->route = as && as->gp_fallback ? "gp_fallback" : "gp";
        regs::put_counter_set(ctr, ec.gp, "PMC");
        if (as && as->gp_fallback)
            format_to(out->reason, sizeof out->reason,
                      "fixed counter %d is absent: counted on a general-purpose counter with %s%s", e.fixed_counter,
                      out->code, e.gp_equivalent_exact ? "" : " (at the reference clock, not at the TSC rate)");
    }
    str_copy(out->counter, sizeof out->counter, ctr.c_str());
}

void list_events(const PmuInfo& info, EventLine* lines) {
    usize k = 0;
    for (const Row& r : kFixedRows) describe_event(info, r, "fixed", &lines[k++]);
    for (const Row& r : kArchRows) describe_event(info, r, "architectural", &lines[k++]);
    describe_event(info, Row{"tsc", ""}, "tsc", &lines[k++]);
}

void put_cpu_list(StrBuf& out, const Vec<u32>& cpus) {
    out.put(cpus.size() == 1 ? "CPU " : "CPUs ");
    for (usize i = 0; i < cpus.size();) {
        usize j = i;
        while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
        if (i) out.put(',');
        if (j == i) out.printf("%u", cpus[i]);
        else out.printf("%u-%u", cpus[i], cpus[j]);
        i = j + 1;
    }
}

void write_pmu_json(JsonWriter& w, const CpuPmu& c) {
    const PmuInfo& p = c.info;
    w.field_u("cpu", c.cpu).field_u("apic_id", c.apic_id);
    w.field("pmu", pmu_kind_name(p.kind));
    w.field_u("version", p.version);
    w.key("gp_counters").begin_array();
    for (unsigned i = 0; i < 32; ++i)
        if ((p.gp_mask >> i) & 1) w.num(i);
    w.end_array().field_u("gp_width", p.gp_width);
    w.key("fixed_counters").begin_array();
    for (unsigned i = 0; i < 32; ++i)
        if ((p.fixed_mask >> i) & 1) w.num(i);
    w.end_array().field_u("fixed_width", p.fixed_width);
    w.field_b("global_ctrl", p.global_ctrl).field_b("full_width_writes", p.full_width_writes);
    w.field("core_type", core_type_name(p.core_type));
    w.field("counter_method", counter_method_name(p.method));
    w.field("counter_method_note", p.method_note);
    if (p.kind == PmuKind::none) w.field("reason", p.absent);
}

// Collects the PMU of every selected CPU; CPUs that cannot be reached keep their error.
Status collect(Hw& hw, const CpuSelection& sel, Vec<CpuPmu>* out) {
    Vec<u32> cpus;
    PMULAB_TRY(expand_cpu_selection(hw, sel, &cpus));
    out->clear();
    out->resize(cpus.size());
    for (usize i = 0; i < cpus.size(); ++i) {
        CpuPmu& c = (*out)[i];
        c.cpu = cpus[i];
        Result<CpuTopology> t = hw.topology(c.cpu);
        if (t.ok()) c.apic_id = t.value().apic_id;
        DetectCtx ctx{&hw, &c.info};
        c.status = hw.run_on_cpu(c.cpu, detect_on_cpu, &ctx);
    }
    return ok_status();
}

// Indices of `all` grouped by identical PMU (first-seen order); unreachable CPUs alone.
Vec<Vec<u32>> classes(const Vec<CpuPmu>& all) {
    Vec<Vec<u32>> out;
    Vec<bool> done;
    done.resize(all.size());
    for (usize i = 0; i < all.size(); ++i) {
        if (done[i]) continue;
        Vec<u32>& cls = out.emplace();
        cls.push(u32(i));
        done[i] = true;
        if (!all[i].status.ok()) continue;
        for (usize j = i + 1; j < all.size(); ++j)
            if (!done[j] && all[j].status.ok() && all[j].info.same_pmu(all[i].info)) {
                cls.push(u32(j));
                done[j] = true;
            }
    }
    return out;
}

Vec<u32> class_cpus(const Vec<CpuPmu>& all, const Vec<u32>& cls) {
    Vec<u32> cpus;
    for (u32 k : cls) cpus.push(all[k].cpu);
    return cpus;
}

void put_reads(StrBuf& b, const PmuInfo& p) {
    if (p.method == CounterMethod::rdpmc) b.put("  counter reads: RDPMC\n");
    else b.printf("  counter reads: RDMSR (%s)\n", p.method_note[0] ? p.method_note : "RDPMC is not used");
}

int list(Out& out, const Vec<CpuPmu>& all, const StrBuf& model_text) {
    int status = kExitOk;
    EventLine lines[kRows];
    // Records: per CPU.
    for (const CpuPmu& c : all) {
        if (!c.status.ok()) {
            Error e = c.status.error();
            Error m = Error::make(e.code, "CPU %u: %s", c.cpu, e.msg);
            out.error(m);
            status = kExitFailure;
            continue;
        }
        StrBuf line;
        JsonWriter w(line);
        w.begin_object().field("type", "pmu");
        write_pmu_json(w, c);
        w.end_object();
        line.put('\n');
        out.record(line);
        list_events(c.info, lines);
        for (const EventLine& l : lines) {
            StrBuf el;
            JsonWriter j(el);
            j.begin_object().field("type", "event").field_u("cpu", c.cpu).field_u("apic_id", c.apic_id);
            j.field("name", l.name).field("alias", l.alias).field("code", l.code).field("kind", l.kind);
            j.key("arch_bit");
            if (l.arch_bit >= 0) j.num(u64(l.arch_bit));
            else j.null();
            j.key("fixed_counter");
            if (l.fixed_counter >= 0) j.num(u64(l.fixed_counter));
            else j.null();
            j.field_b("available", l.available).field("route", l.route);
            j.key("counter");
            if (l.available) j.str(StrView(l.counter));
            else j.null();
            j.field("reason", l.reason);
            j.field("counter_method", counter_method_name(c.info.method));
            j.end_object();
            el.put('\n');
            out.record(el);
        }
    }
    // Text: per class of CPUs with the same PMU.
    if (out.json()) return status;
    Vec<Vec<u32>> cls = classes(all);
    StrBuf b;
    for (const Vec<u32>& k : cls) {
        const CpuPmu& c = all[k[0]];
        if (!c.status.ok()) continue;
        Vec<u32> cpus = class_cpus(all, k);
        put_cpu_list(b, cpus);
        b.put(": ");
        put_pmu_summary(b, c.info);
        b.put('\n');
        put_reads(b, c.info);
        if (c.info.kind == PmuKind::none) {
            b.put("  Only 'tsc' (the time-stamp counter, read with RDTSC) can be measured here.\n\n");
            continue;
        }
        list_events(c.info, lines);
        b.put("\n  EVENT                         ALIAS                   CODE   COUNTER        AVAILABLE\n");
        for (const EventLine& l : lines) {
            usize col = b.size();
            b.printf("  %s", l.name);
            b.pad_to(col, 32);
            b.put(l.alias);
            b.pad_to(col, 56);
            b.put(l.code);
            b.pad_to(col, 63);
            b.put(l.available ? l.counter : "-");
            b.pad_to(col, 78);
            if (!l.available) b.printf("no: %s", l.reason);
            else if (l.reason[0]) b.printf("yes: %s", l.reason);
            else b.put("yes");
            // pad_to leaves trailing spaces only before text, never at the end
            b.put('\n');
        }
        b.put('\n');
    }
    b.put(model_text.view());
    b.put(kSyntax);
    out.text_buf(b);
    return status;
}

// ---- model-specific events: each CPU class's event file (pmulab/event_table.h) ----
//
// Text: a block per class with an event file ("Model-specific events of CPUs 0-3 (06_5EH,
// \pmulab\events\skylake_core.evt, 39 events):" and one "NAME  TOKEN" line each), or a
// line saying that no file is for it. JSON: one {"type":"event_file",...} record per
// class with the CPUs, the file (null when none) and its events as {name, code}.
int model_events(Out& out, Hw& hw, EventTables& tables, const Vec<CpuPmu>& all, StrBuf* text,
                 Vec<StrBuf>* records) {
    int status = kExitOk;
    Vec<Vec<u32>> cls = classes(all);
    for (const Vec<u32>& k : cls) {
        const CpuPmu& c0 = all[k[0]];
        if (!c0.status.ok()) continue;
        Vec<u32> cpus = class_cpus(all, k);
        StrBuf where;
        put_cpu_list(where, cpus);
        CpuDecoded id;
        Status s = collect_cpu_identity(hw, c0.cpu, &id);
        Result<const EventTable*> t = s.ok() ? tables.for_cpu(id.id) : Result<const EventTable*>(s.error());
        if (!t.ok()) {
            out.error(Error::make(t.error().code, "%s: %s", where.c_str(), t.error().msg));
            status = exit_status_for(t.error().code);
            continue;
        }
        StrBuf model;
        put_table_cpu(model, id.id);
        const EventTable* table = t.value();
        StrBuf line;
        JsonWriter w(line);
        w.begin_object().field("type", "event_file").key("cpus").begin_array();
        for (u32 c : cpus) w.num(c);
        w.end_array().field("cpu_model", model.view()).key("path");
        if (table) w.str(StrView(table->path));
        else w.null();
        w.key("events").begin_array();
        for (usize i = 0; table && i < table->events.size(); ++i)
            w.begin_object().field("name", table->events[i].name).field("code", table->token(i)).end_object();
        w.end_array().end_object();
        line.put('\n');
        records->push(move(line));
        if (!table) {
            text->printf("%s (%s): no event file in %s is for this CPU; model-specific names need one "
                         "(docs/events.md)\n\n",
                         where.c_str(), model.c_str(), tables.dir());
            continue;
        }
        text->printf("Model-specific events of %s (%s, %s, %u events):\n", where.c_str(), model.c_str(), table->path,
                     unsigned(table->events.size()));
        list_table_events(*text, *table);
        text->put('\n');
    }
    return status;
}

int check(Out& out, Hw& hw, EventTables& tables, const Vec<CpuPmu>& all, const char* spec) {
    Vec<Event> events;
    int status = kExitOk;
    Vec<Vec<u32>> cls = classes(all);
    for (const Vec<u32>& k : cls) {
        const CpuPmu& c0 = all[k[0]];
        Vec<u32> cpus = class_cpus(all, k);
        StrBuf where;
        put_cpu_list(where, cpus);
        if (!c0.status.ok()) {
            out.error(Error::make(c0.status.error().code, "%s: %s", where.c_str(), c0.status.error().msg));
            status = kExitFailure;
            continue;
        }
        // Names resolve through this CPU's event file (P- and E-cores differ).
        events.clear();
        CpuDecoded id;
        Status rs = collect_cpu_identity(hw, c0.cpu, &id);
        if (rs.ok()) rs = tables.resolve_list(StrView(spec), id.id, &events, event_dialect_for(id.id, id.pmu));
        if (!rs.ok()) {
            out.error(Error::make(rs.error().code, "%s: %s", where.c_str(), rs.error().msg));
            int st = exit_status_for(rs.error().code);
            if (status == kExitOk || st == kExitFailure) status = st;
            continue;
        }
        Allocation a;
        Status s = pmu_allocate(c0.info, events.data(), events.size(), &a);
        if (!s.ok()) {
            out.error(Error::make(s.error().code, "%s: %s", where.c_str(), s.error().msg));
            int st = exit_status_for(s.error().code);
            if (status == kExitOk || st == kExitFailure) status = st;
            continue;
        }
        for (u32 idx : k) {
            const CpuPmu& c = all[idx];
            StrBuf line;
            JsonWriter w(line);
            w.begin_object().field("type", "allocation").field_u("cpu", c.cpu).field_u("apic_id", c.apic_id);
            w.field("pmu", pmu_kind_name(c.info.kind));
            w.field("counter_method", counter_method_name(c.info.method));
            write_allocation_json(w, events.data(), events.size(), a);
            w.end_object();
            line.put('\n');
            out.record(line);
        }
        StrBuf b;
        b.printf("%s: %u event%s in %u run%s (", where.c_str(), unsigned(events.size()),
                 events.size() == 1 ? "" : "s", unsigned(a.groups.size()), a.groups.size() == 1 ? "" : "s");
        put_pmu_summary(b, c0.info);
        b.put(")\n");
        StrBuf r;
        render_allocation_text(r, events.data(), events.size(), a);
        // Indent the allocation lines.
        StrView v = r.view();
        usize pos = 0;
        while (pos < v.len) {
            usize nl = v.find('\n', pos);
            b.put(StrView("  "));
            b.put(v.sub(pos, nl - pos));
            b.put('\n');
            pos = nl + 1;
        }
        out.text_buf(b);
    }
    return status;
}

}  // namespace

int cmd_events(Out& out, Args& args) {
    CpuSelection sel;
    const char* spec = nullptr;
    while (!args.done()) {
        const char* v = nullptr;
        Status err;
        if (args.option("--cpu", &v, &err)) {
            if (!err.ok()) {
                out.error(err.error());
                return kExitUsage;
            }
            Result<CpuSelection> s = parse_cpu_selection(v);
            if (!s.ok()) {
                out.error(s.error());
                return kExitUsage;
            }
            sel = s.value();
        } else if (args.option("--check", &v, &err)) {
            if (!err.ok()) {
                out.error(err.error());
                return kExitUsage;
            }
            spec = v;
        } else {
            out.error_msg(Errc::invalid_argument, "events: %s '%s' (see 'pmulab help events')",
                          args.at_option() ? "unknown option" : "unexpected argument", args.peek());
            return kExitUsage;
        }
    }
    // A bad spec is reported before any CPU is touched (names are resolved per CPU).
    if (spec) {
        Status ps = check_event_list_syntax_any(StrView(spec));
        if (!ps.ok()) {
            out.error(ps.error());
            return kExitUsage;
        }
    }
    Vec<CpuPmu> all;
    Hw& hw = out.platform().hw();
    Status cs = collect(hw, sel, &all);
    if (!cs.ok()) {
        out.error(cs.error());
        return exit_status_for(cs.error().code);
    }
    // Event files: read once for this command, only where the platform has files.
    EventTables tables(out.platform().files());
    if (spec) return check(out, hw, tables, all, spec);
    StrBuf model_text;
    Vec<StrBuf> model_records;
    int ms = kExitOk;
    if (out.platform().files()) ms = model_events(out, hw, tables, all, &model_text, &model_records);
    int st = list(out, all, model_text);
    for (const StrBuf& r : model_records) out.record(r);
    return st != kExitOk ? st : ms;
}

}  // namespace pmulab
