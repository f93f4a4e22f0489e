// `pmulab serve`: the agent a host drives over the serial port (docs/agent.md).
#include "app/serve_session.h"
#include "app/serve_tcp.h"
#include "commands/commands.h"

namespace pmulab {

const char kServeHelp[] =
    "usage: pmulab serve [--serial N | --tcp PORT [--addr A.B.C.D/N|dhcp] [--nic N] [--once]]\n"
    "                    [--idle SECONDS]\n"
    "                    [--unsafe] [--results] [--shutdown]\n"
    "\n"
    "Answers requests from a host until it sends {\"id\":...,\"stop\":true}: one JSON object\n"
    "per line, {\"id\":7,\"cmd\":\"run --code-file b --events tsc\",\"blobs\":{\"b\":\"SAHY\"}},\n"
    "answered with the command's --json records tagged \"id\":7 and {\"type\":\"done\",\"id\":7,\n"
    "\"status\":N}. The wire format is in docs/agent.md; tools/pmulab-client is a client.\n"
    "\n"
    "  --serial N      the EFI Serial I/O port to serve on (0-based, in the firmware's\n"
    "                  order); default: the last one (in QEMU the second -serial, the\n"
    "                  first being the firmware's console)\n"
    "  --tcp PORT      serve on TCP instead: listen on PORT through the firmware's\n"
    "                  TCP4 stack (EFI TCP4; in QEMU: run-qemu.sh --tcp PORT); when a\n"
    "                  host goes away, listen again for the next one\n"
    "  --addr A.B.C.D/N  the station address to listen on (default 10.0.2.15/24,\n"
    "                  QEMU's user-mode network); 'dhcp': ask a DHCP server (sets the\n"
    "                  firmware's stored IPv4 policy of the NIC to DHCP)\n"
    "  --nic N         with --tcp: the Nth network interface that has TCP4 (0-based,\n"
    "                  in the firmware's order); default: the first\n"
    "  --once          with --tcp: stop serving when the first host goes away\n"
    "  --idle SECONDS  stop serving after this long without a request (with --tcp also\n"
    "                  without a host connected) (default: never)\n"
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
    bool tcp = false, addr_given = false, nic_given = false;
    ServeTcpOptions t;
    while (!args.done()) {
        const char* v = nullptr;
        Status err = ok_status();
        if (args.option("--serial", &v, &err)) {
            if (!v) return err;
            u64 n = PMULAB_TRY(parse_uint_option("--serial", v, 0, 63));
            port = int(n);
        } else if (args.option("--tcp", &v, &err)) {
            if (!v) return err;
            t.port = u16(PMULAB_TRY(parse_uint_option("--tcp", v, 1, 65535)));
            tcp = true;
        } else if (args.option("--addr", &v, &err)) {
            if (!v) return err;
            if (str_eq(v, "dhcp")) t.dhcp = true;
            else PMULAB_TRY(parse_ipv4_prefix("--addr", StrView(v), t.addr, &t.prefix));
            addr_given = true;
        } else if (args.option("--nic", &v, &err)) {
            if (!v) return err;
            t.nic = int(PMULAB_TRY(parse_uint_option("--nic", v, 0, 63)));
            nic_given = true;
        } else if (args.flag("--once")) {
            t.once = true;
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
    if (tcp && port >= 0) return Error::make(Errc::invalid_argument, "serve: give --serial N or --tcp PORT, not both");
    if (!tcp && (addr_given || nic_given || t.once))
        return Error::make(Errc::invalid_argument, "serve: %s goes with --tcp PORT",
                           addr_given  ? "--addr"
                           : nic_given ? "--nic"
                                       : "--once");
    Platform& p = out.platform();
    Result<ServeLink*> opened = tcp ? p.open_tcp_link(t) : p.open_serve_link(port);
    if (!opened.ok()) return opened.error();
    ServeLink& link = *opened.value();
    if (link.notes()) out.text("pmulab serve: %s\n", link.notes());
    if (tcp) out.text("pmulab serve: listening on %s\n", link.describe());
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
        int st;
        {
            ServeSession session(p, link, o);
            st = session.serve(run_line, nullptr);
            answered += session.answered();
        }
        link.hang_up();
        if (st == kExitOk) break;  // stop, or --idle
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
