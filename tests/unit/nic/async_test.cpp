// Affiliated asynchronous QP events (IBTA vol 1 11.6.3; man ibv_get_async_event):
// COMM_EST, QP_REQ_ERR, QP_ACCESS_ERR, QP_FATAL and QP_LAST_WQE_REACHED, raised by the HCA
// and delivered to the owner's async sink (the daemon forwards them to ibv_get_async_event).
#include <doctest/doctest.h>

#include <cstring>

#include <nlohmann/json.hpp>

#include "tests/unit/nic/fabric_pair.h"
#include "tests/unit/nic/test_wire.h"

using namespace rdmasim;
using namespace rdmasim::nic;
using namespace rdmasim::nic::test;

namespace {

struct Events {
  std::vector<AsyncEvent> list;
  explicit Events(Hca& h) {
    h.set_async_sink([this](const AsyncEvent& e) { list.push_back(e); });
  }
  size_t count(AsyncEventType t, uint32_t qpn) const {
    size_t n = 0;
    for (const auto& e : list) n += e.type == t && e.qpn == qpn;
    return n;
  }
};

SendWr send_inline(uint8_t byte) {
  SendWr wr;
  wr.opcode = WrOpcode::Send;
  wr.send_flags = kSendInline | kSendSignaled;
  wr.inline_data = {byte};
  return wr;
}

}  // namespace

TEST_CASE("async: the first packet at a QP in RTR raises COMM_EST, once") {
  // man ibv_get_async_event: IBV_EVENT_COMM_EST "Communication was established on a QP"
  // (IBTA: a packet arrived while the QP is in RTR, before the owner moved it to RTS).
  Pair p;
  Events ev(*p.b.hca);
  const uint32_t b2 = p.add_qp(p.b, QpParams{});
  QpAttr at;
  at.qp_state = QpState::Init;
  at.port_num = 1;
  at.qp_access_flags = kAccessRemoteWrite;
  REQUIRE(p.b.hca->modify_qp(b2, at, kQpState | kQpPkeyIndex | kQpPort | kQpAccessFlags) == 0);
  at.qp_state = QpState::Rtr;
  at.path_mtu = 5;
  at.dest_qp_num = p.a.qpn;
  at.rq_psn = 1000;
  at.ah_attr.is_global = true;
  at.ah_attr.dgid = gid_of(Pair::kIpA);
  at.max_dest_rd_atomic = 1;
  at.min_rnr_timer = 1;
  REQUIRE(p.b.hca->modify_qp(b2, at, kQpState | kQpAv | kQpPathMtu | kQpDestQpn | kQpRqPsn |
                                         kQpMaxDestRdAtomic | kQpMinRnrTimer) == 0);
  QpAttr rst;
  rst.qp_state = QpState::Reset;
  REQUIRE(p.a.hca->modify_qp(p.a.qpn, rst, kQpState) == 0);
  p.connect_qp(p.a, p.a.qpn, b2, Pair::kIpB, QpParams{});
  std::vector<uint8_t> buf(16, 0);
  auto k = p.reg(p.b, buf);
  for (int i = 0; i < 2; ++i) {
    RecvWr rr;
    rr.sgl = {sge_of(buf, k.lkey, i * 8, 8)};
    REQUIRE(p.b.hca->post_recv(b2, rr) == 0);
    REQUIRE(p.a.hca->post_send(p.a.qpn, send_inline(0x30 + i)) == 0);
  }
  p.engine.run();
  CHECK(ev.count(AsyncEventType::CommEst, b2) == 1);  // two messages, one event
  REQUIRE(p.b.wcs.size() == 2);                      // an RTR QP receives
  CHECK(buf[0] == 0x30);
  CHECK(buf[8] == 0x31);
  REQUIRE(p.a.wcs.size() == 2);
  CHECK(p.a.wcs[1].wc.status == WcStatus::Success);  // and ACKs
  CHECK(ev.count(AsyncEventType::CommEst, p.b.qpn) == 0);
}

TEST_CASE("async: responder errors without a receive completion raise QP events") {
  // IBTA 11.6.3.x: "Invalid Request Local Work Queue Error" (IBV_EVENT_QP_REQ_ERR),
  // "Local Access Violation Work Queue Error" (IBV_EVENT_QP_ACCESS_ERR) and "Local Work
  // Queue Catastrophic Error" (IBV_EVENT_QP_FATAL) at the responder QP, which goes to ERR.
  SUBCASE("bad rkey -> QP_ACCESS_ERR") {
    Pair p;
    Events ev(*p.b.hca);
    auto src = pattern(32, 1);
    std::vector<uint8_t> dst(32, 0);
    auto ks = p.reg(p.a, src);
    auto kd = p.reg(p.b, dst);
    SendWr wr;
    wr.opcode = WrOpcode::RdmaWrite;
    wr.sgl = {sge_of(src, ks.lkey)};
    wr.remote_addr = reinterpret_cast<uint64_t>(dst.data());
    wr.rkey = kd.rkey + 1;
    REQUIRE(p.a.hca->post_send(p.a.qpn, wr) == 0);
    p.engine.run();
    CHECK(ev.count(AsyncEventType::QpAccessErr, p.b.qpn) == 1);
    CHECK(ev.list.size() == 1);
  }
  SUBCASE("misaligned atomic -> QP_REQ_ERR") {
    Pair p;
    Events ev(*p.b.hca);
    std::vector<uint8_t> remote(16, 0), local(8, 0);
    auto kr = p.reg(p.b, remote);
    auto kl = p.reg(p.a, local);
    SendWr wr;
    wr.opcode = WrOpcode::AtomicFetchAndAdd;
    wr.sgl = {sge_of(local, kl.lkey)};
    wr.remote_addr = reinterpret_cast<uint64_t>(remote.data()) + 2;
    wr.rkey = kr.rkey;
    REQUIRE(p.a.hca->post_send(p.a.qpn, wr) == 0);
    p.engine.run();
    CHECK(ev.count(AsyncEventType::QpReqErr, p.b.qpn) == 1);
    CHECK(ev.list.size() == 1);
  }
  SUBCASE("unreadable memory -> QP_FATAL") {
    Pair p;
    Events ev(*p.b.hca);
    VanishedMemory gone;
    std::vector<uint8_t> remote(16, 0), local(16, 0);
    const auto raddr = reinterpret_cast<uint64_t>(remote.data());
    MrKeys kr;
    REQUIRE(p.b.hca->reg_mr(p.b.pd, &gone, raddr, 16, raddr,
                            kAccessLocalWrite | kAccessRemoteRead, &kr) == 0);
    auto kl = p.reg(p.a, local);
    SendWr wr;
    wr.opcode = WrOpcode::RdmaRead;
    wr.sgl = {sge_of(local, kl.lkey)};
    wr.remote_addr = raddr;
    wr.rkey = kr.rkey;
    REQUIRE(p.a.hca->post_send(p.a.qpn, wr) == 0);
    p.engine.run();
    CHECK(ev.count(AsyncEventType::QpFatal, p.b.qpn) == 1);
    CHECK(ev.list.size() == 1);
  }
  SUBCASE("a SEND longer than the receive: a LOC_LEN_ERR completion, no event") {
    // The error is reported through the receive WQE, so there is no affiliated event.
    Pair p;
    Events ev(*p.b.hca);
    auto src = pattern(64, 1);
    std::vector<uint8_t> dst(16, 0);
    auto ks = p.reg(p.a, src);
    auto kd = p.reg(p.b, dst);
    RecvWr rr;
    rr.sgl = {sge_of(dst, kd.lkey)};
    REQUIRE(p.b.hca->post_recv(p.b.qpn, rr) == 0);
    SendWr wr;
    wr.opcode = WrOpcode::Send;
    wr.sgl = {sge_of(src, ks.lkey)};
    REQUIRE(p.a.hca->post_send(p.a.qpn, wr) == 0);
    p.engine.run();
    REQUIRE(p.b.wcs.size() == 1);
    CHECK(p.b.wcs[0].wc.status == WcStatus::LocLenErr);
    CHECK(ev.list.empty());
  }
}

TEST_CASE("async: a QP on an SRQ entering ERR raises LAST_WQE_REACHED once") {
  // man ibv_get_async_event: IBV_EVENT_QP_LAST_WQE_REACHED "Last WQE Reached on a QP
  // associated with an SRQ"; IBTA 10.8.5.3: raised when the QP enters ERR. A QP with its
  // own receive queue raises none.
  Pair p;
  Events ev(*p.b.hca);
  uint32_t srq = 0;
  REQUIRE(p.b.hca->create_srq(p.b.pd, SrqAttr{8, 1, 0}, &srq) == 0);
  QpInitAttr init;
  init.pd = p.b.pd;
  init.send_cq = init.recv_cq = p.b.cq;
  init.srq = srq;
  init.caps = {8, 0, 1, 0, 0};
  uint32_t q2 = 0;
  REQUIRE(p.b.hca->create_qp(init, &q2) == 0);
  p.connect_qp(p.b, q2, p.a.qpn, Pair::kIpA, QpParams{});
  QpAttr err;
  err.qp_state = QpState::Err;
  REQUIRE(p.b.hca->modify_qp(q2, err, kQpState) == 0);
  REQUIRE(p.b.hca->modify_qp(q2, err, kQpState) == 0);  // ERR -> ERR: no second event
  REQUIRE(p.b.hca->modify_qp(p.b.qpn, err, kQpState) == 0);
  p.engine.run();
  CHECK(ev.count(AsyncEventType::QpLastWqeReached, q2) == 1);
  CHECK(ev.count(AsyncEventType::QpLastWqeReached, p.b.qpn) == 0);
}

TEST_CASE("async: the fabric taking a NIC's link down and up raises PORT_ERR then PORT_ACTIVE") {
  // man ibv_get_async_event: IBV_EVENT_PORT_ERR "Link became unavailable on a port",
  // IBV_EVENT_PORT_ACTIVE "Link became active on a port"; while the link is down
  // ibv_query_port reports the port DOWN (Hca::port_active false). Link 0 (server <-> sw0)
  // is scheduled down at 20 us and up at 70 us; the events come at exactly those times.
  const Time down_at = us(20), up_at = us(70);
  FabricPair p(nlohmann::json{{"schedule", nlohmann::json::array({{{"at_ns", 20000}, {"up", false}},
                                                                  {{"at_ns", 70000}, {"up", true}}})}});
  struct Seen {
    AsyncEvent ev;
    Time at;
  };
  std::vector<Seen> a_events, b_events;
  p.a.hca->set_async_sink([&](const AsyncEvent& e) { a_events.push_back({e, p.engine.now()}); });
  p.b.hca->set_async_sink([&](const AsyncEvent& e) { b_events.push_back({e, p.engine.now()}); });
  std::vector<std::pair<Time, bool>> states;
  for (Time t : {us(10), us(45), us(100)})
    p.engine.schedule_at(t, [&, t] { states.push_back({t, p.a.hca->port_active()}); });
  p.engine.run();
  REQUIRE(a_events.size() == 2);
  CHECK(a_events[0].ev.type == AsyncEventType::PortErr);
  CHECK(a_events[0].ev.port == 1);
  CHECK(a_events[0].at == down_at);
  CHECK(a_events[1].ev.type == AsyncEventType::PortActive);
  CHECK(a_events[1].ev.port == 1);
  CHECK(a_events[1].at == up_at);
  // Before, during and after the outage.
  REQUIRE(states.size() == 3);
  CHECK(states[0].second);
  CHECK_FALSE(states[1].second);
  CHECK(states[2].second);
  // The client's own link (link 1) never changed: no port event there.
  CHECK(b_events.empty());
  CHECK(p.b.hca->port_active());
}
