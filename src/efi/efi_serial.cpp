#include "efi_serial.h"

namespace pmulab::efi {

namespace {

EFI_GUID kSerialIoGuid = EFI_SERIAL_IO_PROTOCOL_GUID;

}  // namespace

Status EfiSerialLink::open(int port, const TscFreq& tsc) {
    PMULAB_TRY_CTX(clock_.init(tsc), "serve");
    UINTN count = 0;
    EFI_HANDLE* handles = nullptr;
    EFI_STATUS st = gBS->LocateHandleBuffer(ByProtocol, &kSerialIoGuid, nullptr, &count, &handles);
    if (st != EFI_SUCCESS || count == 0)
        return Error::make(Errc::unsupported, "serve: the firmware offers no serial port (EFI Serial I/O: %s)",
                           status_name(st == EFI_SUCCESS ? EFI_NOT_FOUND : st));
    UINTN idx = port < 0 ? count - 1 : UINTN(port);
    if (idx >= count) {
        gBS->FreePool(handles);
        return Error::make(Errc::invalid_argument, "serve: --serial %d: the firmware has %u serial port%s (0-%u)", port,
                           unsigned(count), count == 1 ? "" : "s", unsigned(count - 1));
    }
    EFI_HANDLE h = handles[idx];
    gBS->FreePool(handles);
    // Exclusive: the console's terminal driver, polling this port for key strokes, is
    // disconnected and would otherwise take the host's bytes.
    void* iface = nullptr;
    st = gBS->OpenProtocol(h, &kSerialIoGuid, &iface, gImage, nullptr, EFI_OPEN_PROTOCOL_EXCLUSIVE);
    if (st != EFI_SUCCESS || !iface) {
        st = gBS->HandleProtocol(h, &kSerialIoGuid, &iface);
        if (st != EFI_SUCCESS || !iface)
            return Error::make(Errc::io, "serve: cannot open serial port %u: %s", unsigned(idx), status_name(st));
    }
    io_ = static_cast<EFI_SERIAL_IO_PROTOCOL*>(iface);
    // 115200 8N1, the default FIFO depth and a 1 s timeout per character (writes wait
    // for the port that long; reads never wait: read() takes only what has arrived).
    st = io_->SetAttributes(io_, 115200, 0, 1000000, NoParity, 8, OneStopBit);
    if (st != EFI_SUCCESS)
        return Error::make(Errc::io, "serve: serial port %u: SetAttributes: %s", unsigned(idx), status_name(st));
    format_to(describe_, sizeof describe_, "serial port %u of %u", unsigned(idx), unsigned(count));
    return ok_status();
}

Result<usize> EfiSerialLink::read(char* buf, usize cap) {
    usize got = 0;
    while (got < cap) {
        UINT32 ctl = 0;
        EFI_STATUS st = io_->GetControl(io_, &ctl);
        if (st != EFI_SUCCESS) return Error::make(Errc::io, "serve: serial port: GetControl: %s", status_name(st));
        if (ctl & EFI_SERIAL_INPUT_BUFFER_EMPTY) break;
        UINTN n = 1;
        st = io_->Read(io_, &n, buf + got);
        if (st != EFI_SUCCESS && st != EFI_TIMEOUT)
            return Error::make(Errc::io, "serve: serial read: %s", status_name(st));
        if (n == 0) break;
        got += n;
    }
    return got;
}

void EfiSerialLink::wait(u32 ms) {
    // Polls the port while waiting, so input is taken soon after it arrives.
    u64 end = clock_.deadline(ms);
    while (!TscClock::passed(end)) {
        UINT32 ctl = 0;
        if (io_->GetControl(io_, &ctl) == EFI_SUCCESS && !(ctl & EFI_SERIAL_INPUT_BUFFER_EMPTY)) return;
        gBS->Stall(50);
    }
}

Status EfiSerialLink::send(StrView bytes) {
    usize off = 0;
    u32 stuck = 0;
    while (off < bytes.len) {
        UINTN n = bytes.len - off;
        EFI_STATUS st = io_->Write(io_, &n, const_cast<char*>(bytes.ptr + off));
        off += n;
        if (st != EFI_SUCCESS && st != EFI_TIMEOUT)
            return Error::make(Errc::io, "serve: serial write: %s", status_name(st));
        stuck = n ? 0 : stuck + 1;
        if (stuck > 1000) return Error::make(Errc::io, "serve: serial write: the port takes no data");
    }
    return ok_status();
}

u64 EfiSerialLink::now_ms() { return clock_.now_ms(); }

}  // namespace pmulab::efi
