// The EFI RecordSink: results files on the boot volume.
#pragma once

#include "efi_defs.h"
#include "app/out.h"

namespace pmulab::efi {

class EfiRecordSink final : public RecordSink {
public:
    bool begin(const char* what, Out& out) override;
    void record(const Value& rec) override;
    void end() override;
    const char* last_path() const override { return path_; }
    bool write_text(const char* ext, StrView text) override;

private:
    EFI_FILE_HANDLE open_results_dir(Status* err);
    void write_all(EFI_FILE_HANDLE f, StrView data, const char* what);
    void warn(const char* msg);

    Out* out_ = nullptr;
    EFI_FILE_HANDLE jsonl_ = nullptr;
    EFI_FILE_HANDLE csv_ = nullptr;
    bool failed_ = false;
    CsvSummary csv_summary_;
    char path_[160] = {};
};

}  // namespace pmulab::efi
