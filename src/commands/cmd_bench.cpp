// `pmulab bench list`: the built-in kernel catalogue.
#include "base/json.h"
#include "commands/measure_cmd.h"

namespace pmulab {

const CommandOptions kBenchCommand = {
    .command = "bench",
    .help = "usage: pmulab bench list [--json]\n"
            "\n"
            "Lists the built-in kernels that 'pmulab run --bench' measures, each with its exact\n"
            "instruction count per iteration (one copy of the body), the buffer it walks and its\n"
            "body. With --json: one {\"type\":\"kernel\",\"name\":...,\"instructions_per_iteration\":...}\n"
            "record per kernel.\n",
    .positionals = 2,  // list, and a word too many (reported below)
};

namespace {

const char* buffer_name(KernelBuffer b) {
    switch (b) {
        case KernelBuffer::chase: return "chase";
        case KernelBuffer::stream: return "stream";
        default: return "none";
    }
}

const char* needs_name(KernelNeeds n) {
    switch (n) {
        case KernelNeeds::rdmsr_tsc: return "rdmsr";
        case KernelNeeds::rdpmc0: return "rdpmc";
        default: return nullptr;
    }
}

}  // namespace

void kernel_json(const KernelInfo& k, Value* line) {
    JsonWriter w(*line);
    w.begin_object().field("type", "kernel").field("name", k.name);
    w.field_u("instructions_per_iteration", k.instructions);
    w.field("buffer", buffer_name(k.buffer));
    if (k.buffer != KernelBuffer::none) {
        w.field_u("default_size", kBufferDefault).field_u("min_size", kBufferMin).field_u("max_size", kBufferMax);
        w.field_b("size_power_of_two", k.buffer == KernelBuffer::stream);
    }
    if (const char* n = needs_name(k.needs)) w.field("needs", n);
    w.field("body", k.body).field("description", k.description);
    w.end_object();
}

Status cmd_bench(Out& out, Args& args) {
    ParsedOptions parsed;
    PMULAB_TRY(parse_options(kBenchCommand, args, &parsed));
    const Vec<const char*>& words = parsed.positionals;
    const char* op = words.empty() ? nullptr : words[0];
    if (!op || !str_eq(op, "list"))
        return Error::make(Errc::invalid_argument, "bench: expected 'list', got '%s' (see 'pmulab help bench')",
                           op ? op : "");
    if (words.size() > 1) return Error::make(Errc::invalid_argument, "bench list: unexpected argument '%s'", words[1]);
    StrBuf t;
    t.printf("%-14s %5s  %-6s  %s\n", "kernel", "insns", "buffer", "body / what it measures");
    for (const KernelInfo& k : kKernels) {
        Value line;
        kernel_json(k, &line);
        out.record(line);
        t.printf("%-14s %5u  %-6s  %s\n", k.name, k.instructions,
                 k.buffer == KernelBuffer::none ? "-" : buffer_name(k.buffer), k.body[0] ? k.body : "(nothing)");
        t.printf("%-14s %5s  %-6s    %s\n", "", "", "", k.description);
    }
    t.printf("\ninsns = instructions per iteration (one copy of the body), exact on every path.\n"
             "Buffers: --size 4K..256M (default 4K); stream sizes must be powers of two.\n");
    out.text_buf(t);
    return ok_status();
}

}  // namespace pmulab
