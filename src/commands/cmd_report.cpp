// `pmulab report`: one unattended run that a first real machine owes its user: the census
// (`info`), `selftest` and the exact-count checks (report_checks.cpp), every CPU, with one
// summary a person can read and send (docs/report.md). The commands run as they do alone;
// their text is also kept for the summary file, their records go to the report's
// results file (and to stdout with --json).
#include "app/provenance.h"
#include "base/version.h"
#include "commands/report.h"

namespace pmulab {

namespace {

struct ReportArgs {
    CpuSelection sel = all_cpus();
    const char* cpu_text = "all";
    static CpuSelection all_cpus() {
        CpuSelection s;
        s.all = true;
        s.bsp = false;
        return s;
    }
};

Status apply_report_cpu(void* target, const OptionHit& h) {
    ReportArgs* r = static_cast<ReportArgs*>(target);
    r->cpu_text = h.value;
    return set_cpu_option(&r->sel, h.value);
}

// clang-format off
const OptionSpec kReportOptionTable[] = {
    {.name = "--cpu", .metavar = "N|all|bsp", .value = OptValue::cpu,
     .brief = "the CPUs of the per-CPU checks (default all)", .apply = apply_report_cpu},
};
// clang-format on

// The console text of the report's commands, kept for the summary file and shown in text
// mode (in JSON mode only the records go to stdout; diagnostics go where they always go).
class ReportText final : public ForwardingPlatform {
public:
    ReportText(Platform& inner, bool show) : ForwardingPlatform(inner), show_(show) {}
    void write(StrView text) override {
        text_.put(text);
        if (show_) inner().write(text);
    }
    void write_diag(StrView text) override {
        text_.put(text);
        inner().write_diag(text);
    }
    const StrBuf& text() const { return text_; }

private:
    bool show_;
    StrBuf text_;
};

// Tallies of one part of the report (the check records' statuses).
struct Tally {
    u32 tests = 0, passed = 0, failed = 0, skipped = 0, unverified = 0;
};

// The report's records: to the command's Out (results file, --json stdout, --lava), the
// check records tallied by part.
class ReportRecords final : public RecordSink {
public:
    explicit ReportRecords(Out& out) : out_(out) {}
    bool begin(const char*, Out&) override { return true; }
    void end() override {}
    const char* last_path() const override { return ""; }
    void record(const Value& rec) override {
        out_.record(rec);
        const Value* type = rec.get("type");
        const Value* status = rec.get("status");
        if (type && type->text().eq("cpu")) ++cpus;
        if (!type || !type->text().eq("check") || !status || !part) return;
        ++part->tests;
        StrView s = status->text();
        if (s.eq("PASS")) ++part->passed;
        else if (s.eq("FAIL")) ++part->failed;
        else if (s.eq("SKIP")) ++part->skipped;
        else ++part->unverified;
    }
    Tally* part = nullptr;
    u32 cpus = 0;

private:
    Out& out_;
};

StrView meta_text(const Value& meta, const char* key) {
    const Value* v = meta.get(key);
    return v && !v->is_null() ? v->text() : StrView("unknown");
}

void put_header(Out& t, Platform& p) {
    Value meta = build_meta_record(p, "report");
    StrBuf b;
    b.printf("pmulab report (pmulab %s): census, selftest and exact counts of this machine's PMU\n", PMULAB_VERSION);
    b.put("machine: ").put(meta_text(meta, "brand")).put(" (").put(meta_text(meta, "cpu_vendor"));
    b.put(" family ").put(meta_text(meta, "family")).put(" model ").put(meta_text(meta, "model"));
    b.put(" stepping ").put(meta_text(meta, "stepping")).put(", microcode ").put(meta_text(meta, "microcode"));
    b.put(")\nfirmware: ").put(meta_text(meta, "firmware_vendor")).put(' ');
    b.put(meta_text(meta, "firmware_revision")).put("\nnumbers from: ");
    put_provenance(b, provenance(p), p.simulated());
    b.put("\ntime: ").put(meta_text(meta, "time")).put('\n');
    t.text_buf(b);
}

void put_tally(StrBuf& b, const char* what, const Tally& t) {
    b.printf("%s %u tests, %u failures, %u skipped", what, t.tests, t.failed, t.skipped);
    if (t.unverified) b.printf(", %u not verified", t.unverified);
}

void tally_json(JsonWriter& w, const char* key, const Tally& t) {
    w.key(key).begin_object().field_u("tests", t.tests).field_u("passed", t.passed);
    w.field_u("failed", t.failed).field_u("skipped", t.skipped).field_u("not_verified", t.unverified);
    w.end_object();
}

// The verdict: FAIL when anything failed (a check, a command's error), else SKIP when no
// exact count could be checked here (no PMU: QEMU TCG), else PASS.
const char* verdict(const Outcome& o, const Tally& exact) {
    if (o.worst() != Errc::ok) return "FAIL";
    return exact.passed == 0 ? "SKIP" : "PASS";
}

}  // namespace

const CommandOptions kReportCommand = {
    .command = "report",
    .options = kReportOptionTable,
    .count = 1,
    .help = "usage: pmulab report [--cpu N|all|bsp]\n"
            "\n"
            "The first run on a new machine, unattended (docs/report.md): the census (info),\n"
            "selftest, and exact-count checks on every CPU (--cpu): instructions retired exactly\n"
            "the kernel's count on the fixed counter and a GP counter, branches exactly the body's,\n"
            "counts that scale exactly with the unroll, core cycles >= instructions / 16. Each\n"
            "check prints PASS, FAIL or SKIP (with the reason); the last line is the verdict.\n"
            "Results: one NNNN-report.jsonl/.csv and NNNN-report.summary.txt (this text) in\n"
            "\\pmulab\\results: send that folder.\n"
            "Exit status 0 PASS, 1 FAIL, 3 SKIP (no exact count could be checked: no PMU here).\n"
            "With --json: the records of info and selftest, {\"type\":\"check\",...} records and\n"
            "one {\"type\":\"report\",...}.\n",
};

Status cmd_report(Out& out, Args& args) {
    const ReportArgs a = PMULAB_TRY(read_options_as<ReportArgs>(kReportCommand, args));
    Platform& p = out.platform();
    Vec<u32> cpus;
    PMULAB_TRY(expand_cpu_selection(p.hw(), a.sel, &cpus));
    ReportText text(p, !out.json());
    ReportRecords recs(out);
    Out t(text, false);
    t.set_sink(&recs);
    put_header(t, p);
    Tally census, selftest, exact;
    t.text("\n== census (pmulab info) ==\n");
    recs.part = &census;
    Args no_args(0, nullptr);
    if (Status s = cmd_info(t, no_args); !s.ok()) t.error(s.error());
    t.text("\n== selftest (pmulab selftest --cpu %s) ==\n", a.cpu_text);
    recs.part = &selftest;
    const char* st_words[] = {"--cpu", a.cpu_text};
    Args st_args(2, st_words);
    if (Status s = cmd_selftest(t, st_args); !s.ok()) t.error(s.error());
    t.text("\n== exact counts (pmulab report) ==\n");
    recs.part = &exact;
    Checks ck(t);
    check_exact_counts(ck, p.hw(), p.measure(), cpus);
    ck.finish();
    recs.part = nullptr;

    const char* v = verdict(t.outcome(), exact);
    RecordSink* sink = p.record_sink();
    StrBuf summary_path;
    if (sink && sink->last_path()[0]) {
        StrView j(sink->last_path());
        summary_path.put(j.sub(0, j.len - 6)).put(".summary.txt");  // NNNN-report.jsonl
    }
    StrBuf b;
    b.printf("\nREPORT: %s (", v);
    b.printf("census %u CPU%s; ", recs.cpus, recs.cpus == 1 ? "" : "s");
    put_tally(b, "selftest", selftest);
    put_tally(b, "; exact counts", exact);
    b.put(")\n");
    if (str_eq(v, "SKIP")) b.put("No exact count could be checked here: the reasons are on the SKIP lines above.\n");
    if (summary_path.size())
        b.printf("This summary is %s, the records %s: send the folder with them (docs/report.md).\n",
                 summary_path.c_str(), sink->last_path());
    else if (p.simulated()) b.put("No results files were written (pmulab-sim writes them with --results DIR).\n");
    else b.put("No results files were written: the warning above says why; the summary is this text only.\n");
    t.text_buf(b);
    t.simulated_mark();

    Value rec;
    JsonWriter w(rec);
    w.begin_object().field("type", "report").field("verdict", v).field_u("cpus", recs.cpus);
    tally_json(w, "selftest", selftest);
    tally_json(w, "exact", exact);
    if (summary_path.size()) w.field("summary_file", summary_path.view());
    else w.key("summary_file").null();
    w.end_object();
    out.record(rec);
    if (summary_path.size()) (void)sink->write_text("summary.txt", text.text().view());
    out.fail(str_eq(v, "SKIP") ? Errc::unsupported : t.outcome().worst());
    return ok_status();
}

}  // namespace pmulab
