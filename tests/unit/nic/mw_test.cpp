// Memory windows (IBTA 10.6.7; man ibv_alloc_mw, ibv_bind_mw, ibv_post_send): type 1 and
// type 2B windows bound by BIND_MW, freed by LOCAL_INV and SEND_WITH_INV, and remote access
// through them. Side b owns the memory and binds the windows on its QP; side a accesses.
#include <doctest/doctest.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "tests/unit/nic/test_wire.h"

using namespace rdmasim;
using namespace rdmasim::nic;
using namespace rdmasim::nic::test;

namespace {

constexpr uint32_t kMrAccess = kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead |
                               kAccessMwBind;

// A pair where b registered `mem` (4 KiB) with `access` and allocated a window of `type`.
struct MwPair {
  Pair p;
  std::vector<uint8_t> mem = std::vector<uint8_t>(4096, 0);
  std::vector<uint8_t> local = std::vector<uint8_t>(4096, 0);
  MrKeys mr, lmr;
  uint32_t mw = 0;  // the window's rkey as allocated
  uint64_t base = 0;

  explicit MwPair(MwType type = MwType::Type2, uint32_t access = kMrAccess) {
    mr = p.reg(p.b, mem, access);
    lmr = p.reg(p.a, local);
    base = reinterpret_cast<uint64_t>(mem.data());
    REQUIRE(p.b.hca->alloc_mw(p.b.pd, type, &mw) == 0);
  }

  SendWr bind(uint32_t new_rkey, uint64_t off, uint64_t len, uint32_t access,
              uint32_t mw_rkey = 0) {
    SendWr wr;
    wr.wr_id = 77;
    wr.opcode = WrOpcode::BindMw;
    wr.send_flags = kSendSignaled;
    wr.bind.mw_rkey = mw_rkey ? mw_rkey : mw;
    wr.bind.new_rkey = new_rkey;
    wr.bind.mr_lkey = len || off ? mr.lkey : 0;
    wr.bind.addr = len || off ? base + off : 0;
    wr.bind.length = len;
    wr.bind.access = access;
    return wr;
  }

  // Posts `wr` on b's QP, runs, and returns b's last completion status.
  WcStatus run_b(const SendWr& wr, uint32_t qpn = 0) {
    const size_t before = p.b.wcs.size();
    REQUIRE(p.b.hca->post_send(qpn ? qpn : p.b.qpn, wr) == 0);
    p.engine.run();
    REQUIRE(p.b.wcs.size() == before + 1);
    return p.b.wcs.back().wc.status;
  }

  // a writes (or reads) `len` bytes at mem offset `off` with `rkey`; a's completion status.
  WcStatus access(WrOpcode op, uint32_t rkey, uint64_t off, uint32_t len, uint32_t qpn = 0) {
    SendWr wr;
    wr.wr_id = 5;
    wr.opcode = op;
    wr.send_flags = kSendSignaled;
    wr.sgl = {sge_of(local, lmr.lkey, 0, len)};
    wr.remote_addr = base + off;
    wr.rkey = rkey;
    const size_t before = p.a.wcs.size();
    REQUIRE(p.a.hca->post_send(qpn ? qpn : p.a.qpn, wr) == 0);
    p.engine.run();
    REQUIRE(p.a.wcs.size() == before + 1);
    return p.a.wcs.back().wc.status;
  }
};

uint32_t with_variant(uint32_t key, uint8_t v) { return (key & ~0xffu) | v; }

}  // namespace

TEST_CASE("mw: alloc_mw and dealloc_mw errors") {
  Pair p;
  uint32_t k = 0;
  // No such PD: the HCA's "unknown object" (the daemon never lets a foreign handle through).
  CHECK(p.b.hca->alloc_mw(p.b.pd + 99, MwType::Type1, &k) == ENOENT);
  // ib_uverbs_alloc_mw: mw_type other than IB_MW_TYPE_1 / IB_MW_TYPE_2 is -EINVAL.
  CHECK(p.b.hca->alloc_mw(p.b.pd, static_cast<MwType>(3), &k) == EINVAL);
  REQUIRE(p.b.hca->alloc_mw(p.b.pd, MwType::Type1, &k) == 0);
  // A fresh window's key has variant 0 (binds set the low 8 bits).
  CHECK((k & 0xff) == 0);
  // The PD is in use while a window of it exists (dealloc_pd: EBUSY, as with MRs).
  CHECK(p.b.hca->dealloc_pd(p.b.pd) == EBUSY);
  CHECK(p.b.hca->dealloc_mw(k) == 0);
  CHECK(p.b.hca->dealloc_mw(k) == ENOENT);  // already gone

  // A device without memory windows (max_mw 0, no MEM_WINDOW flag): EOPNOTSUPP.
  Engine e;
  TestWire w(e, us(1));
  HcaConfig c;
  c.mem_windows = false;
  Hca h(e, c, w);
  uint32_t pd = 0;
  REQUIRE(h.alloc_pd(&pd) == 0);
  CHECK(h.alloc_mw(pd, MwType::Type1, &k) == EOPNOTSUPP);
}

TEST_CASE("mw: type 1 bind sets the key's low 8 bits; access inside the window only") {
  MwPair m(MwType::Type1);
  const uint32_t key = with_variant(m.mw, 0x01);  // ibv_inc_rkey of variant 0
  CHECK(m.run_b(m.bind(key, 1024, 512, kAccessRemoteWrite | kAccessRemoteRead)) == WcStatus::Success);
  CHECK(m.p.b.wcs.back().wc.opcode == WcOpcode::BindMw);  // man ibv_poll_cq: IBV_WC_BIND_MW
  CHECK(m.p.b.wcs.back().wc.wr_id == 77);
  // A WRITE of the whole window places the bytes at window offset 0 = MR offset 1024.
  auto data = pattern(512, 3);
  std::memcpy(m.local.data(), data.data(), 512);
  CHECK(m.access(WrOpcode::RdmaWrite, key, 1024, 512) == WcStatus::Success);
  CHECK(std::memcmp(m.mem.data() + 1024, data.data(), 512) == 0);
  CHECK(m.mem[1023] == 0);
  CHECK(m.mem[1536] == 0);
  // One byte past the window (still inside the MR): out of bounds, NAK Remote Access.
  CHECK(m.access(WrOpcode::RdmaRead, key, 1024, 513) == WcStatus::RemAccessErr);
}

TEST_CASE("mw: the window's access flags, not the MR's, govern remote access") {
  MwPair m(MwType::Type1);
  const uint32_t key = with_variant(m.mw, 0x01);
  // MR has REMOTE_WRITE; the window grants REMOTE_READ only.
  CHECK(m.run_b(m.bind(key, 0, 256, kAccessRemoteRead)) == WcStatus::Success);
  CHECK(m.access(WrOpcode::RdmaRead, key, 0, 256) == WcStatus::Success);
  CHECK(m.access(WrOpcode::RdmaWrite, key, 0, 8) == WcStatus::RemAccessErr);
  CHECK(state_of(*m.p.b.hca, m.p.b.qpn) == QpState::Err);  // responder class C error
}

TEST_CASE("mw: rebinding a type 1 window changes its key; the old key is invalid") {
  MwPair m(MwType::Type1);
  const uint32_t k1 = with_variant(m.mw, 0x01), k2 = with_variant(m.mw, 0x02);
  CHECK(m.run_b(m.bind(k1, 0, 256, kAccessRemoteRead)) == WcStatus::Success);
  CHECK(m.run_b(m.bind(k2, 0, 256, kAccessRemoteRead, k1)) == WcStatus::Success);
  CHECK(m.access(WrOpcode::RdmaRead, k2, 0, 64) == WcStatus::Success);
  CHECK(m.access(WrOpcode::RdmaRead, k1, 0, 64) == WcStatus::RemAccessErr);
}

TEST_CASE("mw: type 1 unbind (no MR, zero length) and zero-length windows grant nothing") {
  SUBCASE("unbind") {
    // man ibv_alloc_mw: a type 1 window is invalidated by ibv_bind_mw with zero length.
    MwPair m(MwType::Type1);
    const uint32_t k1 = with_variant(m.mw, 0x01), k2 = with_variant(m.mw, 0x02);
    CHECK(m.run_b(m.bind(k1, 0, 256, kAccessRemoteRead)) == WcStatus::Success);
    CHECK(m.run_b(m.bind(k2, 0, 0, 0, k1)) == WcStatus::Success);
    // The MR has no bound window any more: it can be deregistered.
    CHECK(m.access(WrOpcode::RdmaRead, k2, 0, 8) == WcStatus::RemAccessErr);
    CHECK(m.p.b.hca->dereg_mr(m.mr.lkey) == 0);
  }
  SUBCASE("zero-length window") {
    // Bound to the MR with length 0: valid, but no byte is inside it (rxe_lookup_mw).
    MwPair m(MwType::Type1);
    const uint32_t k1 = with_variant(m.mw, 0x01);
    SendWr wr = m.bind(k1, 0, 0, kAccessRemoteRead);
    wr.bind.mr_lkey = m.mr.lkey;
    wr.bind.addr = m.base;
    CHECK(m.run_b(wr) == WcStatus::Success);
    CHECK(m.access(WrOpcode::RdmaRead, k1, 0, 8) == WcStatus::RemAccessErr);
  }
}

TEST_CASE("mw: bind errors complete with MW_BIND_ERR and move the QP to ERR") {
  // man ibv_poll_cq: IBV_WC_MW_BIND_ERR "Memory Window Binding error: a failure happened
  // when tried to bind a MW to a MR"; IBTA rule numbers as rxe_check_bind_mw cites them.
  struct Case {
    const char* why;
    MwType type;
    uint32_t mr_access;
    uint64_t off, len;
    uint32_t access;
  };
  const Case cases[] = {
      {"C10-73: MR without IBV_ACCESS_MW_BIND", MwType::Type1, kMrAccess & ~kAccessMwBind, 0, 64,
       kAccessRemoteRead},
      {"C10-74: remote write window on an MR without local write", MwType::Type1,
       kAccessRemoteRead | kAccessMwBind, 0, 64, kAccessRemoteWrite},
      {"C10-75: window beyond the MR's end", MwType::Type1, kMrAccess, 4000, 97, kAccessRemoteRead},
      {"C10-75, type 2", MwType::Type2, kMrAccess, 4095, 2, kAccessRemoteRead},
      {"o10-37.2.40: type 2 with zero length", MwType::Type2, kMrAccess, 0, 0, kAccessRemoteRead},
      {"a right no window carries (MW_BIND)", MwType::Type1, kMrAccess, 0, 64, kAccessMwBind},
  };
  for (const Case& c : cases) {
    CAPTURE(c.why);
    MwPair m(c.type, c.mr_access);
    SendWr wr = m.bind(with_variant(m.mw, 1), c.off, c.len, c.access);
    if (c.len == 0) {
      wr.bind.mr_lkey = m.mr.lkey;
      wr.bind.addr = m.base;
    }
    CHECK(m.run_b(wr) == WcStatus::MwBindErr);
    CHECK(state_of(*m.p.b.hca, m.p.b.qpn) == QpState::Err);
    CHECK(m.p.b.hca->dereg_mr(m.mr.lkey) == 0);  // nothing was bound
  }
}

TEST_CASE("mw: LOCAL_WRITE among a window's rights binds, as on a ConnectX") {
  // mlx5 set_bind_wr maps IBV_ACCESS_LOCAL_WRITE of mw_access_flags to the mkey's
  // LOCAL_WRITE; programs pass LOCAL_WRITE | REMOTE_WRITE and the bind succeeds.
  for (MwType type : {MwType::Type1, MwType::Type2}) {
    MwPair m(type);
    CHECK(m.run_b(m.bind(with_variant(m.mw, 1), 0, 64, kAccessLocalWrite | kAccessRemoteWrite)) ==
          WcStatus::Success);
    CHECK(state_of(*m.p.b.hca, m.p.b.qpn) == QpState::Rts);
  }
}

TEST_CASE("mw: bind needs the window, the QP and the MR in one PD (C10-72)") {
  MwPair m(MwType::Type2);
  uint32_t pd2 = 0, other = 0;
  REQUIRE(m.p.b.hca->alloc_pd(&pd2) == 0);
  REQUIRE(m.p.b.hca->alloc_mw(pd2, MwType::Type2, &other) == 0);
  CHECK(m.run_b(m.bind(with_variant(other, 1), 0, 64, kAccessRemoteRead, other)) ==
        WcStatus::MwBindErr);
}

TEST_CASE("mw: a bound type 2 window cannot be bound again (o10-37.2.30)") {
  MwPair m(MwType::Type2);
  const uint32_t k1 = with_variant(m.mw, 0x11);
  CHECK(m.run_b(m.bind(k1, 0, 64, kAccessRemoteRead)) == WcStatus::Success);
  CHECK(m.run_b(m.bind(with_variant(m.mw, 0x12), 0, 64, kAccessRemoteRead, k1)) ==
        WcStatus::MwBindErr);
}

TEST_CASE("mw: a type 2 window is usable only through the QP it is bound to") {
  MwPair m(MwType::Type2);
  // A second connected QP pair between the same HCAs.
  QpParams q;
  const uint32_t a2 = m.p.add_qp(m.p.a, q), b2 = m.p.add_qp(m.p.b, q);
  m.p.connect_qp(m.p.a, a2, b2, Pair::kIpB, q);
  m.p.connect_qp(m.p.b, b2, a2, Pair::kIpA, q);
  const uint32_t key = with_variant(m.mw, 0x21);
  CHECK(m.run_b(m.bind(key, 0, 128, kAccessRemoteRead)) == WcStatus::Success);  // on b.qpn
  CHECK(m.access(WrOpcode::RdmaRead, key, 0, 128) == WcStatus::Success);
  CHECK(m.access(WrOpcode::RdmaRead, key, 0, 128, a2) == WcStatus::RemAccessErr);
}

TEST_CASE("mw: LOCAL_INV frees a type 2 window; its key then fails with REM_ACCESS_ERR") {
  MwPair m(MwType::Type2);
  const uint32_t key = with_variant(m.mw, 0x31);
  CHECK(m.run_b(m.bind(key, 0, 128, kAccessRemoteRead)) == WcStatus::Success);
  CHECK(m.p.b.hca->dereg_mr(m.mr.lkey) == EBUSY);  // a window is bound to it
  SendWr inv;
  inv.wr_id = 9;
  inv.opcode = WrOpcode::LocalInv;
  inv.send_flags = kSendSignaled;
  inv.invalidate_rkey = key;
  CHECK(m.run_b(inv) == WcStatus::Success);
  CHECK(m.p.b.wcs.back().wc.opcode == WcOpcode::LocalInv);  // IBV_WC_LOCAL_INV
  CHECK(m.access(WrOpcode::RdmaRead, key, 0, 8) == WcStatus::RemAccessErr);
  // Free again: the MR can go.
  CHECK(m.p.b.hca->dereg_mr(m.mr.lkey) == 0);
}

TEST_CASE("mw: LOCAL_INV errors complete with LOC_QP_OP_ERR") {
  // As rxe_do_local_ops reports a failed invalidate.
  struct Case {
    const char* why;
    MwType type;
    bool stale;
  };
  const Case cases[] = {
      {"o10-37.2.26: a type 1 window cannot be invalidated", MwType::Type1, false},
      {"the key's variant is not the window's current one", MwType::Type2, true},
  };
  for (const Case& c : cases) {
    CAPTURE(c.why);
    MwPair m(c.type);
    const uint32_t key = with_variant(m.mw, 0x41);
    CHECK(m.run_b(m.bind(key, 0, 64, kAccessRemoteRead)) == WcStatus::Success);
    SendWr inv;
    inv.opcode = WrOpcode::LocalInv;
    inv.send_flags = kSendSignaled;
    inv.invalidate_rkey = c.stale ? with_variant(key, 0x40) : key;
    CHECK(m.run_b(inv) == WcStatus::LocQpOpErr);
    CHECK(state_of(*m.p.b.hca, m.p.b.qpn) == QpState::Err);
  }
  // An MR key: there are no fast-register MRs to invalidate.
  MwPair m;
  SendWr inv;
  inv.opcode = WrOpcode::LocalInv;
  inv.invalidate_rkey = m.mr.rkey;
  CHECK(m.run_b(inv) == WcStatus::LocQpOpErr);
}

TEST_CASE("mw: SEND_WITH_INV frees the window at the responder (IBV_WC_WITH_INV)") {
  MwPair m(MwType::Type2);
  const uint32_t key = with_variant(m.mw, 0x51);
  CHECK(m.run_b(m.bind(key, 0, 128, kAccessRemoteRead)) == WcStatus::Success);
  std::vector<uint8_t> rbuf(64, 0);
  MrKeys rk = m.p.reg(m.p.b, rbuf);
  RecvWr rwr;
  rwr.wr_id = 31;
  rwr.sgl = {sge_of(rbuf, rk.lkey)};
  REQUIRE(m.p.b.hca->post_recv(m.p.b.qpn, rwr) == 0);
  SendWr s;
  s.wr_id = 32;
  s.opcode = WrOpcode::SendWithInv;
  s.send_flags = kSendSignaled;
  s.sgl = {sge_of(m.local, m.lmr.lkey, 0, 16)};
  s.invalidate_rkey = key;
  REQUIRE(m.p.a.hca->post_send(m.p.a.qpn, s) == 0);
  m.p.engine.run();
  // IBTA: SEND ONLY with Invalidate is opcode 0x17 (RC), carrying the IETH.
  CHECK(std::find(m.p.a.wire->sent.begin(), m.p.a.wire->sent.end(), 0x17) != m.p.a.wire->sent.end());
  REQUIRE(m.p.a.wcs.size() == 1);
  CHECK(m.p.a.wcs[0].wc.status == WcStatus::Success);
  CHECK(m.p.a.wcs[0].wc.opcode == WcOpcode::Send);  // man ibv_poll_cq: SEND_WITH_INV -> IBV_WC_SEND
  const Completion& r = m.p.b.wcs.back().wc;
  CHECK(r.status == WcStatus::Success);
  CHECK(r.wr_id == 31);
  CHECK(r.byte_len == 16);
  CHECK((r.wc_flags & kWcWithInv) != 0);
  CHECK(r.imm_data == key);  // wc.invalidated_rkey
  CHECK(m.access(WrOpcode::RdmaRead, key, 0, 8) == WcStatus::RemAccessErr);
}

TEST_CASE("mw: SEND_WITH_INV of a key the responder cannot invalidate is REM_INV_REQ_ERR") {
  // IBTA class J (responder invalidate error): the receive completes in error
  // (rxe: IB_WC_REM_INV_REQ_ERR), the requester gets NAK Invalid Request.
  for (const bool type1 : {false, true}) {
    CAPTURE(type1);
    MwPair m(type1 ? MwType::Type1 : MwType::Type2);
    const uint32_t key = with_variant(m.mw, 0x61);
    CHECK(m.run_b(m.bind(key, 0, 128, kAccessRemoteRead)) == WcStatus::Success);
    std::vector<uint8_t> rbuf(64, 0);
    MrKeys rk = m.p.reg(m.p.b, rbuf);
    RecvWr rwr;
    rwr.sgl = {sge_of(rbuf, rk.lkey)};
    REQUIRE(m.p.b.hca->post_recv(m.p.b.qpn, rwr) == 0);
    SendWr s;
    s.opcode = WrOpcode::SendWithInv;
    s.send_flags = kSendSignaled;
    s.sgl = {sge_of(m.local, m.lmr.lkey, 0, 16)};
    s.invalidate_rkey = type1 ? key : with_variant(key, 0x60);  // type 1, or a stale variant
    REQUIRE(m.p.a.hca->post_send(m.p.a.qpn, s) == 0);
    m.p.engine.run();
    REQUIRE(m.p.a.wcs.size() == 1);
    CHECK(m.p.a.wcs[0].wc.status == WcStatus::RemInvReqErr);
    CHECK(m.p.b.wcs.back().wc.status == WcStatus::RemInvReqErr);
    CHECK(state_of(*m.p.b.hca, m.p.b.qpn) == QpState::Err);
  }
}

TEST_CASE("mw: dereg/rereg of an MR with a bound window is EBUSY; dealloc_mw unbinds") {
  MwPair m(MwType::Type1);
  CHECK(m.run_b(m.bind(with_variant(m.mw, 1), 0, 64, kAccessRemoteRead)) == WcStatus::Success);
  // IBTA 10.6.7.2.6, man ibv_alloc_mw: "ibv_dereg_mr() fails if any memory window is
  // still bound to this MR".
  CHECK(m.p.b.hca->dereg_mr(m.mr.lkey) == EBUSY);
  MrKeys k;
  CHECK(m.p.b.hca->rereg_mr(m.mr.lkey, kReregChangeAccess, 0, nullptr, 0, 0, kMrAccess, &k) == EBUSY);
  // man ibv_alloc_mw: ibv_dealloc_mw "Unbinds in case was previously bound".
  CHECK(m.p.b.hca->dealloc_mw(m.mw) == 0);
  CHECK(m.p.b.hca->dereg_mr(m.mr.lkey) == 0);
}

TEST_CASE("mw: destroying the QP frees the type 2 windows bound to it") {
  MwPair m(MwType::Type2);
  CHECK(m.run_b(m.bind(with_variant(m.mw, 1), 0, 64, kAccessRemoteRead)) == WcStatus::Success);
  CHECK(m.p.b.hca->dereg_mr(m.mr.lkey) == EBUSY);
  REQUIRE(m.p.b.hca->destroy_qp(m.p.b.qpn) == 0);
  CHECK(m.p.b.hca->dereg_mr(m.mr.lkey) == 0);
}

TEST_CASE("mw: post-time errors of BIND_MW, LOCAL_INV and SEND_WITH_INV") {
  MwPair m(MwType::Type2);
  SendWr big = m.bind(1, 0, (uint64_t{1} << 31) + 1, kAccessRemoteRead);
  // mlx5 set_bind_wr: a window above 2 GiB (one KLM) is EOPNOTSUPP.
  CHECK(m.p.b.hca->post_send(m.p.b.qpn, big) == EOPNOTSUPP);
  // mlx5_bind_mw / o10-36.2.2: zero-based windows are EINVAL.
  CHECK(m.p.b.hca->post_send(m.p.b.qpn, m.bind(1, 0, 64, kAccessRemoteRead | kAccessZeroBased)) ==
        EINVAL);
  QpParams ud;
  ud.type = QpType::UD;
  QpParams uc;
  uc.type = QpType::UC;
  const uint32_t udq = m.p.add_qp(m.p.b, ud), ucq = m.p.add_qp(m.p.b, uc);
  m.p.connect_qp(m.p.b, udq, 0, Pair::kIpA, ud);
  m.p.connect_qp(m.p.b, ucq, m.p.a.qpn, Pair::kIpA, uc);
  // man ibv_post_send opcode table: BIND_MW / LOCAL_INV / SEND_WITH_INV are not UD opcodes.
  CHECK(m.p.b.hca->post_send(udq, m.bind(1, 0, 64, kAccessRemoteRead)) == EINVAL);
  SendWr inv;
  inv.opcode = WrOpcode::SendWithInv;
  CHECK(m.p.b.hca->post_send(udq, inv) == EINVAL);
  // UC: IBTA has SEND with Invalidate only for RC/XRC opcodes (this model: EINVAL).
  CHECK(m.p.b.hca->post_send(ucq, inv) == EINVAL);
  // UC may bind windows (man ibv_bind_mw: "UC, RC or XRC_SEND").
  CHECK(m.run_b(m.bind(with_variant(m.mw, 7), 0, 64, kAccessRemoteRead), ucq) == WcStatus::Success);
}

TEST_CASE("mw: a 3-packet SEND_WITH_INV carries the IETH on its last packet only") {
  // IBTA opcodes: SEND FIRST 0x00, MIDDLE 0x01, LAST with Invalidate 0x16 (10000 B at
  // MTU 4096 = 3 packets).
  MwPair m(MwType::Type2);
  const uint32_t key = with_variant(m.mw, 0x71);
  CHECK(m.run_b(m.bind(key, 0, 128, kAccessRemoteRead)) == WcStatus::Success);
  std::vector<uint8_t> rbuf(12000, 0);
  MrKeys rk = m.p.reg(m.p.b, rbuf);
  RecvWr rwr;
  rwr.sgl = {sge_of(rbuf, rk.lkey)};
  REQUIRE(m.p.b.hca->post_recv(m.p.b.qpn, rwr) == 0);
  auto data = pattern(4096, 9);
  std::memcpy(m.local.data(), data.data(), data.size());
  SendWr s;
  s.opcode = WrOpcode::SendWithInv;
  s.send_flags = kSendSignaled;
  s.sgl = {sge_of(m.local, m.lmr.lkey), sge_of(m.local, m.lmr.lkey), sge_of(m.local, m.lmr.lkey, 0, 10000 - 8192)};
  s.invalidate_rkey = key;
  const size_t before = m.p.a.wire->sent.size();
  REQUIRE(m.p.a.hca->post_send(m.p.a.qpn, s) == 0);
  m.p.engine.run();
  std::vector<uint8_t> ops(m.p.a.wire->sent.begin() + before, m.p.a.wire->sent.end());
  CHECK(ops == std::vector<uint8_t>{0x00, 0x01, 0x16});
  const Completion& r = m.p.b.wcs.back().wc;
  CHECK(r.status == WcStatus::Success);
  CHECK(r.byte_len == 10000);
  CHECK((r.wc_flags & kWcWithInv) != 0);
  CHECK(r.imm_data == key);
  CHECK(std::memcmp(rbuf.data() + 4096, data.data(), 4096) == 0);
}

TEST_CASE("mw: a bind completes in send-queue order, after the SEND posted before it") {
  // Completions of one send queue are returned in order (IBTA 10.8.3): the BIND_MW behind
  // an RC SEND completes once the SEND is acknowledged, though the NIC ran it earlier.
  MwPair m(MwType::Type1);
  std::vector<uint8_t> rbuf(64, 0);
  MrKeys rk = m.p.reg(m.p.a, rbuf);
  RecvWr rwr;
  rwr.sgl = {sge_of(rbuf, rk.lkey)};
  REQUIRE(m.p.a.hca->post_recv(m.p.a.qpn, rwr) == 0);
  SendWr s;
  s.wr_id = 1;
  s.opcode = WrOpcode::Send;
  s.send_flags = kSendSignaled;
  s.sgl = {sge_of(m.mem, m.mr.lkey, 0, 32)};
  REQUIRE(m.p.b.hca->post_send(m.p.b.qpn, s) == 0);
  REQUIRE(m.p.b.hca->post_send(m.p.b.qpn, m.bind(with_variant(m.mw, 1), 0, 64, kAccessRemoteRead)) == 0);
  m.p.engine.run();
  REQUIRE(m.p.b.wcs.size() == 2);
  CHECK(m.p.b.wcs[0].wc.wr_id == 1);
  CHECK(m.p.b.wcs[0].wc.opcode == WcOpcode::Send);
  CHECK(m.p.b.wcs[1].wc.opcode == WcOpcode::BindMw);
  CHECK(m.p.b.wcs[1].wc.status == WcStatus::Success);
  // The SEND needs the 1 us flight and the ACK's 1 us back: the bind cannot complete sooner.
  CHECK(m.p.b.wcs[1].at >= m.p.b.wcs[0].at);
  CHECK(m.p.b.wcs[0].at >= us(2));
}
