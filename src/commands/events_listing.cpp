// `pmulab events` without --check: what each CPU can count (events_listing.h).
#include "commands/events_listing.h"

#include "base/json.h"
#include "commands/commands.h"
#include "events/event_syntax.h"
#include "pmu/session.h"

namespace pmulab::events_cmd {

namespace {

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

// One listed event on one PMU.
struct EventLine {
    char name[Event::kNameMax] = {};
    char alias[96] = {};    // AMD: the other names of the same event, ", "-separated
    const char* kind = "";  // "fixed", "architectural", "tsc"; AMD "fixed", "named"; "netburst"
    char code[8] = {};
    char description[96] = {};  // AMD and NetBurst only
    int nb_event = -1;          // NetBurst: netburst::EventId
    int arch_bit = -1;
    int fixed_counter = -1;
    bool available = false;
    const char* route = "none";
    char counter[40] = {};
    char reason[sizeof(Error::msg)] = {};
};

// Allocates e on its own: false, with the reason in out, when no counter can take it.
bool allocate_alone(const PmuInfo& info, const Event& e, Allocation* a, EventLine* out) {
    Status s = pmu_allocate(info, &e, 1, a);
    if (!s.ok()) {
        str_copy(out->reason, sizeof out->reason, s.error().msg);
        return false;
    }
    out->available = true;
    return true;
}

void describe_event(const PmuInfo& info, const Row& row, const char* kind, EventLine* out) {
    *out = EventLine();
    str_copy(out->name, sizeof out->name, row.name);
    str_copy(out->alias, sizeof out->alias, row.alias);
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
    if (!allocate_alone(info, e, &a, out)) return;
    const Assignment* as = a.find(0);
    EventCounters ec = event_counters(e, info.caps);
    StrBuf ctr;
    if (as && as->kind == CounterKind::fixed) {
        out->route = "fixed";
        put_counter_name(ctr, as->kind, as->index, a.fixed_name);
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

// AMD and NetBurst: availability and counters of one parsed event of the CPU's dialect.
void describe_vendor_event(const PmuInfo& info, const Event& e, EventLine* out) {
    out->fixed_counter = e.kind == EventKind::fixed ? e.fixed_counter : -1;
    if (e.dialect == EventDialect::netburst)
        format_to(out->code, sizeof out->code, "%02X", unsigned(netburst::kEvents[e.netburst.event].event_select));
    else if (e.kind != EventKind::fixed || e.gp_equivalent)
        format_to(out->code, sizeof out->code, "%03X.%02X", unsigned(e.event_select), unsigned(e.umask));
    else str_copy(out->code, sizeof out->code, "-");  // APERF, MPERF: no event select
    Allocation a;
    if (!allocate_alone(info, e, &a, out)) return;
    const Assignment* as = a.find(0);
    StrBuf ctr;
    if (as && as->kind == CounterKind::fixed) {
        out->route = "fixed";
        ctr.put(regs::amd::fixed_like_name(as->index));
    } else if (e.dialect == EventDialect::netburst) {
        // Every counter fed by an ESCR of this model that can select the event.
        u32 m = 0;
        const netburst::EventDef& d = netburst::kEvents[e.netburst.event];
        for (u8 x : d.escr)
            if (x < netburst::kEscrCount && netburst::escr_exists(netburst::kEscrs[x], info.caps.netburst_model))
                m |= netburst::kEscrs[x].counters;
        out->route = "gp";
        regs::put_counter_set(ctr, m, "PMC");
    } else {
        u32 gp = info.gp_mask & e.allowed_gp;
        if (e.pinned_counter >= 0) gp &= u32(1) << e.pinned_counter;
        bool fallback = e.kind == EventKind::fixed;
        out->route = fallback ? "gp_fallback" : "gp";
        regs::put_counter_set(ctr, gp, "PMC");
        if (fallback)
            format_to(out->reason, sizeof out->reason, "%s is absent: counted on a general-purpose counter with %s",
                      regs::amd::fixed_like_name(unsigned(e.fixed_counter)), out->code);
    }
    str_copy(out->counter, sizeof out->counter, ctr.c_str());
}

void add_tsc_line(const PmuInfo& info, Vec<EventLine>* lines) {
    EventLine& l = lines->emplace();
    describe_event(info, Row{"tsc", ""}, "tsc", &l);
    str_copy(l.description, sizeof l.description, "time-stamp counter (RDTSC), no PMU counter");
}

// NetBurst: the events of x86/netburst_regs.h, each with the generic names that select it.
void list_netburst_events(const PmuInfo& info, Vec<EventLine>* lines) {
    for (unsigned i = 0; i < netburst::kEventCount; ++i) {
        const netburst::EventDef& d = netburst::kEvents[i];
        EventLine& l = lines->emplace();
        str_copy(l.name, sizeof l.name, d.name);
        l.kind = "netburst";
        l.nb_event = int(i);
        str_copy(l.description, sizeof l.description, d.title);
        StrBuf al;
        for (const netburst::AliasDef& a : netburst::kAliases)
            if (a.event == i) {
                if (al.size()) al.put(", ");
                al.put(a.name);
            }
        str_copy(l.alias, sizeof l.alias, al.c_str());
        Result<Event> pe = parse_event_spec(StrView(d.name), EventDialect::netburst);
        if (!pe.ok()) {  // cannot happen: the names of the table
            str_copy(l.reason, sizeof l.reason, pe.error().msg);
            continue;
        }
        describe_vendor_event(info, pe.value(), &l);
    }
    add_tsc_line(info, lines);
}

// AMD: the named events of the CPU's dialect (list_named_events), one line per distinct
// encoding; the other names of the same encoding are its aliases.
void list_amd_events(const PmuInfo& info, Vec<EventLine>* lines) {
    StrBuf text;
    list_named_events(text, info.dialect);
    Vec<Event> seen;
    StrView v = text.view();
    for (usize pos = 0; pos < v.len;) {
        usize nl = v.find('\n', pos);
        if (nl > v.len) nl = v.len;
        StrView line = v.sub(pos, nl - pos);
        pos = nl + 1;
        usize sp = line.find(' ');
        StrView name = line.sub(0, sp);
        if (name.empty() || name.eq("tsc")) continue;
        Result<Event> pe = parse_event_spec(name, info.dialect);
        if (!pe.ok()) continue;  // cannot happen: the names of the table
        const Event& e = pe.value();
        usize k = 0;
        for (; k < seen.size(); ++k) {
            const Event& o = seen[k];
            if (o.kind == e.kind && o.event_select == e.event_select && o.umask == e.umask &&
                o.fixed_counter == e.fixed_counter && o.gp_equivalent == e.gp_equivalent)
                break;
        }
        if (k < seen.size()) {  // another name of line k
            EventLine& l = (*lines)[k];
            StrBuf al;
            al.put(StrView(l.alias));
            if (al.size()) al.put(", ");
            al.put(name);
            str_copy(l.alias, sizeof l.alias, al.c_str());
            continue;
        }
        seen.push(e);
        EventLine& l = lines->emplace();
        str_copy(l.name, sizeof l.name, e.name);
        l.kind = e.kind == EventKind::fixed ? "fixed" : "named";
        // The description: after "; " (fixed-like lines) or after the code.
        StrView rest = line.sub(sp).trim();
        usize semi = rest.find(';');
        if (semi < rest.len) rest = rest.sub(semi + 1).trim();
        else rest = rest.sub(rest.find(' ')).trim();
        StrBuf desc;
        desc.put(rest);
        str_copy(l.description, sizeof l.description, desc.c_str());
        describe_vendor_event(info, e, &l);
    }
    add_tsc_line(info, lines);
}

void list_events(const PmuInfo& info, Vec<EventLine>* lines) {
    lines->clear();
    if (info.kind == PmuKind::amd) return list_amd_events(info, lines);
    if (info.kind == PmuKind::netburst) return list_netburst_events(info, lines);
    for (const Row& r : kFixedRows) describe_event(info, r, "fixed", &lines->emplace());
    // Fixed counters 4-6 (E cores whose CPUID.23H enumerates them): the TopDown categories.
    constexpr Row kFixedTopdownRows[] = {{"TOPDOWN_BAD_SPECULATION.ALL", ""},
                                         {"TOPDOWN_FE_BOUND.ALL", ""},
                                         {"TOPDOWN_RETIRING.ALL", ""}};
    for (unsigned i = 0; i < 3; ++i)
        if ((info.fixed_mask >> (4 + i)) & 1) describe_event(info, kFixedTopdownRows[i], "fixed", &lines->emplace());
    for (const Row& r : kArchRows) describe_event(info, r, "architectural", &lines->emplace());
    describe_event(info, Row{"tsc", ""}, "tsc", &lines->emplace());
}

// NetBurst: the event-mask bits (default first) and the ESCR/counter pairs of an event.
void put_netburst_masks(StrBuf& b, const netburst::EventDef& d) {
    for (unsigned k = 0; k < d.mask_count; ++k) b.printf("%s%s", k ? " " : "", d.masks[k].name);
    b.put(" (default ");
    bool first = true;
    for (unsigned k = 0; k < d.mask_count; ++k)
        if ((d.default_mask >> d.masks[k].bit) & 1) {
            b.printf("%s%s", first ? "" : "+", d.masks[k].name);
            first = false;
        }
    b.put(')');
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

void put_reads(StrBuf& b, const PmuInfo& p) {
    if (p.method == CounterMethod::rdpmc) b.put("  counter reads: RDPMC\n");
    else b.printf("  counter reads: RDMSR (%s)\n", p.method_note[0] ? p.method_note : "RDPMC is not used");
}

// NetBurst JSON: "masks" (the event-mask bits), "default_mask", and "escrs": the ESCRs of
// this model that can select the event with the counters each feeds.
void write_netburst_json(JsonWriter& j, const netburst::EventDef& d, const PmuInfo& info) {
    j.key("masks").begin_array();
    for (unsigned k = 0; k < d.mask_count; ++k) j.str(StrView(d.masks[k].name));
    j.end_array();
    j.field_hex("default_mask", d.default_mask);
    j.key("escrs").begin_array();
    for (u8 x : d.escr) {
        if (x >= netburst::kEscrCount || !netburst::escr_exists(netburst::kEscrs[x], info.caps.netburst_model))
            continue;
        const netburst::EscrDef& e = netburst::kEscrs[x];
        j.begin_object().field("escr", e.name).field_hex("msr", e.msr).key("counters").begin_array();
        for (unsigned i = 0; i < netburst::kCounters; ++i)
            if ((e.counters >> i) & 1) j.num(i);
        j.end_array().end_object();
    }
    j.end_array();
}

// The AVAILABLE cell of a listing row: "yes", "yes: note" or "no: reason".
void put_available(StrBuf& b, const EventLine& l) {
    if (!l.available) b.printf("no: %s", l.reason);
    else if (l.reason[0]) b.printf("yes: %s", l.reason);
    else b.put("yes");
}

// AMD and NetBurst text: EVENT, CODE (12-bit event select and unit mask; NetBurst: the
// ESCR event select), COUNTER, AVAILABLE, then indented lines with the description, the
// aliases and (NetBurst) the event-mask bits and ESCR/counter pairs.
void put_vendor_table(StrBuf& b, const PmuInfo& info, const Vec<EventLine>& lines) {
    b.put("\n  EVENT                     CODE    COUNTER          AVAILABLE\n");
    // The next column, at least one space after a long cell (de_no_dispatch_per_slot.*).
    auto column = [&b](usize col, usize width) {
        b.pad_to(col, width);
        if (b.view()[b.size() - 1] != ' ') b.put(' ');
    };
    for (const EventLine& l : lines) {
        usize col = b.size();
        b.printf("  %s", l.name);
        column(col, 28);
        b.put(l.code);
        column(col, 36);
        b.put(l.available ? l.counter : "-");
        column(col, 53);
        put_available(b, l);
        b.put('\n');
        if (l.description[0]) b.printf("      %s\n", l.description);
        if (l.alias[0]) b.printf("      also: %s\n", l.alias);
        if (l.nb_event < 0) continue;
        const netburst::EventDef& d = netburst::kEvents[l.nb_event];
        b.put("      event mask: ");
        put_netburst_masks(b, d);
        b.put('\n');
        for (u8 x : d.escr) {
            if (x >= netburst::kEscrCount || !netburst::escr_exists(netburst::kEscrs[x], info.caps.netburst_model))
                continue;
            const netburst::EscrDef& e = netburst::kEscrs[x];
            b.printf("      %s (0x%X) ->", e.name, e.msr);
            bool fc = true;
            for (unsigned i = 0; i < netburst::kCounters; ++i)
                if ((e.counters >> i) & 1) {
                    b.printf("%s %s (PMC%u)", fc ? "" : ",", netburst::kCounterDefs[i].name, i);
                    fc = false;
                }
            b.put('\n');
        }
    }
    b.put('\n');
}

}  // namespace

namespace {

// One event's record (`lines` of CPU c).
void write_event_record(Out& out, const CpuPmu& c, const EventLine& l) {
    Value el;
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
    if (c.info.kind == PmuKind::amd || c.info.kind == PmuKind::netburst) j.field("description", l.description);
    if (l.nb_event >= 0) write_netburst_json(j, netburst::kEvents[l.nb_event], c.info);
    j.end_object();
    out.record(el);
}

// Records, per CPU: its PMU, then each of its events.
void write_cpu_records(Out& out, const CpuPmu& c, Vec<EventLine>* lines) {
    if (!c.status.ok()) {
        out.error(c.status.error().with_context("CPU %u", c.cpu));
        out.fail(Errc::fault);  // a CPU that cannot be reached is a failure, whatever the cause
        return;
    }
    Value line;
    JsonWriter w(line);
    w.begin_object().field("type", "pmu");
    write_pmu_json(w, c);
    w.end_object();
    out.record(line);
    list_events(c.info, lines);
    for (const EventLine& l : *lines) write_event_record(out, c, l);
}

// The Intel table of events.
void put_intel_table(StrBuf& b, const Vec<EventLine>& lines) {
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
        put_available(b, l);
        // pad_to leaves trailing spaces only before text, never at the end
        b.put('\n');
    }
    b.put('\n');
}

// Text for one class of CPUs with the same PMU (k: indices into all).
void put_class(StrBuf& b, const Vec<CpuPmu>& all, const Vec<u32>& k, Vec<EventLine>* lines) {
    const CpuPmu& c = all[k[0]];
    if (!c.status.ok()) return;
    Vec<u32> cpus = class_cpus(all, k);
    put_cpu_list(b, cpus);
    b.put(": ");
    put_pmu_summary(b, c.info);
    b.put('\n');
    put_reads(b, c.info);
    if (c.info.kind == PmuKind::none) {
        b.put("  Only 'tsc' (the time-stamp counter, read with RDTSC) can be measured here.\n\n");
        return;
    }
    list_events(c.info, lines);
    if (c.info.kind == PmuKind::amd || c.info.kind == PmuKind::netburst) put_vendor_table(b, c.info, *lines);
    else put_intel_table(b, *lines);
}

// The syntax of each dialect listed (first-seen order; AMD's two share a text), or of
// the default dialect (Intel) when no CPU has counters.
void put_syntax_help(StrBuf& b, const Vec<CpuPmu>& all) {
    const char* shown[4] = {};
    usize n_shown = 0;
    for (const CpuPmu& c : all) {
        // A CPU without counters still has its vendor's dialect (the specs parse in it).
        if (!c.status.ok()) continue;
        const char* t = event_syntax_help(c.info.dialect);
        bool dup = false;
        for (usize i = 0; i < n_shown; ++i) dup |= shown[i] == t;
        if (!dup && n_shown < 4) shown[n_shown++] = t;
    }
    if (n_shown == 0) shown[n_shown++] = event_syntax_help(EventDialect::intel);
    for (usize i = 0; i < n_shown; ++i) b.put(shown[i]);
}

}  // namespace

void list(Out& out, const Vec<CpuPmu>& all, const StrBuf& model_text) {
    Vec<EventLine> lines;
    for (const CpuPmu& c : all) write_cpu_records(out, c, &lines);
    // Text: per class of CPUs with the same PMU.
    if (out.json()) return;
    Vec<Vec<u32>> cls = classes(all);
    StrBuf b;
    for (const Vec<u32>& k : cls) put_class(b, all, k, &lines);
    b.put(model_text.view());
    put_syntax_help(b, all);
    out.text_buf(b);
}

}  // namespace pmulab::events_cmd
