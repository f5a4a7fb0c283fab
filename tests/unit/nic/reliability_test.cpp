// RC reliability: remote access errors, RNR, ACK timeout and retries, go-back-N, flush.
#include <doctest/doctest.h>

#include <cstring>

#include "tests/unit/nic/test_wire.h"

using namespace rdmasim;
using namespace rdmasim::nic;
using namespace rdmasim::nic::test;

namespace {

SendWr write_wr(std::vector<uint8_t>& src, MrKeys ks, std::vector<uint8_t>& dst, uint32_t rkey) {
  SendWr wr;
  wr.opcode = WrOpcode::RdmaWrite;
  wr.send_flags = kSendSignaled;
  wr.sgl = {sge_of(src, ks.lkey)};
  wr.remote_addr = reinterpret_cast<uint64_t>(dst.data());
  wr.rkey = rkey;
  return wr;
}

}  // namespace

TEST_CASE("rc: a bad rkey gives REM_ACCESS_ERR, both QPs go to ERR, later WRs flush") {
  Pair p;
  auto src = pattern(100, 1);
  std::vector<uint8_t> dst(100, 0);
  auto ks = p.reg(p.a, src);
  auto kd = p.reg(p.b, dst);
  REQUIRE(p.a.hca->post_send(p.a.qpn, write_wr(src, ks, dst, kd.rkey + 1)) == 0);
  REQUIRE(p.a.hca->post_send(p.a.qpn, write_wr(src, ks, dst, kd.rkey)) == 0);
  p.engine.run();
  REQUIRE(p.a.wcs.size() == 2);
  CHECK(p.a.wcs[0].wc.status == WcStatus::RemAccessErr);
  CHECK(p.a.wcs[1].wc.status == WcStatus::WrFlushErr);
  CHECK(dst == std::vector<uint8_t>(100, 0));  // nothing written
  QpAttr qa, qb;
  REQUIRE(p.a.hca->query_qp(p.a.qpn, &qa, nullptr) == 0);
  REQUIRE(p.b.hca->query_qp(p.b.qpn, &qb, nullptr) == 0);
  CHECK(qa.qp_state == QpState::Err);
  CHECK(qb.qp_state == QpState::Err);
  CHECK(p.b.hca->counters().naks_sent == 1);
}

TEST_CASE("rc: a write beyond the MR or into a read-only MR is a remote access error") {
  Pair p;
  auto src = pattern(100, 1);
  std::vector<uint8_t> dst(64, 0);
  auto ks = p.reg(p.a, src);
  auto kd = p.reg(p.b, dst, kAccessLocalWrite | kAccessRemoteRead);  // no remote write
  REQUIRE(p.a.hca->post_send(p.a.qpn, write_wr(src, ks, dst, kd.rkey)) == 0);
  p.engine.run();
  REQUIRE(p.a.wcs.size() == 1);
  CHECK(p.a.wcs[0].wc.status == WcStatus::RemAccessErr);
}

TEST_CASE("rc: SEND with no receive posted and rnr_retry = 0 gives RNR_RETRY_EXC_ERR") {
  QpParams qp;
  qp.rnr_retry = 0;
  Pair p(qp);
  SendWr wr;
  wr.opcode = WrOpcode::Send;
  wr.send_flags = kSendSignaled | kSendInline;
  wr.inline_data = {1, 2, 3};
  REQUIRE(p.a.hca->post_send(p.a.qpn, wr) == 0);
  p.engine.run();
  REQUIRE(p.a.wcs.size() == 1);
  CHECK(p.a.wcs[0].wc.status == WcStatus::RnrRetryExcErr);
  CHECK(p.b.hca->counters().rnr_naks_sent == 1);  // the first RNR NAK is final
}

TEST_CASE("rc: RNR NAK then a receive posted in time: the SEND succeeds after min_rnr_timer") {
  QpParams qp;
  qp.rnr_retry = 1;
  qp.min_rnr_timer = 1;  // IBTA code 1 = 10 us
  Pair p(qp);
  std::vector<uint8_t> dst(16, 0);
  auto kd = p.reg(p.b, dst);
  SendWr wr;
  wr.opcode = WrOpcode::Send;
  wr.send_flags = kSendSignaled | kSendInline;
  wr.inline_data = {9, 8, 7};
  REQUIRE(p.a.hca->post_send(p.a.qpn, wr) == 0);
  // The first try arrives at ~1.2 us and is RNR-NAKed; post the receive at 5 us.
  p.engine.schedule_at(us(5), [&] {
    RecvWr rr;
    rr.sgl = {sge_of(dst, kd.lkey)};
    REQUIRE(p.b.hca->post_recv(p.b.qpn, rr) == 0);
  });
  p.engine.run();
  REQUIRE(p.a.wcs.size() == 1);
  CHECK(p.a.wcs[0].wc.status == WcStatus::Success);
  CHECK(dst[0] == 9);
  // Success comes after the 10 us back-off, which starts when the NAK arrives (> 2 us).
  CHECK(p.a.wcs[0].at > us(12));
  CHECK(p.b.hca->counters().rnr_naks_sent == 1);
}

TEST_CASE("rc: a dead peer gives RETRY_EXC_ERR after (retry_cnt + 1) ACK timeouts") {
  QpParams qp;
  qp.timeout = 10;   // 4.096 us * 2^10 = 4194.304 us
  qp.retry_cnt = 3;
  Pair p(qp);
  p.a.wire->drop = [](const nic::RdmaPacket&) { return true; };
  SendWr wr;
  wr.opcode = WrOpcode::Send;
  wr.send_flags = kSendSignaled | kSendInline;
  wr.inline_data = {1};
  REQUIRE(p.a.hca->post_send(p.a.qpn, wr) == 0);
  p.engine.run();
  REQUIRE(p.a.wcs.size() == 1);
  CHECK(p.a.wcs[0].wc.status == WcStatus::RetryExcErr);
  // The packet leaves after wqe_latency (100 ns, HcaConfig default); the original and its
  // 3 retransmissions each wait one timeout: 100 ns + 4 * 4.096 us * 1024.
  const Time t = ns(4096) * 1024;
  CHECK(p.a.wcs[0].at == ns(100) + 4 * t);
  CHECK(p.a.hca->counters().timeouts == 4);
  CHECK(p.a.hca->counters().retransmitted_packets == 3);
  QpAttr qa;
  REQUIRE(p.a.hca->query_qp(p.a.qpn, &qa, nullptr) == 0);
  CHECK(qa.qp_state == QpState::Err);
}

TEST_CASE("rc: a lost packet triggers one sequence NAK and go-back-N; the data arrives intact") {
  QpParams qp;
  qp.mtu = 3;  // 1024
  Pair p(qp);
  auto src = pattern(10000, 2);
  std::vector<uint8_t> dst(10000, 0);
  auto ks = p.reg(p.a, src);
  auto kd = p.reg(p.b, dst);
  int n = 0;
  p.a.wire->drop = [&](const nic::RdmaPacket&) { return ++n == 3; };  // the 3rd packet, once
  REQUIRE(p.a.hca->post_send(p.a.qpn, write_wr(src, ks, dst, kd.rkey)) == 0);
  p.engine.run();
  CHECK(dst == src);
  REQUIRE(p.a.wcs.size() == 1);
  CHECK(p.a.wcs[0].wc.status == WcStatus::Success);
  CHECK(p.b.hca->counters().naks_sent == 1);          // one NAK per gap
  CHECK(p.b.hca->counters().out_of_sequence == 7);    // packets 4..10 arrived after the gap
  CHECK(p.a.hca->counters().retransmitted_packets == 8);  // go back to packet 3: 3..10
}

TEST_CASE("rc: a lost atomic ACK makes a duplicate atomic that is not executed twice") {
  QpParams qp;
  qp.timeout = 1;  // 8.192 us
  Pair p(qp);
  std::vector<uint8_t> remote(8, 0), local(8, 0);
  uint64_t v = 40;
  std::memcpy(remote.data(), &v, 8);
  auto kr = p.reg(p.b, remote);
  auto kl = p.reg(p.a, local);
  int n = 0;
  p.b.wire->drop = [&](const nic::RdmaPacket& pk) { return pk.bth.opcode == 0x12 && ++n == 1; };
  SendWr wr;
  wr.opcode = WrOpcode::AtomicFetchAndAdd;
  wr.send_flags = kSendSignaled;
  wr.sgl = {sge_of(local, kl.lkey)};
  wr.remote_addr = reinterpret_cast<uint64_t>(remote.data());
  wr.rkey = kr.rkey;
  wr.compare_add = 2;
  REQUIRE(p.a.hca->post_send(p.a.qpn, wr) == 0);
  p.engine.run();
  uint64_t orig = 0, now = 0;
  std::memcpy(&orig, local.data(), 8);
  std::memcpy(&now, remote.data(), 8);
  CHECK(orig == 40);  // the original value, from the responder's history
  CHECK(now == 42);   // 40 + 2 once, not 44
  REQUIRE(p.a.wcs.size() == 1);
  CHECK(p.a.wcs[0].wc.status == WcStatus::Success);
  CHECK(p.b.hca->counters().duplicates == 1);
}

TEST_CASE("rc: a lost READ response is re-read from the missing PSN") {
  QpParams qp;
  qp.timeout = 1;
  qp.mtu = 1;  // 256
  Pair p(qp);
  auto remote = pattern(2000, 4);
  std::vector<uint8_t> local(2000, 0);
  auto kr = p.reg(p.b, remote);
  auto kl = p.reg(p.a, local);
  int n = 0;
  p.b.wire->drop = [&](const nic::RdmaPacket&) { return ++n == 4; };  // the 4th response, once
  SendWr wr;
  wr.opcode = WrOpcode::RdmaRead;
  wr.send_flags = kSendSignaled;
  wr.sgl = {sge_of(local, kl.lkey)};
  wr.remote_addr = reinterpret_cast<uint64_t>(remote.data());
  wr.rkey = kr.rkey;
  REQUIRE(p.a.hca->post_send(p.a.qpn, wr) == 0);
  p.engine.run();
  CHECK(local == remote);
  REQUIRE(p.a.wcs.size() == 1);
  CHECK(p.a.wcs[0].wc.status == WcStatus::Success);
  // ceil(2000 / 256) = 8 responses; the re-read from the 4th asks for 5 more.
  CHECK(p.b.wire->sent.size() == 8 + 5);
}

TEST_CASE("qp: moving to ERR flushes posted receives and sends with WR_FLUSH_ERR") {
  Pair p;
  std::vector<uint8_t> buf(64, 0);
  auto k = p.reg(p.b, buf);
  RecvWr rr;
  rr.sgl = {sge_of(buf, k.lkey)};
  rr.wr_id = 1;
  REQUIRE(p.b.hca->post_recv(p.b.qpn, rr) == 0);
  rr.wr_id = 2;
  REQUIRE(p.b.hca->post_recv(p.b.qpn, rr) == 0);
  QpAttr err;
  err.qp_state = QpState::Err;
  REQUIRE(p.b.hca->modify_qp(p.b.qpn, err, kQpState) == 0);
  REQUIRE(p.b.wcs.size() == 2);
  CHECK(p.b.wcs[0].wc.status == WcStatus::WrFlushErr);
  CHECK(p.b.wcs[0].wc.wr_id == 1);
  CHECK(p.b.wcs[1].wc.wr_id == 2);
}

TEST_CASE("srq: receives come from the SRQ and the limit event fires once below srq_limit") {
  Pair p;
  // A second QP on B that uses an SRQ, connected to A's QP in place of B's first one.
  uint32_t srq = 0;
  REQUIRE(p.b.hca->create_srq(p.b.pd, SrqAttr{8, 1, 0}, &srq) == 0);
  std::vector<AsyncEvent> events;
  p.b.hca->set_async_sink([&](const AsyncEvent& e) { events.push_back(e); });
  SrqAttr lim{0, 0, 2};
  REQUIRE(p.b.hca->modify_srq(srq, lim, 2) == 0);
  std::vector<uint8_t> buf(64 * 3, 0);
  auto k = p.reg(p.b, buf);
  for (uint32_t i = 0; i < 3; ++i) {
    RecvWr rr;
    rr.wr_id = i;
    rr.sgl = {sge_of(buf, k.lkey, i * 64, 64)};
    REQUIRE(p.b.hca->post_srq_recv(srq, rr) == 0);
  }
  QpInitAttr init;
  init.pd = p.b.pd;
  init.send_cq = init.recv_cq = p.b.cq;
  init.srq = srq;
  init.caps = {8, 0, 1, 0, 0};
  uint32_t q2 = 0;
  REQUIRE(p.b.hca->create_qp(init, &q2) == 0);
  p.b.qpn = q2;
  p.connect(p.b, p.a, Pair::kIpA, QpParams{});
  QpAttr rst;
  rst.qp_state = QpState::Reset;
  REQUIRE(p.a.hca->modify_qp(p.a.qpn, rst, kQpState) == 0);
  p.connect(p.a, p.b, Pair::kIpB, QpParams{});
  for (int i = 0; i < 2; ++i) {
    SendWr wr;
    wr.opcode = WrOpcode::Send;
    wr.send_flags = kSendInline;
    wr.inline_data = {static_cast<uint8_t>(0x50 + i)};
    REQUIRE(p.a.hca->post_send(p.a.qpn, wr) == 0);
  }
  p.engine.run();
  REQUIRE(p.b.wcs.size() == 2);
  CHECK(p.b.wcs[0].wc.srqn == srq);
  CHECK(p.b.wcs[0].wc.wr_id == 0);
  CHECK(p.b.wcs[1].wc.wr_id == 1);
  CHECK(buf[0] == 0x50);
  CHECK(buf[64] == 0x51);
  // 3 posted, limit 2: after the 2nd receive 1 < 2 remain, so the event fires there, once.
  REQUIRE(events.size() == 1);
  CHECK(events[0].type == AsyncEventType::SrqLimitReached);
  CHECK(events[0].srq == srq);
}

TEST_CASE("rc: RNR on a multi-packet SEND does not cost retries: retry_cnt = 0 still succeeds") {
  QpParams qp;
  qp.retry_cnt = 0;      // any sequence NAK or timeout would be fatal
  qp.rnr_retry = 7;      // infinite RNR retries
  qp.min_rnr_timer = 1;  // 10 us
  Pair p(qp);
  auto src = pattern(4 * 4096, 3);
  std::vector<uint8_t> dst(4 * 4096, 0);
  auto ks = p.reg(p.a, src);
  auto kd = p.reg(p.b, dst);
  SendWr wr;
  wr.opcode = WrOpcode::Send;
  wr.send_flags = kSendSignaled;
  wr.sgl = {sge_of(src, ks.lkey)};
  REQUIRE(p.a.hca->post_send(p.a.qpn, wr) == 0);
  p.engine.schedule_at(us(25), [&] {  // after two or three RNR rounds of ~12 us
    RecvWr rr;
    rr.sgl = {sge_of(dst, kd.lkey)};
    REQUIRE(p.b.hca->post_recv(p.b.qpn, rr) == 0);
  });
  p.engine.run();
  CHECK(dst == src);
  REQUIRE(p.a.wcs.size() == 1);
  CHECK(p.a.wcs[0].wc.status == WcStatus::Success);
  CHECK(p.b.hca->counters().naks_sent == 0);  // only RNR NAKs, no sequence NAKs
  CHECK(p.b.hca->counters().rnr_naks_sent >= 2);
}

TEST_CASE("rc: a port that goes down makes RC sends fail with RETRY_EXC_ERR, with an event") {
  QpParams qp;
  qp.timeout = 1;    // 8.192 us
  qp.retry_cnt = 2;
  Pair p(qp);
  std::vector<AsyncEvent> events;
  p.a.hca->set_async_sink([&](const AsyncEvent& e) { events.push_back(e); });
  p.a.hca->set_port_active(false);
  SendWr wr;
  wr.opcode = WrOpcode::Send;
  wr.send_flags = kSendSignaled | kSendInline;
  wr.inline_data = {1};
  REQUIRE(p.a.hca->post_send(p.a.qpn, wr) == 0);
  p.engine.run();
  REQUIRE(p.a.wcs.size() == 1);
  CHECK(p.a.wcs[0].wc.status == WcStatus::RetryExcErr);
  CHECK(p.a.wcs[0].at == ns(100) + 3 * ns(4096) * 2);  // fetch + (2 + 1) timeouts
  CHECK(p.a.wire->sent.empty());
  REQUIRE(events.size() == 1);
  CHECK(events[0].type == AsyncEventType::PortErr);
}

TEST_CASE("rc: a lost ACK makes a duplicate SEND that is re-ACKed, not delivered twice") {
  QpParams qp;
  qp.timeout = 1;  // 8.192 us
  Pair p(qp);
  std::vector<uint8_t> dst(64, 0);
  auto kd = p.reg(p.b, dst);
  for (int i = 0; i < 2; ++i) {
    RecvWr rr;
    rr.wr_id = i;
    rr.sgl = {sge_of(dst, kd.lkey)};
    REQUIRE(p.b.hca->post_recv(p.b.qpn, rr) == 0);
  }
  int n = 0;
  p.b.wire->drop = [&](const nic::RdmaPacket&) { return ++n == 1; };  // B's first ACK
  SendWr wr;
  wr.opcode = WrOpcode::Send;
  wr.send_flags = kSendSignaled | kSendInline;
  wr.inline_data = {5, 6};
  REQUIRE(p.a.hca->post_send(p.a.qpn, wr) == 0);
  p.engine.run();
  REQUIRE(p.a.wcs.size() == 1);
  CHECK(p.a.wcs[0].wc.status == WcStatus::Success);
  // Completed one timeout (8.192 us) after the first try.
  CHECK(p.a.wcs[0].at > ns(8192));
  CHECK(p.b.wcs.size() == 1);                      // one receive consumed
  CHECK(p.b.hca->counters().duplicates == 1);
  CHECK(p.b.hca->counters().acks_sent == 2);       // the lost one and the re-ACK
  CHECK(p.a.hca->counters().retransmitted_packets == 1);
}
