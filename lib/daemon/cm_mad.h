// CM MADs (IBTA vol. 1 ch. 12): the REQ, REP, RTU, REJ, DREQ, DREP and SIDR REQ/REP that
// connection managers exchange through their ports' QP1, as the 256 bytes on the wire
// (a 24-byte MAD header, then the attribute), and rdma_cm's IP header that leads the
// private data of a REQ and a SIDR REQ (rdma-core/kernel cma: version 0, IP version 4,
// source port, source and destination addresses; 36 bytes).
#pragma once

#include <array>
#include <cstdint>
#include <optional>

#include "sim/net/packet.h"

namespace rdmasim::daemon::cm {

inline constexpr uint8_t kMgmtClassCm = 0x07;    // IBTA 13.4.4: Communication Management
inline constexpr uint8_t kClassVersion = 2;
inline constexpr uint8_t kMethodSend = 0x03;
enum class Attr : uint16_t {
  Req = 0x0010, Mra = 0x0011, Rej = 0x0012, Rep = 0x0013, Rtu = 0x0014, Dreq = 0x0015,
  Drep = 0x0016, SidrReq = 0x0017, SidrRep = 0x0018,
};
// Private data bytes each message carries (IBTA 12.6, 12.11).
uint32_t private_data_bytes(Attr a);
inline constexpr uint32_t kIpHeaderBytes = 36;  // rdma_cm's header in REQ / SIDR REQ private data

// REJ reasons (IBTA 12.6.7.2 table 112) and the SIDR REP status for no listener (12.11.2).
inline constexpr uint16_t kRejTimeout = 1, kRejInvalidServiceId = 8, kRejConsumer = 28;
inline constexpr uint8_t kSidrUnsupported = 1;
// Which message a REJ refuses (IBTA 12.6.7: Message REJected).
inline constexpr uint8_t kRejectedReq = 0, kRejectedRep = 1, kRejectedOther = 2;

// rdma_cm's service IDs for its port spaces: RDMA_IB_IP_PS_* | port (rdma-core's
// <rdma/rdma_cma.h> RDMA_PS_* << 16).
inline uint64_t service_id(uint32_t ps, uint16_t port_host) { return uint64_t{ps} << 16 | port_host; }
inline uint32_t ps_of(uint64_t sid) { return static_cast<uint32_t>(sid >> 16 & 0xffff); }
inline uint16_t port_of(uint64_t sid) { return static_cast<uint16_t>(sid & 0xffff); }

// The fields of one CM message that this project's CM uses; encode() writes the rest as 0.
struct Message {
  Attr attr = Attr::Req;
  uint64_t tid = 0;                 // transaction ID
  uint32_t local_comm_id = 0;       // SIDR: the request ID
  uint32_t remote_comm_id = 0;
  uint64_t service_id = 0;          // REQ, SIDR REQ, SIDR REP
  uint64_t ca_guid = 0;             // REQ, REP
  uint32_t qkey = 0;                // REQ, REP, SIDR REP
  uint32_t qpn = 0;                 // REQ, REP, SIDR REP; DREQ: the remote QPN
  uint32_t psn = 0;                 // REQ (starting PSN), REP
  uint8_t responder_resources = 0, initiator_depth = 0;
  uint8_t remote_cm_response_timeout = 0, local_cm_response_timeout = 0, max_cm_retries = 0;
  uint8_t transport = 0;            // REQ: 0 RC, 1 UC
  uint8_t retry_count = 0, rnr_retry_count = 0, mtu = 0;  // mtu: IBV_MTU_* code
  bool flow_control = false, srq = false;
  uint16_t pkey = 0xffff;
  uint16_t local_lid = 0, remote_lid = 0;
  std::array<uint8_t, 16> local_gid{}, remote_gid{};
  uint8_t hop_limit = 0, traffic_class = 0, sl = 0, local_ack_timeout = 0;
  uint8_t rejected = 0;             // REJ: kRejected*
  uint16_t reason = 0;              // REJ
  uint8_t status = 0;               // SIDR REP
  uint32_t private_len = 0;         // bytes of private_data used (<= private_data_bytes)
  std::array<uint8_t, 224> private_data{};
};

net::Payload encode(const Message& m);
// nullopt when `mad` is not a CM MAD this decoder knows (wrong size, class, method,
// version or attribute).
std::optional<Message> decode(const uint8_t* mad, size_t len);

// rdma_cm's IP header (IPv4 addresses and the port in network byte order, as sockaddr_in).
struct IpHeader {
  uint32_t src_ip = 0, dst_ip = 0;
  uint16_t src_port = 0;
};
void put_ip_header(const IpHeader& h, uint8_t* out);
std::optional<IpHeader> get_ip_header(const uint8_t* in);

}  // namespace rdmasim::daemon::cm
