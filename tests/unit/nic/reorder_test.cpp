// A fabric that reorders (adaptive routing): IRN's receiver with nack_gaps false keeps the
// packets that arrive after a gap without NACKing them, so a late packet is not taken for a
// lost one. TestWires at 100 Gb/s; chosen packets reach the responder late.
#include <doctest/doctest.h>

#include <algorithm>
#include <memory>
#include <set>

#include "tests/unit/nic/test_wire.h"

using namespace rdmasim;
using namespace rdmasim::nic;
using namespace rdmasim::nic::test;

namespace {

constexpr Rate kRate = Rate::gbps(100);
constexpr Time kDelay = us(1);
constexpr uint32_t kPackets = 16;
// How much later than its turn a late packet arrives: 2 us is six 4 KiB packet times at
// 100 Gb/s (4194 B: 0.34 us each), so packets after it overtake it.
constexpr Time kLate = us(2);

// A RoCE pair under IRN whose a -> b wire delivers each PSN in `late` once, kLate after its
// turn.
struct ReorderPair : Pair {
  std::set<uint32_t> late;
  Time last_late_arrival = 0;
  Time wire_free = 0;
  static HcaConfig config(bool nack_gaps) {
    HcaConfig c;
    c.loss_recovery.mode = LossRecovery::Irn;
    c.loss_recovery.nack_gaps = nack_gaps;
    return c;
  }
  explicit ReorderPair(bool nack_gaps) : Pair({}, kDelay, net::LinkLayer::RoCEv2, config(nack_gaps)) {
    a.wire->serialize = b.wire->serialize = kRate;
    a.wire->drop = [this](const RdmaPacket& p) {
      // The wire's FIFO, followed here packet by packet: this one's last bit leaves at
      // wire_free, and without the hook would arrive kDelay later.
      wire_free = std::max(wire_free, engine.now()) + tx_time(kRate, p.wire_bytes);
      if (!late.erase(p.bth.psn)) return false;
      const Time at = wire_free + kDelay + kLate;
      last_late_arrival = std::max(last_late_arrival, at);
      std::shared_ptr<net::Packet> copy = p.clone();
      engine.schedule_in(at - engine.now(), [this, copy] { static_cast<net::Node*>(b.hca.get())->receive(copy->clone(), 0); });
      return true;
    };
  }
  uint32_t psn(uint32_t k) const { return (QpParams{}.psn + k) & 0xffffff; }
};

struct Run {
  bool ok = false;
  Time done = 0, last_late_arrival = 0;
  HcaCounters requester, responder;
};

// One WRITE of kPackets packets; packets `late_k` (from the first) arrive late.
Run run_write(bool nack_gaps, const std::set<uint32_t>& late_k) {
  ReorderPair p(nack_gaps);
  for (uint32_t k : late_k) p.late.insert(p.psn(k));
  auto src = pattern(kPackets * 4096, 9);
  std::vector<uint8_t> dst(src.size(), 0);
  auto ks = p.reg(p.a, src), kd = p.reg(p.b, dst);
  p.post_and_run(p.a, rdma_wr(WrOpcode::RdmaWrite, src, ks, dst, kd));
  REQUIRE(p.a.wcs.size() == 1);
  Run r;
  r.ok = p.a.wcs[0].wc.status == WcStatus::Success && dst == src;
  r.done = p.a.wcs[0].at;
  r.last_late_arrival = p.last_late_arrival;
  r.requester = p.a.hca->counters();
  r.responder = p.b.hca->counters();
  return r;
}

}  // namespace

TEST_CASE("reorder: without nack_gaps, late WRITE packets are placed when they come and nothing is resent") {
  const Run r = run_write(false, {2, 3});
  CHECK(r.ok);  // success, and every byte where the WRITE put it
  // Packets 4.. reached b before 2 and 3: each was out of sequence, none was NACKed.
  CHECK(r.responder.out_of_sequence > 0);
  CHECK(r.responder.naks_sent == 0);
  // Nothing was lost, so nothing goes twice and no timer fires.
  CHECK(r.requester.retransmitted_packets == 0);
  CHECK(r.requester.timeouts == 0);
  // The ACK that completes the WRITE covers packets 2 and 3, so it leaves b only after they
  // arrived (and takes kDelay back at least).
  CHECK(r.done >= r.last_late_arrival + kDelay);
}

TEST_CASE("reorder: IRN's NACK on a gap resends the late packets, which nack_gaps false avoids") {
  // With nack_gaps (IRN's default) packet 4 arrives before 2 and 3 and is NACKed with the
  // cumulative ACK at 2: the requester takes 2 and 3 for lost and sends them again.
  const Run r = run_write(true, {2, 3});
  CHECK(r.ok);
  CHECK(r.responder.naks_sent > 0);
  CHECK(r.requester.retransmitted_packets >= 2);
}
