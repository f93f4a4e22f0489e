// Results files on pmulab's boot volume: \pmulab\results\NNNN-<what>.jsonl and
// .csv, numbered after the highest number already there, never overwriting.
// A read-only or full volume is reported once per command; the records still go
// to the console. Each record is flushed as it is written.
#include "efi_results.h"

#include "boot_volume.h"
#include "app/results_names.h"

namespace pmulab::efi {

namespace {

// A FileName as ASCII for the numbering (other characters become '?').
usize narrow_name(const CHAR16* name, char* out, usize cap) {
    usize i = 0;
    for (; name[i] && i + 1 < cap; ++i) out[i] = name[i] < 0x80 ? char(name[i]) : '?';
    out[i] = 0;
    return i;
}

const char kResultsDir[] = "\\pmulab\\results";

}  // namespace

namespace {

// Opens `name` below `dir`, creating it as a folder when absent.
EFI_FILE_HANDLE open_or_create_dir(EFI_FILE_HANDLE dir, const char* name, EFI_STATUS* st) {
    CHAR16 wname[32];
    (void)to_char16(StrView(name), wname, 32);  // "pmulab", "results": they fit
    EFI_FILE_HANDLE h = nullptr;
    *st = dir->Open(dir, &h, wname, EFI_FILE_MODE_READ | EFI_FILE_MODE_WRITE, 0);
    if (*st == EFI_NOT_FOUND)
        *st = dir->Open(dir, &h, wname, EFI_FILE_MODE_READ | EFI_FILE_MODE_WRITE | EFI_FILE_MODE_CREATE,
                        EFI_FILE_DIRECTORY);
    return *st == EFI_SUCCESS ? h : nullptr;
}

}  // namespace

EFI_FILE_HANDLE EfiRecordSink::open_results_dir(Status* err) {
    Result<EFI_FILE_HANDLE> volume = open_boot_volume();
    if (!volume.ok()) {
        *err = volume.error();
        return nullptr;
    }
    EFI_FILE_HANDLE root = volume.value();
    EFI_STATUS st = EFI_SUCCESS;
    EFI_FILE_HANDLE top = open_or_create_dir(root, "pmulab", &st);
    root->Close(root);
    EFI_FILE_HANDLE res = top ? open_or_create_dir(top, "results", &st) : nullptr;
    if (top) top->Close(top);
    if (!res)
        *err = Error::make(Errc::io, "cannot open or create %s (%s)%s", kResultsDir, status_name(st),
                           st == EFI_WRITE_PROTECTED ? ": the boot volume is read-only" : "");
    return res;
}

bool EfiRecordSink::begin(const char* what, Out& out) {
    out_ = &out;
    csv_summary_.clear();
    path_[0] = 0;
    failed_ = false;
    Status err;
    EFI_FILE_HANDLE dir = open_results_dir(&err);
    if (!dir) {
        warn(err.error().msg);
        return false;
    }
    // Next number: one above the highest NNNN- prefix in the folder, whatever the
    // command, so that no number is shared by two commands.
    ResultNumbering numbering;
    Vec<u8> buf;
    EFI_FILE_INFO* info = nullptr;
    while (read_dir_entry(dir, buf, &info) == EFI_SUCCESS && info) {
        char name[256];
        usize len = narrow_name(info->FileName, name, sizeof name);
        numbering.see(StrView(name, len));
    }
    i64 first = numbering.next();
    if (first < 0) {
        dir->Close(dir);
        warn("the numbers of \\pmulab\\results are exhausted (a file name starts with 18 or more digits)");
        return false;
    }
    // Never overwrite: probe until both names are free.
    for (i64 num = first;; ++num) {
        char base[96];
        result_base_name(num, StrView(what), base, sizeof base);
        char jname[112], cname[112];
        format_to(jname, sizeof jname, "%s.jsonl", base);
        format_to(cname, sizeof cname, "%s.csv", base);
        CHAR16 wj[112], wc[112];  // format_to kept each name below 112 characters
        (void)to_char16(StrView(jname), wj, 112);
        (void)to_char16(StrView(cname), wc, 112);
        EFI_FILE_HANDLE probe = nullptr;
        if (dir->Open(dir, &probe, wj, EFI_FILE_MODE_READ, 0) == EFI_SUCCESS ||
            dir->Open(dir, &probe, wc, EFI_FILE_MODE_READ, 0) == EFI_SUCCESS) {
            probe->Close(probe);
            continue;
        }
        EFI_STATUS st = dir->Open(dir, &jsonl_, wj, EFI_FILE_MODE_READ | EFI_FILE_MODE_WRITE | EFI_FILE_MODE_CREATE, 0);
        if (st == EFI_SUCCESS)
            st = dir->Open(dir, &csv_, wc, EFI_FILE_MODE_READ | EFI_FILE_MODE_WRITE | EFI_FILE_MODE_CREATE, 0);
        if (st != EFI_SUCCESS) {
            if (jsonl_) {
                jsonl_->Delete(jsonl_);
                jsonl_ = nullptr;
            }
            dir->Close(dir);
            char msg[200];
            format_to(msg, sizeof msg, "cannot create %s\\%s (%s)%s", kResultsDir, jname, status_name(st),
                      st == EFI_WRITE_PROTECTED ? ": the boot volume is read-only" : "");
            warn(msg);
            return false;
        }
        format_to(path_, sizeof path_, "%s\\%s", kResultsDir, jname);
        break;
    }
    dir->Close(dir);
    return true;
}

void EfiRecordSink::write_all(EFI_FILE_HANDLE f, StrView data, const char* what) {
    if (failed_ || !f) return;
    UINTN n = data.len;
    EFI_STATUS st = f->Write(f, &n, const_cast<char*>(data.ptr));
    if (st != EFI_SUCCESS || n != data.len) {
        failed_ = true;
        char msg[200];
        format_to(msg, sizeof msg, "writing %s failed (%s)%s; the records are on the console", what, status_name(st),
                  st == EFI_VOLUME_FULL ? ": the boot volume is full" : "");
        warn(msg);
    }
}

void EfiRecordSink::record(const Value& rec) {
    csv_summary_.add(rec);
    StrBuf line;
    json_write_line(line, rec);
    write_all(jsonl_, line.view(), path_);
    // Flushed record by record (the meta record first): a machine switched off in the
    // middle of a command loses at most the record being written (`make bench` shows
    // the cost). Batching every 64 records lost a whole command's results.
    if (!failed_ && jsonl_) {
        EFI_STATUS st = jsonl_->Flush(jsonl_);
        if (st != EFI_SUCCESS) {
            failed_ = true;
            char msg[200];
            format_to(msg, sizeof msg, "flushing %s failed (%s)%s; the records are on the console", path_,
                      status_name(st), st == EFI_VOLUME_FULL ? ": the boot volume is full" : "");
            warn(msg);
        }
    }
}

bool EfiRecordSink::write_text(const char* ext, StrView text) {
    // path_ is "\pmulab\results\NNNN-<what>.jsonl": the same base with `ext`.
    StrView path(path_);
    const usize dir_len = sizeof kResultsDir;  // the folder and its '\'
    if (!jsonl_ || path.len <= dir_len + 6) return false;
    char name[112];
    format_to(name, sizeof name, "%.*s.%s", int(path.len - dir_len - 6), path_ + dir_len, ext);
    CHAR16 wname[112];
    if (!to_char16(StrView(name), wname, 112).ok()) return false;
    Status err;
    EFI_FILE_HANDLE dir = open_results_dir(&err);
    if (!dir) {
        warn(err.error().msg);
        return false;
    }
    EFI_FILE_HANDLE f = nullptr;
    EFI_STATUS st = dir->Open(dir, &f, wname, EFI_FILE_MODE_READ | EFI_FILE_MODE_WRITE | EFI_FILE_MODE_CREATE, 0);
    dir->Close(dir);
    if (st != EFI_SUCCESS) {
        char msg[200];
        format_to(msg, sizeof msg, "cannot create %s\\%s (%s)", kResultsDir, name, status_name(st));
        warn(msg);
        return false;
    }
    UINTN n = text.len;
    st = f->Write(f, &n, const_cast<char*>(text.ptr));
    if (st == EFI_SUCCESS) st = f->Flush(f);
    f->Close(f);
    if (st != EFI_SUCCESS || n != text.len) {
        char msg[200];
        format_to(msg, sizeof msg, "writing %s\\%s failed (%s)%s", kResultsDir, name, status_name(st),
                  st == EFI_VOLUME_FULL ? ": the boot volume is full" : "");
        warn(msg);
        return false;
    }
    return true;
}

void EfiRecordSink::end() {
    if (jsonl_) {
        if (!failed_) jsonl_->Flush(jsonl_);
        jsonl_->Close(jsonl_);
        jsonl_ = nullptr;
    }
    if (csv_) {
        StrBuf csv;
        Status s = csv_summary_.write(&csv);
        if (!s.ok()) {
            char msg[300];
            format_to(msg, sizeof msg, "CSV summary not written: %s", s.error().msg);
            warn(msg);
        } else {
            write_all(csv_, csv.view(), "the CSV summary");
        }
        if (!failed_) csv_->Flush(csv_);
        csv_->Close(csv_);
        csv_ = nullptr;
    }
    csv_summary_.clear();
    out_ = nullptr;
}

void EfiRecordSink::warn(const char* msg) {
    // Text mode prints a warning line; JSON mode a warning record, so stdout stays JSON.
    if (out_) out_->warn("results: %s", msg);
}

}  // namespace pmulab::efi
