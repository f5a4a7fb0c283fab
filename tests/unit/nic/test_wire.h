// Test fixtures for the HCA: a wire that delivers to the peer HCA after a fixed delay, and a
// connected pair of HCAs on local memory.
#pragma once

#include <doctest/doctest.h>

#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "sim/nic/rdma_packet.h"
#include "sim/core/engine.h"
#include "sim/net/packet.h"
#include "sim/nic/connect.h"
#include "sim/nic/hca.h"

namespace rdmasim::nic::test {

// The sending side of one port: always ready, a fixed flight delay and, with `serialize`
// set, a FIFO at that rate (each packet takes tx_time(rate, wire bytes) after the one
// before; otherwise no serialization). `drop` decides per packet whether the wire loses it.
class TestWire final : public net::Transmitter {
 public:
  TestWire(Engine& e, Time delay) : engine_(e), delay_(delay) {}
  void connect(net::Node* peer) { peer_ = peer; }
  bool ready(uint8_t) const override { return open; }
  void send(net::PacketPtr frame) override {
    nic::RdmaPacketPtr p = nic::rdma_cast(std::move(frame));
    sent.push_back(p->bth.opcode);
    sent_at.push_back(engine_.now());
    dest_qps.push_back(p->bth.dest_qp);
    psns.push_back(p->bth.psn);
    Time done = engine_.now();
    if (serialize) {
      done = std::max(done, busy_until_) + tx_time(*serialize, p->wire_bytes);
      busy_until_ = done;
    }
    if (drop && drop(*p)) return;
    std::shared_ptr<nic::RdmaPacket> sp(p.release());
    engine_.schedule_in(done - engine_.now() + delay_, [this, sp] { peer_->receive(sp->clone(), 0); });
  }
  void set_ready_callback(std::function<void()> cb) override { ready_cb_ = std::move(cb); }
  Rate rate() const override { return Rate::gbps(100); }

  // Opens a closed port and tells the NIC, as a port does when its queue drains.
  void reopen() {
    open = true;
    if (ready_cb_) ready_cb_();
  }

  bool open = true;  // ready() for every priority
  std::function<bool(const nic::RdmaPacket&)> drop;
  std::optional<Rate> serialize;
  std::vector<uint32_t> psns;  // BTH PSN in send order
  std::vector<uint32_t> dest_qps;  // BTH dest QP in send order
  std::vector<uint8_t> sent;  // BTH opcodes in send order
  std::vector<Time> sent_at;  // when each was sent

 private:
  Engine& engine_;
  Time delay_;
  net::Node* peer_ = nullptr;
  std::function<void()> ready_cb_;
  Time busy_until_ = 0;
};

// Memory whose pages vanished after registration (the owning process unmapped them):
// every DMA fails, as process_vm_readv does on a hole.
class VanishedMemory final : public MemorySpace {
 public:
  bool read(uint64_t, void*, size_t) override { return false; }
  bool write(uint64_t, const void*, size_t) override { return false; }
};

inline QpState state_of(Hca& h, uint32_t qpn) {
  QpAttr at;
  REQUIRE(h.query_qp(qpn, &at, nullptr) == 0);
  return at.qp_state;
}

struct TimedCompletion {
  Completion wc;
  Time at = 0;
};

// IPv4-mapped GID ::ffff:a.b.c.d for a host-order IPv4 address.
inline std::array<uint8_t, 16> gid_of(uint32_t ip) {
  std::array<uint8_t, 16> g{};
  g[10] = g[11] = 0xff;
  g[12] = ip >> 24, g[13] = ip >> 16, g[14] = ip >> 8, g[15] = ip;
  return g;
}

// iWARP GID: the port's MAC 02:00:a.b.c.d in bytes 0..5 (as device_info reports it).
inline std::array<uint8_t, 16> iwarp_gid_of(uint32_t ip) {
  std::array<uint8_t, 16> g{};
  g[0] = 0x02;
  g[2] = ip >> 24, g[3] = ip >> 16, g[4] = ip >> 8, g[5] = ip;
  return g;
}

// One side of a pair: an HCA with a PD, one CQ (send and receive) and one QP.
struct Side {
  std::unique_ptr<TestWire> wire;
  std::unique_ptr<Hca> hca;
  uint32_t pd = 0, cq = 0, qpn = 0;
  std::vector<TimedCompletion> wcs;
};

struct QpParams {
  QpType type = QpType::RC;
  uint8_t mtu = 5;          // IBV_MTU_4096
  uint8_t timeout = 14;
  uint8_t retry_cnt = 7;
  uint8_t rnr_retry = 7;
  uint8_t min_rnr_timer = 1;
  uint8_t max_rd_atomic = 4;       // requester: READ/atomic requests outstanding
  uint8_t max_dest_rd_atomic = 4;  // responder resources
  uint32_t access = kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic;
  uint32_t qkey = 0x11111111;
  uint32_t max_send_wr = 64, max_recv_wr = 64;
  uint32_t psn = 1000;             // sq_psn of each side = rq_psn of its peer (24 bits)
};

// Two HCAs with one QP each, connected to each other and in RTS. Subclasses give the HCAs
// their ports (a TestWire, or a built Fabric) and then call start().
struct PairBase {
  Engine engine;
  Side a, b;
  LocalMemory mem;
  net::LinkLayer link_layer;
  uint32_t addr_a = 0, addr_b = 0;  // the HCAs' addresses (IPv4 host order, or LIDs)

  explicit PairBase(net::LinkLayer ll, uint64_t seed = 1) : engine(seed), link_layer(ll) {}

  // Sets up a PD, a CQ and a QP on each HCA and connects the QPs.
  void start(const QpParams& qp) {
    setup(a, qp);
    setup(b, qp);
    connect(a, b, addr_b, qp);
    connect(b, a, addr_a, qp);
  }

  void setup(Side& s, const QpParams& q) {
    REQUIRE(s.hca->alloc_pd(&s.pd) == 0);
    REQUIRE(s.hca->create_cq(256, [this, &s](const Completion& c) {
      s.wcs.push_back({c, engine.now()});
    }, &s.cq) == 0);
    s.qpn = add_qp(s, q);
  }

  uint32_t add_qp(Side& s, const QpParams& q) {
    QpInitAttr init;
    init.pd = s.pd;
    init.type = q.type;
    init.send_cq = init.recv_cq = s.cq;
    init.caps = {q.max_send_wr, q.max_recv_wr, 4, 4, 64};
    uint32_t qpn = 0;
    REQUIRE(s.hca->create_qp(init, &qpn) == 0);
    return qpn;
  }

  void connect(Side& s, Side& peer, uint32_t peer_ip, const QpParams& q) {
    connect_qp(s, s.qpn, peer.qpn, peer_ip, q);
  }

  // Takes QP `qpn` of `s` from RESET to RTS, connected to `peer_qpn` at `peer_ip`.
  void connect_qp(Side& s, uint32_t qpn, uint32_t peer_qpn, uint32_t peer_ip, const QpParams& q) {
    AddressVector to_peer;
    to_peer.is_global = link_layer != net::LinkLayer::InfiniBand;
    to_peer.dlid = static_cast<uint16_t>(peer_ip);
    to_peer.dgid = link_layer == net::LinkLayer::IWarp ? iwarp_gid_of(peer_ip) : gid_of(peer_ip);
    REQUIRE(modify_to_rts(*s.hca, qpn, peer_qpn, to_peer, connect_params(q)) == 0);
  }

  static ConnectParams connect_params(const QpParams& q) {
    ConnectParams c;
    c.type = q.type;
    c.access = q.access;
    c.qkey = q.qkey;
    c.path_mtu = q.mtu;
    c.psn = q.psn;
    c.timeout = q.timeout;
    c.retry_cnt = q.retry_cnt;
    c.rnr_retry = q.rnr_retry;
    c.min_rnr_timer = q.min_rnr_timer;
    c.max_rd_atomic = q.max_rd_atomic;
    c.max_dest_rd_atomic = q.max_dest_rd_atomic;
    return c;
  }

  MrKeys reg(Side& s, std::vector<uint8_t>& buf, uint32_t access = kAccessLocalWrite |
             kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic) {
    MrKeys k;
    const auto addr = reinterpret_cast<uint64_t>(buf.data());
    REQUIRE(s.hca->reg_mr(s.pd, &mem, addr, buf.size(), addr, access, &k) == 0);
    return k;
  }

  // The state of `s`'s QP `qpn` (default: its first QP).
  QpState state(Side& s, uint32_t qpn = 0) { return state_of(*s.hca, qpn ? qpn : s.qpn); }

  // Posts `wr` on `s`'s QP, runs the engine until idle and returns `s`'s completions.
  const std::vector<TimedCompletion>& post_and_run(Side& s, const SendWr& wr) {
    REQUIRE(s.hca->post_send(s.qpn, wr) == 0);
    engine.run();
    return s.wcs;
  }
};

// Two HCAs back to back (RoCEv2, 10.0.0.1 and 10.0.0.2), `delay` apart on TestWires.
// On InfiniBand the addresses are LIDs 1 and 2 (kIpA/kIpB are then unused) and RC/UC
// paths are not global (no GRH).
struct Pair : PairBase {
  static constexpr uint32_t kIpA = 0x0a000001, kIpB = 0x0a000002;

  explicit Pair(QpParams qp = {}, Time delay = us(1),
                net::LinkLayer ll = net::LinkLayer::RoCEv2, const HcaConfig& base = {})
      : PairBase(ll) {
    a.wire = std::make_unique<TestWire>(engine, delay);
    b.wire = std::make_unique<TestWire>(engine, delay);
    HcaConfig ca = base, cb = base;
    const bool ib = ll == net::LinkLayer::InfiniBand;
    ca.address = addr_a = ib ? 1 : kIpA;
    cb.address = addr_b = ib ? 2 : kIpB;
    ca.link_layer = cb.link_layer = ll;
    a.hca = std::make_unique<Hca>(engine, ca, *a.wire);
    b.hca = std::make_unique<Hca>(engine, cb, *b.wire);
    a.wire->connect(b.hca.get());
    b.wire->connect(a.hca.get());
    start(qp);
  }
};

inline Sge sge_of(std::vector<uint8_t>& buf, uint32_t lkey, uint32_t off = 0, uint32_t len = 0) {
  return Sge{reinterpret_cast<uint64_t>(buf.data()) + off,
             len ? len : static_cast<uint32_t>(buf.size() - off), lkey};
}

// A signaled RDMA WRITE, READ or atomic of all of `local` at the start of `remote`.
inline SendWr rdma_wr(WrOpcode op, std::vector<uint8_t>& local, MrKeys kl, std::vector<uint8_t>& remote,
                      MrKeys kr) {
  SendWr wr;
  wr.opcode = op;
  wr.send_flags = kSendSignaled;
  wr.sgl = {sge_of(local, kl.lkey)};
  wr.remote_addr = reinterpret_cast<uint64_t>(remote.data());
  wr.rkey = kr.rkey;
  return wr;
}

inline std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(seed + i * 7 + (i >> 8));
  return v;
}

}  // namespace rdmasim::nic::test
