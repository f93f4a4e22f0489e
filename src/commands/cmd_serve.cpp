// `pmulab serve`: the agent a host drives over the serial port (docs/agent.md).
#include "app/serve_session.h"
#include "app/serve_tcp.h"
#include "commands/commands.h"

namespace pmulab {

namespace {

// How long a connected TCP host may stay silent before its connection is closed
// (serve --idle-timeout; docs/agent.md "Who may connect").
constexpr u64 kServeSilentDefaultS = 60;

struct ServeArgs {
    ServeOptions o;
    ServeTcpOptions t;
    int port = -1;  // --serial
    bool tcp = false, addr_given = false, nic_given = false;
    const char* token_file = nullptr;  // --token-file PATH
    const char* token = nullptr;       // --token VALUE
    u64 silent_s = kServeSilentDefaultS;
    bool silent_given = false;
};

ServeArgs& S(void* t) { return *static_cast<ServeArgs*>(t); }

Status apply_addr(ServeArgs& a, const char* v) {
    if (str_eq(v, "dhcp")) a.t.dhcp = true;
    else PMULAB_TRY(parse_ipv4_prefix("--addr", StrView(v), a.t.addr, &a.t.prefix));
    a.addr_given = true;
    return ok_status();
}

#define SERVE_SET(stmt) OPTION_SET(ServeArgs, stmt)

// clang-format off
const OptionSpec kServeOptionTable[] = {
    {.name = "--serial", .metavar = "N", .value = OptValue::count, .min = 0, .max = 63,
     .help = "the EFI Serial I/O port to serve on (0-based, in the firmware's\n"
             "order); default: the last one (in QEMU the second -serial, the\n"
             "first being the firmware's console)", .apply = SERVE_SET(o.port = int(h.num))},
    {.name = "--tcp", .metavar = "PORT", .value = OptValue::count, .min = 1, .max = 65535,
     .help = "serve on TCP instead: listen on PORT through the firmware's\n"
             "TCP4 stack (EFI TCP4; in QEMU: run-qemu.sh --tcp PORT); when a\n"
             "host goes away, listen again for the next one",
     .apply = SERVE_SET((o.t.port = u16(h.num), o.tcp = true))},
    {.name = "--addr", .metavar = "A.B.C.D/N", .value = OptValue::address,
     .help = "the station address to listen on (default 10.0.2.15/24,\n"
             "QEMU's user-mode network); 'dhcp': ask a DHCP server (sets the\n"
             "firmware's stored IPv4 policy of the NIC to DHCP)",
     .apply = [](void* t, const OptionHit& h) { return apply_addr(S(t), h.value); }},
    {.name = "--nic", .metavar = "N", .value = OptValue::count, .min = 0, .max = 63,
     .help = "with --tcp: the Nth network interface that has TCP4 (0-based,\n"
             "in the firmware's order); default: the first",
     .apply = SERVE_SET((o.t.nic = int(h.num), o.nic_given = true))},
    {.name = "--once", .help = "with --tcp: stop serving when the first host goes away",
     .apply = SERVE_SET(o.t.once = true)},
    {.name = "--idle", .metavar = "SECONDS", .value = OptValue::count, .min = 1, .max = 7 * 24 * 3600,
     .help = "stop serving after this long without a request (with --tcp also\n"
             "without a host connected) (default: never)", .apply = SERVE_SET(o.o.idle_ms = h.num * 1000)},
    {.name = "--token-file", .metavar = "PATH", .value = OptValue::path,
     .help = "a file on the boot volume holding the pre-shared token that every\n"
             "request must carry (16-128 printable characters; never printed)",
     .apply = SERVE_SET(o.token_file = h.value)},
    {.name = "--token", .metavar = "TOKEN", .value = OptValue::string,
     .help = "the pre-shared token itself (a campaign line; prefer --token-file)",
     .apply = SERVE_SET(o.token = h.value)},
    {.name = "--idle-timeout", .metavar = "SECONDS", .value = OptValue::count, .min = 0, .max = 24 * 3600,
     .help = "with --tcp: close a host's connection after this long without a\n"
             "byte from it while no request runs, so the next host gets its\n"
             "turn (default 60; 0: never)",
     .apply = SERVE_SET((o.silent_s = h.num, o.silent_given = true))},
    {.name = "--unsafe", .help = "let requests use 'msr write --unsafe' (refused otherwise)",
     .apply = SERVE_SET(o.o.unsafe = true)},
    {.name = "--results", .help = "write results files for every request, as on the command line\n"
             "(default: none; the records go to the host)", .apply = SERVE_SET(o.o.results = true)},
};
// clang-format on

}  // namespace

const CommandOptions kServeCommand = {
    .command = "serve",
    .options = kServeOptionTable,
    .count = count_of(kServeOptionTable),
    .help = "usage: pmulab serve [--serial N | --tcp PORT [--addr A.B.C.D/N|dhcp] [--nic N] [--once]\n"
            "                                      [--idle-timeout SECONDS]]\n"
            "                    [--token-file PATH | --token TOKEN] [--idle SECONDS]\n"
            "                    [--unsafe] [--results] [--shutdown]\n"
            "\n"
            "Answers requests from a host until it sends {\"id\":...,\"stop\":true}: one JSON object\n"
            "per line, {\"id\":7,\"cmd\":\"run --code-file b --events tsc\",\"blobs\":{\"b\":\"SAHY\"}},\n"
            "answered with the command's --json records tagged \"id\":7 and {\"type\":\"done\",\"id\":7,\n"
            "\"status\":N}. The wire format is in docs/agent.md; tools/pmulab-client is a client.\n"
            "\n"
            "\x01"
            "  --shutdown      power off when serving stops\n",
    .column = 16,
};

namespace {

int run_line(void*, Platform& p, int argc, const char* const* argv) {
    GlobalOptions g;
    // The session appended --json: the results files (serve --results) name the
    // request's own command line, as a campaign line's files name the line. The hello
    // says where the numbers come from; answers hold the command's records only.
    return app_run(p, argc, argv, &g, nullptr, argc > 0 ? argc - 1 : argc, false);
}

Status parse_serve_args(Args& args, ServeArgs* a) {
    ParsedOptions parsed;
    PMULAB_TRY(read_options(kServeCommand, args, a, &parsed));
    if (a->tcp && a->port >= 0)
        return Error::make(Errc::invalid_argument, "serve: give --serial N or --tcp PORT, not both");
    if (!a->tcp && (a->addr_given || a->nic_given || a->t.once || a->silent_given))
        return Error::make(Errc::invalid_argument, "serve: %s goes with --tcp PORT",
                           a->addr_given  ? "--addr"
                           : a->nic_given ? "--nic"
                           : a->t.once    ? "--once"
                                          : "--idle-timeout");
    if (a->token_file && a->token)
        return Error::make(Errc::invalid_argument, "serve: give --token-file PATH or --token TOKEN, not both");
    a->o.silent_ms = a->tcp ? a->silent_s * 1000 : 0;
    a->o.refusal_closes = a->tcp;
    return ok_status();
}

// The token of --token or --token-file into o->token (checked; a file's surrounding
// whitespace and line end dropped). Errors never show the token.
Status load_token(Platform& p, const ServeArgs& a, ServeOptions* o) {
    StrView t;
    Vec<char> data;
    const char* option = a.token ? "serve: --token" : "serve: --token-file";
    if (a.token) t = StrView(a.token);
    if (a.token_file) {
        if (!p.files()) return Error::make(Errc::not_found, "serve: --token-file: this platform has no boot volume");
        Result<Vec<char>> r = p.files()->read(a.token_file, 4096);
        if (!r.ok()) return Error::make(r.error().code, "serve: --token-file %s: %s", a.token_file, r.error().msg);
        data = move(r.value());
        t = StrView(data.data(), data.size()).trim();
    }
    if (!a.token && !a.token_file) return ok_status();
    PMULAB_TRY(check_serve_token(t, option));
    format_to(o->token, sizeof o->token, "%.*s", int(t.len), t.ptr);
    return ok_status();
}

}  // namespace

Status cmd_serve(Out& out, Args& args) {
    ServeArgs a;
    PMULAB_TRY(parse_serve_args(args, &a));
    ServeOptions& o = a.o;
    const bool tcp = a.tcp;
    Platform& p = out.platform();
    PMULAB_TRY(load_token(p, a, &o));
    Result<ServeLink*> opened = tcp ? p.open_tcp_link(a.t) : p.open_serve_link(a.port);
    if (!opened.ok()) return opened.error();
    ServeLink& link = *opened.value();
    if (link.notes()) out.text("pmulab serve: %s\n", link.notes());
    if (tcp) out.text("pmulab serve: listening on %s\n", link.describe());
    if (tcp && !o.token[0])
        out.text("pmulab serve: warning: no --token-file: anyone who reaches TCP port %u can run ring-0 code on "
                 "this machine (docs/agent.md, \"Who may connect\")\n",
                 unsigned(a.t.port));
    else if (o.token[0]) out.text("pmulab serve: requests must carry the pre-shared token\n");
    u64 answered = 0;
    for (;;) {
        Result<bool> host = link.accept(o.idle_ms);
        if (!host.ok()) return host.error();
        if (!host.value()) {
            out.text("pmulab serve: no host connected within --idle %llu s\n", (unsigned long long)(o.idle_ms / 1000));
            break;
        }
        out.text("pmulab serve: serving on %s (JSON Lines, docs/agent.md); send {\"id\":1,\"stop\":true} to stop\n",
                 link.describe());
        ServeStopReason why;
        {
            ServeSession session(p, link, o);
            (void)session.serve(run_line, nullptr);
            answered += session.answered();
            why = session.stop_reason();
        }
        link.hang_up();
        if (why == ServeStopReason::stop || why == ServeStopReason::idle) break;
        if (why == ServeStopReason::refused) {
            // (The session logged it.) A refused host is not "the host" of --once.
            out.text("pmulab serve: closed the connection of a host without the token; listening again\n");
            continue;
        }
        if (why == ServeStopReason::silent) {
            out.text("pmulab serve: the host sent nothing for %llu s (--idle-timeout); closed its connection\n",
                     (unsigned long long)(o.silent_ms / 1000));
            if (!link.reconnects()) break;
            out.text("pmulab serve: listening again\n");
            continue;
        }
        if (link.ended_by_host()) {  // a pipe's end of input (pmulab-sim ... -- serve)
            out.text("pmulab serve: the host closed the link\n");
            break;
        }
        // The link broke: on TCP the host went away (an orderly end); a serial line
        // that fails is an error.
        if (!tcp) return Error::make(Errc::io, "serve: the link to the host failed");
        if (!link.reconnects()) {
            out.text("pmulab serve: the host went away (--once)\n");
            break;
        }
        out.text("pmulab serve: the host went away; listening again\n");
    }
    out.text("pmulab serve: stopped after %llu requests\n", (unsigned long long)answered);
    return ok_status();
}

}  // namespace pmulab
