// `pmulab run`: measure built-in kernels with overhead cancellation.
#include "events/event_files.h"
#include "base/json.h"
#include "commands/measure_cmd.h"
#include "measure/pmu_plan.h"

namespace pmulab {

const char kRunHelp[] =
    "usage: pmulab run --code HEX|--code-file PATH [--init HEX|--init-file PATH]\n"
    "                  [--late-init HEX|--late-init-file PATH] [--one-time-init HEX|--one-time-init-file PATH]\n"
    "                  [--name LABEL] [--r14-size BYTES] [options below]\n"
    "       pmulab run --bench NAME[,NAME...]|all [--events SPEC[,SPEC...]] [--events-file PATH]\n"
    "                  [--cpu N|all|bsp] [--unroll U] [--loop L] [--reps R] [--warmup W]\n"
    "                  [--agg min|median|avg|trimmed|max]\n"
    "                  [--basic] [--irq cli|lvt] [--serialize lfence|cpuid] [--size BYTES[,BYTES...]]\n"
    "                  [--seed N] [--decimals D] [--raw] [--progress]\n"
    "                  [--topdown 1|2] [--metrics NAMES] [--metrics-file PATH]\n"
    "                  [--align-offset N] [--initial-warmup N] [--drain-frontend] [--no-mem]\n"
    "                  [--timeout SECONDS]\n"
    "\n"
    "Measures your machine code (x86-64 bytes in hex; docs/measure.md \"your own code\" has\n"
    "the register contract: R14, RDI, RSI, RBP point into the middle of scratch areas, RSP to\n"
    "a private stack, R15 is the loop counter with --loop > 1) or built-in kernels.\n"
    "  --code HEX        the body, e.g. 4801d8 (add rax, rbx); --code-file P: raw bytes from\n"
    "                    the boot volume, e.g. \\pmulab\\code\\chain.bin\n"
    "  --init HEX        run before every run, not measured (--init-file P)\n"
    "  --late-init HEX   right before the copies, after the first read (--late-init-file P)\n"
    "  --one-time-init H once per CPU before the first run (--one-time-init-file P)\n"
    "  --name LABEL      the code's name in the records (default 'code')\n"
    "  --r14-size BYTES  R14's scratch area (default 1M, 4K..1G, physically contiguous)\n"
    "  --align-offset N  first copy at N bytes past a 64-byte boundary (0..63)\n"
    "  --initial-warmup N  runs before everything else, discarded (default 0)\n"
    "  --drain-frontend  128 15-byte NOPs after late-init (nanoBench -df)\n"
    "  --no-mem          counter values stay in R8.. between the reads (nanoBench -no_mem):\n"
    "                    the code must not change R8..R8+n-1 (n reads; R8 for tsc), and\n"
    "                    RAX-RDX do not reach the body from init (late-init may set them)\n"
    "  --timeout S       seconds a job (one benchmark on one CPU) may take (default 10,\n"
    "                    1..86400): then pmulab's watchdog stops it (an NMI from another CPU)\n"
    "Faults in the code (#UD, #DE, #GP, #PF, ...) are reported with the vector and where\n"
    "they happened, code that never ends after --timeout; the command goes on with the next CPU.\n"
    "\n"
    "Measures built-in kernels ('pmulab bench list') nanoBench-style: the kernel body is\n"
    "copied U and 2U times into generated code between serialised counter reads, run W\n"
    "times to warm up and R times measured with interrupts masked, and the result is\n"
    "    per iteration = (agg(2U copies) - agg(U copies)) / (U * L)\n"
    "so the cost of reading the counters cancels exactly.\n"
    "\n"
    "  --bench NAMES     kernels, comma-separated, or 'all' (kernels this CPU cannot run,\n"
    "                    e.g. rdpmc without a PMU, are then skipped with a warning)\n"
    "  --events SPECS    what to count (default tsc): named, nanoBench (EE.UU.MOD...), perf\n"
    "                    (event=..,umask=..; rHHHH; cpu/.../) specs and tsc, ',' or ';' between\n"
    "                    them ('pmulab events' lists them). More events than counters are\n"
    "                    measured in successive runs of the benchmark (records: run, runs).\n"
    "                    Names resolve through each CPU's event file in \\pmulab\\events first\n"
    "                    (model-specific events, docs/events.md), then the architectural names\n"
    "  --events-file P   more events from file P on the boot volume, one spec per line, '#'\n"
    "                    comments (nanoBench configurations work as they are); after --events\n"
    "  --cpu N|all|bsp   where to measure (default bsp); 'all' measures each CPU in turn\n"
    "  --unroll U        copies of the body (default 100, 1..1000000)\n"
    "  --loop L          loop of L iterations around the copies (default 1: no loop)\n"
    "  --reps R          measured runs per version (default 11, 1..100000)\n"
    "  --warmup W        discarded runs before them (default 3)\n"
    "  --agg F           aggregate reported as per_iteration (default median); min, median,\n"
    "                    avg, trimmed (mean of the middle 60%) and max are all in the records\n"
    "  --basic           versions with 0 and U copies instead of U and 2U\n"
    "  --irq cli|lvt     mask interrupts with CLI (default) or by masking the local APIC LVT\n"
    "                    entries and raising the task priority (also keeps LVT NMIs out)\n"
    "  --serialize M     serialising instruction around the reads: lfence (default) or cpuid\n"
    "  --size BYTES      buffer size of pointer_chase, store_stream, load_stream (default 4K;\n"
    "                    4K..256M, suffixes K/M/G; a list measures each size)\n"
    "  --seed N          seed of the pointer-chase permutation and branch_random (nonzero)\n"
    "  --decimals D      at least D digits after the point (default 2, 0..9); small values get more\n"
    "  --raw             add each repetition's counts to the records\n"
    "  --progress        progress lines (text) or {\"type\":\"progress\"} records (--json)\n"
    "  --topdown 1|2     TopDown level 1 (retiring, bad speculation, frontend, backend bound)\n"
    "                    or also level 2, per iteration and as fractions of the slots:\n"
    "                    IA32_PERF_METRICS where the core has it, Intel's formulas over GP\n"
    "                    events elsewhere (E cores: their own events, fixed counters 4-6;\n"
    "                    AMD Zen 4/5: dispatch slots) (docs/metrics.md)\n"
    "  --metrics NAMES   derived metrics or groups: IPC, CPI, branch_miss_rate, l2_miss_ratio,\n"
    "                    llc_miss_ratio, frequency (Hz), frequency_ratio, uops_per_instruction,\n"
    "                    TopdownL1, TopdownL2, ... (all of them: docs/metrics.md)\n"
    "  --metrics-file P  more metric definitions from P on the boot volume (docs/metrics.md)"
    "\n"
    "With --json: one {\"type\":\"result\",...} record per benchmark x event x CPU.\n";

namespace {

bool looks_numeric(const char* v) {
    StrView s(v ? v : "");
    usize i = 0;
    bool hex = s.len > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
    if (hex) i = 2;
    usize digits = 0;
    for (; i < s.len; ++i) {
        char c = s[i];
        bool d = (c >= '0' && c <= '9') || (hex && ((c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')));
        if (!d) break;
        ++digits;
    }
    if (digits == 0) return false;
    if (i == s.len) return true;
    // One size suffix, as parse_u64 accepts it.
    char c = s[i];
    return i + 1 == s.len && (c == 'K' || c == 'k' || c == 'M' || c == 'm' || c == 'G' || c == 'g');
}

Result<u64> parse_num(const char* opt, const char* v, u64 min, u64 max, bool suffix = false) {
    u64 x = 0;
    if (v && parse_u64(StrView(v), &x, suffix)) {
        if (x < min || x > max)
            return Error::make(Errc::invalid_argument, "%s: %llu is out of range %llu..%llu", opt,
                               (unsigned long long)x, (unsigned long long)min, (unsigned long long)max);
        return x;
    }
    if (looks_numeric(v))
        return Error::make(Errc::invalid_argument, "%s: '%s' is too large (at most %llu)", opt, v,
                           (unsigned long long)max);
    return Error::make(Errc::invalid_argument, "%s: '%s' is not a number%s", opt, v ? v : "",
                       suffix ? " (suffixes K, M, G allowed)" : "");
}

// Splits "a,b,c" into views; empty elements are an error naming the option.
// Splits a list option's value at ',' (and, for event lists, also at ';', the explicit
// separator that repeated --events are joined with).
Status split_list(const char* opt, const char* v, Vec<StrView>* out, bool semicolons = false) {
    out->clear();
    StrView s(v);
    if (s.empty()) return Error::make(Errc::invalid_argument, "%s needs a value", opt);
    usize pos = 0;
    while (true) {
        usize c = s.find(',', pos);
        if (semicolons) c = min_of(c, s.find(';', pos));
        StrView item = s.sub(pos, c - pos).trim();
        if (item.empty()) return Error::make(Errc::invalid_argument, "%s: empty item in '%s'", opt, v);
        out->push(item);
        if (c >= s.len) break;
        pos = c + 1;
    }
    return ok_status();
}

}  // namespace

// A repeated list option: the values so far and this one, joined by `sep`; the result
// lives in `buf` (owned by the RunOptions), so views into it stay valid.
static const char* accumulate(StrBuf* buf, const char* v, char sep) {
    if (buf->size()) buf->put(sep);
    buf->put(StrView(v));
    return buf->c_str();
}

Status parse_run_options(Args& args, RunOptions* o) {
    const char* bench = nullptr;
    const char* events = "tsc";
    bool events_given = false;
    const char* sizes = nullptr;
    while (!args.done()) {
        const char* v = nullptr;
        Status err;
        auto num = [&](const char* opt, u64 min, u64 max, u64* dst, bool suffix = false) -> Status {
            Result<u64> r = parse_num(opt, v, min, max, suffix);
            if (!r.ok()) return r.error();
            *dst = r.value();
            return ok_status();
        };
        u64 tmp = 0;
        static const char* const kHexOpt[4] = {"--code", "--init", "--late-init", "--one-time-init"};
        static const char* const kFileOpt[4] = {"--code-file", "--init-file", "--late-init-file",
                                                "--one-time-init-file"};
        bool code_opt = false;
        for (unsigned i = 0; i < 4 && !code_opt; ++i) {
            if (args.option(kHexOpt[i], &v, &err)) {
                PMULAB_TRY(err);
                if (o->code_file[i])
                    return Error::make(Errc::invalid_argument, "%s and %s cannot be combined", kHexOpt[i], kFileOpt[i]);
                PMULAB_TRY(parse_code_hex(kHexOpt[i], v, &user_block(o->user, i)));
                code_opt = true;
            } else if (args.option(kFileOpt[i], &v, &err)) {
                PMULAB_TRY(err);
                if (!v[0])
                    return Error::make(Errc::invalid_argument, "%s needs a path, e.g. \\pmulab\\code\\chain.bin",
                                       kFileOpt[i]);
                if (!user_block(o->user, i).empty())
                    return Error::make(Errc::invalid_argument, "%s and %s cannot be combined", kHexOpt[i], kFileOpt[i]);
                o->code_file[i] = v;
                code_opt = true;
            }
            if (code_opt) o->has_user = true;
        }
        if (code_opt) {
        } else if (args.option("--name", &v, &err)) {
            PMULAB_TRY(err);
            if (!v[0] || str_len(v) >= sizeof o->user.name)
                return Error::make(Errc::invalid_argument, "--name: a label of 1..%u characters",
                                   unsigned(sizeof o->user.name - 1));
            str_copy(o->user.name, sizeof o->user.name, v);
        } else if (args.option("--r14-size", &v, &err)) {
            PMULAB_TRY(err);
            PMULAB_TRY(num("--r14-size", 4096, kR14Max, &o->cfg.r14_size, true));
            if (o->cfg.r14_size % 4096)
                return Error::make(Errc::invalid_argument, "--r14-size: %llu is not a multiple of 4K",
                                   (unsigned long long)o->cfg.r14_size);
        } else if (args.option("--align-offset", &v, &err)) {
            PMULAB_TRY(err);
            PMULAB_TRY(num("--align-offset", 0, 63, &tmp));
            o->cfg.align_offset = u32(tmp);
        } else if (args.option("--initial-warmup", &v, &err)) {
            PMULAB_TRY(err);
            PMULAB_TRY(num("--initial-warmup", 0, kWarmupMax, &tmp));
            o->cfg.initial_warmup = u32(tmp);
        } else if (args.flag("--drain-frontend")) {
            o->cfg.drain_frontend = true;
        } else if (args.flag("--no-mem")) {
            o->cfg.no_mem = true;
        } else if (args.option("--timeout", &v, &err)) {
            PMULAB_TRY(err);
            PMULAB_TRY(num("--timeout", 1, kTimeoutMax, &tmp));
            o->cfg.timeout_s = u32(tmp);
        } else if (args.option("--bench", &v, &err)) {
            PMULAB_TRY(err);
            bench = accumulate(&o->bench_joined, v, ',');
        } else if (args.option("--events", &v, &err)) {
            PMULAB_TRY(err);
            events = accumulate(&o->events_joined, v, ';');
            o->events_arg = events;
            events_given = true;
        } else if (args.option("--events-file", &v, &err)) {
            PMULAB_TRY(err);
            if (!v[0]) return Error::make(Errc::invalid_argument, "--events-file needs a path, e.g. \\pmulab\\my.cfg");
            o->events_file = v;
        } else if (take_cpu_option(args, &o->cpu, &err)) {
            PMULAB_TRY(err);
        } else if (args.option("--unroll", &v, &err)) {
            PMULAB_TRY(err);
            PMULAB_TRY(num("--unroll", 1, kUnrollMax, &o->cfg.unroll));
        } else if (args.option("--loop", &v, &err)) {
            PMULAB_TRY(err);
            PMULAB_TRY(num("--loop", 1, kLoopMax, &o->cfg.loop));
        } else if (args.option("--reps", &v, &err)) {
            PMULAB_TRY(err);
            PMULAB_TRY(num("--reps", 1, kRepsMax, &tmp));
            o->cfg.reps = u32(tmp);
        } else if (args.option("--warmup", &v, &err)) {
            PMULAB_TRY(err);
            PMULAB_TRY(num("--warmup", 0, kWarmupMax, &tmp));
            o->cfg.warmup = u32(tmp);
        } else if (args.option("--agg", &v, &err)) {
            PMULAB_TRY(err);
            if (!parse_agg(StrView(v), &o->cfg.agg))
                return Error::make(Errc::invalid_argument, "--agg: '%s' is not one of min, median, avg, trimmed, max",
                                   v);
        } else if (args.option("--irq", &v, &err)) {
            PMULAB_TRY(err);
            if (str_eq(v, "cli")) o->cfg.irq = IrqMode::cli;
            else if (str_eq(v, "lvt")) o->cfg.irq = IrqMode::lvt;
            else return Error::make(Errc::invalid_argument, "--irq: '%s' is not 'cli' or 'lvt'", v);
        } else if (args.option("--serialize", &v, &err)) {
            PMULAB_TRY(err);
            if (str_eq(v, "lfence")) o->cfg.serialize = SerializeMode::lfence;
            else if (str_eq(v, "cpuid")) o->cfg.serialize = SerializeMode::cpuid;
            else return Error::make(Errc::invalid_argument, "--serialize: '%s' is not 'lfence' or 'cpuid'", v);
        } else if (args.option("--size", &v, &err)) {
            PMULAB_TRY(err);
            sizes = accumulate(&o->sizes_joined, v, ',');
        } else if (args.option("--seed", &v, &err)) {
            PMULAB_TRY(err);
            PMULAB_TRY(num("--seed", 1, ~u64(0), &o->cfg.seed));
        } else if (args.option("--decimals", &v, &err)) {
            PMULAB_TRY(err);
            PMULAB_TRY(num("--decimals", 0, 9, &tmp));
            o->decimals = unsigned(tmp);
        } else if (args.flag("--basic")) {
            o->cfg.basic = true;
        } else if (args.flag("--raw")) {
            o->raw = true;
        } else if (args.flag("--progress")) {
            o->progress = true;
        } else if (take_metric_options(args, o, &err)) {
            PMULAB_TRY(err);
        } else if (args.at_option()) {
            return Error::make(Errc::invalid_argument, "run: unknown option '%s' (see 'pmulab help run')", args.peek());
        } else {
            return Error::make(Errc::invalid_argument, "run: unexpected argument '%s' (see 'pmulab help run')",
                               args.peek());
        }
    }

    StrBuf names;
    put_kernel_names(names);
    if (o->has_user) {
        if (bench) return Error::make(Errc::invalid_argument, "run: --code and --bench cannot be combined");
        if (sizes)
            return Error::make(Errc::invalid_argument, "--size is for the built-in kernels; user code has R14's "
                                                       "area (--r14-size)");
        if (o->user.body.empty() && !o->code_file[0])
            return Error::make(Errc::invalid_argument,
                               "run: the init blocks need a body: --code HEX or --code-file PATH");
        if (!o->user.name[0]) str_copy(o->user.name, sizeof o->user.name, "code");
        o->cfg.benches.clear();
        BenchInstance& b = o->cfg.benches.emplace();
        b.user = &o->user;
        PMULAB_TRY(split_list("--events", events, &o->events, true));
        if (o->events_file && !events_given) {
            o->events.clear();
            o->events_arg = nullptr;
        }
        return ok_status();
    }
    if (o->user.name[0])
        return Error::make(Errc::invalid_argument, "--name labels user code (--code); kernels have names");
    if (o->cfg.no_mem)
        return Error::make(Errc::invalid_argument,
                           "--no-mem is for user code (--code): the built-in kernels use R8-R13 themselves");
    if (!bench)
        return Error::make(Errc::invalid_argument, "run: --code HEX or --bench NAME is required; kernels: %s",
                           names.c_str());

    // --size list
    o->sizes.clear();
    o->sizes_given = sizes != nullptr;
    if (sizes) {
        Vec<StrView> items;
        PMULAB_TRY(split_list("--size", sizes, &items));
        for (StrView it : items) {
            char buf[40];
            if (it.len >= sizeof buf)  // never truncate: '0000...4KJUNK' must not read as 4K
                return Error::make(Errc::invalid_argument, "--size: '%.*s' is not a size (e.g. 4K, 64K, 1M)",
                                   int(it.len), it.ptr);
            format_to(buf, sizeof buf, "%.*s", int(it.len), it.ptr);
            Result<u64> r = parse_num("--size", buf, 1, ~u64(0), true);
            if (!r.ok()) return r.error();
            for (u64 s : o->sizes)
                if (s == r.value()) return Error::make(Errc::invalid_argument, "--size: %s is listed twice", buf);
            o->sizes.push(r.value());
        }
    } else {
        o->sizes.push(kBufferDefault);
    }

    // --bench list
    Vec<StrView> items;
    PMULAB_TRY(split_list("--bench", bench, &items));
    Vec<const KernelInfo*> kernels;
    bool all = false;
    for (StrView it : items) {
        if (it.eq(StrView("all"))) {
            if (items.size() != 1)
                return Error::make(Errc::invalid_argument, "--bench: 'all' cannot be combined with other names");
            all = true;
            for (const KernelInfo& k : kKernels) kernels.push(&k);
            break;
        }
        const KernelInfo* k = find_kernel(it);
        if (!k)
            return Error::make(Errc::invalid_argument, "--bench: unknown kernel '%.*s'; kernels: %s",
                               int(min_of<usize>(it.len, 24)), it.ptr, names.c_str());
        for (const KernelInfo* p : kernels)
            if (p == k) return Error::make(Errc::invalid_argument, "--bench: '%s' is listed twice", k->name);
        kernels.push(k);
    }
    o->cfg.benches.clear();
    bool any_buffer = false;
    for (const KernelInfo* k : kernels) {
        if (k->buffer == KernelBuffer::none) {
            BenchInstance& b = o->cfg.benches.emplace();
            b.kernel = k;
            b.optional = all;
            continue;
        }
        any_buffer = true;
        for (u64 s : o->sizes) {
            PMULAB_TRY(check_buffer_size(*k, s));
            BenchInstance& b = o->cfg.benches.emplace();
            b.kernel = k;
            b.size = s;
            b.optional = all;
        }
    }
    if (sizes && !any_buffer)
        return Error::make(Errc::invalid_argument,
                           "--size: none of the chosen kernels uses a buffer (pointer_chase, store_stream and "
                           "load_stream do)");

    // --events list (planned by the command: unsupported events are exit status 3).
    PMULAB_TRY(split_list("--events", events, &o->events, true));
    if (o->events_file && !events_given) {  // the file's events only, not the default tsc
        o->events.clear();
        o->events_arg = nullptr;
    }
    return ok_status();
}

namespace {

class RunSink final : public MeasureSink {
public:
    RunSink(Out& out, const RunOptions& o, MetricCollector* m = nullptr) : out_(out), o_(o), metrics_(m) {}
    void result(const MeasureConfig&, const MeasureResult& r) override {
        if (metrics_) metrics_->add(o_, r);
        Value line;
        result_json(o_, r, &line);
        out_.record(line);
        StrBuf row;
        result_table_row(o_, r, &row);
        out_.text_buf(row);
    }
    void failure(const Error& e) override { out_.error(e); }
    void skipped(const Error& e) override { out_.warn("%s (skipped)", e.msg); }
    void progress(u32 done, u32 total, const BenchInstance& b, u32 cpu, u32 run) override {
        bool big = b.size >= (u64(16) << 20);
        if (!o_.progress && !(big && !out_.json())) return;
        if (out_.json()) {
            // Progress is console chatter, not a result: straight to the console.
            Value line;
            JsonWriter w(line);
            w.begin_object().field("type", "progress").field_u("done", done).field_u("total", total);
            w.field("bench", bench_name(b));
            if (b.kernel && b.kernel->buffer != KernelBuffer::none) w.field_u("size", b.size);
            w.field_u("cpu", cpu).field_u("run", run).end_object();
            out_.platform().write_record(line);
        } else {
            StrBuf size;
            if (b.kernel && b.kernel->buffer != KernelBuffer::none) {
                size.put(StrView(" ("));
                put_size_suffix(size, b.size);
                size.put(')');
            }
            out_.text("pmulab: [%u/%u] measuring %s%s on CPU %u, run %u\n", done + 1, total, bench_name(b),
                      size.c_str(), cpu, run);
        }
    }

private:
    Out& out_;
    const RunOptions& o_;
    MetricCollector* metrics_;
};

}  // namespace

namespace {

bool needs_pmu(const RunOptions& o) {
    if (o.events_file || wants_metrics(o)) return true;  // file events: only known once it is read
    for (StrView s : o.events)
        if (!s.eq_nocase(StrView("tsc"))) return true;
    return false;
}

// --events with PMU events: planned per class of CPUs with the same PMU, each class
// measured with its own groups (runs).
Status run_with_pmu(Out& out, RunOptions& o, MeasurePlatform& mp) {
    Platform& p = out.platform();
    Vec<EventsForCpus> sets;
    PMULAB_TRY(resolve_run_events(out, o, &sets));
    PMULAB_TRY(check_metric_support(out, o, sets));
    Vec<Box<PmuPlan>> plans;
    Vec<TopdownMethod> methods;  // of each plan (run_metrics.cpp)
    for (EventsForCpus& set : sets) {
        Vec<Box<PmuPlan>> part;
        Status s = plan_pmu_runs(set.probed, set.events, PmuRunOptions(), &part);
        if (s.ok()) s = prepare_metric_plans(o, set, &part);
        for (Box<PmuPlan>& pl : part) plans.push(move(pl)), methods.push(set.topdown.method);
        if (!s.ok()) return s.error();
    }
    StrBuf head;
    for (const Box<PmuPlan>& pl : plans) {
        result_table_fit(o, pl->groups);
        head.put("pmulab run: ");
        put_cpu_list(head, pl->cpus);
        head.printf(": %u event%s in %u run%s per benchmark on ", unsigned(pl->events.size()),
                    pl->events.size() == 1 ? "" : "s", unsigned(pl->groups.size()), pl->groups.size() == 1 ? "" : "s");
        put_pmu_summary(head, pl->info);
        head.put('\n');
        StrBuf a;
        render_allocation_text(a, pl->events.data(), pl->events.size(), pl->alloc);
        StrView v = a.view();
        for (usize pos = 0; pos < v.len;) {
            usize nl = v.find('\n', pos);
            head.put(StrView("  "));
            head.put(v.sub(pos, nl - pos));
            head.put('\n');
            pos = nl + 1;
        }
    }
    result_table_header(o, &head);
    out.text_buf(head);
    MetricCollector metrics;
    RunSink sink(out, o, &metrics);
    for (usize k = 0; k < plans.size(); ++k) {
        PmuPlan* pl = plans[k].get();
        o.cfg.cpus.clear();
        for (u32 c : pl->cpus) o.cfg.cpus.push(c);
        // Failures were reported through the sink; the outcome also takes the engine's word.
        out.fail(measure_run(p.hw(), mp, o.cfg, pl->groups, sink));
        metrics.emit(out, o, methods[k]);
        for (const Box<PmuGroupState>& st : pl->state) {
            if (st->restore.gp_counters_inexact) {
                StrBuf c;
                regs::put_counter_set(c, st->restore.gp_counters_inexact, "PMC");
                out.warn("%s could not be restored exactly: without full-width writes only 32 bits (sign-extended) "
                         "can be written back",
                         c.c_str());
            }
            if (st->restore.status_bits_lost)
                out.warn("overflow flags 0x%llx of IA32_PERF_GLOBAL_STATUS were set before pmulab ran and cannot be "
                         "set again on this PMU version",
                         (unsigned long long)st->restore.status_bits_lost);
        }
    }
    return ok_status();
}

}  // namespace

Status cmd_run(Out& out, Args& args) {
    RunOptions o;
    PMULAB_TRY(parse_run_options(args, &o));
    o.tsc_hz = out.platform().tsc_frequency().hz;
    if (o.has_user) PMULAB_TRY(load_user_code(out, o));
    if (wants_metrics(o)) PMULAB_TRY(load_run_metrics(out, o));
    if (needs_pmu(o)) {
        MeasurePlatform* mp = out.platform().measure();
        if (!mp) return Error::make(Errc::unsupported, "run: this platform cannot execute generated code");
        PMULAB_TRY(expand_cpu_selection(out.platform().hw(), o.cpu, &o.cfg.cpus));
        return run_with_pmu(out, o, *mp);
    }
    Vec<ReadGroup> groups;
    PMULAB_TRY(plan_event_groups(o.events, &groups));
    Platform& p = out.platform();
    MeasurePlatform* mp = p.measure();
    if (!mp) return Error::make(Errc::unsupported, "run: this platform cannot execute generated code");
    PMULAB_TRY(expand_cpu_selection(p.hw(), o.cpu, &o.cfg.cpus));
    StrBuf head;
    result_table_fit(o, groups);
    result_table_header(o, &head);
    out.text_buf(head);
    RunSink sink(out, o);
    out.fail(measure_run(p.hw(), *mp, o.cfg, groups, sink));
    return ok_status();
}

}  // namespace pmulab
