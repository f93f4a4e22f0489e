#include "base/result.h"

#include <stdarg.h>

#include "base/fmt.h"

namespace pmulab {

const char* errc_name(Errc c) {
    switch (c) {
        case Errc::ok: return "ok";
        case Errc::invalid_argument: return "invalid argument";
        case Errc::unsupported: return "unsupported";
        case Errc::fault: return "fault";
        case Errc::io: return "i/o error";
        case Errc::not_found: return "not found";
        case Errc::internal: return "internal error";
    }
    return "error";
}

Error Error::vmake(Errc c, const char* fmt, va_list ap) {
    Error e;
    e.code = c;
    vformat_to(e.msg, sizeof e.msg, fmt, ap);
    return e;
}

Error Error::make(Errc c, const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    Error e = vmake(c, fmt, ap);
    va_end(ap);
    return e;
}

Error Error::with_context(const char* fmt, ...) const {
    char prefix[kMsgMax];
    va_list ap;
    va_start(ap, fmt);
    vformat_to(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    Error out = *this;
    format_to(out.msg, sizeof out.msg, "%s: %s", prefix, msg);
    return out;
}

}  // namespace pmulab
