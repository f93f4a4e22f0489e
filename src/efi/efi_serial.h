// `pmulab serve` over the serial port: EFI Serial I/O (UEFI spec §12.8), so any port
// the firmware drives works (a 16550 COM port, a USB-serial adapter with a UEFI driver).
#pragma once

#include "efi_clock.h"
#include "efi_defs.h"
#include "app/serve_session.h"

namespace pmulab::efi {

class EfiSerialLink final : public ServeLink {
public:
    // Opens Serial I/O port `port` (0-based, in LocateHandleBuffer order; -1: the last
    // one) exclusively (the firmware's terminal driver lets go of it), 115200 8N1.
    // The clock of its waits runs at `tsc` (Platform::tsc_frequency).
    Status open(int port, const TscFreq& tsc);
    Result<usize> read(char* buf, usize cap) override;
    void wait(u32 ms) override;
    Status send(StrView bytes) override;
    u64 now_ms() override;
    const char* describe() override { return describe_; }

private:
    EFI_SERIAL_IO_PROTOCOL* io_ = nullptr;
    TscClock clock_;
    char describe_[96] = {};
};

}  // namespace pmulab::efi
