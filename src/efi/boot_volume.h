// pmulab's own boot volume (the device it was loaded from): the one place that finds it,
// turns paths into the firmware's CHAR16, opens and reads files and folders. Users:
// efi_main.cpp (\pmulab\cmdline, \pmulab\pmulab.cfg), EfiFileSource (event files),
// EfiRecordSink (results files).
#pragma once

#include "efi_defs.h"
#include "base/result.h"

namespace pmulab::efi {

// The volume's root folder (the caller closes it). Errors: no file system on the device.
Result<EFI_FILE_HANDLE> open_boot_volume();

// An ASCII path or name as the firmware's CHAR16 string, '/' turned into '\\' (the
// firmware's separator) so that both work. Errc::invalid_argument when it does not fit
// in `cap` characters with the terminating 0.
Status to_char16(StrView s, CHAR16* out, usize cap);
inline constexpr usize kMaxPath = 256;  // CHAR16s of a path pmulab opens

// Opens a file or folder ("\\dir\\name") for reading. Errc::not_found when it does not exist.
Result<EFI_FILE_HANDLE> open_boot_file(const char* path);

// Reads a whole file (at most max_bytes of it). Errc::not_found when it does not exist;
// Errc::invalid_argument when it is larger than 16 MiB.
Result<Vec<char>> read_boot_volume_file(const char* path, usize max_bytes = ~usize(0));

// Reads the next entry of an open folder into buf (grown as the firmware asks): EFI_SUCCESS
// with *info null at the end of the folder.
EFI_STATUS read_dir_entry(EFI_FILE_HANDLE dir, Vec<u8>& buf, EFI_FILE_INFO** info);

}  // namespace pmulab::efi
