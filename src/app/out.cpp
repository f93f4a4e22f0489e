#include "app/out.h"

#include <stdarg.h>

#include "app/lava.h"
#include "base/json.h"

namespace pmulab {

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

void Out::lava_record(StrView line) {
    StrBuf b;
    if (lava_line_for_record(line, &b)) p_.write(b.view());
}

void Out::error(const Error& e) {
    outcome_.note(e.code);
    StrBuf msg;
    if (context_) msg.printf("%s: ", context_);
    msg.put(StrView(e.msg));
    StrBuf jl;
    JsonWriter w(jl);
    w.begin_object().field("type", "error").field("code", errc_name(e.code));
    w.field("message", msg.view());
    if (e.code == Errc::fault || e.has_vector) w.field_u("vector", e.vector);
    w.end_object();
    jl.put('\n');
    // Errors belong to the results too: a run that failed says why in its file.
    if (sink_) sink_->record(jl.view());
    if (json_) {
        p_.write(jl.view());
    } else {
        // Text mode: a diagnostic (stderr where the platform has one), control
        // characters from arguments escaped. JSON mode keeps the record on stdout.
        StrBuf b;
        b.put("pmulab: error: ");
        put_escaped(b, msg.view());
        b.put('\n');
        p_.write_diag(b.view());
    }
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
    StrBuf b;
    if (json_) {
        JsonWriter w(b);
        w.begin_object().field("type", "warning").field("message", full.view()).end_object();
        b.put('\n');
        p_.write(b.view());
    } else {
        b.put("pmulab: warning: ");
        put_escaped(b, full.view());
        b.put('\n');
        p_.write_diag(b.view());
    }
}

}  // namespace pmulab
