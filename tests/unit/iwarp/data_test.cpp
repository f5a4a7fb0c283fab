// RDMA over the iWARP model: data integrity over a lossy link, completions, and the verbs
// that iWARP does not have.
#include <doctest/doctest.h>

#include <algorithm>

#include "tests/unit/nic/test_wire.h"

namespace rdmasim::nic::test {
namespace {

SendWr rdma_wr(WrOpcode op, uint64_t id, std::vector<uint8_t>& local, uint32_t lkey,
               std::vector<uint8_t>& remote, uint32_t rkey) {
  SendWr w;
  w.wr_id = id;
  w.opcode = op;
  w.send_flags = kSendSignaled;
  w.sgl = {sge_of(local, lkey)};
  w.remote_addr = reinterpret_cast<uint64_t>(remote.data());
  w.rkey = rkey;
  return w;
}

QpParams iwarp_qp() {
  QpParams q;
  q.mtu = 5;  // 4096: clamped to what one FPDU of a 1448-byte MSS carries (1424)
  return q;
}

// A second QP on a, taken to INIT; returns it and, in `at`, the RTR attributes toward b's
// QP (no peer address yet: the caller sets the dgid); kRtrMask is RC's RTR mask.
constexpr uint32_t kRtrMask =
    kQpState | kQpAv | kQpPathMtu | kQpDestQpn | kQpRqPsn | kQpMaxDestRdAtomic | kQpMinRnrTimer;
uint32_t extra_qp_at_init(Pair& p, QpAttr& at) {
  const uint32_t qpn = p.add_qp(p.a, iwarp_qp());
  at.qp_state = QpState::Init;
  at.port_num = 1;
  at.qp_access_flags = kAccessRemoteWrite;
  REQUIRE(p.a.hca->modify_qp(qpn, at, kQpState | kQpPkeyIndex | kQpPort | kQpAccessFlags) == 0);
  at.qp_state = QpState::Rtr;
  at.path_mtu = 3;
  at.dest_qp_num = p.b.qpn;
  at.max_dest_rd_atomic = 1;
  return qpn;
}

}  // namespace

TEST_CASE("iwarp: WRITE, READ and SEND arrive byte for byte over a link losing 1 in 31 segments") {
  Pair p(iwarp_qp(), us(1), net::LinkLayer::IWarp);
  constexpr size_t kLen = 200000;  // 141 FPDUs of 1424 bytes: well past the initial window
  auto wsrc = pattern(kLen, 1), rsrc = pattern(kLen, 2), ssrc = pattern(kLen, 3);
  std::vector<uint8_t> wdst(kLen, 0), rdst(kLen, 0), sdst(kLen, 0);
  auto kws = p.reg(p.a, wsrc), kwd = p.reg(p.b, wdst);
  auto krs = p.reg(p.b, rsrc), krd = p.reg(p.a, rdst);
  auto kss = p.reg(p.a, ssrc), ksd = p.reg(p.b, sdst);
  // Every 31st segment in each direction is lost (3.2%): data, ACKs and READ responses alike.
  int na = 0, nb = 0;
  p.a.wire->drop = [&](const nic::RdmaPacket&) { return ++na % 31 == 0; };
  p.b.wire->drop = [&](const nic::RdmaPacket&) { return ++nb % 31 == 0; };
  RecvWr r;
  r.wr_id = 30;
  r.sgl = {sge_of(sdst, ksd.lkey)};
  REQUIRE(p.b.hca->post_recv(p.b.qpn, r) == 0);
  REQUIRE(p.a.hca->post_send(p.a.qpn, rdma_wr(WrOpcode::RdmaWrite, 10, wsrc, kws.lkey, wdst, kwd.rkey)) == 0);
  REQUIRE(p.a.hca->post_send(p.a.qpn, rdma_wr(WrOpcode::RdmaRead, 20, rdst, krd.lkey, rsrc, krs.rkey)) == 0);
  SendWr s = rdma_wr(WrOpcode::Send, 30, ssrc, kss.lkey, ssrc, 0);
  REQUIRE(p.a.hca->post_send(p.a.qpn, s) == 0);
  p.engine.run_until(ms(200));
  CHECK(wdst == wsrc);
  CHECK(rdst == rsrc);
  CHECK(sdst == ssrc);
  REQUIRE(p.a.wcs.size() == 3);
  CHECK(p.a.wcs[0].wc.wr_id == 10);
  CHECK(p.a.wcs[1].wc.wr_id == 20);
  CHECK(p.a.wcs[2].wc.wr_id == 30);
  for (const auto& c : p.a.wcs) CHECK(c.wc.status == WcStatus::Success);
  CHECK(p.a.wcs[1].wc.opcode == WcOpcode::RdmaRead);
  CHECK(p.a.wcs[1].wc.byte_len == kLen);
  REQUIRE(p.b.wcs.size() == 1);
  CHECK(p.b.wcs[0].wc.status == WcStatus::Success);
  CHECK(p.b.wcs[0].wc.byte_len == kLen);
  // TCP recovered the losses (the RC layer did not: no ACK timer, no NAKs on iWARP).
  CHECK(p.a.hca->counters().naks_sent == 0);
  CHECK(p.b.hca->counters().naks_sent == 0);
  // Segments were resent (by TCP: iWARP counts its retransmissions there).
  CHECK(p.a.hca->counters().retransmitted_packets > 0);
  CHECK(p.b.hca->counters().retransmitted_packets > 0);
}

TEST_CASE("iwarp: segments are sized as Ethernet/IPv4/TCP/MPA/DDP/RDMAP frames") {
  Pair p(iwarp_qp(), us(1), net::LinkLayer::IWarp);
  std::vector<nic::RdmaPacket> seen;
  p.a.wire->drop = [&](const nic::RdmaPacket& pkt) {
    seen.push_back(pkt);
    return false;
  };
  auto src = pattern(3000, 1);
  std::vector<uint8_t> dst(3000, 0);
  auto ks = p.reg(p.a, src), kd = p.reg(p.b, dst);
  REQUIRE(p.a.hca->post_send(p.a.qpn, rdma_wr(WrOpcode::RdmaWrite, 1, src, ks.lkey, dst, kd.rkey)) == 0);
  p.engine.run_until(ms(10));
  CHECK(dst == src);
  // 3 WRITE FPDUs: 1424 + 1424 + 152 bytes of payload.
  REQUIRE(seen.size() >= 3);
  const nic::RdmaPacket& w = seen[0];
  CHECK(w.fpdu.rdmap_opcode == 0);  // RDMA Write
  CHECK(w.fpdu.tagged);
  CHECK_FALSE(w.fpdu.last);
  CHECK(w.fpdu.stag == kd.rkey);
  CHECK(w.fpdu.to == reinterpret_cast<uint64_t>(dst.data()));
  // FPDU: MPA length 2 + tagged DDP/RDMAP 14 + 1424 payload + pad + CRC 4:
  // 2 + 14 + 1424 = 1440 is a multiple of 4, so no pad: 1444 bytes.
  CHECK(w.tcp.len == 2 + 14 + 1424 + 4);
  // Frame: Ethernet 14 + IPv4 20 + TCP 32 + 1444 + FCS 4 = 1514; wire + 8 preamble + 12 gap.
  CHECK(w.frame_bytes == 14 + 20 + 32 + 1444 + 4);
  CHECK(w.wire_bytes == w.frame_bytes + 20);
  CHECK(seen[1].fpdu.to == w.fpdu.to + 1424);
  CHECK(seen[2].fpdu.last);
  // Last FPDU: 152 payload; 2 + 14 + 152 = 168, no pad: 172 bytes.
  CHECK(seen[2].tcp.len == 2 + 14 + 152 + 4);
  CHECK(seen[2].tcp.seq == seen[1].tcp.seq + seen[1].tcp.len);  // a byte stream
}

TEST_CASE("iwarp: no UD or UC QPs, no immediate data, and a SEND without a receive terminates") {
  Pair p(iwarp_qp(), us(1), net::LinkLayer::IWarp);
  QpInitAttr init;
  init.pd = p.a.pd;
  init.send_cq = init.recv_cq = p.a.cq;
  init.caps = {4, 4, 1, 1, 0};
  uint32_t qpn = 0;
  init.type = QpType::UD;
  CHECK(p.a.hca->create_qp(init, &qpn) == EOPNOTSUPP);
  init.type = QpType::UC;
  CHECK(p.a.hca->create_qp(init, &qpn) == EOPNOTSUPP);
  auto src = pattern(64, 1);
  std::vector<uint8_t> dst(64, 0);
  auto ks = p.reg(p.a, src), kd = p.reg(p.b, dst);
  CHECK(p.a.hca->post_send(p.a.qpn, rdma_wr(WrOpcode::RdmaWriteWithImm, 1, src, ks.lkey, dst, kd.rkey)) == EINVAL);
  CHECK(p.a.hca->post_send(p.a.qpn, rdma_wr(WrOpcode::SendWithImm, 1, src, ks.lkey, dst, 0)) == EINVAL);
  // No receive posted at b: no RNR NAK on iWARP; the responder terminates the stream and
  // both QPs end in ERR.
  REQUIRE(p.a.hca->post_send(p.a.qpn, rdma_wr(WrOpcode::Send, 2, src, ks.lkey, dst, 0)) == 0);
  REQUIRE(p.a.hca->post_send(p.a.qpn, rdma_wr(WrOpcode::Send, 3, src, ks.lkey, dst, 0)) == 0);
  p.engine.run_until(ms(10));
  QpAttr qa;
  REQUIRE(p.b.hca->query_qp(p.b.qpn, &qa, nullptr) == 0);
  CHECK(qa.qp_state == QpState::Err);
  REQUIRE(p.a.hca->query_qp(p.a.qpn, &qa, nullptr) == 0);
  CHECK(qa.qp_state == QpState::Err);
  CHECK(p.b.hca->counters().rnr_naks_sent == 0);
  CHECK(p.b.hca->counters().naks_sent == 1);  // the Terminate
  // Each send completes once: success if TCP acknowledged it before the Terminate came,
  // otherwise with the error or a flush. The second can never succeed after the first failed.
  REQUIRE(p.a.wcs.size() == 2);
  CHECK(p.a.wcs[1].wc.status != WcStatus::Success);
}

TEST_CASE("iwarp: a peer that never answers fails the WQE with RETRY_EXC_ERR after the RTO backoffs") {
  Pair p(iwarp_qp(), us(1), net::LinkLayer::IWarp);
  p.a.wire->drop = [](const nic::RdmaPacket&) { return true; };
  auto src = pattern(64, 1);
  std::vector<uint8_t> dst(64, 0);
  auto ks = p.reg(p.a, src), kd = p.reg(p.b, dst);
  REQUIRE(p.a.hca->post_send(p.a.qpn, rdma_wr(WrOpcode::RdmaWrite, 1, src, ks.lkey, dst, kd.rkey)) == 0);
  p.engine.run_until(ms(2000));
  REQUIRE(p.a.wcs.size() == 1);
  CHECK(p.a.wcs[0].wc.status == WcStatus::RetryExcErr);
  // Default TcpConfig: initial RTO 1 ms doubling, max_retries 8: 1 + 2 + ... + 256 = 511 ms
  // of backoff (9 expiries) before the connection gives up.
  CHECK(p.a.wcs[0].at >= ms(511));
  CHECK(p.a.wcs[0].at < ms(512));
  CHECK(p.a.hca->counters().timeouts == 9);
}

TEST_CASE("iwarp: RTR needs a peer address: a MAC GID or a QPN that names a host") {
  Pair p(iwarp_qp(), us(1), net::LinkLayer::IWarp);
  QpAttr at;
  const uint32_t qpn = extra_qp_at_init(p, at);
  at.rq_psn = 1;
  at.ah_attr.is_global = false;  // no GRH, dgid all zero: as ibv_rc_pingpong sets it on iWARP
  const uint32_t mask = kRtrMask;
  // This HCA has no qpn_base (QPNs do not name hosts): nothing gives the peer.
  CHECK(p.a.hca->modify_qp(qpn, at, mask) == EINVAL);
  QpAttr q;
  QpInitAttr qi;
  REQUIRE(p.a.hca->query_qp(qpn, &q, &qi) == 0);
  CHECK(q.qp_state == QpState::Init);  // the refused modify changed nothing
  // With the peer's MAC GID the same modify succeeds.
  at.ah_attr.dgid = iwarp_gid_of(Pair::kIpB);
  CHECK(p.a.hca->modify_qp(qpn, at, mask) == 0);
}

TEST_CASE("iwarp: the connection forms when the initiator reaches RTS, not at RTR") {
  // The rule (no rdma_cm yet): a (10.0.0.1, the lower address, so the initiator)
  // opens the connection with its MPA Request when its QP reaches RTS; in RTR it sends
  // nothing. A second QP on a, pointed at b's QP, shows both steps.
  Pair p(iwarp_qp(), us(1), net::LinkLayer::IWarp);
  std::vector<nic::RdmaPacket> out;  // what a sends from here on
  p.a.wire->drop = [&](const nic::RdmaPacket& pkt) {
    out.push_back(pkt);
    return false;
  };
  QpAttr at;
  const uint32_t qpn = extra_qp_at_init(p, at);
  at.ah_attr.dgid = iwarp_gid_of(Pair::kIpB);
  REQUIRE(p.a.hca->modify_qp(qpn, at, kRtrMask) == 0);
  CHECK(out.empty());  // RTR: nothing on the wire
  at.qp_state = QpState::Rts;
  at.timeout = 14;
  at.retry_cnt = 7;
  at.rnr_retry = 7;
  at.max_rd_atomic = 1;
  REQUIRE(p.a.hca->modify_qp(qpn, at, kQpState | kQpSqPsn | kQpTimeout | kQpRetryCnt | kQpRnrRetry |
                                          kQpMaxQpRdAtomic) == 0);
  REQUIRE(out.size() == 1);  // RTS: the MPA Request, to b's QP
  CHECK(out[0].fpdu.mpa_request);
  CHECK(out[0].tcp.len == 20);
}

TEST_CASE("iwarp: the MPA Reply waits for the peer's Request, so captures see Request first") {
  // Pair takes a (10.0.0.1, the lower address: the initiator) to RTS, then b, before any
  // packet has arrived: a sends its Request at its RTS, b holds its Reply back.
  Pair p(iwarp_qp(), us(1), net::LinkLayer::IWarp);
  CHECK(p.a.wire->sent.size() == 1);
  CHECK(p.b.wire->sent.empty());
  std::vector<std::pair<Time, nic::RdmaPacket>> from_b;
  p.b.wire->drop = [&](const nic::RdmaPacket& pkt) {
    from_b.emplace_back(p.engine.now(), pkt);
    return false;
  };
  p.engine.run_until(us(10));
  REQUIRE(from_b.size() == 1);
  CHECK(from_b[0].second.fpdu.mpa_reply);
  CHECK(from_b[0].second.tcp.len == 20);     // key 16, flags, revision, PD length 2
  CHECK(from_b[0].first >= us(1));           // after the Request crossed the 1 us wire
  // The stream goes on after the Reply's 20 bytes.
  auto src = pattern(100, 1);
  std::vector<uint8_t> dst(100, 0);
  auto ks = p.reg(p.b, src), kd = p.reg(p.a, dst);
  REQUIRE(p.b.hca->post_send(p.b.qpn, rdma_wr(WrOpcode::RdmaWrite, 1, src, ks.lkey, dst, kd.rkey)) == 0);
  p.engine.run_until(us(50));
  CHECK(dst == src);
  REQUIRE(from_b.size() >= 2);
  CHECK(from_b[1].second.tcp.seq == from_b[0].second.tcp.seq + 20);
}


TEST_CASE("iwarp: a READ whose sink MR lacks REMOTE_WRITE fails with LOC_ACCESS_ERR, as on iw_cxgb4") {
  // RFC 5040: the Read Request names the requester's sink STag and the responder writes it
  // with tagged DDP messages, so the sink must be registered with remote write on iWARP
  // (IB needs only LOCAL_WRITE). iw_cxgb4 fails the READ_RESP placement and libcxgb4
  // completes the READ with IBV_WC_LOC_ACCESS_ERR (T4_ERR_ACCESS); see iwarp_sink_refused.
  Pair p(iwarp_qp(), us(1), net::LinkLayer::IWarp);
  std::vector<AsyncEvent> events;
  p.a.hca->set_async_sink([&](const AsyncEvent& ev) { events.push_back(ev); });
  auto src = pattern(4000, 5);  // 3 response FPDUs: 1424 + 1424 + 1152
  std::vector<uint8_t> good(4000, 0), bad(4000, 0);
  auto ks = p.reg(p.b, src);
  auto kgood = p.reg(p.a, good, kAccessLocalWrite | kAccessRemoteWrite);
  auto kbad = p.reg(p.a, bad, kAccessLocalWrite);  // enough on IB, not on iWARP
  REQUIRE(p.a.hca->post_send(p.a.qpn, rdma_wr(WrOpcode::RdmaRead, 1, good, kgood.lkey, src, ks.rkey)) == 0);
  p.engine.run_until(ms(1));
  REQUIRE(p.a.wcs.size() == 1);
  CHECK(p.a.wcs[0].wc.status == WcStatus::Success);
  CHECK(good == src);
  REQUIRE(p.a.hca->post_send(p.a.qpn, rdma_wr(WrOpcode::RdmaRead, 2, bad, kbad.lkey, src, ks.rkey)) == 0);
  REQUIRE(p.a.hca->post_send(p.a.qpn, rdma_wr(WrOpcode::RdmaRead, 3, good, kgood.lkey, src, ks.rkey)) == 0);
  p.engine.run_until(ms(2));
  REQUIRE(p.a.wcs.size() == 3);
  CHECK(p.a.wcs[1].wc.wr_id == 2);
  CHECK(p.a.wcs[1].wc.status == WcStatus::LocAccessErr);
  CHECK(p.a.wcs[2].wc.wr_id == 3);
  CHECK(p.a.wcs[2].wc.status == WcStatus::WrFlushErr);  // the QP went to ERR
  CHECK(std::all_of(bad.begin(), bad.end(), [](uint8_t v) { return v == 0; }));  // nothing placed
  CHECK(p.state(p.a) == QpState::Err);
  REQUIRE(events.size() == 1);
  CHECK(events[0].type == AsyncEventType::QpAccessErr);
  CHECK(events[0].qpn == p.a.qpn);
  // The requester terminated the stream: one Terminate from a, and b's QP follows to ERR.
  CHECK(p.a.hca->counters().naks_sent == 1);
  CHECK(p.state(p.b) == QpState::Err);
}

}  // namespace rdmasim::nic::test
