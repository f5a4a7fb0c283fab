// A fabric that reorders (adaptive routing): IRN's receiver with nack_gaps false keeps the
// packets that arrive after a gap without NACKing them, and the requester places READ
// responses after a gap, so a late packet is not taken for a lost one. TestWires at
// 100 Gb/s; chosen packets reach the other side late.
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

// One direction's late packets: each PSN in `psns` is delivered once, kLate after its turn.
struct LateSet {
  std::set<uint32_t> psns;
  std::set<uint32_t> lost;     // PSNs dropped once, never delivered
  Time wire_free = 0;          // the wire's FIFO, followed packet by packet
  Time last_late_arrival = 0;
};

// A RoCE pair under IRN whose wires deliver the PSNs of `late_ab` (a -> b: requests) and
// `late_ba` (b -> a: responses) late.
struct ReorderPair : Pair {
  LateSet late_ab, late_ba;
  static HcaConfig config(bool nack_gaps) {
    HcaConfig c;
    c.loss_recovery.mode = LossRecovery::Irn;
    c.loss_recovery.nack_gaps = nack_gaps;
    return c;
  }
  explicit ReorderPair(bool nack_gaps) : Pair({}, kDelay, net::LinkLayer::RoCEv2, config(nack_gaps)) {
    a.wire->serialize = b.wire->serialize = kRate;
    delay(*a.wire, late_ab, b);
    delay(*b.wire, late_ba, a);
  }
  void delay(TestWire& wire, LateSet& late, Side& to) {
    wire.drop = [this, &late, &to](const RdmaPacket& p) {
      // This packet's last bit leaves at wire_free; without the hook it would arrive kDelay
      // later. A late one is dropped from the wire and delivered kLate after that.
      late.wire_free = std::max(late.wire_free, engine.now()) + tx_time(kRate, p.wire_bytes);
      if (late.lost.erase(p.bth.psn)) return true;
      if (!late.psns.erase(p.bth.psn)) return false;
      const Time at = late.wire_free + kDelay + kLate;
      late.last_late_arrival = std::max(late.last_late_arrival, at);
      std::shared_ptr<net::Packet> copy = p.clone();
      net::Node* node = to.hca.get();
      engine.schedule_in(at - engine.now(), [node, copy] { node->receive(copy->clone(), 0); });
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

// One WRITE (a's data to b) or READ (b's data to a) of kPackets packets; packets `late_k`
// (from the first: WRITE requests, READ responses) arrive late, packets `lost_k` are lost
// once.
Run run(WrOpcode op, bool nack_gaps, const std::set<uint32_t>& late_k, const std::set<uint32_t>& lost_k = {}) {
  ReorderPair p(nack_gaps);
  LateSet& late = op == WrOpcode::RdmaRead ? p.late_ba : p.late_ab;
  for (uint32_t k : late_k) late.psns.insert(p.psn(k));
  for (uint32_t k : lost_k) late.lost.insert(p.psn(k));
  auto remote = pattern(kPackets * 4096, 9);
  std::vector<uint8_t> local(remote.size(), 0);
  if (op == WrOpcode::RdmaWrite) std::swap(remote, local);  // a WRITE sends a's pattern
  auto kl = p.reg(p.a, local), kr = p.reg(p.b, remote);
  p.post_and_run(p.a, rdma_wr(op, local, kl, remote, kr));
  REQUIRE(p.a.wcs.size() == 1);
  Run r;
  r.ok = p.a.wcs[0].wc.status == WcStatus::Success && local == remote;
  r.done = p.a.wcs[0].at;
  r.last_late_arrival = late.last_late_arrival;
  r.requester = p.a.hca->counters();
  r.responder = p.b.hca->counters();
  return r;
}

}  // namespace

TEST_CASE("reorder: without nack_gaps, late WRITE packets are placed when they come and nothing is resent") {
  const Run r = run(WrOpcode::RdmaWrite, false, {2, 3});
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
  const Run r = run(WrOpcode::RdmaWrite, true, {2, 3});
  CHECK(r.ok);
  CHECK(r.responder.naks_sent > 0);
  CHECK(r.requester.retransmitted_packets >= 2);
}

TEST_CASE("reorder: without nack_gaps, late READ responses complete the READ with nothing asked again") {
  // Responses 2 and 3 come after 4..: a places each where it belongs, and the READ
  // completes when the last of them arrives (not before: its bytes are needed).
  const Run r = run(WrOpcode::RdmaRead, false, {2, 3});
  CHECK(r.ok);
  CHECK(r.requester.out_of_sequence > 0);
  CHECK(r.requester.retransmitted_packets == 0);
  CHECK(r.requester.timeouts == 0);
  CHECK(r.done >= r.last_late_arrival);
  // IRN's default asks for the rest of the READ again at the first gap.
  const Run irn = run(WrOpcode::RdmaRead, true, {2, 3});
  CHECK(irn.ok);
  CHECK(irn.requester.retransmitted_packets > 0);
}

TEST_CASE("reorder: without nack_gaps, a packet really lost is resent by the timer") {
  // No NACK tells the requester of the gap, so its IRN timer does; then what no ACK
  // covers goes again (the WRITE from the lost packet on: no selective ACK says which of
  // them arrived; the READ from its first missing response) and the message completes
  // intact.
  for (const WrOpcode op : {WrOpcode::RdmaWrite, WrOpcode::RdmaRead}) {
    CAPTURE(static_cast<int>(op));
    const Run r = run(op, false, {}, {5});
    CHECK(r.ok);
    CHECK(r.requester.timeouts == 1);
    CHECK(r.requester.retransmitted_packets >= 1);
    CHECK(r.done >= LossRecoveryConfig{}.rto_low);  // waited for the timer
  }
}
