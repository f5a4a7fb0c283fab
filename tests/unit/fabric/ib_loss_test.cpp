// InfiniBand credits on a lossy link: a lost data packet would leak its credit, and a lost
// FCP would leave the sender short; periodic FCPs carrying FCTBS repair both
// (sim/net/ib_flow_control.h).
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "sim/net/headers.h"
#include "sim/net/host_port.h"
#include "sim/topo/fabric.h"

using namespace rdmasim;
using nlohmann::json;

namespace {

struct Sink : net::Node {
  uint64_t packets = 0;
  void receive(net::PacketPtr, int) override { ++packets; }
};

struct Run {
  uint64_t delivered = 0, lost = 0, queued_at_end = 0, fcps_from_host1 = 0;
  uint64_t data_sent = 0;  // data packets host1's egress put on the wire
  Time end = 0;
};

// host1 sends `n` packets of 4096 B to host2 through sw0; host1's link loses `loss` of the
// packets in each direction; 16 KiB of credit per VL at every receiver (4 packets).
Run run(double loss, int n, bool periodic_fcps = true) {
  const json cfg = {{"link_layer", "ib"},
                    {"topology", {{"type", "star"}, {"hosts", 2}}},
                    {"link", {{"rate_gbps", 100}, {"latency_ns", 400}}},
                    {"nic", {{"ib_vl_buffer_kb", 16}}},
                    {"switch", {{"ib_vl_buffer_kb", 16}}},
                    {"link_overrides", {{"host1-sw0", {{"loss_rate", loss}}}}}};
  Engine e(5);
  auto f = topo::Fabric::build(e, cfg);
  Sink s1, s2;
  f->attach_nic(0, &s1);
  f->attach_nic(1, &s2);
  auto& host1 = dynamic_cast<net::HostPort&>(f->nic_port(0));
  if (!periodic_fcps) host1.flow_control()->set_periodic(false);
  for (int i = 0; i < n; ++i) {
    auto p = std::make_unique<net::Packet>();
    p->link_layer = net::LinkLayer::InfiniBand;
    p->src = f->nics()[0].address;
    p->dst = f->nics()[1].address;
    p->payload_len = 4096;
    p->wire_bytes = net::base_wire_bytes(net::LinkLayer::InfiniBand, 4096);
    f->nic_port(0).send(std::move(p));
  }
  e.run();
  const json c = f->counters();
  Run r;
  r.delivered = s2.packets;
  r.lost = c["links"][0]["a_to_b"]["lost_packets"].get<uint64_t>();
  r.queued_at_end = host1.egress().queued_bytes(0);
  r.fcps_from_host1 = host1.flow_control()->fcps_sent();
  r.data_sent = host1.egress().counters().classes[0].tx_packets;
  r.end = e.now();
  return r;
}

}  // namespace

TEST_CASE("ib credits: on a lossy link every packet is delivered or counted lost, none stranded") {
  // 5% loss on host1's link, both ways: ~100 of 2000 data packets and ~5% of sw0's FCPs
  // vanish. Without repair each lost data packet keeps 4178 B of sw0's 16 KiB buffer
  // "occupied" for good, so after a few losses host1 has no credit left.
  const int n = 2000;
  const Run r = run(0.05, n);
  CHECK(r.lost > 0);
  // Every data packet left host1; those that did not arrive are among the packets the link
  // lost (which also counts host1's lost FCPs); nothing is left queued.
  CHECK(r.data_sent == n);
  CHECK(r.queued_at_end == 0);
  CHECK(r.delivered < n);
  CHECK(n - r.delivered <= r.lost);
  CHECK(r.fcps_from_host1 > 0);  // host1 receives no data: all its FCPs are periodic ones
  // It ends: n packets at 100 Gb/s take 2000 x 334 ns = 0.67 ms; even allowing a periodic
  // FCP interval (5.24 us) per loss and the 8 idle periods at the end, well under 5 ms.
  CHECK(r.end < ms(5));
}

TEST_CASE("ib credits: without host1's periodic FCPs the lost packets' credit leaks and host1 stalls") {
  // The contrast that shows why: host1 only sends FCPs periodically (it receives no data),
  // so with them off sw0 never learns which packets were lost.
  const int n = 2000;
  const Run r = run(0.05, n, false);
  CHECK(r.data_sent < n);
  CHECK(r.queued_at_end > 0);
}

TEST_CASE("ib credits: a lossless link gets no periodic FCPs") {
  // One FCP per data packet forwarded back toward host1 is all; host1 receives nothing
  // and so sends none.
  const Run r = run(0.0, 200);
  CHECK(r.delivered == 200);
  CHECK(r.fcps_from_host1 == 0);
}
