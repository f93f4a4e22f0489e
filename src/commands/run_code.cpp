// `pmulab run --code`: machine code from hex or from files on the boot volume.
#include "base/json.h"
#include "commands/measure_cmd.h"
#include "events/event_files.h"

namespace pmulab {

namespace {

int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

}  // namespace

Vec<u8>& user_block(UserCode& u, unsigned i) {
    switch (i) {
        case 1: return u.init;
        case 2: return u.late_init;
        case 3: return u.one_time_init;
        default: return u.body;
    }
}

Status parse_code_hex(const char* opt, const char* hex, Vec<u8>* out) {
    out->clear();
    StrView s(hex ? hex : "");
    usize i = 0;
    if (s.len >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) i = 2;
    int hi = -1;
    for (; i < s.len; ++i) {
        char c = s[i];
        if (c == ' ' || c == '_' || c == ':') continue;
        int d = hex_digit(c);
        if (d < 0)
            return Error::make(Errc::invalid_argument,
                               "%s: '%c' at position %u is not a hex digit (machine code as hex bytes, e.g. 4801d8 "
                               "for add rax, rbx)",
                               opt, c, unsigned(i + 1));
        if (hi < 0) {
            hi = d;
            continue;
        }
        if (out->size() >= kUserCodeMax)
            return Error::make(Errc::invalid_argument, "%s: more than %u bytes of code (at most %u per block)", opt,
                               unsigned(kUserCodeMax), unsigned(kUserCodeMax));
        out->push(u8(hi << 4 | d));
        hi = -1;
    }
    if (hi >= 0)
        return Error::make(Errc::invalid_argument, "%s: an odd number of hex digits (two per byte, e.g. 4801d8)", opt);
    if (out->empty())
        return Error::make(Errc::invalid_argument, "%s: empty code (give at least one byte, e.g. 90)", opt);
    return ok_status();
}

// Reads the --*-file blocks from the boot volume and names the code.
Status load_user_code(Out& out, RunOptions& o) {
    static const char* const kFileOpt[4] = {"--code-file", "--init-file", "--late-init-file", "--one-time-init-file"};
    for (unsigned i = 0; i < 4; ++i) {
        if (!o.code_file[i]) continue;
        FileSource* fs = out.platform().files();
        if (!fs) return Error::make(Errc::invalid_argument, "%s: this platform has no boot volume", kFileOpt[i]);
        Result<Vec<char>> r = fs->read(o.code_file[i], kUserCodeMax + 1);
        if (!r.ok())
            return Error::make(Errc::invalid_argument, "%s %s: %s", kFileOpt[i], o.code_file[i], r.error().msg);
        const Vec<char>& d = r.value();
        if (d.empty())
            return Error::make(Errc::invalid_argument, "%s %s: the file is empty", kFileOpt[i], o.code_file[i]);
        if (d.size() > kUserCodeMax)
            return Error::make(Errc::invalid_argument, "%s %s: more than %u bytes of code", kFileOpt[i], o.code_file[i],
                               unsigned(kUserCodeMax));
        Vec<u8>& blk = user_block(o.user, i);
        for (char c : d) blk.push(u8(c));
    }
    // Pause/resume markers: only in the body, paired within each copy (codegen.cpp).
    UserCodeBlocks blocks{CodeSpan{o.user.body.data(), o.user.body.size()},
                          CodeSpan{o.user.init.data(), o.user.init.size()},
                          CodeSpan{o.user.late_init.data(), o.user.late_init.size()},
                          CodeSpan{o.user.one_time_init.data(), o.user.one_time_init.size()}};
    Result<u32> pairs = check_markers(blocks, o.cfg.no_mem);
    if (!pairs.ok()) return pairs.error();
    o.user.hash = fnv1a64(o.user.body.data(), o.user.body.size());
    StrBuf head;
    head.printf("pmulab run: code '%s': %u bytes, FNV-1a 64 %016llx", o.user.name, unsigned(o.user.body.size()),
                (unsigned long long)o.user.hash);
    const Vec<u8>* others[3] = {&o.user.init, &o.user.late_init, &o.user.one_time_init};
    static const char* const kBlock[3] = {"init", "late-init", "one-time-init"};
    for (unsigned i = 0; i < 3; ++i)
        if (!others[i]->empty()) head.printf(", %s %u bytes", kBlock[i], unsigned(others[i]->size()));
    if (pairs.value())
        head.printf(", %u pause/resume marker pair%s per copy", unsigned(pairs.value()), pairs.value() == 1 ? "" : "s");
    head.put('\n');
    out.text_buf(head);
    return ok_status();
}

}  // namespace pmulab
