// ibv_rereg_mr semantics in the HCA: translation, PD and access change in place, the keys
// stay, and later accesses see the new attributes (man ibv_rereg_mr: "conceptually ...
// deregister memory region followed by register memory region").
#include <doctest/doctest.h>

#include <cerrno>
#include <cstring>

#include "tests/unit/nic/test_wire.h"

using namespace rdmasim;
using namespace rdmasim::nic;
using namespace rdmasim::nic::test;

namespace {

constexpr uint32_t kRw = kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead;

SendWr write_to(std::vector<uint8_t>& src, uint32_t lkey, uint64_t remote, uint32_t rkey) {
  SendWr wr;
  wr.opcode = WrOpcode::RdmaWrite;
  wr.send_flags = kSendSignaled;
  wr.sgl = {sge_of(src, lkey)};
  wr.remote_addr = remote;
  wr.rkey = rkey;
  return wr;
}

uint64_t addr_of(std::vector<uint8_t>& v) { return reinterpret_cast<uint64_t>(v.data()); }

}  // namespace

TEST_CASE("rereg_mr: CHANGE_ACCESS drops REMOTE_WRITE, so the next WRITE is REM_ACCESS_ERR") {
  // Before: the WRITE succeeds. After removing IBV_ACCESS_REMOTE_WRITE the same rkey no
  // longer grants it: NAK Remote Access -> IBV_WC_REM_ACCESS_ERR (man ibv_poll_cq).
  Pair p;
  auto src = pattern(64, 5);
  std::vector<uint8_t> dst(64, 0);
  auto ks = p.reg(p.a, src);
  auto kd = p.reg(p.b, dst, kRw);
  REQUIRE(p.a.hca->post_send(p.a.qpn, write_to(src, ks.lkey, addr_of(dst), kd.rkey)) == 0);
  p.engine.run();
  REQUIRE(p.a.wcs.size() == 1);
  CHECK(p.a.wcs[0].wc.status == WcStatus::Success);
  CHECK(dst == src);
  MrKeys k2;
  REQUIRE(p.b.hca->rereg_mr(kd.lkey, kReregChangeAccess, 0, nullptr, 0, 0,
                            kAccessLocalWrite | kAccessRemoteRead, &k2) == 0);
  CHECK(k2.lkey == kd.lkey);  // keys are kept
  CHECK(k2.rkey == kd.rkey);
  std::fill(dst.begin(), dst.end(), 0);
  REQUIRE(p.a.hca->post_send(p.a.qpn, write_to(src, ks.lkey, addr_of(dst), kd.rkey)) == 0);
  p.engine.run();
  REQUIRE(p.a.wcs.size() == 2);
  CHECK(p.a.wcs[1].wc.status == WcStatus::RemAccessErr);
  CHECK(dst == std::vector<uint8_t>(64, 0));
}

TEST_CASE("rereg_mr: CHANGE_TRANSLATION moves the MR; the old range is out of bounds") {
  // The rkey now covers [new, new + length): a WRITE there lands in the new buffer; the
  // old address is outside the MR -> REM_ACCESS_ERR.
  Pair p;
  auto src = pattern(64, 9);
  std::vector<uint8_t> old_buf(64, 0), new_buf(128, 0);
  auto ks = p.reg(p.a, src);
  auto kd = p.reg(p.b, old_buf, kRw);
  MrKeys k2;
  REQUIRE(p.b.hca->rereg_mr(kd.lkey, kReregChangeTranslation, 0, &p.mem, addr_of(new_buf),
                            new_buf.size(), 0, &k2) == 0);
  REQUIRE(p.a.hca->post_send(p.a.qpn, write_to(src, ks.lkey, addr_of(new_buf) + 64, kd.rkey)) == 0);
  p.engine.run();
  REQUIRE(p.a.wcs.size() == 1);
  CHECK(p.a.wcs[0].wc.status == WcStatus::Success);
  CHECK(std::memcmp(new_buf.data() + 64, src.data(), 64) == 0);
  if (addr_of(old_buf) + 64 <= addr_of(new_buf) || addr_of(old_buf) >= addr_of(new_buf) + 128) {
    REQUIRE(p.a.hca->post_send(p.a.qpn, write_to(src, ks.lkey, addr_of(old_buf), kd.rkey)) == 0);
    p.engine.run();
    REQUIRE(p.a.wcs.size() == 2);
    CHECK(p.a.wcs[1].wc.status == WcStatus::RemAccessErr);
    CHECK(old_buf == std::vector<uint8_t>(64, 0));
  }
}

TEST_CASE("rereg_mr: CHANGE_PD moves the MR to another PD; a QP of the old PD gets LOC_PROT_ERR") {
  // An lkey is usable only by QPs of the MR's PD (IBTA 10.2.3); after the move the QP's
  // gather fails its protection check -> IBV_WC_LOC_PROT_ERR.
  Pair p;
  auto src = pattern(64, 1);
  std::vector<uint8_t> dst(64, 0);
  auto ks = p.reg(p.a, src);
  auto kd = p.reg(p.b, dst);
  uint32_t pd2 = 0;
  REQUIRE(p.a.hca->alloc_pd(&pd2) == 0);
  MrKeys k2;
  REQUIRE(p.a.hca->rereg_mr(ks.lkey, kReregChangePd, pd2, nullptr, 0, 0, 0, &k2) == 0);
  CHECK(p.a.hca->dealloc_pd(pd2) == EBUSY);  // the MR now holds pd2
  REQUIRE(p.a.hca->post_send(p.a.qpn, write_to(src, ks.lkey, addr_of(dst), kd.rkey)) == 0);
  p.engine.run();
  REQUIRE(p.a.wcs.size() == 1);
  CHECK(p.a.wcs[0].wc.status == WcStatus::LocProtErr);
}

TEST_CASE("rereg_mr: bad input is refused and leaves the MR as it was") {
  // Same rules as reg_mr (REMOTE_WRITE needs LOCAL_WRITE: EINVAL); no
  // flag or an unknown flag is EINVAL; an unknown lkey or PD is ENOENT.
  Pair p;
  std::vector<uint8_t> buf(64, 0);
  auto k = p.reg(p.a, buf, kRw);
  MrKeys out;
  CHECK(p.a.hca->rereg_mr(k.lkey, 0, 0, nullptr, 0, 0, 0, &out) == EINVAL);
  CHECK(p.a.hca->rereg_mr(k.lkey, 8, 0, nullptr, 0, 0, 0, &out) == EINVAL);
  CHECK(p.a.hca->rereg_mr(k.lkey, kReregChangeAccess, 0, nullptr, 0, 0, kAccessRemoteWrite, &out) ==
        EINVAL);
  CHECK(p.a.hca->rereg_mr(k.lkey, kReregChangePd, 999, nullptr, 0, 0, 0, &out) == ENOENT);
  CHECK(p.a.hca->rereg_mr(k.lkey + 1, kReregChangeAccess, 0, nullptr, 0, 0, 0, &out) == ENOENT);
  CHECK(p.a.hca->rereg_mr(k.lkey, kReregChangeTranslation, 0, &p.mem, addr_of(buf), 0, 0, &out) ==
        EINVAL);
  // Still registered with its old rights: a local READ into it works.
  std::vector<uint8_t> remote(64, 4);
  auto kr = p.reg(p.b, remote);
  SendWr wr;
  wr.opcode = WrOpcode::RdmaRead;
  wr.send_flags = kSendSignaled;
  wr.sgl = {sge_of(buf, k.lkey)};
  wr.remote_addr = addr_of(remote);
  wr.rkey = kr.rkey;
  REQUIRE(p.a.hca->post_send(p.a.qpn, wr) == 0);
  p.engine.run();
  REQUIRE(p.a.wcs.size() == 1);
  CHECK(p.a.wcs[0].wc.status == WcStatus::Success);
  CHECK(buf == remote);
}
