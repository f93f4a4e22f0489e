// `pmulab run`'s options, declared once (app/options.h): the help text, the parser, the
// campaign check and `help --json` are made from kRunCommand.
#include "commands/measure_cmd.h"

namespace pmulab {

namespace {

RunOptions& R(void* t) { return *static_cast<RunOptions*>(t); }

// A repeated list option: the values so far and this one, joined by `sep`; the result
// lives in `buf` (owned by the RunOptions), so views into it stay valid.
Status accumulate(StrBuf* buf, const OptionHit& h, char sep) {
    if (!h.value[0]) return Error::make(Errc::invalid_argument, "%s needs a value", h.spec->name);
    if (buf->size()) buf->put(sep);
    buf->put(StrView(h.value));
    return ok_status();
}

// Splits a list option's value at ',' (and, for event lists, also at ';', the explicit
// separator that repeated --events are joined with); empty items are an error.
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

// --code HEX / --code-file PATH: a new code (a group: its --name follows it).
Status apply_code(RunOptions& o, const OptionHit& h, bool file) {
    for (usize i = 0; i < o.codes.size(); ++i)
        if ((o.body_files[i] != nullptr) != file)
            return Error::make(Errc::invalid_argument, "--code and --code-file cannot be combined");
    if (file && !h.value[0])
        return Error::make(Errc::invalid_argument, "--code-file needs a path, e.g. \\pmulab\\code\\chain.bin");
    UserCode& u = o.codes.emplace();
    o.body_files.push(file ? h.value : nullptr);
    o.has_user = true;
    if (!file) PMULAB_TRY(parse_code_hex("--code", h.value, &u.body));
    return ok_status();
}

// --init, --late-init, --one-time-init (block 1..3) and their -file forms: shared by
// every code.
Status apply_init(RunOptions& o, const OptionHit& h, unsigned block, bool file) {
    static const char* const kHex[4] = {"--code", "--init", "--late-init", "--one-time-init"};
    static const char* const kFile[4] = {"--code-file", "--init-file", "--late-init-file", "--one-time-init-file"};
    if (file ? !user_block(o.shared, block).empty() : o.code_file[block] != nullptr)
        return Error::make(Errc::invalid_argument, "%s and %s cannot be combined", kHex[block], kFile[block]);
    o.has_user = true;
    if (!file) return parse_code_hex(kHex[block], h.value, &user_block(o.shared, block));
    if (!h.value[0])
        return Error::make(Errc::invalid_argument, "%s needs a path, e.g. \\pmulab\\code\\chain.bin", kFile[block]);
    o.code_file[block] = h.value;
    return ok_status();
}

Status apply_name(RunOptions& o, const OptionHit& h) {
    if (!h.value[0] || str_len(h.value) >= sizeof o.shared.name)
        return Error::make(Errc::invalid_argument, "--name: a label of 1..%u characters",
                           unsigned(sizeof o.shared.name - 1));
    while (o.code_names.size() <= h.group) o.code_names.push(nullptr);
    o.code_names[h.group] = h.value;
    return ok_status();
}

Status apply_r14(RunOptions& o, const OptionHit& h) {
    if (h.num % 4096)
        return Error::make(Errc::invalid_argument, "--r14-size: %llu is not a multiple of 4K",
                           (unsigned long long)h.num);
    o.cfg.r14_size = h.num;
    return ok_status();
}

Status apply_r14_align(RunOptions& o, const OptionHit& h) {
    if (h.num & (h.num - 1))
        return Error::make(Errc::invalid_argument, "--r14-align: %llu is not a power of two",
                           (unsigned long long)h.num);
    o.cfg.r14_align = h.num;
    return ok_status();
}

Status apply_path(const char* opt, const char* example, const char* v, const char** dst) {
    if (!v[0]) return Error::make(Errc::invalid_argument, "%s needs a path, e.g. %s", opt, example);
    *dst = v;
    return ok_status();
}

#define RUN_SET(stmt) OPTION_SET(RunOptions, stmt)
#define RUN_DO(expr) [](void* t, const OptionHit& h) -> Status { return expr; }

// clang-format off
const OptionSpec kRunOptionTable[] = {
    {.name = "--code", .metavar = "HEX", .value = OptValue::hex, .flags = kOptGroupStart,
     .help = "the body, e.g. 4801d8 (add rax, rbx); --code-file P: raw bytes from\n"
             "the boot volume, e.g. \\pmulab\\code\\chain.bin", .host_asm = "--asm",
     .apply = RUN_DO(apply_code(R(t), h, false))},
    {.name = "--code-file", .metavar = "PATH", .value = OptValue::path, .flags = kOptGroupStart,
     .brief = "the body: raw bytes from a file on the boot volume", .apply = RUN_DO(apply_code(R(t), h, true))},
    {.name = "--init", .metavar = "HEX", .value = OptValue::hex,
     .help = "run before every run, not measured (--init-file P)", .host_asm = "--asm-init",
     .apply = RUN_DO(apply_init(R(t), h, 1, false))},
    {.name = "--init-file", .metavar = "PATH", .value = OptValue::path, .brief = "--init from a file",
     .apply = RUN_DO(apply_init(R(t), h, 1, true))},
    {.name = "--late-init", .metavar = "HEX", .value = OptValue::hex,
     .help = "right before the copies, after the first read (--late-init-file P)", .host_asm = "--asm-late-init",
     .apply = RUN_DO(apply_init(R(t), h, 2, false))},
    {.name = "--late-init-file", .metavar = "PATH", .value = OptValue::path, .brief = "--late-init from a file",
     .apply = RUN_DO(apply_init(R(t), h, 2, true))},
    {.name = "--one-time-init", .metavar = "H", .value = OptValue::hex,
     .help = "once per CPU before the first run (--one-time-init-file P)", .host_asm = "--asm-one-time-init",
     .apply = RUN_DO(apply_init(R(t), h, 3, false))},
    {.name = "--one-time-init-file", .metavar = "PATH", .value = OptValue::path,
     .brief = "--one-time-init from a file", .apply = RUN_DO(apply_init(R(t), h, 3, true))},
    {.name = "--name", .metavar = "LABEL", .value = OptValue::string, .flags = kOptInGroup,
     .help = "the code's name in the records (default 'code')", .apply = RUN_DO(apply_name(R(t), h))},
    {.name = "--r14-size", .metavar = "BYTES", .value = OptValue::size, .min = 4096, .max = kR14Max,
     .help = "R14's scratch area (default 1M; up to the largest free region of\n"
             "the memory map, physically contiguous; docs/cache.md)", .apply = RUN_DO(apply_r14(R(t), h))},
    {.name = "--r14-align", .metavar = "BYTES", .value = OptValue::size, .min = 4096, .max = kR14AlignMax,
     .help = "R14's area starts at a multiple of BYTES (a power of two, 4K..1G;\n"
             "default 4K)", .apply = RUN_DO(apply_r14_align(R(t), h))},
    {.name = "--align-offset", .metavar = "N", .value = OptValue::count, .min = 0, .max = 63,
     .help = "first copy at N bytes past a 64-byte boundary (0..63)",
     .apply = RUN_SET(o.cfg.align_offset = u32(h.num))},
    {.name = "--code-offset", .metavar = "BYTES", .value = OptValue::count, .min = 0, .max = 4095,
     .help = "the generated code's first byte BYTES past a 4 KiB boundary (0..4095;\n"
             "nanoBench's codeOffset: its lines away from the sets measured)",
     .apply = RUN_SET(o.cfg.code_offset = u32(h.num))},
    {.name = "--initial-warmup", .metavar = "N", .value = OptValue::count, .min = 0, .max = kWarmupMax,
     .help = "runs before everything else, discarded (default 0)", .apply = RUN_SET(o.cfg.initial_warmup = u32(h.num))},
    {.name = "--drain-frontend", .help = "128 15-byte NOPs after late-init (nanoBench -df)",
     .apply = RUN_SET(o.cfg.drain_frontend = true)},
    {.name = "--no-mem", .help = "counter values stay in R8.. between the reads (nanoBench -no_mem):\n"
             "the code must not change R8..R8+n-1 (n reads; R8 for tsc), and\n"
             "RAX-RDX do not reach the body from init (late-init may set them)", .apply = RUN_SET(o.cfg.no_mem = true)},
    {.name = "--timeout", .metavar = "S", .value = OptValue::count, .min = 1, .max = kTimeoutMax,
     .help = "seconds a job (one benchmark on one CPU) may take (default 10,\n"
             "1..86400): then pmulab's watchdog stops it (an NMI from another CPU)",
     .apply = RUN_SET(o.cfg.timeout_s = u32(h.num))},
    {.name = "--bench", .metavar = "NAMES", .value = OptValue::list, .flags = kOptRepeatable,
     .help = "kernels, comma-separated, or 'all' (kernels this CPU cannot run,\n"
             "e.g. rdpmc without a PMU, are then skipped with a warning)", .section = 1,
     .apply = RUN_DO(accumulate(&R(t).bench_joined, h, ','))},
    {.name = "--events", .metavar = "SPECS", .value = OptValue::events, .flags = kOptRepeatable,
     .help = "what to count (default tsc): named, nanoBench (EE.UU.MOD...), perf\n"
             "(event=..,umask=..; rHHHH; cpu/.../) specs and tsc, ',' or ';' between\n"
             "them ('pmulab events' lists them). More events than counters are\n"
             "measured in successive runs of the benchmark (records: run, runs).\n"
             "Names resolve through each CPU's event file in \\pmulab\\events first\n"
             "(model-specific events, docs/events.md), then the architectural names", .section = 1,
     .apply = RUN_DO(accumulate(&R(t).events_joined, h, ';'))},
    {.name = "--sample", .metavar = "EVENT[:P]", .value = OptValue::string, .flags = kOptRepeatable,
     .help = "sample EVENT every P events (repeatable; P: the last ':' field when\n"
             "it is a number, default per event, docs/sampling.md): where in the\n"
             "code the event happens, {\"type\":\"samples\"} records", .section = 1,
     .apply = RUN_DO(accumulate(&R(t).samples_joined, h, ';'))},
    {.name = "--precise",
     .help = "sample the --sample events precisely: Intel PEBS records (the eventing\n"
             "instruction, data addresses, load latencies; docs/sampling.md)", .section = 1,
     .apply = RUN_SET(o.precise = true)},
    {.name = "--pebs-output", .metavar = "ds|pt", .value = OptValue::choice,
     .help = "where --precise's PEBS records go: ds (default) the DS area's buffer,\n"
             "pt the Intel PT trace pmulab programs (IA32_PERF_CAPABILITIES[16];\n"
             "docs/sampling.md \"PEBS output to Intel PT\")",
     .choices = "ds|pt", .section = 1, .apply = RUN_SET(o.pebs_pt = h.num == 1)},
    {.name = "--ibs-rand",
     .help = "with --sample ibs_fetch: IbsRandEn (random low 4 bits of each fetch\n"
             "period); ibs_op: the random IbsOpCurCnt[6:0] the hardware leaves at each\n"
             "sample starts the next period, as Linux does (docs/sampling.md)", .section = 1,
     .apply = RUN_SET(o.ibs.rand = true)},
    {.name = "--ibs-l3-miss-only",
     .help = "with --sample ibs_op/ibs_fetch: only ops (fetches) that missed L3\n"
             "(L3MissOnly; Zen 4 on: CPUID 8000_001BH EAX[11]; docs/sampling.md)", .section = 1,
     .apply = RUN_SET(o.ibs.l3_miss_only = true)},
    {.name = "--events-file", .metavar = "P", .value = OptValue::path,
     .help = "more events from file P on the boot volume, one spec per line, '#'\n"
             "comments (nanoBench configurations work as they are); after --events", .section = 1,
     .apply = RUN_DO(apply_path("--events-file", "\\pmulab\\my.cfg", h.value, &R(t).events_file))},
    {.name = "--cpu", .metavar = "N|all|bsp", .value = OptValue::cpu,
     .help = "where to measure (default bsp); 'all' measures each CPU in turn", .section = 1,
     .apply = apply_cpu_option<RunOptions, &RunOptions::cpu>},
    {.name = "--unroll", .metavar = "U", .value = OptValue::count, .min = 1, .max = kUnrollMax,
     .help = "copies of the body (default 100, 1..1000000)", .section = 1,
     .apply = RUN_SET((o.cfg.unroll = h.num, o.unroll_given = true))},
    {.name = "--loop", .metavar = "L", .value = OptValue::count, .min = 1, .max = kLoopMax,
     .help = "loop of L iterations around the copies (default 1: no loop)", .section = 1,
     .apply = RUN_SET((o.cfg.loop = h.num, o.loop_given = true))},
    {.name = "--reps", .metavar = "R", .value = OptValue::count, .min = 1, .max = kRepsMax,
     .help = "measured runs per version (default 11, 1..100000)", .section = 1,
     .apply = RUN_SET(o.cfg.reps = u32(h.num))},
    {.name = "--warmup", .metavar = "W", .value = OptValue::count, .min = 0, .max = kWarmupMax,
     .help = "discarded runs before them (default 3)", .section = 1, .apply = RUN_SET(o.cfg.warmup = u32(h.num))},
    {.name = "--agg", .metavar = "F", .value = OptValue::choice,
     .help = "aggregate reported as per_iteration (default median); min, median,\n"
             "avg, trimmed (mean of the middle 60%) and max are all in the records",
     .choices = "min|median|avg|trimmed|max", .section = 1, .apply = RUN_SET(parse_agg(StrView(h.value), &o.cfg.agg))},
    {.name = "--basic", .help = "versions with 0 and U copies instead of U and 2U", .section = 1,
     .apply = RUN_SET(o.cfg.basic = true)},
    {.name = "--irq", .metavar = "cli|lvt", .value = OptValue::choice,
     .help = "mask interrupts with CLI (default) or by masking the local APIC LVT\n"
             "entries and raising the task priority (also keeps LVT NMIs out)", .choices = "cli|lvt", .section = 1,
     .apply = RUN_SET(o.cfg.irq = h.num ? IrqMode::lvt : IrqMode::cli)},
    {.name = "--prefetchers", .metavar = "off|on", .value = OptValue::choice,
     .help = "off: the hardware data prefetchers off for each job and restored exactly\n"
             "after, where the CPU documents the control (docs/cache.md); on (default): as they are",
     .choices = "on|off", .section = 1, .apply = RUN_SET(o.cfg.prefetchers_off = h.num == 1)},
    {.name = "--serialize", .metavar = "M", .value = OptValue::choice,
     .help = "serialising instruction around the reads: lfence (default) or cpuid", .choices = "lfence|cpuid",
     .section = 1, .apply = RUN_SET(o.cfg.serialize = h.num ? SerializeMode::cpuid : SerializeMode::lfence)},
    {.name = "--size", .metavar = "BYTES", .value = OptValue::list, .flags = kOptRepeatable,
     .help = "buffer size of pointer_chase, store_stream, load_stream (default 4K;\n"
             "4K..256M, suffixes K/M/G; a list measures each size)", .section = 1,
     .apply = RUN_DO(accumulate(&R(t).sizes_joined, h, ','))},
    {.name = "--seed", .metavar = "N", .value = OptValue::count, .min = 1,
     .help = "seed of the pointer-chase permutation and branch_random (nonzero)", .section = 1,
     .apply = RUN_SET(o.cfg.seed = h.num)},
    {.name = "--decimals", .metavar = "D", .value = OptValue::count, .min = 0, .max = 9,
     .help = "at least D digits after the point (default 2, 0..9); small values get more", .section = 1,
     .apply = RUN_SET(o.decimals = unsigned(h.num))},
    {.name = "--raw", .help = "add each repetition's counts to the records", .section = 1,
     .apply = RUN_SET(o.raw = true)},
    {.name = "--lbr", .help = "read the last-branch records after every run: {\"type\":\"lbr\"} records\n"
             "and basic-block cycle timings of your code (docs/sampling.md)", .section = 1,
     .apply = RUN_SET(o.lbr = true)},
    {.name = "--cbox-lookups", .help = "the L3 slice of what the code accesses: each C-Box's lookups over the\n"
             "runs, {\"type\":\"cbox_lookups\"} records (Intel client uncore; docs/cache.md)", .section = 1,
     .apply = RUN_SET(o.cbox_lookups = true)},
    {.name = "--progress", .help = "progress lines (text) or {\"type\":\"progress\"} records (--json)", .section = 1,
     .apply = RUN_SET(o.progress = true)},
    {.name = "--topdown", .metavar = "[1|2]", .value = OptValue::level, .flags = kOptOptionalValue, .min = 1, .max = 2,
     .help = "TopDown level 1 (retiring, bad speculation, frontend, backend bound)\n"
             "or also level 2, per iteration and as fractions of the slots:\n"
             "IA32_PERF_METRICS where the core has it, Intel's formulas over GP\n"
             "events elsewhere (E cores: their own events, fixed counters 4-6;\n"
             "AMD Zen 4/5: dispatch slots) (docs/metrics.md)", .choices = "1", .section = 1,
     .apply = RUN_SET(o.topdown = unsigned(h.num))},
    {.name = "--metrics", .metavar = "NAMES", .value = OptValue::list,
     .help = "derived metrics or groups: IPC, CPI, branch_miss_rate, l2_miss_ratio,\n"
             "llc_miss_ratio, frequency (Hz), frequency_ratio, uops_per_instruction,\n"
             "TopdownL1, TopdownL2, ... (all of them: docs/metrics.md)", .section = 1,
     .apply = RUN_DO(apply_metrics(R(t), h.value))},
    {.name = "--cycle-by-cycle",
     .help = "the events of each core cycle of the code (nanoBench's cycle-by-cycle\n"
             "mode: a cycles counter overflows at cycle c and freezes every counter,\n"
             "one run set per cycle; Intel, AMD Zen 4+; --unroll defaults to 1;\n"
             "docs/sampling.md)", .section = 1,
     .apply = RUN_SET(o.cycle_by_cycle = true)},
    {.name = "--end-to-end", .help = "with --cycle-by-cycle: every cycle from counting's start, the harness\n"
             "included (nanoBench -end_to_end)", .section = 1, .apply = RUN_SET(o.end_to_end = true)},
    {.name = "--metrics-file", .metavar = "P", .value = OptValue::path,
     .help = "more metric definitions from P on the boot volume (docs/metrics.md)", .section = 1,
     .apply = RUN_DO(apply_path("--metrics-file", "\\pmulab\\my.mtr", h.value, &R(t).metrics_file))},
};
// clang-format on

#undef RUN_SET
#undef RUN_DO

}  // namespace

const CommandOptions kRunCommand = {
    .command = "run",
    .options = kRunOptionTable,
    .count = count_of(kRunOptionTable),
    .help =
        "usage: pmulab run --code HEX|--code-file PATH [--init HEX|--init-file PATH]\n"
        "                  [--late-init HEX|--late-init-file PATH] [--one-time-init HEX|--one-time-init-file PATH]\n"
        "                  [--name LABEL] [--code ... [--name LABEL] ...] [--r14-size BYTES] [options below]\n"
        "       pmulab run --bench NAME[,NAME...]|all [--events SPEC[,SPEC...]] [--events-file PATH]\n"
        "                  [--cpu N|all|bsp] [--unroll U] [--loop L] [--reps R] [--warmup W]\n"
        "                  [--agg min|median|avg|trimmed|max]\n"
        "                  [--basic] [--irq cli|lvt] [--serialize lfence|cpuid] [--size BYTES[,BYTES...]]\n"
        "                  [--seed N] [--decimals D] [--raw] [--progress] [--lbr] [--cbox-lookups]\n"
        "                  [--topdown [1|2]] [--metrics NAMES] [--metrics-file PATH]\n"
        "                  [--sample EVENT[:PERIOD] ...] [--precise] [--ibs-rand] [--ibs-l3-miss-only]\n"
        "                  [--align-offset N] [--initial-warmup N] [--drain-frontend] [--no-mem]\n"
        "                  [--timeout SECONDS] [--code-offset BYTES]\n"
        "\n"
        "Measures your machine code (x86-64 bytes in hex; docs/measure.md \"your own code\" has\n"
        "the register contract: R14, RDI, RSI, RBP point into the middle of scratch areas, RSP to\n"
        "a private stack, R15 is the loop counter with --loop > 1) or built-in kernels.\n"
        "Several --code (each with its --name after it) are measured one after the other.\n"
        "\x01"
        "Faults in the code (#UD, #DE, #GP, #PF, ...) are reported with the vector and where\n"
        "they happened, code that never ends after --timeout; the command goes on with the next CPU.\n"
        "\n"
        "Measures built-in kernels ('pmulab bench list') nanoBench-style: the kernel body is\n"
        "copied U and 2U times into generated code between serialised counter reads, run W\n"
        "times to warm up and R times measured with interrupts masked, and the result is\n"
        "    per iteration = (agg(2U copies) - agg(U copies)) / (U * L)\n"
        "so the cost of reading the counters cancels exactly.\n"
        "\n"
        "\x01"
        "With --json: one {\"type\":\"result\",...} record per benchmark x event x CPU\n"
        "(a sampled event: one {\"type\":\"samples\",...} record instead).\n",
    .group = "code",
};

namespace {

// Whether the events come only from --events-file (not the default tsc).
Status finish_events(RunOptions* o) {
    PMULAB_TRY(finish_samples(o));
    PMULAB_TRY(finish_precise(o));
    PMULAB_TRY(ibs_finish_controls(*o));  // --ibs-rand, --ibs-l3-miss-only (run_ibs.cpp)
    const char* events = o->events_joined.size() ? o->events_joined.c_str() : "tsc";
    o->events_arg = events;
    PMULAB_TRY(split_list("--events", events, &o->events, true));
    PMULAB_TRY(energy_split(o));                       // energy-pkg ...: RAPL, not the PMU (run_energy.cpp)
    if (o->events_file && !o->events_joined.size()) {  // the file's events only, not the default tsc
        o->events.clear();
        o->events_arg = nullptr;
    }
    return ok_status();
}

// User code: one bench per --code, named by its --name (default 'code', or 'code1',
// 'code2', ... for several); the init blocks are every code's.
Status finish_user(RunOptions* o) {
    if (o->bench_joined.size())
        return Error::make(Errc::invalid_argument, "run: --code and --bench cannot be combined");
    if (o->sizes_joined.size())
        return Error::make(Errc::invalid_argument, "--size is for the built-in kernels; user code has R14's "
                                                   "area (--r14-size)");
    if (o->codes.empty())
        return Error::make(Errc::invalid_argument, "run: the init blocks need a body: --code HEX or --code-file PATH");
    o->cfg.benches.clear();
    for (usize i = 0; i < o->codes.size(); ++i) {
        UserCode& u = o->codes[i];
        const char* name = i < o->code_names.size() ? o->code_names[i] : nullptr;
        if (name) str_copy(u.name, sizeof u.name, name);
        else if (o->codes.size() == 1) str_copy(u.name, sizeof u.name, "code");
        else format_to(u.name, sizeof u.name, "code%u", unsigned(i + 1));
        for (usize k = 0; k < i; ++k)
            if (str_eq(o->codes[k].name, u.name))
                return Error::make(Errc::invalid_argument, "--name: '%s' names two codes (each needs its own)", u.name);
        for (unsigned b = 1; b < 4; ++b) copy_block(user_block(o->shared, b), &user_block(u, b));
        o->cfg.benches.emplace().user = &u;
    }
    return finish_events(o);
}

// The --size list: each size once; the default 4K when none is given.
Status finish_sizes(RunOptions* o) {
    static const OptionSpec kSizeItem = {.name = "--size", .value = OptValue::size, .min = 1};
    o->sizes.clear();
    o->sizes_given = o->sizes_joined.size() != 0;
    if (!o->sizes_given) {
        o->sizes.push(kBufferDefault);
        return ok_status();
    }
    Vec<StrView> items;
    PMULAB_TRY(split_list("--size", o->sizes_joined.c_str(), &items));
    for (StrView it : items) {
        char buf[40];
        if (it.len >= sizeof buf)  // never truncate: '0000...4KJUNK' must not read as 4K
            return Error::make(Errc::invalid_argument, "--size: '%.*s' is not a size (e.g. 4K, 64K, 1M)", int(it.len),
                               it.ptr);
        format_to(buf, sizeof buf, "%.*s", int(it.len), it.ptr);
        u64 s = PMULAB_TRY(parse_option_number(kSizeItem, buf));
        for (u64 x : o->sizes)
            if (x == s) return Error::make(Errc::invalid_argument, "--size: %s is listed twice", buf);
        o->sizes.push(s);
    }
    return ok_status();
}

// The --bench list: kernel names (each once) or 'all'.
Status pick_kernels(const RunOptions& o, Vec<const KernelInfo*>* kernels, bool* all) {
    StrBuf names;
    put_kernel_names(names);
    Vec<StrView> items;
    PMULAB_TRY(split_list("--bench", o.bench_joined.c_str(), &items));
    for (StrView it : items) {
        if (it.eq(StrView("all"))) {
            if (items.size() != 1)
                return Error::make(Errc::invalid_argument, "--bench: 'all' cannot be combined with other names");
            *all = true;
            for (const KernelInfo& k : kKernels) kernels->push(&k);
            return ok_status();
        }
        const KernelInfo* k = find_kernel(it);
        if (!k)
            return Error::make(Errc::invalid_argument, "--bench: unknown kernel '%.*s'; kernels: %s",
                               int(min_of<usize>(it.len, 24)), it.ptr, names.c_str());
        for (const KernelInfo* p : *kernels)
            if (p == k) return Error::make(Errc::invalid_argument, "--bench: '%s' is listed twice", k->name);
        kernels->push(k);
    }
    return ok_status();
}

// Built-in kernels: one bench per kernel, and per size for the buffer kernels.
Status finish_kernels(RunOptions* o) {
    if (!o->code_names.empty())
        return Error::make(Errc::invalid_argument, "--name labels user code (--code); kernels have names");
    if (o->cfg.no_mem)
        return Error::make(Errc::invalid_argument,
                           "--no-mem is for user code (--code): the built-in kernels use R8-R13 themselves");
    if (!o->bench_joined.size()) {
        StrBuf names;
        put_kernel_names(names);
        return Error::make(Errc::invalid_argument, "run: --code HEX or --bench NAME is required; kernels: %s",
                           names.c_str());
    }
    PMULAB_TRY(finish_sizes(o));
    Vec<const KernelInfo*> kernels;
    bool all = false, any_buffer = false;
    PMULAB_TRY(pick_kernels(*o, &kernels, &all));
    o->cfg.benches.clear();
    for (const KernelInfo* k : kernels) {
        bool buffer = k->buffer != KernelBuffer::none;
        any_buffer |= buffer;
        for (usize i = 0; i < (buffer ? o->sizes.size() : 1); ++i) {
            if (buffer) PMULAB_TRY(check_buffer_size(*k, o->sizes[i]));
            BenchInstance& b = o->cfg.benches.emplace();
            b.kernel = k;
            b.size = buffer ? o->sizes[i] : 0;
            b.optional = all;
        }
    }
    if (o->sizes_given && !any_buffer)
        return Error::make(Errc::invalid_argument,
                           "--size: none of the chosen kernels uses a buffer (pointer_chase, store_stream and "
                           "load_stream do)");
    return finish_events(o);  // planned by the command: unsupported events are exit status 3
}

}  // namespace

Status parse_run_options(Args& args, RunOptions* o) {
    ParsedOptions parsed;
    PMULAB_TRY(read_options(kRunCommand, args, o, &parsed));
    if (o->end_to_end && !o->cycle_by_cycle)
        return Error::make(Errc::invalid_argument, "--end-to-end is an option of --cycle-by-cycle");
    return o->has_user ? finish_user(o) : finish_kernels(o);
}

}  // namespace pmulab
