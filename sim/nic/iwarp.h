// iWARP on the HCA model: an RC QP of an iWARP NIC carries its messages as MPA FPDUs
// (DDP/RDMAP inside) over its own TCP connection (sim/nic/iwarp_tcp.h).
//
// How it sits on the RC model (hooks in hca.cpp, requester.cpp, responder.cpp):
// - The connection forms when the initiating QP (the lower address and QPN) reaches RTS:
//   its MPA Request goes out then, and the peer answers with the Reply. Each side's TCP
//   state exists from RTR (its receiving half is needed as soon as the peer may send).
//   There is no rdma_cm: both sides derive the ISNs and ports from the QPNs and addresses
//   they exchanged out of band.
// - The RC requester and responder still segment messages and place data; each packet they
//   build becomes one FPDU, pushed into the TCP send queue when the congestion and receive
//   windows have room. TCP provides reliability and order, so the RC ACK timer, ACKs and
//   go-back-N are not used: a SEND or WRITE completes when TCP has acknowledged its last
//   FPDU, a READ when its last response FPDU arrives.
// - Errors the RC responder reports with a NAK (remote access, invalid request, remote
//   operation, and "no receive posted", which IB answers with an RNR NAK) become an RDMAP
//   Terminate message; the responder's QP goes to ERR and the requester's follows when the
//   Terminate arrives. A connection whose retransmissions all time out (max_retries)
//   completes the first outstanding WQE with RETRY_EXC_ERR and moves the QP to ERR.
// - Wire sizes: Ethernet 14 + IPv4 20 + TCP 20 + 12 (timestamps option) + the FPDU (MPA
//   length 2 + DDP/RDMAP header: tagged 14, untagged 18, Read Request +28, Terminate +4 +
//   payload + pad to 4 + CRC32c 4) + FCS 4, 64 bytes minimum; preamble and gap on the wire.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <memory>

#include "sim/core/engine.h"
#include "sim/nic/iwarp_tcp.h"

namespace rdmasim::nic::iwarp {

inline constexpr uint32_t kTcpHeader = 20 + 12;     // with the timestamps option
inline constexpr uint32_t kMpaOverhead = 2 + 4;     // length field and CRC32c (no markers)
inline constexpr uint32_t kTaggedHeader = 14;       // DDP/RDMAP control 2, STag 4, TO 8
inline constexpr uint32_t kUntaggedHeader = 18;     // control 2, reserved 4, QN 4, MSN 4, MO 4
inline constexpr uint32_t kReadRequestHeader = 28;  // sink STag/TO, size, source STag/TO
inline constexpr uint32_t kTerminateHeader = 4;     // layer, etype, code, flags
inline constexpr uint8_t kRdmapWrite = 0, kRdmapReadRequest = 1, kRdmapReadResponse = 2,
                         kRdmapSend = 3, kRdmapSendSe = 5, kRdmapTerminate = 7;

// The IPv4 address (host order) an iWARP GID names. iWARP devices report the port's MAC as
// GID (bytes 0..5, zeros after, as siw and iw_cxgb4 do); simulated MACs are 02:00:a:b:c:d
// for address a.b.c.d (net::mac_of), so bytes 2..5 hold the address.
inline uint32_t address_of_gid(const std::array<uint8_t, 16>& g) {
  return uint32_t{g[2]} << 24 | uint32_t{g[3]} << 16 | uint32_t{g[4]} << 8 | g[5];
}

// The largest payload one FPDU of `mss` bytes carries (untagged header, multiple of 4).
inline uint32_t max_fpdu_payload(uint32_t mss) {
  return (mss - kMpaOverhead - kUntaggedHeader) & ~3u;
}

// Fills the MPA/DDP sizes of an FPDU whose DDP/RDMAP fields are set; returns its length.
uint32_t size_fpdu(IwarpFpdu& f, uint32_t payload_len);

// Sets wire_bytes/frame_bytes of a segment carrying tcp.len bytes.
void size_segment(RdmaPacket& seg);

// The iWARP state of one RC QP.
struct Conn {
  Conn(const TcpConfig& cfg, uint32_t isn, uint32_t peer_isn) : tcp(cfg, isn, peer_isn) {}
  TcpConnection tcp;
  uint16_t local_port = 0, peer_port = 0;
  EventId rto_timer;
  Time rto_at = kTimeNever;
  bool aborted = false;
  // DDP/RDMAP transmit state.
  uint32_t send_msn = 0, read_msn = 0, term_msn = 0;
  uint32_t write_stag = 0;  // the WRITE being sent: its sink STag and TO
  uint64_t write_to = 0;
  // Responder: sinks of the Read Requests being answered, in order.
  struct Sink {
    uint32_t stag;
    uint64_t to;
  };
  std::deque<Sink> read_sinks;
  Sink cur_sink{0, 0};
  // MPA start frames (for captures): ISNs, which side sends the Request, and whether the
  // Reply waits for the peer's Request.
  uint32_t isn = 0, peer_isn = 0;
  bool initiator = false;
  bool reply_pending = false;
  bool start_sent = false;    // this side's MPA start frame (Request or Reply) went out
};

}  // namespace rdmasim::nic::iwarp
