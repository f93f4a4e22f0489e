#include "sim_serve.h"

#include <poll.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace pmulab {

StdioServeLink::StdioServeLink(int in_fd, int out_fd)
    : in_(in_fd), out_(out_fd), describe_("stdin/stdout of pmulab-sim (SIMULATED)") {}

Result<usize> StdioServeLink::read(char* buf, usize cap) {
    if (eof_ || failed_) return Error::make(Errc::io, "the host closed stdin");
    pollfd p{in_, POLLIN, 0};
    int r = ::poll(&p, 1, 0);
    if (r < 0 && errno == EINTR) return usize(0);
    if (r < 0) {
        failed_ = true;
        return Error::make(Errc::io, "stdin: %s", std::strerror(errno));
    }
    if (r == 0) return usize(0);
    ssize_t n = ::read(in_, buf, cap);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) return usize(0);
    if (n < 0) {
        failed_ = true;
        return Error::make(Errc::io, "stdin: %s", std::strerror(errno));
    }
    if (n == 0) {
        eof_ = true;
        return Error::make(Errc::io, "the host closed stdin");
    }
    return usize(n);
}

void StdioServeLink::wait(u32 ms) {
    if (eof_ || failed_) return;
    pollfd p{in_, POLLIN, 0};
    (void)::poll(&p, 1, int(ms));
}

Status StdioServeLink::send(StrView bytes) {
    usize done = 0;
    while (done < bytes.len) {
        ssize_t n = ::write(out_, bytes.ptr + done, bytes.len - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            failed_ = true;
            return Error::make(Errc::io, "stdout: %s", n < 0 ? std::strerror(errno) : "nothing written");
        }
        done += usize(n);
    }
    return ok_status();
}

u64 StdioServeLink::now_ms() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return u64(ts.tv_sec) * 1000 + u64(ts.tv_nsec) / 1000000;
}

}  // namespace pmulab
