// Out (app/out.h): errors and warnings are diagnostics in text mode (Platform::write_diag),
// records in JSON mode (write); control characters from arguments are escaped.
#include <gtest/gtest.h>

#include <string>

#include "app/out.h"
#include "sim/sim_cpu.h"

using namespace pmulab;

namespace {

class TwoStreams final : public Platform {
public:
    explicit TwoStreams(Hw& hw) : hw_(hw) {}
    Hw& hw() override { return hw_; }
    void write(StrView t) override { data.append(t.ptr, t.len); }
    void write_diag(StrView t) override { diag.append(t.ptr, t.len); }
    std::string data, diag;

private:
    Hw& hw_;
};

}  // namespace

TEST(OutStreams, TextModeErrorsAndWarningsAreDiagnostics) {
    sim::SimMachine m = sim::qemu_tcg(1);
    TwoStreams p(m);
    Out out(p, false);
    out.text("CPU 0: 42\n");
    out.error_msg(Errc::fault, "CPU %u: WRMSR 0x%x raised #GP", 0u, 0x6e1u);
    out.warn("results: %s", "the boot volume is read-only");
    EXPECT_EQ(p.data, "CPU 0: 42\n");
    EXPECT_EQ(p.diag, "pmulab: error: CPU 0: WRMSR 0x6e1 raised #GP\n"
                      "pmulab: warning: results: the boot volume is read-only\n");
    EXPECT_EQ(out.outcome().exit_status(), kExitFailure);
}

TEST(OutStreams, JsonModeKeepsErrorRecordsOnStdout) {
    sim::SimMachine m = sim::qemu_tcg(1);
    TwoStreams p(m);
    Out out(p, true);
    out.error_msg(Errc::invalid_argument, "bad '%s'", "x\x1b[2J");
    out.warn("careful");
    EXPECT_EQ(p.diag, "");
    EXPECT_EQ(p.data, "{\"type\":\"error\",\"code\":\"invalid argument\",\"message\":\"bad 'x\\u001b[2J'\"}\n"
                      "{\"type\":\"warning\",\"message\":\"careful\"}\n");
}

TEST(OutStreams, ControlCharactersAreEscapedAndLongMessagesKept) {
    sim::SimMachine m = sim::qemu_tcg(1);
    TwoStreams p(m);
    Out out(p, false);
    out.set_context("\\pmulab\\pmulab.cfg:3");
    out.error_msg(Errc::invalid_argument, "msr: ADDR '%s' is not a number", "\x1b[2J\r\nfake\x7f");
    EXPECT_EQ(p.diag,
              "pmulab: error: \\pmulab\\pmulab.cfg:3: msr: ADDR '\\x1b[2J\\x0d\\x0afake\\x7f' is not a number\n");
    p.diag.clear();
    std::string long_text(400, 'w');
    out.warn("%s end", long_text.c_str());  // warnings were cut at 240 characters
    EXPECT_EQ(p.diag, "pmulab: warning: \\pmulab\\pmulab.cfg:3: " + long_text + " end\n");
}

TEST(Fmt, PutEscaped) {
    StrBuf b;
    put_escaped(b, StrView("a\tb\x01\x1f\x20~\x7f\x80", 9));
    EXPECT_EQ(std::string(b.c_str(), b.size()), "a\\x09b\\x01\\x1f ~\\x7f\x80");
}
