#include "boot_volume.h"

namespace pmulab::efi {

namespace {

EFI_GUID kLoadedImageGuid = EFI_LOADED_IMAGE_PROTOCOL_GUID;
EFI_GUID kSimpleFsGuid = EFI_SIMPLE_FILE_SYSTEM_PROTOCOL_GUID;

constexpr usize kMaxFileBytes = usize(16) << 20;

}  // namespace

Result<EFI_FILE_HANDLE> open_boot_volume() {
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

Status to_char16(StrView s, CHAR16* out, usize cap) {
    if (s.len + 1 > cap) return Error::make(Errc::invalid_argument, "%.*s: path too long", int(s.len), s.ptr);
    for (usize i = 0; i < s.len; ++i) out[i] = s[i] == '/' ? CHAR16('\\') : CHAR16(u8(s[i]));
    out[s.len] = 0;
    return ok_status();
}

Result<EFI_FILE_HANDLE> open_boot_file(const char* path) {
    CHAR16 wpath[kMaxPath];
    PMULAB_TRY(to_char16(StrView(path), wpath, kMaxPath));
    Result<EFI_FILE_HANDLE> root = open_boot_volume();
    if (!root.ok()) return root.error();
    EFI_FILE_HANDLE f = nullptr;
    EFI_STATUS st = root.value()->Open(root.value(), &f, wpath, EFI_FILE_MODE_READ, 0);
    root.value()->Close(root.value());
    if (st == EFI_NOT_FOUND) return Error::make(Errc::not_found, "%s: no such file", path);
    if (st != EFI_SUCCESS) return Error::make(Errc::io, "cannot open %s: %s", path, status_name(st));
    return f;
}

Result<Vec<char>> read_boot_volume_file(const char* path, usize max_bytes) {
    Result<EFI_FILE_HANDLE> h = open_boot_file(path);
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

EFI_STATUS read_dir_entry(EFI_FILE_HANDLE dir, Vec<u8>& buf, EFI_FILE_INFO** info) {
    *info = nullptr;
    if (buf.size() < 1024) buf.resize(1024);
    for (;;) {
        UINTN n = buf.size();
        EFI_STATUS st = dir->Read(dir, &n, buf.data());
        if (st == EFI_BUFFER_TOO_SMALL) {
            buf.resize(n);
            continue;
        }
        if (st == EFI_SUCCESS && n) *info = reinterpret_cast<EFI_FILE_INFO*>(buf.data());
        return st;
    }
}

}  // namespace pmulab::efi
