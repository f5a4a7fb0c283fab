// TCP dynamics of the iWARP model, driven by hand: each expected value is derived from the
// RFC formula written beside it.
#include <doctest/doctest.h>

#include <algorithm>
#include <memory>

#include "sim/nic/rdma_packet.h"
#include "sim/nic/iwarp_tcp.h"

namespace rdmasim::nic::iwarp {
namespace {

constexpr uint32_t kIsn = 1000, kPeerIsn = 5000, kMss = 1000;

TcpConfig small_config() {
  TcpConfig c;
  c.mss = kMss;
  c.init_cwnd_segments = 2;
  c.rcv_wnd = 1 << 24;
  c.min_rto = us(10);
  c.initial_rto = ms(1);
  c.max_rto = ms(100);
  c.max_retries = 3;
  return c;
}

void fill(TcpConnection& t, int n) {
  for (int i = 0; i < n; ++i) t.push(kMss, std::make_shared<nic::RdmaPacket>());
}

// Sends everything the window allows; returns the number of segments sent.
int send_all(TcpConnection& t, Time now) {
  int n = 0;
  while (t.next_segment(now)) ++n;
  return n;
}

}  // namespace

TEST_CASE("tcp: slow start doubles cwnd every round trip") {
  TcpConnection t(small_config(), kIsn, kPeerIsn);
  fill(t, 200);
  Time now = 0;
  // RFC 5681 3.1: cwnd += SMSS per ACK while cwnd < ssthresh; one ACK per segment, so a
  // window of W segments grows to 2W in one RTT: 2, 4, 8, 16, 32 segments.
  uint32_t expect = 2 * kMss;
  for (int round = 0; round < 5; ++round) {
    CHECK(t.cwnd() == expect);
    const int sent = send_all(t, now);
    CHECK(sent == static_cast<int>(expect / kMss));
    now += us(10);
    uint32_t ack = t.snd_una();
    for (int i = 0; i < sent; ++i) t.on_ack(ack += kMss, 1 << 24, false, false, now);
    expect *= 2;
  }
  CHECK(t.cwnd() == 64 * kMss);
}

TEST_CASE("tcp: congestion avoidance above ssthresh grows cwnd by about one MSS per round trip") {
  TcpConfig c = small_config();
  c.init_cwnd_segments = 20;
  TcpConnection t(c, kIsn, kPeerIsn);
  fill(t, 1000);  // more than the 20 + 30 rounds of at most 40 segments send
  CHECK(send_all(t, 0) == 20);
  // The first segment is lost: three duplicate ACKs of the ISN start fast retransmit with
  // ssthresh = max(FlightSize / 2, 2 SMSS) = 10 SMSS (RFC 5681 3.2 (2)); the full ACK of the
  // 20 segments ends recovery with cwnd = ssthresh (RFC 6582 step 6, option 2).
  for (int i = 0; i < 3; ++i) t.on_ack(kIsn, 1 << 24, false, false, us(10));
  REQUIRE(t.in_recovery());
  REQUIRE(t.next_segment(us(10)));  // the retransmission
  t.on_ack(kIsn + 20 * kMss, 1 << 24, false, false, us(20));
  REQUIRE_FALSE(t.in_recovery());
  const uint32_t ssthresh = 10 * kMss;
  CHECK(t.ssthresh() == ssthresh);
  CHECK(t.cwnd() == ssthresh);
  // From here cwnd >= ssthresh: congestion avoidance. RFC 5681 3.1 (3): each ACK adds
  // SMSS * SMSS / cwnd (integer bytes, rounded up to 1 byte if it yields 0). A round trip
  // sends n = floor(cwnd0 / SMSS) segments (the window is full) and returns n ACKs; while they
  // arrive cwnd stays within [cwnd0, cwnd0 + SMSS], so the round's growth G obeys
  //   n * (floor(SMSS^2 / (cwnd0 + SMSS))) <= G <= n * SMSS^2 / cwnd0 <= SMSS
  // (about one SMSS per RTT), where slow start would have added n * SMSS.
  Time now = us(20);
  uint32_t ack = t.snd_una();
  uint32_t expect = t.cwnd();
  constexpr int kRounds = 30;
  for (int round = 0; round < kRounds; ++round) {
    const uint32_t cwnd0 = t.cwnd();
    const uint32_t n = cwnd0 / kMss;
    CHECK(send_all(t, now) == static_cast<int>(n));
    now += us(10);
    for (uint32_t i = 0; i < n; ++i) {
      t.on_ack(ack += kMss, 1 << 24, false, false, now);
      expect += std::max<uint32_t>(1, kMss * kMss / expect);  // (3), per ACK
    }
    CHECK(t.cwnd() == expect);
    const uint32_t growth = t.cwnd() - cwnd0;
    CHECK(growth >= n * (kMss * kMss / (cwnd0 + kMss)));
    CHECK(growth <= kMss);
    CHECK(t.ssthresh() == ssthresh);  // no loss, no ECN: ssthresh stays
  }
  // Over 30 round trips cwnd stays within [10, 40] SMSS; there the lower bound above is
  // smallest just under a multiple of SMSS at the low end: cwnd0 = 10999 gives
  // 10 * floor(10^6 / 11999) = 830 B. So 30 rounds add between 30 * 830 B and 30 SMSS
  // (slow start would have gone past 2^30 bytes).
  CHECK(t.cwnd() <= ssthresh + kRounds * kMss);
  CHECK(t.cwnd() >= ssthresh + kRounds * 830);
}

TEST_CASE("tcp: the third duplicate ACK triggers fast retransmit and NewReno recovery") {
  TcpConfig c = small_config();
  c.init_cwnd_segments = 10;
  TcpConnection t(c, kIsn, kPeerIsn);
  fill(t, 20);
  CHECK(send_all(t, 0) == 10);
  // The first segment is acknowledged, the second is lost: the receiver ACKs kIsn + 1000
  // for each of the 8 segments after the hole.
  const uint32_t hole = kIsn + kMss;
  CHECK(t.on_ack(hole, 1 << 24, false, false, us(10)).size() == 1);
  CHECK(t.cwnd() == 11 * kMss);  // slow start: 10 + 1 segments
  const uint32_t flight = t.flight();
  CHECK(flight == 9 * kMss);
  t.on_ack(hole, 1 << 24, false, false, us(11));
  t.on_ack(hole, 1 << 24, false, false, us(11));
  CHECK_FALSE(t.in_recovery());  // two duplicates are not enough (RFC 5681: 3)
  t.on_ack(hole, 1 << 24, false, false, us(11));
  REQUIRE(t.in_recovery());
  // RFC 5681 3.2 (2)-(3): ssthresh = max(FlightSize / 2, 2 SMSS); cwnd = ssthresh + 3 SMSS.
  CHECK(t.ssthresh() == flight / 2);
  CHECK(t.cwnd() == flight / 2 + 3 * kMss);
  const TxSegment* r = t.next_segment(us(11));
  REQUIRE(r);
  CHECK(r->seq == hole);  // the lost segment goes first
  CHECK(r->retransmitted);
  CHECK(t.counters().fast_retransmits == 1);
  // A further duplicate inflates cwnd by one SMSS (RFC 6582 3.2 step 4).
  const uint32_t before = t.cwnd();
  t.on_ack(hole, 1 << 24, false, false, us(12));
  CHECK(t.cwnd() == before + kMss);
  // The full ACK (everything sent before recovery) ends it: cwnd = ssthresh (step 6, option 2).
  t.on_ack(kIsn + 10 * kMss, 1 << 24, false, false, us(20));
  CHECK_FALSE(t.in_recovery());
  CHECK(t.cwnd() == flight / 2);
}

TEST_CASE("tcp: RFC 6298 estimator and RTO backoff doubling") {
  TcpConnection t(small_config(), kIsn, kPeerIsn);
  fill(t, 4);
  t.next_segment(0);
  // First sample R = 100 us: SRTT = R, RTTVAR = R/2, RTO = SRTT + 4 RTTVAR = 300 us.
  t.on_ack(kIsn + kMss, 1 << 24, false, false, us(100));
  CHECK(t.srtt() == us(100));
  CHECK(t.rttvar() == us(50));
  CHECK(t.rto() == us(300));
  // Second sample R = 200 us: RTTVAR = 3/4 * 50 + 1/4 * |100 - 200| = 62.5 us;
  // SRTT = 7/8 * 100 + 1/8 * 200 = 112.5 us; RTO = 112.5 + 4 * 62.5 = 362.5 us.
  t.next_segment(us(100));
  t.on_ack(kIsn + 2 * kMss, 1 << 24, false, false, us(300));
  CHECK(t.rttvar() == ns(62500));
  CHECK(t.srtt() == ns(112500));
  CHECK(t.rto() == ns(362500));
  // Losses: every expiry doubles RTO (RFC 6298 5.5) and the resend is armed with it.
  const Time now = us(300);
  t.next_segment(now);
  CHECK(t.rto_deadline() == now + ns(362500));
  Time at = t.rto_deadline();
  Time rto = ns(362500);
  for (int k = 0; k < 3; ++k) {
    const uint32_t flight = t.flight();
    REQUIRE(t.on_rto(at));
    rto *= 2;
    CHECK(t.rto() == rto);
    CHECK(t.cwnd() == kMss);  // RFC 5681 (4): loss window = 1 SMSS
    CHECK(t.ssthresh() == std::max(flight / 2, 2 * kMss));
    const TxSegment* s = t.next_segment(at);
    REQUIRE(s);
    CHECK(s->seq == kIsn + 2 * kMss);  // go back to snd_una
    CHECK(t.rto_deadline() == at + rto);
    at = t.rto_deadline();
  }
  // max_retries = 3 expiries in a row; the 4th gives up.
  CHECK_FALSE(t.on_rto(at));
}

TEST_CASE("tcp: DCTCP alpha from the fraction of marked bytes and cwnd *= 1 - alpha/2") {
  TcpConfig c = small_config();
  c.init_cwnd_segments = 10;
  c.ecn = true;
  TcpConnection t(c, kIsn, kPeerIsn);
  fill(t, 30);
  CHECK(send_all(t, 0) == 10);
  double alpha = 1.0;  // RFC 8257: DCTCP.Alpha starts at 1; g = 1/16
  const double g = 1.0 / 16;
  // The first observation window ends at the initial SND.NXT (the ISN): the first ACK
  // closes it with F = 0 (unmarked): alpha = (1 - g) alpha.
  t.on_ack(kIsn + kMss, 1 << 24, false, false, us(10));
  alpha = (1 - g) * alpha;
  CHECK(t.dctcp_alpha() == doctest::Approx(alpha));
  CHECK(t.cwnd() == 11 * kMss);
  // The next window ends at SND.NXT = ISN + 10 segments. The first marked ACK cuts cwnd
  // once: cwnd = cwnd (1 - alpha / 2), ssthresh = cwnd.
  t.on_ack(kIsn + 2 * kMss, 1 << 24, true, false, us(11));
  const uint32_t cut = static_cast<uint32_t>(11 * kMss * (1 - alpha / 2));
  CHECK(t.ssthresh() == cut);
  CHECK(t.counters().ecn_reductions == 1);
  // Two more marked ACKs (no further cut in this window), then six unmarked ones.
  t.on_ack(kIsn + 3 * kMss, 1 << 24, true, false, us(12));
  t.on_ack(kIsn + 4 * kMss, 1 << 24, true, false, us(12));
  CHECK(t.counters().ecn_reductions == 1);
  for (uint32_t k = 5; k <= 10; ++k) t.on_ack(kIsn + k * kMss, 1 << 24, false, false, us(13));
  // Window closed at ISN + 10 segments: 3000 of 9000 bytes marked, F = 1/3.
  alpha = (1 - g) * alpha + g * (3000.0 / 9000.0);
  CHECK(t.dctcp_alpha() == doctest::Approx(alpha));
}

TEST_CASE("tcp: the receiver delivers in order, buffers ahead of a hole and duplicates its ACK") {
  TcpConnection t(small_config(), kIsn, kPeerIsn);
  auto seg = [](int i) {
    auto p = std::make_shared<nic::RdmaPacket>();
    p->id = i;
    return std::shared_ptr<const nic::RdmaPacket>(p);
  };
  auto d = t.on_data(kPeerIsn, kMss, seg(0), false);
  CHECK(d.fpdus.size() == 1);
  CHECK(t.rcv_nxt() == kPeerIsn + kMss);
  d = t.on_data(kPeerIsn + 2 * kMss, kMss, seg(2), true);  // segment 1 missing
  CHECK(d.fpdus.empty());
  CHECK(d.send_ack);
  CHECK(d.ece);                               // CE echoed on the ACK it causes
  CHECK(t.rcv_nxt() == kPeerIsn + kMss);      // a duplicate ACK
  CHECK(t.advertised_window() == (1u << 24) - kMss);
  d = t.on_data(kPeerIsn + 3 * kMss, kMss, seg(3), false);
  d = t.on_data(kPeerIsn + kMss, kMss, seg(1), false);  // the hole fills
  REQUIRE(d.fpdus.size() == 3);
  CHECK(d.fpdus[0]->id == 1);
  CHECK(d.fpdus[1]->id == 2);
  CHECK(d.fpdus[2]->id == 3);
  CHECK(t.rcv_nxt() == kPeerIsn + 4 * kMss);
  d = t.on_data(kPeerIsn, kMss, seg(0), false);  // an old duplicate: ACK, no delivery
  CHECK(d.fpdus.empty());
  CHECK(d.send_ack);
}

}  // namespace rdmasim::nic::iwarp
