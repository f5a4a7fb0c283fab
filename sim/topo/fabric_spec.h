// A validated fabric description parsed from JSON: NICs, switches and links, not yet built.
#pragma once

#include <array>
#include <memory>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "sim/net/host_port.h"
#include "sim/net/switch.h"
#include "sim/topo/fabric.h"

namespace rdmasim::topo {

// One end of a link: a NIC (index into FabricSpec::nics) or a switch.
struct LinkEnd {
  bool is_switch = false;
  size_t index = 0;
};

struct LinkSpec {
  std::string name;               // "<a>-<b>" unless the config names it
  LinkEnd a, b;
  Rate rate = Rate::gbps(100);
  Time latency = ns(400);
  double loss_rate = 0;   // per packet, each direction
  double ber = 0;         // per bit, each direction
  // (time, up): the link (both directions) goes down (up = false) or up at that time.
  std::vector<std::pair<Time, bool>> schedule;
};

struct NicSpec {
  HostNic nic;                    // every field final except rate (set from its link)
  uint64_t queue_bytes = 8 * 1024; // host egress limit per traffic class
  std::array<uint32_t, 8> dwrr_weights{};  // host egress scheduling; 0 = strict priority
  uint32_t ib_vl_buffer_bytes = 128 * 1024; // IB: receive buffer per VL (credit limit)
  bool pcie_gen_auto = true;      // nic.hca.pcie.gen follows the link rate (no "gen" given)
  net::IbVlConfig vls;                      // IB: SL-to-VL and VL arbitration of its port
  net::HostRxConfig rx;                     // receive buffer and PFC (off: infinitely fast)
};

// Switch forwarding tables: every shortest path, or shortest up*/down* paths (deadlock-free
// on lossless fabrics; the default on InfiniBand).
// Adaptive: the up*/down* sets, every packet taking the least-queued port of its set at each
// switch (net::SwitchConfig::adaptive_routing).
enum class Routing { MinHop, UpDown, FatTree, Adaptive };  // "min_hop", "up_down", "ftree", "adaptive"

// "observe": the egress queue-depth time series (net::QueueSeries) of selected ports.
struct ObserveSpec {
  Time queue_sample_interval = 0;   // 0 = off
  size_t max_samples = 10000;       // per port
  // Which ports: every NIC port and/or every switch port ("all", "hosts", "switches"), or
  // an explicit list of counters names ("host/device", "switch/N"; a switch name alone is
  // all its ports), validated against the fabric.
  bool hosts = true, switches = true;
  std::vector<std::string> ports;
};

struct RouteTable;  // routing.h

struct FabricSpec {
  std::string name;
  std::string topology;                      // "fat_tree k=4", ...; "" when explicit
  Routing routing = Routing::MinHop;
  net::LinkLayer link_layer = net::LinkLayer::RoCEv2;
  uint32_t mtu = 4096;                       // "mtu": the IB MTU; on iWARP the Ethernet MTU
  uint64_t seed = 1;
  size_t num_hosts = 0;
  std::vector<NicSpec> nics;                 // hosts in config order, NICs in host order
  std::vector<net::SwitchConfig> switches;   // ib_vl_buffer_bytes is 0 unless InfiniBand
  std::vector<LinkSpec> links;
  std::vector<int> nic_link;                 // link index of each NIC
  TraceConfig trace;                         // "trace": packet capture
  ObserveSpec observe;                       // "observe": queue-depth sampling
  // The spec's routes (compute_routes), computed by parse_fabric for its reachability check
  // and shared by every copy, so that building the fabric and a study's ideal FCTs do not
  // compute them again (routes_of, routing.h). Null in a spec built by hand; a spec whose
  // links change after parsing must reset it.
  std::shared_ptr<const RouteTable> routes;
};

// Parses and validates; throws ConfigError listing every problem found. Also assigns
// addresses, LIDs (IB subnet manager) and GUIDs, and checks every NIC reaches every other.
FabricSpec parse_fabric(const nlohmann::json& config);

// The largest data frame on the wire at `mtu`: a full payload with the largest extension
// headers a full packet carries (RETH 16 B + ImmDt 4 B; and a 40 B GRH on InfiniBand).
uint32_t max_frame_wire(net::LinkLayer ll, uint32_t mtu);

// The PFC headroom of a switch port on link `l` (pfc.headroom_kb "auto"):
// net::pfc_headroom_bytes(rate, latency, max_frame_wire, net::pfc_response_bits(rate)).
uint64_t auto_headroom_bytes(const LinkSpec& l, net::LinkLayer ll, uint32_t mtu);

// "2 hosts, 1 switch, 2 links, RoCEv2 100 Gb/s, MTU 4096"
std::string summarize(const FabricSpec& spec);

const char* link_layer_name(net::LinkLayer ll);

}  // namespace rdmasim::topo
