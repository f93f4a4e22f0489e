// pmulab-sim's serve link (src/host/lib/sim_serve.h): the agent protocol's byte stream on
// two pipes; the end of input is the host's orderly end, a failed write is not.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <string>

#include "sim_serve.h"

using namespace pmulab;

namespace {

struct Pipes {
    int to_sim[2], from_sim[2];
    Pipes() {
        EXPECT_EQ(::pipe(to_sim), 0);
        EXPECT_EQ(::pipe(from_sim), 0);
    }
    ~Pipes() {
        for (int fd : {to_sim[0], to_sim[1], from_sim[0], from_sim[1]})
            if (fd >= 0) ::close(fd);
    }
    void close_end(int& fd) {
        ::close(fd);
        fd = -1;
    }
};

}  // namespace

TEST(SimServeLink, ReadsWhatArrivedAndEndsAtEof) {
    Pipes p;
    StdioServeLink link(p.to_sim[0], p.from_sim[1]);
    char buf[64];
    Result<usize> r = link.read(buf, sizeof buf);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r.value(), 0u);  // nothing yet: no waiting
    ASSERT_EQ(::write(p.to_sim[1], "{\"id\":1}\n", 9), 9);
    r = link.read(buf, sizeof buf);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(std::string(buf, r.value()), "{\"id\":1}\n");
    EXPECT_FALSE(link.ended_by_host());
    p.close_end(p.to_sim[1]);
    link.wait(1000);  // returns at once: input is at its end
    EXPECT_FALSE(link.read(buf, sizeof buf).ok());
    EXPECT_TRUE(link.ended_by_host());
    EXPECT_FALSE(link.read(buf, sizeof buf).ok());  // and stays ended
    EXPECT_STREQ(link.describe(), "stdin/stdout of pmulab-sim (SIMULATED)");
}

TEST(SimServeLink, SendsEveryByteAndAFailedWriteIsNoOrderlyEnd) {
    ::signal(SIGPIPE, SIG_IGN);  // as pmulab-sim does: EPIPE, not death
    Pipes p;
    StdioServeLink link(p.to_sim[0], p.from_sim[1]);
    ASSERT_TRUE(link.send(StrView("{\"type\":\"done\"}\n")).ok());
    char buf[64];
    ssize_t n = ::read(p.from_sim[0], buf, sizeof buf);
    EXPECT_EQ(std::string(buf, n > 0 ? size_t(n) : 0), "{\"type\":\"done\"}\n");
    p.close_end(p.from_sim[0]);
    EXPECT_FALSE(link.send(StrView("x\n")).ok());
    p.close_end(p.to_sim[1]);
    EXPECT_FALSE(link.read(buf, sizeof buf).ok());
    EXPECT_FALSE(link.ended_by_host());  // the host went away while we wrote
}
