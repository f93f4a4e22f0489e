#include "app/config.h"

namespace pmulab {

Status parse_config(StrView text, const char* name, Vec<ConfigLine>* out) {
    out->clear();
    usize pos = 0;
    u32 line_no = 0;
    // A UTF-8 byte-order mark is tolerated.
    if (text.len >= 3 && u8(text[0]) == 0xEF && u8(text[1]) == 0xBB && u8(text[2]) == 0xBF) pos = 3;
    while (pos < text.len) {
        usize end = text.find('\n', pos);
        StrView line = text.sub(pos, end - pos);
        pos = end + 1;
        ++line_no;
        for (usize i = 0; i < line.len; ++i) {
            char c = line[i];
            if (c == 0) return Error::make(Errc::invalid_argument, "%s:%u: NUL byte in a text file", name, line_no);
            if (u8(c) >= 0x80)
                return Error::make(Errc::invalid_argument, "%s:%u: non-ASCII byte 0x%02x (save the file as ASCII)",
                                   name, line_no, unsigned(u8(c)));
        }
        // Strip a comment that is not inside quotes.
        bool quoted = false;
        usize cut = line.len;
        for (usize i = 0; i < line.len; ++i) {
            if (line[i] == '"') quoted = !quoted;
            else if (line[i] == '#' && !quoted) {
                cut = i;
                break;
            }
        }
        line = line.sub(0, cut).trim();
        if (line.empty()) continue;
        ConfigLine& cl = out->emplace();
        cl.line_no = line_no;
        Status s = split_command_line(line, &cl.args);
        if (!s.ok()) {
            cl.bad = true;
            str_copy(cl.error, sizeof cl.error, s.error().msg);
        }
    }
    return ok_status();
}

}  // namespace pmulab
