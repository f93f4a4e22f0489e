#include "app/out.h"

#include <stdarg.h>

#include "app/lava.h"
#include "base/json.h"

namespace pmulab {

namespace {

// Text mode: a diagnostic (stderr where the platform has one), control characters from
// arguments escaped. JSON mode keeps the record on stdout.
void put_diag(Platform& p, const char* prefix, StrView msg) {
    StrBuf b;
    b.put(StrView(prefix));
    put_escaped(b, msg);
    b.put('\n');
    p.write_diag(b.view());
}

}  // namespace

int exit_status_for(Errc c) {
    switch (c) {
        case Errc::ok: return kExitOk;
        case Errc::invalid_argument: return kExitUsage;
        case Errc::unsupported: return kExitUnsupported;
        case Errc::internal: return kExitInternal;
        default: return kExitFailure;
    }
}

void Out::text(const char* fmt, ...) {
    if (json_) return;
    StrBuf b;
    va_list ap;
    va_start(ap, fmt);
    b.vprintf(fmt, ap);
    va_end(ap);
    p_.write(b.view());
}

void Out::simulated_mark() {
    if (!p_.simulated()) return;
    text("SIMULATED %s: counts above come from the simulator's model, not from hardware\n", p_.simulated());
}

void Out::record(const Value& rec) {
    if (sink_) sink_->record(rec);
    if (json_) p_.write_record(rec);
    if (lava_) {
        StrBuf b;
        if (lava_line_for_record(rec, &b)) p_.write(b.view());
    }
}

void Out::error(const Error& e) {
    outcome_.note(e.code);
    StrBuf msg;
    if (context_) msg.printf("%s: ", context_);
    msg.put(StrView(e.msg));
    Value rec;
    JsonWriter w(rec);
    w.begin_object().field("type", "error").field("code", errc_name(e.code));
    w.field("message", msg.view());
    if (e.code == Errc::fault || e.has_vector) w.field_u("vector", e.vector);
    w.end_object();
    // Errors belong to the results too: a run that failed says why in its file.
    if (sink_) sink_->record(rec);
    if (json_) p_.write_record(rec);
    else put_diag(p_, "pmulab: error: ", msg.view());
}

void Out::error_msg(Errc c, const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    Error e = Error::vmake(c, fmt, ap);
    va_end(ap);
    error(e);
}

void Out::warn(const char* fmt, ...) {
    StrBuf full;
    if (context_) full.printf("%s: ", context_);
    va_list ap;
    va_start(ap, fmt);
    full.vprintf(fmt, ap);
    va_end(ap);
    if (json_) {
        Value rec;
        JsonWriter w(rec);
        w.begin_object().field("type", "warning").field("message", full.view()).end_object();
        p_.write_record(rec);
    } else {
        put_diag(p_, "pmulab: warning: ", full.view());
    }
}

}  // namespace pmulab
