#include "sim/topo/fabric_spec.h"

#include <arpa/inet.h>

#include <cmath>
#include <map>
#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "sim/net/headers.h"
#include "sim/nic/iwarp.h"
#include "sim/topo/config_reader.h"
#include "sim/topo/routing.h"

#include "sim/topo/param_readers.h"

namespace rdmasim::topo {
namespace {

using nlohmann::json;

// "link_overrides": {"<link name>": {link keys}}, applied over the link's own settings.
void read_link_overrides(ConfigReader& r, const json& config, const std::string& root,
                         const std::map<std::string, size_t>& names, std::vector<LinkSpec>& links) {
  if (!config.contains("link_overrides")) return;
  const std::string op = join(root, "link_overrides");
  if (!config["link_overrides"].is_object()) {
    r.error(op, config["link_overrides"], "is not an object", "{\"<link name>\": {\"rate_gbps\": ...}}");
    return;
  }
  for (auto it = config["link_overrides"].begin(); it != config["link_overrides"].end(); ++it) {
    const std::string p = join(op, it.key());
    auto n = names.find(it.key());
    if (n == names.end()) {
      r.error(p, "names no link; expected the name of a link (\"<a>-<b>\" unless given)");
      continue;
    }
    if (r.object(it.value(), p, {RDMASIM_LINK_KEYS})) read_link_params(r, it.value(), p, links[n->second]);
  }
}

// Adaptive routing: every switch sends each packet by its least-queued equal-cost port, and
// every NIC, as the NICs of such fabrics do (ConnectX with Quantum AR, Spectrum-X SuperNICs),
// keeps the packets that arrive out of order instead of taking the gap for a loss: IRN's
// selective receiver without its NACK on a gap (nic::LossRecoveryConfig::nack_gaps).
void use_adaptive_routing(FabricSpec& spec) {
  for (net::SwitchConfig& sc : spec.switches) sc.adaptive_routing = true;
  for (NicSpec& n : spec.nics) {
    n.nic.hca.loss_recovery.mode = nic::LossRecovery::Irn;
    n.nic.hca.loss_recovery.nack_gaps = false;
  }
}

// A "loss_recovery" written in the config (`lr`, at `path`) that takes a gap for a loss
// (go-back-N, or IRN with its NACK on a gap) contradicts adaptive routing, which sets every
// NIC's loss recovery itself.
void refuse_ordered_recovery(ConfigReader& r, const json& lr, const std::string& path) {
  const json mode = lr.is_object() ? lr.value("mode", json("irn")) : lr;
  const bool nacks = lr.is_object() && lr.value("nack_gaps", json(false)) == json(true);
  if (mode == json("go_back_n") || nacks)
    r.error(path, lr, "takes reordering for loss, and routing \"adaptive\" reorders",
            "\"irn\" without \"nack_gaps\": true, or no \"loss_recovery\" (adaptive routing makes every "
            "NIC IRN with \"nack_gaps\": false)");
}

Routing read_routing(ConfigReader& r, const json& config, const std::string& root,
                     net::LinkLayer ll) {
  const std::string def = ll == net::LinkLayer::InfiniBand ? "up_down" : "min_hop";
  const char* expect = "\"min_hop\", \"up_down\", \"ftree\" or \"adaptive\"";
  const std::string s = r.string(config, "routing", root, def, expect);
  if (s == "up_down") return Routing::UpDown;
  if (s == "ftree") return Routing::FatTree;
  if (s == "adaptive") {
    if (ll == net::LinkLayer::IWarp)
      r.error(join(root, "routing"), json(s), "reorders packets, which iWARP's TCP takes for loss",
              "\"min_hop\", \"up_down\" or \"ftree\" on iWARP");
    return Routing::Adaptive;
  }
  if (s != "min_hop") r.error(join(root, "routing"), json(s), "is not a routing algorithm", expect);
  return Routing::MinHop;
}

// "fat_tree k=4", "leaf_spine 4x2", ... for the summary; "" for explicit nodes and links.
std::string describe_topology(const json& config) {
  if (!config.contains("topology") || !config["topology"].is_object()) return "";
  const json& t = config["topology"];
  const std::string type = t.value("type", std::string());
  auto get = [&](const char* k, int64_t def) {
    return std::to_string(t.contains(k) && t[k].is_number_integer() ? t[k].get<int64_t>() : def);
  };
  if (type == "fat_tree") return "fat_tree k=" + get("k", 4);
  if (type == "leaf_spine")
    return "leaf_spine " + get("leaves", 2) + " leaves x " + get("spines", 2) + " spines";
  if (type == "dumbbell") return "dumbbell " + get("hosts_per_side", 2) + "+" + get("hosts_per_side", 2);
  return type;
}

bool parse_ipv4(const std::string& s, uint32_t* out) {
  in_addr a{};
  if (inet_pton(AF_INET, s.c_str(), &a) != 1) return false;
  *out = ntohl(a.s_addr);
  return true;
}

// "observe": {"queue_sample_ns", "max_samples", "ports"}. Port names are checked against
// the parsed hosts, switches and links (a switch has one port per link end on it).
void read_observe(ConfigReader& r, const json& j, const std::string& path, FabricSpec& spec) {
  if (!r.object(j, path, {"queue_sample_ns", "max_samples", "ports"})) return;
  ObserveSpec& o = spec.observe;
  o.queue_sample_interval = ns(r.integer(j, "queue_sample_ns", path, 0, 0, 1'000'000'000'000,
                                         "a sampling interval in ns >= 0 (0 = off)"));
  o.max_samples = static_cast<size_t>(r.integer(j, "max_samples", path, 10000, 1, 100'000'000,
                                                "a sample count per port, 1..100000000"));
  if (!j.contains("ports")) return;
  const std::string pp = join(path, "ports");
  const json& ports = j["ports"];
  const char* expected = "\"all\", \"hosts\", \"switches\" or a list of port names "
                         "(\"host/device\", \"switch/N\" or a switch name)";
  if (ports.is_string()) {
    const std::string s = ports.get<std::string>();
    if (s == "all" || s == "hosts" || s == "switches") {
      o.hosts = s != "switches";
      o.switches = s != "hosts";
    } else {
      r.error(pp, ports, "is not a port selection", expected);
    }
    return;
  }
  if (!ports.is_array()) {
    r.error(pp, ports, "is not a port selection", expected);
    return;
  }
  o.hosts = o.switches = false;
  std::set<std::string> names;
  for (const NicSpec& n : spec.nics) names.insert(n.nic.host + "/" + n.nic.device);
  std::vector<size_t> num_ports(spec.switches.size(), 0);
  for (const LinkSpec& l : spec.links) {
    if (l.a.is_switch) ++num_ports[l.a.index];
    if (l.b.is_switch) ++num_ports[l.b.index];
  }
  for (size_t s = 0; s < spec.switches.size(); ++s) {
    names.insert(spec.switches[s].name);
    for (size_t p = 0; p < num_ports[s]; ++p) names.insert(spec.switches[s].name + "/" + std::to_string(p));
  }
  for (size_t i = 0; i < ports.size(); ++i) {
    if (!ports[i].is_string() || !names.count(ports[i].get<std::string>()))
      r.error(index(pp, i), ports[i], "names no port of this fabric", expected);
    else
      o.ports.push_back(ports[i].get<std::string>());
  }
}

}  // namespace

const char* link_layer_name(net::LinkLayer ll) {
  switch (ll) {
    case net::LinkLayer::RoCEv2: return "RoCEv2";
    case net::LinkLayer::InfiniBand: return "InfiniBand";
    case net::LinkLayer::IWarp: return "iWARP";
  }
  return "?";
}

uint32_t max_frame_wire(net::LinkLayer ll, uint32_t mtu) {
  return net::base_wire_bytes(ll, mtu) + 16 + 4 + (ll == net::LinkLayer::InfiniBand ? 40 : 0);
}

uint64_t auto_headroom_bytes(const LinkSpec& l, net::LinkLayer ll, uint32_t mtu) {
  return net::pfc_headroom_bytes(l.rate, l.latency, max_frame_wire(ll, mtu), net::pfc_response_bits(l.rate));
}

json expand_topology(ConfigReader& r, const json& config);

FabricSpec parse_fabric(const json& config_in) {
  ConfigReader r;
  const std::string root = "fabric";
  FabricSpec spec;
  if (!r.object(config_in, root, {"name", "link_layer", "mtu", "seed", "nic", "switch", "link",
                                  "hosts", "switches", "links", "topology", "trace",
                                  "link_overrides", "routing", "observe", "cm"}))
    throw ConfigError(r.errors());
  const size_t errors_before = r.errors().size();
  const json config = config_in.contains("topology") ? expand_topology(r, config_in) : config_in;
  spec.topology = describe_topology(config_in);
  if (r.errors().size() != errors_before) throw ConfigError(r.errors());

  spec.name = r.string(config, "name", root, "fabric", "a fabric name");
  const std::string ll = r.string(config, "link_layer", root, "roce", "\"roce\", \"ib\" or \"iwarp\"");
  if (ll == "roce" || ll == "RoCEv2") spec.link_layer = net::LinkLayer::RoCEv2;
  else if (ll == "ib" || ll == "InfiniBand") spec.link_layer = net::LinkLayer::InfiniBand;
  else if (ll == "iwarp" || ll == "iWARP") spec.link_layer = net::LinkLayer::IWarp;
  else r.error(join(root, "link_layer"), json(ll), "is not a link layer", "\"roce\", \"ib\" or \"iwarp\"");
  if (spec.link_layer == net::LinkLayer::IWarp) {
    // iWARP runs over TCP/IP: the MTU is the Ethernet one (IP packet bytes), jumbo included.
    spec.mtu = static_cast<uint32_t>(r.integer(config, "mtu", root, kIwarpDefaultMtu, kIwarpMinMtu,
                                               kIwarpMaxMtu, "an Ethernet MTU in bytes 576..9216"));
  } else {
    spec.mtu = static_cast<uint32_t>(r.integer(config, "mtu", root, 4096, 256, 4096,
                                               "an IB MTU: 256, 512, 1024, 2048 or 4096"));
    if (spec.mtu & (spec.mtu - 1))
      r.error(join(root, "mtu"), json(spec.mtu), "is not a power of two", "256, 512, 1024, 2048 or 4096");
  }
  spec.seed = static_cast<uint64_t>(r.integer(config, "seed", root, 1, 0, INT64_MAX, "a seed >= 0"));

  if (config.contains("trace")) {
    const std::string tp = join(root, "trace");
    if (r.object(config["trace"], tp, {"pcap_dir", "ports"})) {
      spec.trace.pcap_dir = r.string(config["trace"], "pcap_dir", tp, "", "a directory path");
      const std::string ports = r.string(config["trace"], "ports", tp, "all",
                                         "\"hosts\", \"switches\" or \"all\"");
      if (ports == "hosts") spec.trace.ports = CapturePorts::Hosts;
      else if (ports == "switches") spec.trace.ports = CapturePorts::Switches;
      else if (ports == "all") spec.trace.ports = CapturePorts::All;
      else r.error(join(tp, "ports"), json(ports), "is not a port selection", "\"hosts\", \"switches\" or \"all\"");
    }
  }

  const bool ib = spec.link_layer == net::LinkLayer::InfiniBand;
  NicParams nic_defaults;
  // Hosts sit on a PCIe link by default ("pcie": false turns it off); see configs/README.md.
  nic_defaults.hca.pcie.enabled = true;
  if (spec.link_layer == net::LinkLayer::IWarp) {
    nic_defaults.hca.atomics = false;
    nic_defaults.hca.max_qp = kIwarpMaxQp;
    nic_defaults.iwarp = true;
  }
  if (ib) nic_defaults.vls = net::default_ib_vls();
  // Each "loss_recovery" as written, with its path: adaptive routing (read later) checks them.
  std::vector<std::pair<std::string, json>> recoveries;
  auto note_recovery = [&recoveries](const json& nic, const std::string& path) {
    if (nic.contains("loss_recovery")) recoveries.emplace_back(join(path, "loss_recovery"), nic["loss_recovery"]);
  };
  if (config.contains("nic") && r.object(config["nic"], join(root, "nic"), {RDMASIM_NIC_KEYS})) {
    read_nic_params(r, config["nic"], join(root, "nic"), ib, nic_defaults);
    note_recovery(config["nic"], join(root, "nic"));
  }
  net::SwitchConfig switch_defaults;
  switch_defaults.ib_vl_buffer_bytes = 128 * 1024;
  if (ib) switch_defaults.egress.ib = net::default_ib_vls();
  if (config.contains("switch") &&
      r.object(config["switch"], join(root, "switch"), {RDMASIM_SWITCH_KEYS}))
    read_switch_params(r, config["switch"], join(root, "switch"), ib, switch_defaults);
  LinkSpec link_defaults;
  if (config.contains("link") && r.object(config["link"], join(root, "link"), {RDMASIM_LINK_KEYS}))
    read_link_params(r, config["link"], join(root, "link"), link_defaults);

  // Hosts and their NICs. Endpoint names: "host/nic", and "host" alone for a one-NIC host.
  std::map<std::string, LinkEnd> ends;
  std::set<std::string> host_names;
  std::map<net::Address, std::string> ips;
  const std::string hosts_path = join(root, "hosts");
  if (!config.contains("hosts") || !config["hosts"].is_array() || config["hosts"].empty()) {
    r.error(hosts_path, config.value("hosts", json()), "is not a non-empty array", "a list of hosts");
  } else {
    const json& hosts = config["hosts"];
    for (size_t h = 0; h < hosts.size(); ++h) {
      const std::string hp = index(hosts_path, h);
      if (!r.object(hosts[h], hp, {"name", "ip", "nics"})) continue;
      const std::string hname = r.string(hosts[h], "name", hp, std::nullopt, "a host name");
      if (hname.empty() || hname.find('/') != std::string::npos)
        r.error(join(hp, "name"), json(hname), "is not a valid name", "a non-empty name without '/'");
      if (!host_names.insert(hname).second)
        r.error(join(hp, "name"), json(hname), "is a duplicate", "a unique host name");
      const std::string ip = r.string(hosts[h], "ip", hp, std::nullopt, "an IPv4 address such as \"127.0.1.1\"");
      uint32_t ip_addr = 0;
      if (!ip.empty() && !parse_ipv4(ip, &ip_addr))
        r.error(join(hp, "ip"), json(ip), "is not an IPv4 address", "dotted quad such as \"127.0.1.1\"");
      else if (!ip.empty() && !ips.emplace(ip_addr, hp).second)
        r.error(join(hp, "ip"), json(ip), "is already used by " + ips[ip_addr], "a unique address");
      ++spec.num_hosts;
      json nics = hosts[h].value("nics", json::array({json{{"name", "mlx5_0"}}}));
      const std::string nics_path = join(hp, "nics");
      if (!nics.is_array() || nics.empty()) {
        r.error(nics_path, nics, "is not a non-empty array", "a list of NICs");
        continue;
      }
      if (nics.size() > 1 && spec.link_layer != net::LinkLayer::InfiniBand)
        r.error(nics_path, "has " + std::to_string(nics.size()) +
                               " NICs; expected 1 per host on Ethernet link layers (the address is the host's IP)");
      std::set<std::string> dev_names;
      for (size_t i = 0; i < nics.size(); ++i) {
        const std::string np = index(nics_path, i);
        if (!r.object(nics[i], np, {"name", RDMASIM_NIC_KEYS})) continue;
        NicParams p = nic_defaults;
        read_nic_params(r, nics[i], np, ib, p);
        note_recovery(nics[i], np);
        if (p.hca.cc.algorithm != nic::CcAlgorithm::None && spec.link_layer != net::LinkLayer::RoCEv2)
          r.error(join(np, "cc.algorithm"), json(nic::cc_algorithm_name(p.hca.cc.algorithm)),
                  "is RoCEv2 congestion control",
                  "\"none\" on a " + std::string(link_layer_name(spec.link_layer)) + " fabric");
        NicSpec entry;
        HostNic& n = entry.nic;
        n.host = hname;
        n.device = r.string(nics[i], "name", np, "mlx5_" + std::to_string(i), "a device name");
        if (!dev_names.insert(n.device).second)
          r.error(join(np, "name"), json(n.device), "is a duplicate", "a unique device name on this host");
        n.link_layer = spec.link_layer;
        n.ip = ip;
        n.mtu = port_mtu(spec.link_layer, spec.mtu);
        n.vendor_id = p.vendor_id;
        n.vendor_part_id = p.vendor_part_id;
        n.hw_ver = p.hw_ver;
        n.fw_ver = p.fw_ver;
        n.hca = p.hca;
        entry.queue_bytes = p.queue_bytes;
        entry.dwrr_weights = p.dwrr_weights;
        entry.ib_vl_buffer_bytes = p.ib_vl_buffer_bytes;
        entry.pcie_gen_auto = !p.pcie_gen_given;
        entry.vls = p.vls;
        entry.rx = finish_rx(r, np, p);
        // GUIDs: Mellanox OUI, then host number (1-based) and NIC index; port GUID = node + 1.
        n.node_guid = (kMellanoxOui << 40) | (static_cast<uint64_t>(h + 1) << 16) | (i << 4);
        // iWARP: the node GUID is the MAC followed by two zero bytes, as iw_cxgb4 sets it; the
        // MAC is 02:00 and the IPv4 address (net::mac_of).
        if (spec.link_layer == net::LinkLayer::IWarp) n.node_guid = (uint64_t{0x0200} << 48) | (uint64_t{ip_addr} << 16);
        n.port_guid = n.node_guid + 1;
        if (spec.link_layer != net::LinkLayer::InfiniBand) n.address = ip_addr;
        const LinkEnd end{false, spec.nics.size()};
        ends[hname + "/" + n.device] = end;
        if (nics.size() == 1) ends[hname] = end;
        spec.nics.push_back(std::move(entry));
      }
    }
  }

  // Switches.
  if (config.contains("switches")) {
    const std::string sp = join(root, "switches");
    if (!config["switches"].is_array()) {
      r.error(sp, config["switches"], "is not an array", "a list of switches");
    } else {
      for (size_t s = 0; s < config["switches"].size(); ++s) {
        const json& j = config["switches"][s];
        const std::string p = index(sp, s);
        if (!r.object(j, p, {"name", RDMASIM_SWITCH_KEYS})) continue;
        net::SwitchConfig sc = switch_defaults;
        sc.name = r.string(j, "name", p, std::nullopt, "a switch name");
        read_switch_params(r, j, p, ib, sc);
        if (host_names.count(sc.name) || ends.count(sc.name))
          r.error(join(p, "name"), json(sc.name), "is already a host or switch name", "a unique name");
        sc.ecmp_seed = spec.switches.size() + 1;  // a distinct ECMP hash per switch
        ends[sc.name] = LinkEnd{true, spec.switches.size()};
        spec.switches.push_back(std::move(sc));
      }
    }
  }

  // Links.
  spec.nic_link.assign(spec.nics.size(), -1);
  std::map<std::string, size_t> link_names;
  const std::string lp = join(root, "links");
  if (!config.contains("links") || !config["links"].is_array()) {
    r.error(lp, config.value("links", json()), "is not an array", "a list of links {\"a\", \"b\"}");
  } else {
    for (size_t l = 0; l < config["links"].size(); ++l) {
      const json& j = config["links"][l];
      const std::string p = index(lp, l);
      if (!r.object(j, p, {"name", "a", "b", RDMASIM_LINK_KEYS})) continue;
      LinkSpec ls = link_defaults;
      read_link_params(r, j, p, ls);
      ls.name = r.string(j, "name", p, j.value("a", std::string()) + "-" + j.value("b", std::string()),
                         "a link name");
      if (!link_names.emplace(ls.name, l).second)
        r.error(join(p, "name"), json(ls.name), "is already the name of " + index(lp, link_names[ls.name]),
                "a unique link name (give parallel links a \"name\")");
      bool ok = true;
      for (const char* side : {"a", "b"}) {
        const std::string name = r.string(j, side, p, std::nullopt, "\"host/device\", \"host\" or a switch name");
        auto it = ends.find(name);
        if (it == ends.end()) {
          if (!name.empty())
            r.error(join(p, side), json(name), "names no NIC or switch", "\"host/device\", \"host\" or a switch name");
          ok = false;
          continue;
        }
        (side[0] == 'a' ? ls.a : ls.b) = it->second;
        if (!it->second.is_switch) {
          int& nl = spec.nic_link[it->second.index];
          if (nl >= 0) {
            r.error(join(p, side), json(name), "is already linked by " + index(lp, nl), "one link per NIC");
            ok = false;
          } else {
            nl = static_cast<int>(l);
          }
        }
      }
      if (ok && ls.a.is_switch == ls.b.is_switch && ls.a.index == ls.b.index)
        r.error(p, "links a node to itself");
      spec.links.push_back(ls);
      if (!ok) spec.links.back().a = spec.links.back().b;  // placeholder; the config is rejected
    }
  }
  read_link_overrides(r, config, root, link_names, spec.links);
  if (config.contains("observe")) read_observe(r, config["observe"], join(root, "observe"), spec);
  spec.routing = read_routing(r, config, root, spec.link_layer);
  if (spec.routing == Routing::Adaptive) {
    for (const auto& [path, lr] : recoveries) refuse_ordered_recovery(r, lr, path);
    use_adaptive_routing(spec);
  }
  for (size_t i = 0; i < spec.nics.size(); ++i) {
    if (spec.nic_link[i] < 0)
      r.error(hosts_path, "NIC " + spec.nics[i].nic.host + "/" + spec.nics[i].nic.device +
                              " has no link; expected each NIC in exactly one of fabric.links");
  }
  // A lossless class must not lose what is in flight when XOFF is decided: a given headroom
  // below a port's need (net::pfc_headroom_bytes: 2 x latency x rate + 2 max frames + the
  // PFC frame + the peer's 802.1Qbb response) is an error naming the link. An error, not a
  // warning: a run that drops a lossless class answers a different question than the one
  // asked, and "auto" always fits.
  for (size_t sw = 0; sw < spec.switches.size(); ++sw) {
    const net::SwitchConfig& sc = spec.switches[sw];
    if (!sc.pfc.enabled || !sc.pfc.headroom_limited || sc.pfc.headroom_auto) continue;
    for (const LinkSpec& l : spec.links) {
      if (!(l.a.is_switch && l.a.index == sw) && !(l.b.is_switch && l.b.index == sw)) continue;
      const uint64_t need = auto_headroom_bytes(l, spec.link_layer, spec.mtu);
      if (sc.pfc.headroom_bytes >= need) continue;
      r.error("fabric.switches[" + std::to_string(sw) + "] (" + sc.name + ").pfc.headroom_kb",
              json(static_cast<double>(sc.pfc.headroom_bytes) / 1024),
              "cannot hold what is in flight on its port to link " + l.name + " (" +
                  json(l.rate.as_gbps()).dump() +
                  " Gb/s, " + std::to_string(l.latency / kNanosecond) + " ns): it needs " + std::to_string(need) +
                  " B = 2 x latency x rate + 2 x " + std::to_string(max_frame_wire(spec.link_layer, spec.mtu)) +
                  " B frames + " + std::to_string(net::kEthernetMinWire) + " B PFC frame + " + std::to_string(net::pfc_response_bits(l.rate) / 8) +
                  " B peer response",
              "\"auto\" or at least " + std::to_string((need + 1023) / 1024) + " KiB");
      break;  // one error per switch: the first port short of headroom
    }
  }
  // A shared buffer must hold the per-queue reserves and the PFC headroom of every port.
  for (size_t sw = 0; sw < spec.switches.size(); ++sw) {
    const net::SwitchConfig& sc = spec.switches[sw];
    if (!sc.buffer.total_bytes) continue;
    uint64_t ports = 0, headroom = 0;
    for (const LinkSpec& l : spec.links)
      for (const LinkEnd& e : {l.a, l.b})
        if (e.is_switch && e.index == sw) {
          ++ports;
          if (sc.pfc.enabled && sc.pfc.headroom_limited)
            headroom += sc.pfc.headroom_auto ? auto_headroom_bytes(l, spec.link_layer, spec.mtu)
                                             : sc.pfc.headroom_bytes;
        }
    int lossless = 0;
    for (int c = 0; c < 8; ++c) lossless += sc.pfc.enabled && (sc.pfc.class_mask >> c & 1);
    const uint64_t need = sc.buffer.reserved_bytes * ports * 8 + headroom * lossless;
    if (need >= sc.buffer.total_bytes)
      r.error("fabric.switches[" + std::to_string(sw) + "] (" + sc.name + ").buffer.total_kb",
              json(sc.buffer.total_bytes / 1024),
              "leaves no shared pool after " + std::to_string(need) + " B of reserves (reserved_kb x " +
                  std::to_string(ports) + " ports x 8 classes + PFC headroom x " + std::to_string(lossless) +
                  " lossless classes)",
              "a buffer larger than its reserves and headroom");
  }
  if (!r.ok()) throw ConfigError(r.errors());

  for (size_t i = 0; i < spec.nics.size(); ++i) {
    NicSpec& n = spec.nics[i];
    n.nic.rate = spec.links[spec.nic_link[i]].rate;
    if (n.pcie_gen_auto) n.nic.hca.pcie.gen = host::pcie_gen_for(n.nic.rate);
  }

  // InfiniBand subnet manager: NIC ports get LIDs 1..N in config order; switches N+1...;
  // the SM runs on the first NIC (LID 1).
  if (spec.link_layer == net::LinkLayer::InfiniBand) {
    for (size_t i = 0; i < spec.nics.size(); ++i) {
      HostNic& n = spec.nics[i].nic;
      n.lid = static_cast<uint16_t>(i + 1);
      n.sm_lid = 1;
      n.address = n.lid;
    }
  }
  // iWARP: QPNs carry the NIC's number (1-based, config order) in bits 23..16 (HcaConfig::qpn_base).
  std::vector<net::Address> iwarp_hosts;
  if (spec.link_layer == net::LinkLayer::IWarp) {
    if (spec.nics.size() > kIwarpMaxNics)
      r.error(join(root, "hosts"), "has " + std::to_string(spec.nics.size()) + " NICs; expected at most " +
                                       std::to_string(kIwarpMaxNics) + " on iWARP (QPNs carry the NIC number in 8 bits)");
    iwarp_hosts.push_back(0);
    for (const NicSpec& e : spec.nics) iwarp_hosts.push_back(e.nic.address);
  }
  for (size_t k = 0; k < spec.nics.size() && spec.link_layer == net::LinkLayer::IWarp; ++k) {
    spec.nics[k].nic.hca.qpn_base = static_cast<uint32_t>((k + 1) & 0xff) << 16;
    spec.nics[k].nic.hca.iwarp_hosts = iwarp_hosts;
  }
  HostNic::CmTiming cm;
  if (config.contains("cm") && r.object(config["cm"], join(root, "cm"),
                                        {"response_timeout", "max_retries", "packet_lifetime"})) {
    const std::string cp = join(root, "cm");
    const char* t5 = "an IBTA time code 0..31 (4.096 us x 2^t)";
    cm.response_timeout = static_cast<uint8_t>(r.integer(config["cm"], "response_timeout", cp, 20, 0, 31, t5));
    cm.packet_lifetime = static_cast<uint8_t>(r.integer(config["cm"], "packet_lifetime", cp, 16, 0, 31, t5));
    cm.max_retries = static_cast<uint8_t>(r.integer(config["cm"], "max_retries", cp, 15, 0, 15,
                                                    "a retry count 0..15 (the REQ's 4-bit field)"));
  }
  for (NicSpec& entry : spec.nics) {
    HostNic& n = entry.nic;
    n.cm = cm;
    n.hca.name = n.device;
    n.hca.link_layer = n.link_layer;
    n.hca.address = n.address;
    n.hca.node_guid = n.node_guid;
    n.hca.max_mtu = port_mtu(spec.link_layer, spec.mtu);
    // MSS = MTU - IPv4 20 - TCP 20 - timestamps option 12 (as Linux sizes it with timestamps).
    if (n.link_layer == net::LinkLayer::IWarp) n.hca.tcp.mss = spec.mtu - 20 - nic::iwarp::kTcpHeader;
  }

  if (spec.link_layer != net::LinkLayer::InfiniBand)
    for (net::SwitchConfig& sc : spec.switches) sc.ib_vl_buffer_bytes = 0;

  // Oversubscription of the first access switch: host-facing over uplink bandwidth.
  const char* access = spec.topology.rfind("leaf_spine", 0) == 0 ? "leaf1"
                       : spec.topology.rfind("fat_tree", 0) == 0 ? "edge1_1" : nullptr;
  for (size_t sw = 0; access && sw < spec.switches.size(); ++sw) {
    if (spec.switches[sw].name != access) continue;
    double down = 0, up = 0;
    for (const LinkSpec& l : spec.links) {
      const bool a_me = l.a.is_switch && l.a.index == sw, b_me = l.b.is_switch && l.b.index == sw;
      if (!a_me && !b_me) continue;
      ((a_me ? l.b : l.a).is_switch ? up : down) += l.rate.as_gbps();
    }
    if (up > 0) {
      char buf[64];
      snprintf(buf, sizeof buf, ", oversubscription %g:1", down / up);
      spec.topology += buf;
    }
  }

  spec.routes = std::make_shared<const RouteTable>(compute_routes(spec));
  const RouteTable& rt = *spec.routes;
  for (size_t a = 0; a < spec.nics.size(); ++a)
    for (size_t b = 0; b < spec.nics.size(); ++b)
      if (a != b && !rt.reachable[a][b])
        r.error(lp, spec.nics[b].nic.host + "/" + spec.nics[b].nic.device + " is not reachable from " +
                        spec.nics[a].nic.host + "/" + spec.nics[a].nic.device +
                        "; expected a connected fabric");
  if (!r.ok()) throw ConfigError(r.errors());
  return spec;
}

std::string summarize(const FabricSpec& spec) {
  auto plural = [](size_t n, const char* one, const char* many) {
    return std::to_string(n) + " " + (n == 1 ? one : many);
  };
  double lo = 0, hi = 0;
  for (const LinkSpec& l : spec.links) {
    const double g = l.rate.as_gbps();
    lo = lo == 0 ? g : std::min(lo, g);
    hi = std::max(hi, g);
  }
  auto fmt = [](double g) {
    char buf[32];
    snprintf(buf, sizeof buf, "%g", g);
    return std::string(buf);
  };
  const std::string rate = lo == hi ? fmt(hi) : fmt(lo) + "-" + fmt(hi);
  return plural(spec.num_hosts, "host", "hosts") + ", " +
         plural(spec.switches.size(), "switch", "switches") + ", " +
         plural(spec.links.size(), "link", "links") + ", " + link_layer_name(spec.link_layer) + " " +
         rate + " Gb/s, MTU " + std::to_string(spec.mtu) +
         (spec.topology.empty() ? "" : ", " + spec.topology) +
         (spec.routing == Routing::UpDown    ? ", up-down routing"
          : spec.routing == Routing::FatTree ? ", fat-tree (D-mod-k) routing"
          : spec.routing == Routing::Adaptive ? ", adaptive routing"
                                             : "");
}

}  // namespace rdmasim::topo
