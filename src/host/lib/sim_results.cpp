#include "sim_results.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "app/results_names.h"

namespace pmulab {

bool HostRecordSink::begin(const char* what, Out& out) {
    end();
    out_ = &out;
    path_.clear();
    failed_ = false;
    if (::mkdir(dir_.c_str(), 0777) != 0 && errno != EEXIST) {
        warn("cannot create " + dir_ + ": " + std::strerror(errno));
        return false;
    }
    return open_pair(what);
}

// Opens the next free NNNN-<what>.jsonl and .csv in dir_ (never an existing name).
bool HostRecordSink::open_pair(const char* what) {
    DIR* d = ::opendir(dir_.c_str());
    if (!d) {
        warn("cannot read " + dir_ + ": " + std::strerror(errno));
        return false;
    }
    ResultNumbering numbering;
    while (dirent* e = ::readdir(d)) numbering.see(StrView(e->d_name));
    ::closedir(d);
    i64 first = numbering.next();
    if (first < 0) {
        warn("the numbers of " + dir_ + " are exhausted (a file name starts with 18 or more digits)");
        return false;
    }
    for (i64 num = first;; ++num) {
        char base[96];
        result_base_name(num, StrView(what), base, sizeof base);
        std::string j = dir_ + "/" + base + ".jsonl", c = dir_ + "/" + base + ".csv";
        if (::access(c.c_str(), F_OK) == 0) continue;
        int jfd = ::open(j.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0666);
        if (jfd < 0 && errno == EEXIST) continue;
        int cfd = jfd < 0 ? -1 : ::open(c.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0666);
        if (cfd < 0) {
            std::string why = std::strerror(errno);
            if (jfd >= 0) {
                ::close(jfd);
                ::unlink(j.c_str());
            }
            warn("cannot create " + j + ": " + why);
            return false;
        }
        jsonl_ = ::fdopen(jfd, "w");
        csv_ = ::fdopen(cfd, "w");
        path_ = j;
        return true;
    }
}

void HostRecordSink::write_all(std::FILE* f, StrView data, const std::string& what) {
    if (failed_ || !f) return;
    if (std::fwrite(data.ptr, 1, data.len, f) != data.len || std::fflush(f) != 0) {
        failed_ = true;
        warn("writing " + what + " failed: " + std::strerror(errno) + "; the records are on the console");
    }
}

void HostRecordSink::record(const Value& rec) {
    csv_summary_.add(rec);
    StrBuf line;
    json_write_line(line, rec);
    write_all(jsonl_, line.view(), path_);  // flushed record by record, as on the target
}

bool HostRecordSink::write_text(const char* ext, StrView text) {
    const std::string kJsonl = ".jsonl";
    if (!jsonl_ || path_.size() <= kJsonl.size()) return false;
    std::string p = path_.substr(0, path_.size() - kJsonl.size()) + "." + ext;
    int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0666);
    std::FILE* f = fd < 0 ? nullptr : ::fdopen(fd, "w");
    bool ok = f && std::fwrite(text.ptr, 1, text.len, f) == text.len;
    if (f) ok &= std::fclose(f) == 0;
    if (!ok) warn("cannot write " + p + ": " + std::strerror(errno));
    return ok;
}

void HostRecordSink::end() {
    if (jsonl_) std::fclose(jsonl_);
    jsonl_ = nullptr;
    if (csv_) {
        StrBuf csv;
        Status s = csv_summary_.write(&csv);
        if (!s.ok()) warn(std::string("CSV summary not written: ") + s.error().msg);
        else write_all(csv_, csv.view(), "the CSV summary");
        std::fclose(csv_);
        csv_ = nullptr;
    }
    csv_summary_.clear();
    out_ = nullptr;
}

void HostRecordSink::warn(const std::string& msg) {
    if (out_) out_->warn("results: %s", msg.c_str());
}

}  // namespace pmulab
