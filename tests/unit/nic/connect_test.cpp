// nic::modify_to_rts / connect_qps: the one RESET -> INIT -> RTR -> RTS sequence.
#include <doctest/doctest.h>

#include <cerrno>
#include <cstring>

#include "sim/nic/connect.h"
#include "tests/unit/nic/test_wire.h"

using namespace rdmasim;
using namespace rdmasim::nic;
using namespace rdmasim::nic::test;

namespace {

QpAttr query(Hca& h, uint32_t qpn) {
  QpAttr at;
  REQUIRE(h.query_qp(qpn, &at, nullptr) == 0);
  return at;
}

AddressVector roce_av(uint32_t ip) {
  AddressVector av;
  av.is_global = true;
  av.dgid = gid_of(ip);
  return av;
}

}  // namespace

TEST_CASE("connect: connect_qps takes both RC QPs to RTS with the attributes asked for") {
  Pair p;  // its own QPs are connected by the fixture; these are two more
  const uint32_t qa = p.add_qp(p.a, QpParams{});
  const uint32_t qb = p.add_qp(p.b, QpParams{});
  ConnectParams c;
  c.path_mtu = 3;  // 1024
  c.psn = 77;
  c.timeout = 10;
  c.max_rd_atomic = 2;
  const char* failed = "none";
  REQUIRE(connect_qps({p.a.hca.get(), qa, roce_av(Pair::kIpA)}, {p.b.hca.get(), qb, roce_av(Pair::kIpB)},
                      c, &failed) == 0);
  CHECK(std::strcmp(failed, "none") == 0);  // untouched on success
  const QpAttr a = query(*p.a.hca, qa), b = query(*p.b.hca, qb);
  CHECK(a.qp_state == QpState::Rts);
  CHECK(b.qp_state == QpState::Rts);
  CHECK(a.dest_qp_num == qb);
  CHECK(b.dest_qp_num == qa);
  CHECK(a.ah_attr.dgid == gid_of(Pair::kIpB));  // a reaches b through b's address
  CHECK(b.ah_attr.dgid == gid_of(Pair::kIpA));
  CHECK(a.path_mtu == 3);
  CHECK(a.sq_psn == 77);
  CHECK(b.rq_psn == 77);
  CHECK(a.timeout == 10);
  CHECK(a.max_rd_atomic == 2);
}

TEST_CASE("connect: a UD QP reaches RTS with its qkey and no peer") {
  Pair p;
  QpParams ud;
  ud.type = QpType::UD;
  const uint32_t q = p.add_qp(p.a, ud);
  ConnectParams c;
  c.type = QpType::UD;
  c.qkey = 0x1234;
  REQUIRE(modify_to_rts(*p.a.hca, q, 0, AddressVector{}, c) == 0);
  const QpAttr at = query(*p.a.hca, q);
  CHECK(at.qp_state == QpState::Rts);
  CHECK(at.qkey == 0x1234);
}

TEST_CASE("connect: a refused transition is named, and the QP stays where it got to") {
  Pair p;
  const uint32_t q = p.add_qp(p.a, QpParams{});
  ConnectParams c;
  c.path_mtu = 0;  // not an ibv_mtu value (1..5): RTR refuses it
  const char* failed = nullptr;
  CHECK(modify_to_rts(*p.a.hca, q, p.b.qpn, roce_av(Pair::kIpB), c, &failed) == EINVAL);
  REQUIRE(failed != nullptr);
  CHECK(std::strcmp(failed, "RTR") == 0);
  CHECK(query(*p.a.hca, q).qp_state == QpState::Init);
}
