#include "efi_tcp.h"

extern "C" {
#include <efipciio.h>
}

namespace pmulab::efi {

namespace {

EFI_GUID kPciIoGuid = EFI_PCI_IO_PROTOCOL_GUID;
EFI_GUID kSnpGuid = EFI_SIMPLE_NETWORK_PROTOCOL_GUID;
// EFI_MANAGED_NETWORK_SERVICE_BINDING_PROTOCOL_GUID (UEFI spec §25.1.1), not in gnu-efi.
EFI_GUID kMnpSbGuid = {0xf36ff770, 0xa7e1, 0x42cf, {0x9e, 0xd2, 0x56, 0xf0, 0xf2, 0x71, 0xf4, 0x4c}};
EFI_GUID kIp4SbGuid = EFI_IP4_SERVICE_BINDING_PROTOCOL;
EFI_GUID kTcp4SbGuid = EFI_TCP4_SERVICE_BINDING_PROTOCOL;
EFI_GUID kTcp4Guid = EFI_TCP4_PROTOCOL;

// EFI_IP4_CONFIG2_PROTOCOL (UEFI spec §28.5), not in gnu-efi.
EFI_GUID kIp4Config2Guid = {0x5b446ed1, 0xe30b, 0x4faa, {0x87, 0x1a, 0x36, 0x54, 0xec, 0xa3, 0x60, 0x80}};
enum Ip4Config2DataType : UINT32 { kIp4InterfaceInfo = 0, kIp4Policy = 1 };
enum Ip4Config2Policy : UINT32 { kIp4PolicyStatic = 0, kIp4PolicyDhcp = 1 };
struct Ip4Config2InterfaceInfo {
    CHAR16 Name[32];
    UINT8 IfType;
    UINT32 HwAddressSize;
    EFI_MAC_ADDRESS HwAddress;
    EFI_IPv4_ADDRESS StationAddress;
    EFI_IPv4_ADDRESS SubnetMask;
    UINT32 RouteTableSize;
    EFI_IP4_ROUTE_TABLE* RouteTable;
};
struct Ip4Config2Protocol {
    EFI_STATUS(EFIAPI* SetData)(Ip4Config2Protocol* This, UINT32 DataType, UINTN DataSize, VOID* Data);
    EFI_STATUS(EFIAPI* GetData)(Ip4Config2Protocol* This, UINT32 DataType, UINTN* DataSize, VOID* Data);
    VOID* RegisterDataNotify;
    VOID* UnregisterDataNotify;
};

// PCI configuration space: the base class code (PCI Local Bus spec §6.2.1); 02h is a
// network controller.
constexpr u32 kPciClassBaseOffset = 0x0b;
constexpr u8 kPciClassNetwork = 0x02;

const char* tcp_status_name(EFI_STATUS s) {
    switch (s) {
        case EFI_CONNECTION_FIN: return "EFI_CONNECTION_FIN (the host closed the connection)";
        case EFI_CONNECTION_RESET: return "EFI_CONNECTION_RESET (the host reset the connection)";
        case EFI_CONNECTION_REFUSED: return "EFI_CONNECTION_REFUSED";
        case EFI_NO_MAPPING: return "EFI_NO_MAPPING (no IPv4 address yet)";
        case EFI_ICMP_ERROR: return "EFI_ICMP_ERROR";
        case EFI_NO_RESPONSE: return "EFI_NO_RESPONSE";
        case EFI_PROTOCOL_ERROR: return "EFI_PROTOCOL_ERROR";
        default: return status_name(s);
    }
}

u32 count_handles(EFI_GUID* guid) {
    UINTN n = 0;
    EFI_HANDLE* hs = nullptr;
    if (gBS->LocateHandleBuffer(ByProtocol, guid, nullptr, &n, &hs) != EFI_SUCCESS) return 0;
    gBS->FreePool(hs);
    return u32(n);
}

// Connects every PCI network controller and every Simple Network Protocol handle, with
// all their children (ConnectController with Recursive = TRUE, UEFI spec §7.3): OVMF's
// boot manager connects only the devices on its boot path, so nothing has bound MNP,
// ARP, IP4 and TCP4 to the NIC yet. Returns the number of network controllers.
u32 connect_network() {
    u32 nics = 0;
    UINTN n = 0;
    EFI_HANDLE* hs = nullptr;
    if (gBS->LocateHandleBuffer(ByProtocol, &kPciIoGuid, nullptr, &n, &hs) == EFI_SUCCESS) {
        for (UINTN i = 0; i < n; ++i) {
            void* iface = nullptr;
            if (gBS->HandleProtocol(hs[i], &kPciIoGuid, &iface) != EFI_SUCCESS || !iface) continue;
            auto* pci = static_cast<EFI_PCI_IO_PROTOCOL*>(iface);
            UINT8 base_class = 0;
            if (pci->Pci.Read(pci, EfiPciIoWidthUint8, kPciClassBaseOffset, 1, &base_class) != EFI_SUCCESS) continue;
            if (base_class != kPciClassNetwork) continue;
            ++nics;
            gBS->ConnectController(hs[i], nullptr, nullptr, TRUE);
        }
        gBS->FreePool(hs);
    }
    hs = nullptr;
    if (gBS->LocateHandleBuffer(ByProtocol, &kSnpGuid, nullptr, &n, &hs) == EFI_SUCCESS) {
        for (UINTN i = 0; i < n; ++i) gBS->ConnectController(hs[i], nullptr, nullptr, TRUE);
        gBS->FreePool(hs);
    }
    return nics;
}

}  // namespace

// --addr dhcp: sets the NIC's IPv4 policy to DHCP (Ip4Config2 SetData, UEFI spec §28.5;
// the firmware keeps it in NVRAM) and waits, bounded, for the lease.
Status EfiTcpLink::wait_for_dhcp(EFI_HANDLE nic, u8 addr[4], u8* prefix) {
    void* iface = nullptr;
    EFI_STATUS st = gBS->HandleProtocol(nic, &kIp4Config2Guid, &iface);
    if (st != EFI_SUCCESS || !iface)
        return Error::make(Errc::unsupported, "serve --tcp --addr dhcp: the NIC has no EFI_IP4_CONFIG2_PROTOCOL: %s",
                           tcp_status_name(st));
    auto* cfg2 = static_cast<Ip4Config2Protocol*>(iface);
    UINT32 policy = kIp4PolicyStatic;
    UINTN size = sizeof policy;
    st = cfg2->GetData(cfg2, kIp4Policy, &size, &policy);
    if (st == EFI_SUCCESS && policy != kIp4PolicyDhcp) {
        policy = kIp4PolicyDhcp;
        st = cfg2->SetData(cfg2, kIp4Policy, sizeof policy, &policy);
        if (st != EFI_SUCCESS && st != EFI_NOT_READY)
            return Error::make(Errc::io, "serve --tcp --addr dhcp: setting the IPv4 policy to DHCP: %s",
                               tcp_status_name(st));
    }
    alignas(8) u8 buf[1024];
    u64 end = now_ms() + kTcpDhcpWaitMs;
    for (;;) {
        size = sizeof buf;
        auto* info = reinterpret_cast<Ip4Config2InterfaceInfo*>(buf);
        if (cfg2->GetData(cfg2, kIp4InterfaceInfo, &size, buf) == EFI_SUCCESS) {
            const UINT8* a = info->StationAddress.Addr;
            if (a[0] | a[1] | a[2] | a[3]) {
                u8 n = 0;
                for (int k = 0; k < 4; ++k) {
                    addr[k] = a[k];
                    for (u8 m = info->SubnetMask.Addr[k]; m & 0x80; m = u8(m + m)) ++n;
                }
                *prefix = n;
                return ok_status();
            }
        }
        if (now_ms() >= end)
            return Error::make(Errc::io,
                               "serve --tcp --addr dhcp: no DHCP lease within %llu s (is a DHCP server on the NIC's "
                               "network? else give --addr A.B.C.D/N)",
                               (unsigned long long)(kTcpDhcpWaitMs / 1000));
        gBS->Stall(10000);
    }
}

bool EfiTcpLink::completed(EFI_EVENT ev, bool* done) {
    if (!*done && gBS->CheckEvent(ev) == EFI_SUCCESS) *done = true;
    return *done;
}

void EfiTcpLink::poll() {
    // Moves received frames up the stack now rather than at MNP's next periodic poll.
    if (conn_) conn_->Poll(conn_);
    else if (listener_) listener_->Poll(listener_);
}

// Connects the network controllers and picks the NIC --nic names among those with a TCP4
// service; notes_ says what the firmware had before and after.
Result<EFI_HANDLE> EfiTcpLink::find_nic(int nic, u32* which, u32* count) {
    u32 snp0 = count_handles(&kSnpGuid), mnp0 = count_handles(&kMnpSbGuid), ip40 = count_handles(&kIp4SbGuid),
        tcp0 = count_handles(&kTcp4SbGuid);
    u32 nics = connect_network();
    u32 snp = count_handles(&kSnpGuid), mnp = count_handles(&kMnpSbGuid), ip4 = count_handles(&kIp4SbGuid);
    format_to(notes_, sizeof notes_,
              "network handles (SNP, MNP, IP4, TCP4 service): %u, %u, %u, %u as the firmware left them; %u, %u, %u, "
              "%u after connecting %u PCI network controller%s",
              snp0, mnp0, ip40, tcp0, snp, mnp, ip4, count_handles(&kTcp4SbGuid), nics, nics == 1 ? "" : "s");
    UINTN n = 0;
    EFI_HANDLE* hs = nullptr;
    EFI_STATUS st = gBS->LocateHandleBuffer(ByProtocol, &kTcp4SbGuid, nullptr, &n, &hs);
    if (st != EFI_SUCCESS || n == 0) {
        const char* missing = nics == 0  ? "a network controller (in QEMU: run-qemu.sh --tcp PORT adds one)"
                              : snp == 0 ? "a driver for the network controller (no EFI_SIMPLE_NETWORK_PROTOCOL)"
                              : mnp == 0 ? "MnpDxe (no EFI_MANAGED_NETWORK_SERVICE_BINDING_PROTOCOL)"
                              : ip4 == 0 ? "Ip4Dxe or ArpDxe (no EFI_IP4_SERVICE_BINDING_PROTOCOL)"
                                         : "TcpDxe (no EFI_TCP4_SERVICE_BINDING_PROTOCOL)";
        return Error::make(Errc::unsupported,
                           "serve --tcp: the firmware offers no TCP4 service: it lacks %s; after connecting the "
                           "network controllers: %u PCI network controller%s, %u SNP, %u MNP, %u IP4, 0 TCP4 "
                           "service handles",
                           missing, nics, nics == 1 ? "" : "s", snp, mnp, ip4);
    }
    *count = u32(n);
    *which = nic < 0 ? 0 : u32(nic);
    EFI_HANDLE h = *which < *count ? hs[*which] : nullptr;
    gBS->FreePool(hs);
    if (!h)
        return Error::make(Errc::invalid_argument,
                           "serve --tcp: --nic %d: the firmware has %u network interface%s "
                           "with TCP4 (0-%u)",
                           nic, *count, *count == 1 ? "" : "s", *count - 1);
    return h;
}

// A passive open on PORT from any host (UEFI spec §28.1.3 Configure). Without --addr dhcp
// at our own station address, so the firmware's stored IPv4 settings (Ip4Config2) are not
// changed.
Status EfiTcpLink::listen(const ServeTcpOptions& o, const u8 addr[4], u8 prefix) {
    EFI_STATUS st = sb_->CreateChild(sb_, &listen_handle_);
    if (st != EFI_SUCCESS) return Error::make(Errc::io, "serve --tcp: TCP4 CreateChild: %s", tcp_status_name(st));
    void* iface = nullptr;
    st = gBS->HandleProtocol(listen_handle_, &kTcp4Guid, &iface);
    if (st != EFI_SUCCESS || !iface)
        return Error::make(Errc::io, "serve --tcp: TCP4 protocol: %s", tcp_status_name(st));
    listener_ = static_cast<EFI_TCP4*>(iface);
    EFI_TCP4_CONFIG_DATA cfg = {};
    cfg.TypeOfService = 0;
    cfg.TimeToLive = 64;
    // With DHCP: the address the firmware's IPv4 configuration holds (its default).
    cfg.AccessPoint.UseDefaultAddress = o.dhcp ? TRUE : FALSE;
    u8 mask[4];
    ipv4_mask(prefix, mask);
    for (int k = 0; k < 4 && !o.dhcp; ++k) {
        cfg.AccessPoint.StationAddress.Addr[k] = addr[k];
        cfg.AccessPoint.SubnetMask.Addr[k] = mask[k];
    }
    cfg.AccessPoint.StationPort = o.port;
    cfg.AccessPoint.ActiveFlag = FALSE;
    cfg.ControlOption = nullptr;
    st = listener_->Configure(listener_, &cfg);
    if (st != EFI_SUCCESS)
        return Error::make(Errc::io, "serve --tcp: TCP4 Configure (listen on %u.%u.%u.%u/%u port %u): %s", addr[0],
                           addr[1], addr[2], addr[3], unsigned(prefix), unsigned(o.port), tcp_status_name(st));
    return ok_status();
}

// The events of the listen, receive and transmit tokens and their buffers.
Status EfiTcpLink::make_tokens() {
    EFI_EVENT* evs[] = {&listen_tok_.CompletionToken.Event, &rx_tok_.CompletionToken.Event};
    EFI_STATUS st = EFI_SUCCESS;
    for (EFI_EVENT* e : evs) {
        st = gBS->CreateEvent(0, TPL_CALLBACK, nullptr, nullptr, e);
        if (st != EFI_SUCCESS) return Error::make(Errc::io, "serve --tcp: CreateEvent: %s", tcp_status_name(st));
    }
    for (TxSlot& s : tx_) {
        st = gBS->CreateEvent(0, TPL_CALLBACK, nullptr, nullptr, &s.token.CompletionToken.Event);
        if (st != EFI_SUCCESS) return Error::make(Errc::io, "serve --tcp: CreateEvent: %s", tcp_status_name(st));
        st = gBS->AllocatePool(EfiLoaderData, kTcpTxSlotBytes, reinterpret_cast<void**>(&s.buf));
        if (st != EFI_SUCCESS) return Error::make(Errc::io, "serve --tcp: AllocatePool: %s", tcp_status_name(st));
    }
    st = gBS->AllocatePool(EfiLoaderData, kTcpRxBytes, reinterpret_cast<void**>(&rx_buf_));
    if (st != EFI_SUCCESS) return Error::make(Errc::io, "serve --tcp: AllocatePool: %s", tcp_status_name(st));
    return ok_status();
}

Status EfiTcpLink::open(const ServeTcpOptions& o, const TscFreq& tsc) {
    teardown();
    once_ = o.once;
    PMULAB_TRY_CTX(clock_.init(tsc), "serve --tcp");
    u32 which = 0, tcp4 = 0;
    Result<EFI_HANDLE> found = find_nic(o.nic, &which, &tcp4);
    if (!found.ok()) return found.error();
    EFI_HANDLE nic = found.value();
    void* iface = nullptr;
    EFI_STATUS st = gBS->HandleProtocol(nic, &kTcp4SbGuid, &iface);
    if (st != EFI_SUCCESS || !iface)
        return Error::make(Errc::io, "serve --tcp: TCP4 service binding: %s", tcp_status_name(st));
    sb_ = static_cast<EFI_SERVICE_BINDING*>(iface);
    char mac[24] = "?";
    iface = nullptr;
    if (gBS->HandleProtocol(nic, &kSnpGuid, &iface) == EFI_SUCCESS && iface) {
        const EFI_SIMPLE_NETWORK_MODE* m = static_cast<EFI_SIMPLE_NETWORK_PROTOCOL*>(iface)->Mode;
        const UINT8* a = m->CurrentAddress.Addr;
        format_to(mac, sizeof mac, "%02x:%02x:%02x:%02x:%02x:%02x", a[0], a[1], a[2], a[3], a[4], a[5]);
    }
    u8 addr[4] = {o.addr[0], o.addr[1], o.addr[2], o.addr[3]};
    u8 prefix = o.prefix;
    if (o.dhcp) PMULAB_TRY(wait_for_dhcp(nic, addr, &prefix));
    PMULAB_TRY(listen(o, addr, prefix));
    PMULAB_TRY(make_tokens());
    format_to(describe_, sizeof describe_, "TCP %u.%u.%u.%u:%u (%sNIC %s, %u of %u with TCP4)", addr[0], addr[1],
              addr[2], addr[3], unsigned(o.port), o.dhcp ? "DHCP, " : "", mac, which + 1, tcp4);
    base_len_ = str_len(describe_);
    return ok_status();
}

Result<bool> EfiTcpLink::accept(u64 wait_ms) {
    if (conn_) return true;
    u64 end = now_ms() + wait_ms;
    for (;;) {
        Result<bool> r = accept_one(end, wait_ms != 0);
        // A host that closed before its first byte was read (a port scan, a client that
        // gave up waiting) is dropped, and the next one awaited: it must not end serving.
        if (r.ok() || !(conn_ && rx_closed_)) return r;
        hang_up();
    }
}

Result<bool> EfiTcpLink::accept_one(u64 end, bool bounded) {
    if (!accepting_) {
        listen_tok_.NewChildHandle = nullptr;
        accept_done_ = false;
        EFI_STATUS st = listener_->Accept(listener_, &listen_tok_);
        if (st != EFI_SUCCESS) return Error::make(Errc::io, "serve --tcp: TCP4 Accept: %s", tcp_status_name(st));
        accepting_ = true;
    }
    for (;;) {
        poll();
        if (completed(listen_tok_.CompletionToken.Event, &accept_done_)) break;
        if (bounded && now_ms() >= end) return false;
        gBS->Stall(1000);
    }
    accepting_ = false;
    accept_done_ = false;
    EFI_STATUS st = listen_tok_.CompletionToken.Status;
    if (st != EFI_SUCCESS) return Error::make(Errc::io, "serve --tcp: TCP4 Accept: %s", tcp_status_name(st));
    conn_handle_ = listen_tok_.NewChildHandle;
    void* iface = nullptr;
    st = gBS->HandleProtocol(conn_handle_, &kTcp4Guid, &iface);
    if (st != EFI_SUCCESS || !iface) {
        sb_->DestroyChild(sb_, conn_handle_);
        conn_handle_ = nullptr;
        return Error::make(Errc::io, "serve --tcp: the accepted connection has no TCP4 protocol: %s",
                           tcp_status_name(st));
    }
    conn_ = static_cast<EFI_TCP4*>(iface);
    host_gone_ = rx_closed_ = false;
    rx_have_ = rx_off_ = 0;
    EFI_TCP4_CONFIG_DATA cfg = {};
    describe_[base_len_] = 0;
    if (conn_->GetModeData(conn_, nullptr, &cfg, nullptr, nullptr, nullptr) == EFI_SUCCESS) {
        const UINT8* r = cfg.AccessPoint.RemoteAddress.Addr;
        format_to(describe_ + base_len_, sizeof describe_ - base_len_, ", host %u.%u.%u.%u:%u", r[0], r[1], r[2], r[3],
                  unsigned(cfg.AccessPoint.RemotePort));
    }
    Status s = start_receive();
    if (!s.ok()) {
        if (rx_closed_) return s.error();  // accept() hangs up and waits for the next host
        hang_up();
        return s.error();
    }
    return true;
}

Status EfiTcpLink::start_receive() {
    rx_data_ = {};
    rx_data_.UrgentFlag = FALSE;
    rx_data_.DataLength = UINT32(kTcpRxBytes);
    rx_data_.FragmentCount = 1;
    rx_data_.FragmentTable[0].FragmentLength = UINT32(kTcpRxBytes);
    rx_data_.FragmentTable[0].FragmentBuffer = rx_buf_;
    rx_tok_.Packet.RxData = &rx_data_;
    rx_tok_.CompletionToken.Status = EFI_NOT_READY;
    rx_done_ = false;
    EFI_STATUS st = conn_->Receive(conn_, &rx_tok_);
    if (st != EFI_SUCCESS) {
        if (st == EFI_CONNECTION_FIN) rx_closed_ = true;
        else host_gone_ = true;
        return Error::make(Errc::io, "serve --tcp: TCP4 Receive: %s", tcp_status_name(st));
    }
    rx_pending_ = true;
    return ok_status();
}

Result<usize> EfiTcpLink::read(char* buf, usize cap) {
    if (!conn_ || host_gone_ || rx_closed_)
        return Error::make(Errc::io, "serve --tcp: the host sends nothing more (connection closed)");
    if (rx_off_ == rx_have_) {
        if (!rx_pending_) PMULAB_TRY(start_receive());
        if (!completed(rx_tok_.CompletionToken.Event, &rx_done_)) {
            poll();
            if (!completed(rx_tok_.CompletionToken.Event, &rx_done_)) return usize(0);
        }
        rx_pending_ = false;
        rx_done_ = false;
        EFI_STATUS st = rx_tok_.CompletionToken.Status;
        if (st != EFI_SUCCESS) {
            // FIN: the host sends nothing more but may still read the answers to what
            // it sent (a half-close); anything else: the connection is gone.
            if (st == EFI_CONNECTION_FIN) rx_closed_ = true;
            else host_gone_ = true;
            return Error::make(Errc::io, "serve --tcp: %s", tcp_status_name(st));
        }
        rx_have_ = rx_data_.DataLength <= kTcpRxBytes ? rx_data_.DataLength : kTcpRxBytes;
        rx_off_ = 0;
    }
    usize n = rx_have_ - rx_off_;
    if (n > cap) n = cap;
    for (usize i = 0; i < n; ++i) buf[i] = rx_buf_[rx_off_ + i];
    rx_off_ += n;
    if (rx_off_ == rx_have_) {
        rx_off_ = rx_have_ = 0;
        Status s = start_receive();
        if (!s.ok() && n == 0) return s.error();
    }
    return n;
}

void EfiTcpLink::wait(u32 ms) {
    u64 end = clock_.deadline(ms);
    while (!TscClock::passed(end)) {
        if (!conn_ || host_gone_ || rx_closed_ || rx_off_ < rx_have_) return;
        poll();
        if (rx_pending_ && completed(rx_tok_.CompletionToken.Event, &rx_done_)) return;
        gBS->Stall(50);
    }
}

void EfiTcpLink::reap_tx() {
    for (TxSlot& s : tx_) {
        if (!s.busy || gBS->CheckEvent(s.token.CompletionToken.Event) != EFI_SUCCESS) continue;
        s.busy = false;
        if (s.token.CompletionToken.Status != EFI_SUCCESS) host_gone_ = true;
    }
}

Status EfiTcpLink::send(StrView bytes) {
    if (!conn_ || host_gone_) return Error::make(Errc::io, "serve --tcp: no host is connected");
    usize off = 0;
    while (off < bytes.len) {
        reap_tx();
        if (host_gone_) return Error::make(Errc::io, "serve --tcp: the host went away while data was being sent");
        TxSlot* slot = nullptr;
        for (TxSlot& s : tx_)
            if (!s.busy) {
                slot = &s;
                break;
            }
        if (!slot) {
            // Every token is in flight: wait for the host to take (acknowledge) some.
            u64 end = now_ms() + kTcpSendWaitMs;
            while (!slot) {
                poll();
                reap_tx();
                if (host_gone_)
                    return Error::make(Errc::io, "serve --tcp: the host went away while data was being sent");
                for (TxSlot& s : tx_)
                    if (!s.busy) {
                        slot = &s;
                        break;
                    }
                if (slot) break;
                if (now_ms() >= end) {
                    host_gone_ = true;
                    return Error::make(Errc::io, "serve --tcp: the host took no data for %llu s",
                                       (unsigned long long)(kTcpSendWaitMs / 1000));
                }
                gBS->Stall(100);
            }
        }
        usize n = bytes.len - off;
        if (n > kTcpTxSlotBytes) n = kTcpTxSlotBytes;
        for (usize i = 0; i < n; ++i) slot->buf[i] = bytes.ptr[off + i];
        slot->data = {};
        slot->data.Push = TRUE;
        slot->data.Urgent = FALSE;
        slot->data.DataLength = UINT32(n);
        slot->data.FragmentCount = 1;
        slot->data.FragmentTable[0].FragmentLength = UINT32(n);
        slot->data.FragmentTable[0].FragmentBuffer = slot->buf;
        slot->token.Packet.TxData = &slot->data;
        slot->token.CompletionToken.Status = EFI_NOT_READY;
        EFI_STATUS st = conn_->Transmit(conn_, &slot->token);
        if (st != EFI_SUCCESS) {
            host_gone_ = true;
            return Error::make(Errc::io, "serve --tcp: TCP4 Transmit: %s", tcp_status_name(st));
        }
        slot->busy = true;
        off += n;
    }
    return ok_status();
}

void EfiTcpLink::hang_up() {
    if (!conn_) return;
    // What was sent reaches the host first (bounded), then an orderly close; a host that
    // reset the connection gets an abort.
    u64 end = now_ms() + kTcpCloseWaitMs;
    for (;;) {
        reap_tx();
        bool busy = false;
        for (TxSlot& s : tx_) busy |= s.busy;
        if (!busy || host_gone_ || now_ms() >= end) break;
        poll();
        gBS->Stall(100);
    }
    EFI_TCP4_CLOSE_TOKEN ct = {};
    ct.AbortOnClose = FALSE;
    if (gBS->CreateEvent(0, TPL_CALLBACK, nullptr, nullptr, &ct.CompletionToken.Event) == EFI_SUCCESS) {
        if (conn_->Close(conn_, &ct) == EFI_SUCCESS) {
            end = now_ms() + kTcpCloseWaitMs;
            while (gBS->CheckEvent(ct.CompletionToken.Event) != EFI_SUCCESS && now_ms() < end) {
                poll();
                gBS->Stall(100);
            }
        }
        gBS->CloseEvent(ct.CompletionToken.Event);
    }
    drop_connection();
}

// Destroys the connection's child (its pending tokens complete with EFI_ABORTED) and
// clears every token event, ready for the next host.
void EfiTcpLink::drop_connection() {
    sb_->DestroyChild(sb_, conn_handle_);
    conn_handle_ = nullptr;
    conn_ = nullptr;
    gBS->CheckEvent(rx_tok_.CompletionToken.Event);
    rx_pending_ = rx_done_ = false;
    rx_have_ = rx_off_ = 0;
    for (TxSlot& s : tx_) {
        gBS->CheckEvent(s.token.CompletionToken.Event);
        s.busy = false;
    }
    host_gone_ = rx_closed_ = false;
    describe_[base_len_] = 0;
}

EfiTcpLink::~EfiTcpLink() { teardown(); }

// Closes the connection and the listener (the port is free again) and gives back the
// events and buffers: at the end, and before a second `serve --tcp` in one campaign.
void EfiTcpLink::teardown() {
    if (conn_) hang_up();
    if (accepting_ && listener_) listener_->Cancel(listener_, nullptr);
    if (listener_) listener_->Configure(listener_, nullptr);
    if (listen_handle_ && sb_) sb_->DestroyChild(sb_, listen_handle_);
    EFI_EVENT evs[] = {listen_tok_.CompletionToken.Event, rx_tok_.CompletionToken.Event};
    for (EFI_EVENT e : evs)
        if (e) gBS->CloseEvent(e);
    for (TxSlot& s : tx_) {
        if (s.token.CompletionToken.Event) gBS->CloseEvent(s.token.CompletionToken.Event);
        if (s.buf) gBS->FreePool(s.buf);
        s = TxSlot{};
    }
    if (rx_buf_) gBS->FreePool(rx_buf_);
    rx_buf_ = nullptr;
    listen_tok_ = {};
    rx_tok_ = {};
    sb_ = nullptr;
    listen_handle_ = nullptr;
    listener_ = nullptr;
    accepting_ = accept_done_ = false;
}

u64 EfiTcpLink::now_ms() { return clock_.now_ms(); }

}  // namespace pmulab::efi
