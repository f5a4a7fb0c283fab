// The QP state machine, table-driven: for each transition and transport, the required and
// optional attributes. Required lists: man ibv_modify_qp ("minimum list of attributes");
// optional lists and the SQD transitions: IBTA vol 1 11.2.1 (Modify QP), as the kernel's
// ib_modify_qp_is_ok table encodes them. A missing required or an extra attribute is
// EINVAL (rdma-core returns the kernel's EINVAL); every optional one is accepted.
#include <doctest/doctest.h>

#include <string>

#include "tests/unit/nic/test_wire.h"

using namespace rdmasim;
using namespace rdmasim::nic;
using namespace rdmasim::nic::test;

namespace {

using S = QpState;

struct Row {
  S cur, next;
  QpType type;
  uint32_t req, opt;
};

constexpr uint32_t P = kQpPkeyIndex, PO = kQpPort, Q = kQpQkey, A = kQpAccessFlags,
                   AV = kQpAv, MTU = kQpPathMtu, DQ = kQpDestQpn, RQ = kQpRqPsn,
                   MD = kQpMaxDestRdAtomic, RNR = kQpMinRnrTimer, SQ = kQpSqPsn,
                   TO = kQpTimeout, RC_ = kQpRetryCnt, RR = kQpRnrRetry, MR = kQpMaxQpRdAtomic,
                   CUR = kQpCurState, ALT = kQpAltPath, MIG = kQpPathMigState,
                   SQDN = kQpEnSqdAsyncNotify;

const Row kTable[] = {
    {S::Reset, S::Init, QpType::RC, P | PO | A, 0},
    {S::Reset, S::Init, QpType::UC, P | PO | A, 0},
    {S::Reset, S::Init, QpType::UD, P | PO | Q, 0},
    {S::Init, S::Init, QpType::RC, 0, P | PO | A},
    {S::Init, S::Init, QpType::UC, 0, P | PO | A},
    {S::Init, S::Init, QpType::UD, 0, P | PO | Q},
    {S::Init, S::Rtr, QpType::RC, AV | MTU | DQ | RQ | MD | RNR, ALT | A | P},
    {S::Init, S::Rtr, QpType::UC, AV | MTU | DQ | RQ, ALT | A | P},
    {S::Init, S::Rtr, QpType::UD, 0, P | Q},
    {S::Rtr, S::Rts, QpType::RC, SQ | MR | RC_ | RR | TO, CUR | ALT | A | RNR | MIG},
    {S::Rtr, S::Rts, QpType::UC, SQ, CUR | ALT | A | MIG},
    {S::Rtr, S::Rts, QpType::UD, SQ, CUR | Q},
    {S::Rts, S::Rts, QpType::RC, 0, CUR | A | ALT | MIG | RNR},
    {S::Rts, S::Rts, QpType::UC, 0, CUR | A | ALT | MIG},
    {S::Rts, S::Rts, QpType::UD, 0, CUR | Q},
    {S::Rts, S::Sqd, QpType::RC, 0, SQDN},
    {S::Rts, S::Sqd, QpType::UC, 0, SQDN},
    {S::Rts, S::Sqd, QpType::UD, 0, SQDN},
    {S::Sqd, S::Rts, QpType::RC, 0, CUR | A | ALT | MIG | RNR},
    {S::Sqd, S::Rts, QpType::UC, 0, CUR | A | ALT | MIG},
    {S::Sqd, S::Rts, QpType::UD, 0, CUR | Q},
    {S::Sqd, S::Sqd, QpType::RC, 0,
     PO | AV | TO | RC_ | RR | MR | MD | ALT | A | P | RNR | MIG},
    {S::Sqd, S::Sqd, QpType::UC, 0, AV | ALT | A | P | MIG},
    {S::Sqd, S::Sqd, QpType::UD, 0, P | Q},
};

// Valid values for every attribute, so only the mask decides.
QpAttr values(S s, S cur) {
  QpAttr a;
  a.qp_state = s;
  a.cur_qp_state = cur;
  a.port_num = 1;
  a.path_mtu = 3;
  a.dest_qp_num = 0x77;
  a.rq_psn = 5;
  a.sq_psn = 6;
  a.timeout = 10;
  a.retry_cnt = 3;
  a.rnr_retry = 2;
  a.min_rnr_timer = 4;
  a.max_rd_atomic = 2;
  a.max_dest_rd_atomic = 2;
  a.qkey = 0x42;
  a.qp_access_flags = kAccessRemoteRead;
  a.ah_attr.port_num = 1;
  a.alt_ah_attr.port_num = 1;
  a.alt_port_num = 1;
  return a;
}

struct Dev {
  Engine engine;
  TestWire wire{engine, us(1)};
  Hca hca{engine, HcaConfig{}, wire};
  uint32_t pd = 0, cq = 0;
  Dev() {
    REQUIRE(hca.alloc_pd(&pd) == 0);
    REQUIRE(hca.create_cq(64, [](const Completion&) {}, &cq) == 0);
  }
  // A new QP of `t` brought to `s` along RESET->INIT->RTR->RTS(->SQD) with required masks.
  uint32_t qp_in(QpType t, S s) {
    QpInitAttr init;
    init.pd = pd;
    init.type = t;
    init.send_cq = init.recv_cq = cq;
    init.caps = {4, 4, 1, 1, 0};
    uint32_t q = 0;
    REQUIRE(hca.create_qp(init, &q) == 0);
    const S path[] = {S::Init, S::Rtr, S::Rts, S::Sqd};
    S at = S::Reset;
    for (S n : path) {
      if (at == s) break;
      for (const Row& r : kTable)
        if (r.cur == at && r.next == n && r.type == t)
          REQUIRE(hca.modify_qp(q, values(n, at), kQpState | r.req) == 0);
      at = n;
    }
    engine.run();
    QpAttr got;
    REQUIRE(hca.query_qp(q, &got, nullptr) == 0);
    REQUIRE(got.qp_state == s);
    return q;
  }
};

const char* name(QpType t) { return t == QpType::RC ? "RC" : t == QpType::UC ? "UC" : "UD"; }

}  // namespace

TEST_CASE("qp table: required masks are needed, optional ones accepted, others EINVAL") {
  constexpr uint32_t kAllBits = (1u << 21) - 1;  // IBV_QP_STATE .. IBV_QP_DEST_QPN
  for (const Row& r : kTable) {
    CAPTURE(name(r.type));
    CAPTURE(static_cast<int>(r.cur));
    CAPTURE(static_cast<int>(r.next));
    Dev d;
    // Exactly the required attributes.
    CHECK(d.hca.modify_qp(d.qp_in(r.type, r.cur), values(r.next, r.cur), kQpState | r.req) == 0);
    // Each required attribute left out.
    for (uint32_t b = 1; b <= kAllBits; b <<= 1) {
      if (!(r.req & b)) continue;
      CAPTURE(b);
      CHECK(d.hca.modify_qp(d.qp_in(r.type, r.cur), values(r.next, r.cur),
                            kQpState | (r.req & ~b)) == EINVAL);
    }
    // Each optional attribute added alone, and each attribute that is neither.
    for (uint32_t b = 2; b <= kAllBits; b <<= 1) {
      if (r.req & b) continue;
      CAPTURE(b);
      const uint32_t q = d.qp_in(r.type, r.cur);
      const int want = (r.opt & b) ? 0 : EINVAL;
      CHECK(d.hca.modify_qp(q, values(r.next, r.cur), kQpState | r.req | b) == want);
      if (want == 0 && b != kQpCurState) {
        // ibv_query_qp returns what was set (checked for the attributes query reports).
        QpAttr got;
        REQUIRE(d.hca.query_qp(q, &got, nullptr) == 0);
        CHECK(got.qp_state == r.next);
        if (b == kQpQkey) CHECK(got.qkey == 0x42);
        if (b == kQpAccessFlags) CHECK(got.qp_access_flags == kAccessRemoteRead);
        if (b == kQpMinRnrTimer) CHECK(got.min_rnr_timer == 4);
        if (b == kQpTimeout) CHECK(got.timeout == 10);
        if (b == kQpMaxQpRdAtomic) CHECK(got.max_rd_atomic == 2);
      }
    }
  }
}

TEST_CASE("qp table: transitions not in the table are EINVAL whatever the mask") {
  // IBTA 10.3.1 figure "QP state diagram": e.g. RESET->RTR/RTS, INIT->RTS, RTR->RTR,
  // RTR->SQD, ERR->RTS are not transitions; only RESET and ERR are reachable from anywhere.
  struct Bad { S cur, next; };
  const Bad bad[] = {{S::Reset, S::Rtr}, {S::Reset, S::Rts}, {S::Init, S::Rts},
                     {S::Rtr, S::Rtr},   {S::Rtr, S::Sqd},   {S::Init, S::Sqd}};
  for (const QpType t : {QpType::RC, QpType::UC, QpType::UD}) {
    for (const Bad& b : bad) {
      CAPTURE(name(t));
      CAPTURE(static_cast<int>(b.cur));
      CAPTURE(static_cast<int>(b.next));
      Dev d;
      const uint32_t q = d.qp_in(t, b.cur);
      uint32_t all_req = 0;
      for (const Row& r : kTable)
        if (r.type == t) all_req |= r.req;
      CHECK(d.hca.modify_qp(q, values(b.next, b.cur), kQpState) == EINVAL);
      CHECK(d.hca.modify_qp(q, values(b.next, b.cur), kQpState | all_req) == EINVAL);
    }
    Dev d;
    const uint32_t q = d.qp_in(t, S::Rts);
    REQUIRE(d.hca.modify_qp(q, values(S::Err, S::Rts), kQpState) == 0);
    CHECK(d.hca.modify_qp(q, values(S::Rts, S::Err), kQpState) == EINVAL);
    // A wrong CUR_STATE is EINVAL even on an allowed transition (man ibv_modify_qp).
    const uint32_t q2 = d.qp_in(t, S::Rts);
    CHECK(d.hca.modify_qp(q2, values(S::Rts, S::Rtr), kQpState | kQpCurState) == EINVAL);
  }
}
