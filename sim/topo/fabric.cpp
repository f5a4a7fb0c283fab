// The Fabric built from a FabricSpec: host ports, switches, link directions, routes.
#include "sim/topo/fabric.h"

#include <unordered_map>

#include <nlohmann/json.hpp>

#include "sim/net/host_port.h"
#include "sim/net/link.h"
#include "sim/net/switch.h"
#include "sim/topo/fabric_spec.h"
#include "sim/topo/routing.h"

namespace rdmasim::topo {
namespace {

using nlohmann::json;

std::string join_lines(const std::vector<std::string>& errors) {
  std::string s;
  for (const std::string& e : errors) s += (s.empty() ? "" : "\n") + e;
  return s;
}

json port_json(const net::EgressPort& port) {
  const net::PortCounters& c = port.counters();
  json drops = json::array();
  for (const net::ClassCounters& k : c.classes) drops.push_back(k.drops);
  json j = {{"tx_packets", c.tx_packets}, {"tx_bytes", c.tx_bytes},   {"rx_packets", c.rx_packets},
            {"rx_bytes", c.rx_bytes},     {"drops", c.drops},         {"drop_bytes", c.drop_bytes},
            {"drops_per_class", drops},   {"ecn_marked", c.ecn_marked},
            {"pauses_received", c.pauses_received}, {"pauses_sent", c.pauses_sent},
            {"link_down_drops", c.link_down_drops}, {"watchdog_drops", c.watchdog_drops},
            {"watchdog_storms", c.watchdog_storms}, {"headroom_drops", c.headroom_drops},
            {"headroom_drop_bytes", c.headroom_drop_bytes}, {"headroom_max_bytes", c.headroom_max_bytes},
            {"link_up", port.link_up()}};
  // Per class: only classes that saw any traffic or pause, keyed "0".."7".
  json classes = json::object();
  for (uint8_t k = 0; k < 8; ++k) {
    const Time paused = port.paused_time(k);
    const net::ClassCounters& kc = c.classes[k];
    if (!kc.tx_packets && !kc.rx_packets && !c.class_pauses_sent[k] && !c.class_pauses_received[k] &&
        !kc.drops && !paused)
      continue;
    json cj = {{"tx_packets", kc.tx_packets}, {"tx_bytes", kc.tx_bytes},
               {"rx_packets", kc.rx_packets}, {"rx_bytes", kc.rx_bytes},
               {"drops", kc.drops},           {"ecn_marked", kc.ecn_marked},
               {"pauses_sent", c.class_pauses_sent[k]},
               {"pauses_received", c.class_pauses_received[k]},
               {"paused_ns", to_ns(paused)},
               {"queue_bytes", port.queued_bytes(k)},     {"queue_max_bytes", kc.queue_max_bytes}};
    if (port.credits_enabled()) {
      cj["credits_available_bytes"] = port.credits_available(k);
    }
    classes[std::to_string(k)] = cj;
  }
  j["classes"] = classes;
  const net::QueueSeries qs = port.queue_series_now();
  if (!qs.samples.empty()) {
    json samples = json::array();
    for (const auto& s : qs.samples) {
      uint64_t total = 0;
      for (uint32_t v : s) total += v;
      samples.push_back(total);
    }
    j["queue_series"] = {{"start_ns", to_ns(qs.start)}, {"interval_ns", to_ns(qs.interval)},
                         {"total_bytes", samples}};
  }
  return j;
}

// A NIC's receive buffer (net::HostRxConfig), when it has one.
json rx_buffer_json(const net::HostPort& port) {
  const net::RxBufferCounters& c = port.rx_buffer_counters();
  json per_class = json::array();
  for (uint64_t m : c.max_bytes_per_class) per_class.push_back(m);
  return {{"drain_gbps", port.rx_config().drain_rate.as_gbps()},
          {"buffer_bytes", port.rx_config().buffer_bytes},
          {"bytes", port.rx_buffer_bytes()},
          {"max_bytes", c.max_bytes},
          {"max_bytes_per_class", per_class},
          {"drops", c.drops},
          {"drop_bytes", c.drop_bytes}};
}

class BuiltFabric : public Fabric {
 public:
  BuiltFabric(Engine& engine, FabricSpec spec, std::shared_ptr<const RouteTable> routes = nullptr)
      : engine_(engine), spec_(std::move(spec)) {
    if (!routes) routes = routes_of(spec_);
    spec_.routes.reset();  // the tables below are all the fabric keeps of them
    for (const NicSpec& n : spec_.nics) {
      nics_.push_back(n.nic);
      net::EgressConfig ec{.rate = n.nic.rate, .class_limit_bytes = n.queue_bytes};
      ec.dwrr_weights = n.dwrr_weights;
      ec.ib = n.vls;
      host_ports_.push_back(std::make_unique<net::HostPort>(engine, ec, n.rx));
    }
    nic_link_observers_.resize(nics_.size());
    for (const net::SwitchConfig& sc : spec_.switches)
      switches_.push_back(std::make_unique<net::Switch>(engine, sc));
    // Each link end gets (egress port, receiving node, receiving port index).
    link_ports_.resize(spec_.links.size());
    for (size_t l = 0; l < spec_.links.size(); ++l) {
      const LinkSpec& ls = spec_.links[l];
      auto end_port = [&](const LinkEnd& e, const LinkEnd& peer) -> int {
        if (!e.is_switch) {
          if (ib()) host_ports_[e.index]->enable_credits(buffer(peer), buffer(e));
          return 0;
        }
        const int port = switches_[e.index]->add_port(ls.rate, buffer(peer));
        if (spec_.switches[e.index].pfc.headroom_auto)
          switches_[e.index]->set_headroom(port, auto_headroom_bytes(ls, spec_.link_layer, spec_.mtu));
        return port;
      };
      const int pa = end_port(ls.a, ls.b), pb = end_port(ls.b, ls.a);
      link_ports_[l] = {pa, pb};
      // IB on a link that loses packets: periodic FCPs at both ends (ib_flow_control.h).
      if (ib() && (ls.loss_rate > 0 || ls.ber > 0))
        for (const auto& [e, port] : {std::pair(ls.a, pa), std::pair(ls.b, pb)}) {
          net::IbFlowControl* fc = e.is_switch ? switches_[e.index]->flow_control(port)
                                               : host_ports_[e.index]->flow_control();
          if (fc) fc->set_periodic(true);
        }
      const std::string stream = "link/" + std::to_string(l);
      net::LinkFaults f{.loss_rate = ls.loss_rate, .ber = ls.ber, .rng_stream = stream + "/ab"};
      links_.push_back(std::make_unique<net::LinkDirection>(engine, egress(ls.a, pa), node(ls.b), pb, ls.latency, f));
      f.rng_stream = stream + "/ba";
      links_.push_back(std::make_unique<net::LinkDirection>(engine, egress(ls.b, pb), node(ls.a), pa, ls.latency, f));
      for (const auto& [at, up] : ls.schedule) set_link_state(l, up, at);
    }
    const std::shared_ptr<const RouteTable>& rt = routes;
    // Destinations numbered once for every switch (net::AddressIndex).
    auto index = std::make_shared<net::AddressIndex>();
    for (const HostNic& n : nics_) index->add(n.address);
    for (auto& sw : switches_) sw->use_address_index(index);
    for (size_t s = 0; s < switches_.size(); ++s) {
      for (size_t n = 0; n < nics_.size(); ++n) {
        std::vector<int> ports;
        for (size_t l : rt->links()[s][n]) {
          const LinkSpec& ls = spec_.links[l];
          const bool a_is_me = ls.a.is_switch && ls.a.index == s;
          ports.push_back(a_is_me ? link_ports_[l].first : link_ports_[l].second);
        }
        if (!ports.empty()) switches_[s]->set_route(nics_[n].address, std::move(ports));
      }
    }
    apply_observe();
  }

  std::string name() const override { return spec_.name; }
  std::string summary() const override { return summarize(spec_); }
  const std::vector<HostNic>& nics() const override { return nics_; }
  net::Transmitter& nic_port(size_t i) override { return *host_ports_.at(i); }
  void attach_nic(size_t i, net::Node* receiver) override { host_ports_.at(i)->attach(receiver); }
  uint64_t seed() const override { return spec_.seed; }
  net::LinkLayer link_layer() const override { return spec_.link_layer; }
  const TraceConfig& trace() const override { return spec_.trace; }
  std::vector<FabricPort> egress_ports() override {
    std::vector<FabricPort> out;
    for (size_t i = 0; i < nics_.size(); ++i)
      out.push_back({nics_[i].host + "_" + nics_[i].device, nics_[i].host + "/" + nics_[i].device,
                     false, &host_ports_[i]->egress()});
    for (const auto& sw : switches_)
      for (size_t p = 0; p < sw->num_ports(); ++p)
        out.push_back({sw->name() + "_port" + std::to_string(p), sw->name() + "/" + std::to_string(p),
                       true, &sw->port(static_cast<int>(p))});
    std::unordered_map<const net::EgressPort*, net::EgressPort*> peer;
    for (size_t l = 0; l < spec_.links.size(); ++l) {
      net::EgressPort* a = &egress(spec_.links[l].a, link_ports_[l].first);
      net::EgressPort* b = &egress(spec_.links[l].b, link_ports_[l].second);
      peer[a] = b;
      peer[b] = a;
    }
    for (FabricPort& fp : out)
      if (const auto it = peer.find(fp.egress); it != peer.end()) fp.peer = it->second;
    return out;
  }

  size_t num_links() const override { return spec_.links.size(); }
  void set_link_down(size_t link, Time at) override { set_link_state(link, false, at); }
  void set_link_up(size_t link, Time at) override { set_link_state(link, true, at); }
  bool link_up(size_t link) const override { return links_.at(2 * link)->up(); }
  void observe_nic_link(size_t i, std::function<void(bool)> observer) override {
    nic_link_observers_.at(i) = std::move(observer);
  }

  bool carries_data() const override {
    for (const auto& p : host_ports_)
      if (p->holds_data()) return true;
    for (const auto& s : switches_)
      if (s->holds_data()) return true;
    for (const auto& l : links_)
      if (l->holds_data()) return true;
    return false;
  }

  json counters() const override {
    json out = json::object();
    for (size_t i = 0; i < nics_.size(); ++i) {
      json j = port_json(host_ports_[i]->egress());
      j["undelivered"] = host_ports_[i]->undelivered();
      if (host_ports_[i]->rx_buffered()) j["rx_buffer"] = rx_buffer_json(*host_ports_[i]);
      out[nics_[i].host + "/" + nics_[i].device] = j;
    }
    for (const auto& sw : switches_) {
      for (size_t p = 0; p < sw->num_ports(); ++p) {
        json j = port_json(sw->port(static_cast<int>(p)));
        if (const uint64_t h = sw->headroom(static_cast<int>(p))) j["pfc_headroom_bytes"] = h;
        out[sw->name() + "/" + std::to_string(p)] = std::move(j);
      }
      out[sw->name()] = {{"unroutable", sw->unroutable()}};
    }
    json links = json::array();
    for (size_t l = 0; l < spec_.links.size(); ++l) {
      json dirs = json::array();
      for (int d = 0; d < 2; ++d) {
        const net::LinkCounters& c = links_[2 * l + d]->counters();
        dirs.push_back({{"lost_packets", c.lost_packets}, {"lost_bytes", c.lost_bytes},
                        {"down_drops", c.down_drops}, {"down_drop_bytes", c.down_drop_bytes}});
      }
      links.push_back({{"up", links_[2 * l]->up()}, {"a_to_b", dirs[0]}, {"b_to_a", dirs[1]}});
    }
    out["links"] = links;
    return out;
  }

 private:
  // "observe": start the queue-depth series of the selected ports.
  void apply_observe() {
    const ObserveSpec& o = spec_.observe;
    if (o.queue_sample_interval <= 0) return;
    auto selected = [&o](const std::string& name, const std::string& sw) {
      for (const std::string& p : o.ports)
        if (p == name || p == sw) return true;
      return false;
    };
    for (size_t i = 0; i < nics_.size(); ++i)
      if (o.hosts || selected(nics_[i].host + "/" + nics_[i].device, ""))
        host_ports_[i]->egress().set_queue_sampling(o.queue_sample_interval, o.max_samples);
    for (const auto& sw : switches_)
      for (size_t p = 0; p < sw->num_ports(); ++p)
        if (o.switches || selected(sw->name() + "/" + std::to_string(p), sw->name()))
          sw->port(static_cast<int>(p)).set_queue_sampling(o.queue_sample_interval, o.max_samples);
  }

  void set_link_state(size_t link, bool up, Time at) {
    if (link >= spec_.links.size()) throw std::out_of_range("no link " + std::to_string(link));
    net::LinkDirection* ab = links_.at(2 * link).get();
    net::LinkDirection* ba = links_.at(2 * link + 1).get();
    engine_.schedule_at(std::max(at, engine_.now()), [this, link, ab, ba, up] {
      const bool changed = ab->up() != up;
      ab->set_up(up);
      ba->set_up(up);
      if (!changed) return;
      // A host end's NIC sees its port go down or up.
      const LinkSpec& ls = spec_.links[link];
      for (const LinkEnd* e : {&ls.a, &ls.b})
        if (!e->is_switch && nic_link_observers_[e->index]) nic_link_observers_[e->index](up);
    });
  }

  bool ib() const { return spec_.link_layer == net::LinkLayer::InfiniBand; }
  // The receive buffer per VL of a link end (IB credit limit).
  uint32_t buffer(const LinkEnd& e) const {
    return e.is_switch ? spec_.switches[e.index].ib_vl_buffer_bytes
                       : spec_.nics[e.index].ib_vl_buffer_bytes;
  }
  net::EgressPort& egress(const LinkEnd& e, int port) {
    return e.is_switch ? switches_[e.index]->port(port) : host_ports_[e.index]->egress();
  }
  net::Node& node(const LinkEnd& e) {
    return e.is_switch ? static_cast<net::Node&>(*switches_[e.index]) : *host_ports_[e.index];
  }

  Engine& engine_;
  FabricSpec spec_;
  std::vector<HostNic> nics_;
  std::vector<std::unique_ptr<net::HostPort>> host_ports_;
  std::vector<std::unique_ptr<net::Switch>> switches_;
  std::vector<std::pair<int, int>> link_ports_;   // switch port index at (a, b); 0 for NICs
  std::vector<std::unique_ptr<net::LinkDirection>> links_;
  std::vector<std::function<void(bool)>> nic_link_observers_;  // by NIC index
};

}  // namespace

void attach_hca(Fabric& fabric, size_t i, nic::Hca& hca, net::Node* receiver) {
  fabric.attach_nic(i, receiver ? receiver : &hca);
  fabric.observe_nic_link(i, [&hca](bool up) { hca.set_port_active(up); });
}

ConfigError::ConfigError(std::vector<std::string> errors)
    : std::runtime_error(join_lines(errors)), errors_(std::move(errors)) {}

std::unique_ptr<Fabric> Fabric::build(Engine& engine, const nlohmann::json& config) {
  return std::make_unique<BuiltFabric>(engine, parse_fabric(config));
}

std::unique_ptr<Fabric> Fabric::from_spec(Engine& engine, const FabricSpec& spec,
                                          std::shared_ptr<const RouteTable> routes) {
  return std::make_unique<BuiltFabric>(engine, spec, std::move(routes));
}

std::string Fabric::check(const nlohmann::json& config) { return summarize(parse_fabric(config)); }

// The text of configs/default.json, compiled in (sim/topo/meson.build).
extern const char kDefaultFabricJson[];

const nlohmann::json& default_fabric_config() {
  static const json config = json::parse(kDefaultFabricJson);
  return config;
}

}  // namespace rdmasim::topo
