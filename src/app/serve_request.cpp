#include "app/serve_request.h"

#include <stdarg.h>

#include "base/json.h"

namespace pmulab {

namespace {

// A strict reader of the request object: the fields of docs/agent.md and nothing else.
struct Reader {
    StrView s;
    usize i = 0;
    ServeRequest* req;

    Error err(const char* fmt, ...) __attribute__((format(printf, 2, 3))) {
        char what[256];
        va_list ap;
        va_start(ap, fmt);
        vformat_to(what, sizeof what, fmt, ap);
        va_end(ap);
        return Error::make(Errc::invalid_argument, "request: %s (at byte %u)", what, unsigned(i + 1));
    }
    // An error of the request as a whole (no position).
    Error whole(const char* what) { return Error::make(Errc::invalid_argument, "request: %s", what); }
    void ws() {
        while (i < s.len && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r')) ++i;
    }
    bool eat(char c) {
        ws();
        if (i < s.len && s[i] == c) {
            ++i;
            return true;
        }
        return false;
    }
    // A JSON string of ASCII text, at most `max` characters after unescaping.
    Status string(StrBuf* out, usize max, const char* what) {
        ws();
        if (i >= s.len || s[i] != '"') return err("%s: expected a string", what);
        ++i;
        usize n = 0;
        for (;;) {
            if (i >= s.len) return err("%s: unterminated string", what);
            char c = s[i++];
            if (c == '"') break;
            if (u8(c) < 0x20) return err("%s: control character 0x%02x in a string (escape it)", what, u8(c));
            if (u8(c) >= 0x80) return err("%s: non-ASCII byte 0x%02x (requests are ASCII)", what, u8(c));
            if (c == '\\') {
                if (i >= s.len) return err("%s: unterminated escape", what);
                char e = s[i++];
                switch (e) {
                    case '"': c = '"'; break;
                    case '\\': c = '\\'; break;
                    case '/': c = '/'; break;
                    case 'b': c = '\b'; break;
                    case 'f': c = '\f'; break;
                    case 'n': c = '\n'; break;
                    case 'r': c = '\r'; break;
                    case 't': c = '\t'; break;
                    case 'u': {
                        u64 cp = 0;
                        if (i + 4 > s.len || !parse_hex_u64(s.sub(i, 4), &cp)) return err("%s: bad \\u escape", what);
                        if (cp == 0 || cp >= 0x80)
                            return err("%s: \\u%04x is not a non-NUL ASCII character", what, unsigned(cp));
                        i += 4;
                        c = char(cp);
                        break;
                    }
                    default: return err("%s: bad escape '\\%c'", what, e);
                }
            }
            if (++n > max) return err("%s: longer than %u characters", what, unsigned(max));
            if (out) out->put(c);
        }
        return ok_status();
    }
    // A non-negative integer below 2^53 (no sign, fraction or exponent).
    Status integer(u64* v, const char* what) {
        ws();
        usize b = i;
        u64 x = 0;
        while (i < s.len && s[i] >= '0' && s[i] <= '9') {
            x = x * 10 + u64(s[i] - '0');
            if (x > kServeIdNumMax) return err("%s: number larger than 2^53-1", what);
            ++i;
        }
        if (i == b) return err("%s: expected a non-negative integer", what);
        if (i - b > 1 && s[b] == '0') return err("%s: leading zero", what);
        if (i < s.len && (s[i] == '.' || s[i] == 'e' || s[i] == 'E'))
            return err("%s: expected an integer, not a fraction", what);
        *v = x;
        return ok_status();
    }
    // An id: a string of [A-Za-z0-9_.:-] or an integer; stored as JSON text in dst.
    Status id(char* dst, usize cap, const char* what) {
        ws();
        if (i < s.len && s[i] == '"') {
            StrBuf v;
            PMULAB_TRY(string(&v, kServeIdMax, what));
            if (v.size() == 0) return err("%s: empty", what);
            for (usize k = 0; k < v.size(); ++k) {
                char c = v.view()[k];
                bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                          c == '.' || c == ':' || c == '-';
                if (!ok) return err("%s: '%c' is not allowed (letters, digits and _ . : -)", what, c);
            }
            format_to(dst, cap, "\"%s\"", v.c_str());
            return ok_status();
        }
        u64 n;
        if (i >= s.len || s[i] < '0' || s[i] > '9') return err("%s: expected a string or a non-negative integer", what);
        PMULAB_TRY(integer(&n, what));
        format_to(dst, cap, "%llu", (unsigned long long)n);
        return ok_status();
    }
    Status literal(const char* word, const char* what) {
        ws();
        StrView w(word);
        if (i + w.len > s.len || !s.sub(i, w.len).eq(w)) return err("%s: expected %s", what, word);
        i += w.len;
        return ok_status();
    }
    Status blobs() {
        if (!eat('{')) return err("blobs: expected an object of name: base64 strings");
        if (eat('}')) return ok_status();
        for (;;) {
            StrBuf name;
            PMULAB_TRY(string(&name, kServeBlobNameMax, "blob name"));
            if (!serve_blob_name_ok(name.view()))
                return err("blob name '%s': use 1-%u characters of letters, digits and _ . -", name.c_str(),
                           unsigned(kServeBlobNameMax));
            for (const ServeBlob& b : req->blobs)
                if (str_eq(b.name, name.c_str())) return err("blob '%s' given twice", name.c_str());
            if (req->blobs.size() >= kServeBlobsMax)
                return err("more than %u blobs in one request", unsigned(kServeBlobsMax));
            if (!eat(':')) return err("blobs: expected ':'");
            ws();
            if (i >= s.len || s[i] != '"') return err("blob '%s': expected a base64 string", name.c_str());
            usize b = ++i;
            while (i < s.len && s[i] != '"') ++i;
            if (i >= s.len) return err("blob '%s': unterminated string", name.c_str());
            ServeBlob& blob = req->blobs.emplace();
            str_copy(blob.name, sizeof blob.name, name.c_str());
            StrView text = s.sub(b, i - b);
            ++i;
            if (text.empty()) return err("blob '%s' is empty", name.c_str());
            usize pads = text.len >= 2 && text[text.len - 1] == '=' ? (text[text.len - 2] == '=' ? 2 : 1) : 0;
            if (text.len / 4 * 3 - (text.len % 4 ? 0 : pads) > kServeBlobMax)
                return err("blob '%s' decodes to more than %u bytes", name.c_str(), unsigned(kServeBlobMax));
            if (!base64_decode(text, kServeBlobMax, &blob.data))
                return err("blob '%s' is not base64 (RFC 4648, with padding, no whitespace)", name.c_str());
            if (eat(',')) continue;
            if (eat('}')) return ok_status();
            return err("blobs: expected ',' or '}'");
        }
    }
    Status parse() {
        if (s.len > kServeLineMax) return err("longer than %u bytes", unsigned(kServeLineMax));
        if (!eat('{')) return err("expected a JSON object");
        bool seen_cmd = false, seen_cancel = false, seen_stop = false, seen_timeout = false, seen_blobs = false;
        if (!eat('}'))
            for (;;) {
                StrBuf key;
                PMULAB_TRY(string(&key, 32, "field name"));
                if (!eat(':')) return err("expected ':' after \"%s\"", key.c_str());
                StrView k = key.view();
                bool dup = false;
                if (k.eq("id")) {
                    dup = req->has_id;
                    if (!dup) {
                        PMULAB_TRY(id(req->id, sizeof req->id, "id"));
                        req->has_id = true;
                    }
                } else if (k.eq("cmd")) {
                    dup = seen_cmd;
                    seen_cmd = true;
                    if (!dup) PMULAB_TRY(string(&req->cmd, kServeCmdMax, "cmd"));
                } else if (k.eq("cancel")) {
                    dup = seen_cancel;
                    seen_cancel = true;
                    if (!dup) PMULAB_TRY(id(req->cancel_id, sizeof req->cancel_id, "cancel"));
                } else if (k.eq("stop")) {
                    dup = seen_stop;
                    seen_stop = true;
                    if (!dup) PMULAB_TRY(literal("true", "stop"));
                } else if (k.eq("timeout_ms")) {
                    dup = seen_timeout;
                    seen_timeout = true;
                    if (!dup) {
                        PMULAB_TRY(integer(&req->timeout_ms, "timeout_ms"));
                        if (req->timeout_ms == 0 || req->timeout_ms > kServeTimeoutMaxMs)
                            return err("timeout_ms: give 1 to %llu", (unsigned long long)kServeTimeoutMaxMs);
                    }
                } else if (k.eq("blobs")) {
                    dup = seen_blobs;
                    seen_blobs = true;
                    if (!dup) PMULAB_TRY(blobs());
                } else {
                    return err("unknown field \"%s\" (fields: id, cmd, blobs, timeout_ms, cancel, stop)", key.c_str());
                }
                if (dup) return err("field \"%s\" given twice", key.c_str());
                if (eat(',')) continue;
                if (eat('}')) break;
                return err("expected ',' or '}'");
            }
        ws();
        if (i != s.len) return err("trailing characters after the object");
        if (!req->has_id) return whole("no \"id\" (every request needs one: a string or an integer)");
        int kinds = int(seen_cmd) + int(seen_cancel) + int(seen_stop);
        if (kinds != 1) return whole("give exactly one of \"cmd\", \"cancel\" and \"stop\"");
        if (seen_cancel) req->kind = ServeRequest::Kind::cancel;
        else if (seen_stop) req->kind = ServeRequest::Kind::stop;
        else req->kind = ServeRequest::Kind::command;
        if (req->kind != ServeRequest::Kind::command && (seen_blobs || seen_timeout))
            return whole("\"blobs\" and \"timeout_ms\" belong to a \"cmd\" request");
        if (req->kind == ServeRequest::Kind::command && req->cmd.view().trim().empty())
            return whole("cmd: empty command line");
        return ok_status();
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
    req->kind = ServeRequest::Kind::command;
    // Strip one trailing newline (and a CR before it): the line as the host sent it.
    if (line.len && line[line.len - 1] == '\n') line = line.sub(0, line.len - 1);
    if (line.len && line[line.len - 1] == '\r') line = line.sub(0, line.len - 1);
    Reader r{line, 0, req};
    Status s = r.parse();
    if (!s.ok() && !req->has_id) {
        // An id after the field that failed: answer with it when it reads cleanly.
        for (usize k = 0; k + 4 <= line.len; ++k) {
            if (!line.sub(k, 4).eq("\"id\"")) continue;
            Reader probe{line, k + 4, req};
            char id[sizeof req->id];
            if (probe.eat(':') && probe.id(id, sizeof id, "id").ok()) {
                str_copy(req->id, sizeof req->id, id);
                req->has_id = true;
            }
            break;
        }
    }
    return s;
}

void serve_tag_record(StrView line, StrView id_json, StrBuf* out) {
    if (line.len && line[line.len - 1] == '\n') line = line.sub(0, line.len - 1);
    if (line.len && line[line.len - 1] == '\r') line = line.sub(0, line.len - 1);
    if (line.len >= 2 && line[0] == '{' && line[line.len - 1] == '}') {
        out->put("{\"id\":");
        out->put(id_json);
        StrView rest = line.sub(1);
        if (!rest.trim().eq("}")) out->put(',');
        out->put(rest);
        out->put('\n');
        return;
    }
    out->put("{\"id\":");
    out->put(id_json);
    out->put(",\"type\":\"text\",\"text\":");
    json_escape(*out, line);
    out->put("}\n");
}

void serve_done_record(StrView id_json, int status, ServeEnd end, StrBuf* out) {
    out->put("{\"type\":\"done\",\"id\":");
    out->put(id_json);
    out->printf(",\"status\":%d", status);
    if (end == ServeEnd::cancelled) out->put(",\"cancelled\":true");
    if (end == ServeEnd::timed_out) out->put(",\"timed_out\":true");
    out->put("}\n");
}

void serve_error_record(StrView id_json, const char* code, StrView message, StrBuf* out) {
    out->put("{\"type\":\"error\",\"id\":");
    out->put(id_json);
    out->put(",\"code\":");
    json_escape(*out, StrView(code));
    out->put(",\"message\":");
    json_escape(*out, message);
    out->put("}\n");
}

}  // namespace pmulab
