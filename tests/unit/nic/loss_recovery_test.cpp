// Loss recovery on a built fabric (sim/topo): configured random link loss, and a link taken
// down and brought back within and beyond the retry budget; RNR retry timing.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>

#include "tests/unit/nic/fabric_pair.h"

using namespace rdmasim;
using namespace rdmasim::nic;
using namespace rdmasim::nic::test;
using nlohmann::json;

namespace {

constexpr double kLoss = 0.01;

// |x - n p| within 4 standard deviations of Binomial(n, p).
bool within_binomial(uint64_t x, uint64_t n, double p) {
  const double mean = static_cast<double>(n) * p;
  const double sigma = std::sqrt(static_cast<double>(n) * p * (1 - p));
  return std::abs(static_cast<double>(x) - mean) <= 4 * sigma;
}

SendWr write_wr(std::vector<uint8_t>& src, MrKeys ks, uint32_t off, uint32_t len,
                std::vector<uint8_t>& dst, uint32_t rkey) {
  SendWr wr;
  wr.wr_id = off;
  wr.opcode = WrOpcode::RdmaWrite;
  wr.send_flags = kSendSignaled;
  wr.sgl = {sge_of(src, ks.lkey, off, len)};
  wr.remote_addr = reinterpret_cast<uint64_t>(dst.data()) + off;
  wr.rkey = rkey;
  return wr;
}

// IBTA local ACK timeout 4.096 us * 2^timeout, and the first packet's departure: the WQE
// is fetched wqe_latency (HcaConfig default 100 ns) after post_send at t = 0.
constexpr uint8_t kTimeout = 4;
constexpr Time kT = ns(4096) * 16;  // 65.536 us
constexpr Time kFirstSend = ns(100);

}  // namespace

TEST_CASE("loss: RC over a link losing 1% completes every WRITE intact; retransmissions match the losses") {
  QpParams q;
  q.timeout = 8;  // 1.05 ms: a lost NAK or last packet is recovered by the timer
  FabricPair p(json{{"loss_rate", kLoss}}, q);
  const uint32_t msgs = 16, len = 256 * 1024;  // 64 packets of 4096 B each
  auto src = pattern(msgs * len, 3);
  std::vector<uint8_t> dst(msgs * len, 0);
  auto ks = p.reg(p.a, src);
  auto kd = p.reg(p.b, dst);
  for (uint32_t k = 0; k < msgs; ++k)
    REQUIRE(p.a.hca->post_send(p.a.qpn, write_wr(src, ks, k * len, len, dst, kd.rkey)) == 0);
  p.engine.run();
  REQUIRE(p.a.wcs.size() == msgs);
  for (const auto& w : p.a.wcs) CHECK(w.wc.status == WcStatus::Success);
  CHECK(dst == src);
  // Server -> switch carries only the server's requests (the server sends no ACKs): its
  // losses are Binomial(requests sent, 1%).
  const uint64_t sent = p.a.hca->counters().tx_packets;
  const uint64_t lost = p.link0("a_to_b", "lost_packets");
  CHECK(sent >= msgs * 64);
  CHECK(lost > 0);
  CHECK(within_binomial(lost, sent, kLoss));
  // Every lost request is sent again (go-back-N may resend more than the lost ones).
  const uint64_t retx = p.a.hca->counters().retransmitted_packets;
  CHECK(retx >= lost);
  CHECK(sent == msgs * 64 + retx);
  // One sequence NAK per gap, and every gap starts at a lost request.
  const uint64_t naks = p.b.hca->counters().naks_sent;
  CHECK(naks >= 1);
  CHECK(naks <= lost);
}

TEST_CASE("loss: UC over a link losing 1% loses whole messages, the rest arrive intact") {
  QpParams q;
  q.type = QpType::UC;
  q.mtu = 3;  // 1024 B: a 4096 B message is 4 packets
  q.max_send_wr = q.max_recv_wr = 1024;
  FabricPair p(json{{"loss_rate", kLoss}}, q);
  const uint32_t msgs = 1000, len = 4096;
  std::vector<uint8_t> src(msgs * len), dst(msgs * len, 0);
  for (uint32_t k = 0; k < msgs; ++k) {
    auto part = pattern(len, static_cast<uint8_t>(k));
    std::memcpy(src.data() + k * len, part.data(), len);
    std::memcpy(src.data() + k * len, &k, 4);  // message index in the first bytes
  }
  auto ks = p.reg(p.a, src);
  auto kd = p.reg(p.b, dst);
  for (uint32_t k = 0; k < msgs; ++k) {
    RecvWr rr;
    rr.wr_id = k;
    rr.sgl = {sge_of(dst, kd.lkey, k * len, len)};
    REQUIRE(p.b.hca->post_recv(p.b.qpn, rr) == 0);
    SendWr wr;
    wr.opcode = WrOpcode::Send;
    wr.sgl = {sge_of(src, ks.lkey, k * len, len)};
    REQUIRE(p.a.hca->post_send(p.a.qpn, wr) == 0);
  }
  p.engine.run();
  // Each delivered message is a whole, intact message, in order.
  const auto& got = p.b.wcs;
  int64_t last = -1;
  for (size_t i = 0; i < got.size(); ++i) {
    CHECK(got[i].wc.status == WcStatus::Success);
    CHECK(got[i].wc.byte_len == len);
    CHECK(got[i].wc.wr_id == i);  // receives are consumed in order, none by a lost message
    uint32_t idx = 0;
    std::memcpy(&idx, dst.data() + i * len, 4);
    CHECK(static_cast<int64_t>(idx) > last);
    last = idx;
    CHECK(std::memcmp(dst.data() + i * len, src.data() + idx * len, len) == 0);
  }
  // A message survives when all 4 packets do: Binomial(1000, 0.99^4 = 0.9606).
  CHECK(within_binomial(got.size(), msgs, std::pow(1 - kLoss, 4)));
  // Every lost packet kills exactly its own message, which loses 1..4 packets.
  const uint64_t lost_pkts = p.link0("a_to_b", "lost_packets");
  const uint64_t lost_msgs = msgs - got.size();
  CHECK(lost_msgs > 0);
  CHECK(lost_msgs <= lost_pkts);
  CHECK(lost_pkts <= 4 * lost_msgs);
  CHECK(p.a.hca->counters().retransmitted_packets == 0);  // UC never resends
}

TEST_CASE("loss: UD over a link losing 1% drops exactly the lost datagrams") {
  QpParams q;
  q.type = QpType::UD;
  q.max_send_wr = q.max_recv_wr = 2048;
  FabricPair p(json{{"loss_rate", kLoss}}, q);
  const uint32_t n = 2000, len = 1024, slot = 40 + len;  // 40 B GRH ahead of the payload
  auto src = pattern(len, 7);
  std::vector<uint8_t> dst(n * slot, 0);
  auto ks = p.reg(p.a, src);
  auto kd = p.reg(p.b, dst);
  for (uint32_t k = 0; k < n; ++k) {
    RecvWr rr;
    rr.sgl = {sge_of(dst, kd.lkey, k * slot, slot)};
    REQUIRE(p.b.hca->post_recv(p.b.qpn, rr) == 0);
    SendWr wr;
    wr.opcode = WrOpcode::Send;
    wr.sgl = {sge_of(src, ks.lkey)};
    wr.av.is_global = true;
    wr.av.dgid = gid_of(p.addr_b);
    wr.remote_qpn = p.b.qpn;
    wr.remote_qkey = q.qkey;
    REQUIRE(p.a.hca->post_send(p.a.qpn, wr) == 0);
  }
  p.engine.run();
  const uint64_t lost = p.link0("a_to_b", "lost_packets");
  CHECK(p.b.wcs.size() + lost == n);  // the only loss is link 0's
  CHECK(lost > 0);
  CHECK(within_binomial(lost, n, kLoss));
  for (size_t i = 0; i < p.b.wcs.size(); ++i)
    CHECK(std::memcmp(dst.data() + i * slot + 40, src.data(), len) == 0);
}

TEST_CASE("loss: a link down for less than the retry budget delays the WRITE by whole timeouts") {
  // timeout 4 (65.536 us), retry_cnt 3: the budget is 4 timeouts = 262.1 us. Link 0 is down
  // from 0 to 150 us. The one-packet WRITE leaves at 100 ns and again after each timeout:
  // 0.1, 65.636 and 131.172 us are lost; 196.708 us = 100 ns + 3 T is the first try after
  // the link is back, so the completion is at >= 100 ns + 3 T, one round trip later.
  QpParams q;
  q.timeout = kTimeout;
  q.retry_cnt = 3;
  const Time up = us(150);
  FabricPair p(json{{"schedule", json::array({{{"at_ns", 0}, {"up", false}},
                                               {{"at_ns", 150000}, {"up", true}}})}},
               q);
  auto src = pattern(4000, 1);
  std::vector<uint8_t> dst(4000, 0);
  auto ks = p.reg(p.a, src);
  auto kd = p.reg(p.b, dst);
  const auto& wcs = p.post_and_run(p.a, write_wr(src, ks, 0, 4000, dst, kd.rkey));
  REQUIRE(wcs.size() == 1);
  CHECK(wcs[0].wc.status == WcStatus::Success);
  CHECK(dst == src);
  const Time retry = kFirstSend + 3 * kT;
  CHECK(retry > up);
  CHECK(retry - kT < up);  // the previous try was still inside the outage
  CHECK(wcs[0].at >= retry);
  CHECK(wcs[0].at < retry + us(10));  // one round trip: ~2 x (2 links + switch), < 10 us
  CHECK(p.a.hca->counters().timeouts == 3);
  CHECK(p.a.hca->counters().retransmitted_packets == 3);
  // The three tries made while the link was down never left the HCA: its port was DOWN
  // (topo::attach_hca), so nothing reached the egress port to be dropped there.
  CHECK(p.fabric->counters()["server/mlx5_0"]["link_down_drops"].get<uint64_t>() == 0);
  CHECK(p.a.hca->counters().tx_packets == 1);  // the try after the link came back
  CHECK(p.state(p.a) == QpState::Rts);
}

TEST_CASE("loss: a link down beyond the retry budget gives RETRY_EXC_ERR at 4 timeouts, then flushes") {
  QpParams q;
  q.timeout = kTimeout;
  q.retry_cnt = 3;
  FabricPair p(json{{"schedule", json::array({{{"at_ns", 0}, {"up", false}},
                                               {{"at_ns", 400000}, {"up", true}}})}},
               q);
  auto src = pattern(4000, 1);
  std::vector<uint8_t> dst(8000, 0);
  auto ks = p.reg(p.a, src);
  auto kd = p.reg(p.b, dst);
  REQUIRE(p.a.hca->post_send(p.a.qpn, write_wr(src, ks, 0, 4000, dst, kd.rkey)) == 0);
  REQUIRE(p.a.hca->post_send(p.a.qpn, write_wr(src, ks, 0, 2000, dst, kd.rkey)) == 0);
  SendWr later = write_wr(src, ks, 0, 100, dst, kd.rkey);
  later.wr_id = 99;
  p.engine.schedule_at(us(450), [&] { REQUIRE(p.a.hca->post_send(p.a.qpn, later) == 0); });
  p.engine.run();
  REQUIRE(p.a.wcs.size() == 3);
  // The original try and retry_cnt = 3 retries each wait one timeout from the last packet
  // sent (both WRITEs leave at 100 ns): 100 ns + 4 x 65.536 us = 262.244 us, exactly, as
  // the link stays down until 400 us.
  CHECK(p.a.wcs[0].wc.status == WcStatus::RetryExcErr);
  CHECK(p.a.wcs[0].at == kFirstSend + 4 * kT);
  CHECK(p.a.wcs[1].wc.status == WcStatus::WrFlushErr);
  CHECK(p.a.wcs[1].at == p.a.wcs[0].at);
  // Posted in ERR (after the link came back): accepted and flushed (IBTA 10.3.1).
  CHECK(p.a.wcs[2].wc.wr_id == 99);
  CHECK(p.a.wcs[2].wc.status == WcStatus::WrFlushErr);
  CHECK(p.a.wcs[2].at >= us(450));
  CHECK(p.a.hca->counters().timeouts == 4);
  CHECK(p.state(p.a) == QpState::Err);
  CHECK(p.state(p.b) == QpState::Rts);  // the responder saw nothing
  CHECK(dst == std::vector<uint8_t>(8000, 0));
}

TEST_CASE("rnr: retries are spaced by the responder's min_rnr_timer table value") {
  // IBTA table 45: code 5 = 0.06 ms, code 14 = 1.28 ms. On the TestWire pair (1 us each way,
  // 100 ns rx_latency at each HCA) one RNR round is 2 x (1 us + 100 ns) + the timer.
  for (auto [code, timer] : {std::pair<uint8_t, Time>{5, us(60)}, {14, us(1280)}}) {
    CAPTURE(int(code));
    QpParams q;
    q.rnr_retry = 2;
    q.min_rnr_timer = code;
    Pair p(q);
    SendWr wr;
    wr.opcode = WrOpcode::Send;
    wr.send_flags = kSendSignaled | kSendInline;
    wr.inline_data = {1, 2, 3};
    const auto& wcs = p.post_and_run(p.a, wr);
    REQUIRE(wcs.size() == 1);
    CHECK(wcs[0].wc.status == WcStatus::RnrRetryExcErr);
    // The original and rnr_retry = 2 retries, each RNR-NAKed.
    REQUIRE(p.a.wire->sent_at.size() == 3);
    CHECK(p.b.hca->counters().rnr_naks_sent == 3);
    const Time round = 2 * (us(1) + ns(100)) + timer;
    CHECK(p.a.wire->sent_at[0] == kFirstSend);
    CHECK(p.a.wire->sent_at[1] - p.a.wire->sent_at[0] == round);
    CHECK(p.a.wire->sent_at[2] - p.a.wire->sent_at[1] == round);
    // The third NAK ends it: it arrives one round trip after the last try.
    CHECK(wcs[0].at == p.a.wire->sent_at[2] + 2 * (us(1) + ns(100)));
  }
}

TEST_CASE("rnr: rnr_retry = 7 retries forever: a receive posted after 12 RNR NAKs still succeeds") {
  // IBTA: an RNR retry count of 7 means retry forever; Linux rxe does the same
  // (rxe_comp.c, COMPST_RNR_RETRY: the count is decremented only when it is not 7).
  // min_rnr_timer 1 = 10 us (IBTA table 45). On the TestWire pair (1 us each way, 100 ns
  // rx_latency at each HCA) the responder handles try k at 100 ns (fetch) + 1.1 us +
  // k * round with round = 2 x 1.1 us + 10 us = 12.2 us. Its 12th RNR NAK answers try 11
  // (135.4 us); the receive is posted at 141.5 us, before try 12 arrives (147.6 us), which
  // then succeeds: 12 RNR NAKs, more than any finite rnr_retry (at most 6) allows.
  QpParams q;
  q.rnr_retry = 7;
  q.min_rnr_timer = 1;
  Pair p(q);
  const Time hop = us(1) + ns(100), round = 2 * hop + us(10);
  const Time try11 = kFirstSend + hop + 11 * round, try12 = try11 + round;
  std::vector<uint8_t> dst(16, 0);
  auto kd = p.reg(p.b, dst);
  p.engine.schedule_at((try11 + try12) / 2, [&] {
    CHECK(p.b.hca->counters().rnr_naks_sent == 12);
    RecvWr rr;
    rr.sgl = {sge_of(dst, kd.lkey)};
    REQUIRE(p.b.hca->post_recv(p.b.qpn, rr) == 0);
  });
  SendWr wr;
  wr.opcode = WrOpcode::Send;
  wr.send_flags = kSendSignaled | kSendInline;
  wr.inline_data = {7, 8, 9};
  const auto& wcs = p.post_and_run(p.a, wr);
  REQUIRE(wcs.size() == 1);
  CHECK(wcs[0].wc.status == WcStatus::Success);
  CHECK(wcs[0].at == try12 + hop);  // the ACK of try 12
  CHECK(p.b.hca->counters().rnr_naks_sent == 12);
  CHECK(p.b.hca->counters().rnr_naks_sent > 7);
  CHECK(p.b.hca->counters().naks_sent == 0);
  REQUIRE(p.b.wcs.size() == 1);
  CHECK(dst[0] == 7);
  CHECK(dst[2] == 9);
}
