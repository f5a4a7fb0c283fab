// Internal state of the HCA model (the pimpl of Hca): objects, queues and the transport.
//
// Model notes (the contracts the .cpp files share):
// - hca.cpp: object tables and verbs entry points; mr.cpp: key/bounds/access checks and
//   DMA; qp_state.cpp: the IBTA state machine; packet.cpp: headers, addressing, sizes;
//   requester.cpp: segmentation, round robin, ACK/NAK handling, timers; responder.cpp:
//   PSN checks, data placement, READ responses, atomics, ACKs, UD receives.
// - A send WQE becomes eligible wqe_latency after post_send; a received packet is handled
//   rx_latency after it arrives. Data is gathered from memory when a WQE first starts and
//   kept for retransmission; READ responses read remote memory when the request executes.
// - RC: the requester asks for an ACK on the last packet of a message and every ack_every
//   packets; the responder ACKs those (and every ack_every packets regardless). The local
//   ACK timer restarts on every packet sent and on ACK progress; retry and RNR counters
//   reset on progress. A sequence NAK costs one retry, like a timeout.
// - An error completion moves an RC QP to ERR, which flushes the rest (WR_FLUSH_ERR); a
//   UC/UD send error moves the QP to SQE instead (send queue flushed, receives go on).
// - lkey == rkey. Atomic originals are returned in host byte order.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "sim/core/ring.h"
#include "sim/net/ibta.h"
#include "sim/nic/cc.h"
#include "sim/nic/hca.h"
#include "sim/nic/iwarp.h"
#include "sim/nic/timing_memory.h"

namespace rdmasim::nic {

namespace ibta = net::ibta;

// 24-bit PSN arithmetic. psn_diff(a, b) > 0 when a is after b (modulo 2^24).
inline int32_t psn_diff(uint32_t a, uint32_t b) {
  return static_cast<int32_t>((a - b) << 8) >> 8;
}
inline uint32_t psn_add(uint32_t a, int64_t n) { return static_cast<uint32_t>(a + n) & 0xffffff; }

// AETH syndromes the responder sends (IBTA 9.7.5.1): ACK (credit field "invalid": no
// end-to-end credits), and the NAKs PSN sequence error, invalid request, remote access
// error, remote operational error.
inline constexpr uint8_t kAckSyndrome = 0x1f, kNakSeq = 0x60, kNakInvReq = 0x61,
                         kNakRemAccess = 0x62, kNakRemOp = 0x63;

// PSN order for sets of PSNs less than 2^23 apart (a window of them).
struct PsnLess {
  bool operator()(uint32_t a, uint32_t b) const { return psn_diff(a, b) < 0; }
};

// IBTA path MTU code (IBV_MTU_*: 1 = 256 ... 5 = 4096) to bytes; 0 for a bad code.
// The BTH opcode's transport bits of a QP's packets (responses included).
inline uint8_t transport_bits(QpType t) {
  switch (t) {
    case QpType::UC: return ibta::kUc;
    case QpType::UD: return ibta::kUd;
    case QpType::XrcSend:
    case QpType::XrcRecv: return ibta::kXrc;
    default: return ibta::kRc;
  }
}

inline uint32_t mtu_bytes(uint8_t code) { return code >= 1 && code <= 5 ? 128u << code : 0; }

// Local ACK timeout for the IBTA 5-bit `timeout` attribute: 4.096 us * 2^timeout.
// 0 means infinite (no timer), as the spec says.
inline Time ack_timeout(uint8_t timeout) {
  return timeout == 0 ? kTimeNever : ns(4096) * (int64_t{1} << timeout);
}

// The IBTA RNR timer table (code 0..31) in picoseconds; code 0 is the longest, 655.36 ms.
Time rnr_timer(uint8_t code);

// Memory without bytes (TimingMemory): the HCA carries no payload bytes read from it.
inline bool is_timing_only(const MemorySpace* mem) {
  return dynamic_cast<const TimingMemory*>(mem) != nullptr;
}

// A DMA write of `len` bytes; a null `src` (a payload from timing-only memory) writes zeros
// into memory that holds bytes (mr.cpp).
bool write_dma(MemorySpace& mem, uint64_t addr, const uint8_t* src, size_t len);

struct Pd {
  uint32_t refs = 0;  // MRs, QPs and SRQs using it
};

// An XRC domain (IBTA annex A14, ibv_open_xrcd): the XRC SRQs and XRC target QPs in it.
struct Xrcd {
  uint32_t refs = 0;
};

struct Mr {
  uint32_t pd = 0;
  MemorySpace* mem = nullptr;
  uint64_t addr = 0;    // local address of the first byte
  uint64_t length = 0;
  uint64_t iova = 0;    // address peers use for the first byte
  uint32_t access = 0;
  uint32_t key = 0;     // lkey == rkey
  uint32_t bound_mws = 0;  // memory windows bound to it (dereg/rereg are EBUSY meanwhile)
  // Memory read by packet (MemorySpace::reads_by_packet), not on-demand paging: RC packets
  // carry their bytes from here without a copy. An RC requester completes a SEND/WRITE only
  // once its responder has placed all of it (the ACK follows placement), so the program
  // cannot reuse the bytes too early; what packets still hold when the MR goes (dereg,
  // rereg of its translation) is copied first (let_go_held).
  std::shared_ptr<net::HeldBytes> held;
};

// A memory window (IBTA 10.6.7). Type 1 is bound by ibv_bind_mw and stays usable from any
// QP of its PD; type 2B is bound by a BIND_MW work request, usable only through that QP,
// and freed by LOCAL_INV or SEND_WITH_INV. Keyed in Impl::mws by the 24-bit index.
struct Mw {
  uint32_t pd = 0;
  MwType type = MwType::Type1;
  uint32_t rkey = 0;        // the current key
  bool bound = false;       // type 2: Valid (true) or Free
  uint32_t mr = 0;          // key of the MR it exposes (0: none, a zero-length window)
  uint64_t addr = 0;        // iova of the first byte (MR address space)
  uint64_t length = 0;
  uint32_t access = 0;      // REMOTE_* rights through the window
  uint32_t qpn = 0;         // type 2: the QP it is bound to
};

struct Cq {
  uint32_t cqe = 0;
  CompletionSink sink;
  uint32_t refs = 0;
};

struct Srq {
  uint32_t pd = 0;
  uint32_t xrcd = 0;        // an XRC SRQ: its domain (0: a basic SRQ)
  uint32_t cq = 0;          // an XRC SRQ: where its receives complete
  SrqAttr attr;
  std::deque<RecvWr> queue;
  bool limit_armed = false;
  uint32_t refs = 0;
};

// One send WQE as the requester tracks it, from post to completion.
struct SendWqe {
  SendWr wr;
  uint32_t length = 0;        // message bytes (READ: bytes to read; atomics: 8)
  uint32_t first_psn = 0;     // valid once started
  uint32_t npsn = 0;          // PSNs the message consumes (READ: response packets)
  bool started = false;       // PSNs assigned, local buffers checked (data gathered unless by packet)
  uint64_t seq = 0;           // post order within the QP
  bool eligible = false;      // the NIC pipeline has fetched it (wqe_latency after post)
  bool done = false;          // the transport finished (acked/response received)
  bool failed = false;
  WcStatus status = WcStatus::Success;
  net::Payload data;               // gathered bytes (SEND / WRITE) when read per message
  bool gather_by_packet = false;   // SEND / WRITE bytes are read as each packet is built
  // PCIe on: the payload (SEND / WRITE, not inline) is read by DMA a packet at a time, at
  // most kReadRing packets ahead of the wire (pcie_hooks.cpp).
  static constexpr uint32_t kReadRing = 16;
  bool pcie_read = false;
  bool fetched = false;       // the NIC has the WQE (its payload reads may start)
  uint32_t read_pkts = 0;     // packets whose payload read has been issued
  std::array<Time, kReadRing> read_ready{};  // packet k's bytes are in the NIC at [k % kReadRing]
  uint32_t resp_received = 0; // READ: bytes of response data placed so far
  // IRN: a response after a gap asks for the READ's rest again (irn_reread), once per gap
  // (irn_reread_at: the response PSN it was asked from; PSNs are 24-bit, so ~0u is none).
  bool irn_reread = false;
  uint32_t irn_reread_at = ~0u;
  // IRN without nack_gaps (a fabric that reorders): READ responses placed beyond
  // resp_received, by response packet index -> its payload bytes; resp_received takes them
  // in when the gap before them fills.
  std::map<uint32_t, uint32_t> read_ahead;
  uint32_t last_psn() const { return psn_add(first_psn, npsn - 1); }
  // BIND_MW / LOCAL_INV: executed by the NIC when the requester reaches them; no packets.
  bool is_local_op() const {
    return wr.opcode == WrOpcode::BindMw || wr.opcode == WrOpcode::LocalInv;
  }
  bool is_read_or_atomic() const {
    return wr.opcode == WrOpcode::RdmaRead || wr.opcode == WrOpcode::AtomicCmpAndSwp ||
           wr.opcode == WrOpcode::AtomicFetchAndAdd;
  }
};

struct Qp {
  uint32_t qpn = 0;
  QpInitAttr init;
  QpAttr attr;              // what modify_qp set (query_qp returns it)
  uint32_t mtu = 256;       // path MTU bytes (UD: the port's max MTU)

  // Requester.
  std::deque<SendWqe> sq;   // posted and not yet completed, in order
  size_t tx_wqe = 0;        // index in sq of the WQE being transmitted
  uint32_t tx_pkt = 0;      // next packet of that WQE
  uint32_t next_psn = 0;    // PSN of the next new packet
  uint32_t unacked_pkts = 0;// packets since the last ack_req
  uint32_t acked_psn = 0;   // highest PSN the responder acknowledged (RC)
  bool any_acked = false;
  int retries_left = 0;
  int rnr_retries_left = 0;
  // The local ACK timer, armed lazily: arming moves ack_deadline only; the one scheduled
  // event (at ack_timer_at <= ack_deadline) re-schedules itself when it fires early. This
  // keeps one heap entry per QP instead of a schedule and a cancel per packet.
  EventId ack_timer;
  Time ack_timer_at = 0;
  Time ack_deadline = 0;
  EventId rnr_wait;         // pending RNR back-off: no transmission until it fires
  bool in_active = false;   // listed in Impl::active
  uint64_t posted = 0;      // send WQEs ever posted (SendWqe::seq source)
  uint32_t retx_end = 0;    // packets with PSN before this are retransmissions
  uint32_t sent_end = 0;    // PSN after the last one transmitted (valid once any_sent)
  bool any_sent = false;

  // Responder.
  std::deque<RecvWr> rq;
  uint32_t epsn = 0;        // expected PSN
  uint32_t msn = 0;         // messages completed
  bool nak_sent = false;    // a sequence NAK is outstanding for epsn
  bool comm_est = false;    // IBV_EVENT_COMM_EST raised (first packet received in RTR)
  bool last_wqe = false;    // IBV_EVENT_QP_LAST_WQE_REACHED raised (SRQ QP entered ERR)
  uint32_t since_ack = 0;   // packets since the last ACK we sent
  // The message being received (SEND or WRITE in several packets).
  bool in_msg = false;
  bool msg_is_send = false;
  bool msg_drop = false;    // UC: discard the rest of a broken message
  RecvWr cur_recv;
  uint32_t cur_srq = 0;
  // XRC target: the XRC SRQ the request being handled names (its XRCETH) and that SRQ's PD,
  // which governs the request's memory access (xrc.cpp, xrc_accept).
  uint32_t xrc_srq = 0;
  uint32_t xrc_pd = 0;
  uint32_t msg_bytes = 0;   // bytes placed so far
  // WRITE: bytes accepted but not yet copied into memory. Consecutive packets of one message
  // are contiguous both in the sender's gathered buffer and in the target range, so they
  // are copied with one DMA (one process_vm_writev in the daemon) when the message's last
  // packet arrives, instead of one per packet. Flushed before anything else could observe
  // the memory: the message's end, QP error/destroy, MR deregistration.
  struct PendingWrite {
    MemorySpace* mem = nullptr;
    uint64_t addr = 0;
    net::Payload keep;            // the sender's gathered buffer the run comes from
    std::shared_ptr<const net::HeldBytes> held;  // or the bytes the sender holds in place
    uint32_t offset = 0;          // the run is keep[offset, offset + len) (or from held->at)
    uint32_t len = 0;
  } pending_write;
  uint64_t write_va = 0;    // WRITE: where the next byte goes
  uint32_t write_rkey = 0;
  uint32_t write_len = 0;
  // Results of executed atomics by PSN, so a duplicate is answered without re-executing.
  std::map<uint32_t, uint64_t> atomic_results;
  // Read responses and atomic ACKs waiting for the port, in order.
  Ring<RdmaPacketPtr> resp_queue;
  // Responder resources (max_dest_rd_atomic): the PSN of the last response packet of each
  // new READ/atomic accepted and not yet fully transmitted, in order. A new READ/atomic
  // that finds max_dest_rd_atomic of them held is an Invalid Request (class C).
  Ring<uint32_t> rd_atomic_held;

  // Congestion control (cc_hooks.cpp): the rate controller (made on first use), the
  // pacer's next send time for requests, its wake-up, and the NP's last CNP time.
  std::unique_ptr<CongestionControl> cc;
  Time next_tx = 0;
  uint32_t paced_bytes = 0;  // wire bytes of the last packet paced (next_tx's last step)
  EventId pace_wake;
  EventId dma_wake;   // PCIe on: wakes the QP when its next packet's payload is read
  Time last_cnp = -1;
  // TIMELY/Swift/DCTCP only (CongestionControl::wants_ack_samples): the request packets
  // sent and not yet acknowledged, in PSN order, with their send time (-1 for a
  // retransmission: no RTT sample, Karn's rule) and wire bytes; the highest PSN logged.
  struct SentPacket {
    uint32_t psn;
    Time at;
    uint32_t bytes;
  };
  Ring<SentPacket> sent_log;
  uint32_t sent_hi = 0;
  bool sent_any = false;
  uint32_t ce_since_ack = 0;  // responder, DCTCP: CE-marked requests since our last ACK
  // RC on RoCEv2 with a controller that caps the bytes in flight (inflight_cap, HPCC): the
  // request packets sent and not yet acknowledged, in PSN order, and their wire bytes. A
  // go-back-N rewind takes the packets it will resend off (they are no longer in flight, as
  // the HPCC simulator's RecoverQueue sets snd_nxt = snd_una); an IRN resend keeps its entry.
  struct FlightPacket { uint32_t psn, bytes; };
  Ring<FlightPacket> flight;
  uint64_t flight_bytes = 0;

  // IRN loss recovery (irn.cpp). Requester: the PSNs after acked_psn the responder has
  // selectively acknowledged; in recovery, the resend scan's next PSN and limit (lost
  // packets are the unacknowledged ones below it) and the PSN whose cumulative ACK ends it.
  std::set<uint32_t, PsnLess> irn_sacked;
  bool irn_recovery = false;
  mutable uint32_t irn_retx_from = 0;  // a cursor: irn_next_lost moves it past what is not lost
  uint32_t irn_retx_limit = 0, irn_recovery_end = 0;
  // Responder: request packets that arrived after a gap, run when it fills.
  std::map<uint32_t, std::shared_ptr<RdmaPacket>, PsnLess> irn_held;

  // iWARP NICs: the QP's TCP connection and DDP/RDMAP state (sim/nic/iwarp.h), from RTR.
  std::unique_ptr<iwarp::Conn> tcp;
  bool mpa_request_seen = false;  // iWARP: the peer's MPA Request arrived (releases the Reply)
  std::optional<IwarpStream> cm_stream;  // iWARP: the stream rdma_cm set up (iwarp_cm.cpp)
};

struct Hca::Impl {
  Impl(Engine& e, HcaConfig c, net::Transmitter& p)
      : engine(e), config(std::move(c)), port(p), pcie(config.pcie) {}

  Engine& engine;
  HcaConfig config;
  net::Transmitter& port;
  host::PcieLink pcie;
  HcaCounters counters;
  AsyncSink async_sink;
  bool port_active = true;

  uint32_t next_pd = 1, next_cq = 1, next_srq = 1, next_qpn = 0x11, next_key = 0x1000, next_xrcd = 1;
  uint64_t next_packet_id = 1;
  std::map<uint32_t, Pd> pds;
  std::map<uint32_t, Mr> mrs;
  std::map<uint32_t, Mw> mws;   // by key index (rkey >> 8); MRs and MWs share the index space
  std::map<uint32_t, Cq> cqs;
  std::map<uint32_t, Srq> srqs;
  std::map<uint32_t, Xrcd> xrcds;
  std::map<uint32_t, std::unique_ptr<Qp>> qps;

  // QP1: the owner's sink for GSI datagrams, and the PSNs of the MADs sent (gsi.cpp).
  GsiSink gsi_sink;
  uint32_t gsi_psn = 0;
  void receive_gsi(const RdmaPacket& p);

  // iWARP connection setup (iwarp_cm.cpp): the CM's sink, the bound streams by (local
  // port, peer address, peer port), and the demultiplexer of arriving segments.
  IwarpCmSink iwarp_cm_sink;
  std::map<std::tuple<uint16_t, net::Address, uint16_t>, uint32_t> iwarp_streams;
  // The QP a received iWARP segment is for, or 0: the CM's (delivered to its sink).
  uint32_t iwarp_demux(const RdmaPacket& p) const;
  void receive_iwarp_cm(const RdmaPacket& p);
  void iwarp_start_stream(Qp& qp);  // the QP's TCP connection from its cm_stream
  void iwarp_unbind(Qp& qp);

  // QPs with something to transmit, served round robin.
  Ring<uint32_t> active;
  bool pumping = false;
  bool pump_again = false;
  // The packet the transport is handling now (null outside receive): receive completions
  // take slid and sl from it on InfiniBand.
  const RdmaPacket* rx_pkt = nullptr;
  // IRN: the responder is running packets a filled gap put in order (irn_receive); their
  // own positive ACKs wait for the one that covers them all.
  bool irn_quiet = false;
  // Events the HCA schedules hold a weak reference to this token and do nothing once the
  // Hca is gone, so an Hca may be destroyed while the engine still has its events.
  std::shared_ptr<int> alive = std::make_shared<int>(0);

  // Schedules `fn` after `delay`; it runs only if this HCA still exists.
  template <class F>
  EventId later(Time delay, F fn, ReadFirst read_first = {}) {
    return engine.schedule_in(delay, [w = std::weak_ptr<int>(alive), fn = std::move(fn)]() mutable {
      if (!w.expired()) fn();
    }, read_first);
  }

  // --- mr.cpp: local and remote access checks ---
  // Finds the MR `key` covering [addr, addr+len) with all of `access` (0: local read only),
  // in protection domain `pd`. Local addresses for lkey, iova for rkey.
  const Mr* check_local(uint32_t pd, const Sge& sge, uint32_t access) const;
  // An rkey is an MR's or a bound memory window's: through a window the window's bounds
  // and rights apply, and a type 2 window only through the QP it is bound to. Returns
  // the MR that holds the bytes (va is in its iova space either way).
  const Mr* check_remote(const Qp& qp, uint32_t rkey, uint64_t va, uint64_t len,
                         uint32_t access) const;
  // BIND_MW and LOCAL_INV of sq WQE `w` (mw.cpp): Success or the completion status.
  WcStatus bind_mw(Qp& qp, const SendWqe& w);
  WcStatus local_inv(Qp& qp, uint32_t rkey);
  // SEND_WITH_INV at the responder: true when `rkey` named a type 2 window of this QP.
  bool remote_inv(Qp& qp, uint32_t rkey);
  void unbind(Mw& mw);
  // destroy_qp: type 2 windows bound to the QP are freed.
  void free_qp_windows(uint32_t qpn);
  // A SEND/WRITE starts: checks its SGL, and reads its bytes into w.data now or marks it
  // w.gather_by_packet (MemorySpace::reads_by_packet). w.data stays null when no SGE is in
  // memory that holds bytes (TimingMemory, timing_memory.h). False on a protection error.
  bool start_gather(uint32_t pd, SendWqe& w) const;
  // Gathers bytes [off, off + len) of an SGL's concatenation into one new buffer, checking
  // each SGE it touches again (an MR deregistered since is a protection error: false).
  bool gather(uint32_t pd, const std::vector<Sge>& sgl, uint32_t off, uint32_t len,
              net::Payload& out) const;
  // The bytes [off, off + len) of a by-packet WQE's message for packet `p`: held in place
  // (RC on an InfiniBand or RoCE NIC, the range inside one SGE of an MR with `held`) or
  // gathered. False on a protection error (the MR was deregistered since the WQE started).
  bool packet_bytes(const Qp& qp, const SendWqe& w, uint32_t off, uint32_t len,
                    net::Packet& p) const;
  // An MR's held bytes are about to stop being its memory: packets holding them get a copy.
  static void let_go_held(Mr& mr);
  // The held bytes of a new or changed MR, or null (see Mr::held).
  static std::shared_ptr<net::HeldBytes> new_held(const Mr& mr);
  // Scatters `len` bytes at message offset `off` into an SGL (local write access required);
  // a null `src` is `len` zeros (a payload from timing-only memory).
  // False when the SGL is too short or not writable.
  bool scatter(uint32_t pd, const std::vector<Sge>& sgl, uint32_t off, const uint8_t* src,
               uint32_t len) const;

  // --- qp_state.cpp ---
  int modify_qp(Qp& qp, const QpAttr& attr, uint32_t mask);
  // Moves the QP to ERR: flushes every WQE with WR_FLUSH_ERR, cancels timers.
  void enter_error(Qp& qp);
  // UC/UD: a send WQE completed in error. The QP enters SQE: the rest of the send queue is
  // flushed (WR_FLUSH_ERR), nothing is sent until modify_qp SQE->RTS, the receive queue
  // keeps working.
  void enter_sq_error(Qp& qp);
  // Raises an affiliated asynchronous event of `qp` (IBTA 11.6.3).
  void qp_event(const Qp& qp, AsyncEventType type);
  void reset_qp(Qp& qp);
  // Counts (+1) or releases (-1) a QP's use of its PD, CQs, SRQ or XRC domain.
  void hold_qp_objects(const QpInitAttr& a, int n);

  // --- completions (with PCIe, each is a 64 B CQE write) ---
  static constexpr uint32_t kCqeBytes = 64;
  void complete(uint32_t cq, const Completion& c);
  void complete_send(Qp& qp, const SendWqe& w, WcStatus status);

  // --- packet.cpp: building packets ---
  RdmaPacketPtr new_packet(const Qp& qp, const AddressVector& av, uint32_t dest_qp,
                            uint8_t opcode, uint32_t psn) {
    return new_packet(qp.qpn, av, dest_qp, opcode, psn);
  }
  RdmaPacketPtr new_packet(uint32_t src_qpn, const AddressVector& av, uint32_t dest_qp,
                            uint8_t opcode, uint32_t psn);
  void finish_packet(RdmaPacket& p) const;  // sizes: wire_bytes, frame_bytes, pad
  uint8_t priority_of(const AddressVector& av) const;

  // --- requester.cpp ---
  void kick(Qp& qp);         // the QP has work: join the round robin
  void pump();               // transmit while the port is ready
  RdmaPacketPtr next_request(Qp& qp);   // the next packet of the QP, or null
  // Packet k of started WQE sq[i] (a READ request: for the rest of the read from response
  // k). `retx`: a resend. Null when the WQE failed locally (completed in error, QP in ERR).
  RdmaPacketPtr build_request(Qp& qp, size_t i, uint32_t k, bool retx);
  bool has_new_work(const Qp& qp) const;  // sq[tx_wqe] may send its next packet
  bool has_tx_work(const Qp& qp) const;
  void arm_ack_timer(Qp& qp);
  // Queues `len` bytes of `p`'s payload for `addr` in `mem`, coalescing with the pending run.
  bool stage_write(Qp& qp, MemorySpace* mem, uint64_t addr, const RdmaPacket& p, uint32_t len);
  // Copies the pending run into memory; false when the DMA failed.
  bool flush_write(Qp& qp);
  void flush_all_writes();
  void on_ack_timeout(uint32_t qpn);
  void go_back(Qp& qp, uint32_t psn);    // retransmit from psn
  void handle_response(Qp& qp, RdmaPacket& p);
  void complete_acked(Qp& qp);           // completes the done WQEs at the head of the SQ
  // In SQD: once nothing is outstanding, clears sq_draining and raises SQ_DRAINED.
  void check_drained(Qp& qp);
  // Completes the WQEs before sq[i] (done: success, else flushed), sq[i] with `status`,
  // and moves an RC QP to ERR, a UC/UD QP to SQE (either flushes the rest).
  void fail_wqe(Qp& qp, size_t i, WcStatus status);
  bool ack_upto(Qp& qp, uint32_t psn);   // implicit/explicit ACK; true on progress
  bool outstanding(const Qp& qp) const;  // started WQEs not yet done
  const AddressVector& tx_av(const Qp& qp) const;

  // --- irn.cpp: IRN selective repeat (HcaConfig::loss_recovery) ---
  bool irn(const Qp& qp) const {
    // (An iWARP NIC's RC QPs ride on TCP, qp.tcp, whose recovery is TCP's.)
    // XRC keeps go-back-N (IRN is specified for RC).
    return config.loss_recovery.mode == LossRecovery::Irn && qp.init.type == QpType::RC && !is_iwarp();
  }
  // The next packet to resend (WQE index and packet), if any.
  bool irn_next_lost(const Qp& qp, size_t* wqe, uint32_t* k) const;
  bool irn_has_retx(const Qp& qp) const;
  RdmaPacketPtr irn_retransmit(Qp& qp);    // null when nothing is to be resent
  bool irn_window_open(const Qp& qp) const;  // BDP-FC allows a new packet
  Time irn_rto(const Qp& qp) const;
  void irn_on_nack(Qp& qp, const RdmaPacket& nack);  // after the cumulative part was applied
  void irn_on_timeout(Qp& qp);
  void irn_on_acked(Qp& qp);     // acked_psn moved: forget SACKs, maybe leave recovery
  void irn_on_read_gap(Qp& qp, SendWqe& w, uint32_t expected);
  // Without nack_gaps: places READ response `p` of WQE `i` beyond the gap (false: the WQE
  // failed); read_catch_up then moves resp_received over what is placed after it.
  bool irn_read_ahead(Qp& qp, size_t i, const RdmaPacket& p);
  void irn_read_catch_up(Qp& qp, SendWqe& w);
  void irn_clear(Qp& qp);        // go-back-N after all (RNR), or the QP's error (reset_qp starts afresh)
  // Responder: a request packet; out-of-order ones are held and NACKed, in-order ones run
  // (handle_request) with any held ones they make in order.
  void irn_receive(Qp& qp, const std::shared_ptr<RdmaPacket>& p);

  // --- pcie_hooks.cpp: the host's PCIe link (HcaConfig::pcie) ---
  // post_send: the doorbell (or BlueFlame write) and the WQE fetch; returns when the NIC
  // has the WQE. Marks w.pcie_read when its payload must be read.
  Time pcie_post(const Qp& qp, SendWqe& w);
  // Issues the payload reads of the packets the QP sends next (READ responses, then the
  // fetched send WQEs in order) up to the read-ahead window, at the engine's now.
  void pcie_read_ahead(Qp& qp);
  // True when the QP's next packet waits for its payload DMA (the QP then leaves the round
  // robin and rejoins when the bytes are in).
  bool dma_hold(Qp& qp);
  // Received bytes placed in host memory: a DMA write.
  void pcie_placed(uint32_t qpn, uint64_t bytes);
  // The responder queued READ responses from resp_queue[first_pkt]: each needs its bytes
  // read from host memory before it goes (pcie_read_ahead issues the reads).
  void pcie_read_response(Qp& qp, uint32_t first_pkt);

  // --- cc_hooks.cpp: congestion control ---
  CongestionControl& cc_of(Qp& qp);
  // True when the pacer holds the QP's next request (it then leaves the round robin and
  // rejoins at its send time).
  bool pace_hold(Qp& qp);
  void paced_sent(Qp& qp, RdmaPacket& p);     // a request left: advance the pacer
  void retime_pacer(Qp& qp, Rate before, Rate after);  // the rate changed since then
  void notify_congestion(Qp& qp, const RdmaPacket& p);  // NP: a CE-marked packet arrived
  void receive_cnp(const RdmaPacket& p);          // RP: a CNP arrived
  void cc_ack(Qp& qp, const RdmaPacket& ack);     // RP: a positive ACK (INT echo, samples)
  void echo_int(RdmaPacket& ack) const;           // NP: the ACK echoes rx_pkt's INT
  void stamp_ack(Qp& qp, RdmaPacket& ack);        // NP: ack_delay and ce_echo (TIMELY..DCTCP)
  void log_sent(Qp& qp, const RdmaPacket& p);     // RP: a request's send time (TIMELY..DCTCP)
  // The in-flight cap (CongestionControl::inflight_cap) of an RC QP on RoCEv2; 0: none.
  uint64_t inflight_cap(const Qp& qp) const;
  bool window_open(const Qp& qp) const;           // bytes in flight below the cap
  void flight_sent(Qp& qp, const RdmaPacket& p);  // a request packet left
  void flight_acked(Qp& qp);                      // acked_psn moved: drop what it covers
  void flight_rewind(Qp& qp, uint32_t psn);       // go-back-N resends from psn

  // --- xrc.cpp ---
  // An XRC target's check of a request's XRCETH: the SRQ exists, is an XRC SRQ and is in
  // the target's domain. Sets qp.xrc_srq / xrc_pd; false: an Invalid Request.
  bool xrc_accept(Qp& qp, const RdmaPacket& p);
  // The PD a request's remote access and receive buffers are checked in: an XRC target's
  // is that of the XRC SRQ the request names.
  uint32_t access_pd(const Qp& qp) const {
    return qp.init.type == QpType::XrcRecv ? qp.xrc_pd : qp.init.pd;
  }
  // The SRQ a receive is taken from, and the CQ a receive taken from `srqn` completes on.
  uint32_t recv_srq(const Qp& qp) const {
    return qp.init.type == QpType::XrcRecv ? qp.xrc_srq : qp.init.srq;
  }
  uint32_t recv_cq(const Qp& qp, uint32_t srqn) const;

  // --- responder.cpp ---
  void handle_request(Qp& qp, RdmaPacket& p);
  void handle_ud(Qp& qp, RdmaPacket& p);
  // An ACK or NAK; `sack` >= 0 makes it an IRN NACK selectively acknowledging that PSN.
  void send_ack(Qp& qp, uint8_t syndrome, uint32_t psn, int64_t sack = -1);
  bool take_recv(Qp& qp, RecvWr* wr, uint32_t* srqn);
  void recv_complete(Qp& qp, const RecvWr& wr, uint32_t srqn, WcStatus st, WcOpcode op,
                     uint32_t byte_len, uint32_t imm, uint32_t flags, uint32_t src_qp);
  void respond_read(Qp& qp, const RdmaPacket& req, uint32_t psn);
  // Takes the next queued response for the port and frees the responder resource it ends.
  RdmaPacketPtr pop_response(Qp& qp);

  // --- iwarp.cpp: QPs of an iWARP NIC carry their packets as FPDUs over TCP ---
  bool is_iwarp() const { return config.link_layer == net::LinkLayer::IWarp; }
  // After every successful modify_qp: forms the connection at RTR, drops it at RESET.
  void iwarp_on_modify(Qp& qp);
  void iwarp_send_start(Qp& qp);  // the QP's MPA Request or Reply start frame
  // The peer of an iWARP QP: the address in a MAC GID (iwarp::address_of_gid) or an
  // IPv4-mapped one, else the host the peer's QPN names (HcaConfig::qpn_base); 0 when none.
  net::Address iwarp_resolve_peer(const AddressVector& av, uint32_t dest_qpn) const;
  bool wants_tx(const Qp& qp) const {
    // An iWARP RC QP sends nothing before it has its TCP connection.
    if (qp.tcp) return iwarp_has_tx_work(qp);
    return !(is_iwarp() && qp.init.type == QpType::RC) && has_tx_work(qp);
  }
  bool iwarp_has_tx_work(const Qp& qp) const;
  RdmaPacketPtr iwarp_next(Qp& qp);   // the next TCP segment of the QP, or null
  void iwarp_receive(Qp& qp, const std::shared_ptr<RdmaPacket>& seg);
  // send_ack on an iWARP QP: ACKs are TCP's; a NAK becomes an RDMAP Terminate.
  void iwarp_control(Qp& qp, uint8_t syndrome, uint32_t psn);
  void iwarp_frame(Qp& qp, RdmaPacket& f);   // DDP/RDMAP fields of a packet the RC model built
  void iwarp_deliver(Qp& qp, const RdmaPacket& f);
  // A READ response FPDU whose sink STag lacks remote write: fails the READ (true).
  bool iwarp_sink_refused(Qp& qp, const RdmaPacket& f);
  void iwarp_sync_timer(Qp& qp);
  void iwarp_on_rto(uint32_t qpn);
  void iwarp_send_ack(Qp& qp, bool ece);
  RdmaPacketPtr iwarp_segment(Qp& qp, const RdmaPacket* fpdu, uint32_t seq, uint32_t len);
};

}  // namespace rdmasim::nic
