// IRN selective repeat (HcaConfig::loss_recovery, sim/nic/irn.cpp) beside go-back-N, on
// TestWires that serialize at 100 Gb/s and drop chosen packets once. Each expectation is
// derived beside it from the wire's timeline.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <set>

#include "sim/net/ibta.h"

#include "tests/unit/nic/fabric_pair.h"
#include "tests/unit/nic/test_wire.h"

using namespace rdmasim;
using namespace rdmasim::nic;
using namespace rdmasim::nic::test;

namespace {

// PSN distance a - b in 24-bit arithmetic (as the IBTA orders PSNs).
int32_t psn_diff(uint32_t a, uint32_t b) { return static_cast<int32_t>((a - b) << 8) >> 8; }

constexpr Rate kRate = Rate::gbps(100);
constexpr Time kDelay = us(1);

HcaConfig config_of(LossRecovery mode, uint32_t bdp = 0) {
  HcaConfig c;
  c.loss_recovery.mode = mode;
  c.loss_recovery.bdp_packets = bdp;
  return c;
}

// A RoCE pair whose wires serialize at 100 Gb/s; a's wire drops each PSN of `lose` once.
struct LossyPair : Pair {
  std::set<uint32_t> lose;
  LossyPair(LossRecovery mode, QpParams q = {}, uint32_t bdp = 0, net::LinkLayer ll = net::LinkLayer::RoCEv2)
      : Pair(q, kDelay, ll, config_of(mode, bdp)) {
    a.wire->serialize = b.wire->serialize = kRate;
    a.wire->drop = [this](const RdmaPacket& p) { return lose.erase(p.bth.psn) > 0; };
  }
  uint32_t psn(uint32_t k) const { return (QpParams{}.psn + k) & 0xffffff; }
};

// One WRITE of `packets` packets (MTU 4096), PSNs `lost_k` (from the first) dropped once:
// when its completion arrived, when its last packet was first sent, a's counters.
struct WriteRun {
  Time done = 0, last_send = 0;
  HcaCounters counters;
};
WriteRun run_write(LossRecovery mode, std::set<uint32_t> lost_k, uint32_t packets = 64,
                   net::LinkLayer ll = net::LinkLayer::RoCEv2) {
  LossyPair p(mode, {}, 0, ll);
  for (uint32_t k : lost_k) p.lose.insert(p.psn(k));
  auto src = pattern(packets * 4096, 5);
  std::vector<uint8_t> dst(src.size(), 0);
  auto ks = p.reg(p.a, src), kd = p.reg(p.b, dst);
  p.post_and_run(p.a, rdma_wr(WrOpcode::RdmaWrite, src, ks, dst, kd));
  REQUIRE(p.a.wcs.size() == 1);
  CHECK(p.a.wcs[0].wc.status == WcStatus::Success);
  CHECK(dst == src);
  WriteRun r;
  r.done = p.a.wcs[0].at;
  r.last_send = p.a.wire->sent_at[packets - 1];
  r.counters = p.a.hca->counters();
  return r;
}

}  // namespace

TEST_CASE("irn: one lost packet of a 64-packet WRITE is the only one resent, and costs one packet time") {
  // Without loss the 64 packets leave back to back; the completion follows the last one by
  // the wire and the ACK's trip. IRN: packet 11's arrival NACKs packet 10, which a resends
  // once, behind the 53 still on the wire (the RTT, ~2 us, is shorter than their 17.8 us):
  // the last byte leaves one packet time later than without loss. The resend asks for its
  // own ACK, which goes out just before the ACK of the whole message (the drained packets):
  // that adds at most one ACK's time (86 B at 100 Gb/s: 6.9 ns).
  const WriteRun clean = run_write(LossRecovery::Irn, {});
  const WriteRun irn = run_write(LossRecovery::Irn, {10});
  CHECK(clean.counters.retransmitted_packets == 0);
  CHECK(irn.counters.retransmitted_packets == 1);
  // A middle WRITE packet under IRN: 4096 B payload + BTH 12 + RETH 16 (IRN) + ICRC 4 +
  // Ethernet 14 + IPv4 20 + UDP 8 + FCS 4 + preamble/gap 20 = 4194 B.
  const Time packet = tx_time(kRate, 4194);
  const Time ack = tx_time(kRate, 86);
  CHECK(irn.done - clean.done >= packet);
  CHECK(irn.done - clean.done <= packet + ack);
  // Go-back-N resends from packet 10 to the last sent (54 packets) behind the same 53.
  const WriteRun gbn_clean = run_write(LossRecovery::GoBackN, {});
  const WriteRun gbn = run_write(LossRecovery::GoBackN, {10});
  CHECK(gbn.counters.retransmitted_packets == 54);
  CHECK(gbn.done - gbn_clean.done >= 53 * tx_time(kRate, 4178));  // 4178: no RETH in the middle
}

TEST_CASE("irn: on InfiniBand too, one lost packet is the only one resent") {
  // The same 64-packet WRITE on IB (no GRH: LRH 8 + BTH 12 + RETH 16 + 4096 + ICRC 4 +
  // VCRC 2 = 4138 B per middle packet): packet 10 lost, packet 10 alone resent, one IB
  // packet time later than without the loss (plus at most one ACK: LRH 8 + BTH 12 + AETH 4 +
  // ICRC 4 + VCRC 2 = 30 B).
  const WriteRun clean = run_write(LossRecovery::Irn, {}, 64, net::LinkLayer::InfiniBand);
  const WriteRun lossy = run_write(LossRecovery::Irn, {10}, 64, net::LinkLayer::InfiniBand);
  CHECK(lossy.counters.retransmitted_packets == 1);
  CHECK(lossy.done - clean.done >= tx_time(kRate, 4138));
  CHECK(lossy.done - clean.done <= tx_time(kRate, 4138) + tx_time(kRate, 30));
}

TEST_CASE("irn: several losses in one window are each resent once; SEND receives complete in order, intact") {
  LossyPair p(LossRecovery::Irn);
  const uint32_t msgs = 8, len = 8 * 4096;  // 8 packets each, PSNs 0..63
  auto src = pattern(msgs * len, 9);
  std::vector<uint8_t> dst(src.size(), 0);
  auto ks = p.reg(p.a, src), kd = p.reg(p.b, dst);
  // Lost: a first packet, a middle one, a last one (of messages 0, 3 and 5), and two in a row.
  for (uint32_t k : {0u, 28u, 47u, 50u, 51u}) p.lose.insert(p.psn(k));
  for (uint32_t m = 0; m < msgs; ++m) {
    RecvWr rr;
    rr.wr_id = m;
    rr.sgl = {sge_of(dst, kd.lkey, m * len, len)};
    REQUIRE(p.b.hca->post_recv(p.b.qpn, rr) == 0);
  }
  for (uint32_t m = 0; m < msgs; ++m) {
    SendWr wr;
    wr.wr_id = m;
    wr.opcode = WrOpcode::Send;
    wr.send_flags = kSendSignaled;
    wr.sgl = {sge_of(src, ks.lkey, m * len, len)};
    REQUIRE(p.a.hca->post_send(p.a.qpn, wr) == 0);
  }
  p.engine.run();
  REQUIRE(p.b.wcs.size() == msgs);
  for (uint32_t m = 0; m < msgs; ++m) {
    CHECK(p.b.wcs[m].wc.status == WcStatus::Success);
    CHECK(p.b.wcs[m].wc.wr_id == m);  // in message order
    CHECK(p.b.wcs[m].wc.byte_len == len);
  }
  CHECK(dst == src);
  REQUIRE(p.a.wcs.size() == msgs);
  for (const auto& w : p.a.wcs) CHECK(w.wc.status == WcStatus::Success);
  // Every loss is followed by a packet that arrives, so NACKs find them all: exactly the 5
  // lost packets are resent, no timer fires.
  CHECK(p.a.hca->counters().retransmitted_packets == 5);
  CHECK(p.a.hca->counters().timeouts == 0);
  CHECK(p.b.hca->counters().naks_sent > 0);
}

TEST_CASE("irn: a lost tail packet with few in flight is resent after RTO_low, not the IBTA timeout") {
  // A 2-packet WRITE loses its last packet: no later packet, so no NACK. With 2 packets in
  // flight (<= N = 3) the timer is RTO_low (100 us) from the last send; then the resend
  // crosses the wire and the ACK comes back (a few us). Go-back-N waits for the QP's local
  // ACK timeout instead: 4.096 us * 2^14 = 67.1 ms with QpParams' timeout 14.
  for (LossRecovery mode : {LossRecovery::Irn, LossRecovery::GoBackN}) {
    const WriteRun r = run_write(mode, {1}, 2);
    const Time after = r.done - r.last_send;
    CHECK(r.counters.timeouts == 1);
    if (mode == LossRecovery::Irn) {
      CHECK(after >= us(100));
      CHECK(after <= us(100) + us(5));
    } else {
      CHECK(after >= ns(4096) * (1 << 14));
    }
  }
}

TEST_CASE("irn: a lost READ response asks for the rest of the READ at once") {
  // 16 response packets, the 6th lost on b's wire: the 7th's arrival makes a ask again from
  // the 6th (one resent request), long before RTO_low (100 us).
  LossyPair p(LossRecovery::Irn);
  auto remote = pattern(16 * 4096, 3);
  std::vector<uint8_t> local(remote.size(), 0);
  auto kl = p.reg(p.a, local), kr = p.reg(p.b, remote);
  std::set<uint32_t> lose_resp = {p.psn(5)};
  p.b.wire->drop = [&](const RdmaPacket& q) { return lose_resp.erase(q.bth.psn) > 0; };
  p.post_and_run(p.a, rdma_wr(WrOpcode::RdmaRead, local, kl, remote, kr));
  REQUIRE(p.a.wcs.size() == 1);
  CHECK(p.a.wcs[0].wc.status == WcStatus::Success);
  CHECK(local == remote);
  CHECK(p.a.hca->counters().retransmitted_packets == 1);
  CHECK(p.a.hca->counters().timeouts == 0);
  CHECK(p.a.wcs[0].at < us(100));
}

TEST_CASE("irn: a lost READ request among WRITEs is resent; a lost atomic response runs the atomic once") {
  LossyPair p(LossRecovery::Irn);
  auto src = pattern(8 * 4096, 7), remote = pattern(4 * 4096, 8);
  std::vector<uint8_t> dst(src.size(), 0), local(remote.size(), 0);
  std::vector<uint8_t> counter(8, 0);
  auto ks = p.reg(p.a, src), kd = p.reg(p.b, dst);
  auto kl = p.reg(p.a, local), kr = p.reg(p.b, remote);
  auto kc = p.reg(p.b, counter);
  std::vector<uint8_t> orig(8, 0xee);
  auto ko = p.reg(p.a, orig);
  // PSNs: WRITE 0..3, READ 4..7 (its request is PSN 4), WRITE 8..11, FETCH_ADD 12.
  p.lose.insert(p.psn(4));
  bool atomic_ack_lost = false;
  p.b.wire->drop = [&](const RdmaPacket& q) {
    if (atomic_ack_lost || net::ibta::info(q.bth.opcode).op != net::ibta::Op::AtomicAck) return false;
    return atomic_ack_lost = true;
  };
  auto half_write = [&](uint32_t part) {
    SendWr w = rdma_wr(WrOpcode::RdmaWrite, src, ks, dst, kd);
    w.sgl = {sge_of(src, ks.lkey, part * 4 * 4096, 4 * 4096)};
    w.remote_addr += part * 4 * 4096;
    return w;
  };
  REQUIRE(p.a.hca->post_send(p.a.qpn, half_write(0)) == 0);
  REQUIRE(p.a.hca->post_send(p.a.qpn, rdma_wr(WrOpcode::RdmaRead, local, kl, remote, kr)) == 0);
  REQUIRE(p.a.hca->post_send(p.a.qpn, half_write(1)) == 0);
  SendWr fa = rdma_wr(WrOpcode::AtomicFetchAndAdd, orig, ko, counter, kc);
  fa.compare_add = 5;
  REQUIRE(p.a.hca->post_send(p.a.qpn, fa) == 0);
  p.engine.run();
  REQUIRE(p.a.wcs.size() == 4);
  for (const auto& w : p.a.wcs) CHECK(w.wc.status == WcStatus::Success);
  CHECK(dst == src);
  CHECK(local == remote);
  // The add ran once (8-byte counter from 0: 5) and its original value came back (0).
  uint64_t c = 0, o = 1;
  std::memcpy(&c, counter.data(), 8);
  std::memcpy(&o, orig.data(), 8);
  CHECK(c == 5);
  CHECK(o == 0);
  CHECK(atomic_ack_lost);
  // Resent: the READ request (after a NACK), the atomic (after RTO_low; nothing follows it).
  CHECK(p.a.hca->counters().retransmitted_packets == 2);
  CHECK(p.a.hca->counters().timeouts == 1);
}

TEST_CASE("irn: BDP flow control keeps at most bdp_packets in flight") {
  // bdp_packets 8: a new packet goes only while PSNs acked+1 .. psn-1 number fewer than 8.
  // The requester asks for an ACK every 4 packets (half the window), so ACKs reopen it.
  LossyPair p(LossRecovery::Irn, {}, 8);
  auto src = pattern(64 * 4096, 2);
  std::vector<uint8_t> dst(src.size(), 0);
  auto ks = p.reg(p.a, src), kd = p.reg(p.b, dst);
  p.post_and_run(p.a, rdma_wr(WrOpcode::RdmaWrite, src, ks, dst, kd));
  REQUIRE(p.a.wcs.size() == 1);
  CHECK(dst == src);
  // An ACK reaches a's transport after its own serialization (86 B; b's wire carries only
  // ACKs, 4 packet times apart, so none waits), the flight and the receive pipeline
  // (HcaConfig::rx_latency, 100 ns). Packets before packet i and after the highest ACK a
  // had then were in flight when i left: fewer than 8.
  const auto& aw = *p.a.wire;
  const auto& bw = *p.b.wire;
  int max_before = 0;
  for (size_t i = 0; i < aw.psns.size(); ++i) {
    int32_t acked = -1;
    for (size_t j = 0; j < bw.psns.size(); ++j)
      if (bw.sent_at[j] + tx_time(kRate, 86) + kDelay + ns(100) <= aw.sent_at[i])
        acked = std::max(acked, psn_diff(bw.psns[j], p.psn(0)));
    max_before = std::max(max_before, psn_diff(aw.psns[i], p.psn(0)) - acked - 1);
  }
  CHECK(max_before <= 7);
  CHECK(max_before == 7);  // the cap binds: the RTT (~2.2 us) is longer than 8 packet times
}

TEST_CASE("irn: RC over a link losing 1% in both directions: every WRITE intact, far fewer resends than go-back-N") {
  // The loss recovery test's fabric (loss_recovery_test.cpp): 16 WRITEs of 64 packets over
  // link 0 with 1% loss each way (requests, ACKs and NACKs all get lost). Both modes deliver
  // every byte and resend at least each lost request. Go-back-N resends, per loss, all that
  // was in flight behind it: with 100 Gb/s links of 1 us the path holds ~15 packets of
  // 4 KiB (2 links each way, ~5 us RTT), the NIC queue 8 KiB more. IRN resends, per loss, the
  // lost packet, plus a packet whose NACK (its selective ACK) was lost, plus what a timeout
  // (a lost tail) finds unacknowledged: within the losses of both directions plus the
  // in-flight window (~24 packets) per timeout, and several times fewer than go-back-N.
  using nlohmann::json;
  uint64_t retx[2] = {0, 0};
  for (int m = 0; m < 2; ++m) {
    QpParams q;
    q.timeout = 8;  // go-back-N: 1.05 ms
    FabricPair p(json{{"loss_rate", 0.01}}, q, 5, false,
                 json{{"loss_recovery", m == 0 ? "irn" : "go_back_n"}});
    const uint32_t msgs = 16, len = 256 * 1024;
    auto src = pattern(msgs * len, 3);
    std::vector<uint8_t> dst(msgs * len, 0);
    auto ks = p.reg(p.a, src);
    auto kd = p.reg(p.b, dst);
    for (uint32_t k = 0; k < msgs; ++k) {
      SendWr wr;
      wr.opcode = WrOpcode::RdmaWrite;
      wr.send_flags = kSendSignaled;
      wr.sgl = {sge_of(src, ks.lkey, k * len, len)};
      wr.remote_addr = reinterpret_cast<uint64_t>(dst.data()) + k * len;
      wr.rkey = kd.rkey;
      REQUIRE(p.a.hca->post_send(p.a.qpn, wr) == 0);
    }
    p.engine.run();
    REQUIRE(p.a.wcs.size() == msgs);
    for (const auto& w : p.a.wcs) CHECK(w.wc.status == WcStatus::Success);
    CHECK(dst == src);
    const uint64_t lost = p.link0("a_to_b", "lost_packets");
    retx[m] = p.a.hca->counters().retransmitted_packets;
    CHECK(lost > 0);
    CHECK(retx[m] >= lost);
    if (m == 0)
      CHECK(retx[m] <= lost + p.link0("b_to_a", "lost_packets") + p.a.hca->counters().timeouts * 24);
    MESSAGE("mode " << m << ": lost " << lost << ", resent " << retx[m] << ", timeouts "
                    << p.a.hca->counters().timeouts);
  }
  CHECK(retx[0] * 4 < retx[1]);
}
