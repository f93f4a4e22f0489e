#include "efi_files.h"

#include "boot_volume.h"

namespace pmulab::efi {

namespace {

bool ends_with_nocase(const char* s, usize n, const char* suffix) {
    usize k = str_len(suffix);
    if (n < k) return false;
    for (usize i = 0; i < k; ++i)
        if (ascii_lower(s[n - k + i]) != ascii_lower(suffix[i])) return false;
    return true;
}

bool char16_ends_with_nocase(const CHAR16* s, const char* suffix) {
    usize n = 0, k = str_len(suffix);
    while (s[n]) ++n;
    if (n < k) return false;
    for (usize i = 0; i < k; ++i) {
        CHAR16 c = s[n - k + i];
        if (c >= 0x80 || ascii_lower(char(c)) != ascii_lower(suffix[i])) return false;
    }
    return true;
}

}  // namespace

// Said, not silent: a file the user put there and pmulab will not read.
void EfiFileSource::warn_skipped(const char* dir, const CHAR16* name) {
    if (!diag_) return;
    StrBuf n;
    for (const CHAR16* c = name; *c; ++c) {
        if (*c < 0x80) n.put(char(*c));
        else n.printf("\\u%04x", unsigned(*c));
    }
    StrBuf b;
    b.printf("pmulab: warning: %s\\", dir);
    put_escaped(b, n.view());
    b.printf(": skipped (file names pmulab reads must be ASCII and at most %zu characters)\n",
             sizeof(FileName::name) - 1);
    diag_->write_diag(b.view());
}

Result<Vec<char>> EfiFileSource::read(const char* path, usize max_bytes) {
    return read_boot_volume_file(path, max_bytes);
}

Status EfiFileSource::list(const char* dir, const char* suffix, Vec<FileName>* out) {
    Result<EFI_FILE_HANDLE> h = open_boot_file(dir);
    if (!h.ok()) return h.error();
    EFI_FILE_HANDLE d = h.value();
    Vec<u8> buf;
    Status result;
    for (;;) {
        EFI_FILE_INFO* info = nullptr;
        EFI_STATUS st = read_dir_entry(d, buf, &info);
        if (st != EFI_SUCCESS) {
            // Reading a plain file as a directory, or a device error.
            result = Error::make(Errc::io, "cannot read the folder %s: %s", dir, status_name(st));
            break;
        }
        if (!info) break;  // end of the directory
        if (info->Attribute & EFI_FILE_DIRECTORY) continue;
        char name[sizeof(FileName::name)];
        usize len = 0;
        bool ok = true;
        for (const CHAR16* c = info->FileName; *c; ++c) {
            if (*c >= 0x80 || *c < 0x20 || len + 1 >= sizeof name) {
                ok = false;  // a name pmulab could not open again
                break;
            }
            name[len++] = char(*c);
        }
        name[len] = 0;
        if (!ok) {
            if (char16_ends_with_nocase(info->FileName, suffix)) warn_skipped(dir, info->FileName);
            continue;
        }
        if (!ends_with_nocase(name, len, suffix)) continue;
        str_copy(out->emplace().name, sizeof(FileName::name), name);
    }
    d->Close(d);
    return result;
}

}  // namespace pmulab::efi
