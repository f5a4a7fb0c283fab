// A host sending to its own address: the switch forwards the packets back out of the port
// they came in by (IB: DLID = own LID, as a program connecting two QPs of one HCA does;
// RoCE: the own IP). The switch returns IB credit, or sends XON, on that same port as each
// packet leaves it, so these tests also check that a control frame queued while a packet
// starts serializing waits behind it instead of replacing it.
#include <doctest/doctest.h>

#include "tests/unit/fabric/incast.h"

using namespace rdmasim;
using nlohmann::json;

namespace {

struct Counter : net::Node {
  uint64_t packets = 0, bytes = 0, own = 0;
  net::Address me = 0;
  void receive(net::PacketPtr p, int) override {
    ++packets;
    bytes += p->payload_len;
    own += p->src == me;
  }
};

// Sends `n` packets of 4096 B from host 1 to itself and `m` from host 2 to host 1; returns
// what host 1 received and the fabric counters.
std::pair<Counter, json> send_to_self(const json& config, int n, int m = 0) {
  Engine e(1);
  auto f = topo::Fabric::build(e, config);
  Counter self, other;
  self.me = f->nics()[0].address;
  f->attach_nic(0, &self);
  f->attach_nic(1, &other);
  const net::LinkLayer ll = f->nics()[0].link_layer;
  for (int i = 0; i < n + m; ++i) {
    auto p = std::make_unique<net::Packet>();
    p->link_layer = ll;
    p->src = f->nics()[i < n ? 0 : 1].address;
    p->dst = f->nics()[0].address;
    p->payload_len = 4096;
    p->wire_bytes = net::base_wire_bytes(ll, 4096);
    f->nic_port(i < n ? 0 : 1).send(std::move(p));
  }
  e.run();
  CHECK(other.packets == 0);
  return {self, f->counters()};
}

json star2(const char* ll, json sw) {
  return {{"link_layer", ll},
          {"topology", {{"type", "star"}, {"hosts", 2}}},
          {"link", {{"rate_gbps", 100}, {"latency_ns", 400}}},
          {"switch", std::move(sw)}};
}

}  // namespace

TEST_CASE("loopback: on InfiniBand every packet to the own LID comes back, credits all returned") {
  // 300 packets of 4 KiB (1.2 MiB) through a 64 KiB VL buffer: the sender waits for credit
  // many times over, and the switch's credit packets leave by the port the data leaves by.
  const auto [self, c] = send_to_self(star2("ib", {{"ib_vl_buffer_kb", 64}}), 300);
  CHECK(self.packets == 300);
  CHECK(self.own == 300);
  CHECK(self.bytes == 300u * 4096);
  // Everything was drained: each sender's credit is back at the receiver's full buffer
  // (host side: the switch's 64 KiB; switch side: the NIC's default 128 KiB).
  CHECK(c["host1/mlx5_0"]["classes"]["0"]["credits_available_bytes"].get<int64_t>() == 64 * 1024);
  CHECK(c["sw0/0"]["classes"]["0"]["credits_available_bytes"].get<int64_t>() == 128 * 1024);
}

TEST_CASE("loopback: on RoCE with PFC every packet to the own address comes back, XON included") {
  // Host 2 sends to host 1 as well, so the port to host 1 is offered 200 Gb/s and host 1's
  // ingress fills past XOFF (16 KiB): host 1 is paused and resumed by frames queued on the
  // port its own packets leave by.
  const auto [self, c] = send_to_self(star2("roce", {{"pfc", {{"xoff_kb", 16}, {"xon_kb", 8}}}}), 300, 300);
  CHECK(self.packets == 600);
  CHECK(self.own == 300);
  CHECK(c["sw0/0"]["pauses_sent"].get<uint64_t>() >= 2);  // at least one XOFF and one XON
  CHECK(c["sw0/0"]["drops"].get<uint64_t>() == 0);
}
