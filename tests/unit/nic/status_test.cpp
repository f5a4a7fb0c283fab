// Completion statuses not provoked elsewhere, each with the reason a real HCA reports it
// (man ibv_poll_cq, IBTA vol 1 ch. 9 "responder / requester error behavior"), the
// max_rd_atomic limit, and the registration errors rdma-core returns.
#include <doctest/doctest.h>

#include <cerrno>
#include <cstring>

#include "tests/unit/nic/test_wire.h"

using namespace rdmasim;
using namespace rdmasim::nic;
using namespace rdmasim::nic::test;

namespace {

constexpr uint32_t kAllAccess =
    kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic;

SendWr read_wr(std::vector<uint8_t>& local, uint32_t lkey, uint64_t remote, uint32_t rkey) {
  SendWr wr;
  wr.opcode = WrOpcode::RdmaRead;
  wr.send_flags = kSendSignaled;
  wr.sgl = {sge_of(local, lkey)};
  wr.remote_addr = remote;
  wr.rkey = rkey;
  return wr;
}

SendWr fadd_wr(std::vector<uint8_t>& local, uint32_t lkey, uint64_t remote, uint32_t rkey) {
  SendWr wr;
  wr.opcode = WrOpcode::AtomicFetchAndAdd;
  wr.send_flags = kSendSignaled;
  wr.sgl = {sge_of(local, lkey, 0, 8)};
  wr.remote_addr = remote;
  wr.rkey = rkey;
  wr.compare_add = 1;
  return wr;
}

}  // namespace

TEST_CASE("rc: READ or atomic on memory the responder cannot DMA is REM_OP_ERR") {
  // man ibv_poll_cq: IBV_WC_REM_OP_ERR "the operation could not be completed successfully
  // by the responder" (IBTA NAK code 3, Remote Operational Error). Both QPs end in ERR:
  // the requester by the completion error, the responder because it cannot go on.
  for (const bool atomic : {false, true}) {
    CAPTURE(atomic);
    Pair p;
    VanishedMemory gone;
    std::vector<uint8_t> remote(64, 0), local(64, 0);
    const auto raddr = reinterpret_cast<uint64_t>(remote.data());
    MrKeys kr;
    REQUIRE(p.b.hca->reg_mr(p.b.pd, &gone, raddr, remote.size(), raddr, kAllAccess, &kr) == 0);
    auto kl = p.reg(p.a, local);
    const SendWr wr = atomic ? fadd_wr(local, kl.lkey, raddr, kr.rkey)
                             : read_wr(local, kl.lkey, raddr, kr.rkey);
    REQUIRE(p.a.hca->post_send(p.a.qpn, wr) == 0);
    p.engine.run();
    REQUIRE(p.a.wcs.size() == 1);
    CHECK(p.a.wcs[0].wc.status == WcStatus::RemOpErr);
    CHECK(state_of(*p.a.hca, p.a.qpn) == QpState::Err);
    CHECK(state_of(*p.b.hca, p.b.qpn) == QpState::Err);
  }
}

TEST_CASE("rc: an atomic at a VA not 8-byte aligned is REM_INV_REQ_ERR") {
  // IBTA 9.4.5: the atomic VA must be naturally aligned (8 B); otherwise the responder
  // NAKs with Invalid Request -> IBV_WC_REM_INV_REQ_ERR at the requester.
  Pair p;
  std::vector<uint8_t> remote(64, 0), local(8, 0);
  auto kr = p.reg(p.b, remote);
  auto kl = p.reg(p.a, local);
  const auto raddr = reinterpret_cast<uint64_t>(remote.data());
  REQUIRE(p.a.hca->post_send(p.a.qpn, fadd_wr(local, kl.lkey, raddr + 4, kr.rkey)) == 0);
  p.engine.run();
  REQUIRE(p.a.wcs.size() == 1);
  CHECK(p.a.wcs[0].wc.status == WcStatus::RemInvReqErr);
  CHECK(remote == std::vector<uint8_t>(64, 0));  // nothing executed
}

TEST_CASE("rc: an atomic whose local buffer is shorter than 8 B is LOC_LEN_ERR") {
  // The 8-byte original value must fit the gather list (man ibv_post_send: atomic
  // operations take one 8-byte SGE); a shorter one is a local length error.
  Pair p;
  std::vector<uint8_t> remote(8, 0), local(8, 0);
  auto kr = p.reg(p.b, remote);
  auto kl = p.reg(p.a, local);
  SendWr wr = fadd_wr(local, kl.lkey, reinterpret_cast<uint64_t>(remote.data()), kr.rkey);
  wr.sgl[0].length = 4;
  REQUIRE(p.a.hca->post_send(p.a.qpn, wr) == 0);
  p.engine.run();
  REQUIRE(p.a.wcs.size() == 1);
  CHECK(p.a.wcs[0].wc.status == WcStatus::LocLenErr);
  CHECK(p.a.hca->counters().tx_packets == 0);
}

TEST_CASE("rc: a READ into an MR without LOCAL_WRITE is LOC_PROT_ERR") {
  // man ibv_reg_mr: without IBV_ACCESS_LOCAL_WRITE the HCA may not write the region, and
  // a READ response is written locally; man ibv_poll_cq: IBV_WC_LOC_PROT_ERR.
  Pair p;
  std::vector<uint8_t> remote(64, 7), local(64, 0);
  auto kr = p.reg(p.b, remote);
  auto kl = p.reg(p.a, local, kAccessRemoteRead);  // readable, not locally writable
  REQUIRE(p.a.hca->post_send(
              p.a.qpn, read_wr(local, kl.lkey, reinterpret_cast<uint64_t>(remote.data()), kr.rkey)) == 0);
  p.engine.run();
  REQUIRE(p.a.wcs.size() == 1);
  CHECK(p.a.wcs[0].wc.status == WcStatus::LocProtErr);
  CHECK(local == std::vector<uint8_t>(64, 0));
}

TEST_CASE("rc: a READ at a QP without IBV_ACCESS_REMOTE_READ is REM_ACCESS_ERR") {
  // man ibv_modify_qp: qp_access_flags gate incoming RDMA READ/WRITE/atomics on the
  // responder QP, independently of the MR's own flags (which here allow everything).
  QpParams q;
  q.access = kAccessLocalWrite | kAccessRemoteWrite;  // no REMOTE_READ on either QP
  Pair p(q);
  std::vector<uint8_t> remote(64, 7), local(64, 0);
  auto kr = p.reg(p.b, remote);
  auto kl = p.reg(p.a, local);
  REQUIRE(p.a.hca->post_send(
              p.a.qpn, read_wr(local, kl.lkey, reinterpret_cast<uint64_t>(remote.data()), kr.rkey)) == 0);
  p.engine.run();
  REQUIRE(p.a.wcs.size() == 1);
  CHECK(p.a.wcs[0].wc.status == WcStatus::RemAccessErr);
}

TEST_CASE("qp: WRs posted while in ERR complete with WR_FLUSH_ERR") {
  // IBTA 10.3.1 (Error state): "work requests posted to the queues are completed with
  // flush error"; posting is allowed (rdma-core providers do not refuse it).
  Pair p;
  std::vector<uint8_t> buf(64, 0);
  auto k = p.reg(p.a, buf);
  QpAttr err;
  err.qp_state = QpState::Err;
  REQUIRE(p.a.hca->modify_qp(p.a.qpn, err, kQpState) == 0);
  SendWr wr;
  wr.wr_id = 11;
  wr.opcode = WrOpcode::Send;
  wr.send_flags = kSendSignaled;
  wr.sgl = {sge_of(buf, k.lkey)};
  REQUIRE(p.a.hca->post_send(p.a.qpn, wr) == 0);
  RecvWr rr;
  rr.wr_id = 12;
  rr.sgl = {sge_of(buf, k.lkey)};
  REQUIRE(p.a.hca->post_recv(p.a.qpn, rr) == 0);
  p.engine.run();
  REQUIRE(p.a.wcs.size() == 2);
  for (const auto& c : p.a.wcs) CHECK(c.wc.status == WcStatus::WrFlushErr);
  CHECK(p.a.hca->counters().tx_packets == 0);
}

TEST_CASE("rc: at most max_rd_atomic (4) READs are outstanding; the 5th waits a round trip") {
  // man ibv_modify_qp: max_rd_atomic is "number of outstanding RDMA reads & atomic
  // operations on the destination QP". The Pair sets 4 and a 1 us wire each way, so the
  // 5th READ request can leave only after the first response returned: >= 2 us later.
  Pair p;
  std::vector<uint8_t> remote(64, 3), local(5 * 64, 0);
  auto kr = p.reg(p.b, remote);
  auto kl = p.reg(p.a, local);
  std::vector<Time> sent;
  p.a.wire->drop = [&](const nic::RdmaPacket& pk) {
    if (pk.bth.opcode == 0x0c) sent.push_back(p.engine.now());  // RC RDMA READ Request
    return false;
  };
  for (uint32_t i = 0; i < 5; ++i) {
    SendWr wr = read_wr(local, kl.lkey, reinterpret_cast<uint64_t>(remote.data()), kr.rkey);
    wr.sgl = {sge_of(local, kl.lkey, i * 64, 64)};
    REQUIRE(p.a.hca->post_send(p.a.qpn, wr) == 0);
  }
  p.engine.run();
  REQUIRE(sent.size() == 5);
  CHECK(sent[3] - sent[0] < us(1));   // the first four back to back
  CHECK(sent[4] - sent[0] >= us(2));  // the fifth after a round trip
  REQUIRE(p.a.wcs.size() == 5);
  for (const auto& c : p.a.wcs) CHECK(c.wc.status == WcStatus::Success);
  CHECK(local == std::vector<uint8_t>(5 * 64, 3));
}

TEST_CASE("reg_mr: REMOTE_WRITE without LOCAL_WRITE is EINVAL; ON_DEMAND MRs, implicit ones too") {
  // man ibv_reg_mr: "If IBV_ACCESS_REMOTE_WRITE or IBV_ACCESS_REMOTE_ATOMIC is set, then
  // IBV_ACCESS_LOCAL_WRITE must be set too" (rdma-core returns EINVAL). On-demand paging
  // MRs are registered; an implicit one (address 0, length all ones, as mlx5_ib_reg_user_mr
  // takes it) spans every address (it is exempt from a configured max_mr_size).
  Pair p;
  std::vector<uint8_t> buf(64);
  const auto addr = reinterpret_cast<uint64_t>(buf.data());
  MrKeys k;
  CHECK(p.a.hca->reg_mr(p.a.pd, &p.mem, addr, 64, addr, kAccessRemoteWrite, &k) == EINVAL);
  CHECK(p.a.hca->reg_mr(p.a.pd, &p.mem, addr, 64, addr, kAccessRemoteAtomic, &k) == EINVAL);
  CHECK(p.a.hca->reg_mr(p.a.pd, &p.mem, addr, 64, addr, kAccessLocalWrite | kAccessOnDemand, &k) == 0);
  CHECK(p.a.hca->reg_mr(p.a.pd, &p.mem, 0, UINT64_MAX, 0, kAccessLocalWrite | kAccessOnDemand, &k) == 0);
  CHECK(p.a.hca->reg_mr(p.a.pd, &p.mem, addr, 64, addr, kAccessRemoteRead, &k) == 0);
}
