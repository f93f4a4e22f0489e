// pmulab's boot volume as a FileSource (events/event_files.h): event files in
// \pmulab\events\ and event list files named on the command line.
#pragma once

#include "efi_defs.h"
#include "app/platform.h"
#include "events/event_files.h"

namespace pmulab::efi {

class EfiFileSource final : public FileSource {
public:
    Result<Vec<char>> read(const char* path, usize max_bytes = ~usize(0)) override;
    Status list(const char* dir, const char* suffix, Vec<FileName>* out) override;
    // Where list() says which files it skips (names it could not open again).
    void set_diagnostics(Platform* p) { diag_ = p; }

private:
    void warn_skipped(const char* dir, const CHAR16* name);
    Platform* diag_ = nullptr;
};

}  // namespace pmulab::efi
