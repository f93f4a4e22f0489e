// `pmulab serve --tcp`: the station-address parser, the options, and the serving loop
// over a scripted TCP-like link (hosts that connect, go away, and come back).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "app/serve_session.h"
#include "app/serve_tcp.h"
#include "commands/commands.h"
#include "sim/sim_cpu.h"
#include "support/test_platform.h"

using namespace pmulab;

namespace {

std::string addr_err(const char* text) {
    u8 a[4] = {};
    u8 n = 0;
    Status s = parse_ipv4_prefix("--addr", StrView(text), a, &n);
    if (s.ok()) return "OK";
    EXPECT_EQ(s.error().code, Errc::invalid_argument) << text;
    return s.error().msg;
}

}  // namespace

TEST(ServeTcp, StationAddress) {
    u8 a[4] = {};
    u8 n = 0;
    ASSERT_TRUE(parse_ipv4_prefix("--addr", "192.168.7.20/23", a, &n).ok());
    EXPECT_EQ(a[0], 192);
    EXPECT_EQ(a[1], 168);
    EXPECT_EQ(a[2], 7);
    EXPECT_EQ(a[3], 20);
    EXPECT_EQ(n, 23);
    ASSERT_TRUE(parse_ipv4_prefix("--addr", "10.0.2.15", a, &n).ok());
    EXPECT_EQ(n, 24);  // no /N: /24
    ASSERT_TRUE(parse_ipv4_prefix("--addr", "10.1.2.3/32", a, &n).ok());
    EXPECT_EQ(n, 32);

    EXPECT_EQ(addr_err("10.0.2"), "--addr: '10.0.2' is not an IPv4 address A.B.C.D or A.B.C.D/N (four numbers "
                                  "separated by dots)");
    EXPECT_EQ(addr_err("10.0.2.256"), "--addr: '10.0.2.256' is not an IPv4 address A.B.C.D or A.B.C.D/N (each "
                                      "number 0-255, without leading zeros)");
    EXPECT_EQ(addr_err("10.0.02.1"), "--addr: '10.0.02.1' is not an IPv4 address A.B.C.D or A.B.C.D/N (each "
                                     "number 0-255, without leading zeros)");
    EXPECT_EQ(addr_err("10.0.2.1/33"), "--addr: '10.0.2.1/33' is not an IPv4 address A.B.C.D or A.B.C.D/N (the "
                                       "prefix length N is 1-32)");
    EXPECT_EQ(addr_err("10.0.2.1/0"), "--addr: '10.0.2.1/0' is not an IPv4 address A.B.C.D or A.B.C.D/N (the "
                                      "prefix length N is 1-32)");
    EXPECT_EQ(addr_err("10.0.2.1/24x"), "--addr: '10.0.2.1/24x' is not an IPv4 address A.B.C.D or A.B.C.D/N (text "
                                        "after the prefix length)");
    EXPECT_EQ(addr_err("10.0.2.1:80"), "--addr: '10.0.2.1:80' is not an IPv4 address A.B.C.D or A.B.C.D/N (text "
                                       "after the address)");
    EXPECT_EQ(addr_err("127.0.0.1"), "--addr: '127.0.0.1' is not an IPv4 address A.B.C.D or A.B.C.D/N (not a "
                                     "unicast host address)");
    EXPECT_EQ(addr_err("224.0.0.5"), "--addr: '224.0.0.5' is not an IPv4 address A.B.C.D or A.B.C.D/N (not a "
                                     "unicast host address)");
    EXPECT_EQ(addr_err("0.1.2.3"), "--addr: '0.1.2.3' is not an IPv4 address A.B.C.D or A.B.C.D/N (not a unicast "
                                   "host address)");
    EXPECT_EQ(addr_err("10.0.2.0/24"), "--addr: '10.0.2.0/24' is not an IPv4 address A.B.C.D or A.B.C.D/N (the "
                                       "network's own or broadcast address, not a host's)");
    EXPECT_EQ(addr_err("10.0.2.255"), "--addr: '10.0.2.255' is not an IPv4 address A.B.C.D or A.B.C.D/N (the "
                                      "network's own or broadcast address, not a host's)");
    EXPECT_EQ(addr_err(""), "--addr: '' is not an IPv4 address A.B.C.D or A.B.C.D/N (each number 0-255, without "
                            "leading zeros)");
}

TEST(ServeTcp, Mask) {
    const std::pair<u8, std::vector<int>> cases[] = {
        {24, {255, 255, 255, 0}}, {23, {255, 255, 254, 0}}, {32, {255, 255, 255, 255}},
        {1, {128, 0, 0, 0}},      {8, {255, 0, 0, 0}},      {30, {255, 255, 255, 252}},
    };
    for (const auto& [prefix, want] : cases) {
        u8 m[4];
        ipv4_mask(prefix, m);
        EXPECT_EQ((std::vector<int>{m[0], m[1], m[2], m[3]}), want) << int(prefix);
    }
}

namespace {

// A TCP-like link: a list of hosts, each a list of chunks that arrive one per read();
// a host whose chunks are used up goes away (read fails) unless `stays`.
class HostsLink final : public ServeLink {
public:
    struct Host {
        std::vector<std::string> chunks;
        bool stays = false;
        std::string sent;
    };
    std::vector<Host> hosts;
    size_t cur = 0, next_chunk = 0;
    bool connected = false;
    int accepts = 0, hang_ups = 0;
    u64 clock = 0;
    u64 last_wait = ~u64(0);
    bool once = false;

    Result<bool> accept(u64 wait_ms) override {
        last_wait = wait_ms;
        if (connected) return true;
        if (cur >= hosts.size()) {
            clock += wait_ms;
            if (wait_ms) return false;
            return Error::make(Errc::io, "scripted: no more hosts");
        }
        ++accepts;
        connected = true;
        next_chunk = 0;
        return true;
    }
    void hang_up() override {
        if (!connected) return;
        ++hang_ups;
        connected = false;
        ++cur;
    }
    bool reconnects() const override { return !once; }
    Result<usize> read(char* buf, usize cap) override {
        ++clock;
        Host& h = hosts[cur];
        if (next_chunk >= h.chunks.size()) {
            if (h.stays) return usize(0);
            return Error::make(Errc::io, "the host closed the connection");
        }
        std::string& c = h.chunks[next_chunk];
        usize n = c.size() < cap ? c.size() : cap;
        memcpy(buf, c.data(), n);
        if (n == c.size()) ++next_chunk;
        else c.erase(0, n);
        return n;
    }
    void wait(u32 ms) override { clock += ms; }
    Status send(StrView b) override {
        hosts[cur].sent.append(b.ptr, b.len);
        return ok_status();
    }
    u64 now_ms() override { return clock; }
    const char* describe() override { return "TCP 10.0.2.15:5555 (scripted)"; }
};

class TcpPlatform final : public Platform {
public:
    sim::SimMachine m = sim::qemu_tcg(1);
    HostsLink link;
    std::string out;
    ServeTcpOptions opened;
    bool tcp_opened = false;
    Hw& hw() override { return m; }
    void write(StrView t) override { out.append(t.ptr, t.len); }
    Result<ServeLink*> open_tcp_link(const ServeTcpOptions& o) override {
        opened = o;
        tcp_opened = true;
        link.once = o.once;
        return static_cast<ServeLink*>(&link);
    }
};

int serve(TcpPlatform& p, std::vector<const char*> args) {
    args.insert(args.begin(), "serve");
    GlobalOptions g;
    return app_run(p, int(args.size()), args.data(), &g);
}

const char kVersion[] = "{\"id\":1,\"cmd\":\"version\"}\n";
const char kStop[] = "{\"id\":\"s\",\"stop\":true}\n";

}  // namespace

TEST(ServeTcp, HostGoesAwayThenTheNextOneIsServed) {
    TcpPlatform p;
    p.link.hosts = {{{kVersion}, false, ""}, {{kVersion, kStop}, false, ""}};
    EXPECT_EQ(serve(p, {"--tcp", "5555"}), kExitOk) << p.out;
    ASSERT_TRUE(p.tcp_opened);
    EXPECT_EQ(p.opened.port, 5555);
    EXPECT_EQ(p.opened.addr[0], 10);
    EXPECT_EQ(p.opened.addr[3], 15);
    EXPECT_EQ(p.opened.prefix, 24);
    EXPECT_EQ(p.link.accepts, 2);
    EXPECT_EQ(p.link.hang_ups, 2);
    EXPECT_EQ(p.link.last_wait, 0u);  // no --idle: wait for a host without limit
    // Each host gets its own hello and its answers.
    for (const HostsLink::Host& h : p.link.hosts) {
        std::vector<pmutest::Json> recs = pmutest::parse_json_lines(h.sent);
        ASSERT_GE(recs.size(), 3u) << h.sent;
        EXPECT_EQ(recs[0]["type"].s(), "hello");
        EXPECT_EQ(recs[0]["link"].s(), "TCP 10.0.2.15:5555 (scripted)");
        EXPECT_EQ(recs[1]["type"].s(), "version");
        EXPECT_EQ(recs[2]["type"].s(), "done");
        EXPECT_EQ(recs[2]["status"].u(), 0u);
    }
    EXPECT_NE(p.link.hosts[1].sent.find("{\"type\":\"bye\",\"id\":null,\"reason\":\"stop\"}\n"), std::string::npos);
    EXPECT_NE(p.out.find("pmulab serve: listening on TCP 10.0.2.15:5555 (scripted)\n"), std::string::npos) << p.out;
    EXPECT_NE(p.out.find("pmulab serve: the host went away; listening again\n"), std::string::npos) << p.out;
    EXPECT_NE(p.out.find("pmulab serve: stopped after 3 requests\n"), std::string::npos) << p.out;
}

TEST(ServeTcp, OnceStopsWhenTheHostGoesAway) {
    TcpPlatform p;
    p.link.hosts = {{{kVersion}, false, ""}, {{kStop}, false, ""}};
    EXPECT_EQ(serve(p, {"--tcp", "80", "--once", "--addr", "192.168.1.9/16"}), kExitOk) << p.out;
    EXPECT_TRUE(p.opened.once);
    EXPECT_EQ(p.opened.port, 80);
    EXPECT_EQ(p.opened.addr[0], 192);
    EXPECT_EQ(p.opened.addr[3], 9);
    EXPECT_EQ(p.opened.prefix, 16);
    EXPECT_EQ(p.link.accepts, 1);
    EXPECT_EQ(p.opened.nic, -1);
    EXPECT_EQ(p.link.hosts[1].sent, "");  // never served
    EXPECT_NE(p.out.find("pmulab serve: the host went away (--once)\n"), std::string::npos) << p.out;
    EXPECT_NE(p.out.find("pmulab serve: stopped after 1 requests\n"), std::string::npos) << p.out;
}

TEST(ServeTcp, AddrDhcp) {
    TcpPlatform p;
    p.link.hosts = {{{kStop}, false, ""}};
    EXPECT_EQ(serve(p, {"--tcp", "5555", "--addr", "dhcp"}), kExitOk) << p.out;
    EXPECT_TRUE(p.opened.dhcp);
    TcpPlatform q;
    q.link.hosts = {{{kStop}, false, ""}};
    EXPECT_EQ(serve(q, {"--tcp", "5555", "--addr", "10.0.2.15/24"}), kExitOk) << q.out;
    EXPECT_FALSE(q.opened.dhcp);
    TcpPlatform r;
    r.link.hosts = {{{kStop}, false, ""}};
    EXPECT_EQ(serve(r, {"--tcp", "5555", "--nic", "2"}), kExitOk) << r.out;
    EXPECT_EQ(r.opened.nic, 2);
}

TEST(ServeTcp, IdleWithoutAHost) {
    TcpPlatform p;
    p.link.hosts = {{{kVersion}, true, ""}};  // a host that sends one request, then nothing
    EXPECT_EQ(serve(p, {"--tcp", "5555", "--idle", "2"}), kExitOk) << p.out;
    EXPECT_EQ(p.link.last_wait, 2000u);
    EXPECT_NE(p.link.hosts[0].sent.find("{\"type\":\"bye\",\"id\":null,\"reason\":\"idle\"}\n"), std::string::npos);
    EXPECT_EQ(p.link.hang_ups, 1);

    TcpPlatform q;  // nobody ever connects
    EXPECT_EQ(serve(q, {"--tcp", "5555", "--idle", "3"}), kExitOk) << q.out;
    EXPECT_NE(q.out.find("pmulab serve: no host connected within --idle 3 s\n"), std::string::npos) << q.out;
    EXPECT_NE(q.out.find("pmulab serve: stopped after 0 requests\n"), std::string::npos) << q.out;
}

TEST(ServeTcp, OptionErrors) {
    struct Case {
        std::vector<const char*> args;
        const char* msg;
    } cases[] = {
        {{"--tcp", "0"}, "--tcp"},
        {{"--tcp", "65536"}, "--tcp"},
        {{"--tcp", "5555", "--serial", "1"}, "serve: give --serial N or --tcp PORT, not both"},
        {{"--addr", "10.0.2.15"}, "serve: --addr goes with --tcp PORT"},
        {{"--once"}, "serve: --once goes with --tcp PORT"},
        {{"--nic", "1"}, "serve: --nic goes with --tcp PORT"},
        {{"--tcp", "5555", "--nic", "64"}, "--nic"},
        {{"--tcp", "5555", "--addr", "10.0.2"}, "--addr: '10.0.2' is not an IPv4 address"},
        {{"--idle-timeout", "5"}, "serve: --idle-timeout goes with --tcp PORT"},
        {{"--tcp", "5555", "--token", "0123456789"},
         "serve: --token: the token has 10 characters; give 16 to 128 (e.g. `openssl rand -hex 16`)"},
        {{"--tcp", "5555", "--token", "0123456789 0123456789"}, "--token: character 11 of the token is not allowed"},
        {{"--tcp", "5555", "--token", "0123456789abcdefgh", "--token-file", "t"},
         "serve: give --token-file PATH or --token TOKEN, not both"},
    };
    for (const Case& c : cases) {
        TcpPlatform p;
        EXPECT_EQ(serve(p, c.args), kExitUsage) << c.msg;
        EXPECT_EQ(p.out.find("0123456789"), std::string::npos) << p.out;  // no token shown
        EXPECT_NE(p.out.find(c.msg), std::string::npos) << p.out;
        EXPECT_FALSE(p.tcp_opened) << c.msg;
    }
    // A platform without a TCP/IP stack says so: unsupported (3).
    sim::SimMachine m = sim::qemu_tcg(1);
    pmutest::TestPlatform tp(m);
    pmutest::RunResult r = pmutest::run(tp, {"serve", "--tcp", "5555"});
    EXPECT_EQ(r.status, kExitUnsupported);
    EXPECT_TRUE(r.has_line("pmulab: error: serve --tcp: this platform has no TCP/IP stack")) << r.out;
}

// ---- who may drive the agent: the token over TCP, and the silent host

namespace {

constexpr const char* kTok = "tcp-token-0123456789abcdef";
const std::string kTokVersion = std::string(R"({"id":5,"token":")") + kTok + R"(","cmd":"version"})" + "\n";
const std::string kTokStop = std::string(R"({"id":6,"token":")") + kTok + R"(","stop":true})" + "\n";

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST(ServeTcp, TokenRefusalClosesAndTheSilentHostIsHungUp) {
    TcpPlatform p;
    p.link.hosts = {
        {{R"({"id":1,"cmd":"version"})"
          "\n",
          kTokVersion},
         true,
         ""},            // no token: refused, closed; its second request never runs
        {{}, true, ""},  // connects and says nothing
        {{kTokVersion, kTokStop}, false, ""},
    };
    EXPECT_EQ(serve(p, {"--tcp", "5555", "--token", kTok, "--idle-timeout", "2"}), kExitOk) << p.out;
    EXPECT_EQ(p.link.accepts, 3);
    EXPECT_EQ(p.link.hang_ups, 3);
    const std::string& refused = p.link.hosts[0].sent;
    EXPECT_TRUE(has(refused, R"("token_required":true)")) << refused;
    EXPECT_TRUE(has(refused, R"({"type":"error","id":1,"code":"unauthorized","message":"request refused: no token;)"))
        << refused;
    EXPECT_TRUE(has(refused, "{\"type\":\"done\",\"id\":1,\"status\":1}\n{\"type\":\"bye\",\"id\":null,"
                             "\"reason\":\"unauthorized\"}\n"))
        << refused;
    EXPECT_FALSE(has(refused, R"("id":5)")) << refused;
    EXPECT_TRUE(has(p.link.hosts[1].sent, R"({"type":"bye","id":null,"reason":"idle-timeout"})"))
        << p.link.hosts[1].sent;
    EXPECT_TRUE(has(p.link.hosts[2].sent, R"({"type":"done","id":5,"status":0})")) << p.link.hosts[2].sent;
    EXPECT_TRUE(has(p.out, "pmulab serve: requests must carry the pre-shared token\n")) << p.out;
    EXPECT_TRUE(has(p.out, "pmulab serve: refused request 1 (no token); closing the connection\n")) << p.out;
    EXPECT_TRUE(has(p.out, "pmulab serve: closed the connection of a host without the token; listening again\n"));
    EXPECT_TRUE(has(p.out, "pmulab serve: the host sent nothing for 2 s (--idle-timeout); closed its connection\n"
                           "pmulab serve: listening again\n"))
        << p.out;
    EXPECT_TRUE(has(p.out, "pmulab serve: stopped after 3 requests\n")) << p.out;  // 1 (refused), 5 and 6
    EXPECT_FALSE(has(p.out, kTok));
    for (const HostsLink::Host& h : p.link.hosts) EXPECT_FALSE(has(h.sent, kTok)) << h.sent;
    EXPECT_FALSE(has(p.out, "warning"));
}

TEST(ServeTcp, ARefusedHostIsNotTheOneHostOfOnce) {
    TcpPlatform p;
    p.link.hosts = {{{R"({"id":1,"token":"wrong-token-0123456789","cmd":"version"})"
                      "\n"},
                     true,
                     ""},
                    {{kTokVersion}, false, ""}};
    EXPECT_EQ(serve(p, {"--tcp", "5555", "--token", kTok, "--once"}), kExitOk) << p.out;
    EXPECT_EQ(p.link.accepts, 2);
    EXPECT_TRUE(has(p.out, "pmulab serve: refused request 1 (a wrong token); closing the connection\n")) << p.out;
    EXPECT_TRUE(has(p.link.hosts[1].sent, R"({"type":"done","id":5,"status":0})"));
    EXPECT_TRUE(has(p.out, "pmulab serve: the host went away (--once)\n")) << p.out;
}

TEST(ServeTcp, SilentHostDefaultIsAMinuteAndWithoutATokenAWarning) {
    TcpPlatform p;
    p.link.hosts = {{{}, true, ""}};  // silent
    EXPECT_EQ(serve(p, {"--tcp", "5555", "--once"}), kExitOk) << p.out;
    EXPECT_GE(p.link.clock, 60000u);
    EXPECT_LT(p.link.clock, 61000u);
    EXPECT_TRUE(has(p.out, "pmulab serve: the host sent nothing for 60 s (--idle-timeout); closed its connection\n"))
        << p.out;
    EXPECT_TRUE(has(p.out, "pmulab serve: warning: no --token-file: anyone who reaches TCP port 5555 can run "
                           "ring-0 code on this machine (docs/agent.md, \"Who may connect\")\n"))
        << p.out;
    TcpPlatform q;  // --idle-timeout 0: never (then --idle ends it)
    q.link.hosts = {{{}, true, ""}};
    EXPECT_EQ(serve(q, {"--tcp", "5555", "--idle-timeout", "0", "--idle", "100"}), kExitOk) << q.out;
    EXPECT_GE(q.link.clock, 100000u);
    EXPECT_FALSE(has(q.out, "--idle-timeout")) << q.out;
}
