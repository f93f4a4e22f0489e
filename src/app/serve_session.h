// `pmulab serve`: the agent's session (docs/agent.md). It reads requests from a link
// (the serial port on EFI, a fake in the host tests), runs each command line as the
// command line would run, and answers with the command's --json records tagged with the
// request's id, then one done record.
//
// The session is itself the Platform the commands run against: it forwards the hardware,
// the measurement services and the boot volume to the real platform, and
//   - tags every line a command writes with the request id and sends it to the link;
//   - serves --code-file NAME (and --init-file, ...) from the request's blobs first;
//   - polls the link for a cancel (and checks the request's deadline) before every
//     measurement job and every record, and fails the jobs that follow once the
//     request is cancelled or late, so the command stops at its next job.
// A job that has started is never interrupted (interrupts are masked while it runs).
#pragma once

#include "app/platform.h"
#include "app/serve_request.h"
#include "events/event_files.h"
#include "app/measure_forward.h"

namespace pmulab {

// A byte stream to the host.
class ServeLink {
public:
    // Bytes that have arrived, without waiting; 0 when none. An error when the link is gone.
    virtual Result<usize> read(char* buf, usize cap) = 0;
    // Waits until input may have arrived or about `ms` milliseconds have passed.
    virtual void wait(u32 ms) = 0;
    virtual Status send(StrView bytes) = 0;
    // A monotonic clock in milliseconds.
    virtual u64 now_ms() = 0;
    // What the link is, for the hello record ("serial port 1 of 2").
    virtual const char* describe() = 0;
    // Waits for a host to connect, up to `wait_ms` (0: no limit): true when one did,
    // false when the time passed first. A serial line is always connected.
    virtual Result<bool> accept(u64 wait_ms) {
        (void)wait_ms;
        return true;
    }
    // Ends the connection to the host (TCP: sends what is queued, then closes), so that
    // accept() can take the next one. Nothing to do on a serial line.
    virtual void hang_up() {}
    // Whether another host can connect after this one went away (TCP, unless serving
    // one host only); a serial line that fails stays failed.
    virtual bool reconnects() const { return false; }
    // Whether the link ended because the host closed its side in an orderly way, with
    // nothing failing (pmulab-sim's stdin reaching its end): serving then stops with
    // status 0. A serial line cannot tell.
    virtual bool ended_by_host() const { return false; }
    // What opening the link found, for the console (TCP: the network handles before and
    // after connecting the NICs); null when there is nothing to say.
    virtual const char* notes() { return nullptr; }

protected:
    ~ServeLink() = default;
};

struct ServeOptions {
    bool unsafe = false;   // requests may use msr write --unsafe
    bool results = false;  // commands write results files as on the command line
    u64 idle_ms = 0;       // stop after this long without a request (0: never)
    // The pre-shared token every request must carry in its "token" field (empty: none
    // asked). Never printed.
    char token[kServeTokenMax + 1] = {};
    // A request without the token (or with another) ends the connection (TCP); otherwise
    // it is refused and serving goes on (a serial line cannot be hung up).
    bool refusal_closes = false;
    // End the connection when the host has sent nothing for this long while no request
    // is running or waiting (0: never): the next host gets its turn (serve --idle-timeout).
    u64 silent_ms = 0;
};

// Why ServeSession::serve() returned.
enum class ServeStopReason : u8 {
    stop,     // a stop request
    idle,     // --idle: no request for ServeOptions::idle_ms
    broken,   // the link failed (or the host's input ended)
    refused,  // a request without the right token (ServeOptions::refusal_closes)
    silent,   // the host sent nothing for ServeOptions::silent_ms
};

// Runs one command line (what app_run does) against `p`; returns its exit status.
using ServeRunFn = int (*)(void* ctx, Platform& p, int argc, const char* const* argv);

inline constexpr usize kServeQueueMax = 16;   // requests read ahead of the one running
inline constexpr u64 kServeLineWaitMs = 100;  // how long a begun line is waited for

class ServeSession;

class ServeMeasure final : public ForwardingMeasure {
public:
    ServeMeasure(ServeSession& s) : s_(s) {}
    // Pages freed by a request are kept (up to kServeCacheMax bytes) for the next
    // request that asks for the same size and kind: the firmware's AllocatePages and
    // FreePages (with their page-table updates) would otherwise dominate a small request.
    Result<void*> alloc_pages(usize bytes, bool executable) override;
    void free_pages(void* p, usize bytes) override;
    // Returns every cached page to the firmware (the session's end).
    void release_cache();
    Status run_on_cpu(Hw& hw, u32 cpu, CpuFn fn, void* ctx) override;

private:
    struct Block {
        void* p;
        usize bytes;
        bool exec;
    };
    ServeSession& s_;
    Vec<Block> live_;   // handed out
    Vec<Block> cache_;  // freed, kept
    usize cached_bytes_ = 0;
};

inline constexpr usize kServeCacheMax = usize(64) << 20;

class ServeFiles final : public FileSource {
public:
    ServeFiles(ServeSession& s) : s_(s) {}
    void set_inner(FileSource* f) { f_ = f; }
    Result<Vec<char>> read(const char* path, usize max_bytes = ~usize(0)) override;
    Status list(const char* dir, const char* suffix, Vec<FileName>* out) override;

private:
    ServeSession& s_;
    FileSource* f_ = nullptr;
};

class ServeSession final : public ForwardingPlatform {
public:
    ServeSession(Platform& inner, ServeLink& link, const ServeOptions& o);
    ~ServeSession() { measure_.release_cache(); }
    // Serves until a stop request (0), the idle time (0) or a broken link (1: sending
    // failed, or reading failed and every request read before was answered).
    int serve(ServeRunFn run, void* ctx);

    // Platform: the real one (ForwardingPlatform: the firmware's timer and with it a
    // request's TSC frequency included), seen through the request.
    void write(StrView text) override;
    // A record of the running command, with the request's id as its first field.
    void write_record(const Value& rec) override;
    void write_diag(StrView text) override { write(text); }
    MeasurePlatform* measure() override { return inner_.measure() ? &measure_ : nullptr; }
    RecordSink* record_sink() override { return opts_.results ? inner_.record_sink() : nullptr; }
    FileSource* files() override { return &files_; }
    // A request cannot start another server on the link it came from.
    Result<ServeLink*> open_serve_link(int port) override { return Platform::open_serve_link(port); }
    Result<ServeLink*> open_tcp_link(const ServeTcpOptions& o) override { return Platform::open_tcp_link(o); }

    // Whether the running request was cancelled or ran out of time (reads the link).
    bool interrupted();
    const ServeRequest* current() const { return current_; }
    // Requests answered so far (tests).
    u64 answered() const { return answered_; }
    // Why serve() returned, and how many requests were refused for their token.
    ServeStopReason stop_reason() const { return stop_reason_; }
    u64 refused() const { return refused_; }

private:
    struct Queued {
        ServeRequest req;
        Error error;  // parse error (error.code == ok: none)
    };
    void pump();
    void take_line(StrView line);
    void send(StrView line);
    void answer_error(StrView id, const char* code, StrView msg, int status, ServeEnd end = ServeEnd::normal);
    void run_request(ServeRequest& r, ServeRunFn run, void* ctx);
    void flush_partial();
    bool authorised(const ServeRequest& r);
    int end(ServeStopReason why, const char* bye);

    Platform& inner_;
    ServeLink& link_;
    ServeOptions opts_;
    ServeMeasure measure_;
    ServeFiles files_;
    Vec<char> in_;              // bytes of the line being received
    bool discarding_ = false;   // the line being received is too long
    bool waiting_ = false;      // a begun line stopped arriving ...
    u64 waiting_since_ = 0;     // ... at this now_ms()
    bool link_broken_ = false;  // sending failed
    bool input_ended_ = false;  // reading failed (the host went away or stopped sending)
    Vec<Queued> queue_;
    ServeRequest* current_ = nullptr;
    u64 deadline_ = 0;  // now_ms() value, 0: none
    ServeEnd end_ = ServeEnd::normal;
    StrBuf partial_;  // output of the running command up to its next newline
    u64 answered_ = 0;
    u64 heard_ms_ = 0;  // now_ms() of the last bytes from the host
    u64 refused_ = 0;
    bool refusal_pending_ = false;  // a refused request ends the connection (refusal_closes)
    ServeStopReason stop_reason_ = ServeStopReason::broken;
};

}  // namespace pmulab
