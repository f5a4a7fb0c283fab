// XRC in the HCA model (IBTA annex A14): an initiator on HCA a sends to a target on HCA b,
// whose requests name XRC SRQs of the target's domain.
#include <doctest/doctest.h>

#include "tests/unit/nic/test_wire.h"

namespace rdmasim::nic::test {
namespace {

constexpr uint32_t kRemote = kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic;

// The XRC objects on the pair: a domain with two SRQs (each with its CQ) on b, a target in
// the domain on b and an initiator on a, connected.
struct Xrc {
  Pair p;
  uint32_t xrcd = 0, cq1 = 0, cq2 = 0, srq1 = 0, srq2 = 0, ini = 0, tgt = 0;
  std::vector<Completion> on1, on2;
  std::vector<uint32_t> wire_a;  // wire bytes of what a sent

  explicit Xrc(net::LinkLayer ll = net::LinkLayer::RoCEv2) : p(QpParams{}, us(1), ll) {
    Hca& b = *p.b.hca;
    REQUIRE(b.alloc_xrcd(&xrcd) == 0);
    REQUIRE(b.create_cq(64, [this](const Completion& c) { on1.push_back(c); }, &cq1) == 0);
    REQUIRE(b.create_cq(64, [this](const Completion& c) { on2.push_back(c); }, &cq2) == 0);
    REQUIRE(b.create_xrc_srq(p.b.pd, xrcd, cq1, SrqAttr{16, 1, 0}, &srq1) == 0);
    REQUIRE(b.create_xrc_srq(p.b.pd, xrcd, cq2, SrqAttr{16, 1, 0}, &srq2) == 0);
    QpInitAttr t;
    t.type = QpType::XrcRecv;
    t.xrcd = xrcd;
    REQUIRE(b.create_qp(t, &tgt) == 0);
    QpInitAttr i;
    i.type = QpType::XrcSend;
    i.pd = p.a.pd;
    i.send_cq = p.a.cq;
    i.caps = {16, 0, 1, 0, 0};
    REQUIRE(p.a.hca->create_qp(i, &ini) == 0);
    REQUIRE(to_rtr(b, tgt, ini, p.addr_a, true) == 0);
    REQUIRE(to_rtr(*p.a.hca, ini, tgt, p.addr_b, false) == 0);
    QpAttr rts;
    rts.qp_state = QpState::Rts;
    rts.sq_psn = 0;
    rts.timeout = 14;
    rts.retry_cnt = rts.rnr_retry = 7;
    rts.max_rd_atomic = 4;
    REQUIRE(p.a.hca->modify_qp(ini, rts, kQpState | kQpSqPsn | kQpTimeout | kQpRetryCnt | kQpRnrRetry |
                                            kQpMaxQpRdAtomic) == 0);
    p.a.wire->drop = [this](const RdmaPacket& pkt) {
      wire_a.push_back(pkt.wire_bytes);
      return false;
    };
  }

  // RESET -> INIT -> RTR with the attributes the type requires (the target: RC's responder
  // ones, the initiator: no MAX_DEST_RD_ATOMIC or MIN_RNR_TIMER).
  int to_rtr(Hca& h, uint32_t qpn, uint32_t peer, uint32_t peer_addr, bool target) {
    QpAttr at;
    at.qp_state = QpState::Init;
    at.port_num = 1;
    at.qp_access_flags = kRemote;
    if (int rc = h.modify_qp(qpn, at, kQpState | kQpPkeyIndex | kQpPort | kQpAccessFlags)) return rc;
    at.qp_state = QpState::Rtr;
    at.path_mtu = 5;  // 4096
    at.dest_qp_num = peer;
    at.rq_psn = 0;
    at.ah_attr.is_global = p.link_layer != net::LinkLayer::InfiniBand;
    at.ah_attr.dlid = static_cast<uint16_t>(peer_addr);
    at.ah_attr.dgid = gid_of(peer_addr);
    at.max_dest_rd_atomic = 4;
    at.min_rnr_timer = 1;
    uint32_t mask = kQpState | kQpAv | kQpPathMtu | kQpDestQpn | kQpRqPsn;
    if (target) mask |= kQpMaxDestRdAtomic | kQpMinRnrTimer;
    return h.modify_qp(qpn, at, mask);
  }

  SendWr wr(WrOpcode op, std::vector<uint8_t>& buf, uint32_t lkey, uint32_t len, uint32_t srqn) {
    SendWr w;
    w.wr_id = 7;
    w.opcode = op;
    w.send_flags = kSendSignaled;
    w.sgl = {sge_of(buf, lkey, 0, len)};
    w.xrc_srqn = srqn;
    return w;
  }

  // A receive of `dst` (wr_id `id`) on b's SRQ `srqn`, then a SEND of `len` bytes of `src`
  // from the initiator naming that SRQ.
  void send_to(uint32_t srqn, std::vector<uint8_t>& src, uint32_t lkey, uint32_t len,
               std::vector<uint8_t>& dst, uint32_t dst_lkey, uint64_t id) {
    RecvWr r;
    r.wr_id = id;
    r.sgl = {sge_of(dst, dst_lkey)};
    REQUIRE(p.b.hca->post_srq_recv(srqn, r) == 0);
    REQUIRE(p.a.hca->post_send(ini, wr(WrOpcode::Send, src, lkey, len, srqn)) == 0);
  }
};

TEST_CASE("xrc: requests carry XRC opcodes and a 4-byte XRCETH; the receive goes to the SRQ named") {
  Xrc x;
  std::vector<uint8_t> src = pattern(6000, 3), dst(8192, 0);
  const MrKeys ks = x.p.reg(x.p.a, src), kd = x.p.reg(x.p.b, dst);
  x.send_to(x.srq2, src, ks.lkey, 6000, dst, kd.lkey, 42);
  x.p.engine.run();
  // 6000 B at MTU 4096: XRC SEND First (0xa0) and SEND Last (0xa2); b answers with XRC
  // Acknowledges (0xb1).
  CHECK(x.p.a.wire->sent == std::vector<uint8_t>{0xa0, 0xa2});
  REQUIRE(!x.p.b.wire->sent.empty());
  for (uint8_t op : x.p.b.wire->sent) CHECK(op == 0xb1);
  REQUIRE(x.on2.size() == 1);
  CHECK(x.on1.empty());
  CHECK(x.on2[0].status == WcStatus::Success);
  CHECK(x.on2[0].wr_id == 42);
  CHECK(x.on2[0].byte_len == 6000);
  CHECK(x.on2[0].qp_num == x.tgt);  // the target's number, as mlx5's CQE has it
  CHECK(x.on2[0].srqn == x.srq2);
  CHECK(std::equal(src.begin(), src.end(), dst.begin()));
  REQUIRE(x.p.a.wcs.size() == 1);
  CHECK(x.p.a.wcs[0].wc.status == WcStatus::Success);

  // The same message on the pair's RC QPs: each packet is 4 bytes (the XRCETH) shorter.
  std::vector<uint32_t> xrc_bytes = x.wire_a;
  x.wire_a.clear();
  RecvWr r;
  r.wr_id = 43;
  r.sgl = {sge_of(dst, kd.lkey)};
  REQUIRE(x.p.b.hca->post_recv(x.p.b.qpn, r) == 0);
  SendWr rc = x.wr(WrOpcode::Send, src, ks.lkey, 6000, 0);
  REQUIRE(x.p.a.hca->post_send(x.p.a.qpn, rc) == 0);
  x.p.engine.run();
  REQUIRE(x.wire_a.size() == 2);
  REQUIRE(xrc_bytes.size() == 2);
  CHECK(xrc_bytes[0] == x.wire_a[0] + net::ibta::kXrcethBytes);
  CHECK(xrc_bytes[1] == x.wire_a[1] + net::ibta::kXrcethBytes);
}

TEST_CASE("xrc: a request's memory access is checked in the PD of the SRQ it names") {
  Xrc x;
  std::vector<uint8_t> src = pattern(256, 5), dst(256, 0);
  const MrKeys ks = x.p.reg(x.p.a, src);
  uint32_t other_pd = 0;
  REQUIRE(x.p.b.hca->alloc_pd(&other_pd) == 0);
  MrKeys in_pd{}, in_other{};
  REQUIRE(x.p.b.hca->reg_mr(x.p.b.pd, &x.p.mem, reinterpret_cast<uint64_t>(dst.data()), 256,
                            reinterpret_cast<uint64_t>(dst.data()), kRemote, &in_pd) == 0);
  REQUIRE(x.p.b.hca->reg_mr(other_pd, &x.p.mem, reinterpret_cast<uint64_t>(dst.data()), 256,
                            reinterpret_cast<uint64_t>(dst.data()), kRemote, &in_other) == 0);
  SendWr w = x.wr(WrOpcode::RdmaWrite, src, ks.lkey, 256, x.srq1);
  w.remote_addr = reinterpret_cast<uint64_t>(dst.data());
  w.rkey = in_pd.rkey;
  REQUIRE(x.p.a.hca->post_send(x.ini, w) == 0);
  x.p.engine.run();
  REQUIRE(x.p.a.wcs.size() == 1);
  CHECK(x.p.a.wcs[0].wc.status == WcStatus::Success);
  CHECK(dst == src);
  // The SRQ's PD is b.pd: an MR of another PD is a remote access violation (NAK).
  w.rkey = in_other.rkey;
  REQUIRE(x.p.a.hca->post_send(x.ini, w) == 0);
  x.p.engine.run();
  REQUIRE(x.p.a.wcs.size() == 2);
  CHECK(x.p.a.wcs[1].wc.status == WcStatus::RemAccessErr);
  CHECK(state_of(*x.p.b.hca, x.tgt) == QpState::Err);
}

TEST_CASE("xrc: an SRQ number outside the target's domain is an Invalid Request") {
  Xrc x;
  std::vector<uint8_t> src = pattern(64, 1);
  const MrKeys ks = x.p.reg(x.p.a, src);
  uint32_t basic = 0;  // a basic SRQ of b: not an XRC SRQ
  REQUIRE(x.p.b.hca->create_srq(x.p.b.pd, SrqAttr{4, 1, 0}, &basic) == 0);
  REQUIRE(x.p.a.hca->post_send(x.ini, x.wr(WrOpcode::Send, src, ks.lkey, 64, basic)) == 0);
  x.p.engine.run();
  REQUIRE(x.p.a.wcs.size() == 1);
  CHECK(x.p.a.wcs[0].wc.status == WcStatus::RemInvReqErr);
  CHECK(x.on1.empty());
  CHECK(x.on2.empty());
}

TEST_CASE("xrc: each type's transitions take its own attributes (ib_modify_qp_is_ok)") {
  Xrc x;
  Hca& b = *x.p.b.hca;
  QpInitAttr t;
  t.type = QpType::XrcRecv;
  t.xrcd = x.xrcd;
  uint32_t tgt = 0;
  REQUIRE(b.create_qp(t, &tgt) == 0);
  REQUIRE(x.to_rtr(b, tgt, x.ini, x.p.addr_a, true) == 0);
  // A target's RTR -> RTS requires TIMEOUT and SQ_PSN only; RETRY_CNT is not one of its own.
  QpAttr rts;
  rts.qp_state = QpState::Rts;
  rts.timeout = 14;
  rts.retry_cnt = 7;
  CHECK(b.modify_qp(tgt, rts, kQpState | kQpSqPsn | kQpTimeout | kQpRetryCnt) == EINVAL);
  CHECK(b.modify_qp(tgt, rts, kQpState | kQpSqPsn) == EINVAL);  // TIMEOUT missing
  CHECK(b.modify_qp(tgt, rts, kQpState | kQpSqPsn | kQpTimeout) == 0);
  // An initiator's INIT -> RTR refuses the responder's MIN_RNR_TIMER.
  QpInitAttr i;
  i.type = QpType::XrcSend;
  i.pd = x.p.a.pd;
  i.send_cq = x.p.a.cq;
  uint32_t ini = 0;
  REQUIRE(x.p.a.hca->create_qp(i, &ini) == 0);
  QpAttr at;
  at.qp_state = QpState::Init;
  at.port_num = 1;
  REQUIRE(x.p.a.hca->modify_qp(ini, at, kQpState | kQpPkeyIndex | kQpPort | kQpAccessFlags) == 0);
  at.qp_state = QpState::Rtr;
  at.path_mtu = 5;
  at.dest_qp_num = tgt;
  at.ah_attr.is_global = true;
  at.ah_attr.dgid = gid_of(x.p.addr_b);
  CHECK(x.p.a.hca->modify_qp(ini, at, kQpState | kQpAv | kQpPathMtu | kQpDestQpn | kQpRqPsn |
                                         kQpMinRnrTimer) == EINVAL);
  CHECK(x.p.a.hca->modify_qp(ini, at, kQpState | kQpAv | kQpPathMtu | kQpDestQpn | kQpRqPsn) == 0);
  // Neither half has the other's queue.
  RecvWr r;
  CHECK(x.p.a.hca->post_recv(ini, r) == EINVAL);
  CHECK(b.post_send(tgt, SendWr{}) == EINVAL);
}

TEST_CASE("xrc: domains, SRQs and targets hold what they use; iWARP has no XRC") {
  Xrc x;
  Hca& b = *x.p.b.hca;
  CHECK(b.dealloc_xrcd(x.xrcd) == EBUSY);        // SRQs and a target are in it
  CHECK(b.destroy_cq(x.cq1) == EBUSY);           // an XRC SRQ completes on it
  QpInitAttr t;
  t.type = QpType::XrcRecv;
  t.xrcd = 999;
  uint32_t q = 0;
  CHECK(b.create_qp(t, &q) == ENOENT);
  // An RC QP cannot take an XRC SRQ as its receive queue.
  QpInitAttr rc;
  rc.pd = x.p.b.pd;
  rc.send_cq = rc.recv_cq = x.p.b.cq;
  rc.srq = x.srq1;
  CHECK(b.create_qp(rc, &q) == EINVAL);
  REQUIRE(b.destroy_qp(x.tgt) == 0);
  REQUIRE(b.destroy_srq(x.srq1) == 0);
  REQUIRE(b.destroy_srq(x.srq2) == 0);
  CHECK(b.destroy_cq(x.cq1) == 0);
  CHECK(b.dealloc_xrcd(x.xrcd) == 0);

  Engine e;
  TestWire w(e, us(1));
  HcaConfig iw;
  iw.link_layer = net::LinkLayer::IWarp;
  Hca h(e, iw, w);
  uint32_t d = 0;
  CHECK(h.alloc_xrcd(&d) == EOPNOTSUPP);
}

TEST_CASE("xrc: the same exchange on InfiniBand (LID routed, no GRH)") {
  Xrc x(net::LinkLayer::InfiniBand);
  std::vector<uint8_t> src = pattern(100, 9), dst(128, 0);
  const MrKeys ks = x.p.reg(x.p.a, src), kd = x.p.reg(x.p.b, dst);
  x.send_to(x.srq1, src, ks.lkey, 100, dst, kd.lkey, 1);
  x.p.engine.run();
  CHECK(x.p.a.wire->sent == std::vector<uint8_t>{0xa4});  // XRC SEND Only
  REQUIRE(x.on1.size() == 1);
  CHECK(x.on1[0].byte_len == 100);
  CHECK(std::equal(src.begin(), src.end(), dst.begin()));
}

}  // namespace
}  // namespace rdmasim::nic::test
