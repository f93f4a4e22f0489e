#include "efi_files.h"

#include "efi_defs.h"

namespace pmulab::efi {

namespace {

EFI_GUID kLoadedImageGuid = EFI_LOADED_IMAGE_PROTOCOL_GUID;
EFI_GUID kSimpleFsGuid = EFI_SIMPLE_FILE_SYSTEM_PROTOCOL_GUID;

constexpr usize kMaxPath = 256;
constexpr usize kMaxFileBytes = usize(16) << 20;

// ASCII to CHAR16; '/' becomes '\\' (the firmware's separator) so that both work.
bool to_char16(const char* s, CHAR16* out, usize cap) {
    usize i = 0;
    for (; s[i]; ++i) {
        if (i + 1 >= cap) return false;
        out[i] = s[i] == '/' ? CHAR16('\\') : CHAR16(u8(s[i]));
    }
    out[i] = 0;
    return true;
}

Result<EFI_FILE_HANDLE> open_root() {
    EFI_LOADED_IMAGE* li = nullptr;
    EFI_STATUS st = gBS->HandleProtocol(gImage, &kLoadedImageGuid, reinterpret_cast<void**>(&li));
    if (st != EFI_SUCCESS || !li) return Error::make(Errc::io, "cannot find pmulab's own image: %s", status_name(st));
    EFI_FILE_IO_INTERFACE* fs = nullptr;
    st = gBS->HandleProtocol(li->DeviceHandle, &kSimpleFsGuid, reinterpret_cast<void**>(&fs));
    if (st != EFI_SUCCESS || !fs)
        return Error::make(Errc::not_found, "pmulab's boot device has no file system: %s", status_name(st));
    EFI_FILE_HANDLE root = nullptr;
    st = fs->OpenVolume(fs, &root);
    if (st != EFI_SUCCESS) return Error::make(Errc::io, "cannot open the boot volume: %s", status_name(st));
    return root;
}

Result<EFI_FILE_HANDLE> open_path(const char* path) {
    CHAR16 wpath[kMaxPath];
    if (!to_char16(path, wpath, kMaxPath)) return Error::make(Errc::invalid_argument, "%s: path too long", path);
    Result<EFI_FILE_HANDLE> root = open_root();
    if (!root.ok()) return root.error();
    EFI_FILE_HANDLE f = nullptr;
    EFI_STATUS st = root.value()->Open(root.value(), &f, wpath, EFI_FILE_MODE_READ, 0);
    root.value()->Close(root.value());
    if (st == EFI_NOT_FOUND) return Error::make(Errc::not_found, "%s: no such file", path);
    if (st != EFI_SUCCESS) return Error::make(Errc::io, "cannot open %s: %s", path, status_name(st));
    return f;
}

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
    Result<EFI_FILE_HANDLE> h = open_path(path);
    if (!h.ok()) return h.error();
    EFI_FILE_HANDLE f = h.value();
    Vec<char> data;
    char chunk[4096];
    while (data.size() < max_bytes) {
        UINTN n = min_of<usize>(sizeof chunk, max_bytes - data.size());
        EFI_STATUS st = f->Read(f, &n, chunk);
        if (st != EFI_SUCCESS) {
            f->Close(f);
            return Error::make(Errc::io, "cannot read %s: %s", path, status_name(st));
        }
        if (n == 0) break;
        data.append(chunk, n);  // geometric growth: reserve(size + n) per chunk was quadratic
        if (data.size() > kMaxFileBytes) {
            f->Close(f);
            return Error::make(Errc::invalid_argument, "%s is larger than 16 MiB", path);
        }
    }
    f->Close(f);
    return data;
}

Status EfiFileSource::list(const char* dir, const char* suffix, Vec<FileName>* out) {
    Result<EFI_FILE_HANDLE> h = open_path(dir);
    if (!h.ok()) return h.error();
    EFI_FILE_HANDLE d = h.value();
    usize cap = 1024;
    Vec<u8> buf;
    buf.resize(cap);
    Status result;
    for (;;) {
        UINTN n = cap;
        EFI_STATUS st = d->Read(d, &n, buf.data());
        if (st == EFI_BUFFER_TOO_SMALL) {
            cap = n;
            buf.resize(cap);
            continue;
        }
        if (st != EFI_SUCCESS) {
            // Reading a plain file as a directory, or a device error.
            result = Error::make(Errc::io, "cannot read the folder %s: %s", dir, status_name(st));
            break;
        }
        if (n == 0) break;  // end of the directory
        auto* info = reinterpret_cast<EFI_FILE_INFO*>(buf.data());
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
