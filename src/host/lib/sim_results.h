// pmulab-sim --results DIR: results files on the host, as pmulab writes them to
// \pmulab\results on its boot volume (NNNN-<command>.jsonl with the meta record first,
// and the .csv summary; numbered one above the highest number already in DIR, never
// overwriting), so that `serve --results` and tools/pmulab-lab --sim get the files a
// stick gets.
#pragma once

#include <cstdio>
#include <string>

#include "app/out.h"
#include "app/records.h"

namespace pmulab {

class HostRecordSink final : public RecordSink {
public:
    explicit HostRecordSink(std::string dir) : dir_(std::move(dir)) {}
    ~HostRecordSink() {
        out_ = nullptr;
        end();
    }
    bool begin(const char* what, Out& out) override;
    void record(const Value& rec) override;
    void end() override;
    const char* last_path() const override { return path_.c_str(); }
    bool write_text(const char* ext, StrView text) override;

private:
    bool open_pair(const char* what);
    void write_all(std::FILE* f, StrView data, const std::string& what);
    void warn(const std::string& msg);

    std::string dir_;
    std::string path_;
    std::FILE* jsonl_ = nullptr;
    std::FILE* csv_ = nullptr;
    CsvSummary csv_summary_;
    Out* out_ = nullptr;
    bool failed_ = false;
};

}  // namespace pmulab
