#include "app/serve_request.h"

#include <stdarg.h>

#include "base/json.h"

namespace pmulab {

namespace {

// The fields of a request, one bit each (ServeRequest's fields seen so far).
enum Field : u32 { kId = 1, kCmd = 2, kCancel = 4, kStop = 8, kTimeout = 16, kBlobs = 32, kToken = 64 };
constexpr const char* kFieldNames[] = {"id", "cmd", "cancel", "stop", "timeout_ms", "blobs", "token"};
constexpr u32 kFieldCount = sizeof kFieldNames / sizeof kFieldNames[0];

// The request object, read by the one JSON reader (base/json.h), checked against the
// fields of docs/agent.md and nothing else. Errors name the byte (1-based) where the
// request went wrong, found from the offsets the reader keeps.
struct Checker {
    StrView s;
    ServeRequest* req;

    Error err(usize at, const char* fmt, ...) __attribute__((format(printf, 3, 4))) {
        char what[256];
        va_list ap;
        va_start(ap, fmt);
        vformat_to(what, sizeof what, fmt, ap);
        va_end(ap);
        return Error::make(Errc::invalid_argument, "request: %s (at byte %u)", what, unsigned(at + 1));
    }
    // An error of the request as a whole (no position).
    Error whole(const char* what) { return Error::make(Errc::invalid_argument, "request: %s", what); }
    // The string token s[from, to) (quotes included; valid JSON): ASCII text of at most
    // `max` characters, no NUL.
    Status ascii(usize from, usize to, usize max, const char* what) {
        usize n = 0;
        for (usize k = from + 1; k + 1 < to;) {
            u8 c = u8(s[k]);
            if (c >= 0x80) return err(k + 1, "%s: non-ASCII byte 0x%02x (requests are ASCII)", what, c);
            if (c == '\\' && s[k + 1] == 'u') {
                u64 cp = 0;
                (void)parse_hex_u64(s.sub(k + 2, 4), &cp);
                if (cp == 0 || cp >= 0x80)
                    return err(k + 2, "%s: \\u%04x is not a non-NUL ASCII character", what, unsigned(cp));
                k += 6;
            } else {
                k += c == '\\' ? 2 : 1;
            }
            if (++n > max) return err(k, "%s: longer than %u characters", what, unsigned(max));
        }
        return ok_status();
    }
    Status string(const Value& v, usize max, const char* what) {
        if (!v.is_string()) return err(v.offset, "%s: expected a string", what);
        return ascii(v.offset, v.end_offset, max, what);
    }
    // A non-negative integer below 2^53 (no sign, fraction or exponent).
    Status integer(const Value& v, u64* out, const char* what) {
        StrView t = v.is_number() ? v.text() : StrView();
        u64 x = 0;
        usize k = 0;
        for (; k < t.len && t[k] >= '0' && t[k] <= '9'; ++k) {
            x = x * 10 + u64(t[k] - '0');
            if (x > kServeIdNumMax) return err(v.offset + k, "%s: number larger than 2^53-1", what);
        }
        if (k == 0) return err(v.offset, "%s: expected a non-negative integer", what);
        if (k < t.len) return err(v.offset + k, "%s: expected an integer, not a fraction", what);
        *out = x;
        return ok_status();
    }
    // An id: a string of [A-Za-z0-9_.:-] or an integer; stored as JSON text in dst.
    Status id(const Value& v, char* dst, usize cap, const char* what) {
        if (v.is_string()) {
            PMULAB_TRY(string(v, kServeIdMax, what));
            StrView t = v.text();
            if (t.empty()) return err(v.end_offset, "%s: empty", what);
            for (usize k = 0; k < t.len; ++k) {
                char c = t[k];
                bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                          c == '.' || c == ':' || c == '-';
                if (!ok) return err(v.end_offset, "%s: '%c' is not allowed (letters, digits and _ . : -)", what, c);
            }
            format_to(dst, cap, "\"%.*s\"", int(t.len), t.ptr);
            return ok_status();
        }
        u64 n;
        if (!v.is_number() || v.text()[0] == '-')
            return err(v.offset, "%s: expected a string or a non-negative integer", what);
        PMULAB_TRY(integer(v, &n, what));
        format_to(dst, cap, "%llu", (unsigned long long)n);
        return ok_status();
    }
    Status blob(const Value& v, StrView name) {
        PMULAB_TRY(ascii(v.key_offset, v.key_end, kServeBlobNameMax, "blob name"));
        char n[kServeBlobNameMax + 1];
        format_to(n, sizeof n, "%.*s", int(name.len), name.ptr);
        if (!serve_blob_name_ok(name))
            return err(v.key_end, "blob name '%s': use 1-%u characters of letters, digits and _ . -", n,
                       unsigned(kServeBlobNameMax));
        for (const ServeBlob& b : req->blobs)
            if (str_eq(b.name, n)) return err(v.key_end, "blob '%s' given twice", n);
        if (req->blobs.size() >= kServeBlobsMax)
            return err(v.key_end, "more than %u blobs in one request", unsigned(kServeBlobsMax));
        if (!v.is_string()) return err(v.offset, "blob '%s': expected a base64 string", n);
        ServeBlob& blob = req->blobs.emplace();
        str_copy(blob.name, sizeof blob.name, n);
        StrView text = v.text();
        if (text.empty()) return err(v.end_offset, "blob '%s' is empty", n);
        usize pads = text.len >= 2 && text[text.len - 1] == '=' ? (text[text.len - 2] == '=' ? 2 : 1) : 0;
        if (text.len / 4 * 3 - (text.len % 4 ? 0 : pads) > kServeBlobMax)
            return err(v.end_offset, "blob '%s' decodes to more than %u bytes", n, unsigned(kServeBlobMax));
        if (!base64_decode(text, kServeBlobMax, &blob.data))
            return err(v.end_offset, "blob '%s' is not base64 (RFC 4648, with padding, no whitespace)", n);
        return ok_status();
    }
    Status blobs(const Value& v) {
        if (!v.is_object()) return err(v.offset, "blobs: expected an object of name: base64 strings");
        for (usize k = 0; k < v.size(); ++k) PMULAB_TRY(blob(v[k], v.key(k)));
        return ok_status();
    }
    // One field of the request; *seen has one bit per field name (a second one is an error).
    Status field(StrView k, const Value& v, u32* seen) {
        u32 bit = 0;
        for (u32 f = 0; f < kFieldCount; ++f)
            if (k.eq(kFieldNames[f])) bit = 1u << f;
        PMULAB_TRY(ascii(v.key_offset, v.key_end, 32, "field name"));
        char name[40];
        format_to(name, sizeof name, "%.*s", int(k.len), k.ptr);
        if (!bit)
            return err(v.offset, "unknown field \"%s\" (fields: id, token, cmd, blobs, timeout_ms, cancel, stop)",
                       name);
        if (*seen & bit) return err(v.offset, "field \"%s\" given twice", name);
        *seen |= bit;
        if (bit == kId) {
            PMULAB_TRY(id(v, req->id, sizeof req->id, "id"));
            req->has_id = true;
        } else if (bit == kCmd) {
            PMULAB_TRY(string(v, kServeCmdMax, "cmd"));
            req->cmd.put(v.text());
        } else if (bit == kCancel) {
            PMULAB_TRY(id(v, req->cancel_id, sizeof req->cancel_id, "cancel"));
        } else if (bit == kStop) {
            if (v.kind() != Value::Kind::boolean || !v.as_bool()) return err(v.offset, "stop: expected true");
        } else if (bit == kToken) {
            // Never echoed: the errors say what is wrong, not what was sent.
            if (!v.is_string()) return err(v.offset, "token: expected a string");
            if (v.text().len > kServeTokenMax)
                return err(v.offset, "token: longer than %u characters", unsigned(kServeTokenMax));
            format_to(req->token, sizeof req->token, "%.*s", int(v.text().len), v.text().ptr);
            req->has_token = true;
        } else if (bit == kTimeout) {
            PMULAB_TRY(integer(v, &req->timeout_ms, "timeout_ms"));
            if (req->timeout_ms == 0 || req->timeout_ms > kServeTimeoutMaxMs)
                return err(v.end_offset, "timeout_ms: give 1 to %llu", (unsigned long long)kServeTimeoutMaxMs);
        } else {
            PMULAB_TRY(blobs(v));
        }
        return ok_status();
    }
    // The kind of request from the fields it has.
    Status kind(u32 seen) {
        bool cmd = seen & kCmd, cancel = seen & kCancel, stop = seen & kStop;
        if (!req->has_id) return whole("no \"id\" (every request needs one: a string or an integer)");
        if (int(cmd) + int(cancel) + int(stop) != 1)
            return whole("give exactly one of \"cmd\", \"cancel\" and \"stop\"");
        req->kind = cancel ? ServeRequest::Kind::cancel : stop ? ServeRequest::Kind::stop : ServeRequest::Kind::command;
        if (req->kind != ServeRequest::Kind::command && (seen & (kTimeout | kBlobs)))
            return whole("\"blobs\" and \"timeout_ms\" belong to a \"cmd\" request");
        if (req->kind == ServeRequest::Kind::command && req->cmd.view().trim().empty())
            return whole("cmd: empty command line");
        return ok_status();
    }
    Status parse() {
        if (s.len > kServeLineMax) return err(0, "longer than %u bytes", unsigned(kServeLineMax));
        usize i = 0;
        while (i < s.len && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r')) ++i;
        if (i >= s.len || s[i] != '{') return err(i, "expected a JSON object");
        Value v;
        JsonError je;
        if (!json_read_value(s, &i, &v, &je)) return err(je.offset, "%s", je.what);
        while (i < s.len && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\n')) ++i;
        if (i != s.len) return err(i, "trailing characters after the object");
        u32 seen = 0;
        for (usize k = 0; k < v.size(); ++k) PMULAB_TRY(field(v.key(k), v[k], &seen));
        return kind(seen);
    }
};

int b64_value(char c) {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
}

}  // namespace

bool serve_blob_name_ok(StrView name) {
    if (name.empty() || name.len > kServeBlobNameMax) return false;
    for (usize k = 0; k < name.len; ++k) {
        char c = name[k];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
                  c == '-';
        if (!ok) return false;
    }
    return true;
}

bool base64_decode(StrView in, usize max, Vec<u8>* out) {
    out->clear();
    if (in.len % 4 != 0) return false;
    for (usize q = 0; q < in.len; q += 4) {
        int v[4];
        int pad = 0;
        for (int k = 0; k < 4; ++k) {
            char c = in[q + k];
            if (c == '=') {
                // Padding only in the last quantum, at most two, and only at its end.
                if (q + 4 != in.len || k < 2) return false;
                v[k] = 0;
                ++pad;
                continue;
            }
            if (pad) return false;
            v[k] = b64_value(c);
            if (v[k] < 0) return false;
        }
        u32 w = u32(v[0]) << 18 | u32(v[1]) << 12 | u32(v[2]) << 6 | u32(v[3]);
        int n = 3 - pad;
        // Canonical form: the bits that padding drops are zero.
        if (pad == 1 && (w & 0xff)) return false;
        if (pad == 2 && (w & 0xffff)) return false;
        if (out->size() + usize(n) > max) return false;
        out->push(u8(w >> 16));
        if (n > 1) out->push(u8(w >> 8));
        if (n > 2) out->push(u8(w));
    }
    return true;
}

Status parse_serve_request(StrView line, ServeRequest* req) {
    req->blobs.clear();
    req->cmd.clear();
    str_copy(req->id, sizeof req->id, "null");
    req->has_id = false;
    req->cancel_id[0] = 0;
    req->timeout_ms = 0;
    req->token[0] = 0;
    req->has_token = false;
    req->kind = ServeRequest::Kind::command;
    // Strip one trailing newline (and a CR before it): the line as the host sent it.
    if (line.len && line[line.len - 1] == '\n') line = line.sub(0, line.len - 1);
    if (line.len && line[line.len - 1] == '\r') line = line.sub(0, line.len - 1);
    Checker r{line, req};
    Status s = r.parse();
    if (!s.ok() && !req->has_id) {
        // An id after the field that failed: answer with it when it reads cleanly.
        for (usize k = 0; k + 4 <= line.len; ++k) {
            if (!line.sub(k, 4).eq("\"id\"")) continue;
            usize at = k + 4;
            while (at < line.len && (line[at] == ' ' || line[at] == '\t' || line[at] == '\r')) ++at;
            Value v;
            char id[sizeof req->id];
            if (at < line.len && line[at] == ':' && (++at, json_read_value(line, &at, &v, nullptr)) &&
                r.id(v, id, sizeof id, "id").ok()) {
                str_copy(req->id, sizeof req->id, id);
                req->has_id = true;
            }
            break;
        }
    }
    return s;
}

Value serve_id_value(StrView id_json) {
    Value v;
    if (!json_read(id_json, &v, nullptr)) return Value();
    return v;
}

void serve_tag_record(const Value& rec, StrView id_json, StrBuf* out) {
    Value tagged = rec.clone();
    tagged.set_first("id", serve_id_value(id_json));
    json_write_line(*out, tagged);
}

void serve_tag_text(StrView line, StrView id_json, StrBuf* out) {
    if (line.len && line[line.len - 1] == '\n') line = line.sub(0, line.len - 1);
    if (line.len && line[line.len - 1] == '\r') line = line.sub(0, line.len - 1);
    Value rec;
    JsonWriter w(rec);
    w.begin_object().key("id").value(serve_id_value(id_json)).field("type", "text").field("text", line).end_object();
    json_write_line(*out, rec);
}

void serve_done_record(StrView id_json, int status, ServeEnd end, StrBuf* out) {
    Value rec;
    JsonWriter w(rec);
    w.begin_object().field("type", "done").key("id").value(serve_id_value(id_json)).field_i("status", status);
    if (end == ServeEnd::cancelled) w.field_b("cancelled", true);
    if (end == ServeEnd::timed_out) w.field_b("timed_out", true);
    w.end_object();
    json_write_line(*out, rec);
}

void serve_bye_record(const char* reason, StrBuf* out) {
    Value rec;
    JsonWriter w(rec);
    w.begin_object().field("type", "bye").key("id").null().field("reason", reason).end_object();
    json_write_line(*out, rec);
}

void serve_error_record(StrView id_json, const char* code, StrView message, StrBuf* out) {
    Value rec;
    JsonWriter w(rec);
    w.begin_object().field("type", "error").key("id").value(serve_id_value(id_json));
    w.field("code", code).field("message", message).end_object();
    json_write_line(*out, rec);
}

Status check_serve_token(StrView token, const char* option) {
    if (token.len < kServeTokenMin || token.len > kServeTokenMax)
        return Error::make(Errc::invalid_argument,
                           "%s: the token has %u characters; give %u to %u (e.g. `openssl rand -hex 16`)", option,
                           unsigned(token.len), unsigned(kServeTokenMin), unsigned(kServeTokenMax));
    for (usize k = 0; k < token.len; ++k) {
        u8 c = u8(token[k]);
        if (c <= ' ' || c >= 0x7f || c == '"' || c == '\\')
            return Error::make(Errc::invalid_argument,
                               "%s: character %u of the token is not allowed (printable ASCII without spaces, "
                               "quotes and backslashes)",
                               option, unsigned(k + 1));
    }
    return ok_status();
}

bool serve_token_matches(StrView given, StrView expected) {
    // The time taken depends on the expected token's length only, not on where the
    // given one differs.
    u32 diff = u32(given.len ^ expected.len);
    for (usize k = 0; k < expected.len; ++k) diff |= u32(u8(k < given.len ? given[k] : 0) ^ u8(expected[k]));
    return diff == 0 && expected.len > 0;
}

}  // namespace pmulab
