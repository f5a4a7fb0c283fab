// HPCC's in-flight cap (Li et al., SIGCOMM 2019, section 3.2: the sender limits its bytes in
// flight to the window W; the HPCC simulator's RdmaQueuePair::IsWinBound): two RC flows of
// RDMA WRITEs into one 100 Gb/s port, each request packet checked as the HCA hands it to
// its port.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/core/engine.h"
#include "sim/topo/fabric.h"
#include "tests/unit/cc/cc_fixture.h"

namespace rdmasim::nic {
namespace {

using nlohmann::json;

constexpr uint32_t kMsg = 64 * 1024;  // bytes per RDMA WRITE
constexpr int kOutstanding = 16;      // WRITEs each flow keeps posted
// The largest request packet on the wire: 4096 B of payload, 78 B of RoCEv2 headers on a
// WRITE's first packet (Ethernet 14 + IPv4 20 + UDP 8 + BTH 12 + RETH 16 + ICRC 4 + FCS 4),
// HPCC's 42 B INT header, and 20 B of preamble and inter-frame gap. (IRN's later WRITE
// packets carry a RETH too: the same size.)
constexpr uint64_t kMaxPacket = 4096 + 78 + 42 + 20;

// What a sender's port saw: at each request packet, the QP's bytes in flight (that packet
// included) against its window W at that moment.
struct WindowLog {
  uint64_t packets = 0;
  uint64_t over = 0;          // packets sent while in flight (before them) was >= W
  uint64_t at_window = 0;     // packets after which the next full packet would be held
  double most_over = -1e18;   // max of in flight - W, bytes
  double min_window = 1e18;   // the smallest W seen
  uint64_t largest = 0;       // the largest packet, wire bytes
};

// The HCA's port with a check on every packet it is handed. The HCA calls send() right
// after it counted the packet in flight, with no ACK handled in between.
class CheckingPort final : public net::Transmitter {
 public:
  CheckingPort(net::Transmitter& inner, WindowLog& log) : inner_(inner), log_(log) {}
  void watch(const Hca* hca) { hca_ = hca; }
  bool ready(uint8_t priority) const override { return inner_.ready(priority); }
  void set_ready_callback(std::function<void()> cb) override {
    inner_.set_ready_callback(std::move(cb));
  }
  Rate rate() const override { return inner_.rate(); }
  void send(net::PacketPtr pkt) override {
    if (hca_ && pkt->int_request) {  // a request packet (the senders send no other kind)
      const std::vector<QpCcReport> rep = hca_->cc_report();
      REQUIRE(rep.size() == 1);
      const double inflight = static_cast<double>(rep[0].inflight_bytes);
      const double w = rep[0].window_bytes;
      log_.packets++;
      if (inflight - static_cast<double>(pkt->wire_bytes) >= w) log_.over++;
      log_.largest = std::max<uint64_t>(log_.largest, pkt->wire_bytes);
      if (inflight + static_cast<double>(kMaxPacket) >= w) log_.at_window++;
      log_.most_over = std::max(log_.most_over, inflight - w);
      log_.min_window = std::min(log_.min_window, w);
    }
    inner_.send(std::move(pkt));
  }

 private:
  net::Transmitter& inner_;
  WindowLog& log_;
  const Hca* hca_ = nullptr;
};

// What one run of two flows (s1 -> r, s2 -> r) gave.
struct Run {
  WindowLog log[2];
  uint64_t done[2] = {0, 0};   // WRITEs completed
  uint64_t retransmitted = 0;  // request packets s1 and s2 sent again
};

// T: 4 x 400 ns propagation (data and ACK, two links each) + 2 x 200 ns switch forwarding +
// 2 x 337 ns serializing a 4216 B packet at 100 Gb/s + ~0.2 us NIC receive and the ACK's own
// serialization = ~2.9 us; W starts at the BDP, 100 Gb/s x 2.9 us / 8 = 36,250 B.
constexpr double kBdp = 100e9 * 2.9e-6 / 8;

// `nic`: keys added to the NICs' defaults; `loss`: every link's per-packet loss rate.
Run run_two_flows(const json& nic, double loss, Time run_for) {
  const json cc = {{"algorithm", "hpcc"}, {"max_samples", 8}, {"hpcc", {{"base_rtt_us", 2.9}}}};
  const json sw = {{"queue_kb", 4096},
                   {"pfc", {{"enabled", true}, {"xoff_kb", 300}, {"xon_kb", 250}}}};
  json config = cctest::star3_config(sw, cc, 1);
  config["nic"]["ack_every"] = 1;  // HPCC reacts per ACK (configs/README.md)
  for (const auto& [k, v] : nic.items()) config["nic"][k] = v;
  for (json& l : config["links"]) l["loss_rate"] = loss;
  Engine engine(1);
  auto fabric = topo::Fabric::build(engine, config);
  const auto& nics = fabric->nics();
  REQUIRE(nics.size() == 3);
  Run out;
  WindowLog unwatched;  // r sends only ACKs
  std::vector<std::unique_ptr<CheckingPort>> ports;
  std::vector<std::unique_ptr<Hca>> hca;
  for (size_t i = 0; i < nics.size(); ++i) {
    WindowLog& log = i < 2 ? out.log[i] : unwatched;
    ports.push_back(std::make_unique<CheckingPort>(fabric->nic_port(i), log));
    hca.push_back(std::make_unique<Hca>(engine, nics[i].hca, *ports.back()));
    fabric->attach_nic(i, hca.back().get());
  }
  ports[0]->watch(hca[0].get());
  ports[1]->watch(hca[1].get());

  LocalMemory mem;
  Hca& r = *hca[2];
  uint32_t rpd = 0, rcq = 0;
  REQUIRE(r.alloc_pd(&rpd) == 0);
  REQUIRE(r.create_cq(1024, [](const Completion&) {}, &rcq) == 0);
  std::vector<uint8_t> sink(kMsg), src(kMsg, 0x5a);
  const auto sink_addr = reinterpret_cast<uint64_t>(sink.data());
  const auto src_addr = reinterpret_cast<uint64_t>(src.data());
  MrKeys rk;
  REQUIRE(r.reg_mr(rpd, &mem, sink_addr, kMsg, sink_addr, kAccessLocalWrite | kAccessRemoteWrite,
                   &rk) == 0);
  struct Flow {
    uint32_t pd = 0, cq = 0, qpn = 0, lkey = 0;
  } flow[2];
  for (int f = 0; f < 2; ++f) {
    Hca& s = *hca[f];
    Flow& fl = flow[f];
    auto post = [&s, &fl, &rk, src_addr, sink_addr] {
      REQUIRE(s.post_send(fl.qpn, cctest::rdma_wr(WrOpcode::RdmaWrite, src_addr, kMsg, fl.lkey,
                                                  sink_addr, rk.rkey)) == 0);
    };
    fl.qpn = cctest::make_rc_qp(s, &fl.pd, &fl.cq, [&engine, &out, f, post](const Completion& c) {
      REQUIRE(c.status == WcStatus::Success);
      out.done[f]++;
      engine.schedule_in(0, post);  // sinks must not post; repost from the engine
    });
    MrKeys k;
    REQUIRE(s.reg_mr(fl.pd, &mem, src_addr, kMsg, src_addr, kAccessLocalWrite, &k) == 0);
    fl.lkey = k.lkey;
    const uint32_t rq = cctest::add_rc_qp(r, rpd, rcq);
    cctest::connect_rc(s, fl.qpn, rq, nics[2].address);
    cctest::connect_rc(r, rq, fl.qpn, nics[f].address);
    for (int i = 0; i < kOutstanding; ++i) post();
  }
  engine.run_until(run_for);
  for (int f = 0; f < 2; ++f) out.retransmitted += hca[f]->counters().retransmitted_packets;
  return out;
}

// A packet goes only while the bytes in flight are below W (none goes at or above it), so
// after it they are below W + its own wire bytes <= W + kMaxPacket.
void check_bound(const Run& r) {
  for (int f = 0; f < 2; ++f) {
    CAPTURE(f);
    const WindowLog& l = r.log[f];
    MESSAGE("flow " << f << ": " << l.packets << " packets, " << r.done[f]
                    << " WRITEs done, in flight - W at most " << l.most_over << " B, smallest W "
                    << l.min_window << " B, at the window after " << l.at_window << " packets");
    CHECK(l.packets > 1000);
    CHECK(l.over == 0);
    CHECK(l.largest <= kMaxPacket);
    CHECK(l.most_over <= static_cast<double>(kMaxPacket));
    // The bound was exercised: the two flows share the port, so W fell from the BDP toward
    // half of it, and the QP sent packets up to its window.
    CHECK(l.min_window < kBdp * 0.75);
    CHECK(l.at_window > 0);
    CHECK(r.done[f] > 0);
  }
}

TEST_CASE("hpcc: a QP's bytes in flight never exceed its window W plus the packet just sent") {
  check_bound(run_two_flows(json::object(), 0, ms(1)));
}

TEST_CASE("hpcc: the in-flight cap with go-back-N and IRN on lossy links (resends counted once)") {
  // 1 in 1000 packets lost on every link: over 2 ms (~5,000 packets a flow) the senders
  // resend, go-back-N from a NAK's PSN (the rewind takes the resent packets out of flight)
  // and IRN packet by packet; neither may stall the QP behind a window that the lost
  // packets hold shut, and the bound holds throughout.
  for (const std::string mode : {"go_back_n", "irn"}) {
    CAPTURE(mode);
    const Run r = run_two_flows({{"loss_recovery", mode}}, 1e-3, ms(2));
    check_bound(r);
    CHECK(r.retransmitted > 0);
    // Still moving after the losses: together at least half the port's payload rate over
    // the 2 ms (0.5 x 98 Gb/s x 2 ms / 8 / 64 KiB = 187 WRITEs).
    CHECK(r.done[0] + r.done[1] >= 187);
  }
}

}  // namespace
}  // namespace rdmasim::nic
