// READ/atomic resources: the requester's max_rd_atomic, the responder's max_dest_rd_atomic,
// and duplicate READs/atomics when responses are lost on one direction only.
#include <doctest/doctest.h>

#include <cstring>
#include <random>

#include "tests/unit/nic/test_wire.h"

using namespace rdmasim;
using namespace rdmasim::nic;
using namespace rdmasim::nic::test;

namespace {

constexpr uint8_t kReadRequest = 0x0c;  // RC RDMA READ Request
constexpr uint8_t kReadResponseOnly = 0x10;

SendWr read_wr(std::vector<uint8_t>& local, MrKeys kl, uint32_t off, uint32_t len,
               std::vector<uint8_t>& remote, uint32_t rkey) {
  SendWr wr;
  wr.wr_id = off;
  wr.opcode = WrOpcode::RdmaRead;
  wr.send_flags = kSendSignaled;
  wr.sgl = {sge_of(local, kl.lkey, off, len)};
  wr.remote_addr = reinterpret_cast<uint64_t>(remote.data()) + off;
  wr.rkey = rkey;
  return wr;
}

// Posts three 64-byte READs with B's port closed until 20 us (its responses wait there).
struct ThreeReads {
  Pair p;
  std::vector<uint8_t> remote = pattern(192, 5), local = std::vector<uint8_t>(192, 0);
  explicit ThreeReads(QpParams q) : p(q) {
    auto kr = p.reg(p.b, remote);
    auto kl = p.reg(p.a, local);
    p.b.wire->open = false;
    for (uint32_t k = 0; k < 3; ++k)
      REQUIRE(p.a.hca->post_send(p.a.qpn, read_wr(local, kl, k * 64, 64, remote, kr.rkey)) == 0);
    p.engine.schedule_at(us(20), [this] { p.b.wire->reopen(); });
    p.engine.run();
  }
  std::vector<Time> request_times() const {
    std::vector<Time> t;
    for (size_t i = 0; i < p.a.wire->sent.size(); ++i)
      if (p.a.wire->sent[i] == kReadRequest) t.push_back(p.a.wire->sent_at[i]);
    return t;
  }
  QpState state(Side& s) {
    QpAttr a;
    REQUIRE(s.hca->query_qp(s.qpn, &a, nullptr) == 0);
    return a.qp_state;
  }
};

}  // namespace

TEST_CASE("rd_atomic: max_rd_atomic = 1 holds the next READ until the previous response") {
  QpParams q;
  q.max_rd_atomic = 1;
  q.max_dest_rd_atomic = 1;
  ThreeReads t(q);
  REQUIRE(t.p.a.wcs.size() == 3);
  for (const auto& w : t.p.a.wcs) CHECK(w.wc.status == WcStatus::Success);
  CHECK(t.local == t.remote);
  const auto req = t.request_times();
  REQUIRE(req.size() == 3);
  // B's responses leave at >= 20 us (port closed); each takes 1 us to reach A, then
  // rx_latency (100 ns) before A sees it: only then may the next READ go.
  std::vector<Time> resp;
  for (size_t i = 0; i < t.p.b.wire->sent.size(); ++i)
    if (t.p.b.wire->sent[i] == kReadResponseOnly) resp.push_back(t.p.b.wire->sent_at[i]);
  REQUIRE(resp.size() == 3);
  CHECK(resp[0] >= us(20));
  for (int k = 1; k < 3; ++k) CHECK(req[k] >= resp[k - 1] + us(1) + ns(100));
  CHECK(t.p.b.hca->counters().naks_sent == 0);
  CHECK(t.state(t.p.b) == QpState::Rts);
}

TEST_CASE("rd_atomic: max_rd_atomic = 4 sends all three READs at once") {
  ThreeReads t(QpParams{});
  const auto req = t.request_times();
  REQUIRE(req.size() == 3);
  CHECK(req[2] < us(1));  // all before the first could even reach B (1 us wire)
  REQUIRE(t.p.a.wcs.size() == 3);
  for (const auto& w : t.p.a.wcs) CHECK(w.wc.status == WcStatus::Success);
  CHECK(t.local == t.remote);
}

TEST_CASE("rd_atomic: a requester beyond the responder's max_dest_rd_atomic gets REM_INV_REQ_ERR") {
  // A may have 2 outstanding, B holds 1 resource: the 2nd READ arrives while the 1st's
  // response still waits at B's closed port -> Invalid Request NAK (class C), B to ERR.
  QpParams q;
  q.max_rd_atomic = 2;
  q.max_dest_rd_atomic = 1;
  ThreeReads t(q);
  REQUIRE(t.p.a.wcs.size() == 3);
  // The 1st READ never got its response (B's queue was discarded on ERR): flushed, in
  // order before the NAKed 2nd; the 3rd is flushed by A's ERR.
  CHECK(t.p.a.wcs[0].wc.status == WcStatus::WrFlushErr);
  CHECK(t.p.a.wcs[1].wc.status == WcStatus::RemInvReqErr);
  CHECK(t.p.a.wcs[2].wc.status == WcStatus::WrFlushErr);
  CHECK(t.p.b.hca->counters().naks_sent == 1);
  CHECK(t.state(t.p.a) == QpState::Err);
  CHECK(t.state(t.p.b) == QpState::Err);
  CHECK(t.local == std::vector<uint8_t>(192, 0));
}

TEST_CASE("rd_atomic: max_dest_rd_atomic = 0 refuses every READ and atomic") {
  for (WrOpcode op : {WrOpcode::RdmaRead, WrOpcode::AtomicFetchAndAdd}) {
    QpParams q;
    q.max_dest_rd_atomic = 0;
    Pair p(q);
    std::vector<AsyncEvent> ev;
    p.b.hca->set_async_sink([&](const AsyncEvent& e) { ev.push_back(e); });
    std::vector<uint8_t> remote(8, 0), local(8, 0);
    auto kr = p.reg(p.b, remote);
    auto kl = p.reg(p.a, local);
    SendWr wr = read_wr(local, kl, 0, 8, remote, kr.rkey);
    wr.opcode = op;
    wr.compare_add = 1;
    REQUIRE(p.a.hca->post_send(p.a.qpn, wr) == 0);
    p.engine.run();
    REQUIRE(p.a.wcs.size() == 1);
    CHECK(p.a.wcs[0].wc.status == WcStatus::RemInvReqErr);
    CHECK(remote == std::vector<uint8_t>(8, 0));  // the atomic did not execute
    // The responder reports the Invalid Request as an affiliated event (IBTA 11.6.3).
    REQUIRE(ev.size() == 1);
    CHECK(ev[0].type == AsyncEventType::QpReqErr);
  }
}

TEST_CASE("rd_atomic: atomics over a response path losing 20%: each executed once, originals from the cache") {
  QpParams q;
  q.timeout = 1;  // 8.192 us
  Pair p(q);
  std::mt19937 rng(7);
  std::bernoulli_distribution lose(0.2);
  p.b.wire->drop = [&](const nic::RdmaPacket&) { return lose(rng); };  // B -> A only
  std::vector<uint8_t> remote(8, 0);
  const uint64_t start = 40;
  std::memcpy(remote.data(), &start, 8);
  const int n = 60;  // within the send queue (64)
  std::vector<uint8_t> local(8 * n, 0);
  auto kr = p.reg(p.b, remote);
  auto kl = p.reg(p.a, local);
  for (int k = 0; k < n; ++k) {
    SendWr wr;
    wr.wr_id = k;
    wr.opcode = WrOpcode::AtomicFetchAndAdd;
    wr.send_flags = kSendSignaled;
    wr.sgl = {sge_of(local, kl.lkey, 8 * k, 8)};
    wr.remote_addr = reinterpret_cast<uint64_t>(remote.data());
    wr.rkey = kr.rkey;
    wr.compare_add = k + 1;
    REQUIRE(p.a.hca->post_send(p.a.qpn, wr) == 0);
  }
  p.engine.run();
  REQUIRE(p.a.wcs.size() == n);
  for (const auto& w : p.a.wcs) CHECK(w.wc.status == WcStatus::Success);
  // Executed once each, in PSN order: the k-th returns 40 + (1 + ... + k) = 40 + k(k+1)/2
  // and the final value is 40 + n(n+1)/2.
  for (int k = 0; k < n; ++k) {
    uint64_t orig = 0;
    std::memcpy(&orig, local.data() + 8 * k, 8);
    CHECK(orig == start + uint64_t(k) * (k + 1) / 2);
  }
  uint64_t now = 0;
  std::memcpy(&now, remote.data(), 8);
  CHECK(now == start + uint64_t(n) * (n + 1) / 2);
  // A -> B loses nothing, so every retransmitted request reaches B behind its ePSN.
  CHECK(p.b.hca->counters().duplicates > 0);
  CHECK(p.b.hca->counters().duplicates == p.a.hca->counters().retransmitted_packets);
}

TEST_CASE("rd_atomic: READs over a response path losing 10% are re-read and arrive intact") {
  QpParams q;
  q.timeout = 1;
  q.mtu = 1;  // 256: 2000 bytes = 8 response packets
  Pair p(q);
  std::mt19937 rng(3);
  std::bernoulli_distribution lose(0.1);
  p.b.wire->drop = [&](const nic::RdmaPacket&) { return lose(rng); };
  const uint32_t n = 20, len = 2000;
  auto remote = pattern(n * len, 9);
  std::vector<uint8_t> local(n * len, 0);
  auto kr = p.reg(p.b, remote);
  auto kl = p.reg(p.a, local);
  for (uint32_t k = 0; k < n; ++k)
    REQUIRE(p.a.hca->post_send(p.a.qpn, read_wr(local, kl, k * len, len, remote, kr.rkey)) == 0);
  p.engine.run();
  REQUIRE(p.a.wcs.size() == n);
  for (const auto& w : p.a.wcs) CHECK(w.wc.status == WcStatus::Success);
  CHECK(local == remote);
  CHECK(p.b.hca->counters().duplicates > 0);
  CHECK(p.b.hca->counters().duplicates == p.a.hca->counters().retransmitted_packets);
}
