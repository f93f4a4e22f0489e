// What a command runs against: the Platform (the EFI application, the host tools, or
// the host tests' simulated machine): the hardware seam, console text, results files,
// boot-volume files and the measurement services.
#pragma once

#include "base/fmt.h"
#include "base/json.h"
#include "x86/hw.h"
#include "app/records.h"
#include "census/tsc_freq.h"

namespace pmulab {

class MeasurePlatform;   // measure/measure.h
class FileSource;        // events/event_files.h
class ServeLink;         // app/serve_session.h
struct ServeTcpOptions;  // app/serve_tcp.h

class Platform {
public:
    virtual Hw& hw() = 0;
    // Console text (and its mirrors: debug port, serial). Must accept any length.
    virtual void write(StrView text) = 0;
    // A record for the console (JSON mode): one JSON Lines record through write().
    // `pmulab serve` overrides it to add the request's id as a field.
    virtual void write_record(const Value& rec) {
        StrBuf b;
        json_write_line(b, rec);
        write(b.view());
    }
    // Diagnostics (errors and warnings in text mode): the console shows them with the
    // rest; where a stream separates them (the host's stderr, the debug port's tagged
    // lines that run-qemu.sh routes to its stderr) they stay out of the data.
    virtual void write_diag(StrView text) { write(text); }
    // Firmware identity for metadata records; empty strings when unknown.
    virtual const char* firmware_vendor() { return ""; }
    virtual u32 firmware_revision() { return 0; }
    // The measurement engine's services (executable pages, kernel bodies, interrupt
    // masking); null where generated code cannot run.
    virtual MeasurePlatform* measure() { return nullptr; }
    // Wall-clock time as "YYYY-MM-DDTHH:MM:SS" (empty when unknown).
    virtual void now(char* buf, usize cap) {
        if (cap) buf[0] = 0;
    }
    // Results files; null when there are none (host tools, tests without files).
    virtual RecordSink* record_sink() { return nullptr; }
    // Files on pmulab's boot volume (event files, event lists); null when there are none.
    virtual FileSource* files() { return nullptr; }
    // Null on real hardware; on a simulated machine (pmulab-sim) what it was built from,
    // e.g. "dump tests/data/cpuid/X.txt": the meta record then says "simulated": true.
    virtual const char* simulated() { return nullptr; }
    // The link `pmulab serve` answers on: serial port `port` (-1: the default choice).
    virtual Result<ServeLink*> open_serve_link(int port) {
        return Error::make(Errc::unsupported, "serve: this platform has no link to a host");
    }
    // The TCP listener `pmulab serve --tcp PORT` answers on (EFI TCP4).
    virtual Result<ServeLink*> open_tcp_link(const ServeTcpOptions& o) {
        (void)o;
        return Error::make(Errc::unsupported, "serve --tcp: this platform has no TCP/IP stack");
    }
    // The firmware's timer: waits `us` microseconds (EFI: Boot Services Stall). Measures the
    // TSC frequency where CPUID does not give it. stall_source() is its key in records
    // ("efi_stall"), stall_what() its description; "" when there is no timer.
    virtual Status stall_us(u32 us) {
        (void)us;
        return Error::make(Errc::unsupported, "no firmware timer on this platform");
    }
    virtual const char* stall_source() { return ""; }
    virtual const char* stall_what() { return ""; }
    // The TSC frequency (census/tsc_freq.h): the BSP's CPUID.15H/16H, else measured against
    // stall_us over 50 ms; computed on the first call (once per boot) and kept
    // (app/tsc_clock.cpp). A wrapper (ForwardingPlatform) gives its inner platform's.
    virtual const TscFreq& tsc_frequency() { return measured_tsc_frequency(); }

protected:
    ~Platform() = default;
    // This platform's own, against its stall_us (defined out of line: no virtual function
    // of Platform may be, or it would be the key function the host tests' RTTI needs).
    const TscFreq& measured_tsc_frequency();

private:
    TscFreq tsc_freq_;
    bool tsc_freq_done_ = false;
};

// A Platform that hands every call to another: a wrapper (TracePlatform, ServeSession)
// derives from it and overrides only what it changes, so that a method added to Platform
// reaches the real platform through every wrapper.
class ForwardingPlatform : public Platform {
public:
    explicit ForwardingPlatform(Platform& inner) : inner_(inner) {}
    Hw& hw() override { return inner_.hw(); }
    void write(StrView text) override { inner_.write(text); }
    void write_record(const Value& rec) override { inner_.write_record(rec); }
    void write_diag(StrView text) override { inner_.write_diag(text); }
    const char* firmware_vendor() override { return inner_.firmware_vendor(); }
    u32 firmware_revision() override { return inner_.firmware_revision(); }
    MeasurePlatform* measure() override { return inner_.measure(); }
    void now(char* buf, usize cap) override { inner_.now(buf, cap); }
    RecordSink* record_sink() override { return inner_.record_sink(); }
    FileSource* files() override { return inner_.files(); }
    const char* simulated() override { return inner_.simulated(); }
    Result<ServeLink*> open_serve_link(int port) override { return inner_.open_serve_link(port); }
    Result<ServeLink*> open_tcp_link(const ServeTcpOptions& o) override { return inner_.open_tcp_link(o); }
    Status stall_us(u32 us) override { return inner_.stall_us(us); }
    const char* stall_source() override { return inner_.stall_source(); }
    const char* stall_what() override { return inner_.stall_what(); }
    // Measured once per boot, by the real platform.
    const TscFreq& tsc_frequency() override { return inner_.tsc_frequency(); }

protected:
    ~ForwardingPlatform() = default;
    Platform& inner() { return inner_; }

private:
    Platform& inner_;
};

}  // namespace pmulab
