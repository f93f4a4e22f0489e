// Files on pmulab's own boot volume (the device it was loaded from).
#pragma once

#include "base/result.h"

namespace pmulab::efi {

// Reads a whole file ("\\dir\\name"). Errc::not_found when it does not exist.
Result<Vec<char>> read_boot_volume_file(const char* path);

}  // namespace pmulab::efi
