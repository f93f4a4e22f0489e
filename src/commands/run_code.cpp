// `pmulab run --code`: machine code from hex or from files on the boot volume.
#include "base/json.h"
#include "commands/measure_cmd.h"
#include "events/event_files.h"

namespace pmulab {

Vec<u8>& user_block(UserCode& u, unsigned i) {
    switch (i) {
        case 1: return u.init;
        case 2: return u.late_init;
        case 3: return u.one_time_init;
        default: return u.body;
    }
}

void copy_block(const Vec<u8>& from, Vec<u8>* to) {
    to->clear();
    to->append(from.data(), from.size());
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

namespace {

// One block from a file on the boot volume, appended to *blk.
Status read_code_file(Out& out, const char* opt, const char* path, Vec<u8>* blk) {
    FileSource* fs = out.platform().files();
    if (!fs) return Error::make(Errc::invalid_argument, "%s: this platform has no boot volume", opt);
    Result<Vec<char>> r = fs->read(path, kUserCodeMax + 1);
    if (!r.ok()) return Error::make(Errc::invalid_argument, "%s %s: %s", opt, path, r.error().msg);
    const Vec<char>& d = r.value();
    if (d.empty()) return Error::make(Errc::invalid_argument, "%s %s: the file is empty", opt, path);
    if (d.size() > kUserCodeMax)
        return Error::make(Errc::invalid_argument, "%s %s: more than %u bytes of code", opt, path,
                           unsigned(kUserCodeMax));
    for (char c : d) blk->push(u8(c));
    return ok_status();
}

// Checks one code's markers, hashes its body and prints its header line.
Status finish_code(Out& out, const RunOptions& o, UserCode& u) {
    // Pause/resume markers: only in the body, paired within each copy (codegen.cpp).
    UserCodeBlocks blocks{CodeSpan{u.body.data(), u.body.size()}, CodeSpan{u.init.data(), u.init.size()},
                          CodeSpan{u.late_init.data(), u.late_init.size()},
                          CodeSpan{u.one_time_init.data(), u.one_time_init.size()}};
    Result<u32> pairs = check_markers(blocks, o.cfg.no_mem);
    if (!pairs.ok()) return pairs.error();
    u.hash = fnv1a64(u.body.data(), u.body.size());
    StrBuf head;
    head.printf("pmulab run: code '%s': %u bytes, FNV-1a 64 %016llx", u.name, unsigned(u.body.size()),
                (unsigned long long)u.hash);
    const Vec<u8>* others[3] = {&u.init, &u.late_init, &u.one_time_init};
    static const char* const kBlock[3] = {"init", "late-init", "one-time-init"};
    for (unsigned i = 0; i < 3; ++i)
        if (!others[i]->empty()) head.printf(", %s %u bytes", kBlock[i], unsigned(others[i]->size()));
    if (pairs.value())
        head.printf(", %u pause/resume marker pair%s per copy", unsigned(pairs.value()), pairs.value() == 1 ? "" : "s");
    head.put('\n');
    out.text_buf(head);
    return ok_status();
}

}  // namespace

// Reads the --*-file blocks from the boot volume, gives every code the shared init
// blocks, and names each code in a header line.
Status load_user_code(Out& out, RunOptions& o) {
    static const char* const kFileOpt[4] = {"--code-file", "--init-file", "--late-init-file", "--one-time-init-file"};
    for (unsigned i = 1; i < 4; ++i)
        if (o.code_file[i]) PMULAB_TRY(read_code_file(out, kFileOpt[i], o.code_file[i], &user_block(o.shared, i)));
    for (usize k = 0; k < o.codes.size(); ++k) {
        UserCode& u = o.codes[k];
        if (o.body_files[k]) PMULAB_TRY(read_code_file(out, kFileOpt[0], o.body_files[k], &u.body));
        for (unsigned i = 1; i < 4; ++i)  // hex blocks: parse_run_options gave them to each code
            if (o.code_file[i]) copy_block(user_block(o.shared, i), &user_block(u, i));
        PMULAB_TRY(finish_code(out, o, u));
    }
    return ok_status();
}

}  // namespace pmulab
