#include "app/serve_session.h"
#include "app/provenance.h"

#include "app/command_line.h"
#include "app/out.h"
#include "base/json.h"
#include "base/version.h"

namespace pmulab {

Status ServeMeasure::run_on_cpu(Hw& hw, u32 cpu, CpuFn fn, void* ctx) {
    if (s_.interrupted()) return Error::make(Errc::io, "request stopped before this job (cancelled or out of time)");
    return inner().run_on_cpu(hw, cpu, fn, ctx);
}

Result<void*> ServeMeasure::alloc_pages(usize bytes, bool executable) {
    for (usize i = 0; i < cache_.size(); ++i) {
        if (cache_[i].bytes != bytes || cache_[i].exec != executable) continue;
        Block b = cache_[i];
        cache_[i] = cache_[cache_.size() - 1];
        cache_.pop();
        cached_bytes_ -= b.bytes;
        live_.push(b);
        return b.p;
    }
    Result<void*> r = inner().alloc_pages(bytes, executable);
    if (r.ok()) live_.push(Block{r.value(), bytes, executable});
    return r;
}

void ServeMeasure::free_pages(void* p, usize bytes) {
    if (!p) return;
    for (usize i = 0; i < live_.size(); ++i) {
        if (live_[i].p != p) continue;
        Block b = live_[i];
        live_[i] = live_[live_.size() - 1];
        live_.pop();
        if (b.bytes == bytes && cached_bytes_ + bytes <= kServeCacheMax) {
            cache_.push(b);
            cached_bytes_ += bytes;
            return;
        }
        break;
    }
    inner().free_pages(p, bytes);
}

void ServeMeasure::release_cache() {
    for (const Block& b : cache_) inner().free_pages(b.p, b.bytes);
    cache_.clear();
    cached_bytes_ = 0;
}

Result<Vec<char>> ServeFiles::read(const char* path, usize max_bytes) {
    const ServeRequest* r = s_.current();
    if (r) {
        for (const ServeBlob& b : r->blobs) {
            if (!str_eq(b.name, path)) continue;
            Vec<char> d;
            usize n = b.data.size() < max_bytes ? b.data.size() : max_bytes;
            d.append(reinterpret_cast<const char*>(b.data.data()), n);
            return d;
        }
        // A bare name is a blob name: say which blobs the request has.
        if (serve_blob_name_ok(StrView(path)) && !f_) {
            StrBuf names;
            for (const ServeBlob& b : r->blobs) names.printf("%s%s", names.size() ? ", " : "", b.name);
            return Error::make(Errc::not_found, "no blob '%s' in this request (its blobs: %s)", path,
                               names.size() ? names.c_str() : "none");
        }
    }
    if (!f_) return Error::make(Errc::not_found, "no file '%s' (this platform has no boot volume)", path);
    Result<Vec<char>> res = f_->read(path, max_bytes);
    if (!res.ok() && r && serve_blob_name_ok(StrView(path)))
        return Error::make(res.error().code, "no blob '%s' in this request, and on the boot volume: %s", path,
                           res.error().msg);
    return res;
}

Status ServeFiles::list(const char* dir, const char* suffix, Vec<FileName>* out) {
    if (!f_) return Error::make(Errc::not_found, "no boot volume");
    return f_->list(dir, suffix, out);
}

ServeSession::ServeSession(Platform& inner, ServeLink& link, const ServeOptions& o)
    : ForwardingPlatform(inner), inner_(inner), link_(link), opts_(o), measure_(*this), files_(*this) {
    measure_.set_inner(inner.measure());
    files_.set_inner(inner.files());
}

void ServeSession::send(StrView line) {
    if (link_broken_) return;
    if (!link_.send(line).ok()) link_broken_ = true;
}

void ServeSession::answer_error(StrView id, const char* code, StrView msg, int status, ServeEnd end) {
    StrBuf b;
    serve_error_record(id, code, msg, &b);
    serve_done_record(id, status, end, &b);
    send(b.view());
    ++answered_;
}

// One complete line from the host: a cancel acts at once, everything else is queued.
void ServeSession::take_line(StrView line) {
    if (line.trim().empty()) return;  // blank lines (keep-alives) are ignored
    Queued q;
    Status s = parse_serve_request(line, &q.req);
    if (s.ok() && q.req.kind == ServeRequest::Kind::cancel) {
        if (!authorised(q.req)) return;
        StrView target(q.req.cancel_id);
        bool found = false;
        if (current_ && StrView(current_->id).eq(target)) {
            if (end_ == ServeEnd::normal) end_ = ServeEnd::cancelled;  // (a late one stays "timed out")
            found = true;
        }
        for (usize i = 0; !found && i < queue_.size(); ++i) {
            if (!queue_[i].req.has_id || !StrView(queue_[i].req.id).eq(target)) continue;
            answer_error(target, "cancelled", "request cancelled before it ran", kExitFailure, ServeEnd::cancelled);
            for (usize k = i + 1; k < queue_.size(); ++k) queue_[k - 1] = move(queue_[k]);
            queue_.pop();
            found = true;
        }
        if (found) {
            StrBuf b;
            serve_done_record(StrView(q.req.id), kExitOk, ServeEnd::normal, &b);
            send(b.view());
            ++answered_;
        } else {
            StrBuf m;
            m.printf("cancel: no request %s is running or waiting", q.req.cancel_id);
            answer_error(StrView(q.req.id), "not found", m.view(), kExitFailure);
        }
        return;
    }
    if (!s.ok()) q.error = s.error();
    else q.error.code = Errc::ok;
    queue_.push(move(q));
}

// Reads what the link has, a line at a time, while the queue has room.
void ServeSession::pump() {
    char buf[512];
    while (!link_broken_ && !input_ended_ && !refusal_pending_ && queue_.size() < kServeQueueMax) {
        Result<usize> r = link_.read(buf, sizeof buf);
        if (!r.ok()) {
            // Nothing more comes from the host; what it sent before is still answered
            // (a TCP host that shut down its sending side still reads).
            input_ended_ = true;
            return;
        }
        usize n = r.value();
        if (n) heard_ms_ = link_.now_ms();
        if (n == 0) {
            // A line that has begun is read to its end (up to kServeLineWaitMs): a
            // 16-byte UART FIFO refilled between polls would otherwise deliver a
            // cancel a few bytes per measurement job.
            if (in_.empty() && !discarding_) return;
            u64 now = link_.now_ms();
            if (!waiting_) waiting_since_ = now;
            waiting_ = true;
            if (now - waiting_since_ >= kServeLineWaitMs) return;
            link_.wait(1);
            continue;
        }
        waiting_ = false;
        for (usize i = 0; i < n; ++i) {
            char c = buf[i];
            if (c != '\n') {
                if (discarding_) continue;
                if (in_.size() >= kServeLineMax) {
                    discarding_ = true;
                    continue;
                }
                in_.push(c);
                continue;
            }
            if (discarding_) {
                Queued q;
                q.error = Error::make(Errc::invalid_argument, "request: longer than %u bytes (the limit of one line)",
                                      unsigned(kServeLineMax));
                queue_.push(move(q));
                discarding_ = false;
            } else {
                take_line(StrView(in_.data(), in_.size()));
            }
            in_.clear();
        }
    }
}

bool ServeSession::interrupted() {
    if (!current_) return false;
    pump();
    if (end_ == ServeEnd::normal && deadline_ && link_.now_ms() >= deadline_) end_ = ServeEnd::timed_out;
    return end_ != ServeEnd::normal || link_broken_;
}

void ServeSession::write(StrView text) {
    if (!current_) return;
    for (usize i = 0; i < text.len; ++i) {
        partial_.put(text[i]);
        if (text[i] != '\n') continue;
        // Once a request is stopped its command's remaining output is dropped.
        if (!interrupted()) {
            StrBuf b;
            serve_tag_text(partial_.view(), StrView(current_->id), &b);
            send(b.view());
        }
        partial_.clear();
    }
}

void ServeSession::write_record(const Value& rec) {
    if (!current_) return;
    flush_partial();  // text the command printed before it
    if (interrupted()) return;
    StrBuf b;
    serve_tag_record(rec, StrView(current_->id), &b);
    send(b.view());
}

void ServeSession::flush_partial() {
    if (partial_.size() == 0) return;
    partial_.put('\n');
    StrBuf rest;
    rest.put(partial_.view());
    partial_.clear();
    write(rest.view());
}

namespace {

// The command word of a request's command line (the first word that is not a global option).
const char* command_word(const ArgVec& av) {
    for (char* w : av.argv)
        if (!str_eq(w, "--json") && !str_eq(w, "--help") && !str_eq(w, "-h")) return w;
    return nullptr;
}

}  // namespace

void ServeSession::run_request(ServeRequest& r, ServeRunFn run, void* ctx) {
    StrView id(r.id);
    ArgVec av;
    Status s = split_command_line(r.cmd.view(), &av);
    if (!s.ok()) return answer_error(id, "invalid argument", s.error().msg, kExitUsage);
    for (char* w : av.argv) {
        if (str_eq(w, "--shutdown"))
            return answer_error(
                id, "invalid argument",
                "--shutdown is not taken in a request (send {\"id\":...,\"stop\":true}; the agent powers "
                "off when 'serve' was started with --shutdown)",
                kExitUsage);
        if (str_eq(w, "--unsafe") && !opts_.unsafe)
            return answer_error(id, "invalid argument",
                                "--unsafe is refused over the wire unless the agent was started with 'serve --unsafe'",
                                kExitUsage);
    }
    const char* cw = command_word(av);
    if (cw && str_eq(cw, "serve"))
        return answer_error(id, "invalid argument", "serve: the agent is already serving", kExitUsage);
    Vec<const char*> argv;
    for (char* w : av.argv) argv.push(w);
    argv.push("--json");
    current_ = &r;
    end_ = ServeEnd::normal;
    deadline_ = r.timeout_ms ? link_.now_ms() + r.timeout_ms : 0;
    int status = run(ctx, *this, int(argv.size()), argv.data());
    flush_partial();
    ServeEnd end = end_;
    current_ = nullptr;
    if (end == ServeEnd::cancelled) {
        answer_error(id, "cancelled", "request cancelled; its remaining jobs did not run", kExitFailure, end);
    } else if (end == ServeEnd::timed_out) {
        StrBuf m;
        m.printf("request ran out of time (timeout_ms %llu); its remaining jobs did not run",
                 (unsigned long long)r.timeout_ms);
        answer_error(id, "timeout", m.view(), kExitFailure, end);
    } else {
        StrBuf b;
        serve_done_record(id, status, ServeEnd::normal, &b);
        send(b.view());
        ++answered_;
    }
}

// Whether a request carries the pre-shared token (any request when none is asked for).
// One that does not is answered with an "unauthorized" error, logged on the console
// without a word of the token, and with refusal_closes ends the connection.
bool ServeSession::authorised(const ServeRequest& r) {
    if (!opts_.token[0]) return true;
    if (r.has_token && serve_token_matches(StrView(r.token), StrView(opts_.token))) return true;
    ++refused_;
    const char* what = r.has_token ? "a wrong token" : "no token";
    StrBuf m;
    m.printf("request refused: %s; this agent takes requests with its pre-shared token in the \"token\" field "
             "(serve --token-file/--token; pmulab-client --token-file, --token or $PMULAB_TOKEN)%s",
             what, opts_.refusal_closes ? "; the connection is closed" : "");
    answer_error(StrView(r.id), "unauthorized", m.view(), kExitFailure);
    StrBuf log;
    log.printf("pmulab serve: refused request %s (%s)%s\n", r.id, what,
               opts_.refusal_closes ? "; closing the connection" : "");
    inner_.write(log.view());
    if (opts_.refusal_closes) refusal_pending_ = true;
    return false;
}

int ServeSession::end(ServeStopReason why, const char* bye) {
    if (bye) {
        StrBuf b;
        serve_bye_record(bye, &b);
        send(b.view());
    }
    stop_reason_ = why;
    return why == ServeStopReason::stop || why == ServeStopReason::idle ? kExitOk : kExitFailure;
}

int ServeSession::serve(ServeRunFn run, void* ctx) {
    StrBuf hello;
    JsonWriter w(hello);
    w.begin_object().field("type", "hello").key("id").null().field_u("protocol", 1);
    w.field("pmulab_version", PMULAB_VERSION).field("link", link_.describe());
    w.field_u("line_max", kServeLineMax).field_u("blob_max", kServeBlobMax).field_u("blobs_max", kServeBlobsMax);
    // Whether requests need the token (never the token itself), so that a client without
    // one can say so before sending anything.
    w.field_b("token_required", opts_.token[0] != 0);
    // pmulab-sim: marked as the meta record marks it, so that no host mistakes the
    // answers for a measurement.
    if (inner_.simulated()) w.field_b("simulated", true).field("simulated_machine", inner_.simulated());
    provenance_json(w, provenance(inner_));  // hardware, a virtual machine (TCG, -icount), simulated
    w.end_object();
    hello.put('\n');
    send(hello.view());
    u64 last = link_.now_ms();
    heard_ms_ = last;
    for (;;) {
        pump();
        if (refusal_pending_) return end(ServeStopReason::refused, "unauthorized");
        if (link_broken_ || (input_ended_ && queue_.empty())) return end(ServeStopReason::broken, nullptr);
        if (queue_.empty()) {
            u64 now = link_.now_ms();
            if (opts_.idle_ms && now - last >= opts_.idle_ms) return end(ServeStopReason::idle, "idle");
            if (opts_.silent_ms && now - (heard_ms_ > last ? heard_ms_ : last) >= opts_.silent_ms)
                return end(ServeStopReason::silent, "idle-timeout");
            link_.wait(1);
            continue;
        }
        Queued q = move(queue_[0]);
        for (usize k = 1; k < queue_.size(); ++k) queue_[k - 1] = move(queue_[k]);
        queue_.pop();
        last = link_.now_ms();
        if (!authorised(q.req)) {
            if (refusal_pending_) return end(ServeStopReason::refused, "unauthorized");
            continue;
        }
        if (q.error.code != Errc::ok) {
            answer_error(StrView(q.req.id), errc_name(q.error.code), q.error.msg, kExitUsage);
            continue;
        }
        if (q.req.kind == ServeRequest::Kind::stop) {
            StrBuf b;
            serve_done_record(StrView(q.req.id), kExitOk, ServeEnd::normal, &b);
            send(b.view());
            ++answered_;
            return end(ServeStopReason::stop, "stop");
        }
        run_request(q.req, run, ctx);
        last = link_.now_ms();
    }
}

}  // namespace pmulab
