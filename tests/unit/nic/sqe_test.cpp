// The SQ Error state (IBTA vol 1 10.3.1): a UC or UD send WQE that completes in error moves
// the QP to SQE, not ERR. The send queue is flushed and refuses to send until modify_qp
// SQE->RTS; the receive queue keeps working (C10-38). RC QPs never enter SQE.
#include <doctest/doctest.h>

#include <cstring>

#include "tests/unit/nic/test_wire.h"

using namespace rdmasim;
using namespace rdmasim::nic;
using namespace rdmasim::nic::test;

namespace {

QpAttr to(QpState s) {
  QpAttr a;
  a.qp_state = s;
  return a;
}

std::vector<const Completion*> sends(const Side& s) {
  std::vector<const Completion*> v;
  for (const auto& t : s.wcs)
    if (t.wc.is_send) v.push_back(&t.wc);
  return v;
}

std::vector<const Completion*> recvs(const Side& s) {
  std::vector<const Completion*> v;
  for (const auto& t : s.wcs)
    if (!t.wc.is_send) v.push_back(&t.wc);
  return v;
}

}  // namespace

TEST_CASE("sqe: a UD send above the MTU moves the QP to SQE; receives go on; SQE->RTS recovers") {
  QpParams q;
  q.type = QpType::UD;
  Pair p(q);
  auto big = pattern(5000, 1);  // > the 4096 B MTU: LOC_LEN_ERR (a UD message is one packet)
  auto small = pattern(100, 2);
  std::vector<uint8_t> rbuf(40 + 100, 0);
  auto kbig = p.reg(p.a, big);
  auto ks = p.reg(p.a, small);
  auto kr = p.reg(p.a, rbuf);
  auto kbs = p.reg(p.b, small);
  std::vector<uint8_t> bbuf(40 + 100, 0);
  auto kbb = p.reg(p.b, bbuf);
  auto ud_send = [&](Side& from, std::vector<uint8_t>& buf, MrKeys k, uint32_t to_ip, uint32_t to_qpn,
                     uint64_t id) {
    SendWr wr;
    wr.wr_id = id;
    wr.opcode = WrOpcode::Send;
    wr.send_flags = kSendSignaled;
    wr.sgl = {sge_of(buf, k.lkey)};
    wr.av.is_global = true;
    wr.av.dgid = gid_of(to_ip);
    wr.remote_qpn = to_qpn;
    wr.remote_qkey = q.qkey;
    return from.hca->post_send(from.qpn, wr);
  };
  // W1 fails when the NIC reaches it; W2, behind it on the queue, is flushed.
  REQUIRE(ud_send(p.a, big, kbig, Pair::kIpB, p.b.qpn, 1) == 0);
  REQUIRE(ud_send(p.a, small, ks, Pair::kIpB, p.b.qpn, 2) == 0);
  p.engine.run();
  auto s = sends(p.a);
  REQUIRE(s.size() == 2);
  CHECK(s[0]->wr_id == 1);
  CHECK(s[0]->status == WcStatus::LocLenErr);
  CHECK(s[1]->wr_id == 2);
  CHECK(s[1]->status == WcStatus::WrFlushErr);
  CHECK(p.state(p.a) == QpState::Sqe);  // query_qp reports IBV_QPS_SQE
  CHECK(p.a.wire->sent.empty());

  // The receive side of the QP in SQE still works (C10-38): a receive posted now is used.
  RecvWr rr;
  rr.wr_id = 10;
  rr.sgl = {sge_of(rbuf, kr.lkey)};
  REQUIRE(p.a.hca->post_recv(p.a.qpn, rr) == 0);
  REQUIRE(ud_send(p.b, small, kbs, Pair::kIpA, p.a.qpn, 20) == 0);
  p.engine.run();
  auto r = recvs(p.a);
  REQUIRE(r.size() == 1);
  CHECK(r[0]->status == WcStatus::Success);
  CHECK(r[0]->byte_len == 40 + 100);
  CHECK(std::memcmp(rbuf.data() + 40, small.data(), 100) == 0);

  // A send posted in SQE is accepted and flushed; nothing goes on the wire.
  REQUIRE(ud_send(p.a, small, ks, Pair::kIpB, p.b.qpn, 3) == 0);
  p.engine.run();
  s = sends(p.a);
  REQUIRE(s.size() == 3);
  CHECK(s[2]->wr_id == 3);
  CHECK(s[2]->status == WcStatus::WrFlushErr);
  CHECK(p.a.wire->sent.empty());

  // SQE->RTS (IBTA 11.2.1 / man ibv_modify_qp: UD optional CUR_STATE and QKEY, nothing
  // required): SQ_PSN is not allowed there (EINVAL, the QP stays in SQE), CUR_STATE is.
  QpAttr rts = to(QpState::Rts);
  CHECK(p.a.hca->modify_qp(p.a.qpn, rts, kQpState | kQpSqPsn) == EINVAL);
  CHECK(p.state(p.a) == QpState::Sqe);
  rts.cur_qp_state = QpState::Rts;  // a wrong current state
  CHECK(p.a.hca->modify_qp(p.a.qpn, rts, kQpState | kQpCurState) == EINVAL);
  rts.cur_qp_state = QpState::Sqe;
  CHECK(p.a.hca->modify_qp(p.a.qpn, rts, kQpState | kQpCurState) == 0);
  CHECK(p.state(p.a) == QpState::Rts);
  RecvWr br;
  br.sgl = {sge_of(bbuf, kbb.lkey)};
  REQUIRE(p.b.hca->post_recv(p.b.qpn, br) == 0);
  REQUIRE(ud_send(p.a, small, ks, Pair::kIpB, p.b.qpn, 4) == 0);
  p.engine.run();
  s = sends(p.a);
  REQUIRE(s.size() == 4);
  CHECK(s[3]->status == WcStatus::Success);
  r = recvs(p.b);
  REQUIRE(r.size() == 1);
  CHECK(r[0]->status == WcStatus::Success);
  CHECK(std::memcmp(bbuf.data() + 40, small.data(), 100) == 0);
}

TEST_CASE("sqe: a UC send from a bad lkey moves the QP to SQE; the peer's WRITE and SEND still land") {
  QpParams q;
  q.type = QpType::UC;
  Pair p(q);
  auto src = pattern(2000, 3);
  std::vector<uint8_t> a_mem(4000, 0), b_mem(2000, 0);
  auto ksrc_a = p.reg(p.a, src);
  auto ka = p.reg(p.a, a_mem);
  auto ksrc_b = p.reg(p.b, src);
  auto kb = p.reg(p.b, b_mem);
  SendWr bad;
  bad.wr_id = 1;
  bad.opcode = WrOpcode::Send;
  bad.send_flags = kSendSignaled;
  bad.sgl = {sge_of(src, ksrc_a.lkey + 0x100)};  // no such MR: LOC_PROT_ERR
  REQUIRE(p.a.hca->post_send(p.a.qpn, bad) == 0);
  p.engine.run();
  auto s = sends(p.a);
  REQUIRE(s.size() == 1);
  CHECK(s[0]->status == WcStatus::LocProtErr);
  CHECK(p.state(p.a) == QpState::Sqe);

  // B writes into A's memory and sends into a receive A posts while in SQE.
  RecvWr rr;
  rr.wr_id = 10;
  rr.sgl = {sge_of(a_mem, ka.lkey, 2000, 2000)};
  REQUIRE(p.a.hca->post_recv(p.a.qpn, rr) == 0);
  SendWr w;
  w.opcode = WrOpcode::RdmaWrite;
  w.sgl = {sge_of(src, ksrc_b.lkey)};
  w.remote_addr = reinterpret_cast<uint64_t>(a_mem.data());
  w.rkey = ka.rkey;
  REQUIRE(p.b.hca->post_send(p.b.qpn, w) == 0);
  SendWr snd;
  snd.opcode = WrOpcode::Send;
  snd.sgl = {sge_of(src, ksrc_b.lkey)};
  REQUIRE(p.b.hca->post_send(p.b.qpn, snd) == 0);
  p.engine.run();
  CHECK(std::memcmp(a_mem.data(), src.data(), 2000) == 0);
  CHECK(std::memcmp(a_mem.data() + 2000, src.data(), 2000) == 0);
  auto r = recvs(p.a);
  REQUIRE(r.size() == 1);
  CHECK(r[0]->status == WcStatus::Success);
  CHECK(r[0]->byte_len == 2000);
  CHECK(p.state(p.a) == QpState::Sqe);

  // SQE->RTS for UC: optional CUR_STATE and ACCESS_FLAGS (IBTA 11.2.1); then A sends again.
  QpAttr rts = to(QpState::Rts);
  rts.qp_access_flags = kAccessLocalWrite | kAccessRemoteWrite;
  CHECK(p.a.hca->modify_qp(p.a.qpn, rts, kQpState | kQpQkey) == EINVAL);  // QKEY is UD's
  CHECK(p.a.hca->modify_qp(p.a.qpn, rts, kQpState | kQpAccessFlags) == 0);
  CHECK(p.state(p.a) == QpState::Rts);
  SendWr good = w;
  good.wr_id = 2;
  good.send_flags = kSendSignaled;
  good.sgl = {sge_of(src, ksrc_a.lkey)};
  good.remote_addr = reinterpret_cast<uint64_t>(b_mem.data());
  good.rkey = kb.rkey;
  REQUIRE(p.a.hca->post_send(p.a.qpn, good) == 0);
  p.engine.run();
  s = sends(p.a);
  REQUIRE(s.size() == 2);
  CHECK(s[1]->status == WcStatus::Success);
  CHECK(b_mem == src);
}

TEST_CASE("sqe: an RC local error still moves the QP to ERR, and no QP can be moved to SQE") {
  // IBTA 10.3.1: SQE exists for every QP type but RC; RC errors go to ERR. ibv_modify_qp:
  // SQE is entered by the HCA only, so no transition leads to it (EINVAL).
  Pair p;
  auto src = pattern(100, 4);
  auto ks = p.reg(p.a, src);
  CHECK(p.b.hca->modify_qp(p.b.qpn, to(QpState::Sqe), kQpState) == EINVAL);
  CHECK(p.state(p.b) == QpState::Rts);
  SendWr bad;
  bad.opcode = WrOpcode::Send;
  bad.send_flags = kSendSignaled;
  bad.sgl = {sge_of(src, ks.lkey + 0x100)};
  const auto& wcs = p.post_and_run(p.a, bad);
  REQUIRE(wcs.size() == 1);
  CHECK(wcs[0].wc.status == WcStatus::LocProtErr);
  CHECK(p.state(p.a) == QpState::Err);
}
