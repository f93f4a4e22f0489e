// `pmulab serve --tcp PORT` over the firmware's TCP/IP stack: EFI TCP4 (UEFI spec
// §28.1, EFI_TCP4_SERVICE_BINDING_PROTOCOL and EFI_TCP4_PROTOCOL). OVMF (edk2
// NetworkPkg: SnpDxe, MnpDxe, ArpDxe, Ip4Dxe, TcpDxe) has it, but only binds it to a
// NIC that something connects; open() connects the network controllers itself
// (ConnectController, UEFI spec §7.3).
#pragma once

#include "efi_clock.h"
#include "efi_defs.h"
#include "app/serve_session.h"
#include "app/serve_tcp.h"

extern "C" {
#include <efitcp.h>
}

namespace pmulab::efi {

inline constexpr usize kTcpRxBytes = 16384;     // one Receive token's buffer
inline constexpr usize kTcpTxSlots = 8;         // Transmit tokens in flight
inline constexpr usize kTcpTxSlotBytes = 8192;  // bytes per Transmit token
inline constexpr u64 kTcpSendWaitMs = 10000;    // a host that takes no data for this long is gone
inline constexpr u64 kTcpCloseWaitMs = 2000;    // an orderly close, then an abort
inline constexpr u64 kTcpDhcpWaitMs = 30000;    // --addr dhcp: the longest wait for a lease

class EfiTcpLink final : public ServeLink {
public:
    // Connects the network controllers, finds the TCP4 service on the first one that has
    // it, and listens on o.port at o.addr (a station address of its own; the firmware's
    // stored IPv4 configuration is left alone).
    // The clock of its timeouts runs at `tsc` (Platform::tsc_frequency).
    Status open(const ServeTcpOptions& o, const TscFreq& tsc);
    // Closes the connection and the listener and gives back events and buffers.
    ~EfiTcpLink();
    Result<bool> accept(u64 wait_ms) override;
    // One Accept: true with a connection whose first Receive is started, false when
    // `end` (now_ms(); when bounded) passed first.
    Result<bool> accept_one(u64 end, bool bounded);
    void hang_up() override;
    bool reconnects() const override { return !once_; }
    Result<usize> read(char* buf, usize cap) override;
    void wait(u32 ms) override;
    Status send(StrView bytes) override;
    u64 now_ms() override;
    const char* describe() override { return describe_; }
    const char* notes() override { return notes_; }

private:
    struct TxSlot {
        EFI_TCP4_IO_TOKEN token;
        EFI_TCP4_TRANSMIT_DATA data;
        char* buf;
        bool busy;
    };
    Status start_receive();
    // Whether a token's event has been signalled (CheckEvent clears it, so the answer is
    // kept in *done).
    bool completed(EFI_EVENT ev, bool* done);
    void poll();
    void reap_tx();
    void drop_connection();
    void teardown();
    Status wait_for_dhcp(EFI_HANDLE nic, u8 addr[4], u8* prefix);
    Result<EFI_HANDLE> find_nic(int nic, u32* which, u32* count);
    Status listen(const ServeTcpOptions& o, const u8 addr[4], u8 prefix);
    Status make_tokens();

    EFI_SERVICE_BINDING* sb_ = nullptr;
    EFI_HANDLE listen_handle_ = nullptr;
    EFI_TCP4* listener_ = nullptr;
    EFI_TCP4_LISTEN_TOKEN listen_tok_ = {};
    bool accepting_ = false, accept_done_ = false;
    EFI_HANDLE conn_handle_ = nullptr;
    EFI_TCP4* conn_ = nullptr;
    EFI_TCP4_IO_TOKEN rx_tok_ = {};
    EFI_TCP4_RECEIVE_DATA rx_data_ = {};
    bool rx_pending_ = false, rx_done_ = false;
    char* rx_buf_ = nullptr;
    usize rx_have_ = 0, rx_off_ = 0;
    bool host_gone_ = false;  // reset, or it takes no data: nothing more can be sent
    bool rx_closed_ = false;  // FIN: it sends nothing more (it may still read)
    TxSlot tx_[kTcpTxSlots] = {};
    TscClock clock_;
    bool once_ = false;
    char describe_[128] = {};
    usize base_len_ = 0;  // describe_ without the connected host
    char notes_[192] = {};
};

}  // namespace pmulab::efi
