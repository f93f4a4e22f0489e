#include "app/command_line.h"

namespace pmulab {

Status split_command_line(StrView line, ArgVec* out) {
    out->argv.clear();
    out->storage.clear();
    // Two passes: first build storage with NULs, then take pointers (storage must not grow after).
    out->storage.reserve(line.len + 1);
    Vec<usize> starts;
    usize i = 0;
    while (i < line.len) {
        while (i < line.len && (line[i] == ' ' || line[i] == '\t')) ++i;
        if (i >= line.len) break;
        starts.push(out->storage.size());
        bool quoted = false;
        while (i < line.len) {
            char c = line[i];
            if (c == '"') {
                quoted = !quoted;
                ++i;
                continue;
            }
            if (c == '\\' && i + 1 < line.len && (line[i + 1] == '"' || line[i + 1] == '\\')) {
                out->storage.push(line[i + 1]);
                i += 2;
                continue;
            }
            if (!quoted && (c == ' ' || c == '\t')) break;
            out->storage.push(c);
            ++i;
        }
        if (quoted) return Error::make(Errc::invalid_argument, "unterminated quote in command line");
        out->storage.push(0);
    }
    for (usize s : starts) out->argv.push(out->storage.data() + s);
    return ok_status();
}

}  // namespace pmulab
