// QP state machine: required/optional attribute masks per transition and transport.
#include <doctest/doctest.h>

#include "tests/unit/nic/test_wire.h"

using namespace rdmasim;
using namespace rdmasim::nic;
using namespace rdmasim::nic::test;

namespace {

struct One {
  Engine engine;
  TestWire wire{engine, us(1)};
  Hca hca{engine, HcaConfig{}, wire};
  uint32_t pd = 0, cq = 0;
  One() {
    REQUIRE(hca.alloc_pd(&pd) == 0);
    REQUIRE(hca.create_cq(16, [](const Completion&) {}, &cq) == 0);
  }
  uint32_t qp(QpType t) {
    QpInitAttr init;
    init.pd = pd;
    init.type = t;
    init.send_cq = init.recv_cq = cq;
    init.caps = {8, 8, 1, 1, 0};
    uint32_t n = 0;
    REQUIRE(hca.create_qp(init, &n) == 0);
    return n;
  }
};

QpAttr to(QpState s) {
  QpAttr a;
  a.qp_state = s;
  a.port_num = 1;
  a.path_mtu = 5;
  a.dest_qp_num = 0x99;
  a.rq_psn = 7;
  a.sq_psn = 9;
  a.timeout = 14;
  a.retry_cnt = 7;
  a.rnr_retry = 7;
  a.min_rnr_timer = 12;
  a.max_rd_atomic = 1;
  a.max_dest_rd_atomic = 1;
  a.qkey = 0x1234;
  a.qp_access_flags = kAccessRemoteWrite;
  return a;
}

constexpr uint32_t kRcInit = kQpState | kQpPkeyIndex | kQpPort | kQpAccessFlags;
constexpr uint32_t kRcRtr = kQpState | kQpAv | kQpPathMtu | kQpDestQpn | kQpRqPsn |
                            kQpMaxDestRdAtomic | kQpMinRnrTimer;
constexpr uint32_t kRcRts = kQpState | kQpTimeout | kQpRetryCnt | kQpRnrRetry | kQpSqPsn |
                            kQpMaxQpRdAtomic;

}  // namespace

TEST_CASE("qp state: RC walks RESET->INIT->RTR->RTS with the IBTA masks, query returns them") {
  One o;
  const uint32_t q = o.qp(QpType::RC);
  CHECK(o.hca.modify_qp(q, to(QpState::Init), kRcInit) == 0);
  CHECK(o.hca.modify_qp(q, to(QpState::Rtr), kRcRtr) == 0);
  CHECK(o.hca.modify_qp(q, to(QpState::Rts), kRcRts) == 0);
  QpAttr got;
  QpInitAttr init;
  REQUIRE(o.hca.query_qp(q, &got, &init) == 0);
  CHECK(got.qp_state == QpState::Rts);
  CHECK(got.dest_qp_num == 0x99);  // the values given above
  CHECK(got.rq_psn == 7);
  CHECK(got.sq_psn == 9);
  CHECK(got.path_mtu == 5);
  CHECK(got.min_rnr_timer == 12);
  CHECK(got.timeout == 14);
  CHECK(got.qp_access_flags == kAccessRemoteWrite);
  CHECK(init.type == QpType::RC);
}

TEST_CASE("qp state: a missing required attribute or an extra one gives EINVAL") {
  One o;
  const uint32_t q = o.qp(QpType::RC);
  // RESET->INIT on RC requires PKEY_INDEX, PORT and ACCESS_FLAGS.
  CHECK(o.hca.modify_qp(q, to(QpState::Init), kRcInit & ~kQpPort) == EINVAL);
  // QKEY is not an RC attribute.
  CHECK(o.hca.modify_qp(q, to(QpState::Init), kRcInit | kQpQkey) == EINVAL);
  // RESET->RTR skips INIT: not a transition.
  CHECK(o.hca.modify_qp(q, to(QpState::Rtr), kRcRtr) == EINVAL);
  REQUIRE(o.hca.modify_qp(q, to(QpState::Init), kRcInit) == 0);
  // INIT->RTR on RC also requires MAX_DEST_RD_ATOMIC and MIN_RNR_TIMER (UC does not).
  CHECK(o.hca.modify_qp(q, to(QpState::Rtr), kRcRtr & ~kQpMinRnrTimer) == EINVAL);
  CHECK(o.hca.modify_qp(q, to(QpState::Rtr), kRcRtr & ~kQpMaxDestRdAtomic) == EINVAL);
  REQUIRE(o.hca.modify_qp(q, to(QpState::Rtr), kRcRtr) == 0);
  // RTR->RTS on RC requires TIMEOUT, RETRY_CNT, RNR_RETRY, SQ_PSN, MAX_QP_RD_ATOMIC.
  CHECK(o.hca.modify_qp(q, to(QpState::Rts), kRcRts & ~kQpRetryCnt) == EINVAL);
  // A value out of range: retry_cnt is 3 bits.
  QpAttr bad = to(QpState::Rts);
  bad.retry_cnt = 8;
  CHECK(o.hca.modify_qp(q, bad, kRcRts) == EINVAL);
  CHECK(o.hca.modify_qp(q, to(QpState::Rts), kRcRts) == 0);
  // Failed modifies left the QP where it was.
  QpAttr got;
  REQUIRE(o.hca.query_qp(q, &got, nullptr) == 0);
  CHECK(got.qp_state == QpState::Rts);
}

TEST_CASE("qp state: UD needs QKEY at INIT and only SQ_PSN at RTS; UC needs no RC extras") {
  One o;
  const uint32_t ud = o.qp(QpType::UD);
  CHECK(o.hca.modify_qp(ud, to(QpState::Init), kRcInit) == EINVAL);  // ACCESS_FLAGS not UD
  CHECK(o.hca.modify_qp(ud, to(QpState::Init), kQpState | kQpPkeyIndex | kQpPort | kQpQkey) == 0);
  CHECK(o.hca.modify_qp(ud, to(QpState::Rtr), kQpState | kQpAv) == EINVAL);  // no AV on UD QPs
  CHECK(o.hca.modify_qp(ud, to(QpState::Rtr), kQpState) == 0);
  CHECK(o.hca.modify_qp(ud, to(QpState::Rts), kQpState) == EINVAL);  // SQ_PSN required
  CHECK(o.hca.modify_qp(ud, to(QpState::Rts), kQpState | kQpSqPsn) == 0);

  const uint32_t uc = o.qp(QpType::UC);
  CHECK(o.hca.modify_qp(uc, to(QpState::Init), kRcInit) == 0);
  CHECK(o.hca.modify_qp(uc, to(QpState::Rtr), kRcRtr) == EINVAL);  // RC-only bits
  CHECK(o.hca.modify_qp(uc, to(QpState::Rtr),
                        kQpState | kQpAv | kQpPathMtu | kQpDestQpn | kQpRqPsn) == 0);
  CHECK(o.hca.modify_qp(uc, to(QpState::Rts), kQpState | kQpSqPsn | kQpTimeout) == EINVAL);
  CHECK(o.hca.modify_qp(uc, to(QpState::Rts), kQpState | kQpSqPsn) == 0);
}

TEST_CASE("qp state: any state goes to ERR and RESET; posts are refused before RTS") {
  One o;
  const uint32_t q = o.qp(QpType::RC);
  SendWr wr;
  CHECK(o.hca.post_send(q, wr) == EINVAL);  // RESET
  RecvWr rr;
  CHECK(o.hca.post_recv(q, rr) == EINVAL);  // RESET refuses receives too
  REQUIRE(o.hca.modify_qp(q, to(QpState::Init), kRcInit) == 0);
  CHECK(o.hca.post_send(q, wr) == EINVAL);  // INIT
  CHECK(o.hca.post_recv(q, rr) == 0);       // INIT accepts receives
  CHECK(o.hca.modify_qp(q, to(QpState::Err), kQpState) == 0);
  CHECK(o.hca.modify_qp(q, to(QpState::Err), kQpState | kQpPort) == EINVAL);  // state only
  CHECK(o.hca.modify_qp(q, to(QpState::Reset), kQpState) == 0);
  CHECK(o.hca.modify_qp(q, to(QpState::Init), kRcInit) == 0);
}

TEST_CASE("resources: objects in use cannot be destroyed; SRQ limit arms via modify_srq") {
  One o;
  const uint32_t q = o.qp(QpType::RC);
  CHECK(o.hca.destroy_cq(o.cq) == EBUSY);
  CHECK(o.hca.dealloc_pd(o.pd) == EBUSY);
  CHECK(o.hca.destroy_qp(q) == 0);
  CHECK(o.hca.destroy_cq(o.cq) == 0);
  uint32_t srq = 0;
  SrqAttr sa{16, 1, 0};
  REQUIRE(o.hca.create_srq(o.pd, sa, &srq) == 0);
  sa.srq_limit = 17;  // above max_wr
  CHECK(o.hca.modify_srq(srq, sa, 2) == EINVAL);
  sa.srq_limit = 4;
  CHECK(o.hca.modify_srq(srq, sa, 2) == 0);
  SrqAttr got;
  REQUIRE(o.hca.query_srq(srq, &got) == 0);
  CHECK(got.srq_limit == 4);
  CHECK(got.max_wr == 16);
  CHECK(o.hca.destroy_srq(srq) == 0);
  CHECK(o.hca.dealloc_pd(o.pd) == 0);
}
