// `pmulab-sim ... -- serve`: the agent protocol (docs/agent.md) on the simulator's own
// stdin/stdout, so that a host tool drives a simulated machine through two pipes exactly
// as it drives an agent over a serial port or TCP (tools/pmulab/client.py, Agent.sim).
// End of input on stdin is the host's orderly end: serving stops with status 0.
#pragma once

#include <string>

#include "app/serve_session.h"

namespace pmulab {

class StdioServeLink final : public ServeLink {
public:
    // The hello record names the machine itself ("simulated_machine", serve_session.cpp).
    StdioServeLink(int in_fd, int out_fd);
    Result<usize> read(char* buf, usize cap) override;
    void wait(u32 ms) override;
    Status send(StrView bytes) override;
    u64 now_ms() override;
    const char* describe() override { return describe_.c_str(); }
    bool ended_by_host() const override { return eof_ && !failed_; }

private:
    int in_, out_;
    std::string describe_;
    bool eof_ = false;     // stdin reached its end (the host closed its side)
    bool failed_ = false;  // reading or writing failed (not an orderly end)
};

}  // namespace pmulab
