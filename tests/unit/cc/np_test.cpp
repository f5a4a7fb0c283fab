// DCQCN notification point: CNP generation by the receiving HCA.
#include <doctest/doctest.h>

#include <map>
#include <memory>
#include <vector>

#include "sim/nic/rdma_packet.h"
#include "sim/core/engine.h"
#include "tests/unit/cc/cc_fixture.h"

namespace rdmasim::nic {
namespace {

using cctest::connect_rc;
using cctest::make_rc_qp;

// One direction of a 100 Gb/s link: serializes packets back to back, then delivers them
// `delay` later; marks CE on every transport packet when `mark` is set. Records what it sent.
class Wire final : public net::Transmitter {
 public:
  Wire(Engine& e, Time delay) : engine_(e), delay_(delay) {}
  void connect(net::Node* peer) { peer_ = peer; }
  bool ready(uint8_t) const override { return true; }
  void send(net::PacketPtr frame) override {
    nic::RdmaPacketPtr p = nic::rdma_cast(std::move(frame));
    const Time start = std::max(engine_.now(), busy_);
    busy_ = start + tx_time(rate(), p->wire_bytes);
    if (mark && p->kind == net::PacketKind::Transport) p->ce = true;
    if (p->kind == net::PacketKind::Cnp) cnps.push_back({engine_.now(), p->bth.dest_qp, p->bth.opcode,
                                                         p->priority, p->frame_bytes});
    std::shared_ptr<nic::RdmaPacket> sp(p.release());
    engine_.schedule_at(busy_ + delay_, [this, sp] {
      if (sp->ce) {
        marked_arrivals.push_back(engine_.now());
        marked_by_qp[sp->bth.dest_qp].push_back(engine_.now());
      }
      peer_->receive(sp->clone(), 0);
    });
  }
  void set_ready_callback(std::function<void()>) override {}
  Rate rate() const override { return Rate::gbps(100); }

  struct Cnp {
    Time at;
    uint32_t dest_qp;
    uint8_t opcode, priority;
    uint32_t frame_bytes;
  };
  bool mark = false;
  std::vector<Cnp> cnps;
  std::vector<Time> marked_arrivals;  // when CE-marked packets reached the peer
  std::map<uint32_t, std::vector<Time>> marked_by_qp;  // the same, per destination QP

 private:
  Engine& engine_;
  Time delay_;
  Time busy_ = 0;
  net::Node* peer_ = nullptr;
};

// HCAs A (10.0.0.1) and B (10.0.0.2) on a Wire pair 1 us apart, every packet from A to B
// CE-marked, one RC QP each; write() sends `bytes` from A to B in one RDMA WRITE.
struct MarkedPair {
  Engine engine;
  Wire ab{engine, us(1)}, ba{engine, us(1)};
  HcaConfig ca, cb;
  std::unique_ptr<Hca> a, b;
  std::vector<Completion> wa, wb;
  uint32_t pda = 0, cqa = 0, pdb = 0, cqb = 0, qa = 0, qb = 0;
  LocalMemory mem;
  std::vector<uint8_t> src, dst;

  explicit MarkedPair(CcAlgorithm algo) {
    ab.mark = true;
    ca.address = 0x0a000001;
    cb.address = 0x0a000002;
    ca.cc.algorithm = cb.cc.algorithm = algo;  // B is the NP, A the RP
    a = std::make_unique<Hca>(engine, ca, ab);
    b = std::make_unique<Hca>(engine, cb, ba);
    ab.connect(b.get());
    ba.connect(a.get());
    qa = make_rc_qp(*a, &pda, &cqa, [this](const Completion& c) { wa.push_back(c); });
    qb = make_rc_qp(*b, &pdb, &cqb, [this](const Completion& c) { wb.push_back(c); });
    connect_rc(*a, qa, qb, cb.address);
    connect_rc(*b, qb, qa, ca.address);
  }

  void write(size_t bytes) {
    src.assign(bytes, 0x5a);
    dst.assign(bytes, 0);
    MrKeys ka, kb;
    const auto s = reinterpret_cast<uint64_t>(src.data()), d = reinterpret_cast<uint64_t>(dst.data());
    REQUIRE(a->reg_mr(pda, &mem, s, bytes, s, kAccessLocalWrite, &ka) == 0);
    REQUIRE(b->reg_mr(pdb, &mem, d, bytes, d, kAccessLocalWrite | kAccessRemoteWrite, &kb) == 0);
    SendWr wr;
    wr.opcode = WrOpcode::RdmaWrite;
    wr.send_flags = kSendSignaled;
    wr.sgl = {Sge{s, static_cast<uint32_t>(bytes), ka.lkey}};
    wr.remote_addr = d;
    wr.rkey = kb.rkey;
    REQUIRE(a->post_send(qa, wr) == 0);
    engine.run();
    REQUIRE(wa.size() == 1);
    CHECK(wa[0].status == WcStatus::Success);
    CHECK(dst == src);
  }
};

TEST_CASE("dcqcn NP: at most one CNP per QP per cnp_interval, sent when CE-marked packets arrive") {
  MarkedPair m(CcAlgorithm::Dcqcn);
  m.write(4 << 20);
  const Wire& ab = m.ab;
  const Wire& ba = m.ba;
  const HcaConfig& cb = m.cb;
  const uint32_t qa = m.qa;
  Hca& a = *m.a;
  Hca& b = *m.b;

  // Expected CNP times from the NP rule applied to the recorded CE arrivals: a CNP for the
  // first marked packet (handled rx_latency after arrival), then for the first marked
  // packet handled at least cnp_interval after the previous CNP.
  const Time interval = cb.cc.dcqcn.cnp_interval;
  std::vector<Time> expected;
  for (Time arr : ab.marked_arrivals) {
    const Time handled = arr + cb.rx_latency;
    if (expected.empty() || handled - expected.back() >= interval) expected.push_back(handled);
  }
  REQUIRE(ba.cnps.size() == expected.size());
  CHECK(expected.size() >= 2);  // 4 MiB at <= 100 Gb/s take > 335 us: several intervals
  for (size_t i = 0; i < expected.size(); ++i) {
    CHECK(ba.cnps[i].at == expected[i]);
    CHECK(ba.cnps[i].dest_qp == qa);
    CHECK(ba.cnps[i].opcode == 0x81);             // RoCEv2 CNP
    CHECK(ba.cnps[i].priority == 6);              // cnp_priority default
    CHECK(ba.cnps[i].frame_bytes == 14 + 20 + 8 + 12 + 16 + 4 + 4);  // Eth IP UDP BTH rsvd ICRC FCS
    if (i) CHECK(ba.cnps[i].at - ba.cnps[i - 1].at >= interval);
  }
  CHECK(b.counters().cnps_sent == expected.size());
  CHECK(a.counters().cnps_received == expected.size());
  // Every CNP cut A's rate (rate_reduce_period 0), and the QP's report says so.
  CHECK(a.counters().rate_cuts == expected.size());
  const auto rep = a.cc_report();
  REQUIRE(rep.size() == 1);
  CHECK(rep[0].qpn == qa);
  CHECK(rep[0].stats.rate_cuts == expected.size());
}

TEST_CASE("dcqcn NP: the CNP limit is per QP — two QPs marked at once each get their own CNPs") {
  // A second RC QP pair on the same HCAs; both WRITE 2 MiB at the same time, every packet
  // CE-marked. The NP rule applies to each destination QP on its own, so each QP's CNPs
  // follow its own marked arrivals, and within one cnp_interval B sends a CNP to each.
  MarkedPair m(CcAlgorithm::Dcqcn);
  uint32_t pda2 = 0, cqa2 = 0, pdb2 = 0, cqb2 = 0;
  std::vector<Completion> wa2;
  const uint32_t qa2 = make_rc_qp(*m.a, &pda2, &cqa2, [&](const Completion& c) { wa2.push_back(c); });
  const uint32_t qb2 = make_rc_qp(*m.b, &pdb2, &cqb2, [](const Completion&) {});
  connect_rc(*m.a, qa2, qb2, m.cb.address);
  connect_rc(*m.b, qb2, qa2, m.ca.address);
  const size_t bytes = 2 << 20;
  std::vector<uint8_t> src(bytes, 0x5a), d1(bytes), d2(bytes);
  const auto s = reinterpret_cast<uint64_t>(src.data());
  MrKeys ka1, ka2, kb1, kb2;
  REQUIRE(m.a->reg_mr(m.pda, &m.mem, s, bytes, s, kAccessLocalWrite, &ka1) == 0);
  REQUIRE(m.a->reg_mr(pda2, &m.mem, s, bytes, s, kAccessLocalWrite, &ka2) == 0);
  const auto a1 = reinterpret_cast<uint64_t>(d1.data()), a2 = reinterpret_cast<uint64_t>(d2.data());
  REQUIRE(m.b->reg_mr(m.pdb, &m.mem, a1, bytes, a1, kAccessLocalWrite | kAccessRemoteWrite, &kb1) == 0);
  REQUIRE(m.b->reg_mr(pdb2, &m.mem, a2, bytes, a2, kAccessLocalWrite | kAccessRemoteWrite, &kb2) == 0);
  auto wr = [&](uint32_t lkey, uint64_t dst, uint32_t rkey) {
    SendWr w;
    w.opcode = WrOpcode::RdmaWrite;
    w.send_flags = kSendSignaled;
    w.sgl = {Sge{s, static_cast<uint32_t>(bytes), lkey}};
    w.remote_addr = dst;
    w.rkey = rkey;
    return w;
  };
  REQUIRE(m.a->post_send(m.qa, wr(ka1.lkey, a1, kb1.rkey)) == 0);
  REQUIRE(m.a->post_send(qa2, wr(ka2.lkey, a2, kb2.rkey)) == 0);
  m.engine.run();
  REQUIRE(m.wa.size() == 1);
  REQUIRE(wa2.size() == 1);
  CHECK(d1 == src);
  CHECK(d2 == src);
  const Time interval = m.cb.cc.dcqcn.cnp_interval;
  std::map<uint32_t, std::vector<Time>> got;
  for (const Wire::Cnp& c : m.ba.cnps) got[c.dest_qp].push_back(c.at);
  REQUIRE(got.size() == 2);
  for (const auto& [a_qp, b_qp] : {std::pair(m.qa, m.qb), std::pair(qa2, qb2)}) {
    CAPTURE(a_qp);
    std::vector<Time> expected;
    for (Time arr : m.ab.marked_by_qp[b_qp]) {
      const Time handled = arr + m.cb.rx_latency;
      if (expected.empty() || handled - expected.back() >= interval) expected.push_back(handled);
    }
    CHECK(expected.size() >= 2);
    CHECK(got[a_qp] == expected);
  }
  // Per port, not per QP, would allow one CNP per interval in total: here the first CNP of
  // each QP comes within one interval of the other's.
  const Time first1 = got[m.qa].front(), first2 = got[qa2].front();
  CHECK((first1 > first2 ? first1 - first2 : first2 - first1) < interval);
  CHECK(m.b->counters().cnps_sent == got[m.qa].size() + got[qa2].size());
}

TEST_CASE("cc none: CE marks produce no CNP and the requester is not paced") {
  MarkedPair m(CcAlgorithm::None);
  m.write(1 << 20);
  CHECK(m.ba.cnps.empty());
  CHECK(m.b->counters().cnps_sent == 0);
  CHECK(m.b->counters().ecn_marked_received == 256);  // 1 MiB / 4096 B packets, all marked
  CHECK(m.a->cc_report().empty());  // "none" made no controller
}

}  // namespace
}  // namespace rdmasim::nic
