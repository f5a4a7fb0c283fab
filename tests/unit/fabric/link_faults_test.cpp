// Link faults configured from JSON and driven through the Fabric API.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "sim/net/headers.h"
#include "sim/topo/fabric.h"

using namespace rdmasim;
using nlohmann::json;

namespace {

class Count : public net::Node {
 public:
  explicit Count(Engine& e) : e_(e) {}
  void receive(net::PacketPtr, int) override { at.push_back(e_.now()); }
  std::vector<Time> at;

 private:
  Engine& e_;
};

json two_hosts(json link_extra) {
  json l = {{"a", "server"}, {"b", "client"}, {"rate_gbps", 100}, {"latency_ns", 1000}};
  l.update(link_extra);
  return {{"hosts", {{{"name", "server"}, {"ip", "127.0.1.1"}}, {{"name", "client"}, {"ip", "127.0.1.2"}}}},
          {"links", {l}}};
}

void send(topo::Fabric& f, size_t from, size_t to, int n, uint32_t payload = 4096) {
  for (int i = 0; i < n; ++i) {
    auto p = std::make_unique<net::Packet>();
    p->src = f.nics()[from].address;
    p->dst = f.nics()[to].address;
    p->wire_bytes = net::base_wire_bytes(net::LinkLayer::RoCEv2, payload);
    f.nic_port(from).send(std::move(p));
  }
}

}  // namespace

TEST_CASE("fabric: a link's loss_rate from JSON drops that fraction, counted per direction") {
  Engine e(11);
  auto f = topo::Fabric::build(e, two_hosts({{"loss_rate", 0.05}}));
  Count rx(e);
  f->attach_nic(1, &rx);
  const int n = 10000;
  send(*f, 0, 1, n, 64);
  e.run();
  const json c = f->counters();
  const uint64_t lost = c["links"][0]["a_to_b"]["lost_packets"];
  CHECK(lost + rx.at.size() == n);
  // Binomial(10000, 0.05): mean 500, sigma = sqrt(10000 * 0.05 * 0.95) = 21.8; 4 sigma = 87
  CHECK(lost > 500 - 87);
  CHECK(lost < 500 + 87);
}

TEST_CASE("fabric: losses are reproducible from the seed, and another seed loses other packets") {
  // The config's seed is the engine's (configs/README.md `seed`): the same seed gives the same
  // arrivals packet for packet; another seed draws another loss pattern (two Binomial(2000,
  // 0.05) patterns coinciding is practically impossible).
  auto run = [](uint64_t seed) {
    json cfg = two_hosts({{"loss_rate", 0.05}});
    cfg["seed"] = seed;
    Engine e(seed);
    auto f = topo::Fabric::build(e, cfg);
    CHECK(f->seed() == seed);
    Count rx(e);
    f->attach_nic(1, &rx);
    send(*f, 0, 1, 2000, 64);
    e.run();
    return rx.at;
  };
  const std::vector<Time> a = run(3), b = run(3), c = run(4);
  CHECK(a.size() < 2000);
  CHECK(a == b);
  CHECK(a != c);
}

TEST_CASE("fabric: a link schedule takes the link down and up; set_link_down/up do the same") {
  for (bool from_json : {true, false}) {
    Engine e;
    json sched = json::array({{{"at_ns", 5000}, {"up", false}}, {{"at_ns", 15000}, {"up", true}}});
    auto f = topo::Fabric::build(e, two_hosts(from_json ? json{{"schedule", sched}} : json::object()));
    if (!from_json) {
      f->set_link_down(0, us(5));
      f->set_link_up(0, us(15));
    }
    Count rx(e);
    f->attach_nic(1, &rx);
    send(*f, 0, 1, 60);  // 60 * 334.24 ns = 20 us of traffic
    e.schedule_at(us(10), [&] { CHECK_FALSE(f->link_up(0)); });
    e.schedule_at(us(16), [&] { send(*f, 0, 1, 5); });
    e.run();
    CHECK(f->link_up(0));
    // Arrivals by 5 us: last bit at k * 334.24 ns + 1 us <= 5 us -> k <= 11.97: 11 packets.
    size_t before = 0;
    for (Time t : rx.at) {
      CHECK((t <= us(5) || t > us(15)));
      if (t <= us(5)) ++before;
    }
    CHECK(before == 11);
    CHECK(rx.at.size() == 11 + 5);
    const json c = f->counters();
    const uint64_t wire = c["links"][0]["a_to_b"]["down_drops"];
    const uint64_t queued = c["server/mlx5_0"]["link_down_drops"];
    CHECK(wire >= 1);
    CHECK(before + wire + queued == 60);
  }
}

TEST_CASE("fabric: link fault keys are validated") {
  auto bad = [](json extra) {
    try {
      topo::Fabric::check(two_hosts(extra));
    } catch (const topo::ConfigError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(bad({{"loss_rate", 1.5}}).find("fabric.links[0].loss_rate: 1.5") != std::string::npos);
  CHECK(bad({{"ber", -1}}).find("fabric.links[0].ber") != std::string::npos);
  CHECK(bad({{"schedule", {{{"at_ns", 10}}}}}).find("fabric.links[0].schedule[0].up") != std::string::npos);
  CHECK(bad({{"schedule", {{{"at_ns", 10}, {"up", false}, {"x", 1}}}}}).find("schedule[0].x") != std::string::npos);
  CHECK(bad({{"loss_rate", 0.01}, {"ber", 1e-12}}).empty());
}

TEST_CASE("fabric: switch buffer and cut-through keys are read and validated") {
  json cfg = {{"topology", {{"type", "star"}, {"hosts", 2}}},
              {"switch", {{"cut_through", true}, {"buffer", {{"total_kb", 1024}, {"reserved_kb", 4}, {"alpha", 1}}}}}};
  CHECK_NOTHROW(topo::Fabric::check(cfg));
  cfg["switch"]["buffer"]["alpha"] = -1;
  CHECK_THROWS_WITH_AS(topo::Fabric::check(cfg), doctest::Contains("fabric.switch.buffer.alpha: -1"), topo::ConfigError);
  cfg["switch"]["buffer"] = {{"total", 1}};
  CHECK_THROWS_WITH_AS(topo::Fabric::check(cfg), doctest::Contains("fabric.switch.buffer.total"), topo::ConfigError);
}

TEST_CASE("fabric: the PFC watchdog keys are read and validated") {
  json cfg = {{"topology", {{"type", "star"}, {"hosts", 2}}},
              {"switch", {{"pfc", {{"xoff_kb", 64}, {"watchdog", {{"detect_us", 200}, {"restore_us", 50}}}}}}}};
  CHECK_NOTHROW(topo::Fabric::check(cfg));
  cfg["switch"]["pfc"]["watchdog"]["detect_us"] = 0;
  CHECK_THROWS_WITH_AS(topo::Fabric::check(cfg), doctest::Contains("fabric.switch.pfc.watchdog.detect_us: 0"), topo::ConfigError);
}
