// `pmulab serve`: the request parser, base64, the id tagging of records, and whole
// sessions over a scripted link against the simulated machine.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "app/serve_session.h"
#include "support/sim_measure.h"
#include "support/test_platform.h"

using namespace pmulab;

namespace {

struct Parsed {
    Status st;
    ServeRequest req;
};

Parsed parse(const std::string& line) {
    Parsed p;
    p.st = parse_serve_request(StrView(line.data(), line.size()), &p.req);
    return p;
}

std::string err(const std::string& line) {
    Parsed p = parse(line);
    if (p.st.ok()) return "OK";
    EXPECT_EQ(p.st.error().code, Errc::invalid_argument) << line;
    return p.st.error().msg;
}

std::string tag(const std::string& line, const char* id) {
    // A record the command built (read back from its JSON text here), or a line of text.
    StrBuf b;
    Value rec;
    StrView l(line.data(), line.size());
    if (json_read(l.trim(), &rec, nullptr) && rec.is_object()) serve_tag_record(rec, StrView(id), &b);
    else serve_tag_text(l, StrView(id), &b);
    return std::string(b.view().ptr, b.view().len);
}

}  // namespace

TEST(ServeRequest, CommandWithBlobsAndTimeout) {
    Parsed p = parse(R"({"id":7,"cmd":"run --code-file body --events tsc","blobs":{"body":"SAHY","i":"kA=="},)"
                     R"("timeout_ms":5000})");
    ASSERT_TRUE(p.st.ok()) << p.st.error().msg;
    EXPECT_EQ(p.req.kind, ServeRequest::Kind::command);
    EXPECT_STREQ(p.req.id, "7");
    EXPECT_STREQ(p.req.cmd.c_str(), "run --code-file body --events tsc");
    EXPECT_EQ(p.req.timeout_ms, 5000u);
    ASSERT_EQ(p.req.blobs.size(), 2u);
    EXPECT_STREQ(p.req.blobs[0].name, "body");
    ASSERT_EQ(p.req.blobs[0].data.size(), 3u);  // add rax, rbx
    EXPECT_EQ(p.req.blobs[0].data[0], 0x48);
    EXPECT_EQ(p.req.blobs[0].data[1], 0x01);
    EXPECT_EQ(p.req.blobs[0].data[2], 0xd8);
    ASSERT_EQ(p.req.blobs[1].data.size(), 1u);
    EXPECT_EQ(p.req.blobs[1].data[0], 0x90);
}

TEST(ServeRequest, IdsCancelStop) {
    Parsed a = parse(R"( { "cmd" : "info", "id" : "run-1.a:b" } )"
                     "\r\n");
    ASSERT_TRUE(a.st.ok()) << a.st.error().msg;
    EXPECT_STREQ(a.req.id, "\"run-1.a:b\"");
    Parsed c = parse(R"({"id":"c","cancel":9007199254740991})");
    ASSERT_TRUE(c.st.ok()) << c.st.error().msg;
    EXPECT_EQ(c.req.kind, ServeRequest::Kind::cancel);
    EXPECT_STREQ(c.req.cancel_id, "9007199254740991");
    Parsed s = parse(R"({"id":0,"stop":true})");
    ASSERT_TRUE(s.st.ok());
    EXPECT_EQ(s.req.kind, ServeRequest::Kind::stop);
    Parsed e = parse(R"({"id":1,"cmd":"run --asm \"x\"\t\u0041"})");
    ASSERT_TRUE(e.st.ok()) << e.st.error().msg;
    EXPECT_STREQ(e.req.cmd.c_str(), "run --asm \"x\"\tA");
}

TEST(ServeRequest, RefusesWhatItDoesNotKnow) {
    EXPECT_EQ(err(R"({"id":1,"cmd":"info","prio":3})"),
              "request: unknown field \"prio\" (fields: id, token, cmd, blobs, timeout_ms, cancel, stop) (at byte 29)");
    EXPECT_EQ(err(R"({"cmd":"info"})"), "request: no \"id\" (every request needs one: a string or an integer)");
    EXPECT_EQ(err(R"({"id":1,"id":2,"cmd":"info"})"), "request: field \"id\" given twice (at byte 14)");
    EXPECT_EQ(err(R"({"id":1})"), "request: give exactly one of \"cmd\", \"cancel\" and \"stop\"");
    EXPECT_EQ(err(R"({"id":1,"cmd":"info","stop":true})"),
              "request: give exactly one of \"cmd\", \"cancel\" and \"stop\"");
    EXPECT_EQ(err(R"({"id":1,"cmd":"  "})"), "request: cmd: empty command line");
    EXPECT_EQ(err(R"({"id":-1,"cmd":"info"})"), "request: id: expected a string or a non-negative integer (at byte 7)");
    EXPECT_EQ(err(R"({"id":1.5,"cmd":"info"})"), "request: id: expected an integer, not a fraction (at byte 8)");
    EXPECT_EQ(err(R"({"id":9007199254740992,"cmd":"info"})"), "request: id: number larger than 2^53-1 (at byte 22)");
    EXPECT_EQ(err(R"({"id":"a b","cmd":"info"})"),
              "request: id: ' ' is not allowed (letters, digits and _ . : -) (at byte 12)");
    EXPECT_EQ(err("{\"id\":1,\"cmd\":\"inf\xc3\xa9\"}"),
              "request: cmd: non-ASCII byte 0xc3 (requests are ASCII) (at byte 20)");
    EXPECT_EQ(err(R"({"id":1,"cmd":"info\u00e9"})"),
              "request: cmd: \\u00e9 is not a non-NUL ASCII character (at byte 22)");
    EXPECT_EQ(err(R"({"id":1,"cmd":"info"} x)"), "request: trailing characters after the object (at byte 23)");
    EXPECT_EQ(err(R"([1,2])"), "request: expected a JSON object (at byte 1)");
    EXPECT_EQ(err(""), "request: expected a JSON object (at byte 1)");
    EXPECT_EQ(err(R"({"id":1,"cmd":"run","blobs":{"a":"SAH"}})"),
              "request: blob 'a' is not base64 (RFC 4648, with padding, no whitespace) (at byte 39)");
    EXPECT_EQ(err(R"({"id":1,"cmd":"run","blobs":{"a/b":"kA=="}})"),
              "request: blob name 'a/b': use 1-32 characters of letters, digits and _ . - (at byte 35)");
    EXPECT_EQ(err(R"({"id":1,"cmd":"run","blobs":{"a":"kA==","a":"kA=="}})"),
              "request: blob 'a' given twice (at byte 44)");
    EXPECT_EQ(err(R"({"id":1,"cmd":"run","blobs":{"a":""}})"), "request: blob 'a' is empty (at byte 36)");
    EXPECT_EQ(err(R"({"id":1,"stop":true,"timeout_ms":5})"),
              "request: \"blobs\" and \"timeout_ms\" belong to a \"cmd\" request");
    EXPECT_EQ(err(R"({"id":1,"cmd":"info","timeout_ms":0})"), "request: timeout_ms: give 1 to 86400000 (at byte 36)");
    EXPECT_EQ(err(R"({"id":1,"stop":false})"), "request: stop: expected true (at byte 16)");
}

TEST(ServeRequest, Bounds) {
    std::string many = R"({"id":1,"cmd":"run","blobs":{)";
    for (int i = 0; i < 9; ++i) many += (i ? "," : "") + std::string("\"b") + char('0' + i) + "\":\"kA==\"";
    many += "}}";
    EXPECT_EQ(err(many), "request: more than 8 blobs in one request (at byte 130)");
    // A blob one byte over the limit: 65537 bytes.
    std::string big(((kServeBlobMax + 1 + 2) / 3) * 4, 'A');
    big[big.size() - 1] = '=';
    std::string r = R"({"id":1,"cmd":"run","blobs":{"a":")" + big + "\"}}";
    EXPECT_EQ(err(r).substr(0, 40), "request: blob 'a' decodes to more than 6");
    // Exactly the limit is taken.
    std::string fit(kServeBlobMax / 3 * 4, 'k');
    fit += "kA==";  // 65535 + 1 bytes
    Parsed ok = parse(R"({"id":1,"cmd":"run","blobs":{"a":")" + fit + "\"}}");
    ASSERT_TRUE(ok.st.ok()) << ok.st.error().msg;
    EXPECT_EQ(ok.req.blobs[0].data.size(), kServeBlobMax);
    std::string cmd(kServeCmdMax + 1, 'x');
    EXPECT_EQ(err(R"({"id":1,"cmd":")" + cmd + "\"}"), "request: cmd: longer than 4096 characters (at byte 4113)");
    std::string line(kServeLineMax + 1, ' ');
    EXPECT_EQ(err(line), "request: longer than 409600 bytes (at byte 1)");
}

TEST(ServeRequest, IdRecoveredForTheAnswer) {
    Parsed p = parse(R"({"id":"r9","cmd":"info","bogus":1})");
    EXPECT_FALSE(p.st.ok());
    EXPECT_STREQ(p.req.id, "\"r9\"");
    // An id after the field that failed is found too.
    Parsed q = parse(R"({"cmd":"info","bogus":1,"id":12})");
    EXPECT_FALSE(q.st.ok());
    EXPECT_STREQ(q.req.id, "12");
    Parsed n = parse(R"(not json)");
    EXPECT_STREQ(n.req.id, "null");
}

TEST(ServeRequest, Base64) {
    Vec<u8> v;
    EXPECT_TRUE(base64_decode("", 10, &v));
    EXPECT_EQ(v.size(), 0u);
    ASSERT_TRUE(base64_decode("TWFu", 10, &v));
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(v.data()), v.size()), "Man");
    ASSERT_TRUE(base64_decode("TWE=", 10, &v));
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(v.data()), v.size()), "Ma");
    ASSERT_TRUE(base64_decode("+/8=", 10, &v));
    EXPECT_EQ(v.size(), 2u);
    EXPECT_EQ(v[0], 0xfb);
    EXPECT_EQ(v[1], 0xff);
    EXPECT_FALSE(base64_decode("TWF", 10, &v));       // not a multiple of 4
    EXPECT_FALSE(base64_decode("TW=u", 10, &v));      // padding inside
    EXPECT_FALSE(base64_decode("T===", 10, &v));      // three pads
    EXPECT_FALSE(base64_decode("TWF=TWFu", 10, &v));  // padding before the end
    EXPECT_FALSE(base64_decode("TWF!", 10, &v));
    EXPECT_FALSE(base64_decode("TWF=", 10, &v));     // non-canonical: dropped bits set
    EXPECT_FALSE(base64_decode("TWFuTWFu", 5, &v));  // longer than max
}

TEST(ServeRecords, TaggedWithTheId) {
    EXPECT_EQ(tag("{\"type\":\"result\",\"x\":1}\n", "7"), "{\"id\":7,\"type\":\"result\",\"x\":1}\n");
    EXPECT_EQ(tag("{\"type\":\"error\"}", "\"r1\""), "{\"id\":\"r1\",\"type\":\"error\"}\n");
    EXPECT_EQ(tag("{}", "3"), "{\"id\":3}\n");
    EXPECT_EQ(tag("pmulab 1.0\n", "3"), "{\"id\":3,\"type\":\"text\",\"text\":\"pmulab 1.0\"}\n");
    StrBuf d;
    serve_done_record("5", 2, ServeEnd::normal, &d);
    serve_done_record("\"x\"", 1, ServeEnd::cancelled, &d);
    serve_done_record("6", 1, ServeEnd::timed_out, &d);
    EXPECT_STREQ(d.c_str(), "{\"type\":\"done\",\"id\":5,\"status\":2}\n"
                            "{\"type\":\"done\",\"id\":\"x\",\"status\":1,\"cancelled\":true}\n"
                            "{\"type\":\"done\",\"id\":6,\"status\":1,\"timed_out\":true}\n");
}

// ---------------------------------------------------------------- sessions

namespace {

// A link that hands out scripted chunks, one per read() call, and a clock that moves
// `tick` milliseconds per call.
class ScriptLink final : public ServeLink {
public:
    std::vector<std::string> chunks;
    size_t next = 0;
    u64 clock = 0, tick = 1;
    bool fail_at_end = false;
    std::string sent;
    Result<usize> read(char* buf, usize cap) override {
        clock += tick;
        if (next >= chunks.size()) {
            if (fail_at_end) return Error::make(Errc::io, "link gone");
            return usize(0);
        }
        std::string& c = chunks[next];
        usize n = c.size() < cap ? c.size() : cap;
        memcpy(buf, c.data(), n);
        if (n == c.size()) ++next;
        else c.erase(0, n);
        return n;
    }
    void wait(u32 ms) override { clock += ms; }
    Status send(StrView b) override {
        sent.append(b.ptr, b.len);
        return ok_status();
    }
    u64 now_ms() override { return clock; }
    const char* describe() override { return "script"; }
};

int run_line(void*, Platform& p, int argc, const char* const* argv) {
    GlobalOptions g;
    return app_run(p, argc, argv, &g, nullptr, argc > 0 ? argc - 1 : argc, false);  // as cmd_serve.cpp runs a request
}

struct Session {
    sim::SimMachine m = sim::qemu_tcg(2);
    simm::SimPlatform p{m};
    ScriptLink link;
    int status = -1;
    std::vector<pmutest::Json> recs;
    void go(ServeOptions o = {}) {
        ServeSession s(p, link, o);
        status = s.serve(run_line, nullptr);
        recs = pmutest::parse_json_lines(link.sent);
    }
    // The records answering `id` (JSON text of the id), in order.
    std::vector<const pmutest::Json*> for_id(const std::string& id) const {
        std::vector<const pmutest::Json*> v;
        for (const pmutest::Json& r : recs) {
            if (!r.has("id")) continue;
            const pmutest::Json& j = r["id"];
            std::string t = j.type == pmutest::Json::Type::string ? "\"" + j.s() + "\"" : j.is_null() ? "null" : j.s();
            if (t == id) v.push_back(&r);
        }
        return v;
    }
    const pmutest::Json* done(const std::string& id) const {
        for (const pmutest::Json* r : for_id(id))
            if (r->has("type") && (*r)["type"].s() == "done") return r;
        return nullptr;
    }
};

}  // namespace

TEST(ServeSession, AnswersEveryRequestWithItsId) {
    Session s;
    s.link.chunks = {
        R"({"id":1,"cmd":"run --bench nop --events tsc --reps 3 --warmup 0"})"
        "\n",
        R"({"id":"bad","cmd":"info","x":1})"
        "\n"
        R"({"id":2,"cmd":"frobnicate"})"
        "\n",
        "garbage\n",
        "\n",  // blank lines are ignored
        R"({"id":3,"cmd":"run --code-file missing --events tsc"})"
        "\n",
        R"({"id":4,"cmd":"msr write 0x10 0 --unsafe"})"
        "\n",
        R"({"id":5,"cmd":"serve"})"
        "\n",
        R"({"id":6,"cmd":"version --shutdown"})"
        "\n",
        R"({"id":7,"cmd":"run --bench nop --events tsc --reps 3 --warmup 0 --cpu 1"})"
        "\n",
        R"({"id":8,"stop":true})"
        "\n",
        R"({"id":9,"cmd":"info"})"
        "\n",  // after stop: never read
    };
    s.go();
    EXPECT_EQ(s.status, kExitOk);
    ASSERT_FALSE(s.recs.empty());
    EXPECT_EQ(s.recs[0]["type"].s(), "hello");
    EXPECT_EQ(s.recs[0]["protocol"].u(), 1u);
    auto status_of = [&](const std::string& id) -> int {
        const pmutest::Json* d = s.done(id);
        EXPECT_TRUE(d) << "no done record for " << id << "\n" << s.link.sent;
        return d ? int((*d)["status"].u()) : -1;
    };
    EXPECT_EQ(status_of("1"), kExitOk);
    std::vector<const pmutest::Json*> r1 = s.for_id("1");
    ASSERT_GE(r1.size(), 2u);
    EXPECT_EQ((*r1[0])["type"].s(), "result");
    EXPECT_EQ((*r1[0])["bench"].s(), "nop");
    EXPECT_EQ((*r1.back())["type"].s(), "done");
    EXPECT_EQ(status_of("\"bad\""), kExitUsage);
    EXPECT_EQ((*s.for_id("\"bad\"")[0])["message"].s(),
              "request: unknown field \"x\" (fields: id, token, cmd, blobs, timeout_ms, cancel, stop) (at byte 30)");
    EXPECT_EQ(status_of("2"), kExitUsage);
    EXPECT_EQ((*s.for_id("2")[0])["message"].s(), "unknown command 'frobnicate' (try 'pmulab help')");
    EXPECT_EQ(status_of("null"), kExitUsage);  // "garbage"
    EXPECT_EQ(status_of("3"), kExitUsage);
    EXPECT_NE((*s.for_id("3")[0])["message"].s().find("no blob 'missing' in this request (its blobs: none)"),
              std::string::npos)
        << (*s.for_id("3")[0])["message"].s();
    EXPECT_EQ(status_of("4"), kExitUsage);
    EXPECT_EQ((*s.for_id("4")[0])["message"].s(),
              "--unsafe is refused over the wire unless the agent was started with 'serve --unsafe'");
    EXPECT_EQ(status_of("5"), kExitUsage);
    EXPECT_EQ(status_of("6"), kExitUsage);
    EXPECT_EQ(status_of("7"), kExitOk);
    EXPECT_EQ((*s.for_id("7")[0])["cpu"].u(), 1u);
    EXPECT_EQ(status_of("8"), kExitOk);
    EXPECT_EQ(s.done("9"), nullptr);
    EXPECT_EQ(s.recs.back()["type"].s(), "bye");
    // Every line the agent sent is one JSON object with an id field.
    for (const pmutest::Json& r : s.recs) EXPECT_TRUE(r.has("id"));
}

TEST(ServeSession, BlobsServeCodeFiles) {
    Session s;
    ServeSession sess(s.p, s.link, {});
    ServeRequest r;
    ASSERT_TRUE(parse_serve_request(R"({"id":1,"cmd":"x","blobs":{"body":"SAHY"}})", &r).ok());
    // Outside a request there are no blobs; the test platform has no boot volume.
    FileSource* fs = sess.files();
    EXPECT_FALSE(fs->read("body").ok());
}

TEST(ServeSession, CancelQueuedAndRunning) {
    Session s;
    // The long request reads the link before each of its jobs: the cancel arrives
    // while it runs (in the chunk after the one that queued it), the queued one
    // is cancelled before it starts.
    s.link.chunks = {
        R"({"id":1,"cmd":"run --bench nop,empty,add_chain,add_indep --events tsc --reps 3 --warmup 0 --cpu all"})"
        "\n"
        R"({"id":2,"cmd":"info"})"
        "\n",
        "",
        R"({"id":"c1","cancel":1})"
        "\n"
        R"({"id":"c2","cancel":2})"
        "\n"
        R"({"id":"c3","cancel":77})"
        "\n",
        R"({"id":3,"cmd":"version"})"
        "\n"
        R"({"id":4,"stop":true})"
        "\n",
    };
    s.go();
    EXPECT_EQ(s.status, kExitOk);
    const pmutest::Json* d1 = s.done("1");
    ASSERT_TRUE(d1) << s.link.sent;
    EXPECT_EQ((*d1)["status"].u(), 1u);
    EXPECT_TRUE((*d1)["cancelled"].b);
    // Fewer results than 4 benchmarks x 2 CPUs: the rest did not run.
    int results = 0;
    for (const pmutest::Json* r : s.for_id("1")) results += (*r)["type"].s() == "result";
    EXPECT_LT(results, 8);
    const pmutest::Json* d2 = s.done("2");
    ASSERT_TRUE(d2);
    EXPECT_TRUE((*d2)["cancelled"].b);
    EXPECT_EQ(s.for_id("2").size(), 2u);  // the error and done: nothing of info ran
    EXPECT_EQ((*s.done("\"c1\""))["status"].u(), 0u);
    EXPECT_EQ((*s.done("\"c2\""))["status"].u(), 0u);
    EXPECT_EQ((*s.done("\"c3\""))["status"].u(), 1u);
    EXPECT_EQ((*s.done("3"))["status"].u(), 0u);
}

TEST(ServeSession, TimeoutStopsTheRequest) {
    Session s;
    s.link.tick = 40;  // every read of the link: 40 ms
    s.link.chunks = {
        R"({"id":1,"cmd":"run --bench nop,empty,add_chain,add_indep --events tsc --reps 3 --warmup 0 --cpu all","timeout_ms":100})"
        "\n",
        "",
        R"({"id":2,"stop":true})"
        "\n",
    };
    s.go();
    const pmutest::Json* d = s.done("1");
    ASSERT_TRUE(d) << s.link.sent;
    EXPECT_TRUE((*d)["timed_out"].b) << s.link.sent;
    EXPECT_EQ((*d)["status"].u(), 1u);
    EXPECT_EQ((*s.for_id("1")[s.for_id("1").size() - 2])["code"].s(), "timeout");
}

TEST(ServeSession, LongLine) {
    Session s;
    s.link.chunks = {"{\"id\":1,\"cmd\":\"" + std::string(kServeLineMax, 'x') + "\"}\n", R"({"id":2,"cmd":"version"})"
                                                                                         "\n"
                                                                                         R"({"id":3,"stop":true})"
                                                                                         "\n"};
    s.go();
    EXPECT_EQ(s.status, kExitOk);
    const pmutest::Json* dn = s.done("null");
    ASSERT_TRUE(dn) << s.link.sent.substr(0, 2000);
    EXPECT_EQ((*dn)["status"].u(), 2u);
    EXPECT_EQ((*s.for_id("null")[1])["message"].s(), "request: longer than 409600 bytes (the limit of one line)");
    EXPECT_EQ((*s.done("2"))["status"].u(), 0u);
    EXPECT_EQ((*s.for_id("2")[0])["type"].s(), "version");
}

TEST(ServeSession, BrokenLinkEndsServing) {
    Session s;
    s.link.fail_at_end = true;
    s.go();
    EXPECT_EQ(s.status, kExitFailure);
}

TEST(ServeSession, IdleTimeEndsServing) {
    Session s;
    ServeOptions o;
    o.idle_ms = 50;
    s.go(o);
    EXPECT_EQ(s.status, kExitOk);
    EXPECT_EQ(s.recs.back()["type"].s(), "bye");
    EXPECT_EQ(s.recs.back()["reason"].s(), "idle");
}

TEST(ServeSession, CancelOfALateRequestIsFoundAndItStaysLate) {
    Session s;
    s.link.tick = 200;
    s.link.chunks = {
        R"({"id":1,"cmd":"run --bench nop,empty,add_chain,add_indep --events tsc --reps 3 --warmup 0 --cpu all",)"
        R"("timeout_ms":100})"
        "\n",
        "",
        "",
        R"({"id":"c","cancel":1})"
        "\n",
        R"({"id":2,"stop":true})"
        "\n",
    };
    s.go();
    const pmutest::Json* d = s.done("1");
    ASSERT_TRUE(d) << s.link.sent;
    EXPECT_TRUE((*d)["timed_out"].b) << s.link.sent;
    EXPECT_FALSE(d->has("cancelled"));
    ASSERT_TRUE(s.done("\"c\""));
    EXPECT_EQ((*s.done("\"c\""))["status"].u(), 0u);
}

TEST(ServeSession, RequestsSeeTheFirmwareTimer) {
    // The session is the requests' platform: it passes the firmware's timer through, so
    // a request measures the TSC frequency as the command line does (it used to report
    // "no firmware timer on this platform" and leave tsc_hz out of every record).
    Session s;
    s.p.stall_ticks_per_us = 1000;  // a 1 GHz TSC by the simulated firmware timer
    s.link.chunks = {
        R"({"id":1,"cmd":"info"})"
        "\n",
        R"({"id":2,"stop":true})"
        "\n",
    };
    s.go();
    std::vector<const pmutest::Json*> r = s.for_id("1");
    ASSERT_GE(r.size(), 3u) << s.link.sent;
    EXPECT_EQ((*r[0])["type"].s(), "cpu");
    EXPECT_EQ((*r[0])["tsc_source"].s(), "sim_stall") << s.link.sent;
    EXPECT_EQ((*r[0])["tsc_hz"].u(), 1000000000u) << s.link.sent;
}

// ---- who may drive the agent: the pre-shared token, and the silent host's connection

namespace {

constexpr const char* kToken = "s3cret-t0ken-0123456789";

ServeOptions with_token(bool closes) {
    ServeOptions o;
    str_copy(o.token, sizeof o.token, kToken);
    o.refusal_closes = closes;
    return o;
}

}  // namespace

TEST(ServeRequest, TokenField) {
    Parsed p = parse(R"({"id":1,"token":"abc-def","cmd":"version"})");
    ASSERT_TRUE(p.st.ok()) << p.st.error().msg;
    EXPECT_TRUE(p.req.has_token);
    EXPECT_STREQ(p.req.token, "abc-def");
    EXPECT_FALSE(parse(R"({"id":1,"cmd":"version"})").req.has_token);
    EXPECT_EQ(err(R"({"id":1,"token":7,"cmd":"version"})"), "request: token: expected a string (at byte 17)");
    std::string long_token(kServeTokenMax + 1, 'q');
    std::string e = err(R"({"id":1,"token":")" + long_token + R"(","cmd":"version"})");
    EXPECT_EQ(e, "request: token: longer than 128 characters (at byte 17)");
    // A cancel and a stop carry it too.
    EXPECT_TRUE(parse(R"({"id":2,"token":"x","cancel":1})").req.has_token);
    EXPECT_TRUE(parse(R"({"id":3,"token":"x","stop":true})").req.has_token);
}

TEST(ServeToken, CheckedWithoutShowingIt) {
    EXPECT_TRUE(check_serve_token(StrView(kToken), "--token").ok());
    Status s = check_serve_token(StrView("short-secret"), "--token");
    ASSERT_FALSE(s.ok());
    EXPECT_STREQ(s.error().msg, "--token: the token has 12 characters; give 16 to 128 (e.g. `openssl rand -hex 16`)");
    s = check_serve_token(StrView("a long secret with spaces"), "--token-file");
    ASSERT_FALSE(s.ok());
    EXPECT_STREQ(s.error().msg,
                 "--token-file: character 2 of the token is not allowed (printable ASCII without spaces, quotes "
                 "and backslashes)");
    EXPECT_EQ(std::string(s.error().msg).find("secret"), std::string::npos);
    EXPECT_FALSE(check_serve_token(StrView("0123456789abcdef\"x"), "--token").ok());
    EXPECT_FALSE(check_serve_token(StrView(std::string(129, 'a').c_str()), "--token").ok());
}

TEST(ServeToken, Matches) {
    EXPECT_TRUE(serve_token_matches(StrView(kToken), StrView(kToken)));
    EXPECT_FALSE(serve_token_matches(StrView("s3cret-t0ken-012345678"), StrView(kToken)));    // a prefix
    EXPECT_FALSE(serve_token_matches(StrView("s3cret-t0ken-01234567890"), StrView(kToken)));  // longer
    EXPECT_FALSE(serve_token_matches(StrView("S3cret-t0ken-0123456789"), StrView(kToken)));
    EXPECT_FALSE(serve_token_matches(StrView(""), StrView(kToken)));
    EXPECT_FALSE(serve_token_matches(StrView(""), StrView("")));  // no token configured: nothing matches
}

TEST(ServeSession, TokenRequiredOnEveryRequest) {
    Session s;
    std::string good = std::string(R"({"id":3,"token":")") + kToken + R"(","cmd":"version"})" + "\n";
    s.link.chunks = {
        R"({"id":1,"cmd":"version"})"
        "\n",
        R"({"id":2,"token":"wrong-token-0123456789","cmd":"version"})"
        "\n",
        good,
        R"({"id":"c","cancel":3})"
        "\n",
        std::string(R"({"id":4,"token":")") + kToken + R"(","stop":true})" + "\n",
    };
    s.go(with_token(false));  // a serial line: refused, serving goes on
    EXPECT_EQ(s.status, kExitOk);
    EXPECT_TRUE(s.recs[0]["token_required"].b);
    for (const char* id : {"1", "2", "\"c\""}) {
        std::vector<const pmutest::Json*> r = s.for_id(id);
        ASSERT_EQ(r.size(), 2u) << id << "\n" << s.link.sent;
        EXPECT_EQ((*r[0])["type"].s(), "error");
        EXPECT_EQ((*r[0])["code"].s(), "unauthorized");
        EXPECT_EQ((*r[1])["status"].u(), u64(kExitFailure));
    }
    EXPECT_EQ((*s.for_id("1")[0])["message"].s(),
              "request refused: no token; this agent takes requests with its pre-shared token in the \"token\" "
              "field (serve --token-file/--token; pmulab-client --token-file, --token or $PMULAB_TOKEN)");
    EXPECT_EQ((*s.for_id("2")[0])["message"].s().rfind("request refused: a wrong token;", 0), 0u);
    std::vector<const pmutest::Json*> r3 = s.for_id("3");
    ASSERT_EQ(r3.size(), 2u) << s.link.sent;
    EXPECT_EQ((*r3[0])["type"].s(), "version");
    EXPECT_EQ((*r3[1])["status"].u(), 0u);
    // The token never goes out, and the console says what was refused.
    EXPECT_EQ(s.link.sent.find(kToken), std::string::npos);
    EXPECT_NE(s.p.out.find("pmulab serve: refused request 1 (no token)\n"), std::string::npos) << s.p.out;
    EXPECT_NE(s.p.out.find("pmulab serve: refused request 2 (a wrong token)\n"), std::string::npos);
    EXPECT_EQ(s.p.out.find(kToken), std::string::npos);
}

TEST(ServeSession, WithoutATokenConfiguredNoneIsAsked) {
    Session s;
    s.link.chunks = {R"({"id":1,"token":"anything-at-all-here","cmd":"version"})"
                     "\n",
                     R"({"id":2,"stop":true})"
                     "\n"};
    s.go();
    EXPECT_FALSE(s.recs[0]["token_required"].b);
    EXPECT_EQ((*s.done("1"))["status"].u(), 0u);
    EXPECT_EQ(s.status, kExitOk);
}

TEST(ServeSession, RefusalClosesTheConnection) {
    Session s;
    ServeOptions o = with_token(true);  // TCP
    s.link.chunks = {
        R"({"id":1,"token":"wrong-token-0123456789","cmd":"version"})"
        "\n",
        std::string(R"({"id":2,"token":")") + kToken + R"(","cmd":"version"})" + "\n",
    };
    ServeSession session(s.p, s.link, o);
    EXPECT_EQ(session.serve(run_line, nullptr), kExitFailure);
    EXPECT_EQ(session.stop_reason(), ServeStopReason::refused);
    EXPECT_EQ(session.refused(), 1u);
    s.recs = pmutest::parse_json_lines(s.link.sent);
    EXPECT_EQ((*s.for_id("1")[0])["message"].s().find("; the connection is closed"),
              (*s.for_id("1")[0])["message"].s().size() - 26);
    EXPECT_TRUE(s.for_id("2").empty()) << s.link.sent;  // what came after the refusal is not run
    EXPECT_EQ(s.recs.back()["type"].s(), "bye");
    EXPECT_EQ(s.recs.back()["reason"].s(), "unauthorized");
    EXPECT_NE(s.p.out.find("pmulab serve: refused request 1 (a wrong token); closing the connection\n"),
              std::string::npos)
        << s.p.out;
}

TEST(ServeSession, SilentHostIsHungUp) {
    Session s;
    ServeOptions o;
    o.silent_ms = 100;
    ServeSession session(s.p, s.link, o);
    EXPECT_EQ(session.serve(run_line, nullptr), kExitFailure);
    EXPECT_EQ(session.stop_reason(), ServeStopReason::silent);
    EXPECT_GE(s.link.clock, 100u);
    EXPECT_LT(s.link.clock, 150u);
    s.recs = pmutest::parse_json_lines(s.link.sent);
    EXPECT_EQ(s.recs.back()["type"].s(), "bye");
    EXPECT_EQ(s.recs.back()["reason"].s(), "idle-timeout");
}

TEST(ServeSession, AnyByteOrRequestKeepsTheHostConnected) {
    // Keep-alive blank lines and a request, each arriving 40 ms after the last: no gap
    // reaches 100 ms, so the connection is closed 100 ms after the last byte only.
    Session s;
    s.link.tick = 40;
    s.link.chunks = {"\n",
                     "\n",
                     "\n",
                     R"({"id":1,"cmd":"version"})"
                     "\n",
                     "\n",
                     "\n"};
    ServeOptions o;
    o.silent_ms = 100;
    ServeSession session(s.p, s.link, o);
    EXPECT_EQ(session.serve(run_line, nullptr), kExitFailure);
    EXPECT_EQ(session.stop_reason(), ServeStopReason::silent);
    s.recs = pmutest::parse_json_lines(s.link.sent);
    EXPECT_EQ((*s.done("1"))["status"].u(), 0u);
    EXPECT_GE(s.link.clock, 6 * 40u + 100u);
}

TEST(ServeSession, StopAndIdleSayWhy) {
    Session s;
    s.link.chunks = {R"({"id":1,"stop":true})"
                     "\n"};
    ServeSession session(s.p, s.link, ServeOptions{});
    EXPECT_EQ(session.serve(run_line, nullptr), kExitOk);
    EXPECT_EQ(session.stop_reason(), ServeStopReason::stop);
}
