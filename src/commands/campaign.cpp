// check_campaign (commands.h): a campaign checked completely before anything runs,
// on the target (efi_main.cpp) and on the host (pmulab-check, `make image`).
#include <stdarg.h>

#include "app/config.h"
#include "commands/commands.h"
#include "commands/measure_cmd.h"
#include "events/event_files.h"

namespace pmulab {

namespace {

void problem(CampaignCheck* out, const char* name, u32 line, const char* fmt, ...)
    __attribute__((format(printf, 4, 5)));
void problem(CampaignCheck* out, const char* name, u32 line, const char* fmt, ...) {
    CampaignProblem& p = out->problems.emplace();
    p.line = line;
    StrBuf b;
    if (line) b.printf("%s:%u: ", name, line);
    else b.printf("%s: ", name);
    va_list ap;
    va_start(ap, fmt);
    b.vprintf(fmt, ap);
    va_end(ap);
    str_copy(p.msg, sizeof p.msg, b.c_str());
}

// The option values of a line whose words are all known: their kinds, ranges and
// repetitions as the command's declaration says; `run`'s whole parser (it needs no CPU:
// counts, sizes, kernel names, hex code, --timeout ...), as the target would.
void check_values(const char* cmd, Vec<const char*>& rest, const char* name, u32 line, CampaignCheck* out) {
    Args args(int(rest.size()), rest.data());
    Status s = ok_status();
    if (str_eq(cmd, "run")) {
        RunOptions o;
        s = parse_run_options(args, &o);
    } else {
        ParsedOptions parsed;
        s = parse_options(*command_options(cmd), args, &parsed);
    }
    if (s.ok()) return;
    const char* msg = s.error().msg;
    if (StrView(msg).starts_with(cmd) && msg[str_len(cmd)] == ':') problem(out, name, line, "%s", msg);
    else problem(out, name, line, "%s: %s", cmd, msg);
}

// One command line's words: the command, its options against its declaration, --events lists.
void check_line(const ConfigLine& cl, const char* name, CampaignCheck* out) {
    usize problems_before = out->problems.size();
    const char* cmd = nullptr;
    bool dashdash = false;
    Vec<const char*> rest;  // the command's own words, as app_run passes them to it
    usize n = cl.args.argv.size();
    for (usize i = 0; i < n; ++i) {
        const char* w = cl.args.argv[i];
        if (!dashdash && str_eq(w, "--")) {
            dashdash = true;
            continue;
        }
        if (!dashdash && is_global_option(w)) continue;
        if (!cmd) {
            cmd = w;
            if (!command_options(cmd)) {
                problem(out, name, cl.line_no, "unknown command '%s' (try 'pmulab help')", cmd);
                return;
            }
            ++out->commands;
            continue;
        }
        rest.push(w);
        StrView word(w);
        if (dashdash || !word.starts_with("--")) continue;
        usize eq = word.find('=');
        StrView opt = word.sub(0, eq);
        const OptionSpec* spec = find_option(*command_options(cmd), opt);
        if (!spec) {
            problem(out, name, cl.line_no, "%s: unknown option '%.*s' (see 'pmulab help %s')", cmd, int(opt.len),
                    opt.ptr, cmd);
            continue;
        }
        if (spec->value == OptValue::events) {
            const char* v = eq < word.len ? w + eq + 1 : (i + 1 < n ? cl.args.argv[i + 1] : nullptr);
            if (!v) {
                problem(out, name, cl.line_no, "%s: %.*s needs a value", cmd, int(opt.len), opt.ptr);
                continue;
            }
            Status s = check_event_list_syntax_any(StrView(v));
            if (!s.ok()) problem(out, name, cl.line_no, "%s %.*s: %s", cmd, int(opt.len), opt.ptr, s.error().msg);
        }
    }
    if (!cmd) ++out->commands;  // global options only but not a directive (e.g. "--json"): runs `info`
    if (cmd && out->problems.size() == problems_before) check_values(cmd, rest, name, cl.line_no, out);
}

// Any "--shutdown" word, even in a file that is not text or a line that does not split.
bool mentions_shutdown(StrView text) {
    StrView key("--shutdown");
    for (usize i = 0; i + key.len <= text.len; ++i) {
        if (!text.sub(i, key.len).eq(key)) continue;
        bool start = i == 0 || text[i - 1] == ' ' || text[i - 1] == '\t' || text[i - 1] == '\n';
        char after = i + key.len < text.len ? text[i + key.len] : '\n';
        bool end = after == ' ' || after == '\t' || after == '\n' || after == '\r' || after == '#';
        if (start && end) return true;
    }
    return false;
}

}  // namespace

void check_campaign(StrView text, const char* name, CampaignCheck* out) {
    out->problems.clear();
    out->commands = 0;
    out->shutdown = mentions_shutdown(text);
    Vec<ConfigLine> lines;
    Status ps = parse_config(text, name, &lines);
    if (!ps.ok()) {
        CampaignProblem& p = out->problems.emplace();
        str_copy(p.msg, sizeof p.msg, ps.error().msg);
        return;
    }
    for (const ConfigLine& cl : lines) {
        if (cl.bad) {
            problem(out, name, cl.line_no, "%s", cl.error);
            continue;
        }
        bool directive = true;
        for (char* w : cl.args.argv) directive &= str_eq(w, "--shutdown");
        if (directive) continue;
        check_line(cl, name, out);
    }
    if (out->problems.empty() && out->commands == 0)
        problem(out, name, 0,
                "no commands: a campaign holds one pmulab command per line ('info', "
                "'run --bench ...'), and '--shutdown' to power off when done");
}

}  // namespace pmulab
