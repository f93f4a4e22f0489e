// `pmulab serve --tcp PORT [--addr A.B.C.D/N]`: what the TCP transport is asked for
// (docs/agent.md). The EFI side is src/efi/efi_tcp.cpp; this is the part the host tests
// can check.
#pragma once

#include "base/base.h"
#include "base/result.h"

namespace pmulab {

struct ServeTcpOptions {
    u16 port = 0;
    // The station address: QEMU's user-mode network gives its guest 10.0.2.15/24
    // (gateway and host 10.0.2.2), which is where its hostfwd rules deliver.
    u8 addr[4] = {10, 0, 2, 15};
    u8 prefix = 24;
    // --addr dhcp: the address comes from a DHCP server (through the firmware's
    // EFI_IP4_CONFIG2_PROTOCOL policy) instead of addr/prefix.
    bool dhcp = false;
    // --nic N: the Nth network interface with TCP4 (in the firmware's order); -1: the first.
    int nic = -1;
    // Serve one host only: when it goes away, serving stops (default: listen again).
    bool once = false;
};

// "A.B.C.D/N" (N 1..32) or "A.B.C.D" (then /24): a unicast station address. Errors
// name the option and say what is wrong.
Status parse_ipv4_prefix(const char* option, StrView text, u8 addr[4], u8* prefix);

// The subnet mask of a prefix length: 24 -> 255.255.255.0.
void ipv4_mask(u8 prefix, u8 mask[4]);

}  // namespace pmulab
