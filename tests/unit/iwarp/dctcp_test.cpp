// DCTCP over an iWARP fabric: two RC flows (real HCAs, a Fabric built from JSON) of RDMA
// WRITEs from s1 and s2 into r's 100 Gb/s port, through a drop-tail switch queue that marks
// CE above K. With `dctcp` the marks come back as ECE and the senders' TCP cuts cwnd, which
// holds the queue near K; without it the same queue fills to its limit and drops.
#include <doctest/doctest.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/nic/rdma_packet.h"
#include "sim/core/engine.h"
#include "sim/nic/cc_json.h"
#include "sim/nic/connect.h"
#include "sim/topo/fabric.h"
#include "tests/unit/cc/cc_fixture.h"

namespace rdmasim::nic {
namespace {

using nlohmann::json;

constexpr uint32_t kMsg = 64 * 1024;  // bytes per RDMA WRITE
constexpr int kOutstanding = 16;      // WRITEs each flow keeps posted
constexpr uint64_t kKb = 1024;
// Step marking at K (kmin_kb = kmax_kb, pmax 1: every ECT packet that finds more than K
// bytes queued is marked, as DCTCP's switch rule asks, RFC 8257 3.1). K = 20 KiB is above
// DCTCP's full-throughput guideline K > C x RTT / 7 (100 Gb/s x 2.5 us / 7 = 4.5 KB). Base
// RTT ~2.5 us: each way two 400 ns links, the 200 ns switch and the NIC's 100 ns receive
// latency, plus serializing a 1534 B segment twice (123 ns each) and an 84 B ACK twice.
constexpr uint64_t kK = 20 * kKb;
// The egress queue limit per class: 200 KiB, ten times K and over six bandwidth-delay
// products (100 Gb/s x 2.5 us = 31 KB), so a loss-driven TCP (no ECN) fills it and drops.
constexpr uint64_t kQueueLimit = 200 * kKb;
// A full WRITE segment as the queue counts it (wire bytes): the FPDU is tagged (14-byte
// header) with 1424 B of payload, 2 + 14 + 1424 + 4 = 1444 B; the frame is Ethernet 14 +
// IPv4 20 + TCP 32 + 1444 + FCS 4 = 1514 B, plus preamble 8 and gap 12 (iwarp.h).
constexpr uint64_t kSegWire = 1534;
constexpr int kFlows = 2;

json fabric_config(bool dctcp, uint64_t k) {
  json j = json::parse(R"({
    "name": "dctcp2", "link_layer": "iwarp", "mtu": 1500,
    "hosts": [
      {"name": "s1", "ip": "127.0.1.1"},
      {"name": "s2", "ip": "127.0.1.2"},
      {"name": "r", "ip": "127.0.1.3"}
    ],
    "switches": [{"name": "sw0", "forwarding_latency_ns": 200}],
    "links": [
      {"a": "s1", "b": "sw0", "rate_gbps": 100, "latency_ns": 400},
      {"a": "s2", "b": "sw0", "rate_gbps": 100, "latency_ns": 400},
      {"a": "r", "b": "sw0", "rate_gbps": 100, "latency_ns": 400}
    ]
  })");
  j["seed"] = 7;
  j["switch"] = {{"queue_kb", kQueueLimit / kKb},
                 {"ecn", {{"kmin_kb", k / kKb}, {"kmax_kb", k / kKb}, {"pmax", 1.0}}}};
  j["nic"] = {{"tcp", {{"dctcp", dctcp}}}};
  return j;
}

// Takes RC QP `qpn` of `hca` to RTS, connected to `peer_qpn` at `peer_ip`: as
// cctest::connect_rc but with path MTU 1024 (an iWARP port's MTU at Ethernet MTU 1500; TCP's
// MSS sizes the FPDUs anyway) and the peer's MAC GID, as an iWARP device reports it.
void connect_iwarp(Hca& hca, uint32_t qpn, uint32_t peer_qpn, uint32_t peer_ip) {
  AddressVector to_peer;
  to_peer.is_global = true;
  to_peer.dgid = {0x02, 0x00, static_cast<uint8_t>(peer_ip >> 24), static_cast<uint8_t>(peer_ip >> 16),
                  static_cast<uint8_t>(peer_ip >> 8), static_cast<uint8_t>(peer_ip)};
  ConnectParams p;
  p.path_mtu = 3;
  REQUIRE(modify_to_rts(hca, qpn, peer_qpn, to_peer, p) == 0);
}

struct Result {
  double gbps[kFlows] = {0, 0};  // each flow's goodput over the second half
  uint64_t max_queue = 0;        // bytes queued toward r, max over the second half
  double mean_queue = 0;         // and the mean
  uint64_t drops = 0, marked = 0;  // at the switch port toward r, whole run
  uint64_t drops_second_half = 0;
  uint64_t ce_received = 0;      // CE-marked segments at r's QPs
  uint64_t ece_received = 0, ecn_reductions = 0, timeouts = 0, fast_retransmits = 0;  // s1 + s2
  uint64_t acks_from_r = 0, ect_acks_from_r = 0;  // pure ACKs (no TCP payload) r sent
};

// Counts the pure ACKs leaving a port, and those of them sent ECN-capable.
struct AckTap : net::PacketTap {
  uint64_t acks = 0, ect = 0;
  void on_transmit(const net::Packet& p, Time) override {
    if (p.kind != net::PacketKind::Transport || nic::rdma_view(p).tcp.len != 0) return;
    ++acks;
    ect += p.ect;
  }
};

Result run_two_flows(bool dctcp, Time run, uint64_t k = kK) {
  Engine engine(7);
  auto fabric = topo::Fabric::build(engine, fabric_config(dctcp, k));
  const auto& nics = fabric->nics();
  REQUIRE(nics.size() == 3);
  auto hca = cctest::attach_hcas(engine, *fabric);
  net::EgressPort* to_r = nullptr;  // switch ports follow link order: 2 = toward r
  for (const topo::FabricPort& p : fabric->egress_ports())
    if (p.name == "sw0/2") to_r = p.egress;
  REQUIRE(to_r);
  AckTap acks;
  for (const topo::FabricPort& p : fabric->egress_ports())
    if (p.name.rfind("r/", 0) == 0) p.egress->set_tap(&acks);

  LocalMemory mem;
  Hca& r = *hca[2];
  uint32_t rpd = 0, rcq = 0;
  REQUIRE(r.alloc_pd(&rpd) == 0);
  REQUIRE(r.create_cq(1024, [](const Completion&) {}, &rcq) == 0);
  std::vector<uint8_t> sink(kMsg), src(kMsg, 0x33);
  const auto sink_addr = reinterpret_cast<uint64_t>(sink.data());
  const auto src_addr = reinterpret_cast<uint64_t>(src.data());
  MrKeys rk;
  REQUIRE(r.reg_mr(rpd, &mem, sink_addr, kMsg, sink_addr, kAccessLocalWrite | kAccessRemoteWrite, &rk) == 0);

  struct Flow {
    uint32_t qpn = 0, pd = 0, cq = 0, lkey = 0, rq = 0;
    std::vector<Time> done;
  };
  Flow flow[kFlows];
  for (int f = 0; f < kFlows; ++f) {
    Hca& s = *hca[f];
    Flow& fl = flow[f];
    auto post = [&s, &fl, &rk, src_addr, sink_addr] {
      REQUIRE(s.post_send(fl.qpn, cctest::rdma_wr(WrOpcode::RdmaWrite, src_addr, kMsg, fl.lkey,
                                                  sink_addr, rk.rkey)) == 0);
    };
    fl.qpn = cctest::make_rc_qp(s, &fl.pd, &fl.cq, [&engine, &fl, post](const Completion& c) {
      REQUIRE(c.status == WcStatus::Success);
      fl.done.push_back(engine.now());
      engine.schedule_in(0, post);  // sinks must not post; repost from the engine
    });
    MrKeys k;
    REQUIRE(s.reg_mr(fl.pd, &mem, src_addr, kMsg, src_addr, kAccessLocalWrite, &k) == 0);
    fl.lkey = k.lkey;
    fl.rq = cctest::add_rc_qp(r, rpd, rcq);
    connect_iwarp(s, fl.qpn, fl.rq, nics[2].address);
    connect_iwarp(r, fl.rq, fl.qpn, nics[f].address);
    for (int i = 0; i < kOutstanding; ++i) post();
  }

  // The queue toward r, sampled every 100 ns (less than one segment's 123 ns at 100 Gb/s)
  // over the second half, after slow start and the first cuts.
  Result res;
  engine.run_until(run / 2);
  const uint64_t drops_at_half = fabric->counters()["sw0/2"]["drops"].get<uint64_t>();
  double sum = 0;
  uint64_t n = 0;
  for (Time t = run / 2; t <= run; t += ns(100)) {
    engine.run_until(t);
    const uint64_t q = to_r->queued_bytes(0);
    res.max_queue = std::max(res.max_queue, q);
    sum += static_cast<double>(q);
    ++n;
  }
  res.mean_queue = sum / static_cast<double>(n);
  for (int f = 0; f < kFlows; ++f) {
    const auto done = std::count_if(flow[f].done.begin(), flow[f].done.end(),
                                    [run](Time t) { return t >= run / 2; });
    res.gbps[f] = static_cast<double>(done) * kMsg * 8 / to_seconds(run / 2) / 1e9;
  }
  const json c = fabric->counters()["sw0/2"];
  res.drops = c["drops"].get<uint64_t>();
  res.drops_second_half = res.drops - drops_at_half;
  res.marked = c["ecn_marked"].get<uint64_t>();
  // Read through the JSON that `rdmasim counters` and study outputs show ("tcp").
  const json rj = tcp_report_json(r);
  REQUIRE(rj.size() == kFlows);  // r's two QPs
  for (const json& t : rj) res.ce_received += t["ce_received"].get<uint64_t>();
  for (int f = 0; f < kFlows; ++f) {
    const json fj = tcp_report_json(*hca[f]);
    REQUIRE(fj.size() == 1);
    const json& t = fj[0];
    CHECK(t["segments_sent"].get<uint64_t>() > 0);
    CHECK(t["cwnd_bytes"].get<uint64_t>() > 0);
    res.ece_received += t["ece_received"].get<uint64_t>();
    res.ecn_reductions += t["ecn_reductions"].get<uint64_t>();
    res.timeouts += t["timeouts"].get<uint64_t>();
    res.fast_retransmits += t["fast_retransmits"].get<uint64_t>();
  }
  res.acks_from_r = acks.acks;
  res.ect_acks_from_r = acks.ect;
  return res;
}

}  // namespace

TEST_CASE("iwarp dctcp: two flows into one port hold the queue near K without drops; without ECN it drops") {
  // 4 ms: over 1000 round trips of 2.5 us plus queueing; slow start and the first cuts are over within the
  // first tens of microseconds, so the second half is the steady state.
  constexpr Time kRun = ms(4);
  // The run is deterministic (step marking draws no RED coin, the links lose nothing).
  const Result with = run_two_flows(true, kRun);
  const Result without = run_two_flows(false, kRun);
  for (const Result* r : {&with, &without}) {
    MESSAGE(std::string(r == &with ? "dctcp: " : "no ecn: ")
            << r->gbps[0] << " + " << r->gbps[1] << " Gb/s, queue mean " << r->mean_queue << " max "
            << r->max_queue << " B, drops " << r->drops << " (" << r->drops_second_half
            << " in the second half), marked " << r->marked << ", CE at r " << r->ce_received
            << ", ECE at senders " << r->ece_received << ", cuts " << r->ecn_reductions
            << ", fast retransmits " << r->fast_retransmits << ", timeouts " << r->timeouts);
  }
  // The marks travel end to end. Every packet marked at the port toward r arrives at r
  // (nothing is lost after the switch) and is counted once there (no drops, so no
  // retransmission); r acknowledges each data segment at once with ECE = its CE mark (no
  // delayed ACK), and no ACK is lost, so the senders see exactly as many ECEs.
  CHECK(with.marked > 0);
  CHECK(with.ce_received == with.marked);
  CHECK(with.ece_received == with.ce_received);
  CHECK(with.ecn_reductions > 0);  // the senders cut cwnd (RFC 8257 3.3)
  // r sends only pure ACKs, and RFC 3168 6.1.4 forbids ECT on them.
  CHECK(with.acks_from_r > 0);
  CHECK(with.ect_acks_from_r == 0);
  // Lossless: no drop at the 200 KiB queue, so TCP never had to recover.
  CHECK(with.drops == 0);
  CHECK(with.fast_retransmits == 0);
  CHECK(with.timeouts == 0);
  // The queue stays near K. A packet is marked only if it finds more than K queued, so
  // unmarked arrivals take the queue to at most K + 1 segment. From the first mark the
  // senders learn of it one round trip later (DCTCP's analysis: Q_max = K + N packets, each
  // of the N flows adding one segment per RTT in congestion avoidance, as the tcp test
  // above checks); and a sender cuts at most once per window of data (RFC 8257 3.3, as RFC
  // 3168), so an ECE arriving just after its last cut waits up to one more RTT: N more
  // segments. Bound: K + (1 + 2N) segments = 20480 + 5 x 1534 = 28150 B.
  CHECK(with.max_queue <= kK + (1 + 2 * kFlows) * kSegWire);
  // Full throughput (K is above C x RTT / 7, so the queue does not run dry): the payload
  // ceiling of the port is 100 Gb/s x 65536 / 70706 = 92.7 Gb/s (a 64 KiB WRITE is 46 FPDUs
  // of 1424 B and one of 32 B: 46 x 1534 + 142 = 70706 wire bytes); 90% of it leaves room
  // for counting whole messages and the short dips after cuts.
  const double ceiling = 100.0 * kMsg / (46 * kSegWire + 142);
  CHECK(with.gbps[0] + with.gbps[1] >= 0.9 * ceiling);
  // Without ECN (same switch: segments are not ECN-capable, so none is marked) loss-driven
  // NewReno fills the 200 KiB queue until it drops, over and over: drops in the second half,
  // a peak within two segments of the limit (a drop needs queue + segment > limit, and a
  // 100 ns sample is less than one segment time from each peak), and a queue that does not
  // fall below (limit - BDP) / 2 = 87 KB after halving (BDP 31 KB): far above K.
  CHECK(without.marked == 0);
  CHECK(without.drops_second_half > 0);
  CHECK(without.max_queue >= kQueueLimit - 2 * kSegWire);
  CHECK(without.mean_queue > 2.0 * kK);
  // The bound follows K: at K = 40 KiB the same reasoning gives 40960 + 5 x 1534 = 48630 B,
  // still lossless.
  const Result k40 = run_two_flows(true, kRun, 2 * kK);
  MESSAGE("dctcp, K = 40 KiB: queue mean " << k40.mean_queue << " max " << k40.max_queue
          << " B, drops " << k40.drops << ", cuts " << k40.ecn_reductions);
  CHECK(k40.drops == 0);
  CHECK(k40.ecn_reductions > 0);
  CHECK(k40.max_queue <= 2 * kK + (1 + 2 * kFlows) * kSegWire);
  CHECK(k40.max_queue > kK + (1 + 2 * kFlows) * kSegWire);  // it does sit near its own K
}

}  // namespace rdmasim::nic
