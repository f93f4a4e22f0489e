// Checks shared by the libFuzzer target fuzz_serve (make fuzz) and the unit test that
// replays its corpus: the `pmulab serve` request parser and the record tagger must never
// crash, hang or break their contracts on any line a host could send.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

#include "app/serve_request.h"
#include "base/json.h"

namespace fuzz_serve {

// Empty string: fine; otherwise a description of the broken contract.
inline std::string check_input(const uint8_t* data, size_t size) {
    using namespace pmulab;
    StrView line(reinterpret_cast<const char*>(data), size);
    ServeRequest req;
    Status s = parse_serve_request(line, &req);
    // The id is always JSON text the answer can carry: null, an integer or a string.
    std::string id = req.id;
    if (id.empty() || id.size() > kServeIdMax + 2) return "bad id length";
    if (id != "null" && !(id[0] == '"' && id.back() == '"' && id.size() >= 3) &&
        id.find_first_not_of("0123456789") != std::string::npos)
        return "id is not JSON text: " + id;
    if (!s.ok()) {
        if (std::strncmp(s.error().msg, "request: ", 9) != 0) return "error without the request: prefix";
        if (s.error().code != Errc::invalid_argument) return "error code is not invalid_argument";
    } else {
        if (!req.has_id) return "accepted without an id";
        if (req.kind == ServeRequest::Kind::command && req.cmd.view().trim().empty()) return "empty command accepted";
        if (req.cmd.size() > kServeCmdMax) return "command longer than the limit";
        if (req.blobs.size() > kServeBlobsMax) return "too many blobs";
        for (const ServeBlob& b : req.blobs) {
            if (b.data.empty() || b.data.size() > kServeBlobMax) return "blob size out of bounds";
            if (!serve_blob_name_ok(StrView(b.name))) return "bad blob name accepted";
        }
        for (usize i = 0; i < req.cmd.size(); ++i)
            if (u8(req.cmd.view()[i]) >= 0x80 || req.cmd.view()[i] == 0) return "non-ASCII command accepted";
    }
    // Whatever a command prints becomes exactly one tagged line.
    StrBuf tagged;
    serve_tag_text(line, StrView(req.id), &tagged);
    StrView t = tagged.view();
    if (t.len < 2 || t[t.len - 1] != '\n') return "tagged record does not end in a newline";
    if (line.find('\n') >= line.len && t.find('\n') != t.len - 1) return "tagged record spans lines";
    if (!t.starts_with("{\"id\":")) return "tagged record does not start with the id";
    // ... and reads back (the one JSON reader) as an object with the id first.
    Value back;
    if (!json_read(t.sub(0, t.len - 1), &back, nullptr)) return "tagged record is not JSON";
    if (!back.is_object() || back.size() < 1 || !back.key(0).eq("id")) return "tagged record has no id first";
    return "";
}

}  // namespace fuzz_serve
