// `pmulab serve`: the wire protocol (docs/agent.md). A host sends one JSON object per
// line; pmulab answers with the command's --json records, each tagged with the
// request's id, and one {"type":"done","id":...,"status":N} per request.
//
//   {"id":7,"cmd":"run --code-file body --events tsc","blobs":{"body":"SAHY"},"timeout_ms":5000}
//   {"id":"c1","cancel":7}
//   {"id":9,"stop":true}
//
// Nothing from the wire is trusted: the parser takes exactly these fields (any other
// is refused), bounds every size, and accepts ASCII text only.
#pragma once

#include "base/fmt.h"
#include "base/result.h"
#include "base/value.h"

namespace pmulab {

// Limits of a request (docs/agent.md "Limits").
inline constexpr usize kServeLineMax = usize(400) << 10;  // bytes in one request line
inline constexpr usize kServeCmdMax = 4096;               // bytes of the command line
inline constexpr usize kServeIdMax = 64;                  // characters of a string id
inline constexpr usize kServeBlobsMax = 8;                // code blobs per request
inline constexpr usize kServeBlobNameMax = 32;            // characters of a blob name
inline constexpr usize kServeBlobMax = usize(64) << 10;   // decoded bytes per blob (kUserCodeMax)
inline constexpr u64 kServeTimeoutMaxMs = u64(24) * 3600 * 1000;
inline constexpr usize kServeTokenMin = 16;  // characters of the pre-shared token
inline constexpr usize kServeTokenMax = 128;
inline constexpr u64 kServeIdNumMax = (u64(1) << 53) - 1;  // exact in every JSON reader

struct ServeBlob {
    char name[kServeBlobNameMax + 1] = {};
    Vec<u8> data;
};

struct ServeRequest {
    enum class Kind : u8 { command, cancel, stop };
    Kind kind = Kind::command;
    // The id as JSON text (`7` or `"r1"`), echoed verbatim in every answer; "null"
    // until an id was read (a request whose id could not be read is answered with
    // "id":null).
    char id[kServeIdMax + 8] = "null";
    bool has_id = false;
    StrBuf cmd;                            // kind == command
    char cancel_id[kServeIdMax + 8] = {};  // kind == cancel: the target's id as JSON text
    u64 timeout_ms = 0;                    // 0: none
    Vec<ServeBlob> blobs;
    // "token": the pre-shared token of `serve --token-file`/`--token`, checked by the
    // session (docs/agent.md "Who may connect"); never echoed.
    char token[kServeTokenMax + 1] = {};
    bool has_token = false;
};

// Parses one request line (without its newline). On error req->id holds the id when
// it could be read before the error, so that the answer can name it.
Status parse_serve_request(StrView line, ServeRequest* req);

// The request id (JSON text, as ServeRequest keeps it) as a value: null, an integer or a string.
Value serve_id_value(StrView id_json);

// The record `rec` (an object) with "id":<id> as its first field, as one JSON Lines record.
void serve_tag_record(const Value& rec, StrView id_json, StrBuf* out);
// A line a command printed as text (with or without its newline):
// {"id":<id>,"type":"text","text":"..."}. Ends in '\n'.
void serve_tag_text(StrView line, StrView id_json, StrBuf* out);

// {"type":"done","id":<id>,"status":N} plus "cancelled":true / "timed_out":true.
enum class ServeEnd : u8 { normal, cancelled, timed_out };
void serve_done_record(StrView id_json, int status, ServeEnd end, StrBuf* out);

// {"type":"bye","id":null,"reason":R}: the agent stops ("idle", "stop").
void serve_bye_record(const char* reason, StrBuf* out);

// An error record of the agent itself: {"type":"error","id":<id>,"code":C,"message":M}.
void serve_error_record(StrView id_json, const char* code, StrView message, StrBuf* out);

// Standard base64 (RFC 4648 §4, padding required, no whitespace) into `out`, at most
// `max` bytes. False on bad input or when the result would be longer.
bool base64_decode(StrView in, usize max, Vec<u8>* out);

// A token for `serve --token-file`/`--token`: kServeTokenMin..kServeTokenMax characters of
// printable ASCII without spaces, quotes and backslashes. Errors name `option` and never
// the token.
Status check_serve_token(StrView token, const char* option);

// Whether a request's token is the expected one, in time that does not depend on where
// they differ. An empty expected token matches nothing.
bool serve_token_matches(StrView given, StrView expected);

// A blob name: 1-32 characters of [A-Za-z0-9_.-].
bool serve_blob_name_ok(StrView name);

}  // namespace pmulab
