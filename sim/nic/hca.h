// The HCA model: one RDMA NIC with its QPs, CQs, SRQs, PDs and MRs, attached to one port.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "sim/core/engine.h"
#include "sim/host/pcie.h"
#include "sim/net/packet.h"
#include "sim/nic/cc.h"
#include "sim/nic/iwarp_tcp.h"
#include "sim/nic/memory.h"
#include "sim/nic/types.h"

namespace rdmasim::nic {

// RC loss recovery. GoBackN is the IBTA's: the responder drops what follows a gap and
// NAKs its expected PSN once; the requester resends everything from there. Irn is the
// selective repeat of IRN (Mittal et al., "Revisiting Network Support for RDMA", SIGCOMM
// 2018): the responder keeps out-of-order packets and answers each with a NACK carrying its
// expected PSN (the cumulative ACK) and the PSN that arrived (the selective ACK); the
// requester keeps those in a bitmap and, in loss recovery, resends only the packets below
// the highest one acknowledged that were not, then new ones; its timer is RTO_low while at
// most rto_low_packets are in flight and RTO_high otherwise; and BDP flow control caps the
// packets in flight at bdp_packets (0: no cap). See sim/nic/irn.cpp.
enum class LossRecovery : uint8_t { GoBackN, Irn };
struct LossRecoveryConfig {
  LossRecovery mode = LossRecovery::GoBackN;
  Time rto_low = us(100);       // RTO_low and RTO_high: the values the IRN paper evaluates with
  Time rto_high = us(320);
  uint32_t rto_low_packets = 3; // N: RTO_low while at most N packets are in flight
  uint32_t bdp_packets = 0;     // BDP-FC: at most this many PSNs in flight (0: no cap)
  // IRN's responder NACKs every packet after a gap, and its requester asks for the rest of
  // a READ at a gap in the responses. On a fabric that reorders (adaptive routing) a gap is
  // not a loss: with nack_gaps false (IRN only) the packet is kept without a NACK and a READ
  // response after a gap is placed where it belongs; the gap's packets arrive later, and
  // only a packet really lost is resent, by the requester's timeout.
  bool nack_gaps = true;
};

struct HcaConfig {
  std::string name = "mlx5_0";
  net::LinkLayer link_layer = net::LinkLayer::RoCEv2;
  net::Address address = 0;           // IPv4 (host order) on Ethernet, LID on IB
  uint64_t node_guid = 0;
  uint32_t max_mtu = 4096;            // bytes; path MTU can be set lower per QP
  // Device limits reported by ibv_query_device and enforced at creation.
  uint32_t max_qp = 131072;
  uint32_t max_qp_wr = 32768;
  uint32_t max_sge = 30;
  uint32_t max_cq = 16777216;
  uint32_t max_cqe = 4194303;
  uint32_t max_mr = 16777216;
  // Memory windows (type 1 and 2B). mlx5 reports max_mw = 1 << log_max_mkey, the MR limit.
  bool mem_windows = true;
  uint32_t max_mw = 16777216;
  uint64_t max_mr_size = ~0ull;
  uint32_t max_pd = 16777216;
  uint32_t max_srq = 8388608;
  uint32_t max_srq_wr = 32767;
  uint32_t max_srq_sge = 31;
  uint32_t max_qp_rd_atom = 16;
  uint32_t max_inline_data = 256;  // perftest asks ConnectX ids for 236; the WQE ring slot holds 256 (ipc::kMaxInline)
  bool atomics = true;                // false on iWARP
  // Per-WQE and per-packet processing latencies of the NIC pipeline.
  Time wqe_latency = ns(100);
  Time rx_latency = ns(100);
  // Receiver ACK coalescing: an ACK is sent at least every `ack_every` packets of a
  // message and always for the last packet, or after ack_delay.
  uint32_t ack_every = 16;
  // iWARP NICs: the TCP model of every RC QP's connection (sim/nic/iwarp_tcp.h).
  iwarp::TcpConfig tcp;
  // iWARP NICs: QPNs are qpn_base | (16-bit number), qpn_base = host number << 16, so that a
  // QP number names its host fabric-wide; iwarp_hosts[h] is the address of host number h.
  // This is how a QP whose address vector carries no address finds its peer (iWARP GIDs
  // are MACs, and ibv_rc_pingpong sets no GRH for a GID without an interface ID) until an
  // rdma_cm exists. qpn_base 0: QPNs span 24 bits (RoCE/IB, and tests).
  uint32_t qpn_base = 0;
  std::vector<net::Address> iwarp_hosts;
  // Congestion control of the QPs (RoCEv2): the RP algorithm and the NP's CNP generation.
  CcConfig cc;
  // The host's PCIe link to this NIC (sim/host/pcie.h). Enabled, a send WQE costs a
  // doorbell MMIO write (or a BlueFlame write of the whole WQE when it is inline and fits
  // 256 B) and a WQE fetch; its payload is read by DMA a packet at a time, pcie.read_ahead
  // bytes ahead of the wire, and packet k waits for its bytes; a READ responder reads each
  // response's bytes the same way; received payloads and every CQE are DMA writes, and a
  // completion reaches its CQ when its CQE write has arrived. Disabled: none of these costs (the model before it).
  host::PcieConfig pcie;
  // RC loss recovery (RoCEv2 and InfiniBand; iWARP's is TCP's).
  LossRecoveryConfig loss_recovery;
};

// One QP's congestion-control state and rate series (Hca::cc_report).
struct QpCcReport {
  uint32_t qpn = 0;
  CcAlgorithm algorithm = CcAlgorithm::None;
  Rate rate, target;
  // dcqcn: alpha; hpcc: normalized inflight U; timely: the last normalized RTT gradient;
  // swift: cwnd in packets; dctcp: DCTCP's alpha.
  double alpha = 0;
  double window_bytes = 0;  // swift, dctcp: cwnd in bytes; hpcc: W
  uint64_t inflight_bytes = 0;  // hpcc: wire bytes of requests sent and not acknowledged
  Time rtt = 0;             // timely, swift, dctcp: the last RTT sample
  CcStats stats;
  std::vector<CcSample> samples;
};

// One iWARP QP's TCP connection (Hca::tcp_report).
struct QpTcpReport {
  uint32_t qpn = 0;
  uint32_t cwnd = 0, ssthresh = 0;  // bytes
  double dctcp_alpha = 0;
  Time srtt = 0;
  iwarp::TcpCounters counters;
};

// Delivers a completion to the owner of a CQ (engine context). The owner writes it where
// the application polls: a shared-memory ring (daemon) or an in-process queue.
// Sinks run in the middle of transport processing: they must not call back into the Hca
// (post, modify, destroy); schedule such work on the engine instead.
using CompletionSink = std::function<void(const Completion&)>;
using AsyncSink = std::function<void(const AsyncEvent&)>;

// A management datagram (MAD) at QP1, the port's General Services Interface (IBTA 13.5.1):
// a UD SEND of 256 bytes with the GSI Q_Key 0x80010000. The HCA carries GSI datagrams for
// its owner (the host's connection manager); it does not read them.
inline constexpr uint32_t kGsiQpn = 1;
inline constexpr uint32_t kGsiQkey = 0x80010000;
inline constexpr uint32_t kMadBytes = 256;
struct GsiDatagram {
  net::Address src = 0;               // the sender's address: its LID on IB, IPv4 on Ethernet
  std::array<uint8_t, 16> sgid{};     // the GRH's source GID (RoCEv2: IPv4-mapped), if any
  uint16_t pkey = 0xffff;
  net::Payload mad;                   // kMadBytes
};
using GsiSink = std::function<void(const GsiDatagram&)>;

// iWARP connection setup (sim/nic/iwarp_cm.cpp): the TCP segments of the host's stack that
// belong to no QP's stream (SYN, SYN-ACK, RST, FIN, the MPA Request/Reply start frames of
// RFC 5044 7.1, the ACKs of the handshake). The HCA carries them for its owner (the host's
// connection manager) as it carries GSI datagrams on IB; it keeps no state for them.
inline constexpr uint8_t kTcpFin = 0x01, kTcpSyn = 0x02, kTcpRst = 0x04, kTcpPsh = 0x08, kTcpAck = 0x10;
inline constexpr uint8_t kMpaMarkers = 0x80, kMpaCrc = 0x40, kMpaReject = 0x20;
inline constexpr uint32_t kMpaStartBytes = 16 + 1 + 1 + 2;  // key, flags, revision, PD length
inline constexpr uint32_t kMpaMaxPrivateData = 512;         // RFC 5044 7.1
struct IwarpCmSegment {
  enum class Mpa : uint8_t { None, Request, Reply };
  net::Address peer = 0;       // the other end's IPv4 address (host order)
  uint16_t local_port = 0, peer_port = 0;
  uint32_t seq = 0, ack = 0;
  uint8_t flags = 0;           // kTcp*
  Mpa mpa = Mpa::None;         // a start frame as the segment's payload
  uint8_t mpa_flags = kMpaCrc;
  uint8_t mpa_rev = 1;
  std::vector<uint8_t> private_data;  // of the start frame, at most kMpaMaxPrivateData
  // The sequence space the segment's payload takes (0 without a start frame).
  uint32_t len() const {
    return mpa == Mpa::None ? 0 : kMpaStartBytes + static_cast<uint32_t>(private_data.size());
  }
};
using IwarpCmSink = std::function<void(const IwarpCmSegment&)>;
// A QP's stream as the connection manager hands it over once the MPA exchange is done: the
// QP's TCP connection continues it (its first FPDU has sequence number snd_nxt).
struct IwarpStream {
  net::Address peer = 0;
  uint16_t local_port = 0, peer_port = 0;
  uint32_t snd_nxt = 0, rcv_nxt = 0;
};

struct HcaCounters {
  uint64_t tx_packets = 0, tx_bytes = 0, rx_packets = 0, rx_bytes = 0;
  uint64_t acks_sent = 0, naks_sent = 0, rnr_naks_sent = 0;
  uint64_t retransmitted_packets = 0, timeouts = 0, out_of_sequence = 0, duplicates = 0;
  uint64_t cnps_sent = 0, cnps_received = 0, ecn_marked_received = 0, rate_cuts = 0;
};

// How many objects of each kind the HCA holds (counters output, leak checks).
struct HcaObjects {
  size_t pds = 0, mrs = 0, mws = 0, cqs = 0, srqs = 0, qps = 0;
};

// All methods run in engine context. Error returns are positive errno values (0 = ok),
// as rdma-core reports them: EINVAL for a bad attribute or mask, ENOMEM when a limit is
// reached, ENOENT for an unknown object, EBUSY when an object is still in use.
// Work requests that are well formed but fail in execution (bad lkey, remote access
// error, retries exhausted, ...) complete with the status a real HCA reports.
class Hca : public net::Node {
 public:
  Hca(Engine& engine, HcaConfig config, net::Transmitter& port);
  ~Hca() override;
  Hca(const Hca&) = delete;
  Hca& operator=(const Hca&) = delete;

  const HcaConfig& config() const;
  const HcaCounters& counters() const;
  HcaObjects objects() const;
  // Congestion control of every QP that has sent or received since it was created or reset.
  std::vector<QpCcReport> cc_report() const;
  // iWARP: the TCP connection of every RC QP that has one (from RTR until RESET).
  std::vector<QpTcpReport> tcp_report() const;
  void receive(net::PacketPtr pkt, int port) override;

  // The host's PCIe link to this NIC: its transactions (record(true) to log them) and busy time.
  host::PcieLink& pcie();
  const host::PcieLink& pcie() const;

  void set_async_sink(AsyncSink sink);
  // The port went down or up (its link failed or came back; topo::attach_hca wires this to
  // the fabric). A change raises IBV_EVENT_PORT_ERR / PORT_ACTIVE. While down the HCA sends
  // and receives nothing: RC requests then time out (RETRY_EXC_ERR past the budget).
  void set_port_active(bool active);
  // What ibv_query_port reports as the port state: ACTIVE (true) or DOWN.
  bool port_active() const;

  // QP1 (sim/nic/gsi.cpp). The sink gets every GSI datagram that arrives (engine context,
  // rx_latency after the packet); none is delivered while no sink is set.
  void set_gsi_sink(GsiSink sink);
  // Sends a MAD from QP1 to QP1 of the port `av` names (dlid on IB, the dgid on RoCEv2).
  // EINVAL unless `mad` holds kMadBytes, EOPNOTSUPP on iWARP (no UD, no GSI), ENETDOWN while
  // the port is down. A sent MAD is a datagram: the fabric may lose it.
  int send_gsi(const AddressVector& av, net::Payload mad);

  // iWARP connection setup (sim/nic/iwarp_cm.cpp). The sink gets every segment that arrives
  // for no QP stream (engine context, rx_latency after the packet). send_iwarp_cm puts one
  // such segment on the wire: EOPNOTSUPP off iWARP, EINVAL for private data past 512 bytes,
  // ENETDOWN while the port is down; the fabric may lose it.
  void set_iwarp_cm_sink(IwarpCmSink sink);
  int send_iwarp_cm(const IwarpCmSegment& s);
  // Gives RC QP `qpn` the stream the CM set up: segments to s.local_port from (s.peer,
  // s.peer_port) go to it, and its TCP connection starts at s.snd_nxt / s.rcv_nxt from RTR
  // (at once if it is there already). A QP whose dest_qp_num is 0 at RTR (rdma_cm's) waits
  // for this before it sends. ENOENT, EINVAL (not an iWARP RC QP), EBUSY (it has a stream).
  int iwarp_bind_stream(uint32_t qpn, const IwarpStream& s);
  // The next sequence numbers of a QP's stream (to place the CM's FIN after its data);
  // false when the QP has no stream.
  bool iwarp_stream_seq(uint32_t qpn, uint32_t* snd_nxt, uint32_t* rcv_nxt) const;

  int alloc_pd(uint32_t* pd);
  int dealloc_pd(uint32_t pd);

  // Registers [addr, addr + length) of `mem` (which must outlive the MR). `iova` is the
  // address remote peers use (== addr for ibv_reg_mr).
  int reg_mr(uint32_t pd, MemorySpace* mem, uint64_t addr, uint64_t length, uint64_t iova,
             uint32_t access, MrKeys* keys);
  // EBUSY while memory windows are bound to the MR (IBTA 10.6.7.2.6, man ibv_alloc_mw).
  int dereg_mr(uint32_t lkey);
  // ibv_rereg_mr: `flags` (ReregFlags) says which of PD, translation (mem, addr, length;
  // iova = addr) and access change; the others keep their values. The keys stay the same.
  // On error nothing changes.
  int rereg_mr(uint32_t lkey, uint32_t flags, uint32_t pd, MemorySpace* mem, uint64_t addr,
               uint64_t length, uint32_t access, MrKeys* keys);

  // Memory windows (IBTA 10.6.7). alloc_mw: *rkey is the window's key, unbound (its 24-bit
  // index never changes; binds change the low 8 bits). EOPNOTSUPP when the device has no
  // memory windows, EINVAL for another type. dealloc_mw takes any key of the window
  // (the index selects it) and unbinds it if bound.
  int alloc_mw(uint32_t pd, MwType type, uint32_t* rkey);
  int dealloc_mw(uint32_t rkey);

  int create_cq(uint32_t cqe, CompletionSink sink, uint32_t* cq);
  int destroy_cq(uint32_t cq);

  int create_srq(uint32_t pd, const SrqAttr& attr, uint32_t* srq);
  int modify_srq(uint32_t srq, const SrqAttr& attr, uint32_t mask);  // IBV_SRQ_MAX_WR=1, IBV_SRQ_LIMIT=2
  int query_srq(uint32_t srq, SrqAttr* attr);
  int destroy_srq(uint32_t srq);
  int post_srq_recv(uint32_t srq, const RecvWr& wr);

  // XRC (IBTA annex A14; none on iWARP: EOPNOTSUPP). A domain holds XRC SRQs and XRC
  // target QPs (QpType::XrcRecv, created with QpInitAttr::xrcd); dealloc_xrcd is EBUSY while
  // any remain. An XRC SRQ has a PD, which protects its receive buffers and the memory the
  // requests naming it access, and the CQ its receives complete on. Its number (*srq) is
  // what an initiator puts in SendWr::xrc_srqn.
  int alloc_xrcd(uint32_t* xrcd);
  int dealloc_xrcd(uint32_t xrcd);
  int create_xrc_srq(uint32_t pd, uint32_t xrcd, uint32_t cq, const SrqAttr& attr, uint32_t* srq);

  // On success *qpn is the QP number peers address (24 bits, never 0 or 1), and
  // attr.caps is updated to the capacities actually granted.
  int create_qp(QpInitAttr& attr, uint32_t* qpn);
  int modify_qp(uint32_t qpn, const QpAttr& attr, uint32_t mask);
  int query_qp(uint32_t qpn, QpAttr* attr, QpInitAttr* init);
  int destroy_qp(uint32_t qpn);
  // Queues a WR. Returns EINVAL when the QP is in a state that refuses posts (RESET, INIT,
  // RTR for sends); ENOMEM when the queue is full. In ERR (and SQE for sends) a WR is
  // accepted and completes with WR_FLUSH_ERR.
  int post_send(uint32_t qpn, const SendWr& wr);
  int post_recv(uint32_t qpn, const RecvWr& wr);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace rdmasim::nic
