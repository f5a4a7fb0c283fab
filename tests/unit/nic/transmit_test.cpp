// Transmission: port back-pressure, round robin among QPs, IB sizes, UC, local errors.
#include <doctest/doctest.h>

#include <cstring>

#include "tests/unit/nic/test_wire.h"

using namespace rdmasim;
using namespace rdmasim::nic;
using namespace rdmasim::nic::test;

namespace {

SendWr write_wr(std::vector<uint8_t>& src, MrKeys ks, std::vector<uint8_t>& dst, uint32_t rkey,
                uint32_t off = 0, uint32_t len = 0) {
  SendWr wr;
  wr.opcode = WrOpcode::RdmaWrite;
  wr.send_flags = kSendSignaled;
  wr.sgl = {sge_of(src, ks.lkey, off, len)};
  wr.remote_addr = reinterpret_cast<uint64_t>(dst.data()) + off;
  wr.rkey = rkey;
  return wr;
}

}  // namespace

TEST_CASE("tx: nothing leaves while the port is not ready; the ready callback resumes") {
  Pair p;
  auto src = pattern(3000, 1);
  std::vector<uint8_t> dst(3000, 0);
  auto ks = p.reg(p.a, src);
  auto kd = p.reg(p.b, dst);
  p.a.wire->open = false;
  REQUIRE(p.a.hca->post_send(p.a.qpn, write_wr(src, ks, dst, kd.rkey)) == 0);
  p.engine.run_until(us(50));
  CHECK(p.a.wire->sent.empty());
  p.engine.schedule_at(us(60), [&] { p.a.wire->reopen(); });
  p.engine.run();
  CHECK(dst == src);
  REQUIRE(p.a.wcs.size() == 1);
  // Sent at 60 us, 1 us each way plus rx_latency (100 ns) at each end: after 62 us.
  CHECK(p.a.wcs[0].at >= us(62));
}

TEST_CASE("tx: two QPs with work share the port packet by packet (round robin)") {
  QpParams q;
  q.mtu = 1;  // 256
  Pair p(q);
  const uint32_t a2 = p.add_qp(p.a, q), b2 = p.add_qp(p.b, q);
  p.connect_qp(p.a, a2, b2, Pair::kIpB, q);
  p.connect_qp(p.b, b2, a2, Pair::kIpA, q);
  auto src = pattern(2048, 1);
  std::vector<uint8_t> dst(2048, 0);
  auto ks = p.reg(p.a, src);
  auto kd = p.reg(p.b, dst);
  p.a.wire->open = false;  // both QPs queue up before the port opens
  REQUIRE(p.a.hca->post_send(p.a.qpn, write_wr(src, ks, dst, kd.rkey, 0, 1024)) == 0);
  REQUIRE(p.a.hca->post_send(a2, write_wr(src, ks, dst, kd.rkey, 1024, 1024)) == 0);
  p.engine.schedule_at(us(1), [&] { p.a.wire->reopen(); });
  p.engine.run();
  CHECK(dst == src);
  // 1024 / 256 = 4 packets each, alternating between the two connections.
  REQUIRE(p.a.wire->dest_qps.size() == 8);
  for (size_t i = 0; i < 8; ++i) CHECK(p.a.wire->dest_qps[i] == (i % 2 == 0 ? p.b.qpn : b2));
}

TEST_CASE("packet: InfiniBand sizes of a 1000 B RDMA WRITE ONLY and its ACK") {
  Pair p({}, us(1), net::LinkLayer::InfiniBand);
  auto src = pattern(1000, 1);
  std::vector<uint8_t> dst(1000, 0);
  auto ks = p.reg(p.a, src);
  auto kd = p.reg(p.b, dst);
  std::vector<nic::RdmaPacket> a_out, b_out;
  p.a.wire->drop = [&](const nic::RdmaPacket& pk) { a_out.push_back(pk); return false; };
  p.b.wire->drop = [&](const nic::RdmaPacket& pk) { b_out.push_back(pk); return false; };
  REQUIRE(p.a.hca->post_send(p.a.qpn, write_wr(src, ks, dst, kd.rkey)) == 0);
  p.engine.run();
  CHECK(dst == src);
  REQUIRE(a_out.size() == 1);
  CHECK(a_out[0].dst == 2);  // the dlid
  CHECK(a_out[0].link_layer == net::LinkLayer::InfiniBand);
  // LRH 8 + BTH 12 + RETH 16 + 1000 + ICRC 4 + VCRC 2 = 1042 (no preamble/IFG on IB).
  CHECK(a_out[0].wire_bytes == 1042);
  REQUIRE(b_out.size() == 1);
  // ACK: LRH 8 + BTH 12 + AETH 4 + ICRC 4 + VCRC 2 = 30.
  CHECK(b_out[0].wire_bytes == 30);
  CHECK(b_out[0].bth.opcode == 0x11);
}

TEST_CASE("uc: a WRITE completes on transmit; a lost packet drops the whole message") {
  QpParams q;
  q.type = QpType::UC;
  q.mtu = 1;  // 256
  Pair p(q);
  auto src = pattern(1024, 1);
  std::vector<uint8_t> dst(1024, 0);
  auto ks = p.reg(p.a, src);
  auto kd = p.reg(p.b, dst);
  std::vector<uint8_t> imm_dst(16, 0);
  auto ki = p.reg(p.b, imm_dst);
  RecvWr rr;
  rr.sgl = {sge_of(imm_dst, ki.lkey)};
  REQUIRE(p.b.hca->post_recv(p.b.qpn, rr) == 0);
  int n = 0;
  p.a.wire->drop = [&](const nic::RdmaPacket&) { return ++n == 2; };  // 2nd of 4 packets
  SendWr wr = write_wr(src, ks, dst, kd.rkey);
  wr.opcode = WrOpcode::RdmaWriteWithImm;
  REQUIRE(p.a.hca->post_send(p.a.qpn, wr) == 0);
  p.engine.run();
  REQUIRE(p.a.wcs.size() == 1);
  CHECK(p.a.wcs[0].wc.status == WcStatus::Success);  // UC has no ACKs
  CHECK(p.b.wcs.empty());  // the message was dropped: no receive completion
  // IBTA 9.7: UC has no acknowledgements; the responder never sends an ACK or NAK.
  CHECK(p.b.hca->counters().acks_sent == 0);
  CHECK(p.b.hca->counters().naks_sent == 0);
  CHECK(p.b.hca->counters().rnr_naks_sent == 0);
  CHECK(p.b.hca->counters().tx_packets == 0);
  // Packet 1 was placed before the loss; packets 3-4 were discarded.
  CHECK(std::memcmp(dst.data(), src.data(), 256) == 0);
  CHECK(dst[600] == 0);
  // The next message goes through.
  REQUIRE(p.a.hca->post_send(p.a.qpn, wr) == 0);
  p.engine.run();
  CHECK(dst == src);
  REQUIRE(p.b.wcs.size() == 1);
  CHECK(p.b.wcs[0].wc.opcode == WcOpcode::RecvRdmaWithImm);
  CHECK(p.b.hca->counters().acks_sent == 0);  // 8 packets received, none acknowledged
  CHECK(p.b.hca->counters().tx_packets == 0);
}

TEST_CASE("rc: PSNs wrap at 2^24: a 40-packet WRITE from PSN 0xfffff0 completes without NAKs") {
  // IBTA 9.7.1: PSNs are 24 bits and wrap modulo 2^24. The WRITE's PSNs run 0xfffff0 ..
  // 0xffffff, 0x000000 .. 0x000017 (40 packets at MTU 1024), a second WRITE follows at
  // 0x000018. Nothing is lost, so a correct responder sees every PSN in sequence: no NAK,
  // no duplicate, no retransmission, no timeout.
  QpParams q;
  q.mtu = 3;  // 1024
  q.psn = 0xfffff0;
  Pair p(q);
  auto src = pattern(40 * 1024, 6);
  std::vector<uint8_t> dst(40 * 1024, 0);
  auto ks = p.reg(p.a, src);
  auto kd = p.reg(p.b, dst);
  SendWr wr = write_wr(src, ks, dst, kd.rkey);
  REQUIRE(p.a.hca->post_send(p.a.qpn, wr) == 0);
  p.engine.run();
  REQUIRE(p.a.wcs.size() == 1);
  CHECK(p.a.wcs[0].wc.status == WcStatus::Success);
  CHECK(dst == src);
  const HcaCounters& ca = p.a.hca->counters();
  const HcaCounters& cb = p.b.hca->counters();
  CHECK(cb.naks_sent == 0);
  CHECK(cb.out_of_sequence == 0);
  CHECK(cb.duplicates == 0);
  CHECK(ca.retransmitted_packets == 0);
  CHECK(ca.timeouts == 0);
  CHECK(ca.tx_packets == 40);
  // ACK coalescing every ack_every = 16 packets and at the end: after packets 16, 32, 40
  // (the first at PSN 0xfffff0 + 15 = 0xffffff, the other two past the wrap).
  CHECK(cb.acks_sent == 3);
  // The PSN after the wrap carries on: the next message starts at 0x000018.
  std::vector<uint8_t> seen;
  p.a.wire->drop = [&](const nic::RdmaPacket& pk) {
    seen.push_back(0);
    CHECK(pk.bth.psn == 0x000018);
    return false;
  };
  wr.sgl = {sge_of(src, ks.lkey, 0, 100)};
  REQUIRE(p.a.hca->post_send(p.a.qpn, wr) == 0);
  p.engine.run();
  CHECK(seen.size() == 1);
  REQUIRE(p.a.wcs.size() == 2);
  CHECK(p.a.wcs[1].wc.status == WcStatus::Success);
  CHECK(cb.naks_sent == 0);
}

TEST_CASE("rc: a bad lkey fails locally with LOC_PROT_ERR; a short receive is LOC_LEN_ERR") {
  Pair p;
  auto src = pattern(100, 1);
  std::vector<uint8_t> dst(100, 0);
  auto ks = p.reg(p.a, src);
  auto kd = p.reg(p.b, dst);
  MrKeys bad = ks;
  bad.lkey += 1;
  REQUIRE(p.a.hca->post_send(p.a.qpn, write_wr(src, bad, dst, kd.rkey)) == 0);
  p.engine.run();
  REQUIRE(p.a.wcs.size() == 1);
  CHECK(p.a.wcs[0].wc.status == WcStatus::LocProtErr);
  CHECK(p.a.hca->counters().tx_packets == 0);  // never reached the wire

  Pair q;
  auto s2 = pattern(100, 1);
  std::vector<uint8_t> d2(50, 0);
  auto k2 = q.reg(q.a, s2);
  auto kd2 = q.reg(q.b, d2);
  RecvWr rr;
  rr.sgl = {sge_of(d2, kd2.lkey)};  // 50 B for a 100 B message
  REQUIRE(q.b.hca->post_recv(q.b.qpn, rr) == 0);
  SendWr wr;
  wr.opcode = WrOpcode::Send;
  wr.send_flags = kSendSignaled;
  wr.sgl = {sge_of(s2, k2.lkey)};
  REQUIRE(q.a.hca->post_send(q.a.qpn, wr) == 0);
  q.engine.run();
  REQUIRE(q.b.wcs.size() == 1);
  CHECK(q.b.wcs[0].wc.status == WcStatus::LocLenErr);
  REQUIRE(q.a.wcs.size() == 1);
  CHECK(q.a.wcs[0].wc.status == WcStatus::RemInvReqErr);  // NAK invalid request
}

TEST_CASE("sqd: a started message finishes, the next WQE waits, SQ_DRAINED fires; RTS resumes") {
  QpParams q;
  q.mtu = 1;  // 256
  Pair p(q);
  auto src = pattern(2048, 1);
  std::vector<uint8_t> dst(2048, 0);
  auto ks = p.reg(p.a, src);
  auto kd = p.reg(p.b, dst);
  std::vector<AsyncEvent> events;
  p.a.hca->set_async_sink([&](const AsyncEvent& e) { events.push_back(e); });
  p.a.wire->open = false;
  REQUIRE(p.a.hca->post_send(p.a.qpn, write_wr(src, ks, dst, kd.rkey, 0, 1024)) == 0);
  REQUIRE(p.a.hca->post_send(p.a.qpn, write_wr(src, ks, dst, kd.rkey, 1024, 1024)) == 0);
  p.engine.run_until(us(1));
  // Let exactly one packet of the first WRITE out, then drain.
  p.a.wire->open = true;
  p.a.wire->drop = [&](const nic::RdmaPacket&) { p.a.wire->open = false; return false; };
  p.a.wire->reopen();
  p.a.wire->drop = nullptr;
  QpAttr sqd;
  sqd.qp_state = QpState::Sqd;
  sqd.en_sqd_async_notify = true;
  REQUIRE(p.a.hca->modify_qp(p.a.qpn, sqd, kQpState | kQpEnSqdAsyncNotify) == 0);
  p.a.wire->reopen();
  p.engine.run();
  CHECK(std::memcmp(dst.data(), src.data(), 1024) == 0);  // the started WRITE completed
  CHECK(dst[1024] == 0);                                   // the second never started
  REQUIRE(p.a.wcs.size() == 1);
  REQUIRE(events.size() == 1);
  CHECK(events[0].type == AsyncEventType::SqDrained);
  QpAttr rts;
  rts.qp_state = QpState::Rts;
  REQUIRE(p.a.hca->modify_qp(p.a.qpn, rts, kQpState) == 0);
  p.engine.run();
  CHECK(dst == src);
  CHECK(p.a.wcs.size() == 2);
}
