// `pmulab serve`: the agent a host drives over the serial port (docs/agent.md).
#include "app/serve_session.h"
#include "commands/commands.h"

namespace pmulab {

const char kServeHelp[] =
    "usage: pmulab serve [--serial N] [--idle SECONDS] [--unsafe] [--results] [--shutdown]\n"
    "\n"
    "Answers requests from a host until it sends {\"id\":...,\"stop\":true}: one JSON object\n"
    "per line, {\"id\":7,\"cmd\":\"run --code-file b --events tsc\",\"blobs\":{\"b\":\"SAHY\"}},\n"
    "answered with the command's --json records tagged \"id\":7 and {\"type\":\"done\",\"id\":7,\n"
    "\"status\":N}. The wire format is in docs/agent.md; tools/pmulab-client is a client.\n"
    "\n"
    "  --serial N      the EFI Serial I/O port to serve on (0-based, in the firmware's\n"
    "                  order); default: the last one (in QEMU the second -serial, the\n"
    "                  first being the firmware's console)\n"
    "  --idle SECONDS  stop serving after this long without a request (default: never)\n"
    "  --unsafe        let requests use 'msr write --unsafe' (refused otherwise)\n"
    "  --results       write results files for every request, as on the command line\n"
    "                  (default: none; the records go to the host)\n"
    "  --shutdown      power off when serving stops\n";

namespace {

int run_line(void*, Platform& p, int argc, const char* const* argv) {
    GlobalOptions g;
    // The session appended --json: the results files (serve --results) name the
    // request's own command line, as a campaign line's files name the line.
    return app_run(p, argc, argv, &g, nullptr, argc > 0 ? argc - 1 : argc);
}

}  // namespace

Status cmd_serve(Out& out, Args& args) {
    ServeOptions o;
    int port = -1;
    while (!args.done()) {
        const char* v = nullptr;
        Status err = ok_status();
        if (args.option("--serial", &v, &err)) {
            if (!v) return err;
            u64 n = PMULAB_TRY(parse_uint_option("--serial", v, 0, 63));
            port = int(n);
        } else if (args.option("--idle", &v, &err)) {
            if (!v) return err;
            u64 n = PMULAB_TRY(parse_uint_option("--idle", v, 1, 7 * 24 * 3600));
            o.idle_ms = n * 1000;
        } else if (args.flag("--unsafe")) {
            o.unsafe = true;
        } else if (args.flag("--results")) {
            o.results = true;
        } else {
            return Error::make(Errc::invalid_argument, "serve: unknown option '%s' (see 'pmulab help serve')",
                               args.peek());
        }
    }
    Platform& p = out.platform();
    Result<ServeLink*> link = p.open_serve_link(port);
    if (!link.ok()) return link.error();
    out.text("pmulab serve: serving on %s (JSON Lines, docs/agent.md); send {\"id\":1,\"stop\":true} to stop\n",
             link.value()->describe());
    ServeSession session(p, *link.value(), o);
    int st = session.serve(run_line, nullptr);
    out.text("pmulab serve: stopped after %llu requests\n", (unsigned long long)session.answered());
    if (st != kExitOk) return Error::make(Errc::io, "serve: the link to the host failed");
    return ok_status();
}

}  // namespace pmulab
