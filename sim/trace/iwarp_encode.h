// The iWARP encoder: an iWARP segment (nic::RdmaPacket with its TCP header and FPDU) as the
// Ethernet/IPv4/TCP/MPA/DDP/RDMAP bytes a capture on a real wire shows.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/net/packet.h"

namespace rdmasim::trace {

// Appends the frame of an iWARP segment or MPA start frame to `out`. Returns false and
// appends nothing when `seg` is not an iWARP transport packet or its MPA/TCP lengths do not
// describe its fields.
bool encode_iwarp_segment(const net::Packet& seg, std::vector<uint8_t>& out);

}  // namespace rdmasim::trace
