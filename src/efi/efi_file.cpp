#include "efi_file.h"

#include "efi_defs.h"

namespace pmulab::efi {

namespace {

EFI_GUID kLoadedImageGuid = EFI_LOADED_IMAGE_PROTOCOL_GUID;
EFI_GUID kSimpleFsGuid = EFI_SIMPLE_FILE_SYSTEM_PROTOCOL_GUID;
EFI_GUID kFileInfoGuid = EFI_FILE_INFO_ID;

void to_char16(const char* s, CHAR16* out, usize cap) {
    usize i = 0;
    for (; s[i] && i + 1 < cap; ++i) out[i] = CHAR16(u8(s[i]));
    out[i] = 0;
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

}  // namespace

Result<Vec<char>> read_boot_volume_file(const char* path) {
    Result<EFI_FILE_HANDLE> root = open_root();
    if (!root.ok()) return root.error();
    CHAR16 wpath[256];
    to_char16(path, wpath, 256);
    EFI_FILE_HANDLE f = nullptr;
    EFI_STATUS st = root.value()->Open(root.value(), &f, wpath, EFI_FILE_MODE_READ, 0);
    root.value()->Close(root.value());
    if (st == EFI_NOT_FOUND) return Error::make(Errc::not_found, "%s: no such file", path);
    if (st != EFI_SUCCESS) return Error::make(Errc::io, "cannot open %s: %s", path, status_name(st));
    Vec<char> data;
    char chunk[4096];
    for (;;) {
        UINTN n = sizeof chunk;
        st = f->Read(f, &n, chunk);
        if (st != EFI_SUCCESS) {
            f->Close(f);
            return Error::make(Errc::io, "cannot read %s: %s", path, status_name(st));
        }
        if (n == 0) break;
        data.append(chunk, n);  // geometric growth: reserve(size + n) per chunk was quadratic
        if (data.size() > (16u << 20)) {
            f->Close(f);
            return Error::make(Errc::invalid_argument, "%s is larger than 16 MiB", path);
        }
    }
    f->Close(f);
    (void)kFileInfoGuid;
    return data;
}

}  // namespace pmulab::efi
